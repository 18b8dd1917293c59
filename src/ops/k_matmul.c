/* k_matmul.c: matrix products. MatMul (numpy batch broadcasting, 1-D
 * operands), Gemm and Det, the inference of every matrix product (the
 * integer and quantized ones too), and the working representations and GEMM
 * they share (k_matmul.h). Einsum is in k_einsum.c, the integer and
 * quantized products in k_qlinear.c, Gemm's decomposition in d_nn.c.
 *
 * Floats go through OpenBLAS: float32 and double natively, float16 and
 * bfloat16 widened to float32 and rounded back once at the end. Integer
 * types multiply exactly in a plain loop with two's complement wrap-around
 * (the ring arithmetic numpy does). */
#include "k_matmul.h"

#include "blas.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- working representations */

static bool w_native(carve_dtype t, wkind k)
{
    return (k == W_F32 && t == CARVE_FLOAT) || (k == W_F64 && t == CARVE_DOUBLE) ||
           (k == W_INT && (t == CARVE_INT64 || t == CARVE_UINT64));
}

/* v's elements in the working representation: v's own data when it is
 * native (*owned false), else a converted cv_malloc'd copy. */
void *mm_load(const cv_val *v, wkind k, bool *owned)
{
    *owned = false;
    if (w_native(v->dtype, k))
        return v->data;
    size_t n = v->nelem;
    void *p = cv_malloc((n ? n : 1) * mm_wsize(k));
    if (!p)
        return NULL;
    *owned = true;
    if (k == W_F32) {
        float *o = p;
        const uint16_t *h = v->data;
        if (v->dtype == CARVE_FLOAT16)
            for (size_t i = 0; i < n; i++)
                o[i] = cv_f16_to_f32(h[i]);
        else if (v->dtype == CARVE_BFLOAT16)
            for (size_t i = 0; i < n; i++)
                o[i] = cv_bf16_to_f32(h[i]);
        else
            for (size_t i = 0; i < n; i++)
                o[i] = (float)cv_val_get_f64(v, i);
    } else if (k == W_F64) {
        double *o = p;
        for (size_t i = 0; i < n; i++)
            o[i] = cv_val_get_f64(v, i);
    } else {
        uint64_t *o = p;
        if (v->dtype == CARVE_INT32) {
            const int32_t *s = v->data;
            for (size_t i = 0; i < n; i++)
                o[i] = (uint64_t)(int64_t)s[i];
        } else {
            for (size_t i = 0; i < n; i++)
                o[i] = (uint64_t)cv_val_get_i64(v, i);
        }
    }
    return p;
}

/* Writes working values w into y (of y's dtype). */
void mm_store(cv_val *y, const void *w, wkind k)
{
    size_t n = y->nelem;
    if (w_native(y->dtype, k)) {
        if (w != y->data && n)
            memcpy(y->data, w, n * mm_wsize(k));
        return;
    }
    if (k == W_F32) {
        const float *s = w;
        uint16_t *h = y->data;
        if (y->dtype == CARVE_FLOAT16)
            for (size_t i = 0; i < n; i++)
                h[i] = cv_f32_to_f16(s[i]);
        else if (y->dtype == CARVE_BFLOAT16)
            for (size_t i = 0; i < n; i++)
                h[i] = cv_f32_to_bf16(s[i]);
        else
            for (size_t i = 0; i < n; i++)
                cv_val_set_f64(y, i, s[i]);
    } else if (k == W_F64) {
        const double *s = w;
        for (size_t i = 0; i < n; i++)
            cv_val_set_f64(y, i, s[i]);
    } else {
        const uint64_t *s = w;
        if (y->dtype == CARVE_INT32) {
            int32_t *o = y->data;
            for (size_t i = 0; i < n; i++)
                o[i] = (int32_t)(uint32_t)s[i];
        } else {
            for (size_t i = 0; i < n; i++)
                cv_val_set_i64(y, i, (int64_t)s[i]);
        }
    }
}

/* ---------------------------------------------------------------- GEMM */

/* C = alpha * op(A) op(B) + beta * C on one row-major matrix. W_INT takes
 * alpha 1 and beta 0 or 1 only. false when a size exceeds BLAS's int. */
bool mm_gemm1(wkind k, bool ta, bool tb, size_t M, size_t N, size_t K, double alpha, const void *A, size_t lda,
               const void *B, size_t ldb, double beta, void *C, size_t ldc)
{
    if (!M || !N)
        return true;
    if (k == W_INT) {
        const uint64_t *a = A, *b = B;
        uint64_t *c = C;
        for (size_t i = 0; i < M; i++) {
            uint64_t *cr = c + i * ldc;
            if (beta == 0)
                memset(cr, 0, N * sizeof *cr);
            for (size_t p = 0; p < K; p++) {
                uint64_t av = ta ? a[p * lda + i] : a[i * lda + p];
                if (!av)
                    continue;
                if (!tb) {
                    const uint64_t *br = b + p * ldb;
                    for (size_t j = 0; j < N; j++)
                        cr[j] += av * br[j];
                } else {
                    for (size_t j = 0; j < N; j++)
                        cr[j] += av * b[j * ldb + p];
                }
            }
        }
        return true;
    }
    if (!K || alpha == 0) {
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                if (k == W_F32) {
                    float *c = (float *)C + i * ldc + j;
                    *c = beta == 0 ? 0.0f : (float)beta * *c;
                } else {
                    double *c = (double *)C + i * ldc + j;
                    *c = beta == 0 ? 0.0 : beta * *c;
                }
            }
        return true;
    }
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
        return false;
    if (k == W_F32)
        cv_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)K, (float)alpha, A, (int)lda, B, (int)ldb, (float)beta, C, (int)ldc);
    else
        cv_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)M, (int)N,
                    (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
    return true;
}

/* numpy matmul over batches: C[b] = A[b] x B[b] for every index b of the
 * broadcast batch shape cb (rank rc); A is [abat (rank ra)..., M, K], B is
 * [bbat (rank rb)..., K, N], C is [cb..., M, N]. */
bool mm_batched(wkind k, const void *A, int ra, const int64_t *abat, const void *B, int rb,
                const int64_t *bbat, int rc, const int64_t *cb, size_t M, size_t N, size_t K, void *C)
{
    size_t nb = cv_nelem(rc, cb), es = mm_wsize(k);
    if (cv_nelem(rb, bbat) == 1) /* one B for all: a single tall product */
        return mm_gemm1(k, false, false, nb * M, N, K, 1, A, K, B, N, 0, C, N);
    int64_t sa[CARVE_MAX_RANK], sb[CARVE_MAX_RANK], idx[CARVE_MAX_RANK] = {0};
    cv_bcast_strides(ra, abat, rc, cb, sa);
    cv_bcast_strides(rb, bbat, rc, cb, sb);
    for (size_t b = 0; b < nb; b++) {
        size_t oa = 0, ob = 0;
        for (int d = 0; d < rc; d++)
            oa += (size_t)(idx[d] * sa[d]), ob += (size_t)(idx[d] * sb[d]);
        if (!mm_gemm1(k, false, false, M, N, K, 1, (const char *)A + oa * M * K * es, K,
                   (const char *)B + ob * K * N * es, N, 0, (char *)C + b * M * N * es, N))
            return false;
        for (int d = rc - 1; d >= 0 && ++idx[d] == cb[d]; d--)
            idx[d] = 0;
    }
    return true;
}

/* Shapes of a numpy matmul of a and b (names for messages). */
carve_status mm_shape(cv_kctx *k, const cv_val *a, const cv_val *b, const char *an, const char *bn, mmshape *s)
{
    if (a->rank < 1 || b->rank < 1)
        return cv_kerr(k, "input '%s' has rank %d and input '%s' rank %d: both need rank >= 1", an, a->rank, bn, b->rank);
    s->ra = a->rank >= 2 ? a->rank - 2 : 0;
    s->rb = b->rank >= 2 ? b->rank - 2 : 0;
    int64_t K = a->dims[a->rank - 1], M = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
    int64_t K2 = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0], N = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    char sa[256], sb[256];
    if (K != K2)
        return cv_kerr(k, "input '%s' %s has %lld columns but input '%s' %s has %lld rows", an,
                       cv_shape_str(sa, sizeof sa, a->rank, a->dims), (long long)K, bn,
                       cv_shape_str(sb, sizeof sb, b->rank, b->dims), (long long)K2);
    if (!cv_broadcast_shape(s->ra, a->dims, s->rb, b->dims, &s->rc, s->cb))
        return cv_kerr(k, "the batch dims of input '%s' %s and input '%s' %s do not broadcast", an,
                       cv_shape_str(sa, sizeof sa, a->rank, a->dims), bn, cv_shape_str(sb, sizeof sb, b->rank, b->dims));
    s->M = (size_t)M, s->N = (size_t)N, s->K = (size_t)K;
    s->orank = s->rc;
    memcpy(s->odims, s->cb, (size_t)s->rc * sizeof *s->cb);
    if (a->rank >= 2)
        s->odims[s->orank++] = M;
    if (b->rank >= 2)
        s->odims[s->orank++] = N;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- MatMul */

static bool matmul_type_ok(carve_dtype t)
{
    switch (t) {
    case CARVE_FLOAT: case CARVE_DOUBLE: case CARVE_FLOAT16: case CARVE_BFLOAT16:
    case CARVE_INT32: case CARVE_INT64: case CARVE_UINT32: case CARVE_UINT64:
        return true;
    default: return false;
    }
}

carve_status k_matmul(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *a = in[0], *b = in[1];
    if (a->dtype != b->dtype)
        return cv_kerr(k, "input 0 'A' is %s but input 1 'B' is %s", carve_dtype_name(a->dtype), carve_dtype_name(b->dtype));
    if (!matmul_type_ok(a->dtype))
        return cv_kerr(k, "inputs are %s, expected a float type or a 32/64-bit integer", carve_dtype_name(a->dtype));
    mmshape s;
    carve_status st = mm_shape(k, a, b, "A", "B", &s);
    if (st)
        return st;
    wkind wk = mm_wkind_of(a->dtype);
    /* mm_gemm1 (beta 0) writes every element of C, w_store every one of y */
    cv_val *y = cv_val_new_uninit(a->dtype, s.orank, s.odims);
    bool oa = false, ob = false, oc = y && !w_native(y->dtype, wk);
    void *A = y ? mm_load(a, wk, &oa) : NULL, *B = A ? mm_load(b, wk, &ob) : NULL;
    void *C = !B ? NULL : oc ? cv_malloc((y->nelem ? y->nelem : 1) * mm_wsize(wk)) : y->data;
    if (!C) {
        st = cv_knomem(k);
    } else if (!mm_batched(wk, A, s.ra, a->dims, B, s.rb, b->dims, s.rc, s.cb, s.M, s.N, s.K, C)) {
        st = cv_kerr(k, "matrices too large for BLAS (a dimension exceeds 2^31-1)");
    } else {
        mm_store(y, C, wk);
        /* a fused element-wise chain (ops.h): one pass over the product */
        if (k->epi && cv_epi_bind(k->epi, y->dtype, y->rank, y->dims)) {
            cv_epi_apply(k->epi, y->data, 0, y->nelem);
            k->epi->applied = true;
        }
        out[0] = y;
        y = NULL;
    }
    if (oa)
        cv_free(A);
    if (ob)
        cv_free(B);
    if (oc)
        cv_free(C);
    cv_val_unref(y);
    return st;
}

/* ---------------------------------------------------------------- Gemm */

/* The dims of C broadcast (unidirectionally) to [M, N]: strides into C. */
static carve_status gemm_c_strides(cv_kctx *k, const cv_val *c, int64_t M, int64_t N, int64_t st[2])
{
    int64_t od[2] = {M, N};
    bool ok = c->rank <= 2;
    for (int i = 0; ok && i < c->rank; i++) {
        int64_t d = c->dims[i], want = od[2 - c->rank + i];
        ok = d == 1 || d == want;
    }
    if (!ok) {
        char sc[256];
        return cv_kerr(k, "input 2 'C' %s does not broadcast to the output [%lld,%lld]",
                       cv_shape_str(sc, sizeof sc, c->rank, c->dims), (long long)M, (long long)N);
    }
    cv_bcast_strides(c->rank, c->dims, 2, od, st);
    return CARVE_OK;
}

carve_status k_gemm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *a = in[0], *b = in[1], *c = n_in > 2 ? in[2] : NULL;
    if (a->rank != 2 || b->rank != 2)
        return cv_kerr(k, "input %d '%s' has rank %d, expected 2", a->rank != 2 ? 0 : 1, a->rank != 2 ? "A" : "B",
                       a->rank != 2 ? a->rank : b->rank);
    if (a->dtype != b->dtype || (c && c->dtype != a->dtype))
        return cv_kerr(k, "inputs A, B%s have different types (%s, %s%s%s)", c ? ", C" : "", carve_dtype_name(a->dtype),
                       carve_dtype_name(b->dtype), c ? ", " : "", c ? carve_dtype_name(c->dtype) : "");
    if (!matmul_type_ok(a->dtype))
        return cv_kerr(k, "inputs are %s, expected a float type or a 32/64-bit integer", carve_dtype_name(a->dtype));
    bool ta = cv_attr_i(k->m, k->node, "transA", 0) != 0, tb = cv_attr_i(k->m, k->node, "transB", 0) != 0;
    double alpha = cv_attr_f(k->m, k->node, "alpha", 1.0f), beta = cv_attr_f(k->m, k->node, "beta", 1.0f);
    int64_t M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1], K2 = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
    if (K != K2)
        return cv_kerr(k, "input 0 'A' gives K = %lld but input 1 'B' gives K = %lld (transA %d, transB %d)",
                       (long long)K, (long long)K2, ta, tb);
    int64_t cst[2] = {0, 0};
    if (c && beta != 0) {
        carve_status s = gemm_c_strides(k, c, M, N, cst);
        if (s)
            return s;
    } else {
        c = NULL;
    }
    wkind wk = mm_wkind_of(a->dtype);
    int64_t od[2] = {M, N};
    /* W is beta*C or written by mm_gemm1 with beta 0; w_store writes all of y */
    cv_val *y = cv_val_new_uninit(a->dtype, 2, od);
    bool oa = false, ob = false, oc = false;
    void *A = y ? mm_load(a, wk, &oa) : NULL, *B = A ? mm_load(b, wk, &ob) : NULL;
    void *Cv = B && c ? mm_load(c, wk, &oc) : NULL;
    bool ownw = y && !w_native(y->dtype, wk);
    void *W = !B || (c && !Cv) ? NULL : ownw ? cv_malloc((y->nelem ? y->nelem : 1) * mm_wsize(wk)) : y->data;
    carve_status st = CARVE_OK;
    if (!W) {
        st = cv_knomem(k);
        goto done;
    }
    size_t lda = (size_t)a->dims[1], ldb = (size_t)b->dims[1], m = (size_t)M, n = (size_t)N;
    if (wk != W_INT) {
        /* Y starts as beta*C, then one BLAS call adds alpha*A*B. */
        for (size_t i = 0; c && i < m; i++)
            for (size_t j = 0; j < n; j++) {
                size_t ci = i * (size_t)cst[0] + j * (size_t)cst[1];
                if (wk == W_F32)
                    ((float *)W)[i * n + j] = (float)beta * ((const float *)Cv)[ci];
                else
                    ((double *)W)[i * n + j] = beta * ((const double *)Cv)[ci];
            }
        if (!mm_gemm1(wk, ta, tb, m, n, (size_t)K, alpha, A, lda, B, ldb, c ? 1.0 : 0.0, W, n)) {
            st = cv_kerr(k, "matrices too large for BLAS (a dimension exceeds 2^31-1)");
            goto done;
        }
    } else {
        mm_gemm1(W_INT, ta, tb, m, n, (size_t)K, 1, A, lda, B, ldb, 0, W, n);
        uint64_t *w = W;
        const uint64_t *cv = Cv;
        bool exact = nn_is_int_valued(alpha) && nn_is_int_valued(beta);
        /* Integer alpha/beta wrap exactly; others go through double,
         * rounded to nearest (no spec or runtime defines this case). */
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                uint64_t acc = w[i * n + j], cvv = c ? cv[i * (size_t)cst[0] + j * (size_t)cst[1]] : 0;
                if (exact) {
                    w[i * n + j] = (uint64_t)(int64_t)alpha * acc + (uint64_t)(int64_t)beta * cvv;
                } else {
                    double r = rint(alpha * (double)(int64_t)acc + beta * (double)(int64_t)cvv);
                    w[i * n + j] = isnan(r) ? 0 : r >= 9.2233720368547758e18 ? (uint64_t)INT64_MAX
                                 : r <= -9.2233720368547758e18 ? (uint64_t)INT64_MIN : (uint64_t)(int64_t)r;
                }
            }
    }
    mm_store(y, W, wk);
    if (k->epi && cv_epi_bind(k->epi, y->dtype, y->rank, y->dims)) {
        cv_epi_apply(k->epi, y->data, 0, y->nelem);
        k->epi->applied = true;
    }
    out[0] = y;
    y = NULL;
done:
    if (oa)
        cv_free(A);
    if (ob)
        cv_free(B);
    if (oc)
        cv_free(Cv);
    if (ownw)
        cv_free(W);
    cv_val_unref(y);
    return st;
}

/* ---------------------------------------------------------------- Det */

carve_status k_det(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (!cv_dtype_is_float(x->dtype))
        return cv_kerr(k, "input 0 'X' is %s, expected a float type", carve_dtype_name(x->dtype));
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
        char sx[256];
        return cv_kerr(k, "input 0 'X' %s is not a batch of square matrices", cv_shape_str(sx, sizeof sx, x->rank, x->dims));
    }
    size_t n = (size_t)x->dims[x->rank - 1], nb = cv_nelem(x->rank - 2, x->dims);
    cv_val *y = cv_val_new_uninit(x->dtype, x->rank - 2, x->dims); /* one det per matrix */
    double *a = cv_malloc((n ? n * n : 1) * sizeof *a);
    if (!y || !a) {
        cv_val_unref(y);
        cv_free(a);
        return cv_knomem(k);
    }
    for (size_t b = 0; b < nb; b++) {
        for (size_t i = 0; i < n * n; i++)
            a[i] = cv_val_get_f64(x, b * n * n + i);
        /* LU with partial pivoting */
        double det = 1;
        for (size_t c = 0; c < n && det != 0; c++) {
            size_t p = c;
            for (size_t r = c + 1; r < n; r++)
                if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
                    p = r;
            if (a[p * n + c] == 0) {
                det = 0;
                break;
            }
            if (p != c) {
                for (size_t j = 0; j < n; j++) {
                    double t = a[c * n + j];
                    a[c * n + j] = a[p * n + j];
                    a[p * n + j] = t;
                }
                det = -det;
            }
            double piv = a[c * n + c];
            det *= piv;
            for (size_t r = c + 1; r < n; r++) {
                double f = a[r * n + c] / piv;
                for (size_t j = c + 1; j < n; j++)
                    a[r * n + j] -= f * a[c * n + j];
            }
        }
        cv_val_set_f64(y, b, det);
    }
    cv_free(a);
    out[0] = y;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- inference */

static bool dim_eq(carve_dim a, carve_dim b)
{
    return (a.value >= 0 && a.value == b.value) || (a.value < 0 && a.param && b.param && !strcmp(a.param, b.param));
}

/* numpy matmul of inputs ia and ib, output dtype dt. */
static carve_status mm_infer(cv_ictx *c, uint32_t ia, uint32_t ib, carve_dtype dt)
{
    const cv_type *a = nn_tensor_in(c, ia), *b = nn_tensor_in(c, ib);
    if (!a || !b)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (a->rank < 1 || b->rank < 1)
        return cv_ierr(c, "input %u has rank %d and input %u rank %d: both need rank >= 1", ia, a->rank, ib, b->rank);
    carve_dim K = a->dims[a->rank - 1], K2 = b->dims[b->rank >= 2 ? b->rank - 2 : 0];
    if (K.value >= 0 && K2.value >= 0 && K.value != K2.value)
        return cv_ierr(c, "input %u has %lld columns but input %u has %lld rows", ia, (long long)K.value, ib,
                       (long long)K2.value);
    int ra = a->rank >= 2 ? a->rank - 2 : 0, rb = b->rank >= 2 ? b->rank - 2 : 0, r = ra > rb ? ra : rb;
    carve_dim d[CARVE_MAX_RANK + 2];
    for (int i = 0; i < r; i++) {
        carve_dim x = i < r - ra ? (carve_dim){1, NULL} : a->dims[i - (r - ra)];
        carve_dim y = i < r - rb ? (carve_dim){1, NULL} : b->dims[i - (r - rb)];
        if (x.value == 1)
            d[i] = y;
        else if (y.value == 1 || dim_eq(x, y))
            d[i] = x;
        else if (x.value >= 0 && y.value >= 0)
            return cv_ierr(c, "batch dims %lld and %lld of inputs %u and %u do not broadcast", (long long)x.value,
                           (long long)y.value, ia, ib);
        else
            d[i] = x.value >= 0 ? x : y.value >= 0 ? y : (carve_dim){-1, NULL};
    }
    int n = r;
    if (a->rank >= 2)
        d[n++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        d[n++] = b->dims[b->rank - 1];
    if (n > CARVE_MAX_RANK)
        return cv_ierr(c, "output rank %d exceeds %d", n, CARVE_MAX_RANK);
    return cv_infer_set(c, 0, dt, n, d);
}

carve_status i_matmul(cv_ictx *c) { return mm_infer(c, 0, 1, nn_dtype_in(c, 0)); }
carve_status i_matmulinteger(cv_ictx *c) { return mm_infer(c, 0, 1, CARVE_INT32); }
carve_status i_qlinearmatmul(cv_ictx *c) { return mm_infer(c, 0, 3, nn_dtype_in(c, 7)); }

carve_status i_gemm(cv_ictx *c)
{
    carve_dtype dt = nn_dtype_in(c, 0);
    const cv_type *a = nn_tensor_in(c, 0), *b = nn_tensor_in(c, 1);
    bool ta = cv_attr_i(c->m, c->node, "transA", 0) != 0, tb = cv_attr_i(c->m, c->node, "transB", 0) != 0;
    if ((a && a->rank != 2) || (b && b->rank != 2))
        return cv_ierr(c, "input %d has rank %d, expected 2", a && a->rank != 2 ? 0 : 1, a && a->rank != 2 ? a->rank : b->rank);
    carve_dim d[2] = {{-1, NULL}, {-1, NULL}};
    if (a)
        d[0] = a->dims[ta ? 1 : 0];
    if (b)
        d[1] = b->dims[tb ? 0 : 1];
    if (a && b) {
        carve_dim k1 = a->dims[ta ? 0 : 1], k2 = b->dims[tb ? 1 : 0];
        if (k1.value >= 0 && k2.value >= 0 && k1.value != k2.value)
            return cv_ierr(c, "input 0 'A' gives K = %lld but input 1 'B' gives K = %lld", (long long)k1.value,
                           (long long)k2.value);
    }
    const cv_type *ct = nn_tensor_in(c, 2);
    if (ct) {
        if (ct->rank > 2)
            return cv_ierr(c, "input 2 'C' has rank %d, expected at most 2", ct->rank);
        for (int i = 0; i < ct->rank; i++) {
            carve_dim cd = ct->dims[i], od = d[2 - ct->rank + i];
            if (cd.value >= 0 && cd.value != 1 && od.value >= 0 && cd.value != od.value)
                return cv_ierr(c, "input 2 'C' dim %d is %lld, which does not broadcast to %lld", i, (long long)cd.value,
                               (long long)od.value);
        }
    }
    return cv_infer_set(c, 0, dt, 2, d);
}

/* Det's dims: the batch dims of its square matrices. */
static carve_status det_dims(cv_ictx *c, const cv_type *t, int *rank, carve_dim *d)
{
    if (t->rank < 2)
        return cv_ierr(c, "input 0 'X' has rank %d, expected at least 2", t->rank);
    carve_dim a = t->dims[t->rank - 2], b = t->dims[t->rank - 1];
    if (a.value >= 0 && b.value >= 0 && a.value != b.value)
        return cv_ierr(c, "input 0 'X' ends in %lldx%lld matrices, which are not square", (long long)a.value,
                       (long long)b.value);
    *rank = t->rank - 2;
    memcpy(d, t->dims, (size_t)*rank * sizeof *d);
    return CARVE_OK;
}

carve_status i_det(cv_ictx *c) { return cv_infer_dims(c, det_dims); }

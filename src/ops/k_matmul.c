/* k_matmul.c: matrix products. MatMul (numpy batch broadcasting, 1-D
 * operands), Gemm and its decomposition, MatMulInteger, QLinearMatMul,
 * Einsum and Det.
 *
 * Floats go through OpenBLAS: float32 and double natively, float16 and
 * bfloat16 widened to float32 and rounded back once at the end. Integer
 * types multiply exactly in a plain loop with two's complement wrap-around
 * (the ring arithmetic numpy does). The integer parts of the quantized ops
 * are exact too: operands centred on their zero points are below 2^9 in
 * magnitude, so their products summed in double (dgemm) stay exact for any
 * K that fits in memory. */
#include "k_nn.h"

#include "blas.h"
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *nn_shape_str(char *buf, size_t n, int rank, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* ---------------------------------------------------------------- working representations */

/* What a product computes in: float32 (float, float16, bfloat16), double,
 * or 64-bit wrapping integers (every integer type). */
typedef enum { W_F32, W_F64, W_INT } wkind;

static wkind wkind_of(carve_dtype t)
{
    if (t == CARVE_DOUBLE)
        return W_F64;
    return cv_dtype_is_int(t) ? W_INT : W_F32;
}

static size_t wsize(wkind k) { return k == W_F32 ? 4 : 8; }

static bool w_native(carve_dtype t, wkind k)
{
    return (k == W_F32 && t == CARVE_FLOAT) || (k == W_F64 && t == CARVE_DOUBLE) ||
           (k == W_INT && (t == CARVE_INT64 || t == CARVE_UINT64));
}

/* v's elements in the working representation: v's own data when it is
 * native (*owned false), else a converted cv_malloc'd copy. */
static void *w_load(const cv_val *v, wkind k, bool *owned)
{
    *owned = false;
    if (w_native(v->dtype, k))
        return v->data;
    size_t n = v->nelem;
    void *p = cv_malloc((n ? n : 1) * wsize(k));
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
static void w_store(cv_val *y, const void *w, wkind k)
{
    size_t n = y->nelem;
    if (w_native(y->dtype, k)) {
        if (w != y->data && n)
            memcpy(y->data, w, n * wsize(k));
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
static bool gemm1(wkind k, bool ta, bool tb, size_t M, size_t N, size_t K, double alpha, const void *A, size_t lda,
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
static bool matmul_batched(wkind k, const void *A, int ra, const int64_t *abat, const void *B, int rb,
                           const int64_t *bbat, int rc, const int64_t *cb, size_t M, size_t N, size_t K, void *C)
{
    size_t nb = cv_nelem(rc, cb), es = wsize(k);
    if (cv_nelem(rb, bbat) == 1) /* one B for all: a single tall product */
        return gemm1(k, false, false, nb * M, N, K, 1, A, K, B, N, 0, C, N);
    int64_t sa[CARVE_MAX_RANK], sb[CARVE_MAX_RANK], idx[CARVE_MAX_RANK] = {0};
    cv_bcast_strides(ra, abat, rc, cb, sa);
    cv_bcast_strides(rb, bbat, rc, cb, sb);
    for (size_t b = 0; b < nb; b++) {
        size_t oa = 0, ob = 0;
        for (int d = 0; d < rc; d++)
            oa += (size_t)(idx[d] * sa[d]), ob += (size_t)(idx[d] * sb[d]);
        if (!gemm1(k, false, false, M, N, K, 1, (const char *)A + oa * M * K * es, K,
                   (const char *)B + ob * K * N * es, N, 0, (char *)C + b * M * N * es, N))
            return false;
        for (int d = rc - 1; d >= 0 && ++idx[d] == cb[d]; d--)
            idx[d] = 0;
    }
    return true;
}

typedef struct {
    int ra, rb, rc;             /* batch ranks of A, B and the output */
    int64_t cb[CARVE_MAX_RANK]; /* broadcast batch dims */
    size_t M, N, K;
    int orank;
    int64_t odims[CARVE_MAX_RANK];
} mmshape;

/* Shapes of a numpy matmul of a and b (names for messages). */
static carve_status mm_shape(cv_kctx *k, const cv_val *a, const cv_val *b, const char *an, const char *bn, mmshape *s)
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
                       nn_shape_str(sa, sizeof sa, a->rank, a->dims), (long long)K, bn,
                       nn_shape_str(sb, sizeof sb, b->rank, b->dims), (long long)K2);
    if (!cv_broadcast_shape(s->ra, a->dims, s->rb, b->dims, &s->rc, s->cb))
        return cv_kerr(k, "the batch dims of input '%s' %s and input '%s' %s do not broadcast", an,
                       nn_shape_str(sa, sizeof sa, a->rank, a->dims), bn, nn_shape_str(sb, sizeof sb, b->rank, b->dims));
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
    wkind wk = wkind_of(a->dtype);
    /* gemm1 (beta 0) writes every element of C, w_store every one of y */
    cv_val *y = cv_val_new_uninit(a->dtype, s.orank, s.odims);
    bool oa = false, ob = false, oc = y && !w_native(y->dtype, wk);
    void *A = y ? w_load(a, wk, &oa) : NULL, *B = A ? w_load(b, wk, &ob) : NULL;
    void *C = !B ? NULL : oc ? cv_malloc((y->nelem ? y->nelem : 1) * wsize(wk)) : y->data;
    if (!C) {
        st = cv_knomem(k);
    } else if (!matmul_batched(wk, A, s.ra, a->dims, B, s.rb, b->dims, s.rc, s.cb, s.M, s.N, s.K, C)) {
        st = cv_kerr(k, "matrices too large for BLAS (a dimension exceeds 2^31-1)");
    } else {
        w_store(y, C, wk);
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
                       nn_shape_str(sc, sizeof sc, c->rank, c->dims), (long long)M, (long long)N);
    }
    cv_bcast_strides(c->rank, c->dims, 2, od, st);
    return CARVE_OK;
}

static bool is_int_valued(double x) { return x == floor(x) && fabs(x) < 9.0e18; }

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
    wkind wk = wkind_of(a->dtype);
    int64_t od[2] = {M, N};
    /* W is beta*C or written by gemm1 with beta 0; w_store writes all of y */
    cv_val *y = cv_val_new_uninit(a->dtype, 2, od);
    bool oa = false, ob = false, oc = false;
    void *A = y ? w_load(a, wk, &oa) : NULL, *B = A ? w_load(b, wk, &ob) : NULL;
    void *Cv = B && c ? w_load(c, wk, &oc) : NULL;
    bool ownw = y && !w_native(y->dtype, wk);
    void *W = !B || (c && !Cv) ? NULL : ownw ? cv_malloc((y->nelem ? y->nelem : 1) * wsize(wk)) : y->data;
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
        if (!gemm1(wk, ta, tb, m, n, (size_t)K, alpha, A, lda, B, ldb, c ? 1.0 : 0.0, W, n)) {
            st = cv_kerr(k, "matrices too large for BLAS (a dimension exceeds 2^31-1)");
            goto done;
        }
    } else {
        gemm1(W_INT, ta, tb, m, n, (size_t)K, 1, A, lda, B, ldb, 0, W, n);
        uint64_t *w = W;
        const uint64_t *cv = Cv;
        bool exact = is_int_valued(alpha) && is_int_valued(beta);
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
    w_store(y, W, wk);
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

/* Gemm = [Transpose] -> MatMul -> [Mul alpha] -> [Add (Mul C beta)]. */
carve_status d_gemm(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    carve_value_id a = nd->in[0], b = nd->in[1], c = nd->n_in > 2 ? nd->in[2] : CARVE_NONE, y = nd->out[0];
    const char *name = nd->name;
    carve_dtype dt = m->values[a].type.kind == CARVE_TYPE_TENSOR ? m->values[a].type.dtype : CARVE_UNDEFINED;
    if (!dt)
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (Gemm): input 0 'A' has no known type to decompose with", name);
    bool ta = cv_attr_i(m, rw->node, "transA", 0) != 0, tb = cv_attr_i(m, rw->node, "transB", 0) != 0;
    double alpha = cv_attr_f(m, rw->node, "alpha", 1.0f), beta = cv_attr_f(m, rw->node, "beta", 1.0f);
    if (cv_dtype_is_int(dt) && (!is_int_valued(alpha) || !is_int_valued(beta)))
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (Gemm): alpha %g / beta %g are not integers for %s inputs",
                        name, alpha, beta, carve_dtype_name(dt));
    if (c != CARVE_NONE && beta == 0)
        c = CARVE_NONE;
    static const int64_t perm[2] = {1, 0};
    for (int i = 0; i < 2; i++) {
        if (!(i ? tb : ta))
            continue;
        carve_value_id x = i ? b : a;
        carve_node_id t = cv_rw_node(rw, "Transpose", i ? "TransposeB" : "TransposeA", 1, &x, 1, NULL);
        if (t == CARVE_NONE || carve_node_set_attr_ints(m, t, "perm", 2, perm))
            return carve_errcode(m->ctx);
        *(i ? &b : &a) = m->nodes[t].out[0];
    }
    bool scale = alpha != 1, add = c != CARVE_NONE;
    carve_value_id ins[2] = {a, b};
    carve_node_id mm = cv_rw_node(rw, "MatMul", "MatMul", 2, ins, 1, scale || add ? NULL : &y);
    if (mm == CARVE_NONE)
        return carve_errcode(m->ctx);
    carve_value_id v = m->nodes[mm].out[0];
    if (scale) {
        ins[0] = v;
        ins[1] = cv_rw_scalar_f(rw, "alpha", dt, alpha);
        carve_node_id mu = ins[1] == CARVE_NONE ? CARVE_NONE : cv_rw_node(rw, "Mul", "MulAlpha", 2, ins, 1, add ? NULL : &y);
        if (mu == CARVE_NONE)
            return carve_errcode(m->ctx);
        v = m->nodes[mu].out[0];
    }
    if (add) {
        if (beta != 1) {
            ins[0] = c;
            ins[1] = cv_rw_scalar_f(rw, "beta", dt, beta);
            carve_node_id mu = ins[1] == CARVE_NONE ? CARVE_NONE : cv_rw_node(rw, "Mul", "MulBeta", 2, ins, 1, NULL);
            if (mu == CARVE_NONE)
                return carve_errcode(m->ctx);
            c = m->nodes[mu].out[0];
        }
        ins[0] = v;
        ins[1] = c;
        if (cv_rw_node(rw, "Add", "Add", 2, ins, 1, &y) == CARVE_NONE)
            return carve_errcode(m->ctx);
    }
    return CARVE_OK;
}

/* ---------------------------------------------------------------- integer and quantized products */

/* x - zp as doubles. zp (NULL: 0) is a scalar, a 1-D tensor along x's axis
 * `axis` (-1: none), or a tensor of x's rank broadcasting to x. */
static carve_status centered(cv_kctx *k, const cv_val *x, const cv_val *zp, int axis, const char *xn, const char *zn,
                             double **out)
{
    *out = NULL;
    if (zp && zp->dtype != x->dtype)
        return cv_kerr(k, "input '%s' is %s but input '%s' is %s", zn, carve_dtype_name(zp->dtype), xn,
                       carve_dtype_name(x->dtype));
    int64_t st[CARVE_MAX_RANK] = {0};
    bool scalar = !zp || zp->nelem == 1, along = false;
    if (!scalar) {
        along = zp->rank == 1 && axis >= 0 && zp->dims[0] == x->dims[axis];
        bool bc = zp->rank == x->rank;
        for (int d = 0; bc && d < x->rank; d++)
            bc = zp->dims[d] == 1 || zp->dims[d] == x->dims[d];
        if (!along && !bc) {
            char sz[256], sx[256];
            return cv_kerr(k, "input '%s' %s is neither a scalar, a 1-D tensor of %lld elements nor a shape broadcasting to input '%s' %s",
                           zn, nn_shape_str(sz, sizeof sz, zp->rank, zp->dims),
                           (long long)(axis >= 0 ? x->dims[axis] : 1), xn, nn_shape_str(sx, sizeof sx, x->rank, x->dims));
        }
        if (!along)
            cv_bcast_strides(zp->rank, zp->dims, x->rank, x->dims, st);
    }
    double *d = nn_decode(x), *z = zp ? nn_decode(zp) : NULL;
    if (!d || (zp && !z)) {
        cv_scratch_free(d);
        cv_scratch_free(z);
        return cv_knomem(k);
    }
    if (scalar) {
        double zv = z ? z[0] : 0;
        for (size_t i = 0; zv != 0 && i < x->nelem; i++)
            d[i] -= zv;
    } else if (along) {
        size_t inner = cv_nelem(x->rank - axis - 1, x->dims + axis + 1), dim = (size_t)x->dims[axis];
        for (size_t i = 0; i < x->nelem; i++)
            d[i] -= z[(i / inner) % dim];
    } else {
        int64_t idx[CARVE_MAX_RANK] = {0};
        for (size_t i = 0; i < x->nelem; i++) {
            size_t o = 0;
            for (int r = 0; r < x->rank; r++)
                o += (size_t)(idx[r] * st[r]);
            d[i] -= z[o];
            for (int r = x->rank - 1; r >= 0 && ++idx[r] == x->dims[r]; r--)
                idx[r] = 0;
        }
    }
    cv_scratch_free(z);
    *out = d;
    return CARVE_OK;
}

static bool is_q8(carve_dtype t) { return t == CARVE_INT8 || t == CARVE_UINT8; }

static bool is_f8(carve_dtype t)
{
    return t == CARVE_FLOAT8E4M3FN || t == CARVE_FLOAT8E4M3FNUZ || t == CARVE_FLOAT8E5M2 ||
           t == CARVE_FLOAT8E5M2FNUZ;
}

/* The exact product of a and b centred on their zero points (double). */
static carve_status int_product(cv_kctx *k, const cv_val *a, const cv_val *azp, const cv_val *b, const cv_val *bzp,
                                const char *const names[4], mmshape *s, double **acc)
{
    *acc = NULL;
    carve_status st = mm_shape(k, a, b, names[0], names[2], s);
    if (st)
        return st;
    double *A = NULL, *B = NULL;
    st = centered(k, a, azp, a->rank >= 2 ? a->rank - 2 : -1, names[0], names[1], &A);
    if (!st)
        st = centered(k, b, bzp, b->rank >= 2 ? b->rank - 1 : -1, names[2], names[3], &B);
    size_t n = cv_nelem(s->orank, s->odims);
    double *C = st ? NULL : cv_scratch_alloc((n ? n : 1) * sizeof *C); /* gemm1, beta 0 */
    if (!st && !C)
        st = cv_knomem(k);
    if (!st && !matmul_batched(W_F64, A, s->ra, a->dims, B, s->rb, b->dims, s->rc, s->cb, s->M, s->N, s->K, C))
        st = cv_kerr(k, "matrices too large for BLAS (a dimension exceeds 2^31-1)");
    cv_scratch_free(A);
    cv_scratch_free(B);
    if (st)
        cv_scratch_free(C);
    else
        *acc = C;
    return st;
}

carve_status k_matmulinteger(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *a = in[0], *b = in[1], *azp = n_in > 2 ? in[2] : NULL, *bzp = n_in > 3 ? in[3] : NULL;
    if (!is_q8(a->dtype) || !is_q8(b->dtype))
        return cv_kerr(k, "inputs A and B are %s and %s, expected int8 or uint8", carve_dtype_name(a->dtype),
                       carve_dtype_name(b->dtype));
    static const char *const names[4] = {"A", "a_zero_point", "B", "b_zero_point"};
    mmshape s;
    double *acc;
    carve_status st = int_product(k, a, azp, b, bzp, names, &s, &acc);
    if (st)
        return st;
    cv_val *y = cv_val_new_uninit(CARVE_INT32, s.orank, s.odims);
    if (!y) {
        cv_scratch_free(acc);
        return cv_knomem(k);
    }
    int32_t *o = y->data;
    for (size_t i = 0; i < y->nelem; i++) /* exact integers; wrap like int32 accumulation */
        o[i] = (int32_t)(uint32_t)(uint64_t)(int64_t)acc[i];
    cv_scratch_free(acc);
    out[0] = y;
    return CARVE_OK;
}

/* A scale: one value or one per index along a dimension of size n. */
static carve_status scale_vec(cv_kctx *k, const cv_val *s, size_t n, const char *name, const char *what, float **out)
{
    *out = NULL;
    if (s->dtype != CARVE_FLOAT && s->dtype != CARVE_FLOAT16 && s->dtype != CARVE_BFLOAT16)
        return cv_kerr(k, "input '%s' is %s, expected float32, float16 or bfloat16", name, carve_dtype_name(s->dtype));
    if (s->nelem != 1 && (s->rank != 1 || s->nelem != n))
        return cv_kerr(k, "input '%s' has %zu elements (rank %d): expected a scalar or a 1-D tensor of %zu (one per %s)",
                       name, s->nelem, s->rank, n, what);
    float *v = cv_malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return cv_knomem(k);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)cv_val_get_f64(s, s->nelem == 1 ? 0 : i);
    *out = v;
    return CARVE_OK;
}

carve_status k_qlinearmatmul(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *a = in[0], *as = in[1], *azp = in[2], *b = in[3], *bs = in[4], *bzp = in[5], *ys = in[6],
                 *yzp = in[7];
    bool f8ok = k->opset >= 21;
    if (!(is_q8(a->dtype) || (f8ok && is_f8(a->dtype))) || !(is_q8(b->dtype) || (f8ok && is_f8(b->dtype))))
        return cv_kerr(k, "inputs a and b are %s and %s, expected int8 or uint8%s", carve_dtype_name(a->dtype),
                       carve_dtype_name(b->dtype), f8ok ? " or float8" : "");
    if (!yzp || (!(is_q8(yzp->dtype)) && !(f8ok && is_f8(yzp->dtype))))
        return cv_kerr(k, "input 7 'y_zero_point' is %s, expected int8 or uint8%s",
                       yzp ? carve_dtype_name(yzp->dtype) : "missing", f8ok ? " or float8" : "");
    if (yzp->nelem != 1 || ys->nelem != 1)
        return cv_kerr(k, "inputs 'y_scale' and 'y_zero_point' must be scalars (they have %zu and %zu elements)",
                       ys->nelem, yzp->nelem);
    static const char *const names[4] = {"a", "a_zero_point", "b", "b_zero_point"};
    mmshape s;
    double *acc = NULL;
    float *av = NULL, *bv = NULL, *yv = NULL;
    cv_val *y = NULL;
    carve_status st = int_product(k, a, azp, b, bzp, names, &s, &acc);
    if (!st)
        st = scale_vec(k, as, s.M, "a_scale", "row of a", &av);
    if (!st)
        st = scale_vec(k, bs, s.N, "b_scale", "column of b", &bv);
    if (!st)
        st = scale_vec(k, ys, 1, "y_scale", "tensor", &yv);
    if (!st && !(y = cv_val_new_uninit(yzp->dtype, s.orank, s.odims))) /* nn_requant stores every element */
        st = cv_knomem(k);
    if (!st) {
        /* The multiplier in float32, applied in double (as the ONNX reference:
         * numpy promotes int32 * float32 to float64). */
        for (size_t i = 0; i < y->nelem; i++) {
            size_t col = i % s.N, row = (i / s.N) % s.M;
            float mult = av[row] * bv[col] / yv[0];
            acc[i] *= (double)mult;
        }
        if (!nn_requant(y, acc, yzp))
            st = cv_knomem(k);
    }
    cv_scratch_free(acc);
    cv_free(av);
    cv_free(bv);
    cv_free(yv);
    if (st) {
        cv_val_unref(y);
        return st;
    }
    out[0] = y;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- Einsum */

/* Labels: 'A'..'Z' are 0..25, 'a'..'z' 26..51 (so ids sort like ASCII, as
 * numpy's implicit output does), the dims an ellipsis stands for are 52.. in
 * right-aligned order (broadcast like numpy). */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + CARVE_MAX_RANK)

typedef struct {
    int n;
    int lab[CARVE_MAX_RANK];
} ein_term;

static int ein_letter(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return 26 + ch - 'a';
    return -1;
}

/* Parses equation eq for n_in operands of the given ranks into label lists
 * and the output's. false with a message in err. */
static bool ein_parse(const char *eq, uint32_t n_in, const int *ranks, ein_term *terms, ein_term *outt, char *err,
                      size_t errsz)
{
    char buf[1024];
    size_t n = 0;
    for (const char *p = eq; *p; p++)
        if (*p != ' ' && *p != '\t' && n + 1 < sizeof buf)
            buf[n++] = *p;
    buf[n] = 0;
    char *arrow = strstr(buf, "->");
    if (arrow)
        *arrow = 0;
    /* first pass over the inputs: letters and ellipsis rank */
    int ell[256] = {0}, maxell = 0, count[EIN_LETTERS] = {0};
    bool has_ell[256] = {false};
    char *term = buf;
    for (uint32_t t = 0; t < n_in; t++) {
        char *end = strchr(term, ',');
        if (!end && t + 1 < n_in) {
            snprintf(err, errsz, "equation '%s' has %u operand terms but the node has %u inputs", eq, t + 1, n_in);
            return false;
        }
        if (end)
            *end = 0;
        int letters = 0;
        for (char *p = term; *p; p++) {
            if (*p == '.') {
                if (strncmp(p, "...", 3) || has_ell[t]) {
                    snprintf(err, errsz, "equation '%s': term %u has a stray '.' or a second ellipsis", eq, t);
                    return false;
                }
                has_ell[t] = true;
                p += 2;
            } else if (ein_letter(*p) < 0) {
                snprintf(err, errsz, "equation '%s': '%c' is not a letter", eq, *p);
                return false;
            } else {
                letters++;
                count[ein_letter(*p)]++;
            }
        }
        if (ranks[t] >= 0) {
            if (has_ell[t] ? letters > ranks[t] : letters != ranks[t]) {
                snprintf(err, errsz, "equation '%s': term %u has %d labels but input %u has rank %d", eq, t, letters, t,
                         ranks[t]);
                return false;
            }
            ell[t] = has_ell[t] ? ranks[t] - letters : 0;
            if (ell[t] > maxell)
                maxell = ell[t];
        }
        terms[t].n = letters;
        if (end)
            term = end + 1;
        else
            term += strlen(term);
    }
    if (*term) {
        snprintf(err, errsz, "equation '%s' has more operand terms than the node's %u inputs", eq, n_in);
        return false;
    }
    /* second pass: label ids */
    term = buf;
    for (uint32_t t = 0; t < n_in; t++) {
        int k = 0;
        for (char *p = term; *p; p++) {
            if (*p == '.') {
                for (int e = 0; e < ell[t]; e++)
                    terms[t].lab[k++] = EIN_LETTERS + (maxell - ell[t]) + e;
                p += 2;
            } else {
                terms[t].lab[k++] = ein_letter(*p);
            }
        }
        terms[t].n = k;
        term += strlen(term) + 1;
    }
    outt->n = 0;
    if (arrow) {
        bool seen[EIN_LABELS] = {false}, oell = false;
        for (char *p = arrow + 2; *p; p++) {
            if (*p == '.') {
                if (strncmp(p, "...", 3) || oell) {
                    snprintf(err, errsz, "equation '%s': the output has a stray '.' or a second ellipsis", eq);
                    return false;
                }
                oell = true;
                for (int e = 0; e < maxell; e++)
                    outt->lab[outt->n++] = EIN_LETTERS + e;
                p += 2;
                continue;
            }
            int l = ein_letter(*p);
            if (l < 0 || !count[l] || seen[l]) {
                snprintf(err, errsz, "equation '%s': output label '%c' is %s", eq, *p,
                         l < 0 ? "not a letter" : !count[l] ? "in no input" : "repeated");
                return false;
            }
            if (outt->n >= CARVE_MAX_RANK) {
                snprintf(err, errsz, "equation '%s': the output has more than %d dims", eq, CARVE_MAX_RANK);
                return false;
            }
            seen[l] = true;
            outt->lab[outt->n++] = l;
        }
    } else {
        for (int e = 0; e < maxell; e++)
            outt->lab[outt->n++] = EIN_LETTERS + e;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1) {
                if (outt->n >= CARVE_MAX_RANK) {
                    snprintf(err, errsz, "equation '%s': the output has more than %d dims", eq, CARVE_MAX_RANK);
                    return false;
                }
                outt->lab[outt->n++] = l;
            }
    }
    return true;
}

/* An operand during evaluation: dims per label, contiguous data in the
 * working representation (owned unless it is an input's). */
typedef struct {
    int n;
    int lab[EIN_LABELS];
    int64_t dims[EIN_LABELS];
    void *data;
    bool owned;
} ein_op;

/* Products of sizes saturate here, so allocating them fails cleanly instead
 * of wrapping around. */
#define EIN_HUGE ((size_t)1 << 42)

static size_t ein_mul(size_t a, size_t b)
{
    if (!a || !b)
        return 0;
    return a > EIN_HUGE / b ? EIN_HUGE : a * b;
}

static size_t ein_count(int n, const int64_t *d)
{
    size_t c = 1;
    for (int i = 0; i < n; i++)
        c = ein_mul(c, (size_t)d[i]);
    return c;
}

/* A contiguous tensor of dims[0..n) reading src at sum(idx * strides). */
static void *ein_gather(wkind k, const void *src, int n, const int64_t *dims, const int64_t *strides)
{
    size_t total = ein_count(n, dims), es = wsize(k);
    void *dst = cv_malloc((total ? total : 1) * es);
    if (!dst || !total)
        return dst;
    if (n == 0) {
        memcpy(dst, src, es);
        return dst;
    }
    int64_t idx[EIN_LABELS] = {0};
    size_t o = 0, L = (size_t)dims[n - 1];
    int64_t sl = strides[n - 1];
    while (o < total) {
        int64_t base = 0;
        for (int i = 0; i < n - 1; i++)
            base += idx[i] * strides[i];
        if (es == 4) {
            const uint32_t *s = (const uint32_t *)src + base;
            uint32_t *d = (uint32_t *)dst + o;
            for (size_t t = 0; t < L; t++)
                d[t] = s[(int64_t)t * sl];
        } else {
            const uint64_t *s = (const uint64_t *)src + base;
            uint64_t *d = (uint64_t *)dst + o;
            for (size_t t = 0; t < L; t++)
                d[t] = s[(int64_t)t * sl];
        }
        o += L;
        for (int i = n - 2; i >= 0 && ++idx[i] == dims[i]; i--)
            idx[i] = 0;
    }
    return dst;
}

/* dst[i] = sum over r < R of src[i*R + r], i < n. */
static void ein_sum_tail(wkind k, const void *src, size_t n, size_t R, void *dst)
{
    for (size_t i = 0; i < n; i++) {
        if (k == W_F32) {
            const float *s = (const float *)src + i * R;
            float acc = 0;
            for (size_t r = 0; r < R; r++)
                acc += s[r];
            ((float *)dst)[i] = acc;
        } else if (k == W_F64) {
            const double *s = (const double *)src + i * R;
            double acc = 0;
            for (size_t r = 0; r < R; r++)
                acc += s[r];
            ((double *)dst)[i] = acc;
        } else {
            const uint64_t *s = (const uint64_t *)src + i * R;
            uint64_t acc = 0;
            for (size_t r = 0; r < R; r++)
                acc += s[r];
            ((uint64_t *)dst)[i] = acc;
        }
    }
}

static void ein_set(ein_op *op, void *data, bool owned)
{
    if (op->owned)
        cv_free(op->data);
    op->data = data;
    op->owned = owned;
}

/* Rewrites op so its labels are unique (repeated labels take the diagonal),
 * labels not in `keep` are summed out, and the kept ones come in the order
 * `order` lists them (order: all kept labels, or NULL for first-occurrence
 * order). `size` gives each label's broadcast size: a dim of 1 where size is
 * larger is expanded when `expand` marks the label. */
static bool ein_normalize(wkind k, ein_op *op, const bool *keep, const int *order, int n_order, const int64_t *size,
                          const bool *expand)
{
    int64_t st[EIN_LABELS], s = 1;
    for (int i = op->n - 1; i >= 0; i--)
        st[i] = s, s *= op->dims[i];
    int ul[EIN_LABELS], nu = 0;
    int64_t ud[EIN_LABELS], us[EIN_LABELS];
    bool changed = false;
    for (int i = 0; i < op->n; i++) {
        int j = 0;
        while (j < nu && ul[j] != op->lab[i])
            j++;
        if (j == nu) {
            ul[nu] = op->lab[i], ud[nu] = op->dims[i], us[nu] = st[i], nu++;
        } else {
            us[j] += st[i];
            changed = true;
        }
    }
    /* gather order: kept labels (in `order` when given), then summed ones */
    int gl[EIN_LABELS], ng = 0, nkeep = 0;
    int64_t gd[EIN_LABELS], gs[EIN_LABELS];
    if (order) {
        for (int o = 0; o < n_order; o++)
            for (int j = 0; j < nu; j++)
                if (ul[j] == order[o])
                    gl[ng] = ul[j], gd[ng] = ud[j], gs[ng] = us[j], ng++;
    } else {
        for (int j = 0; j < nu; j++)
            if (keep[ul[j]])
                gl[ng] = ul[j], gd[ng] = ud[j], gs[ng] = us[j], ng++;
    }
    nkeep = ng;
    for (int j = 0; j < nu; j++)
        if (!keep[ul[j]])
            gl[ng] = ul[j], gd[ng] = ud[j], gs[ng] = us[j], ng++;
    for (int i = 0; i < ng; i++) {
        if (i < nkeep && expand && expand[gl[i]] && gd[i] == 1 && size[gl[i]] != 1) {
            gd[i] = size[gl[i]];
            gs[i] = 0;
        }
        if (gl[i] != op->lab[i] || gs[i] != st[i])
            changed = true;
    }
    if (ng != op->n || nkeep < ng)
        changed = true;
    if (!changed)
        return true;
    void *g = ein_gather(k, op->data, ng, gd, gs);
    if (!g)
        return false;
    if (nkeep < ng) {
        size_t n = ein_count(nkeep, gd), R = ein_count(ng - nkeep, gd + nkeep);
        void *r = cv_malloc((n ? n : 1) * wsize(k));
        if (!r) {
            cv_free(g);
            return false;
        }
        ein_sum_tail(k, g, n, R, r);
        cv_free(g);
        g = r;
    }
    ein_set(op, g, true);
    op->n = nkeep;
    memcpy(op->lab, gl, (size_t)nkeep * sizeof *gl);
    memcpy(op->dims, gd, (size_t)nkeep * sizeof *gd);
    return true;
}

static bool ein_has(const ein_op *op, int l)
{
    for (int i = 0; i < op->n; i++)
        if (op->lab[i] == l)
            return true;
    return false;
}

/* a = a (x) b contracted over their shared labels not in `later`. */
static bool ein_contract(wkind k, ein_op *a, ein_op *b, const bool *later, const int64_t *size)
{
    bool keep_a[EIN_LABELS], keep_b[EIN_LABELS], shared[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) {
        shared[l] = ein_has(a, l) && ein_has(b, l);
        keep_a[l] = later[l] || ein_has(b, l);
        keep_b[l] = later[l] || ein_has(a, l);
    }
    /* orders: A [batch, a-only, contracted], B [batch, contracted, b-only] */
    int oa[EIN_LABELS], ob[EIN_LABELS], nba = 0, na = 0, nb = 0, nbatch = 0, nc = 0;
    int batch[EIN_LABELS], contr[EIN_LABELS], aonly[EIN_LABELS], bonly[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) {
        if (shared[l] && later[l])
            batch[nbatch++] = l;
        else if (shared[l])
            contr[nc++] = l;
        else if (ein_has(a, l) && later[l])
            aonly[na++] = l;
        else if (ein_has(b, l) && later[l])
            bonly[nb++] = l;
    }
    for (int i = 0; i < nbatch; i++)
        oa[nba] = batch[i], ob[nba] = batch[i], nba++;
    int ka = nba, kb = nba;
    for (int i = 0; i < na; i++)
        oa[ka++] = aonly[i];
    for (int i = 0; i < nc; i++)
        oa[ka++] = contr[i], ob[kb++] = contr[i];
    for (int i = 0; i < nb; i++)
        ob[kb++] = bonly[i];
    if (!ein_normalize(k, a, keep_a, oa, ka, size, shared) || !ein_normalize(k, b, keep_b, ob, kb, size, shared))
        return false;
    size_t NB = ein_count(nbatch, a->dims), M = ein_count(na, a->dims + nbatch), K = ein_count(nc, a->dims + nbatch + na),
           N = ein_count(nb, b->dims + nbatch + nc), es = wsize(k);
    size_t total = ein_mul(ein_mul(NB, M), N);
    void *c = cv_malloc((total ? total : 1) * es);
    if (!c)
        return false;
    for (size_t i = 0; i < NB; i++)
        if (!gemm1(k, false, false, M, N, K, 1, (const char *)a->data + i * M * K * es, K,
                   (const char *)b->data + i * K * N * es, N, 0, (char *)c + i * M * N * es, N)) {
            cv_free(c);
            return false;
        }
    int64_t dims[EIN_LABELS];
    int lab[EIN_LABELS], n = 0;
    for (int i = 0; i < nbatch + na; i++)
        lab[n] = a->lab[i], dims[n] = a->dims[i], n++;
    for (int i = 0; i < nb; i++)
        lab[n] = b->lab[nbatch + nc + i], dims[n] = b->dims[nbatch + nc + i], n++;
    ein_set(a, c, true);
    a->n = n;
    memcpy(a->lab, lab, (size_t)n * sizeof *lab);
    memcpy(a->dims, dims, (size_t)n * sizeof *dims);
    return true;
}

static bool einsum_type_ok(carve_dtype t)
{
    return cv_dtype_is_int(t) ? t != CARVE_INT4 && t != CARVE_UINT4
                              : t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

carve_status k_einsum(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const char *eq = cv_attr_s(k->m, k->node, "equation", NULL);
    if (!eq)
        return cv_kerr(k, "attribute 'equation' is missing");
    carve_dtype dt = in[0]->dtype;
    for (uint32_t i = 0; i < n_in; i++) {
        if (!in[i])
            return cv_kerr(k, "input %u is omitted", i);
        if (in[i]->dtype != dt)
            return cv_kerr(k, "input %u is %s but input 0 is %s", i, carve_dtype_name(in[i]->dtype), carve_dtype_name(dt));
    }
    if (!einsum_type_ok(dt))
        return cv_kerr(k, "inputs are %s, expected a numeric type", carve_dtype_name(dt));
    int ranks[256] = {0};
    ein_term terms[256], outt;
    for (uint32_t i = 0; i < n_in; i++)
        ranks[i] = in[i]->rank;
    char err[512];
    if (!ein_parse(eq, n_in, ranks, terms, &outt, err, sizeof err))
        return cv_kerr(k, "%s", err);
    /* label sizes (numpy broadcasting of 1s), checked across operands */
    int64_t size[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++)
        size[l] = -1;
    for (uint32_t t = 0; t < n_in; t++)
        for (int i = 0; i < terms[t].n; i++) {
            int l = terms[t].lab[i];
            int64_t d = in[t]->dims[i];
            for (int j = 0; j < i; j++)
                if (terms[t].lab[j] == l && in[t]->dims[j] != d)
                    return cv_kerr(k, "input %u repeats a label on dims %d and %d of different sizes (%lld, %lld)", t, j, i,
                                   (long long)in[t]->dims[j], (long long)d);
            if (size[l] < 0 || size[l] == 1)
                size[l] = d;
            else if (d != 1 && d != size[l])
                return cv_kerr(k, "input %u dim %d is %lld but that label has size %lld elsewhere", t, i, (long long)d,
                               (long long)size[l]);
        }
    wkind wk = wkind_of(dt);
    ein_op *ops = cv_malloc(n_in * sizeof *ops);
    if (!ops)
        return cv_knomem(k);
    carve_status st = CARVE_OK;
    uint32_t loaded = 0;
    for (; loaded < n_in; loaded++) {
        ein_op *o = &ops[loaded];
        o->n = terms[loaded].n;
        memcpy(o->lab, terms[loaded].lab, (size_t)o->n * sizeof *o->lab);
        memcpy(o->dims, in[loaded]->dims, (size_t)o->n * sizeof *o->dims);
        o->data = w_load(in[loaded], wk, &o->owned);
        if (!o->data) {
            st = cv_knomem(k);
            break;
        }
    }
    bool in_out[EIN_LABELS] = {false};
    for (int i = 0; i < outt.n; i++)
        in_out[outt.lab[i]] = true;
    for (uint32_t t = 0; !st && t < n_in; t++) {
        /* labels still needed after operand t: the output's and later operands' */
        bool later[EIN_LABELS];
        memcpy(later, in_out, sizeof later);
        for (uint32_t u = t + 1; u < n_in; u++)
            for (int i = 0; i < terms[u].n; i++)
                later[terms[u].lab[i]] = true;
        bool ok = t == 0 ? true : ein_contract(wk, &ops[0], &ops[t], later, size);
        if (ok && t == 0) {
            bool keep[EIN_LABELS];
            memcpy(keep, later, sizeof keep);
            for (uint32_t u = 1; u < n_in; u++)
                for (int i = 0; i < terms[u].n; i++)
                    keep[terms[u].lab[i]] = true;
            ok = ein_normalize(wk, &ops[0], keep, NULL, 0, size, NULL);
        }
        if (!ok)
            st = cv_kerr(k, "out of memory, or a product too large for BLAS");
    }
    if (!st && !ein_normalize(wk, &ops[0], in_out, outt.lab, outt.n, size, in_out))
        st = cv_knomem(k);
    cv_val *y = NULL;
    if (!st) {
        int64_t od[CARVE_MAX_RANK];
        for (int i = 0; i < outt.n; i++)
            od[i] = ops[0].dims[i];
        y = cv_val_new_uninit(dt, outt.n, od);
        if (!y)
            st = cv_knomem(k);
        else
            w_store(y, ops[0].data, wk);
    }
    for (uint32_t i = 0; i < loaded; i++)
        if (ops[i].owned)
            cv_free(ops[i].data);
    cv_free(ops);
    if (!st)
        out[0] = y;
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
        return cv_kerr(k, "input 0 'X' %s is not a batch of square matrices", nn_shape_str(sx, sizeof sx, x->rank, x->dims));
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

static const cv_type *tensor_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

/* numpy matmul of inputs ia and ib, output dtype dt. */
static carve_status mm_infer(cv_ictx *c, uint32_t ia, uint32_t ib, carve_dtype dt)
{
    const cv_type *a = tensor_in(c, ia), *b = tensor_in(c, ib);
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

static carve_dtype dtype_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
}

carve_status i_matmul(cv_ictx *c) { return mm_infer(c, 0, 1, dtype_in(c, 0)); }
carve_status i_matmulinteger(cv_ictx *c) { return mm_infer(c, 0, 1, CARVE_INT32); }
carve_status i_qlinearmatmul(cv_ictx *c) { return mm_infer(c, 0, 3, dtype_in(c, 7)); }

carve_status i_gemm(cv_ictx *c)
{
    carve_dtype dt = dtype_in(c, 0);
    const cv_type *a = tensor_in(c, 0), *b = tensor_in(c, 1);
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
    const cv_type *ct = tensor_in(c, 2);
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

carve_status i_einsum(cv_ictx *c)
{
    const cv_node *nd = &c->m->nodes[c->node];
    carve_dtype dt = dtype_in(c, 0);
    const char *eq = cv_attr_s(c->m, c->node, "equation", NULL);
    if (!eq)
        return cv_ierr(c, "attribute 'equation' is missing");
    if (nd->n_in > 255)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int ranks[256];
    const cv_type *ts[256];
    ein_term terms[256], outt;
    for (uint32_t i = 0; i < nd->n_in; i++) {
        ts[i] = tensor_in(c, i);
        if (!ts[i])
            return cv_infer_set(c, 0, dt, -1, NULL);
        ranks[i] = ts[i]->rank;
    }
    char err[512];
    if (!ein_parse(eq, nd->n_in, ranks, terms, &outt, err, sizeof err))
        return cv_ierr(c, "%s", err);
    carve_dim size[EIN_LABELS];
    bool set[EIN_LABELS] = {false};
    for (uint32_t t = 0; t < nd->n_in; t++)
        for (int i = 0; i < terms[t].n; i++) {
            int l = terms[t].lab[i];
            carve_dim d = ts[t]->dims[i], *s = &size[l];
            if (!set[l] || s->value == 1)
                *s = d; /* first sighting, or a broadcast 1 gives way */
            else if (d.value == 1)
                continue;
            else if (d.value >= 0 && s->value >= 0 && d.value != s->value)
                return cv_ierr(c, "input %u dim %d is %lld but that label has size %lld elsewhere", t, i,
                               (long long)d.value, (long long)s->value);
            else if (s->value < 0 && d.value >= 0)
                *s = d; /* a known size beats a symbolic one */
            set[l] = true;
        }
    carve_dim od[CARVE_MAX_RANK];
    for (int i = 0; i < outt.n; i++)
        od[i] = size[outt.lab[i]];
    return cv_infer_set(c, 0, dt, outt.n, od);
}

carve_status i_det(cv_ictx *c)
{
    const cv_type *t = tensor_in(c, 0);
    carve_dtype dt = dtype_in(c, 0);
    if (!t)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (t->rank < 2)
        return cv_ierr(c, "input 0 'X' has rank %d, expected at least 2", t->rank);
    carve_dim a = t->dims[t->rank - 2], b = t->dims[t->rank - 1];
    if (a.value >= 0 && b.value >= 0 && a.value != b.value)
        return cv_ierr(c, "input 0 'X' ends in %lldx%lld matrices, which are not square", (long long)a.value,
                       (long long)b.value);
    return cv_infer_set(c, 0, dt, t->rank - 2, t->dims);
}

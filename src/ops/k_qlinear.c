/* k_qlinear.c: the integer and quantized products. MatMulInteger,
 * QLinearMatMul, ConvInteger and QLinearConv (their inference is with the
 * float forms, in k_matmul.c and k_conv.c).
 *
 * The integer parts are exact: operands centred on their zero points are
 * below 2^9 in magnitude, so their products summed in double (dgemm, or the
 * double convolution of k_conv.c) stay exact for any K that fits in
 * memory. The quantized forms multiply by the scales in float32, applied in
 * double as the ONNX reference does, and requantize with nn_requant. */
#include "k_conv.h"
#include "k_matmul.h"

#include <string.h>

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
                           zn, cv_shape_str(sz, sizeof sz, zp->rank, zp->dims),
                           (long long)(axis >= 0 ? x->dims[axis] : 1), xn, cv_shape_str(sx, sizeof sx, x->rank, x->dims));
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
    double *C = st ? NULL : cv_scratch_alloc((n ? n : 1) * sizeof *C); /* mm_gemm1, beta 0 */
    if (!st && !C)
        st = cv_knomem(k);
    if (!st && !mm_batched(W_F64, A, s->ra, a->dims, B, s->rb, b->dims, s->rc, s->cb, s->M, s->N, s->K, C))
        st = cv_kerr(k, "matrices too large for BLAS (a dimension exceeds 2^31-1)");
    cv_scratch_free(A);
    cv_scratch_free(B);
    if (st)
        cv_scratch_free(C);
    else
        *acc = C;
    return st;
}

/* out[0] = the int32 tensor of the exact integers acc (consumed), wrapped
 * as int32 accumulation wraps: MatMulInteger's and ConvInteger's result. */
static carve_status int32_out(cv_kctx *k, double *acc, int rank, const int64_t *dims, cv_val **out)
{
    cv_val *y = cv_val_new_uninit(CARVE_INT32, rank, dims);
    if (!y) {
        cv_scratch_free(acc);
        return cv_knomem(k);
    }
    int32_t *o = y->data;
    for (size_t i = 0; i < y->nelem; i++)
        o[i] = (int32_t)(uint32_t)(uint64_t)(int64_t)acc[i];
    cv_scratch_free(acc);
    out[0] = y;
    return CARVE_OK;
}

carve_status k_matmulinteger(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *a = in[0], *b = in[1], *azp = n_in > 2 ? in[2] : NULL, *bzp = n_in > 3 ? in[3] : NULL;
    if (!nn_is_q8(a->dtype) || !nn_is_q8(b->dtype))
        return cv_kerr(k, "inputs A and B are %s and %s, expected int8 or uint8", carve_dtype_name(a->dtype),
                       carve_dtype_name(b->dtype));
    static const char *const names[4] = {"A", "a_zero_point", "B", "b_zero_point"};
    mmshape s;
    double *acc;
    carve_status st = int_product(k, a, azp, b, bzp, names, &s, &acc);
    if (st)
        return st;
    return int32_out(k, acc, s.orank, s.odims, out);
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
    if (!(nn_is_q8(a->dtype) || (f8ok && is_f8(a->dtype))) || !(nn_is_q8(b->dtype) || (f8ok && is_f8(b->dtype))))
        return cv_kerr(k, "inputs a and b are %s and %s, expected int8 or uint8%s", carve_dtype_name(a->dtype),
                       carve_dtype_name(b->dtype), f8ok ? " or float8" : "");
    if (!yzp || (!(nn_is_q8(yzp->dtype)) && !(f8ok && is_f8(yzp->dtype))))
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


/* ---------------------------------------------------------------- ConvInteger, QLinearConv */

/* x - zp (a one-element tensor or NULL) as doubles. */
static double *centre_scalar(const cv_val *x, const cv_val *zp)
{
    double *d = nn_decode(x);
    double z = zp && zp->nelem ? cv_val_get_f64(zp, 0) : 0;
    for (size_t i = 0; d && z != 0 && i < x->nelem; i++)
        d[i] -= z;
    return d;
}

/* w - zp[m] for output channel m (zp: one element or one per channel). */
static double *centre_channels(const cv_val *w, const cv_val *zp, int64_t M)
{
    double *d = nn_decode(w);
    if (!d || !zp || !M)
        return d;
    size_t per = w->nelem / (size_t)M;
    for (size_t i = 0; i < w->nelem; i++)
        d[i] -= cv_val_get_f64(zp, zp->nelem == 1 ? 0 : i / per);
    return d;
}

static carve_status check_zp(cv_kctx *k, const cv_val *zp, const cv_val *of, int64_t n_ok, const char *zn,
                             const char *on)
{
    if (!zp)
        return CARVE_OK;
    if (zp->dtype != of->dtype)
        return cv_kerr(k, "input '%s' is %s but input '%s' is %s", zn, carve_dtype_name(zp->dtype), on,
                       carve_dtype_name(of->dtype));
    if (zp->nelem != 1 && (zp->rank != 1 || (int64_t)zp->nelem != n_ok))
        return cv_kerr(k, "input '%s' has %zu elements: expected a scalar%s", zn, zp->nelem,
                       n_ok > 1 ? " or one per output channel" : "");
    return CARVE_OK;
}

/* The exact integer convolution of x and w centred on their zero points,
 * plus bias b (int32 or NULL), in double. */
static carve_status int_conv(cv_kctx *k, const cv_val *x, const cv_val *xzp, const cv_val *w, const cv_val *wzp,
                             const cv_val *b, const char *const names[4], convg *g, double **acc)
{
    *acc = NULL;
    if (!nn_is_q8(x->dtype) || !nn_is_q8(w->dtype))
        return cv_kerr(k, "inputs '%s' and '%s' are %s and %s, expected int8 or uint8", names[0], names[2],
                       carve_dtype_name(x->dtype), carve_dtype_name(w->dtype));
    if (b && b->dtype != CARVE_INT32)
        return cv_kerr(k, "input 8 'B' is %s, expected int32", carve_dtype_name(b->dtype));
    carve_status st = conv_prep(k, x, w, b, false, g);
    if (!st)
        st = check_zp(k, xzp, x, 1, names[1], names[0]);
    if (!st)
        st = check_zp(k, wzp, w, g->M, names[3], names[2]);
    if (st)
        return st;
    int64_t od[CARVE_MAX_RANK];
    conv_out_shape(g, od);
    size_t ny = cv_nelem(x->rank, od);
    double *X = centre_scalar(x, xzp), *W = centre_channels(w, wzp, g->M), *B = b ? nn_decode(b) : NULL;
    double *Y = cv_scratch_alloc((ny ? ny : 1) * sizeof *Y); /* conv_fwd fills it first */
    if (!X || !W || (b && !B) || !Y)
        st = cv_knomem(k);
    else
        st = conv_fwd(k, g, true, X, W, B, Y);
    cv_scratch_free(X);
    cv_scratch_free(W);
    cv_scratch_free(B);
    if (st)
        cv_scratch_free(Y);
    else
        *acc = Y;
    return st;
}

carve_status k_convinteger(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    static const char *const names[4] = {"x", "x_zero_point", "w", "w_zero_point"};
    convg g;
    double *acc;
    carve_status st = int_conv(k, in[0], n_in > 2 ? in[2] : NULL, in[1], n_in > 3 ? in[3] : NULL, NULL, names, &g, &acc);
    if (st)
        return st;
    int64_t od[CARVE_MAX_RANK];
    conv_out_shape(&g, od);
    return int32_out(k, acc, in[0]->rank, od, out);
}

carve_status k_qlinearconv(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0], *xs = in[1], *xzp = in[2], *w = in[3], *ws = in[4], *wzp = in[5], *ys = in[6],
                 *yzp = in[7], *b = n_in > 8 ? in[8] : NULL;
    if (!yzp || !nn_is_q8(yzp->dtype) || yzp->nelem != 1)
        return cv_kerr(k, "input 7 'y_zero_point' must be an int8 or uint8 scalar");
    if (xs->nelem != 1 || ys->nelem != 1 || !cv_dtype_is_float(xs->dtype) || !cv_dtype_is_float(ys->dtype) ||
        !cv_dtype_is_float(ws->dtype))
        return cv_kerr(k, "inputs 'x_scale', 'w_scale' and 'y_scale' must be float ('x_scale' and 'y_scale' scalars)");
    static const char *const names[4] = {"x", "x_zero_point", "w", "w_zero_point"};
    convg g;
    double *acc;
    carve_status st = int_conv(k, x, xzp, w, wzp, b, names, &g, &acc);
    if (st)
        return st;
    if (ws->nelem != 1 && (ws->rank != 1 || (int64_t)ws->nelem != g.M)) {
        cv_scratch_free(acc);
        return cv_kerr(k, "input 4 'w_scale' has %zu elements: expected a scalar or one per output channel (%lld)",
                       ws->nelem, (long long)g.M);
    }
    int64_t od[CARVE_MAX_RANK];
    conv_out_shape(&g, od);
    cv_val *y = cv_val_new_uninit(yzp->dtype, x->rank, od); /* nn_requant stores every element */
    if (!y) {
        cv_scratch_free(acc);
        return cv_knomem(k);
    }
    /* The multiplier in float32, applied in double (as the ONNX reference:
     * numpy promotes int32 * float32 to float64). */
    float fx = (float)cv_val_get_f64(xs, 0), fy = (float)cv_val_get_f64(ys, 0);
    size_t P = win_prod(g.w.n, g.w.out);
    for (int64_t nn = 0; nn < g.N; nn++)
        for (int64_t m = 0; m < g.M; m++) {
            float mult = fx * (float)cv_val_get_f64(ws, ws->nelem == 1 ? 0 : (size_t)m) / fy;
            double *a = acc + (size_t)(nn * g.M + m) * P;
            for (size_t i = 0; i < P; i++)
                a[i] *= (double)mult;
        }
    bool ok = nn_requant(y, acc, yzp);
    cv_scratch_free(acc);
    if (!ok) {
        cv_val_unref(y);
        return cv_knomem(k);
    }
    out[0] = y;
    return CARVE_OK;
}

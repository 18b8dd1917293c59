/* k_quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and the
 * quantization helpers of k_nn.h the QLinear ops share.
 *
 * Quantization divides in float32 (as onnxruntime and the ONNX reference do),
 * rounds half to even and saturates. A scale applies per tensor, per slice
 * along `axis` (opset 13) or per block of `block_size` elements along `axis`
 * (opset 21: the scale has the input's rank with that axis divided by
 * block_size, rounded up). float8 outputs (opset 19) honour `saturate`. */
#include "k_nn.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- working copies */

cv_val *nn_f32(cv_val *v)
{
    if (v->dtype == CARVE_FLOAT)
        return cv_val_ref(v);
    cv_val *f = cv_val_new_uninit(CARVE_FLOAT, v->rank, v->dims);
    if (!f)
        return NULL;
    float *o = f->data;
    const uint16_t *h = v->data;
    if (v->dtype == CARVE_FLOAT16)
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = cv_f16_to_f32(h[i]);
    else if (v->dtype == CARVE_BFLOAT16)
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = cv_bf16_to_f32(h[i]);
    else
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = (float)cv_val_get_f64(v, i);
    return f;
}

cv_val *nn_f32_to(cv_val *f, carve_dtype dtype)
{
    if (!f || dtype == CARVE_FLOAT)
        return f;
    cv_val *v = cv_val_new_uninit(dtype, f->rank, f->dims);
    if (v) {
        const float *x = f->data;
        uint16_t *h = v->data;
        if (dtype == CARVE_FLOAT16)
            for (size_t i = 0; i < f->nelem; i++)
                h[i] = cv_f32_to_f16(x[i]);
        else if (dtype == CARVE_BFLOAT16)
            for (size_t i = 0; i < f->nelem; i++)
                h[i] = cv_f32_to_bf16(x[i]);
        else
            for (size_t i = 0; i < f->nelem; i++)
                cv_val_set_f64(v, i, x[i]);
    }
    cv_val_unref(f);
    return v;
}

/* One loop per C type (nn_decode): the common types take no call per
 * element. */
#define DECODE(T)                      \
    {                                  \
        const T *p = v->data;          \
        for (size_t i = 0; i < n; i++) \
            d[i] = p[i];               \
        break;                         \
    }

/* The doubles come from cv_scratch_alloc (the run's pool for big tensors):
 * every caller frees them with cv_scratch_free, never cv_free. */
double *nn_decode(const cv_val *v)
{
    size_t n = v->nelem;
    double *d = cv_scratch_alloc((n ? n : 1) * sizeof *d);
    if (!d)
        return NULL;
    switch (v->dtype) {
    case CARVE_UINT8: DECODE(uint8_t)
    case CARVE_INT8: DECODE(int8_t)
    case CARVE_INT32: DECODE(int32_t)
    case CARVE_FLOAT: DECODE(float)
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ: {
        double tab[256];
        for (int c = 0; c < 256; c++)
            tab[c] = cv_f8_to_f32((uint8_t)c, v->dtype);
        const uint8_t *p = v->data;
        for (size_t i = 0; i < n; i++)
            d[i] = tab[p[i]];
        break;
    }
    default:
        for (size_t i = 0; i < n; i++)
            d[i] = cv_val_get_f64(v, i);
        break;
    }
#undef DECODE
    return d;
}

/* ---------------------------------------------------------------- integer quantized types */

bool nn_qrange(carve_dtype t, int32_t *lo, int32_t *hi)
{
    switch (t) {
    case CARVE_INT8: *lo = -128, *hi = 127; return true;
    case CARVE_UINT8: *lo = 0, *hi = 255; return true;
    case CARVE_INT16: *lo = -32768, *hi = 32767; return true;
    case CARVE_UINT16: *lo = 0, *hi = 65535; return true;
    case CARVE_INT4: *lo = -8, *hi = 7; return true;
    case CARVE_UINT4: *lo = 0, *hi = 15; return true;
    case CARVE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    default: return false;
    }
}

int32_t nn_qround(double r, int32_t zp, int32_t lo, int32_t hi)
{
    if (isnan(r))
        return lo;
    double v = rint(r) + (double)zp;
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int32_t)v;
}

void nn_qstore(cv_val *y, const int32_t *q)
{
    size_t n = y->nelem;
#define STORE(T)                       \
    {                                  \
        T *o = y->data;                \
        for (size_t i = 0; i < n; i++) \
            o[i] = (T)q[i];            \
        break;                         \
    }
    switch (y->dtype) {
    case CARVE_INT8: STORE(int8_t)
    case CARVE_UINT8: STORE(uint8_t)
    case CARVE_INT16: STORE(int16_t)
    case CARVE_UINT16: STORE(uint16_t)
    case CARVE_INT32:
        memcpy(y->data, q, n * sizeof *q);
        break;
    case CARVE_INT4: case CARVE_UINT4: {
        uint8_t *o = y->data;
        memset(o, 0, y->nbytes);
        for (size_t i = 0; i < n; i++)
            o[i / 2] |= (uint8_t)(((uint32_t)q[i] & 0xfu) << (4 * (i & 1)));
        break;
    }
    default: break;
    }
#undef STORE
}

/* ---------------------------------------------------------------- float8 encoding */

/* Round-to-nearest-even float32 -> float8 through a table of the format's
 * positive codes (their values increase with the code in every format), one
 * binary search per element. */
typedef struct {
    float val[128];
    int maxcode;   /* largest finite positive code */
    float over;    /* |v| beyond this (or equal, see over_tie) overflows */
    bool over_tie; /* a tie at `over` rounds past the largest code */
    bool uz;       /* FNUZ: no negative zero, NaN is 0x80 */
    bool has_inf;  /* E5M2 */
} f8enc;

static void f8enc_init(f8enc *e, carve_dtype t)
{
    e->uz = t == CARVE_FLOAT8E4M3FNUZ || t == CARVE_FLOAT8E5M2FNUZ;
    e->has_inf = t == CARVE_FLOAT8E5M2;
    e->maxcode = 0;
    for (int c = 0; c < 128; c++) {
        float x = cv_f8_to_f32((uint8_t)c, t);
        if (isnan(x) || isinf(x))
            break;
        e->val[c] = x;
        e->maxcode = c;
    }
    float top = e->val[e->maxcode], prev = e->val[e->maxcode - 1];
    e->over = top + (top - prev) / 2;
    e->over_tie = (e->maxcode & 1) != 0; /* the next code would be the even one */
}

static uint8_t f8enc_put(const f8enc *e, float v, bool saturate)
{
    uint8_t nan = e->uz ? 0x80 : 0x7f;
    if (isnan(v))
        return nan;
    bool neg = signbit(v);
    float a = fabsf(v);
    int code;
    if (a > e->over || (a == e->over && e->over_tie)) {
        if (!saturate)
            return e->has_inf ? (uint8_t)(neg ? 0xfc : 0x7c) : e->uz ? nan : (uint8_t)(neg ? 0xff : 0x7f);
        code = e->maxcode;
    } else if (a >= e->val[e->maxcode]) {
        code = e->maxcode;
    } else {
        int lo = 0, hi = e->maxcode; /* val[lo] <= a < val[hi] */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (e->val[mid] <= a)
                lo = mid;
            else
                hi = mid;
        }
        float dl = a - e->val[lo], dh = e->val[hi] - a;
        code = dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo;
    }
    if (code == 0)
        return neg && !e->uz ? 0x80 : 0;
    return (uint8_t)(code | (neg ? 0x80 : 0));
}

bool nn_requant(cv_val *y, const double *r, const cv_val *zp)
{
    size_t n = y->nelem;
    int32_t lo = 0, hi = 0;
    if (nn_qrange(y->dtype, &lo, &hi)) {
        int32_t z = zp && zp->nelem ? (int32_t)cv_val_get_i64(zp, 0) : 0;
        int32_t *q = cv_scratch_alloc((n ? n : 1) * sizeof *q);
        if (!q)
            return false;
        for (size_t i = 0; i < n; i++)
            q[i] = nn_qround(r[i], z, lo, hi);
        nn_qstore(y, q);
        cv_scratch_free(q);
        return true;
    }
    f8enc e;
    f8enc_init(&e, y->dtype);
    float z = zp && zp->nelem ? (float)cv_val_get_f64(zp, 0) : 0.0f;
    uint8_t *o = y->data;
    for (size_t i = 0; i < n; i++)
        o[i] = f8enc_put(&e, (float)r[i] + z, true);
    return true;
}

/* ---------------------------------------------------------------- scale layout */

/* Which scale element applies to element (o, a, i) of x seen as [outer, dim,
 * inner] around the quantization axis: o*so + (a/block)*sa + i*si. */
typedef struct {
    size_t outer, dim, inner, block, so, sa, si;
} qlayout;

/* Runs the block (the variadic part) for every element idx of q's tensor,
 * in memory order, with s the index of its scale (and zero point). */
#define QL_EACH(q, idx, s, ...)                                              \
    for (size_t o_ = 0, idx = 0; o_ < (q).outer; o_++)                       \
        for (size_t a_ = 0; a_ < (q).dim; a_++) {                            \
            size_t base_ = o_ * (q).so + (a_ / (q).block) * (q).sa;          \
            for (size_t i_ = 0; i_ < (q).inner; i_++, idx++) {               \
                size_t s = base_ + i_ * (q).si;                              \
                __VA_ARGS__                                                  \
            }                                                                \
        }

static carve_status qlayout_of(cv_kctx *k, const cv_val *x, const cv_val *sc, const cv_val *zp, const char *sname,
                               const char *zname, qlayout *q)
{
    if (zp && (zp->rank != sc->rank || (sc->rank && memcmp(zp->dims, sc->dims, (size_t)sc->rank * sizeof *sc->dims))))
        return cv_kerr(k, "input 2 '%s' has %zu elements (rank %d) but input 1 '%s' has %zu (rank %d): they must have the same shape",
                       zname, zp->nelem, zp->rank, sname, sc->nelem, sc->rank);
    int64_t block = k->opset >= 21 ? cv_attr_i(k->m, k->node, "block_size", 0) : 0;
    if (block < 0)
        return cv_kerr(k, "attribute 'block_size' is %lld, expected >= 0", (long long)block);
    if (block == 0 && sc->rank <= 1 && sc->nelem == 1) {
        *q = (qlayout){1, x->nelem, 1, 1, 0, 0, 0};
        return CARVE_OK;
    }
    if (k->opset < 13)
        return cv_kerr(k, "input 1 '%s' has %zu elements: before opset 13 it must be a scalar", sname, sc->nelem);
    int64_t axis = cv_attr_i(k->m, k->node, "axis", 1);
    if (axis < -x->rank || axis >= x->rank)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input 0 of rank %d", (long long)axis, x->rank);
    if (axis < 0)
        axis += x->rank;
    q->outer = cv_nelem((int)axis, x->dims);
    q->dim = (size_t)x->dims[axis];
    q->inner = cv_nelem(x->rank - (int)axis - 1, x->dims + axis + 1);
    if (block == 0) {
        if (sc->rank != 1 || sc->dims[0] != x->dims[axis])
            return cv_kerr(k, "input 1 '%s' must be a scalar or a 1-D tensor of %lld elements (input 0 dim %lld), it has %zu elements (rank %d)",
                           sname, (long long)x->dims[axis], (long long)axis, sc->nelem, sc->rank);
        q->block = 1, q->so = 0, q->sa = 1, q->si = 0;
        return CARVE_OK;
    }
    if (sc->rank != x->rank)
        return cv_kerr(k, "input 1 '%s' has rank %d: blocked quantization (block_size %lld) needs the rank of input 0 (%d)",
                       sname, sc->rank, (long long)block, x->rank);
    for (int d = 0; d < x->rank; d++) {
        int64_t want = d == axis ? (x->dims[d] + block - 1) / block : x->dims[d];
        if (sc->dims[d] != want)
            return cv_kerr(k, "input 1 '%s' dim %d is %lld, expected %lld (input 0 dim %lld%s, block_size %lld)", sname, d,
                           (long long)sc->dims[d], (long long)want, (long long)x->dims[d],
                           d == axis ? " divided by block_size, rounded up" : "", (long long)block);
    }
    q->block = (size_t)block;
    q->sa = q->inner;
    q->so = (size_t)sc->dims[axis] * q->inner;
    q->si = 1;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- QuantizeLinear */

static bool quant_out_ok(carve_dtype t, int64_t opset)
{
    switch (t) {
    case CARVE_INT8: case CARVE_UINT8: return true;
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return opset >= 19;
    case CARVE_INT16: case CARVE_UINT16: case CARVE_INT4: case CARVE_UINT4: return opset >= 21;
    default: return false;
    }
}

static bool is_scale_type(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

carve_status k_quantize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0], *sc = in[1], *zp = n_in > 2 ? in[2] : NULL;
    (void)n_out;
    if (!is_scale_type(x->dtype) && x->dtype != CARVE_INT32)
        return cv_kerr(k, "input 0 'x' is %s, expected float32, float16, bfloat16 or int32", carve_dtype_name(x->dtype));
    if (!is_scale_type(sc->dtype))
        return cv_kerr(k, "input 1 'y_scale' is %s, expected float32, float16 or bfloat16", carve_dtype_name(sc->dtype));
    int64_t odt = k->opset >= 21 ? cv_attr_i(k->m, k->node, "output_dtype", 0) : 0;
    carve_dtype yt = zp ? zp->dtype : odt ? (carve_dtype)odt : CARVE_UINT8;
    if (zp && odt && odt != zp->dtype)
        return cv_kerr(k, "attribute 'output_dtype' is %s but input 2 'y_zero_point' is %s",
                       carve_dtype_name((carve_dtype)odt), carve_dtype_name(zp->dtype));
    if (!quant_out_ok(yt, k->opset))
        return cv_kerr(k, "cannot quantize to %s at opset %lld", carve_dtype_name(yt), (long long)k->opset);
    bool saturate = cv_attr_i(k->m, k->node, "saturate", 1) != 0;
    qlayout q;
    carve_status st = qlayout_of(k, x, sc, zp, "y_scale", "y_zero_point", &q);
    if (st)
        return st;
    /* the loop covers outer * dim * inner = every element */
    cv_val *xf = nn_f32(x), *sf = nn_f32(sc), *y = cv_val_new_uninit(yt, x->rank, x->dims);
    double *zd = zp ? nn_decode(zp) : NULL;
    int32_t *qv = NULL;
    int32_t lo = 0, hi = 0;
    bool isint = nn_qrange(yt, &lo, &hi);
    if (isint)
        qv = cv_scratch_alloc((x->nelem ? x->nelem : 1) * sizeof *qv);
    if (!xf || !sf || !y || (zp && !zd) || (isint && !qv)) {
        st = cv_knomem(k);
        goto done;
    }
    const float *xv = xf->data, *sv = sf->data;
    f8enc e;
    if (!isint)
        f8enc_init(&e, yt);
    uint8_t *o8 = y->data;
    QL_EACH(q, idx, s, {
        float r = xv[idx] / sv[s];
        if (isint)
            qv[idx] = nn_qround(r, zd ? (int32_t)zd[s] : 0, lo, hi);
        else
            o8[idx] = f8enc_put(&e, zd ? r + (float)zd[s] : r, saturate);
    })
    if (isint)
        nn_qstore(y, qv);
    out[0] = y;
    y = NULL;
done:
    cv_val_unref(xf);
    cv_val_unref(sf);
    cv_val_unref(y);
    cv_scratch_free(zd);
    cv_scratch_free(qv);
    return st;
}

/* ---------------------------------------------------------------- DequantizeLinear */

static bool dequant_in_ok(carve_dtype t, int64_t opset)
{
    switch (t) {
    case CARVE_INT8: case CARVE_UINT8: case CARVE_INT32: return true;
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return opset >= 19;
    case CARVE_INT16: case CARVE_UINT16: case CARVE_INT4: case CARVE_UINT4: return opset >= 21;
    default: return false;
    }
}

/* The output type: the scale's, or `output_dtype` (opset 23). */
static carve_dtype dequant_out(int64_t opset, const carve_model *m, carve_node_id n, carve_dtype scale)
{
    int64_t odt = opset >= 23 ? cv_attr_i(m, n, "output_dtype", 0) : 0;
    return odt ? (carve_dtype)odt : scale;
}

carve_status k_dequantize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0], *sc = in[1], *zp = n_in > 2 ? in[2] : NULL;
    (void)n_out;
    if (!dequant_in_ok(x->dtype, k->opset))
        return cv_kerr(k, "input 0 'x' is %s, which cannot be dequantized at opset %lld", carve_dtype_name(x->dtype),
                       (long long)k->opset);
    if (!is_scale_type(sc->dtype))
        return cv_kerr(k, "input 1 'x_scale' is %s, expected float32, float16 or bfloat16", carve_dtype_name(sc->dtype));
    if (zp && zp->dtype != x->dtype)
        return cv_kerr(k, "input 2 'x_zero_point' is %s but input 0 'x' is %s", carve_dtype_name(zp->dtype),
                       carve_dtype_name(x->dtype));
    carve_dtype yt = dequant_out(k->opset, k->m, k->node, sc->dtype);
    if (!is_scale_type(yt))
        return cv_kerr(k, "attribute 'output_dtype' is %s, expected float32, float16 or bfloat16", carve_dtype_name(yt));
    qlayout q;
    carve_status st = qlayout_of(k, x, sc, zp, "x_scale", "x_zero_point", &q);
    if (st)
        return st;
    double *xd = nn_decode(x), *zd = zp ? nn_decode(zp) : NULL;
    cv_val *sf = nn_f32(sc), *yf = cv_val_new_uninit(CARVE_FLOAT, x->rank, x->dims);
    if (!xd || (zp && !zd) || !sf || !yf) {
        st = cv_knomem(k);
        goto done;
    }
    const float *sv = sf->data;
    float *yv = yf->data;
    QL_EACH(q, idx, s, { yv[idx] = (float)(xd[idx] - (zd ? zd[s] : 0.0)) * sv[s]; })
    out[0] = nn_f32_to(yf, yt);
    yf = NULL;
    if (!out[0])
        st = cv_knomem(k);
done:
    cv_scratch_free(xd);
    cv_scratch_free(zd);
    cv_val_unref(sf);
    cv_val_unref(yf);
    return st;
}

/* ---------------------------------------------------------------- DynamicQuantizeLinear */

carve_status k_dynquantize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    cv_val *x = in[0];
    if (x->dtype != CARVE_FLOAT)
        return cv_kerr(k, "input 0 'x' is %s, expected float32", carve_dtype_name(x->dtype));
    const float *xv = x->data;
    /* The range always includes 0; NaNs are skipped. */
    float mn = 0.0f, mx = 0.0f;
    for (size_t i = 0; i < x->nelem; i++) {
        if (xv[i] < mn)
            mn = xv[i];
        if (xv[i] > mx)
            mx = xv[i];
    }
    /* onnxruntime's guard: an all-zero input gets scale 1, not 0/0. */
    float scale = mx == mn ? 1.0f : (mx - mn) / 255.0f;
    float zpf = 0.0f - mn / scale;
    zpf = zpf < 0.0f ? 0.0f : zpf > 255.0f ? 255.0f : zpf;
    int32_t zp = (int32_t)rintf(zpf);
    cv_val *y = cv_val_new_uninit(CARVE_UINT8, x->rank, x->dims);
    cv_val *ys = cv_val_new(CARVE_FLOAT, 0, NULL), *yz = cv_val_new(CARVE_UINT8, 0, NULL);
    if (!y || !ys || !yz) {
        cv_val_unref(y);
        cv_val_unref(ys);
        cv_val_unref(yz);
        return cv_knomem(k);
    }
    uint8_t *yv = y->data;
    for (size_t i = 0; i < x->nelem; i++)
        yv[i] = (uint8_t)nn_qround(xv[i] / scale, zp, 0, 255);
    *(float *)ys->data = scale;
    *(uint8_t *)yz->data = (uint8_t)zp;
    out[0] = y;
    out[1] = ys;
    out[2] = yz;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- inference */

/* Output 0 has input 0's shape and dtype dt. */
static carve_status like_x(cv_ictx *c, carve_dtype dt)
{
    const cv_type *t = cv_infer_in(c, 0);
    if (!t || t->kind != CARVE_TYPE_TENSOR)
        return cv_infer_set(c, 0, dt, -1, NULL);
    return cv_infer_set(c, 0, dt, t->rank, t->dims);
}

carve_status i_quantize(cv_ictx *c)
{
    const cv_type *z = cv_infer_in(c, 2);
    carve_dtype dt;
    if (z)
        dt = z->kind == CARVE_TYPE_TENSOR ? z->dtype : CARVE_UNDEFINED;
    else {
        int64_t odt = c->opset >= 21 ? cv_attr_i(c->m, c->node, "output_dtype", 0) : 0;
        dt = odt ? (carve_dtype)odt : CARVE_UINT8;
    }
    return like_x(c, dt);
}

carve_status i_dequantize(cv_ictx *c)
{
    const cv_type *s = cv_infer_in(c, 1);
    carve_dtype st = s && s->kind == CARVE_TYPE_TENSOR ? s->dtype : CARVE_UNDEFINED;
    return like_x(c, dequant_out(c->opset, c->m, c->node, st));
}

carve_status i_dynquantize(cv_ictx *c)
{
    carve_status s = like_x(c, CARVE_UINT8);
    if (!s)
        s = cv_infer_set(c, 1, CARVE_FLOAT, 0, NULL);
    if (!s)
        s = cv_infer_set(c, 2, CARVE_UINT8, 0, NULL);
    return s;
}

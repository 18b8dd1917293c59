/* k_generate.c: the ops that make a tensor from a shape, a range or a
 * pattern: ConstantOfShape, Range, EyeLike, Trilu, OneHot. */
#include "k_shape.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* No single tensor a kernel makes may exceed this (as val.c). */
#define SH_MAX_BYTES ((uint64_t)16 << 30)

/* ================================================================ ConstantOfShape */

carve_status k_constantofshape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    int64_t dims[CARVE_MAX_RANK];
    size_t n;
    carve_status s = sh_ints(k, in[0], "input 0 'input' (the shape)", dims, CARVE_MAX_RANK, &n);
    if (s)
        return s;
    for (size_t i = 0; i < n; i++)
        if (dims[i] < 0)
            return cv_kerr(k, "input 0 'input' (the shape) has a negative dim %lld", (long long)dims[i]);
    const cv_tensor *t = cv_attr_t(k->m, k->node, "value");
    carve_dtype dt = t ? t->dtype : CARVE_FLOAT;
    if (t && t->nelem != 1)
        return cv_kerr(k, "attribute 'value' must hold one element, it has %zu", t->nelem);
    if (dt == CARVE_STRING)
        return cv_kerr(k, "attribute 'value' cannot be a string");
    cv_val *v = cv_val_new(dt, (int)n, dims);
    if (!v)
        return cv_knomem(k);
    if (t && t->data) {
        if (sh_is4(dt)) {
            uint8_t q = ((const uint8_t *)t->data)[0] & 0xf;
            memset(v->data, q | (q << 4), v->nbytes);
        } else {
            sh_fill(v->data, t->data, v->nelem, sh_esize(dt));
        }
    }
    out[0] = v;
    return CARVE_OK;
}

carve_status i_constantofshape(cv_ictx *c)
{
    const cv_tensor *t = cv_attr_t(c->m, c->node, "value");
    carve_dtype dt = t ? t->dtype : CARVE_FLOAT;
    int64_t dims[CARVE_MAX_RANK];
    size_t n;
    if (!sh_const_ints(c, 0, dims, CARVE_MAX_RANK, &n)) {
        int64_t len = sh_len1(c, 0);
        return cv_infer_set(c, 0, dt, len >= 0 && len <= CARVE_MAX_RANK ? (int)len : -1, NULL);
    }
    carve_dim d[CARVE_MAX_RANK];
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0)
            return cv_ierr(c, "input 0 'input' (the shape) has a negative dim %lld", (long long)dims[i]);
        d[i] = sh_dk(dims[i]);
    }
    return cv_infer_set(c, 0, dt, (int)n, d);
}

/* ================================================================ Range */

static bool range_dtype_ok(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_INT16 || t == CARVE_INT32 || t == CARVE_INT64 ||
           t == CARVE_FLOAT16 || t == CARVE_BFLOAT16 || t == CARVE_INT8 || t == CARVE_UINT8 ||
           t == CARVE_UINT16 || t == CARVE_UINT32 || t == CARVE_UINT64;
}

/* Element count of Range: max(ceil((limit - start) / delta), 0), exact for
 * integers. Returns false with a reason for delta 0, NaN or a count beyond
 * what fits in memory. */
static bool range_count(const cv_val *s, const cv_val *l, const cv_val *d, uint64_t *count, char *why, size_t whysz)
{
    carve_dtype t = s->dtype;
    uint64_t cnt;
    if (cv_dtype_is_float(t)) {
        double a = cv_val_get_f64(s, 0), b = cv_val_get_f64(l, 0), e = cv_val_get_f64(d, 0);
        if (e == 0) {
            snprintf(why, whysz, "delta is 0");
            return false;
        }
        /* as onnxruntime: the difference in the input's precision, the
         * quotient in double */
        double diff = t == CARVE_DOUBLE ? b - a : (double)((float)b - (float)a);
        double q = ceil(diff / e);
        if (q != q) {
            snprintf(why, whysz, "the element count ceil((%g - %g) / %g) is not a number", b, a, e);
            return false;
        }
        if (q > 1e15) {
            snprintf(why, whysz, "the range from %g to %g by %g has too many elements", a, b, e);
            return false;
        }
        cnt = q > 0 ? (uint64_t)q : 0;
    } else if (t == CARVE_UINT64) {
        uint64_t a = (uint64_t)cv_val_get_i64(s, 0), b = (uint64_t)cv_val_get_i64(l, 0),
                 e = (uint64_t)cv_val_get_i64(d, 0);
        if (e == 0) {
            snprintf(why, whysz, "delta is 0");
            return false;
        }
        cnt = b > a ? (b - a) / e + ((b - a) % e != 0) : 0;
    } else {
        int64_t a = cv_val_get_i64(s, 0), b = cv_val_get_i64(l, 0), e = cv_val_get_i64(d, 0);
        if (e == 0) {
            snprintf(why, whysz, "delta is 0");
            return false;
        }
        cnt = 0;
        if (e > 0 && b > a) {
            uint64_t diff = (uint64_t)b - (uint64_t)a;
            cnt = diff / (uint64_t)e + (diff % (uint64_t)e != 0);
        } else if (e < 0 && a > b) {
            uint64_t diff = (uint64_t)a - (uint64_t)b, mag = (uint64_t)0 - (uint64_t)e;
            cnt = diff / mag + (diff % mag != 0);
        }
    }
    size_t es = sh_esize(t);
    if (cnt > SH_MAX_BYTES / (es ? es : 1)) {
        snprintf(why, whysz, "the range has %llu elements, more than carve computes in one tensor",
                 (unsigned long long)cnt);
        return false;
    }
    *count = cnt;
    return true;
}

carve_status k_range(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    static const char *const names[] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) {
        if (in[i]->nelem != 1)
            return cv_kerr(k, "input %d '%s' must be a scalar, it has %zu elements", i, names[i], in[i]->nelem);
        if (in[i]->dtype != in[0]->dtype)
            return cv_kerr(k, "input %d '%s' is %s but input 0 'start' is %s", i, names[i],
                           carve_dtype_name(in[i]->dtype), carve_dtype_name(in[0]->dtype));
    }
    carve_dtype t = in[0]->dtype;
    if (!range_dtype_ok(t))
        return cv_kerr(k, "inputs of type %s are not supported (numbers only)", carve_dtype_name(t));
    uint64_t n;
    char why[200];
    if (!range_count(in[0], in[1], in[2], &n, why, sizeof why))
        return cv_kerr(k, "%s", why);
    int64_t dim = (int64_t)n;
    cv_val *v = cv_val_new(t, 1, &dim);
    if (!v)
        return cv_knomem(k);
    if (t == CARVE_FLOAT) {
        float a = *(const float *)in[0]->data, d = *(const float *)in[2]->data;
        float *o = v->data;
        for (uint64_t i = 0; i < n; i++)
            o[i] = a + (float)i * d;
    } else if (cv_dtype_is_float(t)) {
        double a = cv_val_get_f64(in[0], 0), d = cv_val_get_f64(in[2], 0);
        for (uint64_t i = 0; i < n; i++)
            cv_val_set_f64(v, i, a + (double)i * d);
    } else if (t == CARVE_INT64) {
        uint64_t a = (uint64_t)cv_val_get_i64(in[0], 0), d = (uint64_t)cv_val_get_i64(in[2], 0);
        int64_t *o = v->data;
        for (uint64_t i = 0; i < n; i++)
            o[i] = (int64_t)(a + i * d);
    } else {
        uint64_t a = (uint64_t)cv_val_get_i64(in[0], 0), d = (uint64_t)cv_val_get_i64(in[2], 0);
        for (uint64_t i = 0; i < n; i++)
            cv_val_set_i64(v, i, (int64_t)(a + i * d));
    }
    out[0] = v;
    return CARVE_OK;
}

carve_status i_range(cv_ictx *c)
{
    carve_dtype dt = sh_idtype(c, 0);
    const cv_val *v[3];
    for (uint32_t i = 0; i < 3; i++) {
        v[i] = c->const_input ? c->const_input(c, i) : NULL;
        if (!v[i] || v[i]->kind != CV_VAL_TENSOR || v[i]->nelem != 1 || v[i]->dtype != dt || !range_dtype_ok(dt))
            return cv_infer_set(c, 0, dt, 1, NULL);
    }
    uint64_t n;
    char why[200];
    if (!range_count(v[0], v[1], v[2], &n, why, sizeof why))
        return cv_ierr(c, "%s", why);
    carve_dim d = sh_dk((int64_t)n);
    return cv_infer_set(c, 0, dt, 1, &d);
}

/* ================================================================ EyeLike */

carve_status k_eyelike(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    if (x->rank != 2)
        return cv_kerr(k, "input 0 'input' must have rank 2, it has rank %d", x->rank);
    int64_t dt = cv_attr_i(k->m, k->node, "dtype", 0);
    carve_dtype t = dt ? (carve_dtype)dt : x->dtype;
    if (dt < 0 || dt >= CARVE_DTYPE_COUNT || t == CARVE_STRING || t == CARVE_COMPLEX64 || t == CARVE_COMPLEX128 ||
        !carve_dtype_bits(t))
        return cv_kerr(k, "attribute 'dtype' %lld is not a numeric or boolean type", (long long)dt);
    int64_t kk = cv_attr_i(k->m, k->node, "k", 0);
    int64_t rows = x->dims[0], cols = x->dims[1];
    cv_val *v = cv_val_new(t, 2, x->dims);
    if (!v)
        return cv_knomem(k);
    if (kk > -rows && kk < cols) /* else the diagonal misses the matrix */
        for (int64_t i = kk < 0 ? -kk : 0; i < rows && i + kk < cols; i++)
            cv_val_set_i64(v, (size_t)(i * cols + i + kk), 1);
    out[0] = v;
    return CARVE_OK;
}

carve_status i_eyelike(cv_ictx *c)
{
    int64_t dt = cv_attr_i(c->m, c->node, "dtype", 0);
    if (dt < 0 || dt >= CARVE_DTYPE_COUNT)
        return cv_ierr(c, "attribute 'dtype' %lld is not a type", (long long)dt);
    carve_dtype t = dt ? (carve_dtype)dt : sh_idtype(c, 0);
    const cv_type *x = sh_tin(c, 0);
    if (x && x->rank >= 0 && x->rank != 2)
        return cv_ierr(c, "input 0 'input' must have rank 2, it has rank %d", x->rank);
    return cv_infer_set(c, 0, t, 2, x && x->rank == 2 ? x->dims : NULL);
}

/* ================================================================ Trilu */

carve_status k_trilu(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_trilu, in, n_in, out, n_out);
    cv_val *x = in[0];
    if (x->rank < 2)
        return cv_kerr(k, "input 0 'input' must have rank >= 2, it has rank %d", x->rank);
    int64_t kk = 0;
    if (n_in > 1 && in[1]) {
        carve_status s = sh_scalar_i64(k, in[1], "input 1 'k'", &kk);
        if (s)
            return s;
    }
    bool upper = cv_attr_i(k->m, k->node, "upper", 1) != 0;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    /* clamp k so that i + k never overflows and keeps its meaning */
    if (kk > cols + 1)
        kk = cols + 1;
    if (kk < -rows - 1)
        kk = -rows - 1;
    cv_val *v = cv_val_like(x);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype), mats = rows && cols ? x->nelem / (size_t)(rows * cols) : 0;
    const char *src = x->data;
    char *dst = v->data;
    for (size_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < rows; i++) {
            size_t row = (b * (size_t)rows + (size_t)i) * (size_t)cols * es;
            int64_t lo, hi; /* kept columns [lo, hi) */
            if (upper) {
                lo = i + kk;
                hi = cols;
            } else {
                lo = 0;
                hi = i + kk + 1;
            }
            lo = lo < 0 ? 0 : lo > cols ? cols : lo;
            hi = hi < 0 ? 0 : hi > cols ? cols : hi;
            if (hi > lo)
                memcpy(dst + row + (size_t)lo * es, src + row + (size_t)lo * es, (size_t)(hi - lo) * es);
        }
    return sh_finish(k, v, &out[0]);
}

/* ================================================================ OneHot */

/* OneHot's axis in the output's rank r, or -1 with the reason in why
 * (kernel and inference say the same). */
static int onehot_axis(const carve_model *m, carve_node_id n, int r, char *why, size_t whysz)
{
    if (r > CARVE_MAX_RANK) {
        snprintf(why, whysz, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
        return -1;
    }
    return sh_axis_attr(m, n, -1, r, "output rank", why, whysz);
}

carve_status k_onehot(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_onehot, in, n_in, out, n_out);
    cv_val *ind = in[0], *vals = in[2];
    int64_t depth;
    carve_status s = sh_scalar_i64(k, in[1], "input 1 'depth'", &depth);
    if (s)
        return s;
    if (depth < 1)
        return cv_kerr(k, "input 1 'depth' is %lld; it must be at least 1", (long long)depth);
    if (vals->nelem != 2)
        return cv_kerr(k, "input 2 'values' must hold 2 elements [off, on], it has %zu", vals->nelem);
    if (ind->dtype == CARVE_STRING || ind->dtype == CARVE_BOOL)
        return cv_kerr(k, "input 0 'indices' must be numeric, not %s", carve_dtype_name(ind->dtype));
    int r = ind->rank + 1;
    char why[96];
    int axis = onehot_axis(k->m, k->node, r, why, sizeof why);
    if (axis < 0)
        return cv_kerr(k, "%s", why);
    int64_t dims[CARVE_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        dims[i] = i == axis ? depth : ind->dims[j++];
    cv_val *v = cv_val_new(vals->dtype, r, dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(vals->dtype);
    const char *off = vals->data, *on = (const char *)vals->data + es;
    sh_fill(v->data, off, v->nelem, es);
    size_t outer = sh_span(ind->dims, 0, axis), inner = sh_span(ind->dims, axis, ind->rank);
    char *dst = v->data;
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
            int64_t x = cv_val_get_i64(ind, o * inner + i);
            if (x < 0 && x >= -depth)
                x += depth;
            if (x < 0 || x >= depth)
                continue; /* all off, as the spec says */
            memcpy(dst + ((o * (size_t)depth + (size_t)x) * inner + i) * es, on, es);
        }
    return sh_finish(k, v, &out[0]);
}

carve_status i_onehot(cv_ictx *c)
{
    const cv_type *ind = sh_tin(c, 0);
    carve_dtype dt = sh_idtype(c, 2);
    if (!ind || ind->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int r = ind->rank + 1;
    char why[96];
    int axis = onehot_axis(c->m, c->node, r, why, sizeof why);
    if (axis < 0)
        return cv_ierr(c, "%s", why);
    carve_dim depth = sh_du();
    const cv_val *dv = c->const_input ? c->const_input(c, 1) : NULL;
    if (dv && dv->kind == CV_VAL_TENSOR && dv->nelem == 1 && dv->dtype != CARVE_STRING) {
        double x = cv_val_get_f64(dv, 0);
        if (!(x >= 1))
            return cv_ierr(c, "input 1 'depth' is %g; it must be at least 1", x);
        if (x < 9e18)
            depth = sh_dk((int64_t)x);
    }
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        d[i] = i == axis ? depth : ind->dims[j++];
    return cv_infer_set(c, 0, dt, r, d);
}

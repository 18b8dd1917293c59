/* k_index.c: ops that read or write by index: Gather, GatherElements,
 * GatherND, Scatter/ScatterElements, ScatterND, NonZero, Unique, Compress.
 * Every index is checked against its bound (negative ones count from the
 * end) before anything is written. */
#include "k_shape.h"

#include <math.h>
#include <string.h>

static bool index_dtype_ok(carve_dtype t) { return t == CARVE_INT32 || t == CARVE_INT64; }

/* Index i of an int32/int64 tensor. */
static inline int64_t idx_at(const cv_val *v, size_t i)
{
    if (v->dtype == CARVE_INT64) {
        int64_t x;
        memcpy(&x, (const char *)v->data + i * 8, 8);
        return x;
    }
    int32_t x;
    memcpy(&x, (const char *)v->data + i * 4, 4);
    return x;
}

/* Copies es bytes; constant sizes become single moves. */
static inline void copy_elem(char *dst, const char *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, es);
    }
}

/* ================================================================ Gather */

carve_status k_gather(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, 1))
        return sh_unpacked(k, k_gather, in, n_in, out, n_out);
    cv_val *x = in[0], *ind = in[1];
    if (x->rank < 1)
        return cv_kerr(k, "input 0 'data' must have rank >= 1, it is a scalar");
    if (!index_dtype_ok(ind->dtype))
        return cv_kerr(k, "input 1 'indices' must be int32 or int64, not %s", carve_dtype_name(ind->dtype));
    int64_t ax = cv_attr_i(k->m, k->node, "axis", 0);
    int axis = sh_axis(ax, x->rank);
    if (axis < 0)
        return cv_kerr(k, "axis %lld is out of range for rank %d", (long long)ax, x->rank);
    int r = x->rank - 1 + ind->rank;
    if (r > CARVE_MAX_RANK)
        return cv_kerr(k, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
    int64_t dims[CARVE_MAX_RANK];
    int o = 0;
    for (int i = 0; i < axis; i++)
        dims[o++] = x->dims[i];
    for (int i = 0; i < ind->rank; i++)
        dims[o++] = ind->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        dims[o++] = x->dims[i];
    int64_t d = x->dims[axis];
    size_t ni = ind->nelem;
    for (size_t j = 0; j < ni; j++) {
        int64_t q = idx_at(ind, j);
        if (q < -d || q >= d)
            return cv_kerr(k, "indices[%zu] = %lld is out of range for axis %d of size %lld (allowed [%lld, %lld])", j,
                           (long long)q, axis, (long long)d, (long long)-d, (long long)(d - 1));
    }
    cv_val *v = cv_val_new(x->dtype, r, dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype), outer = sh_span(x->dims, 0, axis), blk = sh_span(x->dims, axis + 1, x->rank) * es;
    char *dst = v->data;
    const char *src = x->data;
    if (v->nelem) {
        for (size_t oo = 0; oo < outer; oo++) {
            const char *base = src + oo * (size_t)d * blk;
            if (blk == es && es <= 8) {
                for (size_t j = 0; j < ni; j++, dst += es) {
                    int64_t q = idx_at(ind, j);
                    copy_elem(dst, base + (size_t)(q < 0 ? q + d : q) * es, es);
                }
            } else {
                for (size_t j = 0; j < ni; j++, dst += blk) {
                    int64_t q = idx_at(ind, j);
                    memcpy(dst, base + (size_t)(q < 0 ? q + d : q) * blk, blk);
                }
            }
        }
    }
    return sh_finish(k, v, out);
}

carve_status i_gather(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0), *ind = sh_tin(c, 1);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (!x || x->rank < 0 || !ind || ind->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (x->rank < 1)
        return cv_ierr(c, "input 0 'data' must have rank >= 1, it is a scalar");
    int64_t ax = cv_attr_i(c->m, c->node, "axis", 0);
    int axis = sh_axis(ax, x->rank);
    if (axis < 0)
        return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)ax, x->rank);
    int r = x->rank - 1 + ind->rank;
    if (r > CARVE_MAX_RANK)
        return cv_ierr(c, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
    carve_dim d[CARVE_MAX_RANK];
    int o = 0;
    for (int i = 0; i < axis; i++)
        d[o++] = x->dims[i];
    for (int i = 0; i < ind->rank; i++)
        d[o++] = ind->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        d[o++] = x->dims[i];
    /* known indices against a known bound: report at compile time */
    const cv_val *iv = c->const_input ? c->const_input(c, 1) : NULL;
    int64_t bound = x->dims[axis].value;
    if (iv && bound >= 0 && index_dtype_ok(iv->dtype))
        for (size_t j = 0; j < iv->nelem; j++) {
            int64_t q = idx_at(iv, j);
            if (q < -bound || q >= bound)
                return cv_ierr(c, "indices[%zu] = %lld is out of range for axis %d of size %lld (allowed [%lld, %lld])",
                               j, (long long)q, axis, (long long)bound, (long long)-bound, (long long)(bound - 1));
        }
    return cv_infer_set(c, 0, dt, r, d);
}

/* ================================================================ GatherElements, Scatter(Elements) */

/* Common checks: data and indices of the same rank, indices no larger than
 * data off the axis, every index within [-d, d). */
static carve_status elements_check(cv_kctx *k, const cv_val *x, const cv_val *ind, int *axis_out)
{
    if (!index_dtype_ok(ind->dtype))
        return cv_kerr(k, "input 1 'indices' must be int32 or int64, not %s", carve_dtype_name(ind->dtype));
    if (x->rank < 1)
        return cv_kerr(k, "input 0 'data' must have rank >= 1, it is a scalar");
    if (ind->rank != x->rank)
        return cv_kerr(k, "input 1 'indices' has rank %d but input 0 'data' has rank %d", ind->rank, x->rank);
    int64_t ax = cv_attr_i(k->m, k->node, "axis", 0);
    int axis = sh_axis(ax, x->rank);
    if (axis < 0)
        return cv_kerr(k, "axis %lld is out of range for rank %d", (long long)ax, x->rank);
    for (int i = 0; i < x->rank; i++)
        if (i != axis && ind->dims[i] > x->dims[i])
            return cv_kerr(k, "input 1 'indices' has size %lld on axis %d, more than 'data' (%lld)",
                           (long long)ind->dims[i], i, (long long)x->dims[i]);
    int64_t d = x->dims[axis];
    for (size_t j = 0; j < ind->nelem; j++) {
        int64_t q = idx_at(ind, j);
        if (q < -d || q >= d)
            return cv_kerr(k, "indices[%zu] = %lld is out of range for axis %d of size %lld (allowed [%lld, %lld])", j,
                           (long long)q, axis, (long long)d, (long long)-d, (long long)(d - 1));
    }
    *axis_out = axis;
    return CARVE_OK;
}

/* Walks the index tensor in order; for element j gives the data element
 * offset it addresses (the axis coordinate replaced by the index). */
typedef struct elem_walk {
    int rank, axis;
    int64_t idims[CARVE_MAX_RANK], xst[CARVE_MAX_RANK], ctr[CARVE_MAX_RANK];
    int64_t base; /* offset of the current coordinates without the axis term */
    int64_t d;
} elem_walk;

static void walk_init(elem_walk *w, const cv_val *x, const cv_val *ind, int axis)
{
    memset(w, 0, sizeof *w);
    w->rank = x->rank;
    w->axis = axis;
    w->d = x->dims[axis];
    memcpy(w->idims, ind->dims, (size_t)x->rank * sizeof *w->idims);
    sh_strides(x->rank, x->dims, w->xst);
}

static inline int64_t walk_off(const elem_walk *w, int64_t q)
{
    return w->base + (q < 0 ? q + w->d : q) * w->xst[w->axis];
}

static inline void walk_next(elem_walk *w)
{
    for (int i = w->rank - 1; i >= 0; i--) {
        if (i != w->axis)
            w->base += w->xst[i];
        if (++w->ctr[i] < w->idims[i])
            return;
        if (i != w->axis)
            w->base -= w->ctr[i] * w->xst[i];
        w->ctr[i] = 0;
    }
}

carve_status k_gatherelements(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, 1))
        return sh_unpacked(k, k_gatherelements, in, n_in, out, n_out);
    cv_val *x = in[0], *ind = in[1];
    int axis;
    carve_status s = elements_check(k, x, ind, &axis);
    if (s)
        return s;
    cv_val *v = cv_val_new(x->dtype, ind->rank, ind->dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype);
    elem_walk w;
    walk_init(&w, x, ind, axis);
    char *dst = v->data;
    const char *src = x->data;
    for (size_t j = 0; j < ind->nelem; j++, walk_next(&w))
        copy_elem(dst + j * es, src + (size_t)walk_off(&w, idx_at(ind, j)) * es, es);
    return sh_finish(k, v, out);
}

carve_status i_gatherelements(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0), *ind = sh_tin(c, 1);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (x && ind && x->rank >= 0 && ind->rank >= 0 && x->rank != ind->rank)
        return cv_ierr(c, "input 1 'indices' has rank %d but input 0 'data' has rank %d", ind->rank, x->rank);
    if (!ind)
        return cv_infer_set(c, 0, dt, x ? x->rank : -1, NULL);
    return cv_infer_set(c, 0, dt, ind->rank, ind->dims);
}

/* ---------------------------------------------------------------- reductions */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

typedef void (*combine_fn)(void *dst, const void *src);

#define COMB_INT(NAME, T)                                                                                   \
    static void NAME##_add(void *d, const void *s)                                                          \
    {                                                                                                       \
        T a, b;                                                                                             \
        memcpy(&a, d, sizeof a), memcpy(&b, s, sizeof b);                                                   \
        a = (T)((uint64_t)a + (uint64_t)b);                                                                 \
        memcpy(d, &a, sizeof a);                                                                            \
    }                                                                                                       \
    static void NAME##_mul(void *d, const void *s)                                                          \
    {                                                                                                       \
        T a, b;                                                                                             \
        memcpy(&a, d, sizeof a), memcpy(&b, s, sizeof b);                                                   \
        a = (T)((uint64_t)a * (uint64_t)b);                                                                 \
        memcpy(d, &a, sizeof a);                                                                            \
    }                                                                                                       \
    static void NAME##_max(void *d, const void *s)                                                          \
    {                                                                                                       \
        T a, b;                                                                                             \
        memcpy(&a, d, sizeof a), memcpy(&b, s, sizeof b);                                                   \
        if (b > a)                                                                                          \
            memcpy(d, &b, sizeof b);                                                                        \
    }                                                                                                       \
    static void NAME##_min(void *d, const void *s)                                                          \
    {                                                                                                       \
        T a, b;                                                                                             \
        memcpy(&a, d, sizeof a), memcpy(&b, s, sizeof b);                                                   \
        if (b < a)                                                                                          \
            memcpy(d, &b, sizeof b);                                                                        \
    }

COMB_INT(i8, int8_t)
COMB_INT(u8, uint8_t)
COMB_INT(i16, int16_t)
COMB_INT(u16, uint16_t)
COMB_INT(i32, int32_t)
COMB_INT(u32, uint32_t)
COMB_INT(i64, int64_t)
COMB_INT(u64, uint64_t)

/* Floats: NaN propagates through max/min as numpy's maximum/minimum. */
#define COMB_FLT(NAME, T, LOAD, STORE)                                                                      \
    static void NAME##_add(void *d, const void *s) { STORE(d, LOAD(d) + LOAD(s)); }                          \
    static void NAME##_mul(void *d, const void *s) { STORE(d, LOAD(d) * LOAD(s)); }                          \
    static void NAME##_max(void *d, const void *s)                                                          \
    {                                                                                                       \
        T a = LOAD(d), b = LOAD(s);                                                                         \
        STORE(d, a != a || b != b ? (T)NAN : b > a ? b : a);                                                \
    }                                                                                                       \
    static void NAME##_min(void *d, const void *s)                                                          \
    {                                                                                                       \
        T a = LOAD(d), b = LOAD(s);                                                                         \
        STORE(d, a != a || b != b ? (T)NAN : b < a ? b : a);                                                \
    }

static inline float ld_f32(const void *p) { float x; memcpy(&x, p, 4); return x; }
static inline void st_f32(void *p, float x) { memcpy(p, &x, 4); }
static inline double ld_f64(const void *p) { double x; memcpy(&x, p, 8); return x; }
static inline void st_f64(void *p, double x) { memcpy(p, &x, 8); }
static inline float ld_f16(const void *p) { uint16_t h; memcpy(&h, p, 2); return cv_f16_to_f32(h); }
static inline void st_f16(void *p, float x) { uint16_t h = cv_f32_to_f16(x); memcpy(p, &h, 2); }
static inline float ld_bf16(const void *p) { uint16_t h; memcpy(&h, p, 2); return cv_bf16_to_f32(h); }
static inline void st_bf16(void *p, float x) { uint16_t h = cv_f32_to_bf16(x); memcpy(p, &h, 2); }

COMB_FLT(f32, float, ld_f32, st_f32)
COMB_FLT(f64, double, ld_f64, st_f64)
COMB_FLT(f16, float, ld_f16, st_f16)
COMB_FLT(bf16, float, ld_bf16, st_bf16)

static void b_or(void *d, const void *s) { *(uint8_t *)d = *(uint8_t *)d || *(const uint8_t *)s; }
static void b_and(void *d, const void *s) { *(uint8_t *)d = *(uint8_t *)d && *(const uint8_t *)s; }

#define COMB_ROW(NAME) {NAME##_add, NAME##_mul, NAME##_max, NAME##_min}

/* The combiner of (dtype, reduction), NULL when the dtype has none. */
static combine_fn combiner(carve_dtype t, int red)
{
    static const combine_fn tab[][4] = {COMB_ROW(i8),  COMB_ROW(u8),  COMB_ROW(i16), COMB_ROW(u16),
                                        COMB_ROW(i32), COMB_ROW(u32), COMB_ROW(i64), COMB_ROW(u64),
                                        COMB_ROW(f32), COMB_ROW(f64), COMB_ROW(f16), COMB_ROW(bf16),
                                        {b_or, b_and, b_or, b_and}};
    int row;
    switch (t) {
    case CARVE_INT8: row = 0; break;
    case CARVE_UINT8: row = 1; break;
    case CARVE_INT16: row = 2; break;
    case CARVE_UINT16: row = 3; break;
    case CARVE_INT32: row = 4; break;
    case CARVE_UINT32: row = 5; break;
    case CARVE_INT64: row = 6; break;
    case CARVE_UINT64: row = 7; break;
    case CARVE_FLOAT: row = 8; break;
    case CARVE_DOUBLE: row = 9; break;
    case CARVE_FLOAT16: row = 10; break;
    case CARVE_BFLOAT16: row = 11; break;
    case CARVE_BOOL: row = 12; break;
    default: return NULL;
    }
    return tab[row][red - 1];
}

/* reduction attribute: opset 16 (none/add/mul), 18 (max/min). */
static carve_status reduction_of(cv_kctx *k, carve_dtype t, int *red, combine_fn *fn)
{
    *red = RED_NONE;
    *fn = NULL;
    if (k->opset < 16)
        return CARVE_OK;
    const char *s = cv_attr_s(k->m, k->node, "reduction", "none");
    if (!strcmp(s, "none"))
        return CARVE_OK;
    if (!strcmp(s, "add"))
        *red = RED_ADD;
    else if (!strcmp(s, "mul"))
        *red = RED_MUL;
    else if (!strcmp(s, "max"))
        *red = RED_MAX;
    else if (!strcmp(s, "min"))
        *red = RED_MIN;
    else
        return cv_kerr(k, "reduction '%s' is not one of none, add, mul, max, min", s);
    if ((*red == RED_MAX || *red == RED_MIN) && k->opset < 18)
        return cv_kerr(k, "reduction '%s' needs opset 18", s);
    *fn = combiner(t, *red);
    if (!*fn)
        return cv_kerr(k, "reduction '%s' is not defined for %s", s, carve_dtype_name(t));
    return CARVE_OK;
}

carve_status k_scatterelements(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_scatterelements, in, n_in, out, n_out);
    cv_val *x = in[0], *ind = in[1], *upd = in[2];
    int axis;
    carve_status s = elements_check(k, x, ind, &axis);
    if (s)
        return s;
    if (upd->dtype != x->dtype)
        return cv_kerr(k, "input 2 'updates' is %s but 'data' is %s", carve_dtype_name(upd->dtype),
                       carve_dtype_name(x->dtype));
    if (upd->rank != ind->rank || memcmp(upd->dims, ind->dims, (size_t)ind->rank * sizeof *ind->dims)) {
        char a[300], b[300];
        return cv_kerr(k, "input 2 'updates' has shape %s but 'indices' has %s",
                       sh_dims_str(a, sizeof a, upd->rank, upd->dims), sh_dims_str(b, sizeof b, ind->rank, ind->dims));
    }
    int red;
    combine_fn fn;
    if ((s = reduction_of(k, x->dtype, &red, &fn)))
        return s;
    cv_val *v = cv_val_like(x);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype);
    if (x->nbytes)
        memcpy(v->data, x->data, x->nbytes);
    elem_walk w;
    walk_init(&w, x, ind, axis);
    char *dst = v->data;
    const char *src = upd->data;
    for (size_t j = 0; j < ind->nelem; j++, walk_next(&w)) {
        char *p = dst + (size_t)walk_off(&w, idx_at(ind, j)) * es;
        if (fn)
            fn(p, src + j * es);
        else
            copy_elem(p, src + j * es, es);
    }
    return sh_finish(k, v, out);
}

/* ================================================================ GatherND, ScatterND */

/* Offset (elements) of the slice an index tuple of length m addresses in
 * data dims [from, from+m), or -1 (bad index, reported by the caller). */
static int64_t tuple_off(const cv_val *ind, size_t at, int m, const int64_t *dims, const int64_t *st, int *bad)
{
    int64_t off = 0;
    for (int i = 0; i < m; i++) {
        int64_t q = idx_at(ind, at + (size_t)i), d = dims[i];
        if (q < -d || q >= d) {
            *bad = i;
            return -1;
        }
        off += (q < 0 ? q + d : q) * st[i];
    }
    return off;
}

static carve_status tuple_error(cv_kctx *k, const cv_val *ind, size_t at, int i, int axis, int64_t d)
{
    return cv_kerr(k, "indices[%zu] = %lld is out of range for axis %d of size %lld (allowed [%lld, %lld])",
                   at + (size_t)i, (long long)idx_at(ind, at + (size_t)i), axis, (long long)d, (long long)-d,
                   (long long)(d - 1));
}

carve_status k_gathernd(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, 1))
        return sh_unpacked(k, k_gathernd, in, n_in, out, n_out);
    cv_val *x = in[0], *ind = in[1];
    if (ind->dtype != CARVE_INT64 && ind->dtype != CARVE_INT32)
        return cv_kerr(k, "input 1 'indices' must be int64, not %s", carve_dtype_name(ind->dtype));
    int64_t bd = k->opset >= 12 ? cv_attr_i(k->m, k->node, "batch_dims", 0) : 0;
    int r = x->rank, q = ind->rank;
    if (r < 1 || q < 1)
        return cv_kerr(k, "'data' and 'indices' must have rank >= 1 (they have %d and %d)", r, q);
    if (bd < 0 || bd >= r || bd >= q)
        return cv_kerr(k, "batch_dims %lld must be below both ranks (%d and %d)", (long long)bd, r, q);
    int b = (int)bd;
    int64_t m = ind->dims[q - 1];
    if (m < 1 || m > r - b)
        return cv_kerr(k, "the last dim of 'indices' is %lld; it must be in [1, %d] (data rank minus batch_dims)",
                       (long long)m, r - b);
    for (int i = 0; i < b; i++)
        if (ind->dims[i] != x->dims[i])
            return cv_kerr(k, "batch dim %d of 'indices' (%lld) differs from 'data' (%lld)", i,
                           (long long)ind->dims[i], (long long)x->dims[i]);
    int orank = q - 1 + r - b - (int)m;
    if (orank > CARVE_MAX_RANK)
        return cv_kerr(k, "the output would have rank %d, above carve's limit %d", orank, CARVE_MAX_RANK);
    int64_t dims[CARVE_MAX_RANK];
    int o = 0;
    for (int i = 0; i < q - 1; i++)
        dims[o++] = ind->dims[i];
    for (int i = b + (int)m; i < r; i++)
        dims[o++] = x->dims[i];
    int64_t xst[CARVE_MAX_RANK];
    sh_strides(r, x->dims, xst);
    size_t batches = sh_span(x->dims, 0, b), per = sh_span(ind->dims, b, q - 1),
           slice = sh_span(x->dims, b + (int)m, r), bstride = b ? (size_t)xst[b - 1] : 0;
    for (size_t t = 0; t < batches * per; t++) {
        int bad = -1;
        if (tuple_off(ind, t * (size_t)m, (int)m, x->dims + b, xst + b, &bad) < 0)
            return tuple_error(k, ind, t * (size_t)m, bad, b + bad, x->dims[b + bad]);
    }
    cv_val *v = cv_val_new(x->dtype, orank, dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype);
    char *dst = v->data;
    const char *src = x->data;
    if (v->nelem)
        for (size_t bi = 0; bi < batches; bi++)
            for (size_t j = 0; j < per; j++, dst += slice * es) {
                int bad;
                int64_t off = tuple_off(ind, (bi * per + j) * (size_t)m, (int)m, x->dims + b, xst + b, &bad);
                memcpy(dst, src + (bi * bstride + (size_t)off) * es, slice * es);
            }
    return sh_finish(k, v, out);
}

carve_status i_gathernd(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0), *ind = sh_tin(c, 1);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (!x || !ind || x->rank < 0 || ind->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int64_t bd = c->opset >= 12 ? cv_attr_i(c->m, c->node, "batch_dims", 0) : 0;
    int r = x->rank, q = ind->rank;
    if (r < 1 || q < 1 || bd < 0 || bd >= r || bd >= q)
        return cv_ierr(c, "ranks %d ('data') and %d ('indices') do not fit batch_dims %lld", r, q, (long long)bd);
    int b = (int)bd;
    int64_t m = ind->dims[q - 1].value;
    if (m < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (m < 1 || m > r - b)
        return cv_ierr(c, "the last dim of 'indices' is %lld; it must be in [1, %d]", (long long)m, r - b);
    int orank = q - 1 + r - b - (int)m;
    if (orank > CARVE_MAX_RANK)
        return cv_ierr(c, "the output would have rank %d, above carve's limit %d", orank, CARVE_MAX_RANK);
    carve_dim d[CARVE_MAX_RANK];
    int o = 0;
    for (int i = 0; i < q - 1; i++)
        d[o++] = i < b && ind->dims[i].value < 0 ? x->dims[i] : ind->dims[i];
    for (int i = b + (int)m; i < r; i++)
        d[o++] = x->dims[i];
    return cv_infer_set(c, 0, dt, orank, d);
}

carve_status k_scatternd(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_scatternd, in, n_in, out, n_out);
    cv_val *x = in[0], *ind = in[1], *upd = in[2];
    if (ind->dtype != CARVE_INT64 && ind->dtype != CARVE_INT32)
        return cv_kerr(k, "input 1 'indices' must be int64, not %s", carve_dtype_name(ind->dtype));
    if (upd->dtype != x->dtype)
        return cv_kerr(k, "input 2 'updates' is %s but 'data' is %s", carve_dtype_name(upd->dtype),
                       carve_dtype_name(x->dtype));
    int r = x->rank, q = ind->rank;
    if (r < 1 || q < 1)
        return cv_kerr(k, "'data' and 'indices' must have rank >= 1 (they have %d and %d)", r, q);
    int64_t m = ind->dims[q - 1];
    if (m < 1 || m > r)
        return cv_kerr(k, "the last dim of 'indices' is %lld; it must be in [1, %d]", (long long)m, r);
    /* updates: indices.shape[:-1] + data.shape[m:] */
    bool ok = upd->rank == q - 1 + r - (int)m;
    for (int i = 0; ok && i < q - 1; i++)
        ok = upd->dims[i] == ind->dims[i];
    for (int i = (int)m; ok && i < r; i++)
        ok = upd->dims[q - 1 + i - (int)m] == x->dims[i];
    if (!ok) {
        char a[300], b[300], c[300];
        return cv_kerr(k, "input 2 'updates' has shape %s; with indices %s and data %s it must be "
                          "indices.shape[:-1] + data.shape[%lld:]",
                       sh_dims_str(a, sizeof a, upd->rank, upd->dims), sh_dims_str(b, sizeof b, q, ind->dims),
                       sh_dims_str(c, sizeof c, r, x->dims), (long long)m);
    }
    int red;
    combine_fn fn;
    carve_status s = reduction_of(k, x->dtype, &red, &fn);
    if (s)
        return s;
    int64_t xst[CARVE_MAX_RANK];
    sh_strides(r, x->dims, xst);
    size_t tuples = sh_span(ind->dims, 0, q - 1), slice = sh_span(x->dims, (int)m, r);
    for (size_t t = 0; t < tuples; t++) {
        int bad = -1;
        if (tuple_off(ind, t * (size_t)m, (int)m, x->dims, xst, &bad) < 0)
            return tuple_error(k, ind, t * (size_t)m, bad, bad, x->dims[bad]);
    }
    cv_val *v = cv_val_like(x);
    if (!v)
        return cv_knomem(k);
    if (x->nbytes)
        memcpy(v->data, x->data, x->nbytes);
    size_t es = sh_esize(x->dtype);
    char *dst = v->data;
    const char *src = upd->data;
    for (size_t t = 0; t < tuples && slice; t++) {
        int bad;
        char *p = dst + (size_t)tuple_off(ind, t * (size_t)m, (int)m, x->dims, xst, &bad) * es;
        const char *u = src + t * slice * es;
        if (fn)
            for (size_t e = 0; e < slice; e++)
                fn(p + e * es, u + e * es);
        else
            memcpy(p, u, slice * es);
    }
    return sh_finish(k, v, out);
}

/* ================================================================ NonZero */

static bool nonzero_at(const cv_val *x, size_t i)
{
    switch (x->dtype) {
    case CARVE_STRING: return *sh_str(x, i) != 0;
    case CARVE_BOOL: case CARVE_UINT8: case CARVE_INT8: return ((const uint8_t *)x->data)[i] != 0;
    case CARVE_FLOAT: return ld_f32((const char *)x->data + i * 4) != 0;
    case CARVE_COMPLEX64: {
        const char *p = (const char *)x->data + i * 8;
        return ld_f32(p) != 0 || ld_f32(p + 4) != 0;
    }
    case CARVE_COMPLEX128: {
        const char *p = (const char *)x->data + i * 16;
        return ld_f64(p) != 0 || ld_f64(p + 8) != 0;
    }
    default:
        if (cv_dtype_is_float(x->dtype))
            return cv_val_get_f64(x, i) != 0;
        return cv_val_get_i64(x, i) != 0;
    }
}

carve_status k_nonzero(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    /* a scalar counts as one element of a 1-D tensor (as onnxruntime) */
    int r = x->rank ? x->rank : 1;
    int64_t xd[CARVE_MAX_RANK];
    if (x->rank)
        memcpy(xd, x->dims, (size_t)x->rank * sizeof *xd);
    else
        xd[0] = 1;
    size_t nnz = 0;
    for (size_t i = 0; i < x->nelem; i++)
        nnz += nonzero_at(x, i);
    int64_t dims[2] = {r, (int64_t)nnz};
    cv_val *v = cv_val_new(CARVE_INT64, 2, dims);
    if (!v)
        return cv_knomem(k);
    int64_t *o = v->data, ctr[CARVE_MAX_RANK] = {0};
    size_t j = 0;
    for (size_t i = 0; i < x->nelem; i++) {
        if (nonzero_at(x, i)) {
            for (int a = 0; a < r; a++)
                o[(size_t)a * nnz + j] = ctr[a];
            j++;
        }
        for (int a = r - 1; a >= 0; a--) {
            if (++ctr[a] < xd[a])
                break;
            ctr[a] = 0;
        }
    }
    out[0] = v;
    return CARVE_OK;
}

carve_status i_nonzero(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dim d[2] = {x && x->rank >= 0 ? sh_dk(x->rank ? x->rank : 1) : sh_du(), sh_du()};
    return cv_infer_set(c, 0, CARVE_INT64, 2, d);
}

/* ================================================================ Unique */

/* Orders elements (or slices along an axis) of x; NaNs after numbers and
 * equal to each other. */
typedef struct uniq_ctx {
    const cv_val *x;
    size_t dim, inner, slice; /* slice s holds elements (o*dim + s)*inner + i */
} uniq_ctx;

static int cmp_elem(const cv_val *x, size_t a, size_t b)
{
    switch (x->dtype) {
    case CARVE_STRING: {
        int c = strcmp(sh_str(x, a), sh_str(x, b));
        return c < 0 ? -1 : c > 0;
    }
    case CARVE_INT64: {
        int64_t p = ((const int64_t *)x->data)[a], q = ((const int64_t *)x->data)[b];
        return p < q ? -1 : p > q;
    }
    case CARVE_UINT64: {
        uint64_t p = ((const uint64_t *)x->data)[a], q = ((const uint64_t *)x->data)[b];
        return p < q ? -1 : p > q;
    }
    case CARVE_COMPLEX64: case CARVE_COMPLEX128: {
        /* real part, then imaginary part (numpy's order) */
        size_t h = x->dtype == CARVE_COMPLEX64 ? 4 : 8;
        for (size_t part = 0; part < 2; part++) {
            const char *pa = (const char *)x->data + (2 * a + part) * h, *pb = (const char *)x->data + (2 * b + part) * h;
            double p = h == 4 ? ld_f32(pa) : ld_f64(pa), q = h == 4 ? ld_f32(pb) : ld_f64(pb);
            if (p != p || q != q) {
                if ((p != p) != (q != q))
                    return (p != p) - (q != q);
                continue;
            }
            if (p != q)
                return p < q ? -1 : 1;
        }
        return 0;
    }
    default:
        if (!cv_dtype_is_float(x->dtype)) {
            int64_t p = cv_val_get_i64(x, a), q = cv_val_get_i64(x, b);
            return p < q ? -1 : p > q;
        } else {
            double p = cv_val_get_f64(x, a), q = cv_val_get_f64(x, b);
            if (p != p || q != q)
                return (p != p) - (q != q);
            return p < q ? -1 : p > q;
        }
    }
}

static int cmp_slices(const uniq_ctx *u, size_t a, size_t b)
{
    for (size_t e = 0; e < u->slice; e++) {
        size_t o = e / u->inner, i = e % u->inner;
        int c = cmp_elem(u->x, (o * u->dim + a) * u->inner + i, (o * u->dim + b) * u->inner + i);
        if (c)
            return c;
    }
    return 0;
}

/* Stable merge sort of v[0..n) by cmp_slices. */
static void msort(size_t *v, size_t *tmp, size_t n, const uniq_ctx *u)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = cmp_slices(u, v[j], v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid)
                tmp[o++] = v[i++];
            while (j < hi)
                tmp[o++] = v[j++];
        }
        memcpy(v, tmp, n * sizeof *v);
    }
}

carve_status k_unique(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_unique, in, n_in, out, n_out);
    cv_val *x = in[0];
    bool sorted = cv_attr_i(k->m, k->node, "sorted", 1) != 0;
    const cv_attr *aa = cv_node_attr_find(k->m, k->node, "axis");
    bool has_axis = aa && aa->kind == CARVE_ATTR_INT;
    int axis = 0;
    uniq_ctx u = {x, x->nelem, 1, 1};
    if (has_axis) {
        axis = sh_axis(aa->u.i, x->rank);
        if (axis < 0)
            return cv_kerr(k, "axis %lld is out of range for rank %d", (long long)aa->u.i, x->rank);
        u.dim = (size_t)x->dims[axis];
        u.inner = sh_span(x->dims, axis + 1, x->rank);
        u.slice = sh_span(x->dims, 0, axis) * u.inner;
    }
    size_t n = u.dim;
    size_t *ord = cv_malloc((n + 1) * sizeof *ord), *tmp = cv_malloc((n + 1) * sizeof *tmp),
           *grp = cv_malloc((n + 1) * sizeof *grp), *first = cv_malloc((n + 1) * sizeof *first),
           *cnt = cv_malloc((n + 1) * sizeof *cnt), *pos = cv_malloc((n + 1) * sizeof *pos);
    cv_val *y = NULL, *vi = NULL, *vinv = NULL, *vc = NULL;
    carve_status st = CARVE_OK;
    if (!ord || !tmp || !grp || !first || !cnt || !pos) {
        st = cv_knomem(k);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    msort(ord, tmp, n, &u);
    /* groups in sorted order: first occurrence (stable sort: the smallest
     * index leads) and count; grp[i] = group of element i */
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || cmp_slices(&u, ord[i - 1], ord[i]) != 0) {
            first[ng] = ord[i];
            cnt[ng] = 0;
            ng++;
        }
        grp[ord[i]] = ng - 1;
        cnt[ng - 1]++;
    }
    /* output order of the groups: sorted, or by first occurrence */
    for (size_t g = 0; g < ng; g++)
        tmp[g] = g;
    if (!sorted) {
        /* groups by first index: place each group at the rank of its first */
        size_t *rank = ord; /* reuse: group index by first occurrence */
        for (size_t i = 0, o = 0; i < n; i++)
            if (first[grp[i]] == i)
                rank[o++] = grp[i];
        memcpy(tmp, rank, ng * sizeof *tmp);
    }
    for (size_t g = 0; g < ng; g++)
        pos[tmp[g]] = g; /* output position of group tmp[g] */
    int64_t ydims[CARVE_MAX_RANK];
    int yrank = has_axis ? x->rank : 1;
    if (has_axis) {
        memcpy(ydims, x->dims, (size_t)x->rank * sizeof *ydims);
        ydims[axis] = (int64_t)ng;
    } else {
        ydims[0] = (int64_t)ng;
    }
    int64_t gdim = (int64_t)ng, ndim = (int64_t)n;
    y = cv_val_new(x->dtype, yrank, ydims);
    vi = cv_val_new(CARVE_INT64, 1, &gdim);
    vinv = cv_val_new(CARVE_INT64, 1, &ndim);
    vc = cv_val_new(CARVE_INT64, 1, &gdim);
    if (!y || !vi || !vinv || !vc) {
        st = cv_knomem(k);
        goto done;
    }
    size_t es = sh_esize(x->dtype), outer = has_axis ? sh_span(x->dims, 0, axis) : 1;
    for (size_t g = 0; g < ng; g++) {
        size_t grp_id = tmp[g], s = first[grp_id];
        ((int64_t *)vi->data)[g] = (int64_t)s;
        ((int64_t *)vc->data)[g] = (int64_t)cnt[grp_id];
        for (size_t o = 0; o < outer; o++)
            memcpy((char *)y->data + ((o * ng + g) * u.inner) * es,
                   (const char *)x->data + ((o * u.dim + s) * u.inner) * es, u.inner * es);
    }
    for (size_t i = 0; i < n; i++)
        ((int64_t *)vinv->data)[i] = (int64_t)pos[grp[i]];
    if (x->dtype == CARVE_STRING && !sh_dup_strings(y)) {
        st = cv_knomem(k);
        goto done;
    }
    out[0] = y;
    y = NULL;
    cv_val *extra[3] = {vi, vinv, vc};
    for (uint32_t j = 1; j < n_out && j < 4; j++) {
        out[j] = extra[j - 1];
        extra[j - 1] = NULL;
    }
    vi = extra[0], vinv = extra[1], vc = extra[2];
done:
    cv_val_unref(y);
    cv_val_unref(vi);
    cv_val_unref(vinv);
    cv_val_unref(vc);
    cv_free(ord);
    cv_free(tmp);
    cv_free(grp);
    cv_free(first);
    cv_free(cnt);
    cv_free(pos);
    return st;
}

carve_status i_unique(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    const cv_attr *aa = cv_node_attr_find(c->m, c->node, "axis");
    bool has_axis = aa && aa->kind == CARVE_ATTR_INT;
    carve_status s;
    carve_dim inv = sh_du();
    if (!has_axis) {
        s = cv_infer_set(c, 0, dt, 1, NULL);
        if (x && x->rank >= 0)
            inv = sh_dim_prod(x->dims, 0, x->rank);
    } else if (!x || x->rank < 0) {
        s = cv_infer_set(c, 0, dt, -1, NULL);
    } else {
        int axis = sh_axis(aa->u.i, x->rank);
        if (axis < 0)
            return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)aa->u.i, x->rank);
        carve_dim d[CARVE_MAX_RANK];
        memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
        d[axis] = sh_du();
        inv = x->dims[axis];
        s = cv_infer_set(c, 0, dt, x->rank, d);
    }
    if (s || (s = cv_infer_set(c, 1, CARVE_INT64, 1, NULL)) || (s = cv_infer_set(c, 2, CARVE_INT64, 1, &inv)))
        return s;
    return cv_infer_set(c, 3, CARVE_INT64, 1, NULL);
}

/* ================================================================ Compress */

carve_status k_compress(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, 1))
        return sh_unpacked(k, k_compress, in, n_in, out, n_out);
    cv_val *x = in[0], *cond = in[1];
    if (cond->dtype != CARVE_BOOL || cond->rank != 1)
        return cv_kerr(k, "input 1 'condition' must be a 1-D bool tensor");
    const cv_attr *aa = cv_node_attr_find(k->m, k->node, "axis");
    bool has_axis = aa && aa->kind == CARVE_ATTR_INT;
    int axis = 0;
    size_t dim = x->nelem, inner = 1, outer = 1;
    if (has_axis) {
        axis = sh_axis(aa->u.i, x->rank);
        if (axis < 0)
            return cv_kerr(k, "axis %lld is out of range for rank %d", (long long)aa->u.i, x->rank);
        dim = (size_t)x->dims[axis];
        inner = sh_span(x->dims, axis + 1, x->rank);
        outer = sh_span(x->dims, 0, axis);
    }
    /* entries past the end of the axis are ignored, as onnxruntime does */
    const uint8_t *cv = cond->data;
    size_t kept = 0;
    for (size_t i = 0; i < cond->nelem && i < dim; i++)
        kept += cv[i] != 0;
    int64_t dims[CARVE_MAX_RANK];
    int r = 1;
    if (has_axis) {
        r = x->rank;
        memcpy(dims, x->dims, (size_t)r * sizeof *dims);
        dims[axis] = (int64_t)kept;
    } else {
        dims[0] = (int64_t)kept;
    }
    cv_val *v = cv_val_new(x->dtype, r, dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype), blk = inner * es;
    char *dst = v->data;
    if (v->nelem)
        for (size_t o = 0; o < outer; o++)
            for (size_t i = 0; i < cond->nelem && i < dim; i++)
                if (cv[i]) {
                    memcpy(dst, (const char *)x->data + (o * dim + i) * blk, blk);
                    dst += blk;
                }
    return sh_finish(k, v, out);
}

carve_status i_compress(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    const cv_attr *aa = cv_node_attr_find(c->m, c->node, "axis");
    bool has_axis = aa && aa->kind == CARVE_ATTR_INT;
    carve_dim kept = sh_du();
    /* a known condition over a known length counts its trues */
    const cv_val *cond = c->const_input ? c->const_input(c, 1) : NULL;
    int axis = -1;
    if (has_axis && x && x->rank >= 0) {
        axis = sh_axis(aa->u.i, x->rank);
        if (axis < 0)
            return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)aa->u.i, x->rank);
    }
    carve_dim len = !x || x->rank < 0 ? sh_du() : has_axis ? x->dims[axis] : sh_dim_prod(x->dims, 0, x->rank);
    if (cond && cond->dtype == CARVE_BOOL && (len.value >= 0 || cond->nelem == 0)) {
        int64_t n = 0;
        for (size_t i = 0; i < cond->nelem && (int64_t)i < len.value; i++)
            n += ((const uint8_t *)cond->data)[i] != 0;
        kept = sh_dk(n);
    }
    if (!has_axis)
        return cv_infer_set(c, 0, dt, 1, &kept);
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    carve_dim d[CARVE_MAX_RANK];
    memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
    d[axis] = kept;
    return cv_infer_set(c, 0, dt, x->rank, d);
}

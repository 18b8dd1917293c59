/* k_topk.c: ArgMax/ArgMin and TopK (opsets 1, 10, 11): the index of the
 * extreme, or the k best with their indices, along one axis, and their
 * inference. */
#include "k_reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width; the row loops here are hot in real models. Without
 * trapping math it may also if-convert the clamps in front of arithmetic
 * (carve never reads floating-point exception flags). */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif

/* ================================================================ ArgMax / ArgMin */

/* NaN counts as the extreme (numpy); ties go to the first index, or the
 * last with select_last_index. */
#define ARG_IMPL(NAME, T)                                                                          \
    static void NAME(const T *x, int64_t *y, size_t outer, size_t n, size_t inner, bool is_max,   \
                     bool last, T *best)                                                           \
    {                                                                                              \
        for (size_t o = 0; o < outer; o++) {                                                       \
            const T *xo = x + o * n * inner;                                                       \
            int64_t *yo = y + o * inner;                                                           \
            for (size_t j = 0; j < inner; j++) {                                                   \
                best[j] = xo[j];                                                                   \
                yo[j] = 0;                                                                         \
            }                                                                                      \
            for (size_t i = 1; i < n; i++) {                                                       \
                const T *r = xo + i * inner;                                                       \
                for (size_t j = 0; j < inner; j++) {                                               \
                    T v = r[j], b = best[j];                                                       \
                    bool take = v != v ? (b == b || last)                                          \
                                       : is_max ? (v > b || (last && v == b)) : (v < b || (last && v == b)); \
                    if (take) {                                                                    \
                        best[j] = v;                                                               \
                        yo[j] = (int64_t)i;                                                        \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

ARG_IMPL(arg_f32, float)
ARG_IMPL(arg_f64, double)
ARG_IMPL(arg_i64, int64_t)
ARG_IMPL(arg_u64, uint64_t)

carve_status k_argreduce(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_node *nd = &k->m->nodes[k->node];
    bool is_max = !strcmp(nd->op, "ArgMax");
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !(rd_is_std_float(x->dtype) || rd_is_std_int(x->dtype)))
        return cv_kerr(k, "input 0 'data' has type %s, which %s does not take", carve_dtype_name(x->dtype), nd->op);
    int64_t axis = cv_attr_i(k->m, k->node, "axis", 0);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    bool keep = cv_attr_i(k->m, k->node, "keepdims", 1) != 0;
    bool last = k->opset >= 12 && cv_attr_i(k->m, k->node, "select_last_index", 0) != 0;
    size_t n = (size_t)x->dims[a], outer = sh_span(x->dims, 0, a), inner = sh_span(x->dims, a + 1, x->rank);
    int orank = 0;
    int64_t odims[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        if (i != a)
            odims[orank++] = x->dims[i];
        else if (keep)
            odims[orank++] = 1;
    if (!n && outer * inner != 0)
        return cv_kerr(k, "cannot take %s over axis %d of size 0", nd->op, a);
    cv_val *y = cv_val_new(CARVE_INT64, orank, odims);
    if (!y)
        return cv_knomem(k);
    if (!y->nelem) {
        out[0] = y;
        return CARVE_OK;
    }
    void *best = cv_malloc(inner * 8);
    cv_val *xf = NULL;
    int64_t *xi = NULL;
    bool owned = false;
    if (!best)
        goto nomem;
    switch (x->dtype) {
    case CARVE_FLOAT: arg_f32(x->data, y->data, outer, n, inner, is_max, last, best); break;
    case CARVE_DOUBLE: arg_f64(x->data, y->data, outer, n, inner, is_max, last, best); break;
    case CARVE_FLOAT16: case CARVE_BFLOAT16:
        if (!(xf = rd_to_f32(x)))
            goto nomem;
        arg_f32(xf->data, y->data, outer, n, inner, is_max, last, best);
        break;
    default:
        if (!(xi = rd_ints_of(x, &owned)))
            goto nomem;
        if (cv_dtype_is_signed(x->dtype))
            arg_i64(xi, y->data, outer, n, inner, is_max, last, best);
        else
            arg_u64((const uint64_t *)xi, y->data, outer, n, inner, is_max, last, best);
        break;
    }
    if (owned)
        cv_free(xi);
    cv_val_unref(xf);
    cv_free(best);
    out[0] = y;
    return CARVE_OK;
nomem:
    cv_free(best);
    cv_val_unref(y);
    return cv_knomem(k);
}

carve_status i_argreduce(cv_ictx *c)
{
    const cv_type *t = sh_tin(c, 0);
    if (!t || t->rank < 0)
        return cv_infer_set(c, 0, CARVE_INT64, -1, NULL);
    int64_t axis = cv_attr_i(c->m, c->node, "axis", 0);
    int a = sh_axis(axis, t->rank);
    if (a < 0)
        return cv_ierr(c, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, t->rank);
    bool keep = cv_attr_i(c->m, c->node, "keepdims", 1) != 0;
    carve_dim d[CARVE_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < t->rank; i++)
        if (i != a)
            d[orank++] = t->dims[i];
        else if (keep)
            d[orank++] = (carve_dim){1, NULL};
    return cv_infer_set(c, 0, CARVE_INT64, orank, d);
}

/* ================================================================ TopK */

/* Every dtype maps to a uint64 key whose unsigned order is the value order
 * (NaN above +inf, -0 == +0); "smallest" flips the key. Ties: lower index
 * first. */
typedef struct {
    uint64_t key;
    int64_t idx;
} tk_item;

static uint64_t key_f64(double d)
{
    if (d != d)
        return UINT64_MAX;
    d += 0.0; /* -0 -> +0 */
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u | (1ull << 63);
}

/* a ranks before b */
static bool tk_before(const tk_item *a, const tk_item *b)
{
    return a->key > b->key || (a->key == b->key && a->idx < b->idx);
}

static int tk_cmp(const void *pa, const void *pb)
{
    const tk_item *a = pa, *b = pb;
    return tk_before(a, b) ? -1 : tk_before(b, a) ? 1 : 0;
}

/* Min-heap on rank: the root is the item that ranks last. */
static void tk_sift(tk_item *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && tk_before(&h[w], &h[l]))
            w = l;
        if (r < n && tk_before(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        tk_item t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* The best k of items[0..n) into items[0..k), in rank order. */
static void tk_select(tk_item *items, size_t n, size_t k)
{
    if (!k)
        return;
    if (k * 4 >= n) {
        qsort(items, n, sizeof *items, tk_cmp);
        return;
    }
    for (size_t i = k / 2 + 1; i-- > 0;)
        tk_sift(items, k, i);
    for (size_t i = k; i < n; i++)
        if (tk_before(&items[i], &items[0])) {
            items[0] = items[i];
            tk_sift(items, k, 0);
        }
    qsort(items, k, sizeof *items, tk_cmp);
}

static void tk_keys(const cv_val *x, size_t base, size_t n, size_t stride, bool largest, tk_item *it)
{
    const void *d = x->data;
    switch (x->dtype) {
    case CARVE_FLOAT:
        for (size_t i = 0; i < n; i++)
            it[i].key = key_f64(((const float *)d)[base + i * stride]);
        break;
    case CARVE_DOUBLE:
        for (size_t i = 0; i < n; i++)
            it[i].key = key_f64(((const double *)d)[base + i * stride]);
        break;
    case CARVE_UINT64:
        for (size_t i = 0; i < n; i++)
            it[i].key = ((const uint64_t *)d)[base + i * stride];
        break;
    default:
        if (cv_dtype_is_signed(x->dtype))
            for (size_t i = 0; i < n; i++)
                it[i].key = (uint64_t)cv_val_get_i64(x, base + i * stride) ^ (1ull << 63);
        else if (cv_dtype_is_int(x->dtype))
            for (size_t i = 0; i < n; i++)
                it[i].key = (uint64_t)cv_val_get_i64(x, base + i * stride);
        else
            for (size_t i = 0; i < n; i++)
                it[i].key = key_f64(cv_val_get_f64(x, base + i * stride));
        break;
    }
    for (size_t i = 0; i < n; i++) {
        it[i].idx = (int64_t)i;
        if (!largest)
            it[i].key = ~it[i].key;
    }
}

carve_status k_topk(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !(rd_is_std_float(x->dtype) || rd_is_std_int(x->dtype)))
        return cv_kerr(k, "input 0 'X' has type %s, which TopK does not take", carve_dtype_name(x->dtype));
    int64_t axis = cv_attr_i(k->m, k->node, "axis", -1);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    bool largest = k->opset < 11 || cv_attr_i(k->m, k->node, "largest", 1) != 0;
    int64_t kk;
    if (k->opset < 10) {
        if (!carve_node_attr_int(k->m, k->node, "k", &kk))
            return cv_kerr(k, "attribute 'k' is missing");
    } else {
        const cv_val *kv = n_in > 1 ? in[1] : NULL;
        if (!kv || kv->kind != CV_VAL_TENSOR || kv->dtype != CARVE_INT64 || kv->rank > 1 || kv->nelem != 1)
            return cv_kerr(k, "input 1 'K' must be a 1-D int64 tensor with one value");
        kk = ((const int64_t *)kv->data)[0];
    }
    size_t n = (size_t)x->dims[a];
    if (kk < 0 || (uint64_t)kk > n)
        return cv_kerr(k, "k is %lld, outside [0, %zu] (the size of axis %d)", (long long)kk, n, a);
    size_t outer = sh_span(x->dims, 0, a), inner = sh_span(x->dims, a + 1, x->rank), kn = (size_t)kk;
    int64_t odims[CARVE_MAX_RANK];
    memcpy(odims, x->dims, (size_t)x->rank * sizeof *odims);
    odims[a] = kk;
    cv_val *vals = cv_val_new(x->dtype, x->rank, odims), *idx = cv_val_new(CARVE_INT64, x->rank, odims);
    tk_item *it = cv_malloc((n ? n : 1) * sizeof *it);
    if (!vals || !idx || !it) {
        cv_val_unref(vals);
        cv_val_unref(idx);
        cv_free(it);
        return cv_knomem(k);
    }
    size_t esz = cv_dtype_nbytes(x->dtype, 1);
    const uint8_t *xd = x->data;
    uint8_t *vd = vals->data;
    int64_t *id = idx->data;
    for (size_t o = 0; o < outer && kn; o++)
        for (size_t j = 0; j < inner; j++) {
            tk_keys(x, o * n * inner + j, n, inner, largest, it);
            tk_select(it, n, kn);
            for (size_t q = 0; q < kn; q++) {
                size_t dst = (o * kn + q) * inner + j, src = (o * n + (size_t)it[q].idx) * inner + j;
                memcpy(vd + dst * esz, xd + src * esz, esz);
                id[dst] = it[q].idx;
            }
        }
    cv_free(it);
    out[0] = vals;
    out[1] = idx;
    return CARVE_OK;
}

carve_status i_topk(cv_ictx *c)
{
    const cv_type *t = sh_tin(c, 0);
    carve_dtype dt = t ? t->dtype : CARVE_UNDEFINED;
    if (!t || t->rank < 0) {
        carve_status s = cv_infer_set(c, 0, dt, -1, NULL);
        return s ? s : cv_infer_set(c, 1, CARVE_INT64, -1, NULL);
    }
    int64_t axis = cv_attr_i(c->m, c->node, "axis", -1);
    int a = sh_axis(axis, t->rank);
    if (a < 0)
        return cv_ierr(c, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, t->rank);
    carve_dim d[CARVE_MAX_RANK];
    memcpy(d, t->dims, (size_t)t->rank * sizeof *d);
    d[a] = (carve_dim){-1, NULL};
    int64_t kk = -1;
    if (c->opset < 10) {
        if (!carve_node_attr_int(c->m, c->node, "k", &kk))
            kk = -1;
    } else {
        const cv_val *kv = c->const_input(c, 1);
        if (kv && kv->kind == CV_VAL_TENSOR && kv->nelem == 1 && cv_dtype_is_int(kv->dtype))
            kk = cv_val_get_i64(kv, 0);
    }
    if (kk >= 0) {
        if (t->dims[a].value >= 0 && kk > t->dims[a].value)
            return cv_ierr(c, "k is %lld, larger than axis %d of size %lld", (long long)kk, a,
                        (long long)t->dims[a].value);
        d[a] = (carve_dim){kk, NULL};
    }
    carve_status s = cv_infer_set(c, 0, dt, t->rank, d);
    return s ? s : cv_infer_set(c, 1, CARVE_INT64, t->rank, d);
}

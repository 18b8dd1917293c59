/* k_shape.c: the shape family's shared helpers (element sizes, 4-bit and
 * string rules, the strided copy engine, integer-list inputs, symbolic
 * dims), and Constant, Identity, Shape, Size. The family's other ops:
 * k_reshape.c (Reshape, Flatten, Squeeze, Unsqueeze), k_generate.c
 * (ConstantOfShape, Range, EyeLike, Trilu, OneHot), k_layout.c and k_pad.c
 * (layout ops), k_index.c (indexing ops); Dropout is in k_random.c. */
#include "k_shape.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ element sizes, 4-bit, strings */

size_t sh_esize(carve_dtype t)
{
    if (t == CARVE_STRING)
        return sizeof(char *);
    int b = carve_dtype_bits(t);
    return b >= 8 ? (size_t)b / 8 : 0;
}

bool sh_is4(carve_dtype t) { return carve_dtype_bits(t) == 4; }

bool sh_any4(cv_val **in, uint32_t n_in)
{
    for (uint32_t i = 0; i < n_in; i++)
        if (in[i] && in[i]->kind == CV_VAL_TENSOR && sh_is4(in[i]->dtype))
            return true;
    return false;
}

static carve_dtype carrier_of(carve_dtype t) { return t == CARVE_INT4 ? CARVE_INT8 : CARVE_UINT8; }

static cv_val *unpack4(const cv_val *v)
{
    cv_val *u = cv_val_new(carrier_of(v->dtype), v->rank, v->dims);
    if (!u)
        return NULL;
    uint8_t *o = u->data;
    const uint8_t *b = v->data;
    for (size_t i = 0; i < v->nelem; i++) {
        if (v->dtype == CARVE_INT4 || v->dtype == CARVE_UINT4)
            o[i] = (uint8_t)cv_val_get_i64(v, i);
        else
            o[i] = (uint8_t)((i & 1) ? b[i / 2] >> 4 : b[i / 2] & 0xf);
    }
    return u;
}

static cv_val *pack4(const cv_val *u, carve_dtype dtype)
{
    cv_val *v = cv_val_new(dtype, u->rank, u->dims);
    if (!v)
        return NULL;
    uint8_t *b = v->data;
    const uint8_t *x = u->data;
    for (size_t i = 0; i < u->nelem; i++) {
        uint8_t q = x[i] & 0xf;
        b[i / 2] = (i & 1) ? (uint8_t)(b[i / 2] | (q << 4)) : (uint8_t)(b[i / 2] | q);
    }
    return v;
}

carve_status sh_unpacked(cv_kctx *k, cv_kernel_fn fn, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *small[16];
    cv_val **u = n_in <= 16 ? small : cv_malloc(n_in * sizeof *u);
    if (!u)
        return cv_knomem(k);
    /* the 4-bit type behind each carrier: int8 <- int4, uint8 <- uint4 or float4 */
    carve_dtype from_i8 = CARVE_UNDEFINED, from_u8 = CARVE_UNDEFINED;
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < n_in; i++) {
        u[i] = in[i];
        if (st == CARVE_OK && in[i] && in[i]->kind == CV_VAL_TENSOR && sh_is4(in[i]->dtype)) {
            if (in[i]->dtype == CARVE_INT4)
                from_i8 = CARVE_INT4;
            else if (from_u8 == CARVE_UNDEFINED)
                from_u8 = in[i]->dtype;
            u[i] = unpack4(in[i]);
            if (!u[i]) {
                u[i] = in[i];
                st = cv_knomem(k);
            }
        }
    }
    if (st == CARVE_OK)
        st = fn(k, u, n_in, out, n_out);
    for (uint32_t i = 0; i < n_in; i++)
        if (u[i] != in[i])
            cv_val_unref(u[i]);
    if (u != small)
        cv_free(u);
    for (uint32_t j = 0; st == CARVE_OK && j < n_out; j++) {
        if (!out[j] || out[j]->kind != CV_VAL_TENSOR)
            continue;
        carve_dtype to = out[j]->dtype == CARVE_INT8 ? from_i8 : out[j]->dtype == CARVE_UINT8 ? from_u8 : CARVE_UNDEFINED;
        if (to == CARVE_UNDEFINED)
            continue;
        cv_val *p = pack4(out[j], to);
        cv_val_unref(out[j]);
        out[j] = p;
        if (!p)
            st = cv_knomem(k);
    }
    if (st != CARVE_OK)
        for (uint32_t j = 0; j < n_out; j++) {
            cv_val_unref(out[j]);
            out[j] = NULL;
        }
    return st;
}

bool sh_dup_strings(cv_val *v)
{
    char **s = v->data;
    for (size_t i = 0; i < v->nelem; i++) {
        const char *src = s[i] ? s[i] : "";
        size_t n = strlen(src);
        char *d = cv_malloc(n + 1);
        if (!d) {
            for (size_t j = i; j < v->nelem; j++)
                s[j] = NULL;
            return false;
        }
        memcpy(d, src, n + 1);
        s[i] = d;
    }
    return true;
}

carve_status sh_finish(cv_kctx *k, cv_val *v, cv_val **out)
{
    if (v->dtype == CARVE_STRING && !sh_dup_strings(v)) {
        cv_val_unref(v);
        return cv_knomem(k);
    }
    *out = v;
    return CARVE_OK;
}

const char *sh_str(const cv_val *v, size_t i)
{
    const char *s = ((char *const *)v->data)[i];
    return s ? s : "";
}

/* ================================================================ the copy engine */

void sh_fill(void *dst, const void *one, size_t n, size_t es)
{
    if (!n)
        return;
    char *d = dst;
    if (es == 1) {
        memset(d, *(const unsigned char *)one, n);
        return;
    }
    memcpy(d, one, es);
    size_t done = es, total = n * es;
    while (done < total) {
        size_t c = done < total - done ? done : total - done;
        memcpy(d + done, d, c);
        done += c;
    }
}

typedef struct nd_plan {
    int rank;
    int64_t d[CARVE_MAX_RANK], s[CARVE_MAX_RANK]; /* dims and source strides (elements) in loop order */
    size_t blk[CARVE_MAX_RANK];                   /* output bytes per index of each loop dim */
    size_t es;
    bool tile;      /* the last two loop dims are a transpose done in tiles */
    bool reordered; /* a dim was moved: loop order is not output order */
} nd_plan;

/* One output row of n elements read with stride s (elements). Fixed sizes
 * go through memcpy of a constant size: unaligned-safe, one move each. */
#define ROW_LOOP(ES)                                                  \
    do {                                                              \
        for (int64_t i = 0; i < n; i++)                               \
            memcpy(dst + i * (ES), src + (ptrdiff_t)i * bs, (ES));    \
    } while (0)

static void row_copy(char *dst, const char *src, int64_t n, int64_t s, size_t es)
{
    if (s == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    if (s == 0) {
        sh_fill(dst, src, (size_t)n, es);
        return;
    }
    ptrdiff_t bs = (ptrdiff_t)s * (ptrdiff_t)es;
    switch (es) {
    case 1: ROW_LOOP(1); break;
    case 2: ROW_LOOP(2); break;
    case 4: ROW_LOOP(4); break;
    case 8: ROW_LOOP(8); break;
    case 16: ROW_LOOP(16); break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + (size_t)i * es, src + (ptrdiff_t)i * bs, es);
    }
}

/* out[i*od + j] = src[i + j*s] over an R x C block (a transpose: the output
 * row reads with a large stride, the dim above with stride 1). Done in
 * tiles; the inner loop walks the side with the larger row stride, so the
 * rows kept in cache across it are the ones that do not collide in cache
 * sets (power-of-two strides of NCHW <-> NHWC). */
#define TILE_LOOP(ES)                                                                              \
    do {                                                                                           \
        for (int64_t i0 = 0; i0 < R; i0 += T)                                                      \
            for (int64_t j0 = 0; j0 < C; j0 += T) {                                                \
                int64_t i1 = i0 + T < R ? i0 + T : R, j1 = j0 + T < C ? j0 + T : C;                \
                if (inner_i)                                                                       \
                    for (int64_t j = j0; j < j1; j++)                                              \
                        for (int64_t i = i0; i < i1; i++)                                          \
                            memcpy(dst + (i * od + j) * (ES), src + (i + j * s) * (ES), (ES));     \
                else                                                                               \
                    for (int64_t i = i0; i < i1; i++)                                              \
                        for (int64_t j = j0; j < j1; j++)                                          \
                            memcpy(dst + (i * od + j) * (ES), src + (i + j * s) * (ES), (ES));     \
            }                                                                                      \
    } while (0)

static void tile_copy(char *dst, const char *src, int64_t R, int64_t C, int64_t s, int64_t od, size_t es)
{
    const int64_t T = 32;
    bool inner_i = od < (s < 0 ? -s : s);
    switch (es) {
    case 1: TILE_LOOP(1); break;
    case 2: TILE_LOOP(2); break;
    case 4: TILE_LOOP(4); break;
    case 8: TILE_LOOP(8); break;
    default:
        for (int64_t i0 = 0; i0 < R; i0 += T)
            for (int64_t j0 = 0; j0 < C; j0 += T) {
                int64_t i1 = i0 + T < R ? i0 + T : R, j1 = j0 + T < C ? j0 + T : C;
                for (int64_t i = i0; i < i1; i++)
                    for (int64_t j = j0; j < j1; j++)
                        memcpy(dst + (ptrdiff_t)(i * od + j) * (ptrdiff_t)es,
                               src + (ptrdiff_t)(i + j * s) * (ptrdiff_t)es, es);
            }
    }
}

static void nd_rec(const nd_plan *p, int lvl, char *dst, const char *src)
{
    int64_t n = p->d[lvl];
    if (lvl == p->rank - 1) {
        row_copy(dst, src, n, p->s[lvl], p->es);
        return;
    }
    if (p->tile && lvl == p->rank - 2) {
        tile_copy(dst, src, n, p->d[lvl + 1], p->s[lvl + 1], (int64_t)(p->blk[lvl] / p->es), p->es);
        return;
    }
    size_t blk = p->blk[lvl];
    if (p->s[lvl] == 0 && !p->reordered) {
        /* a broadcast dim: write one block, then replicate it */
        nd_rec(p, lvl + 1, dst, src);
        sh_fill(dst, dst, (size_t)n, blk);
        return;
    }
    ptrdiff_t bs = (ptrdiff_t)p->s[lvl] * (ptrdiff_t)p->es;
    for (int64_t i = 0; i < n; i++)
        nd_rec(p, lvl + 1, dst + (size_t)i * blk, src + (ptrdiff_t)i * bs);
}

void sh_copy_nd(void *dst, const void *src, int rank, const int64_t *dims, const int64_t *st, size_t es)
{
    nd_plan p;
    memset(&p, 0, sizeof p);
    p.es = es;
    int r = 0;
    for (int k = 0; k < rank; k++) {
        if (dims[k] == 0)
            return;
        if (dims[k] == 1)
            continue;
        /* merge into the previous dim when the two walk as one */
        if (r > 0 && p.s[r - 1] == st[k] * dims[k]) {
            p.d[r - 1] *= dims[k];
            p.s[r - 1] = st[k];
            continue;
        }
        p.d[r] = dims[k];
        p.s[r] = st[k];
        r++;
    }
    if (r == 0) {
        memcpy(dst, src, es);
        return;
    }
    p.rank = r;
    size_t b = es;
    for (int k = r - 1; k >= 0; k--) {
        p.blk[k] = b;
        b *= (size_t)p.d[k];
    }
    /* A transpose: the output row reads with a stride and some dim above
     * reads with stride 1. That dim moves next to the last one (loop order
     * only: each dim keeps its output stride) and the pair goes in tiles. */
    int64_t si = p.s[r - 1];
    int unit = -1;
    bool zero = false;
    for (int k = 0; k < r; k++) {
        zero = zero || p.s[k] == 0;
        if (k < r - 1 && p.s[k] == 1)
            unit = k;
    }
    if (unit >= 0 && !zero && si != 1 && si != -1 && p.d[r - 1] >= 8 && p.d[unit] >= 8) {
        int64_t d = p.d[unit], s = p.s[unit];
        size_t bl = p.blk[unit];
        for (int k = unit; k < r - 2; k++) {
            p.d[k] = p.d[k + 1];
            p.s[k] = p.s[k + 1];
            p.blk[k] = p.blk[k + 1];
        }
        p.d[r - 2] = d;
        p.s[r - 2] = s;
        p.blk[r - 2] = bl;
        p.reordered = unit != r - 2;
        p.tile = true;
    }
    nd_rec(&p, 0, dst, src);
}

void sh_strides(int rank, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= dims[i];
    }
}

carve_status sh_strided_out(cv_kctx *k, const cv_val *x, int rank, const int64_t *dims, const int64_t *st,
                            size_t base, cv_val **out)
{
    cv_val *v = cv_val_new_uninit(x->dtype, rank, dims); /* sh_copy_nd writes every element */
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype);
    if (v->nelem)
        sh_copy_nd(v->data, (const char *)x->data + base * es, rank, dims, st, es);
    return sh_finish(k, v, out);
}

/* ================================================================ small helpers */

int sh_axis(int64_t axis, int rank)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return -1;
    return (int)(axis < 0 ? axis + rank : axis);
}

int sh_axis_attr(const carve_model *m, carve_node_id n, int64_t dflt, int rank, const char *of, char *why,
                 size_t whysz)
{
    int64_t ax = cv_attr_i(m, n, "axis", dflt);
    int axis = sh_axis(ax, rank);
    if (axis < 0)
        snprintf(why, whysz, "axis %lld is out of range for %s %d", (long long)ax, of, rank);
    return axis;
}

size_t sh_span(const int64_t *dims, int from, int to)
{
    size_t n = 1;
    for (int i = from; i < to; i++)
        n *= (size_t)dims[i];
    return n;
}

const char *sh_dims_str(char *buf, size_t sz, int rank, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, sz, "[");
    for (int i = 0; i < rank && k < sz; i++)
        k += (size_t)snprintf(buf + k, sz - k, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (k < sz)
        snprintf(buf + k, sz - k, "]");
    return buf;
}

carve_status sh_ints(cv_kctx *k, const cv_val *t, const char *what, int64_t *v, size_t max, size_t *n)
{
    if (!t || t->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "%s is missing or not a tensor", what);
    if (!cv_dtype_is_int(t->dtype))
        return cv_kerr(k, "%s must hold integers, not %s", what, carve_dtype_name(t->dtype));
    if (t->rank > 1)
        return cv_kerr(k, "%s must be 1-D, it has rank %d", what, t->rank);
    if (t->nelem > max)
        return cv_kerr(k, "%s has %zu values, at most %zu are allowed", what, t->nelem, max);
    for (size_t i = 0; i < t->nelem; i++)
        v[i] = cv_val_get_i64(t, i);
    *n = t->nelem;
    return CARVE_OK;
}

carve_status sh_scalar_i64(cv_kctx *k, const cv_val *t, const char *what, int64_t *v)
{
    if (!t || t->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "%s is missing or not a tensor", what);
    if (t->nelem != 1)
        return cv_kerr(k, "%s must hold one value, it has %zu", what, t->nelem);
    if (cv_dtype_is_float(t->dtype)) {
        double x = cv_val_get_f64(t, 0);
        if (!(x >= -9.2233720368547758e18 && x < 9.2233720368547758e18))
            return cv_kerr(k, "%s is %g, not a usable integer", what, x);
        *v = (int64_t)x;
        return CARVE_OK;
    }
    if (!cv_dtype_is_int(t->dtype) && t->dtype != CARVE_BOOL)
        return cv_kerr(k, "%s must be a number, not %s", what, carve_dtype_name(t->dtype));
    *v = cv_val_get_i64(t, 0);
    return CARVE_OK;
}

carve_status sh_axes(cv_kctx *k, int64_t *axes, size_t n, int rank, const char *what)
{
    bool seen[CARVE_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++) {
        int a = sh_axis(axes[i], rank);
        if (a < 0)
            return cv_kerr(k, "%s: axis %lld is out of range for rank %d", what, (long long)axes[i], rank);
        if (seen[a])
            return cv_kerr(k, "%s: axis %lld is given twice", what, (long long)axes[i]);
        seen[a] = true;
        axes[i] = a;
    }
    return CARVE_OK;
}

/* ================================================================ inference helpers */

const cv_type *sh_tin(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR ? t : NULL;
}

carve_dtype sh_idtype(cv_ictx *c, uint32_t i)
{
    const cv_type *t = sh_tin(c, i);
    return t ? t->dtype : CARVE_UNDEFINED;
}

bool sh_const_ints(cv_ictx *c, uint32_t i, int64_t *v, size_t max, size_t *n)
{
    const cv_val *t = c->const_input ? c->const_input(c, i) : NULL;
    if (!t || t->kind != CV_VAL_TENSOR || !cv_dtype_is_int(t->dtype) || t->rank > 1 || t->nelem > max)
        return false;
    for (size_t j = 0; j < t->nelem; j++)
        v[j] = cv_val_get_i64(t, j);
    *n = t->nelem;
    return true;
}

int64_t sh_len1(cv_ictx *c, uint32_t i)
{
    const cv_type *t = sh_tin(c, i);
    if (!t || t->rank != 1)
        return t && t->rank == 0 ? 1 : -1;
    return t->dims[0].value;
}

bool sh_dim_same(carve_dim a, carve_dim b)
{
    if (a.value >= 0 || b.value >= 0)
        return a.value == b.value;
    return a.param && b.param && !strcmp(a.param, b.param);
}

carve_dim sh_dim_prod(const carve_dim *d, int from, int to)
{
    uint64_t p = 1;
    int params = 0, unknown = 0, at = -1;
    bool overflow = false;
    for (int i = from; i < to; i++) {
        if (d[i].value == 0)
            return sh_dk(0);
        if (d[i].value < 0) {
            if (d[i].param) {
                params++;
                at = i;
            } else {
                unknown++;
            }
            continue;
        }
        if (d[i].value && p > (uint64_t)INT64_MAX / (uint64_t)d[i].value)
            overflow = true;
        else
            p *= (uint64_t)d[i].value;
    }
    if (unknown || overflow)
        return sh_du();
    if (!params)
        return sh_dk((int64_t)p);
    if (params == 1 && p == 1)
        return d[at];
    return sh_du();
}

carve_status sh_iunknown(cv_ictx *c, uint32_t n, carve_dtype dtype)
{
    for (uint32_t j = 0; j < n; j++) {
        carve_status s = cv_infer_set(c, j, dtype, -1, NULL);
        if (s)
            return s;
    }
    return CARVE_OK;
}

/* ================================================================ Constant */

static const char *const const_attrs[] = {"value", "value_float", "value_floats", "value_int",
                                          "value_ints", "value_string", "value_strings", "sparse_value"};

/* The one value attribute of a Constant node, or an error. */
static carve_status constant_attr(carve_model *m, carve_node_id n, const cv_attr **out, char *err, size_t errsz)
{
    /* the usual Constant, asked at every run: its one attribute, a tensor */
    const cv_node *nd = &m->nodes[n];
    if (nd->n_attr == 1 && nd->attr[0].kind == CARVE_ATTR_TENSOR && !strcmp(nd->attr[0].name, "value")) {
        *out = &nd->attr[0];
        return CARVE_OK;
    }
    const cv_attr *found = NULL;
    int count = 0;
    for (size_t i = 0; i < sizeof const_attrs / sizeof *const_attrs; i++) {
        const cv_attr *a = cv_node_attr_find(m, n, const_attrs[i]);
        if (a) {
            found = a;
            count++;
        }
    }
    if (count != 1) {
        snprintf(err, errsz, "needs exactly one of the attributes value, value_float(s), value_int(s), "
                             "value_string(s), sparse_value; it has %d", count);
        return CARVE_ERR_INVALID;
    }
    if (!strcmp(found->name, "sparse_value")) {
        snprintf(err, errsz, "sparse_value is not supported: carve needs the constant dense (attribute 'value')");
        return CARVE_ERR_UNSUPPORTED;
    }
    static const struct {
        const char *name;
        carve_attr_kind kind;
    } kinds[] = {{"value", CARVE_ATTR_TENSOR},         {"value_float", CARVE_ATTR_FLOAT},
                 {"value_floats", CARVE_ATTR_FLOATS},  {"value_int", CARVE_ATTR_INT},
                 {"value_ints", CARVE_ATTR_INTS},      {"value_string", CARVE_ATTR_STRING},
                 {"value_strings", CARVE_ATTR_STRINGS}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(found->name, kinds[i].name) && found->kind != kinds[i].kind) {
            snprintf(err, errsz, "attribute '%s' has the wrong kind (%d)", found->name, (int)found->kind);
            return CARVE_ERR_INVALID;
        }
    *out = found;
    return CARVE_OK;
}

static char *dup_bytes(cv_bytes b)
{
    char *s = cv_malloc(b.n + 1);
    if (s) {
        if (b.n)
            memcpy(s, b.p, b.n);
        s[b.n] = 0;
    }
    return s;
}

carve_status k_constant(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    const cv_attr *a = NULL;
    char err[300];
    carve_status s = constant_attr(k->m, k->node, &a, err, sizeof err);
    if (s)
        return cv_node_err(k->m, k->node, s == CARVE_ERR_UNSUPPORTED ? s : CARVE_ERR_INVALID, "", "%s", err);
    cv_val *v = NULL;
    int64_t n = a->n;
    switch (a->kind) {
    case CARVE_ATTR_TENSOR:
        if (a->u.t->nelem == 0 || (a->u.t->dtype != CARVE_STRING && !a->u.t->data))
            v = cv_val_new(a->u.t->dtype, a->u.t->rank, a->u.t->dims);
        else
            v = cv_val_from_tensor(a->u.t);
        break;
    case CARVE_ATTR_FLOAT:
        v = cv_val_scalar_f32(a->u.f);
        break;
    case CARVE_ATTR_INT:
        v = cv_val_scalar_i64(a->u.i);
        break;
    case CARVE_ATTR_FLOATS:
        v = cv_val_new(CARVE_FLOAT, 1, &n);
        if (v && n)
            memcpy(v->data, a->u.floats, (size_t)n * sizeof(float));
        break;
    case CARVE_ATTR_INTS:
        v = cv_val_new(CARVE_INT64, 1, &n);
        if (v && n)
            memcpy(v->data, a->u.ints, (size_t)n * sizeof(int64_t));
        break;
    case CARVE_ATTR_STRING:
        v = cv_val_new(CARVE_STRING, 0, NULL);
        if (v && !(((char **)v->data)[0] = dup_bytes(a->u.s))) {
            cv_val_unref(v);
            v = NULL;
        }
        break;
    case CARVE_ATTR_STRINGS:
        v = cv_val_new(CARVE_STRING, 1, &n);
        for (int64_t i = 0; v && i < n; i++)
            if (!(((char **)v->data)[i] = dup_bytes(a->u.strings[i]))) {
                cv_val_unref(v);
                v = NULL;
            }
        break;
    default:
        return cv_kerr(k, "attribute '%s' has an unexpected kind", a->name);
    }
    if (!v)
        return cv_knomem(k);
    out[0] = v;
    return CARVE_OK;
}

carve_status i_constant(cv_ictx *c)
{
    const cv_attr *a = NULL;
    char err[300];
    carve_status s = constant_attr(c->m, c->node, &a, err, sizeof err);
    if (s == CARVE_ERR_UNSUPPORTED)
        return cv_infer_set(c, 0, CARVE_UNDEFINED, -1, NULL); /* the kernel refuses it with the reason */
    if (s)
        return cv_ierr(c, "%s", err);
    carve_dim d[CARVE_MAX_RANK];
    switch (a->kind) {
    case CARVE_ATTR_TENSOR:
        for (int i = 0; i < a->u.t->rank && i < CARVE_MAX_RANK; i++)
            d[i] = sh_dk(a->u.t->dims[i]);
        return cv_infer_set(c, 0, a->u.t->dtype, a->u.t->rank, d);
    case CARVE_ATTR_FLOAT: return cv_infer_set(c, 0, CARVE_FLOAT, 0, NULL);
    case CARVE_ATTR_INT: return cv_infer_set(c, 0, CARVE_INT64, 0, NULL);
    case CARVE_ATTR_STRING: return cv_infer_set(c, 0, CARVE_STRING, 0, NULL);
    case CARVE_ATTR_FLOATS: d[0] = sh_dk(a->n); return cv_infer_set(c, 0, CARVE_FLOAT, 1, d);
    case CARVE_ATTR_INTS: d[0] = sh_dk(a->n); return cv_infer_set(c, 0, CARVE_INT64, 1, d);
    case CARVE_ATTR_STRINGS: d[0] = sh_dk(a->n); return cv_infer_set(c, 0, CARVE_STRING, 1, d);
    default: return cv_infer_set(c, 0, CARVE_UNDEFINED, -1, NULL);
    }
}

/* ================================================================ Identity */

carve_status k_identity(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    out[0] = cv_val_ref(in[0]);
    return CARVE_OK;
}

/* Sequences and optionals pass through with the type the model declares. */
carve_status i_identity(cv_ictx *c)
{
    if (!sh_tin(c, 0))
        return CARVE_OK;
    return cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
}

/* ================================================================ Shape, Size */

static void shape_range(int64_t opset, const carve_model *m, carve_node_id n, int rank, int *from, int *to)
{
    int64_t s = 0, e = rank;
    if (opset >= 15) {
        s = cv_attr_i(m, n, "start", 0);
        e = cv_attr_i(m, n, "end", rank);
    }
    if (s < 0)
        s += rank;
    if (e < 0)
        e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *from = (int)s;
    *to = (int)(e > s ? e : s);
}

carve_status k_shape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 0 'data' is not a tensor");
    int from, to;
    shape_range(k->opset, k->m, k->node, x->rank, &from, &to);
    int64_t n = to - from;
    cv_val *v = cv_val_new(CARVE_INT64, 1, &n);
    if (!v)
        return cv_knomem(k);
    for (int i = from; i < to; i++)
        ((int64_t *)v->data)[i - from] = x->dims[i];
    out[0] = v;
    return CARVE_OK;
}

carve_status i_shape(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, CARVE_INT64, 1, NULL);
    int from, to;
    shape_range(c->opset, c->m, c->node, x->rank, &from, &to);
    carve_dim d = sh_dk(to - from);
    return cv_infer_set(c, 0, CARVE_INT64, 1, &d);
}

carve_status k_size(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (in[0]->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 0 'data' is not a tensor");
    out[0] = cv_val_scalar_i64((int64_t)in[0]->nelem);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

carve_status i_size(cv_ictx *c) { return cv_infer_set(c, 0, CARVE_INT64, 0, NULL); }

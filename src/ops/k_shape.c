/* k_shape.c: the shape family's shared helpers (element sizes, 4-bit and
 * string rules, the strided copy engine, integer-list inputs, symbolic
 * dims), and the ops that compute or rename shapes: Constant, Identity,
 * Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, ConstantOfShape, Range,
 * EyeLike, Trilu, OneHot, Dropout. Layout ops are in k_layout.c, indexing
 * ops in k_index.c. */
#include "k_shape.h"
#include "../runtime/runtime.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* No single tensor a kernel makes may exceed this (as val.c). */
#define SH_MAX_BYTES ((uint64_t)16 << 30)

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

/* ================================================================ small helpers */

int sh_axis(int64_t axis, int rank)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return -1;
    return (int)(axis < 0 ? axis + rank : axis);
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

/* "[N,3,?]" for errors on symbolic shapes. */
static const char *sym_str(char *buf, size_t sz, int rank, const carve_dim *d)
{
    size_t k = (size_t)snprintf(buf, sz, "[");
    for (int i = 0; i < rank && k < sz; i++) {
        if (d[i].value >= 0)
            k += (size_t)snprintf(buf + k, sz - k, "%s%lld", i ? "," : "", (long long)d[i].value);
        else
            k += (size_t)snprintf(buf + k, sz - k, "%s%s", i ? "," : "", d[i].param ? d[i].param : "?");
    }
    if (k < sz)
        snprintf(buf + k, sz - k, "]");
    return buf;
}

/* ================================================================ Constant */

static const char *const const_attrs[] = {"value", "value_float", "value_floats", "value_int",
                                          "value_ints", "value_string", "value_strings", "sparse_value"};

/* The one value attribute of a Constant node, or an error. */
static carve_status constant_attr(carve_model *m, carve_node_id n, const cv_attr **out, char *err, size_t errsz)
{
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
    if (s == CARVE_ERR_UNSUPPORTED) {
        const cv_node *nd = &k->m->nodes[k->node];
        return cv_error(k->m->ctx, s, "node '%s' (%s): %s", nd->name, nd->op, err);
    }
    if (s)
        return cv_kerr(k, "%s", err);
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

/* ================================================================ Reshape, Flatten, Squeeze, Unsqueeze */

/* Output of a shape change: the input itself when the dims do not change,
 * else a copy with new dims (values do not share buffers). */
static carve_status renamed(cv_kctx *k, cv_val *x, int rank, const int64_t *dims, cv_val **out)
{
    if (rank == x->rank && (!rank || !memcmp(dims, x->dims, (size_t)rank * sizeof *dims))) {
        out[0] = cv_val_ref(x);
        return CARVE_OK;
    }
    out[0] = cv_val_reshaped(x, rank, dims);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

static carve_status reshape_error(cv_kctx *k, const cv_val *x, const int64_t *shape, size_t n, const char *why)
{
    char a[300], b[300];
    sh_dims_str(a, sizeof a, x->rank, x->dims);
    sh_dims_str(b, sizeof b, (int)n, shape);
    return cv_kerr(k, "cannot reshape input of shape %s (%zu elements) to shape %s: %s", a, x->nelem, b, why);
}

carve_status k_reshape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    int64_t shape[CARVE_MAX_RANK];
    size_t n = 0;
    if (k->opset < 5) {
        const int64_t *v;
        int cnt = cv_attr_ints(k->m, k->node, "shape", &v);
        if (cnt < 0)
            return cv_kerr(k, "attribute 'shape' is missing");
        if (cnt > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'shape' has %d values, carve's rank limit is %d", cnt, CARVE_MAX_RANK);
        n = (size_t)cnt;
        if (n)
            memcpy(shape, v, n * sizeof *v);
    } else {
        carve_status s = sh_ints(k, in[1], "input 1 'shape'", shape, CARVE_MAX_RANK, &n);
        if (s)
            return s;
    }
    bool allowzero = k->opset >= 14 && cv_attr_i(k->m, k->node, "allowzero", 0) != 0;
    int64_t dims[CARVE_MAX_RANK];
    int neg = -1;
    bool has_zero = false;
    uint64_t p = 1;
    bool overflow = false;
    for (size_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v == 0 && !allowzero) {
            if ((int)i >= x->rank)
                return reshape_error(k, x, shape, n, "a 0 copies the input dim at its position, and the input has no "
                                                     "dim there");
            v = x->dims[i];
        } else if (v == -1) {
            if (neg >= 0)
                return reshape_error(k, x, shape, n, "more than one -1");
            neg = (int)i;
            continue;
        } else if (v < -1) {
            return reshape_error(k, x, shape, n, "a dim below -1");
        }
        if (shape[i] == 0)
            has_zero = true;
        dims[i] = v;
        if (v && p > (uint64_t)INT64_MAX / (uint64_t)v)
            overflow = true;
        p *= (uint64_t)v;
    }
    if (neg >= 0) {
        if (allowzero && has_zero)
            return reshape_error(k, x, shape, n, "with allowzero=1 a 0 cannot stand beside a -1");
        if (overflow || p == 0)
            return reshape_error(k, x, shape, n, "the -1 cannot be inferred");
        if (x->nelem % p)
            return reshape_error(k, x, shape, n, "the element count is not a multiple of the known dims");
        dims[neg] = (int64_t)(x->nelem / p);
    } else if (overflow || p != x->nelem) {
        char why[64];
        snprintf(why, sizeof why, "%llu elements", overflow ? 0ULL : (unsigned long long)p);
        return reshape_error(k, x, shape, n, overflow ? "the element count overflows" : why);
    }
    return renamed(k, x, (int)n, dims, out);
}

/* For a Reshape whose -1 is to be inferred or whose counts are checked:
 * cancels equal params on both sides, then compares known products. */
carve_status i_reshape(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    int64_t shape[CARVE_MAX_RANK];
    size_t n = 0;
    bool known;
    if (c->opset < 5) {
        const int64_t *v;
        int cnt = cv_attr_ints(c->m, c->node, "shape", &v);
        known = cnt >= 0 && cnt <= CARVE_MAX_RANK;
        if (known) {
            n = (size_t)cnt;
            if (n)
                memcpy(shape, v, n * sizeof *v);
        }
    } else {
        known = sh_const_ints(c, 1, shape, CARVE_MAX_RANK, &n);
    }
    if (!known) {
        int64_t len = c->opset < 5 ? -1 : sh_len1(c, 1);
        return cv_infer_set(c, 0, dt, len >= 0 && len <= CARVE_MAX_RANK ? (int)len : -1, NULL);
    }
    bool allowzero = c->opset >= 14 && cv_attr_i(c->m, c->node, "allowzero", 0) != 0;
    int r = x ? x->rank : -1;
    carve_dim out[CARVE_MAX_RANK];
    int neg = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v == 0 && !allowzero) {
            if (r >= 0 && (int)i >= r)
                return cv_ierr(c, "shape[%zu] is 0 (copy the input dim) but the input has rank %d", i, r);
            out[i] = r >= 0 ? x->dims[i] : sh_du();
        } else if (v == -1) {
            if (neg >= 0)
                return cv_ierr(c, "shape has more than one -1");
            neg = (int)i;
            out[i] = sh_du();
        } else if (v < -1) {
            return cv_ierr(c, "shape[%zu] is %lld", i, (long long)v);
        } else {
            out[i] = sh_dk(v);
        }
    }
    if (r >= 0) {
        /* both sides as known product x params; equal params cancel */
        bool used_in[CARVE_MAX_RANK] = {0}, used_out[CARVE_MAX_RANK] = {0};
        for (size_t i = 0; i < n; i++) {
            if ((int)i == neg || out[i].value >= 0 || !out[i].param)
                continue;
            for (int j = 0; j < r; j++)
                if (!used_in[j] && x->dims[j].value < 0 && x->dims[j].param &&
                    !strcmp(x->dims[j].param, out[i].param)) {
                    used_in[j] = used_out[i] = true;
                    break;
                }
        }
        uint64_t pin = 1, pout = 1;
        int open_in = 0, open_out = 0, at = -1;
        bool ovf = false, zero_in = false;
        for (int j = 0; j < r; j++) {
            if (used_in[j])
                continue;
            if (x->dims[j].value < 0) {
                open_in++;
                at = j;
                if (!x->dims[j].param)
                    open_in += 100; /* unknown without a name: nothing to match */
            } else if (x->dims[j].value == 0) {
                zero_in = true;
            } else if (pin > (uint64_t)INT64_MAX / (uint64_t)x->dims[j].value) {
                ovf = true;
            } else {
                pin *= (uint64_t)x->dims[j].value;
            }
        }
        for (size_t i = 0; i < n; i++) {
            if ((int)i == neg || used_out[i])
                continue;
            if (out[i].value < 0)
                open_out++;
            else if (out[i].value && pout > (uint64_t)INT64_MAX / (uint64_t)out[i].value)
                ovf = true;
            else
                pout *= (uint64_t)out[i].value;
        }
        if (zero_in)
            pin = 0;
        if (!ovf && !open_out && neg >= 0) {
            if (!open_in) {
                if (pout == 0) {
                    if (pin != 0)
                        goto mismatch;
                } else if (pin % pout) {
                    goto mismatch;
                } else {
                    out[neg] = sh_dk((int64_t)(pin / pout));
                }
            } else if (open_in == 1 && pin == pout && pout != 0) {
                out[neg] = x->dims[at];
            }
        } else if (!ovf && !open_out && !open_in && neg < 0 && pin != pout) {
            goto mismatch;
        }
    }
    return cv_infer_set(c, 0, dt, (int)n, out);
mismatch:;
    char a[300], b[300];
    return cv_ierr(c, "cannot reshape input of shape %s to shape %s: the element counts differ",
                   sym_str(a, sizeof a, x->rank, x->dims), sh_dims_str(b, sizeof b, (int)n, shape));
}

carve_status k_flatten(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    int64_t axis = cv_attr_i(k->m, k->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return cv_kerr(k, "axis %lld is out of range for rank %d", (long long)cv_attr_i(k->m, k->node, "axis", 1),
                       x->rank);
    int64_t dims[2] = {(int64_t)sh_span(x->dims, 0, (int)axis), (int64_t)sh_span(x->dims, (int)axis, x->rank)};
    return renamed(k, x, 2, dims, out);
}

carve_status i_flatten(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, 2, NULL);
    int64_t axis = cv_attr_i(c->m, c->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)cv_attr_i(c->m, c->node, "axis", 1),
                       x->rank);
    carve_dim d[2] = {sh_dim_prod(x->dims, 0, (int)axis), sh_dim_prod(x->dims, (int)axis, x->rank)};
    return cv_infer_set(c, 0, dt, 2, d);
}

/* Squeeze/Unsqueeze axes: attribute before opset 13, input from 13.
 * *given is false when there are none (Squeeze: all unit dims). */
static carve_status kernel_axes(cv_kctx *k, cv_val **in, uint32_t n_in, int64_t *axes, size_t *n, bool *given)
{
    *given = false;
    *n = 0;
    if (k->opset < 13) {
        const int64_t *v;
        int cnt = cv_attr_ints(k->m, k->node, "axes", &v);
        if (cnt < 0)
            return CARVE_OK;
        if (cnt > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'axes' has %d values, more than carve's rank limit %d", cnt, CARVE_MAX_RANK);
        *n = (size_t)cnt;
        if (cnt)
            memcpy(axes, v, (size_t)cnt * sizeof *v);
        *given = true;
        return CARVE_OK;
    }
    if (n_in < 2 || !in[1])
        return CARVE_OK;
    *given = true;
    return sh_ints(k, in[1], "input 1 'axes'", axes, CARVE_MAX_RANK, n);
}

static bool infer_axes(cv_ictx *c, int64_t *axes, size_t *n, bool *given, int64_t *count)
{
    *given = false;
    *n = 0;
    *count = -1;
    if (c->opset < 13) {
        const int64_t *v;
        int cnt = cv_attr_ints(c->m, c->node, "axes", &v);
        if (cnt < 0)
            return true;
        if (cnt > CARVE_MAX_RANK)
            return false;
        *n = (size_t)cnt;
        if (cnt)
            memcpy(axes, v, (size_t)cnt * sizeof *v);
        *given = true;
        *count = cnt;
        return true;
    }
    if (!cv_infer_in(c, 1))
        return true;
    *given = true;
    *count = sh_len1(c, 1);
    return sh_const_ints(c, 1, axes, CARVE_MAX_RANK, n);
}

carve_status k_squeeze(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    int64_t axes[CARVE_MAX_RANK];
    size_t n;
    bool given;
    carve_status s = kernel_axes(k, in, n_in, axes, &n, &given);
    if (s)
        return s;
    bool drop[CARVE_MAX_RANK] = {0};
    if (given && n) {
        /* a repeated axis counts once, as onnxruntime does */
        for (size_t i = 0; i < n; i++) {
            int a = sh_axis(axes[i], x->rank);
            if (a < 0)
                return cv_kerr(k, "axes: axis %lld is out of range for rank %d", (long long)axes[i], x->rank);
            axes[i] = a;
        }
        for (size_t i = 0; i < n; i++) {
            if (x->dims[axes[i]] != 1)
                return cv_kerr(k, "axis %lld has size %lld; only size-1 axes can be squeezed", (long long)axes[i],
                               (long long)x->dims[axes[i]]);
            drop[axes[i]] = true;
        }
    } else {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->dims[i] == 1;
    }
    int64_t dims[CARVE_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            dims[r++] = x->dims[i];
    return renamed(k, x, r, dims, out);
}

carve_status i_squeeze(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    int64_t axes[CARVE_MAX_RANK];
    size_t n;
    bool given;
    int64_t count;
    bool known = infer_axes(c, axes, &n, &given, &count);
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int r = x->rank;
    if (!known)
        return cv_infer_set(c, 0, dt, count >= 0 && count <= r ? r - (int)count : -1, NULL);
    bool drop[CARVE_MAX_RANK] = {0};
    if (given && n) {
        for (size_t i = 0; i < n; i++) {
            int a = sh_axis(axes[i], r);
            if (a < 0)
                return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)axes[i], r);
            if (x->dims[a].value >= 0 && x->dims[a].value != 1)
                return cv_ierr(c, "axis %d has size %lld; only size-1 axes can be squeezed", a,
                               (long long)x->dims[a].value);
            drop[a] = true;
        }
    } else {
        for (int i = 0; i < r; i++) {
            if (x->dims[i].value < 0)
                return cv_infer_set(c, 0, dt, -1, NULL); /* might be 1 */
            drop[i] = x->dims[i].value == 1;
        }
    }
    carve_dim d[CARVE_MAX_RANK];
    int o = 0;
    for (int i = 0; i < r; i++)
        if (!drop[i])
            d[o++] = x->dims[i];
    return cv_infer_set(c, 0, dt, o, d);
}

carve_status k_unsqueeze(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    int64_t axes[CARVE_MAX_RANK];
    size_t n;
    bool given;
    carve_status s = kernel_axes(k, in, n_in, axes, &n, &given);
    if (s)
        return s;
    if (!given)
        return cv_kerr(k, "%s 'axes' is missing", k->opset < 13 ? "attribute" : "input 1");
    if (x->rank + (int)n > CARVE_MAX_RANK)
        return cv_kerr(k, "the output would have rank %d, above carve's limit %d", x->rank + (int)n, CARVE_MAX_RANK);
    int r = x->rank + (int)n;
    if ((s = sh_axes(k, axes, n, r, "axes")))
        return s;
    bool ins[CARVE_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++)
        ins[axes[i]] = true;
    int64_t dims[CARVE_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        dims[i] = ins[i] ? 1 : x->dims[j++];
    return renamed(k, x, r, dims, out);
}

carve_status i_unsqueeze(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    int64_t axes[CARVE_MAX_RANK];
    size_t n;
    bool given;
    int64_t count;
    bool known = infer_axes(c, axes, &n, &given, &count);
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (!known || !given) {
        int64_t r = count >= 0 ? x->rank + count : -1;
        return cv_infer_set(c, 0, dt, r >= 0 && r <= CARVE_MAX_RANK ? (int)r : -1, NULL);
    }
    int r = x->rank + (int)n;
    if (r > CARVE_MAX_RANK)
        return cv_ierr(c, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
    bool ins[CARVE_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++) {
        int a = sh_axis(axes[i], r);
        if (a < 0)
            return cv_ierr(c, "axis %lld is out of range for output rank %d", (long long)axes[i], r);
        if (ins[a])
            return cv_ierr(c, "axis %lld is given twice", (long long)axes[i]);
        ins[a] = true;
    }
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        d[i] = ins[i] ? sh_dk(1) : x->dims[j++];
    return cv_infer_set(c, 0, dt, r, d);
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
    if (x->dtype == CARVE_STRING && !sh_dup_strings(v)) {
        cv_val_unref(v);
        return cv_knomem(k);
    }
    out[0] = v;
    return CARVE_OK;
}

/* ================================================================ OneHot */

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
    if (r > CARVE_MAX_RANK)
        return cv_kerr(k, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
    int64_t ax = cv_attr_i(k->m, k->node, "axis", -1);
    int axis = sh_axis(ax, r);
    if (axis < 0)
        return cv_kerr(k, "axis %lld is out of range for output rank %d", (long long)ax, r);
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
    if (vals->dtype == CARVE_STRING && !sh_dup_strings(v)) {
        cv_val_unref(v);
        return cv_knomem(k);
    }
    out[0] = v;
    return CARVE_OK;
}

carve_status i_onehot(cv_ictx *c)
{
    const cv_type *ind = sh_tin(c, 0);
    carve_dtype dt = sh_idtype(c, 2);
    if (!ind || ind->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int r = ind->rank + 1;
    if (r > CARVE_MAX_RANK)
        return cv_ierr(c, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
    int64_t ax = cv_attr_i(c->m, c->node, "axis", -1);
    int axis = sh_axis(ax, r);
    if (axis < 0)
        return cv_ierr(c, "axis %lld is out of range for output rank %d", (long long)ax, r);
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

/* ================================================================ Dropout */

/* numpy's legacy generator (MT19937, np.random.seed + uniform): the ONNX
 * reference draws the training mask with it, so a seeded Dropout gives the
 * reference's mask bit for bit. */
typedef struct mt19937 {
    uint32_t s[624];
    int i;
} mt19937;

static void mt_seed(mt19937 *m, uint32_t seed)
{
    m->s[0] = seed;
    for (int i = 1; i < 624; i++)
        m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
    m->i = 624;
}

static uint32_t mt_next(mt19937 *m)
{
    if (m->i >= 624) {
        for (int i = 0; i < 624; i++) {
            uint32_t y = (m->s[i] & 0x80000000u) | (m->s[(i + 1) % 624] & 0x7fffffffu);
            m->s[i] = m->s[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
        }
        m->i = 0;
    }
    uint32_t y = m->s[m->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static double mt_uniform(mt19937 *m)
{
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

carve_status k_dropout(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    if (!cv_dtype_is_float(x->dtype))
        return cv_kerr(k, "input 0 'data' must be floating point, not %s", carve_dtype_name(x->dtype));
    bool training = false;
    double ratio = 0.5;
    if (k->opset >= 12) {
        if (n_in > 2 && in[2]) {
            if (in[2]->nelem != 1 || in[2]->dtype != CARVE_BOOL)
                return cv_kerr(k, "input 2 'training_mode' must be one boolean");
            training = ((const uint8_t *)in[2]->data)[0] != 0;
        }
        if (n_in > 1 && in[1]) {
            if (in[1]->nelem != 1 || !cv_dtype_is_float(in[1]->dtype))
                return cv_kerr(k, "input 1 'ratio' must be one floating-point value");
            ratio = cv_val_get_f64(in[1], 0);
        }
    }
    /* Before opset 12 there is no training input: carve runs models for
     * inference, where Dropout is the identity. */
    carve_dtype mask_t = k->opset >= 10 ? CARVE_BOOL : x->dtype;
    if (!training || ratio == 0) {
        out[0] = cv_val_ref(x);
        if (n_out > 1) {
            out[1] = cv_val_like_dtype(x, mask_t);
            if (!out[1])
                return cv_knomem(k);
            if (mask_t == CARVE_BOOL)
                memset(out[1]->data, 1, out[1]->nbytes);
            else
                for (size_t i = 0; i < x->nelem; i++)
                    cv_val_set_f64(out[1], i, 1.0);
        }
        return CARVE_OK;
    }
    if (!(ratio >= 0 && ratio < 1))
        return cv_kerr(k, "input 1 'ratio' is %g; it must be in [0, 1)", ratio);
    const cv_attr *sa = cv_node_attr_find(k->m, k->node, "seed");
    uint64_t seed;
    if (sa && sa->kind == CARVE_ATTR_INT)
        seed = (uint64_t)sa->u.i;
    else if (k->interp) {
        seed = k->interp->rng_seed; /* the run's seed advances per random node, as k_random.c */
        k->interp->rng_seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    }
    else
        return cv_kerr(k, "training mode without a 'seed' is random: not computed at compile time");
    mt19937 *mt = cv_malloc(sizeof *mt);
    cv_val *y = cv_val_like(x), *mask = n_out > 1 ? cv_val_like_dtype(x, mask_t) : NULL;
    if (!mt || !y || (n_out > 1 && !mask)) {
        cv_free(mt);
        cv_val_unref(y);
        cv_val_unref(mask);
        return cv_knomem(k);
    }
    mt_seed(mt, (uint32_t)seed);
    /* the reference scales in the data's precision */
    float scale32 = (float)(1.0 / (1.0 - (float)ratio));
    double scale = x->dtype == CARVE_DOUBLE ? 1.0 / (1.0 - ratio) : scale32;
    for (size_t i = 0; i < x->nelem; i++) {
        bool keep = mt_uniform(mt) >= ratio;
        if (x->dtype == CARVE_FLOAT)
            ((float *)y->data)[i] = keep ? ((const float *)x->data)[i] * scale32 : 0.0f;
        else
            cv_val_set_f64(y, i, keep ? cv_val_get_f64(x, i) * scale : 0.0);
        if (mask)
            cv_val_set_i64(mask, i, keep);
    }
    cv_free(mt);
    out[0] = y;
    if (n_out > 1)
        out[1] = mask;
    else
        cv_val_unref(mask);
    return CARVE_OK;
}

carve_status i_dropout(cv_ictx *c)
{
    carve_status s = cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
    if (s)
        return s;
    carve_dtype mask_t = c->opset >= 10 ? CARVE_BOOL : sh_idtype(c, 0);
    return cv_infer_like(c, 1, 0, mask_t);
}

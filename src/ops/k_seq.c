/* k_seq.c: sequence and optional ops (SequenceConstruct, SequenceEmpty,
 * SequenceAt, SequenceInsert, SequenceErase, SequenceLength, SplitToSequence,
 * ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement).
 *
 * A sequence is a cv_val of kind CV_VAL_SEQUENCE holding references to its
 * tensors, so inserting, erasing and indexing never copy tensor data. An
 * empty optional is a CV_VAL_NONE. Sequence and optional types are opaque in
 * the IR (serialized TypeProto); inference reads the element type from those
 * bytes, or from the op that made the sequence when the model declares none. */
#include "ops.h"

#include <stddef.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

/* Reads a position input (int32/int64 with one element). */
static carve_status read_position(cv_kctx *k, const cv_val *p, uint32_t idx, int64_t *out)
{
    if (p->kind != CV_VAL_TENSOR || (p->dtype != CARVE_INT32 && p->dtype != CARVE_INT64) || p->nelem != 1)
        return cv_kerr(k, "input %u 'position' must be an int32 or int64 scalar", idx);
    *out = cv_val_get_i64(p, 0);
    return CARVE_OK;
}

static carve_status need_sequence(cv_kctx *k, const cv_val *s, uint32_t idx)
{
    if (!s || s->kind != CV_VAL_SEQUENCE)
        return cv_kerr(k, "input %u 'input_sequence' is not a sequence", idx);
    return CARVE_OK;
}

/* ---------------------------------------------------------------- kernels */

carve_status k_seqconstruct(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    for (uint32_t i = 0; i < n_in; i++) {
        if (!in[i] || in[i]->kind != CV_VAL_TENSOR)
            return cv_kerr(k, "input %u is not a tensor", i);
        if (in[i]->dtype != in[0]->dtype)
            return cv_kerr(k, "input %u is %s but input 0 is %s: a sequence holds one element type", i,
                           carve_dtype_name(in[i]->dtype), carve_dtype_name(in[0]->dtype));
    }
    out[0] = cv_val_sequence(in[0]->dtype, n_in, in);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

carve_status k_seqempty(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)n_out;
    int64_t dt = cv_attr_i(k->m, k->node, "dtype", CARVE_FLOAT);
    if (dt < 0 || dt > INT32_MAX || !cv_dtype_valid((int)dt))
        return cv_kerr(k, "attribute 'dtype' is %lld, not a tensor element type", (long long)dt);
    out[0] = cv_val_sequence((carve_dtype)dt, 0, NULL);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

carve_status k_seqat(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    carve_status s = need_sequence(k, in[0], 0);
    int64_t p = 0;
    if (!s)
        s = read_position(k, in[1], 1, &p);
    if (s)
        return s;
    int64_t n = in[0]->n_items;
    if (p < -n || p >= n)
        return cv_kerr(k, "input 1 'position' is %lld but the sequence has %lld tensors (accepted [%lld, %lld])",
                       (long long)p, (long long)n, (long long)-n, (long long)(n - 1));
    out[0] = cv_val_ref(in[0]->items[p < 0 ? p + n : p]);
    return CARVE_OK;
}

carve_status k_seqinsert(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    carve_status s = need_sequence(k, in[0], 0);
    if (s)
        return s;
    const cv_val *seq = in[0];
    cv_val *t = in[1];
    if (!t || t->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 1 'tensor' is not a tensor");
    /* An empty sequence read without an element type takes the tensor's. */
    bool untyped = seq->n_items == 0 && seq->dtype == CARVE_UNDEFINED;
    if (!untyped && t->dtype != seq->dtype)
        return cv_kerr(k, "input 1 'tensor' is %s but the sequence holds %s", carve_dtype_name(t->dtype),
                       carve_dtype_name(seq->dtype));
    int64_t n = seq->n_items, p = n;
    if (n_in > 2 && in[2]) {
        s = read_position(k, in[2], 2, &p);
        if (s)
            return s;
        if (p < -n || p > n)
            return cv_kerr(k, "input 2 'position' is %lld but the sequence has %lld tensors (accepted [%lld, %lld])",
                           (long long)p, (long long)n, (long long)-n, (long long)n);
        if (p < 0)
            p += n;
    }
    cv_val **items = cv_malloc(((size_t)n + 1) * sizeof *items);
    if (!items)
        return cv_knomem(k);
    for (int64_t i = 0, j = 0; i <= n; i++)
        items[i] = i == p ? t : seq->items[j++];
    out[0] = cv_val_sequence(t->dtype, (uint32_t)(n + 1), items);
    cv_free(items);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

carve_status k_seqerase(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    carve_status s = need_sequence(k, in[0], 0);
    if (s)
        return s;
    const cv_val *seq = in[0];
    int64_t n = seq->n_items, p = -1;
    if (n_in > 1 && in[1]) {
        s = read_position(k, in[1], 1, &p);
        if (s)
            return s;
    }
    if (p < -n || p >= n)
        return cv_kerr(k, "input 1 'position' is %lld but the sequence has %lld tensors (accepted [%lld, %lld])",
                       (long long)p, (long long)n, (long long)-n, (long long)(n - 1));
    if (p < 0)
        p += n;
    cv_val **items = cv_malloc(((size_t)n + 1) * sizeof *items);
    if (!items)
        return cv_knomem(k);
    for (int64_t i = 0, j = 0; i < n; i++)
        if (i != p)
            items[j++] = seq->items[i];
    out[0] = cv_val_sequence(seq->dtype, (uint32_t)(n - 1), items);
    cv_free(items);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

carve_status k_seqlength(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    carve_status s = need_sequence(k, in[0], 0);
    if (s)
        return s;
    out[0] = cv_val_scalar_i64(in[0]->n_items);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

/* A copy of x restricted to [start, start+len) along axis; with squeeze the
 * axis (of length 1) is dropped. */
static cv_val *slab(const cv_val *x, int axis, int64_t start, int64_t len, bool squeeze)
{
    int64_t dims[CARVE_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d == axis && squeeze)
            continue;
        dims[r++] = d == axis ? len : x->dims[d];
    }
    cv_val *o = cv_val_new(x->dtype, r, dims);
    if (!o)
        return NULL;
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= (size_t)x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= (size_t)x->dims[d];
    size_t n = (size_t)x->dims[axis], chunk = (size_t)len * inner;
    for (size_t o2 = 0; o2 < outer; o2++)
        if (!cv_val_copy_elems(o, o2 * chunk, x, (o2 * n + (size_t)start) * inner, chunk)) {
            cv_val_unref(o);
            return NULL;
        }
    return o;
}

carve_status k_splittoseq(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0];
    const cv_val *split = n_in > 1 ? in[1] : NULL;
    if (x->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 0 'input' is not a tensor");
    if (x->rank == 0)
        return cv_kerr(k, "input 0 'input' is a scalar: there is no axis to split");
    int64_t axis = cv_attr_i(k->m, k->node, "axis", 0);
    if (axis < -x->rank || axis >= x->rank)
        return cv_kerr(k, "attribute 'axis' is %lld but input 0 has rank %d", (long long)axis, x->rank);
    if (axis < 0)
        axis += x->rank;
    int64_t dim = x->dims[axis];
    bool keepdims = cv_attr_i(k->m, k->node, "keepdims", 1) != 0;
    int64_t *lens = NULL;
    size_t n = 0;
    if (!split) {
        n = (size_t)dim;
    } else {
        if (split->kind != CV_VAL_TENSOR || (split->dtype != CARVE_INT32 && split->dtype != CARVE_INT64) ||
            split->rank > 1)
            return cv_kerr(k, "input 1 'split' must be an int32 or int64 scalar or 1-D tensor");
        if (split->rank == 0) {
            int64_t c = cv_val_get_i64(split, 0);
            if (c <= 0)
                return cv_kerr(k, "input 1 'split' is %lld, expected a positive chunk length", (long long)c);
            n = (size_t)(dim / c + (dim % c != 0));
            keepdims = true;
            lens = cv_malloc((n + 1) * sizeof *lens);
            if (!lens)
                return cv_knomem(k);
            for (size_t i = 0; i < n; i++)
                lens[i] = (int64_t)i + 1 < (int64_t)n || dim % c == 0 ? c : dim % c;
        } else {
            n = split->nelem;
            keepdims = true;
            lens = cv_malloc((n + 1) * sizeof *lens);
            if (!lens)
                return cv_knomem(k);
            uint64_t sum = 0;
            for (size_t i = 0; i < n; i++) {
                lens[i] = cv_val_get_i64(split, i);
                if (lens[i] < 0) {
                    cv_free(lens);
                    return cv_kerr(k, "input 1 'split' value %zu is %lld, lengths cannot be negative", i,
                                   (long long)lens[i]);
                }
                sum += (uint64_t)lens[i];
            }
            if (sum != (uint64_t)dim) {
                cv_free(lens);
                return cv_kerr(k, "input 1 'split' sums to %llu but input 0 dim %lld is %lld", (unsigned long long)sum,
                               (long long)axis, (long long)dim);
            }
        }
    }
    cv_val **items = cv_malloc((n + 1) * sizeof *items);
    if (!items) {
        cv_free(lens);
        return cv_knomem(k);
    }
    carve_status s = CARVE_OK;
    int64_t start = 0;
    size_t made = 0;
    for (; made < n; made++) {
        int64_t len = lens ? lens[made] : 1;
        items[made] = slab(x, (int)axis, start, len, !keepdims);
        if (!items[made]) {
            s = cv_knomem(k);
            break;
        }
        start += len;
    }
    if (!s) {
        out[0] = cv_val_sequence(x->dtype, (uint32_t)n, items);
        if (!out[0])
            s = cv_knomem(k);
    }
    for (size_t i = 0; i < made; i++)
        cv_val_unref(items[i]);
    cv_free(items);
    cv_free(lens);
    return s;
}

carve_status k_concatfromseq(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    carve_status s = need_sequence(k, in[0], 0);
    if (s)
        return s;
    const cv_val *seq = in[0];
    if (!seq->n_items)
        return cv_kerr(k, "input 0 'input_sequence' is empty: there is nothing to concatenate");
    const cv_val *f = seq->items[0];
    bool new_axis = cv_attr_i(k->m, k->node, "new_axis", 0) != 0;
    int64_t axis;
    if (!carve_node_attr_int(k->m, k->node, "axis", &axis))
        return cv_kerr(k, "attribute 'axis' is required");
    int r = f->rank, orank = r + new_axis;
    if (orank > CARVE_MAX_RANK)
        return cv_kerr(k, "the result would have rank %d, carve allows %d", orank, CARVE_MAX_RANK);
    if (orank == 0)
        return cv_kerr(k, "the sequence holds scalars: set new_axis to stack them");
    if (axis < -orank || axis >= orank)
        return cv_kerr(k, "attribute 'axis' is %lld, accepted range is [%d, %d] for tensors of rank %d%s",
                       (long long)axis, -orank, orank - 1, r, new_axis ? " with new_axis" : "");
    if (axis < 0)
        axis += orank;
    int64_t total = 0;
    for (uint32_t i = 0; i < seq->n_items; i++) {
        const cv_val *t = seq->items[i];
        if (t->dtype != f->dtype || t->rank != r)
            return cv_kerr(k, "tensor %u of the sequence is %s of rank %d but tensor 0 is %s of rank %d", i,
                           carve_dtype_name(t->dtype), t->rank, carve_dtype_name(f->dtype), r);
        for (int d = 0; d < r; d++)
            if (t->dims[d] != f->dims[d] && (new_axis || d != axis))
                return cv_kerr(k, "tensor %u of the sequence has dim %d = %lld but tensor 0 has %lld", i, d,
                               (long long)t->dims[d], (long long)f->dims[d]);
        total += new_axis ? 1 : t->dims[axis];
    }
    int64_t dims[CARVE_MAX_RANK];
    for (int d = 0, j = 0; d < orank; d++) {
        if (new_axis && d == axis) {
            dims[d] = total;
            continue;
        }
        dims[d] = d == axis ? total : f->dims[j];
        j++;
    }
    cv_val *o = cv_val_new(f->dtype, orank, dims);
    if (!o)
        return cv_knomem(k);
    size_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= (size_t)dims[d];
    for (int d = (int)axis + 1; d < orank; d++)
        inner *= (size_t)dims[d];
    size_t row = (size_t)total * inner, at = 0;
    for (uint32_t i = 0; i < seq->n_items; i++) {
        const cv_val *t = seq->items[i];
        size_t chunk = (new_axis ? 1 : (size_t)t->dims[axis]) * inner;
        for (size_t q = 0; q < outer; q++)
            if (!cv_val_copy_elems(o, q * row + at, t, q * chunk, chunk)) {
                cv_val_unref(o);
                return cv_knomem(k);
            }
        at += chunk;
    }
    out[0] = o;
    return CARVE_OK;
}

carve_status k_optional(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = n_in ? in[0] : NULL;
    if (!x) {
        if (!cv_node_attr_find(k->m, k->node, "type"))
            return cv_kerr(k, "without an input, attribute 'type' is required");
        out[0] = cv_val_none();
    } else if (x->kind == CV_VAL_NONE) {
        return cv_kerr(k, "input 0 is already an empty optional");
    } else {
        /* Values are shared by reference; the optional wrapper is a copy
         * (sequences copy only their item references). */
        out[0] = cv_val_clone(x);
        if (out[0])
            out[0]->optional = true;
    }
    return out[0] ? CARVE_OK : cv_knomem(k);
}

carve_status k_optionalhas(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    /* Opset 18 lets the input be omitted: that is an empty optional. */
    bool has = n_in && in[0] && in[0]->kind != CV_VAL_NONE;
    out[0] = cv_val_new(CARVE_BOOL, 0, NULL);
    if (!out[0])
        return cv_knomem(k);
    *(uint8_t *)out[0]->data = has;
    return CARVE_OK;
}

carve_status k_optionalget(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    if (in[0]->kind == CV_VAL_NONE)
        return cv_kerr(k, "input 0 'input' is an empty optional: it has no element to get");
    out[0] = cv_val_ref(in[0]);
    return CARVE_OK;
}

/* ---------------------------------------------------------------- inference */

/* Minimal protobuf reading of a serialized TypeProto: tensor_type = 1
 * (elem_type = 1, shape = 2 {dim = 1 {dim_value = 1, dim_param = 2}}),
 * sequence_type = 4 and optional_type = 9 ({elem_type = 1}). */
typedef struct {
    const uint8_t *p, *end;
} pb_span;

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* One field of a message; pb_next returns false at the end or on bad bytes. */
typedef struct {
    uint32_t field;
    uint8_t wire;
    uint64_t varint;
    pb_span bytes;
} pb_field;

static bool pb_next(pb_span *s, pb_field *f)
{
    uint64_t key;
    if (s->p >= s->end || !pb_varint(&s->p, s->end, &key))
        return false;
    f->field = (uint32_t)(key >> 3);
    f->wire = (uint8_t)(key & 7);
    switch (f->wire) {
    case 0:
        return pb_varint(&s->p, s->end, &f->varint);
    case 1:
    case 5: {
        ptrdiff_t w = f->wire == 1 ? 8 : 4;
        if (s->end - s->p < w)
            return false;
        s->p += w;
        return true;
    }
    case 2: {
        uint64_t len;
        if (!pb_varint(&s->p, s->end, &len) || len > (uint64_t)(s->end - s->p))
            return false;
        f->bytes = (pb_span){s->p, s->p + len};
        s->p += len;
        return true;
    }
    default: return false;
    }
}

/* The sub-message `field` of s (the first one). */
static bool pb_sub(pb_span s, uint32_t field, pb_span *out)
{
    pb_field f;
    while (pb_next(&s, &f))
        if (f.field == field && f.wire == 2) {
            *out = f.bytes;
            return true;
        }
    return false;
}

/* A tensor type read from a TypeProto. */
typedef struct {
    carve_dtype dtype;
    int rank;
    carve_dim dims[CARVE_MAX_RANK];
} elem_type;

static bool parse_tensor_type(carve_model *m, pb_span tt, elem_type *e)
{
    pb_field f;
    pb_span s = tt, shape;
    e->dtype = CARVE_UNDEFINED;
    e->rank = -1;
    while (pb_next(&s, &f))
        if (f.field == 1 && f.wire == 0 && cv_dtype_valid((int)f.varint))
            e->dtype = (carve_dtype)f.varint;
    if (!pb_sub(tt, 2, &shape))
        return true;
    e->rank = 0;
    s = shape;
    while (pb_next(&s, &f)) {
        if (f.field != 1 || f.wire != 2)
            continue;
        if (e->rank == CARVE_MAX_RANK) {
            e->rank = -1;
            return true;
        }
        carve_dim d = {-1, NULL};
        pb_span ds = f.bytes;
        pb_field g = {0};
        while (pb_next(&ds, &g)) {
            if (g.field == 1 && g.wire == 0 && (int64_t)g.varint >= 0)
                d.value = (int64_t)g.varint;
            else if (g.field == 2 && g.wire == 2 && g.bytes.end > g.bytes.p)
                d.param = cv_arena_strndup(&m->arena, (const char *)g.bytes.p, (size_t)(g.bytes.end - g.bytes.p));
        }
        e->dims[e->rank++] = d;
    }
    return true;
}

/* Element tensor type of value v whose type is a sequence (wrap 4) or an
 * optional (wrap 9) of a tensor. */
static bool opaque_elem(carve_model *m, const cv_type *t, uint32_t wrap, elem_type *e)
{
    if (t->kind != CARVE_TYPE_OTHER || !t->opaque.n)
        return false;
    pb_span s = {t->opaque.p, t->opaque.p + t->opaque.n}, inner, tt;
    if (!pb_sub(s, wrap, &inner) || !pb_sub(inner, 1, &inner) || !pb_sub(inner, 1, &tt))
        return false;
    return parse_tensor_type(m, tt, e);
}

/* Element type of the sequence value v: from its declared type, else from
 * the op that built it (a few levels up). */
static bool seq_elem(carve_model *m, carve_value_id v, int depth, elem_type *e)
{
    if (v == CARVE_NONE || depth > 32)
        return false;
    const cv_value *val = &m->values[v];
    if (opaque_elem(m, &val->type, 4, e))
        return true;
    carve_node_id p = val->producer;
    if (p == CARVE_NONE)
        return false;
    const cv_node *n = &m->nodes[p];
    if (*n->domain)
        return false;
    const cv_type *t = NULL;
    if (!strcmp(n->op, "SequenceConstruct") && n->n_in)
        t = &m->values[n->in[0]].type;
    else if (!strcmp(n->op, "SplitToSequence") && n->n_in)
        t = &m->values[n->in[0]].type;
    else if (!strcmp(n->op, "SequenceInsert") && n->n_in > 1)
        t = &m->values[n->in[1]].type;
    else if (!strcmp(n->op, "SequenceErase") && n->n_in)
        return seq_elem(m, n->in[0], depth + 1, e);
    else if (!strcmp(n->op, "SequenceEmpty")) {
        e->dtype = (carve_dtype)cv_attr_i(m, p, "dtype", CARVE_FLOAT);
        e->rank = -1;
        return true;
    }
    if (!t || t->kind != CARVE_TYPE_TENSOR)
        return false;
    e->dtype = t->dtype;
    /* Split pieces and inserted tensors may differ in shape: keep dtype and
     * rank only where the rank is certain. */
    e->rank = !strcmp(n->op, "SequenceConstruct") && n->n_in == 1 ? t->rank : -1;
    for (int d = 0; d < e->rank; d++)
        e->dims[d] = t->dims[d];
    if (!strcmp(n->op, "SplitToSequence") && t->rank >= 0) {
        const cv_type *st = n->n_in > 1 && n->in[1] != CARVE_NONE ? &m->values[n->in[1]].type : NULL;
        int64_t axis = cv_attr_i(m, p, "axis", 0);
        bool drop = !st && cv_attr_i(m, p, "keepdims", 1) == 0;
        if (axis < 0)
            axis += t->rank;
        if (axis >= 0 && axis < t->rank) {
            e->rank = t->rank - drop;
            for (int d = 0, j = 0; d < t->rank; d++) {
                if (d == axis && drop)
                    continue;
                e->dims[j++] = d == axis ? (carve_dim){st ? -1 : 1, NULL} : t->dims[d];
            }
        }
    }
    return true;
}

carve_status i_seqat(cv_ictx *c)
{
    elem_type e;
    if (!seq_elem(c->m, c->m->nodes[c->node].in[0], 0, &e))
        return CARVE_OK;
    return cv_infer_set(c, 0, e.dtype, e.rank, e.rank >= 0 ? e.dims : NULL);
}

carve_status i_seqlength(cv_ictx *c) { return cv_infer_set(c, 0, CARVE_INT64, 0, NULL); }

carve_status i_concatfromseq(cv_ictx *c)
{
    elem_type e;
    if (!seq_elem(c->m, c->m->nodes[c->node].in[0], 0, &e))
        return CARVE_OK;
    if (e.rank < 0)
        return cv_infer_set(c, 0, e.dtype, -1, NULL);
    bool new_axis = cv_attr_i(c->m, c->node, "new_axis", 0) != 0;
    int64_t axis;
    int orank = e.rank + new_axis;
    if (!carve_node_attr_int(c->m, c->node, "axis", &axis) || orank == 0 || orank > CARVE_MAX_RANK)
        return cv_infer_set(c, 0, e.dtype, -1, NULL);
    if (axis < -orank || axis >= orank)
        return cv_ierr(c, "attribute 'axis' is %lld, accepted range is [%d, %d]", (long long)axis, -orank, orank - 1);
    if (axis < 0)
        axis += orank;
    carve_dim dims[CARVE_MAX_RANK];
    /* The concatenated (or new) axis depends on the sequence's length. */
    for (int d = 0, j = 0; d < orank; d++) {
        if (new_axis && d == axis) {
            dims[d] = (carve_dim){-1, NULL};
            continue;
        }
        dims[d] = d == axis ? (carve_dim){-1, NULL} : e.dims[j];
        j++;
    }
    return cv_infer_set(c, 0, e.dtype, orank, dims);
}

carve_status i_optionalhas(cv_ictx *c) { return cv_infer_set(c, 0, CARVE_BOOL, 0, NULL); }

carve_status i_optionalget(cv_ictx *c)
{
    const cv_type *t = cv_infer_in(c, 0);
    if (!t)
        return CARVE_OK;
    if (t->kind == CARVE_TYPE_TENSOR) /* opset 18: a plain tensor passes through */
        return cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
    elem_type e;
    if (!opaque_elem(c->m, t, 9, &e))
        return CARVE_OK; /* an optional sequence, or unknown */
    return cv_infer_set(c, 0, e.dtype, e.rank, e.rank >= 0 ? e.dims : NULL);
}

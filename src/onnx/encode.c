/* encode.c: carve IR -> ONNX bytes in one pass, back to front.
 *
 * protobuf-c packs a message by asking each nested message for its size
 * first, at every level: a Delegate body's nodes (model > graph > node >
 * attribute > graph > node ...) were sized five or six times over, and the
 * message tree itself had to be built first. Here the bytes are written from
 * the end of a buffer towards its start: a message's fields go out last to
 * first, so when a nested message is done its length is known and goes in
 * front of it. Nothing is sized twice and no message structs are built.
 *
 * The bytes are exactly those protobuf-c writes for the structs export.c
 * builds (tests/test_perf.c compares the two on every test model): fields
 * in field-number order, optional strings when set, unknown fields kept
 * verbatim after the known ones, in their order. Saving with external data
 * still goes through export.c (its offsets follow the forward order). */
#include "onnx_io.h"

#include <stdlib.h>
#include <string.h>

typedef struct wb {
    uint8_t *b;
    size_t cap, pos; /* the bytes written are b[pos .. cap) */
    bool failed;
    const carve_model *m;
    uint32_t *out_of; /* per value: 1 + the graph whose outputs were marked last */
    int depth;        /* the reader's nesting depth of the current graph's fields */
    int max_depth;    /* the deepest graph's */
    bool verbatim;    /* bytes kept from a read model were written: their nesting is theirs */
    size_t blob_min;  /* tensor data this big stays where it is: a part of its own */
    cv_pb_part *blobs; /* those, in the order met (back to front); `at`: the buffer bytes behind one */
    size_t n_blobs, cap_blobs;
    size_t ext; /* their bytes */
    /* the type field of the last value_info written, and its bytes: most
     * values have the type of the one before them */
    const cv_type *last_type;
    uint8_t type_bytes[96];
    size_t n_type_bytes;
} wb;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static size_t used(const wb *w) { return w->cap - w->pos + w->ext; }

static bool room(wb *w, size_t n)
{
    if (w->pos >= n)
        return true;
    if (w->failed)
        return false;
    size_t have = w->cap - w->pos, cap = w->cap * 2 + n + 4096;
    uint8_t *nb = cv_malloc(cap);
    if (!nb) {
        w->failed = true;
        return false;
    }
    if (have)
        memcpy(nb + cap - have, w->b + w->pos, have);
    cv_free(w->b);
    w->b = nb;
    w->cap = cap;
    w->pos = cap - have;
    return true;
}

static inline void put(wb *w, const void *p, size_t n)
{
    if (!n || (w->pos < n && !room(w, n)))
        return;
    w->pos -= n;
    memcpy(w->b + w->pos, p, n);
}

/* Written in place: most varints here are a byte or two. */
static inline void varint(wb *w, uint64_t v)
{
    if (v < 128 && w->pos) { /* tags and most lengths */
        w->b[--w->pos] = (uint8_t)v;
        return;
    }
    if (w->pos < 10 && !room(w, 10))
        return;
    size_t n = 1;
    for (uint64_t x = v >> 7; x; x >>= 7)
        n++;
    uint8_t *p = w->b + w->pos - n;
    w->pos -= n;
    for (size_t i = 0; i + 1 < n; i++, v >>= 7)
        p[i] = (uint8_t)(v | 0x80);
    p[n - 1] = (uint8_t)v;
}

static inline void tag(wb *w, uint32_t field, int wt) { varint(w, (uint64_t)field << 3 | (uint64_t)wt); }

/* A nested message started when used(w) was `start`. */
static inline void close_msg(wb *w, size_t start, uint32_t field)
{
    varint(w, used(w) - start);
    tag(w, field, WT_LEN);
}

static inline void field_bytes(wb *w, uint32_t field, const void *p, size_t n)
{
    put(w, p, n);
    varint(w, n);
    tag(w, field, WT_LEN);
}

/* Tensor data: in the buffer, or when big left where it is (a part of the
 * output of its own, written from the tensor's memory: no copy, no pages
 * touched for it). */
static void field_data(wb *w, uint32_t field, const void *p, size_t n)
{
    if (n < w->blob_min) {
        field_bytes(w, field, p, n);
        return;
    }
    if (w->n_blobs == w->cap_blobs) {
        size_t cap = w->cap_blobs ? 2 * w->cap_blobs : 64;
        cv_pb_part *nb = cv_realloc(w->blobs, cap * sizeof *nb);
        if (!nb) {
            w->failed = true;
            return;
        }
        w->blobs = nb;
        w->cap_blobs = cap;
    }
    w->blobs[w->n_blobs++] = (cv_pb_part){p, n, w->cap - w->pos};
    w->ext += n;
    varint(w, n);
    tag(w, field, WT_LEN);
}

/* An optional string: written when set, even empty. Names are short:
 * the tag and a one-byte length go in with the bytes, in one step. */
static inline __attribute__((always_inline)) void field_str(wb *w, uint32_t field, const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s);
    if (field < 16 && n < 128 && w->pos >= n + 2) {
        uint8_t *p = w->b + (w->pos -= n + 2);
        p[0] = (uint8_t)(field << 3 | WT_LEN);
        p[1] = (uint8_t)n;
        cv_copy_small(p + 2, s, n);
        return;
    }
    field_bytes(w, field, s, n);
}

static inline void field_varint(wb *w, uint32_t field, uint64_t v)
{
    varint(w, v);
    tag(w, field, WT_VARINT);
}

/* int32 and enum fields: a negative value is sign-extended to 10 bytes. */
static void field_int32(wb *w, uint32_t field, int32_t v) { field_varint(w, field, (uint64_t)(int64_t)v); }

static void field_float(wb *w, uint32_t field, float f)
{
    put(w, &f, 4); /* little-endian hosts only, as the rest of carve */
    tag(w, field, WT_I32);
}

/* Unknown fields (data holds the length prefix of length-delimited ones),
 * then the extras, last first. */
static void unknowns(wb *w, const cv_raw *r)
{
    if (r->n)
        w->verbatim = true;
    for (uint32_t i = r->n; i-- > 0;) {
        put(w, r->f[i].data, r->f[i].len);
        tag(w, r->f[i].tag, r->f[i].wire_type);
    }
}

static void tensor(wb *w, uint32_t field, const cv_tensor *t, const char *name)
{
    size_t start = used(w);
    unknowns(w, &t->raw);
    field_str(w, 12, t->doc);
    if (t->dtype != CARVE_STRING)
        field_data(w, 9, t->data, t->nbytes);
    field_str(w, 8, name ? name : t->name);
    if (t->dtype == CARVE_STRING)
        for (size_t i = t->nelem; i-- > 0;)
            field_bytes(w, 6, t->strs[i].p, t->strs[i].n);
    field_int32(w, 2, (int32_t)t->dtype);
    for (int i = t->rank; i-- > 0;)
        field_varint(w, 1, (uint64_t)t->dims[i]);
    close_msg(w, start, field);
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Whether two tensor types encode to the same bytes. */
static bool same_type(const cv_type *a, const cv_type *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank || !same_str(a->denotation, b->denotation))
        return false;
    if (a->dims == b->dims)
        return true;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i].value != b->dims[i].value || !same_str(a->dims[i].param, b->dims[i].param))
            return false;
    return true;
}

/* The TypeProto field (2) of a tensor value. */
static void tensor_type(wb *w, const cv_type *t)
{
    if (w->last_type && same_type(t, w->last_type)) {
        put(w, w->type_bytes, w->n_type_bytes);
        return;
    }
    size_t tp = used(w);
    field_str(w, 6, t->denotation);
    size_t tt = used(w);
    if (t->rank >= 0) {
        size_t sp = used(w);
        for (int i = t->rank; i-- > 0;) {
            size_t d = used(w);
            const carve_dim *dim = &t->dims[i];
            if (dim->param)
                field_str(w, 2, dim->param);
            else if (dim->value >= 0)
                field_varint(w, 1, (uint64_t)dim->value);
            close_msg(w, d, 1);
        }
        close_msg(w, sp, 2);
    }
    if (t->dtype != CARVE_UNDEFINED)
        field_int32(w, 1, (int32_t)t->dtype);
    close_msg(w, tt, 1);
    close_msg(w, tp, 2);
    size_t n = used(w) - tp;
    w->last_type = NULL;
    if (!w->failed && n <= sizeof w->type_bytes) {
        memcpy(w->type_bytes, w->b + w->pos, n);
        w->n_type_bytes = n;
        w->last_type = t;
    }
}

static void value_info(wb *w, uint32_t field, carve_value_id v)
{
    const cv_value *x = &w->m->values[v];
    /* most: a name and the type of the value before, in one step */
    if (x->type.kind == CARVE_TYPE_TENSOR && !x->raw.n && !x->doc && w->last_type &&
        same_type(&x->type, w->last_type)) {
        size_t n = strlen(x->name), t = w->n_type_bytes, body = 2 + n + t;
        if (field < 16 && body < 128 && w->pos >= body + 2) {
            uint8_t *p = w->b + (w->pos -= body + 2);
            p[0] = (uint8_t)(field << 3 | WT_LEN);
            p[1] = (uint8_t)body;
            p[2] = 1 << 3 | WT_LEN; /* name */
            p[3] = (uint8_t)n;
            cv_copy_small(p + 4, x->name, n);
            cv_copy_small(p + 4 + n, w->type_bytes, t);
            return;
        }
    }
    size_t start = used(w);
    if (x->type.kind == CARVE_TYPE_OTHER) { /* goes back verbatim, after the unknown fields */
        field_bytes(w, 2, x->type.opaque.p, x->type.opaque.n);
        w->verbatim = true;
    }
    unknowns(w, &x->raw);
    field_str(w, 3, x->doc);
    if (x->type.kind == CARVE_TYPE_TENSOR)
        tensor_type(w, &x->type);
    field_str(w, 1, x->name);
    close_msg(w, start, field);
}

static void graph(wb *w, uint32_t field, carve_graph_id g);

static void attribute(wb *w, const cv_attr *a)
{
    size_t start = used(w);
    uint32_t n_extra = 0, extra_tag = 0;
    switch (a->kind) {
    case CARVE_ATTR_SPARSE_TENSOR: extra_tag = 22, n_extra = a->n; break;
    case CARVE_ATTR_SPARSE_TENSORS: extra_tag = 23, n_extra = a->n; break;
    case CARVE_ATTR_TYPE_PROTO: extra_tag = 14, n_extra = a->n; break;
    case CARVE_ATTR_TYPE_PROTOS: extra_tag = 15, n_extra = a->n; break;
    default: break;
    }
    for (uint32_t i = n_extra; i-- > 0;)
        field_bytes(w, extra_tag, a->u.opaque[i].p, a->u.opaque[i].n);
    if (n_extra)
        w->verbatim = true;
    w->depth += 3; /* a subgraph's fields: graph > node > attribute > graph */
    unknowns(w, &a->raw);
    field_str(w, 21, a->ref_attr_name);
    if (a->kind != CARVE_ATTR_UNDEFINED)
        field_int32(w, 20, (int32_t)a->kind);
    field_str(w, 13, a->doc);
    switch (a->kind) {
    case CARVE_ATTR_GRAPHS:
        for (uint32_t i = a->n; i-- > 0;)
            graph(w, 11, a->u.graphs[i]);
        break;
    case CARVE_ATTR_TENSORS:
        for (uint32_t i = a->n; i-- > 0;)
            tensor(w, 10, a->u.tensors[i], NULL);
        break;
    case CARVE_ATTR_STRINGS:
        for (uint32_t i = a->n; i-- > 0;)
            field_bytes(w, 9, a->u.strings[i].p, a->u.strings[i].n);
        break;
    case CARVE_ATTR_INTS:
        for (uint32_t i = a->n; i-- > 0;)
            field_varint(w, 8, (uint64_t)a->u.ints[i]);
        break;
    case CARVE_ATTR_FLOATS:
        for (uint32_t i = a->n; i-- > 0;)
            field_float(w, 7, a->u.floats[i]);
        break;
    case CARVE_ATTR_GRAPH: graph(w, 6, a->u.g); break;
    case CARVE_ATTR_TENSOR: tensor(w, 5, a->u.t, NULL); break;
    case CARVE_ATTR_STRING: field_bytes(w, 4, a->u.s.p, a->u.s.n); break;
    case CARVE_ATTR_INT: field_varint(w, 3, (uint64_t)a->u.i); break;
    case CARVE_ATTR_FLOAT: field_float(w, 2, a->u.f); break;
    default: break;
    }
    w->depth -= 3;
    field_str(w, 1, a->name);
    close_msg(w, start, 5);
}

static void node(wb *w, carve_node_id id)
{
    const carve_model *m = w->m;
    const cv_node *n = &m->nodes[id];
    size_t start = used(w);
    unknowns(w, &n->raw);
    if (*n->domain)
        field_str(w, 7, n->domain);
    field_str(w, 6, n->doc);
    for (uint32_t i = n->n_attr; i-- > 0;)
        attribute(w, &n->attr[i]);
    field_str(w, 4, n->op);
    field_str(w, 3, n->name);
    for (uint32_t i = n->n_out; i-- > 0;)
        field_str(w, 2, n->out[i] == CARVE_NONE ? "" : m->values[n->out[i]].name);
    for (uint32_t i = n->n_in; i-- > 0;)
        field_str(w, 1, n->in[i] == CARVE_NONE ? "" : m->values[n->in[i]].name);
    close_msg(w, start, 1);
}

static void graph(wb *w, uint32_t field, carve_graph_id g)
{
    const carve_model *m = w->m;
    const cv_graph *gr = &m->graphs[g];
    size_t start = used(w);
    if (w->depth > w->max_depth)
        w->max_depth = w->depth;
    unknowns(w, &gr->raw);
    /* value_info: every node output with something to say, in node order,
     * except the graph's outputs (marked first: one look-up per value) */
    for (uint32_t i = 0; i < gr->outputs.n; i++)
        w->out_of[gr->outputs.v[i]] = g + 1;
    for (uint32_t i = gr->nodes.n; i-- > 0;) {
        const cv_node *n = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = n->n_out; j-- > 0;) {
            carve_value_id v = n->out[j];
            if (v == CARVE_NONE || w->out_of[v] == g + 1)
                continue;
            const cv_value *x = &m->values[v];
            if (x->type.kind == CARVE_TYPE_UNKNOWN && !x->raw.n && !x->doc)
                continue;
            value_info(w, 13, v);
        }
    }
    for (uint32_t i = gr->outputs.n; i-- > 0;)
        value_info(w, 12, gr->outputs.v[i]);
    for (uint32_t i = gr->inputs.n; i-- > 0;)
        value_info(w, 11, gr->inputs.v[i]);
    field_str(w, 10, gr->doc);
    for (uint32_t i = gr->inits.n; i-- > 0;)
        tensor(w, 5, m->values[gr->inits.v[i]].init, m->values[gr->inits.v[i]].name);
    field_str(w, 2, gr->name);
    for (uint32_t i = gr->nodes.n; i-- > 0;)
        node(w, gr->nodes.v[i]);
    close_msg(w, start, field);
}

static void model(wb *w)
{
    const carve_model *m = w->m;
    unknowns(w, &m->raw);
    for (uint32_t i = m->n_meta; i-- > 0;) {
        size_t s = used(w);
        field_str(w, 2, m->meta[i].value);
        field_str(w, 1, m->meta[i].key);
        close_msg(w, s, 14);
    }
    for (uint32_t i = m->n_opsets; i-- > 0;) {
        size_t s = used(w);
        field_varint(w, 2, (uint64_t)m->opset_version[i]);
        field_str(w, 1, m->opset_domain[i]);
        close_msg(w, s, 8);
    }
    w->depth = 1;
    graph(w, 7, 0);
    field_str(w, 6, m->doc);
    if (m->has_model_version)
        field_varint(w, 5, (uint64_t)m->model_version);
    field_str(w, 4, m->domain);
    field_str(w, 3, m->producer_version);
    field_str(w, 2, m->producer_name);
    field_varint(w, 1, (uint64_t)m->ir_version);
}

carve_status cv_encode_parts(const carve_model *m, size_t blob_min, cv_pb_out *out, bool *walk)
{
    memset(out, 0, sizeof *out);
    /* room for the tensors kept in the buffer and about 64 bytes a node and
     * a value at once: growing copies what is written so far */
    size_t guess = 4096 + 64 * ((size_t)m->n_nodes + m->n_values);
    for (uint32_t v = 0; v < m->n_values; v++)
        if (m->values[v].init)
            guess += (m->values[v].init->nbytes < blob_min ? m->values[v].init->nbytes : 0) + 32;
    wb w = {.m = m, .blob_min = blob_min};
    w.b = cv_malloc(guess);
    w.out_of = cv_malloc(((size_t)m->n_values + 1) * sizeof *w.out_of);
    if (!w.b || !w.out_of) {
        cv_free(w.b);
        cv_free(w.out_of);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory while saving");
    }
    memset(w.out_of, 0, ((size_t)m->n_values + 1) * sizeof *w.out_of);
    w.cap = w.pos = guess;
    model(&w);
    cv_free(w.out_of);
    /* the parts front to back: the buffer cut where each blob goes (blobs
     * met later lie nearer the front) */
    cv_pb_part *parts = w.failed ? NULL : cv_malloc((2 * w.n_blobs + 1) * sizeof *parts);
    if (!parts) {
        cv_free(w.b);
        cv_free(w.blobs);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory while saving");
    }
    size_t n = used(&w), np = 0, from = w.pos;
    for (size_t k = w.n_blobs; k-- > 0;) {
        size_t to = w.cap - w.blobs[k].at;
        if (to > from)
            parts[np++] = (cv_pb_part){w.b + from, to - from, 0};
        parts[np++] = (cv_pb_part){w.blobs[k].p, w.blobs[k].n, 0};
        from = to;
    }
    if (w.cap > from)
        parts[np++] = (cv_pb_part){w.b + from, w.cap - from, 0};
    cv_free(w.blobs);
    *out = (cv_pb_out){w.b, parts, np, n};
    if (n > (size_t)INT32_MAX) {
        cv_pb_out_free(out);
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                        "the model is %zu bytes, above protobuf's 2 GiB limit: save it with external data", n);
    }
    /* The deepest message carve writes is a dimension of a value's type, 5
     * levels under its graph's fields; verbatim bytes may nest deeper. */
    if (walk)
        *walk = w.verbatim || w.max_depth + 5 > CV_WIRE_MAX_DEPTH;
    return CARVE_OK;
}

void cv_pb_out_free(cv_pb_out *e)
{
    cv_free(e->buf);
    cv_free(e->parts);
    memset(e, 0, sizeof *e);
}

carve_status cv_encode_model(const carve_model *m, void **buf, size_t *start, size_t *size, bool *walk)
{
    cv_pb_out e;
    carve_status s = cv_encode_parts(m, SIZE_MAX, &e, walk);
    if (s)
        return s;
    /* no blobs: one part, the buffer's written end */
    *buf = e.buf;
    *start = e.n_parts ? (size_t)((const uint8_t *)e.parts[0].p - e.buf) : 0;
    *size = e.size;
    cv_free(e.parts);
    return CARVE_OK;
}

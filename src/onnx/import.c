/* import.c: ONNX bytes -> carve IR.
 *
 * Order of work: decode (decode.c; what it declines is unpacked by
 * protobuf-c after a wire walk that can say where bytes are broken), copy
 * model fields, import the main graph (values first,
 * then subgraphs, then input references, so a subgraph can read an outer
 * value defined by a node later in the file), name nodes, sort every graph
 * topologically, verify. */
#define _DEFAULT_SOURCE
#include "onnx_io.h"

#include "../io/files.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A tensor may hold at most this many elements (2^40): more is not a model
 * carve can do anything with, and refusing early bounds every allocation. */
#define MAX_ELEMS ((size_t)1 << 40)

typedef struct imp {
    carve_model *m;
    const char *base_dir; /* NULL: external data refused */
    cv_pb_bump *bump;     /* where the message was decoded, or NULL */
    cv_tensor **pinned;   /* tensors whose data still points into bump (settle_pinned) */
    size_t n_pinned, cap_pinned;
    bool kept; /* the message's strings live as long as the model (decoded into blocks it keeps) */
} imp;

#define M (im->m)
#define CTX (im->m->ctx)

static const char *str(imp *im, const char *s)
{
    return im->kept ? (s ? s : "") : cv_arena_strdup(&M->arena, s ? s : "");
}
static const char *opt_str(imp *im, const char *s)
{
    return !s || !*s ? NULL : im->kept ? s : cv_arena_strdup(&M->arena, s);
}

/* Blocks for the decoder's strings, kept by the model (freed with it): the
 * IR points at the decoded names instead of copies of them. */
typedef struct keeper {
    carve_model *m;
    bool failed;
} keeper;

static void *keep_alloc(void *u, size_t n)
{
    keeper *k = u;
    void *p = cv_malloc(n);
    if (p && !cv_model_keep(k->m, cv_free, p)) {
        cv_free(p);
        p = NULL;
    }
    k->failed |= !p;
    return p;
}

static void keep_free(void *u, void *p) { (void)u, (void)p; }

static carve_status nomem(imp *im) { return cv_error(CTX, CARVE_ERR_NOMEM, "out of memory while loading"); }

/* ---------------------------------------------------------------- raw fields */

/* Room for one more field: the list doubles (in the arena, which never
 * frees), so n fields cost O(n) memory, not a copy of the list per field
 * (a 31 KB model of 11,000 unknown fields took 1.9 GB that way). */
static bool raw_room(imp *im, cv_raw *r)
{
    if (r->n < r->cap)
        return true;
    if (r->n >= UINT32_MAX / 2)
        return false;
    uint32_t cap = r->cap ? r->cap * 2 : 4;
    cv_rawfield *f = cv_arena_alloc(&M->arena, (size_t)cap * sizeof *f);
    if (!f)
        return false;
    if (r->n)
        memcpy(f, r->f, r->n * sizeof *f);
    r->f = f;
    r->cap = cap;
    return true;
}

static bool raw_add(imp *im, cv_raw *r, uint32_t tag, uint8_t wt, const uint8_t *data, size_t len)
{
    if (!raw_room(im, r))
        return false;
    r->f[r->n++] = (cv_rawfield){tag, wt, len, cv_arena_memdup(&M->arena, data, len)};
    return !M->arena.failed;
}

static bool raw_unknown(imp *im, cv_raw *r, const ProtobufCMessage *msg)
{
    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
        if (!raw_add(im, r, u->tag, (uint8_t)u->wire_type, u->data, u->len))
            return false;
    }
    return true;
}

/* Adds the unknown fields of one more description of a value (input,
 * output, value_info), leaving out those it already has from another one.
 * Export writes a value's fields in each place that describes it, so a value
 * described twice (an output listed twice) must not collect them twice, or
 * a re-import would not give the same IR. */
static bool raw_merge(imp *im, cv_raw *r, const ProtobufCMessage *msg)
{
    uint32_t before = r->n;
    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
        bool seen = false;
        for (uint32_t j = 0; j < before && !seen; j++)
            seen = r->f[j].tag == u->tag && r->f[j].wire_type == u->wire_type && r->f[j].len == u->len &&
                   !memcmp(r->f[j].data, u->data, u->len);
        if (!seen && !raw_add(im, r, u->tag, (uint8_t)u->wire_type, u->data, u->len))
            return false;
    }
    return true;
}

/* A known submessage that carve keeps opaque: serialized and stored as a raw
 * length-delimited field, written back verbatim. */
static bool raw_message(imp *im, cv_raw *r, uint32_t tag, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = cv_arena_alloc(&M->arena, n + 10);
    if (!buf)
        return false;
    size_t k = cv_varint_put(buf, n);
    protobuf_c_message_pack(msg, buf + k);
    if (!raw_room(im, r))
        return false;
    r->f[r->n++] = (cv_rawfield){tag, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, n + k, buf};
    return true;
}

static bool opaque_bytes(imp *im, cv_bytes *out, const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = cv_arena_alloc(&M->arena, n);
    if (!buf)
        return false;
    protobuf_c_message_pack(msg, buf);
    *out = (cv_bytes){buf, n};
    return true;
}

/* ---------------------------------------------------------------- tensors */

/* Copies `count` integers of `src` (int32 per element) into `dst` as
 * elements of `width` bytes, keeping the low bits. */
static void narrow_int32(uint8_t *dst, const int32_t *src, size_t count, int width)
{
    for (size_t i = 0; i < count; i++) {
        uint32_t v = (uint32_t)src[i];
        if (width == 1)
            dst[i] = (uint8_t)v;
        else {
            dst[2 * i] = (uint8_t)v;
            dst[2 * i + 1] = (uint8_t)(v >> 8);
        }
    }
}

static carve_status tensor_data(imp *im, const Onnx__TensorProto *tp, cv_tensor *t, const char *what)
{
    size_t want = t->dtype == CARVE_STRING ? 0 : cv_dtype_nbytes(t->dtype, t->nelem);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        const char *loc = NULL;
        uint64_t off = 0, len = 0;
        bool has_len = false;
        for (size_t i = 0; i < tp->n_external_data; i++) {
            const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
            if (!k || !v)
                continue;
            char *endp;
            if (!strcmp(k, "location"))
                loc = v;
            else if (!strcmp(k, "offset") || !strcmp(k, "length")) {
                errno = 0;
                unsigned long long x = strtoull(v, &endp, 10);
                if (errno || *endp || !*v || v[0] == '-')
                    return cv_error(CTX, CARVE_ERR_INVALID, "%s: external data %s '%s' is not a number", what, k, v);
                if (!strcmp(k, "offset"))
                    off = x;
                else {
                    len = x;
                    has_len = true;
                }
            }
        }
        if (t->dtype == CARVE_STRING)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s: string tensors cannot use external data", what);
        t->nbytes = want;
        return cv_extdata_map(M, im->base_dir, loc, off, len, has_len, want, what, &t->data);
    }
    if (t->dtype == CARVE_STRING) {
        if (tp->n_string_data != t->nelem)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s: %zu strings for %zu elements", what,
                            tp->n_string_data, t->nelem);
        t->strs = cv_arena_alloc(&M->arena, (t->nelem ? t->nelem : 1) * sizeof *t->strs);
        if (!t->strs)
            return nomem(im);
        for (size_t i = 0; i < t->nelem; i++) {
            t->strs[i].n = tp->string_data[i].len;
            t->strs[i].p = cv_arena_memdup(&M->arena, tp->string_data[i].data, tp->string_data[i].len);
        }
        return M->arena.failed ? nomem(im) : CARVE_OK;
    }
    t->nbytes = want;
    if (tp->has_raw_data) {
        if (tp->raw_data.len != want)
            return cv_error(CTX, CARVE_ERR_INVALID,
                            "%s: raw_data has %zu bytes but %s%s needs %zu", what, tp->raw_data.len,
                            carve_dtype_name(t->dtype), t->rank ? " of its shape" : "", want);
        /* A big block of its own stays where decoding put it: the model
         * takes the block over instead of copying it. */
        void *blk = im->bump && want >= ((size_t)2 << 20) ? cv_pb_bump_detach(im->bump, tp->raw_data.data) : NULL;
        if (blk) {
            void **owned = cv_realloc(M->owned, (M->n_owned + 1) * sizeof *owned);
            if (!owned) {
                cv_free(blk);
                return nomem(im);
            }
            M->owned = owned;
            M->owned[M->n_owned++] = blk;
            t->data = tp->raw_data.data;
            return CARVE_OK;
        }
        /* Data of 4 KiB and more stays where decoding put it for now: its
         * chunk is kept whole when tensors fill enough of it
         * (settle_pinned), saving a copy and the pages it would touch. */
        if (im->bump && want >= 4096 && cv_pb_bump_pin(im->bump, tp->raw_data.data, want)) {
            if (im->n_pinned == im->cap_pinned) {
                size_t cap = im->cap_pinned ? 2 * im->cap_pinned : 64;
                cv_tensor **np = cv_realloc(im->pinned, cap * sizeof *np);
                if (!np)
                    return nomem(im);
                im->pinned = np;
                im->cap_pinned = cap;
            }
            im->pinned[im->n_pinned++] = t;
            t->data = tp->raw_data.data;
            return CARVE_OK;
        }
        t->data = cv_arena_memdup(&M->arena, tp->raw_data.data, want);
        return M->arena.failed ? nomem(im) : CARVE_OK;
    }
    /* Typed fields: which one holds the data depends on the dtype. */
    const void *src = NULL;
    size_t have = 0, need = t->nelem;
    const char *field = "";
    int bits = carve_dtype_bits(t->dtype);
    switch (t->dtype) {
    case CARVE_FLOAT:
    case CARVE_COMPLEX64:
        src = tp->float_data, have = tp->n_float_data, field = "float_data";
        need = t->dtype == CARVE_COMPLEX64 ? 2 * t->nelem : t->nelem;
        break;
    case CARVE_DOUBLE:
    case CARVE_COMPLEX128:
        src = tp->double_data, have = tp->n_double_data, field = "double_data";
        need = t->dtype == CARVE_COMPLEX128 ? 2 * t->nelem : t->nelem;
        break;
    case CARVE_INT64: src = tp->int64_data, have = tp->n_int64_data, field = "int64_data"; break;
    case CARVE_UINT32:
    case CARVE_UINT64: src = tp->uint64_data, have = tp->n_uint64_data, field = "uint64_data"; break;
    default:
        src = tp->int32_data, have = tp->n_int32_data, field = "int32_data";
        if (bits == 4)
            need = want; /* one packed byte per int32 */
        break;
    }
    if (have != need)
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: %zu values in %s but %s of its shape needs %zu", what,
                        have, field, carve_dtype_name(t->dtype), need);
    uint8_t *dst = cv_arena_alloc(&M->arena, want);
    if (!dst)
        return nomem(im);
    if (t->dtype == CARVE_UINT32) {
        for (size_t i = 0; i < have; i++) {
            uint32_t v = (uint32_t)((const uint64_t *)src)[i];
            memcpy(dst + 4 * i, &v, 4);
        }
    } else if (src == tp->int32_data && t->dtype != CARVE_INT32) {
        narrow_int32(dst, src, have, bits == 16 ? 2 : 1);
    } else if (want) {
        memcpy(dst, src, want);
    }
    t->data = dst;
    return CARVE_OK;
}

static carve_status tensor_from_proto(imp *im, const Onnx__TensorProto *tp, const char *what, cv_tensor **out)
{
    if (tp->segment)
        return cv_error(CTX, CARVE_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
    if (!tp->has_data_type || !cv_dtype_valid(tp->data_type))
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: data type %d is not a valid ONNX type", what,
                        tp->has_data_type ? tp->data_type : 0);
    if (tp->n_dims > CARVE_MAX_RANK)
        return cv_error(CTX, CARVE_ERR_UNSUPPORTED, "%s: rank %zu is above carve's limit of %d", what,
                        tp->n_dims, CARVE_MAX_RANK);
    for (size_t i = 0; i < tp->n_dims; i++)
        if (tp->dims[i] < 0)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s: dim %zu is %lld", what, i, (long long)tp->dims[i]);
    cv_tensor *t = cv_arena_alloc(&M->arena, sizeof *t);
    if (!t)
        return nomem(im);
    t->dtype = (carve_dtype)tp->data_type;
    t->rank = (int)tp->n_dims;
    t->dims = cv_arena_memdup(&M->arena, tp->dims, tp->n_dims * sizeof *tp->dims);
    if (!cv_shape_nelem(t->rank, tp->dims, MAX_ELEMS, &t->nelem))
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: shape has more than 2^40 elements", what);
    t->name = opt_str(im, tp->name);
    t->doc = opt_str(im, tp->doc_string);
    if (!raw_unknown(im, &t->raw, &tp->base) || M->arena.failed)
        return nomem(im);
    carve_status s = tensor_data(im, tp, t, what);
    if (s)
        return s;
    *out = t;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- types */

static carve_status type_from_proto(imp *im, const Onnx__TypeProto *tp, cv_type *t, const char *what)
{
    memset(t, 0, sizeof *t);
    t->rank = -1;
    if (!tp)
        return CARVE_OK;
    t->denotation = opt_str(im, tp->denotation);
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
        tp->base.n_unknown_fields) {
        if (tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET && !tp->base.n_unknown_fields)
            return CARVE_OK;
        t->kind = CARVE_TYPE_OTHER;
        return opaque_bytes(im, &t->opaque, &tp->base) ? CARVE_OK : nomem(im);
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    t->kind = CARVE_TYPE_TENSOR;
    if (tt->has_elem_type && tt->elem_type != 0 && !cv_dtype_valid(tt->elem_type))
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: element type %d is not a valid ONNX type", what,
                        tt->elem_type);
    t->dtype = tt->has_elem_type ? (carve_dtype)tt->elem_type : CARVE_UNDEFINED;
    if (!tt->shape)
        return CARVE_OK;
    if (tt->shape->n_dim > CARVE_MAX_RANK)
        return cv_error(CTX, CARVE_ERR_UNSUPPORTED, "%s: rank %zu is above carve's limit of %d", what,
                        tt->shape->n_dim, CARVE_MAX_RANK);
    t->rank = (int)tt->shape->n_dim;
    t->dims = cv_arena_alloc(&M->arena, (tt->shape->n_dim + 1) * sizeof *t->dims);
    if (!t->dims)
        return nomem(im);
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        t->dims[i] = (carve_dim){-1, NULL};
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0)
                return cv_error(CTX, CARVE_ERR_INVALID, "%s: dim %zu is %lld", what, i, (long long)d->dim_value);
            t->dims[i].value = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                   *d->dim_param) {
            t->dims[i].param = str(im, d->dim_param);
        }
    }
    return M->arena.failed ? nomem(im) : CARVE_OK;
}

static bool type_known(const cv_type *t) { return t->kind != CARVE_TYPE_UNKNOWN; }

/* Concatenates the strings up to NULL into buf (truncated to n - 1 bytes):
 * the labels errors would name are made for every value and node, so they
 * are copied, not formatted. */
static const char *cat(char *buf, size_t n, ...)
{
    va_list ap;
    va_start(ap, n);
    size_t k = 0;
    for (const char *p; (p = va_arg(ap, const char *)) != NULL;) {
        size_t l = strlen(p);
        if (l > n - 1 - k)
            l = n - 1 - k;
        memcpy(buf + k, p, l);
        k += l;
    }
    va_end(ap);
    buf[k] = 0;
    return buf;
}

/* Applies a ValueInfoProto to value v. A second description must not
 * contradict the first in element type. */
static carve_status apply_value_info(imp *im, carve_value_id v, const Onnx__ValueInfoProto *vi,
                                     const char *what)
{
    cv_type t;
    char where[300];
    cat(where, sizeof where, what, " '", vi->name ? vi->name : "(null)", "'", (const char *)NULL);
    carve_status s = type_from_proto(im, vi->type, &t, where);
    if (s)
        return s;
    cv_value *x = &M->values[v];
    if (type_known(&t)) {
        if (type_known(&x->type) && x->type.kind == CARVE_TYPE_TENSOR && t.kind == CARVE_TYPE_TENSOR &&
            x->type.dtype && t.dtype && x->type.dtype != t.dtype)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s: declared %s here but %s elsewhere", where,
                            carve_dtype_name(t.dtype), carve_dtype_name(x->type.dtype));
        x->type = t;
    }
    if (vi->doc_string && *vi->doc_string)
        x->doc = str(im, vi->doc_string);
    if (!raw_merge(im, &x->raw, &vi->base))
        return nomem(im);
    return CARVE_OK;
}

/* ---------------------------------------------------------------- graphs */

static carve_status import_graph(imp *im, const Onnx__GraphProto *gp, carve_graph_id g, int depth);

/* How errors name node idx, into buf. */
static const char *node_label(const Onnx__NodeProto *np, size_t idx, char *buf, size_t n)
{
    if (np->name && *np->name)
        return cat(buf, n, "node '", np->name, "' (", np->op_type, ")", (const char *)NULL);
    for (size_t i = 0; i < np->n_output; i++)
        if (*np->output[i])
            return cat(buf, n, "node ", np->op_type, "_", np->output[i], " (", np->op_type, ")", (const char *)NULL);
    snprintf(buf, n, "node #%zu (%s)", idx, np->op_type);
    return buf;
}

/* np, idx: the node, named in errors only (the label is made then). */
static carve_status import_attr(imp *im, carve_node_id n, const Onnx__AttributeProto *ap,
                                const Onnx__NodeProto *np, size_t idx, int depth)
{
    char lbuf[1024];
#define label node_label(np, idx, lbuf, sizeof lbuf)
    if (!ap->name || !*ap->name)
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: an attribute has no name", label);
    carve_attr_kind k = ap->has_type ? (carve_attr_kind)ap->type : CARVE_ATTR_UNDEFINED;
    if (k == CARVE_ATTR_UNDEFINED) {
        /* IR < 3 models omit the type: infer it from the field that is set. */
        k = ap->has_f ? CARVE_ATTR_FLOAT : ap->has_i ? CARVE_ATTR_INT : ap->has_s ? CARVE_ATTR_STRING
          : ap->t ? CARVE_ATTR_TENSOR : ap->g ? CARVE_ATTR_GRAPH : ap->n_floats ? CARVE_ATTR_FLOATS
          : ap->n_ints ? CARVE_ATTR_INTS : ap->n_strings ? CARVE_ATTR_STRINGS : ap->n_tensors ? CARVE_ATTR_TENSORS
          : ap->n_graphs ? CARVE_ATTR_GRAPHS : CARVE_ATTR_UNDEFINED;
    }
    if ((int)k < 0 || k > CARVE_ATTR_TYPE_PROTOS)
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: attribute '%s' has unknown type %d", label, ap->name, (int)k);
    for (uint32_t i = 0; i < M->nodes[n].n_attr; i++)
        if (!strcmp(M->nodes[n].attr[i].name, ap->name))
            return cv_error(CTX, CARVE_ERR_INVALID, "%s: attribute '%s' is given twice", label, ap->name);
    cv_attr *a = cv_node_attr_add(M, n, ap->name, k);
    if (!a)
        return nomem(im);
    a->doc = opt_str(im, ap->doc_string);
    a->ref_attr_name = opt_str(im, ap->ref_attr_name);
    if (!raw_unknown(im, &a->raw, &ap->base))
        return nomem(im);
    char what[400];
    if (k == CARVE_ATTR_TENSOR || k == CARVE_ATTR_TENSORS || k == CARVE_ATTR_GRAPH)
        cat(what, sizeof what, label, ": attribute '", ap->name, "'", (const char *)NULL);
    carve_status s = CARVE_OK;
    switch (k) {
    case CARVE_ATTR_FLOAT: a->u.f = ap->f; break;
    case CARVE_ATTR_INT: a->u.i = ap->i; break;
    case CARVE_ATTR_STRING:
        a->u.s.n = ap->s.len;
        a->u.s.p = cv_arena_memdup(&M->arena, ap->s.data, ap->s.len);
        break;
    case CARVE_ATTR_TENSOR:
        if (!ap->t)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s has type TENSOR but no tensor", what);
        s = tensor_from_proto(im, ap->t, what, &a->u.t);
        break;
    case CARVE_ATTR_GRAPH: {
        if (!ap->g)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s has type GRAPH but no graph", what);
        carve_graph_id sub = cv_graph_new(M, M->nodes[n].graph, ap->g->name);
        if (sub == CARVE_NONE)
            return carve_errcode(CTX);
        M->graphs[sub].owner = n;
        a = (cv_attr *)cv_node_attr_find(M, n, ap->name);
        a->u.g = sub;
        s = import_graph(im, ap->g, sub, depth + 1);
        break;
    }
    case CARVE_ATTR_FLOATS:
        a->n = (uint32_t)ap->n_floats;
        a->u.floats = cv_arena_memdup(&M->arena, ap->floats, ap->n_floats * sizeof *ap->floats);
        break;
    case CARVE_ATTR_INTS:
        a->n = (uint32_t)ap->n_ints;
        a->u.ints = cv_arena_memdup(&M->arena, ap->ints, ap->n_ints * sizeof *ap->ints);
        break;
    case CARVE_ATTR_STRINGS:
        a->n = (uint32_t)ap->n_strings;
        a->u.strings = cv_arena_alloc(&M->arena, (ap->n_strings + 1) * sizeof *a->u.strings);
        for (size_t i = 0; a->u.strings && i < ap->n_strings; i++)
            a->u.strings[i] = (cv_bytes){cv_arena_memdup(&M->arena, ap->strings[i].data, ap->strings[i].len),
                                         ap->strings[i].len};
        break;
    case CARVE_ATTR_TENSORS:
        a->n = (uint32_t)ap->n_tensors;
        a->u.tensors = cv_arena_alloc(&M->arena, (ap->n_tensors + 1) * sizeof *a->u.tensors);
        for (size_t i = 0; a->u.tensors && i < ap->n_tensors && !s; i++)
            s = tensor_from_proto(im, ap->tensors[i], what, &a->u.tensors[i]);
        break;
    case CARVE_ATTR_GRAPHS: {
        uint32_t cnt = (uint32_t)ap->n_graphs;
        carve_graph_id *gs = cv_arena_alloc(&M->arena, (cnt + 1) * sizeof *gs);
        if (!gs)
            return nomem(im);
        a->n = cnt;
        a->u.graphs = gs;
        for (uint32_t i = 0; i < cnt && !s; i++) {
            gs[i] = cv_graph_new(M, M->nodes[n].graph, ap->graphs[i]->name);
            if (gs[i] == CARVE_NONE)
                return carve_errcode(CTX);
            M->graphs[gs[i]].owner = n;
            s = import_graph(im, ap->graphs[i], gs[i], depth + 1);
        }
        break;
    }
    case CARVE_ATTR_SPARSE_TENSOR:
    case CARVE_ATTR_TYPE_PROTO:
    case CARVE_ATTR_SPARSE_TENSORS:
    case CARVE_ATTR_TYPE_PROTOS: {
        const ProtobufCMessage *const *msgs;
        const ProtobufCMessage *one = k == CARVE_ATTR_SPARSE_TENSOR ? (const ProtobufCMessage *)ap->sparse_tensor
                                                                   : (const ProtobufCMessage *)ap->tp;
        size_t cnt;
        if (k == CARVE_ATTR_SPARSE_TENSORS)
            msgs = (const ProtobufCMessage *const *)ap->sparse_tensors, cnt = ap->n_sparse_tensors;
        else if (k == CARVE_ATTR_TYPE_PROTOS)
            msgs = (const ProtobufCMessage *const *)ap->type_protos, cnt = ap->n_type_protos;
        else
            msgs = &one, cnt = one ? 1 : 0;
        a->n = (uint32_t)cnt;
        a->u.opaque = cv_arena_alloc(&M->arena, (cnt + 1) * sizeof *a->u.opaque);
        for (size_t i = 0; a->u.opaque && i < cnt; i++)
            if (!opaque_bytes(im, &a->u.opaque[i], msgs[i]))
                return nomem(im);
        break;
    }
    case CARVE_ATTR_UNDEFINED: break;
    }
    if (s)
        return s;
    return M->arena.failed ? nomem(im) : CARVE_OK;
#undef label
}

/* Defines value `name` in graph g; errors name `what`, or node np (idx) when
 * what is NULL (its label is made only then). */
static carve_status define(imp *im, carve_graph_id g, const char *name, const char *what, const Onnx__NodeProto *np,
                           size_t idx, carve_value_id *out)
{
    char lbuf[1024];
    if (!name || !*name)
        return cv_error(CTX, CARVE_ERR_INVALID, "%s has an empty name",
                        what ? what : node_label(np, idx, lbuf, sizeof lbuf));
    carve_value_id old = CARVE_NONE;
    *out = cv_value_define(M, g, str(im, name), &old);
    if (old != CARVE_NONE) {
        const cv_value *o = &M->values[old];
        const char *first = o->init ? "an initializer" : o->is_input ? "a graph input" : "another node";
        return cv_error(CTX, CARVE_ERR_INVALID, "%s: value '%s' is already defined by %s",
                        what ? what : node_label(np, idx, lbuf, sizeof lbuf), name, first);
    }
    return *out == CARVE_NONE ? carve_errcode(CTX) : CARVE_OK;
}

static carve_status import_graph(imp *im, const Onnx__GraphProto *gp, carve_graph_id g, int depth)
{
    /* never the binding limit: CV_WIRE_MAX_DEPTH messages hold at most 66
     * graph levels; this guards models built in memory */
    if (depth > 100)
        return cv_error(CTX, CARVE_ERR_UNSUPPORTED, "subgraphs are nested more than 100 deep");
    cv_graph *gr = &M->graphs[g];
    gr->name = str(im, gp->name);
    gr->doc = opt_str(im, gp->doc_string);
    if (!raw_unknown(im, &gr->raw, &gp->base))
        return nomem(im);
    for (size_t i = 0; i < gp->n_quantization_annotation; i++)
        if (!raw_message(im, &M->graphs[g].raw, 14, &gp->quantization_annotation[i]->base))
            return nomem(im);
    for (size_t i = 0; i < gp->n_sparse_initializer; i++)
        if (!raw_message(im, &M->graphs[g].raw, 15, &gp->sparse_initializer[i]->base))
            return nomem(im);
    const char *gname = M->graphs[g].name;
    carve_status s;
    /* room for everything this graph defines, at once */
    size_t n_defs = gp->n_initializer + gp->n_input;
    for (size_t i = 0; i < gp->n_node; i++)
        n_defs += gp->node[i]->n_output;
    if (n_defs > UINT32_MAX || gp->n_node > UINT32_MAX)
        return cv_error(CTX, CARVE_ERR_UNSUPPORTED, "graph '%s': more than 2^32 nodes or values",
                        gname ? gname : "(null)");
    /* the main graph's arrays get room for what lowering adds as well (a
     * Delegate node for each partition, body values at the partitions'
     * boundaries: the 1M-node chain ends with 1.33x its nodes, the 1M-node
     * DAG with 1.63x its values), so the biggest arrays are not copied to
     * grow: room never written costs address space only */
    size_t more_nodes = g == 0 ? gp->n_node / 2 : 0, more_values = g == 0 ? n_defs : 0;
    if (gp->n_node + more_nodes > UINT32_MAX || n_defs + more_values > UINT32_MAX)
        more_nodes = more_values = 0;
    if (!cv_model_reserve(M, g, (uint32_t)(gp->n_node + more_nodes), (uint32_t)(n_defs + more_values),
                          (uint32_t)n_defs))
        return carve_errcode(CTX);

    /* 1. initializers and inputs */
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        char what[300];
        cat(what, sizeof what, "graph '", gname ? gname : "(null)", "': initializer '", tp->name ? tp->name : "", "'",
            (const char *)NULL);
        carve_value_id v;
        cv_tensor *t = NULL;
        if ((s = define(im, g, tp->name, what, NULL, 0, &v)) || (s = tensor_from_proto(im, tp, what, &t)))
            return s;
        cv_value *x = &M->values[v];
        x->init = t;
        t->name = x->name;
        x->type.kind = CARVE_TYPE_TENSOR;
        x->type.dtype = t->dtype;
        x->type.rank = t->rank;
        x->type.dims = cv_arena_alloc(&M->arena, ((size_t)t->rank + 1) * sizeof *x->type.dims);
        if (!x->type.dims)
            return nomem(im);
        for (int d = 0; d < t->rank; d++)
            x->type.dims[d] = (carve_dim){t->dims[d], NULL};
        if (!cv_ids_push(&M->graphs[g].inits, v))
            return nomem(im);
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        char what[300];
        snprintf(what, sizeof what, "graph '%s': input %zu", gname, i);
        carve_value_id v = vi->name ? cv_strmap_get(&M->graphs[g].scope, vi->name) : CARVE_NONE;
        if (v != CARVE_NONE && M->values[v].is_input)
            return cv_error(CTX, CARVE_ERR_INVALID, "%s: input '%s' is listed twice", what, vi->name);
        if (v == CARVE_NONE && (s = define(im, g, vi->name, what, NULL, 0, &v)))
            return s;
        /* An input that is also an initializer (IR < 4) is an input with a
         * default value: the initializer keeps its type, checked by verify. */
        cv_type keep = M->values[v].type;
        if ((s = apply_value_info(im, v, vi, "input")))
            return s;
        if (M->values[v].init && keep.kind == CARVE_TYPE_TENSOR && M->values[v].type.kind != CARVE_TYPE_TENSOR)
            M->values[v].type = keep;
        M->values[v].is_input = true;
        if (!cv_ids_push(&M->graphs[g].inputs, v))
            return nomem(im);
    }

    /* 2. nodes and their outputs, so any node can read any of them */
    uint32_t first_node = M->graphs[g].nodes.n;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np->op_type || !*np->op_type)
            return cv_error(CTX, CARVE_ERR_INVALID, "graph '%s': node %zu has no op_type", gname, i);
        carve_node_id n = (im->kept ? cv_node_new_kept : cv_node_new)(M, g, np->op_type, np->domain,
                                                                      (uint32_t)np->n_input, (uint32_t)np->n_output);
        if (n == CARVE_NONE)
            return carve_errcode(CTX);
        cv_node *nd = &M->nodes[n];
        nd->name = opt_str(im, np->name);
        nd->doc = opt_str(im, np->doc_string);
        if (nd->domain[0] == 'a' && !strcmp(nd->domain, "ai.onnx"))
            nd->domain = "";
        if (!raw_unknown(im, &nd->raw, &np->base))
            return nomem(im);
        if (i + CV_STRMAP_AHEAD < gp->n_node) { /* the scope's slots a few nodes on */
            const Onnx__NodeProto *ahead = gp->node[i + CV_STRMAP_AHEAD];
            for (size_t j = 0; j < ahead->n_output; j++)
                cv_strmap_prefetch(&M->graphs[g].scope, ahead->output[j]);
        }
        for (size_t j = 0; j < np->n_output; j++) {
            if (!*np->output[j])
                continue;
            carve_value_id v;
            if ((s = define(im, g, np->output[j], NULL, np, i, &v)))
                return s;
            M->values[v].producer = n;
            M->values[v].out_index = (uint32_t)j;
            M->nodes[n].out[j] = v;
        }
    }

    /* 3. attributes (subgraphs see every value of this graph now) and input
     * references */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        carve_node_id n = M->graphs[g].nodes.v[first_node + i];
        for (size_t j = 0; j < np->n_attribute; j++)
            if ((s = import_attr(im, n, np->attribute[j], np, i, depth)))
                return s;
        if (i + CV_STRMAP_AHEAD < gp->n_node) {
            const Onnx__NodeProto *ahead = gp->node[i + CV_STRMAP_AHEAD];
            for (size_t j = 0; j < ahead->n_input; j++)
                cv_strmap_prefetch(&M->graphs[g].scope, ahead->input[j]);
        }
        for (size_t j = 0; j < np->n_input; j++) {
            if (!*np->input[j])
                continue;
            carve_value_id v = carve_graph_find_value(M, g, np->input[j]);
            if (v == CARVE_NONE) {
                char lbuf[1024];
                return cv_error(CTX, CARVE_ERR_INVALID, "%s: input %zu '%s' is not defined",
                                node_label(np, i, lbuf, sizeof lbuf), j, np->input[j]);
            }
            M->nodes[n].in[j] = v;
        }
    }

    /* 4. outputs and value_info */
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        carve_value_id v = vi->name ? carve_graph_find_value(M, g, vi->name) : CARVE_NONE;
        if (v == CARVE_NONE)
            return cv_error(CTX, CARVE_ERR_INVALID, "graph '%s': output %zu '%s' is not defined", gname, i,
                            vi->name ? vi->name : "");
        if (M->values[v].graph == g && (s = apply_value_info(im, v, vi, "output")))
            return s;
        if (!cv_ids_push(&M->graphs[g].outputs, v))
            return nomem(im);
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        carve_value_id v = vi->name ? cv_strmap_get(&M->graphs[g].scope, vi->name) : CARVE_NONE;
        if (v == CARVE_NONE || M->values[v].is_input)
            continue; /* describes nothing of this graph: dropped */
        if ((s = apply_value_info(im, v, vi, "value_info")))
            return s;
    }
    return M->arena.failed ? nomem(im) : CARVE_OK;
}

/* ---------------------------------------------------------------- model */

static carve_status import_model(imp *im, const Onnx__ModelProto *mp)
{
    carve_model *m = M;
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->producer_name = opt_str(im, mp->producer_name);
    m->producer_version = opt_str(im, mp->producer_version);
    m->domain = opt_str(im, mp->domain);
    m->has_model_version = mp->has_model_version;
    m->model_version = mp->model_version;
    m->doc = opt_str(im, mp->doc_string);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
        carve_status s = carve_model_set_opset(m, op->domain, op->has_version ? op->version : 0);
        if (s)
            return s;
    }
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *kv = mp->metadata_props[i];
        carve_status s = carve_model_set_metadata(m, kv->key ? kv->key : "", kv->value ? kv->value : "");
        if (s)
            return s;
    }
    if (!raw_unknown(im, &m->raw, &mp->base))
        return nomem(im);
    for (size_t i = 0; i < mp->n_training_info; i++)
        if (!raw_message(im, &m->raw, 20, &mp->training_info[i]->base))
            return nomem(im);
    for (size_t i = 0; i < mp->n_functions; i++)
        if (!raw_message(im, &m->raw, 25, &mp->functions[i]->base))
            return nomem(im);
    if (!mp->graph)
        return cv_error(m->ctx, CARVE_ERR_INVALID, "the model has no graph");
    carve_status s = import_graph(im, mp->graph, 0, 0);
    if (s)
        return s;
    if ((s = cv_names_assign(m)))
        return s;
    for (uint32_t g = 0; g < m->n_graphs; g++)
        if ((s = cv_topo_sort(m, g)))
            return s;
    return carve_model_verify(m);
}

/* Pinned tensors: copied out of chunks holding little tensor data; the
 * chunks holding much become the model's (decisions first: taking a chunk
 * out of bump hides it from the tensors after). */
static carve_status settle_pinned(imp *im)
{
    bool *copy = cv_malloc(im->n_pinned ? im->n_pinned : 1);
    if (!copy)
        return nomem(im);
    for (size_t i = 0; i < im->n_pinned; i++)
        copy[i] = !cv_pb_bump_keeps(im->bump, im->pinned[i]->data);
    for (size_t i = 0; i < im->n_pinned; i++) {
        void *blk = copy[i] ? NULL : cv_pb_bump_take(im->bump, im->pinned[i]->data);
        if (!blk)
            continue;
        void **owned = cv_realloc(M->owned, (M->n_owned + 1) * sizeof *owned);
        if (!owned) {
            cv_free(blk);
            cv_free(copy);
            return nomem(im);
        }
        M->owned = owned;
        M->owned[M->n_owned++] = blk;
    }
    for (size_t i = 0; i < im->n_pinned; i++)
        if (copy[i]) {
            cv_tensor *t = im->pinned[i];
            t->data = cv_arena_memdup(&M->arena, t->data, t->nbytes);
        }
    cv_free(copy);
    return M->arena.failed ? nomem(im) : CARVE_OK;
}

static carve_status load(carve_ctx *ctx, const void *data, size_t size, const char *base_dir,
                         const char *source, carve_model **out)
{
    *out = NULL;
    const char *who = source ? source : "model";
    if (size == 0)
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: empty input, not an ONNX model", who);
    carve_model *m = carve_model_new(ctx);
    if (!m)
        return CARVE_ERR_NOMEM;
    /* What decode.c declines goes through the wire walk first: it says
     * where bytes are broken, and it refuses what protobuf-c lets through
     * but cannot be written back (a field number 0 in a multi-byte key). */
    cv_pb_bump bump = {0};
    keeper kp = {m, false};
    ProtobufCAllocator names = {keep_alloc, keep_free, &kp};
    Onnx__ModelProto *mp = cv_decode_model(data, size, &bump, &names);
    bool kept = mp != NULL;
    if (!mp && (bump.failed || kp.failed)) {
        cv_pb_bump_free(&bump);
        carve_model_free(m);
        return cv_error(ctx, CARVE_ERR_NOMEM, "%s: out of memory decoding %zu bytes", who, size);
    }
    if (!mp) { /* not the plain case: the wire walk says what is wrong, or protobuf-c reads it */
        cv_pb_bump_free(&bump);
        bump = (cv_pb_bump){0};
        char why[700];
        if (!cv_wire_check(data, size, &onnx__model_proto__descriptor, why, sizeof why)) {
            carve_model_free(m);
            return cv_error(ctx, CARVE_ERR_PARSE, "%s: not a valid ONNX model: %s", who, why);
        }
        ProtobufCAllocator pa = cv_pb_bump_allocator(&bump);
        mp = onnx__model_proto__unpack(&pa, size, data);
    }
    if (!mp) {
        cv_pb_bump_free(&bump);
        carve_model_free(m);
        return bump.failed ? cv_error(ctx, CARVE_ERR_NOMEM, "%s: out of memory decoding %zu bytes", who, size)
                           : cv_error(ctx, CARVE_ERR_PARSE, "%s: not a valid ONNX model: protobuf decoding failed",
                                      who);
    }
    /* carve_model_new made an empty main graph; import fills it. */
    imp im = {.m = m, .base_dir = base_dir, .bump = &bump, .kept = kept};
    if (source)
        m->source_path = cv_arena_strdup(&m->arena, source);
    carve_status s = import_model(&im, mp);
    if (!s)
        s = settle_pinned(&im);
    cv_free(im.pinned);
    cv_pb_bump_free(&bump);
    if (s) {
        carve_model_free(m);
        return s;
    }
    *out = m;
    return CARVE_OK;
}

carve_status carve_model_load_memory(carve_ctx *ctx, const void *data, size_t size,
                                     const carve_load_opts *opts, carve_model **out)
{
    if (!out || (!data && size))
        return cv_error(ctx, CARVE_ERR_ARG, "load: no data or no place for the model");
    return load(ctx, data, size, opts ? opts->base_dir : NULL, NULL, out);
}

carve_status carve_model_load_file(carve_ctx *ctx, const char *path, const carve_load_opts *opts,
                                   carve_model **out)
{
    if (!out || !path)
        return cv_error(ctx, CARVE_ERR_ARG, "load: no path or no place for the model");
    *out = NULL;
    /* mapped, not read: pages are touched only as the decoder walks them */
    cv_input in;
    carve_status s = cv_input_map(ctx, path, NULL, 0, &in);
    if (s)
        return s;
    if (in.size > (size_t)INT32_MAX) {
        size_t size = in.size;
        cv_input_unmap(&in);
        return cv_error(ctx, CARVE_ERR_UNSUPPORTED,
                        "%s: %zu bytes, above protobuf's 2 GiB limit for a model (large tensors go in external data)",
                        path, size);
    }
    cv_input_populate(&in); /* the decoder reads every byte */
    char dirbuf[PATH_MAX];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    const char *base = opts && opts->base_dir ? opts->base_dir : dirname(dirbuf);
    s = load(ctx, in.data, in.size, base, path, out);
    cv_input_unmap(&in);
    return s;
}

carve_status cv_onnx_tensor(carve_model *m, const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                            cv_tensor **out)
{
    imp im = {.m = m, .base_dir = base_dir};
    return tensor_from_proto(&im, tp, what, out);
}

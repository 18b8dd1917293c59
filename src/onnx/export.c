/* export.c: carve IR -> ONNX bytes.
 *
 * The protobuf-c structs are built in a scratch arena that is freed whole.
 * Whatever carve keeps opaque (unknown fields, non-tensor types, functions,
 * sparse initializers) goes back as raw wire fields, verbatim. Output is a
 * pure function of the IR, so identical models give identical bytes. */
#define _DEFAULT_SOURCE
#include "onnx_io.h"

#include "../io/files.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ex {
    const carve_model *m;
    cv_arena a;
    FILE *ext;            /* external data being written, or NULL */
    const char *ext_name; /* its location as written into the model */
    size_t ext_min;
    uint64_t ext_off;
    bool io_failed;
    uint32_t *out_of;     /* per value: 1 + the graph whose outputs were last marked with it */
} ex;

#define A (&e->a)

/* The model's strings outlive the messages built from them, which protobuf-c
 * only reads: no copy. */
static char *s_dup(ex *e, const char *s)
{
    (void)e;
    return (char *)s;
}

/* A length-delimited raw field holding `b` (adds the length prefix). */
static cv_rawfield raw_len(ex *e, uint32_t tag, cv_bytes b)
{
    uint8_t *buf = cv_arena_alloc(A, b.n + 10);
    if (!buf)
        return (cv_rawfield){0};
    size_t k = cv_varint_put(buf, b.n);
    if (b.n)
        memcpy(buf + k, b.p, b.n);
    return (cv_rawfield){tag, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, b.n + k, buf};
}

static void set_unknown(ex *e, ProtobufCMessage *msg, const cv_raw *r, const cv_rawfield *extra, uint32_t n_extra)
{
    uint32_t n = r->n + n_extra;
    if (!n)
        return;
    ProtobufCMessageUnknownField *u = cv_arena_alloc(A, n * sizeof *u);
    if (!u)
        return;
    for (uint32_t i = 0; i < r->n; i++)
        u[i] = (ProtobufCMessageUnknownField){r->f[i].tag, (ProtobufCWireType)r->f[i].wire_type, r->f[i].len,
                                               (uint8_t *)r->f[i].data};
    for (uint32_t i = 0; i < n_extra; i++)
        u[r->n + i] = (ProtobufCMessageUnknownField){extra[i].tag, (ProtobufCWireType)extra[i].wire_type,
                                                      extra[i].len, (uint8_t *)extra[i].data};
    msg->n_unknown_fields = n;
    msg->unknown_fields = u;
}

static Onnx__StringStringEntryProto *kv(ex *e, const char *k, const char *v)
{
    Onnx__StringStringEntryProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__StringStringEntryProto)ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    p->key = k ? cv_arena_strdup(A, k) : NULL; /* v may be a buffer on the stack */
    p->value = v ? cv_arena_strdup(A, v) : NULL;
    return p;
}

static Onnx__TensorProto *tensor(ex *e, const cv_tensor *t, const char *name)
{
    Onnx__TensorProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    p->n_dims = (size_t)t->rank;
    p->dims = (int64_t *)t->dims;
    p->has_data_type = 1;
    p->data_type = (int32_t)t->dtype;
    p->name = s_dup(e, name ? name : t->name);
    p->doc_string = s_dup(e, t->doc);
    if (t->dtype == CARVE_STRING) {
        p->n_string_data = t->nelem;
        p->string_data = cv_arena_alloc(A, (t->nelem + 1) * sizeof *p->string_data);
        for (size_t i = 0; p->string_data && i < t->nelem; i++)
            p->string_data[i] = (ProtobufCBinaryData){t->strs[i].n, (uint8_t *)t->strs[i].p};
    } else if (e->ext && t->nbytes >= e->ext_min) {
        /* 64-byte alignment lets a reader map the data and use it in place. */
        uint64_t pad = (64 - e->ext_off % 64) % 64;
        static const uint8_t zeros[64];
        if (fwrite(zeros, 1, pad, e->ext) != pad || fwrite(t->data, 1, t->nbytes, e->ext) != t->nbytes)
            e->io_failed = true;
        e->ext_off += pad;
        char off[32], len[32];
        snprintf(off, sizeof off, "%llu", (unsigned long long)e->ext_off);
        snprintf(len, sizeof len, "%zu", t->nbytes);
        e->ext_off += t->nbytes;
        p->has_data_location = 1;
        p->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        p->n_external_data = 3;
        p->external_data = cv_arena_alloc(A, 3 * sizeof *p->external_data);
        if (p->external_data) {
            p->external_data[0] = kv(e, "location", e->ext_name);
            p->external_data[1] = kv(e, "offset", off);
            p->external_data[2] = kv(e, "length", len);
        }
    } else {
        p->has_raw_data = 1;
        p->raw_data = (ProtobufCBinaryData){t->nbytes, (uint8_t *)t->data};
    }
    set_unknown(e, &p->base, &t->raw, NULL, 0);
    return p;
}

/* A ValueInfoProto for value v; non-tensor types go out as raw field 2. */
static Onnx__ValueInfoProto *value_info(ex *e, carve_value_id v)
{
    const cv_value *x = &e->m->values[v];
    Onnx__ValueInfoProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    p->name = s_dup(e, x->name);
    p->doc_string = s_dup(e, x->doc);
    cv_rawfield extra = {0};
    uint32_t n_extra = 0;
    if (x->type.kind == CARVE_TYPE_OTHER) {
        extra = raw_len(e, 2, x->type.opaque);
        n_extra = 1;
    } else if (x->type.kind == CARVE_TYPE_TENSOR) {
        Onnx__TypeProto *tp = cv_arena_alloc(A, sizeof *tp);
        Onnx__TypeProto__Tensor *tt = cv_arena_alloc(A, sizeof *tt);
        if (!tp || !tt)
            return NULL;
        *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
        *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp->tensor_type = tt;
        tp->denotation = s_dup(e, x->type.denotation);
        if (x->type.dtype != CARVE_UNDEFINED) {
            tt->has_elem_type = 1;
            tt->elem_type = (int32_t)x->type.dtype;
        }
        if (x->type.rank >= 0) {
            Onnx__TensorShapeProto *sp = cv_arena_alloc(A, sizeof *sp);
            if (!sp)
                return NULL;
            *sp = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
            sp->n_dim = (size_t)x->type.rank;
            sp->dim = cv_arena_alloc(A, (sp->n_dim + 1) * sizeof *sp->dim);
            for (int i = 0; sp->dim && i < x->type.rank; i++) {
                Onnx__TensorShapeProto__Dimension *d = cv_arena_alloc(A, sizeof *d);
                if (!d)
                    return NULL;
                *d = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
                if (x->type.dims[i].param) {
                    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                    d->dim_param = s_dup(e, x->type.dims[i].param);
                } else if (x->type.dims[i].value >= 0) {
                    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                    d->dim_value = x->type.dims[i].value;
                }
                sp->dim[i] = d;
            }
            tt->shape = sp;
        }
        p->type = tp;
    }
    set_unknown(e, &p->base, &x->raw, &extra, n_extra);
    return p;
}

static Onnx__GraphProto *graph(ex *e, carve_graph_id g);

static Onnx__AttributeProto *attribute(ex *e, const cv_attr *a)
{
    Onnx__AttributeProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    p->name = s_dup(e, a->name);
    p->doc_string = s_dup(e, a->doc);
    p->ref_attr_name = s_dup(e, a->ref_attr_name);
    p->has_type = 1;
    p->type = (Onnx__AttributeProto__AttributeType)a->kind;
    cv_rawfield *extra = NULL;
    uint32_t n_extra = 0;
    switch (a->kind) {
    case CARVE_ATTR_FLOAT: p->has_f = 1, p->f = a->u.f; break;
    case CARVE_ATTR_INT: p->has_i = 1, p->i = a->u.i; break;
    case CARVE_ATTR_STRING: p->has_s = 1, p->s = (ProtobufCBinaryData){a->u.s.n, (uint8_t *)a->u.s.p}; break;
    case CARVE_ATTR_TENSOR: p->t = tensor(e, a->u.t, NULL); break;
    case CARVE_ATTR_GRAPH: p->g = graph(e, a->u.g); break;
    case CARVE_ATTR_FLOATS: p->n_floats = a->n, p->floats = a->u.floats; break;
    case CARVE_ATTR_INTS: p->n_ints = a->n, p->ints = a->u.ints; break;
    case CARVE_ATTR_STRINGS:
        p->n_strings = a->n;
        p->strings = cv_arena_alloc(A, (a->n + 1) * sizeof *p->strings);
        for (uint32_t i = 0; p->strings && i < a->n; i++)
            p->strings[i] = (ProtobufCBinaryData){a->u.strings[i].n, (uint8_t *)a->u.strings[i].p};
        break;
    case CARVE_ATTR_TENSORS:
        p->n_tensors = a->n;
        p->tensors = cv_arena_alloc(A, (a->n + 1) * sizeof *p->tensors);
        for (uint32_t i = 0; p->tensors && i < a->n; i++)
            p->tensors[i] = tensor(e, a->u.tensors[i], NULL);
        break;
    case CARVE_ATTR_GRAPHS:
        p->n_graphs = a->n;
        p->graphs = cv_arena_alloc(A, (a->n + 1) * sizeof *p->graphs);
        for (uint32_t i = 0; p->graphs && i < a->n; i++)
            p->graphs[i] = graph(e, a->u.graphs[i]);
        break;
    case CARVE_ATTR_SPARSE_TENSOR:
    case CARVE_ATTR_SPARSE_TENSORS:
    case CARVE_ATTR_TYPE_PROTO:
    case CARVE_ATTR_TYPE_PROTOS: {
        /* Field numbers of AttributeProto: sparse_tensor 22, sparse_tensors
         * 23, tp 14, type_protos 15. */
        uint32_t tag = a->kind == CARVE_ATTR_SPARSE_TENSOR ? 22 : a->kind == CARVE_ATTR_SPARSE_TENSORS ? 23
                     : a->kind == CARVE_ATTR_TYPE_PROTO ? 14 : 15;
        extra = cv_arena_alloc(A, (a->n + 1) * sizeof *extra);
        for (uint32_t i = 0; extra && i < a->n; i++)
            extra[i] = raw_len(e, tag, a->u.opaque[i]);
        n_extra = a->n;
        break;
    }
    case CARVE_ATTR_UNDEFINED: p->has_type = 0; break;
    }
    set_unknown(e, &p->base, &a->raw, extra, n_extra);
    return p;
}

static Onnx__NodeProto *node(ex *e, carve_node_id id)
{
    const cv_node *n = &e->m->nodes[id];
    Onnx__NodeProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    p->name = s_dup(e, n->name);
    p->op_type = s_dup(e, n->op);
    p->domain = *n->domain ? s_dup(e, n->domain) : NULL;
    p->doc_string = s_dup(e, n->doc);
    p->n_input = n->n_in;
    p->input = cv_arena_alloc(A, (n->n_in + 1) * sizeof *p->input);
    for (uint32_t i = 0; p->input && i < n->n_in; i++)
        p->input[i] = n->in[i] == CARVE_NONE ? "" : (char *)e->m->values[n->in[i]].name;
    p->n_output = n->n_out;
    p->output = cv_arena_alloc(A, (n->n_out + 1) * sizeof *p->output);
    for (uint32_t i = 0; p->output && i < n->n_out; i++)
        p->output[i] = n->out[i] == CARVE_NONE ? "" : (char *)e->m->values[n->out[i]].name;
    p->n_attribute = n->n_attr;
    p->attribute = cv_arena_alloc(A, (n->n_attr + 1) * sizeof *p->attribute);
    for (uint32_t i = 0; p->attribute && i < n->n_attr; i++)
        p->attribute[i] = attribute(e, &n->attr[i]);
    set_unknown(e, &p->base, &n->raw, NULL, 0);
    return p;
}

static Onnx__GraphProto *graph(ex *e, carve_graph_id g)
{
    const carve_model *m = e->m;
    const cv_graph *gr = &m->graphs[g];
    Onnx__GraphProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    p->name = s_dup(e, gr->name);
    p->doc_string = s_dup(e, gr->doc);
    p->n_node = gr->nodes.n;
    p->node = cv_arena_alloc(A, (gr->nodes.n + 1) * sizeof *p->node);
    for (uint32_t i = 0; p->node && i < gr->nodes.n; i++)
        p->node[i] = node(e, gr->nodes.v[i]);
    p->n_initializer = gr->inits.n;
    p->initializer = cv_arena_alloc(A, (gr->inits.n + 1) * sizeof *p->initializer);
    for (uint32_t i = 0; p->initializer && i < gr->inits.n; i++)
        p->initializer[i] = tensor(e, m->values[gr->inits.v[i]].init, m->values[gr->inits.v[i]].name);
    p->n_input = gr->inputs.n;
    p->input = cv_arena_alloc(A, (gr->inputs.n + 1) * sizeof *p->input);
    for (uint32_t i = 0; p->input && i < gr->inputs.n; i++)
        p->input[i] = value_info(e, gr->inputs.v[i]);
    p->n_output = gr->outputs.n;
    p->output = cv_arena_alloc(A, (gr->outputs.n + 1) * sizeof *p->output);
    for (uint32_t i = 0; p->output && i < gr->outputs.n; i++)
        p->output[i] = value_info(e, gr->outputs.v[i]);
    /* value_info: every node output of this graph with a known type, in node
     * order, except graph outputs (described above). Outputs are marked
     * first, so telling them apart costs one look-up per value; subgraphs
     * were all exported above and mark again only inside their own call. */
    for (uint32_t i = 0; e->out_of && i < gr->outputs.n; i++)
        e->out_of[gr->outputs.v[i]] = g + 1;
    size_t nvi = 0;
    for (uint32_t pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            p->value_info = cv_arena_alloc(A, (nvi + 1) * sizeof *p->value_info);
            if (!p->value_info)
                return p;
            p->n_value_info = nvi;
            nvi = 0;
        }
        for (uint32_t i = 0; i < gr->nodes.n; i++) {
            const cv_node *n = &m->nodes[gr->nodes.v[i]];
            for (uint32_t j = 0; j < n->n_out; j++) {
                carve_value_id v = n->out[j];
                if (v == CARVE_NONE || (e->out_of && e->out_of[v] == g + 1))
                    continue;
                const cv_value *x = &m->values[v];
                if (x->type.kind == CARVE_TYPE_UNKNOWN && !x->raw.n && !x->doc)
                    continue;
                if (pass == 1)
                    p->value_info[nvi] = value_info(e, v);
                nvi++;
            }
        }
    }
    set_unknown(e, &p->base, &gr->raw, NULL, 0);
    return p;
}

static Onnx__ModelProto *model(ex *e)
{
    const carve_model *m = e->m;
    Onnx__ModelProto *p = cv_arena_alloc(A, sizeof *p);
    if (!p)
        return NULL;
    *p = (Onnx__ModelProto)ONNX__MODEL_PROTO__INIT;
    p->has_ir_version = 1;
    p->ir_version = m->ir_version;
    p->producer_name = s_dup(e, m->producer_name);
    p->producer_version = s_dup(e, m->producer_version);
    p->domain = s_dup(e, m->domain);
    p->has_model_version = m->has_model_version;
    p->model_version = m->model_version;
    p->doc_string = s_dup(e, m->doc);
    p->n_opset_import = m->n_opsets;
    p->opset_import = cv_arena_alloc(A, (m->n_opsets + 1) * sizeof *p->opset_import);
    for (uint32_t i = 0; p->opset_import && i < m->n_opsets; i++) {
        Onnx__OperatorSetIdProto *o = cv_arena_alloc(A, sizeof *o);
        if (!o)
            return NULL;
        *o = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
        o->domain = s_dup(e, m->opset_domain[i]);
        o->has_version = 1;
        o->version = m->opset_version[i];
        p->opset_import[i] = o;
    }
    p->n_metadata_props = m->n_meta;
    p->metadata_props = cv_arena_alloc(A, (m->n_meta + 1) * sizeof *p->metadata_props);
    for (uint32_t i = 0; p->metadata_props && i < m->n_meta; i++)
        p->metadata_props[i] = kv(e, m->meta[i].key, m->meta[i].value);
    p->graph = graph(e, 0);
    set_unknown(e, &p->base, &m->raw, NULL, 0);
    return p;
}

/* Packs the model; *out from cv_malloc. */
static carve_status pack(ex *e, void **out, size_t *size)
{
    carve_ctx *ctx = e->m->ctx;
    e->out_of = cv_arena_alloc(A, ((size_t)e->m->n_values + 1) * sizeof *e->out_of);
    Onnx__ModelProto *p = model(e);
    if (!p || e->a.failed)
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory while saving");
    size_t n = onnx__model_proto__get_packed_size(p);
    if (n > (size_t)INT32_MAX)
        return cv_error(ctx, CARVE_ERR_UNSUPPORTED,
                        "the model is %zu bytes, above protobuf's 2 GiB limit: save it with external data", n);
    uint8_t *buf = cv_malloc(n ? n : 1);
    if (!buf)
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory while saving (%zu bytes)", n);
    onnx__model_proto__pack(p, buf);
    *out = buf;
    *size = n;
    return CARVE_OK;
}

carve_status carve_model_save_memory(carve_model *m, void **out, size_t *size)
{
    if (!out || !size)
        return cv_error(m->ctx, CARVE_ERR_ARG, "save: no place for the bytes");
    size_t start = 0;
    carve_status s = cv_encode_model(m, out, &start, size, NULL);
    if (!s && start)
        memmove(*out, (uint8_t *)*out + start, *size);
    return s;
}

/* The protobuf-c route (export.c's structs), the reference the encoder's
 * bytes are tested against; saving with external data takes it too. */
carve_status cv_export_reference(carve_model *m, void **out, size_t *size)
{
    ex e = {.m = m};
    carve_status s = pack(&e, out, size);
    cv_arena_free(&e.a);
    return s;
}

static carve_status save_model(carve_outputs *o, carve_model *m, const char *path, const carve_save_opts *opts,
                               const char *what);

carve_status carve_outputs_add_model(carve_outputs *o, carve_model *m, const char *path, const carve_save_opts *opts)
{
    return cv_save_model(o, m, path, opts, "model");
}

carve_status cv_save_model(carve_outputs *o, carve_model *m, const char *path, const carve_save_opts *opts,
                           const char *what)
{
    carve_status s = save_model(o, m, path, opts, what);
    if (s)
        cv_outputs_fail(o);
    return s;
}

static carve_status save_model(carve_outputs *o, carve_model *m, const char *path, const carve_save_opts *opts,
                               const char *what)
{
    carve_ctx *ctx = m->ctx;
    if (!o)
        return carve_errcode(ctx) ? carve_errcode(ctx) : cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    if (!path || !*path)
        return cv_error(ctx, CARVE_ERR_ARG, "save: no output path");
    carve_status s = carve_outputs_protect(o, m->source_path, "input model");
    for (uint32_t i = 0; !s && i < m->n_ext_files; i++)
        s = carve_outputs_protect(o, m->ext_files[i], "input model's external data");
    if (s)
        return s;
    ex e = {.m = m};
    if (opts && opts->external_data_name) {
        const char *nm = opts->external_data_name;
        if (!*nm || strchr(nm, '/') || !strcmp(nm, ".") || !strcmp(nm, ".."))
            return cv_error(ctx, CARVE_ERR_ARG, "external data name '%s' must be a plain file name", nm);
        if (!strcmp(path, "-"))
            return cv_error(ctx, CARVE_ERR_ARG, "external data '%s' needs a model file beside it, not standard output",
                            nm);
        char dirbuf[PATH_MAX], ext_path[PATH_MAX];
        snprintf(dirbuf, sizeof dirbuf, "%s", path);
        if ((size_t)snprintf(ext_path, sizeof ext_path, "%s/%s", dirname(dirbuf), nm) >= sizeof ext_path)
            return cv_error(ctx, CARVE_ERR_ARG, "%s: path too long", nm);
        /* added first: renamed before the model that points to it */
        e.ext = cv_outputs_open(o, ext_path, "external data");
        if (!e.ext)
            return carve_errcode(ctx);
        e.ext_name = nm;
        e.ext_min = opts->external_min_bytes ? opts->external_min_bytes : 1024;
    }
    FILE *f = cv_outputs_open(o, path, what);
    if (!f) {
        cv_arena_free(&e.a);
        return carve_errcode(ctx);
    }
    /* tensor data of 64 KiB and more goes to the file from the model's own
     * memory (cv_encode_parts): not copied into the encoder's buffer first */
    cv_pb_out enc = {0};
    bool walk = true;
    if (e.ext) {
        void *buf = NULL;
        s = pack(&e, &buf, &enc.size);
        enc.buf = buf;
        enc.parts = s ? NULL : cv_malloc(sizeof *enc.parts);
        if (!s && !enc.parts)
            s = cv_error(ctx, CARVE_ERR_NOMEM, "out of memory while saving");
        if (!s)
            enc.parts[0] = (cv_pb_part){buf, enc.size, 0}, enc.n_parts = 1;
    } else {
        s = cv_encode_parts(m, (size_t)64 << 10, &enc, &walk);
    }
    if (!s && e.io_failed)
        s = cv_error(ctx, CARVE_ERR_IO, "%s: writing external data failed: %s", path, strerror(errno));
    /* never write what carve cannot read back: the reader's own check, where
     * the encoder cannot vouch for its bytes (docs/performance.md) */
    if (!s && walk) {
        uint8_t *all = enc.n_parts == 1 ? (uint8_t *)enc.parts[0].p : cv_malloc(enc.size ? enc.size : 1);
        if (!all)
            s = cv_error(ctx, CARVE_ERR_NOMEM, "out of memory while saving");
        for (size_t i = 0, k = 0; all && enc.n_parts > 1 && i < enc.n_parts; k += enc.parts[i++].n)
            memcpy(all + k, enc.parts[i].p, enc.parts[i].n);
        char why[700];
        if (all && !cv_wire_check(all, enc.size, &onnx__model_proto__descriptor, why, sizeof why))
            s = cv_error(ctx, CARVE_ERR_UNSUPPORTED, "%s: refusing to write a model carve could not read back: %s",
                         path, why);
        if (enc.n_parts > 1)
            cv_free(all);
    }
    /* a big model goes to the disk while it is written: the fsync of the
     * commit then waits for the last megabytes only */
    size_t since = 0;
    for (size_t i = 0; !s && i < enc.n_parts; i++) {
        if (fwrite(enc.parts[i].p, 1, enc.parts[i].n, f) != enc.parts[i].n)
            s = cv_error(ctx, CARVE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        if ((since += enc.parts[i].n) >= ((size_t)8 << 20)) {
            cv_outputs_written(o, f);
            since = 0;
        }
    }
    cv_pb_out_free(&enc);
    cv_arena_free(&e.a);
    return s;
}

carve_status carve_model_save_file(carve_model *m, const char *path, const carve_save_opts *opts)
{
    carve_outputs *o = carve_outputs_new(m->ctx);
    carve_status s = carve_outputs_add_model(o, m, path, opts);
    if (!s)
        s = carve_outputs_commit(o);
    carve_outputs_free(o);
    return s;
}

/* export_parts.c: each Delegate body as a standalone ONNX model, the form a
 * vendor's converter takes. Inputs and outputs take the outer (model) names;
 * outer constants the body reads become initializers; the Delegate's target
 * and encodings become metadata_props "carve.target" and "carve.encodings".
 * Each model is written at the lowest IR version its opset and dtypes need,
 * with an AIMET encodings file beside it when its body holds Q/DQ nodes
 * (optionally stripped of them), and DIR/manifest.json says how the pieces
 * fit together (docs/artifacts.md). */
#define _DEFAULT_SOURCE
#include "partition.h"

#include "../io/files.h"
#include "../onnx/onnx_io.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <string.h>

typedef struct {
    const carve_model *src;
    carve_model *dst;
    carve_value_id *map; /* src value id -> dst value id */
} copier;

static carve_status copy_graph(copier *c, carve_graph_id sg, carve_graph_id dg);

static cv_tensor *copy_tensor(copier *c, const cv_tensor *t)
{
    if (t->dtype == CARVE_STRING) {
        cv_tensor *n = cv_arena_memdup(&c->dst->arena, t, sizeof *t);
        if (n) {
            n->dims = cv_arena_memdup(&c->dst->arena, t->dims, (size_t)t->rank * sizeof *t->dims);
            n->strs = cv_arena_alloc(&c->dst->arena, (t->nelem + 1) * sizeof *n->strs);
            for (size_t i = 0; n->strs && i < t->nelem; i++)
                n->strs[i] = (cv_bytes){cv_arena_memdup(&c->dst->arena, t->strs[i].p, t->strs[i].n), t->strs[i].n};
        }
        return n;
    }
    cv_tensor *n = cv_tensor_new(c->dst, t->dtype, t->rank, t->dims, t->data, t->nbytes);
    if (n) {
        n->name = cv_arena_strdup(&c->dst->arena, t->name);
        n->doc = cv_arena_strdup(&c->dst->arena, t->doc);
    }
    return n;
}

/* Makes src value v available in dst graph dg (an outer constant becomes an
 * initializer of the standalone model's main graph). */
static carve_status need(copier *c, carve_value_id v, carve_graph_id dg)
{
    if (c->map[v] != CARVE_NONE)
        return CARVE_OK;
    const cv_value *x = &c->src->values[v];
    if (!cv_value_is_const(c->src, v))
        return cv_error(c->dst->ctx, CARVE_ERR_UNSUPPORTED,
                        "partition export: the body reads runtime value '%s' from outside without an input", x->name);
    const cv_tensor *t = x->init;
    if (!t) {
        const cv_attr *a = cv_node_attr_find(c->src, x->producer, "value");
        t = a && a->kind == CARVE_ATTR_TENSOR ? a->u.t : NULL;
    }
    if (!t)
        return cv_error(c->dst->ctx, CARVE_ERR_UNSUPPORTED,
                        "partition export: constant '%s' is not a plain tensor (a Constant with value_* attributes)",
                        x->name);
    (void)dg;
    if (t->dtype == CARVE_STRING)
        return cv_error(c->dst->ctx, CARVE_ERR_UNSUPPORTED, "partition export: string constant '%s'", x->name);
    carve_value_id n = carve_graph_add_initializer(c->dst, 0, x->name, t->dtype, t->rank, t->dims, t->data, t->nbytes);
    if (n == CARVE_NONE)
        return carve_errcode(c->dst->ctx);
    c->map[v] = n;
    return CARVE_OK;
}

static carve_status copy_attr(copier *c, carve_node_id dn, const cv_attr *a, carve_graph_id dg)
{
    carve_model *d = c->dst;
    cv_attr *na = cv_node_attr_add(d, dn, a->name, a->kind);
    if (!na)
        return cv_error(d->ctx, CARVE_ERR_NOMEM, "out of memory");
    const char *name = na->name;
    *na = *a; /* scalars; arrays are re-homed below */
    na->name = name;
    na->doc = cv_arena_strdup(&d->arena, a->doc);
    na->ref_attr_name = cv_arena_strdup(&d->arena, a->ref_attr_name);
    na->raw.n = 0;
    switch (a->kind) {
    case CARVE_ATTR_STRING: na->u.s.p = cv_arena_memdup(&d->arena, a->u.s.p, a->u.s.n); break;
    case CARVE_ATTR_FLOATS: na->u.floats = cv_arena_memdup(&d->arena, a->u.floats, a->n * sizeof(float)); break;
    case CARVE_ATTR_INTS: na->u.ints = cv_arena_memdup(&d->arena, a->u.ints, a->n * sizeof(int64_t)); break;
    case CARVE_ATTR_STRINGS:
        na->u.strings = cv_arena_alloc(&d->arena, (a->n + 1) * sizeof(cv_bytes));
        for (uint32_t i = 0; na->u.strings && i < a->n; i++)
            na->u.strings[i] = (cv_bytes){cv_arena_memdup(&d->arena, a->u.strings[i].p, a->u.strings[i].n), a->u.strings[i].n};
        break;
    case CARVE_ATTR_TENSOR: na->u.t = copy_tensor(c, a->u.t); break;
    case CARVE_ATTR_TENSORS:
        na->u.tensors = cv_arena_alloc(&d->arena, (a->n + 1) * sizeof(cv_tensor *));
        for (uint32_t i = 0; na->u.tensors && i < a->n; i++)
            na->u.tensors[i] = copy_tensor(c, a->u.tensors[i]);
        break;
    case CARVE_ATTR_GRAPH:
    case CARVE_ATTR_GRAPHS: {
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->n;
        carve_graph_id *gs = cv_arena_alloc(&d->arena, (cnt + 1) * sizeof *gs);
        if (!gs)
            return cv_error(d->ctx, CARVE_ERR_NOMEM, "out of memory");
        for (uint32_t i = 0; i < cnt; i++) {
            carve_graph_id sg = a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[i];
            gs[i] = cv_graph_new(d, dg, c->src->graphs[sg].name);
            if (gs[i] == CARVE_NONE)
                return carve_errcode(d->ctx);
            d->graphs[gs[i]].owner = dn;
            carve_status s = copy_graph(c, sg, gs[i]);
            if (s)
                return s;
        }
        na = (cv_attr *)cv_node_attr_find(d, dn, a->name);
        if (a->kind == CARVE_ATTR_GRAPH)
            na->u.g = gs[0];
        else
            na->u.graphs = gs;
        break;
    }
    case CARVE_ATTR_SPARSE_TENSOR: case CARVE_ATTR_SPARSE_TENSORS: case CARVE_ATTR_TYPE_PROTO:
    case CARVE_ATTR_TYPE_PROTOS:
        na->u.opaque = cv_arena_alloc(&d->arena, (a->n + 1) * sizeof(cv_bytes));
        for (uint32_t i = 0; na->u.opaque && i < a->n; i++)
            na->u.opaque[i] = (cv_bytes){cv_arena_memdup(&d->arena, a->u.opaque[i].p, a->u.opaque[i].n), a->u.opaque[i].n};
        break;
    default: break;
    }
    return cv_model_nomem(d) ? CARVE_ERR_NOMEM : CARVE_OK;
}

static carve_status copy_value(copier *c, carve_graph_id dg, carve_value_id v, const char *name, carve_value_id *out)
{
    carve_value_id n = cv_value_new(c->dst, dg, name);
    if (n == CARVE_NONE)
        return carve_errcode(c->dst->ctx);
    c->dst->values[n].type = c->src->values[v].type;
    c->map[v] = n;
    *out = n;
    return CARVE_OK;
}

static carve_status copy_graph(copier *c, carve_graph_id sg, carve_graph_id dg)
{
    const carve_model *s = c->src;
    carve_model *d = c->dst;
    const cv_graph *g = &s->graphs[sg];
    carve_status st;
    carve_value_id nv = 0;
    for (uint32_t i = 0; i < g->inputs.n; i++) {
        if ((st = copy_value(c, dg, g->inputs.v[i], s->values[g->inputs.v[i]].name, &nv)))
            return st;
        d->values[nv].is_input = true;
        if (!cv_ids_push(&d->graphs[dg].inputs, nv))
            return cv_error(d->ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < g->inits.n; i++) {
        const cv_value *x = &s->values[g->inits.v[i]];
        carve_value_id n = carve_graph_add_initializer(d, dg, x->name, x->init->dtype, x->init->rank, x->init->dims,
                                                       x->init->data, x->init->nbytes);
        if (n == CARVE_NONE)
            return carve_errcode(d->ctx);
        c->map[g->inits.v[i]] = n;
    }
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &s->nodes[g->nodes.v[i]];
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] != CARVE_NONE && (st = need(c, n->in[k], dg)))
                return st;
        carve_node_id dn = cv_node_new(d, dg, n->op, n->domain, n->n_in, n->n_out);
        if (dn == CARVE_NONE)
            return carve_errcode(d->ctx);
        d->nodes[dn].name = cv_arena_strdup(&d->arena, n->name);
        d->nodes[dn].doc = cv_arena_strdup(&d->arena, n->doc);
        if (!cv_strmap_put(&d->node_names, d->nodes[dn].name, dn))
            return cv_error(d->ctx, CARVE_ERR_NOMEM, "out of memory");
        for (uint32_t k = 0; k < n->n_in; k++)
            d->nodes[dn].in[k] = n->in[k] == CARVE_NONE ? CARVE_NONE : c->map[n->in[k]];
        for (uint32_t k = 0; k < n->n_out; k++) {
            if (n->out[k] == CARVE_NONE)
                continue;
            if ((st = copy_value(c, dg, n->out[k], s->values[n->out[k]].name, &nv)))
                return st;
            d->values[nv].producer = dn;
            d->values[nv].out_index = k;
            d->nodes[dn].out[k] = nv;
        }
        for (uint32_t k = 0; k < n->n_attr; k++)
            if ((st = copy_attr(c, dn, &n->attr[k], dg)))
                return st;
    }
    for (uint32_t i = 0; i < g->outputs.n; i++) {
        carve_value_id v = g->outputs.v[i];
        if ((st = need(c, v, dg)))
            return st;
        if (!cv_ids_push(&d->graphs[dg].outputs, c->map[v]))
            return cv_error(d->ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    return CARVE_OK;
}

/* The lowest IR version a model of this default-domain opset and these
 * dtypes needs (ONNX's release table; 4 at least: initializers that are
 * not graph inputs). */
static int64_t min_ir(const carve_model *d)
{
    int64_t o = carve_model_opset(d, ""), ir;
    ir = o <= 8 ? 3 : o == 9 ? 4 : o == 10 ? 5 : o == 11 ? 6 : o <= 14 ? 7 : o <= 18 ? 8 : o <= 20 ? 9 : o <= 22 ? 10 : 11;
    if (ir < 4)
        ir = 4;
    for (uint32_t i = 0; i < d->n_values; i++) {
        carve_dtype t = d->values[i].type.dtype;
        int64_t need = t >= CARVE_FLOAT8E4M3FN && t <= CARVE_FLOAT8E5M2FNUZ ? 9
                       : t == CARVE_INT4 || t == CARVE_UINT4      ? 10
                       : t == CARVE_FLOAT4E2M1                    ? 11
                                                                  : 0;
        ir = need > ir ? need : ir;
    }
    return ir;
}

/* Would the ONNX 1.12 checker (IR 8, opset 17, no 4- or 16-bit types) know
 * everything in d, and does every input and output have a rank? */
static bool checker_112_knows(const carve_model *d)
{
    if (d->ir_version > 8 || carve_model_opset(d, "") > 17)
        return false;
    for (int io = 0; io < 2; io++) { /* its checker wants a shape on every graph input and output */
        const cv_ids *l = io ? &d->graphs[0].outputs : &d->graphs[0].inputs;
        for (uint32_t i = 0; i < l->n; i++)
            if (d->values[l->v[i]].type.rank < 0)
                return false;
    }
    for (uint32_t i = 0; i < d->n_values; i++) {
        int b = carve_dtype_bits(d->values[i].type.dtype);
        if (d->values[i].type.kind == CARVE_TYPE_TENSOR && (b == 4 || (b == 16 && d->values[i].type.dtype != CARVE_FLOAT16)))
            return false;
    }
    return true;
}

typedef struct {
    const carve_export_opts *o;
    const char *dir;
    cJSON *parts;      /* manifest entries, in export order */
    carve_outputs *out; /* every file goes into the command's set (docs/files.md) */
} xctx;

static bool jadd(cJSON *o, const char *k, cJSON *v)
{
    if (v && cJSON_AddItemToObject(o, k, v))
        return true;
    cJSON_Delete(v);
    return false;
}

/* A legalization Cast at the body's edge (named "<delegate>/..."): the
 * dtype the backend computes in, or NULL. */
static const char *edge_cast(const carve_model *d, carve_value_id v, bool input, const char *delegate)
{
    size_t dl = strlen(delegate);
    const cv_graph *g = &d->graphs[0];
    if (!input) {
        carve_node_id p = d->values[v].producer;
        if (p == CARVE_NONE || strcmp(d->nodes[p].op, "Cast") || strncmp(d->nodes[p].name, delegate, dl) ||
            d->nodes[p].name[dl] != '/')
            return NULL;
        return carve_dtype_name(d->values[d->nodes[p].in[0]].type.dtype);
    }
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &d->nodes[g->nodes.v[i]];
        if (n->n_in && n->in[0] == v && !strcmp(n->op, "Cast") && !strncmp(n->name, delegate, dl) && n->name[dl] == '/')
            return carve_dtype_name(d->values[n->out[0]].type.dtype);
    }
    return NULL;
}

static cJSON *io_json(const carve_model *m, const carve_model *d, carve_value_id dv, carve_value_id outer,
                      bool input, const char *delegate)
{
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    const cv_type *t = &d->values[dv].type;
    bool ok = o && shape && jadd(o, "name", cJSON_CreateString(d->values[dv].name)) &&
              jadd(o, "value", cJSON_CreateString(m->values[outer].name)) &&
              jadd(o, "dtype", cJSON_CreateString(carve_dtype_name(t->dtype))) &&
              jadd(o, "model_dtype", cJSON_CreateString(carve_dtype_name(m->values[outer].type.dtype)));
    for (int i = 0; ok && i < t->rank; i++)
        ok = cJSON_AddItemToArray(shape, t->dims[i].value >= 0 ? cJSON_CreateNumber((double)t->dims[i].value)
                                                                : cJSON_CreateString(t->dims[i].param ? t->dims[i].param : "?"));
    ok = ok && jadd(o, "shape", t->rank >= 0 ? shape : cJSON_CreateNull());
    if (t->rank >= 0)
        shape = NULL;
    const char *c = ok ? edge_cast(d, dv, input, delegate) : NULL;
    if (ok && c)
        ok = jadd(o, "legalized_as", cJSON_CreateString(c));
    cJSON_Delete(shape);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The file name of a partition: its Delegate's name with characters a file
 * name cannot hold replaced. */
static void file_stem(const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s", name);
    for (char *p = out; *p; p++)
        if (*p == '/' || *p == '\\' || *p == ':' || *p == ' ' || *p == '#')
            *p = '_';
}

static carve_status export_one(xctx *x, carve_model *m, carve_node_id dn)
{
    carve_graph_id body = cv_attr_g(m, dn, "body");
    carve_model *d = carve_model_new(m->ctx);
    if (!d)
        return CARVE_ERR_NOMEM;
    copier c = {m, d, cv_malloc(((size_t)m->n_values + 1) * sizeof(carve_value_id))};
    carve_status st = CARVE_OK;
    char *enc = NULL;
    cJSON *entry = NULL;
    if (!c.map) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < m->n_values; i++)
        c.map[i] = CARVE_NONE;
    for (uint32_t i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opset_domain[i], "ai.carve") && (st = carve_model_set_opset(d, m->opset_domain[i], m->opset_version[i])))
            goto out;
    carve_model_set_producer(d, "carve", CARVE_VERSION);
    char doc[512];
    snprintf(doc, sizeof doc, "partition %s of a model lowered by carve for target '%s'", m->nodes[dn].name,
             cv_attr_s(m, dn, "target", "?"));
    carve_model_set_doc(d, doc);
    /* what the Delegate says about the body travels with it */
    const char *keys[2] = {"target", "encodings"};
    for (int k = 0; k < 2; k++) {
        const char *v = cv_attr_s(m, dn, keys[k], NULL);
        char key[32];
        snprintf(key, sizeof key, "carve.%s", keys[k]);
        if (v && (st = carve_model_set_metadata(d, key, v)))
            goto out;
    }
    if ((st = copy_graph(&c, body, 0)))
        goto out;
    /* the standalone model speaks the outer names */
    for (uint32_t i = 0; i < d->graphs[0].inputs.n; i++) {
        cv_value *v = &d->values[d->graphs[0].inputs.v[i]];
        cv_strmap_del(&d->graphs[0].scope, v->name);
        v->name = m->values[m->nodes[dn].in[i]].name;
        cv_strmap_put(&d->graphs[0].scope, v->name, d->graphs[0].inputs.v[i]);
    }
    for (uint32_t i = 0; i < d->graphs[0].outputs.n; i++) {
        cv_value *v = &d->values[d->graphs[0].outputs.v[i]];
        if (v->is_input || v->init)
            continue; /* a passthrough keeps the input's name */
        cv_strmap_del(&d->graphs[0].scope, v->name);
        v->name = m->values[m->nodes[dn].out[i]].name;
        cv_strmap_put(&d->graphs[0].scope, v->name, d->graphs[0].outputs.v[i]);
    }
    for (uint32_t i = 0; i < d->n_nodes; i++)
        if (!d->nodes[i].dead && !strcmp(d->nodes[i].domain, "ai.carve")) {
            st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "partition export: %s holds an ai.carve op (node '%s')",
                          m->nodes[dn].name, d->nodes[i].name);
            goto out;
        }
    uint32_t kept = 0;
    st = x->o->strip_qdq ? carve_strip_qdq(d, x->o->encodings_version, &enc, &kept)
                         : carve_aimet_encodings(d, x->o->encodings_version, &enc);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(m->ctx));
        st = cv_error(m->ctx, st, "partition %s: %s", m->nodes[dn].name, msg);
        goto out;
    }
    d->ir_version = min_ir(d);
    if ((st = carve_model_verify(d)))
        goto out;
    char path[PATH_MAX], stem[256], file[300], encfile[300];
    file_stem(m->nodes[dn].name, stem, sizeof stem);
    snprintf(file, sizeof file, "%s.onnx", stem);
    snprintf(encfile, sizeof encfile, "%s.encodings", stem);
    /* protobuf cannot hold 2 GiB: big weights go beside the model */
    size_t bytes = 0;
    for (uint32_t i = 0; i < d->graphs[0].inits.n; i++)
        bytes += d->values[d->graphs[0].inits.v[i]].init->nbytes;
    char ext[320];
    snprintf(ext, sizeof ext, "%s.data", file);
    carve_save_opts so = {ext, 0};
    if ((size_t)snprintf(path, sizeof path, "%s/%s", x->dir, file) >= sizeof path) {
        st = cv_error(m->ctx, CARVE_ERR_ARG, "%s: path too long", x->dir);
        goto out;
    }
    char what[300];
    snprintf(what, sizeof what, "partition '%s'", m->nodes[dn].name);
    if ((st = cv_save_model(x->out, d, path, bytes >= ((size_t)1 << 30) ? &so : NULL, what)))
        goto out;
    if (enc) {
        snprintf(path, sizeof path, "%s/%s", x->dir, encfile);
        snprintf(what, sizeof what, "encodings of partition '%s'", m->nodes[dn].name);
        if ((st = carve_outputs_add_bytes(x->out, path, what, enc, strlen(enc))))
            goto out;
    }
    /* the manifest's entry */
    cJSON *ins = cJSON_CreateArray(), *outs = cJSON_CreateArray();
    entry = cJSON_CreateObject();
    carve_graph_id og = m->nodes[dn].graph;
    bool ok = entry && jadd(entry, "name", cJSON_CreateString(m->nodes[dn].name)) &&
              jadd(entry, "file", cJSON_CreateString(file)) &&
              jadd(entry, "target", cJSON_CreateString(cv_attr_s(m, dn, "target", ""))) &&
              jadd(entry, "graph", og == 0 ? cJSON_CreateString("main") : cJSON_CreateString(m->graphs[og].name)) &&
              jadd(entry, "encodings", enc ? cJSON_CreateString(encfile) : cJSON_CreateNull()) &&
              jadd(entry, "qdq", cJSON_CreateString(x->o->strip_qdq ? "stripped" : "kept")) &&
              jadd(entry, "qdq_nodes_left", cJSON_CreateNumber(kept)) &&
              jadd(entry, "ir_version", cJSON_CreateNumber((double)d->ir_version)) &&
              jadd(entry, "opset", cJSON_CreateNumber((double)carve_model_opset(d, ""))) &&
              jadd(entry, "onnx_1_12_checkable", cJSON_CreateBool(checker_112_knows(d))) &&
              jadd(entry, "inputs", ins) && jadd(entry, "outputs", outs);
    if (!ok)
        ins = outs = NULL;
    for (uint32_t i = 0; ok && i < d->graphs[0].inputs.n; i++)
        ok = cJSON_AddItemToArray(ins, io_json(m, d, d->graphs[0].inputs.v[i], m->nodes[dn].in[i], true, m->nodes[dn].name));
    for (uint32_t i = 0; ok && i < d->graphs[0].outputs.n; i++)
        ok = cJSON_AddItemToArray(outs, io_json(m, d, d->graphs[0].outputs.v[i], m->nodes[dn].out[i], false, m->nodes[dn].name));
    if (!ok || !cJSON_AddItemToArray(x->parts, entry)) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing the manifest");
        goto out;
    }
    entry = NULL;
out:
    cJSON_Delete(entry);
    cv_free(enc);
    cv_free(c.map);
    carve_model_free(d);
    return st;
}

/* The main graph's steps in execution order: each partition, and the runs
 * of CPU nodes between them. */
static cJSON *schedule(const carve_model *m)
{
    cJSON *steps = cJSON_CreateArray(), *cpu = NULL;
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; steps && i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        bool del = !strcmp(n->op, "Delegate") && !strcmp(n->domain, "ai.carve");
        cJSON *s = NULL;
        if (del) {
            cpu = NULL;
            s = cJSON_CreateObject();
            if (!s || !cJSON_AddItemToArray(steps, s) || !jadd(s, "partition", cJSON_CreateString(n->name)))
                goto fail;
            continue;
        }
        if (!cpu) {
            s = cJSON_CreateObject();
            if (!s || !cJSON_AddItemToArray(steps, s) || !jadd(s, "cpu", cpu = cJSON_CreateArray()))
                goto fail;
        }
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(cpu, o) || !jadd(o, "name", cJSON_CreateString(n->name)) ||
            !jadd(o, "op", cJSON_CreateString(n->op)) || (*n->domain && !jadd(o, "domain", cJSON_CreateString(n->domain))))
            goto fail;
    }
    return steps;
fail:
    cJSON_Delete(steps);
    return NULL;
}

carve_status carve_outputs_add_partitions_opts(carve_outputs *o, carve_model *m, const char *dir,
                                               const carve_export_opts *opts, size_t *count)
{
    static const carve_export_opts dflt = {false, CARVE_AIMET_1_0_0};
    *count = 0;
    if (!o)
        return CARVE_ERR_NOMEM;
    carve_status st = carve_outputs_protect(o, m->source_path, "input model");
    for (uint32_t i = 0; !st && i < m->n_ext_files; i++)
        st = carve_outputs_protect(o, m->ext_files[i], "input model's external data");
    if (st) {
        cv_outputs_fail(o);
        return st;
    }
    xctx x = {opts ? opts : &dflt, dir, cJSON_CreateArray(), o};
    st = x.parts ? CARVE_OK : cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    /* execution order: the main graph's order, then subgraphs' */
    cv_ids order = {0};
    for (carve_graph_id g = 0; !st && g < m->n_graphs; g++)
        for (uint32_t i = 0; !st && i < m->graphs[g].nodes.n; i++) {
            carve_node_id n = m->graphs[g].nodes.v[i];
            if (!m->nodes[n].dead && !strcmp(m->nodes[n].op, "Delegate") && !strcmp(m->nodes[n].domain, "ai.carve") &&
                !cv_ids_push(&order, n))
                st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        }
    for (uint32_t i = 0; !st && i < order.n; i++) {
        st = export_one(&x, m, order.v[i]);
        if (!st)
            ++*count;
    }
    cv_ids_free(&order);
    cJSON *root = st ? NULL : cJSON_CreateObject();
    if (!st) {
        bool ok = root && jadd(root, "format", cJSON_CreateString("carve.partitions")) &&
                  jadd(root, "version", cJSON_CreateNumber(1)) &&
                  jadd(root, "encodings_version",
                       cJSON_CreateString(x.o->encodings_version == CARVE_AIMET_0_6_1 ? "0.6.1" : "1.0.0")) &&
                  jadd(root, "partitions", x.parts);
        if (ok)
            x.parts = NULL;
        ok = ok && jadd(root, "schedule", schedule(m));
        char *s = ok ? cJSON_Print(root) : NULL;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/manifest.json", dir);
        st = s ? carve_outputs_add_bytes(o, path, "partition manifest", s, strlen(s))
               : cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        cJSON_free(s);
    }
    cJSON_Delete(root);
    cJSON_Delete(x.parts);
    if (st) {
        cv_outputs_fail(o);
        *count = 0;
    }
    return st;
}

carve_status carve_outputs_add_partitions(carve_outputs *o, carve_model *m, const char *dir, size_t *count)
{
    return carve_outputs_add_partitions_opts(o, m, dir, NULL, count);
}

carve_status carve_export_partitions_opts(carve_model *m, const char *dir, const carve_export_opts *opts, size_t *count)
{
    carve_outputs *o = carve_outputs_new(m->ctx);
    carve_status s = carve_outputs_add_partitions_opts(o, m, dir, opts, count);
    if (!s)
        s = carve_outputs_commit(o);
    if (s)
        *count = 0;
    carve_outputs_free(o);
    return s;
}

carve_status carve_export_partitions(carve_model *m, const char *dir, size_t *count)
{
    return carve_export_partitions_opts(m, dir, NULL, count);
}

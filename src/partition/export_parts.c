/* export_parts.c: each Delegate body as a standalone ONNX model, the form a
 * vendor's converter takes. Inputs and outputs take the outer (model) names;
 * outer constants the body reads become initializers; the Delegate's target
 * and encodings become metadata_props "carve.target" and "carve.encodings". */
#define _DEFAULT_SOURCE
#include "partition.h"

#include "../io/files.h"
#include "../onnx/onnx_io.h"

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

static carve_status export_one(carve_outputs *o, carve_model *m, carve_node_id dn, const char *dir)
{
    carve_graph_id body = cv_attr_g(m, dn, "body");
    carve_model *d = carve_model_new(m->ctx);
    if (!d)
        return CARVE_ERR_NOMEM;
    copier c = {m, d, cv_malloc(((size_t)m->n_values + 1) * sizeof(carve_value_id))};
    carve_status st = CARVE_OK;
    if (!c.map) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < m->n_values; i++)
        c.map[i] = CARVE_NONE;
    d->ir_version = m->ir_version;
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
        cv_value *x = &d->values[d->graphs[0].inputs.v[i]];
        cv_strmap_del(&d->graphs[0].scope, x->name);
        x->name = m->values[m->nodes[dn].in[i]].name;
        cv_strmap_put(&d->graphs[0].scope, x->name, d->graphs[0].inputs.v[i]);
    }
    for (uint32_t i = 0; i < d->graphs[0].outputs.n; i++) {
        cv_value *x = &d->values[d->graphs[0].outputs.v[i]];
        if (x->is_input || x->init)
            continue; /* a passthrough keeps the input's name */
        cv_strmap_del(&d->graphs[0].scope, x->name);
        x->name = m->values[m->nodes[dn].out[i]].name;
        cv_strmap_put(&d->graphs[0].scope, x->name, d->graphs[0].outputs.v[i]);
    }
    if ((st = carve_model_verify(d)))
        goto out;
    char path[PATH_MAX], clean[256];
    snprintf(clean, sizeof clean, "%s", m->nodes[dn].name);
    for (char *p = clean; *p; p++)
        if (*p == '/' || *p == '\\' || *p == ':' || *p == ' ' || *p == '#')
            *p = '_';
    if ((size_t)snprintf(path, sizeof path, "%s/%s.onnx", dir, clean) >= sizeof path) {
        st = cv_error(m->ctx, CARVE_ERR_ARG, "%s: path too long", dir);
        goto out;
    }
    char what[300];
    snprintf(what, sizeof what, "partition '%s'", m->nodes[dn].name);
    st = cv_save_model(o, d, path, NULL, what);
out:
    cv_free(c.map);
    carve_model_free(d);
    return st;
}

carve_status carve_outputs_add_partitions(carve_outputs *o, carve_model *m, const char *dir, size_t *count)
{
    *count = 0;
    if (!o)
        return CARVE_ERR_NOMEM;
    carve_status ps = carve_outputs_protect(o, m->source_path, "input model");
    for (uint32_t i = 0; !ps && i < m->n_ext_files; i++)
        ps = carve_outputs_protect(o, m->ext_files[i], "input model's external data");
    if (ps) {
        cv_outputs_fail(o);
        return ps;
    }
    for (carve_node_id n = 0; n < m->n_nodes; n++) {
        if (m->nodes[n].dead || strcmp(m->nodes[n].op, "Delegate") || strcmp(m->nodes[n].domain, "ai.carve"))
            continue;
        carve_status s = export_one(o, m, n, dir);
        if (s) {
            cv_outputs_fail(o);
            return s;
        }
        ++*count;
    }
    return CARVE_OK;
}

carve_status carve_export_partitions(carve_model *m, const char *dir, size_t *count)
{
    carve_outputs *o = carve_outputs_new(m->ctx);
    carve_status s = carve_outputs_add_partitions(o, m, dir, count);
    if (!s)
        s = carve_outputs_commit(o);
    if (s)
        *count = 0;
    carve_outputs_free(o);
    return s;
}

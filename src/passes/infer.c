/* infer.c: type and shape inference over the whole model.
 *
 * Walks every graph in topological order (subgraphs before the node that
 * holds them) and asks each node's op for its output types. Values known at
 * compile time (initializers, Constants, and results of pure ops on them,
 * within a size budget) are computed with the reference kernels, so shape
 * arithmetic (Shape -> Gather -> Concat -> Reshape) yields exact shapes. */
#include "passes.h"

#include <string.h>

typedef struct {
    carve_model *m;
    cv_val **known; /* by value id */
    size_t max_elems;
    int64_t onnx_opset;
    cv_op_memo rows;
    /* by op table row: ONNX's type constraints at its domain's opset (no
     * opset changes during the pass), found at the row's first node */
    struct row_tcons {
        cv_tcons tc;
        bool made;
    } *tcons;
} ipass;

static const cv_val *const_input(cv_ictx *c, uint32_t i)
{
    ipass *p = c->user;
    const cv_node *n = &c->m->nodes[c->node];
    if (i >= n->n_in || n->in[i] == CARVE_NONE)
        return NULL;
    return p->known[n->in[i]];
}


static bool all_known(ipass *p, const cv_node *n)
{
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->in[i] != CARVE_NONE && !p->known[n->in[i]])
            return false;
    return true;
}

/* Runs a pure op on known inputs; its outputs become known. false: it did
 * not run (only a run makes a node's outputs known). */
static bool try_compute(ipass *p, carve_node_id id, const cv_op_def *def, int64_t opset)
{
    carve_model *m = p->m;
    const cv_node *n = &m->nodes[id];
    if (!def || (def->flags & (CV_OP_IMPURE | CV_OP_CONTROL | CV_OP_NONTENSOR)) || !all_known(p, n) ||
        n->n_in > 16 || n->n_out > 8)
        return false;
    size_t total = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->in[i] != CARVE_NONE)
            total += p->known[n->in[i]]->nelem;
    if (total > p->max_elems)
        return false;
    cv_val *in[16] = {0}, *out[8] = {0};
    for (uint32_t i = 0; i < n->n_in; i++)
        in[i] = n->in[i] == CARVE_NONE ? NULL : p->known[n->in[i]];
    cv_kctx k = {m, id, opset, NULL, NULL};
    carve_ctx saved = *m->ctx; /* a failing kernel here is not an error of inference */
    carve_status s = def->kernel(&k, in, n->n_in, out, n->n_out);
    *m->ctx = saved;
    for (uint32_t j = 0; j < n->n_out; j++) {
        if (!s && n->out[j] != CARVE_NONE && out[j] && out[j]->kind == CV_VAL_TENSOR &&
            out[j]->nelem <= p->max_elems) {
            p->known[n->out[j]] = out[j];
            continue;
        }
        cv_val_unref(out[j]);
    }
    return true;
}

static carve_status infer_graph(ipass *p, carve_graph_id g);

/* The errors of infer_node, out of its way. */
static carve_status misfit(carve_model *m, carve_node_id id, const cv_op_def *def)
{
    char why[512];
    cv_node_fits(m, id, def, why, sizeof why);
    return cv_error(m->ctx, CARVE_ERR_INVALID, "%s", why);
}

static carve_status type_refused(carve_model *m, carve_node_id id, uint32_t i, uint32_t mask, int64_t opset)
{
    const cv_node *n = &m->nodes[id];
    const cv_value *v = &m->values[n->in[i]];
    char allowed[256] = "";
    size_t k = 0;
    for (int d = 1; d < 32 && k < sizeof allowed; d++)
        if (mask >> d & 1u)
            k += (size_t)snprintf(allowed + k, sizeof allowed - k, "%s%s", k ? ", " : "",
                                  carve_dtype_name((carve_dtype)d));
    return cv_error(m->ctx, CARVE_ERR_INVALID,
                    "node '%s' (%s): input %u '%s' is %s, which %s at opset %lld does not take (type constraint: "
                    "%s)",
                    n->name, n->op, i, v->name, carve_dtype_name(v->type.dtype), n->op, (long long)opset, allowed);
}

static carve_status infer_node(ipass *p, carve_node_id id)
{
    carve_model *m = p->m;
    const cv_node *n = &m->nodes[id];
    for (uint32_t j = 0; j < n->n_attr; j++) {
        const cv_attr *a = &n->attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++) {
            carve_status s = infer_graph(p, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k]);
            if (s)
                return s;
        }
    }
    const cv_op_def *def = cv_op_for_node_memo(m, id, &p->rows);
    if (!def)
        return CARVE_OK; /* unknown op: its outputs keep what the model declares */
    if (!cv_node_fits(m, id, def, NULL, 0)) /* kernels and inference functions assume it */
        return misfit(m, id, def);
    /* ONNX's type constraints: what the kernel would refuse at run time */
    int64_t opset = *n->domain ? carve_model_opset(m, n->domain) : p->onnx_opset;
    struct row_tcons *rt = &p->tcons[cv_op_row(def)];
    if (!rt->made) {
        rt->tc = cv_type_constraints_def(def, opset);
        rt->made = true;
    }
    for (uint32_t i = 0; rt->tc.n && i < n->n_in; i++) {
        carve_value_id v = n->in[i];
        const cv_type *t = v == CARVE_NONE ? NULL : &m->values[v].type;
        if (!t || t->kind != CARVE_TYPE_TENSOR || !t->dtype)
            continue;
        carve_dtype dt = t->dtype;
        uint32_t mask = cv_tcons_mask(rt->tc, i);
        if (!mask || (mask >> dt & 1u))
            continue;
        return type_refused(m, id, i, mask, opset);
    }
    bool computed = try_compute(p, id, def, opset) && n->n_out > 0;
    for (uint32_t j = 0; computed && j < n->n_out; j++)
        if (n->out[j] != CARVE_NONE && !p->known[n->out[j]])
            computed = false;
    cv_ictx c = {m, id, opset, const_input, p};
    if (computed) {
        for (uint32_t j = 0; j < n->n_out; j++) {
            if (n->out[j] == CARVE_NONE)
                continue;
            const cv_val *v = p->known[n->out[j]];
            carve_dim d[CARVE_MAX_RANK];
            for (int r = 0; r < v->rank; r++)
                d[r] = (carve_dim){v->dims[r], NULL};
            carve_status s = cv_infer_set(&c, j, v->dtype, v->rank, d);
            if (s)
                return s;
        }
        return CARVE_OK;
    }
    return def->infer ? def->infer(&c) : CARVE_OK;
}

static carve_status infer_graph(ipass *p, carve_graph_id g)
{
    carve_model *m = p->m;
    cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->inits.n; i++) {
        carve_value_id v = gr->inits.v[i];
        if (!m->values[v].is_input && !p->known[v] && m->values[v].init->nelem <= p->max_elems)
            p->known[v] = cv_val_from_tensor(m->values[v].init);
    }
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        carve_status s = infer_node(p, gr->nodes.v[i]);
        if (s)
            return s;
    }
    return CARVE_OK;
}

carve_status cv_infer_model(carve_model *m, const cv_infer_opts *opts)
{
    ipass p = {.m = m,
               .known = cv_malloc(((size_t)m->n_values + 1) * sizeof(cv_val *)),
               .max_elems = opts && opts->max_const_elems ? opts->max_const_elems : 65536,
               .onnx_opset = carve_model_opset(m, ""),
               .tcons = cv_malloc(cv_op_count() * sizeof *p.tcons)};
    if (!p.known || !p.tcons) {
        cv_free(p.known);
        cv_free(p.tcons);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory in inference");
    }
    memset(p.known, 0, ((size_t)m->n_values + 1) * sizeof(cv_val *));
    memset(p.tcons, 0, cv_op_count() * sizeof *p.tcons);
    uint32_t n_values = m->n_values;
    carve_status s = infer_graph(&p, 0);
    for (uint32_t i = 0; i < n_values; i++)
        cv_val_unref(p.known[i]);
    cv_free(p.known);
    cv_free(p.tcons);
    return s;
}

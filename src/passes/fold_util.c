/* fold_util.c: the helper library of the folding passes (fold.c, noop.c,
 * fold_qdq.c, fuse.c, dce.c, recompose.c): the per-node fate table, live
 * graphs and use counts, dropping nodes with their subgraphs, new
 * initializers, rebinding outputs, replacing reads, and running one node's
 * reference kernel. fold.c is the driver and the constant folding itself;
 * these are the pieces every fold file needs (declared in passes.h). */
#include "passes.h"
#include "../ops/blas.h"

#include <stdlib.h>
#include <string.h>

bool cv_fold_grow(cv_fold *f)
{
    uint32_t n = f->m->n_nodes;
    if (n <= f->cap)
        return true;
    /* the first size fits the model with room for a few new nodes: every
     * entry up to cap is written, and fresh pages are not free */
    uint32_t cap = f->cap ? f->cap : n + n / 8 + 64;
    while (cap < n)
        cap *= 2;
    cv_fold_node *p = cv_realloc(f->nodes, (size_t)cap * sizeof *p);
    if (!p)
        return false;
    for (uint32_t i = f->cap; i < cap; i++)
        p[i] = (cv_fold_node){.why = NULL, .fate = CV_FATE_KEPT, .into = CARVE_NONE, .from = CARVE_NONE, .guard = -1};
    f->nodes = p;
    f->cap = cap;
    return true;
}

static bool graphs_rec(const carve_model *m, carve_graph_id g, cv_ids *out, int depth)
{
    if (depth > 64 || !cv_ids_push(out, g))
        return false;
    const cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        const cv_node *n = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++)
                if (!graphs_rec(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], out, depth + 1))
                    return false;
        }
    }
    return true;
}

bool cv_fold_graphs(const carve_model *m, cv_ids *out)
{
    out->n = 0;
    if (m->n_graphs == 1) /* no subgraph anywhere: no need to look at every node */
        return cv_ids_push(out, 0);
    return graphs_rec(m, 0, out, 0);
}

carve_status cv_fold_uses(cv_fold *f)
{
    bool same = f->uses_valid && f->uses_nodes == f->m->n_nodes && f->uses_values == f->m->n_values &&
                !memcmp(&f->uses_st, &f->st, sizeof f->st);
    return same ? CARVE_OK : cv_fold_count_uses(f);
}

void cv_fold_uses_stand(cv_fold *f)
{
    f->uses_valid = true;
    f->uses_st = f->st;
    f->uses_nodes = f->m->n_nodes;
    f->uses_values = f->m->n_values;
}

carve_status cv_fold_sweep_start(cv_fold *f, cv_ids *gs)
{
    carve_status s = cv_fold_uses(f);
    if (!s && !cv_fold_graphs(f->m, gs))
        s = cv_error(f->m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    return s;
}

carve_status cv_fold_sweep(cv_fold *f, cv_fold_visit_fn visit, cv_fold_visit_fn after, void *arg,
                           const char *nomem)
{
    carve_model *m = f->m;
    cv_ids gs = {0}, nodes = {0};
    carve_status s = cv_fold_sweep_start(f, &gs);
    for (uint32_t k = 0; k < gs.n && !s; k++) {
        if (!cv_ids_copy(&nodes, &m->graphs[gs.v[k]].nodes))
            s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory %s", nomem);
        f->lazy_g = gs.v[k];
        if (!s)
            s = visit(f, gs.v[k], &nodes, arg);
        cv_fold_flush(f);
        f->lazy_g = CARVE_NONE;
        carve_status a = after ? after(f, gs.v[k], &nodes, arg) : CARVE_OK;
        if (!s)
            s = a;
    }
    cv_ids_free(&nodes);
    cv_ids_free(&gs);
    return s;
}

carve_status cv_fold_count_uses(cv_fold *f)
{
    carve_model *m = f->m;
    if (!f->uses || f->n_uses < m->n_values) {
        uint32_t *u = cv_realloc(f->uses, ((size_t)m->n_values + 1) * sizeof *u);
        if (u)
            f->uses = u;
        uint8_t *o = cv_realloc(f->is_out, (size_t)m->n_values + 1);
        if (o)
            f->is_out = o;
        if (!u || !o)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        f->n_uses = m->n_values;
    }
    memset(f->uses, 0, (size_t)f->n_uses * sizeof *f->uses);
    memset(f->is_out, 0, f->n_uses);
    cv_ids gs = {0};
    if (!cv_fold_graphs(m, &gs)) {
        cv_ids_free(&gs);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    }
    for (uint32_t k = 0; k < gs.n; k++) {
        const cv_graph *gr = &m->graphs[gs.v[k]];
        for (uint32_t i = 0; i < gr->nodes.n; i++) {
            const cv_node *n = &m->nodes[gr->nodes.v[i]];
            for (uint32_t j = 0; j < n->n_in; j++)
                if (n->in[j] != CARVE_NONE)
                    f->uses[n->in[j]]++;
        }
        for (uint32_t i = 0; i < gr->outputs.n; i++) {
            f->uses[gr->outputs.v[i]]++;
            f->is_out[gr->outputs.v[i]] = 1;
        }
    }
    cv_ids_free(&gs);
    cv_fold_uses_stand(f);
    return CARVE_OK;
}

uint64_t cv_fold_constant_bytes(const carve_model *m, carve_node_id id)
{
    const cv_node *n = &m->nodes[id];
    for (uint32_t j = 0; j < n->n_attr; j++) {
        const cv_attr *a = &n->attr[j];
        switch (a->kind) {
        case CARVE_ATTR_TENSOR: return a->u.t->dtype == CARVE_STRING ? 0 : a->u.t->nbytes;
        case CARVE_ATTR_FLOAT: return 4;
        case CARVE_ATTR_INT: return 8;
        case CARVE_ATTR_FLOATS: return 4 * (uint64_t)a->n;
        case CARVE_ATTR_INTS: return 8 * (uint64_t)a->n;
        default: break;
        }
    }
    return 0;
}

uint64_t cv_fold_tensor_bytes(const cv_tensor *t) { return t->dtype == CARVE_STRING ? 0 : t->nbytes; }

void cv_fold_drop_graph(cv_fold *f, carve_graph_id g, carve_node_id into, const char *why)
{
    carve_model *m = f->m;
    cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->inits.n; i++)
        if (!m->values[gr->inits.v[i]].is_input)
            f->st.bytes_removed += cv_fold_tensor_bytes(m->values[gr->inits.v[i]].init);
    gr->inits.n = 0;
    for (uint32_t i = gr->nodes.n; i-- > 0;) /* from the end: each is the last listed */
        cv_fold_drop(f, gr->nodes.v[i], CV_FATE_REMOVED, into, why);
    gr->nodes.n = 0;
}

void cv_fold_drop(cv_fold *f, carve_node_id n, cv_fate fate, carve_node_id into, const char *why)
{
    carve_model *m = f->m;
    cv_node *nd = &m->nodes[n];
    if (nd->dead)
        return;
    for (uint32_t j = 0; j < nd->n_attr; j++) {
        const cv_attr *a = &nd->attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++)
            cv_fold_drop_graph(f, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], into, why);
    }
    if (fate == CV_FATE_REMOVED && cv_op_has(m, n, CV_OP_CONST_SOURCE))
        f->st.bytes_removed += cv_fold_constant_bytes(m, n);
    if (nd->graph == f->lazy_g) {
        cv_node_remove_later(m, n);
        f->lazy_dirty = true;
    } else {
        cv_node_remove(m, n);
    }
    if (n < f->cap && f->nodes[n].guard >= 0) {
        /* refusals count nodes the folded model keeps as ops */
        f->st.refused[f->nodes[n].guard]--;
        f->nodes[n].guard = -1;
    }
    if (n < f->cap) {
        f->nodes[n].fate = fate;
        f->nodes[n].why = why;
        f->nodes[n].into = into;
    }
    if (fate == CV_FATE_FOLDED)
        f->st.folded++;
    else
        f->st.removed++;
}

void cv_fold_flush(cv_fold *f)
{
    if (f->lazy_dirty && f->lazy_g != CARVE_NONE)
        cv_graph_drop_dead(f->m, f->lazy_g);
    f->lazy_dirty = false;
}

carve_value_id cv_fold_new_init(cv_fold *f, carve_graph_id g, const char *base, carve_dtype dtype, int rank,
                                const int64_t *dims, const void *data, size_t nbytes)
{
    carve_model *m = f->m;
    const char *name = cv_value_unique_name(m, g, base);
    if (!name) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        return CARVE_NONE;
    }
    carve_value_id v = carve_graph_add_initializer(m, g, name, dtype, rank, dims, data, nbytes);
    if (v != CARVE_NONE)
        f->st.bytes_added += nbytes;
    return v;
}

void cv_fold_rebind_output(cv_fold *f, carve_node_id n, uint32_t j, carve_value_id v)
{
    carve_model *m = f->m;
    carve_value_id old = m->nodes[n].out[j];
    if (old != CARVE_NONE && old != v) {
        cv_value *x = &m->values[old];
        x->producer = CARVE_NONE;
        if (cv_strmap_get(&m->graphs[x->graph].scope, x->name) == old)
            cv_strmap_del(&m->graphs[x->graph].scope, x->name);
    }
    m->nodes[n].out[j] = v;
    m->values[v].producer = n;
    m->values[v].out_index = j;
}

static uint32_t kind_by_name(const cv_fold_ops *k, const char *op)
{
    for (uint32_t i = 0; i < k->n; i++)
        if (!strcmp(k->names[i], op))
            return i + 1;
    return 0;
}

uint32_t cv_fold_op_kind_slow(cv_fold_ops *k, cv_fold *f, carve_node_id n)
{
    const cv_node *nd = &f->m->nodes[n];
    uint16_t *row = n < f->cap ? &f->nodes[n].row : NULL;
    if (row && !*row)
        cv_fold_row_seen(f, n, *nd->domain ? NULL : cv_op_for_node(f->m, n));
    if (*nd->domain)
        return 0; /* the names are ONNX ops (cv_node_is) */
    if (!k->by_row && (k->by_row = cv_malloc(cv_op_count())))
        memset(k->by_row, 0, cv_op_count());
    if (!row || *row == CV_FOLD_NO_ROW || !k->by_row)
        return kind_by_name(k, nd->op); /* an op carve has no row for, or no memory for the memo */
    uint8_t *r = &k->by_row[*row - 1];
    if (!*r)
        *r = (uint8_t)(kind_by_name(k, cv_op_at(*row - 1u)->name) + 1);
    return *r - 1u;
}

void cv_fold_ops_free(cv_fold_ops *k)
{
    cv_free(k->by_row);
    k->by_row = NULL;
}

bool cv_fold_set_input(carve_model *m, carve_node_id n, uint32_t i, carve_value_id v)
{
    cv_node *nd = &m->nodes[n];
    if (i >= nd->n_in) {
        carve_value_id *in = cv_arena_alloc(&m->arena, ((size_t)i + 1) * sizeof *in);
        if (!in)
            return false;
        for (uint32_t k = 0; k <= i; k++)
            in[k] = k < nd->n_in ? nd->in[k] : CARVE_NONE;
        nd->in = in;
        nd->n_in = i + 1;
    }
    nd->in[i] = v;
    return true;
}

carve_status cv_fold_kernel(carve_model *m, carve_node_id n, cv_val **in, uint32_t n_in, cv_val **out,
                            uint32_t n_out)
{
    const cv_op_def *def = cv_op_for_node(m, n);
    const cv_node *nd = &m->nodes[n];
    char why[512];
    if (!def || !def->kernel || (def->flags & CV_OP_CONTROL) || !cv_node_fits(m, n, def, why, sizeof why))
        return CARVE_ERR_UNSUPPORTED;
    for (uint32_t j = 0; j < n_out; j++)
        out[j] = NULL;
    cv_kctx k = {m, n, carve_model_opset(m, nd->domain), NULL, NULL};
    cv_blas_threads(1); /* folding's GEMMs are small: no BLAS threads (blas.h) */
    carve_ctx saved = *m->ctx; /* a kernel failing here is not an error of folding */
    carve_status s = def->kernel(&k, in, n_in, out, n_out);
    if (s) {
        *m->ctx = saved;
        for (uint32_t j = 0; j < n_out; j++) {
            cv_val_unref(out[j]);
            out[j] = NULL;
        }
    }
    return s;
}

void cv_fold_replace_reads(carve_model *m, carve_graph_id g, carve_value_id from, carve_value_id to, bool outputs)
{
    cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        cv_node *n = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_in; j++)
            if (n->in[j] == from)
                n->in[j] = to;
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++) {
                carve_graph_id sub = a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k];
                cv_fold_replace_reads(m, sub, from, to, outputs);
                cv_graph *sg = &m->graphs[sub];
                for (uint32_t q = 0; outputs && q < sg->outputs.n; q++)
                    if (sg->outputs.v[q] == from)
                        sg->outputs.v[q] = to;
            }
        }
    }
}

carve_value_id cv_fold_resolve(const carve_value_id *rep, uint32_t n_rep, carve_value_id v)
{
    for (int hops = 0; hops < 64 && v != CARVE_NONE && v < n_rep && rep[v] != CARVE_NONE; hops++)
        v = rep[v];
    return v;
}

void cv_fold_replace_reads_map(carve_model *m, carve_graph_id g, const carve_value_id *rep, uint32_t n_rep)
{
    const cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        cv_node *n = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_in; j++)
            n->in[j] = cv_fold_resolve(rep, n_rep, n->in[j]);
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++)
                cv_fold_replace_reads_map(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], rep, n_rep);
        }
    }
}


/* verify.c: the invariants every pass relies on. The first broken rule is
 * reported with the node's name, its op and the field. */
#include "ir.h"

#include <string.h>

typedef struct {
    carve_model *m;
    uint32_t *pos;  /* node id -> position in its graph, CARVE_NONE if unplaced */
    uint8_t *named; /* node id -> 1 if the model's name map maps its name to it */
} vctx;

#define NODE_FMT "node '%s' (%s)"
#define NODE_ARGS(n) ((n)->name ? (n)->name : "?"), (n)->op

static carve_status fail(vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static carve_status fail(vctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_verror(c->m->ctx, CARVE_ERR_INVALID, fmt, ap);
    va_end(ap);
    return CARVE_ERR_INVALID;
}

/* Is value v visible to a node at position `at` of graph g? */
static bool visible(vctx *c, carve_value_id v, carve_graph_id g, uint32_t at)
{
    const carve_model *m = c->m;
    const cv_value *x = &m->values[v];
    if (!cv_graph_encloses(m, x->graph, g))
        return false;
    if (x->producer == CARVE_NONE)
        return x->is_input || x->init;
    /* Find the position in x's graph from which v is read: the node itself,
     * or the ancestor node whose subgraph holds the reader. */
    for (carve_graph_id h = g; h != x->graph; h = m->graphs[h].parent) {
        carve_node_id owner = m->graphs[h].owner;
        if (owner == CARVE_NONE)
            return false;
        at = c->pos[owner];
    }
    return c->pos[x->producer] != CARVE_NONE && c->pos[x->producer] < at;
}

static carve_status check_type(vctx *c, const cv_value *v, const cv_tensor *t, const char *what)
{
    if (v->type.kind != CARVE_TYPE_TENSOR)
        return CARVE_OK;
    if (v->type.dtype != CARVE_UNDEFINED && v->type.dtype != t->dtype)
        return fail(c, "%s '%s': declared %s but its data is %s", what, v->name,
                    carve_dtype_name(v->type.dtype), carve_dtype_name(t->dtype));
    if (v->type.rank >= 0 && v->type.rank != t->rank)
        return fail(c, "%s '%s': declared rank %d but its data has rank %d", what, v->name,
                    v->type.rank, t->rank);
    for (int i = 0; v->type.rank >= 0 && i < v->type.rank; i++)
        if (v->type.dims[i].value >= 0 && v->type.dims[i].value != t->dims[i])
            return fail(c, "%s '%s': declared dim %d = %lld but its data has %lld", what, v->name, i,
                        (long long)v->type.dims[i].value, (long long)t->dims[i]);
    return CARVE_OK;
}

static carve_status verify_graph(vctx *c, carve_graph_id g)
{
    carve_model *m = c->m;
    const cv_graph *gr = &m->graphs[g];
    uint32_t n_subs = 0; /* subgraphs its nodes hold */
    for (uint32_t i = 0; i < gr->nodes.n; i++)
        c->pos[gr->nodes.v[i]] = i;
    for (uint32_t i = 0; i < gr->inputs.n; i++) {
        const cv_value *v = &m->values[gr->inputs.v[i]];
        if (v->graph != g || !v->is_input)
            return fail(c, "graph '%s': input %u '%s' does not belong to it", gr->name, i, v->name);
    }
    for (uint32_t i = 0; i < gr->inits.n; i++) {
        const cv_value *v = &m->values[gr->inits.v[i]];
        if (v->graph != g || !v->init)
            return fail(c, "graph '%s': initializer %u '%s' does not belong to it", gr->name, i, v->name);
        carve_status s = check_type(c, v, v->init, "initializer");
        if (s)
            return s;
    }
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        carve_node_id id = gr->nodes.v[i];
        const cv_node *n = &m->nodes[id];
        if (n->graph != g)
            return fail(c, NODE_FMT " is listed in graph '%s' but belongs to another", NODE_ARGS(n), gr->name);
        if (!n->name || !*n->name || !c->named[id])
            return fail(c, NODE_FMT ": its name is missing or not unique", NODE_ARGS(n));
        for (uint32_t j = 0; j < n->n_in; j++) {
            carve_value_id v = n->in[j];
            if (v == CARVE_NONE)
                continue;
            if (v >= m->n_values)
                return fail(c, NODE_FMT ": input %u is not a value", NODE_ARGS(n), j);
            const cv_value *x = &m->values[v];
            if (x->graph == g) { /* the common case: visible() without its scope walk */
                bool seen = x->producer == CARVE_NONE ? x->is_input || x->init
                                                      : c->pos[x->producer] != CARVE_NONE && c->pos[x->producer] < i;
                if (seen)
                    continue;
            } else if (!cv_graph_encloses(m, x->graph, g))
                return fail(c, NODE_FMT ": input %u '%s' is defined in graph '%s', out of this node's scope",
                            NODE_ARGS(n), j, x->name, m->graphs[x->graph].name);
            if (!visible(c, v, g, i))
                return fail(c, NODE_FMT ": input %u '%s' is not defined before it is used", NODE_ARGS(n),
                            j, x->name);
        }
        for (uint32_t j = 0; j < n->n_out; j++) {
            carve_value_id v = n->out[j];
            if (v == CARVE_NONE)
                continue;
            const cv_value *x = &m->values[v];
            if (x->producer != id || x->out_index != j || x->graph != g)
                return fail(c, NODE_FMT ": output %u '%s' is written by another node too", NODE_ARGS(n), j,
                            x->name);
            if (x->is_input || x->init)
                return fail(c, NODE_FMT ": output %u '%s' is also a graph input or initializer",
                            NODE_ARGS(n), j, x->name);
        }
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            n_subs += cnt;
            for (uint32_t k = 0; k < cnt; k++) {
                carve_graph_id sub = a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k];
                if (sub >= m->n_graphs || m->graphs[sub].parent != g || m->graphs[sub].owner != id)
                    return fail(c, NODE_FMT ": attribute '%s' holds a graph that is not its own subgraph",
                                NODE_ARGS(n), a->name);
            }
        }
        if (cv_node_is_constant(n) && n->n_out == 1 && n->out[0] != CARVE_NONE) {
            const cv_attr *a = cv_node_attr_find(m, id, "value");
            if (a && a->kind == CARVE_ATTR_TENSOR) {
                carve_status s = check_type(c, &m->values[n->out[0]], a->u.t, "Constant output");
                if (s)
                    return s;
            }
        }
    }
    for (uint32_t i = 0; i < gr->outputs.n; i++) {
        carve_value_id v = gr->outputs.v[i];
        if (v >= m->n_values || !visible(c, v, g, gr->nodes.n))
            return fail(c, "graph '%s': output %u '%s' is not defined", gr->name, i,
                        v < m->n_values ? m->values[v].name : "?");
    }
    /* Subgraphs after this graph's positions are set: their checks read
     * positions of enclosing nodes. Children reset only their own nodes. */
    for (uint32_t i = 0; i < gr->nodes.n && n_subs; i++) {
        const cv_node *n = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++) {
                carve_status s = verify_graph(c, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k]);
                if (s)
                    return s;
            }
        }
    }
    return CARVE_OK;
}

/* Which nodes the name map maps their names to, from one walk of its slots
 * instead of a look-up (a hash) per node: a node's name is unique exactly
 * when the slot whose key equals it holds the node, and keys are unique.
 * Keys are mostly the nodes' own name strings (claim stores them), so the
 * test is nearly always a pointer comparison. */
static void mark_named(const carve_model *m, uint8_t *named)
{
    const cv_strmap *map = &m->node_names;
    for (uint32_t i = 0; i < map->cap; i++) {
        const cv_strslot *s = &map->slots[i];
        if (!s->key || s->val >= m->n_nodes)
            continue;
        const char *name = m->nodes[s->val].name;
        named[s->val] = name && (name == s->key || strcmp(name, s->key) == 0);
    }
}

carve_status carve_model_verify(carve_model *m)
{
    size_t nn = (size_t)m->n_nodes + 1;
    uint32_t *pos = cv_malloc(nn * sizeof(uint32_t) + nn);
    if (!pos)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory verifying");
    vctx c = {m, pos, (uint8_t *)(pos + nn)};
    memset(c.pos, 0xff, (size_t)m->n_nodes * sizeof *c.pos); /* CARVE_NONE */
    memset(c.named, 0, nn);
    mark_named(m, c.named);
    /* Every graph but main must hang off a node, or it is a leftover. */
    carve_status s = CARVE_OK;
    for (uint32_t g = 1; g < m->n_graphs && !s; g++)
        if (m->graphs[g].owner == CARVE_NONE)
            s = fail(&c, "graph '%s' is not attached to any node", m->graphs[g].name);
    if (!s)
        s = verify_graph(&c, 0);
    cv_free(c.pos);
    return s;
}

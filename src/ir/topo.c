/* topo.c: topological sorts (stable, and independent of file order) and
 * subgraph captures. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* out without duplicates: a linear scan while out is short, then a hash set
 * of its entries (a body reading thousands of outer values stays linear). */
typedef struct {
    cv_ids *out;
    uint32_t *slot; /* value + 1, 0 = empty; cap a power of two */
    uint32_t cap, n;
} uniq;

static uint32_t uniq_home(uint32_t x, uint32_t cap) { return (uint32_t)((x * 2654435761u) & (cap - 1)); }

static bool uniq_insert(uniq *u, uint32_t x) /* true if x was new */
{
    uint32_t j = uniq_home(x, u->cap);
    while (u->slot[j]) {
        if (u->slot[j] == x + 1)
            return false;
        j = (j + 1) & (u->cap - 1);
    }
    u->slot[j] = x + 1;
    u->n++;
    return true;
}

static bool uniq_rehash(uniq *u, uint32_t need)
{
    uint32_t cap = 64;
    while (cap < 2 * need)
        cap *= 2;
    uint32_t *slot = cv_malloc((size_t)cap * sizeof *slot);
    if (!slot)
        return false;
    memset(slot, 0, (size_t)cap * sizeof *slot);
    cv_free(u->slot);
    u->slot = slot;
    u->cap = cap;
    u->n = 0;
    for (uint32_t i = 0; i < u->out->n; i++)
        uniq_insert(u, u->out->v[i]);
    return true;
}

static bool push_unique(uniq *u, uint32_t x)
{
    cv_ids *out = u->out;
    if (!u->slot && out->n < 32) {
        for (uint32_t i = 0; i < out->n; i++)
            if (out->v[i] == x)
                return true;
        return cv_ids_push(out, x);
    }
    if ((!u->slot || 2 * (u->n + 1) > u->cap) && !uniq_rehash(u, out->n + 1))
        return false;
    return !uniq_insert(u, x) || cv_ids_push(out, x);
}

static bool captures(const carve_model *m, carve_graph_id g, uniq *u);

/* Values read inside graph g (recursively) but defined outside it. */
bool cv_graph_captures(const carve_model *m, carve_graph_id g, cv_ids *out)
{
    uniq u = {out, NULL, 0, 0};
    bool ok = captures(m, g, &u);
    cv_free(u.slot);
    return ok;
}

static bool captures(const carve_model *m, carve_graph_id g, uniq *u)
{
    const cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        const cv_node *n = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_in; j++) {
            carve_value_id v = n->in[j];
            if (v != CARVE_NONE && m->values[v].graph != g && cv_graph_encloses(m, m->values[v].graph, g) &&
                !push_unique(u, v))
                return false;
        }
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++) {
                carve_graph_id sub = a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k];
                cv_ids inner = {0};
                if (!cv_graph_captures(m, sub, &inner)) {
                    cv_ids_free(&inner);
                    return false;
                }
                for (uint32_t q = 0; q < inner.n; q++)
                    if (m->values[inner.v[q]].graph != g && !push_unique(u, inner.v[q])) {
                        cv_ids_free(&inner);
                        return false;
                    }
                cv_ids_free(&inner);
            }
        }
    }
    for (uint32_t i = 0; i < gr->outputs.n; i++) {
        carve_value_id v = gr->outputs.v[i];
        if (m->values[v].graph != g && !push_unique(u, v))
            return false;
    }
    return true;
}

/* Min-heap of positions, so ready nodes leave in file order. */
typedef struct {
    uint32_t *a;
    uint32_t n;
} heap;

static void heap_push(heap *h, uint32_t x)
{
    uint32_t i = h->n++;
    h->a[i] = x;
    while (i && h->a[(i - 1) / 2] > h->a[i]) {
        uint32_t p = (i - 1) / 2, t = h->a[p];
        h->a[p] = h->a[i];
        h->a[i] = t;
        i = p;
    }
}

static uint32_t heap_pop(heap *h)
{
    uint32_t top = h->a[0];
    h->a[0] = h->a[--h->n];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < h->n && h->a[l] < h->a[s])
            s = l;
        if (r < h->n && h->a[r] < h->a[s])
            s = r;
        if (s == i)
            break;
        uint32_t t = h->a[s];
        h->a[s] = h->a[i];
        h->a[i] = t;
        i = s;
    }
    return top;
}

/* Edges of graph g as CSR over positions: preds of position i are
 * pred[start[i] .. start[i+1]). A node's dependencies are its inputs and the
 * values its subgraphs capture, where a node of g produces them. */
typedef struct {
    uint32_t *start, *pred;
} edges;

static bool build_edges(const carve_model *m, carve_graph_id g, const uint32_t *pos, edges *e)
{
    const cv_graph *gr = &m->graphs[g];
    uint32_t n = gr->nodes.n;
    cv_ids preds = {0};
    e->start = cv_malloc(((size_t)n + 1) * sizeof *e->start);
    if (!e->start)
        return false;
    cv_ids deps = {0}; /* reused from node to node */
    for (uint32_t i = 0; i < n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        e->start[i] = preds.n;
        deps.n = 0;
        bool ok = true;
        for (uint32_t j = 0; j < nd->n_in && ok; j++)
            if (nd->in[j] != CARVE_NONE)
                ok = cv_ids_push(&deps, nd->in[j]);
        for (uint32_t j = 0; j < nd->n_attr && ok; j++) {
            const cv_attr *a = &nd->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt && ok; k++)
                ok = cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], &deps);
        }
        for (uint32_t j = 0; j < deps.n && ok; j++) {
            const cv_value *v = &m->values[deps.v[j]];
            if (v->graph == g && v->producer != CARVE_NONE && m->nodes[v->producer].graph == g)
                ok = cv_ids_push(&preds, pos[v->producer]);
        }
        if (!ok) {
            cv_ids_free(&deps);
            cv_ids_free(&preds);
            return false;
        }
    }
    cv_ids_free(&deps);
    e->start[n] = preds.n;
    e->pred = preds.v;
    return true;
}

typedef struct {
    const char *name;
    uint32_t pos;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Orders the n nodes of graph g into order[] (positions in its node list).
 * Among ready nodes, the first to leave is the one with the smallest
 * position, or with the smallest name when by_name. Returns CARVE_OK,
 * CARVE_ERR_NOMEM, or CARVE_ERR_INVALID with *cycle the position of a node
 * on a cycle. Sets no message: the callers word their own. */
static carve_status order_nodes(const carve_model *m, carve_graph_id g, bool by_name, uint32_t *order,
                                uint32_t *cycle)
{
    const cv_graph *gr = &m->graphs[g];
    uint32_t n = gr->nodes.n;
    /* pos[node id] = position in the graph's current list. Node ids are
     * model-wide: the map is the model's reusable scratch (not model state,
     * hence the cast), so sorting one small graph costs O(graph). */
    uint32_t *pos = cv_model_scratch((carve_model *)m);
    uint32_t *indeg = cv_malloc((size_t)n * sizeof *indeg);
    uint32_t *succ_start = cv_malloc(((size_t)n + 1) * sizeof *succ_start);
    /* Heap keys: key[pos]; the node of a key is at position at[key]. */
    uint32_t *key = cv_malloc((size_t)n * sizeof *key);
    named *at = cv_malloc((size_t)n * sizeof *at);
    heap h = {cv_malloc((size_t)n * sizeof(uint32_t)), 0};
    edges e = {0};
    uint32_t *succ = NULL;
    carve_status st = CARVE_ERR_NOMEM;
    if (!pos || !indeg || !succ_start || !key || !at || !h.a)
        goto done;
    for (uint32_t i = 0; i < n; i++) {
        const char *name = m->nodes[gr->nodes.v[i]].name;
        pos[gr->nodes.v[i]] = i;
        at[i] = (named){name ? name : "", i};
    }
    if (by_name)
        qsort(at, n, sizeof *at, cmp_named);
    for (uint32_t k = 0; k < n; k++)
        key[at[k].pos] = k;
    if (!build_edges(m, g, pos, &e))
        goto done;
    uint32_t n_edges = e.start[n];
    succ = cv_malloc(((size_t)n_edges + 1) * sizeof *succ);
    if (!succ)
        goto done;
    memset(succ_start, 0, ((size_t)n + 1) * sizeof *succ_start);
    for (uint32_t i = 0; i < n; i++) {
        indeg[i] = e.start[i + 1] - e.start[i];
        for (uint32_t k = e.start[i]; k < e.start[i + 1]; k++)
            succ_start[e.pred[k] + 1]++;
    }
    for (uint32_t i = 0; i < n; i++)
        succ_start[i + 1] += succ_start[i];
    for (uint32_t i = 0; i < n; i++) /* order[] as fill cursor for now */
        order[i] = succ_start[i];
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = e.start[i]; k < e.start[i + 1]; k++)
            succ[order[e.pred[k]]++] = i;
    for (uint32_t i = 0; i < n; i++)
        if (!indeg[i])
            heap_push(&h, key[i]);
    uint32_t done_n = 0;
    while (h.n) {
        uint32_t i = at[heap_pop(&h)].pos;
        order[done_n++] = i;
        for (uint32_t k = succ_start[i]; k < succ_start[i + 1]; k++)
            if (--indeg[succ[k]] == 0)
                heap_push(&h, key[succ[k]]);
    }
    st = CARVE_OK;
    if (done_n < n) {
        /* Walk back through unsorted predecessors until a node repeats: that
         * node lies on a cycle. */
        uint32_t cur = 0;
        while (!indeg[cur])
            cur++;
        memset(order, 0, (size_t)n * sizeof *order); /* reuse as "seen" */
        while (!order[cur]) {
            order[cur] = 1;
            for (uint32_t k = e.start[cur]; k < e.start[cur + 1]; k++)
                if (indeg[e.pred[k]]) {
                    cur = e.pred[k];
                    break;
                }
        }
        *cycle = cur;
        st = CARVE_ERR_INVALID;
    }
done:
    cv_free(indeg);
    cv_free(succ_start);
    cv_free(key);
    cv_free(at);
    cv_free(h.a);
    cv_free(e.start);
    cv_free(e.pred);
    cv_free(succ);
    return st;
}

/* Is graph g's list already in a topological order? Then the stable sort
 * below would return it unchanged: the smallest ready position is always
 * the next one. Same edges as build_edges; a node holding a subgraph (its
 * captures are edges too) makes it answer no, and the full sort runs. */
static bool already_sorted(carve_model *m, carve_graph_id g)
{
    const cv_graph *gr = &m->graphs[g];
    uint32_t *pos = cv_model_scratch(m);
    if (!pos)
        return false;
    for (uint32_t i = 0; i < gr->nodes.n; i++)
        pos[gr->nodes.v[i]] = i;
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < nd->n_attr; j++)
            if (nd->attr[j].kind == CARVE_ATTR_GRAPH || nd->attr[j].kind == CARVE_ATTR_GRAPHS)
                return false;
        for (uint32_t j = 0; j < nd->n_in; j++) {
            if (nd->in[j] == CARVE_NONE)
                continue;
            const cv_value *v = &m->values[nd->in[j]];
            if (v->graph == g && v->producer != CARVE_NONE && m->nodes[v->producer].graph == g &&
                pos[v->producer] >= i)
                return false;
        }
    }
    return true;
}

carve_status cv_topo_sort(carve_model *m, carve_graph_id g)
{
    cv_graph *gr = &m->graphs[g];
    uint32_t n = gr->nodes.n, cycle = 0;
    if (n == 0 || already_sorted(m, g))
        return CARVE_OK;
    uint32_t *order = cv_malloc((size_t)n * sizeof *order);
    if (!order)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory sorting nodes");
    carve_status st = order_nodes(m, g, false, order, &cycle);
    if (st == CARVE_ERR_NOMEM) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory sorting nodes");
    } else if (st == CARVE_ERR_INVALID) {
        const cv_node *c = &m->nodes[gr->nodes.v[cycle]];
        cv_error(m->ctx, CARVE_ERR_INVALID, "graph '%s' has a cycle: node '%s' (%s) depends on its own output",
                 gr->name, c->name ? c->name : "?", c->op);
    } else {
        for (uint32_t i = 0; i < n; i++)
            order[i] = gr->nodes.v[order[i]];
        memcpy(gr->nodes.v, order, (size_t)n * sizeof *order);
    }
    cv_free(order);
    return st;
}

carve_status cv_topo_canonical(const carve_model *m, carve_graph_id g, carve_node_id *out)
{
    const cv_graph *gr = &m->graphs[g];
    uint32_t cycle = 0;
    if (gr->nodes.n == 0)
        return CARVE_OK;
    carve_status st = order_nodes(m, g, true, out, &cycle);
    if (st == CARVE_OK)
        for (uint32_t i = 0; i < gr->nodes.n; i++)
            out[i] = gr->nodes.v[out[i]];
    return st;
}

/* names.c: unique, stable node names.
 *
 * Skip lists name nodes, so a node's name must not depend on where it sits in
 * the file and must never change once given. Unnamed nodes are named
 * "<op>_<first output>"; nodes sharing a name are told apart by "#2", "#3" in
 * order of their first output's name. Nodes a pass creates are named from the
 * node they come from ("Gemm_3/MatMul"), never from a global counter. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* Claims base, or base#2, base#3... whichever is free first: one look-up
 * per candidate, which adds it when free. A base that is not the node's own
 * name is copied first (it may be another string's, an op's). */
static const char *claim(carve_model *m, carve_node_id n, const char *base)
{
    const char *name = base == m->nodes[n].name ? base : cv_arena_strdup(&m->arena, base);
    uint32_t old = CARVE_NONE;
    for (uint32_t k = 2; name; k++) {
        if (!cv_strmap_add(&m->node_names, name, n, &old))
            return NULL;
        if (old == CARVE_NONE)
            break;
        name = cv_arena_numbered(&m->arena, base, '#', k);
    }
    if (name)
        m->nodes[n].name = name;
    return name;
}

static const char *first_output_name(const carve_model *m, const cv_node *n)
{
    for (uint32_t i = 0; i < n->n_out; i++)
        if (n->out[i] != CARVE_NONE)
            return m->values[n->out[i]].name;
    return "";
}

static const char *base_name(carve_model *m, const cv_node *n)
{
    if (n->name && *n->name)
        return n->name;
    const char *o = first_output_name(m, n);
    return *o ? cv_arena_join(&m->arena, n->op, "_", o) : n->op;
}

/* A key that orders the nodes of one name group without looking at file
 * order: first output name, then the path of graphs holding the node (two
 * branches of an If may both define "out"), then op type. */
typedef struct {
    carve_node_id id;
    const char *base;
    const char *out;
    const char *path;
} name_key;

static const char *graph_path(carve_model *m, carve_graph_id g)
{
    if (g == 0 || g == CARVE_NONE)
        return "";
    const cv_graph *gr = &m->graphs[g];
    const char *owner_out = gr->owner != CARVE_NONE ? first_output_name(m, &m->nodes[gr->owner]) : "";
    return cv_arena_printf(&m->arena, "%s/%s:%s", graph_path(m, gr->parent), owner_out, gr->name);
}

/* The index of node id's key among keys[0, n) (in order of node ids),
 * or CARVE_NONE: id is not a new node. */
static uint32_t key_of(const name_key *keys, uint32_t n, carve_node_id id)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo].id == id ? lo : CARVE_NONE;
}

/* Node n takes base, claimed for it in node_names already: a base that is
 * an op's string is copied (as claim does); false: no memory. */
static bool own(carve_model *m, carve_node_id n, const char *base)
{
    cv_node *nd = &m->nodes[n];
    nd->name = base == nd->op ? cv_arena_strdup(&m->arena, base) : base;
    return nd->name != NULL;
}

static int cmp_key(const void *a, const void *b)
{
    const name_key *x = a, *y = b;
    int c = strcmp(x->base, y->base);
    if (!c)
        c = strcmp(x->out, y->out);
    if (!c)
        c = strcmp(x->path, y->path);
    if (c)
        return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

carve_status cv_names_assign(carve_model *m)
{
    /* a model just read has no names claimed: every node is new */
    bool fresh = m->node_names.n == 0;
    uint32_t n_new = 0;
    for (uint32_t i = 0; i < m->n_nodes; i++)
        if (fresh || !m->nodes[i].name || cv_strmap_get(&m->node_names, m->nodes[i].name) != i)
            n_new++;
    if (!n_new)
        return CARVE_OK;
    name_key *keys = cv_malloc(n_new * sizeof *keys);
    if (!keys)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory naming nodes");
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->n_nodes; i++) {
        cv_node *n = &m->nodes[i];
        if (!fresh && n->name && cv_strmap_get(&m->node_names, n->name) == i)
            continue;
        if (!n->name || !*n->name)
            n->named_by_carve = true;
        keys[k++] = (name_key){i, base_name(m, n), first_output_name(m, n), NULL};
    }
    if (cv_model_nomem(m)) {
        cv_free(keys);
        return CARVE_ERR_NOMEM;
    }
    /* A node whose base name no other new node has and no node holds yet
     * claims it now: leaders never compete with each other, so only the
     * nodes of shared names need the sort that orders them (most models
     * have none). One look-up a node: each claims its base at once; a later
     * new node finding a base claimed by a new node marks both shared, and
     * the first gives the base back below. */
    enum { WAITS, CLAIMED, SHARED };
    bool ok = cv_strmap_reserve(&m->node_names, m->node_names.n + n_new);
    uint8_t *state = ok ? cv_zalloc(m->ctx, n_new, "naming nodes") : NULL;
    ok = state != NULL;
    for (uint32_t i = 0; i < n_new && ok; i++) {
        uint32_t holder;
        if (i + CV_STRMAP_AHEAD < n_new)
            cv_strmap_prefetch(&m->node_names, keys[i + CV_STRMAP_AHEAD].base);
        ok = cv_strmap_add(&m->node_names, keys[i].base, keys[i].id, &holder);
        if (!ok || holder == CARVE_NONE) {
            state[i] = CLAIMED;
            continue;
        }
        uint32_t first = key_of(keys, i, holder); /* a new node's key, or CARVE_NONE: an old node's name */
        if (first != CARVE_NONE)
            state[first] = state[i] = SHARED;
    }
    uint32_t n_rest = 0;
    for (uint32_t i = 0; i < n_new && ok; i++) {
        if (state[i] == CLAIMED) {
            ok = own(m, keys[i].id, keys[i].base);
            continue;
        }
        if (cv_strmap_get(&m->node_names, keys[i].base) == keys[i].id) /* shared: given back */
            cv_strmap_del_if(&m->node_names, keys[i].base, keys[i].id);
        keys[n_rest++] = keys[i];
    }
    cv_free(state);
    if (!ok) {
        cv_free(keys);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory naming nodes");
    }
    n_new = n_rest;
    for (uint32_t i = 0; i < n_new; i++) /* the path orders nodes of one name only */
        keys[i].path = graph_path(m, m->nodes[keys[i].id].graph);
    if (cv_model_nomem(m)) {
        cv_free(keys);
        return CARVE_ERR_NOMEM;
    }
    qsort(keys, n_new, sizeof *keys, cmp_key);
    /* Leaders (first of each name group) claim their names before any
     * "#k" suffix is handed out, so an explicit "a#2" keeps its name. */
    carve_status st = CARVE_OK;
    const char *prev = NULL;
    for (uint32_t i = 0; i < n_new && st == CARVE_OK; i++) {
        const char *base = keys[i].base;
        bool leader = !prev || strcmp(base, prev) != 0;
        prev = base;
        if (leader && cv_strmap_get(&m->node_names, base) == CARVE_NONE) {
            if (!claim(m, keys[i].id, base))
                st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory naming nodes");
            keys[i].base = NULL; /* done */
        }
    }
    for (uint32_t i = 0; i < n_new && st == CARVE_OK; i++)
        if (keys[i].base && !claim(m, keys[i].id, keys[i].base))
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory naming nodes");
    cv_free(keys);
    return st;
}

const char *cv_names_give(carve_model *m, carve_node_id n)
{
    cv_node *nd = &m->nodes[n];
    nd->named_by_carve = !nd->name || !*nd->name;
    const char *base = base_name(m, nd);
    const char *name = base ? claim(m, n, base) : NULL;
    if (!name)
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory naming nodes");
    return name;
}

const char *cv_names_derive(carve_model *m, carve_node_id n, carve_node_id from, const char *piece)
{
    const char *base = cv_arena_join(&m->arena, m->nodes[from].name, "/", piece);
    const char *name = base ? claim(m, n, base) : NULL;
    if (!name)
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory naming nodes");
    return name;
}

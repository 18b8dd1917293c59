/* delegate.c: turns each partition of a graph into one node of domain
 * ai.carve, op Delegate, with string attributes `target`, `backend` and
 * `backend_version` and a GRAPH attribute `body` holding the partition's
 * nodes. The Delegate's inputs and
 * outputs are the partition's boundary values; constants (initializers,
 * Constant outputs) are not inputs: bodies read them from the outer scope,
 * so a weight used by several partitions is stored once. Outer values keep
 * their ids and names; the body's boundary values are new values named
 * "<delegate>/<name>" (ONNX forbids a subgraph to reuse an outer name). */
#include "partition.h"

#include <string.h>

typedef struct {
    cv_lower *lw;
    carve_graph_id g;
    /* by value id (ids below n_stamp): 2*partition+2 made by its nodes,
     * +3 read from outside; while a body is built, its boundary values hold
     * REMAP | their body value */
    uint32_t *stamp;
    uint32_t n_stamp;
    uint8_t *external; /* by value id: read outside its producer's partition */
    /* the Delegates' attribute names and, per target, their string values:
     * copied into the model's arena once, shared by every Delegate */
    const char *an[4];
    cv_bytes *tv; /* by target: target, backend, backend_version (n == SIZE_MAX: not made yet) */
    /* g is the main graph and no value's name starts "Delegate_": a body
     * value's name "<Delegate_k>/<name>" can then clash only inside its
     * body, and only the body's scope is searched */
    bool outer_clear;
    cv_ids scratch; /* one partition's boundary list while it is gathered */
} dctx;

#define REMAP 0x80000000u /* above every partition's stamps */

/* Room in a for `more` ids past its end (lists whose length is known ahead
 * are filled without a push each). */
static bool ids_room(cv_ids *a, uint32_t more)
{
    if (a->cap - a->n >= more)
        return true;
    uint32_t *v = cv_realloc(a->v, ((size_t)a->n + more) * sizeof *v);
    if (!v)
        return false;
    a->v = v;
    a->cap = a->n + more;
    return true;
}

static carve_status nomem(carve_model *m) { return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory building delegates"); }

/* A string of the model's arena (the target may not outlive the model). */
static cv_bytes arena_bytes(carve_model *m, const char *s)
{
    size_t n = strlen(s);
    return (cv_bytes){cv_arena_memdup(&m->arena, s, n + 1), n};
}

/* "Delegate_<index>", or "<prefix>/Delegate_<index>" in a subgraph, made
 * without printf (one per partition: tens of thousands on big models). */
static const char *delegate_name(carve_model *m, const char *prefix, uint32_t index)
{
    char d[16];
    int k = (int)sizeof d;
    do
        d[--k] = (char)('0' + index % 10);
    while ((index /= 10));
    size_t pl = prefix ? strlen(prefix) + 1 : 0, dl = sizeof d - (size_t)k;
    char *s = cv_arena_alloc(&m->arena, pl + 9 + dl + 1);
    if (!s)
        return NULL;
    if (prefix) {
        memcpy(s, prefix, pl - 1);
        s[pl - 1] = '/';
    }
    memcpy(s + pl, "Delegate_", 9);
    memcpy(s + pl + 9, d + k, dl);
    s[pl + 9 + dl] = 0;
    return s;
}

/* Does no value's name start "Delegate_" (delegate_name's names)? */
static bool delegate_names_free(const carve_model *m)
{
    for (carve_value_id v = 0; v < m->n_values; v++) {
        const char *s = m->values[v].name;
        if (s && s[0] == 'D' && !strncmp(s, "Delegate_", 9))
            return false;
    }
    return true;
}

/* The Delegate's attributes, in this order: target, body, backend and
 * backend_version (when the target has a backend). One array, strings
 * shared: what carve_node_set_attr_* would make, without their look-ups
 * and copies. */
static carve_status delegate_attrs(dctx *d, carve_node_id dn, carve_graph_id body, uint32_t ti)
{
    cv_lower *lw = d->lw;
    carve_model *m = lw->m;
    const carve_target *t = lw->ts[ti];
    const carve_backend *b = lw->bs[ti];
    cv_bytes *tv = &d->tv[3 * ti];
    if (tv[0].n == SIZE_MAX) {
        tv[0] = arena_bytes(m, t->name);
        tv[1] = arena_bytes(m, b ? b->name : "");
        tv[2] = arena_bytes(m, b && b->version ? b->version : "");
    }
    if (!d->an[0]) {
        static const char *const names[4] = {"target", "body", "backend", "backend_version"};
        for (int i = 0; i < 4; i++)
            d->an[i] = (const char *)arena_bytes(m, names[i]).p;
    }
    uint32_t n = b ? 4 : 2;
    cv_attr *a = cv_arena_alloc(&m->arena, n * sizeof *a);
    if (!a || !tv[0].p || !tv[1].p || !tv[2].p || !d->an[0] || !d->an[1] || !d->an[2] || !d->an[3])
        return nomem(m);
    a[0] = (cv_attr){.name = d->an[0], .kind = CARVE_ATTR_STRING, .u.s = tv[0]};
    a[1] = (cv_attr){.name = d->an[1], .kind = CARVE_ATTR_GRAPH, .u.g = body};
    if (b) {
        a[2] = (cv_attr){.name = d->an[2], .kind = CARVE_ATTR_STRING, .u.s = tv[1]};
        a[3] = (cv_attr){.name = d->an[3], .kind = CARVE_ATTR_STRING, .u.s = tv[2]};
    }
    m->nodes[dn].attr = a;
    m->nodes[dn].n_attr = n;
    return CARVE_OK;
}


/* v is read by a node of partition pu (CARVE_NONE: on CPU). */
static inline void mark_read(dctx *d, carve_value_id v, uint32_t pu)
{
    const carve_model *m = d->lw->m;
    carve_node_id p = m->values[v].producer;
    if (p != CARVE_NONE && m->nodes[p].graph == d->g && d->lw->ln[p].part != pu)
        d->external[v] = 1;
}

/* external[v] for values produced by partitioned nodes of g. */
static carve_status mark_external(dctx *d)
{
    carve_model *m = d->lw->m;
    cv_graph *gr = &m->graphs[d->g];
    cv_ids reads = {0};
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        carve_node_id id = gr->nodes.v[i];
        uint32_t pu = d->lw->ln[id].part;
        const cv_node *n = &m->nodes[id];
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] != CARVE_NONE)
                mark_read(d, n->in[k], pu);
        reads.n = 0;
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++)
                if (!cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], &reads))
                    goto fail;
        }
        for (uint32_t k = 0; k < reads.n; k++)
            mark_read(d, reads.v[k], pu); /* what its subgraphs capture */
    }
    for (uint32_t i = 0; i < gr->outputs.n; i++)
        d->external[gr->outputs.v[i]] = 1;
    cv_ids_free(&reads);
    return CARVE_OK;
fail:
    cv_ids_free(&reads);
    return nomem(m);
}

/* "<delegate>/<name>" (or that with "#k" when taken), made in the arena
 * and kept by the value (cv_value_define: no second copy). The body's own
 * scope is looked at by the define itself; the scopes around it only
 * without outer_clear (with it no name there can clash). */
static carve_value_id body_value(const dctx *d, carve_graph_id body, const char *delegate, carve_value_id like)
{
    carve_model *m = d->lw->m;
    const char *nm = cv_arena_join(&m->arena, delegate, "/", m->values[like].name);
    if (!nm)
        return CARVE_NONE;
    carve_value_id v = CARVE_NONE, clash = CARVE_NONE;
    if (!d->outer_clear)
        clash = carve_graph_find_value(m, m->graphs[body].parent, nm);
    if (clash == CARVE_NONE)
        v = cv_value_define(m, body, nm, &clash);
    if (v == CARVE_NONE && clash != CARVE_NONE) {
        const char *un = cv_value_unique_name(m, body, nm);
        v = un ? cv_value_define(m, body, un, &clash) : CARVE_NONE;
    }
    if (v != CARVE_NONE)
        m->values[v].type = m->values[like].type;
    return v;
}

/* Room for `n` ids in d's scratch list (emptied). */
static bool scratch_room(dctx *d, uint32_t n)
{
    d->scratch.n = 0;
    return ids_room(&d->scratch, n);
}

/* a = d's scratch list, in a list of its exact size. */
static bool take_scratch(dctx *d, cv_ids *a)
{
    if (!ids_room(a, d->scratch.n))
        return false;
    if (d->scratch.n)
        memcpy(a->v + a->n, d->scratch.v, d->scratch.n * sizeof *a->v);
    a->n += d->scratch.n;
    return true;
}

static carve_status build_one(dctx *d, cv_lpart *lp)
{
    cv_lower *lw = d->lw;
    carve_model *m = lw->m;
    /* stamps of this partition: `made` on the values its nodes make,
     * `seen` on the boundary inputs found */
    uint32_t made = 2 * lp->index + 2, seen = made + 1;
    uint32_t n_read = 0, n_made = 0;
    for (uint32_t i = 0; i < lp->nodes.n; i++) {
        n_read += m->nodes[lp->nodes.v[i]].n_in;
        n_made += m->nodes[lp->nodes.v[i]].n_out;
    }
    /* boundary outputs, in node and slot order: the lists are gathered in
     * the scratch list, then kept in lists of their own size */
    if (!scratch_room(d, n_made))
        return nomem(m);
    for (uint32_t i = 0; i < lp->nodes.n; i++) {
        const cv_node *n = &m->nodes[lp->nodes.v[i]];
        for (uint32_t k = 0; k < n->n_out; k++) {
            carve_value_id v = n->out[k];
            if (v == CARVE_NONE)
                continue;
            d->stamp[v] = made;
            if (d->external[v])
                d->scratch.v[d->scratch.n++] = v;
        }
    }
    if (!take_scratch(d, &lp->outputs) || !scratch_room(d, n_read))
        return nomem(m);
    /* boundary inputs, in order of first use: neither made inside nor
     * constants */
    for (uint32_t i = 0; i < lp->nodes.n; i++) {
        const cv_node *n = &m->nodes[lp->nodes.v[i]];
        for (uint32_t k = 0; k < n->n_in; k++) {
            carve_value_id v = n->in[k];
            if (v == CARVE_NONE || d->stamp[v] == made || d->stamp[v] == seen || cv_value_is_const(m, v))
                continue;
            d->stamp[v] = seen;
            d->scratch.v[d->scratch.n++] = v;
        }
    }
    if (!take_scratch(d, &lp->inputs))
        return nomem(m);
    /* the Delegate node and its body */
    carve_node_id dn = cv_node_new(m, d->g, "Delegate", "ai.carve", lp->inputs.n, lp->outputs.n);
    if (dn == CARVE_NONE)
        return carve_errcode(m->ctx);
    const char *base = delegate_name(m,
                                     d->g == 0 ? NULL
                                     : m->graphs[d->g].owner != CARVE_NONE ? m->nodes[m->graphs[d->g].owner].name
                                                                           : m->graphs[d->g].name,
                                     lp->index);
    m->nodes[dn].name = base;
    if (!base || !cv_names_give(m, dn))
        return nomem(m);
    const char *dname = m->nodes[dn].name;
    carve_graph_id body = cv_graph_new(m, d->g, dname);
    if (body == CARVE_NONE)
        return carve_errcode(m->ctx);
    m->graphs[body].owner = dn;
    lp->delegate = dn;
    lp->body = body;
    /* the body's lists and scope sized once: its boundary values, then
     * the values its nodes make */
    cv_graph *bg = &m->graphs[body];
    if (!ids_room(&bg->inputs, lp->inputs.n) || !ids_room(&bg->outputs, lp->outputs.n) ||
        !ids_room(&bg->nodes, lp->nodes.n) || !cv_strmap_reserve(&bg->scope, lp->inputs.n + lp->outputs.n + n_made))
        return nomem(m);
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < lp->inputs.n && !st; i++) {
        carve_value_id v = lp->inputs.v[i];
        carve_value_id bv = body_value(d, body, dname, v);
        if (bv == CARVE_NONE) {
            st = nomem(m);
            break;
        }
        m->graphs[body].inputs.v[m->graphs[body].inputs.n++] = bv;
        m->values[bv].is_input = true;
        m->nodes[dn].in[i] = v;
        d->stamp[v] = REMAP | bv;
    }
    for (uint32_t i = 0; i < lp->outputs.n && !st; i++) {
        carve_value_id v = lp->outputs.v[i];
        carve_value_id iv = body_value(d, body, dname, v);
        if (iv == CARVE_NONE) {
            st = nomem(m);
            break;
        }
        m->graphs[body].outputs.v[m->graphs[body].outputs.n++] = iv;
        /* the inner value takes over the producer; the outer one is now the
         * Delegate's output */
        carve_node_id p = m->values[v].producer;
        uint32_t slot = m->values[v].out_index;
        m->nodes[p].out[slot] = iv;
        m->values[iv].producer = p;
        m->values[iv].out_index = slot;
        m->values[v].producer = dn;
        m->values[v].out_index = i;
        m->nodes[dn].out[i] = v;
        d->stamp[v] = REMAP | iv;
    }
    /* move the nodes (in order) and their internal values into the body */
    for (uint32_t i = 0; i < lp->nodes.n && !st; i++) {
        carve_node_id id = lp->nodes.v[i];
        cv_node *n = &m->nodes[id];
        if (i + CV_STRMAP_AHEAD < lp->nodes.n) { /* the outer scope's slots a few nodes on */
            const cv_node *a = &m->nodes[lp->nodes.v[i + CV_STRMAP_AHEAD]];
            for (uint32_t k = 0; k < a->n_out; k++)
                if (a->out[k] != CARVE_NONE)
                    cv_strmap_prefetch(&m->graphs[d->g].scope, m->values[a->out[k]].name);
        }
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] != CARVE_NONE && n->in[k] < d->n_stamp && (d->stamp[n->in[k]] & REMAP))
                n->in[k] = d->stamp[n->in[k]] & ~REMAP;
        for (uint32_t k = 0; k < n->n_out && !st; k++)
            if (n->out[k] != CARVE_NONE && m->values[n->out[k]].graph == d->g && !cv_value_move(m, n->out[k], body))
                st = nomem(m);
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t q = 0; q < cnt; q++)
                m->graphs[a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[q]].parent = body;
        }
        n->graph = body;
        m->graphs[body].nodes.v[m->graphs[body].nodes.n++] = id;
        lw->ln[id].delegate = dn;
    }
    if (st)
        return st;
    /* the backend that runs it: src/runtime/delegate.c finds it by name */
    return delegate_attrs(d, dn, body, lp->target);
}

carve_status cv_build_delegates(cv_lower *lw, carve_graph_id g)
{
    carve_model *m = lw->m;
    cv_graph *gr = &m->graphs[g];
    uint32_t n_parts = 0;
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        uint32_t p = lw->ln[gr->nodes.v[i]].part;
        if (p != CARVE_NONE && p + 1 > n_parts)
            n_parts = p + 1;
    }
    if (!n_parts)
        return CARVE_OK;
    cv_lpart *parts = cv_realloc(lw->parts, ((size_t)lw->n_parts + n_parts) * sizeof *parts);
    if (!parts)
        return nomem(m);
    lw->parts = parts;
    cv_lpart *mine = &parts[lw->n_parts];
    memset(mine, 0, n_parts * sizeof *mine);
    lw->n_parts += n_parts;
    for (uint32_t k = 0; k < n_parts; k++) {
        mine[k].graph = g;
        mine[k].index = k;
        mine[k].delegate = CARVE_NONE;
    }
    for (uint32_t i = 0; i < gr->nodes.n; i++) { /* sizes first: .cap counts */
        uint32_t p = lw->ln[gr->nodes.v[i]].part;
        if (p != CARVE_NONE)
            mine[p].nodes.cap++;
    }
    for (uint32_t k = 0; k < n_parts; k++) {
        uint32_t size = mine[k].nodes.cap;
        mine[k].nodes.cap = 0;
        if (!ids_room(&mine[k].nodes, size))
            return nomem(m);
    }
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        carve_node_id id = gr->nodes.v[i];
        uint32_t p = lw->ln[id].part;
        if (p == CARVE_NONE)
            continue;
        mine[p].target = lw->ln[id].target;
        mine[p].nodes.v[mine[p].nodes.n++] = id;
    }
    /* value ids and partition stamps below REMAP */
    if (m->n_values >= REMAP / 2 || n_parts >= REMAP / 4)
        return nomem(m);
    dctx d = {lw, g, cv_malloc(((size_t)m->n_values + 1) * sizeof(uint32_t)), m->n_values,
              cv_malloc((size_t)m->n_values + 1), {0}, cv_malloc(((size_t)lw->n_t + 1) * 3 * sizeof(cv_bytes)),
              false, {0}};
    if (!d.stamp || !d.external || !d.tv) {
        cv_free(d.stamp);
        cv_free(d.external);
        cv_free(d.tv);
        return nomem(m);
    }
    for (uint32_t i = 0; i < 3 * lw->n_t; i++)
        d.tv[i] = (cv_bytes){NULL, SIZE_MAX};
    memset(d.stamp, 0, ((size_t)m->n_values + 1) * sizeof(uint32_t));
    memset(d.external, 0, (size_t)m->n_values + 1);
    d.outer_clear = g == 0 && delegate_names_free(m);
    carve_status st = mark_external(&d);
    for (uint32_t k = 0; k < n_parts && !st; k++)
        st = build_one(&d, &mine[k]);
    cv_free(d.stamp);
    cv_free(d.external);
    cv_free(d.tv);
    cv_ids_free(&d.scratch);
    if (st)
        return st;
    /* drop the moved nodes from g's list, then order the Delegates in */
    cv_ids *l = &m->graphs[g].nodes;
    uint32_t w = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (m->nodes[l->v[i]].graph == g)
            l->v[w++] = l->v[i];
    l->n = w;
    return cv_topo_sort(m, g);
}

/* dce.c: what folding leaves behind goes.
 *
 * Dead nodes: a node none of whose outputs is read (by a node, a subgraph or
 * as a graph output) is removed, repeatedly, so whole dead chains go; ONNX
 * ops have no side effects. Unused initializers go after them.
 *
 * Deduplication: initializers with the same dtype, shape and bytes are
 * stored once. Each reader of a duplicate reads the first equal initializer
 * of its own graph or an enclosing one (so outer constants serve their
 * subgraphs). Graph outputs keep their own values: main-graph outputs keep
 * their names, and onnxruntime refuses a subgraph output that is an outer
 * value. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

static const char *const dead_why = "dead: nothing reads its outputs";

static inline bool is_dead(const cv_fold *f, const cv_node *n)
{
    for (uint32_t j = 0; j < n->n_out; j++)
        if (n->out[j] != CARVE_NONE && (f->uses[n->out[j]] || f->is_out[n->out[j]]))
            return false;
    return true;
}

static bool holds_graphs(const cv_node *n)
{
    for (uint32_t j = 0; j < n->n_attr; j++)
        if (n->attr[j].kind == CARVE_ATTR_GRAPH || n->attr[j].kind == CARVE_ATTR_GRAPHS)
            return true;
    return false;
}

static carve_status dead_nodes(cv_fold *f, bool *changed)
{
    carve_model *m = f->m;
    cv_ids gs = {0}, zeroed = {0}; /* values whose last read went */
    bool exact = true; /* the uses counted down here are what a recount finds */
    carve_status s = cv_fold_sweep_start(f, &gs);
    /* children first, each graph from its end: a dead chain goes in one
     * sweep (reads from inside a dropped subgraph are recounted next sweep) */
    for (uint32_t k = gs.n; k-- > 0 && !s;) {
        cv_graph *gr = &m->graphs[gs.v[k]];
        /* The graph's list is taken out while its nodes are dropped, so
         * cv_node_remove does not search and shift it once per dead node
         * (quadratic on graphs with many dead nodes); it is compacted once. */
        cv_ids list = gr->nodes;
        gr->nodes = (cv_ids){0};
        bool dropped = false;
        for (uint32_t i = list.n; i-- > 0;) {
            carve_node_id id = list.v[i];
            const cv_node *n = &m->nodes[id];
            if (n->dead || !is_dead(f, n))
                continue;
            for (uint32_t j = 0; j < n->n_in; j++)
                if (n->in[j] != CARVE_NONE && f->uses[n->in[j]] && !--f->uses[n->in[j]] && exact &&
                    !cv_ids_push(&zeroed, n->in[j]))
                    exact = false; /* no memory for the list: sweep again, as without it */
            exact = exact && !holds_graphs(n);
            cv_fold_drop(f, id, CV_FATE_REMOVED, CARVE_NONE, dead_why);
            *changed = dropped = true;
        }
        if (dropped) {
            uint32_t w = 0;
            for (uint32_t i = 0; i < list.n; i++)
                if (!m->nodes[list.v[i]].dead)
                    list.v[w++] = list.v[i];
            list.n = w;
        }
        gr = &m->graphs[gs.v[k]];
        gr->nodes = list;
    }
    cv_ids_free(&gs);
    if (!s && exact) {
        cv_fold_uses_stand(f); /* the next sweep needs no recount */
        /* The counts are exact: another sweep drops something only when a
         * node whose outputs lost their last read here was passed before
         * that (a list not in topological order); each list from its end
         * reaches the writers of a dead chain after their readers. */
        bool again = false;
        for (uint32_t i = 0; i < zeroed.n && !again; i++) {
            carve_node_id p = m->values[zeroed.v[i]].producer;
            again = p != CARVE_NONE && !m->nodes[p].dead && is_dead(f, &m->nodes[p]);
        }
        *changed = *changed && again;
    }
    cv_ids_free(&zeroed);
    return s;
}

static carve_status unused_inits(cv_fold *f)
{
    carve_model *m = f->m;
    cv_ids gs = {0};
    carve_status s = cv_fold_sweep_start(f, &gs);
    for (uint32_t k = 0; k < gs.n && !s; k++) {
        cv_graph *gr = &m->graphs[gs.v[k]];
        uint32_t keep = 0;
        for (uint32_t i = 0; i < gr->inits.n; i++) {
            carve_value_id v = gr->inits.v[i];
            cv_value *x = &m->values[v];
            if (x->is_input || f->uses[v] || f->is_out[v]) {
                gr->inits.v[keep++] = v;
                continue;
            }
            f->st.bytes_removed += x->init->dtype == CARVE_STRING ? 0 : x->init->nbytes;
            f->st.inits_removed++;
            if (cv_strmap_get(&gr->scope, x->name) == v)
                cv_strmap_del(&gr->scope, x->name);
        }
        gr->inits.n = keep;
    }
    cv_ids_free(&gs);
    if (!s)
        cv_fold_uses_stand(f); /* initializers nothing read: no count changed */
    return s;
}

carve_status cv_fold_dce(cv_fold *f)
{
    bool changed = true;
    carve_status s = CARVE_OK;
    while (changed && !s) {
        changed = false;
        s = dead_nodes(f, &changed);
    }
    return s ? s : unused_inits(f);
}

/* ---------------------------------------------------------------- deduplication */

typedef struct {
    uint64_t hash;  /* of dtype, shape and a sample of the bytes */
    uint64_t whole; /* of all the bytes, made only when hash is shared */
    uint32_t order; /* pre-order of graphs, then initializer order */
    carve_value_id v;
} dkey;

static int cmp_key(const void *a, const void *b)
{
    const dkey *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->whole != y->whole)
        return x->whole < y->whole ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The first key: dtype, shape and at most 32 words of the bytes (the first
 * and last 8, 16 spread between). Hashing every byte of every initializer
 * was a quarter of OCR rec's lowering instructions, and most initializers
 * share their sample with none other; only those that do are hashed whole. */
static uint64_t sample_hash(const cv_tensor *t)
{
    uint64_t h = cv_hash_words(t->dims, (size_t)t->rank * sizeof *t->dims,
                               (uint64_t)t->dtype * 31 + (uint64_t)t->rank);
    if (t->nbytes <= 256)
        return cv_hash_words(t->data, t->nbytes, h);
    const uint8_t *p = t->data;
    size_t words = t->nbytes / 8;
    h = cv_hash_words(p, 64, h);
    h = cv_hash_words(p + t->nbytes - 64, 64, h);
    for (size_t i = 1; i <= 16; i++)
        h = cv_hash_words(p + (words * i / 17) * 8, 8, h);
    return h;
}

static bool same_tensor(const cv_tensor *a, const cv_tensor *b)
{
    return a->dtype == b->dtype && a->rank == b->rank && a->nbytes == b->nbytes &&
           (!a->rank || !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims)) &&
           (!a->nbytes || a->data == b->data || !memcmp(a->data, b->data, a->nbytes));
}

carve_status cv_fold_dedupe(cv_fold *f)
{
    carve_model *m = f->m;
    carve_status s = cv_fold_uses(f);
    if (s)
        return s;
    cv_ids gs = {0};
    dkey *keys = NULL;
    uint8_t *gone = NULL;
    carve_value_id *rep = NULL; /* by value id: the equal initializer its readers read */
    bool replaced = false;
    uint32_t n = 0, cap = 0;
    if (!cv_fold_graphs(m, &gs))
        goto nomem;
    for (uint32_t k = 0; k < gs.n; k++) {
        const cv_graph *gr = &m->graphs[gs.v[k]];
        for (uint32_t i = 0; i < gr->inits.n; i++) {
            carve_value_id v = gr->inits.v[i];
            const cv_value *x = &m->values[v];
            if (x->is_input || f->is_out[v] || x->init->dtype == CARVE_STRING || (x->init->nbytes && !x->init->data))
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                dkey *p = cv_realloc(keys, (size_t)cap * sizeof *p);
                if (!p)
                    goto nomem;
                keys = p;
            }
            const cv_tensor *t = x->init;
            /* groups initializers that may be equal; same_tensor decides,
             * so the outcome does not depend on the hash */
            keys[n] = (dkey){sample_hash(t), 0, n, v};
            n++;
        }
    }
    if (n)
        qsort(keys, n, sizeof *keys, cmp_key);
    for (uint32_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && keys[hi].hash == keys[lo].hash; hi++)
            ;
        if (hi - lo < 2)
            continue;
        for (uint32_t i = lo; i < hi; i++) {
            const cv_tensor *t = m->values[keys[i].v].init;
            keys[i].whole = cv_hash_words(t->data, t->nbytes, 0);
        }
        qsort(keys + lo, hi - lo, sizeof *keys, cmp_key);
    }
    gone = cv_malloc((size_t)m->n_values + 1);
    rep = cv_malloc(((size_t)m->n_values + 1) * sizeof *rep);
    if (!gone || !rep)
        goto nomem;
    memset(gone, 0, (size_t)m->n_values + 1);
    for (uint32_t v = 0; v < m->n_values; v++)
        rep[v] = CARVE_NONE;
    for (uint32_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && keys[hi].hash == keys[lo].hash && keys[hi].whole == keys[lo].whole; hi++)
            ;
        for (uint32_t i = lo + 1; i < hi; i++) {
            carve_value_id d = keys[i].v;
            const cv_value *dx = &m->values[d];
            for (uint32_t j = lo; j < i; j++) {
                carve_value_id c = keys[j].v;
                const cv_value *cx = &m->values[c];
                if (gone[c] || !cv_graph_encloses(m, cx->graph, dx->graph) || !same_tensor(cx->init, dx->init))
                    continue;
                rep[d] = c; /* its readers (in dx's graph or below) read c: all at once, below */
                replaced = true;
                gone[d] = 1;
                f->st.inits_deduped++;
                f->st.bytes_removed += dx->init->nbytes;
                break;
            }
        }
    }
    if (replaced)
        cv_fold_replace_reads_map(m, 0, rep, m->n_values);
    for (uint32_t k = 0; k < gs.n; k++) {
        cv_graph *gr = &m->graphs[gs.v[k]];
        uint32_t keep = 0;
        for (uint32_t i = 0; i < gr->inits.n; i++) {
            carve_value_id v = gr->inits.v[i];
            if (!gone[v]) {
                gr->inits.v[keep++] = v;
                continue;
            }
            if (cv_strmap_get(&gr->scope, m->values[v].name) == v)
                cv_strmap_del(&gr->scope, m->values[v].name);
        }
        gr->inits.n = keep;
    }
    cv_free(gone);
    cv_free(rep);
    cv_free(keys);
    cv_ids_free(&gs);
    return CARVE_OK;
nomem:
    cv_free(gone);
    cv_free(rep);
    cv_free(keys);
    cv_ids_free(&gs);
    return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
}

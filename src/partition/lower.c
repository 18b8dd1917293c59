/* lower.c: the lowering driver. Capability, partitioning and the target's
 * rules run on the real partitions, round after round, until nothing
 * changes:
 *   1. every node gets a verdict (capability.c, skip lists, sticky marks);
 *   2. partitions are the ASAP levels of the supported nodes (levels.c);
 *      partitions the target refuses (no runtime input, too small) go to CPU
 *      and levels are recomputed until every partition stands;
 *   3. any op left on CPU that the CPU profile lacks is decomposed
 *      (kept-whole ops included); its pieces go through 1-2 in the next
 *      round. An op that ends delegated is never decomposed.
 * Then each partition becomes a Delegate node (delegate.c) with a legalized
 * body (legalize.c), and the report is written (report.c). */
#define _POSIX_C_SOURCE 200809L
#include "partition.h"

#include <string.h>
#include <time.h>

#define MAX_ROUNDS 64

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool grow_ln(cv_lower *lw)
{
    uint32_t n = lw->m->n_nodes;
    if (n <= lw->cap)
        return true;
    /* the first size fits the model with room for some pieces: every entry
     * up to cap is written, and fresh pages are not free */
    uint32_t cap = lw->cap ? lw->cap : n + n / 8 + 64;
    while (cap < n)
        cap *= 2;
    cv_lnode *ln = cv_realloc(lw->ln, cap * sizeof *ln);
    if (!ln)
        return false;
    lw->ln = ln;
    cv_treason *tr = cv_realloc(lw->tr, (size_t)cap * lw->n_t * sizeof *tr);
    if (!tr)
        return false;
    lw->tr = tr;
    for (size_t i = (size_t)lw->cap * lw->n_t; i < (size_t)cap * lw->n_t; i++)
        tr[i] = (cv_treason){CV_R_NONE, NULL};
    memset(ln + lw->cap, 0, (cap - lw->cap) * sizeof *ln);
    for (uint32_t i = lw->cap; i < cap; i++) {
        ln[i].part = CARVE_NONE;
        ln[i].origin = i;
        ln[i].delegate = CARVE_NONE;
    }
    lw->ln = ln;
    lw->cap = cap;
    return true;
}

static const char *amsg(cv_lower *lw, const char *s) { return cv_arena_strdup(&lw->m->arena, s); }

/* Is v a runtime value as seen from graph g: a graph input, a node output
 * (not a Constant) or an outer value that is not constant. */
static bool is_runtime(const carve_model *m, carve_value_id v)
{
    return !cv_value_is_const(m, v);
}

static bool node_is_impure_source(const carve_model *m, carve_node_id id)
{
    const cv_op_def *d = cv_op_for_node(m, id);
    return d && (d->flags & CV_OP_IMPURE);
}

/* Values node `id` reads: its inputs and what its subgraphs capture. */
static bool node_reads(const carve_model *m, carve_node_id id, cv_ids *out)
{
    const cv_node *n = &m->nodes[id];
    out->n = 0;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (n->in[i] != CARVE_NONE && !cv_ids_push(out, n->in[i]))
            return false;
    for (uint32_t j = 0; j < n->n_attr; j++) {
        const cv_attr *a = &n->attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++)
            if (!cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], out))
                return false;
    }
    return true;
}

/* The first int64 input or output of node n, or CARVE_NONE. */
static carve_value_id int64_io(const carve_model *m, const cv_node *n)
{
    for (uint32_t k = 0; k < n->n_in + n->n_out; k++) {
        carve_value_id v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
        if (v != CARVE_NONE && m->values[v].type.kind == CARVE_TYPE_TENSOR && m->values[v].type.dtype == CARVE_INT64)
            return v;
    }
    return CARVE_NONE;
}

/* For a target that takes control flow whole: the first node, control-flow
 * node `id` itself or a node in its bodies (recursively), that the target
 * cannot take, with its reason in msg; CARVE_NONE when it can take them
 * all. On a target with int64 only through int32 that is any node with an
 * int64 value: legalization rewrites a Delegate's own body, not the bodies
 * nested in it (and Loop's trip count is int64 by definition). */
static carve_node_id body_refusal(cv_lower *lw, const carve_target *t, carve_node_id id, char *msg, size_t msgsz)
{
    carve_model *m = lw->m;
    const cv_node *n = &m->nodes[id];
    carve_value_id i64 = t->int64_as_int32 ? int64_io(m, n) : CARVE_NONE;
    if (i64 != CARVE_NONE) {
        snprintf(msg, msgsz,
                 "int64 value '%s': %s has int64 only through int32, which carve does not apply inside control flow",
                 m->values[i64].name, t->name);
        return id;
    }
    for (uint32_t j = 0; j < n->n_attr; j++) {
        const cv_attr *a = &n->attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++) {
            const cv_graph *b = &m->graphs[a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k]];
            for (uint32_t i = 0; i < b->nodes.n; i++) {
                carve_node_id c = b->nodes.v[i];
                cv_reason r = lw->ln[c].sticky ? lw->ln[c].sticky : cv_capable(m, c, t, NULL, msg, msgsz);
                if (r) {
                    if (lw->ln[c].sticky)
                        snprintf(msg, msgsz, "%s", lw->ln[c].msg ? lw->ln[c].msg : "");
                    return c;
                }
                carve_node_id deeper = body_refusal(lw, t, c, msg, msgsz);
                if (deeper != CARVE_NONE)
                    return deeper;
            }
        }
    }
    return CARVE_NONE;
}

/* Is graph g the body of a control-flow node the target takes whole (or
 * inside one)? Such bodies go to the target with their node: they are not
 * partitioned or decomposed on their own. */
static bool taken_whole(const cv_lower *lw, carve_graph_id g)
{
    const carve_model *m = lw->m;
    for (; g != CARVE_NONE && g != 0; g = m->graphs[g].parent) {
        carve_node_id o = m->graphs[g].owner;
        if (o != CARVE_NONE && o < lw->cap && lw->ln[o].part != CARVE_NONE)
            return true;
    }
    return false;
}

/* A QDQ node unit is placed as one: when target ti cannot take one of its
 * nodes, it takes none of them (reason node_unit, naming that node). sup:
 * what ti takes, by position in g; tr: ti's verdicts, by node id. */
static bool unit_verdicts(cv_lower *lw, uint32_t ti, carve_graph_id g, const uint32_t *unit_of, uint32_t n_units,
                          uint8_t *sup)
{
    carve_model *m = lw->m;
    const cv_graph *gr = &m->graphs[g];
    uint32_t *first_cpu = cv_malloc(((size_t)n_units + 1) * sizeof *first_cpu); /* by unit: its first CPU node */
    if (!first_cpu)
        return false;
    for (uint32_t u = 0; u < n_units; u++)
        first_cpu[u] = CARVE_NONE;
    for (uint32_t i = 0; i < gr->nodes.n; i++)
        if (!sup[i] && first_cpu[unit_of[i]] == CARVE_NONE)
            first_cpu[unit_of[i]] = i;
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        uint32_t f = first_cpu[unit_of[i]];
        if (!sup[i] || f == CARVE_NONE)
            continue;
        carve_node_id fid = gr->nodes.v[f];
        cv_treason *l = &lw->tr[(size_t)gr->nodes.v[i] * lw->n_t + ti];
        sup[i] = 0;
        l->reason = CV_R_NODE_UNIT;
        l->msg = cv_arena_printf(&m->arena, "its QDQ node unit goes to CPU with '%s' (%s): %s", m->nodes[fid].name,
                                 m->nodes[fid].op, cv_reason_code(lw->tr[(size_t)fid * lw->n_t + ti].reason));
    }
    cv_free(first_cpu);
    return !cv_model_nomem(m);
}

/* Target ti's verdict on node id (position i of its graph): sticky marks
 * (skip lists) and --skip-on first, then a compile refusal of an earlier
 * round, the profile (capability.c, control flow taken whole) and the
 * backend. */
static cv_reason verdict(cv_lower *lw, uint32_t ti, carve_node_id id, const cv_unit_inner_mask *inner,
                         const char **out)
{
    carve_model *m = lw->m;
    const carve_target *t = lw->ts[ti];
    const cv_lnode *l = &lw->ln[id];
    char msg[512];
    *out = NULL;
    if (l->sticky) {
        *out = l->msg;
        return l->sticky;
    }
    if (l->skip_on & (1u << ti)) {
        *out = cv_arena_printf(&m->arena, "named in --skip-on %s", t->name);
        return CV_R_SKIPPED_BY_USER;
    }
    const char *refused = cv_backend_refused(lw, ti, id);
    if (refused) {
        *out = amsg(lw, refused);
        return CV_R_BACKEND_REFUSED;
    }
    cv_reason r = cv_capable(m, id, t, t->qdq_units ? inner : NULL, msg, sizeof msg);
    *out = r ? amsg(lw, msg) : NULL;
    const cv_op_def *def = r ? NULL : cv_op_for_node(m, id);
    if (def && (def->flags & CV_OP_CONTROL)) { /* the target takes control flow whole */
        char why[400];
        carve_node_id c = body_refusal(lw, t, id, why, sizeof why);
        if (c == id) {
            r = CV_R_CONTROL_FLOW;
            *out = cv_arena_printf(&m->arena, "%s takes control flow only whole, and not this node: %s", t->name, why);
        } else if (c != CARVE_NONE) {
            r = CV_R_CONTROL_FLOW;
            *out = cv_arena_printf(&m->arena, "%s takes control flow only whole, and its body has '%s' (%s): %s",
                                   t->name, m->nodes[c].name, m->nodes[c].op, why);
        }
    }
    if (r == CV_R_NONE) /* the profile takes it: now the backend */
        r = cv_backend_verdict(lw, ti, id, out);
    return r;
}

/* Partitions graph g for this round: every target's verdicts, partitions
 * for the targets in priority order (priority.c), then each partition's
 * target rules (no runtime input, too small): a refused partition's nodes
 * go to the next target that takes them, or the CPU, and partitions are
 * recomputed until every partition stands. */
static carve_status partition_graph(cv_lower *lw, carve_graph_id g)
{
    carve_model *m = lw->m;
    cv_graph *gr = &m->graphs[g];
    uint32_t n = gr->nodes.n, nt = lw->n_t;
    if (n == 0)
        return CARVE_OK;
    if (taken_whole(lw, g)) {
        for (uint32_t i = 0; i < n; i++) {
            lw->ln[gr->nodes.v[i]].part = CARVE_NONE;
            lw->ln[gr->nodes.v[i]].reason = CV_R_NONE;
        }
        return CARVE_OK;
    }
    uint32_t *pos = cv_model_scratch(m);
    uint32_t *pred_start = cv_malloc(((size_t)n + 1) * sizeof *pred_start);
    uint8_t *take = cv_malloc((size_t)n * nt + 1), *rr = cv_malloc(n);
    uint32_t *part = cv_malloc((size_t)n * sizeof *part), *tgt = cv_malloc((size_t)n * sizeof *tgt);
    uint32_t *psize = NULL, *unit_of = NULL;
    cv_unit_inner_mask *inner = NULL;
    uint8_t *prun = NULL;
    cv_ids preds = {0}, reads = {0};
    carve_status st = CARVE_OK;
    if (!pos || !pred_start || !take || !rr || !part || !tgt) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++)
        pos[gr->nodes.v[i]] = i;
    /* QDQ node units first: inside a unit the float values stand for
     * quantized ones, which capability checks at the unit's edges */
    uint32_t n_units = n;
    bool any_units = false;
    for (uint32_t ti = 0; ti < nt; ti++)
        any_units = any_units || lw->ts[ti]->qdq_units;
    if (any_units) {
        unit_of = cv_malloc(((size_t)n + 1) * sizeof *unit_of);
        inner = cv_malloc(((size_t)n + 1) * sizeof *inner);
        if (!unit_of || !inner) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
            goto done;
        }
        if ((st = cv_qdq_units(m, g, unit_of, &n_units)))
            goto done;
        cv_unit_inner(m, g, pos, unit_of, n_units < n, inner);
    }
    for (uint32_t i = 0; i < n; i++) {
        carve_node_id id = gr->nodes.v[i];
        lw->ln[id].part = CARVE_NONE;
        for (uint32_t ti = 0; ti < nt; ti++) {
            cv_treason *r = &lw->tr[(size_t)id * nt + ti];
            r->reason = verdict(lw, ti, id, inner ? &inner[i] : NULL, &r->msg);
            take[(size_t)ti * n + i] = r->reason == CV_R_NONE;
        }
        pred_start[i] = preds.n;
        if (!node_reads(m, id, &reads)) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
            goto done;
        }
        rr[i] = node_is_impure_source(m, id);
        for (uint32_t k = 0; k < reads.n; k++) {
            const cv_value *v = &m->values[reads.v[k]];
            if (v->graph == g && v->producer != CARVE_NONE && m->nodes[v->producer].graph == g &&
                !cv_value_is_const(m, reads.v[k])) {
                if (!cv_ids_push(&preds, pos[v->producer])) {
                    st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
                    goto done;
                }
            } else if (is_runtime(m, reads.v[k])) {
                rr[i] = 1; /* a graph input or a runtime value from an outer scope */
            }
        }
    }
    pred_start[n] = preds.n;
    const uint32_t *units[CV_MAX_TARGETS];
    const uint8_t *takes[CV_MAX_TARGETS];
    for (uint32_t ti = 0; ti < nt; ti++) {
        bool mine = lw->ts[ti]->qdq_units && n_units < n;
        units[ti] = mine ? unit_of : NULL;
        takes[ti] = take + (size_t)ti * n;
        if (mine && !unit_verdicts(lw, ti, g, unit_of, n_units, take + (size_t)ti * n)) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
            goto done;
        }
    }
    cv_dag dag = {n, pred_start, preds.v, NULL, rr};
    char msg[512];
    for (;;) {
        uint32_t count = cv_partition_priority(&dag, units, n_units, nt, takes, part, tgt);
        if (count == CARVE_NONE) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
            goto done;
        }
        cv_free(psize);
        cv_free(prun);
        psize = cv_malloc(((size_t)count + 1) * sizeof *psize);
        prun = cv_malloc((size_t)count + 1);
        if (!psize || !prun) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
            goto done;
        }
        memset(psize, 0, ((size_t)count + 1) * sizeof *psize);
        memset(prun, 0, (size_t)count + 1);
        for (uint32_t i = 0; i < n; i++) {
            if (part[i] == CARVE_NONE)
                continue;
            psize[part[i]]++;
            if (rr[i])
                prun[part[i]] = 1;
            for (uint32_t k = pred_start[i]; k < pred_start[i + 1]; k++)
                if (part[preds.v[k]] != part[i])
                    prun[part[i]] = 1; /* reads a node output from outside */
        }
        bool refused = false;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t p = part[i];
            if (p == CARVE_NONE)
                continue;
            uint32_t ti = tgt[i];
            cv_treason *l = &lw->tr[(size_t)gr->nodes.v[i] * nt + ti];
            if (lw->ts[ti]->refuses_const && !prun[p]) {
                take[(size_t)ti * n + i] = 0;
                l->reason = CV_R_NO_RUNTIME_INPUT;
                l->msg = amsg(lw, psize[p] == 1 ? "its partition would read no runtime value (only constants)"
                                                : "its partition would read no runtime value (only constants); "
                                                  "the target refuses such partitions");
                refused = true;
            } else if (lw->o && lw->o->min_partition_nodes > 1 && psize[p] < lw->o->min_partition_nodes) {
                take[(size_t)ti * n + i] = 0;
                l->reason = CV_R_SMALL_PARTITION;
                snprintf(msg, sizeof msg, "its partition would have %u node%s, fewer than --min-partition-nodes %u",
                         psize[p], psize[p] == 1 ? "" : "s", lw->o->min_partition_nodes);
                l->msg = amsg(lw, msg);
                refused = true;
            }
        }
        if (!refused)
            break;
    }
    /* a node on CPU carries the first target's reason (the report lists
     * every target's) */
    for (uint32_t i = 0; i < n; i++) {
        carve_node_id id = gr->nodes.v[i];
        cv_lnode *l = &lw->ln[id];
        l->part = part[i];
        l->target = (uint8_t)(part[i] == CARVE_NONE ? 0 : tgt[i]);
        const cv_treason *r = &lw->tr[(size_t)id * nt + (part[i] == CARVE_NONE ? 0 : tgt[i])];
        l->reason = part[i] == CARVE_NONE ? r->reason : CV_R_NONE;
        l->msg = part[i] == CARVE_NONE ? r->msg : NULL;
    }
done:
    cv_free(unit_of);
    cv_free(inner);
    cv_free(pred_start);
    cv_free(take);
    cv_free(rr);
    cv_free(part);
    cv_free(tgt);
    cv_free(psize);
    cv_free(prun);
    cv_ids_free(&preds);
    cv_ids_free(&reads);
    return st;
}

/* Does v come from a DequantizeLinear, directly or through layout ops? */
static bool is_dequantized(const carve_model *m, carve_value_id v)
{
    for (int hops = 0; hops < 64 && v != CARVE_NONE; hops++) {
        carve_node_id p = m->values[v].producer;
        if (p == CARVE_NONE)
            return false;
        const char *op = m->nodes[p].op;
        if (!strcmp(op, "DequantizeLinear"))
            return true;
        const cv_op_def *d = cv_op_for_node(m, p);
        if (!d || !(d->flags & (CV_OP_LAYOUT | CV_OP_NOOP)) || !m->nodes[p].n_in)
            return false;
        v = m->nodes[p].in[0];
    }
    return false;
}

/* Decomposes every op on CPU of graph g that the CPU profile lacks. All of
 * a round's pieces are spliced into the node list in one pass (O(N)). */
static carve_status decompose_graph(cv_lower *lw, carve_graph_id g, bool *changed)
{
    carve_model *m = lw->m;
    uint32_t n_orig = m->graphs[g].nodes.n;
    cv_ids counts = {0};
    carve_status st = CARVE_OK;
    if (taken_whole(lw, g))
        return CARVE_OK;
    for (uint32_t i = 0; i < n_orig && !st; i++) {
        carve_node_id id = m->graphs[g].nodes.v[i];
        const cv_node *n = &m->nodes[id];
        const cv_lnode *l = &lw->ln[id];
        if (l->part != CARVE_NONE || l->reason == CV_R_CONSTANT)
            continue;
        const cv_op_def *def = cv_op_for_node(m, id);
        if (cv_cpu_has(lw->cpu, def, n->op))
            continue;
        if (!def || !def->decompose) {
            /* a piece of a decomposition names the node it comes from */
            const char *from = l->origin != id && l->origin < m->n_nodes
                                   ? cv_arena_printf(&m->arena, "; it is a piece of node '%s' (%s)",
                                                     m->nodes[l->origin].name, m->nodes[l->origin].op)
                                   : "";
            st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                          "node '%s' (%s%s%s) cannot be lowered: it ends on CPU (%s: %s) and the CPU profile has no "
                          "kernel for it%s%s",
                          n->name, *n->domain ? n->domain : "", *n->domain ? "." : "", n->op, cv_reason_code(l->reason),
                          l->msg ? l->msg : "", def ? " and carve has no decomposition of it" : "", from ? from : "");
            break;
        }
        bool deq = false;
        for (uint32_t k = 0; k < n->n_in && !deq; k++)
            deq = n->in[k] != CARVE_NONE && is_dequantized(m, n->in[k]);
        cv_reason sticky = l->sticky;
        uint8_t skip_on = l->skip_on;
        const char *sticky_msg = l->sticky ? l->msg : NULL;
        carve_node_id origin = l->origin;
        uint32_t before = m->n_nodes, cnt = 0;
        if ((st = cv_decompose_node_tail(m, id, &cnt)))
            break;
        if (!cv_ids_push(&counts, cnt) || !grow_ln(lw)) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
            break;
        }
        lw->ln[id].decomposed = true;
        lw->n_decomposed++;
        for (uint32_t p = before; p < m->n_nodes; p++) {
            lw->ln[p].origin = origin;
            lw->ln[p].skip_on = skip_on;
            if (sticky) {
                lw->ln[p].sticky = sticky;
                lw->ln[p].msg = sticky_msg;
            } else if (deq) {
                lw->ln[p].sticky = CV_R_DEQUANTIZED;
                lw->ln[p].msg = amsg(lw, "a piece of an op that reads a dequantized value: the target would "
                                         "get it without an encoding");
            }
        }
        *changed = true;
    }
    if (counts.n && !st)
        st = cv_graph_splice(m, g, n_orig, counts.v);
    cv_ids_free(&counts);
    return st;
}

static carve_status apply_skip_lists(cv_lower *lw)
{
    carve_model *m = lw->m;
    const carve_lower_opts *o = lw->o;
    if (!o)
        return CARVE_OK;
    for (size_t i = 0; i < o->n_cpu_nodes; i++) {
        carve_node_id id = carve_model_find_node(m, o->cpu_nodes[i]);
        if (id == CARVE_NONE || id >= lw->n_orig)
            return cv_error(m->ctx, CARVE_ERR_ARG,
                            "cpu_nodes: the model has no node named '%s'",
                            o->cpu_nodes[i]);
        lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
        lw->ln[id].msg = amsg(lw, "named in --cpu-nodes");
    }
    for (size_t i = 0; i < o->n_skip_on; i++) {
        const carve_skip_on *k = &o->skip_on[i];
        uint32_t ti = 0;
        while (ti < lw->n_t && strcmp(lw->ts[ti]->name, k->target))
            ti++;
        if (ti == lw->n_t)
            return cv_error(m->ctx, CARVE_ERR_ARG, "skip list: '%s' is not one of the targets of this lowering",
                            k->target);
        carve_node_id id = carve_model_find_node(m, k->node);
        if (id == CARVE_NONE || id >= lw->n_orig)
            return cv_error(m->ctx, CARVE_ERR_ARG, "skip list for %s: the model has no node named '%s'", k->target,
                            k->node);
        lw->ln[id].skip_on |= (uint8_t)(1u << ti);
    }
    for (size_t i = 0; i < o->n_cpu_ops; i++) {
        /* a name carve does not know and no node has is a typo, not a wish */
        bool known = cv_op_find("", o->cpu_ops[i], 1000) || cv_op_find("ai.carve", o->cpu_ops[i], 1000);
        for (uint32_t id = 0; id < lw->n_orig && !known; id++)
            known = !strcmp(m->nodes[id].op, o->cpu_ops[i]);
        if (!known)
            return cv_error(m->ctx, CARVE_ERR_ARG,
                            "cpu_ops: '%s' is not an op carve knows, and no node of the model is one", o->cpu_ops[i]);
    }
    for (size_t i = 0; i < o->n_cpu_ops; i++)
        for (uint32_t id = 0; id < lw->n_orig; id++)
            if (!strcmp(m->nodes[id].op, o->cpu_ops[i])) {
                lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
                lw->ln[id].msg = cv_arena_printf(&m->arena, "op %s is in --cpu-ops", o->cpu_ops[i]);
            }
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

/* The opset upgrade (src/passes/upgrade.c) before folding. Nodes it made
 * count as pieces of the node they come from and share its skip-list mark. */
static carve_status upgrade(cv_lower *lw)
{
    carve_node_id *from = NULL;
    carve_status st = cv_upgrade_run(lw->m, NULL, &from);
    if (st || !from)
        return st;
    if (!grow_ln(lw)) {
        cv_free(from);
        return cv_error(lw->m->ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    for (carve_node_id id = lw->n_orig; id < lw->m->n_nodes; id++) {
        carve_node_id src = from[id];
        if (src == CARVE_NONE)
            continue;
        lw->ln[id].origin = lw->ln[src].origin;
        lw->ln[id].sticky = lw->ln[src].sticky;
        lw->ln[id].msg = lw->ln[src].msg;
    }
    cv_free(from);
    return CARVE_OK;
}

/* Recomposition makes only ops the target lists (a recomposed op it
 * refuses would be decomposed again), and never takes a node a skip list
 * names. */
static bool target_lists(const char *op, void *user)
{
    const cv_lower *lw = user;
    for (uint32_t ti = 0; ti < lw->n_t; ti++)
        if (cv_target_find_op(lw->ts[ti], op))
            return true;
    return false;
}

static bool skipped(carve_node_id n, void *user)
{
    const cv_lower *lw = user;
    return n < lw->cap && lw->ln[n].sticky == CV_R_SKIPPED_BY_USER;
}

/* Constant folding (and recomposition) before the first round. Nodes
 * folding made count as pieces of the input node they come from, and a
 * node fused into another hands its skip-list mark on to it. */
static carve_status fold(cv_lower *lw)
{
    carve_model *m = lw->m;
    double t0 = now_ms();
    carve_fold_opts fo = {lw->o ? lw->o->fold_max_bytes : 0, false};
    lw->recomp = (cv_recomp_cfg){.wants = target_lists, .excluded = skipped, .user = lw};
    bool recompose = !(lw->o && lw->o->no_recompose);
    carve_status st = cv_fold_run_ex(m, &fo, recompose ? &lw->recomp : NULL, &lw->fold, &lw->fates);
    if (st)
        return st;
    lw->folded = true;
    lw->n_fates = m->n_nodes;
    if (!grow_ln(lw))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    for (carve_node_id id = 0; id < m->n_nodes; id++) {
        const cv_fold_node *fn = &lw->fates[id];
        carve_node_id src = fn->from != CARVE_NONE ? fn->from : id;
        if (id >= lw->n_orig && fn->from != CARVE_NONE)
            lw->ln[id].origin = lw->ln[fn->from].origin;
        if (fn->fate == CV_FATE_REMOVED && fn->into != CARVE_NONE)
            lw->ln[fn->into].skip_on |= lw->ln[id].skip_on;
        if (src != id)
            lw->ln[id].skip_on |= lw->ln[src].skip_on;
        if (fn->fate == CV_FATE_REMOVED && fn->into != CARVE_NONE && lw->ln[id].sticky && !lw->ln[fn->into].sticky) {
            lw->ln[fn->into].sticky = lw->ln[id].sticky;
            lw->ln[fn->into].msg = lw->ln[id].msg;
        }
        if (src != id && lw->ln[src].sticky && !lw->ln[id].sticky) {
            lw->ln[id].sticky = lw->ln[src].sticky;
            lw->ln[id].msg = lw->ln[src].msg;
        }
    }
    /* --cpu-ops names a recomposed op: the made node stays on CPU */
    for (uint32_t i = 0; lw->o && i < lw->recomp.n_matches; i++) {
        carve_node_id id = lw->recomp.matches[i].node;
        for (size_t k = 0; k < lw->o->n_cpu_ops; k++)
            if (!strcmp(m->nodes[id].op, lw->o->cpu_ops[k])) {
                lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
                lw->ln[id].msg = cv_arena_printf(&m->arena, "op %s is in --cpu-ops", lw->o->cpu_ops[k]);
            }
    }
    lw->ms_fold = now_ms() - t0;
    return CARVE_OK;
}

/* One lowering of m, compile round `round`. *again: the backend refused
 * nodes that lw->refused now lists; the model must be restored and lowered
 * again. */
static carve_status lower_once(carve_model *m, const carve_target *const *ts, const carve_backend *const *bs,
                               uint32_t nt, const carve_lower_opts *opts, cv_refused *refused, uint32_t round,
                               carve_report **report, bool *again)
{
    double t0 = now_ms();
    carve_target *own_cpu = NULL;
    cv_lower lw = {.m = m, .t = ts[0], .o = opts, .n_orig = m->n_nodes, .b = bs[0], .refused = refused,
                   .compile_rounds = round, .n_t = nt};
    for (uint32_t i = 0; i < nt; i++) {
        lw.ts[i] = ts[i];
        lw.bs[i] = bs[i];
    }
    lw.cpu = opts && opts->cpu ? opts->cpu : NULL;
    if (!lw.cpu) {
        carve_status s = carve_target_builtin(m->ctx, "cpu", &own_cpu);
        if (s)
            return s;
        lw.cpu = own_cpu;
    }
    carve_status st = CARVE_OK;
    if (!lw.cpu->is_cpu) {
        st = cv_error(m->ctx, CARVE_ERR_ARG, "the CPU profile %s is a delegate target, not a cpu_profile", lw.cpu->source);
        goto out;
    }
    /* carve refuses a profile whose kept-whole op can neither run on the CPU
     * nor be decomposed: such an op would have no way to end on CPU. */
    for (uint32_t ti = 0; ti < nt; ti++) {
        const carve_target *t = ts[ti];
        for (uint32_t i = 0; i < t->n_keep; i++) {
            const cv_op_def *d = cv_op_find("", t->keep_whole[i], 1000);
            if (!cv_cpu_has(lw.cpu, d, t->keep_whole[i]) && !(d && d->decompose)) {
                st = cv_error(m->ctx, CARVE_ERR_INVALID,
                              "target %s: kept-whole op %s is neither in the CPU profile nor composite", t->source,
                              t->keep_whole[i]);
                goto out;
            }
        }
    }
    if (!(opts && opts->allow_newer_opset) && (st = cv_check_opsets(m)))
        goto out;
    if (!grow_ln(&lw)) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = apply_skip_lists(&lw)))
        goto out;
    if (report && (st = cv_report_io_take(&lw)))
        goto out;
    if (!(opts && opts->no_upgrade) && (st = upgrade(&lw)))
        goto out;
    if (!(opts && opts->no_fold) && (st = fold(&lw)))
        goto out;
    bool changed = true;
    while (changed) {
        if (++lw.rounds > MAX_ROUNDS) {
            st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "lowering did not settle after %d rounds", MAX_ROUNDS);
            goto out;
        }
        changed = false;
        double a = now_ms();
        if ((st = cv_infer_model(m, NULL)))
            goto out;
        double b = now_ms();
        lw.ms_infer += b - a;
        if (!grow_ln(&lw)) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (carve_graph_id g = 0; g < m->n_graphs; g++)
            if ((st = partition_graph(&lw, g)))
                goto out;
        double c = now_ms();
        lw.ms_partition += c - b;
        for (carve_graph_id g = 0; g < m->n_graphs; g++)
            if ((st = decompose_graph(&lw, g, &changed)))
                goto out;
        lw.ms_decompose += now_ms() - c;
    }
    double d0 = now_ms();
    uint32_t n_graphs = m->n_graphs; /* bodies made below are not partitioned again */
    for (carve_graph_id g = 0; g < n_graphs; g++)
        if ((st = cv_build_delegates(&lw, g)))
            goto out;
    /* nodes in bodies taken whole went with their control-flow node */
    for (carve_graph_id g = 1; g < n_graphs; g++) {
        carve_node_id top = CARVE_NONE;
        for (carve_graph_id p = g; p != CARVE_NONE && p != 0; p = m->graphs[p].parent) {
            carve_node_id o = m->graphs[p].owner;
            if (o != CARVE_NONE && o < lw.cap && lw.ln[o].part != CARVE_NONE)
                top = o;
        }
        for (uint32_t i = 0; top != CARVE_NONE && i < m->graphs[g].nodes.n; i++) {
            lw.ln[m->graphs[g].nodes.v[i]].part = lw.ln[top].part;
            lw.ln[m->graphs[g].nodes.v[i]].target = lw.ln[top].target;
            lw.ln[m->graphs[g].nodes.v[i]].delegate = lw.ln[top].delegate;
        }
    }
    if (lw.n_parts && (st = carve_model_set_opset(m, "ai.carve", 1)))
        goto out;
    /* before IR 4 every initializer had to be a graph input too: folding and
     * decompositions add initializers that are not, so the model moves to
     * IR 4, which differs from 3 in nothing else */
    if (m->ir_version < 4)
        for (carve_value_id v = 0; v < m->n_values; v++)
            if (m->values[v].init && !m->values[v].is_input) {
                m->ir_version = 4;
                break;
            }
    if ((st = carve_model_verify(m))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(m->ctx));
        st = cv_error(m->ctx, st, "lowering produced an invalid model (a carve bug): %s", msg);
        goto out;
    }
    /* the backends compile each partition; a refusal is one more rule */
    if (lw.n_parts && ((st = cv_backend_compile_all(&lw, again)) || *again))
        goto out;
    lw.ms_delegate = now_ms() - d0;
    lw.ms_total = now_ms() - t0;
    if (report)
        st = cv_report_build(&lw, report);
out:
    for (uint32_t i = 0; i < lw.n_parts; i++) {
        cv_ids_free(&lw.parts[i].nodes);
        cv_ids_free(&lw.parts[i].inputs);
        cv_ids_free(&lw.parts[i].outputs);
        cv_ids_free(&lw.parts[i].encoded);
    }
    cv_free(lw.parts);
    cv_free(lw.ln);
    cv_free(lw.tr);
    cv_free(lw.fates);
    cv_recomp_free(&lw.recomp);
    cv_report_io_free(&lw);
    carve_target_free(own_cpu);
    return st;
}

carve_status carve_lower(carve_model *m, const carve_target *t, const carve_lower_opts *opts, carve_report **report)
{
    return carve_lower_targets(m, &t, 1, opts, report);
}

carve_status carve_lower_targets(carve_model *m, const carve_target *const *ts, size_t n_targets,
                                 const carve_lower_opts *opts, carve_report **report)
{
    if (report)
        *report = NULL;
    if (!m || !ts || n_targets == 0 || n_targets > CV_MAX_TARGETS)
        return m ? cv_error(m->ctx, CARVE_ERR_ARG, "lowering takes 1 to %d targets, not %zu", CV_MAX_TARGETS,
                            n_targets)
                 : CARVE_ERR_ARG;
    const carve_backend *bs[CV_MAX_TARGETS] = {0};
    bool compiles = false;
    for (size_t i = 0; i < n_targets; i++) {
        const carve_target *t = ts[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(ts[j]->name, t->name))
                return cv_error(m->ctx, CARVE_ERR_ARG, "target %s is named twice in the priority list", t->name);
        if (t->is_cpu) {
            if (n_targets > 1)
                return cv_error(m->ctx, CARVE_ERR_ARG,
                                "target %s is a CPU profile: the CPU comes last by itself, it is not a target to list",
                                t->name);
            continue;
        }
        const char *bname = carve_target_backend(m->ctx, t);
        const carve_backend *b = cv_ctx_backend(m->ctx, bname);
        if (!b)
            return cv_error(m->ctx, CARVE_ERR_ARG,
                            "target %s: its backend '%s' is not registered on this context", t->name, bname);
        char why[512] = "";
        if (b->is_available && !b->is_available(b->user, why, sizeof why))
            return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "target %s: backend '%s' is not available here: %s",
                            t->name, b->name, why[0] ? why : "(no reason given)");
        bs[i] = b;
        compiles = compiles || strcmp(b->name, "reference");
    }
    /* A backend that compiles may refuse partitions: lowering then starts
     * again from the input model, kept as bytes (exact: saving and loading
     * a model gives the same model), with the refused nodes moved on. */
    void *snap = NULL;
    size_t snap_n = 0;
    carve_status st = CARVE_OK;
    if (compiles && (st = carve_model_save_memory(m, &snap, &snap_n)))
        return st;
    cv_refused refused = {0};
    for (uint32_t round = 1;; round++) {
        bool again = false;
        st = lower_once(m, ts, bs, (uint32_t)n_targets, opts, &refused, round, report, &again);
        if (st || !again)
            break;
        carve_model *fresh = NULL;
        if ((st = carve_model_load_memory(m->ctx, snap, snap_n, NULL, &fresh)))
            break;
        if (!cv_model_swap(m, fresh)) {
            carve_model_free(fresh);
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
            break;
        }
        carve_model_free(fresh);
    }
    carve_free(snap);
    cv_refused_free(&refused);
    return st;
}

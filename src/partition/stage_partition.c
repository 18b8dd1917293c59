/* stage_partition.c: the partition stage of one round, graph by graph.
 * The steps, in order (cv_stage_partition at the bottom):
 *   units       QDQ node units (units.c), for targets that place them whole;
 *   capability  every target's verdict on every node (stage_capability.c);
 *   edges       the graph reduced to what partitioning needs (cv_dag);
 *   unit rule   a unit goes to a target whole or not at all;
 *   levels      partitions for the targets in priority order (priority.c,
 *               levels.c), then the target rules on the real partitions (no
 *               runtime input, too small); a refused partition's nodes go to
 *               the next target that takes them, or the CPU, and levels are
 *               computed again until every partition stands;
 *   commit      each node's partition, target and reason in lw->ln. */
#include "partition.h"

#include <string.h>

/* One graph's partitioning state for one round. Positions index the
 * graph's node list. */
typedef struct pgraph {
    carve_graph_id g;
    uint32_t n, nt;
    uint32_t *pos;              /* by node id: its position (model scratch) */
    uint32_t *unit_of, n_units; /* by position: its QDQ unit (NULL: no target places units) */
    cv_unit_inner_mask *inner;  /* by position: inner values of its unit */
    uint8_t *take;              /* [ti * n + i]: target ti takes node i */
    uint32_t *pred_start;       /* the edges (cv_dag) */
    cv_ids preds;
    uint8_t *rr;                 /* reads a runtime value, or makes one (random) */
    uint32_t *part, *tgt, count; /* this try's partitions and their targets */
    uint32_t *psize;             /* by partition: its node count */
    uint8_t *prun;               /* by partition: reads a runtime value */
} pgraph;

static carve_status nomem(const cv_lower *lw)
{
    return cv_error(lw->m->ctx, CARVE_ERR_NOMEM, "out of memory partitioning");
}

/* The outer values node id's subgraphs read. */
static bool node_captures(const carve_model *m, carve_node_id id, cv_ids *out)
{
    const cv_node *n = &m->nodes[id];
    out->n = 0;
    for (uint32_t j = 0; j < n->n_attr; j++) {
        const cv_attr *a = &n->attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++)
            if (!cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], out))
                return false;
    }
    return true;
}

/* cv_ids_push without its call while there is room (an edge per read). */
static inline bool push(cv_ids *a, uint32_t x)
{
    if (a->n < a->cap) {
        a->v[a->n++] = x;
        return true;
    }
    return cv_ids_push(a, x);
}

static carve_status pg_open(cv_lower *lw, carve_graph_id g, pgraph *pg)
{
    carve_model *m = lw->m;
    const cv_graph *gr = &m->graphs[g];
    uint32_t n = gr->nodes.n, nt = lw->n_t;
    *pg = (pgraph){.g = g, .n = n, .nt = nt, .n_units = n};
    pg->pos = cv_model_scratch(m);
    pg->pred_start = cv_malloc(((size_t)n + 1) * sizeof *pg->pred_start);
    pg->take = cv_malloc((size_t)n * nt + 1);
    pg->rr = cv_malloc(n);
    pg->part = cv_malloc((size_t)n * sizeof *pg->part);
    pg->tgt = cv_malloc((size_t)n * sizeof *pg->tgt);
    if (!pg->pos || !pg->pred_start || !pg->take || !pg->rr || !pg->part || !pg->tgt)
        return nomem(lw);
    for (uint32_t i = 0; i < n; i++)
        pg->pos[gr->nodes.v[i]] = i;
    return CARVE_OK;
}

static void pg_close(pgraph *pg)
{
    cv_free(pg->unit_of);
    cv_free(pg->inner);
    cv_free(pg->pred_start);
    cv_free(pg->take);
    cv_free(pg->rr);
    cv_free(pg->part);
    cv_free(pg->tgt);
    cv_free(pg->psize);
    cv_free(pg->prun);
    cv_ids_free(&pg->preds);
}

/* units: QDQ node units first: inside a unit the float values stand for
 * quantized ones, which capability checks at the unit's edges. */
static carve_status step_units(cv_lower *lw, pgraph *pg)
{
    bool any_units = false;
    for (uint32_t ti = 0; ti < pg->nt; ti++)
        any_units = any_units || lw->ts[ti]->qdq_units;
    if (!any_units)
        return CARVE_OK;
    pg->unit_of = cv_malloc(((size_t)pg->n + 1) * sizeof *pg->unit_of);
    pg->inner = cv_malloc(((size_t)pg->n + 1) * sizeof *pg->inner);
    if (!pg->unit_of || !pg->inner)
        return nomem(lw);
    carve_status st = cv_qdq_units(lw->m, pg->g, pg->unit_of, &pg->n_units);
    if (!st)
        cv_unit_inner(lw->m, pg->g, pg->pos, pg->unit_of, pg->n_units < pg->n, pg->inner);
    return st;
}

/* capability: every target's verdict on every node (lw->tr, pg->take). */
static void step_capability(cv_lower *lw, pgraph *pg)
{
    const cv_graph *gr = &lw->m->graphs[pg->g];
    for (uint32_t i = 0; i < pg->n; i++) {
        carve_node_id id = gr->nodes.v[i];
        lw->ln[id].part = CARVE_NONE;
        for (uint32_t ti = 0; ti < pg->nt; ti++) {
            cv_treason *r = &lw->tr[(size_t)id * pg->nt + ti];
            r->reason = cv_verdict(lw, ti, id, pg->inner ? &pg->inner[i] : NULL, &r->msg);
            pg->take[(size_t)ti * pg->n + i] = r->reason == CV_R_NONE;
        }
    }
}

/* edges: each node's predecessors in the graph (through the values it and
 * its bodies read), and whether it reads a runtime value: a graph input, a
 * node output (not a Constant's) or an outer value that is not constant
 * (cv_value_is_const, with the graph's own producers' rows looked up once:
 * flags[i] bit 0 a constant source, bit 1 an impure one). */
static inline bool read_edge(const carve_model *m, pgraph *pg, const uint8_t *flags, uint32_t i, carve_value_id v)
{
    const cv_value *x = &m->values[v];
    carve_node_id p = x->producer;
    bool here = p != CARVE_NONE && m->nodes[p].graph == pg->g;
    if (x->init ? !x->is_input : here ? flags[pg->pos[p]] & 1 : p != CARVE_NONE && cv_op_has(m, p, CV_OP_CONST_SOURCE))
        return true; /* a constant */
    if (here && x->graph == pg->g)
        return push(&pg->preds, pg->pos[p]);
    pg->rr[i] = 1; /* a graph input or a runtime value from an outer scope */
    return true;
}

static carve_status step_edges(cv_lower *lw, pgraph *pg)
{
    carve_model *m = lw->m;
    const cv_graph *gr = &m->graphs[pg->g];
    uint8_t *flags = cv_malloc((size_t)pg->n + 1);
    if (!flags)
        return nomem(lw);
    size_t n_reads = 0;
    for (uint32_t i = 0; i < pg->n; i++) {
        const cv_op_def *d = cv_op_for_node(m, gr->nodes.v[i]);
        flags[i] = (uint8_t)((d && (d->flags & CV_OP_CONST_SOURCE) == CV_OP_CONST_SOURCE) |
                             (d && (d->flags & CV_OP_IMPURE) ? 2 : 0));
        n_reads += m->nodes[gr->nodes.v[i]].n_in;
    }
    cv_ids reads = {0};
    carve_status st = CARVE_OK;
    if (n_reads < UINT32_MAX && pg->preds.cap < n_reads) { /* room for an edge per input */
        uint32_t *v = cv_realloc(pg->preds.v, n_reads * sizeof *v);
        if (v) {
            pg->preds.v = v;
            pg->preds.cap = (uint32_t)n_reads;
        }
    }
    for (uint32_t i = 0; i < pg->n && !st; i++) {
        carve_node_id id = gr->nodes.v[i];
        const cv_node *n = &m->nodes[id];
        pg->pred_start[i] = pg->preds.n;
        pg->rr[i] = flags[i] >> 1;
        for (uint32_t k = 0; k < n->n_in && !st; k++)
            if (n->in[k] != CARVE_NONE && !read_edge(m, pg, flags, i, n->in[k]))
                st = nomem(lw);
        if (!st && n->n_attr) { /* what its subgraphs capture */
            if (!node_captures(m, id, &reads))
                st = nomem(lw);
            for (uint32_t k = 0; k < reads.n && !st; k++)
                if (!read_edge(m, pg, flags, i, reads.v[k]))
                    st = nomem(lw);
        }
    }
    pg->pred_start[pg->n] = pg->preds.n;
    cv_ids_free(&reads);
    cv_free(flags);
    return st;
}

/* unit rule: a QDQ node unit is placed as one: when target ti cannot take
 * one of its nodes, it takes none of them (reason node_unit, naming that
 * node). */
static carve_status unit_verdicts(cv_lower *lw, pgraph *pg, uint32_t ti)
{
    carve_model *m = lw->m;
    const cv_graph *gr = &m->graphs[pg->g];
    uint8_t *sup = pg->take + (size_t)ti * pg->n;
    uint32_t *first_cpu = cv_malloc(((size_t)pg->n_units + 1) * sizeof *first_cpu); /* by unit: its first CPU node */
    if (!first_cpu)
        return nomem(lw);
    for (uint32_t u = 0; u < pg->n_units; u++)
        first_cpu[u] = CARVE_NONE;
    for (uint32_t i = 0; i < pg->n; i++)
        if (!sup[i] && first_cpu[pg->unit_of[i]] == CARVE_NONE)
            first_cpu[pg->unit_of[i]] = i;
    for (uint32_t i = 0; i < pg->n; i++) {
        uint32_t f = first_cpu[pg->unit_of[i]];
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
    return cv_model_nomem(m) ? nomem(lw) : CARVE_OK;
}

static carve_status step_unit_rule(cv_lower *lw, pgraph *pg)
{
    carve_status st = CARVE_OK;
    for (uint32_t ti = 0; ti < pg->nt && !st; ti++)
        if (lw->ts[ti]->qdq_units && pg->n_units < pg->n)
            st = unit_verdicts(lw, pg, ti);
    return st;
}

/* levels: this try's partitions, their sizes and whether each reads a
 * runtime value. */
static carve_status levels(cv_lower *lw, pgraph *pg)
{
    const uint32_t *units[CV_MAX_TARGETS];
    const uint8_t *takes[CV_MAX_TARGETS];
    for (uint32_t ti = 0; ti < pg->nt; ti++) {
        units[ti] = lw->ts[ti]->qdq_units && pg->n_units < pg->n ? pg->unit_of : NULL;
        takes[ti] = pg->take + (size_t)ti * pg->n;
    }
    cv_dag dag = {pg->n, pg->pred_start, pg->preds.v, NULL, pg->rr};
    uint32_t count = cv_partition_priority(&dag, units, pg->n_units, pg->nt, takes, pg->part, pg->tgt);
    if (count == CARVE_NONE)
        return nomem(lw);
    pg->count = count;
    cv_free(pg->psize);
    cv_free(pg->prun);
    pg->psize = cv_malloc(((size_t)count + 1) * sizeof *pg->psize);
    pg->prun = cv_malloc((size_t)count + 1);
    if (!pg->psize || !pg->prun)
        return nomem(lw);
    memset(pg->psize, 0, ((size_t)count + 1) * sizeof *pg->psize);
    memset(pg->prun, 0, (size_t)count + 1);
    for (uint32_t i = 0; i < pg->n; i++) {
        uint32_t p = pg->part[i];
        if (p == CARVE_NONE)
            continue;
        pg->psize[p]++;
        if (pg->rr[i])
            pg->prun[p] = 1;
        for (uint32_t k = pg->pred_start[i]; k < pg->pred_start[i + 1]; k++)
            if (pg->part[pg->preds.v[k]] != p)
                pg->prun[p] = 1; /* reads a node output from outside */
    }
    return CARVE_OK;
}

/* target rules on this try's partitions: a target that refuses partitions
 * reading no runtime value (HTP), and min_partition_nodes. A refused
 * partition's nodes are no longer taken by its target; true when any was. */
static bool target_rules(cv_lower *lw, pgraph *pg)
{
    carve_model *m = lw->m;
    const cv_graph *gr = &m->graphs[pg->g];
    const carve_lower_opts *o = lw->o;
    bool refused = false;
    for (uint32_t i = 0; i < pg->n; i++) {
        uint32_t p = pg->part[i];
        if (p == CARVE_NONE)
            continue;
        uint32_t ti = pg->tgt[i];
        cv_treason *l = &lw->tr[(size_t)gr->nodes.v[i] * pg->nt + ti];
        if (lw->ts[ti]->refuses_const && !pg->prun[p]) {
            pg->take[(size_t)ti * pg->n + i] = 0;
            l->reason = CV_R_NO_RUNTIME_INPUT;
            l->msg = cv_arena_strdup(&m->arena, pg->psize[p] == 1
                                                    ? "its partition would read no runtime value (only constants)"
                                                    : "its partition would read no runtime value (only constants); "
                                                      "the target refuses such partitions");
            refused = true;
        } else if (o && o->min_partition_nodes > 1 && pg->psize[p] < o->min_partition_nodes) {
            pg->take[(size_t)ti * pg->n + i] = 0;
            l->reason = CV_R_SMALL_PARTITION;
            l->msg =
                cv_arena_printf(&m->arena, "its partition would have %u node%s, fewer than the minimum of %u asked for",
                                pg->psize[p], pg->psize[p] == 1 ? "" : "s", o->min_partition_nodes);
            refused = true;
        }
    }
    return refused;
}

/* commit: a node on CPU carries the first target's reason (the report
 * lists every target's). */
static void commit(cv_lower *lw, const pgraph *pg)
{
    const cv_graph *gr = &lw->m->graphs[pg->g];
    for (uint32_t i = 0; i < pg->n; i++) {
        carve_node_id id = gr->nodes.v[i];
        cv_lnode *l = &lw->ln[id];
        bool cpu = pg->part[i] == CARVE_NONE;
        l->part = pg->part[i];
        l->target = (uint8_t)(cpu ? 0 : pg->tgt[i]);
        const cv_treason *r = &lw->tr[(size_t)id * pg->nt + l->target];
        l->reason = cpu ? r->reason : CV_R_NONE;
        l->msg = cpu ? r->msg : NULL;
    }
}

static carve_status partition_graph(cv_lower *lw, carve_graph_id g)
{
    const cv_graph *gr = &lw->m->graphs[g];
    if (gr->nodes.n == 0)
        return CARVE_OK;
    if (cv_taken_whole(lw, g)) { /* its nodes go with their control-flow node */
        for (uint32_t i = 0; i < gr->nodes.n; i++) {
            lw->ln[gr->nodes.v[i]].part = CARVE_NONE;
            lw->ln[gr->nodes.v[i]].reason = CV_R_NONE;
        }
        return CARVE_OK;
    }
    pgraph pg;
    carve_status st = pg_open(lw, g, &pg);
    if (!st)
        st = step_units(lw, &pg);
    if (!st) {
        step_capability(lw, &pg);
        st = step_edges(lw, &pg);
    }
    if (!st)
        st = step_unit_rule(lw, &pg);
    while (!st && !(st = levels(lw, &pg)) && target_rules(lw, &pg))
        ; /* refused partitions' nodes moved on: levels again */
    if (!st)
        commit(lw, &pg);
    pg_close(&pg);
    return st;
}

carve_status cv_stage_partition(cv_lower *lw)
{
    if (!cv_lower_grow(lw))
        return cv_error(lw->m->ctx, CARVE_ERR_NOMEM, "out of memory");
    carve_status st = CARVE_OK;
    for (carve_graph_id g = 0; g < lw->m->n_graphs && !st; g++)
        st = partition_graph(lw, g);
    return st;
}

/* stage_capability.c: each target's verdict on each node, the first step
 * of the partition stage. In order: the skip lists' marks, a refusal the
 * backend's compile made in an earlier lowering (backend_rule.c), the
 * profile (capability.c), control flow the target takes only whole with its
 * bodies, then the backend's own per-node verdict. */
#include "partition.h"

#include <string.h>

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

/* Bodies taken whole go to the target with their node. */
bool cv_taken_whole(const cv_lower *lw, carve_graph_id g)
{
    const carve_model *m = lw->m;
    for (; g != CARVE_NONE && g != 0; g = m->graphs[g].parent) {
        carve_node_id o = m->graphs[g].owner;
        if (o != CARVE_NONE && o < lw->cap && lw->ln[o].part != CARVE_NONE)
            return true;
    }
    return false;
}

/* Sticky marks (skip lists) and per-target skip lists first, then a
 * compile refusal of an earlier lowering, the profile, control flow taken
 * whole and the backend. */
static const cv_target_op not_looked_up; /* its address marks an op not looked up yet */
#define NOT_LOOKED_UP (&not_looked_up)

/* The target's row for node id's op: by the op table row def the node has,
 * looked up once per lowering and op (a name search per node otherwise). */
static const cv_target_op *target_op(cv_lower *lw, uint32_t ti, carve_node_id id, const cv_op_def *def)
{
    const carve_target *t = lw->ts[ti];
    const char *op = lw->m->nodes[id].op;
    if (!def)
        return cv_target_find_op(t, op);
    if (!lw->op_rows[ti]) {
        size_t n = cv_op_count();
        lw->op_rows[ti] = cv_malloc(n * sizeof *lw->op_rows[ti]);
        if (!lw->op_rows[ti])
            return cv_target_find_op(t, op);
        for (size_t i = 0; i < n; i++)
            lw->op_rows[ti][i] = NOT_LOOKED_UP;
    }
    size_t k = cv_op_row(def);
    if (lw->op_rows[ti][k] == NOT_LOOKED_UP)
        lw->op_rows[ti][k] = cv_target_find_op(t, op);
    return lw->op_rows[ti][k];
}

cv_reason cv_verdict(cv_lower *lw, uint32_t ti, carve_node_id id, const cv_unit_inner_mask *inner, const char **out)
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
        *out = cv_arena_printf(&m->arena, "named in the list of nodes kept off %s", t->name);
        return CV_R_SKIPPED_BY_USER;
    }
    const char *refused = cv_backend_refused(lw, ti, id);
    if (refused) {
        *out = cv_arena_strdup(&m->arena, refused);
        return CV_R_BACKEND_REFUSED;
    }
    const cv_op_def *def = cv_op_for_node(m, id);
    cv_reason r = cv_capable_op(m, id, t, target_op(lw, ti, id, def), t->qdq_units ? inner : NULL, msg, sizeof msg);
    *out = r ? cv_arena_strdup(&m->arena, msg) : NULL;
    if (r)
        def = NULL;
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

/* stage_fold.c: constant folding (src/passes/fold.c, docs/folding.md) and,
 * inside it, recomposition (src/passes/recompose.c, docs/recompose.md)
 * before the first round. Nodes folding made count as pieces of the input
 * node they come from, and a node fused into another hands its skip-list
 * mark on to it. */
#include "partition.h"

/* Recomposition makes only ops a target lists (a recomposed op it refuses
 * would be decomposed again), and never takes a node a skip list names. */
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

carve_status cv_stage_fold(cv_lower *lw)
{
    carve_model *m = lw->m;
    double t0 = cv_now_ms();
    carve_fold_opts fo = {lw->o ? lw->o->fold_max_bytes : 0, false};
    lw->recomp = (cv_recomp_cfg){.wants = target_lists, .excluded = skipped, .user = lw};
    bool recompose = !(lw->o && lw->o->no_recompose);
    carve_status st = cv_fold_run_ex(m, &fo, recompose ? &lw->recomp : NULL, &lw->fold, &lw->fates, &lw->types_fresh);
    if (st)
        return st;
    lw->folded = true;
    lw->n_fates = m->n_nodes;
    if (!cv_lower_grow(lw))
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
    /* cpu_ops names a recomposed op: the made node stays on CPU */
    for (uint32_t i = 0; i < lw->recomp.n_matches; i++) {
        carve_node_id id = lw->recomp.matches[i].node;
        const char *msg = cv_cpu_op_kept(lw, m->nodes[id].op);
        if (msg) {
            lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
            lw->ln[id].msg = msg;
        }
    }
    lw->ms_fold = cv_now_ms() - t0;
    return CARVE_OK;
}

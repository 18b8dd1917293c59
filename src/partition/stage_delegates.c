/* stage_delegates.c: the delegates stage. Each partition of each graph
 * becomes one ai.carve Delegate node carrying its nodes as its body
 * (delegate.c); the nodes of bodies a target took whole with their
 * control-flow node are marked as going with it; the model gets the
 * ai.carve opset when it has a Delegate. */
#include "partition.h"

carve_status cv_stage_delegates(cv_lower *lw)
{
    carve_model *m = lw->m;
    carve_status st = CARVE_OK;
    uint32_t n_graphs = m->n_graphs; /* bodies made below are not partitioned again */
    for (carve_graph_id g = 0; g < n_graphs; g++)
        if ((st = cv_build_delegates(lw, g)))
            return st;
    /* nodes in bodies taken whole went with their control-flow node */
    for (carve_graph_id g = 1; g < n_graphs; g++) {
        carve_node_id top = CARVE_NONE;
        for (carve_graph_id p = g; p != CARVE_NONE && p != 0; p = m->graphs[p].parent) {
            carve_node_id o = m->graphs[p].owner;
            if (o != CARVE_NONE && o < lw->cap && lw->ln[o].part != CARVE_NONE)
                top = o;
        }
        for (uint32_t i = 0; top != CARVE_NONE && i < m->graphs[g].nodes.n; i++) {
            lw->ln[m->graphs[g].nodes.v[i]].part = lw->ln[top].part;
            lw->ln[m->graphs[g].nodes.v[i]].target = lw->ln[top].target;
            lw->ln[m->graphs[g].nodes.v[i]].delegate = lw->ln[top].delegate;
        }
    }
    if (lw->n_parts)
        st = carve_model_set_opset(m, "ai.carve", 1);
    return st;
}

/* stage_upgrade.c: the opset upgrade (src/passes/upgrade.c, docs/upgrade.md)
 * before folding. Nodes it makes count as pieces of the node they come
 * from and share its skip-list mark. */
#include "partition.h"

carve_status cv_stage_upgrade(cv_lower *lw)
{
    carve_node_id *from = NULL;
    carve_status st = cv_upgrade_run(lw->m, NULL, &from, &lw->types_fresh);
    if (st || !from)
        return st;
    if (!cv_lower_grow(lw)) {
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

/* stage_skip.c: the skip lists (carve_lower_opts cpu_nodes, cpu_ops,
 * skip_on) as marks on the input model's nodes. A mark holds across rounds
 * and passes on to what a node becomes (upgrade, fold, decompose). Names a
 * list gives that match nothing are errors, not wishes. */
#include "partition.h"

#include <string.h>

carve_status cv_stage_skip(cv_lower *lw)
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
        lw->ln[id].msg = cv_arena_strdup(&m->arena, "named in the list of nodes kept on CPU");
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
    /* one message per op, made at its first node and shared by the rest
     * (messages are read-only; stage_fold shares them too) */
    for (size_t i = 0; i < o->n_cpu_ops; i++) {
        const char *msg = NULL;
        for (uint32_t id = 0; id < lw->n_orig; id++)
            if (!strcmp(m->nodes[id].op, o->cpu_ops[i])) {
                if (!msg)
                    msg = cv_arena_printf(&m->arena, "op %s is in the list of ops kept on CPU", o->cpu_ops[i]);
                lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
                lw->ln[id].msg = msg;
            }
    }
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

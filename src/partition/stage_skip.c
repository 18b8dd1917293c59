/* stage_skip.c: the skip lists (carve_lower_opts cpu_nodes, cpu_ops,
 * skip_on) as marks on the input model's nodes. A mark holds across rounds
 * and passes on to what a node becomes (upgrade, fold, decompose). Names a
 * list gives that match nothing are errors, not wishes. */
#include "partition.h"

#include <string.h>

/* One message per op, made at its first node and shared by the rest
 * (messages are read-only): cpu_ops entry i's. */
static const char *op_msg(cv_lower *lw, uint32_t i)
{
    if (!lw->cpu_op_msg[i])
        lw->cpu_op_msg[i] =
            cv_arena_printf(&lw->m->arena, "op %s is in the list of ops kept on CPU", lw->o->cpu_ops[i]);
    return lw->cpu_op_msg[i];
}

carve_status cv_stage_skip(cv_lower *lw)
{
    carve_model *m = lw->m;
    const carve_lower_opts *o = lw->o;
    if (!o)
        return CARVE_OK;
    /* one message for every node the list names (read-only, shared) */
    const char *named = o->n_cpu_nodes ? cv_arena_strdup(&m->arena, "named in the list of nodes kept on CPU") : NULL;
    for (size_t i = 0; i < o->n_cpu_nodes; i++) {
        carve_node_id id = carve_model_find_node(m, o->cpu_nodes[i]);
        if (id == CARVE_NONE || id >= lw->n_orig)
            return cv_error(m->ctx, CARVE_ERR_ARG,
                            "cpu_nodes: the model has no node named '%s'",
                            o->cpu_nodes[i]);
        lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
        lw->ln[id].msg = named;
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
    if (!o->n_cpu_ops)
        return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
    /* the ops, to their first place in the list (a name given twice is one
     * entry): one look-up per node, not a scan of the list */
    const char *doing = "marking the ops kept on CPU";
    lw->cpu_op_msg = cv_zalloc(m->ctx, o->n_cpu_ops * sizeof *lw->cpu_op_msg, doing);
    bool *seen = lw->cpu_op_msg ? cv_zalloc(m->ctx, o->n_cpu_ops * sizeof *seen, doing) : NULL;
    carve_status st = seen ? CARVE_OK : CARVE_ERR_NOMEM;
    /* the first bytes of the listed ops: most nodes are ruled out by theirs
     * before a look-up hashes the name */
    uint64_t lead[4] = {0};
    for (size_t i = 0; i < o->n_cpu_ops && st == CARVE_OK; i++) {
        unsigned char c = (unsigned char)o->cpu_ops[i][0];
        lead[c >> 6] |= (uint64_t)1 << (c & 63);
        if (!cv_strmap_add(&lw->cpu_ops, o->cpu_ops[i], (uint32_t)i, &(uint32_t){0}))
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory %s", doing);
    }
    for (uint32_t id = 0; id < lw->n_orig && st == CARVE_OK; id++) {
        unsigned char c = (unsigned char)m->nodes[id].op[0];
        if (!(lead[c >> 6] >> (c & 63) & 1))
            continue;
        uint32_t i = cv_strmap_get(&lw->cpu_ops, m->nodes[id].op);
        if (i == CARVE_NONE)
            continue;
        seen[i] = true;
        lw->ln[id].sticky = CV_R_SKIPPED_BY_USER;
        lw->ln[id].msg = op_msg(lw, i);
    }
    /* a name carve does not know and no node has is a typo, not a wish */
    for (size_t i = 0; i < o->n_cpu_ops && st == CARVE_OK; i++) {
        uint32_t first = cv_strmap_get(&lw->cpu_ops, o->cpu_ops[i]);
        if (!seen[first] && !cv_op_find("", o->cpu_ops[i], 1000) && !cv_op_find("ai.carve", o->cpu_ops[i], 1000))
            st = cv_error(m->ctx, CARVE_ERR_ARG,
                          "cpu_ops: '%s' is not an op carve knows, and no node of the model is one", o->cpu_ops[i]);
    }
    cv_free(seen);
    if (st != CARVE_OK)
        return st;
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

const char *cv_cpu_op_kept(cv_lower *lw, const char *op)
{
    uint32_t i = lw->cpu_op_msg ? cv_strmap_get(&lw->cpu_ops, op) : CARVE_NONE;
    return i == CARVE_NONE ? NULL : op_msg(lw, i);
}

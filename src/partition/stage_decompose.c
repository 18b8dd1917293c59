/* stage_decompose.c: the decompose stage of one round. Every op left on
 * CPU that the CPU profile lacks is decomposed (src/ops/rewrite.c runs the
 * decomposition its op-table row names), kept-whole ops included; its pieces go
 * through the partition stage in the next round. An op that ends delegated
 * is never decomposed. Pieces inherit the node's origin and skip-list marks;
 * pieces of an op that reads a dequantized value stay on CPU. */
#include "partition.h"

#include <string.h>

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
    if (cv_taken_whole(lw, g))
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
        if (!cv_ids_push(&counts, cnt) || !cv_lower_grow(lw)) {
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
                lw->ln[p].msg = cv_arena_strdup(&m->arena, "a piece of an op that reads a dequantized value: the target would "
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

carve_status cv_stage_decompose(cv_lower *lw, bool *changed)
{
    carve_status st = CARVE_OK;
    for (carve_graph_id g = 0; g < lw->m->n_graphs && !st; g++)
        st = decompose_graph(lw, g, changed);
    return st;
}

/* rewrite.c: replacing a node by pieces (decompositions). Pieces are named
 * from the node they replace ("Gemm_3/MatMul"); the last pieces write the
 * node's original output values, so no consumer is touched and no other
 * node's name changes. */
#include "ops.h"

#include <string.h>

carve_node_id cv_rw_node(cv_rw *rw, const char *op, const char *piece, uint32_t n_in,
                         const carve_value_id *ins, uint32_t n_out, const carve_value_id *outs)
{
    carve_model *m = rw->m;
    carve_node_id id = cv_node_new(m, rw->graph, op, "", n_in, n_out);
    if (id == CARVE_NONE)
        return CARVE_NONE;
    if (!cv_names_derive(m, id, rw->node, piece) || !cv_ids_push(&rw->pieces, id)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory decomposing");
        return CARVE_NONE;
    }
    cv_node *n = &m->nodes[id];
    memcpy(n->in, ins, n_in * sizeof *ins);
    for (uint32_t i = 0; i < n_out; i++) {
        carve_value_id v = outs ? outs[i] : CARVE_NONE;
        if (v == CARVE_NONE) {
            const char *base = i ? cv_arena_printf(&m->arena, "%s:%u", n->name, i) : n->name;
            const char *nm = base ? cv_value_unique_name(m, rw->graph, base) : NULL;
            v = nm ? cv_value_new(m, rw->graph, nm) : CARVE_NONE;
            if (v == CARVE_NONE)
                return CARVE_NONE;
        }
        m->values[v].producer = id;
        m->values[v].out_index = i;
        m->nodes[id].out[i] = v;
    }
    return id;
}

carve_value_id cv_rw_const(cv_rw *rw, const char *piece, carve_dtype dtype, int rank, const int64_t *dims,
                           const void *data, size_t nbytes)
{
    carve_model *m = rw->m;
    const char *base = cv_arena_printf(&m->arena, "%s/%s", m->nodes[rw->node].name, piece);
    const char *nm = base ? cv_value_unique_name(m, rw->graph, base) : NULL;
    if (!nm) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory decomposing");
        return CARVE_NONE;
    }
    return carve_graph_add_initializer(m, rw->graph, nm, dtype, rank, dims, data, nbytes);
}

carve_value_id cv_rw_scalar_f(cv_rw *rw, const char *piece, carve_dtype dtype, double x)
{
    uint8_t buf[8];
    cv_val tmp = {.dtype = dtype, .nelem = 1, .data = buf};
    memset(buf, 0, sizeof buf);
    cv_val_set_f64(&tmp, 0, x);
    size_t nb = cv_dtype_nbytes(dtype, 1);
    return cv_rw_const(rw, piece, dtype, 0, NULL, buf, nb);
}

carve_value_id cv_rw_ints(cv_rw *rw, const char *piece, size_t n, const int64_t *v)
{
    int64_t dims[1] = {(int64_t)n};
    return cv_rw_const(rw, piece, CARVE_INT64, 1, dims, v, n * sizeof *v);
}

carve_status cv_decompose_node(carve_model *m, carve_node_id n)
{
    const cv_op_def *def = cv_op_for_node(m, n);
    if (!def || !def->decompose)
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): carve has no decomposition for this op",
                        m->nodes[n].name, m->nodes[n].op);
    cv_rw rw = {m, n, m->nodes[n].graph, {0}};
    uint32_t pos = cv_graph_node_pos(m, n);
    uint32_t before = m->graphs[rw.graph].nodes.n;
    /* The old node's outputs are rebound to pieces: remember them to restore
     * on failure. */
    carve_value_id outs[8];
    uint32_t n_out = m->nodes[n].n_out < 8 ? m->nodes[n].n_out : 8;
    memcpy(outs, m->nodes[n].out, n_out * sizeof *outs);
    carve_status s = def->decompose(&rw);
    uint32_t added = m->graphs[rw.graph].nodes.n - before;
    if (s) {
        for (uint32_t i = 0; i < rw.pieces.n; i++)
            cv_node_remove(m, rw.pieces.v[i]);
        for (uint32_t i = 0; i < n_out; i++)
            if (outs[i] != CARVE_NONE) {
                m->values[outs[i]].producer = n;
                m->values[outs[i]].out_index = i;
            }
        cv_ids_free(&rw.pieces);
        return s;
    }
    cv_graph_move_tail(m, rw.graph, added, pos);
    /* Drop the node itself without unbinding its outputs: pieces own them. */
    cv_node *nd = &m->nodes[n];
    cv_graph *g = &m->graphs[nd->graph];
    uint32_t at = cv_graph_node_pos(m, n);
    memmove(&g->nodes.v[at], &g->nodes.v[at + 1], (g->nodes.n - at - 1) * sizeof *g->nodes.v);
    g->nodes.n--;
    nd->dead = true;
    cv_ids_free(&rw.pieces);
    return CARVE_OK;
}

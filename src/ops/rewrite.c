/* rewrite.c: replacing a node by pieces (decompositions). Pieces are named
 * from the node they replace ("Gemm_3/MatMul"); the last pieces write the
 * node's original output values, so no consumer is touched and no other
 * node's name changes. */
#include "ops.h"

#include <string.h>

/* Binary ops that took a `broadcast` attribute before opset 7 (without it,
 * both inputs had to have one shape). */
static bool old_broadcast_op(const char *op)
{
    /* op-list: data (ONNX's version history: the ops an upgrade step changes) */
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or",
                                      "Xor", "Equal", "Greater", "Less", NULL};
    for (int i = 0; ops[i]; i++)
        if (!strcmp(op, ops[i]))
            return true;
    return false;
}

carve_node_id cv_rw_node(cv_rw *rw, const char *op, const char *piece, uint32_t n_in,
                         const carve_value_id *ins, uint32_t n_out, const carve_value_id *outs)
{
    carve_model *m = rw->m;
    /* before opset 7, B broadcasts to A only with broadcast=1 (decompositions
     * put the smaller operand, a constant, on the right) */
    bool bcast = n_in == 2 && carve_model_opset(m, "") < 7 && old_broadcast_op(op);
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
            const char *base = i ? cv_arena_numbered(&m->arena, n->name, ':', i) : n->name;
            const char *nm = base ? cv_value_unique_name(m, rw->graph, base) : NULL;
            v = nm ? cv_value_new(m, rw->graph, nm) : CARVE_NONE;
            if (v == CARVE_NONE)
                return CARVE_NONE;
        }
        m->values[v].producer = id;
        m->values[v].out_index = i;
        m->nodes[id].out[i] = v;
    }
    if (bcast && carve_node_set_attr_int(m, id, "broadcast", 1))
        return CARVE_NONE;
    return id;
}

carve_value_id cv_rw_piece(cv_rw *rw, const char *op, const char *piece, uint32_t n_in, const carve_value_id *ins,
                           carve_value_id out)
{
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i] == CARVE_NONE)
            return CARVE_NONE;
    carve_node_id id = cv_rw_node(rw, op, piece, n_in, ins, 1, &out);
    return id == CARVE_NONE ? CARVE_NONE : rw->m->nodes[id].out[0];
}

/* Every piece must be an op of the model's opset: a decomposition written
 * with an op the opset lacks (Where before 9...) is refused, naming the
 * node, rather than making a model no runtime of that opset accepts. */
static carve_status check_pieces(carve_model *m, carve_node_id n, const cv_ids *pieces)
{
    for (uint32_t i = 0; i < pieces->n; i++) {
        const cv_node *p = &m->nodes[pieces->v[i]];
        int64_t opset = carve_model_opset(m, p->domain);
        if (cv_op_find(p->domain, p->op, opset))
            continue;
        const cv_op_def *later = cv_op_find(p->domain, p->op, 100000);
        char since[64] = "";
        if (later)
            snprintf(since, sizeof since, " (carve knows it from opset %d)", later->since);
        return cv_node_err(m, n, CARVE_ERR_UNSUPPORTED, "",
                           "its decomposition needs %s, which %s opset %lld does not have%s", p->op,
                           *p->domain ? p->domain : "ai.onnx", (long long)opset, since);
    }
    return CARVE_OK;
}

carve_value_id cv_rw_const(cv_rw *rw, const char *piece, carve_dtype dtype, int rank, const int64_t *dims,
                           const void *data, size_t nbytes)
{
    carve_model *m = rw->m;
    const char *base = cv_arena_join(&m->arena, m->nodes[rw->node].name, "/", piece);
    const char *nm = base ? cv_value_unique_name(m, rw->graph, base) : NULL;
    if (!nm) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory decomposing");
        return CARVE_NONE;
    }
    return carve_graph_add_initializer(m, rw->graph, nm, dtype, rank, dims, data, nbytes);
}

carve_value_id cv_rw_scalar_f(cv_rw *rw, const char *piece, carve_dtype dtype, double x)
{
    if (!cv_dtype_is_float(dtype) && !cv_dtype_is_int(dtype)) { /* a model that breaks the op's type constraint */
        cv_node_err(rw->m, rw->node, CARVE_ERR_INVALID, "", "its decomposition needs a number of the input's type, %s",
                    carve_dtype_name(dtype));
        return CARVE_NONE;
    }
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

carve_status cv_decompose_node_tail(carve_model *m, carve_node_id n, uint32_t *n_pieces)
{
    const cv_op_def *def = cv_op_for_node(m, n);
    if (!def || !def->decompose)
        return cv_node_err(m, n, CARVE_ERR_UNSUPPORTED, "", "carve has no decomposition for this op");
    cv_rw rw = {m, n, m->nodes[n].graph, {0}};
    uint32_t before = m->graphs[rw.graph].nodes.n;
    /* The old node's outputs are rebound to pieces: remember them to restore
     * on failure. */
    carve_value_id outs[8];
    uint32_t n_out = m->nodes[n].n_out < 8 ? m->nodes[n].n_out : 8;
    memcpy(outs, m->nodes[n].out, n_out * sizeof *outs);
    carve_status s = def->decompose(&rw);
    if (!s)
        s = check_pieces(m, n, &rw.pieces);
    for (uint32_t i = 0; !s && i < m->nodes[n].n_out; i++) {
        carve_value_id v = m->nodes[n].out[i];
        if (v != CARVE_NONE && m->values[v].producer == n)
            s = cv_node_err(m, n, CARVE_ERR_INVALID, "", "its decomposition does not produce output %u (a carve bug)",
                            i);
    }
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
    *n_pieces = m->graphs[rw.graph].nodes.n - before;
    m->nodes[n].dead = true; /* still listed: cv_graph_splice() puts its pieces there */
    cv_ids_free(&rw.pieces);
    return CARVE_OK;
}

carve_status cv_graph_splice(carve_model *m, carve_graph_id g, uint32_t n_orig, const uint32_t *n_pieces)
{
    cv_ids *l = &m->graphs[g].nodes;
    uint32_t *out = cv_malloc(((size_t)l->n + 1) * sizeof *out);
    if (!out)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory decomposing");
    uint32_t w = 0, tail = n_orig, k = 0;
    for (uint32_t i = 0; i < n_orig; i++) {
        carve_node_id id = l->v[i];
        if (!m->nodes[id].dead) {
            out[w++] = id;
            continue;
        }
        uint32_t cnt = n_pieces[k++];
        for (uint32_t j = 0; j < cnt; j++)
            out[w++] = l->v[tail + j];
        tail += cnt;
    }
    memcpy(l->v, out, w * sizeof *out);
    l->n = w;
    cv_free(out);
    return CARVE_OK;
}

carve_status cv_decompose_node(carve_model *m, carve_node_id n)
{
    carve_graph_id g = m->nodes[n].graph;
    uint32_t n_orig = m->graphs[g].nodes.n, cnt = 0;
    /* the list holds n once and maybe other dead nodes: splice with a table
     * that gives n its pieces and every other dead node none */
    carve_status s = cv_decompose_node_tail(m, n, &cnt);
    if (s)
        return s;
    uint32_t n_dead = 0;
    for (uint32_t i = 0; i < n_orig; i++)
        n_dead += m->nodes[m->graphs[g].nodes.v[i]].dead;
    uint32_t *counts = cv_malloc(((size_t)n_dead + 1) * sizeof *counts);
    if (!counts)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory decomposing");
    for (uint32_t i = 0, k = 0; i < n_orig; i++)
        if (m->nodes[m->graphs[g].nodes.v[i]].dead)
            counts[k++] = m->graphs[g].nodes.v[i] == n ? cnt : 0;
    s = cv_graph_splice(m, g, n_orig, counts);
    cv_free(counts);
    return s;
}

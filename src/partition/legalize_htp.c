/* legalize_htp.c: two rewrites of a Delegate body that Qualcomm's stack
 * makes itself (docs/htp_sources.md):
 *  - softmax_axis_via_transpose: Softmax/LogSoftmax over another axis than
 *    the last becomes Transpose (that axis swapped with the last) -> the op
 *    over the last axis -> the same Transpose back (onnxruntime's QNN EP,
 *    softmax_op_builder.cc);
 *  - requantize_fixed_16bit: a 16-bit quantized Sigmoid/Tanh whose output
 *    encoding is not HTP's fixed one is computed at the fixed encoding and
 *    requantized to the model's: QuantizeLinear + DequantizeLinear at the
 *    fixed encoding between the op and the model's QuantizeLinear.
 * New nodes are named from the node they serve ("<node>/transpose_in"). */
#include "partition.h"

#include <string.h>

static carve_value_id like_value(carve_model *m, carve_graph_id g, carve_value_id like, const char *suffix,
                                 carve_dtype dtype)
{
    cv_type type = m->values[like].type; /* m->values may move below */
    const char *base = cv_arena_printf(&m->arena, "%s/%s", m->values[like].name, suffix);
    const char *nm = base ? cv_value_unique_name(m, g, base) : NULL;
    carve_value_id v = nm ? cv_value_new(m, g, nm) : CARVE_NONE;
    if (v == CARVE_NONE)
        return v;
    m->values[v].type = type;
    if (dtype != CARVE_UNDEFINED)
        m->values[v].type.dtype = dtype;
    return v;
}

static carve_node_id piece(carve_model *m, carve_graph_id g, carve_node_id from, const char *op, const char *name,
                           uint32_t n_in, const carve_value_id *in, carve_value_id out)
{
    carve_node_id c = cv_node_new(m, g, op, "", n_in, 1);
    if (c == CARVE_NONE || !cv_names_derive(m, c, from, name))
        return CARVE_NONE;
    memcpy(m->nodes[c].in, in, n_in * sizeof *in);
    m->nodes[c].out[0] = out;
    m->values[out].producer = c;
    m->values[out].out_index = 0;
    return c;
}

/* v's dims `axis` and rank-1 swapped (its own copy of the dims). */
static bool swap_dims(carve_model *m, carve_value_id v, int64_t axis, int rank)
{
    cv_type *ty = &m->values[v].type;
    if (ty->rank != rank)
        return true;
    carve_dim *d = cv_arena_memdup(&m->arena, ty->dims, (size_t)rank * sizeof *d);
    if (!d)
        return false;
    carve_dim tmp = d[axis];
    d[axis] = d[rank - 1];
    d[rank - 1] = tmp;
    m->values[v].type.dims = d;
    return true;
}

carve_status cv_legalize_softmax_axis(cv_lower *lw, const carve_target *t, carve_graph_id body)
{
    carve_model *m = lw->m;
    uint32_t cnt = m->graphs[body].nodes.n;
    for (uint32_t i = 0; i < cnt; i++) {
        carve_node_id id = m->graphs[body].nodes.v[i];
        const cv_node *n = &m->nodes[id];
        if (*n->domain || !cv_op_has(m, id, CV_OP_AXIS_SLICES) || n->in[0] == CARVE_NONE)
            continue;
        const cv_op_rule *r = cv_target_rule(m, id, t);
        int rank = m->values[n->in[0]].type.rank;
        if (!r || !r->last_axis_transpose || !r->last_axis || rank < 1)
            continue;
        int64_t axis = cv_attr_i(m, id, r->last_axis, -1);
        if (axis < 0)
            axis += rank;
        if (axis == rank - 1 || axis < 0 || axis >= rank)
            continue;
        int64_t perm[CARVE_MAX_RANK];
        for (int d = 0; d < rank; d++)
            perm[d] = d;
        perm[axis] = rank - 1;
        perm[rank - 1] = axis;
        carve_value_id x = n->in[0], y = n->out[0];
        carve_value_id xt = like_value(m, body, x, "transposed", CARVE_UNDEFINED);
        carve_value_id yt = xt != CARVE_NONE ? like_value(m, body, y, "transposed", CARVE_UNDEFINED) : CARVE_NONE;
        if (yt == CARVE_NONE)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        if (!swap_dims(m, xt, axis, rank) || !swap_dims(m, yt, axis, rank))
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        carve_node_id t_in = piece(m, body, id, "Transpose", "transpose_in", 1, &x, xt);
        carve_node_id t_out = t_in != CARVE_NONE ? piece(m, body, id, "Transpose", "transpose_out", 1, &yt, y)
                                                 : CARVE_NONE;
        if (t_out == CARVE_NONE || carve_node_set_attr_ints(m, t_in, "perm", (size_t)rank, perm) ||
            carve_node_set_attr_ints(m, t_out, "perm", (size_t)rank, perm) ||
            carve_node_set_attr_int(m, id, r->last_axis, -1))
            return cv_model_nomem(m) ? CARVE_ERR_NOMEM : carve_errcode(m->ctx);
        m->nodes[id].in[0] = xt;
        m->nodes[id].out[0] = yt;
        m->values[yt].producer = id;
        m->values[yt].out_index = 0;
    }
    return CARVE_OK;
}

carve_status cv_legalize_requant16(cv_lower *lw, const carve_target *t, carve_graph_id body)
{
    carve_model *m = lw->m;
    uint32_t cnt = m->graphs[body].nodes.n;
    for (uint32_t i = 0; i < cnt; i++) {
        carve_node_id id = m->graphs[body].nodes.v[i];
        const cv_node *n = &m->nodes[id];
        if (*n->domain || !cv_op_has(m, id, CV_OP_FIXED_RANGE) || n->out[0] == CARVE_NONE)
            continue;
        const cv_op_rule *r = cv_target_rule(m, id, t);
        if (!r || !(r->checks & CV_CHECK_FIXED_ENC16))
            continue;
        carve_node_id qn = cv_quantize_reading(m, body, n->out[0]);
        if (qn == CARVE_NONE)
            continue;
        const cv_node *q = &m->nodes[qn];
        const cv_tensor *sc = cv_const_tensor(m, q->in[1]);
        const cv_tensor *zp = q->n_in > 2 && q->in[2] != CARVE_NONE ? cv_const_tensor(m, q->in[2]) : NULL;
        double fs;
        int64_t fz;
        if (!zp || !sc || zp->nelem != 1 || sc->nelem != 1 || sc->dtype != CARVE_FLOAT ||
            !cv_fixed_enc16(n->op, zp->dtype, &fs, &fz))
            continue;
        float s;
        memcpy(&s, sc->data, sizeof s);
        int64_t z = zp->dtype == CARVE_UINT16 ? *(const uint16_t *)zp->data : *(const int16_t *)zp->data;
        if ((double)s == (double)(float)fs && z == fz)
            continue; /* already the fixed encoding */
        carve_dtype zt = zp->dtype;
        float fsf = (float)fs;
        uint16_t zu = (uint16_t)fz;
        int16_t zi = (int16_t)fz;
        const char *sn = cv_value_unique_name(m, body, cv_arena_printf(&m->arena, "%s/fixed_scale", n->name));
        carve_value_id scv = sn ? carve_graph_add_initializer(m, body, sn, CARVE_FLOAT, 0, NULL, &fsf, sizeof fsf)
                                : CARVE_NONE;
        const char *zn = cv_value_unique_name(m, body, cv_arena_printf(&m->arena, "%s/fixed_zero_point", n->name));
        carve_value_id zpv = zn ? carve_graph_add_initializer(m, body, zn, zt, 0, NULL,
                                                              zt == CARVE_UINT16 ? (const void *)&zu : (const void *)&zi,
                                                              2)
                                : CARVE_NONE;
        carve_value_id y = m->nodes[id].out[0];
        carve_value_id yq = scv != CARVE_NONE && zpv != CARVE_NONE ? like_value(m, body, y, "fixed", zt) : CARVE_NONE;
        carve_value_id yd = yq != CARVE_NONE ? like_value(m, body, y, "requantized", CARVE_UNDEFINED) : CARVE_NONE;
        if (yd == CARVE_NONE)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        carve_value_id qin[3] = {y, scv, zpv}, din[3] = {yq, scv, zpv};
        if (piece(m, body, id, "QuantizeLinear", "fixed_quantize", 3, qin, yq) == CARVE_NONE ||
            piece(m, body, id, "DequantizeLinear", "fixed_dequantize", 3, din, yd) == CARVE_NONE)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        m->nodes[qn].in[0] = yd;
    }
    return CARVE_OK;
}

/* d_nn.c: the decompositions of the nn family's ops into core ops (Gemm);
 * their kernels and inference are in k_matmul.c. */
#include "k_nn.h"

/* Gemm = [Transpose] -> MatMul -> [Mul alpha] -> [Add (Mul C beta)]. */
carve_status d_gemm(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    carve_value_id a = nd->in[0], b = nd->in[1], c = nd->n_in > 2 ? nd->in[2] : CARVE_NONE, y = nd->out[0];
    const char *name = nd->name;
    carve_dtype dt = m->values[a].type.kind == CARVE_TYPE_TENSOR ? m->values[a].type.dtype : CARVE_UNDEFINED;
    if (!dt)
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (Gemm): input 0 'A' has no known type to decompose with", name);
    bool ta = cv_attr_i(m, rw->node, "transA", 0) != 0, tb = cv_attr_i(m, rw->node, "transB", 0) != 0;
    double alpha = cv_attr_f(m, rw->node, "alpha", 1.0f), beta = cv_attr_f(m, rw->node, "beta", 1.0f);
    if (cv_dtype_is_int(dt) && (!nn_is_int_valued(alpha) || !nn_is_int_valued(beta)))
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (Gemm): alpha %g / beta %g are not integers for %s inputs",
                        name, alpha, beta, carve_dtype_name(dt));
    if (c != CARVE_NONE && beta == 0)
        c = CARVE_NONE;
    static const int64_t perm[2] = {1, 0};
    for (int i = 0; i < 2; i++) {
        if (!(i ? tb : ta))
            continue;
        carve_value_id x = i ? b : a;
        carve_node_id t = cv_rw_node(rw, "Transpose", i ? "TransposeB" : "TransposeA", 1, &x, 1, NULL);
        if (t == CARVE_NONE || carve_node_set_attr_ints(m, t, "perm", 2, perm))
            return carve_errcode(m->ctx);
        *(i ? &b : &a) = m->nodes[t].out[0];
    }
    bool scale = alpha != 1, add = c != CARVE_NONE;
    carve_value_id ins[2] = {a, b};
    carve_node_id mm = cv_rw_node(rw, "MatMul", "MatMul", 2, ins, 1, scale || add ? NULL : &y);
    if (mm == CARVE_NONE)
        return carve_errcode(m->ctx);
    carve_value_id v = m->nodes[mm].out[0];
    if (scale) {
        ins[0] = v;
        ins[1] = cv_rw_scalar_f(rw, "alpha", dt, alpha);
        carve_node_id mu = ins[1] == CARVE_NONE ? CARVE_NONE : cv_rw_node(rw, "Mul", "MulAlpha", 2, ins, 1, add ? NULL : &y);
        if (mu == CARVE_NONE)
            return carve_errcode(m->ctx);
        v = m->nodes[mu].out[0];
    }
    if (add) {
        if (beta != 1) {
            ins[0] = c;
            ins[1] = cv_rw_scalar_f(rw, "beta", dt, beta);
            carve_node_id mu = ins[1] == CARVE_NONE ? CARVE_NONE : cv_rw_node(rw, "Mul", "MulBeta", 2, ins, 1, NULL);
            if (mu == CARVE_NONE)
                return carve_errcode(m->ctx);
            c = m->nodes[mu].out[0];
        }
        ins[0] = v;
        ins[1] = c;
        if (cv_rw_node(rw, "Add", "Add", 2, ins, 1, &y) == CARVE_NONE)
            return carve_errcode(m->ctx);
    }
    return CARVE_OK;
}

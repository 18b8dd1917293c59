/* d_reduce.c: decompositions of the reduce family's composite ops
 * (Softmax, LogSoftmax) into core ops, built with the pieces of
 * d_pieces.c. */
#include "k_reduce.h"

static carve_status d_softmax_common(cv_rw *rw, bool log_)
{
    carve_model *m = rw->m;
    carve_value_id x = m->nodes[rw->node].in[0], y = m->nodes[rw->node].out[0];
    int64_t axis = cv_attr_i(m, rw->node, "axis", -1);
    carve_value_id mx = rd_reduce(rw, "ReduceMax", x, 1, &axis, CARVE_NONE);
    carve_value_id d = rd_binary(rw, "Sub", x, mx, CARVE_NONE);
    carve_value_id e = rd_unary(rw, "Exp", d, CARVE_NONE);
    carve_value_id s = rd_reduce(rw, "ReduceSum", e, 1, &axis, CARVE_NONE);
    carve_value_id r;
    if (log_)
        r = rd_binary(rw, "Sub", d, rd_unary(rw, "Log", s, CARVE_NONE), y);
    else
        r = rd_binary(rw, "Div", e, s, y);
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

/* Both follow the spec's function body (opset 13): max-shifted Exp over
 * ReduceSum. */
carve_status d_softmax(cv_rw *rw) { return d_softmax_common(rw, false); }
carve_status d_logsoftmax(cv_rw *rw) { return d_softmax_common(rw, true); }

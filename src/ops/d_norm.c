/* d_norm.c: the decompositions of the normalizations into core ops
 * (BatchNormalization, InstanceNormalization, LayerNormalization,
 * GroupNormalization, MeanVarianceNormalization); their kernels and
 * inference are in k_norm.c. Each follows the op's function body in the
 * spec, with the variance as the mean of squared deviations (the bodies'
 * E[X^2] - E[X]^2 cancels when |mean| >> std). */
#include "k_norm.h"

#include <string.h>

/* training_mode=1 (opset 14+), the spec's formulas: the batch mean and
 * (population) variance over every axis but 1, Y = (X - mean) /
 * sqrt(var + eps) * scale + B, and the running statistics
 * input * momentum + batch * (1 - momentum). X, scale, B, mean and var of
 * one dtype, float32 or float64. */
static carve_status d_batchnorm_training(cv_rw *rw)
{
    carve_model *m = rw->m;
    carve_value_id in[5], out[3] = {CARVE_NONE, CARVE_NONE, CARVE_NONE};
    memcpy(in, m->nodes[rw->node].in, sizeof in);
    for (uint32_t i = 0; i < m->nodes[rw->node].n_out && i < 3; i++)
        out[i] = m->nodes[rw->node].out[i];
    const cv_type *xt = &m->values[in[0]].type;
    carve_dtype T = xt->dtype;
    int rank = xt->kind == CARVE_TYPE_TENSOR ? xt->rank : -1;
    if (T != CARVE_FLOAT && T != CARVE_DOUBLE)
        return rd_unsupported(rw, "training_mode=1 on input 0 'X' of type %s (float32 and float64 only)",
                              carve_dtype_name(T));
    if (rank < 2)
        return rd_unsupported(rw, "training_mode=1 needs input 0 'X' of known rank 2 or more");
    for (int i = 1; i < 5; i++)
        if (m->values[in[i]].type.dtype != T)
            return rd_unsupported(rw, "training_mode=1 with input %d of type %s, X of %s", i,
                                  carve_dtype_name(m->values[in[i]].type.dtype), carve_dtype_name(T));
    int64_t axes[CARVE_MAX_RANK], inner[CARVE_MAX_RANK];
    axes[0] = 0;
    for (int i = 2; i < rank; i++)
        axes[i - 1] = i, inner[i - 2] = i - 1;
    double eps = cv_attr_f(m, rw->node, "epsilon", 1e-5f), mom = cv_attr_f(m, rw->node, "momentum", 0.9f);
    carve_value_id mean = rd_reduce(rw, "ReduceMean", in[0], (size_t)rank - 1, axes, CARVE_NONE);
    carve_value_id d = rd_binary(rw, "Sub", in[0], mean, CARVE_NONE);
    carve_value_id var = rd_reduce(rw, "ReduceMean", rd_binary(rw, "Mul", d, d, CARVE_NONE), (size_t)rank - 1, axes,
                                   CARVE_NONE);
    carve_value_id sd = rd_unary(rw, "Sqrt", rd_binary(rw, "Add", var, cv_rw_scalar_f(rw, "epsilon", T, eps), CARVE_NONE),
                                 CARVE_NONE);
    carve_value_id scale = in[1], bias = in[2];
    if (rank > 2) {
        scale = rd_unsqueeze(rw, scale, (size_t)rank - 2, inner);
        bias = rd_unsqueeze(rw, bias, (size_t)rank - 2, inner);
    }
    carve_value_id y = rd_binary(rw, "Add", rd_binary(rw, "Mul", rd_binary(rw, "Div", d, sd, CARVE_NONE), scale, CARVE_NONE),
                                 bias, out[0]);
    if (y == CARVE_NONE)
        return rd_failed(rw);
    const int64_t flat[1] = {-1};
    carve_value_id keep = cv_rw_scalar_f(rw, "momentum", T, mom), take = cv_rw_scalar_f(rw, "one_minus_momentum", T, 1 - mom);
    for (int k = 1; k < 3; k++) {
        if (out[k] == CARVE_NONE)
            continue;
        carve_value_id batch = rd_reshape(rw, k == 1 ? mean : var, cv_rw_ints(rw, "flat", 1, flat), CARVE_NONE);
        carve_value_id r = rd_binary(rw, "Add", rd_binary(rw, "Mul", in[k == 1 ? 3 : 4], keep, CARVE_NONE),
                                     rd_binary(rw, "Mul", batch, take, CARVE_NONE), out[k]);
        if (r == CARVE_NONE)
            return rd_failed(rw);
    }
    return CARVE_OK;
}

/* Inference: Y = (X - mean) * a + B with a = scale / sqrt(var + eps),
 * the per-channel parts (a and the shift) computed on C-sized tensors in
 * float32 at least, then unsqueezed to (C, 1, ..., 1). Training mode:
 * d_batchnorm_training. */
carve_status d_batchnorm(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    int64_t opset = carve_model_opset(m, "");
    if (opset >= 14 && cv_attr_i(m, rw->node, "training_mode", 0))
        return d_batchnorm_training(rw);
    for (uint32_t i = 1; opset < 14 && i < nd->n_out; i++)
        if (nd->out[i] != CARVE_NONE)
            return rd_unsupported(rw, "the training outputs (output %u) have no decomposition", i);
    carve_value_id x = nd->in[0], y = nd->out[0], p[5];
    memcpy(p, nd->in, sizeof p);
    const cv_type *xt = &m->values[x].type;
    carve_dtype T = xt->dtype;
    if (!norm_is_float(T))
        return rd_unsupported(rw, "input 0 'X' has type %s", carve_dtype_name(T));
    bool spatial = opset >= 9 || cv_attr_i(m, rw->node, "spatial", 1) != 0;
    int rank = xt->kind == CARVE_TYPE_TENSOR ? xt->rank : -1;
    if (rank < 0)
        return rd_unsupported(rw, "input 0 'X' has unknown rank");
    carve_dtype W = T == CARVE_DOUBLE ? CARVE_DOUBLE : CARVE_FLOAT;
    for (int i = 1; i < 5; i++) {
        carve_dtype pt = m->values[p[i]].type.dtype;
        if (pt != W)
            p[i] = rd_cast(rw, p[i], W, CARVE_NONE);
    }
    double eps = cv_attr_f(m, rw->node, "epsilon", 1e-5f);
    carve_value_id a = rd_binary(rw, "Div", p[1],
                                 rd_unary(rw, "Sqrt", rd_binary(rw, "Add", p[4], cv_rw_scalar_f(rw, "epsilon", W, eps),
                                                                CARVE_NONE),
                                          CARVE_NONE),
                                 CARVE_NONE);
    carve_value_id mean = p[3], bias = p[2];
    if (W != T) {
        a = rd_cast(rw, a, T, CARVE_NONE);
        mean = rd_cast(rw, mean, T, CARVE_NONE);
        bias = rd_cast(rw, bias, T, CARVE_NONE);
    }
    if (spatial && rank > 2) {
        int64_t axes[CARVE_MAX_RANK];
        for (int i = 0; i < rank - 2; i++)
            axes[i] = i + 1;
        a = rd_unsqueeze(rw, a, (size_t)rank - 2, axes);
        mean = rd_unsqueeze(rw, mean, (size_t)rank - 2, axes);
        bias = rd_unsqueeze(rw, bias, (size_t)rank - 2, axes);
    }
    carve_value_id r = rd_binary(rw, "Add", rd_binary(rw, "Mul", rd_binary(rw, "Sub", x, mean, CARVE_NONE), a,
                                                      CARVE_NONE),
                                 bias, y);
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

/* Normalizes D = X - mean over axes: returns D / sqrt(mean(D*D) + eps). */
static carve_value_id normalized(cv_rw *rw, carve_value_id x, size_t n_axes, const int64_t *axes, carve_dtype t,
                                 double eps, carve_value_id mean_out, carve_value_id *std_out)
{
    carve_value_id mean = rd_reduce(rw, "ReduceMean", x, n_axes, axes, mean_out);
    carve_value_id d = rd_binary(rw, "Sub", x, mean, CARVE_NONE);
    carve_value_id var = rd_reduce(rw, "ReduceMean", rd_binary(rw, "Mul", d, d, CARVE_NONE), n_axes, axes, CARVE_NONE);
    carve_value_id sd = rd_unary(rw, "Sqrt", rd_binary(rw, "Add", var, cv_rw_scalar_f(rw, "epsilon", t, eps), CARVE_NONE),
                                 CARVE_NONE);
    if (std_out)
        *std_out = sd;
    return rd_binary(rw, "Div", d, sd, CARVE_NONE);
}

/* ONNX has no function for it: the statistics over the spatial axes, then
 * scale and B unsqueezed to (C, 1, ..., 1). */
carve_status d_instancenorm(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    carve_value_id x = nd->in[0], s = nd->in[1], b = nd->in[2], y = nd->out[0];
    const cv_type *xt = &m->values[x].type;
    if (xt->kind != CARVE_TYPE_TENSOR || xt->rank < 0)
        return rd_unsupported(rw, "input 0 'input' has unknown rank");
    if (xt->rank < 3)
        return rd_unsupported(rw, "input 0 'input' has rank %d; the decomposition needs spatial dims", xt->rank);
    int rank = xt->rank;
    int64_t axes[CARVE_MAX_RANK], ones[CARVE_MAX_RANK];
    for (int i = 2; i < rank; i++) {
        axes[i - 2] = i;
        ones[i - 2] = i - 1;
    }
    double eps = cv_attr_f(m, rw->node, "epsilon", 1e-5f);
    carve_value_id nrm = normalized(rw, x, (size_t)rank - 2, axes, xt->dtype, eps, CARVE_NONE, NULL);
    carve_value_id r = rd_binary(rw, "Add",
                                 rd_binary(rw, "Mul", nrm, rd_unsqueeze(rw, s, (size_t)rank - 2, ones), CARVE_NONE),
                                 rd_unsqueeze(rw, b, (size_t)rank - 2, ones), y);
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

/* The spec's function body (opset 17) with the rank known: X cast to
 * stash_type, statistics over axes [axis, rank), the normalized value cast
 * back to T, then Scale and B broadcast from the right. The variance is the
 * mean of squared deviations rather than the body's E[X^2] - E[X]^2, which
 * cancels catastrophically when |mean| >> std (same value otherwise). */
carve_status d_layernorm(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    carve_value_id x = nd->in[0], s = nd->in[1], b = nd->n_in > 2 ? nd->in[2] : CARVE_NONE;
    carve_value_id y = nd->out[0], mean_out = nd->n_out > 1 ? nd->out[1] : CARVE_NONE,
                   inv_out = nd->n_out > 2 ? nd->out[2] : CARVE_NONE;
    const cv_type *xt = &m->values[x].type;
    if (xt->kind != CARVE_TYPE_TENSOR || xt->rank < 0)
        return rd_unsupported(rw, "input 0 'X' has unknown rank");
    carve_dtype T = xt->dtype;
    if (!norm_is_float(T))
        return rd_unsupported(rw, "input 0 'X' has type %s", carve_dtype_name(T));
    int64_t axis = cv_attr_i(m, rw->node, "axis", -1);
    int a = sh_axis(axis, xt->rank);
    if (a < 0)
        return rd_unsupported(rw, "attribute 'axis' is %lld, out of range for rank %d", (long long)axis, xt->rank);
    carve_dtype U = norm_stash_type(m, rw->node);
    int64_t axes[CARVE_MAX_RANK];
    size_t na = 0;
    for (int i = a; i < xt->rank; i++)
        axes[na++] = i;
    double eps = cv_attr_f(m, rw->node, "epsilon", 1e-5f);
    carve_value_id xu = U != T ? rd_cast(rw, x, U, CARVE_NONE) : x, sd = CARVE_NONE;
    carve_value_id nrm = normalized(rw, xu, na, axes, U, eps, mean_out, &sd);
    if (U != T)
        nrm = rd_cast(rw, nrm, T, CARVE_NONE);
    carve_value_id r = rd_binary(rw, "Mul", nrm, s, b == CARVE_NONE ? y : CARVE_NONE);
    if (b != CARVE_NONE)
        r = rd_binary(rw, "Add", r, b, y);
    if (inv_out != CARVE_NONE && r != CARVE_NONE)
        r = rd_unary(rw, "Reciprocal", sd, inv_out);
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

/* The spec's function bodies: X reshaped to (N, G, -1), statistics over
 * the last axis, then (18) scale/bias per group in that view, or (21, in
 * stash_type) reshaped back and scale/bias per channel. */
carve_status d_groupnorm(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    carve_value_id x = nd->in[0], s = nd->in[1], b = nd->in[2], y = nd->out[0];
    const cv_type *xt = &m->values[x].type;
    if (xt->kind != CARVE_TYPE_TENSOR || xt->rank < 0)
        return rd_unsupported(rw, "input 0 'X' has unknown rank");
    int rank = xt->rank;
    carve_dtype T = xt->dtype;
    if (!norm_is_float(T) || rank < 2)
        return rd_unsupported(rw, "input 0 'X' must be a float tensor of rank >= 2");
    int64_t g;
    if (!carve_node_attr_int(m, rw->node, "num_groups", &g) || g <= 0)
        return rd_unsupported(rw, "attribute 'num_groups' is missing or not positive");
    bool v21 = carve_model_opset(m, "") >= 21;
    carve_dtype U = T;
    if (v21) {
        int64_t st = cv_attr_i(m, rw->node, "stash_type", CARVE_FLOAT);
        U = st == CARVE_DOUBLE ? CARVE_DOUBLE : CARVE_FLOAT;
    }
    /* X's shape: a constant when every dim is known */
    bool static_shape = true;
    int64_t xd[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        xd[i] = xt->dims[i].value;
        static_shape = static_shape && xd[i] >= 0;
    }
    double eps = cv_attr_f(m, rw->node, "epsilon", 1e-5f);
    int64_t shape3[3] = {0, g, -1}, last = 2;
    carve_value_id xu = U != T ? rd_cast(rw, x, U, CARVE_NONE) : x;
    carve_value_id x3 = rd_reshape(rw, xu, cv_rw_ints(rw, "shape3d", 3, shape3), CARVE_NONE);
    carve_value_id n3 = normalized(rw, x3, 1, &last, U, eps, CARVE_NONE, NULL);
    carve_value_id xs = static_shape ? cv_rw_ints(rw, "xshape", (size_t)rank, xd) : rd_unary(rw, "Shape", x, CARVE_NONE);
    carve_value_id r;
    if (!v21) {
        int64_t one = 1;
        carve_value_id y3 = rd_binary(rw, "Add", rd_binary(rw, "Mul", n3, rd_unsqueeze(rw, s, 1, &one), CARVE_NONE),
                                      rd_unsqueeze(rw, b, 1, &one), CARVE_NONE);
        r = rd_reshape(rw, y3, xs, y);
    } else {
        carve_value_id nx = rd_reshape(rw, n3, xs, CARVE_NONE);
        if (U != T)
            nx = rd_cast(rw, nx, T, CARVE_NONE);
        if (rank > 2) {
            int64_t axes[CARVE_MAX_RANK];
            for (int i = 0; i < rank - 2; i++)
                axes[i] = i + 1;
            s = rd_unsqueeze(rw, s, (size_t)rank - 2, axes);
            b = rd_unsqueeze(rw, b, (size_t)rank - 2, axes);
        }
        r = rd_binary(rw, "Add", rd_binary(rw, "Mul", nx, s, CARVE_NONE), b, y);
    }
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

/* The spec's function body (opset 13) with the variance as the mean of
 * squared deviations (the body's E[X^2] - E[X]^2 can go negative and give
 * NaN). float16 cannot hold 1e-9: its smallest step stands in. */
carve_status d_mvn(cv_rw *rw)
{
    carve_model *m = rw->m;
    const cv_node *nd = &m->nodes[rw->node];
    carve_value_id x = nd->in[0], y = nd->out[0];
    carve_dtype T = m->values[x].type.dtype;
    if (!norm_is_float(T))
        return rd_unsupported(rw, "input 0 'X' has type %s", carve_dtype_name(T));
    static const int64_t dflt[3] = {0, 2, 3};
    const int64_t *axes = dflt;
    int na = cv_attr_ints(m, rw->node, "axes", &axes);
    if (na < 0) {
        axes = dflt;
        na = 3;
    }
    if (!na)
        return rd_unsupported(rw, "attribute 'axes' is empty");
    double eps = T == CARVE_FLOAT16 ? 5.9604644775390625e-8 : 1e-9;
    carve_value_id mean = rd_reduce(rw, "ReduceMean", x, (size_t)na, axes, CARVE_NONE);
    carve_value_id d = rd_binary(rw, "Sub", x, mean, CARVE_NONE);
    carve_value_id var = rd_reduce(rw, "ReduceMean", rd_binary(rw, "Mul", d, d, CARVE_NONE), (size_t)na, axes,
                                   CARVE_NONE);
    carve_value_id sd = rd_binary(rw, "Add", rd_unary(rw, "Sqrt", var, CARVE_NONE),
                                  cv_rw_scalar_f(rw, "epsilon", T, eps), CARVE_NONE);
    carve_value_id r = rd_binary(rw, "Div", d, sd, y);
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

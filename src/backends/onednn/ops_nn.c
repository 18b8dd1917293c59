/*
 * ops_nn.c: pooling, BatchNormalization (inference), Softmax/LogSoftmax,
 * LayerNormalization and reductions. Each checks the ONNX attributes'
 * meaning against what oneDNN computes and refuses what differs.
 */
#include <string.h>

#include "dn.h"

static bool is_op(const dn_builder *b, carve_node_id n, const char *op) { return !strcmp(carve_node_op(b->m, n), op); }

static bool one_output(dn_builder *b, carve_node_id n, const char *what)
{
    for (size_t i = 1; i < carve_node_output_count(b->m, n); i++)
        if (carve_node_output(b->m, n, i) != CARVE_NONE)
            return dn_fail(b, DN_R_ATTR, "output %zu (%s) is used; the onednn backend computes only the first", i,
                           what);
    return true;
}

bool dn_op_pool(dn_builder *b, carve_node_id n)
{
    /* op-list: data: this backend's own mapping of ONNX ops to oneDNN primitives (what a plugin declares) */
    bool global = is_op(b, n, "GlobalAveragePool") || is_op(b, n, "GlobalMaxPool");
    /* op-list: data (as above) */
    bool maxp = is_op(b, n, "MaxPool") || is_op(b, n, "GlobalMaxPool");
    if (!one_output(b, n, "MaxPool's Indices"))
        return false;
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    if (x->rank < 3 || x->rank > 5)
        return dn_fail(b, DN_R_INPUT, "input X has rank %d; oneDNN pools 1 to 3 spatial dims", x->rank);
    int k = x->rank - 2;
    carve_value_id yv = carve_node_output(b->m, n, 0);
    dnnl_dims_t yd, strides, kernel, dil, pl, pr;
    for (int d = 0; d < x->rank; d++)
        yd[d] = carve_value_dim(b->m, yv, d).value;
    int64_t v[16];
    int c;
    for (int d = 0; d < k; d++) {
        strides[d] = 1, dil[d] = 0, pl[d] = 0, pr[d] = 0;
        kernel[d] = x->dims[2 + d];
    }
    bool include_pad = false, ceil_mode = false;
    if (!global) {
        if ((c = dn_attr_ints(b, n, "kernel_shape", v, 16)) != k)
            return dn_fail(b, DN_R_ATTR, "attribute kernel_shape has %d values, expected %d", c, k);
        for (int d = 0; d < k; d++)
            kernel[d] = v[d];
        int same;
        if (!dn_read_window(b, n, k, strides, dil, pl, pr, &same))
            return false;
        bool upper = same == 'U', lower = same == 'L';
        include_pad = !maxp && dn_attr_i(b, n, "count_include_pad", 0) != 0;
        ceil_mode = dn_attr_i(b, n, "ceil_mode", 0) != 0;
        for (int d = 0; d < k; d++) {
            int64_t kd = (kernel[d] - 1) * (dil[d] + 1) + 1;
            if (upper || lower) {
                int64_t total = (yd[2 + d] - 1) * strides[d] + kd - x->dims[2 + d];
                if (total < 0)
                    total = 0;
                pl[d] = upper ? total / 2 : total - total / 2;
                pr[d] = total - pl[d];
                if (include_pad && (upper || lower))
                    return dn_fail(b, DN_R_ATTR, "attribute auto_pad = SAME_%s with count_include_pad = 1: refused",
                                   upper ? "UPPER" : "LOWER");
            }
            int64_t eff = (yd[2 + d] - 1) * strides[d] + kd - x->dims[2 + d] - pl[d];
            if (eff > pr[d] && include_pad)
                return dn_fail(b, DN_R_ATTR,
                               "ceil_mode = 1 with count_include_pad = 1 where the last window passes the pads: "
                               "ONNX averages over the padded input only, oneDNN over the whole kernel; allowed: "
                               "ceil_mode = 0 or count_include_pad = 0");
            pr[d] = eff;
        }
        (void)ceil_mode;
    }
    dnnl_alg_kind_t alg = maxp ? dnnl_pooling_max
                               : include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
    dnnl_memory_desc_t ymd;
    dn_any_md(&ymd, x->rank, yd);
    dnnl_pooling_v2_desc_t d;
    dnnl_status_t st = dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &x->md, &ymd, strides,
                                                         kernel, dil, pl, pr);
    return dn_step_unary(b, st, &d, "a pooling", x->mem, yv, 0, NULL);
}

/* A per-channel parameter (count c) as a plain [c] memory. */
static dnnl_memory_t chan_param(dn_builder *b, carve_node_id n, size_t i, int64_t c, const char *name)
{
    dn_val *p = dn_in(b, n, i);
    if (!p)
        return NULL;
    if (dn_count(p) != (size_t)c) {
        dn_fail(b, DN_R_INPUT, "input %s has %zu values, expected %lld", name, dn_count(p), (long long)c);
        return NULL;
    }
    if (b->check)
        return (dnnl_memory_t)1; /* a marker: checked, nothing built */
    dnnl_dims_t d = {c};
    dnnl_memory_desc_t md;
    return dn_view(b, p, 1, d, &md);
}

bool dn_op_batchnorm(dn_builder *b, carve_node_id n)
{
    if (dn_attr_i(b, n, "training_mode", 0) != 0)
        return dn_fail(b, DN_R_ATTR, "attribute training_mode = 1; allowed: 0 (inference)");
    if (dn_attr_i(b, n, "spatial", 1) != 1)
        return dn_fail(b, DN_R_ATTR, "attribute spatial = 0; allowed: 1");
    if (!one_output(b, n, "running statistics"))
        return false;
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    if (x->rank < 2)
        return dn_fail(b, DN_R_INPUT, "input X has rank %d, expected at least 2", x->rank);
    int64_t c = x->dims[1];
    const char *names[4] = {"scale", "B", "input_mean", "input_var"};
    dnnl_memory_t pm[4];
    for (int i = 0; i < 4; i++)
        if (!(pm[i] = chan_param(b, n, (size_t)i + 1, c, names[i])))
            return false;
    dnnl_batch_normalization_desc_t d;
    dnnl_status_t st = dnnl_batch_normalization_forward_desc_init(
        &d, dnnl_forward_inference, &x->md, dn_attr_f(b, n, "epsilon", 1e-5f),
        dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift);
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SCALE, pm[0]}, {DNNL_ARG_SHIFT, pm[1]}, {DNNL_ARG_MEAN, pm[2]}, {DNNL_ARG_VARIANCE, pm[3]}};
    return dn_step_unary(b, st, &d, "a batch normalization", x->mem, carve_node_output(b->m, n, 0), 4, args);
}

bool dn_op_softmax(dn_builder *b, carve_node_id n)
{
    bool logsm = is_op(b, n, "LogSoftmax");
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    int64_t opset = carve_model_opset(b->m, "");
    int64_t axis = dn_attr_i(b, n, "axis", opset < 13 ? 1 : -1);
    int r = x->rank ? x->rank : 1;
    if (axis < -r || axis >= r)
        return dn_fail(b, DN_R_ATTR, "attribute axis = %lld outside rank %d", (long long)axis, r);
    if (axis < 0)
        axis += r;
    /* Before opset 13 the input is flattened to 2-D at axis and normalized
     * over the whole second part: a plain [outer, inner] view, axis 1. */
    bool flat = opset < 13 && axis != r - 1;
    dnnl_memory_desc_t xmd = x->md, vmd;
    int ax = (int)axis;
    dnnl_dims_t vd;
    if (flat) {
        vd[0] = 1, vd[1] = 1;
        for (int d = 0; d < x->nd; d++)
            vd[d < axis ? 0 : 1] *= x->dims[d];
        dn_plain_md(&vmd, 2, vd);
        xmd = vmd;
        ax = 1;
    }
    dnnl_softmax_v2_desc_t d;
    dnnl_status_t st = dnnl_softmax_v2_forward_desc_init(&d, dnnl_forward_inference,
                                                         logsm ? dnnl_softmax_log : dnnl_softmax_accurate, &xmd,
                                                         &xmd, ax);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a softmax");
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, &d, NULL, &pd, "a softmax"))
        return false;
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_t xm, ym;
    if (flat) {
        dnnl_memory_desc_t t;
        xm = dn_view(b, x, 2, vd, &t);
        ym = xm ? dn_def_as(b, carve_node_output(b->m, n, 0), 2, vd, &t) : NULL;
    } else {
        xm = x->mem;
        dn_val *y = dn_out(b, n, 0, &x->md);
        ym = y ? y->mem : NULL;
    }
    if (!ym) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}};
    return dn_step_add(b, pd, 2, args);
}

bool dn_op_layernorm(dn_builder *b, carve_node_id n)
{
    if (!one_output(b, n, "Mean / InvStdDev"))
        return false;
    if (dn_attr_i(b, n, "stash_type", 1) != 1)
        return dn_fail(b, DN_R_ATTR, "attribute stash_type = %lld; allowed: 1 (float32 statistics)",
                       (long long)dn_attr_i(b, n, "stash_type", 1));
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    int r = x->rank;
    int64_t axis = dn_attr_i(b, n, "axis", -1);
    if (r < 1 || axis < -r || axis >= r)
        return dn_fail(b, DN_R_ATTR, "attribute axis = %lld outside rank %d", (long long)axis, r);
    if (axis < 0)
        axis += r;
    /* Normalized over dims [axis, r): a plain [outer, inner] view. */
    dnnl_dims_t vd = {1, 1};
    for (int d = 0; d < r; d++)
        vd[d < axis ? 0 : 1] *= x->dims[d];
    for (size_t i = 1; i <= 2; i++) {
        if (!dn_has_in(b, n, i))
            continue;
        dn_val *p = dn_in(b, n, i);
        if (!p)
            return false;
        bool same = p->rank == r - axis;
        for (int d = 0; same && d < p->rank; d++)
            same = p->dims[d] == x->dims[axis + d];
        if (!same)
            return dn_fail(b, DN_R_INPUT, "input %s does not have the normalized dims' shape (it broadcasts); "
                                          "the onednn backend takes a full-shape %s",
                           i == 1 ? "Scale" : "B", i == 1 ? "Scale" : "B");
    }
    bool has_b = dn_has_in(b, n, 2);
    dnnl_memory_desc_t xmd;
    dn_plain_md(&xmd, 2, vd);
    dnnl_layer_normalization_desc_t d;
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(
        &d, dnnl_forward_inference, &xmd, NULL, dn_attr_f(b, n, "epsilon", 1e-5f),
        dnnl_use_scale | (has_b ? dnnl_use_shift : 0u));
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a layer normalization");
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, &d, NULL, &pd, "a layer normalization"))
        return false;
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_desc_t t;
    dnnl_dims_t cd = {vd[1]};
    dnnl_memory_t xm = dn_view(b, x, 2, vd, &t);
    dnnl_memory_t sm = xm ? dn_view(b, dn_in(b, n, 1), 1, cd, &t) : NULL;
    dnnl_memory_t bm = sm && has_b ? dn_view(b, dn_in(b, n, 2), 1, cd, &t) : NULL;
    dnnl_memory_t ym = sm && (!has_b || bm) ? dn_def_as(b, carve_node_output(b->m, n, 0), 2, vd, &t) : NULL;
    if (!ym) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_SCALE, sm}, {DNNL_ARG_SHIFT, bm}};
    return dn_step_add(b, pd, has_b ? 4 : 3, args);
}

bool dn_op_reduce(dn_builder *b, carve_node_id n)
{
    static const struct {
        const char *op;
        /* op-list: data: this backend's own mapping of ONNX ops to oneDNN primitives (what a plugin declares) */
        dnnl_alg_kind_t alg;
    } t[] = {{"ReduceMean", dnnl_reduction_mean},
             {"ReduceSum", dnnl_reduction_sum},
             {"ReduceMax", dnnl_reduction_max},
             {"ReduceMin", dnnl_reduction_min}};
    dnnl_alg_kind_t alg = (dnnl_alg_kind_t)0;
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (is_op(b, n, t[i].op))
            alg = t[i].alg;
    if (!alg)
        return dn_fail(b, DN_R_OP, "no oneDNN reduction for %s", carve_node_op(b->m, n));
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    int r = x->rank;
    int64_t axes[16];
    int na = dn_attr_ints(b, n, "axes", axes, 16);
    bool axes_input = is_op(b, n, "ReduceSum") ? carve_model_opset(b->m, "") >= 13
                                               : carve_model_opset(b->m, "") >= 18;
    if (axes_input && dn_has_in(b, n, 1)) {
        size_t cnt = 0;
        if (!dn_const_ints(b, n, 1, axes, 16, &cnt))
            return dn_fail(b, DN_R_INPUT, "input axes is not a constant (at most 16 values)");
        na = (int)cnt;
    } else if (axes_input) {
        na = -1;
    }
    if (na == 0 || na < 0) {
        if (na == 0 && dn_attr_i(b, n, "noop_with_empty_axes", 0))
            return dn_fail(b, DN_R_ATTR, "noop_with_empty_axes = 1 with empty axes: an identity, left to carve");
        na = r;
        for (int d = 0; d < r; d++)
            axes[d] = d;
    }
    bool red[DNNL_MAX_NDIMS] = {false};
    for (int i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r)
            return dn_fail(b, DN_R_ATTR, "axis %lld outside rank %d", (long long)axes[i], r);
        red[a] = true;
    }
    /* oneDNN's destination keeps the reduced dims as 1 (keepdims = 1); the
     * ONNX output with keepdims = 0 is a plain view of it. */
    dnnl_dims_t kd;
    for (int d = 0; d < x->nd; d++)
        kd[d] = red[d] ? 1 : x->dims[d];
    dnnl_memory_desc_t ymd, xmd;
    dn_plain_md(&ymd, x->nd, kd);
    dn_plain_md(&xmd, x->nd, x->dims);
    dnnl_reduction_desc_t d;
    dnnl_status_t st = dnnl_reduction_desc_init(&d, alg, &xmd, &ymd, 0.0f, 0.0f);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a reduction");
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, &d, NULL, &pd, "a reduction"))
        return false;
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_desc_t tmd;
    dnnl_memory_t xm = dn_plain(b, x);
    dnnl_memory_t ym = xm ? dn_def_as(b, carve_node_output(b->m, n, 0), x->nd, kd, &tmd) : NULL;
    if (!ym) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}};
    return dn_step_add(b, pd, 2, args);
}

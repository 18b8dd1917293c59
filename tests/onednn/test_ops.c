/*
 * test_ops.c: every op the oneDNN backend takes, on seeded shapes, through
 * its callbacks (supports_node, compile, run) against carve's reference
 * kernels; fusions (post-ops, swish) and blocked layouts inside a partition.
 */
#include "dntest.h"

#include <stdio.h>
#include <string.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define SETI(t, n, name, ...)                                                                              \
    carve_node_set_attr_ints((t)->m, (n), (name), sizeof((const int64_t[]){__VA_ARGS__}) / 8,              \
                             (const int64_t[]){__VA_ARGS__})

/* Conv X[1,c,h,w] with weights [oc, c/g, k, k], optional bias. */
static carve_node_id conv(dt *t, carve_value_id x, int64_t c, int64_t oc, int64_t g, int64_t k, bool bias)
{
    carve_value_id w = dt_const(t, NULL, 4, D(oc, c / g, k, k), -0.5f, 0.5f);
    carve_value_id b = bias ? dt_const(t, NULL, 1, D(oc), -0.5f, 0.5f) : CARVE_NONE;
    carve_node_id n = dt_node(t, "Conv", bias ? 3 : 2, IDS(x, w, b), 1);
    carve_node_set_attr_int(t->m, n, "group", g);
    return n;
}

static carve_value_id out0(dt *t, carve_node_id n) { return carve_node_output(t->m, n, 0); }

TEST(conv_bias_relu_fused)
{
    dt t;
    dt_init(&t, 17, 1);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 8, 12, 10), -1, 1);
    carve_node_id c = conv(&t, x, 8, 16, 1, 3, true);
    SETI(&t, c, "pads", 1, 1, 1, 1);
    dt_output(&t, dt_op1(&t, "Relu", out0(&t, c)));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(conv_grouped_depthwise_dilated_strided)
{
    dt t;
    dt_init(&t, 17, 2);
    carve_value_id x = dt_input(&t, "x", 4, D(2, 8, 15, 13), -1, 1);
    carve_node_id g = conv(&t, x, 8, 12, 2, 3, true); /* grouped */
    SETI(&t, g, "pads", 1, 0, 2, 1);                  /* asymmetric */
    SETI(&t, g, "strides", 2, 1);
    carve_node_id dw = conv(&t, out0(&t, g), 12, 12, 12, 3, false); /* depthwise */
    SETI(&t, dw, "dilations", 2, 2);
    carve_node_set_attr_string(t.m, dw, "auto_pad", "SAME_UPPER");
    dt_output(&t, out0(&t, dw));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(conv_1d_and_3d)
{
    dt t;
    dt_init(&t, 17, 3);
    carve_value_id x = dt_input(&t, "x", 3, D(1, 4, 20), -1, 1);
    carve_value_id w = dt_const(&t, NULL, 3, D(6, 4, 5), -0.5f, 0.5f);
    carve_node_id c = dt_node(&t, "Conv", 2, IDS(x, w), 1);
    SETI(&t, c, "pads", 2, 2);
    SETI(&t, c, "strides", 3);
    dt_output(&t, out0(&t, c));
    carve_value_id x3 = dt_input(&t, "x3", 5, D(1, 2, 5, 6, 7), -1, 1);
    carve_value_id w3 = dt_const(&t, NULL, 5, D(3, 2, 3, 3, 3), -0.5f, 0.5f);
    carve_node_id c3 = dt_node(&t, "Conv", 2, IDS(x3, w3), 1);
    SETI(&t, c3, "pads", 1, 1, 1, 1, 1, 1);
    dt_output(&t, out0(&t, c3));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(conv_transpose)
{
    dt t;
    dt_init(&t, 17, 4);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 8, 6, 5), -1, 1);
    carve_value_id w = dt_const(&t, NULL, 4, D(8, 4, 2, 2), -0.5f, 0.5f);
    carve_value_id b = dt_const(&t, NULL, 1, D(4), -0.5f, 0.5f);
    carve_node_id ct = dt_node(&t, "ConvTranspose", 3, IDS(x, w, b), 1);
    SETI(&t, ct, "strides", 2, 2);
    dt_output(&t, dt_op1(&t, "Sigmoid", out0(&t, ct)));
    /* grouped, padded, output_padding */
    carve_value_id w2 = dt_const(&t, NULL, 4, D(8, 3, 3, 3), -0.5f, 0.5f);
    carve_node_id c2 = dt_node(&t, "ConvTranspose", 2, IDS(x, w2), 1);
    carve_node_set_attr_int(t.m, c2, "group", 2);
    SETI(&t, c2, "strides", 2, 2);
    SETI(&t, c2, "pads", 1, 1, 1, 1);
    SETI(&t, c2, "output_padding", 1, 1);
    dt_output(&t, out0(&t, c2));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

/* ConvTranspose -> Add (per channel) -> BatchNormalization -> Relu, then a
 * grouped ConvTranspose with a bias -> Add of a scalar -> Sigmoid (OCR det's
 * upsampling head): scale folded into the weights, the shifts and the
 * activation one binary step (ops_conv.c deconv_fold) */
TEST(conv_transpose_folds_channel_affine)
{
    dt t;
    dt_init(&t, 17, 40);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 8, 7, 6), -1, 1);
    carve_value_id w = dt_const(&t, NULL, 4, D(8, 6, 2, 2), -0.5f, 0.5f);
    carve_node_id ct = dt_node(&t, "ConvTranspose", 2, IDS(x, w), 1);
    SETI(&t, ct, "strides", 2, 2);
    carve_value_id a = dt_op2(&t, "Add", out0(&t, ct), dt_const(&t, NULL, 3, D(6, 1, 1), -1, 1));
    carve_value_id bn_in[5] = {a, dt_const(&t, NULL, 1, D(6), 0.5f, 2), dt_const(&t, NULL, 1, D(6), -1, 1),
                               dt_const(&t, NULL, 1, D(6), -1, 1), dt_const(&t, NULL, 1, D(6), 0.1f, 2)};
    carve_node_id bn = dt_node(&t, "BatchNormalization", 5, bn_in, 1);
    carve_node_set_attr_float(t.m, bn, "epsilon", 1e-3f);
    carve_value_id r = dt_op1(&t, "Relu", out0(&t, bn));
    carve_value_id w2 = dt_const(&t, NULL, 4, D(6, 1, 2, 2), -0.5f, 0.5f);
    carve_value_id b2 = dt_const(&t, NULL, 1, D(2), -0.5f, 0.5f);
    carve_node_id c2 = dt_node(&t, "ConvTranspose", 3, IDS(r, w2, b2), 1);
    carve_node_set_attr_int(t.m, c2, "group", 2);
    SETI(&t, c2, "strides", 2, 2);
    carve_value_id a2 = dt_op2(&t, "Add", out0(&t, c2), dt_const_f32(&t, NULL, 1, (const float[]){0.25f}));
    dt_output(&t, dt_op1(&t, "Sigmoid", a2));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(matmul_shapes)
{
    dt t;
    dt_init(&t, 17, 5);
    carve_value_id a = dt_input(&t, "a", 3, D(2, 5, 7), -1, 1);
    carve_value_id w = dt_const(&t, NULL, 2, D(7, 9), -1, 1);
    carve_value_id bias = dt_const(&t, NULL, 1, D(9), -1, 1);
    dt_output(&t, dt_op1(&t, "Relu", dt_op2(&t, "Add", dt_op2(&t, "MatMul", a, w), bias)));
    carve_value_id b2 = dt_input(&t, "b2", 3, D(2, 7, 4), -1, 1); /* runtime B, batched */
    dt_output(&t, dt_op2(&t, "MatMul", a, b2));
    carve_value_id v = dt_input(&t, "v", 1, D(7), -1, 1); /* 1-D x 2-D */
    dt_output(&t, dt_op2(&t, "MatMul", v, w));
    carve_value_id m2 = dt_input(&t, "m2", 2, D(3, 7), -1, 1); /* 2-D x 1-D */
    dt_output(&t, dt_op2(&t, "MatMul", m2, v));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(gemm_trans_alpha_beta)
{
    dt t;
    dt_init(&t, 17, 6);
    carve_value_id a = dt_input(&t, "a", 2, D(6, 4), -1, 1);
    carve_value_id b = dt_const(&t, NULL, 2, D(5, 6), -1, 1);
    carve_value_id c = dt_const(&t, NULL, 1, D(5), -1, 1);
    carve_node_id n = dt_node(&t, "Gemm", 3, IDS(a, b, c), 1);
    carve_node_set_attr_int(t.m, n, "transA", 1);
    carve_node_set_attr_int(t.m, n, "transB", 1);
    carve_node_set_attr_float(t.m, n, "alpha", 0.5f);
    carve_node_set_attr_float(t.m, n, "beta", 2.0f);
    dt_output(&t, out0(&t, n));
    carve_value_id a2 = dt_input(&t, "a2", 2, D(3, 6), -1, 1);
    carve_value_id c2 = dt_const(&t, NULL, 2, D(3, 1), -1, 1);
    carve_node_id n2 = dt_node(&t, "Gemm", 3, IDS(a2, dt_input(&t, "b2", 2, D(6, 4), -1, 1), c2), 1);
    dt_output(&t, out0(&t, n2));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(batchnorm_prelu)
{
    dt t;
    dt_init(&t, 15, 7);
    carve_value_id x = dt_input(&t, "x", 4, D(2, 6, 5, 4), -1, 1);
    carve_value_id s = dt_const(&t, NULL, 1, D(6), 0.5f, 1.5f), b = dt_const(&t, NULL, 1, D(6), -1, 1);
    carve_value_id mu = dt_const(&t, NULL, 1, D(6), -1, 1), var = dt_const(&t, NULL, 1, D(6), 0.5f, 2);
    carve_node_id bn = dt_node(&t, "BatchNormalization", 5, IDS(x, s, b, mu, var), 1);
    carve_node_set_attr_float(t.m, bn, "epsilon", 1e-3f);
    carve_value_id slope = dt_const(&t, NULL, 3, D(6, 1, 1), 0, 0.5f);
    dt_output(&t, dt_op2(&t, "PRelu", out0(&t, bn), slope));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(activations)
{
    static const char *ops[] = {"Relu", "Sigmoid", "Tanh", "Abs", "Exp", "HardSwish", "Neg"};
    dt t;
    dt_init(&t, 20, 8);
    carve_value_id x = dt_input(&t, "x", 3, D(2, 7, 9), -4, 4);
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        dt_output(&t, dt_op1(&t, ops[i], x));
    carve_value_id p = dt_input(&t, "p", 2, D(5, 11), 0.01f, 9);
    dt_output(&t, dt_op1(&t, "Sqrt", p));
    dt_output(&t, dt_op1(&t, "Log", p));
    carve_node_id n = dt_node(&t, "LeakyRelu", 1, &x, 1);
    carve_node_set_attr_float(t.m, n, "alpha", 0.2f);
    dt_output(&t, out0(&t, n));
    n = dt_node(&t, "Elu", 1, &x, 1);
    carve_node_set_attr_float(t.m, n, "alpha", 0.7f);
    dt_output(&t, out0(&t, n));
    n = dt_node(&t, "HardSigmoid", 1, &x, 1);
    carve_node_set_attr_float(t.m, n, "alpha", 0.25f);
    carve_node_set_attr_float(t.m, n, "beta", 0.4f);
    dt_output(&t, out0(&t, n));
    float b0 = -1.5f, b1 = 2.0f;
    carve_value_id vmin = dt_const_data(&t, "cmin", CARVE_FLOAT, 0, NULL, &b0, 4);
    carve_value_id vmax = dt_const_data(&t, "cmax", CARVE_FLOAT, 0, NULL, &b1, 4);
    dt_output(&t, out0(&t, dt_node(&t, "Clip", 3, IDS(x, vmin, vmax), 1)));
    dt_output(&t, out0(&t, dt_node(&t, "Clip", 3, IDS(x, CARVE_NONE, vmax), 1)));
    dt_output(&t, dt_op1(&t, "Gelu", x));
    n = dt_node(&t, "Gelu", 1, &x, 1);
    carve_node_set_attr_string(t.m, n, "approximate", "tanh");
    dt_output(&t, out0(&t, n));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(swish_pattern_and_hardsigmoid_after_conv)
{
    dt t;
    dt_init(&t, 17, 9);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 4, 9, 9), -3, 3);
    dt_output(&t, dt_op2(&t, "Mul", x, dt_op1(&t, "Sigmoid", x)));
    carve_node_id c = conv(&t, x, 4, 8, 1, 1, true);
    dt_output(&t, dt_op1(&t, "HardSigmoid", out0(&t, c)));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(binary_broadcast)
{
    dt t;
    dt_init(&t, 17, 10);
    carve_value_id x = dt_input(&t, "x", 4, D(2, 3, 4, 5), -2, 2);
    carve_value_id y = dt_input(&t, "y", 4, D(2, 3, 4, 5), 0.5f, 2);
    carve_value_id c = dt_const(&t, NULL, 3, D(3, 1, 1), 0.5f, 2);
    carve_value_id r = dt_input(&t, "r", 1, D(5), 0.5f, 2);
    dt_output(&t, dt_op2(&t, "Add", x, y));
    dt_output(&t, dt_op2(&t, "Sub", x, c));
    dt_output(&t, dt_op2(&t, "Mul", c, x)); /* first operand broadcasts: swapped */
    dt_output(&t, dt_op2(&t, "Div", x, r));
    dt_output(&t, dt_op2(&t, "Max", x, y));
    dt_output(&t, dt_op2(&t, "Min", r, x));
    float two = 2.0f;
    carve_value_id s = dt_const_data(&t, "two", CARVE_FLOAT, 0, NULL, &two, 4);
    dt_output(&t, dt_op2(&t, "Div", y, s));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ELT);
    dt_free(&t);
}

TEST(residual_add_fused_after_conv)
{
    dt t;
    dt_init(&t, 17, 11);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 16, 10, 10), -1, 1);
    carve_node_id c1 = conv(&t, x, 16, 16, 1, 3, true);
    SETI(&t, c1, "pads", 1, 1, 1, 1);
    carve_value_id r = dt_op1(&t, "Relu", out0(&t, c1));
    carve_node_id c2 = conv(&t, r, 16, 16, 1, 3, true);
    SETI(&t, c2, "pads", 1, 1, 1, 1);
    dt_output(&t, dt_op1(&t, "Relu", dt_op2(&t, "Add", out0(&t, c2), x)));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(pools)
{
    dt t;
    dt_init(&t, 17, 12);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 3, 11, 12), -1, 1);
    carve_node_id mp = dt_node(&t, "MaxPool", 1, &x, 1);
    SETI(&t, mp, "kernel_shape", 3, 3);
    SETI(&t, mp, "strides", 2, 2);
    SETI(&t, mp, "pads", 1, 1, 1, 1);
    dt_output(&t, out0(&t, mp));
    carve_node_id mc = dt_node(&t, "MaxPool", 1, &x, 1);
    SETI(&t, mc, "kernel_shape", 2, 2);
    SETI(&t, mc, "strides", 2, 2);
    carve_node_set_attr_int(t.m, mc, "ceil_mode", 1);
    dt_output(&t, out0(&t, mc));
    carve_node_id ap = dt_node(&t, "AveragePool", 1, &x, 1);
    SETI(&t, ap, "kernel_shape", 3, 3);
    SETI(&t, ap, "pads", 1, 1, 1, 1);
    carve_node_set_attr_int(t.m, ap, "count_include_pad", 1);
    dt_output(&t, out0(&t, ap));
    carve_node_id ae = dt_node(&t, "AveragePool", 1, &x, 1);
    SETI(&t, ae, "kernel_shape", 3, 2);
    SETI(&t, ae, "strides", 2, 2);
    SETI(&t, ae, "pads", 1, 0, 1, 1);
    carve_node_set_attr_int(t.m, ae, "ceil_mode", 1);
    dt_output(&t, out0(&t, ae));
    dt_output(&t, dt_op1(&t, "GlobalAveragePool", x));
    dt_output(&t, dt_op1(&t, "GlobalMaxPool", x));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ELT);
    dt_free(&t);
}

TEST(softmax_opsets)
{
    for (int opset = 11; opset <= 13; opset += 2) {
        dt t;
        dt_init(&t, opset, 13);
        carve_value_id x = dt_input(&t, "x", 3, D(2, 3, 5), -3, 3);
        dt_output(&t, dt_op1(&t, "Softmax", x)); /* opset 11: flattened at axis 1 */
        carve_node_id n = dt_node(&t, "LogSoftmax", 1, &x, 1);
        carve_node_set_attr_int(t.m, n, "axis", 1);
        dt_output(&t, out0(&t, n));
        carve_node_id n2 = dt_node(&t, "Softmax", 1, &x, 1);
        carve_node_set_attr_int(t.m, n2, "axis", -1);
        dt_output(&t, out0(&t, n2));
        REQUIRE(dt_finish(&t));
        DT_RUN(&t, DT_TOL_ACC);
        dt_free(&t);
    }
}

TEST(layernorm_axes)
{
    dt t;
    dt_init(&t, 17, 14);
    carve_value_id x = dt_input(&t, "x", 3, D(2, 6, 8), -2, 2);
    carve_value_id s = dt_const(&t, NULL, 1, D(8), 0.5f, 1.5f), b = dt_const(&t, NULL, 1, D(8), -1, 1);
    dt_output(&t, out0(&t, dt_node(&t, "LayerNormalization", 3, IDS(x, s, b), 1)));
    carve_value_id s2 = dt_const(&t, NULL, 2, D(6, 8), 0.5f, 1.5f);
    carve_node_id n = dt_node(&t, "LayerNormalization", 2, IDS(x, s2), 1);
    carve_node_set_attr_int(t.m, n, "axis", 1);
    carve_node_set_attr_float(t.m, n, "epsilon", 1e-3f);
    dt_output(&t, out0(&t, n));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}


TEST(resize_modes_that_match)
{
    dt t;
    dt_init(&t, 13, 15);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 3, 6, 8), -1, 1);
    dt_output(&t, out0(&t, dt_resize(&t, x, "nearest", "asymmetric", "floor", 2)));
    dt_output(&t, out0(&t, dt_resize(&t, x, "nearest", NULL, NULL, 2)));
    dt_output(&t, out0(&t, dt_resize(&t, x, "nearest", NULL, NULL, 4)));
    dt_output(&t, out0(&t, dt_resize(&t, x, "linear", NULL, NULL, 2)));
    dt_output(&t, out0(&t, dt_resize(&t, x, "linear", "pytorch_half_pixel", NULL, 3)));
    dt_output(&t, out0(&t, dt_resize(&t, x, "linear", NULL, NULL, 0.5f)));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ELT);
    dt_free(&t);
}

TEST(layout_ops)
{
    dt t;
    dt_init(&t, 13, 16);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 8, 6, 5), -1, 1);
    carve_node_id c = conv(&t, x, 8, 8, 1, 1, true); /* a blocked producer */
    carve_value_id cat_in[3] = {out0(&t, c), x, dt_op1(&t, "Relu", x)};
    carve_node_id cat = dt_node(&t, "Concat", 3, cat_in, 1);
    carve_node_set_attr_int(t.m, cat, "axis", 1);
    dt_output(&t, out0(&t, cat));
    carve_node_id tr = dt_node(&t, "Transpose", 1, IDS(out0(&t, c)), 1);
    SETI(&t, tr, "perm", 0, 2, 3, 1);
    dt_output(&t, out0(&t, tr));
    carve_value_id shape = dt_const_i64(&t, "shape", 3, D(1, 8, -1));
    carve_value_id rs = dt_op2(&t, "Reshape", out0(&t, c), shape);
    dt_output(&t, dt_op1(&t, "Relu", rs));
    carve_node_id fl = dt_node(&t, "Flatten", 1, IDS(out0(&t, c)), 1);
    carve_node_set_attr_int(t.m, fl, "axis", 2);
    dt_output(&t, out0(&t, fl));
    carve_value_id ax = dt_const_i64(&t, "ax", 1, D(0));
    carve_value_id sq = dt_op2(&t, "Squeeze", x, ax);
    dt_output(&t, dt_op2(&t, "Unsqueeze", sq, ax));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(reductions)
{
    static const char *ops[] = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"};
    dt t;
    dt_init(&t, 13, 17);
    carve_value_id x = dt_input(&t, "x", 3, D(3, 4, 5), -2, 2);
    carve_value_id axes = dt_const_i64(&t, "axes", 2, D(0, -1));
    for (size_t i = 0; i < 4; i++) {
        carve_node_id n;
        if (!strcmp(ops[i], "ReduceSum"))
            n = dt_node(&t, ops[i], 2, IDS(x, axes), 1);
        else {
            n = dt_node(&t, ops[i], 1, &x, 1);
            SETI(&t, n, "axes", 0, -1);
        }
        carve_node_set_attr_int(t.m, n, "keepdims", (int64_t)(i & 1));
        dt_output(&t, out0(&t, n));
    }
    dt_output(&t, dt_op1(&t, "ReduceMean", x)); /* all axes */
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(two_threads_same_result)
{
    dt t;
    dt_init(&t, 17, 18);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 16, 32, 32), -1, 1);
    carve_node_id c = conv(&t, x, 16, 32, 1, 3, true);
    SETI(&t, c, "pads", 1, 1, 1, 1);
    dt_output(&t, dt_op1(&t, "Relu", out0(&t, c)));
    REQUIRE(dt_finish(&t));
    carve_set_threads(2);
    DT_RUN(&t, DT_TOL_ACC);
    carve_set_threads(1);
    dt_free(&t);
}

/* x * Clip(x + 3, 0, 6) / 6, the HardSwish of opset < 14 exporters: one
 * hardswish, standalone and as a post-op after a Conv. */
static carve_value_id hardswish_pattern(dt *t, carve_value_id x)
{
    float c3 = 3, c0 = 0, c6 = 6;
    carve_value_id v3 = dt_const_data(t, NULL, CARVE_FLOAT, 0, NULL, &c3, 4);
    carve_value_id v0 = dt_const_data(t, NULL, CARVE_FLOAT, 0, NULL, &c0, 4);
    carve_value_id v6 = dt_const_data(t, NULL, CARVE_FLOAT, 0, NULL, &c6, 4);
    carve_value_id a = dt_op2(t, "Add", x, v3);
    carve_value_id c = out0(t, dt_node(t, "Clip", 3, IDS(a, v0, v6), 1));
    return dt_op2(t, "Div", dt_op2(t, "Mul", x, c), v6);
}

TEST(hardswish_pattern_fused)
{
    dt t;
    dt_init(&t, 11, 19);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 8, 7, 7), -5, 5);
    dt_output(&t, hardswish_pattern(&t, x));
    carve_node_id c = conv(&t, x, 8, 16, 1, 3, true);
    SETI(&t, c, "pads", 1, 1, 1, 1);
    dt_output(&t, hardswish_pattern(&t, out0(&t, c)));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

/* PP-OCRv4's block: Conv, scalar Mul and Add, the HardSwish pattern, scalar
 * Mul and Add, all post-ops of the Conv. */
TEST(conv_scalar_affine_hardswish_chain)
{
    dt t;
    dt_init(&t, 11, 20);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 32, 20, 20), -2, 2);
    carve_node_id c = conv(&t, x, 32, 48, 1, 1, true);
    float k[4] = {0.9f, 1.8f, 0.4f, -0.3f};
    carve_value_id v[4];
    for (int i = 0; i < 4; i++)
        v[i] = dt_const(&t, NULL, 1, D(1), k[i], k[i] + 1e-3f);
    carve_value_id a = dt_op2(&t, "Add", dt_op2(&t, "Mul", v[0], out0(&t, c)), v[1]);
    carve_value_id h = hardswish_pattern(&t, a);
    carve_value_id z = dt_op2(&t, "Add", dt_op2(&t, "Mul", v[2], h), v[3]);
    carve_node_id c2 = conv(&t, z, 48, 16, 1, 3, true);
    dt_output(&t, out0(&t, c2));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}


static bool post_op_chain(int first, int second, int k)
{
    dt t;
    dt_init(&t, 11, 20);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 32, 20, 20), -2, 2);
    carve_node_id c = conv(&t, x, 32, 48, 1, k, true);
    carve_value_id y = out0(&t, c);
    int ops[3] = {first, second, first};
    for (int i = 0; i < 3; i++) {
        if (ops[i] == 0) {
            carve_value_id v1 = dt_const(&t, NULL, 1, D(1), 0.8f, 0.81f);
            carve_value_id v2 = dt_const(&t, NULL, 1, D(1), 0.3f, 0.31f);
            y = dt_op2(&t, "Add", dt_op2(&t, "Mul", v1, y), v2);
        } else if (ops[i] == 1)
            y = hardswish_pattern(&t, y);
        else if (ops[i] == 2)
            y = dt_op1(&t, "Relu", y);
        else
            y = dt_op1(&t, "Sigmoid", y);
    }
    y = out0(&t, conv(&t, y, 48, 16, 1, 3, true));
    dt_output(&t, y);
    bool ok = dt_finish(&t) && DT_RUN(&t, DT_TOL_ACC);
    if (!ok)
        fprintf(stderr, "  chain %d %d %d after a %dx%d Conv\n", first, second, first, k, k);
    dt_free(&t);
    return ok;
}

/* Every chain of {scalar affine, HardSwish pattern, Relu, Sigmoid} x 3
 * (a, b, a) after a 1x1 and a 3x3 Conv, then another Conv: the post-op
 * chains oneDNN gets (one post-op per algorithm) compute what the nodes do. */
TEST(post_op_chains)
{
    for (int k = 1; k <= 3; k += 2)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                CHECK(post_op_chain(a, b, k));
}

TEST(slice_and_pow)
{
    dt t;
    dt_init(&t, 13, 21);
    carve_value_id x = dt_input(&t, "x", 3, D(2, 10, 12), 0.1f, 2);
    carve_value_id st = dt_const_i64(&t, "st", 2, D(1, -5)), en = dt_const_i64(&t, "en", 2, D(8, 1000));
    carve_value_id ax = dt_const_i64(&t, "ax", 2, D(1, 2));
    dt_output(&t, dt_op1(&t, "Relu", out0(&t, dt_node(&t, "Slice", 4, IDS(x, st, en, ax), 1))));
    float two = 2.0f, half = 0.5f;
    dt_output(&t, dt_op2(&t, "Pow", x, dt_const_data(&t, "two", CARVE_FLOAT, 0, NULL, &two, 4)));
    dt_output(&t, dt_op2(&t, "Pow", x, dt_const_data(&t, "half", CARVE_FLOAT, 0, NULL, &half, 4)));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

/* Scalar Mul then Add then Mul (x * a + b) * c: one linear, standalone. */
TEST(scalar_affine_merged)
{
    dt t;
    dt_init(&t, 13, 22);
    carve_value_id x = dt_input(&t, "x", 2, D(6, 7), -3, 3);
    carve_value_id a = dt_const(&t, NULL, 1, D(1), 0.5f, 2), c = dt_const(&t, NULL, 0, NULL, -2, 2);
    carve_value_id y = dt_op2(&t, "Mul", dt_op2(&t, "Sub", dt_op2(&t, "Mul", x, a), c), a);
    dt_output(&t, y);
    dt_output(&t, dt_op2(&t, "Sub", c, x)); /* c - x */
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ELT);
    dt_free(&t);
}

/* Element-wise and binary ops computed in place in a dead input's buffer:
 * the values read later (x twice, the partition input) stay intact. */
TEST(in_place_where_the_input_dies)
{
    dt t;
    dt_init(&t, 13, 23);
    carve_value_id x = dt_input(&t, "x", 3, D(2, 5, 6), -2, 2);
    carve_value_id y = dt_input(&t, "y", 3, D(2, 5, 6), -2, 2);
    carve_value_id a = dt_op1(&t, "Relu", x);            /* x read again below */
    carve_value_id b = dt_op1(&t, "Tanh", a);            /* a dies: in place */
    carve_value_id c = dt_op2(&t, "Add", b, y);          /* b dies: in place */
    carve_value_id d = dt_op2(&t, "Mul", c, x);
    dt_output(&t, dt_op1(&t, "Sigmoid", d));
    dt_output(&t, dt_op2(&t, "Sub", x, y));
    dt_output(&t, a); /* a body output: never overwritten */
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ELT);
    dt_free(&t);
}

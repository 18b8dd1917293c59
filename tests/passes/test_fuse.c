/* test_fuse.c: folding in disguise (src/passes/fuse.c). BatchNormalization
 * folds into a preceding Conv or Gemm with constant float weights (outputs
 * equal within 1e-4), not into quantized ones; MatMul + Add of a constant
 * bias becomes one Gemm named from the MatMul where the shapes allow. */
#include "foldtest.h"

static carve_ctx *ctx;

/* BatchNormalization's four parameters for c channels. */
static void bn_params(carve_model *m, const char *prefix, int64_t c, carve_value_id *p)
{
    char name[64];
    const char *what[4] = {"scale", "bias", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s_%s", prefix, what[i]);
        p[i] = ft_weight(m, 0, name, CARVE_FLOAT, 1, &c, 10 + (uint32_t)i, i == 3 ? 0.5 : -1, i == 3 ? 1.5 : 1);
    }
}

static void bn_conv(bool bias, int64_t group)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[4] = {1, 4, 7, 7}, wd[4] = {6, 4 / group, 3, 3}, c = 6;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 4, xd);
    carve_value_id cin[3] = {x, ft_weight(m, 0, "W", CARVE_FLOAT, 4, wd, 1, -1, 1),
                             bias ? ft_weight(m, 0, "B", CARVE_FLOAT, 1, &c, 2, -1, 1) : CARVE_NONE};
    carve_node_id conv = ft_node(m, 0, "Conv", "conv", bias ? 3 : 2, cin, "cv");
    int64_t pads[4] = {1, 1, 1, 1};
    carve_node_set_attr_ints(m, conv, "pads", 4, pads);
    carve_node_set_attr_int(m, conv, "group", group);
    carve_value_id bin[5] = {carve_node_output(m, conv, 0)};
    bn_params(m, "bn", c, bin + 1);
    carve_node_id bn = ft_node(m, 0, "BatchNormalization", "bn", 5, bin, "y");
    carve_node_set_attr_float(m, bn, "epsilon", 1e-3f);
    carve_graph_add_output(m, 0, carve_node_output(m, bn, 0));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 4, xd, 3, -1, 1)};
    carve_fold_stats st;
    char what[64];
    snprintf(what, sizeof what, "BatchNormalization into Conv (bias %d, group %lld)", bias, (long long)group);
    ft_fold_check(m, inputs, NULL, 1e-4, 1e-4, &st, what);
    OT_CHECK(!ft_alive(m, "bn") && ft_alive(m, "conv") && st.bn_fused == 1, "%s: fused", what);
    conv = carve_model_find_node(m, "conv");
    OT_CHECK(carve_node_output(m, conv, 0) == carve_graph_output(m, 0, 0), "%s: the Conv writes 'y'", what);
    OT_CHECK(carve_node_input_count(m, conv) == 3 && cv_fold_const(m, carve_node_input(m, conv, 2)),
             "%s: the Conv has a constant bias", what);
    OT_CHECK(!ft_is_init(m, "W") && !ft_is_init(m, "bn_mean"), "%s: the old weight and statistics are gone", what);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

static void bn_gemm(bool trans_b, int c_rank)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {3, 5}, bd[2] = {trans_b ? 4 : 5, trans_b ? 5 : 4}, n = 4, cd[2] = {1, 4};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id gin[3] = {x, ft_weight(m, 0, "B", CARVE_FLOAT, 2, bd, 1, -1, 1),
                             c_rank < 0 ? CARVE_NONE : ft_weight(m, 0, "C", CARVE_FLOAT, c_rank, c_rank == 2 ? cd : &n, 2, -1, 1)};
    carve_node_id g = ft_node(m, 0, "Gemm", "gemm", c_rank < 0 ? 2 : 3, gin, "g");
    carve_node_set_attr_int(m, g, "transB", trans_b);
    carve_node_set_attr_float(m, g, "alpha", 0.5f);
    carve_node_set_attr_float(m, g, "beta", 2.0f);
    carve_value_id bin[5] = {carve_node_output(m, g, 0)};
    bn_params(m, "bn", n, bin + 1);
    carve_node_id bn = ft_node(m, 0, "BatchNormalization", "bn", 5, bin, "y");
    carve_graph_add_output(m, 0, carve_node_output(m, bn, 0));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    carve_fold_stats st;
    char what[80];
    snprintf(what, sizeof what, "BatchNormalization into Gemm (transB %d, C rank %d)", trans_b, c_rank);
    ft_fold_check(m, inputs, NULL, 1e-4, 1e-4, &st, what);
    OT_CHECK(!ft_alive(m, "bn") && ft_alive(m, "gemm") && st.bn_fused == 1, "%s: fused", what);
    float beta = 0;
    carve_node_attr_float(m, carve_model_find_node(m, "gemm"), "beta", &beta);
    OT_CHECK(beta == 1.0f, "%s: beta is 1 after folding it into C", what);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* A quantized Conv weight (from DequantizeLinear) is left alone. */
static void bn_quantized(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 1, 1}, c = 3;
    float s = 0.05f;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 4, xd);
    carve_value_id din[2] = {ft_weight(m, 0, "Wq", CARVE_INT8, 4, wd, 1, -100, 100),
                             carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &s, sizeof s)};
    carve_value_id w = ft_op(m, 0, "DequantizeLinear", "dq", 2, din, "W");
    carve_value_id cin[2] = {x, w};
    carve_value_id cv = ft_op(m, 0, "Conv", "conv", 2, cin, "cv");
    carve_value_id bin[5] = {cv};
    bn_params(m, "bn", c, bin + 1);
    carve_graph_add_output(m, 0, ft_op(m, 0, "BatchNormalization", "bn", 5, bin, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 4, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "quantized Conv");
    OT_CHECK(ft_alive(m, "bn") && ft_alive(m, "dq") && st.bn_fused == 0, "a quantized weight keeps its BatchNormalization");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

static void matmul_add(int bias_rank, bool bias_first, int a_rank, bool fuses)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[3] = {2, 3, 5}, wd[2] = {5, 4}, bd[2] = {a_rank == 2 ? 3 : 1, 4};
    const int64_t *ad = a_rank == 2 ? xd + 1 : xd;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, a_rank, ad);
    carve_value_id min[2] = {x, ft_weight(m, 0, "W", CARVE_FLOAT, 2, wd, 1, -1, 1)};
    carve_value_id mm = ft_op(m, 0, "MatMul", "matmul", 2, min, "mm");
    carve_value_id b = ft_weight(m, 0, "b", CARVE_FLOAT, bias_rank, bias_rank == 1 ? bd + 1 : bd, 2, -1, 1);
    carve_value_id ain[2] = {bias_first ? b : mm, bias_first ? mm : b};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, ain, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, a_rank, ad, 3, -1, 1)};
    carve_fold_stats st;
    char what[80];
    snprintf(what, sizeof what, "MatMul + Add (bias rank %d%s, A rank %d)", bias_rank, bias_first ? ", bias first" : "",
             a_rank);
    ft_fold_check(m, inputs, NULL, 1e-5, 1e-5, &st, what);
    if (fuses) {
        OT_CHECK(ft_alive(m, "matmul/Gemm") && !ft_alive(m, "matmul") && !ft_alive(m, "add") && st.gemm_fused == 1,
                 "%s: one Gemm named 'matmul/Gemm'", what);
        carve_node_id g = carve_model_find_node(m, "matmul/Gemm");
        OT_CHECK(!strcmp(carve_node_op(m, g), "Gemm") && carve_node_output(m, g, 0) == carve_graph_output(m, 0, 0),
                 "%s: the Gemm writes 'y'", what);
    } else {
        OT_CHECK(ft_alive(m, "matmul") && ft_alive(m, "add") && st.gemm_fused == 0, "%s: not fused", what);
    }
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* MatMul + Add + BatchNormalization: the Gemm, then the BatchNormalization
 * into it. */
static void matmul_add_bn(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {3, 5}, wd[2] = {5, 4}, n = 4;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id min[2] = {x, ft_weight(m, 0, "W", CARVE_FLOAT, 2, wd, 1, -1, 1)};
    carve_value_id mm = ft_op(m, 0, "MatMul", "matmul", 2, min, "mm");
    carve_value_id ain[2] = {mm, ft_weight(m, 0, "b", CARVE_FLOAT, 1, &n, 2, -1, 1)};
    carve_value_id bin[5] = {ft_op(m, 0, "Add", "add", 2, ain, "a")};
    bn_params(m, "bn", n, bin + 1);
    carve_graph_add_output(m, 0, ft_op(m, 0, "BatchNormalization", "bn", 5, bin, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 1e-4, 1e-4, &st, "MatMul + Add + BatchNormalization");
    OT_CHECK(ft_count(m, NULL) == 1 && ft_alive(m, "matmul/Gemm") && st.bn_fused == 1 && st.gemm_fused == 1,
             "one Gemm is left (%u nodes)", ft_count(m, NULL));
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    bn_conv(true, 1);
    bn_conv(false, 1);
    bn_conv(true, 2);
    bn_gemm(false, 1);
    bn_gemm(true, 2);
    bn_gemm(false, -1);
    bn_quantized();
    matmul_add(1, false, 2, true);
    matmul_add(1, true, 2, true);
    matmul_add(2, false, 2, true);
    matmul_add(0, false, 2, true);
    matmul_add(1, false, 3, false); /* a batched MatMul is no Gemm */
    matmul_add_bn();
    carve_ctx_free(ctx);
    return ot_finish();
}

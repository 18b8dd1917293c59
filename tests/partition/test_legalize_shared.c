/* test_legalize_shared.c: an int64 constant read inside one htp Delegate
 * both as a shape parameter (Squeeze's axes, which ONNX takes only as
 * int64) and as data (Gather's indices, legalized to int32) keeps int64 for
 * the parameter and gets an int32 copy for the data. Before the fix, every
 * read took the int32 copy and the body was not valid ONNX (onnxruntime
 * refused the exported partition of PP-OCRv4 rec). */
#include "../passes/foldtest.h"
#include "partition/partition.h"

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = ft_model(ctx, 21);
    int64_t xd[2] = {1, 4}, vd[1] = {4}, zero = 0, one = 1;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id v = ft_input(m, 0, "v", CARVE_FLOAT, 1, vd);
    carve_value_id c = carve_graph_add_initializer(m, 0, "c", CARVE_INT64, 1, &one, &zero, sizeof zero);
    carve_value_id s_in[2] = {x, c};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Squeeze", "squeeze", 2, s_in, "y"));
    carve_value_id g_in[2] = {v, c};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Gather", "gather", 2, g_in, "z"));
    cv_val *in[2] = {ot_random(CARVE_FLOAT, 2, xd, 1, -1, 1), ot_random(CARVE_FLOAT, 1, vd, 2, -1, 1)};
    cv_val *before[2] = {0}, *after[2] = {0};
    OT_CHECK(ot_run(m, in, before) == CARVE_OK, "runs before: %s", carve_errmsg(ctx));
    carve_target *htp = NULL;
    carve_target_builtin(ctx, "htp", &htp);
    carve_lower_opts o = {.no_fold = true};
    OT_CHECK(carve_lower(m, htp, &o, NULL) == CARVE_OK, "lowers for htp: %s", carve_errmsg(ctx));
    carve_node_id d = carve_graph_node(m, 0, 0);
    carve_graph_id body = !strcmp(carve_node_op(m, d), "Delegate") ? cv_attr_g(m, d, "body") : CARVE_NONE;
    OT_CHECK(body != CARVE_NONE && carve_graph_node_count(m, 0) == 1, "one Delegate takes both nodes");
    carve_dtype sq = CARVE_UNDEFINED, ga = CARVE_UNDEFINED;
    for (size_t i = 0; body != CARVE_NONE && i < carve_graph_node_count(m, body); i++) {
        carve_node_id n = carve_graph_node(m, body, i);
        if (!strcmp(carve_node_op(m, n), "Squeeze"))
            sq = carve_value_dtype(m, carve_node_input(m, n, 1));
        if (!strcmp(carve_node_op(m, n), "Gather"))
            ga = carve_value_dtype(m, carve_node_input(m, n, 1));
    }
    OT_CHECK(sq == CARVE_INT64, "Squeeze's axes stay int64 (%s)", carve_dtype_name(sq));
    OT_CHECK(ga == CARVE_INT32, "Gather's indices are the int32 copy (%s)", carve_dtype_name(ga));
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "the lowered model verifies: %s", carve_errmsg(ctx));
    OT_CHECK(ot_run(m, in, after) == CARVE_OK, "runs after: %s", carve_errmsg(ctx));
    for (int k = 0; k < 2; k++) {
        char why[200] = "";
        OT_CHECK(before[k] && after[k] && ot_close(after[k], before[k], 0, 0, why, sizeof why), "output %d equal: %s", k,
                 why);
        cv_val_unref(before[k]);
        cv_val_unref(after[k]);
        cv_val_unref(in[k]);
    }
    carve_target_free(htp);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return ot_finish();
}

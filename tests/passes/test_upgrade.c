/* test_upgrade.c: the opset upgrade (src/passes/upgrade.c). Each case builds
 * a one-node model at an old opset, runs it, upgrades it, runs it again:
 * the outputs must be equal, the opset the newest, the node still named
 * "n". Refusals leave the model as it was and name the node. The Debian
 * node tests run upgraded too (ctest node_upgrade), but they are nearly all
 * at opset 13 or later, hence these. */
#include "tb.h"

#include "passes/passes.h"

#include <math.h>
#include <string.h>

static cv_val *rnd(int rank, const int64_t *dims, uint32_t seed)
{
    return ot_random(CARVE_FLOAT, rank, dims, seed, -3, 3);
}

/* Runs t's model, upgrades it, runs it again, compares. n_out outputs. */
static void same_after_upgrade(tb *t, const char *what, int n_out, uint32_t min_added)
{
    cv_val *y0[5], *y1[5];
    carve_status s = tb_run(t, y0);
    OT_CHECK(!s, "%s: runs before the upgrade: %s", what, carve_errmsg(t->ctx));
    if (s)
        return;
    carve_upgrade_stats st;
    s = carve_upgrade(t->m, &st);
    OT_CHECK(!s && !st.refused[0], "%s: upgraded (%s %s)", what, carve_errmsg(t->ctx), st.refused);
    OT_CHECK(carve_model_opset(t->m, "") == cv_upgrade_newest(), "%s: opset %lld", what,
             (long long)carve_model_opset(t->m, ""));
    OT_CHECK(st.nodes_added >= min_added, "%s: %u nodes made, expected at least %u", what, st.nodes_added, min_added);
    OT_CHECK(carve_model_find_node(t->m, "n") != CARVE_NONE, "%s: node 'n' keeps its name", what);
    OT_CHECK(!carve_model_verify(t->m), "%s: verifies: %s", what, carve_errmsg(t->ctx));
    s = tb_run(t, y1);
    OT_CHECK(!s, "%s: runs after the upgrade: %s", what, carve_errmsg(t->ctx));
    for (int i = 0; i < n_out && !s; i++) {
        char why[300];
        OT_CHECK(ot_close(y1[i], y0[i], 0, 0, why, sizeof why), "%s: output %d equal: %s", what, i, why);
    }
    for (int i = 0; i < n_out; i++) {
        cv_val_unref(y0[i]);
        if (!s)
            cv_val_unref(y1[i]);
    }
}

static void softmax_cases(void)
{
    const char *ops[] = {"Softmax", "LogSoftmax", "Hardmax"};
    int64_t d[4] = {2, 3, 4, 5};
    for (int o = 0; o < 3; o++)
        for (int64_t axis = -4; axis < 4; axis++) {
            tb t;
            tb_init(&t, 11);
            carve_value_id x = tb_in(&t, "x", rnd(4, d, (uint32_t)(axis + 10)));
            carve_node_id n = tb_node(&t, ops[o], 1, &x, 1);
            carve_node_set_attr_int(t.m, n, "axis", axis);
            char what[64];
            snprintf(what, sizeof what, "%s-11 axis %lld", ops[o], (long long)axis);
            same_after_upgrade(&t, what, 1, axis == 3 || axis == -1 ? 0 : 2);
            tb_free(&t);
        }
    /* the default axis (1) of opset 9, dims symbolic: Shape, not a constant */
    tb t;
    tb_init(&t, 9);
    carve_value_id x = tb_in_sym(&t, "x", rnd(3, d, 7), "batch");
    tb_node(&t, "Softmax", 1, &x, 1);
    same_after_upgrade(&t, "Softmax-9 default axis, symbolic batch", 1, 3);
    tb_free(&t);
}

static void resize_cases(void)
{
    int64_t d[4] = {1, 2, 3, 4};
    const float ups[4] = {1, 1, 2, 1.5f}, downs[4] = {1, 1, 0.5f, 0.75f};
    const char *modes[] = {"nearest", "linear"};
    for (int md = 0; md < 2; md++)
        for (int dir = 0; dir < 2; dir++) {
            const float *sc = dir ? downs : ups;
            /* Upsample-7: scales attribute (upsampling only) */
            if (!dir) {
                tb t;
                tb_init(&t, 7);
                carve_value_id x = tb_in(&t, "x", rnd(4, d, 3));
                carve_node_id n = tb_node(&t, "Upsample", 1, &x, 1);
                carve_node_set_attr_floats(t.m, n, "scales", 4, sc);
                carve_node_set_attr_string(t.m, n, "mode", modes[md]);
                same_after_upgrade(&t, modes[md][0] == 'n' ? "Upsample-7 nearest" : "Upsample-7 linear", 1, 0);
                tb_free(&t);
            }
            /* Upsample-9 and Resize-10: scales input */
            for (int v = 9; v <= 10; v++) {
                tb t;
                tb_init(&t, v);
                int64_t four = 4;
                carve_value_id in[2] = {tb_in(&t, "x", rnd(4, d, 4)),
                                        carve_graph_add_initializer(t.m, 0, "s", CARVE_FLOAT, 1, &four, sc, sizeof(float) * 4)};
                carve_node_id n = tb_node(&t, v == 9 ? "Upsample" : "Resize", 2, in, 1);
                carve_node_set_attr_string(t.m, n, "mode", modes[md]);
                char what[80];
                snprintf(what, sizeof what, "%s-%d %s %s", v == 9 ? "Upsample" : "Resize", v, modes[md],
                         dir ? "down" : "up");
                same_after_upgrade(&t, what, 1, 0);
                OT_CHECK(!strcmp(carve_node_op(t.m, carve_model_find_node(t.m, "n")), "Resize"), "%s: a Resize", what);
                tb_free(&t);
            }
        }
}

static void attr_to_input_cases(void)
{
    int64_t d[3] = {2, 3, 4};
    tb t;
    /* Slice-9 */
    tb_init(&t, 9);
    carve_value_id x = tb_in(&t, "x", rnd(3, d, 1));
    carve_node_id n = tb_node(&t, "Slice", 1, &x, 1);
    int64_t st[2] = {1, -3}, en[2] = {3, 1000}, ax[2] = {2, 1};
    carve_node_set_attr_ints(t.m, n, "starts", 2, st);
    carve_node_set_attr_ints(t.m, n, "ends", 2, en);
    carve_node_set_attr_ints(t.m, n, "axes", 2, ax);
    same_after_upgrade(&t, "Slice-9", 1, 0);
    tb_free(&t);
    /* Pad-2 with a value, Pad-1 paddings */
    for (int v = 1; v <= 2; v++) {
        tb_init(&t, v == 1 ? 1 : 2);
        x = tb_in(&t, "x", rnd(3, d, 2));
        n = tb_node(&t, "Pad", 1, &x, 1);
        int64_t p[6] = {0, 1, 2, 1, 0, 3};
        carve_node_set_attr_ints(t.m, n, v == 1 ? "paddings" : "pads", 6, p);
        carve_node_set_attr_float(t.m, n, "value", 1.5f);
        same_after_upgrade(&t, v == 1 ? "Pad-1" : "Pad-2", 1, 0);
        tb_free(&t);
    }
    /* Clip-6: both bounds, one bound */
    for (int k = 0; k < 2; k++) {
        tb_init(&t, 6);
        x = tb_in(&t, "x", rnd(3, d, 3));
        n = tb_node(&t, "Clip", 1, &x, 1);
        if (k == 0)
            carve_node_set_attr_float(t.m, n, "min", -0.5f);
        carve_node_set_attr_float(t.m, n, "max", 0.75f);
        same_after_upgrade(&t, k ? "Clip-6 max only" : "Clip-6", 1, 0);
        tb_free(&t);
    }
    /* Squeeze/Unsqueeze-11 */
    int64_t d1[3] = {2, 1, 4};
    tb_init(&t, 11);
    x = tb_in(&t, "x", rnd(3, d1, 4));
    n = tb_node(&t, "Squeeze", 1, &x, 1);
    int64_t a1 = 1, a2[2] = {0, -1};
    carve_node_set_attr_ints(t.m, n, "axes", 1, &a1);
    same_after_upgrade(&t, "Squeeze-11", 1, 0);
    tb_free(&t);
    tb_init(&t, 11);
    x = tb_in(&t, "x", rnd(3, d, 5));
    n = tb_node(&t, "Unsqueeze", 1, &x, 1);
    carve_node_set_attr_ints(t.m, n, "axes", 2, a2);
    same_after_upgrade(&t, "Unsqueeze-11", 1, 0);
    tb_free(&t);
    /* Reduce*-11: with axes, without, keepdims 0 */
    const char *reds[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp", "ReduceProd"};
    for (int r = 0; r < 6; r++)
        for (int k = 0; k < 2; k++) {
            tb_init(&t, 11);
            x = tb_in(&t, "x", rnd(3, d, 6));
            n = tb_node(&t, reds[r], 1, &x, 1);
            if (k) {
                carve_node_set_attr_ints(t.m, n, "axes", 2, a2);
                carve_node_set_attr_int(t.m, n, "keepdims", 0);
            }
            char what[64];
            snprintf(what, sizeof what, "%s-11 %s", reds[r], k ? "axes" : "all");
            same_after_upgrade(&t, what, 1, 0);
            tb_free(&t);
        }
    /* Split-11: sizes attribute; equal parts (num_outputs at 18) */
    for (int k = 0; k < 2; k++) {
        int64_t d6[2] = {6, 2};
        tb_init(&t, 11);
        x = tb_in(&t, "x", rnd(2, d6, 7));
        n = tb_node(&t, "Split", 1, &x, 2);
        int64_t sz[2] = {2, 4};
        if (k)
            carve_node_set_attr_ints(t.m, n, "split", 2, sz);
        same_after_upgrade(&t, k ? "Split-11 sizes" : "Split-11 equal", 2, 0);
        tb_free(&t);
    }
    /* TopK-9 */
    tb_init(&t, 9);
    x = tb_in(&t, "x", rnd(3, d, 8));
    n = tb_node(&t, "TopK", 1, &x, 2);
    carve_node_set_attr_int(t.m, n, "k", 2);
    same_after_upgrade(&t, "TopK-9", 2, 0);
    tb_free(&t);
    /* Reshape-4 */
    tb_init(&t, 4);
    x = tb_in(&t, "x", rnd(3, d, 9));
    n = tb_node(&t, "Reshape", 1, &x, 1);
    int64_t sh[2] = {4, -1};
    carve_node_set_attr_ints(t.m, n, "shape", 2, sh);
    same_after_upgrade(&t, "Reshape-4", 1, 0);
    tb_free(&t);
}

static void other_cases(void)
{
    int64_t d[4] = {2, 3, 4, 2};
    tb t;
    /* BatchNormalization-7 (spatial 1, is_test dropped at 7) */
    tb_init(&t, 7);
    int64_t c = 3;
    carve_value_id in[5] = {tb_in(&t, "x", rnd(4, d, 1))};
    const char *nm[4] = {"scale", "b", "mean", "var"};
    for (int i = 0; i < 4; i++) {
        float v[3] = {0.5f + (float)i, 0.25f, 1.5f};
        in[i + 1] = carve_graph_add_initializer(t.m, 0, nm[i], CARVE_FLOAT, 1, &c, v, sizeof v);
    }
    carve_node_id n = tb_node(&t, "BatchNormalization", 5, in, 1);
    carve_node_set_attr_int(t.m, n, "spatial", 1);
    same_after_upgrade(&t, "BatchNormalization-7", 1, 0);
    tb_free(&t);
    /* Dropout-7 with a ratio */
    tb_init(&t, 7);
    carve_value_id x = tb_in(&t, "x", rnd(4, d, 2));
    n = tb_node(&t, "Dropout", 1, &x, 1);
    carve_node_set_attr_float(t.m, n, "ratio", 0.3f);
    same_after_upgrade(&t, "Dropout-7", 1, 0);
    tb_free(&t);
    /* GroupNormalization-18: per-group scale and bias */
    int64_t dg[4] = {2, 4, 3, 2}, g2 = 2;
    tb_init(&t, 18);
    carve_value_id gi[3] = {tb_in(&t, "x", rnd(4, dg, 3))};
    float gs[2] = {0.5f, 2}, gb[2] = {0.25f, -1};
    gi[1] = carve_graph_add_initializer(t.m, 0, "gs", CARVE_FLOAT, 1, &g2, gs, sizeof gs);
    gi[2] = carve_graph_add_initializer(t.m, 0, "gb", CARVE_FLOAT, 1, &g2, gb, sizeof gb);
    n = tb_node(&t, "GroupNormalization", 3, gi, 1);
    carve_node_set_attr_int(t.m, n, "num_groups", 2);
    same_after_upgrade(&t, "GroupNormalization-18", 1, 0);
    tb_free(&t);
    /* Concat-3 without axis (1 then), Add-6 with numpy-like broadcast */
    tb_init(&t, 3);
    carve_value_id cc[2] = {tb_in(&t, "a", rnd(4, d, 4)), tb_in(&t, "b", rnd(4, d, 5))};
    tb_node(&t, "Concat", 2, cc, 1);
    same_after_upgrade(&t, "Concat-3", 1, 0);
    tb_free(&t);
    tb_init(&t, 6);
    int64_t db[2] = {4, 2};
    carve_value_id ab[2] = {tb_in(&t, "a", rnd(4, d, 6)), tb_in(&t, "b", rnd(2, db, 7))};
    n = tb_node(&t, "Add", 2, ab, 1);
    carve_node_set_attr_int(t.m, n, "broadcast", 1);
    same_after_upgrade(&t, "Add-6 broadcast", 1, 0);
    tb_free(&t);
    /* Scatter-9 -> ScatterElements */
    tb_init(&t, 9);
    int64_t di[2] = {1, 2};
    int64_t idx[2] = {1, 0};
    carve_value_id sc[3] = {tb_in(&t, "x", rnd(2, db, 8)),
                            carve_graph_add_initializer(t.m, 0, "i", CARVE_INT64, 2, di, idx, sizeof idx),
                            tb_in(&t, "u", rnd(2, di, 9))};
    n = tb_node(&t, "Scatter", 3, sc, 1);
    carve_node_set_attr_int(t.m, n, "axis", 1);
    same_after_upgrade(&t, "Scatter-9", 1, 0);
    OT_CHECK(!strcmp(carve_node_op(t.m, n), "ScatterElements"), "Scatter became ScatterElements");
    tb_free(&t);
}

/* Rules with a condition on the node: where it fails the node has no rule
 * (it only takes the new opset), and the other nodes of its op still get
 * theirs. The node that fails comes first: the rule found for its op is
 * remembered, and must not be taken as its answer for the next. */
static void conditional_rules(void)
{
    int64_t d[4] = {2, 3, 4, 2};
    tb t;
    /* Concat-3 with an axis (kept) before one without (axis 1 said) */
    tb_init(&t, 3);
    carve_value_id cc[2] = {tb_in(&t, "a", rnd(4, d, 31)), tb_in(&t, "b", rnd(4, d, 32))};
    carve_node_id c2 = carve_graph_add_node(t.m, 0, "Concat", "", "c2", 2, cc, 1, (const char *[]){"z"});
    carve_node_set_attr_int(t.m, c2, "axis", 2);
    carve_graph_add_output(t.m, 0, carve_node_output(t.m, c2, 0));
    carve_node_id n = tb_node(&t, "Concat", 2, cc, 1);
    same_after_upgrade(&t, "Concat-3 with and without an axis", 2, 0);
    int64_t a2 = -1, a1 = -1;
    OT_CHECK(carve_node_attr_int(t.m, c2, "axis", &a2) && a2 == 2 && carve_node_attr_int(t.m, n, "axis", &a1) &&
                 a1 == 1,
             "Concat-3: axis 2 kept (%lld), axis 1 said (%lld)", (long long)a2, (long long)a1);
    tb_free(&t);
    /* Resize-11: asymmetric passes (nothing to do), tf_half_pixel_for_nn is refused */
    for (int tf = 0; tf < 2; tf++) {
        int64_t dr[4] = {1, 1, 2, 3}, four = 4;
        const float sc[4] = {1, 1, 2, 2};
        tb_init(&t, 11);
        carve_value_id x = tb_in(&t, "x", rnd(4, dr, 33));
        carve_value_id s = carve_graph_add_initializer(t.m, 0, "s", CARVE_FLOAT, 1, &four, sc, sizeof sc);
        carve_value_id in[3] = {x, CARVE_NONE, s};
        carve_node_id r0 = carve_graph_add_node(t.m, 0, "Resize", "", "r0", 3, in, 1, (const char *[]){"z"});
        carve_node_set_attr_string(t.m, r0, "coordinate_transformation_mode", "asymmetric");
        carve_graph_add_output(t.m, 0, carve_node_output(t.m, r0, 0));
        if (!tf) {
            n = tb_node(&t, "Softmax", 1, &x, 1); /* a node with a rule beside it */
            carve_node_set_attr_int(t.m, n, "axis", 3);
            same_after_upgrade(&t, "Resize-11 asymmetric", 2, 0);
        } else {
            n = tb_node(&t, "Resize", 3, in, 1);
            carve_node_set_attr_string(t.m, n, "coordinate_transformation_mode", "tf_half_pixel_for_nn");
            carve_upgrade_stats st;
            OT_CHECK(!carve_upgrade(t.m, &st) && strstr(st.refused, "node 'n' (Resize, opset 11)") &&
                         strstr(st.refused, "tf_half_pixel_for_nn was removed"),
                     "Resize-11 tf_half_pixel_for_nn refused: %s", st.refused);
            OT_CHECK(carve_model_opset(t.m, "") == 11, "refused: the opset stays 11");
        }
        tb_free(&t);
    }
    /* RoiAlign-10: output_half_pixel said */
    tb_init(&t, 10);
    int64_t dx[4] = {1, 1, 4, 4}, dro[2] = {1, 4}, one = 1, zero = 0;
    const float roi[4] = {0.5f, 0.5f, 3, 2.5f};
    carve_value_id ri[3] = {tb_in(&t, "x", rnd(4, dx, 34)),
                            carve_graph_add_initializer(t.m, 0, "rois", CARVE_FLOAT, 2, dro, roi, sizeof roi),
                            carve_graph_add_initializer(t.m, 0, "bi", CARVE_INT64, 1, &one, &zero, sizeof zero)};
    n = tb_node(&t, "RoiAlign", 3, ri, 1);
    carve_node_set_attr_int(t.m, n, "output_height", 2);
    carve_node_set_attr_int(t.m, n, "output_width", 2);
    same_after_upgrade(&t, "RoiAlign-10", 1, 0);
    OT_CHECK(!strcmp(cv_attr_s(t.m, n, "coordinate_transformation_mode", ""), "output_half_pixel"),
             "RoiAlign-10: output_half_pixel said");
    tb_free(&t);
}

/* Upsample-9 whose scales come from a Constant node (old exporters), Gemm-6
 * with broadcast = 1. */
static void constant_node_and_gemm(void)
{
    int64_t d[4] = {1, 2, 3, 4}, four = 4;
    tb t;
    tb_init(&t, 9);
    carve_value_id x = tb_in(&t, "x", rnd(4, d, 21));
    const float sc[4] = {1, 1, 2, 2};
    carve_node_id c = carve_graph_add_node(t.m, 0, "Constant", "", "scales_c", 0, NULL, 1, (const char *[]){"s"});
    carve_node_set_attr_tensor(t.m, c, "value", CARVE_FLOAT, 1, &four, sc, sizeof sc);
    carve_value_id in[2] = {x, carve_node_output(t.m, c, 0)};
    tb_node(&t, "Upsample", 2, in, 1);
    same_after_upgrade(&t, "Upsample-9 with a Constant node's scales", 1, 0);
    tb_free(&t);
    tb_init(&t, 6);
    int64_t da[2] = {3, 4}, db[2] = {4, 5}, dc = 5;
    float bw[20], cw[5];
    for (int i = 0; i < 20; i++)
        bw[i] = (float)(i % 7) * 0.25f - 0.5f;
    for (int i = 0; i < 5; i++)
        cw[i] = (float)i - 2;
    carve_value_id g[3] = {tb_in(&t, "a", rnd(2, da, 22)),
                           carve_graph_add_initializer(t.m, 0, "b", CARVE_FLOAT, 2, db, bw, sizeof bw),
                           carve_graph_add_initializer(t.m, 0, "c", CARVE_FLOAT, 1, &dc, cw, sizeof cw)};
    carve_node_id n = tb_node(&t, "Gemm", 3, g, 1);
    carve_node_set_attr_int(t.m, n, "broadcast", 1);
    same_after_upgrade(&t, "Gemm-6 broadcast", 1, 0);
    OT_CHECK(!cv_node_attr_find(t.m, n, "broadcast"), "Gemm-6's broadcast attribute is gone");
    tb_free(&t);
}

/* A node with no faithful rewrite leaves the whole model as it was. */
static void refusals(void)
{
    int64_t d[4] = {1, 2, 3, 4};
    tb t;
    tb_init(&t, 9);
    carve_value_id in[2] = {tb_in(&t, "x", rnd(4, d, 1)), tb_in(&t, "s", rnd(1, (int64_t[]){4}, 2))};
    carve_value_id sx = in[0];
    carve_node_id n = tb_node(&t, "Upsample", 2, in, 1);
    carve_node_id keep = carve_graph_add_node(t.m, 0, "Softmax", "", "sm", 1, &sx, 1, (const char *[]){"z"});
    carve_graph_add_output(t.m, 0, carve_node_output(t.m, keep, 0));
    uint32_t nodes = t.m->n_nodes;
    carve_upgrade_stats st;
    OT_CHECK(!carve_upgrade(t.m, &st), "refusal is not an error");
    OT_CHECK(strstr(st.refused, "node 'n' (Upsample, opset 9)") && strstr(st.refused, "not a constant"),
             "the refusal names the node and why: %s", st.refused);
    OT_CHECK(carve_model_opset(t.m, "") == 9 && t.m->n_nodes == nodes && !cv_node_attr_find(t.m, keep, "axis"),
             "the model is left as it was (opset %lld)", (long long)carve_model_opset(t.m, ""));
    (void)n;
    tb_free(&t);
    /* BatchNormalization-9 whose training output is read */
    tb_init(&t, 9);
    int64_t c = 2;
    carve_value_id bi[5] = {tb_in(&t, "x", rnd(4, d, 3))};
    for (int i = 0; i < 4; i++) {
        float v[2] = {1, 0.5f};
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        bi[i + 1] = carve_graph_add_initializer(t.m, 0, nm, CARVE_FLOAT, 1, &c, v, sizeof v);
    }
    tb_node(&t, "BatchNormalization", 5, bi, 2);
    OT_CHECK(!carve_upgrade(t.m, &st) && strstr(st.refused, "training statistic"), "BN: %s", st.refused);
    tb_free(&t);
    /* a model already at the newest opset is left alone */
    tb_init(&t, cv_upgrade_newest());
    carve_value_id x = tb_in(&t, "x", rnd(4, d, 4));
    tb_node(&t, "Softmax", 1, &x, 1);
    OT_CHECK(!carve_upgrade(t.m, &st) && !st.refused[0] && st.opset_before == st.opset_after &&
                 !st.nodes_rewritten,
             "newest: untouched");
    tb_free(&t);
}

/* Subgraphs are upgraded too: an If whose branches hold old Softmax nodes. */
static void subgraph_case(void)
{
    tb t;
    tb_init(&t, 11);
    int64_t d[3] = {2, 3, 4};
    carve_value_id x = tb_in(&t, "x", rnd(3, d, 11));
    uint8_t one = 1;
    carve_value_id cond = carve_graph_add_initializer(t.m, 0, "c", CARVE_BOOL, 0, NULL, &one, 1);
    carve_node_id n = tb_node(&t, "If", 1, &cond, 1);
    carve_graph_id br[2];
    for (int b = 0; b < 2; b++) {
        br[b] = carve_graph_new_subgraph(t.m, 0, b ? "else" : "then");
        carve_node_id s = carve_graph_add_node(t.m, br[b], "Softmax", "", b ? "sm_else" : "sm_then", 1, &x, 1,
                                               (const char *[]){b ? "ye" : "yt"});
        carve_node_set_attr_int(t.m, s, "axis", b);
        carve_graph_add_output(t.m, br[b], carve_node_output(t.m, s, 0));
    }
    carve_node_set_attr_graph(t.m, n, "then_branch", br[0]);
    carve_node_set_attr_graph(t.m, n, "else_branch", br[1]);
    same_after_upgrade(&t, "If with Softmax-11 in its branches", 1, 2);
    OT_CHECK(carve_model_find_node(t.m, "sm_then/Flatten") != CARVE_NONE, "the branch's Softmax got its Flatten");
    tb_free(&t);
}

int main(void)
{
    softmax_cases();
    resize_cases();
    attr_to_input_cases();
    other_cases();
    conditional_rules();
    constant_node_and_gemm();
    refusals();
    subgraph_case();
    return ot_finish();
}

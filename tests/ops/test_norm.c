/* test_norm.c: the normalizations against direct double-precision formulas
 * written here (LayerNormalization over every axis with its Mean and
 * InvStdDev outputs, GroupNormalization with the opset 18 per-group and the
 * opset 21 per-channel scale, float16 and opsets the ONNX node data lacks,
 * BatchNormalization in training mode), the decompositions of
 * BatchNormalization (training mode too), InstanceNormalization, LayerNormalization,
 * GroupNormalization and MeanVarianceNormalization on several shapes in
 * float32 and float16, inference of LayerNormalization's extra outputs on
 * symbolic shapes, and error texts. */
#include "opstest.h"
#include "tb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ model building */

static double tol_of(carve_dtype dt) { return dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16 ? 2e-2 : 1e-4; }

/* got against want (doubles), |d| <= tol * (1 + |want|) */
static bool close_to(const cv_val *got, const double *want, size_t n, double tol, char *why, size_t whysz)
{
    if (got->nelem != n) {
        snprintf(why, whysz, "%zu elements, expected %zu", got->nelem, n);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        double g = cv_val_get_f64(got, i);
        if (!(fabs(g - want[i]) <= tol * (1 + fabs(want[i])))) {
            snprintf(why, whysz, "element %zu is %.7g, expected %.7g", i, g, want[i]);
            return false;
        }
    }
    return true;
}

/* ================================================================ LayerNormalization */

/* Direct formula: rows of the trailing dims from axis, two-pass statistics
 * in double; scale and bias broadcast from the right. */
static void ref_layernorm(const cv_val *x, const cv_val *s, const cv_val *b, int a, double eps, double *y, double *mean,
                          double *inv)
{
    size_t outer = 1, n = 1;
    for (int i = 0; i < x->rank; i++)
        *(i < a ? &outer : &n) *= (size_t)x->dims[i];
    for (size_t o = 0; o < outer; o++) {
        double mu = 0, var = 0;
        for (size_t j = 0; j < n; j++)
            mu += cv_val_get_f64(x, o * n + j);
        mu /= (double)n;
        for (size_t j = 0; j < n; j++) {
            double d = cv_val_get_f64(x, o * n + j) - mu;
            var += d * d;
        }
        var /= (double)n;
        mean[o] = mu;
        inv[o] = 1 / sqrt(var + eps);
        for (size_t j = 0; j < n; j++) {
            /* s and b: right-aligned, so index j modulo their size */
            double sv = cv_val_get_f64(s, j % s->nelem), bv = b ? cv_val_get_f64(b, j % b->nelem) : 0;
            y[o * n + j] = (cv_val_get_f64(x, o * n + j) - mu) * inv[o] * sv + bv;
        }
    }
}

static void check_layernorm(carve_dtype dt, int rank, const int64_t *dims, int64_t axis, bool bias, int n_out,
                            bool short_scale, double eps)
{
    tb t;
    tb_init(&t, 17);
    int a = (int)(axis < 0 ? axis + rank : axis);
    /* Scale/B over the normalized dims, or only the last one (broadcast) */
    int sr = short_scale ? 1 : rank - a;
    const int64_t *sd = dims + rank - sr;
    cv_val *x = ot_random(dt, rank, dims, (uint32_t)(rank * 10 + a), -3, 3);
    cv_val *s = ot_random(dt, sr, sd, 77, 0.5, 1.5), *b = bias ? ot_random(dt, sr, sd, 78, -1, 1) : NULL;
    carve_value_id ins[3] = {tb_in(&t, "x", x), tb_in(&t, "scale", s), bias ? tb_in(&t, "b", b) : CARVE_NONE};
    carve_node_id n = tb_node(&t, "LayerNormalization", bias ? 3 : 2, ins, n_out);
    carve_node_set_attr_int(t.m, n, "axis", axis);
    carve_node_set_attr_float(t.m, n, "epsilon", (float)eps);
    cv_val *y[3];
    carve_status st = tb_run(&t, y);
    OT_CHECK(st == CARVE_OK, "LayerNormalization: %s", carve_errmsg(t.ctx));
    if (!st) {
        double *wy = malloc(x->nelem * sizeof *wy), *wm = malloc(x->nelem * sizeof *wm),
               *wi = malloc(x->nelem * sizeof *wi);
        ref_layernorm(x, s, b, a, (float)eps, wy, wm, wi);
        char why[200];
        OT_CHECK(y[0]->dtype == dt && close_to(y[0], wy, x->nelem, tol_of(dt), why, sizeof why),
                 "LayerNormalization %s rank %d axis %lld bias %d: Y %s", carve_dtype_name(dt), rank, (long long)axis,
                 bias, why);
        size_t outer = 1;
        for (int i = 0; i < a; i++)
            outer *= (size_t)dims[i];
        for (int o = 1; o < n_out; o++) {
            bool shape_ok = y[o]->dtype == CARVE_FLOAT && y[o]->rank == rank;
            for (int i = 0; shape_ok && i < rank; i++)
                shape_ok = y[o]->dims[i] == (i < a ? dims[i] : 1);
            OT_CHECK(shape_ok && close_to(y[o], o == 1 ? wm : wi, outer, 1e-5, why, sizeof why),
                     "LayerNormalization %s axis %lld: output %d (%s) %s", carve_dtype_name(dt), (long long)axis, o,
                     o == 1 ? "Mean" : "InvStdDev", shape_ok ? why : "has the wrong shape or type");
        }
        free(wy);
        free(wm);
        free(wi);
    }
    for (int i = 0; i < n_out; i++)
        cv_val_unref(y[i]);
    tb_free(&t);
}

static void test_layernorm(void)
{
    static const int64_t d2[2] = {3, 4}, d3[3] = {2, 3, 5}, d4[4] = {2, 3, 4, 5}, dl[2] = {4, 1000};
    carve_dtype dts[3] = {CARVE_FLOAT, CARVE_FLOAT16, CARVE_DOUBLE};
    for (int d = 0; d < 3; d++) {
        for (int64_t ax = -2; ax < 2; ax++)
            check_layernorm(dts[d], 2, d2, ax, true, 3, false, 1e-5);
        for (int64_t ax = -3; ax < 3; ax++)
            check_layernorm(dts[d], 3, d3, ax, ax & 1, 3, false, 0.1);
        for (int64_t ax = 0; ax < 4; ax++)
            check_layernorm(dts[d], 4, d4, ax, true, 1 + (int)(ax % 3), ax == 1, 1e-5);
    }
    check_layernorm(CARVE_BFLOAT16, 3, d3, -1, true, 3, false, 1e-5);
    /* a large mean: the two-pass variance keeps it */
    tb t;
    tb_init(&t, 17);
    cv_val *x = ot_random(CARVE_FLOAT, 2, dl, 5, 1000, 1000.01);
    int64_t sn = 1000;
    carve_value_id ins[2] = {tb_in(&t, "x", x), tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, &sn, 6, 1, 1))};
    tb_node(&t, "LayerNormalization", 2, ins, 1);
    cv_val *y[1];
    OT_CHECK(tb_run(&t, y) == CARVE_OK, "LayerNormalization large mean: %s", carve_errmsg(t.ctx));
    double *wy = malloc(4000 * sizeof *wy), wm[4], wi[4];
    ref_layernorm(x, t.run_in[1], NULL, 1, 1e-5f, wy, wm, wi);
    char why[200];
    OT_CHECK(y[0] && close_to(y[0], wy, 4000, 2e-3, why, sizeof why), "LayerNormalization large mean: %s", why);
    free(wy);
    cv_val_unref(y[0]);
    tb_free(&t);
    /* Scale of the wrong shape */
    tb_init(&t, 17);
    int64_t bad = 3;
    ins[0] = tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, d2, 1, 0, 1));
    ins[1] = tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, &bad, 1, 0, 1));
    tb_node(&t, "LayerNormalization", 2, ins, 1);
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "node 'n' (LayerNormalization): input 1 'Scale' (rank 1) does not broadcast"),
             "LayerNormalization bad scale: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

static void test_layernorm_infer(void)
{
    tb t;
    tb_init(&t, 17);
    carve_dim xd[3] = {{-1, "batch"}, {-1, "seq"}, {8, NULL}}, sd[1] = {{8, NULL}};
    carve_value_id ins[2] = {carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT16, 3, xd),
                             carve_graph_add_input(t.m, 0, "s", CARVE_FLOAT16, 1, sd)};
    carve_node_id n = tb_node(&t, "LayerNormalization", 2, ins, 3);
    carve_node_set_attr_int(t.m, n, "axis", -1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "LayerNormalization inference: %s", carve_errmsg(t.ctx));
    const cv_type *y = &t.m->values[carve_node_output(t.m, n, 0)].type,
                  *mu = &t.m->values[carve_node_output(t.m, n, 1)].type;
    OT_CHECK(y->dtype == CARVE_FLOAT16 && y->rank == 3 && !strcmp(y->dims[1].param, "seq"), "LayerNormalization Y type");
    OT_CHECK(mu->dtype == CARVE_FLOAT && mu->rank == 3 && !strcmp(mu->dims[0].param, "batch") &&
                 !strcmp(mu->dims[1].param, "seq") && mu->dims[2].value == 1,
             "LayerNormalization Mean: float32, (batch, seq, 1)");
    tb_free(&t);

    tb_init(&t, 17);
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, xd);
    ins[1] = carve_graph_add_input(t.m, 0, "s", CARVE_FLOAT, 1, sd);
    n = tb_node(&t, "LayerNormalization", 2, ins, 1);
    carve_node_set_attr_int(t.m, n, "axis", 3);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "LayerNormalization axis 3 with one output");
    tb_free(&t);
}

static void check_layernorm_decomp(carve_dtype dt, int rank, const int64_t *dims, int64_t axis, bool bias, int n_out)
{
    tb t;
    tb_init(&t, 17);
    int a = (int)(axis < 0 ? axis + rank : axis);
    carve_value_id ins[3] = {tb_in(&t, "x", ot_random(dt, rank, dims, (uint32_t)(a + 3), -2, 2)),
                             tb_in(&t, "s", ot_random(dt, rank - a, dims + a, 4, 0.5, 1.5)),
                             bias ? tb_in(&t, "b", ot_random(dt, rank - a, dims + a, 5, -1, 1)) : CARVE_NONE};
    carve_node_id n = tb_node(&t, "LayerNormalization", bias ? 3 : 2, ins, n_out);
    carve_node_set_attr_int(t.m, n, "axis", axis);
    ot_check_decomposition(t.m, n, t.run_in, tol_of(dt), tol_of(dt));
    tb_free(&t);
}

static void test_layernorm_decomp(void)
{
    static const int64_t d2[2] = {4, 6}, d3[3] = {2, 3, 5}, d4[4] = {2, 3, 4, 5};
    for (int f = 0; f < 2; f++) {
        carve_dtype dt = f ? CARVE_FLOAT16 : CARVE_FLOAT;
        for (int64_t ax = -2; ax < 2; ax++)
            check_layernorm_decomp(dt, 2, d2, ax, true, 1);
        for (int64_t ax = -3; ax < 3; ax++)
            check_layernorm_decomp(dt, 3, d3, ax, ax != 0, 3);
        for (int64_t ax = 0; ax < 4; ax++)
            check_layernorm_decomp(dt, 4, d4, ax, true, 2);
    }
    /* a node without Mean but with InvStdDev */
    tb t;
    tb_init(&t, 17);
    carve_value_id ins[2] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, d2, 1, -1, 1)),
                             tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, d2 + 1, 2, -1, 1))};
    const char *outs[3] = {"y", "", "inv"};
    carve_node_id n = carve_graph_add_node(t.m, 0, "LayerNormalization", "", "n", 2, ins, 3, outs);
    carve_graph_add_output(t.m, 0, carve_node_output(t.m, n, 0));
    carve_graph_add_output(t.m, 0, carve_node_output(t.m, n, 2));
    ot_check_decomposition(t.m, n, t.run_in, 1e-4, 1e-4);
    tb_free(&t);

    /* unknown rank: refused with a reason, the node left in place */
    tb_init(&t, 17);
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, -1, NULL);
    ins[1] = tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, d2 + 1, 2, -1, 1));
    n = tb_node(&t, "LayerNormalization", 2, ins, 1);
    size_t before = carve_graph_node_count(t.m, 0);
    OT_CHECK(cv_decompose_node(t.m, n) == CARVE_ERR_UNSUPPORTED &&
                 errmsg_has(&t, "node 'n' (LayerNormalization): cannot decompose: input 0 'X' has unknown rank") &&
                 carve_graph_node_count(t.m, 0) == before && carve_model_verify(t.m) == CARVE_OK,
             "LayerNormalization of unknown rank: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ GroupNormalization */

static void ref_groupnorm(const cv_val *x, const cv_val *s, const cv_val *b, int64_t G, bool per_channel, double eps,
                          double *y)
{
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], S = x->nelem / (N * C), cg = C / (size_t)G;
    for (size_t n = 0; n < N; n++)
        for (size_t g = 0; g < (size_t)G; g++) {
            size_t base = (n * C + g * cg) * S, cnt = cg * S;
            double mu = 0, var = 0;
            for (size_t i = 0; i < cnt; i++)
                mu += cv_val_get_f64(x, base + i);
            mu /= (double)cnt;
            for (size_t i = 0; i < cnt; i++)
                var += (cv_val_get_f64(x, base + i) - mu) * (cv_val_get_f64(x, base + i) - mu);
            var /= (double)cnt;
            for (size_t i = 0; i < cnt; i++) {
                size_t c = g * cg + i / S, p = per_channel ? c : g;
                y[base + i] = (cv_val_get_f64(x, base + i) - mu) / sqrt(var + eps) * cv_val_get_f64(s, p) +
                              cv_val_get_f64(b, p);
            }
        }
}

static void check_groupnorm(int64_t opset, carve_dtype dt, int rank, const int64_t *dims, int64_t G, bool decomp,
                            const char *sym)
{
    tb t;
    tb_init(&t, opset);
    bool per_channel = opset >= 21;
    int64_t np = per_channel ? dims[1] : G;
    cv_val *x = ot_random(dt, rank, dims, (uint32_t)(G * 3 + rank), -2, 3);
    cv_val *s = ot_random(dt, 1, &np, 11, 0.5, 1.5), *b = ot_random(dt, 1, &np, 12, -1, 1);
    carve_value_id ins[3] = {tb_in_sym(&t, "x", x, sym), tb_in(&t, "scale", s), tb_in(&t, "bias", b)};
    carve_node_id n = tb_node(&t, "GroupNormalization", 3, ins, 1);
    carve_node_set_attr_int(t.m, n, "num_groups", G);
    carve_node_set_attr_float(t.m, n, "epsilon", 1e-3f);
    if (decomp) {
        ot_check_decomposition(t.m, n, t.run_in, tol_of(dt), tol_of(dt));
        tb_free(&t);
        return;
    }
    cv_val *y[1];
    carve_status st = tb_run(&t, y);
    OT_CHECK(st == CARVE_OK, "GroupNormalization: %s", carve_errmsg(t.ctx));
    if (!st) {
        double *w = malloc(x->nelem * sizeof *w);
        ref_groupnorm(x, s, b, G, per_channel, 1e-3f, w);
        char why[200];
        OT_CHECK(y[0]->dtype == dt && close_to(y[0], w, x->nelem, tol_of(dt), why, sizeof why),
                 "GroupNormalization opset %lld %s rank %d groups %lld: %s", (long long)opset, carve_dtype_name(dt), rank,
                 (long long)G, why);
        free(w);
    }
    cv_val_unref(y[0]);
    tb_free(&t);
}

static void test_groupnorm(void)
{
    static const int64_t d2[2] = {3, 6}, d3[3] = {2, 6, 5}, d4[4] = {2, 4, 3, 5};
    carve_dtype dts[3] = {CARVE_FLOAT, CARVE_FLOAT16, CARVE_DOUBLE};
    for (int64_t opset = 18; opset <= 21; opset += 3)
        for (int d = 0; d < 3; d++) {
            check_groupnorm(opset, dts[d], 2, d2, 3, false, NULL);
            check_groupnorm(opset, dts[d], 3, d3, 2, false, NULL);
            check_groupnorm(opset, dts[d], 3, d3, 6, false, NULL);
            check_groupnorm(opset, dts[d], 4, d4, 1, false, NULL);
            check_groupnorm(opset, dts[d], 4, d4, 4, false, NULL);
        }
    /* decompositions: per group (18), per channel in stash_type (21) */
    for (int64_t opset = 18; opset <= 21; opset += 3)
        for (int d = 0; d < 2; d++) {
            check_groupnorm(opset, dts[d], 2, d2, 3, true, NULL);
            check_groupnorm(opset, dts[d], 3, d3, 2, true, NULL);
            check_groupnorm(opset, dts[d], 4, d4, 2, true, NULL);
            check_groupnorm(opset, dts[d], 4, d4, 4, true, "batch");
        }
    /* errors: groups that do not divide C; a per-channel scale at 18 */
    tb t;
    tb_init(&t, 18);
    int64_t two = 2, four = 4;
    carve_value_id ins[3] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 4, d4, 1, 0, 1)),
                             tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, &four, 1, 0, 1)),
                             tb_in(&t, "b", ot_random(CARVE_FLOAT, 1, &four, 1, 0, 1))};
    carve_node_id n = tb_node(&t, "GroupNormalization", 3, ins, 1);
    carve_node_set_attr_int(t.m, n, "num_groups", 2);
    cv_val *y[1];
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID &&
                 errmsg_has(&t, "input 1 'scale' has 4 values, expected 2 (one per group before opset 21)"),
             "GroupNormalization-18 per-channel scale: %s", carve_errmsg(t.ctx));
    carve_node_set_attr_int(t.m, n, "num_groups", 3);
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "'num_groups' is 3; it must divide the 4 channels"),
             "GroupNormalization bad groups: %s", carve_errmsg(t.ctx));
    tb_free(&t);
    tb_init(&t, 21);
    ins[0] = tb_in(&t, "x", ot_random(CARVE_FLOAT, 4, d4, 1, 0, 1));
    ins[1] = tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, &two, 1, 0, 1));
    ins[2] = tb_in(&t, "b", ot_random(CARVE_FLOAT, 1, &two, 1, 0, 1));
    n = tb_node(&t, "GroupNormalization", 3, ins, 1);
    carve_node_set_attr_int(t.m, n, "num_groups", 2);
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "input 1 'scale' has 2 values, expected 4 (one per channel)"),
             "GroupNormalization-21 per-group scale: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ BatchNormalization */

static void check_batchnorm_decomp(int64_t opset, carve_dtype dt, carve_dtype pt, int rank, const int64_t *dims,
                                   bool spatial)
{
    tb t;
    tb_init(&t, opset);
    int64_t pd[CARVE_MAX_RANK];
    int prank = 1;
    pd[0] = rank > 1 ? dims[1] : 1;
    if (!spatial) {
        prank = rank - 1;
        memcpy(pd, dims + 1, (size_t)prank * sizeof *pd);
    }
    carve_value_id ins[5] = {tb_in(&t, "x", ot_random(dt, rank, dims, (uint32_t)rank, -2, 2)),
                             tb_in(&t, "scale", ot_random(pt, prank, pd, 2, 0.5, 1.5)),
                             tb_in(&t, "B", ot_random(pt, prank, pd, 3, -1, 1)),
                             tb_in(&t, "mean", ot_random(pt, prank, pd, 4, -1, 1)),
                             tb_in(&t, "var", ot_random(pt, prank, pd, 5, 0.1, 2))};
    carve_node_id n = tb_node(&t, "BatchNormalization", 5, ins, 1);
    if (opset < 9)
        carve_node_set_attr_int(t.m, n, "spatial", spatial);
    if (opset < 7)
        carve_node_set_attr_int(t.m, n, "is_test", 1);
    carve_node_set_attr_float(t.m, n, "epsilon", 1e-3f);
    ot_check_decomposition(t.m, n, t.run_in, tol_of(dt), tol_of(dt));
    tb_free(&t);
}

static void test_batchnorm(void)
{
    static const int64_t d1[1] = {5}, d2[2] = {4, 3}, d3[3] = {2, 3, 5}, d4[4] = {2, 3, 4, 5}, d5[5] = {1, 2, 3, 2, 2};
    for (int f = 0; f < 2; f++) {
        carve_dtype dt = f ? CARVE_FLOAT16 : CARVE_FLOAT;
        check_batchnorm_decomp(15, dt, dt, 4, d4, true);
        check_batchnorm_decomp(15, dt, dt, 2, d2, true);
        check_batchnorm_decomp(15, dt, dt, 5, d5, true);
        check_batchnorm_decomp(14, dt, dt, 3, d3, true);
        check_batchnorm_decomp(9, dt, dt, 1, d1, true);
        check_batchnorm_decomp(7, dt, dt, 4, d4, false);
        check_batchnorm_decomp(6, dt, dt, 3, d3, true);
    }
    check_batchnorm_decomp(15, CARVE_FLOAT16, CARVE_FLOAT, 4, d4, true);
    check_batchnorm_decomp(15, CARVE_DOUBLE, CARVE_DOUBLE, 3, d3, true);

    /* training mode: batch statistics, running stats updated with momentum */
    tb t;
    tb_init(&t, 15);
    cv_val *x = ot_random(CARVE_FLOAT, 3, d3, 9, -2, 3);
    int64_t c = 3;
    cv_val *p[4] = {ot_random(CARVE_FLOAT, 1, &c, 1, 0.5, 1.5), ot_random(CARVE_FLOAT, 1, &c, 2, -1, 1),
                    ot_random(CARVE_FLOAT, 1, &c, 3, -1, 1), ot_random(CARVE_FLOAT, 1, &c, 4, 0.5, 1)};
    carve_value_id ins[5] = {tb_in(&t, "x", x), tb_in(&t, "s", p[0]), tb_in(&t, "b", p[1]), tb_in(&t, "m", p[2]),
                             tb_in(&t, "v", p[3])};
    carve_node_id n = tb_node(&t, "BatchNormalization", 5, ins, 3);
    carve_node_set_attr_int(t.m, n, "training_mode", 1);
    carve_node_set_attr_float(t.m, n, "momentum", 0.8f);
    cv_val *y[3];
    carve_status st = tb_run(&t, y);
    OT_CHECK(st == CARVE_OK, "BatchNormalization training: %s", carve_errmsg(t.ctx));
    for (size_t ch = 0; !st && ch < 3; ch++) {
        double mu = 0, var = 0;
        for (size_t nn = 0; nn < 2; nn++)
            for (size_t s = 0; s < 5; s++)
                mu += cv_val_get_f64(x, (nn * 3 + ch) * 5 + s);
        mu /= 10;
        for (size_t nn = 0; nn < 2; nn++)
            for (size_t s = 0; s < 5; s++)
                var += pow(cv_val_get_f64(x, (nn * 3 + ch) * 5 + s) - mu, 2);
        var /= 10;
        double rm = cv_val_get_f64(p[2], ch) * 0.8f + mu * (1 - 0.8f), rv = cv_val_get_f64(p[3], ch) * 0.8f + var * (1 - 0.8f);
        OT_CHECK(fabs(cv_val_get_f64(y[1], ch) - rm) < 1e-5 && fabs(cv_val_get_f64(y[2], ch) - rv) < 1e-5,
                 "BatchNormalization running stats channel %zu", ch);
        double yv = (cv_val_get_f64(x, ch * 5) - mu) / sqrt(var + 1e-5f) * cv_val_get_f64(p[0], ch) + cv_val_get_f64(p[1], ch);
        OT_CHECK(fabs(cv_val_get_f64(y[0], ch * 5) - yv) < 1e-4, "BatchNormalization training Y channel %zu", ch);
    }
    for (int i = 0; i < 3; i++)
        cv_val_unref(y[i]);
    /* ...and its decomposition (the core CPU profile has no BatchNormalization)
     * gives the same three outputs */
    ot_check_decomposition(t.m, n, t.run_in, 1e-5, 1e-5);
    tb_free(&t);
    /* rank 4 and rank 2, float64 */
    for (int r = 2; r <= 4; r += 2) {
        static const int64_t r2[2] = {4, 3}, dd4[4] = {2, 3, 2, 2};
        tb_init(&t, 14);
        carve_value_id in5[5] = {tb_in(&t, "x", ot_random(CARVE_DOUBLE, r, r == 2 ? r2 : dd4, 11, -2, 3))};
        for (int i = 1; i < 5; i++) {
            char nm[8];
            snprintf(nm, sizeof nm, "p%d", i);
            in5[i] = tb_in(&t, nm, ot_random(CARVE_DOUBLE, 1, &c, (uint32_t)(20 + i), 0.5, 1.5));
        }
        n = tb_node(&t, "BatchNormalization", 5, in5, 3);
        carve_node_set_attr_int(t.m, n, "training_mode", 1);
        ot_check_decomposition(t.m, n, t.run_in, 1e-9, 1e-9);
        tb_free(&t);
    }
    /* float16 training is not decomposed: refused naming the node */
    tb_init(&t, 15);
    carve_value_id h5[5] = {tb_in(&t, "x", ot_random(CARVE_FLOAT16, 3, d3, 9, -2, 3))};
    for (int i = 1; i < 5; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "p%d", i);
        h5[i] = tb_in(&t, nm, ot_random(CARVE_FLOAT16, 1, &c, (uint32_t)(30 + i), 0.5, 1.5));
    }
    n = tb_node(&t, "BatchNormalization", 5, h5, 3);
    carve_node_set_attr_int(t.m, n, "training_mode", 1);
    cv_infer_model(t.m, NULL);
    OT_CHECK(cv_decompose_node(t.m, n) == CARVE_ERR_UNSUPPORTED &&
                 errmsg_has(&t, "node 'n' (BatchNormalization): cannot decompose: training_mode=1 on input 0 'X' of "
                                "type float16"),
             "BatchNormalization float16 training refuses to decompose: %s", carve_errmsg(t.ctx));
    tb_free(&t);

    /* a parameter of the wrong size */
    tb_init(&t, 15);
    int64_t four = 4;
    ins[0] = tb_in(&t, "x", ot_random(CARVE_FLOAT, 3, d3, 9, -2, 3));
    ins[1] = tb_in(&t, "s", ot_random(CARVE_FLOAT, 1, &c, 1, 0.5, 1.5));
    ins[2] = tb_in(&t, "b", ot_random(CARVE_FLOAT, 1, &c, 1, 0.5, 1.5));
    ins[3] = tb_in(&t, "m", ot_random(CARVE_FLOAT, 1, &four, 1, 0.5, 1.5));
    ins[4] = tb_in(&t, "v", ot_random(CARVE_FLOAT, 1, &c, 1, 0.5, 1.5));
    tb_node(&t, "BatchNormalization", 5, ins, 1);
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "input 3 'input_mean' has 4 values, expected 3"),
             "BatchNormalization bad mean: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ InstanceNormalization, MVN */

static void test_instancenorm(void)
{
    static const int64_t d3[3] = {2, 3, 7}, d4[4] = {2, 3, 4, 5}, d5[5] = {1, 2, 3, 2, 4};
    const int64_t *shapes[3] = {d3, d4, d5};
    for (int f = 0; f < 2; f++)
        for (int r = 0; r < 3; r++) {
            carve_dtype dt = f ? CARVE_FLOAT16 : CARVE_FLOAT;
            tb t;
            tb_init(&t, 6);
            int64_t c = shapes[r][1];
            carve_value_id ins[3] = {tb_in(&t, "x", ot_random(dt, r + 3, shapes[r], (uint32_t)r, -2, 2)),
                                     tb_in(&t, "s", ot_random(dt, 1, &c, 2, 0.5, 1.5)),
                                     tb_in(&t, "b", ot_random(dt, 1, &c, 3, -1, 1))};
            carve_node_id n = tb_node(&t, "InstanceNormalization", 3, ins, 1);
            carve_node_set_attr_float(t.m, n, "epsilon", 1e-2f);
            ot_check_decomposition(t.m, n, t.run_in, tol_of(dt), tol_of(dt));
            tb_free(&t);
        }
}

static void test_mvn(void)
{
    static const int64_t d3[3] = {3, 4, 5}, d4[4] = {2, 3, 4, 5};
    static const int64_t a0[1] = {1}, a1[2] = {0, -1}, a2[3] = {1, 2, 3};
    for (int f = 0; f < 2; f++) {
        carve_dtype dt = f ? CARVE_FLOAT16 : CARVE_FLOAT;
        for (int c = 0; c < 4; c++) {
            tb t;
            tb_init(&t, c == 3 ? 9 : 13);
            bool r3 = c == 0 || c == 1;
            cv_val *x = ot_random(dt, r3 ? 3 : 4, r3 ? d3 : d4, (uint32_t)c, -2, 3);
            carve_value_id in = tb_in(&t, "x", x);
            carve_node_id n = tb_node(&t, "MeanVarianceNormalization", 1, &in, 1);
            if (c == 0)
                carve_node_set_attr_ints(t.m, n, "axes", 1, a0);
            else if (c == 1)
                carve_node_set_attr_ints(t.m, n, "axes", 2, a1);
            else if (c == 2)
                carve_node_set_attr_ints(t.m, n, "axes", 3, a2);
            ot_check_decomposition(t.m, n, t.run_in, tol_of(dt), tol_of(dt));
            tb_free(&t);
        }
    }
    /* the default axes need rank 4 */
    tb t;
    tb_init(&t, 13);
    carve_value_id in = tb_in(&t, "x", ot_random(CARVE_FLOAT, 3, d3, 1, 0, 1));
    tb_node(&t, "MeanVarianceNormalization", 1, &in, 1);
    cv_val *y[1];
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "'axes' value 3 is out of range for input rank 3"),
             "MVN default axes on rank 3: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

static void test_lrn(void)
{
    int64_t dims[4] = {1, 5, 2, 3};
    for (int64_t size = 1; size <= 4; size++) {
        tb t;
        tb_init(&t, 13);
        cv_val *x = ot_random(CARVE_FLOAT, 4, dims, (uint32_t)size, -3, 3);
        carve_value_id in = tb_in(&t, "x", x);
        carve_node_id n = tb_node(&t, "LRN", 1, &in, 1);
        carve_node_set_attr_int(t.m, n, "size", size);
        carve_node_set_attr_float(t.m, n, "alpha", 0.5f);
        cv_val *y[1];
        carve_status st = tb_run(&t, y);
        OT_CHECK(st == CARVE_OK, "LRN: %s", carve_errmsg(t.ctx));
        double w[30];
        for (int c = 0; c < 5 && !st; c++)
            for (int s = 0; s < 6; s++) {
                double sq = 0;
                for (int i = 0; i < 5; i++)
                    if (i >= c - (size - 1) / 2 && i <= c + size / 2)
                        sq += pow(cv_val_get_f64(x, (size_t)(i * 6 + s)), 2);
                w[c * 6 + s] = cv_val_get_f64(x, (size_t)(c * 6 + s)) / pow(1 + 0.5f / size * sq, 0.75f);
            }
        char why[200];
        OT_CHECK(!st && close_to(y[0], w, 30, 1e-5, why, sizeof why), "LRN size %lld: %s", (long long)size, why);
        cv_val_unref(y[0]);
        tb_free(&t);
    }
}

int main(void)
{
    test_layernorm();
    test_layernorm_infer();
    test_layernorm_decomp();
    test_groupnorm();
    test_batchnorm();
    test_instancenorm();
    test_mvn();
    test_lrn();
    return ot_finish();
}

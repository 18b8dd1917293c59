/* test_htp_rules.c: the htp profile's op rules (targets/htp.json, sources in
 * docs/htp_sources.md), each in both directions on hand-built graphs: a
 * model the rule accepts is delegated, one it refuses sends the node to CPU
 * with the reason code and a message naming the attribute or input. Every
 * model is lowered, run before and after (the target's simulator) and must
 * give the same outputs. */
#include "lowertest.h"

#include <math.h>

static carve_ctx *ctx;
static carve_target *custom; /* a profile of the test's own, when set */

/* Random inputs for m's graph inputs (float in [-2, 2), ints in [0, 4)). */
static void make_inputs(carve_model *m, cv_val **in)
{
    for (size_t i = 0; i < carve_graph_input_count(m, 0); i++) {
        const cv_type *t = &m->values[carve_graph_input(m, 0, i)].type;
        int64_t dims[CARVE_MAX_RANK];
        for (int d = 0; d < t->rank; d++)
            dims[d] = t->dims[d].value;
        in[i] = cv_dtype_is_float(t->dtype) ? ot_random(t->dtype, t->rank, dims, 11 + (uint32_t)i, -2, 2)
                                            : ot_random(t->dtype, t->rank, dims, 11 + (uint32_t)i, 0, 4);
    }
}

/* Lowers m for htp (or `custom`), checks equal outputs, returns the report. */
static cJSON *lower(carve_model *m, const carve_lower_opts *o, double tol)
{
    cv_val *in[8] = {0};
    make_inputs(m, in);
    cJSON *r = NULL;
    lt_target_override = custom;
    lt_result res = lt_lower_run(m, "htp", o, in, tol, tol, &r);
    lt_target_override = NULL;
    OT_CHECK(res == LT_EQUAL, "lowered model gives the original's outputs (%d): %s", res, carve_errmsg(ctx));
    for (int i = 0; i < 8; i++)
        cv_val_unref(in[i]);
    return r;
}

/* Node `node` of m: refused with `code` and a message holding `text`
 * (code NULL: delegated). Frees m. */
static void expect(carve_model *m, const char *what, const char *node, const char *code, const char *text)
{
    cJSON *r = lower(m, NULL, 1e-5);
    char pb[16];
    if (!r) {
        OT_CHECK(false, "%s: lowered", what);
    } else if (!code) {
        const char *p = lt_place(r, node, pb);
        OT_CHECK(strcmp(p, "cpu") && strcmp(p, "absent"), "%s: %s delegated, got %s (%s: %s)", what, node, p,
                 lt_reason(r, node), lt_message(r, node));
    } else {
        const char *p = lt_place(r, node, pb); /* a kept-whole op on CPU is decomposed */
        OT_CHECK((!strcmp(p, "cpu") || !strcmp(p, "decomposed")) && !strcmp(lt_reason(r, node), code),
                 "%s: %s on CPU with %s, got %s %s (%s)", what, node, code, lt_place(r, node, pb), lt_reason(r, node),
                 lt_message(r, node));
        OT_CHECK(strstr(lt_message(r, node), text) != NULL, "%s: the message names '%s': %s", what, text,
                 lt_message(r, node));
    }
    cJSON_Delete(r);
    carve_model_free(m);
}

static carve_value_id in4(carve_model *m, const char *name, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t dims[4] = {a, b, c, d};
    return lt_input(m, name, 4, dims);
}

static carve_value_id ints(carve_model *m, const char *name, size_t n, const int64_t *v)
{
    int64_t d = (int64_t)n;
    return carve_graph_add_initializer(m, 0, name, CARVE_INT64, 1, &d, v, n * sizeof *v);
}

static carve_value_id floats(carve_model *m, const char *name, size_t n, const float *v)
{
    int64_t d = (int64_t)n;
    return carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, 1, &d, v, n * sizeof *v);
}

/* A one-node model on x [2, 3, 4, 5] (opset 21): node "n" of op, output y. */
static carve_model *unary(const char *op, carve_node_id *n)
{
    carve_model *m = lt_model(ctx, 21);
    carve_value_id x = in4(m, "x", 2, 3, 4, 5);
    carve_value_id y = lt_op(m, op, "n", 1, &x, "y");
    carve_graph_add_output(m, 0, y);
    *n = carve_model_find_node(m, "n");
    return m;
}

static void variadic(void)
{
    const char *ops[] = {"Sum", "Max", "Min"};
    for (int o = 0; o < 3; o++)
        for (int k = 2; k <= 3; k++) {
            carve_model *m = lt_model(ctx, 21);
            carve_value_id xs[3] = {in4(m, "a", 1, 2, 3, 4), in4(m, "b", 1, 2, 3, 4), in4(m, "c", 1, 2, 3, 4)};
            carve_graph_add_output(m, 0, lt_op(m, ops[o], "n", (size_t)k, xs, "y"));
            expect(m, ops[o], "n", k == 2 ? NULL : "input_count", "at most 2 inputs");
        }
}

static void gemm(void)
{
    for (int c = 0; c < 4; c++) { /* C [N]; [1, N]; alpha 2; C [M, N] */
        carve_model *m = lt_model(ctx, 21);
        int64_t da[2] = {3, 4}, db[2] = {4, 5}, dc1[1] = {5}, dc2[2] = {1, 5}, dc3[2] = {3, 5};
        carve_value_id in[3] = {lt_input(m, "a", 2, da), lt_weight(m, "b", 2, db, 1),
                                c == 1 ? lt_weight(m, "c", 2, dc2, 2) : c == 3 ? lt_weight(m, "c", 2, dc3, 2)
                                                                               : lt_weight(m, "c", 1, dc1, 2)};
        carve_graph_add_output(m, 0, lt_op(m, "Gemm", "n", 3, in, "y"));
        if (c == 2)
            carve_node_set_attr_float(m, carve_model_find_node(m, "n"), "alpha", 2.0f);
        carve_lower_opts o = {.no_fold = true}; /* keep Gemm a Gemm */
        cJSON *r = lower(m, &o, 1e-5);
        char pb[16];
        if (c < 2)
            OT_CHECK(strcmp(lt_place(r, "n", pb), "cpu"), "Gemm C shape %d delegated: %s", c, lt_message(r, "n"));
        else
            OT_CHECK(!strcmp(lt_reason(r, "n"), "attribute") &&
                         strstr(lt_message(r, "n"), c == 2 ? "alpha = 2" : "input 2 'C'"),
                     "Gemm %d refused: %s", c, lt_message(r, "n"));
        cJSON_Delete(r);
        carve_model_free(m);
    }
}

static void pools(void)
{
    for (int k = 0; k < 2; k++) {
        carve_node_id n;
        carve_model *m = unary("AveragePool", &n);
        int64_t ks[2] = {2, 2}, dil[2] = {2, 2};
        carve_node_set_attr_ints(m, n, "kernel_shape", 2, ks);
        if (k)
            carve_node_set_attr_ints(m, n, "dilations", 2, dil);
        expect(m, "AveragePool dilations", "n", k ? "attribute" : NULL, "dilations");
    }
    /* 3-D MaxPool: rank 5 */
    carve_model *m = lt_model(ctx, 21);
    int64_t d5[5] = {1, 2, 4, 4, 4}, ks[3] = {2, 2, 2};
    carve_value_id x = lt_input(m, "x", 5, d5);
    carve_graph_add_output(m, 0, lt_op(m, "MaxPool", "n", 1, &x, "y"));
    carve_node_set_attr_ints(m, carve_model_find_node(m, "n"), "kernel_shape", 3, ks);
    expect(m, "3-D MaxPool", "n", "rank", "rank 5");
}

static void attr_rules(void)
{
    struct {
        const char *op, *attr;
        int64_t good, bad;
        const char *text;
    } rows[] = {
        {"ArgMax", "select_last_index", 0, 1, "select_last_index = 1"},
        {"ArgMin", "select_last_index", 0, 1, "select_last_index = 1"},
        {"LpNormalization", "p", 2, 1, "p = 1"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        for (int k = 0; k < 2; k++) {
            carve_node_id n;
            carve_model *m = unary(rows[i].op, &n);
            carve_node_set_attr_int(m, n, rows[i].attr, k ? rows[i].bad : rows[i].good);
            expect(m, rows[i].op, "n", k ? "attribute" : NULL, rows[i].text);
        }
    for (int k = 0; k < 3; k++) { /* CumSum: plain, exclusive, reverse */
        carve_model *m = lt_model(ctx, 21);
        int64_t ax = 1;
        carve_value_id in[2] = {in4(m, "x", 1, 2, 3, 4),
                                carve_graph_add_initializer(m, 0, "axis", CARVE_INT64, 0, NULL, &ax, sizeof ax)};
        carve_graph_add_output(m, 0, lt_op(m, "CumSum", "n", 2, in, "y"));
        if (k)
            carve_node_set_attr_int(m, carve_model_find_node(m, "n"), k == 1 ? "exclusive" : "reverse", 1);
        expect(m, "CumSum", "n", k ? "attribute" : NULL, k == 1 ? "exclusive = 1" : "reverse = 1");
    }
    /* ArgMax on rank 5 */
    carve_model *m = lt_model(ctx, 21);
    int64_t d5[5] = {1, 2, 2, 3, 4};
    carve_value_id x = lt_input(m, "x", 5, d5);
    carve_graph_add_output(m, 0, lt_op(m, "ArgMax", "n", 1, &x, "y"));
    expect(m, "ArgMax rank 5", "n", "rank", "rank 5");
    /* Mod: integer with fmod 0 only */
    for (int k = 0; k < 3; k++) {
        m = lt_model(ctx, 21);
        int64_t d[2] = {2, 3};
        carve_dim dd[2] = {{2, NULL}, {3, NULL}};
        carve_value_id a = k == 2 ? lt_input(m, "a", 2, d) : carve_graph_add_input(m, 0, "a", CARVE_INT32, 2, dd);
        int32_t bi[6] = {1, 2, 3, 3, 2, 1};
        float bf[6] = {1, 2, 3, 3, 2, 1};
        carve_value_id b = k == 2 ? carve_graph_add_initializer(m, 0, "b", CARVE_FLOAT, 2, d, bf, sizeof bf)
                                  : carve_graph_add_initializer(m, 0, "b", CARVE_INT32, 2, d, bi, sizeof bi);
        carve_value_id in[2] = {a, b};
        carve_graph_add_output(m, 0, lt_op(m, "Mod", "n", 2, in, "y"));
        carve_node_set_attr_int(m, carve_model_find_node(m, "n"), "fmod", k == 1 || k == 2);
        expect(m, "Mod", "n", k == 0 ? NULL : k == 1 ? "attribute" : "unsupported_dtype",
               k == 1 ? "fmod = 1" : "float32");
    }
}

static void norm_ranks(void)
{
    struct {
        const char *op;
        int rank;
        const char *code;
    } rows[] = {{"InstanceNormalization", 4, NULL}, {"InstanceNormalization", 5, "rank"},
                {"BatchNormalization", 4, NULL},    {"BatchNormalization", 2, "rank"},
                {"LRN", 3, NULL},                   {"LRN", 5, "rank"}};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        carve_model *m = lt_model(ctx, 21);
        int64_t d[5] = {2, 3, 4, 2, 2}, c = 3;
        carve_value_id in[5] = {lt_input(m, "x", rows[i].rank, d)};
        int n_in = 1;
        if (strcmp(rows[i].op, "LRN")) {
            float one[3] = {1, 0.5f, 2}, zero[3] = {0, 0.1f, -0.2f}, var[3] = {1, 2, 0.5f};
            in[1] = floats(m, "s", 3, one), in[2] = floats(m, "b", 3, zero);
            n_in = 3;
            if (!strcmp(rows[i].op, "BatchNormalization"))
                in[3] = floats(m, "mean", 3, zero), in[4] = floats(m, "var", 3, var), n_in = 5;
        }
        (void)c;
        carve_graph_add_output(m, 0, lt_op(m, rows[i].op, "n", (size_t)n_in, in, "y"));
        if (!strcmp(rows[i].op, "LRN"))
            carve_node_set_attr_int(m, carve_model_find_node(m, "n"), "size", 3);
        carve_lower_opts o = {.no_fold = true}; /* a BatchNormalization alone would stay anyway */
        cJSON *r = lower(m, &o, 1e-4);
        char pb[16];
        if (!rows[i].code)
            OT_CHECK(strcmp(lt_place(r, "n", pb), "cpu"), "%s rank %d delegated: %s", rows[i].op, rows[i].rank,
                     lt_message(r, "n"));
        else
            OT_CHECK(!strcmp(lt_reason(r, "n"), "rank") && strstr(lt_message(r, "n"), "rank"), "%s rank %d: %s %s",
                     rows[i].op, rows[i].rank, lt_reason(r, "n"), lt_message(r, "n"));
        cJSON_Delete(r);
        carve_model_free(m);
    }
    for (int g = 3; g <= 4; g++) { /* GroupNormalization: 6 channels in 3 groups; in 4 */
        carve_model *m = lt_model(ctx, 21);
        float s[6] = {1, 1, 2, 2, 0.5f, 1}, b[6] = {0, 1, 0, 1, 0, 1};
        carve_value_id in[3] = {in4(m, "x", 1, 6, 2, 2), floats(m, "s", 6, s), floats(m, "b", 6, b)};
        carve_graph_add_output(m, 0, lt_op(m, "GroupNormalization", "n", 3, in, "y"));
        carve_node_set_attr_int(m, carve_model_find_node(m, "n"), "num_groups", g);
        if (g == 3) {
            expect(m, "GroupNormalization 6/3", "n", NULL, "");
        } else {
            /* 6 % 4: the model itself is invalid for carve's kernel too; capability names it first */
            carve_target *t = NULL;
            carve_target_builtin(ctx, "htp", &t);
            char msg[600];
            cv_infer_model(m, NULL);
            cv_reason why = cv_capable(m, carve_model_find_node(m, "n"), t, NULL, msg, sizeof msg);
            OT_CHECK(why == CV_R_ATTRIBUTE && strstr(msg, "num_groups = 4"), "GroupNormalization 6/4: %s", msg);
            carve_target_free(t);
            carve_model_free(m);
        }
    }
}

static void resize(void)
{
    struct {
        const char *mode, *ctm, *nm;
        float scales[4];
        int antialias;
        const char *code, *text;
    } rows[] = {
        {"linear", "half_pixel", NULL, {1, 1, 2, 2}, 0, NULL, ""},
        {"nearest", "asymmetric", "floor", {1, 1, 2, 2}, 0, NULL, ""},
        {"nearest", "half_pixel", "round_prefer_floor", {1, 1, 2, 2}, 0, NULL, ""},
        {"cubic", "half_pixel", NULL, {1, 1, 2, 2}, 0, "attribute", "mode = 'cubic'"},
        {"linear", "tf_crop_and_resize", NULL, {1, 1, 2, 2}, 0, "attribute", "coordinate_transformation_mode"},
        {"nearest", "half_pixel", "ceil", {1, 1, 2, 2}, 0, "attribute", "nearest_mode = 'ceil'"},
        {"nearest", "pytorch_half_pixel", "floor", {1, 1, 2, 2}, 0, "attribute", "pytorch_half_pixel"},
        {"linear", "half_pixel", NULL, {1, 2, 2, 2}, 0, "attribute", "dim 1 (C)"},
        {"linear", "half_pixel", NULL, {2, 1, 2, 2}, 0, "attribute", "dim 0 (N)"},
        {"linear", "half_pixel", NULL, {1, 1, 2, 2}, 1, "attribute", "antialias = 1"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        carve_model *m = lt_model(ctx, 21);
        carve_value_id in[3] = {in4(m, "x", 1, 2, 3, 4), CARVE_NONE, floats(m, "scales", 4, rows[i].scales)};
        carve_graph_add_output(m, 0, lt_op(m, "Resize", "n", 3, in, "y"));
        carve_node_id n = carve_model_find_node(m, "n");
        carve_node_set_attr_string(m, n, "mode", rows[i].mode);
        carve_node_set_attr_string(m, n, "coordinate_transformation_mode", rows[i].ctm);
        if (rows[i].nm)
            carve_node_set_attr_string(m, n, "nearest_mode", rows[i].nm);
        if (rows[i].antialias)
            carve_node_set_attr_int(m, n, "antialias", 1);
        char what[120];
        snprintf(what, sizeof what, "Resize %s %s %s", rows[i].mode, rows[i].ctm, rows[i].nm ? rows[i].nm : "");
        expect(m, what, "n", rows[i].code, rows[i].text);
    }
}

static void reshape_and_constants(void)
{
    for (int k = 0; k < 2; k++) { /* allowzero with and without a 0 in the shape */
        carve_model *m = lt_model(ctx, 21);
        int64_t s0[3] = {0, 6, 5}, s1[3] = {2, 12, 5};
        int64_t dz[4] = {0, 3, 4, 5};
        carve_value_id in[2] = {k ? lt_input(m, "x", 4, dz) : in4(m, "x", 2, 3, 4, 5), ints(m, "s", 3, k ? s0 : s1)};
        carve_graph_add_output(m, 0, lt_op(m, "Reshape", "n", 2, in, "y"));
        carve_node_set_attr_int(m, carve_model_find_node(m, "n"), "allowzero", 1);
        expect(m, "Reshape allowzero", "n", k ? "attribute" : NULL, "allowzero = 1 with a 0");
    }
    for (int k = 0; k < 2; k++) { /* Clip bounds constant, or computed */
        carve_model *m = lt_model(ctx, 21);
        carve_value_id x = in4(m, "x", 1, 2, 3, 4);
        float lo = -0.5f, hi = 0.5f;
        carve_value_id l = k ? lt_op(m, "ReduceMin", "lo", 1, &x, "lo_v")
                             : carve_graph_add_initializer(m, 0, "lo_v", CARVE_FLOAT, 0, NULL, &lo, sizeof lo);
        if (k)
            carve_node_set_attr_int(m, carve_model_find_node(m, "lo"), "keepdims", 0);
        carve_value_id in[3] = {x, l, carve_graph_add_initializer(m, 0, "hi", CARVE_FLOAT, 0, NULL, &hi, sizeof hi)};
        carve_graph_add_output(m, 0, lt_op(m, "Clip", "n", 3, in, "y"));
        expect(m, "Clip bounds", "n", k ? "not_constant" : NULL, "input 1 'lo_v' of Clip must be a constant");
    }
    /* CumSum's axis computed at run time */
    carve_model *m = lt_model(ctx, 21);
    carve_dim d0[1] = {{1, NULL}};
    carve_value_id ax = carve_graph_add_input(m, 0, "axis", CARVE_INT32, 0, d0);
    carve_value_id in[2] = {in4(m, "x", 1, 2, 3, 4), ax};
    carve_graph_add_output(m, 0, lt_op(m, "CumSum", "n", 2, in, "y"));
    cJSON *r = NULL;
    {
        /* graph inputs in the order they were added: axis, x */
        cv_val *iv[3] = {cv_val_new(CARVE_INT32, 0, NULL), ot_random(CARVE_FLOAT, 4, (int64_t[]){1, 2, 3, 4}, 3, -1, 1)};
        ((int32_t *)iv[0]->data)[0] = 2;
        lt_result res = lt_lower_run(m, "htp", NULL, iv, 1e-6, 1e-6, &r);
        OT_CHECK(res == LT_EQUAL, "CumSum runtime axis lowers (%d)", res);
        OT_CHECK(!strcmp(lt_reason(r, "n"), "not_constant") && strstr(lt_message(r, "n"), "input 1 'axis'"),
                 "CumSum runtime axis: %s %s", lt_reason(r, "n"), lt_message(r, "n"));
        cv_val_unref(iv[0]);
        cv_val_unref(iv[1]);
    }
    cJSON_Delete(r);
    carve_model_free(m);
}

static void unsupported_and_new(void)
{
    const char *gone[] = {"Erf", "ReduceProd"};
    for (int i = 0; i < 2; i++) {
        carve_node_id n;
        carve_model *m = unary(gone[i], &n);
        expect(m, gone[i], "n", "unsupported_op", "htp does not support");
    }
    const char *added[] = {"Asin", "Atan", "Tan", "IsNaN", "ThresholdedRelu", "Softplus", "Selu"};
    for (size_t i = 0; i < sizeof added / sizeof *added; i++) {
        carve_node_id n;
        carve_model *m = unary(added[i], &n);
        expect(m, added[i], "n", NULL, "");
    }
    /* ScatterElements, Xor */
    carve_model *m = lt_model(ctx, 21);
    int64_t di[2] = {1, 2}, idx[2] = {1, 0};
    int64_t dx[2] = {3, 2};
    carve_value_id in[3] = {lt_input(m, "x", 2, dx),
                            carve_graph_add_initializer(m, 0, "i", CARVE_INT64, 2, di, idx, sizeof idx),
                            lt_input(m, "u", 2, di)};
    carve_graph_add_output(m, 0, lt_op(m, "ScatterElements", "n", 3, in, "y"));
    expect(m, "ScatterElements", "n", NULL, "");
    /* Xor (bool), STFT (frame step and length constant) */
    m = lt_model(ctx, 21);
    carve_dim db[2] = {{2, NULL}, {3, NULL}};
    carve_value_id xb[2] = {carve_graph_add_input(m, 0, "a", CARVE_BOOL, 2, db),
                            carve_graph_add_input(m, 0, "b", CARVE_BOOL, 2, db)};
    carve_graph_add_output(m, 0, lt_op(m, "Xor", "n", 2, xb, "y"));
    expect(m, "Xor", "n", NULL, "");
    m = lt_model(ctx, 21);
    int64_t ds[3] = {1, 64, 1}, step = 16, flen = 32;
    carve_value_id st[4] = {lt_input(m, "signal", 3, ds),
                            carve_graph_add_initializer(m, 0, "step", CARVE_INT64, 0, NULL, &step, 8), CARVE_NONE,
                            carve_graph_add_initializer(m, 0, "flen", CARVE_INT64, 0, NULL, &flen, 8)};
    carve_graph_add_output(m, 0, lt_op(m, "STFT", "n", 4, st, "y"));
    expect(m, "STFT", "n", NULL, "");
    /* Tile repeats computed at run time: the output shape depends on them */
    m = lt_model(ctx, 21);
    carve_dim dr[1] = {{4, NULL}};
    carve_value_id tin[2] = {in4(m, "x", 1, 2, 3, 4), carve_graph_add_input(m, 0, "reps", CARVE_INT64, 1, dr)};
    carve_graph_add_output(m, 0, lt_op(m, "Tile", "n", 2, tin, "y"));
    {
        cv_val *iv[2] = {ot_random(CARVE_FLOAT, 4, (int64_t[]){1, 2, 3, 4}, 5, -1, 1),
                         cv_val_new(CARVE_INT64, 1, (int64_t[]){4})};
        for (int i = 0; i < 4; i++)
            ((int64_t *)iv[1]->data)[i] = 1 + (i == 2);
        cJSON *r = NULL;
        OT_CHECK(lt_lower_run(m, "htp", NULL, iv, 1e-6, 1e-6, &r) == LT_EQUAL, "Tile runtime repeats lowers");
        OT_CHECK(!strcmp(lt_reason(r, "n"), "data_dependent_shape") && strstr(lt_message(r, "n"), "input 1 'reps'"),
                 "Tile runtime repeats: %s %s", lt_reason(r, "n"), lt_message(r, "n"));
        cJSON_Delete(r);
        cv_val_unref(iv[0]);
        cv_val_unref(iv[1]);
    }
    carve_model_free(m);
    /* Einsum: MatMul-like accepted, others refused */
    const char *eqs[] = {"bij,bjk->bik", "ij,kj->ik", "ij,jk->ki", "bij,bjk->bk"};
    for (int e = 0; e < 4; e++) {
        m = lt_model(ctx, 21);
        int64_t da3[3] = {2, 3, 4}, db3[3] = {2, 4, 5}, da2[2] = {3, 4}, db2[2] = {5, 4}, dj[2] = {4, 5};
        bool batched = e == 0 || e == 3;
        carve_value_id ab[2] = {batched ? lt_input(m, "a", 3, da3) : lt_input(m, "a", 2, da2),
                                batched ? lt_input(m, "b", 3, db3) : lt_input(m, "b", 2, e == 1 ? db2 : dj)};
        carve_graph_add_output(m, 0, lt_op(m, "Einsum", "n", 2, ab, "y"));
        carve_node_set_attr_string(m, carve_model_find_node(m, "n"), "equation", eqs[e]);
        expect(m, eqs[e], "n", e < 2 ? NULL : "attribute", "not a MatMul-like equation");
    }
    /* ReduceL2 in float; quantized (in a QDQ unit) refused */
    carve_node_id n;
    m = unary("ReduceL2", &n);
    expect(m, "ReduceL2 float", "n", NULL, "");
    m = lt_model(ctx, 21);
    carve_value_id x = in4(m, "x", 1, 2, 3, 4);
    float sc = 0.02f;
    uint8_t zp = 128;
    carve_value_id s = carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &sc, sizeof sc);
    carve_value_id z = carve_graph_add_initializer(m, 0, "z", CARVE_UINT8, 0, NULL, &zp, 1);
    carve_value_id q1[3] = {x, s, z};
    carve_value_id xq = lt_op(m, "QuantizeLinear", "q_x", 3, q1, "xq");
    carve_value_id d1[3] = {xq, s, z};
    carve_value_id xd = lt_op(m, "DequantizeLinear", "dq_x", 3, d1, "xd");
    carve_value_id red = lt_op(m, "ReduceL2", "n", 1, &xd, "r");
    carve_value_id q2[3] = {red, s, z};
    carve_value_id rq = lt_op(m, "QuantizeLinear", "q_r", 3, q2, "rq");
    carve_value_id d2[3] = {rq, s, z};
    carve_graph_add_output(m, 0, lt_op(m, "DequantizeLinear", "dq_r", 3, d2, "y"));
    expect(m, "ReduceL2 quantized", "n", "quantized", "float only");
}

/* A standalone per-axis DequantizeLinear on a runtime value: refused;
 * per-tensor: accepted. */
static void standalone_qdq(void)
{
    for (int k = 0; k < 2; k++) {
        carve_model *m = lt_model(ctx, 21);
        carve_dim d[4] = {{1, NULL}, {3, NULL}, {2, NULL}, {2, NULL}};
        carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_UINT8, 4, d);
        float sc[3] = {0.1f, 0.2f, 0.3f};
        uint8_t zp[3] = {128, 128, 128};
        int64_t c = k ? 3 : 1;
        carve_value_id in[3] = {x, carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, k ? 1 : 0, &c, sc, 4 * (size_t)c),
                                carve_graph_add_initializer(m, 0, "z", CARVE_UINT8, k ? 1 : 0, &c, zp, (size_t)c)};
        carve_graph_add_output(m, 0, lt_op(m, "DequantizeLinear", "n", 3, in, "y"));
        carve_node_set_attr_int(m, carve_model_find_node(m, "n"), "axis", 1);
        expect(m, k ? "per-axis standalone DQ" : "per-tensor standalone DQ", "n", k ? "attribute" : NULL,
               "per-axis scale");
    }
}

/* DQ(uint16) -> op -> Q(uint16 scale, zp) -> DQ: op's output encoding. */
static carve_model *q16(const char *op, float scale, uint16_t zp)
{
    carve_model *m = lt_model(ctx, 21);
    carve_dim d[2] = {{4, NULL}, {8, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_UINT16, 2, d);
    float si = 0.001f, so = scale;
    uint16_t zi = 1000, zo = zp;
    carve_value_id s1 = carve_graph_add_initializer(m, 0, "si", CARVE_FLOAT, 0, NULL, &si, 4);
    carve_value_id z1 = carve_graph_add_initializer(m, 0, "zi", CARVE_UINT16, 0, NULL, &zi, 2);
    carve_value_id s2 = carve_graph_add_initializer(m, 0, "so", CARVE_FLOAT, 0, NULL, &so, 4);
    carve_value_id z2 = carve_graph_add_initializer(m, 0, "zo", CARVE_UINT16, 0, NULL, &zo, 2);
    carve_value_id a[3] = {x, s1, z1};
    carve_value_id xd = lt_op(m, "DequantizeLinear", "dq_x", 3, a, "xd");
    carve_value_id y = lt_op(m, op, "n", 1, &xd, "yf");
    carve_value_id b[3] = {y, s2, z2};
    carve_value_id yq = lt_op(m, "QuantizeLinear", "q_y", 3, b, "yq");
    carve_value_id c[3] = {yq, s2, z2};
    carve_graph_add_output(m, 0, lt_op(m, "DequantizeLinear", "dq_y", 3, c, "y"));
    return m;
}

static void fixed_encodings(void)
{
    /* HTP's own encodings: delegated */
    expect(q16("Sigmoid", 1.0f / 65536, 0), "uint16 Sigmoid at 1/65536, 0", "n", NULL, "");
    expect(q16("Tanh", 1.0f / 32768, 32768), "uint16 Tanh at 1/32768, 32768", "n", NULL, "");
    /* others: refused, naming the encodings */
    expect(q16("Sigmoid", 1.0f / 50000, 0), "uint16 Sigmoid at 1/50000", "n", "fixed_encoding",
           "scale 1.52588e-05, zero point 0");
    expect(q16("Tanh", 1.0f / 30000, 30000), "uint16 Tanh at 1/30000, 30000", "n", "fixed_encoding",
           "zero point 32768");
    /* legalize.requantize_fixed_16bit: delegated, the body computes at the
     * fixed encoding and requantizes (outputs within one output step) */
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    t->lg_requant16 = true;
    custom = t;
    for (int k = 0; k < 2; k++) {
        carve_model *m = k ? q16("Tanh", 1.0f / 30000, 30000) : q16("Sigmoid", 1.0f / 50000, 0);
        carve_model *low = NULL;
        lt_keep_lowered = &low;
        cJSON *r = lower(m, NULL, 3e-5);
        lt_keep_lowered = NULL;
        char pb[16];
        OT_CHECK(r && strcmp(lt_place(r, "n", pb), "cpu"), "requantized %s delegated: %s", k ? "Tanh" : "Sigmoid",
                 r ? lt_message(r, "n") : "");
        OT_CHECK(low && carve_model_find_node(low, "n/fixed_quantize") != CARVE_NONE &&
                     carve_model_find_node(low, "n/fixed_dequantize") != CARVE_NONE,
                 "the body requantizes from the fixed encoding");
        cJSON_Delete(r);
        carve_model_free(low);
        carve_model_free(m);
    }
    custom = NULL;
    carve_target_free(t);
}

/* Softmax/LogSoftmax over a non-last axis: Transposes in the body. */
static void softmax_axis(void)
{
    const char *ops[] = {"Softmax", "LogSoftmax"};
    for (int o = 0; o < 2; o++)
        for (int axis = 0; axis < 4; axis++) {
            carve_node_id n;
            carve_model *m = unary(ops[o], &n);
            carve_node_set_attr_int(m, n, "axis", axis);
            carve_model *low = NULL;
            lt_keep_lowered = &low;
            cJSON *r = lower(m, NULL, 1e-6);
            lt_keep_lowered = NULL;
            char pb[16];
            OT_CHECK(r && strcmp(lt_place(r, "n", pb), "cpu"), "%s axis %d delegated", ops[o], axis);
            bool wrapped = low && carve_model_find_node(low, "n/transpose_in") != CARVE_NONE;
            OT_CHECK(wrapped == (axis != 3), "%s axis %d: Transposes %s", ops[o], axis, axis != 3 ? "made" : "not made");
            cJSON_Delete(r);
            carve_model_free(low);
            carve_model_free(m);
        }
    /* without the legalization: refused, naming the axis */
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    t->lg_softmax_transpose = false;
    custom = t;
    carve_node_id n;
    carve_model *m = unary("Softmax", &n);
    carve_node_set_attr_int(m, n, "axis", 1);
    expect(m, "Softmax axis 1 without the legalization", "n", "attribute", "only over the last axis (axis = 1");
    custom = NULL;
    carve_target_free(t);
}

/* Old-opset models reach htp through the upgrade: Resize-10 and a
 * Softmax-11 over a middle axis are delegated; with no_upgrade they are not. */
static void upgraded(void)
{
    for (int up = 0; up < 2; up++) {
        carve_model *m = lt_model(ctx, 10);
        float sc[4] = {1, 1, 2, 2};
        carve_value_id in[2] = {in4(m, "x", 1, 2, 3, 4), floats(m, "scales", 4, sc)};
        carve_value_id r = lt_op(m, "Resize", "rs", 2, in, "r");
        carve_graph_add_output(m, 0, lt_op(m, "Softmax", "sm", 1, &r, "y"));
        carve_lower_opts o = {.no_upgrade = !up};
        cJSON *rep = lower(m, &o, 1e-6);
        char pb[16];
        for (int k = 0; k < 2; k++) {
            const char *nn = k ? "sm" : "rs";
            if (up)
                OT_CHECK(strcmp(lt_place(rep, nn, pb), "cpu"), "upgraded: %s delegated: %s", nn, lt_message(rep, nn));
            else
                OT_CHECK(!strcmp(lt_reason(rep, nn), "unsupported_opset"), "no upgrade: %s unsupported_opset, got %s",
                         nn, lt_reason(rep, nn));
        }
        cJSON_Delete(rep);
        carve_model_free(m);
    }
}

/* A value whose rank nothing fixes (Reshape to a shape read at run time,
 * of unknown length) cannot meet a rank limit: gpu (rank at most 4) refuses
 * the Relu on it with "rank", naming the unknown rank; the Abs on the
 * known-rank input stays delegated. Lowered only: the shape has no value. */
static void unknown_rank(void)
{
    carve_model *m = lt_model(ctx, 21);
    carve_value_id x = in4(m, "x", 2, 3, 4, 5);
    carve_dim nd = {-1, "n"};
    carve_value_id sh = carve_graph_add_input(m, 0, "s", CARVE_INT64, 1, &nd);
    carve_value_id in[2] = {x, sh};
    carve_value_id r = lt_op(m, "Reshape", "rs", 2, in, "r");
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &r, "y"));
    carve_graph_add_output(m, 0, lt_op(m, "Abs", "abs", 1, &x, "z"));
    carve_target *gpu = NULL;
    OT_CHECK(carve_target_builtin(ctx, "gpu", &gpu) == CARVE_OK, "gpu profile: %s", carve_errmsg(ctx));
    carve_report *rep = NULL;
    OT_CHECK(carve_lower(m, gpu, NULL, &rep) == CARVE_OK, "lowered for gpu: %s", carve_errmsg(ctx));
    cJSON *r_js = rep ? cJSON_Parse(carve_report_json(rep)) : NULL;
    char pb[16];
    OT_CHECK(r_js && !strcmp(lt_reason(r_js, "relu"), "rank") && strstr(lt_message(r_js, "relu"), "unknown rank") &&
                 strstr(lt_message(r_js, "relu"), "at most 4"),
             "the Relu on an unknown rank: rank, 'unknown rank ... at most 4', got %s (%s)",
             r_js ? lt_reason(r_js, "relu") : "-", r_js ? lt_message(r_js, "relu") : "-");
    OT_CHECK(r_js && strcmp(lt_place(r_js, "abs", pb), "cpu"), "the Abs on a known rank is delegated, got %s",
             r_js ? lt_place(r_js, "abs", pb) : "-");
    cJSON_Delete(r_js);
    carve_report_free(rep);
    carve_target_free(gpu);
    carve_model_free(m);
}

/* A profile naming an unknown check, or a bad const_inputs: an error naming
 * the field. */
static void bad_profiles(void)
{
    const char *bad[] = {
        "{\"schema_version\":1,\"name\":\"t\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{\"checks\":[\"nope\"]}}}",
        "{\"schema_version\":1,\"name\":\"t\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{\"const_inputs\":[40]}}}",
        "{\"schema_version\":1,\"name\":\"t\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{\"min_rank\":\"x\"}}}",
    };
    const char *want[] = {"ops.Relu.checks[0]: 'nope' is not a check", "ops.Relu.const_inputs[0]",
                          "ops.Relu.min_rank"};
    for (int i = 0; i < 3; i++) {
        carve_target *t = NULL;
        carve_status s = cv_target_parse(ctx, bad[i], strlen(bad[i]), "'test'", &t);
        OT_CHECK(s == CARVE_ERR_INVALID && strstr(carve_errmsg(ctx), want[i]), "bad profile %d: %s", i,
                 carve_errmsg(ctx));
        carve_target_free(t);
    }
}

int main(void)
{
    ctx = carve_ctx_new();
    variadic();
    gemm();
    pools();
    attr_rules();
    norm_ranks();
    resize();
    reshape_and_constants();
    unsupported_and_new();
    standalone_qdq();
    fixed_encodings();
    softmax_axis();
    upgraded();
    unknown_rank();
    bad_profiles();
    carve_ctx_free(ctx);
    return ot_finish();
}

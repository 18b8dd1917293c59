/* test_scenarios.c: lowering scenarios, each with its expected placement
 * (docs/ARCHITECTURE.md walks through them). */
#include "lowertest.h"

#include <stdlib.h>

static carve_ctx *ctx;
static char pb[16];
/* Scenarios about constant-only partitions: folding (on by default) would
 * take those constants away first (tests/passes/test_fold_lower.c). */
static const carve_lower_opts no_fold = {.no_fold = true};

static carve_value_id gemm(carve_model *m, const char *name, carve_value_id a, carve_value_id b, carve_value_id c,
                           const char *out)
{
    carve_value_id in[3] = {a, b, c};
    return lt_op(m, "Gemm", name, 3, in, out);
}

/* A kept-whole Gemm on constants only, cut off from the runtime input by a
 * CPU op: its partition reads no runtime value, so HTP refuses it; on CPU
 * the core profile lacks Gemm, so it is decomposed and lowering succeeds.
 * With an independent branch reading the input (with_branch), the Gemm
 * shares that branch's partition and stays whole. */
static void gemm_cut_off(bool with_branch)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {4, 4}, ad[2] = {4, 8}, bd[2] = {8, 4}, cd[1] = {4};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id g = gemm(m, "gemm", lt_weight(m, "A", 2, ad, 1), lt_weight(m, "B", 2, bd, 2),
                            lt_weight(m, "C", 1, cd, 3), "g");
    carve_value_id gc = lt_op(m, "Cosh", "cosh", 1, &g, "gc");       /* htp has no Cosh: CPU */
    carve_value_id xs = lt_op(m, "Sinh", "sinh", 1, &x, "xs");       /* CPU */
    carve_value_id in2[2] = {xs, gc};
    carve_graph_add_output(m, 0, lt_op(m, "Add", "add", 2, in2, "y"));
    if (with_branch)
        carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &x, "r"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 7, -1, 1)};
    cJSON *r = NULL;
    lt_result res = lt_lower_run(m, "htp", &no_fold, inputs, 1e-4, 1e-3, &r);
    OT_CHECK(res == LT_EQUAL, "gemm cut off (branch %d): lowers and matches (%d)", with_branch, res);
    if (r && !with_branch) {
        OT_CHECK(!strcmp(lt_place(r, "gemm", pb), "decomposed"), "cut-off Gemm is decomposed, got %s",
                 lt_place(r, "gemm", pb));
        OT_CHECK(!strcmp(lt_reason(r, "gemm"), "no_runtime_input"), "and why: %s", lt_reason(r, "gemm"));
        const cJSON *pieces = cJSON_GetObjectItem(lt_node(r, "gemm"), "decomposed");
        OT_CHECK(cJSON_GetArraySize(pieces) >= 2, "Gemm has pieces in the report");
        const cJSON *p;
        cJSON_ArrayForEach(p, pieces)
        {
            OT_CHECK(!strncmp(cJSON_GetObjectItem(p, "name")->valuestring, "gemm/", 5), "piece '%s' named from gemm",
                     cJSON_GetObjectItem(p, "name")->valuestring);
            OT_CHECK(cJSON_IsString(cJSON_GetObjectItem(p, "placement")), "pieces of a cut-off Gemm stay on CPU");
        }
        OT_CHECK(!strcmp(lt_place(r, "add", pb), "0"), "the Add reading the CPU op is delegated, got %s",
                 lt_place(r, "add", pb));
        OT_CHECK(!strcmp(lt_reason(r, "cosh"), "unsupported_op"), "Cosh: unsupported_op");
    }
    if (r && with_branch) {
        OT_CHECK(!strcmp(lt_place(r, "gemm", pb), "0") && !strcmp(lt_place(r, "relu", pb), "0"),
                 "Gemm shares the Relu branch's partition and stays whole (gemm %s, relu %s)", lt_place(r, "gemm", pb),
                 lt_place(r, "relu", pb));
    }
    /* gpu accepts partitions without runtime inputs: the Gemm stays whole */
    cJSON *rg = NULL;
    res = lt_lower_run(m, "gpu", &no_fold, inputs, 1e-4, 1e-3, &rg);
    OT_CHECK(res == LT_EQUAL, "gpu: lowers and matches");
    if (rg)
        OT_CHECK(strcmp(lt_place(rg, "gemm", pb), "cpu") && strcmp(lt_place(rg, "gemm", pb), "decomposed"),
                 "gpu delegates the constant-only Gemm whole, got %s", lt_place(rg, "gemm", pb));
    cJSON_Delete(r);
    cJSON_Delete(rg);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* Three unnamed Gemms; the skip list names the second one by the name carve
 * gave it in the input model. The first is decomposed (it works in float64,
 * which htp lacks, and the core CPU has no Gemm); the second is still the
 * one named afterwards, on CPU with its pieces; the third is delegated. */
static void skip_list_after_decomposition(void)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {2, 8}, wd[2] = {8, 8}, bd[1] = {8};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_node_id c64 = carve_graph_add_node(m, 0, "Cast", "", NULL, 1, &x, 1, (const char *[]){"x64"});
    carve_node_set_attr_int(m, c64, "to", CARVE_DOUBLE);
    double w64[64], b64[8];
    for (int i = 0; i < 64; i++)
        w64[i] = (i % 7) / 7.0 - 0.5;
    for (int i = 0; i < 8; i++)
        b64[i] = i / 8.0;
    carve_value_id w1 = carve_graph_add_initializer(m, 0, "W1", CARVE_DOUBLE, 2, wd, w64, sizeof w64);
    carve_value_id b1 = carve_graph_add_initializer(m, 0, "b1", CARVE_DOUBLE, 1, bd, b64, sizeof b64);
    carve_value_id g1 = gemm(m, NULL, carve_node_output(m, c64, 0), w1, b1, "g1");
    carve_value_id g1c = g1;
    carve_value_id xs = lt_op(m, "Sinh", NULL, 1, &x, "xs");
    carve_value_id g2 = gemm(m, NULL, xs, lt_weight(m, "W2", 2, wd, 14), lt_weight(m, "b2", 1, bd, 15), "g2");
    carve_value_id g3 = gemm(m, NULL, g2, lt_weight(m, "W3", 2, wd, 16), lt_weight(m, "b3", 1, bd, 17), "g3");
    carve_graph_add_output(m, 0, g3);
    carve_graph_add_output(m, 0, g1c);
    OT_CHECK(carve_model_find_node(m, "Gemm_g2") != CARVE_NONE, "unnamed Gemm is named Gemm_g2");
    const char *skip[1] = {"Gemm_g2"};
    carve_lower_opts o = {.cpu_nodes = skip, .n_cpu_nodes = 1};
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 5, -1, 1)};
    cJSON *r = NULL;
    lt_result res = lt_lower_run(m, "htp", &o, inputs, 1e-4, 1e-3, &r);
    OT_CHECK(res == LT_EQUAL, "three Gemms with a skip list: lowers and matches (%d)", res);
    if (r) {
        OT_CHECK(!strcmp(lt_place(r, "Gemm_g1", pb), "decomposed"), "first Gemm decomposed, got %s",
                 lt_place(r, "Gemm_g1", pb));
        OT_CHECK(!strcmp(lt_reason(r, "Gemm_g2"), "skipped_by_user"), "second Gemm kept on CPU by the skip list: %s",
                 lt_reason(r, "Gemm_g2"));
        const cJSON *p, *pieces = cJSON_GetObjectItem(lt_node(r, "Gemm_g2"), "decomposed");
        OT_CHECK(cJSON_GetArraySize(pieces) >= 2, "second Gemm (on core CPU) decomposed into pieces");
        cJSON_ArrayForEach(p, pieces)
        {
            OT_CHECK(cJSON_IsString(cJSON_GetObjectItem(p, "placement")), "pieces of a skipped node stay on CPU");
            OT_CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "reason"), "code")->valuestring,
                             "skipped_by_user"), "pieces carry the skip reason");
        }
        OT_CHECK(!strcmp(lt_place(r, "Gemm_g3", pb), "0"), "third Gemm delegated whole, got %s",
                 lt_place(r, "Gemm_g3", pb));
    }
    cJSON_Delete(r);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* bfloat16 around a kept-whole op: htp takes no bfloat16, so the casts and
 * the LayerNormalization go to CPU, where the LayerNormalization is
 * decomposed (the core CPU profile lacks it). */
static void bf16_around_kept_whole(void)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {3, 16}, sd[1] = {16};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_node_id c1 = carve_graph_add_node(m, 0, "Cast", "", "to_bf16", 1, &x, 1, (const char *[]){"xb"});
    carve_node_set_attr_int(m, c1, "to", CARVE_BFLOAT16);
    carve_value_id xb = carve_node_output(m, c1, 0);
    uint16_t ones[16], zeros[16];
    for (int i = 0; i < 16; i++)
        ones[i] = cv_f32_to_bf16(1.0f + (float)i / 16), zeros[i] = cv_f32_to_bf16((float)i / 32);
    carve_value_id sc = carve_graph_add_initializer(m, 0, "scale", CARVE_BFLOAT16, 1, sd, ones, sizeof ones);
    carve_value_id bi = carve_graph_add_initializer(m, 0, "bias", CARVE_BFLOAT16, 1, sd, zeros, sizeof zeros);
    carve_value_id in3[3] = {xb, sc, bi};
    carve_value_id ln = lt_op(m, "LayerNormalization", "ln", 3, in3, "ln");
    carve_node_id c2 = carve_graph_add_node(m, 0, "Cast", "", "to_f32", 1, &ln, 1, (const char *[]){"y"});
    carve_node_set_attr_int(m, c2, "to", CARVE_FLOAT);
    carve_value_id relu_in = carve_node_output(m, c2, 0);
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &relu_in, "z"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 9, -1, 1)};
    cJSON *r = NULL;
    /* bfloat16 keeps 8 bits: the decomposition rounds at other points */
    lt_result res = lt_lower_run(m, "htp", NULL, inputs, 0.1, 0.05, &r);
    OT_CHECK(res == LT_EQUAL, "bfloat16 around LayerNormalization: lowers and matches (%d)", res);
    if (r) {
        OT_CHECK(!strcmp(lt_reason(r, "to_bf16"), "unsupported_dtype"), "bf16 cast: unsupported_dtype, got %s",
                 lt_reason(r, "to_bf16"));
        OT_CHECK(!strcmp(lt_place(r, "ln", pb), "decomposed"), "bf16 LayerNormalization decomposed on CPU, got %s",
                 lt_place(r, "ln", pb));
        /* stash_type=1: the decomposition computes in float32 between casts,
         * and those float32 pieces can go to the NPU */
        OT_CHECK(strcmp(lt_place(r, "relu", pb), "cpu") != 0, "the float Relu after it is delegated, got %s",
                 lt_place(r, "relu", pb));
        const cJSON *p, *pieces = cJSON_GetObjectItem(lt_node(r, "ln"), "decomposed");
        cJSON_ArrayForEach(p, pieces)
        {
            const char *op = cJSON_GetObjectItem(p, "op")->valuestring;
            bool delegated = cJSON_IsNumber(cJSON_GetObjectItem(p, "placement"));
            if (!strcmp(op, "Cast"))
                OT_CHECK(!delegated, "the bfloat16 casts of the decomposition stay on CPU");
            if (!strcmp(op, "Sqrt"))
                OT_CHECK(delegated, "the float32 Sqrt of the decomposition is delegated");
        }
    }
    cJSON_Delete(r);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* A shape driven by NonZero: Expand's target shape comes from the number of
 * non-zero elements, so its output shape depends on values: CPU, with that
 * reason (NonZero itself: htp does not have it). */
static void nonzero(void)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {3, 5}, one = 1;
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id r = lt_op(m, "Relu", "relu", 1, &x, "r");
    carve_value_id nz = lt_op(m, "NonZero", "nz", 1, &r, "nz");
    carve_value_id s = lt_op(m, "Shape", "shape", 1, &nz, "s");
    float f = 2.0f;
    carve_value_id two = carve_graph_add_initializer(m, 0, "two", CARVE_FLOAT, 1, &one, &f, 4);
    carve_graph_add_output(m, 0, lt_op(m, "Expand", "expand", 2, (carve_value_id[]){two, s}, "e"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    cJSON *rep = NULL;
    lt_result res = lt_lower_run(m, "htp", NULL, inputs, 0, 0, &rep);
    OT_CHECK(res == LT_EQUAL, "NonZero model lowers and matches");
    if (rep) {
        OT_CHECK(!strcmp(lt_reason(rep, "expand"), "data_dependent_shape"), "Expand: data_dependent_shape, got %s",
                 lt_reason(rep, "expand"));
        OT_CHECK(!strcmp(lt_reason(rep, "nz"), "unsupported_op"), "NonZero: unsupported_op, got %s",
                 lt_reason(rep, "nz"));
    }
    cJSON_Delete(rep);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* No runtime input at all: htp refuses every partition; gpu takes one. */
static void no_runtime_input(void)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t ad[2] = {3, 4}, bd[2] = {4, 5}, cd[1] = {5};
    carve_value_id g = gemm(m, "gemm", lt_weight(m, "A", 2, ad, 1), lt_weight(m, "B", 2, bd, 2),
                            lt_weight(m, "C", 1, cd, 3), "g");
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &g, "y"));
    cJSON *r = NULL;
    lt_result res = lt_lower_run(m, "htp", &no_fold, NULL, 1e-4, 1e-3, &r);
    OT_CHECK(res == LT_EQUAL, "no runtime input: htp lowers and matches (%d)", res);
    if (r) {
        OT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r, "partitions")) == 0, "htp: no partition");
        OT_CHECK(!strcmp(lt_reason(r, "relu"), "no_runtime_input"), "htp: Relu refused for no_runtime_input, got %s",
                 lt_reason(r, "relu"));
    }
    cJSON *rg = NULL;
    res = lt_lower_run(m, "gpu", &no_fold, NULL, 1e-4, 1e-3, &rg);
    OT_CHECK(res == LT_EQUAL, "no runtime input: gpu lowers and matches");
    if (rg)
        OT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(rg, "partitions")) == 1 && !strcmp(lt_place(rg, "gemm", pb), "0"),
                 "gpu: one partition holding the whole Gemm");
    cJSON_Delete(r);
    cJSON_Delete(rg);
    carve_model_free(m);
}

/* uint8 -> float Cast: HTP's direct cast maps non-zero to 1; the
 * legalization (via int32) keeps the values. Without it, check fails. */
static void uint8_cast(void)
{
    carve_model *m = lt_model(ctx, 17);
    carve_dim xd[1] = {{8, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_UINT8, 1, xd);
    carve_node_id c = carve_graph_add_node(m, 0, "Cast", "", "cast", 1, &x, 1, (const char *[]){"xf"});
    carve_node_set_attr_int(m, c, "to", CARVE_FLOAT);
    carve_value_id xf = carve_node_output(m, c, 0);
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &xf, "y"));
    int64_t d[1] = {8};
    cv_val *inputs[1] = {cv_val_new(CARVE_UINT8, 1, d)};
    for (int i = 0; i < 8; i++)
        ((uint8_t *)inputs[0]->data)[i] = (uint8_t)(i * 37);
    OT_CHECK(lt_lower_run(m, "htp", NULL, inputs, 0, 0, NULL) == LT_EQUAL, "uint8 cast legalized: equal");
    carve_lower_opts off = {.disable_legalize = CARVE_LEGALIZE_UINT8_CAST};
    OT_CHECK(lt_lower_run(m, "htp", &off, inputs, 0, 0, NULL) == LT_DIFFER,
             "without the uint8 cast legalization the HTP simulator's cast gives other values");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* int64 inside a partition becomes int32; Slice ends of INT64_MAX are
 * clamped. Without the legalizations, htp's simulator refuses int64 or the
 * wrapped bound cuts the slice short. */
static void int64_legalization(void)
{
    carve_model *m = lt_model(ctx, 17);
    carve_dim xd[1] = {{6, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_INT64, 1, xd);
    int64_t k[6] = {1, -2, 3, 1000, 7, -9}, one = 1, six = 6; /* products stay in int32 */
    carve_value_id kc = carve_graph_add_initializer(m, 0, "k", CARVE_INT64, 1, &six, k, sizeof k);
    carve_value_id in2[2] = {x, kc};
    carve_value_id s = lt_op(m, "Add", "add", 2, in2, "s");
    carve_value_id p = lt_op(m, "Mul", "mul", 2, (carve_value_id[]){s, kc}, "p");
    int64_t start = 1, end = INT64_MAX;
    carve_value_id st = carve_graph_add_initializer(m, 0, "start", CARVE_INT64, 1, &one, &start, 8);
    carve_value_id en = carve_graph_add_initializer(m, 0, "end", CARVE_INT64, 1, &one, &end, 8);
    carve_value_id sl = lt_op(m, "Slice", "slice", 3, (carve_value_id[]){p, st, en}, "y");
    carve_graph_add_output(m, 0, sl);
    int64_t d[1] = {6};
    cv_val *inputs[1] = {ot_random(CARVE_INT64, 1, d, 4, -50, 50)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, inputs, 0, 0, &r) == LT_EQUAL, "int64 legalized: equal");
    if (r)
        OT_CHECK(!strcmp(lt_place(r, "slice", pb), "0") && !strcmp(lt_place(r, "add", pb), "0"),
                 "int64 Add and Slice (INT64_MAX end) are delegated");
    cJSON_Delete(r);
    carve_lower_opts no64 = {.disable_legalize = CARVE_LEGALIZE_INT64};
    OT_CHECK(lt_lower_run(m, "htp", &no64, inputs, 0, 0, NULL) == LT_RUN_FAILED,
             "without int64 legalization the htp simulator refuses the int64 body");
    carve_lower_opts noclamp = {.disable_legalize = CARVE_LEGALIZE_SLICE_CLAMP};
    OT_CHECK(lt_lower_run(m, "htp", &noclamp, inputs, 0, 0, NULL) == LT_DIFFER,
             "without the Slice clamp the wrapped end cuts the result short");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* An int64 constant outside the int32 range that is not a Slice bound: the
 * node stays on CPU with reason int64_range. */
static void int64_range(void)
{
    carve_model *m = lt_model(ctx, 17);
    carve_dim xd[1] = {{2, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_INT64, 1, xd);
    int64_t big[2] = {(int64_t)1 << 40, 5}, two = 2;
    carve_value_id b = carve_graph_add_initializer(m, 0, "big", CARVE_INT64, 1, &two, big, sizeof big);
    carve_graph_add_output(m, 0, lt_op(m, "Add", "add", 2, (carve_value_id[]){x, b}, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_INT64, 1, &two, 4, -50, 50)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, inputs, 0, 0, &r) == LT_EQUAL, "int64_range model: equal");
    if (r)
        OT_CHECK(!strcmp(lt_reason(r, "add"), "int64_range"), "Add with 2^40 constant: int64_range, got %s",
                 lt_reason(r, "add"));
    cJSON_Delete(r);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* Resize's int64 `sizes` is a static shape parameter: int64 legalization
 * leaves it int64 (ONNX requires it) and the simulator accepts it. */
static void resize_sizes_stay_int64(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[4] = {1, 1, 4, 4}, four = 4, sz[4] = {1, 1, 8, 8};
    carve_value_id x = lt_input(m, "x", 4, xd);
    carve_value_id r = lt_op(m, "Relu", "relu", 1, &x, "r");
    carve_value_id sizes = carve_graph_add_initializer(m, 0, "sizes", CARVE_INT64, 1, &four, sz, sizeof sz);
    carve_value_id y = lt_op(m, "Resize", "resize", 4, (carve_value_id[]){r, CARVE_NONE, CARVE_NONE, sizes}, "y");
    carve_graph_add_output(m, 0, y);
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 4, xd, 2, -1, 1)};
    cJSON *rep = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, inputs, 0, 0, &rep) == LT_EQUAL, "Resize with int64 sizes: equal on htp");
    if (rep)
        OT_CHECK(!strcmp(lt_place(rep, "resize", pb), "0"), "Resize is delegated, got %s", lt_place(rep, "resize", pb));
    cJSON_Delete(rep);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* A bad target profile names the field. */
static void bad_profiles(void)
{
    struct {
        const char *json, *want;
    } cases[] = {
        {"{\"name\":\"x\",\"dtypes\":[],\"ops\":{}}", "schema_version: missing"},
        {"{\"schema_version\":2,\"name\":\"x\"}", "schema_version: 2 is not supported"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float33\"],\"ops\":{}}", "dtypes[0]: 'float33'"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{\"since\":\"a\"}}}", "ops.Relu.since"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Softmax\":[{\"since\":13,\"bogus\":1}]}}",
         "ops.Softmax[0].bogus: unknown field"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"keep_whole\":[\"Gemm\"],\"ops\":{}}",
         "keep_whole[0]: 'Gemm' is not in ops"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{},\"max_rank\":99}", "max_rank: expected an integer"},
        {"{\"schema_version\":1,", "not valid JSON"},
        /* strict JSON (issue 11): what cJSON alone lets through */
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{}} {}", "trailing data after the JSON value"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{},\"Relu\":{}}}",
         "ops.Relu: key given twice"},
        {"{\"schema_version\":1,\"name\":\"x\",\"name\":\"y\",\"dtypes\":[\"float32\"],\"ops\":{}}", "name: key given twice"},
        {"{\"schema_version\":1,\"name\":\"x\\u0000y\",\"dtypes\":[\"float32\"],\"ops\":{}}",
         "NUL character (\\u0000) inside a string at line 1 column 31 (after key \"name\")"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[],\"ops\":{}}", "dtypes: empty list"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{\"dtypes\":[]}}}",
         "ops.Relu.dtypes: empty list"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Reluu\":{}}}",
         "ops.Reluu: carve does not know this op"},
        {"{\"schema_version\":1,\"name\":\"c\",\"cpu_profile\":\"core\",\"cpu_add\":[\"Foo\"]}",
         "cpu_add[0]: carve does not know op 'Foo'"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Relu\":{\"since\":1e300}}}",
         "ops.Relu.since: expected an integer"},
        /* the rule fails after last_axis and an attr were allocated: freed
         * (LeakSanitizer caught this leak in the sanitizer build) */
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Softmax\":{\"last_axis\":\"axis\","
         "\"attrs\":{\"axis\":[1,\"a\"]}}}}",
         "ops.Softmax.attrs.axis[1]: all values must be integers"},
        {"{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"ops\":{\"Softmax\":{\"attrs\":{\"axis\":[1e300]}}}}",
         "ops.Softmax.attrs.axis[0]: expected an integer of at most 2^53"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        carve_target *t = NULL;
        carve_status s = cv_target_parse(ctx, cases[i].json, strlen(cases[i].json), "'test.json'", &t);
        OT_CHECK(s != CARVE_OK && strstr(carve_errmsg(ctx), cases[i].want) && strstr(carve_errmsg(ctx), "test.json"),
                 "bad profile %zu: error '%s' should mention '%s'", i, carve_errmsg(ctx), cases[i].want);
        carve_target_free(t);
    }
    /* a kept-whole op neither on the CPU nor composite is refused */
    const char *j = "{\"schema_version\":1,\"name\":\"x\",\"dtypes\":[\"float32\"],\"keep_whole\":[\"Relu\"],"
                    "\"ops\":{\"Relu\":{}}}";
    carve_target *t = NULL, *cpu = NULL;
    OT_CHECK(cv_target_parse(ctx, j, strlen(j), "'k.json'", &t) == CARVE_OK, "profile with kept-whole Relu parses");
    const char *cj = "{\"schema_version\":1,\"name\":\"c\",\"cpu_profile\":\"core\",\"cpu_remove\":[\"Relu\"]}";
    OT_CHECK(cv_target_parse(ctx, cj, strlen(cj), "'c.json'", &cpu) == CARVE_OK, "cpu profile parses");
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[1] = {4};
    carve_value_id x = lt_input(m, "x", 1, xd);
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &x, "y"));
    carve_lower_opts o = {.cpu = cpu};
    OT_CHECK(carve_lower(m, t, &o, NULL) != CARVE_OK && strstr(carve_errmsg(ctx), "neither in the CPU profile nor composite"),
             "kept-whole op that cannot end on CPU is refused: %s", carve_errmsg(ctx));
    carve_model_free(m);
    carve_target_free(t);
    carve_target_free(cpu);
}

/* A node that does not fit its op (found by fuzz/fuzz_lower.c: a Unique
 * with no input crashed inference) is refused by lowering, folding and
 * running alike, naming the node; so is an empty required input. */
static void malformed_nodes(void)
{
    for (int k = 0; k < 2; k++) {
        carve_model *m = lt_model(ctx, 17);
        int64_t xd[1] = {6};
        lt_input(m, "x", 1, xd); /* what the run feeds; the malformed node reads nothing */
        const char *outs[1] = {"y"};
        carve_value_id none = CARVE_NONE;
        carve_node_id n = k == 0 ? carve_graph_add_node(m, 0, "Unique", "", "u", 0, NULL, 1, outs)
                                 : carve_graph_add_node(m, 0, "Relu", "", "r", 1, &none, 1, outs);
        OT_CHECK(n != CARVE_NONE, "malformed node %d built: %s", k, carve_errmsg(ctx));
        if (n == CARVE_NONE) {
            carve_model_free(m);
            continue;
        }
        carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
        const char *want = k == 0 ? "node 'u' (Unique): has 0 inputs and 1 outputs, the op takes 1..1"
                                  : "node 'r' (Relu): input 0 is empty, but the op requires it";
        carve_target *t = NULL;
        carve_target_builtin(ctx, "htp", &t);
        carve_lower_opts no = {.no_fold = true};
        OT_CHECK(carve_lower(m, t, NULL, NULL) != CARVE_OK && strstr(carve_errmsg(ctx), want),
                 "lowering refuses malformed node %d: %s", k, carve_errmsg(ctx));
        OT_CHECK(carve_lower(m, t, &no, NULL) != CARVE_OK && strstr(carve_errmsg(ctx), want),
                 "lowering without folding refuses malformed node %d: %s", k, carve_errmsg(ctx));
        OT_CHECK(carve_fold(m, NULL, NULL) != CARVE_OK && strstr(carve_errmsg(ctx), want),
                 "folding refuses malformed node %d: %s", k, carve_errmsg(ctx));
        cv_val *in[1] = {ot_random(CARVE_FLOAT, 1, xd, 3, -1, 1)}, *out[1] = {0};
        OT_CHECK(carve_model_run(m, in, out) != CARVE_OK && strstr(carve_errmsg(ctx), want),
                 "running refuses malformed node %d: %s", k, carve_errmsg(ctx));
        cv_val_unref(in[0]);
        carve_target_free(t);
        carve_model_free(m);
    }
}

/* A composite op on a type outside its constraint (found by
 * fuzz/fuzz_lower.c: Selu on a string tensor made the decomposition's
 * constant loop forever) is refused when lowering decomposes it, naming the
 * node and the type. */
static void composite_on_wrong_type(void)
{
    carve_model *m = lt_model(ctx, 6);
    int64_t xd[1] = {4};
    carve_value_id x = carve_graph_add_input(m, 0, "s", CARVE_STRING, 1,
                                             (carve_dim[]){{xd[0], NULL}});
    carve_graph_add_output(m, 0, lt_op(m, "Selu", "selu", 1, &x, "y"));
    carve_target *t = NULL;
    carve_target_builtin(ctx, "gpu", &t);
    carve_lower_opts no = {.no_fold = true};
    OT_CHECK(carve_lower(m, t, &no, NULL) != CARVE_OK &&
                 strstr(carve_errmsg(ctx), "node 'selu' (Selu): input 0 's' is string, which Selu at opset 6 does not "
                                           "take (type constraint: float32, float16, float64, bfloat16)"),
             "Selu on strings: lowering refuses it: %s", carve_errmsg(ctx));
    carve_target_free(t);
    carve_model_free(m);
}

/* A node whose domain is at an opset newer than carve knows is refused
 * (unsupported_opset, naming node, domain, version and the newest known)
 * unless allow_newer_opset; domains no node uses are not checked. */
static void newer_opset_refused(void)
{
    for (int allow = 0; allow < 2; allow++) {
        carve_model *m = lt_model(ctx, 30);
        carve_model_set_opset(m, "com.unused", 1000);
        carve_model_set_opset(m, "ai.carve", 7); /* no Delegate node: not checked */
        carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
        carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &x, "y"));
        carve_target *t = NULL;
        carve_target_builtin(ctx, "gpu", &t);
        carve_lower_opts o = {.allow_newer_opset = allow != 0};
        carve_status s = carve_lower(m, t, &o, NULL);
        if (allow)
            OT_CHECK(s == CARVE_OK, "opset 30 with allow_newer_opset lowers: %s", carve_errmsg(ctx));
        else
            OT_CHECK(s == CARVE_ERR_UNSUPPORTED &&
                         strstr(carve_errmsg(ctx), "unsupported_opset: node 'relu' (Relu) is in domain ai.onnx at "
                                                   "opset 30, newer than carve knows (the newest it knows is 21)"),
                     "opset 30 refused: %s", carve_errmsg(ctx));
        carve_target_free(t);
        carve_model_free(m);
    }
    /* opset 21 (the newest known) with unused newer domains lowers */
    carve_model *m = lt_model(ctx, 21);
    carve_model_set_ir_version(m, 10);
    carve_model_set_opset(m, "ai.onnx.ml", 99);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &x, "y"));
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    OT_CHECK(carve_lower(m, t, NULL, NULL) == CARVE_OK, "opset 21 lowers: %s", carve_errmsg(ctx));
    carve_target_free(t);
    carve_model_free(m);
}

/* Type errors `run` would hit are found by lowering's inference (ONNX's
 * type constraints, src/ops/typecons.def): Add on strings, Relu on int8 at
 * opset 13 (int8 from opset 14), naming node, op, input and dtype; the same
 * ops on allowed types lower. */
static void type_constraints_refused_by_lower(void)
{
    static const struct {
        int opset;
        const char *op;
        carve_dtype dt;
        const char *msg;
    } cases[] = {
        {14, "Add", CARVE_STRING, "node 'n' (Add): input 0 'a' is string, which Add at opset 14 does not take"},
        {13, "Relu", CARVE_INT8, "node 'n' (Relu): input 0 'a' is int8, which Relu at opset 13 does not take"},
        {14, "Relu", CARVE_INT8, NULL},
        {14, "Add", CARVE_INT32, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        carve_model *m = lt_model(ctx, cases[i].opset);
        carve_value_id in[2];
        in[0] = carve_graph_add_input(m, 0, "a", cases[i].dt, 1, (carve_dim[]){{4, NULL}});
        in[1] = carve_graph_add_input(m, 0, "b", cases[i].dt, 1, (carve_dim[]){{4, NULL}});
        bool bin = !strcmp(cases[i].op, "Add");
        carve_graph_add_output(m, 0, lt_op(m, cases[i].op, "n", bin ? 2 : 1, in, "y"));
        carve_target *t = NULL;
        carve_target_builtin(ctx, "htp", &t);
        carve_status s = carve_lower(m, t, NULL, NULL);
        if (cases[i].msg)
            OT_CHECK(s == CARVE_ERR_INVALID && strstr(carve_errmsg(ctx), cases[i].msg), "%s on %s: %s", cases[i].op,
                     carve_dtype_name(cases[i].dt), carve_errmsg(ctx));
        else
            OT_CHECK(s == CARVE_OK, "%s on %s lowers: %s", cases[i].op, carve_dtype_name(cases[i].dt),
                     carve_errmsg(ctx));
        carve_target_free(t);
        carve_model_free(m);
    }
}

int main(void)
{
    ctx = carve_ctx_new();
    gemm_cut_off(false);
    gemm_cut_off(true);
    skip_list_after_decomposition();
    bf16_around_kept_whole();
    nonzero();
    no_runtime_input();
    uint8_cast();
    int64_legalization();
    int64_range();
    resize_sizes_stay_int64();
    bad_profiles();
    malformed_nodes();
    composite_on_wrong_type();
    type_constraints_refused_by_lower();
    newer_opset_refused();
    carve_ctx_free(ctx);
    return ot_finish();
}

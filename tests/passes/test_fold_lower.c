/* test_fold_lower.c: folding as the first step of `carve lower`. The report
 * says which nodes of the input model were folded or removed (and into what),
 * has a "folding" section with the guards' refusals, and --no-fold turns it
 * all off. Lowered models verify, re-import and match the original. */
#include "lowertest.h"

static carve_ctx *ctx;
static char pb[16];

static double num(const cJSON *o, const char *k)
{
    const cJSON *x = o ? cJSON_GetObjectItem(o, k) : NULL;
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *x = o ? cJSON_GetObjectItem(o, k) : NULL;
    return cJSON_IsString(x) ? x->valuestring : "";
}

/* x -> Sinh ----------------------------\
 * Gemm(A, B, C) -> Cosh (constants only) -> Add -> y
 * x -> MatMul(W) -> Add(b) -> y2; Conv -> BatchNormalization -> y3;
 * RandomNormal -> Add(x') -> y4 */
static carve_model *build(void)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {4, 4}, ad[2] = {4, 8}, bd[2] = {8, 4}, cd[1] = {4}, n = 4;
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id gin[3] = {lt_weight(m, "A", 2, ad, 1), lt_weight(m, "B", 2, bd, 2), lt_weight(m, "C", 1, cd, 3)};
    carve_value_id g = lt_op(m, "Gemm", "gemm", 3, gin, "g");
    carve_value_id gc = lt_op(m, "Cosh", "cosh", 1, &g, "gc");
    carve_value_id xs = lt_op(m, "Sinh", "sinh", 1, &x, "xs");
    carve_value_id in2[2] = {xs, gc};
    carve_graph_add_output(m, 0, lt_op(m, "Add", "add", 2, in2, "y"));
    carve_value_id min[2] = {x, lt_weight(m, "W", 2, xd, 4)};
    carve_value_id mm = lt_op(m, "MatMul", "matmul", 2, min, "mm");
    carve_value_id ain[2] = {mm, lt_weight(m, "b", 1, &n, 5)};
    carve_graph_add_output(m, 0, lt_op(m, "Add", "add_bias", 2, ain, "y2"));
    int64_t x4[4] = {1, 4, 2, 2}, wd[4] = {4, 4, 1, 1};
    carve_value_id r = lt_op(m, "Reshape", "to4d", 2,
                             (carve_value_id[]){x, carve_graph_add_initializer(m, 0, "s4", CARVE_INT64, 1, &n, x4,
                                                                               sizeof x4)},
                             "x4");
    carve_value_id cin[2] = {r, lt_weight(m, "Wc", 4, wd, 6)};
    carve_value_id cv = lt_op(m, "Conv", "conv", 2, cin, "cv");
    float var[4] = {1, 0.5f, 2, 1.5f};
    carve_value_id bin[5] = {cv, lt_weight(m, "bn_s", 1, &n, 7), lt_weight(m, "bn_b", 1, &n, 8),
                             lt_weight(m, "bn_m", 1, &n, 9),
                             carve_graph_add_initializer(m, 0, "bn_v", CARVE_FLOAT, 1, &n, var, sizeof var)};
    carve_graph_add_output(m, 0, lt_op(m, "BatchNormalization", "bn", 5, bin, "y3"));
    const char *ro[1] = {"rn"};
    carve_node_id rn = carve_graph_add_node(m, 0, "RandomNormal", "", "rand", 0, NULL, 1, ro);
    carve_node_set_attr_ints(m, rn, "shape", 2, xd);
    carve_node_set_attr_float(m, rn, "seed", 2.0f);
    carve_value_id rin[2] = {carve_node_output(m, rn, 0), x};
    carve_graph_add_output(m, 0, lt_op(m, "Add", "add_rand", 2, rin, "y4"));
    return m;
}

static void report_folding(void)
{
    carve_model *m = build();
    int64_t xd[2] = {4, 4};
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 7, -1, 1)};
    cJSON *r = NULL;
    lt_result res = lt_lower_run(m, "htp", NULL, inputs, 1e-4, 1e-3, &r);
    OT_CHECK(res == LT_EQUAL, "folded and lowered: matches (%d): %s", res, carve_errmsg(ctx));
    if (r) {
        OT_CHECK(!strcmp(lt_place(r, "gemm", pb), "folded") && !strcmp(lt_place(r, "cosh", pb), "folded"),
                 "the constant-only Gemm and Cosh are folded (%s, %s)", lt_place(r, "gemm", pb), lt_place(r, "cosh", pb));
        OT_CHECK(!strcmp(lt_place(r, "matmul", pb), "removed") && !strcmp(str(lt_node(r, "matmul"), "into"), "matmul/Gemm"),
                 "the MatMul went into 'matmul/Gemm' (%s)", str(lt_node(r, "matmul"), "into"));
        const cJSON *rb = cJSON_GetObjectItem(lt_node(r, "matmul"), "replaced_by");
        OT_CHECK(cJSON_GetArraySize(rb) >= 1, "the MatMul's entry lists what replaced it");
        OT_CHECK(!strcmp(lt_place(r, "add_bias", pb), "removed"), "the bias Add is removed");
        OT_CHECK(!strcmp(lt_place(r, "bn", pb), "removed") && !strcmp(str(lt_node(r, "bn"), "into"), "conv") &&
                     strstr(str(lt_node(r, "bn"), "why"), "BatchNormalization folded"),
                 "the BatchNormalization went into the Conv: %s", str(lt_node(r, "bn"), "why"));
        OT_CHECK(strcmp(lt_place(r, "conv", pb), "cpu") != 0, "the Conv is delegated");
        const cJSON *f = cJSON_GetObjectItem(r, "folding");
        OT_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(f, "enabled")), "folding is enabled");
        OT_CHECK(num(f, "nodes_folded") == 2 && num(f, "batchnorm_fused") == 1 && num(f, "gemm_fused") == 1,
                 "folding counts: %g folded", num(f, "nodes_folded"));
        OT_CHECK(num(f, "bytes_before") + num(f, "bytes_added") - num(f, "bytes_removed") == num(f, "bytes_after"),
                 "folding bytes add up");
        const cJSON *ref = cJSON_GetObjectItem(f, "refused");
        OT_CHECK(num(ref, "impure") == 1 && num(ref, "blow_up") == 0 && num(ref, "quantized_weight") == 0 &&
                     num(ref, "non_tensor") == 0 && num(ref, "control_flow") == 0,
                 "the report counts each guard's refusals");
        OT_CHECK(num(cJSON_GetObjectItem(r, "time_ms"), "folding") >= 0, "folding time is reported");
    }
    cJSON_Delete(r);
    /* --no-fold: every node stays for partitioning */
    carve_lower_opts nf = {.no_fold = true};
    cJSON *r2 = NULL;
    res = lt_lower_run(m, "htp", &nf, inputs, 1e-4, 1e-3, &r2);
    OT_CHECK(res == LT_EQUAL, "not folded: matches (%d)", res);
    if (r2) {
        OT_CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r2, "folding"), "enabled")),
                 "--no-fold: folding is off in the report");
        OT_CHECK(strcmp(lt_place(r2, "gemm", pb), "folded") != 0, "--no-fold: the Gemm stays an op");
        OT_CHECK(strcmp(lt_place(r2, "bn", pb), "removed") != 0, "--no-fold: the BatchNormalization stays");
    }
    cJSON_Delete(r2);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* A skip list naming the MatMul keeps its Gemm on CPU too. */
static void skip_list(void)
{
    carve_model *m = build();
    int64_t xd[2] = {4, 4};
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 7, -1, 1)};
    const char *nodes[1] = {"matmul"};
    carve_lower_opts o = {.cpu_nodes = nodes, .n_cpu_nodes = 1};
    cJSON *r = NULL;
    lt_result res = lt_lower_run(m, "htp", &o, inputs, 1e-4, 1e-3, &r);
    OT_CHECK(res == LT_EQUAL, "skip list: matches (%d)", res);
    if (r) {
        const cJSON *rb = cJSON_GetObjectItem(lt_node(r, "matmul"), "replaced_by"), *p;
        OT_CHECK(cJSON_GetArraySize(rb) >= 1, "skip list: the MatMul has pieces");
        cJSON_ArrayForEach(p, rb)
        {
            OT_CHECK(!strcmp(str(p, "placement"), "cpu"), "skip list: piece '%s' stays on CPU", str(p, "name"));
        }
    }
    cJSON_Delete(r);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    report_folding();
    skip_list();
    carve_ctx_free(ctx);
    return ot_finish();
}

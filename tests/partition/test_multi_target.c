/* test_multi_target.c: lowering for several targets in priority order
 * (carve_lower_targets): every node goes to the first target that takes
 * it, each target's own rules hold for its partitions (htp refuses a
 * partition that reads no runtime value, so such nodes go to gpu, which
 * takes them), a kept-whole op the first target cannot take whole goes
 * whole to the next one before it is decomposed for the CPU, per-target
 * skip lists move a node on, the report names every target that refused a
 * node, and the lowered model computes what the original did. */
#include "../passes/foldtest.h"
#include "partition/partition.h"

static carve_ctx *ctx;
static carve_target *htp, *gpu;

/* Lowers m for `ts`, runs it before and after on `in`, checks outputs. */
static carve_report *lower_check(carve_model *m, const carve_target *const *ts, size_t nt,
                                 const carve_lower_opts *o, cv_val **in, const char *what)
{
    cv_val *before[2] = {0}, *after[2] = {0};
    OT_CHECK(ot_run(m, in, before) == CARVE_OK, "%s: run before: %s", what, carve_errmsg(ctx));
    carve_report *rep = NULL;
    carve_status s = carve_lower_targets(m, ts, nt, o, &rep);
    OT_CHECK(s == CARVE_OK, "%s: lowers: %s", what, carve_errmsg(ctx));
    OT_CHECK(!s && carve_model_verify(m) == CARVE_OK, "%s: verifies", what);
    OT_CHECK(!s && ot_run(m, in, after) == CARVE_OK, "%s: runs after: %s", what, carve_errmsg(ctx));
    char why[300] = "";
    OT_CHECK(before[0] && after[0] && ot_close(after[0], before[0], 1e-5, 1e-5, why, sizeof why),
             "%s: outputs equal: %s", what, why);
    cv_val_unref(before[0]);
    cv_val_unref(after[0]);
    return rep;
}

/* Delegates of the main graph on target `t`, and the nodes of op `op`
 * inside them. */
static uint32_t delegates_on(const carve_model *m, const char *t, const char *op, uint32_t *ops_inside)
{
    uint32_t k = 0;
    *ops_inside = 0;
    for (size_t i = 0; i < carve_graph_node_count(m, 0); i++) {
        carve_node_id n = carve_graph_node(m, 0, i);
        const char *tn = carve_node_attr_string(m, n, "target", NULL);
        if (strcmp(carve_node_op(m, n), "Delegate") || !tn || strcmp(tn, t))
            continue;
        k++;
        carve_graph_id b = cv_attr_g(m, n, "body");
        if (b != CARVE_NONE)
            *ops_inside += ot_count_op(m, b, op);
    }
    return k;
}

static uint32_t main_ops(const carve_model *m, const char *op) { return ot_count_op(m, 0, op); }

/* x[N, 8] (N symbolic) -> Relu -> LayerNormalization -> Tanh; htp takes no
 * symbolic shape, gpu does. */
static carve_model *dynamic_model(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t d[2] = {-1, 8}, f = 8;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, d);
    carve_value_id r = ft_op(m, 0, "Relu", "relu", 1, &x, "r");
    carve_value_id ln_in[2] = {r, ft_weight(m, 0, "gamma", CARVE_FLOAT, 1, &f, 2, 0.5, 1.5)};
    carve_value_id l = ft_op(m, 0, "LayerNormalization", "ln", 2, ln_in, "l");
    carve_graph_add_output(m, 0, ft_op(m, 0, "Tanh", "tanh", 1, &l, "y"));
    return m;
}

static void first_target_that_takes(void)
{
    const carve_target *ts[2] = {htp, gpu};
    int64_t d[2] = {3, 8};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, d, 1, -2, 2)};
    /* all on gpu: htp refuses the symbolic shape; the report says so */
    carve_model *m = dynamic_model();
    carve_report *rep = lower_check(m, ts, 2, NULL, in, "htp+gpu, symbolic batch");
    uint32_t ln_in_gpu = 0;
    OT_CHECK(delegates_on(m, "gpu", "LayerNormalization", &ln_in_gpu) == 1 && ln_in_gpu == 1 &&
                 main_ops(m, "Delegate") == 1,
             "htp+gpu: one gpu Delegate with the LayerNormalization whole in it (%u inside)", ln_in_gpu);
    const char *json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "\"targets\":[{\"name\":\"htp\"") && strstr(json, "{\"name\":\"gpu\""),
             "the report lists both targets in order");
    OT_CHECK(strstr(json, "\"name\":\"ln\",\"op\":\"LayerNormalization\",\"placement\":0,\"target\":\"gpu\","
                          "\"refused_by\":[{\"target\":\"htp\",\"code\":\"dynamic_shape\"") != NULL,
             "the report: ln on gpu, refused by htp for its dynamic shape");
    const char *sum = rep ? carve_report_summary(rep) : "";
    OT_CHECK(strstr(sum, "target htp+gpu:") && strstr(sum, "  gpu: 3 nodes in 1 partition"),
             "summary names both targets: %s", sum);
    carve_report_free(rep);
    carve_model_free(m);
    /* htp alone: the LayerNormalization is decomposed for the CPU */
    m = dynamic_model();
    rep = lower_check(m, ts, 1, NULL, in, "htp alone, symbolic batch");
    OT_CHECK(main_ops(m, "LayerNormalization") == 0 && main_ops(m, "ReduceMean") == 2 && main_ops(m, "Delegate") == 0,
             "htp alone: LayerNormalization decomposed on CPU");
    carve_report_free(rep);
    carve_model_free(m);
    /* gpu told to skip it: decomposed for the CPU, not left whole */
    carve_skip_on sk[1] = {{"gpu", "ln"}};
    carve_lower_opts o = {.skip_on = sk, .n_skip_on = 1};
    m = dynamic_model();
    rep = lower_check(m, ts, 2, &o, in, "htp+gpu, --skip-on gpu:ln");
    uint32_t dummy;
    OT_CHECK(main_ops(m, "LayerNormalization") == 0 && main_ops(m, "ReduceMean") == 2 &&
                 delegates_on(m, "gpu", "Relu", &dummy) == 2,
             "--skip-on gpu:ln: its pieces on CPU, Relu and Tanh on gpu (%u gpu Delegates)",
             delegates_on(m, "gpu", "Relu", &dummy));
    json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "{\"target\":\"gpu\",\"code\":\"skipped_by_user\",\"message\":\"named in the list of nodes kept off gpu\"}") !=
                 NULL,
             "the report gives gpu's reason for the skipped node");
    carve_report_free(rep);
    carve_model_free(m);
    cv_val_unref(in[0]);
}

/* x[2, 8] -> Tanh -> Relu -> Add(Relu, Sub(Mul(c1, c2), ...)) with folding
 * off and Tanh, Relu and Add kept on CPU: the Mul and Sub read only
 * constants and have no partition to ride with. On htp alone
 * they stay on CPU (no runtime input); with gpu next, gpu takes them.
 * --skip-on htp:relu sends the Relu to gpu. */
static void rules_per_target(void)
{
    const carve_target *ts[2] = {htp, gpu};
    int64_t d[2] = {2, 8};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, d, 3, -2, 2)};
    for (int k = 0; k < 3; k++) {
        carve_model *m = ft_model(ctx, 17);
        carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, d);
        carve_value_id th = ft_op(m, 0, "Tanh", "tanh", 1, &x, "th");
        carve_value_id r = ft_op(m, 0, "Relu", "relu", 1, &th, "r");
        carve_value_id c_in[2] = {ft_weight(m, 0, "c1", CARVE_FLOAT, 2, d, 4, -1, 1),
                                  ft_weight(m, 0, "c2", CARVE_FLOAT, 2, d, 5, -1, 1)};
        carve_value_id c = ft_op(m, 0, "Mul", "cmul", 2, c_in, "c");
        carve_value_id s_in[2] = {c, c};
        carve_value_id c2 = ft_op(m, 0, "Sub", "csub", 2, s_in, "cs");
        carve_value_id a_in[2] = {r, c2};
        carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, a_in, "y"));
        carve_skip_on sk[1] = {{"htp", "relu"}};
        /* else the constant-only nodes share a level (a partition) with them */
        const char *cpu_nodes[3] = {"tanh", "relu", "add"};
        carve_lower_opts o = {.no_fold = true, .skip_on = k == 2 ? sk : NULL, .n_skip_on = k == 2 ? 1 : 0,
                              .cpu_nodes = k < 2 ? cpu_nodes : NULL, .n_cpu_nodes = k < 2 ? 3 : 0};
        const char *what = k == 0 ? "htp alone, constant-only nodes" : k == 1 ? "htp+gpu, constant-only nodes"
                                                                               : "htp+gpu, --skip-on htp:relu";
        carve_report *rep = lower_check(m, ts, k == 0 ? 1 : 2, &o, in, what);
        const char *json = rep ? carve_report_json(rep) : "";
        uint32_t n_mul = 0, n_relu = 0;
        if (k == 0) {
            OT_CHECK(main_ops(m, "Mul") == 1 && main_ops(m, "Sub") == 1 &&
                         strstr(json, "\"code\":\"no_runtime_input\""),
                     "%s: the Mul and Sub stay on CPU, no_runtime_input", what);
        } else if (k == 1) {
            OT_CHECK(delegates_on(m, "gpu", "Mul", &n_mul) == 1 && n_mul == 1 && main_ops(m, "Mul") == 0,
                     "%s: the constant-only Mul and Sub go to gpu", what);
            OT_CHECK(strstr(json, "\"name\":\"cmul\",\"op\":\"Mul\",\"placement\":") &&
                         strstr(json, "\"target\":\"gpu\",\"refused_by\":[{\"target\":\"htp\",\"code\":"
                                      "\"no_runtime_input\""),
                     "%s: the report says htp refused it for reading no runtime value", what);
            OT_CHECK(delegates_on(m, "htp", "Relu", &n_relu) == 0 && main_ops(m, "Add") == 1,
                     "%s: nothing on htp, the Add on CPU", what);
        } else {
            OT_CHECK(delegates_on(m, "gpu", "Relu", &n_relu) >= 1 && n_relu == 1, "%s: the Relu on gpu", what);
        }
        carve_report_free(rep);
        carve_model_free(m);
    }
    cv_val_unref(in[0]);
}

static void bad_requests(void)
{
    carve_model *m = dynamic_model();
    const carve_target *twice[2] = {htp, htp};
    carve_status s = carve_lower_targets(m, twice, 2, NULL, NULL);
    OT_CHECK(s == CARVE_ERR_ARG && strstr(carve_errmsg(ctx), "target htp is named twice"),
             "a target named twice is refused: %s", carve_errmsg(ctx));
    carve_target *cpu = NULL;
    carve_target_builtin(ctx, "cpu", &cpu);
    const carve_target *with_cpu[2] = {htp, cpu};
    s = carve_lower_targets(m, with_cpu, 2, NULL, NULL);
    OT_CHECK(s == CARVE_ERR_ARG && strstr(carve_errmsg(ctx), "is a CPU profile"), "a CPU profile in the list is refused: %s",
             carve_errmsg(ctx));
    carve_skip_on sk[1] = {{"lpai", "relu"}};
    carve_lower_opts o = {.skip_on = sk, .n_skip_on = 1};
    const carve_target *ts[2] = {htp, gpu};
    s = carve_lower_targets(m, ts, 2, &o, NULL);
    OT_CHECK(s == CARVE_ERR_ARG && strstr(carve_errmsg(ctx), "'lpai' is not one of the targets"),
             "a skip list for a target not lowered for is refused: %s", carve_errmsg(ctx));
    carve_target_free(cpu);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    OT_CHECK(carve_target_builtin(ctx, "htp", &htp) == CARVE_OK && carve_target_builtin(ctx, "gpu", &gpu) == CARVE_OK,
             "built-in targets");
    first_target_that_takes();
    rules_per_target();
    bad_requests();
    carve_target_free(htp);
    carve_target_free(gpu);
    carve_ctx_free(ctx);
    return ot_finish();
}

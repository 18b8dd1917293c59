/* test_recompose.c: recomposition (src/passes/recompose.c). Each pattern an
 * exporter writes for LayerNormalization, HardSwish and Gelu becomes that op
 * (outputs equal within 1e-5, the new node named after the pattern's last
 * node), and each near miss stays as it is: a mean over another axis, an
 * epsilon that is not a constant, an intermediate read outside the
 * pattern, a different constant, an opset without the op. In lowering:
 * only ops the target lists are made, a skip list naming a member keeps the
 * pattern, and a recomposed op sent to CPU is decomposed again. */
#include "foldtest.h"
#include "partition/partition.h"

static carve_ctx *ctx;

typedef struct ln_case {
    const char *what;
    int64_t opset;
    int rank;            /* of x; the means reduce the last axis */
    int64_t axis2;       /* the second mean's axis (-1: the same) */
    bool affine;
    bool eps_input;      /* epsilon a graph input, not a constant */
    bool shared;         /* the centred value is also a graph output */
    double pow;          /* the exponent */
    carve_dtype dt;
    bool expect;
} ln_case;

static carve_value_id scalar_f(carve_model *m, const char *name, carve_dtype dt, double x)
{
    if (dt == CARVE_FLOAT16) {
        uint16_t h = cv_f32_to_f16((float)x);
        return carve_graph_add_initializer(m, 0, name, dt, 0, NULL, &h, 2);
    }
    float f = (float)x;
    return carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, 0, NULL, &f, 4);
}

static carve_value_id mean(carve_model *m, int64_t opset, carve_value_id x, int64_t axis, const char *name,
                           const char *out)
{
    if (opset >= 18) {
        char an[64];
        snprintf(an, sizeof an, "%s_axes", name);
        carve_value_id in[2] = {x, ft_ints(m, 0, an, 1, &axis)};
        return ft_op(m, 0, "ReduceMean", name, 2, in, out);
    }
    carve_node_id n = ft_node(m, 0, "ReduceMean", name, 1, &x, out);
    carve_node_set_attr_ints(m, n, "axes", 1, &axis);
    return carve_node_output(m, n, 0);
}

static void layer_norm(const ln_case *c)
{
    carve_model *m = ft_model(ctx, c->opset);
    int64_t xd[4] = {2, 3, 4, 6}, *d = xd + 4 - c->rank, feat = d[c->rank - 1];
    carve_value_id x = ft_input(m, 0, "x", c->dt, c->rank, d);
    carve_value_id mu = mean(m, c->opset, x, -1, "mean", "mu");
    carve_value_id sub_in[2] = {x, mu};
    carve_value_id dv = ft_op(m, 0, "Sub", "sub", 2, sub_in, "d");
    carve_value_id pow_in[2] = {dv, scalar_f(m, "p", c->dt, c->pow)};
    carve_value_id d2 = ft_op(m, 0, "Pow", "pow", 2, pow_in, "d2");
    carve_value_id var = mean(m, c->opset, d2, c->axis2 == -1 ? -1 : c->axis2, "var", "v");
    carve_value_id eps = c->eps_input ? ft_input(m, 0, "eps", c->dt, 0, NULL) : scalar_f(m, "eps", c->dt, 1e-5);
    carve_value_id add_in[2] = {var, eps};
    carve_value_id ve = ft_op(m, 0, "Add", "add_eps", 2, add_in, "ve");
    carve_value_id sd = ft_op(m, 0, "Sqrt", "sqrt", 1, &ve, "sd");
    carve_value_id div_in[2] = {dv, sd};
    carve_value_id y = ft_op(m, 0, "Div", "div", 2, div_in, "n");
    if (c->affine) {
        carve_value_id mul_in[2] = {y, ft_weight(m, 0, "gamma", c->dt, 1, &feat, 5, 0.5, 1.5)};
        carve_value_id sc = ft_op(m, 0, "Mul", "mul", 2, mul_in, "s");
        carve_value_id b_in[2] = {sc, ft_weight(m, 0, "beta", c->dt, 1, &feat, 6, -1, 1)};
        y = ft_op(m, 0, "Add", "add_beta", 2, b_in, "y");
    }
    carve_graph_add_output(m, 0, y);
    if (c->shared)
        carve_graph_add_output(m, 0, dv);
    cv_val *inputs[2] = {ot_random(c->dt, c->rank, d, 3, -2, 2), c->eps_input ? ot_random(c->dt, 0, NULL, 4, 1e-5, 2e-5) : NULL};
    carve_fold_opts fo = {0, true};
    carve_fold_stats st;
    double tol = c->dt == CARVE_FLOAT16 ? 1e-2 : 1e-5;
    ft_fold_check(m, inputs, &fo, tol, tol, &st, c->what);
    const char *last = c->affine ? "add_beta" : "div";
    char made[64];
    snprintf(made, sizeof made, "%s/LayerNormalization", last);
    if (c->expect) {
        carve_node_id n = carve_model_find_node(m, made);
        int64_t axis = 0;
        float eps_v = 0, want_eps = c->dt == CARVE_FLOAT16 ? cv_f16_to_f32(cv_f32_to_f16(1e-5f)) : 1e-5f;
        OT_CHECK(st.recomposed == 1 && ft_count(m, NULL) == 1 && n != CARVE_NONE && !m->nodes[n].dead,
                 "%s: one LayerNormalization named '%s' (%u nodes, %u recomposed)", c->what, made, ft_count(m, NULL),
                 st.recomposed);
        OT_CHECK(n != CARVE_NONE && carve_node_attr_int(m, n, "axis", &axis) && axis == c->rank - 1 &&
                     carve_node_attr_float(m, n, "epsilon", &eps_v) && eps_v == want_eps,
                 "%s: axis %lld, epsilon %g", c->what, (long long)axis, eps_v);
        OT_CHECK(n != CARVE_NONE && carve_value_dtype(m, carve_node_output(m, n, 0)) == c->dt, "%s: dtype kept",
                 c->what);
    } else {
        OT_CHECK(st.recomposed == 0 && ft_count(m, "LayerNormalization") == 0 && ft_alive(m, "sub"),
                 "%s: not recomposed (%u)", c->what, st.recomposed);
    }
    cv_val_unref(inputs[0]);
    cv_val_unref(inputs[1]);
    carve_model_free(m);
}

/* QuantizeLinear then DequantizeLinear of v (the k-th pair). */
static carve_value_id qdq(carve_model *m, carve_value_id v, carve_value_id scale, carve_value_id zero, int k)
{
    char qn[16], dn[16], qo[16], dq[16];
    snprintf(qn, sizeof qn, "q%d", k);
    snprintf(dn, sizeof dn, "dq%d", k);
    snprintf(qo, sizeof qo, "qv%d", k);
    snprintf(dq, sizeof dq, "dv%d", k);
    carve_value_id qin[3] = {v, scale, zero};
    carve_value_id q = ft_op(m, 0, "QuantizeLinear", qn, 3, qin, qo);
    carve_value_id din[3] = {q, scale, zero};
    return ft_op(m, 0, "DequantizeLinear", dn, 3, din, dq);
}

/* A quantized chain: x * Clip(x + 3, 0, 6) / 6 with each op's output
 * quantized and dequantized (QDQ node units, as quantize_static writes
 * them). Q/DQ are never members, so nothing is recomposed across them. */
static void hard_swish_qdq(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {4, 5};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    float sc = 0.05f;
    uint8_t zp = 128;
    carve_value_id scale = carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &sc, 4);
    carve_value_id zero = carve_graph_add_initializer(m, 0, "z", CARVE_UINT8, 0, NULL, &zp, 1);
    carve_value_id xq = qdq(m, x, scale, zero, 0);
    carve_value_id a_in[2] = {xq, scalar_f(m, "three", CARVE_FLOAT, 3)};
    carve_value_id a = qdq(m, ft_op(m, 0, "Add", "add", 2, a_in, "a"), scale, zero, 1);
    carve_value_id c_in[3] = {a, scalar_f(m, "lo", CARVE_FLOAT, 0), scalar_f(m, "hi", CARVE_FLOAT, 6)};
    carve_value_id c = qdq(m, ft_op(m, 0, "Clip", "clip", 3, c_in, "c"), scale, zero, 2);
    carve_value_id m_in[2] = {c, xq};
    carve_value_id p = qdq(m, ft_op(m, 0, "Mul", "mul", 2, m_in, "p"), scale, zero, 3);
    carve_value_id d_in[2] = {p, scalar_f(m, "k", CARVE_FLOAT, 6.0)};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Div", "scale", 2, d_in, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 7, -5, 5)};
    carve_fold_opts fo = {0, true};
    carve_fold_stats st;
    ft_fold_check(m, inputs, &fo, 0, 0, &st, "quantized HardSwish chain");
    OT_CHECK(st.recomposed == 0 && ft_count(m, "HardSwish") == 0 && ft_count(m, "QuantizeLinear") == 4,
             "quantized HardSwish chain: not recomposed across its Q/DQ nodes (%u)", st.recomposed);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* x * Clip(x + 3, lo, hi) / 6, or x * HardSigmoid(x). */
static void hard_swish(const char *what, bool hsig, double three, double hi, bool mul_sixth, int64_t opset,
                       bool expect)
{
    carve_model *m = ft_model(ctx, opset);
    int64_t xd[2] = {4, 5};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd), y;
    const char *last;
    if (hsig) {
        carve_node_id h = ft_node(m, 0, "HardSigmoid", "hsig", 1, &x, "h");
        carve_node_set_attr_float(m, h, "alpha", 1.0f / 6.0f);
        carve_node_set_attr_float(m, h, "beta", 0.5f);
        carve_value_id in[2] = {x, carve_node_output(m, h, 0)};
        y = ft_op(m, 0, "Mul", "mul", 2, in, "y");
        last = "mul";
    } else {
        carve_value_id a_in[2] = {x, scalar_f(m, "three", CARVE_FLOAT, three)};
        carve_value_id a = ft_op(m, 0, "Add", "add", 2, a_in, "a");
        carve_value_id c_in[3] = {a, scalar_f(m, "lo", CARVE_FLOAT, 0), scalar_f(m, "hi", CARVE_FLOAT, hi)};
        carve_value_id c = ft_op(m, 0, "Clip", "clip", 3, c_in, "c");
        carve_value_id m_in[2] = {c, x};
        carve_value_id p = ft_op(m, 0, "Mul", "mul", 2, m_in, "p");
        carve_value_id d_in[2] = {p, scalar_f(m, "k", CARVE_FLOAT, mul_sixth ? 1.0 / 6.0 : 6.0)};
        y = ft_op(m, 0, mul_sixth ? "Mul" : "Div", "scale", 2, d_in, "y");
        last = "scale";
    }
    carve_graph_add_output(m, 0, y);
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 7, -5, 5)};
    carve_fold_opts fo = {0, true};
    carve_fold_stats st;
    ft_fold_check(m, inputs, &fo, 1e-6, 1e-6, &st, what);
    char made[64];
    snprintf(made, sizeof made, "%s/HardSwish", last);
    if (expect)
        OT_CHECK(st.recomposed == 1 && ft_count(m, NULL) == 1 && ft_alive(m, made), "%s: one HardSwish '%s'", what,
                 made);
    else
        OT_CHECK(st.recomposed == 0 && ft_count(m, "HardSwish") == 0, "%s: not recomposed", what);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* x * 0.5 * (1 + Erf(x / sqrt2)) and the tanh form. */
static void gelu(const char *what, bool tanh_form, double sqrt2, int64_t opset, bool expect)
{
    carve_model *m = ft_model(ctx, opset);
    int64_t xd[2] = {3, 7};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd), t;
    if (tanh_form) {
        carve_value_id p_in[2] = {x, scalar_f(m, "three", CARVE_FLOAT, 3)};
        carve_value_id cube = ft_op(m, 0, "Pow", "pow", 2, p_in, "cube");
        carve_value_id k_in[2] = {cube, scalar_f(m, "k", CARVE_FLOAT, 0.044715)};
        carve_value_id kc = ft_op(m, 0, "Mul", "mulk", 2, k_in, "kc");
        carve_value_id a_in[2] = {x, kc};
        carve_value_id in = ft_op(m, 0, "Add", "inner", 2, a_in, "in");
        carve_value_id s_in[2] = {in, scalar_f(m, "s", CARVE_FLOAT, 0.7978845608028654)};
        carve_value_id sc = ft_op(m, 0, "Mul", "muls", 2, s_in, "sc");
        t = ft_op(m, 0, "Tanh", "tanh", 1, &sc, "t");
    } else {
        carve_value_id d_in[2] = {x, scalar_f(m, "sqrt2", CARVE_FLOAT, sqrt2)};
        carve_value_id dv = ft_op(m, 0, "Div", "div", 2, d_in, "dv");
        t = ft_op(m, 0, "Erf", "erf", 1, &dv, "t");
    }
    carve_value_id a_in[2] = {t, scalar_f(m, "one", CARVE_FLOAT, 1)};
    carve_value_id a = ft_op(m, 0, "Add", "add1", 2, a_in, "a");
    carve_value_id m_in[2] = {x, a};
    carve_value_id p = ft_op(m, 0, "Mul", "mulx", 2, m_in, "p");
    carve_value_id h_in[2] = {p, scalar_f(m, "half", CARVE_FLOAT, 0.5)};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Mul", "half_mul", 2, h_in, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 8, -4, 4)};
    carve_fold_opts fo = {0, true};
    carve_fold_stats st;
    ft_fold_check(m, inputs, &fo, 1e-5, 1e-5, &st, what);
    carve_node_id g = carve_model_find_node(m, "half_mul/Gelu");
    if (expect) {
        const char *approx = g == CARVE_NONE ? NULL : carve_node_attr_string(m, g, "approximate", NULL);
        OT_CHECK(st.recomposed == 1 && ft_count(m, NULL) == 1 && g != CARVE_NONE && !m->nodes[g].dead,
                 "%s: one Gelu 'half_mul/Gelu'", what);
        OT_CHECK(tanh_form ? approx && !strcmp(approx, "tanh") : !approx, "%s: approximate is %s", what,
                 approx ? approx : "(none)");
    } else {
        OT_CHECK(st.recomposed == 0 && ft_count(m, "Gelu") == 0, "%s: not recomposed", what);
    }
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* The LayerNormalization pattern of ln_case "plain", lowered for target
 * `target` with options; returns the lowered model (caller frees). */
static carve_model *lower_ln(const char *target, const carve_lower_opts *o, carve_report **rep)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t d[3] = {2, 4, 6}, feat = 6;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 3, d);
    carve_value_id r_in[1] = {x};
    carve_value_id xr = ft_op(m, 0, "Relu", "relu", 1, r_in, "xr");
    carve_value_id mu = mean(m, 17, xr, -1, "mean", "mu");
    carve_value_id sub_in[2] = {xr, mu};
    carve_value_id dv = ft_op(m, 0, "Sub", "sub", 2, sub_in, "d");
    carve_value_id pow_in[2] = {dv, scalar_f(m, "p", CARVE_FLOAT, 2)};
    carve_value_id var = mean(m, 17, ft_op(m, 0, "Pow", "pow", 2, pow_in, "d2"), -1, "var", "v");
    carve_value_id add_in[2] = {var, scalar_f(m, "eps", CARVE_FLOAT, 1e-5)};
    carve_value_id sd = ft_op(m, 0, "Sqrt", "sqrt", 1, (carve_value_id[]){ft_op(m, 0, "Add", "add_eps", 2, add_in, "ve")}, "sd");
    carve_value_id div_in[2] = {dv, sd};
    carve_value_id n = ft_op(m, 0, "Div", "div", 2, div_in, "n");
    carve_value_id mul_in[2] = {n, ft_weight(m, 0, "gamma", CARVE_FLOAT, 1, &feat, 5, 0.5, 1.5)};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Mul", "mul", 2, mul_in, "y"));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 3, d, 9, -2, 2)}, *before[1] = {0}, *after[1] = {0};
    OT_CHECK(ot_run(m, in, before) == CARVE_OK, "lowering %s: run before", target);
    carve_target *t = NULL;
    OT_CHECK(carve_target_builtin(ctx, target, &t) == CARVE_OK, "target %s", target);
    carve_status s = carve_lower(m, t, o, rep);
    OT_CHECK(s == CARVE_OK, "lowering %s: %s", target, carve_errmsg(ctx));
    OT_CHECK(!s && carve_model_run_target(m, t, (carve_tensor *const *)in, (carve_tensor **)after) == CARVE_OK,
             "lowering %s: run after: %s", target, carve_errmsg(ctx));
    char why[300] = "";
    OT_CHECK(before[0] && after[0] && ot_close(after[0], before[0], 1e-5, 1e-5, why, sizeof why),
             "lowering %s: outputs equal: %s", target, why);
    carve_target_free(t);
    cv_val_unref(in[0]);
    cv_val_unref(before[0]);
    cv_val_unref(after[0]);
    return m;
}

/* Main-graph nodes of op `op` (Delegate bodies not counted). */
static uint32_t main_count(const carve_model *m, const char *op) { return ot_count_op(m, 0, op); }

static void in_lowering(void)
{
    carve_report *rep = NULL;
    /* htp lists LayerNormalization and keeps it whole: one Delegate, the
     * recomposed op inside, reported with its members */
    carve_model *m = lower_ln("htp", NULL, &rep);
    const char *json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "\"pattern\":\"layer_norm\"") && strstr(json, "\"node\":\"mul/LayerNormalization\"") &&
                 strstr(json, "\"recomposed\":1"),
             "htp: the report lists the recomposed LayerNormalization");
    OT_CHECK(main_count(m, "Delegate") == 1 && main_count(m, "ReduceMean") == 0, "htp: one Delegate, nothing on CPU");
    carve_report_free(rep);
    carve_model_free(m);
    /* a skip list naming a member keeps the pattern decomposed */
    const char *skip[1] = {"sqrt"};
    carve_lower_opts o = {.cpu_nodes = skip, .n_cpu_nodes = 1};
    m = lower_ln("htp", &o, &rep);
    json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "\"recomposed\":0") && main_count(m, "Sqrt") == 1,
             "--cpu-nodes sqrt: not recomposed, the Sqrt on CPU");
    carve_report_free(rep);
    carve_model_free(m);
    /* --cpu-ops LayerNormalization: recomposed, then decomposed again for
     * the CPU, which has no LayerNormalization */
    const char *ops[1] = {"LayerNormalization"};
    carve_lower_opts o2 = {.cpu_ops = ops, .n_cpu_ops = 1};
    m = lower_ln("htp", &o2, &rep);
    json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "\"recomposed\":1") && main_count(m, "LayerNormalization") == 0 &&
                 main_count(m, "ReduceMean") == 2,
             "--cpu-ops LayerNormalization: decomposed again on CPU (%u LayerNormalization, %u ReduceMean)",
             main_count(m, "LayerNormalization"), main_count(m, "ReduceMean"));
    carve_report_free(rep);
    carve_model_free(m);
    /* no_recompose */
    carve_lower_opts o3 = {.no_recompose = true};
    m = lower_ln("htp", &o3, &rep);
    json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "\"recomposed\":0") != NULL, "no_recompose: nothing recomposed");
    carve_report_free(rep);
    carve_model_free(m);
    /* lpai does not list LayerNormalization: nothing is made for it */
    m = lower_ln("lpai", NULL, &rep);
    json = rep ? carve_report_json(rep) : "";
    OT_CHECK(strstr(json, "\"recomposed\":0") != NULL, "lpai: no LayerNormalization made for a target without it");
    carve_report_free(rep);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    static const ln_case ln[] = {
        {"layer_norm, opset 17, affine", 17, 3, -1, true, false, false, 2, CARVE_FLOAT, true},
        {"layer_norm, opset 18 (axes input), no affine", 18, 4, -1, false, false, false, 2, CARVE_FLOAT, true},
        {"layer_norm, float16", 17, 2, -1, true, false, false, 2, CARVE_FLOAT16, true},
        {"near miss: variance over another axis", 17, 3, 1, true, false, false, 2, CARVE_FLOAT, false},
        {"near miss: epsilon is not a constant", 17, 3, -1, true, true, false, 2, CARVE_FLOAT, false},
        {"near miss: the centred value is read outside", 17, 3, -1, true, false, true, 2, CARVE_FLOAT, false},
        {"near miss: exponent 3", 17, 3, -1, true, false, false, 3, CARVE_FLOAT, false},
        {"near miss: opset 16 has no LayerNormalization", 16, 3, -1, true, false, false, 2, CARVE_FLOAT, false},
    };
    for (size_t i = 0; i < sizeof ln / sizeof ln[0]; i++)
        layer_norm(&ln[i]);
    hard_swish("hard_swish, Clip form / 6", false, 3, 6, false, 14, true);
    hard_swish("hard_swish, Clip form * 1/6", false, 3, 6, true, 14, true);
    hard_swish("hard_swish, x * HardSigmoid(x)", true, 3, 6, false, 14, true);
    hard_swish("near miss: Clip to 5", false, 3, 5, false, 14, false);
    hard_swish("near miss: x + 2", false, 2, 6, false, 14, false);
    hard_swish("near miss: opset 13 has no HardSwish", false, 3, 6, false, 13, false);
    hard_swish_qdq();
    gelu("gelu, erf form", false, 1.4142135623730951, 20, true);
    gelu("gelu, tanh form", true, 0, 20, true);
    gelu("near miss: x / 1.5", false, 1.5, 20, false);
    gelu("near miss: opset 19 has no Gelu", false, 1.4142135623730951, 19, false);
    in_lowering();
    carve_ctx_free(ctx);
    return ot_finish();
}

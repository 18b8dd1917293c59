/* test_fold.c: constant folding (src/passes/fold.c): what folds, each guard,
 * If with a constant condition, shapes known in full or in part, names and
 * graph outputs kept, dead code and duplicates gone. Every case checks that
 * the outputs are unchanged and the folded model verifies and re-imports. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "foldtest.h"

static carve_ctx *ctx;

/* Constants, shape arithmetic and a graph output computed from constants
 * alone: everything folds, names stay. */
static void folds_constants(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {2, 3}, cd[1] = {3};
    float cv[3] = {1, 2, 3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id c = ft_constant(m, 0, "cst", CARVE_FLOAT, 1, cd, cv, sizeof cv, "c");
    carve_value_id w = ft_weight(m, 0, "w", CARVE_FLOAT, 1, cd, 1, -1, 1);
    carve_value_id in[2] = {c, w};
    carve_value_id cw = ft_op(m, 0, "Mul", "mul_cw", 2, in, "cw");
    carve_value_id e = ft_op(m, 0, "Exp", "exp_cw", 1, &cw, "e");
    carve_value_id in2[2] = {x, e};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, in2, "y"));
    carve_graph_add_output(m, 0, e); /* a graph output that folds */
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "constants");
    OT_CHECK(ft_count(m, NULL) == 1 && ft_alive(m, "add"), "only the Add is left (%u nodes)", ft_count(m, NULL));
    OT_CHECK(ft_is_init(m, "e"), "the folded value is an initializer named as the Exp's output was");
    OT_CHECK(carve_graph_output_count(m, 0) == 2 && !strcmp(carve_value_name(m, carve_graph_output(m, 0, 1)), "e"),
             "the folded graph output stays a graph output, with its name");
    OT_CHECK(st.folded == 3 && st.nodes_before == 4 && st.nodes_after == 1, "stats: %u folded, %u -> %u", st.folded,
             st.nodes_before, st.nodes_after);
    OT_CHECK(!ft_is_init(m, "c") && !ft_is_init(m, "cw") && !ft_is_init(m, "w"),
             "the Constant, intermediate and unused initializers are gone");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* The impure guard: random ops never fold, seeded or not, with a constant
 * shape or a constant input. */
static void guard_impure(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {2, 3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_node_id rn = ft_node(m, 0, "RandomNormal", "rand", 0, NULL, "r");
    carve_node_set_attr_ints(m, rn, "shape", 2, xd);
    carve_node_set_attr_float(m, rn, "seed", 3.0f);
    carve_value_id w = ft_weight(m, 0, "w", CARVE_FLOAT, 2, xd, 1, 0, 1);
    carve_node_id ru = ft_node(m, 0, "RandomUniformLike", "rand_like", 1, &w, "u");
    carve_node_set_attr_float(m, ru, "seed", 5.0f);
    carve_value_id in[2] = {carve_node_output(m, rn, 0), carve_node_output(m, ru, 0)};
    carve_value_id ru2 = ft_op(m, 0, "Add", "sum_rand", 2, in, "s");
    carve_value_id in2[2] = {x, ru2};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, in2, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "impure");
    OT_CHECK(ft_alive(m, "rand") && ft_alive(m, "rand_like") && ft_alive(m, "sum_rand"),
             "random ops and what reads them stay ops");
    OT_CHECK(st.refused[CARVE_GUARD_IMPURE] == 2, "the impure guard refused 2 nodes, got %u",
             st.refused[CARVE_GUARD_IMPURE]);
    OT_CHECK(!strcmp(carve_fold_guard_name(CARVE_GUARD_IMPURE), "impure"), "guard name");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* The non-tensor guard: a sequence built from constants stays a sequence op. */
static void guard_sequence(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[1] = {4};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 1, xd);
    carve_value_id in[2] = {ft_weight(m, 0, "a", CARVE_FLOAT, 1, xd, 1, -1, 1),
                            ft_weight(m, 0, "b", CARVE_FLOAT, 1, xd, 2, -1, 1)};
    const char *outs[1] = {"seq"};
    carve_node_id sc = carve_graph_add_node(m, 0, "SequenceConstruct", "", "seq_make", 2, in, 1, outs);
    carve_value_id in2[2] = {carve_node_output(m, sc, 0), ft_scalar_i64(m, 0, "one", 1)};
    carve_value_id at = ft_op(m, 0, "SequenceAt", "seq_at", 2, in2, "at");
    carve_value_id in3[2] = {x, at};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, in3, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 1, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "sequence");
    OT_CHECK(ft_alive(m, "seq_make") && ft_alive(m, "seq_at"), "sequence ops stay ops");
    OT_CHECK(st.refused[CARVE_GUARD_NON_TENSOR] == 1, "the non-tensor guard refused 1 node, got %u",
             st.refused[CARVE_GUARD_NON_TENSOR]);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* A causal mask from ConstantOfShape/Trilu and Range/Expand, n x n. Output
 * y = x * mask (mask as float) for x of shape [n, n]. */
static carve_model *causal_mask(int64_t n)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {n, n}, one = 1, zero = 0;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id len = ft_constant(m, 0, "len", CARVE_INT64, 0, NULL, &n, sizeof n, "n");
    carve_value_id axes = ft_ints(m, 0, "axes0", 1, &zero);
    carve_value_id in[2] = {len, axes};
    carve_value_id n1 = ft_op(m, 0, "Unsqueeze", "n_1d", 2, in, "n1");
    carve_value_id cat[2] = {n1, n1};
    carve_node_id cc = ft_node(m, 0, "Concat", "shape", 2, cat, "nn");
    carve_node_set_attr_int(m, cc, "axis", 0);
    carve_value_id shape = carve_node_output(m, cc, 0);
    carve_node_id cos = ft_node(m, 0, "ConstantOfShape", "ones", 1, &shape, "o");
    float fone = 1;
    carve_node_set_attr_tensor(m, cos, "value", CARVE_FLOAT, 1, &one, &fone, sizeof fone);
    carve_value_id o = carve_node_output(m, cos, 0);
    carve_value_id tri = ft_op(m, 0, "Trilu", "tril", 1, &o, "t");
    carve_node_set_attr_int(m, carve_model_find_node(m, "tril"), "upper", 0);
    carve_value_id rin[3] = {ft_scalar_i64(m, 0, "start", 0), len, ft_scalar_i64(m, 0, "step", 1)};
    carve_value_id r = ft_op(m, 0, "Range", "range", 3, rin, "r");
    carve_value_id uin[2] = {r, axes};
    carve_value_id ru = ft_op(m, 0, "Unsqueeze", "row", 2, uin, "ru");
    carve_value_id ein[2] = {ru, shape};
    carve_value_id e = ft_op(m, 0, "Expand", "expand", 2, ein, "e");
    carve_node_id ce = ft_node(m, 0, "Cast", "cast", 1, &e, "ef");
    carve_node_set_attr_int(m, ce, "to", CARVE_FLOAT);
    carve_value_id min[2] = {tri, carve_node_output(m, ce, 0)};
    carve_value_id mask = ft_op(m, 0, "Mul", "mask", 2, min, "mk");
    carve_value_id yin[2] = {x, mask};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Mul", "apply", 2, yin, "y"));
    return m;
}

/* The blow-up guard: a 4096 x 4096 causal mask stays ops (folding it would
 * add 64 MiB and more); a 64 x 64 one folds; --fold-max-bytes moves the
 * line. */
static void guard_blow_up(void)
{
    carve_model *m = causal_mask(4096);
    carve_fold_stats st;
    carve_status s = carve_fold(m, NULL, &st);
    OT_CHECK(s == CARVE_OK, "big mask: fold: %s", carve_errmsg(ctx));
    OT_CHECK(ft_alive(m, "ones") && ft_alive(m, "tril") && ft_alive(m, "expand") && ft_alive(m, "mask"),
             "big mask: ConstantOfShape, Trilu, Expand and what reads them stay ops");
    OT_CHECK(!ft_alive(m, "range") && !ft_alive(m, "shape"), "big mask: the small Range and the shape fold");
    OT_CHECK(st.refused[CARVE_GUARD_BLOW_UP] == 2, "big mask: the blow-up guard refused ConstantOfShape and Expand, got %u",
             st.refused[CARVE_GUARD_BLOW_UP]);
    OT_CHECK(st.bytes_after < ((uint64_t)1 << 20), "big mask: the model stays small (%llu bytes)",
             (unsigned long long)st.bytes_after);
    carve_model_free(m);

    int64_t xd[2] = {64, 64};
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    m = causal_mask(64);
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "small mask");
    OT_CHECK(ft_count(m, NULL) == 1 && ft_alive(m, "apply"), "small mask: folds to one initializer (%u nodes)",
             ft_count(m, NULL));
    OT_CHECK(st.refused[CARVE_GUARD_BLOW_UP] == 0, "small mask: nothing refused");
    carve_model_free(m);

    m = causal_mask(64);
    carve_fold_opts o = {.max_bytes = 1024};
    ft_fold_check(m, inputs, &o, 0, 0, &st, "small mask, 1 KiB limit");
    OT_CHECK(ft_alive(m, "ones") && ft_alive(m, "expand"), "1 KiB limit: the 16 KiB results stay ops");
    OT_CHECK(st.refused[CARVE_GUARD_BLOW_UP] == 2, "1 KiB limit: 2 refused, got %u", st.refused[CARVE_GUARD_BLOW_UP]);
    carve_model_free(m);
    cv_val_unref(inputs[0]);
}

/* The quantized-weight guard: the DequantizeLinear of an int8 weight stays;
 * the QuantizeLinear of a float weight before it folds to int8. */
static void guard_dequantize(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {2, 4}, wd[2] = {4, 3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    float sc = 0.05f;
    int8_t zp = 3;
    carve_value_id s = carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &sc, sizeof sc);
    carve_value_id z = carve_graph_add_initializer(m, 0, "z", CARVE_INT8, 0, NULL, &zp, sizeof zp);
    carve_value_id din[3] = {ft_weight(m, 0, "w_int8", CARVE_INT8, 2, wd, 1, -100, 100), s, z};
    carve_value_id dq = ft_op(m, 0, "DequantizeLinear", "dq", 3, din, "w_dq");
    carve_value_id qin[3] = {ft_weight(m, 0, "v_float", CARVE_FLOAT, 2, wd, 2, -3, 3), s, z};
    carve_value_id q = ft_op(m, 0, "QuantizeLinear", "q", 3, qin, "v_q");
    carve_value_id d2in[3] = {q, s, z};
    carve_value_id dq2 = ft_op(m, 0, "DequantizeLinear", "dq2", 3, d2in, "v_dq");
    carve_value_id ain[2] = {dq, dq2};
    carve_value_id w = ft_op(m, 0, "Add", "wsum", 2, ain, "wsum");
    carve_value_id min[2] = {x, w};
    carve_graph_add_output(m, 0, ft_op(m, 0, "MatMul", "mm", 2, min, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "dequantize");
    OT_CHECK(ft_alive(m, "dq") && ft_alive(m, "dq2") && ft_alive(m, "wsum"), "both DequantizeLinear stay");
    OT_CHECK(!ft_alive(m, "q") && ft_is_init(m, "v_q") && carve_value_dtype(m, ft_value(m, "v_q")) == CARVE_INT8,
             "QuantizeLinear of a float weight folds to an int8 initializer");
    carve_node_id d = carve_model_find_node(m, "dq");
    OT_CHECK(carve_value_dtype(m, carve_node_input(m, d, 0)) == CARVE_INT8 &&
                 !strcmp(carve_value_name(m, carve_node_input(m, d, 0)), "w_int8"),
             "the int8 weight and its encoding stay");
    OT_CHECK(st.refused[CARVE_GUARD_QUANT_WEIGHT] == 2, "the quantized-weight guard refused 2, got %u",
             st.refused[CARVE_GUARD_QUANT_WEIGHT]);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* The control-flow guard: a Loop on constants stays a Loop, but its body
 * folds what reads outer constants only. */
static void guard_loop(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t vd[1] = {3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 1, vd);
    carve_value_id a = ft_weight(m, 0, "a", CARVE_FLOAT, 1, vd, 1, -1, 1);
    carve_value_id b = ft_weight(m, 0, "b", CARVE_FLOAT, 1, vd, 2, -1, 1);
    bool t = true;
    carve_value_id cond = carve_graph_add_initializer(m, 0, "t", CARVE_BOOL, 0, NULL, &t, 1);
    carve_value_id lin[3] = {ft_scalar_i64(m, 0, "trips", 3), cond, ft_weight(m, 0, "v0", CARVE_FLOAT, 1, vd, 3, -1, 1)};
    const char *outs[1] = {"v_final"};
    carve_node_id loop = carve_graph_add_node(m, 0, "Loop", "", "loop", 3, lin, 1, outs);
    carve_graph_id body = carve_graph_new_subgraph(m, 0, "body");
    ft_input(m, body, "i", CARVE_INT64, 0, NULL);
    carve_value_id cin = ft_input(m, body, "c_in", CARVE_BOOL, 0, NULL);
    carve_value_id v = ft_input(m, body, "v", CARVE_FLOAT, 1, vd);
    carve_value_id abin[2] = {a, b};
    carve_value_id ab = ft_op(m, body, "Mul", "body_ab", 2, abin, "ab"); /* outer constants only: folds */
    carve_value_id vin[2] = {v, ab};
    carve_value_id vn = ft_op(m, body, "Add", "body_step", 2, vin, "v_next");
    carve_graph_add_output(m, body, ft_op(m, body, "Identity", "body_cond", 1, &cin, "c_out"));
    carve_graph_add_output(m, body, vn);
    carve_node_set_attr_graph(m, loop, "body", body);
    carve_value_id yin[2] = {x, carve_node_output(m, loop, 0)};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, yin, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 1, vd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 1e-6, 1e-6, &st, "loop");
    OT_CHECK(ft_alive(m, "loop") && ft_alive(m, "body_step"), "the Loop and its carried step stay");
    OT_CHECK(!ft_alive(m, "body_ab"), "the body's constant Mul folds");
    OT_CHECK(st.refused[CARVE_GUARD_CONTROL_FLOW] == 1, "the control-flow guard refused the Loop, got %u",
             st.refused[CARVE_GUARD_CONTROL_FLOW]);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* If with a constant condition: the branch it takes replaces it, nested Ifs
 * too; branch nodes keep their names, outer captures keep working, graph
 * outputs keep their names. An If on a runtime condition stays. */
static void if_constant(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {2, 3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id w1 = ft_weight(m, 0, "w1", CARVE_FLOAT, 2, xd, 1, -1, 1);
    carve_value_id w2 = ft_weight(m, 0, "w2", CARVE_FLOAT, 2, xd, 2, -1, 1);
    bool tv = true, fv = false;
    carve_value_id ct = ft_constant(m, 0, "c_true", CARVE_BOOL, 0, NULL, &tv, 1, "ct");
    carve_value_id cf = carve_graph_add_initializer(m, 0, "cf", CARVE_BOOL, 0, NULL, &fv, 1);
    const char *o1[1] = {"y"};
    carve_node_id if1 = carve_graph_add_node(m, 0, "If", "", "if_outer", 1, &ct, 1, o1);
    /* then: t1 = x + w1; if (cf) t1 * w2 else t1 - w2 */
    carve_graph_id th = carve_graph_new_subgraph(m, 0, "then");
    carve_value_id tin[2] = {x, w1};
    carve_value_id t1 = ft_op(m, th, "Add", "then_add", 2, tin, "t1");
    const char *o2[1] = {"t2"};
    carve_node_id if2 = carve_graph_add_node(m, th, "If", "", "if_inner", 1, &cf, 1, o2);
    carve_graph_id th2 = carve_graph_new_subgraph(m, th, "then2");
    carve_value_id m2[2] = {t1, w2};
    carve_graph_add_output(m, th2, ft_op(m, th2, "Mul", "inner_mul", 2, m2, "t_mul"));
    carve_graph_id el2 = carve_graph_new_subgraph(m, th, "else2");
    carve_graph_add_output(m, el2, ft_op(m, el2, "Sub", "inner_sub", 2, m2, "t_sub"));
    carve_node_set_attr_graph(m, if2, "then_branch", th2);
    carve_node_set_attr_graph(m, if2, "else_branch", el2);
    carve_graph_add_output(m, th, carve_node_output(m, if2, 0));
    carve_graph_id el = carve_graph_new_subgraph(m, 0, "else");
    carve_graph_add_output(m, el, ft_op(m, el, "Neg", "else_neg", 1, &x, "e1"));
    carve_node_set_attr_graph(m, if1, "then_branch", th);
    carve_node_set_attr_graph(m, if1, "else_branch", el);
    carve_value_id y = carve_node_output(m, if1, 0);
    carve_graph_add_output(m, 0, y);
    carve_graph_add_output(m, 0, ft_op(m, 0, "Relu", "relu", 1, &y, "z"));
    /* an If on a runtime condition: b = x[0,0] > 0 */
    carve_value_id rin[1] = {x};
    carve_value_id red = ft_op(m, 0, "ReduceSum", "rsum", 1, rin, "rs");
    carve_node_set_attr_int(m, carve_model_find_node(m, "rsum"), "keepdims", 0);
    carve_value_id zero = carve_graph_add_initializer(m, 0, "zero", CARVE_FLOAT, 0, NULL, &(float){0}, 4);
    carve_value_id gin[2] = {red, zero};
    carve_value_id rc = ft_op(m, 0, "Greater", "gt", 2, gin, "rc");
    const char *o3[1] = {"q"};
    carve_node_id if3 = carve_graph_add_node(m, 0, "If", "", "if_runtime", 1, &rc, 1, o3);
    carve_graph_id th3 = carve_graph_new_subgraph(m, 0, "then3");
    carve_graph_add_output(m, th3, ft_op(m, th3, "Abs", "abs3", 1, &x, "a3"));
    carve_graph_id el3 = carve_graph_new_subgraph(m, 0, "else3");
    carve_graph_add_output(m, el3, ft_op(m, el3, "Sin", "sin3", 1, &x, "s3"));
    carve_node_set_attr_graph(m, if3, "then_branch", th3);
    carve_node_set_attr_graph(m, if3, "else_branch", el3);
    carve_graph_add_output(m, 0, carve_node_output(m, if3, 0));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "if");
    OT_CHECK(!ft_alive(m, "if_outer") && !ft_alive(m, "if_inner") && ft_alive(m, "if_runtime"),
             "constant Ifs are inlined, nested too; the runtime one stays");
    OT_CHECK(ft_alive(m, "then_add") && ft_alive(m, "inner_sub"), "the branches' nodes keep their names");
    OT_CHECK(carve_node_graph(m, carve_model_find_node(m, "inner_sub")) == 0, "nested branch nodes reach the main graph");
    OT_CHECK(!ft_alive(m, "else_neg") && !ft_alive(m, "inner_mul"), "untaken branches are gone");
    OT_CHECK(!strcmp(carve_value_name(m, carve_graph_output(m, 0, 0)), "y") &&
                 carve_node_output(m, carve_model_find_node(m, "inner_sub"), 0) == carve_graph_output(m, 0, 0),
             "the If's output name stays, written by the inlined node");
    OT_CHECK(st.if_inlined == 2 && st.refused[CARVE_GUARD_CONTROL_FLOW] == 0, "2 inlined, got %u", st.if_inlined);
    for (int k = 0; k < 2; k++) { /* both ways of the runtime If */
        cv_val *in2[1] = {ot_random(CARVE_FLOAT, 2, xd, 10 + (uint32_t)k, k ? 0 : -1, k ? 1 : 0)};
        cv_val *out[3] = {0};
        OT_CHECK(ot_run(m, in2, out) == CARVE_OK, "runtime If runs (%d)", k);
        cv_val_unref(in2[0]);
        for (int i = 0; i < 3; i++)
            cv_val_unref(out[i]);
    }
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* An inlined branch whose output is an outer value directly: an Identity
 * named from the If keeps the If's output; a branch initializer output
 * becomes the If's output as an initializer. */
static void if_outer_output(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[1] = {3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 1, xd);
    bool tv = true;
    carve_value_id ct = carve_graph_add_initializer(m, 0, "ct", CARVE_BOOL, 0, NULL, &tv, 1);
    const char *outs[2] = {"p", "k"};
    carve_node_id iff = carve_graph_add_node(m, 0, "If", "", "if_pass", 1, &ct, 2, outs);
    carve_graph_id th = carve_graph_new_subgraph(m, 0, "then");
    carve_graph_add_output(m, th, x);
    carve_graph_add_output(m, th, ft_weight(m, th, "kw", CARVE_FLOAT, 1, xd, 4, -1, 1));
    carve_graph_id el = carve_graph_new_subgraph(m, 0, "else");
    carve_graph_add_output(m, el, ft_op(m, el, "Neg", "neg", 1, &x, "nx"));
    carve_graph_add_output(m, el, ft_op(m, el, "Abs", "abs", 1, &x, "ax"));
    carve_node_set_attr_graph(m, iff, "then_branch", th);
    carve_node_set_attr_graph(m, iff, "else_branch", el);
    carve_graph_add_output(m, 0, carve_node_output(m, iff, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, iff, 1));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 1, xd, 3, -1, 1)};
    ft_fold_check(m, inputs, NULL, 0, 0, NULL, "if passing an outer value");
    OT_CHECK(ft_alive(m, "if_pass/Identity") && ft_count(m, NULL) == 1, "an Identity named 'if_pass/Identity' is left");
    OT_CHECK(ft_is_init(m, "k"), "the branch initializer output is an initializer named as the If's output");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* Shape of a static input folds, and so does arithmetic on it; with a
 * symbolic batch the static part folds and Reshape gets a -1. */
static void shape_static(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[3] = {2, 3, 4}, idx = 1, zero = 0, minus1 = -1;
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 3, xd);
    carve_value_id sh = ft_op(m, 0, "Shape", "shape", 1, &x, "sh");
    carve_value_id gin[2] = {sh, ft_ints(m, 0, "idx", 1, &idx)};
    carve_value_id d1 = ft_op(m, 0, "Gather", "gather", 2, gin, "d1");
    carve_node_id sz = ft_node(m, 0, "Size", "size", 1, &x, "n");
    carve_value_id uin[2] = {carve_node_output(m, sz, 0), ft_ints(m, 0, "axes", 1, &zero)};
    carve_value_id n1 = ft_op(m, 0, "Unsqueeze", "unsq", 2, uin, "n1");
    carve_value_id din[2] = {n1, d1};
    carve_value_id q = ft_op(m, 0, "Div", "div", 2, din, "q");
    carve_value_id cin[2] = {d1, q};
    carve_node_id cc = ft_node(m, 0, "Concat", "concat", 2, cin, "newshape");
    carve_node_set_attr_int(m, cc, "axis", 0);
    carve_value_id rin[2] = {x, carve_node_output(m, cc, 0)};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Reshape", "reshape", 2, rin, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 3, xd, 3, -1, 1)};
    ft_fold_check(m, inputs, NULL, 0, 0, NULL, "static shape");
    OT_CHECK(ft_count(m, NULL) == 1 && ft_alive(m, "reshape"), "Shape, Size and the arithmetic fold (%u nodes left)",
             ft_count(m, NULL));
    OT_CHECK(ft_is_init(m, "newshape"), "the new shape is an initializer named as the Concat's output");
    cv_val_unref(inputs[0]);
    carve_model_free(m);

    /* x: [N, 3, 4] -> [N, 12] via Concat(Shape(x)[0:1], [12]) */
    m = ft_model(ctx, 17);
    int64_t nd[3] = {-1, 3, 4}, twelve = 12, one = 1;
    x = ft_input(m, 0, "x", CARVE_FLOAT, 3, nd);
    sh = ft_op(m, 0, "Shape", "shape", 1, &x, "sh");
    carve_value_id sin[3] = {sh, ft_ints(m, 0, "s0", 1, &zero), ft_ints(m, 0, "s1", 1, &one)};
    carve_value_id batch = ft_op(m, 0, "Slice", "slice", 3, sin, "batch");
    carve_value_id sh2 = ft_op(m, 0, "Shape", "shape2", 1, &x, "sh2"); /* the static tail folds */
    carve_value_id s2in[3] = {sh2, ft_ints(m, 0, "s2", 1, &one), ft_ints(m, 0, "s3", 1, &(int64_t){3})};
    carve_value_id tail = ft_op(m, 0, "Slice", "slice_tail", 3, s2in, "tail");
    carve_value_id rdin[1] = {tail};
    carve_value_id prod = ft_op(m, 0, "ReduceProd", "prod", 1, rdin, "prod");
    carve_value_id c2in[2] = {batch, prod};
    cc = ft_node(m, 0, "Concat", "concat", 2, c2in, "newshape");
    carve_node_set_attr_int(m, cc, "axis", 0);
    rin[0] = x;
    rin[1] = carve_node_output(m, cc, 0);
    carve_graph_add_output(m, 0, ft_op(m, 0, "Reshape", "reshape", 2, rin, "y"));
    (void)twelve;
    (void)minus1;
    int64_t b2[3] = {2, 3, 4}, b5[3] = {5, 3, 4};
    cv_val *in2[1] = {ot_random(CARVE_FLOAT, 3, b2, 4, -1, 1)};
    cv_val *before5[1] = {0};
    cv_val *in5[1] = {ot_random(CARVE_FLOAT, 3, b5, 5, -1, 1)};
    OT_CHECK(ot_run(m, in5, before5) == CARVE_OK, "partial shape: runs with N=5");
    ft_fold_check(m, in2, NULL, 0, 0, NULL, "partial shape");
    OT_CHECK(!ft_alive(m, "slice_tail") && !ft_alive(m, "prod") && !ft_alive(m, "shape2"),
             "the static part of the shape folds");
    carve_node_id rs = carve_model_find_node(m, "reshape");
    const cv_tensor *ns = cv_fold_const(m, carve_node_input(m, rs, 1));
    OT_CHECK(ns && ns->nelem == 2 && ((const int64_t *)ns->data)[0] == -1 && ((const int64_t *)ns->data)[1] == 12,
             "the Reshape's shape is the constant [-1, 12]");
    OT_CHECK(ft_count(m, NULL) == 1, "only the Reshape is left (%u nodes)", ft_count(m, NULL));
    cv_val *after5[1] = {0};
    char why[200] = "";
    OT_CHECK(ot_run(m, in5, after5) == CARVE_OK && ot_close(after5[0], before5[0], 0, 0, why, sizeof why),
             "partial shape: N=5 gives the same output: %s", why);
    cv_val_unref(in2[0]);
    cv_val_unref(in5[0]);
    cv_val_unref(before5[0]);
    cv_val_unref(after5[0]);
    carve_model_free(m);
}

/* Equal initializers are stored once; a subgraph reads the outer copy;
 * graph outputs keep their own. */
static void dedupe(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[1] = {4};
    float v[4] = {1, 2, 3, 4};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 1, xd);
    carve_value_id c1 = carve_graph_add_initializer(m, 0, "c1", CARVE_FLOAT, 1, xd, v, sizeof v);
    carve_value_id c2 = carve_graph_add_initializer(m, 0, "c2", CARVE_FLOAT, 1, xd, v, sizeof v);
    carve_value_id c4 = carve_graph_add_initializer(m, 0, "c4", CARVE_FLOAT, 1, xd, v, sizeof v);
    carve_value_id a[2] = {x, c1};
    carve_value_id s = ft_op(m, 0, "Add", "add", 2, a, "s");
    carve_value_id b[2] = {s, c2};
    carve_value_id p = ft_op(m, 0, "Mul", "mul", 2, b, "p");
    carve_value_id rin[1] = {x};
    carve_value_id rs = ft_op(m, 0, "ReduceSum", "rsum", 1, rin, "rs");
    carve_node_set_attr_int(m, carve_model_find_node(m, "rsum"), "keepdims", 0);
    carve_value_id zero = carve_graph_add_initializer(m, 0, "zero", CARVE_FLOAT, 0, NULL, &(float){0}, 4);
    carve_value_id gin[2] = {rs, zero};
    carve_value_id rc = ft_op(m, 0, "Greater", "gt", 2, gin, "rc");
    const char *o[1] = {"q"};
    carve_node_id iff = carve_graph_add_node(m, 0, "If", "", "if", 1, &rc, 1, o);
    carve_graph_id th = carve_graph_new_subgraph(m, 0, "then");
    carve_value_id c3 = carve_graph_add_initializer(m, th, "c3", CARVE_FLOAT, 1, xd, v, sizeof v);
    carve_value_id t[2] = {p, c3};
    carve_graph_add_output(m, th, ft_op(m, th, "Sub", "sub", 2, t, "d"));
    carve_graph_id el = carve_graph_new_subgraph(m, 0, "else");
    carve_graph_add_output(m, el, ft_op(m, el, "Neg", "neg", 1, &p, "n"));
    carve_node_set_attr_graph(m, iff, "then_branch", th);
    carve_node_set_attr_graph(m, iff, "else_branch", el);
    carve_graph_add_output(m, 0, carve_node_output(m, iff, 0));
    carve_graph_add_output(m, 0, c4); /* an output: stays itself */
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 1, xd, 3, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "dedupe");
    OT_CHECK(st.inits_deduped == 2, "2 duplicates gone, got %u", st.inits_deduped);
    carve_node_id mul = carve_model_find_node(m, "mul"), sub = carve_model_find_node(m, "sub");
    OT_CHECK(carve_node_input(m, mul, 1) == c1 && carve_node_input(m, sub, 1) == c1,
             "the Mul and the branch's Sub read the first copy");
    OT_CHECK(carve_graph_initializer_count(m, th) == 0, "the branch stores no copy");
    OT_CHECK(ft_is_init(m, "c4") && carve_graph_output(m, 0, 1) == c4, "the graph output keeps its own");
    cv_val *pos[1] = {ot_random(CARVE_FLOAT, 1, xd, 4, 0, 1)}, *out[2] = {0};
    OT_CHECK(ot_run(m, pos, out) == CARVE_OK, "the other branch runs");
    cv_val_unref(pos[0]);
    cv_val_unref(out[0]);
    cv_val_unref(out[1]);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* Ops that compute nothing go; a graph output is then written by the op
 * before them. */
static void noops(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {2, 3}, one = 1, big = INT64_MAX, zero = 0;
    float ones[1] = {1}, zeros[3] = {0, 0, 0};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id r = ft_op(m, 0, "Relu", "relu", 1, &x, "r");
    carve_value_id i1 = ft_op(m, 0, "Identity", "id1", 1, &r, "i1");
    carve_node_id cast = ft_node(m, 0, "Cast", "cast", 1, &i1, "c");
    carve_node_set_attr_int(m, cast, "to", CARVE_FLOAT);
    carve_value_id min[2] = {carve_node_output(m, cast, 0),
                             carve_graph_add_initializer(m, 0, "ones", CARVE_FLOAT, 1, &one, ones, sizeof ones)};
    carve_value_id mu = ft_op(m, 0, "Mul", "mul1", 2, min, "mu");
    carve_value_id sin[4] = {mu, ft_ints(m, 0, "st", 1, &zero), ft_ints(m, 0, "en", 1, &big), ft_ints(m, 0, "ax", 1, &one)};
    carve_value_id sl = ft_op(m, 0, "Slice", "slice_all", 4, sin, "sl");
    int64_t three = 3;
    carve_value_id ain[2] = {carve_graph_add_initializer(m, 0, "zeros", CARVE_FLOAT, 1, &three, zeros, sizeof zeros), sl};
    carve_value_id ad = ft_op(m, 0, "Add", "add0", 2, ain, "ad");
    carve_value_id dr = ft_op(m, 0, "Dropout", "drop", 1, &ad, "dr");
    carve_graph_add_output(m, 0, ft_op(m, 0, "Identity", "id_out", 1, &dr, "y"));
    /* a Mul by ones that broadcasts (its shape grows): stays */
    int64_t bd[3] = {2, 2, 3};
    float ob[12];
    for (int i = 0; i < 12; i++)
        ob[i] = 1;
    carve_value_id bin[2] = {x, carve_graph_add_initializer(m, 0, "ones3", CARVE_FLOAT, 3, bd, ob, sizeof ob)};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Mul", "mul_grows", 2, bin, "g"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, 3, -1, 1)};
    ft_fold_check(m, inputs, NULL, 0, 0, NULL, "no-ops");
    OT_CHECK(ft_count(m, NULL) == 2 && ft_alive(m, "relu") && ft_alive(m, "mul_grows"),
             "only the Relu and the growing Mul are left (%u nodes)", ft_count(m, NULL));
    OT_CHECK(carve_node_output(m, carve_model_find_node(m, "relu"), 0) == carve_graph_output(m, 0, 0) &&
                 !strcmp(carve_value_name(m, carve_graph_output(m, 0, 0)), "y"),
             "the Relu writes the graph output 'y'");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* Nodes that survive keep names and ops; dead nodes and unused initializers
 * go, and the report of each node's fate says why. */
static void names_and_fates(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t xd[2] = {2, 3};
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id w = ft_weight(m, 0, "w", CARVE_FLOAT, 2, xd, 1, -1, 1);
    ft_weight(m, 0, "unused", CARVE_FLOAT, 2, xd, 2, -1, 1);
    carve_value_id e = ft_op(m, 0, "Exp", "exp_w", 1, &w, "ew");
    carve_value_id a[2] = {x, e};
    carve_value_id s = ft_op(m, 0, "Add", "add", 2, a, "s");
    ft_op(m, 0, "Sin", "dead_sin", 1, &s, "dead"); /* nothing reads it */
    carve_graph_add_output(m, 0, ft_op(m, 0, "Tanh", "tanh", 1, &s, "y"));
    char *names[16];
    uint32_t n0 = (uint32_t)m->n_nodes;
    for (uint32_t i = 0; i < n0; i++)
        names[i] = strdup(m->nodes[i].name);
    cv_fold_node *fates = NULL;
    carve_fold_stats st;
    carve_status s0 = cv_fold_run(m, NULL, &st, &fates);
    OT_CHECK(s0 == CARVE_OK && fates, "fold: %s", carve_errmsg(ctx));
    for (uint32_t i = 0; i < n0 && fates; i++) {
        OT_CHECK(!strcmp(m->nodes[i].name, names[i]), "node %u keeps its name '%s' (now '%s')", i, names[i],
                 m->nodes[i].name);
        OT_CHECK(m->nodes[i].dead == (fates[i].fate != CV_FATE_KEPT), "node '%s': dead iff it has a fate", names[i]);
    }
    carve_node_id ds = carve_model_find_node(m, "dead_sin"), ex = carve_model_find_node(m, "exp_w");
    OT_CHECK(fates && fates[ds].fate == CV_FATE_REMOVED && fates[ds].why && strstr(fates[ds].why, "dead"),
             "the dead Sin is removed as dead");
    OT_CHECK(fates && fates[ex].fate == CV_FATE_FOLDED, "the Exp of a weight is folded");
    OT_CHECK(!ft_is_init(m, "unused") && !ft_is_init(m, "w") && ft_is_init(m, "ew"),
             "unused initializers go, the folded value stays");
    OT_CHECK(st.inits_removed == 2, "2 initializers removed, got %u", st.inits_removed);
    for (uint32_t i = 0; i < n0; i++)
        free(names[i]);
    cv_free(fates);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    folds_constants();
    guard_impure();
    guard_sequence();
    guard_blow_up();
    guard_dequantize();
    guard_loop();
    if_constant();
    if_outer_output();
    shape_static();
    dedupe();
    noops();
    names_and_fates();
    carve_ctx_free(ctx);
    return ot_finish();
}

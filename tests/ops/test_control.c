/* test_control.c: control flow (If, Loop, Scan with captured outer values,
 * nesting, errors, inference), sequences and optionals, random ops
 * (statistics, determinism) and LSTM/GRU/RNN against a plain reference. */
#include "opstest.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- builders */

static carve_model *new_model(carve_ctx *ctx, int64_t opset)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", opset);
    return m;
}

static carve_value_id input(carve_model *m, carve_graph_id g, const char *name, carve_dtype dt, int rank,
                            const int64_t *dims)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = (carve_dim){dims[i], NULL};
    return carve_graph_add_input(m, g, name, dt, rank, d);
}

/* A node with n_out outputs named "<name>:<i>"; returns the node. */
static carve_node_id add(carve_model *m, carve_graph_id g, const char *op, const char *name, size_t n_in,
                         const carve_value_id *ins, size_t n_out)
{
    char buf[8][64];
    const char *outs[8];
    for (size_t i = 0; i < n_out; i++) {
        snprintf(buf[i], sizeof buf[i], "%s:%zu", name, i);
        outs[i] = buf[i];
    }
    carve_node_id n = carve_graph_add_node(m, g, op, "", name, n_in, ins, n_out, outs);
    OT_CHECK(n != CARVE_NONE, "add %s: %s", name, carve_errmsg(carve_model_ctx(m)));
    return n;
}

static carve_value_id out0(carve_model *m, carve_node_id n) { return carve_node_output(m, n, 0); }

static carve_value_id scalar_i64(carve_model *m, carve_graph_id g, const char *name, int64_t v)
{
    return carve_graph_add_initializer(m, g, name, CARVE_INT64, 0, NULL, &v, sizeof v);
}

static cv_val *vec_f32(int rank, const int64_t *dims, const float *v)
{
    cv_val *x = cv_val_new(CARVE_FLOAT, rank, dims);
    memcpy(x->data, v, x->nbytes);
    return x;
}

static cv_val *bool_val(bool b)
{
    cv_val *v = cv_val_new(CARVE_BOOL, 0, NULL);
    *(uint8_t *)v->data = b;
    return v;
}

static bool has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

static void unref_n(cv_val **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cv_val_unref(v[i]);
        v[i] = NULL;
    }
}

/* ---------------------------------------------------------------- If */

/* If(cond) then x + x else x * x, both branches reading the outer x. */
static carve_model *if_model(carve_ctx *ctx, carve_dtype cond_dt, carve_dim *xdims)
{
    carve_model *m = new_model(ctx, 17);
    carve_value_id c = carve_graph_add_input(m, 0, "cond", cond_dt, 0, NULL);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, xdims);
    carve_graph_id tg = carve_graph_new_subgraph(m, 0, "then");
    carve_graph_id eg = carve_graph_new_subgraph(m, 0, "else");
    carve_value_id xx[2] = {x, x};
    carve_graph_add_output(m, tg, out0(m, add(m, tg, "Add", "then_add", 2, xx, 1)));
    carve_graph_add_output(m, eg, out0(m, add(m, eg, "Mul", "else_mul", 2, xx, 1)));
    carve_node_id n = add(m, 0, "If", "if", 1, &c, 1);
    carve_node_set_attr_graph(m, n, "then_branch", tg);
    carve_node_set_attr_graph(m, n, "else_branch", eg);
    carve_graph_add_output(m, 0, out0(m, n));
    return m;
}

static void test_if(carve_ctx *ctx)
{
    carve_dim xd[2] = {{2, NULL}, {3, NULL}};
    carve_model *m = if_model(ctx, CARVE_BOOL, xd);
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "If model verifies: %s", carve_errmsg(ctx));
    int64_t d[2] = {2, 3};
    float xs[6] = {1, 2, 3, -1, 0.5f, 4};
    cv_val *in[2] = {bool_val(true), vec_f32(2, d, xs)}, *out[1] = {0};
    OT_CHECK(ot_run(m, in, out) == CARVE_OK, "If then: %s", carve_errmsg(ctx));
    for (int i = 0; out[0] && i < 6; i++)
        OT_CHECK(((float *)out[0]->data)[i] == xs[i] + xs[i], "If then element %d", i);
    unref_n(out, 1);
    cv_val_unref(in[0]);
    in[0] = bool_val(false);
    OT_CHECK(ot_run(m, in, out) == CARVE_OK, "If else: %s", carve_errmsg(ctx));
    for (int i = 0; out[0] && i < 6; i++)
        OT_CHECK(((float *)out[0]->data)[i] == xs[i] * xs[i], "If else element %d", i);
    unref_n(out, 1);
    unref_n(in, 2);
    carve_model_free(m);

    /* cond of another dtype is an error naming the input */
    m = if_model(ctx, CARVE_INT32, xd);
    in[0] = cv_val_new(CARVE_INT32, 0, NULL);
    in[1] = vec_f32(2, d, xs);
    OT_CHECK(ot_run(m, in, out) != CARVE_OK && has(carve_errmsg(ctx), "node 'if' (If): input 0 'cond' is int32, expected bool"),
             "If int32 cond error: %s", carve_errmsg(ctx));
    unref_n(in, 2);
    carve_model_free(m);

    /* a cond with more than one element */
    m = if_model(ctx, CARVE_BOOL, xd);
    int64_t two = 2;
    in[0] = cv_val_new(CARVE_BOOL, 1, &two);
    in[1] = vec_f32(2, d, xs);
    OT_CHECK(ot_run(m, in, out) != CARVE_OK && has(carve_errmsg(ctx), "one element"), "If 2-element cond: %s",
             carve_errmsg(ctx));
    unref_n(in, 2);
    carve_model_free(m);

    /* inference: symbolic dims survive both branches */
    carve_dim sd[2] = {{-1, "N"}, {3, NULL}};
    m = if_model(ctx, CARVE_BOOL, sd);
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "If inference: %s", carve_errmsg(ctx));
    carve_value_id y = carve_graph_output(m, 0, 0);
    carve_dim y0 = carve_value_dim(m, y, 0), y1 = carve_value_dim(m, y, 1);
    OT_CHECK(carve_value_dtype(m, y) == CARVE_FLOAT && carve_value_rank(m, y) == 2 && y0.param &&
                 !strcmp(y0.param, "N") && y1.value == 3,
             "If infers float [N,3]");
    carve_model_free(m);

    /* inference: branches of different dtypes contradict */
    m = new_model(ctx, 17);
    carve_value_id c = carve_graph_add_input(m, 0, "cond", CARVE_BOOL, 0, NULL);
    carve_graph_id tg = carve_graph_new_subgraph(m, 0, "then"), eg = carve_graph_new_subgraph(m, 0, "else");
    float one = 1;
    int64_t onei = 1;
    carve_graph_add_output(m, tg, carve_graph_add_initializer(m, tg, "tf", CARVE_FLOAT, 0, NULL, &one, 4));
    carve_graph_add_output(m, eg, carve_graph_add_initializer(m, eg, "ei", CARVE_INT64, 0, NULL, &onei, 8));
    carve_node_id n = add(m, 0, "If", "ifmix", 1, &c, 1);
    carve_node_set_attr_graph(m, n, "then_branch", tg);
    carve_node_set_attr_graph(m, n, "else_branch", eg);
    carve_graph_add_output(m, 0, out0(m, n));
    OT_CHECK(cv_infer_model(m, NULL) != CARVE_OK &&
                 has(carve_errmsg(ctx), "node 'ifmix' (If): output 0 is float32 in then_branch but int64 in else_branch"),
             "If dtype mismatch: %s", carve_errmsg(ctx));
    /* runs: the branch's initializer is the output */
    in[0] = bool_val(false);
    OT_CHECK(ot_run(m, in, out) == CARVE_OK && out[0] && out[0]->dtype == CARVE_INT64 &&
                 *(int64_t *)out[0]->data == 1,
             "If returns the else initializer: %s", carve_errmsg(ctx));
    unref_n(out, 1);
    unref_n(in, 1);
    carve_model_free(m);
}

/* ---------------------------------------------------------------- Loop */

/* Loop(M, cond, s0): s = s + x (x outer), scan output s; cond_out from
 * `cond_op` (Identity of cond_in, or Less(iter, limit)). With nested, the
 * body adds x when iter < 2 and multiplies by x otherwise (an If inside). */
typedef struct {
    bool has_m, has_cond, less_cond, nested, bad_outputs;
    carve_dim sdim;
} loop_opts;

static carve_model *loop_model(carve_ctx *ctx, loop_opts o)
{
    carve_model *m = new_model(ctx, 16);
    int64_t two = 2;
    carve_value_id mv = o.has_m ? input(m, 0, "M", CARVE_INT64, 0, NULL) : CARVE_NONE;
    carve_value_id cv = o.has_cond ? carve_graph_add_input(m, 0, "cond", CARVE_BOOL, 0, NULL) : CARVE_NONE;
    carve_value_id s0 = carve_graph_add_input(m, 0, "s0", CARVE_FLOAT, 1, &o.sdim);
    carve_value_id x = input(m, 0, "x", CARVE_FLOAT, 1, &two);
    carve_graph_id b = carve_graph_new_subgraph(m, 0, "body");
    carve_value_id it = carve_graph_add_input(m, b, "iter", CARVE_INT64, 0, NULL);
    carve_value_id ci = carve_graph_add_input(m, b, "cond_in", CARVE_BOOL, 0, NULL);
    carve_value_id si = carve_graph_add_input(m, b, "s_in", CARVE_FLOAT, 1, &o.sdim);
    carve_value_id co;
    if (o.less_cond) {
        carve_value_id lim = scalar_i64(m, b, "limit", 3);
        carve_value_id ins[2] = {it, lim};
        co = out0(m, add(m, b, "Less", "less", 2, ins, 1));
    } else {
        co = out0(m, add(m, b, "Identity", "cond_id", 1, &ci, 1));
    }
    carve_value_id sx[2] = {si, x}, so;
    if (o.nested) {
        carve_value_id lim = scalar_i64(m, b, "two", 2);
        carve_value_id ins[2] = {it, lim};
        carve_value_id small = out0(m, add(m, b, "Less", "small", 2, ins, 1));
        carve_graph_id tg = carve_graph_new_subgraph(m, b, "then"), eg = carve_graph_new_subgraph(m, b, "else");
        carve_graph_add_output(m, tg, out0(m, add(m, tg, "Add", "inner_add", 2, sx, 1)));
        carve_graph_add_output(m, eg, out0(m, add(m, eg, "Mul", "inner_mul", 2, sx, 1)));
        carve_node_id ifn = add(m, b, "If", "inner_if", 1, &small, 1);
        carve_node_set_attr_graph(m, ifn, "then_branch", tg);
        carve_node_set_attr_graph(m, ifn, "else_branch", eg);
        so = out0(m, ifn);
    } else {
        so = out0(m, add(m, b, "Add", "acc", 2, sx, 1));
    }
    carve_value_id scan = out0(m, add(m, b, "Identity", "scan_id", 1, &so, 1));
    carve_graph_add_output(m, b, co);
    carve_graph_add_output(m, b, so);
    if (!o.bad_outputs)
        carve_graph_add_output(m, b, scan);
    carve_value_id ins[3] = {mv, cv, s0};
    carve_node_id n = add(m, 0, "Loop", "loop", 3, ins, 2);
    carve_node_set_attr_graph(m, n, "body", b);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, n, 1));
    (void)it;
    return m;
}

static void test_loop(carve_ctx *ctx)
{
    int64_t two = 2;
    float s0v[2] = {1, -1}, xv[2] = {0.5f, 2};
    loop_opts o = {true, true, false, false, false, {2, NULL}};
    carve_model *m = loop_model(ctx, o);
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "Loop verifies: %s", carve_errmsg(ctx));
    cv_val *in[4] = {cv_val_scalar_i64(5), bool_val(true), vec_f32(1, &two, s0v), vec_f32(1, &two, xv)};
    cv_val *out[2] = {0};
    OT_CHECK(ot_run(m, in, out) == CARVE_OK, "Loop run: %s", carve_errmsg(ctx));
    if (out[0] && out[1]) {
        float *s = out[0]->data, *sc = out[1]->data;
        OT_CHECK(s[0] == 1 + 5 * 0.5f && s[1] == -1 + 5 * 2.0f, "Loop final %g %g", s[0], s[1]);
        OT_CHECK(out[1]->rank == 2 && out[1]->dims[0] == 5 && out[1]->dims[1] == 2, "Loop scan shape");
        for (int i = 0; i < 5 && out[1]->nelem == 10; i++)
            OT_CHECK(sc[2 * i] == 1 + (float)(i + 1) * 0.5f && sc[2 * i + 1] == -1 + (float)(i + 1) * 2,
                     "Loop scan row %d", i);
    }
    unref_n(out, 2);

    /* zero iterations: carried value unchanged, scan output [0, 2]; the
     * shape of an empty scan output comes from the body's (inferred) type */
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "Loop inference: %s", carve_errmsg(ctx));
    cv_val_unref(in[0]);
    in[0] = cv_val_scalar_i64(0);
    OT_CHECK(ot_run(m, in, out) == CARVE_OK, "Loop 0 iterations: %s", carve_errmsg(ctx));
    OT_CHECK(out[0] && ((float *)out[0]->data)[0] == 1, "Loop 0 iterations keeps s0");
    OT_CHECK(out[1] && out[1]->rank == 2 && out[1]->dims[0] == 0 && out[1]->dims[1] == 2 &&
                 out[1]->dtype == CARVE_FLOAT,
             "Loop 0 iterations scan output is float [0,2]");
    unref_n(out, 2);
    /* cond false at the start: no iteration either */
    cv_val_unref(in[0]);
    cv_val_unref(in[1]);
    in[0] = cv_val_scalar_i64(7);
    in[1] = bool_val(false);
    OT_CHECK(ot_run(m, in, out) == CARVE_OK && out[1] && out[1]->dims[0] == 0, "Loop cond false: %s",
             carve_errmsg(ctx));
    unref_n(out, 2);
    /* a cond that is not bool */
    cv_val_unref(in[1]);
    in[1] = cv_val_scalar_f32(1);
    OT_CHECK(ot_run(m, in, out) != CARVE_OK && has(carve_errmsg(ctx), "input 1 'cond' is float32, expected bool"),
             "Loop float cond: %s", carve_errmsg(ctx));
    cv_val_unref(in[1]);
    in[1] = bool_val(true);

    /* inference: symbolic carried dims, scan output gets a leading dim */
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "Loop inference: %s", carve_errmsg(ctx));
    carve_value_id sc = carve_graph_output(m, 0, 1);
    OT_CHECK(carve_value_rank(m, sc) == 3 - 1 && carve_value_dim(m, sc, 0).value == -1 &&
                 carve_value_dim(m, sc, 1).value == 2 && carve_value_dtype(m, sc) == CARVE_FLOAT,
             "Loop scan output inferred as float [?,2]");
    carve_model_free(m);

    /* while loop: no M, the body's Less(iter, 3) stops after 4 iterations */
    o = (loop_opts){false, true, true, false, false, {2, NULL}};
    m = loop_model(ctx, o);
    cv_val *win[4] = {NULL, bool_val(true), vec_f32(1, &two, s0v), vec_f32(1, &two, xv)};
    /* the model has inputs cond, s0, x */
    cv_val *w3[3] = {win[1], win[2], win[3]};
    OT_CHECK(ot_run(m, w3, out) == CARVE_OK, "while Loop: %s", carve_errmsg(ctx));
    OT_CHECK(out[1] && out[1]->dims[0] == 4, "while Loop ran 4 iterations (%lld)",
             out[1] ? (long long)out[1]->dims[0] : -1LL);
    unref_n(out, 2);
    unref_n(win, 4);
    carve_model_free(m);

    /* for loop without cond: the body's cond output is ignored (spec) */
    o = (loop_opts){true, false, true, false, false, {2, NULL}};
    m = loop_model(ctx, o);
    cv_val *f3[3] = {cv_val_scalar_i64(6), vec_f32(1, &two, s0v), vec_f32(1, &two, xv)};
    OT_CHECK(ot_run(m, f3, out) == CARVE_OK && out[1] && out[1]->dims[0] == 6, "for Loop runs M=6 times: %s",
             carve_errmsg(ctx));
    unref_n(out, 2);
    /* inference with M constant and no cond: exact trip count */
    carve_model_free(m);
    unref_n(f3, 3);

    /* nested If inside the body: s = ((s0 + x) + x) * x * x for M = 4 */
    o = (loop_opts){true, true, false, true, false, {2, NULL}};
    m = loop_model(ctx, o);
    cv_val_unref(in[0]);
    in[0] = cv_val_scalar_i64(4);
    OT_CHECK(ot_run(m, in, out) == CARVE_OK, "nested Loop/If: %s", carve_errmsg(ctx));
    if (out[0]) {
        float *s = out[0]->data;
        float e0 = (1 + 0.5f + 0.5f) * 0.5f * 0.5f, e1 = (-1 + 2.0f + 2.0f) * 2 * 2;
        OT_CHECK(s[0] == e0 && s[1] == e1, "nested Loop/If values %g %g, expected %g %g", s[0], s[1], e0, e1);
    }
    unref_n(out, 2);
    carve_model_free(m);

    /* a body with the wrong number of outputs */
    o = (loop_opts){true, true, false, false, true, {2, NULL}};
    m = loop_model(ctx, o);
    OT_CHECK(ot_run(m, in, out) != CARVE_OK &&
                 has(carve_errmsg(ctx), "node 'loop' (Loop): attribute 'body': graph 'body' has 2 outputs, expected 3"),
             "Loop body output count error: %s", carve_errmsg(ctx));
    carve_model_free(m);

    /* a carried value that changes shape breaks nothing, but a scan output
     * that does is an error: covered by the same check in Scan below */
    unref_n(in, 4);
}

/* Loop with M from an initializer and no cond: inference knows the trip
 * count. */
static void test_loop_infer_trip(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 16);
    carve_value_id mv = scalar_i64(m, 0, "M", 7);
    carve_dim sd = {-1, "K"};
    carve_value_id s0 = carve_graph_add_input(m, 0, "s0", CARVE_FLOAT, 1, &sd);
    carve_graph_id b = carve_graph_new_subgraph(m, 0, "body");
    carve_graph_add_input(m, b, "i", CARVE_INT64, 0, NULL);
    carve_value_id ci = carve_graph_add_input(m, b, "c", CARVE_BOOL, 0, NULL);
    carve_value_id si = carve_graph_add_input(m, b, "s", CARVE_FLOAT, 1, &sd);
    carve_value_id ss[2] = {si, si};
    carve_value_id so = out0(m, add(m, b, "Add", "dbl", 2, ss, 1));
    carve_graph_add_output(m, b, ci);
    carve_graph_add_output(m, b, so);
    carve_graph_add_output(m, b, so);
    carve_value_id ins[3] = {mv, CARVE_NONE, s0};
    carve_node_id n = add(m, 0, "Loop", "loop7", 3, ins, 2);
    carve_node_set_attr_graph(m, n, "body", b);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, n, 1));
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "Loop trip inference: %s", carve_errmsg(ctx));
    carve_value_id y = carve_node_output(m, n, 0), sc = carve_node_output(m, n, 1);
    carve_dim y0 = carve_value_dim(m, y, 0), s1 = carve_value_dim(m, sc, 1);
    OT_CHECK(carve_value_rank(m, y) == 1 && y0.param && !strcmp(y0.param, "K"), "Loop carried keeps [K]");
    OT_CHECK(carve_value_rank(m, sc) == 2 && carve_value_dim(m, sc, 0).value == 7 && s1.param &&
                 !strcmp(s1.param, "K"),
             "Loop scan output inferred [7,K]");
    int64_t three = 3;
    float v[3] = {1, 2, 3};
    cv_val *in[1] = {vec_f32(1, &three, v)}, *out[2] = {0};
    OT_CHECK(ot_run(m, in, out) == CARVE_OK && out[0] && ((float *)out[0]->data)[2] == 3 * 128 && out[1] &&
                 out[1]->dims[0] == 7,
             "Loop with omitted cond runs M times: %s", carve_errmsg(ctx));
    unref_n(out, 2);
    unref_n(in, 1);
    carve_model_free(m);
}

/* Loop over a captured sequence: scan output = SequenceAt(seq, iter). An
 * error inside the body names the loop and the iteration; a scan output
 * that changes shape is refused. */
static void test_loop_body_errors(carve_ctx *ctx)
{
    for (int mode = 0; mode < 2; mode++) {
        carve_model *m = new_model(ctx, 16);
        int64_t d2 = 2, d3 = mode ? 3 : 2;
        carve_value_id a = input(m, 0, "a", CARVE_FLOAT, 1, &d2), b = input(m, 0, "b", CARVE_FLOAT, 1, &d3);
        carve_value_id ab[2] = {a, b};
        carve_value_id seq = out0(m, add(m, 0, "SequenceConstruct", "seq", 2, ab, 1));
        carve_graph_id body = carve_graph_new_subgraph(m, 0, "body");
        carve_value_id it = carve_graph_add_input(m, body, "it", CARVE_INT64, 0, NULL);
        carve_value_id ci = carve_graph_add_input(m, body, "ci", CARVE_BOOL, 0, NULL);
        carve_value_id si[2] = {seq, it};
        carve_graph_add_output(m, body, ci); /* a body input straight out */
        carve_graph_add_output(m, body, out0(m, add(m, body, "SequenceAt", "at", 2, si, 1)));
        carve_value_id ins[2] = {scalar_i64(m, 0, "M", mode ? 2 : 3), CARVE_NONE};
        carve_node_id n = add(m, 0, "Loop", "walk", 2, ins, 1);
        carve_node_set_attr_graph(m, n, "body", body);
        carve_graph_add_output(m, 0, out0(m, n));
        float av[3] = {1, 2, 3};
        cv_val *in[2] = {vec_f32(1, &d2, av), vec_f32(1, &d3, av)}, *out[1] = {0};
        carve_status s = ot_run(m, in, out);
        if (mode == 0)
            OT_CHECK(s != CARVE_OK && has(carve_errmsg(ctx), "node 'walk' (Loop): body iteration 2: node 'at' "
                                                             "(SequenceAt): input 1 'position' is 2 but the sequence "
                                                             "has 2 tensors"),
                     "error inside a Loop body: %s", carve_errmsg(ctx));
        else
            OT_CHECK(s != CARVE_OK && has(carve_errmsg(ctx), "scan output 0 is float32 [3] at iteration 1 but float32 "
                                                             "[2] at iteration 0"),
                     "Loop scan output changing shape: %s", carve_errmsg(ctx));
        unref_n(out, 1);
        unref_n(in, 2);
        carve_model_free(m);
    }
}

/* ---------------------------------------------------------------- Scan */

/* Scan-16 over x [2,4] along axis `in_axis`, direction in_dir; state sum
 * [2 or 4]; scan output = sum * w (w outer) stacked at out_axis/out_dir. */
static carve_model *scan_model(carve_ctx *ctx, int64_t in_axis, int64_t in_dir, int64_t out_axis, int64_t out_dir,
                               int64_t slice)
{
    carve_model *m = new_model(ctx, 16);
    int64_t xd[2] = {2, 4};
    carve_value_id init = input(m, 0, "init", CARVE_FLOAT, 1, &slice);
    carve_value_id x = input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id w = input(m, 0, "w", CARVE_FLOAT, 1, &slice);
    carve_graph_id b = carve_graph_new_subgraph(m, 0, "scan_body");
    carve_value_id si = input(m, b, "sum_in", CARVE_FLOAT, 1, &slice);
    carve_value_id xi = input(m, b, "x_t", CARVE_FLOAT, 1, &slice);
    carve_value_id a[2] = {si, xi};
    carve_value_id so = out0(m, add(m, b, "Add", "sum", 2, a, 1));
    carve_value_id sw[2] = {so, w};
    carve_value_id sc = out0(m, add(m, b, "Mul", "scaled", 2, sw, 1));
    carve_graph_add_output(m, b, so);
    carve_graph_add_output(m, b, sc);
    carve_value_id ins[2] = {init, x};
    carve_node_id n = add(m, 0, "Scan", "scan", 2, ins, 2);
    carve_node_set_attr_graph(m, n, "body", b);
    carve_node_set_attr_int(m, n, "num_scan_inputs", 1);
    carve_node_set_attr_ints(m, n, "scan_input_axes", 1, &in_axis);
    carve_node_set_attr_ints(m, n, "scan_input_directions", 1, &in_dir);
    carve_node_set_attr_ints(m, n, "scan_output_axes", 1, &out_axis);
    carve_node_set_attr_ints(m, n, "scan_output_directions", 1, &out_dir);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, n, 1));
    return m;
}

static void test_scan(carve_ctx *ctx)
{
    float xv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t xd[2] = {2, 4};
    for (int in_axis = 0; in_axis < 2; in_axis++)
        for (int in_dir = 0; in_dir < 2; in_dir++)
            for (int out_axis = -2; out_axis < 2; out_axis++)
                for (int out_dir = 0; out_dir < 2; out_dir++) {
                    int64_t slice = in_axis ? 2 : 4, steps = in_axis ? 4 : 2;
                    carve_model *m = scan_model(ctx, in_axis, in_dir, out_axis, out_dir, slice);
                    float init[4] = {10, 20, 30, 40}, w[4] = {1, -1, 2, 0.5f};
                    cv_val *in[3] = {vec_f32(1, &slice, init), vec_f32(2, xd, xv), vec_f32(1, &slice, w)};
                    cv_val *out[2] = {0};
                    carve_status s = ot_run(m, in, out);
                    OT_CHECK(s == CARVE_OK, "Scan %d/%d/%d/%d: %s", in_axis, in_dir, out_axis, out_dir,
                             carve_errmsg(ctx));
                    /* reference */
                    float sum[4], hist[4][4];
                    memcpy(sum, init, sizeof sum);
                    for (int t = 0; t < steps; t++) {
                        int idx = in_dir ? (int)steps - 1 - t : t;
                        for (int j = 0; j < slice; j++) {
                            sum[j] += in_axis ? xv[j * 4 + idx] : xv[idx * 4 + j];
                            hist[t][j] = sum[j] * w[j];
                        }
                    }
                    bool ok = s == CARVE_OK && out[0] && out[1];
                    for (int j = 0; ok && j < slice; j++)
                        ok = ((float *)out[0]->data)[j] == sum[j];
                    int oa = out_axis < 0 ? out_axis + 2 : out_axis;
                    ok = ok && out[1]->rank == 2 && out[1]->dims[oa] == steps && out[1]->dims[1 - oa] == slice;
                    for (int t = 0; ok && t < steps; t++)
                        for (int j = 0; ok && j < slice; j++) {
                            int pos = out_dir ? (int)steps - 1 - t : t;
                            size_t at = oa == 0 ? (size_t)(pos * slice + j) : (size_t)(j * steps + pos);
                            ok = ((float *)out[1]->data)[at] == hist[t][j];
                        }
                    OT_CHECK(ok, "Scan values in_axis %d in_dir %d out_axis %d out_dir %d", in_axis, in_dir,
                             out_axis, out_dir);
                    if (in_axis == 1 && in_dir == 0 && out_axis == 1 && out_dir == 0) {
                        OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "Scan inference: %s", carve_errmsg(ctx));
                        carve_value_id y = carve_graph_output(m, 0, 1);
                        OT_CHECK(carve_value_rank(m, y) == 2 && carve_value_dim(m, y, 0).value == 2 &&
                                     carve_value_dim(m, y, 1).value == 4,
                                 "Scan output inferred [2,4] (scan axis 1)");
                    }
                    unref_n(out, 2);
                    unref_n(in, 3);
                    carve_model_free(m);
                }
    /* Scan-8: batched, with sequence_lens and a reversed input: the scan
     * output is padded with zeros past each row's length */
    {
        carve_model *m = new_model(ctx, 8);
        int64_t sd[2] = {2, 2}, xd8[3] = {2, 3, 2}, two = 2;
        carve_value_id lens = input(m, 0, "lens", CARVE_INT64, 1, &two);
        carve_value_id init = input(m, 0, "init", CARVE_FLOAT, 2, sd);
        carve_value_id x = input(m, 0, "x", CARVE_FLOAT, 3, xd8);
        carve_graph_id b = carve_graph_new_subgraph(m, 0, "scan8_body");
        carve_value_id ab[2] = {input(m, b, "s", CARVE_FLOAT, 1, &two), input(m, b, "e", CARVE_FLOAT, 1, &two)};
        carve_value_id so = out0(m, add(m, b, "Add", "s8", 2, ab, 1));
        carve_graph_add_output(m, b, so);
        carve_graph_add_output(m, b, out0(m, add(m, b, "Identity", "s8_out", 1, &so, 1)));
        carve_value_id ins[3] = {lens, init, x};
        carve_node_id n = add(m, 0, "Scan", "scan8", 3, ins, 2);
        carve_node_set_attr_graph(m, n, "body", b);
        carve_node_set_attr_int(m, n, "num_scan_inputs", 1);
        int64_t dir = 1;
        carve_node_set_attr_ints(m, n, "directions", 1, &dir);
        carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
        carve_graph_add_output(m, 0, carve_node_output(m, n, 1));
        float iv[4] = {0, 100, 0, 100}, xs[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        cv_val *in[3] = {cv_val_new(CARVE_INT64, 1, &two), vec_f32(2, sd, iv), vec_f32(3, xd8, xs)}, *out[2] = {0};
        ((int64_t *)in[0]->data)[0] = 3, ((int64_t *)in[0]->data)[1] = 2;
        OT_CHECK(ot_run(m, in, out) == CARVE_OK, "Scan-8: %s", carve_errmsg(ctx));
        /* row 0 reversed over 3 steps: 5,6 then 8,10 then 9,112; row 1 over
         * its 2 steps: 9,10 then 16,118, padded */
        float ws[4] = {9, 112, 16, 118}, wy[12] = {5, 106, 8, 110, 9, 112, 9, 110, 16, 118, 0, 0};
        bool ok = out[0] && out[1] && out[1]->rank == 3 && out[1]->dims[0] == 2 && out[1]->dims[1] == 3 &&
                  out[1]->dims[2] == 2;
        for (int i = 0; ok && i < 4; i++)
            ok = ((float *)out[0]->data)[i] == ws[i];
        for (int i = 0; ok && i < 12; i++)
            ok = ((float *)out[1]->data)[i] == wy[i];
        OT_CHECK(ok, "Scan-8 values with sequence_lens and reverse direction");
        unref_n(out, 2);
        ((int64_t *)in[0]->data)[1] = 4;
        OT_CHECK(ot_run(m, in, out) != CARVE_OK &&
                     has(carve_errmsg(ctx), "input 0 'sequence_lens' value 1 is 4, outside [0, 3]"),
                 "Scan-8 length past the sequence: %s", carve_errmsg(ctx));
        OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK && carve_value_rank(m, carve_node_output(m, n, 1)) == 3 &&
                     carve_value_dim(m, carve_node_output(m, n, 1), 1).value == 3 &&
                     carve_value_dim(m, carve_node_output(m, n, 0), 0).value == 2,
                 "Scan-8 inference: %s", carve_errmsg(ctx));
        unref_n(in, 3);
        carve_model_free(m);
    }
    /* bad axis */
    int64_t slice = 4;
    carve_model *m = scan_model(ctx, 2, 0, 0, 0, slice);
    float init[4] = {0}, w[4] = {0};
    cv_val *in[3] = {vec_f32(1, &slice, init), vec_f32(2, xd, xv), vec_f32(1, &slice, w)}, *out[2] = {0};
    OT_CHECK(ot_run(m, in, out) != CARVE_OK &&
                 has(carve_errmsg(ctx), "attribute 'scan_input_axes' value 0 is 2 but scan input 0 has rank 2"),
             "Scan bad axis: %s", carve_errmsg(ctx));
    unref_n(in, 3);
    carve_model_free(m);
}

/* ---------------------------------------------------------------- sequences */

static void test_sequences(carve_ctx *ctx)
{
    /* SplitToSequence then ConcatFromSequence gives the input back, for
     * each way of splitting */
    for (int mode = 0; mode < 4; mode++) {
        carve_model *m = new_model(ctx, 17);
        int64_t xd[3] = {2, 5, 3};
        carve_value_id x = input(m, 0, "x", CARVE_FLOAT, 3, xd);
        carve_value_id sp = CARVE_NONE;
        if (mode == 1)
            sp = scalar_i64(m, 0, "split", 2);
        if (mode == 2) {
            int64_t parts[3] = {1, 0, 4}, three = 3;
            sp = carve_graph_add_initializer(m, 0, "split", CARVE_INT64, 1, &three, parts, sizeof parts);
        }
        carve_value_id ins[2] = {x, sp};
        carve_node_id s = add(m, 0, "SplitToSequence", "split", sp == CARVE_NONE ? 1 : 2, ins, 1);
        carve_node_set_attr_int(m, s, "axis", -2);
        if (mode == 3)
            carve_node_set_attr_int(m, s, "keepdims", 0);
        carve_value_id sv = out0(m, s);
        carve_node_id len = add(m, 0, "SequenceLength", "len", 1, &sv, 1);
        carve_node_id c = add(m, 0, "ConcatFromSequence", "concat", 1, &sv, 1);
        carve_node_set_attr_int(m, c, "axis", 1);
        if (mode == 3)
            carve_node_set_attr_int(m, c, "new_axis", 1);
        carve_graph_add_output(m, 0, out0(m, c));
        carve_graph_add_output(m, 0, out0(m, len));
        cv_val *in[1] = {ot_random(CARVE_FLOAT, 3, xd, 7, -1, 1)}, *out[2] = {0};
        OT_CHECK(ot_run(m, in, out) == CARVE_OK, "split/concat mode %d: %s", mode, carve_errmsg(ctx));
        char why[200] = "";
        OT_CHECK(out[0] && ot_close(out[0], in[0], 0, 0, why, sizeof why), "split/concat mode %d round trip: %s", mode,
                 why);
        int64_t want_len[4] = {5, 3, 3, 5};
        OT_CHECK(out[1] && *(int64_t *)out[1]->data == want_len[mode], "split mode %d gives %lld tensors", mode,
                 (long long)want_len[mode]);
        OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "split/concat inference: %s", carve_errmsg(ctx));
        carve_value_id y = out0(m, c);
        OT_CHECK(carve_value_dtype(m, y) == CARVE_FLOAT && carve_value_rank(m, y) == 3 &&
                     carve_value_dim(m, y, 0).value == 2 && carve_value_dim(m, y, 2).value == 3,
                 "ConcatFromSequence inferred float [2,?,3] from SplitToSequence (mode %d)", mode);
        OT_CHECK(carve_value_dtype(m, out0(m, len)) == CARVE_INT64 && carve_value_rank(m, out0(m, len)) == 0,
                 "SequenceLength inferred int64 scalar");
        unref_n(out, 2);
        unref_n(in, 1);
        carve_model_free(m);
    }

    /* split lengths that do not add up */
    carve_model *m = new_model(ctx, 17);
    int64_t xd[1] = {5}, two = 2;
    carve_value_id x = input(m, 0, "x", CARVE_FLOAT, 1, xd);
    int64_t parts[2] = {1, 2};
    carve_value_id ins[3] = {x, carve_graph_add_initializer(m, 0, "split", CARVE_INT64, 1, &two, parts, 16)};
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "SplitToSequence", "bad_split", 2, ins, 1)));
    cv_val *in[3] = {ot_random(CARVE_FLOAT, 1, xd, 1, 0, 1)}, *out[2] = {0};
    OT_CHECK(ot_run(m, in, out) != CARVE_OK && has(carve_errmsg(ctx), "input 1 'split' sums to 3 but input 0 dim 0 is 5"),
             "split sum error: %s", carve_errmsg(ctx));
    unref_n(in, 1);
    carve_model_free(m);

    /* construct, insert at -1, erase at 0, at(-1); positions out of range */
    m = new_model(ctx, 17);
    int64_t d3 = 3;
    carve_value_id a = input(m, 0, "a", CARVE_INT64, 1, &d3), b = input(m, 0, "b", CARVE_INT64, 1, &d3);
    carve_value_id p = input(m, 0, "p", CARVE_INT64, 0, NULL), q = input(m, 0, "q", CARVE_INT32, 0, NULL);
    carve_value_id ab[2] = {a, b};
    carve_value_id s = out0(m, add(m, 0, "SequenceConstruct", "construct", 2, ab, 1));
    carve_value_id ins3[3] = {s, b, p};
    carve_value_id s2 = out0(m, add(m, 0, "SequenceInsert", "insert", 3, ins3, 1)); /* a b b or b a b ... */
    carve_value_id e[2] = {s2, q};
    carve_value_id s3 = out0(m, add(m, 0, "SequenceErase", "erase", 2, e, 1));
    carve_value_id at[2] = {s3, p};
    carve_node_id atn = add(m, 0, "SequenceAt", "at", 2, at, 1);
    carve_graph_add_output(m, 0, out0(m, atn));
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "SequenceLength", "len3", 1, &s3, 1)));
    int64_t av[3] = {1, 2, 3}, bv[3] = {4, 5, 6};
    in[0] = cv_val_new(CARVE_INT64, 1, &d3);
    in[1] = cv_val_new(CARVE_INT64, 1, &d3);
    memcpy(in[0]->data, av, 24);
    memcpy(in[1]->data, bv, 24);
    in[2] = cv_val_scalar_i64(-1);
    cv_val *in4[4] = {in[0], in[1], in[2], cv_val_new(CARVE_INT32, 0, NULL)};
    /* [a, b] insert b at -1 -> [a, b, b]; erase 0 -> [b, b]; at -1 -> b */
    OT_CHECK(ot_run(m, in4, out) == CARVE_OK && out[0] && ((int64_t *)out[0]->data)[0] == 4 &&
                 *(int64_t *)out[1]->data == 2,
             "sequence insert/erase/at: %s", carve_errmsg(ctx));
    unref_n(out, 2);
    *(int64_t *)in4[2]->data = -3; /* insert at -3 is out of [-2, 2] */
    OT_CHECK(ot_run(m, in4, out) != CARVE_OK &&
                 has(carve_errmsg(ctx), "node 'insert' (SequenceInsert): input 2 'position' is -3 but the sequence has 2 tensors"),
             "SequenceInsert range: %s", carve_errmsg(ctx));
    *(int64_t *)in4[2]->data = 2;  /* insert at the back: [a, b, b] */
    *(int32_t *)in4[3]->data = 3;  /* erase 3 of 3 tensors */
    OT_CHECK(ot_run(m, in4, out) != CARVE_OK && has(carve_errmsg(ctx), "input 1 'position' is 3 but the sequence has 3"),
             "SequenceErase range: %s", carve_errmsg(ctx));
    *(int32_t *)in4[3]->data = -3; /* erase a -> [b, b]; at 2 is out of range */
    OT_CHECK(ot_run(m, in4, out) != CARVE_OK && has(carve_errmsg(ctx), "node 'at' (SequenceAt): input 1 'position' is 2"),
             "SequenceAt range: %s", carve_errmsg(ctx));
    unref_n(in4, 4);
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK &&
                 carve_value_dtype(m, out0(m, atn)) == CARVE_INT64 && carve_value_rank(m, out0(m, atn)) == -1,
             "SequenceAt inferred int64: %s", carve_errmsg(ctx));
    carve_model_free(m);

    /* SequenceEmpty + insert of another dtype */
    m = new_model(ctx, 17);
    carve_value_id f = input(m, 0, "f", CARVE_FLOAT, 1, &d3);
    carve_node_id en = add(m, 0, "SequenceEmpty", "empty", 0, NULL, 1);
    carve_node_set_attr_int(m, en, "dtype", CARVE_INT32);
    carve_value_id ef[2] = {out0(m, en), f};
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "SequenceInsert", "ins_f", 2, ef, 1)));
    in[0] = ot_random(CARVE_FLOAT, 1, &d3, 1, 0, 1);
    OT_CHECK(ot_run(m, in, out) != CARVE_OK && has(carve_errmsg(ctx), "input 1 'tensor' is float32 but the sequence holds int32"),
             "SequenceInsert dtype: %s", carve_errmsg(ctx));
    unref_n(in, 1);
    carve_model_free(m);

    /* ConcatFromSequence of strings, with new_axis at the end */
    m = new_model(ctx, 17);
    carve_value_id s1 = input(m, 0, "s1", CARVE_STRING, 1, &two), s2v = input(m, 0, "s2", CARVE_STRING, 1, &two);
    carve_value_id ss[2] = {s1, s2v};
    carve_value_id sq = out0(m, add(m, 0, "SequenceConstruct", "strs", 2, ss, 1));
    carve_node_id cc = add(m, 0, "ConcatFromSequence", "stack", 1, &sq, 1);
    carve_node_set_attr_int(m, cc, "axis", -1);
    carve_node_set_attr_int(m, cc, "new_axis", 1);
    carve_graph_add_output(m, 0, out0(m, cc));
    const char *sv[4] = {"a", "bb", "ccc", ""};
    for (int i = 0; i < 2; i++) {
        in[i] = cv_val_new(CARVE_STRING, 1, &two);
        for (int j = 0; j < 2; j++) {
            char **st = in[i]->data;
            st[j] = cv_malloc(strlen(sv[i * 2 + j]) + 1);
            strcpy(st[j], sv[i * 2 + j]);
        }
    }
    OT_CHECK(ot_run(m, in, out) == CARVE_OK && out[0] && out[0]->rank == 2 && out[0]->dims[0] == 2 &&
                 out[0]->dims[1] == 2 && !strcmp(((char **)out[0]->data)[1], "ccc") &&
                 !strcmp(((char **)out[0]->data)[2], "bb"),
             "ConcatFromSequence strings new_axis: %s", carve_errmsg(ctx));
    unref_n(out, 1);
    unref_n(in, 2);
    carve_model_free(m);
}

/* ---------------------------------------------------------------- optionals */

static void test_optionals(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 18);
    int64_t d2 = 2;
    carve_value_id x = input(m, 0, "x", CARVE_FLOAT, 1, &d2);
    carve_value_id o = out0(m, add(m, 0, "Optional", "wrap", 1, &x, 1));
    carve_node_id e = add(m, 0, "Optional", "empty", 0, NULL, 1);
    cv_attr *ta = cv_node_attr_add(m, e, "type", CARVE_ATTR_TYPE_PROTO);
    static const uint8_t float_tensor[] = {0x0a, 0x02, 0x08, 0x01}; /* TypeProto{tensor_type{elem_type: 1}} */
    static cv_bytes tp = {float_tensor, sizeof float_tensor};
    ta->n = 1;
    ta->u.opaque = &tp;
    carve_value_id ev = out0(m, e);
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "OptionalHasElement", "has1", 1, &o, 1)));
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "OptionalHasElement", "has0", 1, &ev, 1)));
    carve_value_id none = CARVE_NONE;
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "OptionalHasElement", "hasnone", 1, &none, 1)));
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "OptionalGetElement", "get", 1, &o, 1)));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 1, &d2, 3, 0, 1)}, *out[4] = {0};
    OT_CHECK(ot_run(m, in, out) == CARVE_OK, "optionals: %s", carve_errmsg(ctx));
    OT_CHECK(out[0] && *(uint8_t *)out[0]->data == 1, "OptionalHasElement of a tensor is true");
    OT_CHECK(out[1] && *(uint8_t *)out[1]->data == 0, "OptionalHasElement of an empty optional is false");
    OT_CHECK(out[2] && *(uint8_t *)out[2]->data == 0, "OptionalHasElement of an omitted input is false");
    char why[100] = "";
    OT_CHECK(out[3] && ot_close(out[3], in[0], 0, 0, why, sizeof why), "OptionalGetElement gives the tensor back");
    unref_n(out, 4);
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "optional inference: %s", carve_errmsg(ctx));
    OT_CHECK(carve_value_dtype(m, carve_graph_output(m, 0, 0)) == CARVE_BOOL &&
                 carve_value_rank(m, carve_graph_output(m, 0, 0)) == 0,
             "OptionalHasElement inferred bool scalar");
    carve_model_free(m);

    /* getting from an empty optional */
    m = new_model(ctx, 18);
    e = add(m, 0, "Optional", "empty2", 0, NULL, 1);
    ta = cv_node_attr_add(m, e, "type", CARVE_ATTR_TYPE_PROTO);
    ta->n = 1;
    ta->u.opaque = &tp;
    ev = out0(m, e);
    carve_graph_add_output(m, 0, out0(m, add(m, 0, "OptionalGetElement", "get_empty", 1, &ev, 1)));
    OT_CHECK(ot_run(m, NULL, out) != CARVE_OK &&
                 has(carve_errmsg(ctx), "node 'get_empty' (OptionalGetElement): input 0 'input' is an empty optional"),
             "OptionalGetElement of empty: %s", carve_errmsg(ctx));
    unref_n(in, 1);
    carve_model_free(m);
}

/* ---------------------------------------------------------------- random */

static void stats(const cv_val *v, double *mean, double *var, double *lo, double *hi)
{
    double s = 0, s2 = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (size_t i = 0; i < v->nelem; i++) {
        double x = cv_val_get_f64(v, i);
        s += x, s2 += x * x;
        *lo = x < *lo ? x : *lo;
        *hi = x > *hi ? x : *hi;
    }
    *mean = s / (double)v->nelem;
    *var = s2 / (double)v->nelem - *mean * *mean;
}

/* One random node (op) on an optional input like; attributes by caller. */
static carve_model *rand_model(carve_ctx *ctx, const char *op, carve_dtype in_dt, int rank, const int64_t *dims,
                               carve_node_id *n)
{
    carve_model *m = new_model(ctx, 17);
    carve_value_id x = CARVE_NONE;
    if (in_dt)
        x = input(m, 0, "x", in_dt, rank, dims);
    *n = add(m, 0, op, "rnd", in_dt ? 1 : 0, &x, 1);
    carve_graph_add_output(m, 0, out0(m, *n));
    return m;
}

static bool same_vals(const cv_val *a, const cv_val *b)
{
    return a && b && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes);
}

static void test_random(carve_ctx *ctx)
{
    int64_t big = 100000;
    double mean, var, lo, hi;
    carve_node_id n;
    /* RandomNormal: shape, dtype, moments, determinism per seed */
    for (int dt = 0; dt < 3; dt++) {
        carve_dtype t = dt == 0 ? CARVE_FLOAT : dt == 1 ? CARVE_DOUBLE : CARVE_FLOAT16;
        carve_model *m = rand_model(ctx, "RandomNormal", CARVE_UNDEFINED, 0, NULL, &n);
        int64_t shape[2] = {250, 400};
        carve_node_set_attr_ints(m, n, "shape", 2, shape);
        carve_node_set_attr_int(m, n, "dtype", t);
        carve_node_set_attr_float(m, n, "mean", 2.0f);
        carve_node_set_attr_float(m, n, "scale", 3.0f);
        carve_node_set_attr_float(m, n, "seed", 1.0f);
        cv_val *a[1] = {0}, *b[1] = {0};
        OT_CHECK(ot_run(m, NULL, a) == CARVE_OK && ot_run(m, NULL, b) == CARVE_OK, "RandomNormal: %s",
                 carve_errmsg(ctx));
        if (a[0]) {
            OT_CHECK(a[0]->dtype == t && a[0]->rank == 2 && a[0]->dims[0] == 250 && a[0]->dims[1] == 400,
                     "RandomNormal shape/dtype");
            stats(a[0], &mean, &var, &lo, &hi);
            OT_CHECK(fabs(mean - 2) < 0.05 && fabs(var - 9) < 0.2, "RandomNormal %s mean %g var %g",
                     carve_dtype_name(t), mean, var);
            OT_CHECK(same_vals(a[0], b[0]), "RandomNormal same seed, same values");
        }
        carve_node_set_attr_float(m, n, "seed", 2.0f);
        cv_val *c[1] = {0};
        OT_CHECK(ot_run(m, NULL, c) == CARVE_OK && !same_vals(a[0], c[0]), "RandomNormal other seed differs");
        OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK && carve_value_dtype(m, out0(m, n)) == t &&
                     carve_value_dim(m, out0(m, n), 1).value == 400,
                 "RandomNormal inference");
        unref_n(a, 1), unref_n(b, 1), unref_n(c, 1);
        carve_model_free(m);
    }
    /* RandomUniform: range and moments; unseeded runs reproducible per run
     * seed, two unseeded nodes differ */
    {
        carve_model *m = new_model(ctx, 17);
        carve_node_id n1 = add(m, 0, "RandomUniform", "u1", 0, NULL, 1), n2 = add(m, 0, "RandomUniform", "u2", 0, NULL, 1);
        for (int i = 0; i < 2; i++) {
            carve_node_id q = i ? n2 : n1;
            carve_node_set_attr_ints(m, q, "shape", 1, &big);
            carve_node_set_attr_float(m, q, "low", -2.0f);
            carve_node_set_attr_float(m, q, "high", 3.0f);
            carve_graph_add_output(m, 0, out0(m, q));
        }
        cv_val *a[2] = {0}, *b[2] = {0};
        OT_CHECK(ot_run(m, NULL, a) == CARVE_OK && ot_run(m, NULL, b) == CARVE_OK, "RandomUniform: %s",
                 carve_errmsg(ctx));
        if (a[0] && a[1]) {
            stats(a[0], &mean, &var, &lo, &hi);
            OT_CHECK(lo >= -2 && hi < 3 && fabs(mean - 0.5) < 0.03 && fabs(var - 25.0 / 12) < 0.05,
                     "RandomUniform range [%g, %g] mean %g var %g", lo, hi, mean, var);
            OT_CHECK(same_vals(a[0], b[0]) && same_vals(a[1], b[1]), "unseeded runs repeat from the run seed");
            OT_CHECK(!same_vals(a[0], a[1]), "two unseeded nodes draw different values");
        }
        unref_n(a, 2), unref_n(b, 2);
        /* another run seed, other values */
        cv_interp ip;
        cv_interp_init(&ip, m);
        ip.rng_seed = 12345;
        OT_CHECK(cv_interp_run(&ip, 0, NULL, a) == CARVE_OK, "run with rng_seed");
        cv_interp_free(&ip);
        cv_interp_init(&ip, m);
        OT_CHECK(cv_interp_run(&ip, 0, NULL, b) == CARVE_OK && !same_vals(a[0], b[0]), "rng_seed changes values");
        cv_interp_free(&ip);
        unref_n(a, 2), unref_n(b, 2);
        carve_model_free(m);
    }
    /* Like forms: shape from the input, dtype from it or the attribute */
    {
        int64_t d[3] = {4, 5, 6};
        carve_model *m = rand_model(ctx, "RandomUniformLike", CARVE_DOUBLE, 3, d, &n);
        cv_val *in[1] = {cv_val_new(CARVE_DOUBLE, 3, d)}, *o[1] = {0};
        OT_CHECK(ot_run(m, in, o) == CARVE_OK && o[0] && o[0]->dtype == CARVE_DOUBLE && o[0]->rank == 3 &&
                     o[0]->dims[2] == 6,
                 "RandomUniformLike double: %s", carve_errmsg(ctx));
        unref_n(o, 1);
        carve_model_free(m);
        cv_val_unref(in[0]);
        m = rand_model(ctx, "RandomNormalLike", CARVE_INT32, 3, d, &n);
        in[0] = cv_val_new(CARVE_INT32, 3, d);
        OT_CHECK(ot_run(m, in, o) != CARVE_OK && has(carve_errmsg(ctx), "input 0 is int32 and attribute 'dtype' is not set"),
                 "RandomNormalLike of int32 without dtype: %s", carve_errmsg(ctx));
        carve_node_set_attr_int(m, n, "dtype", CARVE_FLOAT16);
        OT_CHECK(ot_run(m, in, o) == CARVE_OK && o[0] && o[0]->dtype == CARVE_FLOAT16 && o[0]->nelem == 120,
                 "RandomNormalLike int32 -> float16: %s", carve_errmsg(ctx));
        unref_n(o, 1);
        unref_n(in, 1);
        carve_model_free(m);
        carve_dim sd[2] = {{-1, "B"}, {7, NULL}};
        m = new_model(ctx, 17);
        carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, sd);
        n = add(m, 0, "RandomNormalLike", "rnl", 1, &x, 1);
        carve_node_set_attr_int(m, n, "dtype", CARVE_DOUBLE);
        carve_graph_add_output(m, 0, out0(m, n));
        carve_dim b0;
        OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK && carve_value_dtype(m, out0(m, n)) == CARVE_DOUBLE &&
                     (b0 = carve_value_dim(m, out0(m, n), 0)).param && !strcmp(b0.param, "B"),
                 "RandomNormalLike keeps symbolic dims");
        carve_model_free(m);
    }
    /* Bernoulli: frequency of ones, output dtype */
    for (int dt = 0; dt < 3; dt++) {
        carve_model *m = rand_model(ctx, "Bernoulli", CARVE_FLOAT, 1, &big, &n);
        carve_dtype t = dt == 0 ? CARVE_UNDEFINED : dt == 1 ? CARVE_BOOL : CARVE_INT32;
        if (t)
            carve_node_set_attr_int(m, n, "dtype", t);
        carve_node_set_attr_float(m, n, "seed", 5.0f);
        cv_val *in[1] = {cv_val_new(CARVE_FLOAT, 1, &big)}, *o[1] = {0};
        for (int64_t i = 0; i < big; i++)
            ((float *)in[0]->data)[i] = i % 2 ? 0.3f : 0.9f; /* mean p = 0.6 */
        OT_CHECK(ot_run(m, in, o) == CARVE_OK && o[0], "Bernoulli: %s", carve_errmsg(ctx));
        if (o[0]) {
            stats(o[0], &mean, &var, &lo, &hi);
            OT_CHECK(o[0]->dtype == (t ? t : CARVE_FLOAT) && fabs(mean - 0.6) < 0.01 && lo == 0 && hi == 1,
                     "Bernoulli %s mean %g", carve_dtype_name(o[0]->dtype), mean);
            double odd = 0;
            for (int64_t i = 1; i < big; i += 2)
                odd += cv_val_get_f64(o[0], (size_t)i);
            OT_CHECK(fabs(odd / (double)(big / 2) - 0.3) < 0.01, "Bernoulli follows each p (%g)", odd / (double)(big / 2));
        }
        unref_n(o, 1);
        unref_n(in, 1);
        carve_model_free(m);
    }
    /* Multinomial: class frequencies follow softmax of the row */
    {
        int64_t d[2] = {2, 3};
        carve_model *m = rand_model(ctx, "Multinomial", CARVE_FLOAT, 2, d, &n);
        carve_node_set_attr_int(m, n, "sample_size", 50000);
        carve_node_set_attr_int(m, n, "dtype", CARVE_INT64);
        carve_node_set_attr_float(m, n, "seed", 3.0f);
        float p[6] = {logf(0.2f), logf(0.3f), logf(0.5f), 0, -INFINITY, 0};
        cv_val *in[1] = {vec_f32(2, d, p)}, *o[1] = {0};
        OT_CHECK(ot_run(m, in, o) == CARVE_OK && o[0] && o[0]->dtype == CARVE_INT64 && o[0]->dims[0] == 2 &&
                     o[0]->dims[1] == 50000,
                 "Multinomial shape/dtype: %s", carve_errmsg(ctx));
        if (o[0]) {
            double cnt[2][3] = {{0}};
            bool in_range = true;
            for (size_t i = 0; i < o[0]->nelem; i++) {
                int64_t c = ((int64_t *)o[0]->data)[i];
                in_range = in_range && c >= 0 && c < 3;
                if (c >= 0 && c < 3)
                    cnt[i / 50000][c]++;
            }
            OT_CHECK(in_range, "Multinomial classes in range");
            OT_CHECK(fabs(cnt[0][0] / 50000 - 0.2) < 0.01 && fabs(cnt[0][2] / 50000 - 0.5) < 0.01,
                     "Multinomial row 0 frequencies %g %g %g", cnt[0][0] / 50000, cnt[0][1] / 50000, cnt[0][2] / 50000);
            OT_CHECK(cnt[1][1] == 0 && fabs(cnt[1][0] / 50000 - 0.5) < 0.01, "Multinomial never picks a -inf class");
        }
        OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK && carve_value_dtype(m, out0(m, n)) == CARVE_INT64 &&
                     carve_value_dim(m, out0(m, n), 0).value == 2 && carve_value_dim(m, out0(m, n), 1).value == 50000,
                 "Multinomial inference");
        unref_n(o, 1);
        unref_n(in, 1);
        carve_model_free(m);
    }
}

/* ---------------------------------------------------------------- RNNs */

typedef struct {
    const char *op;
    int kind;               /* 0 RNN, 1 GRU, 2 LSTM */
    int64_t seq, batch, in, hid;
    const char *direction;
    int layout;
    bool bias, lens, init, peep, lbr, input_forget;
    float clip;
    const char *acts[6];
    int n_acts;
    float alpha[4], beta[4];
    int n_alpha, n_beta;
    carve_dtype dt;
} rnn_case;

static double act(const char *name, double x, const float *al, const float *be, int *ia, int *ib, int na, int nb)
{
    if (!strcmp(name, "Sigmoid"))
        return 1 / (1 + exp(-x));
    if (!strcmp(name, "Tanh"))
        return tanh(x);
    if (!strcmp(name, "Relu"))
        return x > 0 ? x : 0;
    if (!strcmp(name, "LeakyRelu")) {
        double a = *ia < na ? al[(*ia)++] : 0.01;
        return x >= 0 ? x : a * x;
    }
    if (!strcmp(name, "HardSigmoid")) {
        double a = *ia < na ? al[(*ia)++] : 0.2, b = *ib < nb ? be[(*ib)++] : 0.5;
        double y = a * x + b;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    if (!strcmp(name, "Softsign"))
        return x / (1 + fabs(x));
    return NAN;
}

/* Plain per-element reference in double, layout 0 indexing. */
static void rnn_ref(const rnn_case *c, const double *X, const double *W, const double *R, const double *B,
                    const double *P, const int64_t *lens, const double *h0, const double *c0, double *Y, double *Yh,
                    double *Yc)
{
    int G = c->kind == 2 ? 4 : c->kind == 1 ? 3 : 1, na = c->kind == 2 ? 3 : c->kind == 1 ? 2 : 1;
    int nd = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    int64_t H = c->hid, I = c->in, S = c->seq, Bt = c->batch;
    const char *dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    memset(Y, 0, (size_t)(S * nd * Bt * H) * sizeof *Y);
    for (int d = 0; d < nd; d++) {
        bool rev = d == 1 || !strcmp(c->direction, "reverse");
        const double *w = W + d * G * H * I, *r = R + d * G * H * H, *bb = c->bias ? B + d * 2 * G * H : NULL;
        const double *p = c->peep ? P + d * 3 * H : NULL;
        for (int64_t b = 0; b < Bt; b++) {
            double h[16], cc[16], gate[64];
            for (int64_t q = 0; q < H; q++) {
                h[q] = c->init ? h0[(d * Bt + b) * H + q] : 0;
                cc[q] = c->init && c->kind == 2 ? c0[(d * Bt + b) * H + q] : 0;
            }
            int64_t L = c->lens ? lens[b] : S;
            for (int64_t s = 0; s < L; s++) {
                int64_t t = rev ? L - 1 - s : s;
                /* the alpha/beta lists are consumed per direction's names
                 * in order; recompute the offsets each step */
                int ia = 0, ib = 0;
                const char *nm[3];
                for (int a = 0; a < d * na; a++) {
                    const char *skip = c->n_acts ? c->acts[a % c->n_acts] : dflt[c->kind][a % na];
                    if (!strcmp(skip, "LeakyRelu") || !strcmp(skip, "HardSigmoid"))
                        ia++;
                    if (!strcmp(skip, "HardSigmoid"))
                        ib++;
                }
                for (int a = 0; a < na; a++)
                    nm[a] = c->n_acts ? c->acts[(d * na + a) % c->n_acts] : dflt[c->kind][a];
                /* per-name alpha/beta positions */
                int pa[3], pb[3];
                for (int a = 0; a < na; a++) {
                    pa[a] = ia, pb[a] = ib;
                    if (!strcmp(nm[a], "LeakyRelu") || !strcmp(nm[a], "HardSigmoid"))
                        ia++;
                    if (!strcmp(nm[a], "HardSigmoid"))
                        ib++;
                }
#define ACT(a, x) (ia = pa[a], ib = pb[a], act(nm[a], (x), c->alpha, c->beta, &ia, &ib, c->n_alpha, c->n_beta))
#define CLIP(x) (c->clip > 0 ? ((x) > c->clip ? c->clip : (x) < -c->clip ? -c->clip : (x)) : (x))
                const double *xt = X + (t * Bt + b) * I;
                for (int64_t gq = 0; gq < G * H; gq++) {
                    double v = 0;
                    for (int64_t i = 0; i < I; i++)
                        v += xt[i] * w[gq * I + i];
                    if (bb)
                        v += bb[gq];
                    gate[gq] = v;
                }
                double hn[16];
                if (c->kind == 0) {
                    for (int64_t q = 0; q < H; q++) {
                        double v = gate[q] + (bb ? bb[G * H + q] : 0);
                        for (int64_t j = 0; j < H; j++)
                            v += h[j] * r[q * H + j];
                        hn[q] = ACT(0, CLIP(v));
                    }
                } else if (c->kind == 1) {
                    double z[16], rr[16];
                    for (int64_t q = 0; q < H; q++) {
                        double vz = gate[q] + (bb ? bb[G * H + q] : 0), vr = gate[H + q] + (bb ? bb[G * H + H + q] : 0);
                        for (int64_t j = 0; j < H; j++) {
                            vz += h[j] * r[q * H + j];
                            vr += h[j] * r[(H + q) * H + j];
                        }
                        z[q] = ACT(0, CLIP(vz));
                        rr[q] = ACT(0, CLIP(vr));
                    }
                    for (int64_t q = 0; q < H; q++) {
                        double rb = bb ? bb[G * H + 2 * H + q] : 0, v = gate[2 * H + q], acc = 0;
                        for (int64_t j = 0; j < H; j++)
                            acc += (c->lbr ? h[j] : rr[j] * h[j]) * r[(2 * H + q) * H + j];
                        v += c->lbr ? rr[q] * (acc + rb) : acc + rb;
                        double hh = ACT(1, CLIP(v));
                        hn[q] = (1 - z[q]) * hh + z[q] * h[q];
                    }
                } else {
                    double gi[16], go[16], gf[16], gc[16];
                    for (int64_t q = 0; q < H; q++) {
                        double v[4];
                        for (int k = 0; k < 4; k++) {
                            v[k] = gate[k * H + q] + (bb ? bb[G * H + k * H + q] : 0);
                            for (int64_t j = 0; j < H; j++)
                                v[k] += h[j] * r[(k * H + q) * H + j];
                        }
                        gi[q] = ACT(0, CLIP(v[0] + (p ? p[q] * cc[q] : 0)));
                        gf[q] = c->input_forget ? 1 - gi[q] : ACT(0, CLIP(v[2] + (p ? p[2 * H + q] * cc[q] : 0)));
                        gc[q] = ACT(1, CLIP(v[3]));
                        go[q] = v[1];
                    }
                    for (int64_t q = 0; q < H; q++) {
                        cc[q] = gf[q] * cc[q] + gi[q] * gc[q];
                        double o = ACT(0, CLIP(go[q] + (p ? p[H + q] * cc[q] : 0)));
                        hn[q] = o * ACT(2, cc[q]);
                    }
                }
#undef ACT
#undef CLIP
                for (int64_t q = 0; q < H; q++) {
                    h[q] = hn[q];
                    Y[((t * nd + d) * Bt + b) * H + q] = hn[q];
                }
            }
            for (int64_t q = 0; q < H; q++) {
                Yh[(d * Bt + b) * H + q] = L ? h[q] : 0;
                if (Yc)
                    Yc[(d * Bt + b) * H + q] = L ? cc[q] : 0;
            }
        }
    }
}

static cv_val *dval(carve_dtype dt, int rank, const int64_t *dims, const double *v)
{
    cv_val *x = cv_val_new(dt, rank, dims);
    for (size_t i = 0; i < x->nelem; i++)
        cv_val_set_f64(x, i, v[i]);
    return x;
}

static void test_rnn_case(carve_ctx *ctx, const rnn_case *c)
{
    int G = c->kind == 2 ? 4 : c->kind == 1 ? 3 : 1;
    int nd = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    int64_t S = c->seq, Bt = c->batch, I = c->in, H = c->hid;
    double X[256], W[1024], R[1024], Bv[256], P[64], h0[64], c0[64], Y[512], Yh[64], Yc[64];
    int64_t lens[8];
    uint64_t st = 88172645463325252ull ^ (uint64_t)(S * 131 + Bt * 17 + H * 7 + c->kind + nd * 1000);
    double *all[7] = {X, W, R, Bv, P, h0, c0};
    size_t cnt[7] = {(size_t)(S * Bt * I), (size_t)(nd * G * H * I), (size_t)(nd * G * H * H), (size_t)(nd * 2 * G * H),
                     (size_t)(nd * 3 * H), (size_t)(nd * Bt * H), (size_t)(nd * Bt * H)};
    for (int a = 0; a < 7; a++)
        for (size_t i = 0; i < cnt[a]; i++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            double u = (double)(st >> 11) / 9007199254740992.0 * 2 - 1;
            /* float16 cases use values exactly representable in f16 */
            all[a][i] = c->dt == CARVE_FLOAT16 ? round(u * 256) / 256 : u;
        }
    for (int64_t b = 0; b < Bt; b++)
        lens[b] = c->lens ? (S - b) % (S + 1) : S;
    rnn_ref(c, X, W, R, Bv, P, lens, h0, c0, Y, Yh, Yc);

    carve_model *m = new_model(ctx, 14);
    /* layout 1 puts batch first in X, states and outputs */
    int64_t xd[3] = {c->layout ? Bt : S, c->layout ? S : Bt, I}, wd[3] = {nd, G * H, I}, rd[3] = {nd, G * H, H};
    int64_t bd[2] = {nd, 2 * G * H}, ld[1] = {Bt}, sd[3] = {c->layout ? Bt : nd, c->layout ? nd : Bt, H},
            pd[2] = {nd, 3 * H};
    carve_value_id ins[8] = {input(m, 0, "X", c->dt, 3, xd), input(m, 0, "W", c->dt, 3, wd), input(m, 0, "R", c->dt, 3, rd),
                             c->bias ? input(m, 0, "B", c->dt, 2, bd) : CARVE_NONE,
                             c->lens ? input(m, 0, "lens", CARVE_INT32, 1, ld) : CARVE_NONE,
                             c->init ? input(m, 0, "h0", c->dt, 3, sd) : CARVE_NONE,
                             c->init && c->kind == 2 ? input(m, 0, "c0", c->dt, 3, sd) : CARVE_NONE,
                             c->peep ? input(m, 0, "P", c->dt, 2, pd) : CARVE_NONE};
    int n_in = c->kind == 2 ? 8 : 6, n_out = c->kind == 2 ? 3 : 2;
    carve_node_id n = add(m, 0, c->op, "rnn", (size_t)n_in, ins, (size_t)n_out);
    carve_node_set_attr_int(m, n, "hidden_size", H);
    carve_node_set_attr_string(m, n, "direction", c->direction);
    if (c->layout)
        carve_node_set_attr_int(m, n, "layout", 1);
    if (c->lbr)
        carve_node_set_attr_int(m, n, "linear_before_reset", 1);
    if (c->input_forget)
        carve_node_set_attr_int(m, n, "input_forget", 1);
    if (c->clip > 0)
        carve_node_set_attr_float(m, n, "clip", c->clip);
    if (c->n_acts)
        carve_node_set_attr_strings(m, n, "activations", (size_t)c->n_acts, c->acts);
    if (c->n_alpha)
        carve_node_set_attr_floats(m, n, "activation_alpha", (size_t)c->n_alpha, c->alpha);
    if (c->n_beta)
        carve_node_set_attr_floats(m, n, "activation_beta", (size_t)c->n_beta, c->beta);
    for (int i = 0; i < n_out; i++)
        carve_graph_add_output(m, 0, carve_node_output(m, n, (size_t)i));

    /* inputs in the node's layout */
    double Xl[256], h0l[64], c0l[64];
    for (int64_t s = 0; s < S; s++)
        for (int64_t b = 0; b < Bt; b++)
            for (int64_t i = 0; i < I; i++)
                Xl[(c->layout ? b * S + s : s * Bt + b) * I + i] = X[(s * Bt + b) * I + i];
    for (int d = 0; d < nd; d++)
        for (int64_t b = 0; b < Bt; b++)
            for (int64_t q = 0; q < H; q++) {
                size_t at = (size_t)((c->layout ? b * nd + d : d * Bt + b) * H + q);
                h0l[at] = h0[(d * Bt + b) * H + q];
                c0l[at] = c0[(d * Bt + b) * H + q];
            }
    cv_val *in[8] = {0}, *out[3] = {0};
    int k = 0;
    in[k++] = dval(c->dt, 3, xd, Xl);
    in[k++] = dval(c->dt, 3, wd, W);
    in[k++] = dval(c->dt, 3, rd, R);
    if (c->bias)
        in[k++] = dval(c->dt, 2, bd, Bv);
    if (c->lens) {
        in[k] = cv_val_new(CARVE_INT32, 1, ld);
        for (int64_t b = 0; b < Bt; b++)
            ((int32_t *)in[k]->data)[b] = (int32_t)lens[b];
        k++;
    }
    if (c->init) {
        in[k++] = dval(c->dt, 3, sd, h0l);
        if (c->kind == 2)
            in[k++] = dval(c->dt, 3, sd, c0l);
    }
    if (c->peep)
        in[k++] = dval(c->dt, 2, pd, P);
    carve_status s = ot_run(m, in, out);
    OT_CHECK(s == CARVE_OK, "%s %s layout %d: %s", c->op, c->direction, c->layout, carve_errmsg(ctx));
    double tol = c->dt == CARVE_FLOAT16 ? 2e-2 : c->dt == CARVE_DOUBLE ? 1e-12 : 1e-5;
    for (int o = 0; s == CARVE_OK && o < n_out; o++) {
        const cv_val *v = out[o];
        bool ok = v && v->dtype == c->dt && v->rank == (o ? 3 : 4);
        double worst = 0;
        for (int64_t sq = 0; ok && sq < (o ? 1 : S); sq++)
            for (int d = 0; d < nd; d++)
                for (int64_t b = 0; b < Bt; b++)
                    for (int64_t q = 0; q < H; q++) {
                        double want = o == 0 ? Y[((sq * nd + d) * Bt + b) * H + q]
                                      : o == 1 ? Yh[(d * Bt + b) * H + q]
                                               : Yc[(d * Bt + b) * H + q];
                        size_t at = o == 0 ? (size_t)((c->layout ? (b * S + sq) * nd + d : (sq * nd + d) * Bt + b) * H + q)
                                           : (size_t)((c->layout ? b * nd + d : d * Bt + b) * H + q);
                        double got = cv_val_get_f64(v, at), err = fabs(got - want);
                        worst = err > worst ? err : worst;
                    }
        OT_CHECK(ok && worst <= tol, "%s %s layout %d %s output %d: worst error %g", c->op, c->direction, c->layout,
                 carve_dtype_name(c->dt), o, worst);
    }
    unref_n(out, 3);
    unref_n(in, 8);
    carve_model_free(m);
}

static void test_rnns(carve_ctx *ctx)
{
    static const rnn_case cases[] = {
        {"RNN", 0, 5, 3, 4, 3, "forward", 0, true, false, false, false, false, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT},
        {"RNN", 0, 4, 3, 2, 5, "bidirectional", 1, true, true, true, false, false, false, 0, {"Relu", "LeakyRelu"}, 2, {0.2f}, {0}, 1, 0, CARVE_FLOAT},
        {"RNN", 0, 4, 2, 3, 3, "reverse", 0, false, true, true, false, false, false, 0.5f, {0}, 0, {0}, {0}, 0, 0, CARVE_DOUBLE},
        {"GRU", 1, 5, 3, 4, 3, "forward", 0, true, false, false, false, false, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT},
        {"GRU", 1, 4, 3, 3, 4, "bidirectional", 0, true, true, true, false, true, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT},
        {"GRU", 1, 3, 2, 3, 2, "reverse", 1, true, true, true, false, false, false, 0, {"HardSigmoid", "Softsign"}, 2, {0.3f}, {0.4f}, 1, 1, CARVE_FLOAT},
        {"GRU", 1, 3, 2, 3, 4, "forward", 0, true, false, true, false, true, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT16},
        {"LSTM", 2, 5, 3, 4, 3, "forward", 0, false, false, false, false, false, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT},
        {"LSTM", 2, 4, 3, 3, 4, "bidirectional", 0, true, true, true, true, false, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT},
        {"LSTM", 2, 4, 3, 3, 2, "bidirectional", 1, true, true, true, true, false, false, 0,
         {"Sigmoid", "Tanh", "Tanh", "HardSigmoid", "LeakyRelu", "Softsign"}, 6, {0.25f, 0.05f}, {0.45f}, 2, 1, CARVE_FLOAT},
        {"LSTM", 2, 3, 2, 2, 3, "reverse", 0, true, true, true, false, false, true, 0.8f, {0}, 0, {0}, {0}, 0, 0, CARVE_DOUBLE},
        {"LSTM", 2, 3, 2, 4, 3, "forward", 1, true, false, true, true, false, false, 0, {0}, 0, {0}, {0}, 0, 0, CARVE_FLOAT16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        test_rnn_case(ctx, &cases[i]);

    /* inference with symbolic sequence and batch */
    carve_model *m = new_model(ctx, 14);
    carve_dim xd[3] = {{-1, "S"}, {-1, "B"}, {4, NULL}}, wd[3] = {{2, NULL}, {12, NULL}, {4, NULL}},
              rd[3] = {{2, NULL}, {12, NULL}, {3, NULL}};
    carve_value_id ins[3] = {carve_graph_add_input(m, 0, "X", CARVE_FLOAT, 3, xd),
                             carve_graph_add_input(m, 0, "W", CARVE_FLOAT, 3, wd),
                             carve_graph_add_input(m, 0, "R", CARVE_FLOAT, 3, rd)};
    carve_node_id n = add(m, 0, "LSTM", "lstm", 3, ins, 3);
    carve_node_set_attr_string(m, n, "direction", "bidirectional");
    for (int i = 0; i < 3; i++)
        carve_graph_add_output(m, 0, carve_node_output(m, n, (size_t)i));
    OT_CHECK(cv_infer_model(m, NULL) == CARVE_OK, "LSTM inference: %s", carve_errmsg(ctx));
    carve_value_id y = carve_node_output(m, n, 0), yc = carve_node_output(m, n, 2);
    carve_dim y0 = carve_value_dim(m, y, 0), y2 = carve_value_dim(m, y, 2), c1 = carve_value_dim(m, yc, 1);
    OT_CHECK(carve_value_rank(m, y) == 4 && y0.param && !strcmp(y0.param, "S") && carve_value_dim(m, y, 1).value == 2 &&
                 y2.param && !strcmp(y2.param, "B") && carve_value_dim(m, y, 3).value == 3,
             "LSTM Y inferred [S,2,B,3]");
    OT_CHECK(carve_value_rank(m, yc) == 3 && carve_value_dim(m, yc, 0).value == 2 && c1.param &&
                 !strcmp(c1.param, "B"),
             "LSTM Y_c inferred [2,B,3]");
    /* a bad W shape at run time */
    int64_t x3[3] = {2, 1, 4}, w3[3] = {2, 12, 5}, r3[3] = {2, 12, 3};
    cv_val *in[3] = {cv_val_new(CARVE_FLOAT, 3, x3), cv_val_new(CARVE_FLOAT, 3, w3), cv_val_new(CARVE_FLOAT, 3, r3)},
           *out[3] = {0};
    carve_model_free(m);
    m = new_model(ctx, 14);
    ins[0] = input(m, 0, "X", CARVE_FLOAT, 3, x3);
    ins[1] = input(m, 0, "W", CARVE_FLOAT, 3, w3);
    ins[2] = input(m, 0, "R", CARVE_FLOAT, 3, r3);
    n = add(m, 0, "LSTM", "lstm_bad", 3, ins, 2);
    carve_node_set_attr_string(m, n, "direction", "bidirectional");
    carve_graph_add_output(m, 0, carve_node_output(m, n, 1));
    OT_CHECK(ot_run(m, in, out) != CARVE_OK &&
                 has(carve_errmsg(ctx), "node 'lstm_bad' (LSTM): input 1 'W' has shape [2,12,5], expected [2,12,4]"),
             "LSTM bad W: %s", carve_errmsg(ctx));
    carve_node_set_attr_string(m, n, "direction", "sideways");
    OT_CHECK(ot_run(m, in, out) != CARVE_OK && has(carve_errmsg(ctx), "attribute 'direction' is 'sideways'"),
             "LSTM bad direction: %s", carve_errmsg(ctx));
    unref_n(in, 3);
    carve_model_free(m);
}

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    test_if(ctx);
    test_loop(ctx);
    test_loop_infer_trip(ctx);
    test_loop_body_errors(ctx);
    test_scan(ctx);
    test_sequences(ctx);
    test_optionals(ctx);
    test_random(ctx);
    test_rnns(ctx);
    carve_ctx_free(ctx);
    return ot_finish();
}

/* test_fuse.c: the run-time fusion plan (src/runtime/fuse.c) and the
 * epilogue the Conv/MatMul/Gemm kernels apply (src/ops/k_epilogue.c).
 * Every case runs the model fused and unfused (a traced run never fuses:
 * every value is made) and compares the outputs bit for bit, and checks
 * how many chains were applied: a chain of Conv + per-channel Mul/Add +
 * the spelled-out HardSwish + a residual Add + Relu on the im2col, the
 * depthwise and the pointwise paths; MatMul + per-column bias + SiLU +
 * Sub/LeakyRelu/HardSigmoid/HardSwish; Gemm + Relu; Clip with attribute
 * bounds (opset 10); an intermediate value that is a graph output (the
 * chain stops before it); a broadcast the epilogue does not take (the
 * nodes run one by one); an operand of the wrong dtype (the same error as
 * unfused, naming the node); a traced run sees every value. */
#include "opstest.h"
#include "runtime/runtime.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- builders */

static carve_model *new_model(carve_ctx *ctx, int64_t opset)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", opset);
    return m;
}

static carve_value_id input(carve_model *m, const char *name, int rank, const int64_t *dims)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = (carve_dim){dims[i], NULL};
    return carve_graph_add_input(m, 0, name, CARVE_FLOAT, rank, d);
}

static carve_value_id init_rand(carve_model *m, const char *name, int rank, const int64_t *dims, uint32_t seed,
                                double lo, double hi)
{
    cv_val *v = ot_random(CARVE_FLOAT, rank, dims, seed, lo, hi);
    carve_value_id id = carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, rank, dims, v->data, v->nbytes);
    cv_val_unref(v);
    return id;
}

static carve_value_id scalar(carve_model *m, const char *name, float x)
{
    return carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, 0, NULL, &x, sizeof x);
}

static carve_node_id last_node;

static carve_value_id op(carve_model *m, const char *type, const char *name, size_t n_in, const carve_value_id *in)
{
    const char *outs[1] = {name};
    last_node = carve_graph_add_node(m, 0, type, "", name, n_in, in, 1, outs);
    OT_CHECK(last_node != CARVE_NONE, "add %s: %s", name, carve_errmsg(carve_model_ctx(m)));
    return carve_node_output(m, last_node, 0);
}

static carve_value_id op2(carve_model *m, const char *type, const char *name, carve_value_id a, carve_value_id b)
{
    carve_value_id in[2] = {a, b};
    return op(m, type, name, 2, in);
}

static carve_value_id op1(carve_model *m, const char *type, const char *name, carve_value_id a)
{
    return op(m, type, name, 1, &a);
}

/* An input of random values with NaN, infinities and signed zeros in it. */
static cv_val *data(int rank, const int64_t *dims, uint32_t seed)
{
    cv_val *v = ot_random(CARVE_FLOAT, rank, dims, seed, -4, 4);
    float *f = v->data;
    static const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3.0f, -3.0f, 6.0f};
    for (size_t i = 0; i < sizeof special / sizeof *special && i * 37 < v->nelem; i++)
        f[i * 37] = special[i];
    return v;
}

/* ---------------------------------------------------------------- running */

static size_t traced;
static void count_value(void *user, carve_value_id v, const carve_tensor *t)
{
    (void)user, (void)v, (void)t;
    traced++;
}

/* Runs m's main graph; `unfused` traces every value, which turns fusion
 * off. *fused receives the chains applied. */
static carve_status run(carve_model *m, cv_val **in, cv_val **out, bool unfused, uint32_t *fused)
{
    cv_interp ip;
    carve_status s = cv_interp_init(&ip, m);
    if (s)
        return s;
    if (unfused)
        ip.trace = count_value;
    s = cv_interp_run(&ip, 0, in, out);
    *fused = ip.fused;
    cv_interp_free(&ip);
    return s;
}

/* Fused and unfused runs give the same bits; want_fused chains applied. */
static void check_same(carve_model *m, cv_val **in, uint32_t want_fused, const char *what)
{
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "%s: the model verifies: %s", what,
             carve_errmsg(carve_model_ctx(m)));
    uint32_t n_out = (uint32_t)carve_graph_output_count(m, 0), f0 = 0, f1 = 0;
    cv_val *a[8] = {NULL}, *b[8] = {NULL};
    carve_status s0 = run(m, in, a, true, &f0), s1 = run(m, in, b, false, &f1);
    OT_CHECK(!s0 && !s1, "%s: runs (unfused %d, fused %d): %s", what, s0, s1, carve_errmsg(carve_model_ctx(m)));
    OT_CHECK(f0 == 0, "%s: a traced run fuses nothing (%u)", what, f0);
    OT_CHECK(f1 == want_fused, "%s: %u chains applied, expected %u", what, f1, want_fused);
    for (uint32_t i = 0; !s0 && !s1 && i < n_out; i++) {
        bool same = a[i]->dtype == b[i]->dtype && a[i]->rank == b[i]->rank && a[i]->nbytes == b[i]->nbytes &&
                    !memcmp(a[i]->dims, b[i]->dims, sizeof(int64_t) * (size_t)a[i]->rank) &&
                    !memcmp(a[i]->data, b[i]->data, a[i]->nbytes);
        size_t diff = 0;
        while (same == false && diff < a[i]->nelem && a[i]->nbytes == b[i]->nbytes &&
               !memcmp((float *)a[i]->data + diff, (float *)b[i]->data + diff, 4))
            diff++;
        OT_CHECK(same, "%s: output %u differs fused from unfused (first at element %zu)", what, i, diff);
    }
    for (uint32_t i = 0; i < n_out; i++) {
        cv_val_unref(a[i]);
        cv_val_unref(b[i]);
    }
}

/* How many nodes the chain headed by node `head` holds (0: no chain). */
static uint32_t chain_len(carve_model *m, carve_node_id head)
{
    cv_interp ip;
    uint32_t n = 0;
    if (cv_interp_init(&ip, m))
        return 0;
    cv_ids none = {0};
    if (!cv_fuse_plan(&ip, 0, &none))
        for (uint32_t c = 0; c < ip.sched[0].n_chains; c++)
            if (ip.sched[0].chains[c].head == head)
                n = ip.sched[0].chains[c].n_nodes;
    cv_interp_free(&ip);
    return n;
}

/* ---------------------------------------------------------------- cases */

/* x -> Conv -> Mul s -> Add b -> [Add 3, Clip 0 6, Mul, Div 6] -> (tail: Mul 0.75 -> Add -0.25) -> Add x
 * -> Relu */
static carve_model *conv_chain(carve_ctx *ctx, int64_t group, int64_t k, bool tail, cv_val **x, carve_node_id *head)
{
    carve_model *m = new_model(ctx, 13);
    int64_t xd[4] = {1, 8, 10, 12}, wd[4] = {8, 8 / group, k, k}, cd[3] = {8, 1, 1}, bd[1] = {8};
    carve_value_id xi = input(m, "x", 4, xd);
    carve_value_id in[3] = {xi, init_rand(m, "w", 4, wd, 11, -0.5, 0.5), init_rand(m, "b", 1, bd, 12, -1, 1)};
    carve_value_id y = op(m, "Conv", "conv", 3, in);
    *head = last_node;
    int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2};
    carve_node_set_attr_ints(m, *head, "pads", 4, pads);
    carve_node_set_attr_int(m, *head, "group", group);
    y = op2(m, "Mul", "scale", y, init_rand(m, "s", 3, cd, 13, 0.5, 2));
    y = op2(m, "Add", "shift", init_rand(m, "t", 3, cd, 14, -1, 1), y); /* the constant first */
    carve_value_id a3 = op2(m, "Add", "plus3", y, scalar(m, "three", 3.0f));
    carve_value_id cin[3] = {a3, scalar(m, "zero", 0.0f), scalar(m, "six", 6.0f)};
    carve_value_id c = op(m, "Clip", "relu6", 3, cin);
    carve_value_id h = op2(m, "Mul", "gate", y, c);
    h = op2(m, "Div", "by6", h, scalar(m, "six2", 6.0f));
    if (tail) {
        h = op2(m, "Mul", "tail_scale", scalar(m, "three_q", 0.75f), h);
        h = op2(m, "Add", "tail_shift", h, scalar(m, "minus_q", -0.25f));
    }
    h = op2(m, "Add", "residual", h, xi);
    h = op1(m, "Relu", "relu", h);
    carve_graph_add_output(m, 0, h);
    *x = data(4, xd, 7);
    return m;
}

static void test_conv_chains(carve_ctx *ctx)
{
    static const struct {
        int64_t group, k;
        bool tail;
        const char *what;
    } cases[] = {{1, 3, false, "conv 3x3 (im2col)"},     {8, 3, false, "depthwise 3x3"},
                 {1, 1, false, "pointwise 1x1"},         {2, 3, false, "grouped 3x3"},
                 {8, 3, true, "depthwise 3x3, affine tail"}, {1, 1, true, "pointwise 1x1, affine tail"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cv_val *x;
        carve_node_id head;
        carve_model *m = conv_chain(ctx, cases[i].group, cases[i].k, cases[i].tail, &x, &head);
        uint32_t want = cases[i].tail ? 10 : 8;
        OT_CHECK(chain_len(m, head) == want, "%s: the chain holds the %u nodes after the Conv (%u)", cases[i].what,
                 want, chain_len(m, head));
        check_same(m, &x, 1, cases[i].what);
        cv_val_unref(x);
        carve_model_free(m);
    }
}

/* A[2,5,16] x W[16,24] + bias[24] -> SiLU -> Sub(1.5, .) -> LeakyRelu -> HardSigmoid -> HardSwish */
static void test_matmul_chain(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 14);
    int64_t ad[3] = {2, 5, 16}, wd[2] = {16, 24}, bd[1] = {24};
    carve_value_id y = op2(m, "MatMul", "mm", input(m, "a", 3, ad), init_rand(m, "w", 2, wd, 21, -1, 1));
    carve_node_id head = last_node;
    y = op2(m, "Add", "bias", y, init_rand(m, "b", 1, bd, 22, -1, 1));
    y = op2(m, "Mul", "silu", y, op1(m, "Sigmoid", "sig", y));
    y = op2(m, "Sub", "sub", scalar(m, "c", 1.5f), y);
    y = op1(m, "LeakyRelu", "leaky", y);
    carve_node_set_attr_float(m, last_node, "alpha", 0.3f);
    y = op1(m, "HardSigmoid", "hsig", y);
    carve_node_set_attr_float(m, last_node, "alpha", 0.25f);
    y = op1(m, "HardSwish", "hswish", y);
    carve_graph_add_output(m, 0, y);
    OT_CHECK(chain_len(m, head) == 7, "matmul: the chain holds 7 nodes (%u)", chain_len(m, head));
    cv_val *a = data(3, ad, 23);
    check_same(m, &a, 1, "matmul chain");
    cv_val_unref(a);
    carve_model_free(m);
}

static void test_gemm_and_clip_attrs(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 10);
    int64_t ad[2] = {6, 9}, bd[2] = {7, 9}, cd[1] = {7};
    carve_value_id in[3] = {input(m, "a", 2, ad), init_rand(m, "b", 2, bd, 31, -1, 1), init_rand(m, "c", 1, cd, 32, -1, 1)};
    carve_value_id y = op(m, "Gemm", "gemm", 3, in);
    carve_node_set_attr_int(m, last_node, "transB", 1);
    y = op1(m, "Relu", "relu", y);
    y = op1(m, "Clip", "clip", y);
    carve_node_set_attr_float(m, last_node, "min", 0.25f);
    carve_node_set_attr_float(m, last_node, "max", 1.5f);
    carve_graph_add_output(m, 0, y);
    cv_val *a = data(2, ad, 33);
    check_same(m, &a, 1, "gemm + relu + clip (opset 10 attributes)");
    cv_val_unref(a);
    carve_model_free(m);
}

/* The Mul's output is also a graph output: it is the chain's last value,
 * made and stored; the Add after it runs on its own. */
static void test_output_ends_chain(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 13);
    int64_t xd[4] = {1, 4, 6, 6}, wd[4] = {4, 4, 1, 1}, cd[3] = {4, 1, 1};
    carve_value_id y = op2(m, "Conv", "conv", input(m, "x", 4, xd), init_rand(m, "w", 4, wd, 41, -1, 1));
    carve_node_id head = last_node;
    y = op2(m, "Mul", "mul", y, init_rand(m, "s", 3, cd, 42, -2, 2));
    carve_graph_add_output(m, 0, y);
    y = op2(m, "Add", "add", y, scalar(m, "one", 1.0f));
    carve_graph_add_output(m, 0, y);
    OT_CHECK(chain_len(m, head) == 1, "a graph output ends the chain (%u nodes)", chain_len(m, head));
    cv_val *x = data(4, xd, 43);
    check_same(m, &x, 1, "an output inside the chain");
    cv_val_unref(x);
    carve_model_free(m);
}

/* Squeeze-excitation: the Conv makes [1,C,1,1], the Mul broadcasts it up to
 * [1,C,H,W]: the epilogue cannot, the nodes run one by one. */
static void test_broadcast_up_falls_back(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 13);
    int64_t xd[4] = {1, 4, 5, 5}, pd[4] = {1, 4, 1, 1}, wd[4] = {4, 4, 1, 1};
    carve_value_id x = input(m, "x", 4, xd);
    carve_value_id y = op2(m, "Conv", "conv", input(m, "p", 4, pd), init_rand(m, "w", 4, wd, 51, -1, 1));
    y = op1(m, "HardSigmoid", "hsig", y);
    y = op2(m, "Mul", "excite", x, y);
    carve_graph_add_output(m, 0, y);
    cv_val *in[2] = {data(4, xd, 52), data(4, pd, 53)};
    check_same(m, in, 0, "a broadcast up to a larger shape");
    cv_val_unref(in[0]);
    cv_val_unref(in[1]);
    carve_model_free(m);
}

/* A double operand: no epilogue; the Add's kernel reports it as unfused. */
static void test_bad_operand_same_error(carve_ctx *ctx)
{
    carve_model *m = new_model(ctx, 13);
    int64_t xd[4] = {1, 2, 3, 3}, wd[4] = {2, 2, 1, 1};
    carve_value_id y = op2(m, "Conv", "conv", input(m, "x", 4, xd), init_rand(m, "w", 4, wd, 61, -1, 1));
    double one = 1.0;
    carve_value_id d = carve_graph_add_initializer(m, 0, "one", CARVE_DOUBLE, 0, NULL, &one, sizeof one);
    y = op2(m, "Add", "add_double", y, d);
    carve_graph_add_output(m, 0, y);
    cv_val *x = data(4, xd, 62), *out[1] = {NULL};
    char msg[2][512];
    for (int unfused = 0; unfused < 2; unfused++) {
        uint32_t f = 0;
        carve_status s = run(m, &x, out, unfused, &f);
        OT_CHECK(s == CARVE_ERR_INVALID && !out[0] && f == 0, "double operand (unfused %d): status %d, no output", unfused, s);
        snprintf(msg[unfused], sizeof msg[unfused], "%s", carve_errmsg(ctx));
    }
    OT_CHECK(!strcmp(msg[0], msg[1]), "the same error fused and unfused: '%s' / '%s'", msg[0], msg[1]);
    OT_CHECK(strstr(msg[0], "node 'add_double' (Add)") && strstr(msg[0], "double"),
             "the error names the node and the dtype: %s", msg[0]);
    cv_val_unref(x);
    carve_model_free(m);
}

/* A traced run (carve run --dump-values) is told of every value the graph
 * makes, the chain's inner values included. */
static void test_trace_sees_every_value(carve_ctx *ctx)
{
    cv_val *x;
    carve_node_id head;
    carve_model *m = conv_chain(ctx, 1, 3, true, &x, &head);
    cv_val *out[1] = {NULL};
    uint32_t f = 0;
    traced = 0;
    OT_CHECK(run(m, &x, out, true, &f) == CARVE_OK, "traced run");
    OT_CHECK(traced == carve_graph_node_count(m, 0) && f == 0, "every node's value traced: %zu of %zu", traced,
             carve_graph_node_count(m, 0));
    cv_val_unref(out[0]);
    cv_val_unref(x);
    carve_model_free(m);
}

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    test_conv_chains(ctx);
    test_matmul_chain(ctx);
    test_gemm_and_clip_attrs(ctx);
    test_output_ends_chain(ctx);
    test_broadcast_up_falls_back(ctx);
    test_bad_operand_same_error(ctx);
    test_trace_sees_every_value(ctx);
    carve_ctx_free(ctx);
    return ot_finish();
}

/* test_elementwise.c: the element-wise ops. Every composite op (Elu, Celu,
 * Selu, HardSigmoid, HardSwish, Gelu both ways, PRelu) against its
 * decomposition on several shapes and attributes, float32 and float16;
 * broadcasting against a naive index computation (binary ops and Where);
 * the integer semantics (Div truncation, Mod signs, division by zero,
 * BitShift, exact Pow), NaN handling, Clip across opsets, the legacy
 * `broadcast`/`axis` attributes, strings; inference on symbolic shapes; and
 * the error texts of bad inputs. */
#include "tb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ model building */

/* tb.h's builder, with inputs named x0, x1, ... and all fed to the node. */
static carve_value_id ew_in(tb *t, cv_val *v)
{
    char name[8];
    snprintf(name, sizeof name, "x%d", t->n_run_in);
    return tb_in(t, name, v);
}

/* "y = op(inputs)" named "n0" over the fed inputs, made the graph output. */
static carve_node_id ew_node(tb *t, const char *op)
{
    carve_value_id ins[10];
    for (int i = 0; i < t->n_run_in; i++)
        ins[i] = carve_graph_input(t->m, 0, (size_t)i);
    return tb_node_named(t, op, "n0", t->n_run_in, ins, 1);
}

/* Runs; returns the output or NULL (the message on t->ctx). */
static cv_val *ew_run(tb *t)
{
    cv_val *out[1];
    return tb_run(t, out) ? NULL : out[0];
}

static cv_val *tensor(carve_dtype dt, int rank, const int64_t *dims) { return cv_val_new(dt, rank, dims); }

static cv_val *vec_f(const float *x, int64_t n)
{
    cv_val *v = tensor(CARVE_FLOAT, 1, &n);
    memcpy(v->data, x, (size_t)n * 4);
    return v;
}

static cv_val *vec_i(carve_dtype dt, const int64_t *x, int64_t n)
{
    cv_val *v = tensor(dt, 1, &n);
    for (int64_t i = 0; i < n; i++)
        cv_val_set_i64(v, (size_t)i, x[i]);
    return v;
}

/* Runs op on the given inputs (released) with opset; NULL on error, the
 * message copied to err. */
static cv_val *run_op(const char *op, int64_t opset, int n, cv_val **ins, void (*attrs)(tb *, void *), void *ud,
                      char *err, size_t errsz)
{
    tb t;
    tb_init(&t, opset);
    for (int i = 0; i < n; i++)
        ew_in(&t, ins[i]);
    ew_node(&t, op);
    if (attrs)
        attrs(&t, ud);
    cv_val *y = ew_run(&t);
    if (err)
        snprintf(err, errsz, "%s", y ? "" : carve_errmsg(t.ctx));
    tb_free(&t);
    return y;
}

#define N(a) (sizeof(a) / sizeof *(a))

/* ================================================================ decompositions */

typedef struct {
    const char *name;
    float v;
} fattr;

static void check_decomp(const char *op, int64_t opset, carve_dtype dt, int rank, const int64_t *dims,
                         const fattr *fa, int nfa, const char *sname, const char *sval, int srank,
                         const int64_t *sdims, uint32_t seed)
{
    tb t;
    tb_init(&t, opset);
    ew_in(&t, ot_random(dt, rank, dims, seed, -4, 4));
    if (srank >= 0)
        ew_in(&t, ot_random(dt, srank, sdims, seed + 1, -1, 1));
    carve_node_id n = ew_node(&t, op);
    for (int i = 0; i < nfa; i++)
        carve_node_set_attr_float(t.m, n, fa[i].name, fa[i].v);
    if (sname)
        carve_node_set_attr_string(t.m, n, sname, sval);
    bool half = dt == CARVE_FLOAT16;
    ot_check_decomposition(t.m, n, t.run_in, half ? 1e-2 : 1e-5, half ? 1e-2 : 1e-5);
    tb_free(&t);
}

static void test_decompositions(void)
{
    static const int64_t s1[1] = {7}, s3[3] = {2, 3, 4}, s4[4] = {1, 3, 5, 5};
    static const struct {
        int rank;
        const int64_t *dims;
    } shapes[3] = {{1, s1}, {3, s3}, {4, s4}};
    static const carve_dtype types[2] = {CARVE_FLOAT, CARVE_FLOAT16};
    const fattr a05[1] = {{"alpha", 0.5f}}, a2[1] = {{"alpha", 2.0f}};
    const fattr selu[2] = {{"alpha", 1.5f}, {"gamma", 0.8f}}, hs[2] = {{"alpha", 0.3f}, {"beta", 0.4f}};
    uint32_t seed = 1;
    for (int ti = 0; ti < 2; ti++) {
        carve_dtype dt = types[ti];
        for (int si = 0; si < 3; si++) {
            int r = shapes[si].rank;
            const int64_t *d = shapes[si].dims;
            check_decomp("Elu", 18, dt, r, d, NULL, 0, NULL, NULL, -1, NULL, seed++);
            check_decomp("Elu", 18, dt, r, d, a05, 1, NULL, NULL, -1, NULL, seed++);
            check_decomp("Celu", 18, dt, r, d, NULL, 0, NULL, NULL, -1, NULL, seed++);
            check_decomp("Celu", 18, dt, r, d, a2, 1, NULL, NULL, -1, NULL, seed++);
            check_decomp("Selu", 18, dt, r, d, NULL, 0, NULL, NULL, -1, NULL, seed++);
            check_decomp("Selu", 18, dt, r, d, selu, 2, NULL, NULL, -1, NULL, seed++);
            check_decomp("HardSigmoid", 18, dt, r, d, NULL, 0, NULL, NULL, -1, NULL, seed++);
            check_decomp("HardSigmoid", 18, dt, r, d, hs, 2, NULL, NULL, -1, NULL, seed++);
            check_decomp("HardSwish", 18, dt, r, d, NULL, 0, NULL, NULL, -1, NULL, seed++);
            check_decomp("Gelu", 20, dt, r, d, NULL, 0, NULL, NULL, -1, NULL, seed++);
            check_decomp("Gelu", 20, dt, r, d, NULL, 0, "approximate", "tanh", -1, NULL, seed++);
            check_decomp("Gelu", 20, dt, r, d, NULL, 0, "approximate", "none", -1, NULL, seed++);
            /* PRelu: slope of X's shape, a scalar-like [1], the trailing dim */
            check_decomp("PRelu", 16, dt, r, d, NULL, 0, NULL, NULL, r, d, seed++);
            check_decomp("PRelu", 16, dt, r, d, NULL, 0, NULL, NULL, 1, (const int64_t[]){1}, seed++);
            check_decomp("PRelu", 16, dt, r, d, NULL, 0, NULL, NULL, 1, &d[r - 1], seed++);
            /* old opsets: no Where before 9, no broadcasting Min/Max before 8,
             * `broadcast`=1 before 7: every piece an op of the opset */
            for (int64_t old = 6; old <= 8; old++) {
                check_decomp("Elu", old, dt, r, d, a05, 1, NULL, NULL, -1, NULL, seed++);
                check_decomp("Selu", old, dt, r, d, selu, 2, NULL, NULL, -1, NULL, seed++);
                check_decomp("HardSigmoid", old, dt, r, d, hs, 2, NULL, NULL, -1, NULL, seed++);
                check_decomp("PRelu", old, dt, r, d, NULL, 0, NULL, NULL, 1, &d[r - 1], seed++);
            }
        }
        /* per-channel slope [C,1,1] against [N,C,H,W] */
        check_decomp("PRelu", 16, dt, 4, s4, NULL, 0, NULL, NULL, 3, (const int64_t[]){3, 1, 1}, seed++);
    }
    /* an attribute value no decomposition handles */
    tb t;
    tb_init(&t, 20);
    ew_in(&t, ot_random(CARVE_FLOAT, 1, s1, 3, -1, 1));
    carve_node_id n = ew_node(&t, "Gelu");
    carve_node_set_attr_string(t.m, n, "approximate", "erf");
    carve_status s = cv_decompose_node(t.m, n);
    OT_CHECK(s == CARVE_ERR_UNSUPPORTED && strstr(carve_errmsg(t.ctx), "attribute 'approximate' is \"erf\""),
             "Gelu approximate=erf: %s", carve_errmsg(t.ctx));
    OT_CHECK(carve_graph_node_count(t.m, 0) == 1, "a failed decomposition leaves the node");
    cv_val *y = ew_run(&t);
    OT_CHECK(!y && strstr(carve_errmsg(t.ctx), "node 'n0' (Gelu): attribute 'approximate' is \"erf\""),
             "Gelu kernel rejects approximate=erf: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* The kernels against the formulas at a few points (float32). */
static void test_activations(void)
{
    const float x[6] = {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, NAN};
    static const char *ops[] = {"Sigmoid", "Softplus", "Gelu", "Mish", "Elu", "Selu"};
    for (size_t o = 0; o < N(ops); o++) {
        cv_val *in[1] = {vec_f(x, 6)};
        char err[300];
        cv_val *y = run_op(ops[o], 20, 1, in, NULL, NULL, err, sizeof err);
        OT_CHECK(y != NULL, "%s ran: %s", ops[o], err);
        for (int i = 0; y && i < 6; i++) {
            double v = x[i], want;
            switch (o) {
            case 0: want = 1 / (1 + exp(-v)); break;
            case 1: want = log(1 + exp(v)); break;
            case 2: want = 0.5 * v * (1 + erf(v / sqrt(2.0))); break;
            case 3: want = v * tanh(log(1 + exp(v))); break;
            case 4: want = v < 0 ? exp(v) - 1 : v; break;
            default:
                want = v <= 0 ? 1.05070102214813232421875 * (1.67326319217681884765625 * exp(v) - 1.67326319217681884765625)
                              : 1.05070102214813232421875 * v;
                break;
            }
            double got = ((float *)y->data)[i];
            OT_CHECK(isnan(v) ? isnan(got) : fabs(got - want) <= 1e-6 + 1e-6 * fabs(want), "%s(%g) = %.9g, expected %.9g",
                     ops[o], v, got, want);
        }
        cv_val_unref(y);
    }
    /* Sign(NaN) is 0 (onnxruntime); Round halves to even; IsInf attributes */
    const float r[6] = {0.5f, 1.5f, 2.5f, -2.5f, -0.4f, NAN};
    cv_val *in[1] = {vec_f(r, 6)};
    cv_val *y = run_op("Round", 13, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((float *)y->data)[0] == 0 && ((float *)y->data)[1] == 2 && ((float *)y->data)[2] == 2 &&
                 ((float *)y->data)[3] == -2 && ((float *)y->data)[4] == 0 && isnan(((float *)y->data)[5]),
             "Round halves to even");
    cv_val_unref(y);
    in[0] = vec_f(r, 6);
    y = run_op("Sign", 13, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((float *)y->data)[3] == -1 && ((float *)y->data)[0] == 1 && ((float *)y->data)[5] == 0,
             "Sign, with Sign(NaN) = 0");
    cv_val_unref(y);
}

static void set_detect(tb *t, void *ud)
{
    (void)ud;
    carve_node_set_attr_int(t->m, t->node, "detect_positive", 0);
}

static void test_unary_types(void)
{
    const float x[4] = {INFINITY, -INFINITY, NAN, 1.0f};
    cv_val *in[1] = {vec_f(x, 4)};
    cv_val *y = run_op("IsInf", 13, 1, in, set_detect, NULL, NULL, 0);
    OT_CHECK(y && y->dtype == CARVE_BOOL && ((uint8_t *)y->data)[0] == 0 && ((uint8_t *)y->data)[1] == 1 &&
                 ((uint8_t *)y->data)[2] == 0,
             "IsInf detect_positive=0");
    cv_val_unref(y);
    /* integer Abs/Neg wrap, Relu, BitwiseNot, Shrink on ints */
    const int64_t iv[4] = {-128, -3, 0, 127};
    in[0] = vec_i(CARVE_INT8, iv, 4);
    y = run_op("Abs", 13, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((int8_t *)y->data)[0] == -128 && ((int8_t *)y->data)[1] == 3, "int8 Abs(-128) wraps to -128");
    cv_val_unref(y);
    in[0] = vec_i(CARVE_INT8, iv, 4);
    y = run_op("Neg", 13, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((int8_t *)y->data)[0] == -128 && ((int8_t *)y->data)[3] == -127, "int8 Neg");
    cv_val_unref(y);
    in[0] = vec_i(CARVE_INT32, iv, 4);
    y = run_op("BitwiseNot", 18, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((int32_t *)y->data)[1] == 2 && ((int32_t *)y->data)[2] == -1, "BitwiseNot");
    cv_val_unref(y);
    in[0] = vec_i(CARVE_INT32, iv, 4);
    y = run_op("Shrink", 13, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((int32_t *)y->data)[1] == -3 && ((int32_t *)y->data)[2] == 0, "Shrink on int32");
    cv_val_unref(y);
    in[0] = vec_i(CARVE_INT32, iv, 4);
    char err[400];
    y = run_op("Exp", 13, 1, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Exp): input 0 'x0' is int32, which Exp does not take"), "error: %s", err);
    /* float16 activations compute in float32 and round once */
    int64_t d1 = 3;
    cv_val *h = tensor(CARVE_FLOAT16, 1, &d1);
    cv_val_set_f64(h, 0, -1.0);
    cv_val_set_f64(h, 1, 0.5);
    cv_val_set_f64(h, 2, 3.0);
    in[0] = h;
    y = run_op("Sigmoid", 13, 1, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && y->dtype == CARVE_FLOAT16 && ((uint16_t *)y->data)[1] == cv_f32_to_f16(1.0f / (1.0f + expf(-0.5f))),
             "float16 Sigmoid rounds the float32 result");
    cv_val_unref(y);
}

/* ================================================================ broadcasting */

/* Offset into (r, d) of output multi-index idx of rank orank. */
static size_t naive_off(int r, const int64_t *d, int orank, const int64_t *idx)
{
    size_t off = 0;
    for (int i = 0; i < r; i++) {
        int64_t k = d[i] == 1 ? 0 : idx[i + orank - r];
        off = off * (size_t)d[i] + (size_t)k;
    }
    return off;
}

static void test_broadcast(void)
{
    static const struct {
        int ra;
        int64_t a[5];
        int rb;
        int64_t b[5];
    } cases[] = {
        {3, {2, 3, 4}, 1, {4}},           {3, {2, 3, 4}, 2, {3, 1}},        {3, {2, 1, 4}, 3, {1, 3, 1}},
        {1, {1}, 1, {5}},                 {0, {0}, 2, {2, 2}},              {4, {3, 1, 5, 1}, 3, {4, 1, 6}},
        {2, {2, 3}, 2, {2, 3}},           {2, {6, 1}, 2, {1, 7}},           {4, {2, 3, 4, 5}, 4, {1, 3, 1, 1}},
        {3, {1, 1, 1}, 1, {1}},           {2, {0, 3}, 1, {3}},              {5, {2, 1, 3, 1, 2}, 5, {1, 2, 1, 2, 1}},
        {4, {1, 16, 9, 9}, 3, {16, 1, 1}}, {2, {5, 1}, 0, {0}},             {3, {4, 1, 3}, 2, {1, 3}},
    };
    for (size_t c = 0; c < N(cases); c++) {
        int64_t od[CARVE_MAX_RANK];
        int orank;
        cv_broadcast_shape(cases[c].ra, cases[c].a, cases[c].rb, cases[c].b, &orank, od);
        static const char *ops[3] = {"Sub", "Mul", "Less"};
        static const carve_dtype dts[3] = {CARVE_FLOAT, CARVE_INT32, CARVE_FLOAT};
        for (int o = 0; o < 3; o++) {
            cv_val *a = ot_random(dts[o], cases[c].ra, cases[c].a, (uint32_t)(c * 7 + o), -100, 100);
            cv_val *b = ot_random(dts[o], cases[c].rb, cases[c].b, (uint32_t)(c * 7 + o + 3), -100, 100);
            cv_val *ins[2] = {cv_val_ref(a), cv_val_ref(b)};
            char err[300];
            cv_val *y = run_op(ops[o], 14, 2, ins, NULL, NULL, err, sizeof err);
            OT_CHECK(y && y->rank == orank && !memcmp(y->dims, od, sizeof(int64_t) * (size_t)orank),
                     "case %zu %s: shape (%s)", c, ops[o], err);
            int bad = 0;
            int64_t idx[CARVE_MAX_RANK] = {0};
            for (size_t i = 0; y && i < y->nelem; i++) {
                size_t ia = naive_off(a->rank, a->dims, orank, idx), ib = naive_off(b->rank, b->dims, orank, idx);
                if (o == 0)
                    bad += ((float *)y->data)[i] != ((float *)a->data)[ia] - ((float *)b->data)[ib];
                else if (o == 1)
                    bad += ((int32_t *)y->data)[i] != ((int32_t *)a->data)[ia] * ((int32_t *)b->data)[ib];
                else
                    bad += ((uint8_t *)y->data)[i] != (((float *)a->data)[ia] < ((float *)b->data)[ib]);
                for (int d = orank - 1; d >= 0; d--) {
                    if (++idx[d] < od[d])
                        break;
                    idx[d] = 0;
                }
            }
            OT_CHECK(y && !bad, "case %zu %s: %d elements differ from the naive broadcast", c, ops[o], bad);
            cv_val_unref(y);
            cv_val_unref(a);
            cv_val_unref(b);
        }
    }
    /* Where broadcasts three ways */
    const int64_t dc[2] = {3, 1}, dx[3] = {2, 1, 4}, dy[1] = {4};
    cv_val *cond = ot_random(CARVE_BOOL, 2, dc, 5, 0, 2);
    cv_val *x = ot_random(CARVE_INT64, 3, dx, 6, -50, 50), *yv = ot_random(CARVE_INT64, 1, dy, 7, -50, 50);
    cv_val *ins[3] = {cv_val_ref(cond), cv_val_ref(x), cv_val_ref(yv)};
    cv_val *w = run_op("Where", 16, 3, ins, NULL, NULL, NULL, 0);
    OT_CHECK(w && w->rank == 3 && w->dims[0] == 2 && w->dims[1] == 3 && w->dims[2] == 4, "Where shape [2,3,4]");
    int bad = 0;
    for (int64_t i = 0; w && i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            for (int64_t l = 0; l < 4; l++) {
                int64_t want = ((uint8_t *)cond->data)[j] ? ((int64_t *)x->data)[i * 4 + l] : ((int64_t *)yv->data)[l];
                bad += ((int64_t *)w->data)[(i * 3 + j) * 4 + l] != want;
            }
    OT_CHECK(w && !bad, "Where: %d elements wrong", bad);
    cv_val_unref(w);
    cv_val_unref(cond);
    cv_val_unref(x);
    cv_val_unref(yv);
}

/* ================================================================ integer and special semantics */

static void set_fmod(tb *t, void *ud) { carve_node_set_attr_int(t->m, t->node, "fmod", *(int *)ud); }
static void set_dir(tb *t, void *ud) { carve_node_set_attr_string(t->m, t->node, "direction", ud); }

static void test_integer_ops(void)
{
    const int64_t a[6] = {-7, 7, -7, 7, INT32_MIN, 5}, b[6] = {2, -2, 3, -3, -1, 5};
    cv_val *in[2] = {vec_i(CARVE_INT32, a, 6), vec_i(CARVE_INT32, b, 6)};
    cv_val *y = run_op("Div", 14, 2, in, NULL, NULL, NULL, 0);
    static const int32_t div[6] = {-3, -3, -2, -2, INT32_MIN, 1};
    OT_CHECK(y && !memcmp(y->data, div, sizeof div), "int32 Div truncates, INT_MIN / -1 wraps");
    cv_val_unref(y);
    int fm = 0;
    in[0] = vec_i(CARVE_INT32, a, 6), in[1] = vec_i(CARVE_INT32, b, 6);
    y = run_op("Mod", 13, 2, in, set_fmod, &fm, NULL, 0);
    static const int32_t mod[6] = {1, -1, 2, -2, 0, 0};
    OT_CHECK(y && !memcmp(y->data, mod, sizeof mod), "int32 Mod: the sign follows the divisor");
    cv_val_unref(y);
    fm = 1;
    in[0] = vec_i(CARVE_INT32, a, 6), in[1] = vec_i(CARVE_INT32, b, 6);
    y = run_op("Mod", 13, 2, in, set_fmod, &fm, NULL, 0);
    static const int32_t fmd[6] = {-1, 1, -1, 1, 0, 0};
    OT_CHECK(y && !memcmp(y->data, fmd, sizeof fmd), "int32 Mod fmod=1: the sign follows the dividend");
    cv_val_unref(y);
    /* division by zero is an error, not UB */
    const int64_t z[2] = {1, 0};
    char err[400];
    in[0] = vec_i(CARVE_INT64, z, 2), in[1] = vec_i(CARVE_INT64, z, 2);
    y = run_op("Div", 14, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Div): input 1 'x1' element 1 is 0: integer division by zero"), "error: %s",
             err);
    fm = 0;
    in[0] = vec_i(CARVE_UINT8, z, 2), in[1] = vec_i(CARVE_UINT8, z, 2);
    y = run_op("Mod", 13, 2, in, set_fmod, &fm, err, sizeof err);
    OT_CHECK(!y && strstr(err, "integer division by zero"), "Mod by zero: %s", err);
    const float f[2] = {1.5f, -2.5f};
    in[0] = vec_f(f, 2), in[1] = vec_f(f, 2);
    y = run_op("Mod", 13, 2, in, set_fmod, &fm, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Mod): attribute 'fmod' must be 1 for float32 inputs"), "error: %s", err);
    /* BitShift: past the width gives 0 */
    const int64_t sx[4] = {1, 255, 128, 7}, ss[4] = {3, 8, 7, 200};
    in[0] = vec_i(CARVE_UINT8, sx, 4), in[1] = vec_i(CARVE_UINT8, ss, 4);
    y = run_op("BitShift", 11, 2, in, set_dir, "LEFT", NULL, 0);
    static const uint8_t shl[4] = {8, 0, 0, 0};
    OT_CHECK(y && !memcmp(y->data, shl, 4), "uint8 BitShift LEFT");
    cv_val_unref(y);
    in[0] = vec_i(CARVE_UINT8, sx, 4), in[1] = vec_i(CARVE_UINT8, ss, 4);
    y = run_op("BitShift", 11, 2, in, set_dir, "RIGHT", NULL, 0);
    static const uint8_t shr[4] = {0, 0, 1, 0};
    OT_CHECK(y && !memcmp(y->data, shr, 4), "uint8 BitShift RIGHT");
    cv_val_unref(y);
    in[0] = vec_i(CARVE_UINT8, sx, 4), in[1] = vec_i(CARVE_UINT8, ss, 4);
    y = run_op("BitShift", 11, 2, in, set_dir, "UP", err, sizeof err);
    OT_CHECK(!y && strstr(err, "attribute 'direction' is \"UP\", expected \"LEFT\" or \"RIGHT\""), "error: %s", err);
    /* Pow: exact where the result fits, onnxruntime's conversion where not */
    const int64_t pb[5] = {3, 2, 2, -3, 0}, pe[5] = {39, -1, 40, 3, 0};
    in[0] = vec_i(CARVE_INT64, pb, 5), in[1] = vec_i(CARVE_INT64, pe, 5);
    y = run_op("Pow", 15, 2, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((int64_t *)y->data)[0] == 4052555153018976267 && ((int64_t *)y->data)[1] == 0 &&
                 ((int64_t *)y->data)[2] == 1099511627776 && ((int64_t *)y->data)[3] == -27 &&
                 ((int64_t *)y->data)[4] == 1,
             "int64 Pow exact (3^39 = %lld)", y ? (long long)((int64_t *)y->data)[0] : 0);
    cv_val_unref(y);
    in[0] = vec_i(CARVE_INT32, pb, 5), in[1] = vec_i(CARVE_INT64, pe, 5);
    y = run_op("Pow", 15, 2, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && y->dtype == CARVE_INT32 && ((int32_t *)y->data)[0] == INT32_MIN && ((int32_t *)y->data)[3] == -27,
             "int32 Pow overflow gives INT32_MIN (x86 conversion)");
    cv_val_unref(y);
    const float pf[3] = {2.0f, -8.0f, 4.0f};
    const int64_t pi[3] = {3, 2, -1};
    in[0] = vec_f(pf, 3), in[1] = vec_i(CARVE_INT32, pi, 3);
    y = run_op("Pow", 15, 2, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && y->dtype == CARVE_FLOAT && ((float *)y->data)[0] == 8 && ((float *)y->data)[1] == 64 &&
                 ((float *)y->data)[2] == 0.25f,
             "float32 base, int32 exponent");
    cv_val_unref(y);
}

static void test_float_ops(void)
{
    const float a[4] = {NAN, 1.0f, 2.0f, -0.0f}, b[4] = {1.0f, NAN, 3.0f, 5.0f};
    cv_val *in[2] = {vec_f(a, 4), vec_f(b, 4)};
    cv_val *y = run_op("Max", 13, 2, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && isnan(((float *)y->data)[0]) && isnan(((float *)y->data)[1]) && ((float *)y->data)[2] == 3,
             "Max propagates NaN");
    cv_val_unref(y);
    /* Mean of three with broadcasting, Sum of one */
    const float m1[2] = {1, 2}, m2[1] = {4}, m3[2] = {7, 9};
    cv_val *three[3] = {vec_f(m1, 2), vec_f(m2, 1), vec_f(m3, 2)};
    y = run_op("Mean", 13, 3, three, NULL, NULL, NULL, 0);
    OT_CHECK(y && y->nelem == 2 && ((float *)y->data)[0] == 4 && ((float *)y->data)[1] == 5, "Mean");
    cv_val_unref(y);
    cv_val *one[1] = {vec_f(m1, 2)};
    y = run_op("Sum", 13, 1, one, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((float *)y->data)[1] == 2, "Sum of one input");
    cv_val_unref(y);
    /* float16 Add rounds to nearest even on store */
    int64_t d1 = 1;
    cv_val *h1 = tensor(CARVE_FLOAT16, 1, &d1), *h2 = tensor(CARVE_FLOAT16, 1, &d1);
    ((uint16_t *)h1->data)[0] = 0x3c00; /* 1 */
    ((uint16_t *)h2->data)[0] = 0x1000; /* 2^-11 */
    in[0] = h1, in[1] = h2;
    y = run_op("Add", 14, 2, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((uint16_t *)y->data)[0] == 0x3c00, "float16 1 + 2^-11 ties to even");
    cv_val_unref(y);
    /* strings: Equal and Where */
    int64_t d2 = 2;
    cv_val *s1 = tensor(CARVE_STRING, 1, &d2), *s2 = tensor(CARVE_STRING, 1, &d2);
    const char *w1[2] = {"ab", "cd"}, *w2[2] = {"ab", "ce"};
    for (int i = 0; i < 2; i++) {
        ((char **)s1->data)[i] = cv_malloc(3);
        strcpy(((char **)s1->data)[i], w1[i]);
        ((char **)s2->data)[i] = cv_malloc(3);
        strcpy(((char **)s2->data)[i], w2[i]);
    }
    in[0] = cv_val_ref(s1), in[1] = cv_val_ref(s2);
    y = run_op("Equal", 19, 2, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((uint8_t *)y->data)[0] == 1 && ((uint8_t *)y->data)[1] == 0, "Equal on strings");
    cv_val_unref(y);
    cv_val *c = tensor(CARVE_BOOL, 1, &d2);
    ((uint8_t *)c->data)[1] = 1;
    cv_val *three2[3] = {c, s1, s2};
    y = run_op("Where", 16, 3, three2, NULL, NULL, NULL, 0);
    OT_CHECK(y && !strcmp(((char **)y->data)[0], "ab") && !strcmp(((char **)y->data)[1], "cd"), "Where on strings");
    cv_val_unref(y);
}

static void set_clip6(tb *t, void *ud)
{
    (void)ud;
    carve_node_set_attr_float(t->m, t->node, "min", -1.0f);
    carve_node_set_attr_float(t->m, t->node, "max", 0.5f);
}

static void test_clip(void)
{
    const float x[5] = {-3, -0.5f, 0.25f, 2, NAN};
    cv_val *in[3] = {vec_f(x, 5)};
    cv_val *y = run_op("Clip", 6, 1, in, set_clip6, NULL, NULL, 0);
    OT_CHECK(y && ((float *)y->data)[0] == -1 && ((float *)y->data)[2] == 0.25f && ((float *)y->data)[3] == 0.5f &&
                 isnan(((float *)y->data)[4]),
             "Clip-6 attributes");
    cv_val_unref(y);
    /* opset 13: inputs; min > max gives max */
    const float lo[1] = {1}, hi[1] = {0};
    in[0] = vec_f(x, 5), in[1] = vec_f(lo, 1), in[2] = vec_f(hi, 1);
    y = run_op("Clip", 13, 3, in, NULL, NULL, NULL, 0);
    OT_CHECK(y && ((float *)y->data)[0] == 0 && ((float *)y->data)[3] == 0, "Clip with min > max gives max");
    cv_val_unref(y);
    /* int8 with only a max */
    const int64_t iv[3] = {-128, 5, 127}, mx[1] = {6};
    tb t;
    tb_init(&t, 13);
    carve_value_id ins[3];
    ins[0] = ew_in(&t, vec_i(CARVE_INT8, iv, 3));
    ins[1] = CARVE_NONE;
    ins[2] = ew_in(&t, vec_i(CARVE_INT8, mx, 1));
    const char *outs[1] = {"y"};
    t.node = carve_graph_add_node(t.m, 0, "Clip", "", "n0", 3, ins, 1, outs);
    carve_graph_add_output(t.m, 0, carve_node_output(t.m, t.node, 0));
    cv_val *feed[2] = {t.run_in[0], t.run_in[1]}, *out[1] = {NULL};
    carve_status s = ot_run(t.m, feed, out);
    OT_CHECK(!s && out[0] && ((int8_t *)out[0]->data)[0] == -128 && ((int8_t *)out[0]->data)[2] == 6,
             "int8 Clip with min omitted: %s", carve_errmsg(t.ctx));
    cv_val_unref(out[0]);
    tb_free(&t);
    /* a bound that is not a scalar */
    const float two[2] = {0, 1};
    in[0] = vec_f(x, 5), in[1] = vec_f(two, 2);
    char err[400];
    y = run_op("Clip", 13, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Clip): input 1 'x1' must be a scalar, it has 2 elements"), "error: %s", err);
}

static void set_legacy(tb *t, void *ud)
{
    carve_node_set_attr_int(t->m, t->node, "broadcast", 1);
    if (ud)
        carve_node_set_attr_int(t->m, t->node, "axis", *(int64_t *)ud);
}

static void test_legacy_broadcast(void)
{
    const int64_t da[4] = {2, 3, 4, 5}, db[2] = {3, 4};
    cv_val *a = ot_random(CARVE_FLOAT, 4, da, 11, -1, 1), *b = ot_random(CARVE_FLOAT, 2, db, 12, -1, 1);
    int64_t axis = 1;
    cv_val *in[2] = {cv_val_ref(a), cv_val_ref(b)};
    char err[400];
    cv_val *y = run_op("Add", 6, 2, in, set_legacy, &axis, err, sizeof err);
    OT_CHECK(y && y->rank == 4 && y->nelem == 120, "Add-6 broadcast=1 axis=1: %s", err);
    int bad = 0;
    for (int64_t i = 0; y && i < 120; i++) {
        int64_t j = (i / 5) % 12; /* (c, h) of (n, c, h, w) */
        bad += ((float *)y->data)[i] != ((float *)a->data)[i] + ((float *)b->data)[j];
    }
    OT_CHECK(y && !bad, "Add-6 axis=1: %d wrong", bad);
    cv_val_unref(y);
    /* suffix matching without axis; and a mismatch */
    const int64_t dc[2] = {4, 5};
    cv_val *c = ot_random(CARVE_FLOAT, 2, dc, 13, -1, 1);
    in[0] = cv_val_ref(a), in[1] = c;
    y = run_op("Mul", 6, 2, in, set_legacy, NULL, err, sizeof err);
    OT_CHECK(y && y->rank == 4, "Mul-6 suffix broadcast: %s", err);
    cv_val_unref(y);
    axis = 2;
    in[0] = cv_val_ref(a), in[1] = cv_val_ref(b);
    y = run_op("Sub", 6, 2, in, set_legacy, &axis, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Sub): input 1 'x1' of shape [3,4] does not match input 0's shape "
                               "[2,3,4,5] from axis 2"),
             "error: %s", err);
    cv_val_unref(a);
    cv_val_unref(b);
}

/* ================================================================ inference and errors */

/* Shape inference on one node op (named name) at opset, of inputs a (dta,
 * dims da) and b (dtb, dims db), fails with an error holding want. */
static void infer_fails(const char *op, const char *name, int64_t opset, carve_dtype dta, int ra, const carve_dim *da,
                        carve_dtype dtb, int rb, const carve_dim *db, const char *want)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", opset);
    carve_value_id ab[2] = {carve_graph_add_input(m, 0, "a", dta, ra, da),
                            carve_graph_add_input(m, 0, "b", dtb, rb, db)};
    carve_node_id n = carve_graph_add_node(m, 0, op, "", name, 2, ab, 1, (const char *[]){"y"});
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    carve_status s = cv_infer_model(m, NULL);
    OT_CHECK(s && strstr(carve_errmsg(ctx), want), "%s inference: '%s' (expected '%s')", op, carve_errmsg(ctx), want);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

static void test_inference(void)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_dim da[2] = {{-1, "N"}, {3, NULL}}, db[1] = {{3, NULL}}, dc[2] = {{-1, "N"}, {1, NULL}},
              dd[2] = {{1, NULL}, {-1, "M"}};
    carve_value_id a = carve_graph_add_input(m, 0, "a", CARVE_FLOAT, 2, da);
    carve_value_id b = carve_graph_add_input(m, 0, "b", CARVE_FLOAT, 1, db);
    carve_value_id c = carve_graph_add_input(m, 0, "c", CARVE_FLOAT, 2, dc);
    carve_value_id d = carve_graph_add_input(m, 0, "d", CARVE_FLOAT, 2, dd);
    carve_value_id ab[2] = {a, b}, cd[2] = {c, d};
    const char *o1[1] = {"s"}, *o2[1] = {"t"}, *o3[1] = {"u"}, *o4[1] = {"v"};
    carve_node_id n1 = carve_graph_add_node(m, 0, "Add", "", "add", 2, ab, 1, o1);
    carve_node_id n2 = carve_graph_add_node(m, 0, "Less", "", "less", 2, cd, 1, o2);
    carve_value_id cab[3] = {carve_node_output(m, n2, 0), c, d};
    carve_node_id n3 = carve_graph_add_node(m, 0, "Where", "", "where", 3, cab, 1, o3);
    carve_value_id pr[2] = {a, b};
    carve_node_id n4 = carve_graph_add_node(m, 0, "PRelu", "", "prelu", 2, pr, 1, o4);
    carve_graph_add_output(m, 0, carve_node_output(m, n1, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, n3, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, n4, 0));
    carve_status s = cv_infer_model(m, NULL);
    OT_CHECK(!s, "inference: %s", carve_errmsg(ctx));
    carve_value_id vs = carve_node_output(m, n1, 0), vt = carve_node_output(m, n2, 0), vu = carve_node_output(m, n3, 0);
    carve_dim s0 = carve_value_dim(m, vs, 0), s1 = carve_value_dim(m, vs, 1);
    OT_CHECK(carve_value_rank(m, vs) == 2 && s0.param && !strcmp(s0.param, "N") && s1.value == 3,
             "[N,3] + [3] -> [N,3]");
    carve_dim t0 = carve_value_dim(m, vt, 0), t1 = carve_value_dim(m, vt, 1);
    OT_CHECK(carve_value_dtype(m, vt) == CARVE_BOOL && t0.param && !strcmp(t0.param, "N") && t1.param &&
                 !strcmp(t1.param, "M"),
             "[N,1] < [1,M] -> bool [N,M]");
    OT_CHECK(carve_value_dtype(m, vu) == CARVE_FLOAT && carve_value_rank(m, vu) == 2, "Where -> float32 [N,M]");
    carve_dim p0 = carve_value_dim(m, carve_node_output(m, n4, 0), 0);
    OT_CHECK(p0.param && !strcmp(p0.param, "N"), "PRelu keeps X's shape");
    carve_model_free(m);
    carve_ctx_free(ctx);

    /* legacy broadcast infers A's shape; mismatched dtypes and shapes fail */
    ctx = carve_ctx_new();
    m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 6);
    carve_dim d4[4] = {{2, NULL}, {3, NULL}, {4, NULL}, {5, NULL}}, d2[2] = {{3, NULL}, {4, NULL}};
    a = carve_graph_add_input(m, 0, "a", CARVE_FLOAT, 4, d4);
    b = carve_graph_add_input(m, 0, "b", CARVE_FLOAT, 2, d2);
    carve_value_id ab6[2] = {a, b};
    n1 = carve_graph_add_node(m, 0, "Add", "", "add6", 2, ab6, 1, o1);
    carve_node_set_attr_int(m, n1, "broadcast", 1);
    carve_node_set_attr_int(m, n1, "axis", 1);
    carve_graph_add_output(m, 0, carve_node_output(m, n1, 0));
    s = cv_infer_model(m, NULL);
    OT_CHECK(!s && carve_value_rank(m, carve_node_output(m, n1, 0)) == 4, "Add-6 with axis infers A's shape: %s",
             carve_errmsg(ctx));
    carve_model_free(m);
    carve_ctx_free(ctx);

    carve_dim d5[1] = {{5, NULL}};
    infer_fails("Mul", "mul", 14, CARVE_FLOAT, 2, da, CARVE_INT64, 1, db,
                "node 'mul' (Mul): input 1 'b' is int64 but input 0 'a' is float32");
    infer_fails("Add", "add", 14, CARVE_FLOAT, 2, da, CARVE_FLOAT, 1, d5,
                "node 'add' (Add): input shapes do not broadcast (dim 3 against 5)");
    infer_fails("PRelu", "prelu", 16, CARVE_FLOAT, 2, da, CARVE_FLOAT, 1, d5,
                "node 'prelu' (PRelu): input 1 'slope' of shape [5] does not broadcast to X's shape [N,3]");
}

static void test_errors(void)
{
    char err[400];
    const float a[3] = {1, 2, 3}, b[2] = {1, 2};
    cv_val *in[3] = {vec_f(a, 3), vec_f(b, 2)};
    cv_val *y = run_op("Add", 14, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Add): input 1 'x1' of shape [2] does not broadcast with shape [3]"),
             "error: %s", err);
    const int64_t iv[2] = {1, 2};
    in[0] = vec_f(b, 2), in[1] = vec_i(CARVE_INT32, iv, 2);
    y = run_op("Sub", 14, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Sub): input 1 'x1' is int32 but input 0 'x0' is float32"), "error: %s",
             err);
    in[0] = vec_f(b, 2), in[1] = vec_f(b, 2), in[2] = vec_f(b, 2);
    y = run_op("Where", 16, 3, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (Where): input 0 'x0' is float32, expected bool"), "error: %s", err);
    in[0] = vec_f(b, 2), in[1] = vec_f(b, 2);
    y = run_op("And", 7, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (And): input 0 'x0' is float32, which And does not take"), "error: %s", err);
    const int64_t sl[1] = {3};
    in[0] = vec_f(b, 2), in[1] = ot_random(CARVE_FLOAT, 1, sl, 1, 0, 1);
    y = run_op("PRelu", 16, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'n0' (PRelu): input 1 'x1' of shape [3] does not broadcast"), "error: %s", err);
    const int64_t big[2] = {1, 4};
    in[0] = vec_f(b, 2), in[1] = ot_random(CARVE_FLOAT, 2, big, 1, 0, 1);
    y = run_op("PRelu", 16, 2, in, NULL, NULL, err, sizeof err);
    OT_CHECK(!y && strstr(err, "does not broadcast"), "PRelu slope larger than X: %s", err);
}

/* A decomposition that would need an op its model's opset lacks is refused,
 * naming the node, the op and the opset, and leaves the node in place: Elu
 * at opset 6 on a value of unknown dtype would need CastLike (opset 15). */
static void test_decomposition_needs_newer_op(void)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 6);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (const carve_dim[]){{4, NULL}});
    const char *o1[1] = {"x1"}, *o2[1] = {"y"};
    carve_node_id id = carve_graph_add_node(m, 0, "Identity", "", "id", 1, &x, 1, o1);
    carve_value_id x1 = carve_node_output(m, id, 0);
    carve_node_id n = carve_graph_add_node(m, 0, "Elu", "", "elu", 1, &x1, 1, o2);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    carve_status s = cv_decompose_node(m, n); /* no inference: x1's dtype is unknown */
    OT_CHECK(s == CARVE_ERR_UNSUPPORTED &&
                 strstr(carve_errmsg(ctx), "node 'elu' (Elu): its decomposition needs CastLike, which ai.onnx opset 6 "
                                           "does not have (carve knows it from opset 15)"),
             "Elu at opset 6 needing CastLike: %s", carve_errmsg(ctx));
    OT_CHECK(carve_graph_node_count(m, 0) == 2 && !strcmp(carve_node_op(m, carve_graph_node(m, 0, 1)), "Elu"),
             "a refused decomposition leaves the node");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

int main(void)
{
    test_decompositions();
    test_decomposition_needs_newer_op();
    test_activations();
    test_unary_types();
    test_broadcast();
    test_integer_ops();
    test_float_ops();
    test_clip();
    test_legacy_broadcast();
    test_inference();
    test_errors();
    return ot_finish();
}

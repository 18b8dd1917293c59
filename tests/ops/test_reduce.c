/* test_reduce.c: the reductions against a direct double-precision
 * computation written here (every kind, axes as attribute and as input,
 * keepdims, noop_with_empty_axes, empty sets, integer wrap, NaN), ArgMax /
 * ArgMin, the softmax family before and after opset 13, CumSum, TopK (ties,
 * smallest, NaN, all dtypes), LpNormalization, the losses, inference on
 * symbolic shapes, error texts, and the Softmax / LogSoftmax
 * decompositions. */
#include "opstest.h"
#include "tb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ model building */

static carve_value_id tb_ints(tb *t, const char *name, size_t n, const int64_t *v)
{
    int64_t d = (int64_t)n;
    return carve_graph_add_initializer(t->m, 0, name, CARVE_INT64, 1, &d, v, n * sizeof *v);
}

static cv_val *from_doubles(carve_dtype dt, int rank, const int64_t *dims, const double *v)
{
    cv_val *x = cv_val_new(dt, rank, dims);
    for (size_t i = 0; x && i < x->nelem; i++)
        cv_val_set_f64(x, i, v[i]);
    return x;
}

/* ================================================================ reductions */

enum { K_SUM, K_MEAN, K_MAX, K_MIN, K_PROD, K_L1, K_L2, K_LOGSUM, K_LSE, K_SUMSQ, K_COUNT };
static const char *const rops[K_COUNT] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                          "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                          "ReduceLogSumExp", "ReduceSumSquare"};

/* The literal definition: every output is f over its input elements. */
static double *ref_reduce(int kind, const cv_val *x, const bool *mask, size_t *no)
{
    size_t n = 1;
    int64_t ost[CARVE_MAX_RANK];
    for (int i = x->rank - 1; i >= 0; i--) {
        ost[i] = mask[i] ? 0 : (int64_t)n;
        if (!mask[i])
            n *= (size_t)x->dims[i];
    }
    *no = n;
    double *acc = calloc(n ? n : 1, sizeof *acc), *cnt = calloc(n ? n : 1, sizeof *cnt);
    double *mx = calloc(n ? n : 1, sizeof *mx);
    for (size_t o = 0; o < n; o++) {
        acc[o] = kind == K_PROD ? 1 : kind == K_MAX ? -INFINITY : kind == K_MIN ? INFINITY : 0;
        mx[o] = -INFINITY;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < x->nelem; i++) {
            size_t rem = i, o = 0;
            for (int d = x->rank - 1; d >= 0; d--) {
                o += (rem % (size_t)x->dims[d]) * (size_t)ost[d];
                rem /= (size_t)x->dims[d];
            }
            double v = cv_val_get_f64(x, i);
            if (pass == 0) {
                if (v > mx[o])
                    mx[o] = v;
                continue;
            }
            cnt[o]++;
            switch (kind) {
            case K_SUM: case K_MEAN: case K_LOGSUM: acc[o] += v; break;
            case K_MAX: acc[o] = v > acc[o] ? v : acc[o]; break;
            case K_MIN: acc[o] = v < acc[o] ? v : acc[o]; break;
            case K_PROD: acc[o] *= v; break;
            case K_L1: acc[o] += fabs(v); break;
            case K_L2: case K_SUMSQ: acc[o] += v * v; break;
            case K_LSE: acc[o] += exp(v - mx[o]); break;
            }
        }
    for (size_t o = 0; o < n; o++) {
        if (kind == K_MEAN)
            acc[o] /= cnt[o];
        else if (kind == K_L2)
            acc[o] = sqrt(acc[o]);
        else if (kind == K_LOGSUM)
            acc[o] = log(acc[o]);
        else if (kind == K_LSE)
            acc[o] = log(acc[o]) + (isfinite(mx[o]) ? mx[o] : 0);
    }
    free(cnt);
    free(mx);
    return acc;
}

/* Runs op over axes (attribute before the axes-input opset, an
 * initializer after) and compares with ref_reduce. */
static void check_reduce(int kind, carve_dtype dt, int rank, const int64_t *dims, int na, const int64_t *axes,
                         bool keep, int64_t opset, double lo, double hi, uint32_t seed)
{
    tb t;
    tb_init(&t, opset);
    cv_val *x = ot_random(dt, rank, dims, seed, lo, hi);
    carve_value_id ins[2] = {tb_in(&t, "x", x), CARVE_NONE};
    bool as_input = opset >= (kind == K_SUM ? 13 : 18);
    if (as_input && na > 0)
        ins[1] = tb_ints(&t, "axes", (size_t)na, axes);
    carve_node_id n = tb_node(&t, rops[kind], ins[1] == CARVE_NONE ? 1 : 2, ins, 1);
    if (!as_input && na > 0)
        carve_node_set_attr_ints(t.m, n, "axes", (size_t)na, axes);
    carve_node_set_attr_int(t.m, n, "keepdims", keep);
    cv_val *y = NULL;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s == CARVE_OK, "%s %s opset %lld: %s", rops[kind], carve_dtype_name(dt), (long long)opset,
             carve_errmsg(t.ctx));
    bool mask[CARVE_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++)
        mask[i] = na <= 0;
    for (int i = 0; i < na; i++)
        mask[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
    size_t no;
    double *want = ref_reduce(kind, x, mask, &no);
    if (!s) {
        int orank = 0;
        for (int i = 0; i < rank; i++)
            orank += !mask[i] || keep;
        OT_CHECK(y->dtype == dt && y->rank == orank && y->nelem == no, "%s: output %s rank %d nelem %zu", rops[kind],
                 carve_dtype_name(y->dtype), y->rank, y->nelem);
        bool flt = cv_dtype_is_float(dt);
        double tol = dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16 ? 1e-2 : dt == CARVE_FLOAT ? 1e-5 : 1e-12;
        for (size_t o = 0; o < no && y->nelem == no; o++) {
            double got = cv_val_get_f64(y, o), w = want[o];
            bool ok;
            if (!flt) {
                /* integer outputs: the exact value, truncated like a cast */
                cv_val *tmp = cv_val_new(dt, 0, NULL);
                cv_val_set_f64(tmp, 0, w);
                ok = cv_val_get_i64(y, o) == cv_val_get_i64(tmp, 0);
                cv_val_unref(tmp);
            } else {
                ok = (isinf(w) && got == w) || (isnan(w) && isnan(got)) || fabs(got - w) <= tol * (1 + fabs(w));
            }
            if (!ok) {
                OT_CHECK(false, "%s %s opset %lld axes %d keep %d: output %zu is %.9g, expected %.9g", rops[kind],
                         carve_dtype_name(dt), (long long)opset, na, keep, o, got, w);
                break;
            }
        }
    }
    free(want);
    cv_val_unref(y);
    tb_free(&t);
}

static void test_reduce_kinds(void)
{
    static const int64_t d3[3] = {3, 4, 5}, d4[4] = {2, 3, 4, 5};
    static const int64_t a1[1] = {1}, a_last[1] = {-1}, a02[2] = {0, 2}, a13[2] = {1, 3}, a0[1] = {0};
    static const carve_dtype fdt[3] = {CARVE_FLOAT, CARVE_DOUBLE, CARVE_FLOAT16};
    for (int kind = 0; kind < K_COUNT; kind++) {
        double lo = kind == K_LOGSUM ? 0.1 : kind == K_PROD ? 0.5 : -2, hi = kind == K_PROD ? 1.5 : 2;
        for (int f = 0; f < 3; f++)
            for (int keep = 0; keep < 2; keep++) {
                check_reduce(kind, fdt[f], 3, d3, 1, a1, keep, 13, lo, hi, 1);
                check_reduce(kind, fdt[f], 3, d3, 1, a_last, keep, 18, lo, hi, 2);
                check_reduce(kind, fdt[f], 3, d3, 2, a02, keep, 11, lo, hi, 3);
                check_reduce(kind, fdt[f], 4, d4, 2, a13, keep, 18, lo, hi, 4);
                check_reduce(kind, fdt[f], 4, d4, 1, a0, keep, 18, lo, hi, 5);
                check_reduce(kind, fdt[f], 4, d4, 0, NULL, keep, 13, lo, hi, 6);
            }
        /* integers: exact */
        if (kind != K_LSE && kind != K_LOGSUM) {
            /* products stay within 2^53 so the double reference is exact */
            double r = kind == K_PROD ? 4 : 1000;
            check_reduce(kind, CARVE_INT32, 3, d3, 1, a1, 1, 18, -r, r, 7);
            check_reduce(kind, CARVE_INT64, 4, d4, 2, a13, 0, 18, -r, r, 8);
            check_reduce(kind, CARVE_UINT8, 3, d3, 1, a_last, 0, 18, 0, 250, 9);
        }
    }
    /* a long contiguous run, float32 accumulated in double */
    static const int64_t dl[2] = {3, 100000};
    check_reduce(K_SUM, CARVE_FLOAT, 2, dl, 1, a_last, 0, 13, 0, 1, 10);
    check_reduce(K_MEAN, CARVE_FLOAT, 2, dl, 1, a0, 0, 18, -1, 1, 11);
}

/* int64 sums wrap modulo 2^64 and int32 outputs wrap to 32 bits. */
static void test_reduce_int_exact(void)
{
    tb t;
    tb_init(&t, 13);
    int64_t d = 3;
    cv_val *x = cv_val_new(CARVE_INT64, 1, &d);
    int64_t *xv = x->data;
    xv[0] = INT64_MAX, xv[1] = 1, xv[2] = 2;
    carve_value_id in = tb_in(&t, "x", x);
    carve_node_id n = tb_node(&t, "ReduceSum", 1, &in, 1);
    carve_node_set_attr_int(t.m, n, "keepdims", 0);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "ReduceSum int64 wrap: %s", carve_errmsg(t.ctx));
    OT_CHECK(y && y->rank == 0 && *(int64_t *)y->data == INT64_MIN + 2, "ReduceSum int64 wraps to %lld",
             y ? (long long)*(int64_t *)y->data : 0LL);
    cv_val_unref(y);
    tb_free(&t);

    tb_init(&t, 18);
    int32_t big[2] = {2000000000, 2000000000};
    d = 2;
    x = cv_val_new(CARVE_INT32, 1, &d);
    memcpy(x->data, big, sizeof big);
    in = tb_in(&t, "x", x);
    tb_node(&t, "ReduceProd", 1, &in, 1);
    y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "ReduceProd int32: %s", carve_errmsg(t.ctx));
    uint64_t wrapped = (uint64_t)2000000000 * 2000000000;
    OT_CHECK(y && *(int32_t *)y->data == (int32_t)(uint32_t)wrapped, "ReduceProd int32 wraps: %d",
             y ? *(int32_t *)y->data : 0);
    cv_val_unref(y);
    tb_free(&t);
}

/* Reductions over an empty set give the identity; kept dims of size 0 give
 * empty outputs. */
static void test_reduce_empty(void)
{
    /* ReduceMean: undefined by the spec, 0 like onnxruntime */
    static const double want[K_COUNT] = {0, 0, -INFINITY, INFINITY, 1, 0, 0, -INFINITY, -INFINITY, 0};
    int64_t dims[3] = {2, 0, 4}, axes[1] = {1};
    for (int kind = 0; kind < K_COUNT; kind++) {
        tb t;
        tb_init(&t, 18);
        carve_value_id ins[2] = {tb_in(&t, "x", cv_val_new(CARVE_FLOAT, 3, dims)), tb_ints(&t, "axes", 1, axes)};
        tb_node(&t, rops[kind], 2, ins, 1);
        cv_val *y = NULL;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(s == CARVE_OK, "%s of an empty set: %s", rops[kind], carve_errmsg(t.ctx));
        if (!s) {
            OT_CHECK(y->rank == 3 && y->dims[0] == 2 && y->dims[1] == 1 && y->dims[2] == 4, "%s empty: shape",
                     rops[kind]);
            double v = cv_val_get_f64(y, 0);
            OT_CHECK(isnan(want[kind]) ? isnan(v) : v == want[kind], "%s of an empty set is %g, expected %g",
                     rops[kind], v, want[kind]);
        }
        cv_val_unref(y);
        tb_free(&t);
    }
    /* integer ReduceMax of nothing: the type's minimum */
    tb t;
    tb_init(&t, 18);
    carve_value_id ins[2] = {tb_in(&t, "x", cv_val_new(CARVE_INT8, 3, dims)), tb_ints(&t, "axes", 1, axes)};
    tb_node(&t, "ReduceMax", 2, ins, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && cv_val_get_i64(y, 0) == -128, "ReduceMax int8 empty set");
    cv_val_unref(y);
    tb_free(&t);
    /* reducing a non-empty axis of a tensor with a zero dim kept */
    int64_t a2[1] = {2};
    tb_init(&t, 18);
    ins[0] = tb_in(&t, "x", cv_val_new(CARVE_FLOAT, 3, dims));
    ins[1] = tb_ints(&t, "axes", 1, a2);
    carve_node_id n = tb_node(&t, "ReduceSum", 2, ins, 1);
    carve_node_set_attr_int(t.m, n, "keepdims", 0);
    y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && y->rank == 2 && y->dims[1] == 0 && y->nelem == 0,
             "ReduceSum keeping a zero dim");
    cv_val_unref(y);
    tb_free(&t);
}

/* noop_with_empty_axes: no reduction, each element through the kind's
 * transform (ReduceSumSquare squares, ReduceL1 takes |x|...), as the ONNX
 * reference does. Without it, empty axes reduce everything. */
static void test_reduce_noop(void)
{
    int64_t dims[2] = {2, 3};
    double xv[6] = {-1, 2, -3, 4, 0.5, 6};
    struct {
        int kind;
        double first;
    } cases[] = {{K_SUM, -1}, {K_SUMSQ, 1}, {K_L1, 1}, {K_L2, 1}, {K_MAX, -1}, {K_LSE, -1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (int empty_input = 0; empty_input < 2; empty_input++) {
            tb t;
            tb_init(&t, 18);
            carve_value_id ins[2] = {tb_in(&t, "x", from_doubles(CARVE_FLOAT, 2, dims, xv)),
                                     empty_input ? tb_ints(&t, "axes", 0, NULL) : CARVE_NONE};
            carve_node_id n = tb_node(&t, rops[cases[c].kind], empty_input ? 2 : 1, ins, 1);
            carve_node_set_attr_int(t.m, n, "noop_with_empty_axes", 1);
            cv_val *y = NULL;
            OT_CHECK(tb_run(&t, &y) == CARVE_OK, "%s noop: %s", rops[cases[c].kind], carve_errmsg(t.ctx));
            OT_CHECK(y && y->rank == 2 && y->nelem == 6 && fabs(cv_val_get_f64(y, 0) - cases[c].first) < 1e-6,
                     "%s noop: first element %g, expected %g", rops[cases[c].kind], y ? cv_val_get_f64(y, 0) : 0,
                     cases[c].first);
            cv_val_unref(y);
            tb_free(&t);
        }
    }
    /* empty axes input without noop: everything reduced */
    tb t;
    tb_init(&t, 13);
    carve_value_id ins[2] = {tb_in(&t, "x", from_doubles(CARVE_FLOAT, 2, dims, xv)), tb_ints(&t, "axes", 0, NULL)};
    tb_node(&t, "ReduceSum", 2, ins, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && y->nelem == 1 && y->rank == 2 && cv_val_get_f64(y, 0) == 8.5,
             "ReduceSum with empty axes reduces all");
    cv_val_unref(y);
    tb_free(&t);
}

static void test_reduce_nan_bool(void)
{
    int64_t dims[1] = {4};
    double xv[4] = {1, NAN, 3, 2};
    tb t;
    tb_init(&t, 13);
    carve_value_id in = tb_in(&t, "x", from_doubles(CARVE_FLOAT, 1, dims, xv));
    tb_node(&t, "ReduceMax", 1, &in, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && isnan(cv_val_get_f64(y, 0)), "ReduceMax propagates NaN");
    cv_val_unref(y);
    tb_free(&t);

    double bv[4] = {0, 1, 0, 0};
    for (int mx = 0; mx < 2; mx++) {
        tb_init(&t, 20);
        in = tb_in(&t, "x", from_doubles(CARVE_BOOL, 1, dims, bv));
        tb_node(&t, mx ? "ReduceMax" : "ReduceMin", 1, &in, 1);
        y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && y->dtype == CARVE_BOOL && cv_val_get_i64(y, 0) == mx,
                 "%s over bool", mx ? "ReduceMax" : "ReduceMin");
        cv_val_unref(y);
        tb_free(&t);
    }
}

static void test_reduce_errors(void)
{
    int64_t dims[2] = {2, 3}, bad[1] = {2}, dup[2] = {1, -1};
    tb t;
    tb_init(&t, 18);
    carve_value_id ins[2] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, dims, 1, 0, 1)), tb_ints(&t, "axes", 1, bad)};
    tb_node(&t, "ReduceMean", 2, ins, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_ERR_INVALID && errmsg_has(&t, "node 'n' (ReduceMean): axes value 2 is out of range for input rank 2"),
             "ReduceMean bad axis: %s", carve_errmsg(t.ctx));
    tb_free(&t);

    tb_init(&t, 11);
    carve_value_id in = tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, dims, 1, 0, 1));
    carve_node_id n = tb_node(&t, "ReduceL2", 1, &in, 1);
    carve_node_set_attr_ints(t.m, n, "axes", 2, dup);
    OT_CHECK(tb_run(&t, &y) == CARVE_ERR_INVALID && errmsg_has(&t, "names axis 1 twice"), "ReduceL2 repeated axis: %s",
             carve_errmsg(t.ctx));
    /* inference reports the same */
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_ERR_INVALID && errmsg_has(&t, "names axis 1 twice"),
             "inference of a repeated axis: %s", carve_errmsg(t.ctx));
    tb_free(&t);

    tb_init(&t, 13);
    in = tb_in(&t, "x", cv_val_new(CARVE_STRING, 2, dims));
    tb_node(&t, "ReduceSum", 1, &in, 1);
    OT_CHECK(tb_run(&t, &y) == CARVE_ERR_INVALID && errmsg_has(&t, "input 0 'data' has type string"),
             "ReduceSum of strings: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ inference */

static const cv_type *out_type(tb *t, int i) { return &t->m->values[carve_node_output(t->m, t->node, (size_t)i)].type; }

static void test_reduce_infer(void)
{
    carve_dim sym[3] = {{-1, "batch"}, {4, NULL}, {-1, "seq"}};
    /* axes from an initializer, keepdims=0: symbolic dims pass through */
    tb t;
    tb_init(&t, 18);
    int64_t ax[1] = {1};
    carve_value_id ins[2] = {carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym), tb_ints(&t, "axes", 1, ax)};
    carve_node_id n = tb_node(&t, "ReduceMean", 2, ins, 1);
    carve_node_set_attr_int(t.m, n, "keepdims", 0);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "infer ReduceMean: %s", carve_errmsg(t.ctx));
    const cv_type *y = out_type(&t, 0);
    OT_CHECK(y->rank == 2 && y->dtype == CARVE_FLOAT && y->dims[0].param && !strcmp(y->dims[0].param, "batch") &&
                 y->dims[1].param && !strcmp(y->dims[1].param, "seq"),
             "ReduceMean keeps symbolic dims (rank %d)", y->rank);
    tb_free(&t);

    /* keepdims=1 with axes only known at run time: rank kept, dims unknown */
    tb_init(&t, 18);
    carve_dim ad[1] = {{1, NULL}};
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym);
    ins[1] = carve_graph_add_input(t.m, 0, "axes", CARVE_INT64, 1, ad);
    tb_node(&t, "ReduceMax", 2, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && out_type(&t, 0)->rank == 3, "ReduceMax unknown axes keepdims");
    tb_free(&t);

    /* ...and with keepdims=0, the rank from the axes length */
    tb_init(&t, 18);
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym);
    ins[1] = carve_graph_add_input(t.m, 0, "axes", CARVE_INT64, 1, ad);
    n = tb_node(&t, "ReduceMax", 2, ins, 1);
    carve_node_set_attr_int(t.m, n, "keepdims", 0);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && out_type(&t, 0)->rank == 2, "ReduceMax unknown axes rank");
    tb_free(&t);

    /* attribute axes (opset 13 ReduceMax), all reduced by default */
    tb_init(&t, 13);
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT16, 3, sym);
    tb_node(&t, "ReduceL1", 1, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && out_type(&t, 0)->rank == 3 && out_type(&t, 0)->dims[2].value == 1 &&
                 out_type(&t, 0)->dtype == CARVE_FLOAT16,
             "ReduceL1 default axes");
    tb_free(&t);

    /* ArgMax: int64, axis dim dropped */
    tb_init(&t, 13);
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym);
    n = tb_node(&t, "ArgMax", 1, ins, 1);
    carve_node_set_attr_int(t.m, n, "axis", -2);
    carve_node_set_attr_int(t.m, n, "keepdims", 0);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && out_type(&t, 0)->dtype == CARVE_INT64 &&
                 out_type(&t, 0)->rank == 2 && !strcmp(out_type(&t, 0)->dims[1].param, "seq"),
             "ArgMax inference");
    tb_free(&t);

    /* TopK: axis dim becomes k; indices int64 */
    tb_init(&t, 11);
    int64_t kk[1] = {3};
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym);
    ins[1] = tb_ints(&t, "k", 1, kk);
    n = tb_node(&t, "TopK", 2, ins, 2);
    carve_node_set_attr_int(t.m, n, "axis", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && out_type(&t, 0)->dims[1].value == 3 &&
                 out_type(&t, 1)->dtype == CARVE_INT64 && !strcmp(out_type(&t, 1)->dims[0].param, "batch"),
             "TopK inference: %s", carve_errmsg(t.ctx));
    tb_free(&t);

    /* TopK with k above the axis size */
    tb_init(&t, 11);
    kk[0] = 5;
    ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym);
    ins[1] = tb_ints(&t, "k", 1, kk);
    n = tb_node(&t, "TopK", 2, ins, 2);
    carve_node_set_attr_int(t.m, n, "axis", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_ERR_INVALID && errmsg_has(&t, "node 'n' (TopK): k is 5, larger than axis 1 of size 4"),
             "TopK inference error: %s", carve_errmsg(t.ctx));
    tb_free(&t);

    /* losses: none keeps the target's shape, mean is a scalar */
    for (int none = 0; none < 2; none++) {
        tb_init(&t, 13);
        carve_dim td[2] = {{-1, "batch"}, {-1, "seq"}};
        ins[0] = carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, sym);
        ins[1] = carve_graph_add_input(t.m, 0, "t", CARVE_INT64, 2, td);
        n = tb_node(&t, "SoftmaxCrossEntropyLoss", 2, ins, 2);
        if (none)
            carve_node_set_attr_string(t.m, n, "reduction", "none");
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && out_type(&t, 0)->rank == (none ? 2 : 0) &&
                     out_type(&t, 1)->rank == 3 && !strcmp(out_type(&t, 1)->dims[2].param, "seq"),
                 "SoftmaxCrossEntropyLoss inference (none=%d)", none);
        tb_free(&t);
    }
}

/* ================================================================ ArgMax / ArgMin */

static void test_argreduce(void)
{
    int64_t dims[2] = {2, 5};
    double xv[10] = {3, 1, 3, 0, 2, 1, NAN, 5, NAN, 5};
    struct {
        const char *op;
        int last;
        int64_t want[2];
    } cases[] = {{"ArgMax", 0, {0, 1}}, {"ArgMax", 1, {2, 3}}, {"ArgMin", 0, {3, 1}}, {"ArgMin", 1, {3, 3}}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        carve_dtype dts[2] = {CARVE_FLOAT, CARVE_DOUBLE};
        for (int d = 0; d < 2; d++) {
            tb t;
            tb_init(&t, 13);
            carve_value_id in = tb_in(&t, "x", from_doubles(dts[d], 2, dims, xv));
            carve_node_id n = tb_node(&t, cases[c].op, 1, &in, 1);
            carve_node_set_attr_int(t.m, n, "axis", 1);
            carve_node_set_attr_int(t.m, n, "select_last_index", cases[c].last);
            cv_val *y = NULL;
            OT_CHECK(tb_run(&t, &y) == CARVE_OK, "%s: %s", cases[c].op, carve_errmsg(t.ctx));
            OT_CHECK(y && y->rank == 2 && y->dims[1] == 1 && ((int64_t *)y->data)[0] == cases[c].want[0] &&
                         ((int64_t *)y->data)[1] == cases[c].want[1],
                     "%s last=%d %s: got %lld %lld", cases[c].op, cases[c].last, carve_dtype_name(dts[d]),
                     y ? (long long)((int64_t *)y->data)[0] : -1LL, y ? (long long)((int64_t *)y->data)[1] : -1LL);
            cv_val_unref(y);
            tb_free(&t);
        }
    }
    /* uint64 above INT64_MAX and int8, along axis 0 with keepdims=0 */
    tb t;
    tb_init(&t, 13);
    int64_t d2[2] = {3, 2};
    cv_val *x = cv_val_new(CARVE_UINT64, 2, d2);
    uint64_t uv[6] = {1, UINT64_MAX, UINT64_MAX - 1, 0, 5, 7};
    memcpy(x->data, uv, sizeof uv);
    carve_value_id in = tb_in(&t, "x", x);
    carve_node_id n = tb_node(&t, "ArgMax", 1, &in, 1);
    carve_node_set_attr_int(t.m, n, "keepdims", 0);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && y->rank == 1 && ((int64_t *)y->data)[0] == 1 &&
                 ((int64_t *)y->data)[1] == 0,
             "ArgMax uint64");
    cv_val_unref(y);
    tb_free(&t);

    tb_init(&t, 13);
    in = tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, d2, 1, 0, 1));
    n = tb_node(&t, "ArgMin", 1, &in, 1);
    carve_node_set_attr_int(t.m, n, "axis", 2);
    OT_CHECK(tb_run(&t, &y) == CARVE_ERR_INVALID && errmsg_has(&t, "attribute 'axis' is 2, out of range for input rank 2"),
             "ArgMin bad axis: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ softmax family */

static void ref_softmax(int kind, const double *x, double *y, size_t outer, size_t n, size_t inner)
{
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            double mx = -INFINITY, s = 0;
            size_t at = 0;
            for (size_t i = 0; i < n; i++) {
                double v = x[(o * n + i) * inner + j];
                if (v > mx) {
                    mx = v;
                    at = i;
                }
            }
            for (size_t i = 0; i < n; i++)
                s += exp(x[(o * n + i) * inner + j] - mx);
            for (size_t i = 0; i < n; i++) {
                size_t q = (o * n + i) * inner + j;
                y[q] = kind == 0 ? exp(x[q] - mx) / s : kind == 1 ? x[q] - mx - log(s) : (double)(i == at);
            }
        }
}

static void check_softmax(const char *op, int kind, carve_dtype dt, int64_t opset, int rank, const int64_t *dims,
                          int64_t axis, bool set_axis)
{
    tb t;
    tb_init(&t, opset);
    cv_val *x = ot_random(dt, rank, dims, (uint32_t)(rank * 7 + axis + 3), -4, 4);
    carve_value_id in = tb_in(&t, "x", x);
    carve_node_id n = tb_node(&t, op, 1, &in, 1);
    if (set_axis)
        carve_node_set_attr_int(t.m, n, "axis", axis);
    cv_val *y = NULL;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s == CARVE_OK, "%s opset %lld: %s", op, (long long)opset, carve_errmsg(t.ctx));
    if (!s) {
        bool old = opset < 13;
        int64_t ax = set_axis ? axis : old ? 1 : -1;
        int a = (int)(ax < 0 ? ax + rank : ax);
        size_t outer = 1, n_ = 1, inner = 1;
        for (int i = 0; i < rank; i++) {
            if (i < a)
                outer *= (size_t)dims[i];
            else if (i == a || old)
                n_ *= (size_t)dims[i];
            else
                inner *= (size_t)dims[i];
        }
        double *xv = malloc(x->nelem * sizeof *xv), *want = malloc(x->nelem * sizeof *want);
        for (size_t i = 0; i < x->nelem; i++)
            xv[i] = cv_val_get_f64(x, i);
        ref_softmax(kind, xv, want, outer, n_, inner);
        double tol = dt == CARVE_FLOAT16 ? 1e-2 : 1e-5;
        for (size_t i = 0; i < x->nelem; i++)
            if (!(fabs(cv_val_get_f64(y, i) - want[i]) <= tol * (1 + fabs(want[i])))) {
                OT_CHECK(false, "%s %s opset %lld axis %lld: element %zu is %g, expected %g", op, carve_dtype_name(dt),
                         (long long)opset, (long long)ax, i, cv_val_get_f64(y, i), want[i]);
                break;
            }
        free(xv);
        free(want);
    }
    cv_val_unref(y);
    tb_free(&t);
}

static void test_softmax(void)
{
    static const int64_t d3[3] = {3, 4, 5}, d2[2] = {2, 130};
    static const char *const ops[3] = {"Softmax", "LogSoftmax", "Hardmax"};
    for (int k = 0; k < 3; k++) {
        for (int64_t ax = -3; ax < 3; ax++) {
            check_softmax(ops[k], k, CARVE_FLOAT, 13, 3, d3, ax, true);
            check_softmax(ops[k], k, CARVE_FLOAT, 11, 3, d3, ax, true);
            check_softmax(ops[k], k, CARVE_DOUBLE, 13, 3, d3, ax, true);
        }
        check_softmax(ops[k], k, CARVE_FLOAT, 13, 3, d3, 0, false); /* default -1 */
        check_softmax(ops[k], k, CARVE_FLOAT, 1, 3, d3, 0, false);  /* default 1, 2-D coercion */
        check_softmax(ops[k], k, CARVE_FLOAT16, 13, 2, d2, 0, true);
        check_softmax(ops[k], k, CARVE_FLOAT16, 13, 2, d2, 1, true);
    }
}

/* Large inputs: the max shift keeps exp finite. */
static void test_softmax_stable(void)
{
    int64_t dims[1] = {3};
    double xv[3] = {1000, 1001, 1002};
    tb t;
    tb_init(&t, 13);
    carve_value_id in = tb_in(&t, "x", from_doubles(CARVE_FLOAT, 1, dims, xv));
    tb_node(&t, "LogSoftmax", 1, &in, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && fabs(cv_val_get_f64(y, 2) + 0.40760596) < 1e-5,
             "LogSoftmax of large numbers: %g", y ? cv_val_get_f64(y, 2) : 0);
    cv_val_unref(y);
    tb_free(&t);
}

/* Rows with -inf (attention masks), +inf, NaN, and all -inf, in both
 * layouts, against the formula (numpy's results: exp(-inf) = 0, NaN rows
 * NaN). */
static void test_softmax_special(void)
{
    static const double vals[5][4] = {{1, -INFINITY, 2, -INFINITY},
                                      {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                                      {1, INFINITY, 0, 2},
                                      {1, NAN, 0, 2},
                                      {-1e30, 1e30, 3, -INFINITY}};
    for (int kind = 0; kind < 2; kind++)
        for (int transposed = 0; transposed < 2; transposed++) {
            /* 5 rows of 4, softmax along the 4 (axis 1), or the same data
             * stored as [4, 5] with axis 0 */
            int64_t dims[2] = {transposed ? 4 : 5, transposed ? 5 : 4};
            double xv[20];
            for (int r = 0; r < 5; r++)
                for (int c = 0; c < 4; c++)
                    xv[transposed ? c * 5 + r : r * 4 + c] = vals[r][c];
            tb t;
            tb_init(&t, 13);
            carve_value_id in = tb_in(&t, "x", from_doubles(CARVE_FLOAT, 2, dims, xv));
            carve_node_id n = tb_node(&t, kind ? "LogSoftmax" : "Softmax", 1, &in, 1);
            carve_node_set_attr_int(t.m, n, "axis", transposed ? 0 : 1);
            cv_val *y = NULL;
            carve_status s = tb_run(&t, &y);
            OT_CHECK(s == CARVE_OK, "softmax special values: %s", carve_errmsg(t.ctx));
            for (int r = 0; !s && r < 5; r++) {
                double mx = -INFINITY, sum = 0;
                bool nan = false;
                for (int c = 0; c < 4; c++) {
                    nan |= isnan(vals[r][c]);
                    mx = vals[r][c] > mx ? vals[r][c] : mx;
                }
                for (int c = 0; c < 4; c++)
                    sum += exp(vals[r][c] - mx);
                for (int c = 0; c < 4; c++) {
                    double w = nan ? NAN : kind ? vals[r][c] - mx - log(sum) : exp(vals[r][c] - mx) / sum;
                    double g = cv_val_get_f64(y, (size_t)(transposed ? c * 5 + r : r * 4 + c));
                    bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= 1e-6 * (1 + fabs(w));
                    OT_CHECK(ok && !(w == 0 && g != 0), "%s row %d col %d (%s): %g, expected %g",
                             kind ? "LogSoftmax" : "Softmax", r, c, transposed ? "axis 0" : "axis 1", g, w);
                }
            }
            cv_val_unref(y);
            tb_free(&t);
        }
}

static void check_softmax_decomp(const char *op, int64_t opset, carve_dtype dt, int rank, const int64_t *dims,
                                 int64_t axis, bool set_axis)
{
    tb t;
    tb_init(&t, opset);
    carve_value_id in = tb_in(&t, "x", ot_random(dt, rank, dims, (uint32_t)(opset + axis), -3, 3));
    carve_node_id n = tb_node(&t, op, 1, &in, 1);
    if (set_axis)
        carve_node_set_attr_int(t.m, n, "axis", axis);
    double tol = dt == CARVE_FLOAT16 ? 1e-2 : 1e-5;
    ot_check_decomposition(t.m, n, t.run_in, tol, tol);
    tb_free(&t);
}

static void test_softmax_decomp(void)
{
    static const int64_t d2[2] = {4, 7}, d3[3] = {2, 3, 5}, d4[4] = {2, 3, 4, 5};
    static const char *const ops[2] = {"Softmax", "LogSoftmax"};
    for (int k = 0; k < 2; k++) {
        for (int64_t opset = 13; opset <= 18; opset += 5) {
            check_softmax_decomp(ops[k], opset, CARVE_FLOAT, 2, d2, 0, false);
            check_softmax_decomp(ops[k], opset, CARVE_FLOAT, 2, d2, 0, true);
            check_softmax_decomp(ops[k], opset, CARVE_FLOAT, 3, d3, 1, true);
            check_softmax_decomp(ops[k], opset, CARVE_FLOAT, 4, d4, -2, true);
            check_softmax_decomp(ops[k], opset, CARVE_FLOAT16, 3, d3, -1, true);
            check_softmax_decomp(ops[k], opset, CARVE_FLOAT16, 4, d4, 2, true);
        }
    }
    /* before 13 the op is core: no decomposition */
    tb t;
    tb_init(&t, 11);
    carve_value_id in = tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, d2, 1, 0, 1));
    carve_node_id n = tb_node(&t, "Softmax", 1, &in, 1);
    OT_CHECK(cv_decompose_node(t.m, n) == CARVE_ERR_UNSUPPORTED, "Softmax-11 has no decomposition");
    tb_free(&t);
}

/* ================================================================ CumSum */

static void test_cumsum(void)
{
    int64_t dims[3] = {2, 4, 3};
    carve_dtype dts[4] = {CARVE_FLOAT, CARVE_DOUBLE, CARVE_INT32, CARVE_FLOAT16};
    for (int d = 0; d < 4; d++)
        for (int axis = -1; axis < 3; axis++)
            for (int ex = 0; ex < 2; ex++)
                for (int rv = 0; rv < 2; rv++) {
                    tb t;
                    tb_init(&t, 14);
                    cv_val *x = ot_random(dts[d], 3, dims, (uint32_t)(axis + 5), -10, 10);
                    int32_t av = axis;
                    carve_value_id ins[2] = {tb_in(&t, "x", x),
                                             carve_graph_add_initializer(t.m, 0, "axis", CARVE_INT32, 0, NULL, &av, 4)};
                    carve_node_id n = tb_node(&t, "CumSum", 2, ins, 1);
                    carve_node_set_attr_int(t.m, n, "exclusive", ex);
                    carve_node_set_attr_int(t.m, n, "reverse", rv);
                    cv_val *y = NULL;
                    carve_status s = tb_run(&t, &y);
                    OT_CHECK(s == CARVE_OK, "CumSum: %s", carve_errmsg(t.ctx));
                    int a = axis < 0 ? axis + 3 : axis;
                    for (size_t i = 0; !s && i < x->nelem; i++) {
                        size_t st = 1;
                        for (int q = 2; q > a; q--)
                            st *= (size_t)dims[q];
                        size_t pos = i / st % (size_t)dims[a];
                        double want = 0;
                        for (size_t p = 0; p < (size_t)dims[a]; p++) {
                            bool in_range = rv ? (ex ? p > pos : p >= pos) : (ex ? p < pos : p <= pos);
                            if (in_range)
                                want += cv_val_get_f64(x, i + (p - pos) * st);
                        }
                        double tol = dts[d] == CARVE_FLOAT16 ? 0.05 : 1e-4;
                        if (!(fabs(cv_val_get_f64(y, i) - want) <= tol * (1 + fabs(want)))) {
                            OT_CHECK(false, "CumSum %s axis %d excl %d rev %d: element %zu is %g, expected %g",
                                     carve_dtype_name(dts[d]), axis, ex, rv, i, cv_val_get_f64(y, i), want);
                            break;
                        }
                    }
                    cv_val_unref(y);
                    tb_free(&t);
                }
    /* int64 wraps, no signed overflow */
    tb t;
    tb_init(&t, 14);
    int64_t d1 = 2, xv[2] = {INT64_MAX, 1}, av = 0;
    cv_val *x = cv_val_new(CARVE_INT64, 1, &d1);
    memcpy(x->data, xv, sizeof xv);
    carve_value_id ins[2] = {tb_in(&t, "x", x), carve_graph_add_initializer(t.m, 0, "axis", CARVE_INT64, 0, NULL, &av, 8)};
    tb_node(&t, "CumSum", 2, ins, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && ((int64_t *)y->data)[1] == INT64_MIN, "CumSum int64 wraps");
    cv_val_unref(y);
    tb_free(&t);

    tb_init(&t, 14);
    av = 3;
    ins[0] = tb_in(&t, "x", ot_random(CARVE_FLOAT, 1, &d1, 1, 0, 1));
    ins[1] = carve_graph_add_initializer(t.m, 0, "axis", CARVE_INT64, 0, NULL, &av, 8);
    tb_node(&t, "CumSum", 2, ins, 1);
    OT_CHECK(tb_run(&t, &y) == CARVE_ERR_INVALID && errmsg_has(&t, "input 1 'axis' is 3, out of range for input rank 1"),
             "CumSum bad axis: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ TopK */

static void test_topk(void)
{
    int64_t dims[2] = {2, 6};
    double xv[12] = {3, 1, 3, NAN, 2, 3, -0.0, 0.0, 5, 5, -1, 2};
    struct {
        int largest;
        int64_t k;
        int64_t want[2][4];
    } cases[] = {
        {1, 4, {{3, 0, 2, 5}, {2, 3, 5, 0}}}, /* NaN first, ties by index, -0 == +0 */
        {0, 4, {{1, 4, 0, 2}, {4, 0, 1, 5}}},
        {1, 1, {{3}, {2}}},
    };
    carve_dtype dts[3] = {CARVE_FLOAT, CARVE_DOUBLE, CARVE_FLOAT16};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int d = 0; d < 3; d++) {
            tb t;
            tb_init(&t, 11);
            carve_value_id ins[2] = {tb_in(&t, "x", from_doubles(dts[d], 2, dims, xv)), tb_ints(&t, "k", 1, &cases[c].k)};
            carve_node_id n = tb_node(&t, "TopK", 2, ins, 2);
            carve_node_set_attr_int(t.m, n, "largest", cases[c].largest);
            cv_val *y[2] = {0};
            carve_status s = tb_run(&t, y);
            OT_CHECK(s == CARVE_OK, "TopK: %s", carve_errmsg(t.ctx));
            for (int r = 0; !s && r < 2; r++)
                for (int64_t q = 0; q < cases[c].k; q++) {
                    int64_t got = ((int64_t *)y[1]->data)[r * cases[c].k + q];
                    double gv = cv_val_get_f64(y[0], (size_t)(r * cases[c].k + q)), wv = xv[r * 6 + cases[c].want[r][q]];
                    OT_CHECK(got == cases[c].want[r][q] && (gv == wv || (isnan(gv) && isnan(wv))),
                             "TopK largest=%d k=%lld %s row %d pos %lld: index %lld, expected %lld", cases[c].largest,
                             (long long)cases[c].k, carve_dtype_name(dts[d]), r, (long long)q, (long long)got,
                             (long long)cases[c].want[r][q]);
                }
            cv_val_unref(y[0]);
            cv_val_unref(y[1]);
            tb_free(&t);
        }
    /* a long axis (heap selection), integers, axis 0, opset 1 attribute k */
    int64_t dl[2] = {1000, 3};
    carve_dtype idt[3] = {CARVE_INT32, CARVE_UINT8, CARVE_INT64};
    for (int d = 0; d < 3; d++)
        for (int64_t opset = 1; opset <= 11; opset += 10) {
            tb t;
            tb_init(&t, opset);
            cv_val *x = ot_random(idt[d], 2, dl, (uint32_t)d, 0, 200);
            int64_t k = 7;
            carve_value_id ins[2] = {tb_in(&t, "x", x), opset >= 10 ? tb_ints(&t, "k", 1, &k) : CARVE_NONE};
            carve_node_id n = tb_node(&t, "TopK", opset >= 10 ? 2 : 1, ins, 2);
            carve_node_set_attr_int(t.m, n, "axis", 0);
            if (opset < 10)
                carve_node_set_attr_int(t.m, n, "k", k);
            cv_val *y[2] = {0};
            carve_status s = tb_run(&t, y);
            OT_CHECK(s == CARVE_OK, "TopK %s opset %lld: %s", carve_dtype_name(idt[d]), (long long)opset,
                     carve_errmsg(t.ctx));
            for (int j = 0; !s && j < 3; j++) {
                /* the reference: repeated scans for the next best */
                bool *used = calloc(1000, 1);
                for (int q = 0; q < k; q++) {
                    int best = -1;
                    for (int i = 0; i < 1000; i++)
                        if (!used[i] && (best < 0 || cv_val_get_i64(x, (size_t)(i * 3 + j)) >
                                                         cv_val_get_i64(x, (size_t)(best * 3 + j))))
                            best = i;
                    used[best] = true;
                    int64_t got = ((int64_t *)y[1]->data)[q * 3 + j];
                    if (got != best) {
                        OT_CHECK(false, "TopK %s col %d pos %d: index %lld, expected %d", carve_dtype_name(idt[d]), j, q,
                                 (long long)got, best);
                        break;
                    }
                    OT_CHECK(cv_val_get_i64(y[0], (size_t)(q * 3 + j)) == cv_val_get_i64(x, (size_t)(best * 3 + j)),
                             "TopK value");
                }
                free(used);
            }
            cv_val_unref(y[0]);
            cv_val_unref(y[1]);
            tb_free(&t);
        }
    /* errors */
    tb t;
    tb_init(&t, 11);
    int64_t k = 7;
    carve_value_id ins[2] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 2, dims, 1, 0, 1)), tb_ints(&t, "k", 1, &k)};
    tb_node(&t, "TopK", 2, ins, 2);
    cv_val *y[2] = {0};
    OT_CHECK(tb_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "node 'n' (TopK): k is 7, outside [0, 6]"),
             "TopK k too large: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ LpNormalization */

static void test_lpnorm(void)
{
    int64_t dims[3] = {2, 3, 4};
    for (int p = 1; p <= 2; p++)
        for (int axis = -3; axis < 3; axis++) {
            tb t;
            tb_init(&t, 1);
            cv_val *x = ot_random(CARVE_FLOAT, 3, dims, (uint32_t)(p + axis + 9), -2, 2);
            /* one all-zero slice: zeros out (onnxruntime does the same) */
            for (size_t i = 0; i < 4; i++)
                ((float *)x->data)[i] = 0;
            carve_value_id in = tb_in(&t, "x", x);
            carve_node_id n = tb_node(&t, "LpNormalization", 1, &in, 1);
            carve_node_set_attr_int(t.m, n, "axis", axis);
            carve_node_set_attr_int(t.m, n, "p", p);
            cv_val *y = NULL;
            carve_status s = tb_run(&t, &y);
            OT_CHECK(s == CARVE_OK, "LpNormalization: %s", carve_errmsg(t.ctx));
            int a = axis < 0 ? axis + 3 : axis;
            size_t st = 1;
            for (int q = 2; q > a; q--)
                st *= (size_t)dims[q];
            for (size_t i = 0; !s && i < x->nelem; i++) {
                size_t pos = i / st % (size_t)dims[a];
                double nrm = 0;
                for (size_t q = 0; q < (size_t)dims[a]; q++) {
                    double v = cv_val_get_f64(x, i + (q - pos) * st);
                    nrm += p == 1 ? fabs(v) : v * v;
                }
                nrm = p == 1 ? nrm : sqrt(nrm);
                double want = nrm == 0 ? 0 : cv_val_get_f64(x, i) / nrm;
                if (!(fabs(cv_val_get_f64(y, i) - want) <= 1e-6)) {
                    OT_CHECK(false, "LpNormalization p %d axis %d: element %zu is %g, expected %g", p, axis, i,
                             cv_val_get_f64(y, i), want);
                    break;
                }
            }
            cv_val_unref(y);
            tb_free(&t);
        }
}

/* ================================================================ losses */

static void test_losses(void)
{
    /* hand-computed: N=2, C=3 */
    int64_t xd[2] = {2, 3}, td = 2;
    double xv[6] = {1, 2, 3, 0, 1, 2}, wv[3] = {0.2, 0.3, 0.1};
    int64_t tv[2] = {2, 0};
    struct {
        const char *red;
        int weight;
        double want;
    } cases[] = {{"sum", 0, -3.0}, {"mean", 0, -1.5}, {"sum", 1, -0.3}, {"mean", 1, -0.3 / 0.3}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tb t;
        tb_init(&t, 13);
        cv_val *tg = cv_val_new(CARVE_INT64, 1, &td);
        memcpy(tg->data, tv, sizeof tv);
        int64_t wd = 3;
        carve_value_id ins[3] = {tb_in(&t, "x", from_doubles(CARVE_FLOAT, 2, xd, xv)), tb_in(&t, "t", tg),
                                 cases[c].weight ? tb_in(&t, "w", from_doubles(CARVE_FLOAT, 1, &wd, wv)) : CARVE_NONE};
        carve_node_id n = tb_node(&t, "NegativeLogLikelihoodLoss", cases[c].weight ? 3 : 2, ins, 1);
        carve_node_set_attr_string(t.m, n, "reduction", cases[c].red);
        cv_val *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK && y && y->rank == 0 && fabs(cv_val_get_f64(y, 0) - cases[c].want) < 1e-6,
                 "NLL %s weight %d: %g, expected %g (%s)", cases[c].red, cases[c].weight, y ? cv_val_get_f64(y, 0) : 0,
                 cases[c].want, carve_errmsg(t.ctx));
        cv_val_unref(y);
        tb_free(&t);
    }
    /* a target out of range (not ignore_index) */
    tb t;
    tb_init(&t, 13);
    cv_val *tg = cv_val_new(CARVE_INT64, 1, &td);
    ((int64_t *)tg->data)[0] = 3;
    carve_value_id ins[2] = {tb_in(&t, "x", from_doubles(CARVE_FLOAT, 2, xd, xv)), tb_in(&t, "t", tg)};
    tb_node(&t, "NegativeLogLikelihoodLoss", 2, ins, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_ERR_INVALID && errmsg_has(&t, "input 1 'target' value 3 at 0 is not a class in [0, 3)"),
             "NLL target out of range: %s", carve_errmsg(t.ctx));
    tb_free(&t);

    /* SoftmaxCrossEntropyLoss float16, both outputs, against the formula */
    tb_init(&t, 13);
    int64_t sd[3] = {3, 4, 2}, ld[2] = {3, 2};
    cv_val *x = ot_random(CARVE_FLOAT16, 3, sd, 5, -2, 2);
    tg = cv_val_new(CARVE_INT32, 2, ld);
    int32_t lv[6] = {0, 3, 1, 2, 2, 1};
    memcpy(tg->data, lv, sizeof lv);
    ins[0] = tb_in(&t, "x", x);
    ins[1] = tb_in(&t, "t", tg);
    carve_node_id n = tb_node(&t, "SoftmaxCrossEntropyLoss", 2, ins, 2);
    carve_node_set_attr_int(t.m, n, "ignore_index", 2);
    cv_val *ys[2] = {0};
    carve_status s = tb_run(&t, ys);
    OT_CHECK(s == CARVE_OK, "SoftmaxCrossEntropyLoss f16: %s", carve_errmsg(t.ctx));
    if (!s) {
        double sum = 0, cnt = 0;
        for (int q = 0; q < 6; q++) {
            int nn = q / 2, dd = q % 2;
            double mx = -INFINITY, se = 0;
            for (int c = 0; c < 4; c++)
                mx = fmax(mx, cv_val_get_f64(x, (size_t)((nn * 4 + c) * 2 + dd)));
            for (int c = 0; c < 4; c++)
                se += exp(cv_val_get_f64(x, (size_t)((nn * 4 + c) * 2 + dd)) - mx);
            double lp = cv_val_get_f64(x, (size_t)((nn * 4 + lv[q]) * 2 + dd)) - mx - log(se);
            OT_CHECK(fabs(cv_val_get_f64(ys[1], (size_t)((nn * 4 + lv[q]) * 2 + dd)) - lp) < 1e-2, "SCE log_prob");
            if (lv[q] != 2) {
                sum -= lp;
                cnt++;
            }
        }
        OT_CHECK(ys[0]->dtype == CARVE_FLOAT16 && fabs(cv_val_get_f64(ys[0], 0) - sum / cnt) < 1e-2,
                 "SCE mean with ignore_index: %g, expected %g", cv_val_get_f64(ys[0], 0), sum / cnt);
    }
    cv_val_unref(ys[0]);
    cv_val_unref(ys[1]);
    tb_free(&t);
}

int main(void)
{
    test_reduce_kinds();
    test_reduce_int_exact();
    test_reduce_empty();
    test_reduce_noop();
    test_reduce_nan_bool();
    test_reduce_errors();
    test_reduce_infer();
    test_argreduce();
    test_softmax();
    test_softmax_stable();
    test_softmax_special();
    test_softmax_decomp();
    test_cumsum();
    test_topk();
    test_lpnorm();
    test_losses();
    return ot_finish();
}

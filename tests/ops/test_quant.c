/* test_quant.c: quantization against formulas written out here (Debian's
 * test data stops at opset 17): QuantizeLinear / DequantizeLinear per
 * tensor, per axis and blocked (opset 21, block_size 2 and 4 on axes 0 and
 * 1), every integer type including packed int4/uint4 with odd element
 * counts, float8 with zero points and `saturate`, rounding half to even;
 * DynamicQuantizeLinear; MatMulInteger, ConvInteger, QLinearMatMul and
 * QLinearConv with per-row / per-column / per-channel zero points and
 * scales; inference of the output types; error texts. */
#include "opstest.h"
#include "tb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ model building */

static cv_val *vals(carve_dtype dt, int rank, const int64_t *dims, const double *v)
{
    cv_val *x = cv_val_new(dt, rank, dims);
    for (size_t i = 0; i < x->nelem; i++) {
        if (cv_dtype_is_float(dt))
            cv_val_set_f64(x, i, v[i]);
        else
            cv_val_set_i64(x, i, (int64_t)v[i]);
    }
    return x;
}

/* Exact equality, element by element (decoded), with a message. */
static void check_equal(const char *what, const cv_val *got, const cv_val *want)
{
    bool ok = got && got->dtype == want->dtype && got->nelem == want->nelem && got->rank == want->rank;
    size_t bad = 0;
    for (size_t i = 0; ok && i < want->nelem; i++) {
        double a = cv_val_get_f64(got, i), b = cv_val_get_f64(want, i);
        ok = a == b || (isnan(a) && isnan(b));
        bad = i;
    }
    OT_CHECK(ok, "%s: %s (element %zu: %g, expected %g)", what,
             !got ? "no output" : got->dtype != want->dtype ? "wrong dtype" : got->nelem != want->nelem ? "wrong size" : "differs",
             bad, got && got->nelem > bad ? cv_val_get_f64(got, bad) : 0, want->nelem > bad ? cv_val_get_f64(want, bad) : 0);
}

/* ================================================================ integer formulas */

static void qrange(carve_dtype t, double *lo, double *hi)
{
    switch (t) {
    case CARVE_INT8: *lo = -128, *hi = 127; break;
    case CARVE_UINT8: *lo = 0, *hi = 255; break;
    case CARVE_INT16: *lo = -32768, *hi = 32767; break;
    case CARVE_UINT16: *lo = 0, *hi = 65535; break;
    case CARVE_INT4: *lo = -8, *hi = 7; break;
    default: *lo = 0, *hi = 15; break; /* uint4 */
    }
}

/* Round half to even, by hand (not rint): floor, then look at the half. */
static double round_half_even(double v)
{
    double f = floor(v), d = v - f;
    if (d > 0.5)
        return f + 1;
    if (d < 0.5)
        return f;
    return fmod(f, 2) == 0 ? f : f + 1;
}

/* saturate(round(x / s) + zp), x / s in float32 as the spec's reference. */
static double quant(float x, float s, double zp, carve_dtype t)
{
    double lo, hi, v = round_half_even((double)(x / s)) + zp;
    qrange(t, &lo, &hi);
    return v < lo ? lo : v > hi ? hi : v;
}

/* ================================================================ QuantizeLinear */

static void test_quantize_rounding(void)
{
    double xv[10] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300, -300, 126.5, 127.5};
    /* uint8 with zero point 10, int8 without */
    double want_u8[10] = {10, 12, 12, 10, 8, 8, 255, 0, 136, 138};
    double want_i8[10] = {0, 2, 2, 0, -2, -2, 127, -128, 126, 127};
    int64_t d[1] = {10};
    for (int k = 0; k < 2; k++) {
        tb t;
        tb_init(&t, 13);
        carve_dtype dt = k ? CARVE_INT8 : CARVE_UINT8;
        double zpv = k ? 0 : 10, one = 1;
        carve_value_id ins[3] = {tb_in(&t, "x", vals(CARVE_FLOAT, 1, d, xv)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &one)),
                                 tb_in(&t, "z", vals(dt, 0, NULL, &zpv))};
        tb_node(&t, "QuantizeLinear", 3, ins, 1);
        cv_val *y = NULL, *want = vals(dt, 1, d, k ? want_i8 : want_u8);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "quantize rounding: %s", carve_errmsg(t.ctx));
        check_equal(k ? "quantize int8 half to even, saturation" : "quantize uint8 zp 10 half to even, saturation", y, want);
        cv_val_unref(y);
        cv_val_unref(want);
        tb_free(&t);
    }
    /* no zero point: uint8 */
    tb t;
    tb_init(&t, 13);
    double two = 2;
    carve_value_id ins[2] = {tb_in(&t, "x", vals(CARVE_FLOAT, 1, d, xv)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &two))};
    tb_node(&t, "QuantizeLinear", 2, ins, 1);
    double w[10];
    for (int i = 0; i < 10; i++)
        w[i] = quant((float)xv[i], 2, 0, CARVE_UINT8);
    cv_val *y = NULL, *want = vals(CARVE_UINT8, 1, d, w);
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "quantize no zp: %s", carve_errmsg(t.ctx));
    check_equal("quantize without zero point gives uint8", y, want);
    cv_val_unref(y);
    cv_val_unref(want);
    tb_free(&t);
}

/* Per axis (opset 13) and blocked (opset 21): x [4, 6]. */
static void check_layout(const char *what, int64_t opset, int axis, int block, carve_dtype qt, bool dequant)
{
    int64_t xd[2] = {4, 6}, sd[2];
    int srank;
    if (block) {
        srank = 2;
        sd[0] = axis == 0 ? (4 + block - 1) / block : 4;
        sd[1] = axis == 1 ? (6 + block - 1) / block : 6;
    } else {
        srank = 1;
        sd[0] = xd[axis];
    }
    size_t ns = (size_t)(srank == 2 ? sd[0] * sd[1] : sd[0]);
    double x[24], s[24], z[24], want[24];
    double lo, hi;
    qrange(qt, &lo, &hi);
    for (int i = 0; i < 24; i++)
        x[i] = dequant ? lo + (i * 7) % (int)(hi - lo + 1) : ((i * 37) % 29 - 14) * 0.37;
    for (size_t i = 0; i < ns; i++) {
        s[i] = 0.05 + 0.1 * (double)i;
        z[i] = lo + (double)((i * 3) % (size_t)(hi - lo + 1 > 5 ? 5 : hi - lo + 1));
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 6; c++) {
            size_t si;
            if (!block)
                si = (size_t)(axis == 0 ? r : c);
            else if (axis == 0)
                si = (size_t)((r / block) * sd[1] + c);
            else
                si = (size_t)(r * sd[1] + c / block);
            float sf = (float)s[si];
            want[r * 6 + c] = dequant ? (double)((float)(x[r * 6 + c] - z[si]) * sf) : quant((float)x[r * 6 + c], sf, z[si], qt);
        }
    tb t;
    tb_init(&t, opset);
    carve_value_id ins[3] = {tb_in(&t, "x", vals(dequant ? qt : CARVE_FLOAT, 2, xd, x)),
                             tb_in(&t, "s", vals(CARVE_FLOAT, srank, sd, s)), tb_in(&t, "z", vals(qt, srank, sd, z))};
    tb_node(&t, dequant ? "DequantizeLinear" : "QuantizeLinear", 3, ins, 1);
    carve_node_set_attr_int(t.m, t.node, "axis", axis);
    if (block)
        carve_node_set_attr_int(t.m, t.node, "block_size", block);
    cv_val *y = NULL, *w = vals(dequant ? CARVE_FLOAT : qt, 2, xd, want);
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "%s: %s", what, carve_errmsg(t.ctx));
    check_equal(what, y, w);
    cv_val_unref(y);
    cv_val_unref(w);
    tb_free(&t);
}

static void test_layouts(void)
{
    static const carve_dtype types[6] = {CARVE_INT8, CARVE_UINT8, CARVE_INT16, CARVE_UINT16, CARVE_INT4, CARVE_UINT4};
    char what[128];
    for (int dq = 0; dq < 2; dq++) {
        for (int axis = 0; axis < 2; axis++) {
            snprintf(what, sizeof what, "%s per axis %d", dq ? "dequantize" : "quantize", axis);
            check_layout(what, 13, axis, 0, CARVE_INT8, dq);
        }
        for (int ti = 0; ti < 6; ti++)
            for (int axis = 0; axis < 2; axis++)
                for (int block = 2; block <= 4; block += 2) {
                    snprintf(what, sizeof what, "%s blocked %s axis %d block_size %d", dq ? "dequantize" : "quantize",
                             carve_dtype_name(types[ti]), axis, block);
                    check_layout(what, 21, axis, block, types[ti], dq);
                }
    }
}

/* int4/uint4 outputs with an odd element count: the bytes themselves. */
static void test_int4_packing(void)
{
    for (int s = 0; s < 2; s++) {
        carve_dtype qt = s ? CARVE_INT4 : CARVE_UINT4;
        double xv[7] = {-9, -3.5, -0.5, 0.5, 2.5, 6.5, 40}, two = 2, zpv = s ? 0 : 1;
        int64_t d[1] = {7};
        tb t;
        tb_init(&t, 21);
        carve_value_id ins[3] = {tb_in(&t, "x", vals(CARVE_FLOAT, 1, d, xv)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &two)),
                                 tb_in(&t, "z", vals(qt, 0, NULL, &zpv))};
        tb_node(&t, "QuantizeLinear", 3, ins, 1);
        uint8_t want[4] = {0};
        for (int i = 0; i < 7; i++) {
            int q = (int)quant((float)xv[i], 2, zpv, qt);
            want[i / 2] |= (uint8_t)((q & 0xf) << (4 * (i & 1)));
        }
        cv_val *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "int4 pack: %s", carve_errmsg(t.ctx));
        OT_CHECK(y && y->dtype == qt && y->nelem == 7 && y->nbytes == 4 && !memcmp(y->data, want, 4),
                 "%s packing of 7 elements: bytes %02x %02x %02x %02x, expected %02x %02x %02x %02x", carve_dtype_name(qt),
                 y && y->nbytes == 4 ? ((uint8_t *)y->data)[0] : 0, y && y->nbytes == 4 ? ((uint8_t *)y->data)[1] : 0,
                 y && y->nbytes == 4 ? ((uint8_t *)y->data)[2] : 0, y && y->nbytes == 4 ? ((uint8_t *)y->data)[3] : 0,
                 want[0], want[1], want[2], want[3]);
        cv_val_unref(y);
        tb_free(&t);
        /* and back: the packed bytes dequantized, the odd last nibble too */
        tb_init(&t, 21);
        cv_val *q = cv_val_new(qt, 1, d);
        memcpy(q->data, want, 4);
        double sc = 0.5;
        carve_value_id dins[3] = {tb_in(&t, "q", q), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &sc)),
                                  tb_in(&t, "z", vals(qt, 0, NULL, &zpv))};
        tb_node(&t, "DequantizeLinear", 3, dins, 1);
        double dv[7];
        for (int i = 0; i < 7; i++) {
            int nib = (want[i / 2] >> (4 * (i & 1))) & 0xf;
            if (s && nib >= 8)
                nib -= 16;
            dv[i] = (nib - zpv) * 0.5;
        }
        cv_val *w = vals(CARVE_FLOAT, 1, d, dv);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "int4 unpack: %s", carve_errmsg(t.ctx));
        check_equal(s ? "dequantize int4 odd count" : "dequantize uint4 odd count", y, w);
        cv_val_unref(y);
        cv_val_unref(w);
        tb_free(&t);
    }
}

/* float8: zero points of the float8 type, saturate on and off. */
static void test_float8(void)
{
    static const carve_dtype f8[4] = {CARVE_FLOAT8E4M3FN, CARVE_FLOAT8E4M3FNUZ, CARVE_FLOAT8E5M2, CARVE_FLOAT8E5M2FNUZ};
    double xv[9] = {0, 0.3, -1.0625, 3.14159, 1e6, -1e6, 1e-7, -2.75, INFINITY};
    int64_t d[1] = {9};
    for (int ti = 0; ti < 4; ti++)
        for (int sat = 0; sat < 2; sat++) {
            carve_dtype t8 = f8[ti];
            tb t;
            tb_init(&t, 19);
            double sc = 0.5, zp = 1.0; /* a non-zero float8 zero point */
            carve_value_id ins[3] = {tb_in(&t, "x", vals(CARVE_FLOAT, 1, d, xv)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &sc)),
                                     tb_in(&t, "z", vals(t8, 0, NULL, &zp))};
            tb_node(&t, "QuantizeLinear", 3, ins, 1);
            carve_node_set_attr_int(t.m, t.node, "saturate", sat);
            cv_val *want = cv_val_new(t8, 1, d), *y = NULL;
            for (int i = 0; i < 9; i++)
                ((uint8_t *)want->data)[i] = cv_f32_to_f8((float)xv[i] / 0.5f + 1.0f, t8, sat);
            OT_CHECK(tb_run(&t, &y) == CARVE_OK, "float8 quantize: %s", carve_errmsg(t.ctx));
            char what[96];
            snprintf(what, sizeof what, "quantize %s saturate %d", carve_dtype_name(t8), sat);
            bool same = y && y->dtype == t8 && !memcmp(y->data, want->data, 9);
            OT_CHECK(same, "%s: codes differ", what);
            cv_val_unref(y);
            cv_val_unref(want);
            tb_free(&t);
            /* dequantize every code of the format with a zero point */
            if (sat)
                continue;
            tb_init(&t, 19);
            int64_t d256[1] = {256};
            cv_val *q = cv_val_new(t8, 1, d256);
            for (int c = 0; c < 256; c++)
                ((uint8_t *)q->data)[c] = (uint8_t)c;
            double s2 = 2;
            carve_value_id dins[3] = {tb_in(&t, "q", q), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &s2)),
                                      tb_in(&t, "z", vals(t8, 0, NULL, &zp))};
            tb_node(&t, "DequantizeLinear", 3, dins, 1);
            double dv[256];
            for (int c = 0; c < 256; c++)
                dv[c] = (double)((float)(cv_f8_to_f32((uint8_t)c, t8) - 1.0) * 2.0f);
            cv_val *w = vals(CARVE_FLOAT, 1, d256, dv);
            OT_CHECK(tb_run(&t, &y) == CARVE_OK, "float8 dequantize: %s", carve_errmsg(t.ctx));
            snprintf(what, sizeof what, "dequantize all %s codes", carve_dtype_name(t8));
            check_equal(what, y, w);
            cv_val_unref(y);
            cv_val_unref(w);
            tb_free(&t);
        }
}

static void test_dequantize_types(void)
{
    /* int32 without zero point, scale float16: the output is float16 */
    {
        tb t;
        tb_init(&t, 19);
        int64_t d[1] = {4};
        double xv[4] = {-100000, -3, 0, 77777}, sc = 0.25, w[4];
        for (int i = 0; i < 4; i++)
            w[i] = xv[i] * 0.25;
        carve_value_id ins[2] = {tb_in(&t, "x", vals(CARVE_INT32, 1, d, xv)), tb_in(&t, "s", vals(CARVE_FLOAT16, 0, NULL, &sc))};
        tb_node(&t, "DequantizeLinear", 2, ins, 1);
        cv_val *y = NULL, *want = vals(CARVE_FLOAT16, 1, d, w);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "dequantize int32: %s", carve_errmsg(t.ctx));
        check_equal("dequantize int32 with a float16 scale", y, want);
        cv_val_unref(y);
        cv_val_unref(want);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK &&
                     carve_value_dtype(t.m, carve_node_output(t.m, t.node, 0)) == CARVE_FLOAT16,
                 "dequantize infers the scale's type");
        tb_free(&t);
    }
    /* int16 / uint16 per tensor */
    for (int k = 0; k < 2; k++) {
        tb t;
        tb_init(&t, 21);
        carve_dtype qt = k ? CARVE_UINT16 : CARVE_INT16;
        int64_t d[1] = {3};
        double xv[3] = {k ? 65535 : -32768, k ? 1000 : 32767, 7}, sc = 0.125, zp = k ? 30000 : -5, w[3];
        for (int i = 0; i < 3; i++)
            w[i] = (xv[i] - zp) * 0.125;
        carve_value_id ins[3] = {tb_in(&t, "x", vals(qt, 1, d, xv)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &sc)),
                                 tb_in(&t, "z", vals(qt, 0, NULL, &zp))};
        tb_node(&t, "DequantizeLinear", 3, ins, 1);
        cv_val *y = NULL, *want = vals(CARVE_FLOAT, 1, d, w);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "dequantize 16-bit: %s", carve_errmsg(t.ctx));
        check_equal(k ? "dequantize uint16" : "dequantize int16", y, want);
        cv_val_unref(y);
        cv_val_unref(want);
        tb_free(&t);
    }
}

/* ================================================================ DynamicQuantizeLinear */

static void test_dynamic(void)
{
    double xs[3][6] = {{-1.5, 0.25, 2, 3.75, -0.125, 1}, {0.5, 1, 2, 4, 8, 16}, {-9, -4, -3, -2, -1, -0.5}};
    for (int k = 0; k < 3; k++) {
        tb t;
        tb_init(&t, 11);
        int64_t d[2] = {2, 3};
        carve_value_id in = tb_in(&t, "x", vals(CARVE_FLOAT, 2, d, xs[k]));
        tb_node(&t, "DynamicQuantizeLinear", 1, &in, 3);
        float mn = 0, mx = 0;
        for (int i = 0; i < 6; i++) {
            mn = (float)xs[k][i] < mn ? (float)xs[k][i] : mn;
            mx = (float)xs[k][i] > mx ? (float)xs[k][i] : mx;
        }
        float scale = (mx - mn) / 255.0f, izp = 0.0f - mn / scale;
        izp = izp < 0 ? 0 : izp > 255 ? 255 : izp;
        double zp = round_half_even(izp), yv[6];
        for (int i = 0; i < 6; i++)
            yv[i] = quant((float)xs[k][i], scale, zp, CARVE_UINT8);
        cv_val *y[3] = {NULL, NULL, NULL}, *wy = vals(CARVE_UINT8, 2, d, yv);
        OT_CHECK(tb_run(&t, y) == CARVE_OK, "dynamicquantize: %s", carve_errmsg(t.ctx));
        check_equal("dynamicquantizelinear y", y[0], wy);
        OT_CHECK(y[1] && y[1]->dtype == CARVE_FLOAT && y[1]->rank == 0 && *(float *)y[1]->data == scale,
                 "dynamicquantizelinear scale");
        OT_CHECK(y[2] && y[2]->dtype == CARVE_UINT8 && y[2]->rank == 0 && *(uint8_t *)y[2]->data == zp,
                 "dynamicquantizelinear zero point");
        for (int i = 0; i < 3; i++)
            cv_val_unref(y[i]);
        cv_val_unref(wy);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK &&
                     carve_value_dtype(t.m, carve_node_output(t.m, t.node, 0)) == CARVE_UINT8 &&
                     carve_value_rank(t.m, carve_node_output(t.m, t.node, 1)) == 0 &&
                     carve_value_dtype(t.m, carve_node_output(t.m, t.node, 2)) == CARVE_UINT8,
                 "dynamicquantizelinear inference");
        tb_free(&t);
    }
    /* all zeros: scale 1 (onnxruntime's guard against 0/0), zero point 0 */
    tb t;
    tb_init(&t, 11);
    int64_t d[1] = {4};
    double z[4] = {0, 0, 0, 0};
    carve_value_id in = tb_in(&t, "x", vals(CARVE_FLOAT, 1, d, z));
    tb_node(&t, "DynamicQuantizeLinear", 1, &in, 3);
    cv_val *y[3] = {NULL, NULL, NULL};
    OT_CHECK(tb_run(&t, y) == CARVE_OK && *(float *)y[1]->data == 1.0f && *(uint8_t *)y[2]->data == 0 &&
                 !memcmp(y[0]->data, "\0\0\0\0", 4),
             "dynamicquantizelinear of zeros");
    for (int i = 0; i < 3; i++)
        cv_val_unref(y[i]);
    tb_free(&t);
}

/* ================================================================ integer products */

/* MatMulInteger [2, 3, 4] x [4, 5], per-row a zero point [3], per-column b
 * zero point [5]; uint8 x int8. */
static void test_matmulinteger(void)
{
    int64_t ad[3] = {2, 3, 4}, bd[2] = {4, 5}, azd[1] = {3}, bzd[1] = {5}, od[3] = {2, 3, 5};
    cv_val *a = ot_random(CARVE_UINT8, 3, ad, 400, 0, 256), *b = ot_random(CARVE_INT8, 2, bd, 401, -128, 128);
    cv_val *az = ot_random(CARVE_UINT8, 1, azd, 402, 0, 256), *bz = ot_random(CARVE_INT8, 1, bzd, 403, -128, 128);
    double w[30];
    for (int bt = 0; bt < 2; bt++)
        for (int m = 0; m < 3; m++)
            for (int n = 0; n < 5; n++) {
                int64_t acc = 0;
                for (int k = 0; k < 4; k++)
                    acc += (cv_val_get_i64(a, (size_t)(bt * 12 + m * 4 + k)) - cv_val_get_i64(az, (size_t)m)) *
                           (cv_val_get_i64(b, (size_t)(k * 5 + n)) - cv_val_get_i64(bz, (size_t)n));
                w[bt * 15 + m * 5 + n] = (double)acc;
            }
    tb t;
    tb_init(&t, 10);
    carve_value_id ins[4] = {tb_in(&t, "a", a), tb_in(&t, "b", b), tb_in(&t, "az", az), tb_in(&t, "bz", bz)};
    tb_node(&t, "MatMulInteger", 4, ins, 1);
    cv_val *y = NULL, *want = vals(CARVE_INT32, 3, od, w);
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "matmulinteger: %s", carve_errmsg(t.ctx));
    check_equal("matmulinteger per-row and per-column zero points", y, want);
    cv_val_unref(y);
    cv_val_unref(want);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && carve_value_dtype(t.m, carve_node_output(t.m, t.node, 0)) == CARVE_INT32,
             "matmulinteger infers int32");
    tb_free(&t);
}

/* QLinearMatMul: per-tensor a, per-column b scale and zero point. */
static void test_qlinearmatmul(void)
{
    for (int k = 0; k < 2; k++) {
        carve_dtype yt = k ? CARVE_INT8 : CARVE_UINT8;
        int64_t ad[2] = {3, 6}, bd[2] = {6, 4}, nd[1] = {4}, od[2] = {3, 4};
        cv_val *a = ot_random(CARVE_UINT8, 2, ad, 410, 0, 256), *b = ot_random(CARVE_INT8, 2, bd, 411, -128, 128);
        double as = 0.02, azp = 120, ysv = 0.3, yzp = k ? -3 : 100;
        double bs[4] = {0.01, 0.05, 0.002, 0.03}, bz[4] = {0, -4, 7, 2};
        double w[12];
        for (int m = 0; m < 3; m++)
            for (int n = 0; n < 4; n++) {
                int64_t acc = 0;
                for (int p = 0; p < 6; p++)
                    acc += (cv_val_get_i64(a, (size_t)(m * 6 + p)) - (int64_t)azp) *
                           (cv_val_get_i64(b, (size_t)(p * 4 + n)) - (int64_t)bz[n]);
                float mult = (float)as * (float)bs[n] / (float)ysv;
                double lo, hi, v = round_half_even((double)acc * (double)mult) + yzp;
                qrange(yt, &lo, &hi);
                w[m * 4 + n] = v < lo ? lo : v > hi ? hi : v;
            }
        tb t;
        tb_init(&t, 10);
        carve_value_id ins[8] = {tb_in(&t, "a", a),
                                 tb_in(&t, "as", vals(CARVE_FLOAT, 0, NULL, &as)),
                                 tb_in(&t, "az", vals(CARVE_UINT8, 0, NULL, &azp)),
                                 tb_in(&t, "b", b),
                                 tb_in(&t, "bs", vals(CARVE_FLOAT, 1, nd, bs)),
                                 tb_in(&t, "bz", vals(CARVE_INT8, 1, nd, bz)),
                                 tb_in(&t, "ys", vals(CARVE_FLOAT, 0, NULL, &ysv)),
                                 tb_in(&t, "yz", vals(yt, 0, NULL, &yzp))};
        tb_node(&t, "QLinearMatMul", 8, ins, 1);
        cv_val *y = NULL, *want = vals(yt, 2, od, w);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "qlinearmatmul: %s", carve_errmsg(t.ctx));
        check_equal(k ? "qlinearmatmul int8 out, per-column b" : "qlinearmatmul uint8 out, per-column b", y, want);
        cv_val_unref(y);
        cv_val_unref(want);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && carve_value_dtype(t.m, carve_node_output(t.m, t.node, 0)) == yt,
                 "qlinearmatmul infers y_zero_point's type");
        tb_free(&t);
    }
}

/* ConvInteger and QLinearConv: x [1, 2, 5, 4], w [3, 2, 3, 2] with
 * per-channel zero points, pads 1, stride 2 on H. */
static void int_conv_ref(const cv_val *x, double xz, const cv_val *w, const double *wz, const int64_t *bias, int64_t *acc)
{
    for (int m = 0; m < 3; m++)
        for (int oh = 0; oh < 3; oh++)
            for (int ow = 0; ow < 5; ow++) {
                int64_t s = bias ? bias[m] : 0;
                for (int c = 0; c < 2; c++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 2; kw++) {
                            int ih = oh * 2 - 1 + kh, iw = ow - 1 + kw;
                            /* padding holds the zero point: contributes 0 */
                            int64_t xv = ih < 0 || ih >= 5 || iw < 0 || iw >= 4
                                             ? (int64_t)xz
                                             : cv_val_get_i64(x, (size_t)(c * 20 + ih * 4 + iw));
                            s += (xv - (int64_t)xz) *
                                 (cv_val_get_i64(w, (size_t)(((m * 2 + c) * 3 + kh) * 2 + kw)) - (int64_t)wz[m]);
                        }
                acc[m * 15 + oh * 5 + ow] = s;
            }
}

static void test_int_conv(void)
{
    int64_t xd[4] = {1, 2, 5, 4}, wd[4] = {3, 2, 3, 2}, md[1] = {3}, od[4] = {1, 3, 3, 5};
    int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 1};
    double xz = 17, wz[3] = {-3, 0, 5};
    int64_t acc[45];
    /* ConvInteger, int8 x and per-channel int8 w zero points */
    {
        cv_val *x = ot_random(CARVE_INT8, 4, xd, 420, -128, 128), *w = ot_random(CARVE_INT8, 4, wd, 421, -128, 128);
        int_conv_ref(x, xz, w, wz, NULL, acc);
        double a[45];
        for (int i = 0; i < 45; i++)
            a[i] = (double)acc[i];
        tb t;
        tb_init(&t, 10);
        carve_value_id ins[4] = {tb_in(&t, "x", x), tb_in(&t, "w", w), tb_in(&t, "xz", vals(CARVE_INT8, 0, NULL, &xz)),
                                 tb_in(&t, "wz", vals(CARVE_INT8, 1, md, wz))};
        tb_node(&t, "ConvInteger", 4, ins, 1);
        carve_node_set_attr_ints(t.m, t.node, "pads", 4, pads);
        carve_node_set_attr_ints(t.m, t.node, "strides", 2, strides);
        cv_val *y = NULL, *want = vals(CARVE_INT32, 4, od, a);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "convinteger: %s", carve_errmsg(t.ctx));
        check_equal("convinteger per-channel zero points, padding", y, want);
        cv_val_unref(y);
        cv_val_unref(want);
        tb_free(&t);
    }
    /* QLinearConv, uint8 x, int8 w with per-channel scales, int32 bias */
    {
        cv_val *x = ot_random(CARVE_UINT8, 4, xd, 422, 0, 256), *w = ot_random(CARVE_INT8, 4, wd, 423, -128, 128);
        int64_t bias[3] = {-500, 20, 1234};
        int_conv_ref(x, xz, w, wz, bias, acc);
        double xs = 0.05, ws[3] = {0.01, 0.002, 0.04}, ysv = 0.25, yzp = 128, bv[3] = {-500, 20, 1234}, a[45];
        for (int m = 0; m < 3; m++) {
            float mult = (float)xs * (float)ws[m] / (float)ysv;
            for (int i = 0; i < 15; i++) {
                double v = round_half_even((double)acc[m * 15 + i] * (double)mult) + yzp;
                a[m * 15 + i] = v < 0 ? 0 : v > 255 ? 255 : v;
            }
        }
        tb t;
        tb_init(&t, 10);
        carve_value_id ins[9] = {tb_in(&t, "x", x),
                                 tb_in(&t, "xs", vals(CARVE_FLOAT, 0, NULL, &xs)),
                                 tb_in(&t, "xz", vals(CARVE_UINT8, 0, NULL, &xz)),
                                 tb_in(&t, "w", w),
                                 tb_in(&t, "ws", vals(CARVE_FLOAT, 1, md, ws)),
                                 tb_in(&t, "wz", vals(CARVE_INT8, 1, md, wz)),
                                 tb_in(&t, "ys", vals(CARVE_FLOAT, 0, NULL, &ysv)),
                                 tb_in(&t, "yz", vals(CARVE_UINT8, 0, NULL, &yzp)),
                                 tb_in(&t, "b", vals(CARVE_INT32, 1, md, bv))};
        tb_node(&t, "QLinearConv", 9, ins, 1);
        carve_node_set_attr_ints(t.m, t.node, "pads", 4, pads);
        carve_node_set_attr_ints(t.m, t.node, "strides", 2, strides);
        cv_val *y = NULL, *want = vals(CARVE_UINT8, 4, od, a);
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "qlinearconv: %s", carve_errmsg(t.ctx));
        check_equal("qlinearconv per-channel scales and zero points, bias", y, want);
        cv_val_unref(y);
        cv_val_unref(want);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK &&
                     carve_value_dtype(t.m, carve_node_output(t.m, t.node, 0)) == CARVE_UINT8 &&
                     carve_value_dim(t.m, carve_node_output(t.m, t.node, 0), 2).value == 3,
                 "qlinearconv inference");
        tb_free(&t);
    }
}

/* ================================================================ inference and errors */

static void test_inference(void)
{
    struct {
        int64_t opset;
        bool zp;
        carve_dtype zt;
        int64_t odt;
        carve_dtype want;
    } cases[4] = {{13, true, CARVE_INT8, 0, CARVE_INT8}, {13, false, CARVE_UNDEFINED, 0, CARVE_UINT8},
                  {21, false, CARVE_UNDEFINED, CARVE_INT4, CARVE_INT4}, {21, true, CARVE_UINT16, 0, CARVE_UINT16}};
    for (int i = 0; i < 4; i++) {
        tb t;
        tb_init(&t, cases[i].opset);
        carve_dim xd[2] = {{-1, "N"}, {8, NULL}};
        carve_value_id ins[3] = {carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 2, xd),
                                 carve_graph_add_input(t.m, 0, "s", CARVE_FLOAT, 0, NULL),
                                 cases[i].zp ? carve_graph_add_input(t.m, 0, "z", cases[i].zt, 0, NULL) : CARVE_NONE};
        tb_node(&t, "QuantizeLinear", cases[i].zp ? 3 : 2, ins, 1);
        if (cases[i].odt)
            carve_node_set_attr_int(t.m, t.node, "output_dtype", cases[i].odt);
        carve_value_id y = carve_node_output(t.m, t.node, 0);
        carve_dim d0 = {0, NULL};
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK && carve_value_dtype(t.m, y) == cases[i].want &&
                     carve_value_rank(t.m, y) == 2 && (d0 = carve_value_dim(t.m, y, 0)).param && !strcmp(d0.param, "N"),
                 "quantize inference case %d: %s", i, carve_errmsg(t.ctx));
        tb_free(&t);
    }
}

static void expect_error(tb *t, const char *part, const char *what)
{
    cv_val *y[3] = {NULL, NULL, NULL};
    carve_status s = tb_run(t, y);
    OT_CHECK(s != CARVE_OK && errmsg_has(t, part), "%s: expected an error with '%s', got '%s'", what, part,
             carve_errmsg(t->ctx));
    for (int i = 0; i < 3; i++)
        cv_val_unref(y[i]);
}

static void test_errors(void)
{
    int64_t xd[2] = {4, 6}, s2[1] = {2}, bd[2] = {4, 3};
    double x[24] = {0}, s[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, one = 1;
    {
        tb t;
        tb_init(&t, 13);
        carve_value_id ins[2] = {tb_in(&t, "x", vals(CARVE_FLOAT, 2, xd, x)), tb_in(&t, "s", vals(CARVE_FLOAT, 1, s2, s))};
        tb_node(&t, "QuantizeLinear", 2, ins, 1);
        expect_error(&t, "node 'n' (QuantizeLinear): input 1 'y_scale' must be a scalar or a 1-D tensor of 6 elements (input 0 dim 1), it has 2 elements",
                     "quantize per-axis size");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 21);
        carve_value_id ins[2] = {tb_in(&t, "x", vals(CARVE_FLOAT, 2, xd, x)), tb_in(&t, "s", vals(CARVE_FLOAT, 2, bd, s))};
        tb_node(&t, "QuantizeLinear", 2, ins, 1);
        carve_node_set_attr_int(t.m, t.node, "block_size", 4);
        expect_error(&t, "input 1 'y_scale' dim 1 is 3, expected 2 (input 0 dim 6 divided by block_size, rounded up, block_size 4)",
                     "quantize blocked scale shape");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 10);
        carve_value_id ins[2] = {tb_in(&t, "x", vals(CARVE_FLOAT, 2, xd, x)), tb_in(&t, "s", vals(CARVE_FLOAT, 1, s2, s))};
        tb_node(&t, "QuantizeLinear", 2, ins, 1);
        expect_error(&t, "before opset 13 it must be a scalar", "quantize per-axis at opset 10");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 19);
        double z = 0;
        carve_value_id ins[3] = {tb_in(&t, "x", vals(CARVE_FLOAT, 2, xd, x)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &one)),
                                 tb_in(&t, "z", vals(CARVE_INT4, 0, NULL, &z))};
        tb_node(&t, "QuantizeLinear", 3, ins, 1);
        expect_error(&t, "cannot quantize to int4 at opset 19", "quantize int4 too early");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        double z = 0;
        carve_value_id ins[3] = {tb_in(&t, "x", vals(CARVE_UINT8, 2, xd, x)), tb_in(&t, "s", vals(CARVE_FLOAT, 0, NULL, &one)),
                                 tb_in(&t, "z", vals(CARVE_INT8, 0, NULL, &z))};
        tb_node(&t, "DequantizeLinear", 3, ins, 1);
        expect_error(&t, "input 2 'x_zero_point' is int8 but input 0 'x' is uint8", "dequantize zero point type");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 10);
        int64_t ad[2] = {2, 3}, bd2[2] = {3, 2}, zd[1] = {4};
        double z[4] = {0};
        carve_value_id ins[3] = {tb_in(&t, "a", vals(CARVE_UINT8, 2, ad, x)), tb_in(&t, "b", vals(CARVE_UINT8, 2, bd2, x)),
                                 tb_in(&t, "az", vals(CARVE_UINT8, 1, zd, z))};
        tb_node(&t, "MatMulInteger", 3, ins, 1);
        expect_error(&t, "input 'a_zero_point' [4] is neither a scalar, a 1-D tensor of 2 elements nor a shape broadcasting to input 'A' [2,3]",
                     "matmulinteger zero point shape");
        tb_free(&t);
    }
}

int main(void)
{
    test_quantize_rounding();
    test_layouts();
    test_int4_packing();
    test_float8();
    test_dequantize_types();
    test_dynamic();
    test_matmulinteger();
    test_qlinearmatmul();
    test_int_conv();
    test_inference();
    test_errors();
    return ot_finish();
}

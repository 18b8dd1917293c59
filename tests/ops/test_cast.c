/* test_cast.c: Cast and CastLike are exact. uint8 -> float32 over all 256
 * values; float32 -> float16/bfloat16 round to nearest even on crafted bit
 * patterns (ties, subnormals, overflow, NaN); double -> float16 and
 * int64 -> bfloat16 rounded once; the x86-64 table of NaN/inf/out-of-range
 * float -> integer results; float8 with and without saturation (and every
 * code read back); int4/uint4; strings both ways (numpy's str formatting,
 * "INF"/"NaN" parsing, int64 round trips); Cast-1's string `to`; inference;
 * the error texts. */
#include "opstest.h"
#include "ops/k_elementwise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ running one Cast */

typedef struct {
    carve_ctx *ctx;
    carve_model *m;
    carve_node_id node;
} onecast;

/* A model "y = Cast<to>(x)" (or CastLike(x, like) when like != UNDEFINED);
 * saturate < 0 leaves the attribute out. */
static void build(onecast *c, const cv_val *x, carve_dtype to, int64_t saturate, int64_t opset, carve_dtype like)
{
    c->ctx = carve_ctx_new();
    c->m = carve_model_new(c->ctx);
    carve_model_set_opset(c->m, "", opset);
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        d[i] = (carve_dim){x->dims[i], NULL};
    carve_value_id ins[2];
    ins[0] = carve_graph_add_input(c->m, 0, "x", x->dtype, x->rank, d);
    const char *outs[1] = {"y"};
    if (like) {
        carve_dim one = {1, NULL};
        ins[1] = carve_graph_add_input(c->m, 0, "like", like, 1, &one);
        c->node = carve_graph_add_node(c->m, 0, "CastLike", "", "cast", 2, ins, 1, outs);
    } else {
        c->node = carve_graph_add_node(c->m, 0, "Cast", "", "cast", 1, ins, 1, outs);
        if (opset < 6) {
            carve_node_set_attr_string(c->m, c->node, "to", carve_dtype_name(to));
        } else {
            carve_node_set_attr_int(c->m, c->node, "to", to);
        }
    }
    if (saturate >= 0)
        carve_node_set_attr_int(c->m, c->node, "saturate", saturate);
    carve_graph_add_output(c->m, 0, carve_node_output(c->m, c->node, 0));
}

static void drop(onecast *c)
{
    carve_model_free(c->m);
    carve_ctx_free(c->ctx);
}

/* Cast x to `to`; NULL on failure (the message in err). */
static cv_val *cast_sat(cv_val *x, carve_dtype to, int64_t saturate, char *err, size_t errsz)
{
    onecast c;
    build(&c, x, to, saturate, 21, CARVE_UNDEFINED);
    cv_val *out[1] = {NULL};
    carve_status s = ot_run(c.m, &x, out);
    if (err)
        snprintf(err, errsz, "%s", s ? carve_errmsg(c.ctx) : "");
    drop(&c);
    return out[0];
}

static cv_val *cast(cv_val *x, carve_dtype to) { return cast_sat(x, to, -1, NULL, 0); }

static cv_val *vec(carve_dtype t, size_t n)
{
    int64_t d[1] = {(int64_t)n};
    return cv_val_new(t, 1, d);
}

static cv_val *vec_f32_bits(const uint32_t *bits, size_t n)
{
    cv_val *v = vec(CARVE_FLOAT, n);
    memcpy(v->data, bits, n * 4);
    return v;
}

static cv_val *vec_f32(const float *x, size_t n)
{
    cv_val *v = vec(CARVE_FLOAT, n);
    memcpy(v->data, x, n * 4);
    return v;
}

static cv_val *vec_f64(const double *x, size_t n)
{
    cv_val *v = vec(CARVE_DOUBLE, n);
    memcpy(v->data, x, n * 8);
    return v;
}

static cv_val *vec_str(const char *const *s, size_t n)
{
    cv_val *v = vec(CARVE_STRING, n);
    for (size_t i = 0; i < n; i++) {
        ((char **)v->data)[i] = cv_malloc(strlen(s[i]) + 1);
        strcpy(((char **)v->data)[i], s[i]);
    }
    return v;
}

#define N(a) (sizeof(a) / sizeof *(a))

/* ================================================================ tests */

static void test_uint8_to_float(void)
{
    cv_val *x = vec(CARVE_UINT8, 256);
    for (int i = 0; i < 256; i++)
        ((uint8_t *)x->data)[i] = (uint8_t)i;
    cv_val *y = cast(x, CARVE_FLOAT);
    OT_CHECK(y && y->dtype == CARVE_FLOAT && y->nelem == 256, "uint8 -> float32 ran");
    int bad = 0;
    for (int i = 0; y && i < 256; i++)
        bad += ((float *)y->data)[i] != (float)i;
    OT_CHECK(y && !bad, "uint8 -> float32: %d of 256 values differ", bad);
    cv_val_unref(x);
    cv_val_unref(y);
}

static void test_f32_to_f16(void)
{
    static const struct {
        uint32_t in;
        uint16_t want;
        const char *what;
    } cases[] = {
        {0x3f800000, 0x3c00, "1.0"},
        {0x3f801000, 0x3c00, "1 + 2^-11: tie, to even (down)"},
        {0x3f803000, 0x3c02, "1 + 3*2^-11: tie, to even (up)"},
        {0x3f801001, 0x3c01, "just above a tie"},
        {0x3f800fff, 0x3c00, "just below a tie"},
        {0x477fe000, 0x7bff, "65504, the largest float16"},
        {0x477fefff, 0x7bff, "just below 65520"},
        {0x477ff000, 0x7c00, "65520: tie between 65504 and 2^16, to even = inf"},
        {0x501502f9, 0x7c00, "1e10 overflows to inf"},
        {0xd01502f9, 0xfc00, "-1e10 overflows to -inf"},
        {0x7f800000, 0x7c00, "inf"},
        {0xff800000, 0xfc00, "-inf"},
        {0x80000000, 0x8000, "-0"},
        {0x33800000, 0x0001, "2^-24, the smallest subnormal"},
        {0x33000000, 0x0000, "2^-25: tie with 0, to even"},
        {0x33000001, 0x0001, "just above 2^-25"},
        {0x33c00000, 0x0002, "3*2^-25: tie, to even (up)"},
        {0x387fc000, 0x03ff, "the largest subnormal"},
        {0x387fe000, 0x0400, "tie between the largest subnormal and the smallest normal"},
        {0x38800000, 0x0400, "2^-14, the smallest normal"},
        {0x00000001, 0x0000, "a float32 subnormal"},
        {0xb3000001, 0x8001, "-(just above 2^-25)"},
    };
    uint32_t bits[N(cases) + 2];
    for (size_t i = 0; i < N(cases); i++)
        bits[i] = cases[i].in;
    bits[N(cases)] = 0x7fc00000;     /* quiet NaN */
    bits[N(cases) + 1] = 0xff800001; /* signalling NaN, negative */
    cv_val *x = vec_f32_bits(bits, N(bits));
    cv_val *y = cast(x, CARVE_FLOAT16);
    OT_CHECK(y && y->dtype == CARVE_FLOAT16, "float32 -> float16 ran");
    for (size_t i = 0; y && i < N(cases); i++) {
        uint16_t got = ((uint16_t *)y->data)[i];
        OT_CHECK(got == cases[i].want, "float32 %08x -> float16: %04x, expected %04x (%s)", cases[i].in, got,
                 cases[i].want, cases[i].what);
    }
    for (size_t i = N(cases); y && i < N(bits); i++) {
        uint16_t got = ((uint16_t *)y->data)[i];
        OT_CHECK((got & 0x7c00) == 0x7c00 && (got & 0x3ff), "NaN %08x -> float16 %04x is not NaN", bits[i], got);
    }
    cv_val_unref(y);
    /* and bfloat16 */
    static const struct {
        uint32_t in;
        uint16_t want;
        const char *what;
    } bc[] = {
        {0x3f800000, 0x3f80, "1.0"},
        {0x3f808000, 0x3f80, "tie, to even (down)"},
        {0x3f818000, 0x3f82, "tie, to even (up)"},
        {0x3f808001, 0x3f81, "just above a tie"},
        {0x3f807fff, 0x3f80, "just below a tie"},
        {0x7f7f7fff, 0x7f7f, "just below the last tie"},
        {0x7f7f8000, 0x7f80, "tie between the largest bfloat16 and 2^128, to even = inf"},
        {0x7f7fffff, 0x7f80, "FLT_MAX rounds to inf"},
        {0xff7fffff, 0xff80, "-FLT_MAX rounds to -inf"},
        {0x7f800000, 0x7f80, "inf"},
        {0x80000000, 0x8000, "-0"},
        {0x00008000, 0x0000, "subnormal tie, to even (0)"},
        {0x00018000, 0x0002, "subnormal tie, to even (up)"},
        {0x00010000, 0x0001, "smallest bfloat16 subnormal"},
    };
    uint32_t bb[N(bc) + 2];
    for (size_t i = 0; i < N(bc); i++)
        bb[i] = bc[i].in;
    bb[N(bc)] = 0x7f800001;
    bb[N(bc) + 1] = 0xffc00000;
    cv_val *xb = vec_f32_bits(bb, N(bb));
    y = cast(xb, CARVE_BFLOAT16);
    OT_CHECK(y && y->dtype == CARVE_BFLOAT16, "float32 -> bfloat16 ran");
    for (size_t i = 0; y && i < N(bc); i++) {
        uint16_t got = ((uint16_t *)y->data)[i];
        OT_CHECK(got == bc[i].want, "float32 %08x -> bfloat16: %04x, expected %04x (%s)", bc[i].in, got, bc[i].want,
                 bc[i].what);
    }
    for (size_t i = N(bc); y && i < N(bb); i++) {
        uint16_t got = ((uint16_t *)y->data)[i];
        OT_CHECK((got & 0x7f80) == 0x7f80 && (got & 0x7f), "NaN %08x -> bfloat16 %04x is not NaN", bb[i], got);
    }
    cv_val_unref(y);
    /* float16 -> float32 -> float16 is the identity on every non-NaN code */
    cv_val *h = vec(CARVE_FLOAT16, 65536);
    for (uint32_t i = 0; i < 65536; i++)
        ((uint16_t *)h->data)[i] = (uint16_t)i;
    cv_val *f = cast(h, CARVE_FLOAT), *back = f ? cast(f, CARVE_FLOAT16) : NULL;
    int bad = 0;
    for (uint32_t i = 0; back && i < 65536; i++)
        if (((i & 0x7c00) != 0x7c00 || !(i & 0x3ff)) && ((uint16_t *)back->data)[i] != i)
            bad++;
    OT_CHECK(back && !bad, "float16 -> float32 -> float16 changed %d codes", bad);
    cv_val_unref(x);
    cv_val_unref(xb);
    cv_val_unref(h);
    cv_val_unref(f);
    cv_val_unref(back);
}

/* The inline conversions of k_elementwise.h are bit-exact with half.c's:
 * every float16, and float32 patterns spread over the whole range (an
 * exhaustive run over all 2^32 was done once when they were written). */
static void test_inline_halves(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++)
        bad += cv_ew_bits(cv_ew_h2f((uint16_t)h)) != cv_ew_bits(cv_f16_to_f32((uint16_t)h));
    OT_CHECK(!bad, "cv_ew_h2f differs from cv_f16_to_f32 on %d codes", bad);
    bad = 0;
    uint32_t u = 0;
    for (uint64_t k = 0; k < ((uint64_t)1 << 32); k += 4093) {
        /* every 4093rd pattern, and its neighbours (ties and carries) */
        for (uint32_t d = 0; d < 3; d++) {
            u = (uint32_t)k + d;
            float f = cv_ew_float(u);
            bad += cv_ew_f2h(f) != cv_f32_to_f16(f);
            bad += cv_ew_f2b(f) != cv_f32_to_bf16(f);
        }
    }
    for (uint32_t m = 0; m < (1u << 13); m++) { /* every rounding remainder at one exponent */
        float f = cv_ew_float(0x3f800000u | m);
        bad += cv_ew_f2h(f) != cv_f32_to_f16(f);
        f = cv_ew_float(0x33000000u | (m << 10)); /* float16 subnormal range */
        bad += cv_ew_f2h(f) != cv_f32_to_f16(f);
    }
    OT_CHECK(!bad, "inline float32 -> float16/bfloat16 differ from half.c on %d patterns (last %08x)", bad, u);
}

static void test_single_rounding(void)
{
    /* 1 + 2^-11 + 2^-40: above the float16 tie, but (float) drops the 2^-40
     * and would make it a tie rounded down. */
    double d[3] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, 65519.999999};
    cv_val *x = vec_f64(d, 3);
    cv_val *y = cast(x, CARVE_FLOAT16);
    OT_CHECK(y && ((uint16_t *)y->data)[0] == 0x3c01, "double 1+2^-11+2^-40 -> float16 %04x, expected 3c01",
             y ? ((uint16_t *)y->data)[0] : 0);
    OT_CHECK(y && ((uint16_t *)y->data)[1] == 0x3c00, "double 1+2^-11 -> float16 tie to even");
    OT_CHECK(y && ((uint16_t *)y->data)[2] == 0x7bff, "double 65519.999999 -> float16 65504");
    cv_val_unref(y);
    y = cast(x, CARVE_BFLOAT16);
    OT_CHECK(y && ((uint16_t *)y->data)[0] == 0x3f80 && ((uint16_t *)y->data)[2] == 0x4780,
             "double -> bfloat16 (%04x %04x)", y ? ((uint16_t *)y->data)[0] : 0, y ? ((uint16_t *)y->data)[2] : 0);
    cv_val_unref(y);
    cv_val_unref(x);
    /* int64 2^60 + 2^52 + 1 is above the bfloat16 midpoint 2^60 + 2^52;
     * through a rounded double it would be a tie rounded to even (down). */
    cv_val *i = vec(CARVE_INT64, 3);
    ((int64_t *)i->data)[0] = ((int64_t)1 << 60) + ((int64_t)1 << 52) + 1;
    ((int64_t *)i->data)[1] = ((int64_t)1 << 60) + ((int64_t)1 << 52);
    ((int64_t *)i->data)[2] = INT64_MIN;
    y = cast(i, CARVE_BFLOAT16);
    OT_CHECK(y && ((uint16_t *)y->data)[0] == 0x5d81, "int64 2^60+2^52+1 -> bfloat16 %04x, expected 5d81",
             y ? ((uint16_t *)y->data)[0] : 0);
    OT_CHECK(y && ((uint16_t *)y->data)[1] == 0x5d80, "int64 2^60+2^52 -> bfloat16 tie to even");
    OT_CHECK(y && ((uint16_t *)y->data)[2] == 0xdf00, "INT64_MIN -> bfloat16 -2^63");
    cv_val_unref(y);
    y = cast(i, CARVE_FLOAT16);
    OT_CHECK(y && ((uint16_t *)y->data)[0] == 0x7c00 && ((uint16_t *)y->data)[2] == 0xfc00,
             "huge int64 -> float16 is +-inf");
    cv_val_unref(y);
    y = cast(i, CARVE_FLOAT);
    OT_CHECK(y && ((float *)y->data)[0] == 0x1p60f + 0x1p52f, "int64 2^60+2^52+1 -> float32 2^60+2^52");
    cv_val_unref(y);
    cv_val_unref(i);
    cv_val *u = vec(CARVE_UINT64, 1);
    ((uint64_t *)u->data)[0] = UINT64_MAX;
    y = cast(u, CARVE_DOUBLE);
    OT_CHECK(y && ((double *)y->data)[0] == 0x1p64, "uint64 max -> double 2^64");
    cv_val_unref(y);
    cv_val_unref(u);
}

/* The x86-64 (onnxruntime) results for NaN, inf and out-of-range values. */
static void test_float_to_int(void)
{
    static const float in[] = {NAN, INFINITY, -INFINITY, 1e10f, -1e10f, -1.5f, 300.7f, -300.7f, 3e9f, 5e9f,
                               1e19f, 2e19f, -1e19f, 70000.5f, -70000.5f, -0.0f, 2.9f};
    enum { NI = sizeof in / sizeof *in };
    static const struct {
        carve_dtype t;
        int64_t want[NI]; /* bits (sign-extended for signed types) */
    } table[] = {
        {CARVE_INT8, {0, 0, 0, 0, 0, -1, 44, -44, 0, 0, 0, 0, 0, 112, -112, 0, 2}},
        {CARVE_UINT8, {0, 0, 0, 0, 0, 255, 44, 212, 0, 0, 0, 0, 0, 112, 144, 0, 2}},
        {CARVE_INT16, {0, 0, 0, 0, 0, -1, 300, -300, 0, 0, 0, 0, 0, 4464, -4464, 0, 2}},
        {CARVE_UINT16, {0, 0, 0, 0, 0, 65535, 300, 65236, 0, 0, 0, 0, 0, 4464, 61072, 0, 2}},
        {CARVE_INT32,
         {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, -1, 300, -300, INT32_MIN, INT32_MIN, INT32_MIN,
          INT32_MIN, INT32_MIN, 70000, -70000, 0, 2}},
        {CARVE_UINT32,
         {0, 0, 0, 1410065408, 2884901888, 4294967295, 300, 4294966996, 3000000000, 705032704, 0, 0, 0, 70000,
          4294897296, 0, 2}},
        {CARVE_INT64,
         {INT64_MIN, INT64_MIN, INT64_MIN, 10000000000, -10000000000, -1, 300, -300, 3000000000, 5000000000,
          INT64_MIN, INT64_MIN, INT64_MIN, 70000, -70000, 0, 2}},
        {CARVE_UINT64,
         {INT64_MIN /* 2^63 */, 0, INT64_MIN, 10000000000, (int64_t)18446744063709551616u, -1, 300,
          (int64_t)18446744073709551316u, 3000000000, 5000000000, (int64_t)9999999980506447872u, 0, INT64_MIN,
          70000, (int64_t)18446744073709481616u, 0, 2}},
        {CARVE_BOOL, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1}},
    };
    cv_val *x = vec_f32(in, NI);
    cv_val *xd = vec(CARVE_DOUBLE, NI);
    cv_val *xh = vec(CARVE_FLOAT16, 3);
    for (int i = 0; i < NI; i++)
        ((double *)xd->data)[i] = in[i];
    for (size_t r = 0; r < N(table); r++) {
        for (int src = 0; src < 2; src++) {
            cv_val *y = cast(src ? xd : x, table[r].t);
            OT_CHECK(y && y->dtype == table[r].t, "%s -> %s ran", src ? "double" : "float32",
                     carve_dtype_name(table[r].t));
            for (int i = 0; y && i < NI; i++) {
                int64_t got = cv_val_get_i64(y, (size_t)i);
                if (table[r].t == CARVE_UINT32)
                    got = (int64_t)((uint32_t *)y->data)[i];
                OT_CHECK(got == table[r].want[i], "%s %g -> %s: %lld, expected %lld", src ? "double" : "float32",
                         (double)in[i], carve_dtype_name(table[r].t), (long long)got, (long long)table[r].want[i]);
            }
            cv_val_unref(y);
        }
    }
    /* float16 sources follow the same rules on their value */
    ((uint16_t *)xh->data)[0] = 0x7e00; /* NaN */
    ((uint16_t *)xh->data)[1] = 0x7c00; /* inf */
    ((uint16_t *)xh->data)[2] = 0xd3d0; /* -62.5 */
    cv_val *y = cast(xh, CARVE_INT32);
    OT_CHECK(y && ((int32_t *)y->data)[0] == INT32_MIN && ((int32_t *)y->data)[1] == INT32_MIN &&
                 ((int32_t *)y->data)[2] == -62,
             "float16 -> int32 NaN/inf/-62.5");
    cv_val_unref(y);
    y = cast(xh, CARVE_UINT8);
    OT_CHECK(y && ((uint8_t *)y->data)[2] == 194, "float16 -62.5 -> uint8 194");
    cv_val_unref(y);
    cv_val_unref(x);
    cv_val_unref(xd);
    cv_val_unref(xh);
}

static void test_int_to_int(void)
{
    cv_val *x = vec(CARVE_INT32, 4);
    int32_t v[4] = {200, -56, 70000, INT32_MIN};
    memcpy(x->data, v, sizeof v);
    cv_val *y = cast(x, CARVE_INT8);
    OT_CHECK(y && ((int8_t *)y->data)[0] == -56 && ((int8_t *)y->data)[1] == -56 && ((int8_t *)y->data)[2] == 112 &&
                 ((int8_t *)y->data)[3] == 0,
             "int32 -> int8 keeps the low bits");
    cv_val_unref(y);
    y = cast(x, CARVE_UINT64);
    OT_CHECK(y && ((uint64_t *)y->data)[1] == (uint64_t)-56, "int32 -> uint64 sign-extends");
    cv_val_unref(y);
    y = cast(x, CARVE_BOOL);
    OT_CHECK(y && ((uint8_t *)y->data)[0] == 1 && ((uint8_t *)y->data)[3] == 1, "int32 -> bool");
    cv_val_unref(y);
    cv_val *b = vec(CARVE_BOOL, 2);
    ((uint8_t *)b->data)[0] = 1;
    y = cast(b, CARVE_FLOAT);
    OT_CHECK(y && ((float *)y->data)[0] == 1.0f && ((float *)y->data)[1] == 0.0f, "bool -> float32 {1, 0}");
    cv_val_unref(y);
    cv_val_unref(b);
    cv_val_unref(x);
}

/* Reads every float8 code back: code -> float32 -> code is the identity on
 * every non-NaN code, for each of the four formats. */
static void test_float8(void)
{
    static const carve_dtype fmts[4] = {CARVE_FLOAT8E4M3FN, CARVE_FLOAT8E4M3FNUZ, CARVE_FLOAT8E5M2,
                                        CARVE_FLOAT8E5M2FNUZ};
    for (int f = 0; f < 4; f++) {
        cv_val *c = vec(fmts[f], 256);
        for (int i = 0; i < 256; i++)
            ((uint8_t *)c->data)[i] = (uint8_t)i;
        cv_val *x = cast(c, CARVE_FLOAT), *back = x ? cast(x, fmts[f]) : NULL;
        int bad = 0;
        for (int i = 0; back && i < 256; i++) {
            float v = ((float *)x->data)[i];
            if (isnan(v) || (isinf(v)))
                continue;
            if (((uint8_t *)back->data)[i] != i)
                bad++;
        }
        OT_CHECK(back && !bad, "%s -> float32 -> %s changed %d codes", carve_dtype_name(fmts[f]),
                 carve_dtype_name(fmts[f]), bad);
        cv_val_unref(c);
        cv_val_unref(x);
        cv_val_unref(back);
    }
    static const float in[] = {448, 464, 470, 500, INFINITY, -INFINITY, NAN, -0.0f, 0.001f, 240, 245, 250,
                               57344, 61440, 1e6f, -1e-10f, 1.0625f, 1.1875f};
    enum { NI = sizeof in / sizeof *in };
    static const struct {
        carve_dtype t;
        int sat;
        uint8_t want[NI];
    } table[] = {
        /* computed independently with exact fractions: nearest even on the code grid extended one
         * step past the largest finite value, which is the overflow */
        {CARVE_FLOAT8E4M3FN, 1, {0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0xfe, 0x7f, 0x80, 0x01, 0x77, 0x77, 0x78, 0x7e, 0x7e, 0x7e, 0x80, 0x38, 0x3a}},
        {CARVE_FLOAT8E4M3FN, 0, {0x7e, 0x7e, 0x7f, 0x7f, 0x7f, 0xff, 0x7f, 0x80, 0x01, 0x77, 0x77, 0x78, 0x7f, 0x7f, 0x7f, 0x80, 0x38, 0x3a}},
        {CARVE_FLOAT8E4M3FNUZ, 1, {0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff, 0x80, 0x00, 0x01, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x00, 0x40, 0x42}},
        {CARVE_FLOAT8E4M3FNUZ, 0, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 0x7f, 0x7f, 0x80, 0x80, 0x80, 0x80, 0x00, 0x40, 0x42}},
        {CARVE_FLOAT8E5M2, 1, {0x5f, 0x5f, 0x5f, 0x60, 0x7b, 0xfb, 0x7f, 0x80, 0x14, 0x5c, 0x5c, 0x5c, 0x7b, 0x7b, 0x7b, 0x80, 0x3c, 0x3d}},
        {CARVE_FLOAT8E5M2, 0, {0x5f, 0x5f, 0x5f, 0x60, 0x7c, 0xfc, 0x7f, 0x80, 0x14, 0x5c, 0x5c, 0x5c, 0x7b, 0x7c, 0x7c, 0x80, 0x3c, 0x3d}},
        {CARVE_FLOAT8E5M2FNUZ, 1, {0x63, 0x63, 0x63, 0x64, 0x7f, 0xff, 0x80, 0x00, 0x18, 0x60, 0x60, 0x60, 0x7f, 0x7f, 0x7f, 0x00, 0x40, 0x41}},
        {CARVE_FLOAT8E5M2FNUZ, 0, {0x63, 0x63, 0x63, 0x64, 0x80, 0x80, 0x80, 0x00, 0x18, 0x60, 0x60, 0x60, 0x7f, 0x80, 0x80, 0x00, 0x40, 0x41}},
    };
    cv_val *x = vec_f32(in, NI);
    for (size_t r = 0; r < N(table); r++) {
        cv_val *y = cast_sat(x, table[r].t, table[r].sat, NULL, 0);
        OT_CHECK(y && y->dtype == table[r].t, "float32 -> %s ran", carve_dtype_name(table[r].t));
        for (int i = 0; y && i < NI; i++) {
            uint8_t got = ((uint8_t *)y->data)[i];
            OT_CHECK(got == table[r].want[i], "float32 %g -> %s (saturate=%d): %02x, expected %02x", (double)in[i],
                     carve_dtype_name(table[r].t), table[r].sat, got, table[r].want[i]);
        }
        cv_val_unref(y);
    }
    cv_val_unref(x);
}

static void test_int4(void)
{
    static const float in[] = {2.5f, 3.5f, 7.5f, -8.5f, 9.0f, -1.0f, 17.0f, NAN, 0.4f, -0.6f};
    cv_val *x = vec_f32(in, N(in));
    cv_val *y = cast(x, CARVE_INT4);
    static const int want4[] = {2, 4, -8, -8, -7, -1, 1, 0, 0, -1};
    for (size_t i = 0; y && i < N(in); i++)
        OT_CHECK(cv_val_get_i64(y, i) == want4[i], "float32 %g -> int4: %lld, expected %d", (double)in[i],
                 (long long)cv_val_get_i64(y, i), want4[i]);
    OT_CHECK(y && y->nbytes == 5, "10 int4 take 5 bytes");
    cv_val_unref(y);
    y = cast(x, CARVE_UINT4);
    static const int wantu[] = {2, 4, 8, 8, 9, 15, 1, 0, 0, 15};
    for (size_t i = 0; y && i < N(in); i++)
        OT_CHECK(cv_val_get_i64(y, i) == wantu[i], "float32 %g -> uint4: %lld, expected %d", (double)in[i],
                 (long long)cv_val_get_i64(y, i), wantu[i]);
    cv_val_unref(y);
    cv_val_unref(x);
    /* every int4 code -> float32 exactly, and int8 -> uint4 keeps low bits */
    cv_val *c = vec(CARVE_INT4, 16);
    for (int i = 0; i < 16; i++)
        cv_val_set_i64(c, (size_t)i, i - 8);
    y = cast(c, CARVE_FLOAT);
    int bad = 0;
    for (int i = 0; y && i < 16; i++)
        bad += ((float *)y->data)[i] != (float)(i - 8);
    OT_CHECK(y && !bad, "int4 -> float32: %d wrong", bad);
    cv_val_unref(y);
    y = cast(c, CARVE_UINT4);
    OT_CHECK(y && cv_val_get_i64(y, 0) == 8 && cv_val_get_i64(y, 7) == 15, "int4 -> uint4 reinterprets 4 bits");
    cv_val_unref(y);
    cv_val_unref(c);
}

static void test_strings(void)
{
    /* numpy's str(): shortest digits that read back, positional in
     * [1e-4, 1e16) */
    static const float f[] = {0.1f, 1e-5f, 1e16f, 123456789.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-4f, 0.5f, 100.0f,
                              3.4028235e38f, 1.4e-45f, 16777216.0f, 0.039187793f};
    static const char *fs[] = {"0.1", "1e-05", "1e+16", "123456790.0", "-0.0", "nan", "inf", "-inf", "1e-04",
                               "0.5", "100.0", "3.4028235e+38", "1e-45", "16777216.0", "0.039187793"};
    cv_val *x = vec_f32(f, N(f));
    cv_val *y = cast(x, CARVE_STRING);
    OT_CHECK(y && y->dtype == CARVE_STRING, "float32 -> string ran");
    for (size_t i = 0; y && i < N(f); i++)
        OT_CHECK(!strcmp(((char **)y->data)[i], fs[i]), "float32 %g -> \"%s\", expected \"%s\"", (double)f[i],
                 ((char **)y->data)[i], fs[i]);
    cv_val_unref(y);
    cv_val_unref(x);
    static const double d[] = {1e-4, 0.1, 1.0 / 3, 5e-324, 1e300, 123456789.0};
    static const char *ds[] = {"0.0001", "0.1", "0.3333333333333333", "5e-324", "1e+300", "123456789.0"};
    x = vec_f64(d, N(d));
    y = cast(x, CARVE_STRING);
    for (size_t i = 0; y && i < N(d); i++)
        OT_CHECK(!strcmp(((char **)y->data)[i], ds[i]), "double %g -> \"%s\", expected \"%s\"", d[i],
                 ((char **)y->data)[i], ds[i]);
    cv_val_unref(y);
    cv_val_unref(x);
    cv_val *h = vec(CARVE_FLOAT16, 3);
    ((uint16_t *)h->data)[0] = 0x7bff; /* 65504 */
    ((uint16_t *)h->data)[1] = 0x2e66; /* 0.1 */
    ((uint16_t *)h->data)[2] = 0x0001; /* 2^-24 */
    y = cast(h, CARVE_STRING);
    OT_CHECK(y && !strcmp(((char **)y->data)[0], "65500.0") && !strcmp(((char **)y->data)[1], "0.1") &&
                 !strcmp(((char **)y->data)[2], "6e-08"),
             "float16 -> string as numpy (\"%s\" \"%s\" \"%s\")", y ? ((char **)y->data)[0] : "",
             y ? ((char **)y->data)[1] : "", y ? ((char **)y->data)[2] : "");
    cv_val_unref(y);
    cv_val_unref(h);
    cv_val *b = vec(CARVE_BOOL, 2);
    ((uint8_t *)b->data)[0] = 1;
    y = cast(b, CARVE_STRING);
    OT_CHECK(y && !strcmp(((char **)y->data)[0], "True") && !strcmp(((char **)y->data)[1], "False"),
             "bool -> \"True\"/\"False\"");
    cv_val_unref(y);
    cv_val_unref(b);

    /* parsing: the spec's literals in any case, plain and scientific */
    static const char *ss[] = {"INF", "+INF", "-INF", "NaN", "inf", "-Inf", "nan", "1e-5", "1E8", " 3.5 ", "0.1",
                               "3.4028236e38", "-0"};
    x = vec_str(ss, N(ss));
    y = cast(x, CARVE_FLOAT);
    OT_CHECK(y && y->dtype == CARVE_FLOAT, "string -> float32 ran");
    if (y) {
        float *v = y->data;
        OT_CHECK(v[0] == INFINITY && v[1] == INFINITY && v[2] == -INFINITY && isnan(v[3]) && v[4] == INFINITY &&
                     v[5] == -INFINITY && isnan(v[6]),
                 "INF/NaN literals");
        OT_CHECK(v[7] == 1e-5f && v[8] == 1e8f && v[9] == 3.5f && v[10] == 0.1f, "numbers parse to the nearest float");
        OT_CHECK(v[11] == INFINITY, "3.4028236e38 is above FLT_MAX's rounding range: inf");
        OT_CHECK(v[12] == 0 && signbit(v[12]), "\"-0\" is -0");
    }
    cv_val_unref(y);
    cv_val_unref(x);
    /* string -> float16 rounds the decimal once: 1.00048828125 is the exact
     * midpoint between 1 and 1+2^-10; a digit more decides */
    static const char *hs[] = {"1.00048828125", "1.000488281250000000000000001", "1.000488281249999999999999999",
                               "65520", "1e-8"};
    x = vec_str(hs, N(hs));
    y = cast(x, CARVE_FLOAT16);
    OT_CHECK(y && ((uint16_t *)y->data)[0] == 0x3c00 && ((uint16_t *)y->data)[1] == 0x3c01 &&
                 ((uint16_t *)y->data)[2] == 0x3c00 && ((uint16_t *)y->data)[3] == 0x7c00 &&
                 ((uint16_t *)y->data)[4] == 0,
             "string -> float16 rounds once");
    cv_val_unref(y);
    cv_val_unref(x);
    /* integers and bools */
    static const char *is[] = {"100", "-5", "100.5", "18446744073709551615", "1e3", "-2.7"};
    x = vec_str(is, N(is));
    y = cast(x, CARVE_INT64);
    OT_CHECK(y && ((int64_t *)y->data)[0] == 100 && ((int64_t *)y->data)[1] == -5 && ((int64_t *)y->data)[2] == 100 &&
                 ((int64_t *)y->data)[3] == -1 && ((int64_t *)y->data)[4] == 1000 && ((int64_t *)y->data)[5] == -2,
             "string -> int64");
    cv_val_unref(y);
    y = cast(x, CARVE_UINT8);
    OT_CHECK(y && ((uint8_t *)y->data)[1] == 251 && ((uint8_t *)y->data)[3] == 255, "string -> uint8 wraps");
    cv_val_unref(y);
    cv_val_unref(x);
    static const char *bs[] = {"True", "false", "0", "2.5", "nan"};
    x = vec_str(bs, N(bs));
    y = cast(x, CARVE_BOOL);
    OT_CHECK(y && ((uint8_t *)y->data)[0] == 1 && ((uint8_t *)y->data)[1] == 0 && ((uint8_t *)y->data)[2] == 0 &&
                 ((uint8_t *)y->data)[3] == 1 && ((uint8_t *)y->data)[4] == 1,
             "string -> bool");
    cv_val_unref(y);
    cv_val_unref(x);

    /* int64 <-> string round trips */
    static const int64_t iv[] = {0, 1, -1, INT64_MIN, INT64_MAX, 1234567890123456789, -987654321, 9007199254740993};
    x = vec(CARVE_INT64, N(iv));
    memcpy(x->data, iv, sizeof iv);
    y = cast(x, CARVE_STRING);
    OT_CHECK(y && !strcmp(((char **)y->data)[3], "-9223372036854775808") &&
                 !strcmp(((char **)y->data)[7], "9007199254740993"),
             "int64 -> string in decimal");
    cv_val *back = y ? cast(y, CARVE_INT64) : NULL;
    OT_CHECK(back && !memcmp(back->data, iv, sizeof iv), "int64 -> string -> int64 is the identity");
    cv_val_unref(back);
    cv_val_unref(y);
    cv_val_unref(x);
    cv_val *u = vec(CARVE_UINT64, 1);
    ((uint64_t *)u->data)[0] = UINT64_MAX;
    y = cast(u, CARVE_STRING);
    back = y ? cast(y, CARVE_UINT64) : NULL;
    OT_CHECK(y && !strcmp(((char **)y->data)[0], "18446744073709551615") && back &&
                 ((uint64_t *)back->data)[0] == UINT64_MAX,
             "uint64 max <-> string");
    cv_val_unref(back);
    cv_val_unref(y);
    cv_val_unref(u);

    /* not a number: an error naming the element */
    static const char *bad[] = {"1", "Hello World!"};
    x = vec_str(bad, 2);
    char err[512];
    y = cast_sat(x, CARVE_FLOAT, -1, err, sizeof err);
    OT_CHECK(!y && strstr(err, "node 'cast' (Cast): input 0 'x' element 1 is \"Hello World!\", not a number"),
             "error text: %s", err);
    cv_val_unref(y);
    cv_val_unref(x);
}

static void test_castlike_and_versions(void)
{
    float f[2] = {1.5f, -2.5f};
    cv_val *x = vec_f32(f, 2);
    /* CastLike takes its target from input 1 */
    onecast c;
    build(&c, x, CARVE_UNDEFINED, -1, 15, CARVE_INT32);
    cv_val *like = vec(CARVE_INT32, 1);
    cv_val *ins[2] = {x, like}, *out[1] = {NULL};
    carve_status s = ot_run(c.m, ins, out);
    OT_CHECK(!s && out[0] && out[0]->dtype == CARVE_INT32 && ((int32_t *)out[0]->data)[1] == -2,
             "CastLike float32 -> int32: %s", carve_errmsg(c.ctx));
    cv_val_unref(out[0]);
    drop(&c);
    cv_val_unref(like);
    /* Cast-1 names the type */
    build(&c, x, CARVE_INT32, -1, 1, CARVE_UNDEFINED);
    out[0] = NULL;
    s = ot_run(c.m, &x, out);
    OT_CHECK(!s && out[0] && out[0]->dtype == CARVE_INT32, "Cast-1 with to=\"int32\": %s", carve_errmsg(c.ctx));
    cv_val_unref(out[0]);
    drop(&c);
    /* a missing `to` */
    c.ctx = carve_ctx_new();
    c.m = carve_model_new(c.ctx);
    carve_model_set_opset(c.m, "", 13);
    carve_dim two = {2, NULL};
    carve_value_id xi = carve_graph_add_input(c.m, 0, "x", CARVE_FLOAT, 1, &two);
    const char *on[1] = {"y"};
    c.node = carve_graph_add_node(c.m, 0, "Cast", "", "c0", 1, &xi, 1, on);
    carve_graph_add_output(c.m, 0, carve_node_output(c.m, c.node, 0));
    out[0] = NULL;
    s = ot_run(c.m, &x, out);
    OT_CHECK(s && strstr(carve_errmsg(c.ctx), "node 'c0' (Cast): attribute 'to' is missing or not a known dtype"),
             "missing to: %s", carve_errmsg(c.ctx));
    cv_val_unref(out[0]);
    drop(&c);
    cv_val_unref(x);
}

static void test_inference(void)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 19);
    carve_dim d[2] = {{-1, "N"}, {3, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, d);
    carve_dim one = {1, NULL};
    carve_value_id like = carve_graph_add_input(m, 0, "like", CARVE_FLOAT16, 1, &one);
    const char *o1[1] = {"y"}, *o2[1] = {"z"};
    carve_node_id n1 = carve_graph_add_node(m, 0, "Cast", "", "c1", 1, &x, 1, o1);
    carve_node_set_attr_int(m, n1, "to", CARVE_INT64);
    carve_value_id ins[2] = {x, like};
    carve_node_id n2 = carve_graph_add_node(m, 0, "CastLike", "", "c2", 2, ins, 1, o2);
    carve_graph_add_output(m, 0, carve_node_output(m, n1, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, n2, 0));
    carve_status s = cv_infer_model(m, NULL);
    OT_CHECK(!s, "inference: %s", carve_errmsg(ctx));
    carve_value_id y = carve_node_output(m, n1, 0), z = carve_node_output(m, n2, 0);
    carve_dim y0 = carve_value_dim(m, y, 0), z1 = carve_value_dim(m, z, 1);
    OT_CHECK(carve_value_dtype(m, y) == CARVE_INT64 && carve_value_rank(m, y) == 2 && y0.param &&
                 !strcmp(y0.param, "N"),
             "Cast keeps the symbolic shape [N,3] and takes `to`");
    OT_CHECK(carve_value_dtype(m, z) == CARVE_FLOAT16 && z1.value == 3, "CastLike takes input 1's dtype");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

int main(void)
{
    test_uint8_to_float();
    test_f32_to_f16();
    test_inline_halves();
    test_single_rounding();
    test_float_to_int();
    test_int_to_int();
    test_float8();
    test_int4();
    test_strings();
    test_castlike_and_versions();
    test_inference();
    return ot_finish();
}

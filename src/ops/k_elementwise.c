/* k_elementwise.c: element-wise kernels: unary math and activations and
 * Clip, and the inference of the whole family. The binary arithmetic,
 * logic, comparison and bitwise ops with numpy broadcasting, PRelu, the
 * variadic Max/Min/Sum/Mean and Where are in k_binary.c.
 *
 * Numbers: float32 computes in float32, double in double, float16/bfloat16
 * in float32 rounded to nearest even on store; integers are exact and wrap
 * (two's complement) on overflow. Where the spec is silent, onnxruntime on
 * x86-64 decides:
 *   - integer Div/Mod by zero is an error (onnxruntime traps); INT_MIN / -1
 *     wraps to INT_MIN and INT_MIN % -1 is 0;
 *   - BitShift by the width or more gives 0;
 *   - Sign(NaN) is 0; Max/Min propagate NaN (as numpy and onnxruntime 1.15+);
 *   - integer Pow is exact when the result fits, else, like onnxruntime,
 *     the double result converted by the x86 rules of k_elementwise.h
 *     (negative exponents too: 2^-1 is 0).
 *
 * The hot path is contiguous float32: plain loops the compiler
 * vectorizes. */
#include "k_elementwise.h"

#include <float.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width ("very cheap" cost model); the float loops here are
 * the hot path of real models. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* tgmath.h makes exp(), pow()... pick float or double by the argument, so
 * one expression list serves the float32 and double kernels. */

#define SQRT1_2 0.70710678118654752440
#define SQRT_2_OVER_PI 0.79788456080286535588

/* ---------------------------------------------------------------- op codes */

/* op-list: data (the family's rows mapped to their kernel variant) */
static const struct {
    const char *name;
    ew_op op;
} op_names[] = {
    {"Abs", U_ABS}, {"Acos", U_ACOS}, {"Acosh", U_ACOSH}, {"Asin", U_ASIN}, {"Asinh", U_ASINH},
    {"Atan", U_ATAN}, {"Atanh", U_ATANH}, {"Ceil", U_CEIL}, {"Cos", U_COS}, {"Cosh", U_COSH},
    {"Erf", U_ERF}, {"Exp", U_EXP}, {"Floor", U_FLOOR}, {"IsInf", U_ISINF}, {"IsNaN", U_ISNAN},
    {"Log", U_LOG}, {"Neg", U_NEG}, {"Not", U_NOT}, {"Reciprocal", U_RECIPROCAL}, {"Round", U_ROUND},
    {"Sigmoid", U_SIGMOID}, {"Sign", U_SIGN}, {"Sin", U_SIN}, {"Sinh", U_SINH}, {"Softplus", U_SOFTPLUS},
    {"Softsign", U_SOFTSIGN}, {"Sqrt", U_SQRT}, {"Tan", U_TAN}, {"Tanh", U_TANH}, {"Relu", U_RELU},
    {"LeakyRelu", U_LEAKYRELU}, {"ThresholdedRelu", U_THRESHOLDEDRELU}, {"Shrink", U_SHRINK},
    {"BitwiseNot", U_BITWISENOT}, {"Elu", U_ELU}, {"Celu", U_CELU}, {"Selu", U_SELU},
    {"HardSigmoid", U_HARDSIGMOID}, {"HardSwish", U_HARDSWISH}, {"Gelu", U_GELU}, {"Mish", U_MISH},
    {"Add", B_ADD}, {"Sub", B_SUB}, {"Mul", B_MUL}, {"Div", B_DIV}, {"Pow", B_POW}, {"Mod", B_MOD},
    {"And", B_AND}, {"Or", B_OR}, {"Xor", B_XOR}, {"BitShift", B_SHL}, {"BitwiseAnd", B_BAND},
    {"BitwiseOr", B_BOR}, {"BitwiseXor", B_BXOR}, {"Equal", B_EQ}, {"Greater", B_GT},
    {"GreaterOrEqual", B_GE}, {"Less", B_LT}, {"LessOrEqual", B_LE}, {"Max", B_MAX}, {"Min", B_MIN},
    {"PRelu", B_PRELU}, {"Sum", V_SUM}, {"Mean", V_MEAN},
};

ew_op ew_op_of(const cv_kctx *k)
{
    const char *name = k->m->nodes[k->node].op;
    for (size_t i = 0; i < sizeof op_names / sizeof *op_names; i++)
        if (!strcmp(op_names[i].name, name))
            return op_names[i].op;
    return OP_NONE;
}

carve_status ew_need_tensor(cv_kctx *k, const cv_val *v, uint32_t i)
{
    if (v->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input %u '%s' is not a tensor", i, cv_ew_in_name(k, i));
    return CARVE_OK;
}

carve_status ew_bad_type(cv_kctx *k, uint32_t i, carve_dtype t)
{
    return cv_kerr(k, "input %u '%s' is %s, which %s does not take", i, cv_ew_in_name(k, i), carve_dtype_name(t),
                   k->m->nodes[k->node].op);
}

/* A float16/bfloat16 tensor as a new float32 one. */
cv_val *ew_half_to_f32(const cv_val *x)
{
    cv_val *f = cv_val_new_uninit(CARVE_FLOAT, x->rank, x->dims);
    if (f)
        cv_ew_half_to_f32(x->data, f->data, x->nelem, x->dtype);
    return f;
}

cv_val *ew_f32_to_half(const cv_val *f, carve_dtype t)
{
    cv_val *x = cv_val_new_uninit(t, f->rank, f->dims);
    if (x)
        cv_ew_f32_to_half(f->data, x->data, f->nelem, t);
    return x;
}

/* ================================================================ unary */

typedef struct {
    float a, b; /* alpha/lambd/detect_negative, beta/gamma/bias/detect_positive */
} upar;

static inline float clamp01f(float t) { return t < 0 ? 0 : t > 1 ? 1 : t; }
static inline double clamp01d(double t) { return t < 0 ? 0 : t > 1 ? 1 : t; }
#define CLAMP01(t) _Generic((t), float: clamp01f, default: clamp01d)(t)


/* Every float unary op as an expression of v (the element), a and b (the
 * parameters) and T (the compute type). NaN stays NaN except in Sign.
 * Functions are evaluated on both sides of a sign test (on a clamped
 * argument) and the result selected: with mixed signs, a branch around a
 * libm call mispredicts about half the time and costs more than the call.
 * 1 / (1 + exp(-v)) is exact enough everywhere: exp overflows to inf for
 * v < -88 and the quotient goes to 0. */
#define UNARY_FLOAT_OPS(X)                                                            \
    X(U_ABS, fabs(v))                                                                 \
    X(U_ACOS, acos(v))                                                                \
    X(U_ACOSH, acosh(v))                                                              \
    X(U_ASIN, asin(v))                                                                \
    X(U_ASINH, asinh(v))                                                              \
    X(U_ATAN, atan(v))                                                                \
    X(U_ATANH, atanh(v))                                                              \
    X(U_CEIL, ceil(v))                                                                \
    X(U_COS, cos(v))                                                                  \
    X(U_COSH, cosh(v))                                                                \
    X(U_ERF, erf(v))                                                                  \
    X(U_EXP, exp(v))                                                                  \
    X(U_FLOOR, floor(v))                                                              \
    X(U_LOG, log(v))                                                                  \
    X(U_NEG, -v)                                                                      \
    X(U_RECIPROCAL, 1 / v)                                                            \
    X(U_ROUND, nearbyint(v))                                                          \
    X(U_SIGMOID, 1 / (1 + exp(-v)))                                                   \
    X(U_SIGN, v > 0 ? 1 : v < 0 ? -1 : 0)                                             \
    X(U_SIN, sin(v))                                                                  \
    X(U_SINH, sinh(v))                                                                \
    X(U_SOFTPLUS, (v > 0 ? v : 0) + log1p(exp(-fabs(v))))                             \
    X(U_SOFTSIGN, v / (1 + fabs(v)))                                                  \
    X(U_SQRT, sqrt(v))                                                                \
    X(U_TAN, tan(v))                                                                  \
    X(U_TANH, tanh(v))                                                                \
    X(U_RELU, v < 0 ? 0 : v)                                                          \
    X(U_LEAKYRELU, v < 0 ? a * v : v)                                                 \
    X(U_THRESHOLDEDRELU, v > a ? v : 0)                                               \
    X(U_SHRINK, v < -a ? v + b : v > a ? v - b : 0)                                   \
    X(U_ELU, v < 0 ? a * expm1(v < 0 ? v : 0) : v)                                    \
    X(U_CELU, v < 0 ? a * expm1((v < 0 ? v : 0) / a) : v)                             \
    X(U_SELU, v <= 0 ? b * (a * exp(v < 0 ? v : 0) - a) : b * v)                      \
    X(U_HARDSIGMOID, CLAMP01(a * v + b))                                              \
    X(U_HARDSWISH, v * CLAMP01(v * (T)(1.0 / 6) + (T)0.5))                            \
    X(U_GELU, (T)0.5 * v * (1 + erf(v * (T)SQRT1_2)))                                 \
    X(U_GELU_TANH, (T)0.5 * v * (1 + tanh((T)SQRT_2_OVER_PI * (v + (T)0.044715 * v * v * v)))) \
    X(U_MISH, v * tanh((v > 0 ? v : 0) + log1p(exp(-fabs(v)))))

#define UNARY_CASE(OP, E)                   \
    case OP:                                \
        for (size_t i = 0; i < n; i++) {    \
            const T v = x[i];               \
            y[i] = (T)(E);                  \
        }                                   \
        break;

/* un_f32 and un_f64: one body, two element types. */
#define DEF_FLOAT_UN(NAME, TT)                                                          \
    static void NAME(ew_op op, const TT *restrict x, TT *restrict y, size_t n, upar p) \
    {                                                                                   \
        typedef TT T;                                                                   \
        const T a = p.a, b = p.b;                                                       \
        switch (op) {                                                                   \
            UNARY_FLOAT_OPS(UNARY_CASE)                                                 \
        default: break;                                                                 \
        }                                                                               \
    }

DEF_FLOAT_UN(un_f32, float)
DEF_FLOAT_UN(un_f64, double)
#undef DEF_FLOAT_UN
#undef UNARY_CASE

/* IsInf / IsNaN on float32 or double values. */
#define TEST_LOOP(T)                                                                              \
    for (size_t i = 0; i < n; i++) {                                                              \
        const T v = x[i];                                                                         \
        y[i] = op == U_ISNAN ? v != v : (v == (T)INFINITY && p.b != 0) || (v == -(T)INFINITY && p.a != 0); \
    }
static void test_f32(ew_op op, const float *restrict x, uint8_t *restrict y, size_t n, upar p) { TEST_LOOP(float) }
static void test_f64(ew_op op, const double *restrict x, uint8_t *restrict y, size_t n, upar p) { TEST_LOOP(double) }
#undef TEST_LOOP

/* Integer ops on int64 carriers; uns: the dtype is unsigned. */
static void un_int(ew_op op, int64_t *v, size_t n, bool uns, upar p, carve_dtype t)
{
    for (size_t i = 0; i < n; i++) {
        int64_t x = v[i];
        bool neg = !uns && x < 0;
        switch (op) {
        case U_ABS: v[i] = neg ? (int64_t)(0 - (uint64_t)x) : x; break;
        case U_NEG: v[i] = (int64_t)(0 - (uint64_t)x); break;
        case U_SIGN: v[i] = neg ? -1 : x != 0; break;
        case U_RELU: v[i] = neg ? 0 : x; break;
        case U_BITWISENOT: v[i] = ~x; break;
        case U_NOT: v[i] = x == 0; break;
        case U_SHRINK: {
            double d = uns ? (double)(uint64_t)x : (double)x;
            double r = d < -p.a ? d + p.b : d > p.a ? d - p.b : 0;
            v[i] = (int64_t)cv_x86_int_bits(r, t);
            break;
        }
        default: break;
        }
    }
}

static bool unary_takes(ew_op op, carve_dtype t)
{
    switch (op) {
    case U_NOT: return t == CARVE_BOOL;
    case U_BITWISENOT: return ew_is_cint(t);
    case U_ISINF: case U_ISNAN: return ew_is_fp(t);
    case U_ABS: case U_NEG: case U_SIGN: case U_RELU: case U_SHRINK: return ew_is_fp(t) || ew_is_cint(t);
    default: return ew_is_fp(t);
    }
}

static upar unary_params(cv_kctx *k, ew_op *op)
{
    const carve_model *m = k->m;
    carve_node_id n = k->node;
    upar p = {0, 0};
    switch (*op) {
    case U_LEAKYRELU: p.a = cv_attr_f(m, n, "alpha", 0.01f); break;
    case U_THRESHOLDEDRELU: case U_ELU: case U_CELU: p.a = cv_attr_f(m, n, "alpha", 1.0f); break;
    case U_SHRINK:
        p.a = cv_attr_f(m, n, "lambd", 0.5f);
        p.b = cv_attr_f(m, n, "bias", 0.0f);
        break;
    case U_SELU:
        p.a = cv_attr_f(m, n, "alpha", 1.67326319217681884765625f);
        p.b = cv_attr_f(m, n, "gamma", 1.05070102214813232421875f);
        break;
    case U_HARDSIGMOID:
        p.a = cv_attr_f(m, n, "alpha", 0.2f);
        p.b = cv_attr_f(m, n, "beta", 0.5f);
        break;
    case U_ISINF:
        p.a = (float)(cv_attr_i(m, n, "detect_negative", 1) != 0);
        p.b = (float)(cv_attr_i(m, n, "detect_positive", 1) != 0);
        break;
    case U_GELU:
        if (!strcmp(cv_attr_s(m, n, "approximate", "none"), "tanh"))
            *op = U_GELU_TANH;
        break;
    default: break;
    }
    return p;
}

carve_status k_unary(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    carve_status s = ew_need_tensor(k, x, 0);
    if (s)
        return s;
    ew_op op = ew_op_of(k);
    if (op == OP_NONE || op >= B_ADD)
        return cv_kerr(k, "not an element-wise unary op");
    if (!unary_takes(op, x->dtype))
        return ew_bad_type(k, 0, x->dtype);
    if (op == U_GELU) {
        const char *ap = cv_attr_s(k->m, k->node, "approximate", "none");
        if (strcmp(ap, "none") && strcmp(ap, "tanh"))
            return cv_kerr(k, "attribute 'approximate' is \"%s\", expected \"none\" or \"tanh\"", ap);
    }
    upar p = unary_params(k, &op);
    bool test = op == U_ISINF || op == U_ISNAN;
    /* every dtype unary_takes admits has a loop writing all elements */
    cv_val *y = cv_val_new_uninit(test ? CARVE_BOOL : x->dtype, x->rank, x->dims);
    if (!y)
        return cv_knomem(k);
    size_t n = x->nelem;
    switch (x->dtype) {
    case CARVE_FLOAT:
        if (test)
            test_f32(op, x->data, y->data, n, p);
        else
            un_f32(op, x->data, y->data, n, p);
        break;
    case CARVE_DOUBLE:
        if (test)
            test_f64(op, x->data, y->data, n, p);
        else
            un_f64(op, x->data, y->data, n, p);
        break;
    case CARVE_FLOAT16: case CARVE_BFLOAT16: {
        float a[EW_CHUNK], b[EW_CHUNK];
        for (size_t off = 0; off < n; off += EW_CHUNK) {
            size_t m = n - off < EW_CHUNK ? n - off : EW_CHUNK;
            cv_ew_half_to_f32((const uint16_t *)x->data + off, a, m, x->dtype);
            if (test) {
                test_f32(op, a, (uint8_t *)y->data + off, m, p);
            } else {
                un_f32(op, a, b, m, p);
                cv_ew_f32_to_half(b, (uint16_t *)y->data + off, m, x->dtype);
            }
        }
        break;
    }
    default: {
        int64_t v[EW_CHUNK];
        bool uns = ew_is_unsigned(x->dtype);
        for (size_t off = 0; off < n; off += EW_CHUNK) {
            size_t m = n - off < EW_CHUNK ? n - off : EW_CHUNK;
            cv_ew_load_ints(x, off, m, v);
            un_int(op, v, m, uns, p, x->dtype);
            cv_ew_store_ints(y, off, m, v);
        }
        break;
    }
    }
    out[0] = y;
    return CARVE_OK;
}

/* ================================================================ Clip */

/* Bounds of a float type when min/max are omitted (numeric_limits). */
static double float_limit(carve_dtype t)
{
    switch (t) {
    case CARVE_DOUBLE: return DBL_MAX;
    case CARVE_FLOAT16: return 65504.0;
    case CARVE_BFLOAT16: return 3.3895313892515355e38;
    default: return FLT_MAX;
    }
}

static carve_status clip_bound(cv_kctx *k, cv_val **in, uint32_t n_in, uint32_t i, const cv_val *x, const cv_val **b)
{
    *b = i < n_in ? in[i] : NULL;
    if (!*b)
        return CARVE_OK;
    carve_status s = ew_need_tensor(k, *b, i);
    if (s)
        return s;
    if ((*b)->nelem != 1)
        return cv_kerr(k, "input %u '%s' must be a scalar, it has %zu elements", i, cv_ew_in_name(k, i),
                       (*b)->nelem);
    if ((*b)->dtype != x->dtype)
        return cv_kerr(k, "input %u '%s' is %s but input 0 '%s' is %s", i, cv_ew_in_name(k, i),
                       carve_dtype_name((*b)->dtype), cv_ew_in_name(k, 0), carve_dtype_name(x->dtype));
    return CARVE_OK;
}

#define CLIP_LOOP(T)                           \
    for (size_t i = 0; i < n; i++) {           \
        T t_ = a[i] < lo ? lo : a[i];          \
        c[i] = t_ > hi ? hi : t_;              \
    }
static void clip_f32(const float *restrict a, float *restrict c, size_t n, float lo, float hi) { CLIP_LOOP(float) }
static void clip_f64(const double *restrict a, double *restrict c, size_t n, double lo, double hi) { CLIP_LOOP(double) }
#undef CLIP_LOOP

carve_status k_clip(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    carve_status s = ew_need_tensor(k, x, 0);
    if (s)
        return s;
    if (!ew_is_fp(x->dtype) && !ew_is_cint(x->dtype))
        return ew_bad_type(k, 0, x->dtype);
    const cv_val *bmin = NULL, *bmax = NULL;
    double lo, hi;
    if (k->opset < 11) {
        lo = cv_attr_f(k->m, k->node, "min", -FLT_MAX);
        hi = cv_attr_f(k->m, k->node, "max", FLT_MAX);
        if (!ew_is_fp(x->dtype))
            return ew_bad_type(k, 0, x->dtype);
    } else {
        if ((s = clip_bound(k, in, n_in, 1, x, &bmin)) || (s = clip_bound(k, in, n_in, 2, x, &bmax)))
            return s;
        lo = bmin && ew_is_fp(x->dtype) ? cv_val_get_f64(bmin, 0) : -float_limit(x->dtype);
        hi = bmax && ew_is_fp(x->dtype) ? cv_val_get_f64(bmax, 0) : float_limit(x->dtype);
    }
    cv_val *y = cv_val_new_uninit(x->dtype, x->rank, x->dims);
    if (!y)
        return cv_knomem(k);
    size_t n = x->nelem;
    if (x->dtype == CARVE_FLOAT) {
        clip_f32(x->data, y->data, n, (float)lo, (float)hi);
    } else if (x->dtype == CARVE_DOUBLE) {
        clip_f64(x->data, y->data, n, lo, hi);
    } else if (ew_is_half(x->dtype)) {
        float a[EW_CHUNK], c[EW_CHUNK];
        for (size_t off = 0; off < n; off += EW_CHUNK) {
            size_t m = n - off < EW_CHUNK ? n - off : EW_CHUNK;
            cv_ew_half_to_f32((const uint16_t *)x->data + off, a, m, x->dtype);
            clip_f32(a, c, m, (float)lo, (float)hi);
            cv_ew_f32_to_half(c, (uint16_t *)y->data + off, m, x->dtype);
        }
    } else {
        bool uns = ew_is_unsigned(x->dtype);
        int64_t ilo = uns ? 0 : INT64_MIN, ihi = uns ? -1 : INT64_MAX, v[EW_CHUNK];
        if (bmin)
            cv_ew_load_ints(bmin, 0, 1, &ilo);
        if (bmax)
            cv_ew_load_ints(bmax, 0, 1, &ihi);
        for (size_t off = 0; off < n; off += EW_CHUNK) {
            size_t m = n - off < EW_CHUNK ? n - off : EW_CHUNK;
            cv_ew_load_ints(x, off, m, v);
            for (size_t i = 0; i < m; i++) {
                int64_t t = v[i];
                if (uns) {
                    t = (uint64_t)t < (uint64_t)ilo ? ilo : t;
                    t = (uint64_t)t > (uint64_t)ihi ? ihi : t;
                } else {
                    t = t < ilo ? ilo : t;
                    t = t > ihi ? ihi : t;
                }
                v[i] = t;
            }
            cv_ew_store_ints(y, off, m, v);
        }
    }
    out[0] = y;
    return CARVE_OK;
}

/* ================================================================ inference */

carve_status i_bcast(cv_ictx *c);
carve_status i_bcast_bool(cv_ictx *c);

/* "[N,3,?]" for a type's (possibly symbolic) shape. */
static void fmt_type_shape(char *buf, size_t sz, const cv_type *t)
{
    size_t o = (size_t)snprintf(buf, sz, "[");
    for (int i = 0; i < t->rank && o < sz; i++) {
        const carve_dim *d = &t->dims[i];
        if (d->value >= 0)
            o += (size_t)snprintf(buf + o, sz - o, i ? ",%lld" : "%lld", (long long)d->value);
        else
            o += (size_t)snprintf(buf + o, sz - o, i ? ",%s" : "%s", d->param ? d->param : "?");
    }
    if (o < sz)
        snprintf(buf + o, sz - o, "]");
}

/* The first of inputs (first, last] whose dtype is known and not input
 * first's (known too); 0 when none. */
static uint32_t other_dtype(cv_ictx *c, uint32_t first, uint32_t last)
{
    const cv_node *n = &c->m->nodes[c->node];
    const cv_type *t0 = cv_infer_in(c, first);
    for (uint32_t i = first + 1; i <= last && i < n->n_in; i++) {
        const cv_type *t = cv_infer_in(c, i);
        if (t0 && t && t0->kind == CARVE_TYPE_TENSOR && t->kind == CARVE_TYPE_TENSOR && t0->dtype && t->dtype &&
            t0->dtype != t->dtype)
            return i;
    }
    return 0;
}

static carve_status dtype_err(cv_ictx *c, uint32_t first, uint32_t i)
{
    const cv_node *n = &c->m->nodes[c->node];
    return cv_ierr(c, "input %u '%s' is %s but input %u '%s' is %s", i, c->m->values[n->in[i]].name,
                   carve_dtype_name(c->m->values[n->in[i]].type.dtype), first, c->m->values[n->in[first]].name,
                   carve_dtype_name(c->m->values[n->in[first]].type.dtype));
}

/* Inputs [first, last] must share a dtype where known. */
static carve_status same_dtypes(cv_ictx *c, uint32_t first, uint32_t last)
{
    uint32_t i = other_dtype(c, first, last);
    return i ? dtype_err(c, first, i) : CARVE_OK;
}

static carve_status binary_infer(cv_ictx *c, bool to_bool)
{
    uint32_t i = other_dtype(c, 0, 1);
    if (i && strcmp(c->m->nodes[c->node].op, "Pow")) /* Pow's exponent may be of another type */
        return dtype_err(c, 0, i);
    if (c->opset < 7 && cv_attr_i(c->m, c->node, "broadcast", 0))
        return cv_infer_like(c, 0, 0, to_bool ? CARVE_BOOL : CARVE_UNDEFINED);
    return to_bool ? i_bcast_bool(c) : i_bcast(c);
}

carve_status i_binary(cv_ictx *c) { return binary_infer(c, false); }
carve_status i_binary_bool(cv_ictx *c) { return binary_infer(c, true); }

carve_status i_variadic(cv_ictx *c)
{
    carve_status s = same_dtypes(c, 0, c->m->nodes[c->node].n_in - 1);
    return s ? s : i_bcast(c);
}

/* PRelu: Y is X's shape; slope must broadcast to it one way. */
carve_status i_prelu(cv_ictx *c)
{
    carve_status s = same_dtypes(c, 0, 1);
    if (s)
        return s;
    const cv_type *x = cv_infer_in(c, 0), *sl = cv_infer_in(c, 1);
    if (x && sl && x->kind == CARVE_TYPE_TENSOR && sl->kind == CARVE_TYPE_TENSOR && x->rank >= 0 && sl->rank >= 0) {
        bool ok = sl->rank <= x->rank;
        for (int i = 0; ok && i < sl->rank; i++) {
            carve_dim d = sl->dims[sl->rank - 1 - i], e = x->dims[x->rank - 1 - i];
            ok = d.value == 1 || d.value < 0 || e.value < 0 || d.value == e.value;
        }
        if (!ok) {
            char a[300], b[300];
            fmt_type_shape(a, sizeof a, sl);
            fmt_type_shape(b, sizeof b, x);
            return cv_ierr(c, "input 1 'slope' of shape %s does not broadcast to X's shape %s", a, b);
        }
    }
    return cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
}

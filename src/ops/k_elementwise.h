/* k_elementwise.h: number conversions shared by the element-wise kernels
 * (k_elementwise.c, k_binary.c), Cast (k_cast.c) and the decompositions
 * (d_elementwise.c), and what the two element-wise kernel files share.
 * Private to the element-wise family. */
#ifndef CARVE_K_ELEMENTWISE_H
#define CARVE_K_ELEMENTWISE_H

#include "ops.h"

#include <string.h>

/* ---------------------------------------------------------------- float -> integer
 *
 * The spec leaves NaN and out-of-range float -> integer conversions
 * undefined. carve gives what onnxruntime gives on x86-64, where they are a
 * C++ static_cast compiled by GCC, spelled out here without C undefined
 * behaviour:
 *   - to int32: cvttsd2si (32-bit): truncation toward zero; NaN or a result
 *     outside [INT32_MIN, INT32_MAX] gives INT32_MIN ("integer indefinite").
 *   - to int8, uint8, int16, uint16: converted to int32 as above, then the
 *     low 8/16 bits are kept (so 300.7 -> uint8 44, -1.5 -> uint8 255,
 *     NaN -> 0).
 *   - to int64: cvttsd2si (64-bit): NaN or out of range gives INT64_MIN.
 *   - to uint32: converted to int64, low 32 bits kept (1e10 -> 1410065408).
 *   - to uint64: GCC's sequence: x below 2^63, or NaN (comisd reports
 *     unordered as "below"), converts as int64; otherwise x - 2^63 converts
 *     as int64 and bit 63 is flipped. So NaN -> 2^63, -inf -> 2^63,
 *     +inf -> 0, 2e19 -> 0, -1.5 -> 2^64 - 1.
 *   - to bool: x != 0 (NaN -> true).
 * The same rules hold for float32 sources (cvttss2si truncates the same real
 * value). */
static inline int32_t cv_x86_i32(double x)
{
    if (x > -2147483649.0 && x < 2147483648.0)
        return (int32_t)x;
    return INT32_MIN;
}

static inline int64_t cv_x86_i64(double x)
{
    if (x >= -0x1p63 && x < 0x1p63)
        return (int64_t)x;
    return INT64_MIN;
}

static inline uint64_t cv_x86_u64(double x)
{
    if (!(x >= 0x1p63)) /* NaN lands here too */
        return (uint64_t)cv_x86_i64(x);
    return (uint64_t)cv_x86_i64(x - 0x1p63) ^ ((uint64_t)1 << 63);
}

/* The bits (to be truncated to the width of t) of float x converted to
 * integer dtype t by the rules above. */
static inline uint64_t cv_x86_int_bits(double x, carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_UINT8: case CARVE_INT16: case CARVE_UINT16: case CARVE_INT32:
        return (uint64_t)(int64_t)cv_x86_i32(x);
    case CARVE_UINT64:
        return cv_x86_u64(x);
    default: /* INT64, UINT32 */
        return (uint64_t)cv_x86_i64(x);
    }
}

/* ---------------------------------------------------------------- small floats
 *
 * Exact round-to-nearest-even of a double into float16, bfloat16 and the
 * four float8 formats (opset 19 `saturate` rules for float8). */
/* cv_f64_to_f16, cv_f64_to_bf16, cv_f64_to_f8 (src/ops/half.c) */

/* Input i's value name, for error messages ("" when omitted). */
static inline const char *cv_ew_in_name(const cv_kctx *k, uint32_t i)
{
    const cv_node *n = &k->m->nodes[k->node];
    return i < n->n_in && n->in[i] != CARVE_NONE ? k->m->values[n->in[i]].name : "";
}

/* float16/bfloat16 <-> float32, bit-exact with half.c's cv_f16_to_f32,
 * cv_f32_to_f16 (round to nearest even, NaN kept quiet with its top payload
 * bits) and the bfloat16 pair, but inline and branch-free so loops over
 * them vectorize (test_cast checks them against half.c on every float16
 * and on crafted float32 patterns). The float16 ones follow F. Giesen's
 * well-known bit tricks: subnormals are rounded by the FPU itself, adding
 * 0.5f (whose exponent aligns the float16 subnormal grid to float32's last
 * mantissa bit) or subtracting 2^-14 after renormalising. */
static inline uint32_t cv_ew_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float cv_ew_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float cv_ew_h2f(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fff) << 13, e = o & 0x0f800000u;
    uint32_t n = o + ((uint32_t)(127 - 15) << 23);                  /* normal */
    uint32_t i = o + ((uint32_t)(255 - 31) << 23);                  /* inf, NaN */
    uint32_t s = cv_ew_bits(cv_ew_float(o + (113u << 23)) - 0x1p-14f); /* subnormal, zero */
    uint32_t r = e == 0x0f800000u ? i : e == 0 ? s : n;
    return cv_ew_float(r | (uint32_t)(h & 0x8000) << 16);
}

static inline uint16_t cv_ew_f2h(float f)
{
    uint32_t u = cv_ew_bits(f), x = u & 0x7fffffffu;
    uint32_t n = (x + 0xc8000fffu + ((x >> 13) & 1)) >> 13;       /* normal: rebias, round */
    uint32_t s = cv_ew_bits(cv_ew_float(x) + 0.5f) - 0x3f000000u; /* below 2^-14 */
    uint32_t i = x > 0x7f800000u ? 0x7e00 | ((x >> 13) & 0x3ff) : 0x7c00;
    uint32_t r = x < 0x38800000u ? s : n;
    r = x >= 0x47800000u ? i : r;
    return (uint16_t)(r | ((u >> 16) & 0x8000));
}

static inline float cv_ew_b2f(uint16_t h) { return cv_ew_float((uint32_t)h << 16); }

static inline uint16_t cv_ew_f2b(float f)
{
    uint32_t u = cv_ew_bits(f);
    uint16_t r = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
    return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40) : r;
}

/* Contiguous float32 <-> float16/bfloat16 conversion of n elements. */
void cv_ew_half_to_f32(const uint16_t *src, float *dst, size_t n, carve_dtype t);
void cv_ew_f32_to_half(const float *src, uint16_t *dst, size_t n, carve_dtype t);

/* Chunks of n elements from offset off, through exact carriers: integer
 * and bool tensors as int64 (uint64 as its bits, int4/uint4 unpacked),
 * float tensors (any float type) as double. Stores truncate to the width. */
void cv_ew_load_ints(const cv_val *x, size_t off, size_t n, int64_t *iv);
void cv_ew_store_ints(cv_val *y, size_t off, size_t n, const int64_t *iv);
void cv_ew_load_floats(const cv_val *x, size_t off, size_t n, double *dv);

/* ---------------------------------------------------------------- the element-wise kernels
 *
 * What k_elementwise.c (unary, Clip, inference) and k_binary.c (binary,
 * variadic, Where) share. */

typedef enum {
    U_ABS, U_ACOS, U_ACOSH, U_ASIN, U_ASINH, U_ATAN, U_ATANH, U_CEIL, U_COS, U_COSH, U_ERF, U_EXP, U_FLOOR,
    U_ISINF, U_ISNAN, U_LOG, U_NEG, U_NOT, U_RECIPROCAL, U_ROUND, U_SIGMOID, U_SIGN, U_SIN, U_SINH, U_SOFTPLUS,
    U_SOFTSIGN, U_SQRT, U_TAN, U_TANH, U_RELU, U_LEAKYRELU, U_THRESHOLDEDRELU, U_SHRINK, U_BITWISENOT, U_ELU,
    U_CELU, U_SELU, U_HARDSIGMOID, U_HARDSWISH, U_GELU, U_GELU_TANH, U_MISH,
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MOD, B_FMOD, B_AND, B_OR, B_XOR, B_SHL, B_SHR, B_BAND, B_BOR, B_BXOR,
    B_EQ, B_GT, B_GE, B_LT, B_LE, B_MAX, B_MIN, B_PRELU, V_SUM, V_MEAN,
    OP_NONE
} ew_op;

/* The kernel variant of node k's op (OP_NONE for an op of another family). */
ew_op ew_op_of(const cv_kctx *k);

static inline bool ew_is_half(carve_dtype t) { return t == CARVE_FLOAT16 || t == CARVE_BFLOAT16; }
static inline bool ew_is_fp(carve_dtype t) { return t == CARVE_FLOAT || t == CARVE_DOUBLE || ew_is_half(t); }
static inline bool ew_is_unsigned(carve_dtype t)
{
    return t == CARVE_UINT8 || t == CARVE_UINT16 || t == CARVE_UINT32 || t == CARVE_UINT64 || t == CARVE_UINT4;
}
/* Integer types with a C type of their own (not 4-bit). */
static inline bool ew_is_cint(carve_dtype t) { return cv_dtype_is_int(t) && t != CARVE_INT4 && t != CARVE_UINT4; }

/* Elements per chunk of the loops that go through a carrier type. */
enum { EW_CHUNK = 512 };

/* "input I 'NAME' is not a tensor" / "... is TYPE, which OP does not
 * take", as kernel errors. */
carve_status ew_need_tensor(cv_kctx *k, const cv_val *v, uint32_t i);
carve_status ew_bad_type(cv_kctx *k, uint32_t i, carve_dtype t);
/* A float16/bfloat16 tensor as a new float32 one, and back. NULL on NOMEM. */
cv_val *ew_half_to_f32(const cv_val *x);
cv_val *ew_f32_to_half(const cv_val *f, carve_dtype t);

#endif /* CARVE_K_ELEMENTWISE_H */

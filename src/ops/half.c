/* half.c: float16, bfloat16 and float8 conversions, round to nearest even,
 * without C undefined behaviour (bit patterns moved through memcpy). */
#include "ops.h"

#include <math.h>
#include <string.h>

static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float cv_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return u2f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (!man)
            return u2f(sign);
        /* subnormal: value = man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return u2f(sign | ((exp + 112) << 23) | (man << 13));
}


float cv_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }


/* float8 formats: exponent bits, mantissa bits, bias, and whether the format
 * has no infinities and one NaN (FN: 0x7f/0xff) or NaN only at 0x80 (FNUZ). */
typedef struct {
    int ebits, mbits, bias;
    bool fn, uz;
} f8fmt;

static f8fmt fmt_of(carve_dtype t)
{
    switch (t) {
    case CARVE_FLOAT8E4M3FN: return (f8fmt){4, 3, 7, true, false};
    case CARVE_FLOAT8E4M3FNUZ: return (f8fmt){4, 3, 8, true, true};
    case CARVE_FLOAT8E5M2: return (f8fmt){5, 2, 15, false, false};
    default: return (f8fmt){5, 2, 16, true, true}; /* E5M2FNUZ */
    }
}

float cv_f8_to_f32(uint8_t x, carve_dtype t)
{
    f8fmt f = fmt_of(t);
    int sign = x >> 7, e = (x >> f.mbits) & ((1 << f.ebits) - 1), m = x & ((1 << f.mbits) - 1);
    if (f.uz) {
        if (x == 0x80)
            return NAN;
    } else if (f.fn) { /* E4M3FN: S.1111.111 is NaN, no inf */
        if (e == 15 && m == 7)
            return NAN;
    } else if (e == (1 << f.ebits) - 1) { /* E5M2: IEEE-like */
        return m ? NAN : (sign ? -INFINITY : INFINITY);
    }
    float v = e ? ldexpf(1.0f + (float)m / (float)(1 << f.mbits), e - f.bias)
                : ldexpf((float)m / (float)(1 << f.mbits), 1 - f.bias);
    return sign ? -v : v;
}

/* ---------------------------------------------------------------- encoding
 *
 * Exact round-to-nearest-even of a double into float16, bfloat16 and the four
 * float8 formats (opset 19 `saturate` rules for float8), written for Cast and
 * used everywhere. */

typedef struct {
    int mbits, bias;
    uint32_t maxcode; /* largest finite magnitude */
    uint32_t inf;     /* infinity (magnitude bits), 0 when the format has none */
    uint32_t nan;     /* NaN (magnitude bits; for FNUZ the whole code) */
    uint32_t sign;    /* sign bit */
    bool uz;          /* FNUZ: no -0, NaN is the lone sign bit */
    bool f8;          /* saturate applies */
} sfmt;

static const sfmt F16 = {10, 15, 0x7bff, 0x7c00, 0x7e00, 0x8000, false, false};
static const sfmt BF16 = {7, 127, 0x7f7f, 0x7f80, 0x7fc0, 0x8000, false, false};
static const sfmt E4M3FN = {3, 7, 0x7e, 0, 0x7f, 0x80, false, true};
static const sfmt E4M3FNUZ = {3, 8, 0x7f, 0, 0x80, 0x80, true, true};
static const sfmt E5M2 = {2, 15, 0x7b, 0x7c, 0x7f, 0x80, false, true};
static const sfmt E5M2FNUZ = {2, 16, 0x7f, 0, 0x80, 0x80, true, true};

static const sfmt *sfmt_of(carve_dtype t)
{
    switch (t) {
    case CARVE_FLOAT16: return &F16;
    case CARVE_BFLOAT16: return &BF16;
    case CARVE_FLOAT8E4M3FN: return &E4M3FN;
    case CARVE_FLOAT8E4M3FNUZ: return &E4M3FNUZ;
    case CARVE_FLOAT8E5M2: return &E5M2;
    default: return &E5M2FNUZ;
    }
}

/* Magnitude code of a > 0 rounded to nearest even (may exceed maxcode);
 * *tie tells that a lay exactly halfway between two codes. All arithmetic
 * is exact: scaling by a power of two, floor, and small integers. */
static uint32_t round_mag(double a, const sfmt *f, bool *tie)
{
    int e;
    frexp(a, &e);
    int E = e - 1, emin = 1 - f->bias;
    if (E < emin)
        E = emin;
    double q = ldexp(a, f->mbits - E);
    double fl = floor(q), d = q - fl;
    uint32_t r = (uint32_t)fl;
    *tie = d == 0.5;
    if (d > 0.5 || (d == 0.5 && (r & 1)))
        r++;
    uint32_t one = 1u << f->mbits;
    if (E == emin && r < one)
        return r; /* subnormal (or zero) */
    if (r == one << 1) {
        r = one;
        E++;
    }
    return ((uint32_t)(E + f->bias) << f->mbits) | (r - one);
}

static uint32_t to_small(double x, const sfmt *f, bool saturate, bool *tie)
{
    uint32_t s = signbit(x) ? f->sign : 0;
    *tie = false;
    if (isnan(x))
        return f->uz ? f->nan : s | f->nan;
    bool inf = isinf(x);
    uint32_t code = inf ? UINT32_MAX : x == 0 ? 0 : round_mag(fabs(x), f, tie);
    if (code == 0)
        return f->uz ? 0 : s;
    if (code <= f->maxcode)
        return s | code;
    /* overflow (or infinity) */
    if (!f->f8)
        return s | f->inf;
    if (saturate)
        return s | f->maxcode;
    if (f->inf)
        return s | f->inf;
    return f->uz ? f->nan : s | f->nan;
}

uint16_t cv_f64_to_f16(double x)
{
    bool tie;
    return (uint16_t)to_small(x, &F16, true, &tie);
}

uint16_t cv_f64_to_bf16(double x)
{
    bool tie;
    return (uint16_t)to_small(x, &BF16, true, &tie);
}

uint8_t cv_f64_to_f8(double x, carve_dtype t, bool saturate)
{
    bool tie;
    return (uint8_t)to_small(x, sfmt_of(t), saturate, &tie);
}


uint32_t cv_small_encode(double x, carve_dtype t, bool saturate, bool *tie)
{
    return to_small(x, sfmt_of(t), saturate, tie);
}

/* NaN keeps its sign and top payload bits (quieted), as x86's F16C
 * conversion and onnxruntime do; every other value rounds exactly. */
uint16_t cv_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(((u >> 16) & 0x8000) | 0x7e00 | ((u >> 13) & 0x3ff));
    return cv_f64_to_f16(f);
}

uint16_t cv_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    return cv_f64_to_bf16(f);
}
uint8_t cv_f32_to_f8(float f, carve_dtype t, bool saturate) { return cv_f64_to_f8(f, t, saturate); }

/* half.c: float16, bfloat16 and float8 conversions, round to nearest even,
 * without C undefined behaviour (bit patterns moved through memcpy). */
#include "../ops/ops.h"

#include <math.h>
#include <string.h>

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
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

uint16_t cv_f32_to_f16(float f)
{
    uint32_t u = f2u(f), sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x38800000u) { /* below the smallest normal: subnormal or zero */
        if (a < 0x33000000u) /* < 2^-25: rounds to zero */
            return (uint16_t)sign;
        uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t q = r >> 13, rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (q & 1)))
        q++;
    return (uint16_t)(sign | q);
}

float cv_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t cv_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, keep sign */
    uint32_t rounding = 0x7fff + ((u >> 16) & 1);
    return (uint16_t)((u + rounding) >> 16);
}

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

uint8_t cv_f32_to_f8(float v, carve_dtype t, bool saturate)
{
    f8fmt f = fmt_of(t);
    /* Exhaustive nearest-even search over the 256 codes: exact and simple;
     * float8 conversion is never on a hot path in carve. */
    if (isnan(v))
        return f.uz ? 0x80 : f.fn ? 0x7f : 0x7f;
    uint8_t best = 0;
    float bestd = INFINITY;
    float maxv = 0;
    for (int c = 0; c < 256; c++) {
        float x = cv_f8_to_f32((uint8_t)c, t);
        if (isnan(x) || isinf(x))
            continue;
        if (x > maxv)
            maxv = x;
    }
    if (isinf(v) || fabsf(v) > maxv) {
        bool over = isinf(v) || fabsf(v) > maxv;
        if (over && !saturate) {
            if (f.fn)
                return f.uz ? 0x80 : (uint8_t)(v < 0 ? 0xff : 0x7f);
            return (uint8_t)(v < 0 ? 0xfc : 0x7c); /* E5M2 inf */
        }
        v = v < 0 ? -maxv : maxv;
    }
    for (int c = 0; c < 256; c++) {
        float x = cv_f8_to_f32((uint8_t)c, t);
        if (isnan(x) || isinf(x))
            continue;
        if (x == 0 && signbit(x) != signbit(v) && v != 0)
            continue;
        float d = fabsf(x - v);
        if (d < bestd || (d == bestd && !(c & 1) && (best & 1))) {
            best = (uint8_t)c;
            bestd = d;
        }
    }
    if (v == 0)
        return signbit(v) && !f.uz ? 0x80 : 0;
    return best;
}

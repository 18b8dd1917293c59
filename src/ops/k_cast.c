/* k_cast.c: Cast and CastLike, exact for every pair of float32, float64,
 * float16, bfloat16, the four float8 formats, int4/uint4, the 8..64-bit
 * integers, bool and string.
 *
 * Rules (where the spec is silent, onnxruntime on x86-64; see
 * k_elementwise.h for float -> integer):
 *   - to a float type: round to nearest even, once. Integers above 2^53 go
 *     through a round-to-odd double so narrow targets are not rounded twice.
 *   - float8 (opset 19 `saturate`, default 1): out of range and +-inf give
 *     +-max when saturating; otherwise NaN (E4M3FN, both FNUZ) or +-inf
 *     (E5M2). The spec's table says inf -> NaN for the FNUZ formats even
 *     when saturating; onnxruntime and the ONNX reference helpers give +-max,
 *     and so does carve. FNUZ formats have no -0: it becomes +0.
 *   - int4/uint4 (opset 21): from integers the low 4 bits are kept; from
 *     floats the value is rounded to the nearest integer (ties to even), then
 *     its low 4 bits are kept (ONNX's int4 document); NaN and inf give 0.
 *   - to string: floats as numpy's str() does: the shortest digits that
 *     read back to the same value in the source type, positional for
 *     1e-4 <= |x| < 1e16 ("0.5", "100.0"), else scientific ("1e-05",
 *     "1.5e+20"); "nan", "inf", "-inf". Integers in decimal, bool as
 *     "True"/"False".
 *   - from string: "+INF", "INF", "-INF", "NaN" in any case, and plain or
 *     scientific numbers, rounded once to the target; integers parse
 *     integer literals exactly (wrapping to the width) and other numbers as
 *     floats then by the float rules; bool takes "true"/"false" or a number
 *     (nonzero is true). Anything else is an error naming the element. Parsing
 *     and printing use the C library, hence the C locale's decimal point. */
#include "k_elementwise.h"

#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__GNUC__) && !defined(__clang__)
/* As in k_elementwise.c: let GCC 12 vectorize the conversion loops at -O2. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

static double small_to_f64(uint32_t code, carve_dtype t)
{
    switch (t) {
    case CARVE_FLOAT16: return cv_f16_to_f32((uint16_t)code);
    case CARVE_BFLOAT16: return cv_bf16_to_f32((uint16_t)code);
    default: return cv_f8_to_f32((uint8_t)code, t);
    }
}

void cv_ew_half_to_f32(const uint16_t *restrict src, float *restrict dst, size_t n, carve_dtype t)
{
    if (t == CARVE_BFLOAT16)
        for (size_t i = 0; i < n; i++)
            dst[i] = cv_ew_b2f(src[i]);
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = cv_ew_h2f(src[i]);
}

void cv_ew_f32_to_half(const float *restrict src, uint16_t *restrict dst, size_t n, carve_dtype t)
{
    if (t == CARVE_BFLOAT16)
        for (size_t i = 0; i < n; i++)
            dst[i] = cv_ew_f2b(src[i]);
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = cv_ew_f2h(src[i]);
}

/* An integer as a double rounded to odd at 53 bits: exact below 2^53, and
 * above it rounding this double to any narrower format equals rounding the
 * integer itself (the sticky bit survives). */
static double u64_odd(uint64_t u)
{
    if (u < ((uint64_t)1 << 53))
        return (double)u;
    int shift = 0;
    while ((u >> shift) >= ((uint64_t)1 << 53))
        shift++;
    uint64_t kept = u >> shift;
    if (u & ((((uint64_t)1) << shift) - 1))
        kept |= 1;
    return ldexp((double)kept, shift);
}

static double int_odd(int64_t v, bool is_unsigned)
{
    if (is_unsigned || v >= 0)
        return u64_odd((uint64_t)v);
    return -u64_odd(0 - (uint64_t)v);
}

/* ---------------------------------------------------------------- chunked conversion
 *
 * Elements move in chunks through one of two exact carriers: int64 bits
 * (integers, bool; `uns` for uint64 sources) or double (float types). The
 * switch on the dtype sits outside every loop. */

enum { CHUNK = 256 };

static bool is_int_class(carve_dtype t) { return cv_dtype_is_int(t) || t == CARVE_BOOL; }

static int nib(const uint8_t *p, size_t i, bool sgn)
{
    int x = (i & 1) ? p[i / 2] >> 4 : p[i / 2] & 0xf;
    return sgn && x >= 8 ? x - 16 : x;
}

static void set_nib(uint8_t *p, size_t i, unsigned q)
{
    q &= 0xf;
    p[i / 2] = (i & 1) ? (uint8_t)((p[i / 2] & 0x0f) | (q << 4)) : (uint8_t)((p[i / 2] & 0xf0) | q);
}

void cv_ew_load_ints(const cv_val *x, size_t off, size_t n, int64_t *iv)
{
    const void *d = x->data;
    switch (x->dtype) {
    case CARVE_INT8: for (size_t i = 0; i < n; i++) iv[i] = ((const int8_t *)d)[off + i]; break;
    case CARVE_UINT8: for (size_t i = 0; i < n; i++) iv[i] = ((const uint8_t *)d)[off + i]; break;
    case CARVE_BOOL: for (size_t i = 0; i < n; i++) iv[i] = ((const uint8_t *)d)[off + i] != 0; break;
    case CARVE_INT16: for (size_t i = 0; i < n; i++) iv[i] = ((const int16_t *)d)[off + i]; break;
    case CARVE_UINT16: for (size_t i = 0; i < n; i++) iv[i] = ((const uint16_t *)d)[off + i]; break;
    case CARVE_INT32: for (size_t i = 0; i < n; i++) iv[i] = ((const int32_t *)d)[off + i]; break;
    case CARVE_UINT32: for (size_t i = 0; i < n; i++) iv[i] = ((const uint32_t *)d)[off + i]; break;
    case CARVE_INT64: memcpy(iv, (const int64_t *)d + off, n * 8); break;
    case CARVE_UINT64: memcpy(iv, (const uint64_t *)d + off, n * 8); break;
    case CARVE_INT4: case CARVE_UINT4:
        for (size_t i = 0; i < n; i++)
            iv[i] = nib(d, off + i, x->dtype == CARVE_INT4);
        break;
    default: break;
    }
}

void cv_ew_load_floats(const cv_val *x, size_t off, size_t n, double *dv)
{
    const void *d = x->data;
    switch (x->dtype) {
    case CARVE_FLOAT: for (size_t i = 0; i < n; i++) dv[i] = ((const float *)d)[off + i]; break;
    case CARVE_DOUBLE: memcpy(dv, (const double *)d + off, n * 8); break;
    case CARVE_FLOAT16: for (size_t i = 0; i < n; i++) dv[i] = cv_ew_h2f(((const uint16_t *)d)[off + i]); break;
    case CARVE_BFLOAT16: for (size_t i = 0; i < n; i++) dv[i] = cv_ew_b2f(((const uint16_t *)d)[off + i]); break;
    default:
        for (size_t i = 0; i < n; i++)
            dv[i] = cv_f8_to_f32(((const uint8_t *)d)[off + i], x->dtype);
        break;
    }
}

/* Stores integer bits truncated to y's width. */
void cv_ew_store_ints(cv_val *y, size_t off, size_t n, const int64_t *iv)
{
    void *d = y->data;
    switch (y->dtype) {
    case CARVE_INT8: case CARVE_UINT8:
        for (size_t i = 0; i < n; i++) ((uint8_t *)d)[off + i] = (uint8_t)(uint64_t)iv[i];
        break;
    case CARVE_BOOL: for (size_t i = 0; i < n; i++) ((uint8_t *)d)[off + i] = iv[i] != 0; break;
    case CARVE_INT16: case CARVE_UINT16:
        for (size_t i = 0; i < n; i++) ((uint16_t *)d)[off + i] = (uint16_t)(uint64_t)iv[i];
        break;
    case CARVE_INT32: case CARVE_UINT32:
        for (size_t i = 0; i < n; i++) ((uint32_t *)d)[off + i] = (uint32_t)(uint64_t)iv[i];
        break;
    case CARVE_INT64: case CARVE_UINT64: memcpy((int64_t *)d + off, iv, n * 8); break;
    case CARVE_INT4: case CARVE_UINT4:
        for (size_t i = 0; i < n; i++)
            set_nib(d, off + i, (unsigned)((uint64_t)iv[i] & 0xf));
        break;
    default: break;
    }
}

/* Integers (uns: the carrier holds uint64 bits) to a float type. */
static void ints_to_float(cv_val *y, size_t off, size_t n, const int64_t *iv, bool uns, bool saturate)
{
    void *d = y->data;
    switch (y->dtype) {
    case CARVE_FLOAT:
        if (uns)
            for (size_t i = 0; i < n; i++) ((float *)d)[off + i] = (float)(uint64_t)iv[i];
        else
            for (size_t i = 0; i < n; i++) ((float *)d)[off + i] = (float)iv[i];
        break;
    case CARVE_DOUBLE:
        if (uns)
            for (size_t i = 0; i < n; i++) ((double *)d)[off + i] = (double)(uint64_t)iv[i];
        else
            for (size_t i = 0; i < n; i++) ((double *)d)[off + i] = (double)iv[i];
        break;
    case CARVE_FLOAT16: case CARVE_BFLOAT16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)d)[off + i] = y->dtype == CARVE_FLOAT16 ? cv_f64_to_f16(int_odd(iv[i], uns))
                                                                : cv_f64_to_bf16(int_odd(iv[i], uns));
        break;
    default:
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)d)[off + i] = cv_f64_to_f8(int_odd(iv[i], uns), y->dtype, saturate);
        break;
    }
}

/* Floats to any non-string type. `narrow`: every value is exactly a float32
 * (the source was float32 or narrower), so the float32 paths are exact. */
static void floats_to(cv_val *y, size_t off, size_t n, const double *dv, bool narrow, bool saturate)
{
    void *d = y->data;
    switch (y->dtype) {
    case CARVE_FLOAT: for (size_t i = 0; i < n; i++) ((float *)d)[off + i] = (float)dv[i]; break;
    case CARVE_DOUBLE: memcpy((double *)d + off, dv, n * 8); break;
    case CARVE_FLOAT16:
        if (narrow)
            for (size_t i = 0; i < n; i++) ((uint16_t *)d)[off + i] = cv_ew_f2h((float)dv[i]);
        else
            for (size_t i = 0; i < n; i++) ((uint16_t *)d)[off + i] = cv_f64_to_f16(dv[i]);
        break;
    case CARVE_BFLOAT16:
        if (narrow)
            for (size_t i = 0; i < n; i++) ((uint16_t *)d)[off + i] = cv_ew_f2b((float)dv[i]);
        else
            for (size_t i = 0; i < n; i++) ((uint16_t *)d)[off + i] = cv_f64_to_bf16(dv[i]);
        break;
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)d)[off + i] = cv_f64_to_f8(dv[i], y->dtype, saturate);
        break;
    case CARVE_BOOL: for (size_t i = 0; i < n; i++) ((uint8_t *)d)[off + i] = dv[i] != 0; break;
    case CARVE_INT4: case CARVE_UINT4:
        for (size_t i = 0; i < n; i++) {
            double r = isfinite(dv[i]) ? fmod(nearbyint(dv[i]), 16.0) : 0;
            set_nib(d, off + i, (unsigned)((int)r & 0xf));
        }
        break;
    case CARVE_INT32: for (size_t i = 0; i < n; i++) ((int32_t *)d)[off + i] = cv_x86_i32(dv[i]); break;
    case CARVE_INT64: for (size_t i = 0; i < n; i++) ((int64_t *)d)[off + i] = cv_x86_i64(dv[i]); break;
    default: {
        int64_t iv[CHUNK];
        if (y->dtype == CARVE_UINT64)
            for (size_t i = 0; i < n; i++)
                iv[i] = (int64_t)cv_x86_u64(dv[i]);
        else if (y->dtype == CARVE_UINT32)
            for (size_t i = 0; i < n; i++)
                iv[i] = cv_x86_i64(dv[i]);
        else
            for (size_t i = 0; i < n; i++)
                iv[i] = cv_x86_i32(dv[i]);
        cv_ew_store_ints(y, off, n, iv);
        break;
    }
    }
}

/* ---------------------------------------------------------------- strings */

/* Does decimal s read back as x in type t? */
static bool reads_back(const char *s, double x, carve_dtype t)
{
    if (t == CARVE_FLOAT)
        return strtof(s, NULL) == (float)x;
    double d = strtod(s, NULL);
    if (t == CARVE_DOUBLE)
        return d == x;
    bool tie;
    return small_to_f64(cv_small_encode(d, t, true, &tie), t) == x;
}

/* numpy's str() of a float x of type t (see the file comment). */
static void format_float(char *buf, size_t sz, double x, carve_dtype t)
{
    if (isnan(x)) {
        snprintf(buf, sz, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(buf, sz, x < 0 ? "-inf" : "inf");
        return;
    }
    if (x == 0) {
        snprintf(buf, sz, signbit(x) ? "-0.0" : "0.0");
        return;
    }
    double a = fabs(x);
    unsigned long long best = 0;
    int p = 1, E = 0;
    for (; p <= 17; p++) {
        char e[64], c[64];
        snprintf(e, sizeof e, "%.*e", p - 1, a);
        unsigned long long D = 0;
        const char *q = e;
        for (; *q && *q != 'e'; q++)
            if (*q >= '0' && *q <= '9')
                D = D * 10 + (unsigned long long)(*q - '0');
        E = atoi(q + 1);
        snprintf(c, sizeof c, "%llue%d", D, E - p + 1);
        if (reads_back(c, a, t) || p == 17) {
            best = D;
            break;
        }
        /* The nearest p-digit decimal does not read back; its neighbour on
         * the wider side of the rounding interval may. */
        double bestd = INFINITY;
        for (int k = -1; k <= 1; k += 2) {
            unsigned long long C = D + (unsigned long long)(long long)k;
            snprintf(c, sizeof c, "%llue%d", C, E - p + 1);
            if (C && reads_back(c, a, t) && fabs(strtod(c, NULL) - a) < bestd) {
                bestd = fabs(strtod(c, NULL) - a);
                best = C;
            }
        }
        if (best)
            break;
    }
    char s[32];
    int L = snprintf(s, sizeof s, "%llu", best);
    int fe = E - p + L; /* decimal exponent of the first digit */
    while (L > 1 && s[L - 1] == '0')
        s[--L] = 0;
    char *o = buf;
    size_t left = sz;
#define PUT(...)                                                   \
    do {                                                           \
        int w_ = snprintf(o, left, __VA_ARGS__);                   \
        if (w_ > 0 && (size_t)w_ < left) o += w_, left -= (size_t)w_; \
    } while (0)
    if (x < 0)
        PUT("-");
    long double la = a;
    if (la >= 1e-4L && la < 1e16L) {
        if (fe >= 0) {
            for (int i = 0; i <= fe; i++)
                PUT("%c", i < L ? s[i] : '0');
            PUT(".%s", L > fe + 1 ? s + fe + 1 : "0");
        } else {
            PUT("0.");
            for (int i = 0; i < -fe - 1; i++)
                PUT("0");
            PUT("%s", s);
        }
    } else {
        PUT("%c", s[0]);
        if (L > 1)
            PUT(".%s", s + 1);
        PUT("e%c%02d", fe < 0 ? '-' : '+', fe < 0 ? -fe : fe);
    }
#undef PUT
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

static bool at_end(const char *s) { return !*skip_ws(s); }

/* A float literal: numbers, "INF", "+INF", "-INF", "NaN" (any case; strtod
 * takes those and "infinity"). */
static bool parse_f64(const char *s, double *out)
{
    char *end;
    s = skip_ws(s);
    if (!*s)
        return false;
    *out = strtod(s, &end);
    return end != s && at_end(end);
}

static bool parse_f32(const char *s, float *out)
{
    char *end;
    s = skip_ws(s);
    if (!*s)
        return false;
    *out = strtof(s, &end);
    return end != s && at_end(end);
}

/* A string to float16/bfloat16/float8, rounded once: strtod's double can
 * only mislead when it lands exactly on a midpoint of the target; the
 * directed-rounding reparses then tell which side the decimal lies on. */
static bool parse_small(const char *s, carve_dtype t, bool saturate, uint32_t *code)
{
    double d;
    if (!parse_f64(s, &d))
        return false;
    bool tie;
    *code = cv_small_encode(d, t, saturate, &tie);
    if (tie) {
        int mode = fegetround();
        fesetround(FE_UPWARD);
        double up = strtod(skip_ws(s), NULL);
        fesetround(FE_DOWNWARD);
        double down = strtod(skip_ws(s), NULL);
        fesetround(mode);
        if (up != d)
            *code = cv_small_encode(up, t, saturate, &tie);
        else if (down != d)
            *code = cv_small_encode(down, t, saturate, &tie);
    }
    return true;
}

/* An integer literal exactly (wrapping), anything else as a float. */
static bool parse_int(const char *s, carve_dtype t, int64_t *bits)
{
    const char *p = skip_ws(s), *q = p;
    if (*q == '+' || *q == '-')
        q++;
    const char *digits = q;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q > digits && at_end(q)) {
        char *end;
        errno = 0;
        if (*p == '-') {
            long long v = strtoll(p, &end, 10);
            if (errno != ERANGE) {
                *bits = v;
                return true;
            }
        } else {
            unsigned long long v = strtoull(p, &end, 10);
            if (errno != ERANGE) {
                *bits = (int64_t)v;
                return true;
            }
        }
    }
    double d;
    if (!parse_f64(s, &d))
        return false;
    if (t == CARVE_INT4 || t == CARVE_UINT4)
        *bits = isfinite(d) ? (int64_t)fmod(nearbyint(d), 16.0) : 0;
    else
        *bits = (int64_t)cv_x86_int_bits(d, t);
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    const char *p = skip_ws(s);
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\n' || p[n - 1] == '\r'))
        n--;
    if (n == 4 && !strncasecmp(p, "true", 4)) {
        *out = true;
        return true;
    }
    if (n == 5 && !strncasecmp(p, "false", 5)) {
        *out = false;
        return true;
    }
    double d;
    if (!parse_f64(s, &d))
        return false;
    *out = d != 0;
    return true;
}

static carve_status from_string(cv_kctx *k, const cv_val *x, cv_val *y, bool saturate)
{
    char *const *s = x->data;
    for (size_t i = 0; i < x->nelem; i++) {
        bool ok;
        switch (y->dtype) {
        case CARVE_FLOAT: ok = parse_f32(s[i], &((float *)y->data)[i]); break;
        case CARVE_DOUBLE: ok = parse_f64(s[i], &((double *)y->data)[i]); break;
        case CARVE_FLOAT16: case CARVE_BFLOAT16: {
            uint32_t c = 0;
            ok = parse_small(s[i], y->dtype, saturate, &c);
            ((uint16_t *)y->data)[i] = (uint16_t)c;
            break;
        }
        case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ: {
            uint32_t c = 0;
            ok = parse_small(s[i], y->dtype, saturate, &c);
            ((uint8_t *)y->data)[i] = (uint8_t)c;
            break;
        }
        case CARVE_BOOL: {
            bool b = false;
            ok = parse_bool(s[i], &b);
            ((uint8_t *)y->data)[i] = b;
            break;
        }
        default: {
            int64_t v = 0;
            ok = parse_int(s[i], y->dtype, &v);
            cv_ew_store_ints(y, i, 1, &v);
            break;
        }
        }
        if (!ok)
            return cv_kerr(k, "input 0 '%s' element %zu is \"%.40s\", not a number", cv_ew_in_name(k, 0), i, s[i]);
    }
    return CARVE_OK;
}

static carve_status to_string(cv_kctx *k, const cv_val *x, cv_val *y)
{
    char **o = y->data;
    int64_t iv[CHUNK];
    double dv[CHUNK];
    bool ints = is_int_class(x->dtype);
    for (size_t off = 0; off < x->nelem; off += CHUNK) {
        size_t n = x->nelem - off < CHUNK ? x->nelem - off : CHUNK;
        if (ints)
            cv_ew_load_ints(x, off, n, iv);
        else
            cv_ew_load_floats(x, off, n, dv);
        for (size_t i = 0; i < n; i++) {
            char buf[64];
            if (x->dtype == CARVE_BOOL)
                snprintf(buf, sizeof buf, "%s", iv[i] ? "True" : "False");
            else if (x->dtype == CARVE_UINT64)
                snprintf(buf, sizeof buf, "%llu", (unsigned long long)(uint64_t)iv[i]);
            else if (ints)
                snprintf(buf, sizeof buf, "%lld", (long long)iv[i]);
            else
                format_float(buf, sizeof buf, dv[i], x->dtype);
            size_t len = strlen(buf);
            o[off + i] = cv_malloc(len + 1);
            if (!o[off + i])
                return cv_knomem(k);
            memcpy(o[off + i], buf, len + 1);
        }
    }
    return CARVE_OK;
}

/* ---------------------------------------------------------------- the kernels */

static bool castable(carve_dtype t)
{
    return t == CARVE_STRING || t == CARVE_BOOL || cv_dtype_is_float(t) || cv_dtype_is_int(t);
}

static carve_status cast(cv_kctx *k, cv_val *x, carve_dtype to, bool saturate, cv_val **out)
{
    if (x->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 0 '%s' is not a tensor", cv_ew_in_name(k, 0));
    if (!castable(x->dtype))
        return cv_kerr(k, "input 0 '%s' is %s, which Cast does not convert", cv_ew_in_name(k, 0),
                       carve_dtype_name(x->dtype));
    if (!castable(to))
        return cv_kerr(k, "cannot cast to %s", carve_dtype_name(to));
    if (x->dtype == to) {
        *out = cv_val_ref(x);
        return CARVE_OK;
    }
    /* every path below writes every element (strings start NULL) */
    cv_val *y = cv_val_new_uninit(to, x->rank, x->dims);
    if (!y)
        return cv_knomem(k);
    carve_status s = CARVE_OK;
    size_t n = x->nelem;
    if (to == CARVE_STRING) {
        s = to_string(k, x, y);
    } else if (x->dtype == CARVE_STRING) {
        s = from_string(k, x, y, saturate);
    } else if (x->dtype == CARVE_FLOAT && (to == CARVE_FLOAT16 || to == CARVE_BFLOAT16)) {
        cv_ew_f32_to_half(x->data, y->data, n, to);
    } else if ((x->dtype == CARVE_FLOAT16 || x->dtype == CARVE_BFLOAT16) && to == CARVE_FLOAT) {
        cv_ew_half_to_f32(x->data, y->data, n, x->dtype);
    } else if (x->dtype == CARVE_FLOAT && to == CARVE_DOUBLE) {
        const float *a = x->data;
        double *b = y->data;
        for (size_t i = 0; i < n; i++)
            b[i] = a[i];
    } else if (x->dtype == CARVE_DOUBLE && to == CARVE_FLOAT) {
        const double *a = x->data;
        float *b = y->data;
        for (size_t i = 0; i < n; i++)
            b[i] = (float)a[i];
    } else {
        bool from_int = is_int_class(x->dtype), to_int = is_int_class(to);
        bool narrow = x->dtype != CARVE_DOUBLE;
        int64_t iv[CHUNK];
        double dv[CHUNK];
        for (size_t off = 0; off < n; off += CHUNK) {
            size_t m = n - off < CHUNK ? n - off : CHUNK;
            if (from_int) {
                cv_ew_load_ints(x, off, m, iv);
                if (to_int)
                    cv_ew_store_ints(y, off, m, iv);
                else
                    ints_to_float(y, off, m, iv, x->dtype == CARVE_UINT64, saturate);
            } else {
                cv_ew_load_floats(x, off, m, dv);
                floats_to(y, off, m, dv, narrow, saturate);
            }
        }
    }
    return cv_kout(s, y, out);
}

/* Cast-1 names the target type as a string ("FLOAT"). */
static carve_dtype dtype_from_name(const char *s)
{
    static const struct {
        const char *name;
        carve_dtype t;
    } names[] = {
        {"FLOAT", CARVE_FLOAT},   {"UINT8", CARVE_UINT8},   {"INT8", CARVE_INT8},     {"UINT16", CARVE_UINT16},
        {"INT16", CARVE_INT16},   {"INT32", CARVE_INT32},   {"INT64", CARVE_INT64},   {"STRING", CARVE_STRING},
        {"BOOL", CARVE_BOOL},     {"FLOAT16", CARVE_FLOAT16}, {"DOUBLE", CARVE_DOUBLE}, {"UINT32", CARVE_UINT32},
        {"UINT64", CARVE_UINT64}, {"BFLOAT16", CARVE_BFLOAT16},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcasecmp(s, names[i].name))
            return names[i].t;
    return CARVE_UNDEFINED;
}

/* The `to` attribute (INT, or STRING before opset 6); UNDEFINED when
 * missing or unknown. */
static carve_dtype cast_target(const carve_model *m, carve_node_id node, int64_t *raw)
{
    int64_t to = -1;
    *raw = -1;
    if (carve_node_attr_int(m, node, "to", &to)) {
        *raw = to;
        return to > 0 && to < CARVE_DTYPE_COUNT ? (carve_dtype)to : CARVE_UNDEFINED;
    }
    const char *s = cv_attr_s(m, node, "to", NULL);
    return s ? dtype_from_name(s) : CARVE_UNDEFINED;
}

carve_status k_cast(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    int64_t raw;
    carve_dtype to = cast_target(k->m, k->node, &raw);
    if (!to)
        return cv_kerr(k, "attribute 'to' is missing or not a known dtype (%lld)", (long long)raw);
    bool saturate = k->opset < 19 || cv_attr_i(k->m, k->node, "saturate", 1) != 0;
    return cast(k, in[0], to, saturate, &out[0]);
}

carve_status k_castlike(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (in[1]->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 1 '%s' is not a tensor", cv_ew_in_name(k, 1));
    bool saturate = k->opset < 19 || cv_attr_i(k->m, k->node, "saturate", 1) != 0;
    return cast(k, in[0], in[1]->dtype, saturate, &out[0]);
}

carve_status i_cast(cv_ictx *c)
{
    int64_t raw;
    carve_dtype to = cast_target(c->m, c->node, &raw);
    if (!to)
        return cv_ierr(c, "attribute 'to' is missing or not a known dtype (%lld)", (long long)raw);
    return cv_infer_like(c, 0, 0, to);
}

carve_status i_castlike(cv_ictx *c)
{
    const cv_type *t = cv_infer_in(c, 1), *x = cv_infer_in(c, 0);
    carve_dtype to = t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
    if (!x || x->kind != CARVE_TYPE_TENSOR)
        return cv_infer_set(c, 0, to, -1, NULL);
    return cv_infer_set(c, 0, to, x->rank, x->dims);
}

/* k_reduce.c: reductions (ReduceSum & co) and LpNormalization with their
 * inference, and the helpers the reduce family shares (k_reduce.h). The
 * family's other kernels are in k_topk.c (ArgMax/ArgMin, TopK), k_softmax.c
 * (the softmax family, the losses) and k_cumsum.c; the decompositions in
 * d_reduce.c, built from the pieces of d_pieces.c.
 *
 * Reductions run on a plan: the input dims coalesced into alternating runs
 * of kept and reduced dims, walked once in memory order. The innermost run
 * is either reduced into one accumulator or added element-wise into a row of
 * accumulators, so every inner loop is contiguous. float32 accumulates in
 * double; integers accumulate exactly, wrapping modulo 2^64 like the
 * output type would. */
#include "k_reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width; the row loops here are hot in real models. Without
 * trapping math it may also if-convert the clamps in front of arithmetic
 * (carve never reads floating-point exception flags). */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif

/* ================================================================ shared helpers */

cv_val *rd_to_f32(const cv_val *v)
{
    if (v->dtype != CARVE_FLOAT16 && v->dtype != CARVE_BFLOAT16)
        return cv_val_to_f32(v);
    cv_val *f = cv_val_new_uninit(CARVE_FLOAT, v->rank, v->dims);
    if (!f)
        return NULL;
    const uint16_t *h = v->data;
    float *o = f->data;
    if (v->dtype == CARVE_FLOAT16)
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = cv_f16_to_f32(h[i]);
    else
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = cv_bf16_to_f32(h[i]);
    return f;
}

cv_val *rd_from_f32(const cv_val *f, carve_dtype dtype)
{
    if (dtype != CARVE_FLOAT16 && dtype != CARVE_BFLOAT16)
        return cv_val_from_f32(f, dtype);
    cv_val *v = cv_val_new_uninit(dtype, f->rank, f->dims);
    if (!v)
        return NULL;
    const float *x = f->data;
    uint16_t *h = v->data;
    if (dtype == CARVE_FLOAT16)
        for (size_t i = 0; i < f->nelem; i++)
            h[i] = cv_f32_to_f16(x[i]);
    else
        for (size_t i = 0; i < f->nelem; i++)
            h[i] = cv_f32_to_bf16(x[i]);
    return v;
}

int64_t *rd_ints_of(const cv_val *v, bool *owned)
{
    *owned = false;
    if (v->dtype == CARVE_INT64 || v->dtype == CARVE_UINT64)
        return v->data;
    int64_t *o = cv_malloc((v->nelem ? v->nelem : 1) * sizeof *o);
    if (!o)
        return NULL;
    *owned = true;
    const void *d = v->data;
    size_t n = v->nelem;
    switch (v->dtype) {
    case CARVE_INT32: for (size_t i = 0; i < n; i++) o[i] = ((const int32_t *)d)[i]; break;
    case CARVE_UINT32: for (size_t i = 0; i < n; i++) o[i] = ((const uint32_t *)d)[i]; break;
    case CARVE_INT16: for (size_t i = 0; i < n; i++) o[i] = ((const int16_t *)d)[i]; break;
    case CARVE_UINT16: for (size_t i = 0; i < n; i++) o[i] = ((const uint16_t *)d)[i]; break;
    case CARVE_INT8: for (size_t i = 0; i < n; i++) o[i] = ((const int8_t *)d)[i]; break;
    case CARVE_UINT8: case CARVE_BOOL: for (size_t i = 0; i < n; i++) o[i] = ((const uint8_t *)d)[i]; break;
    default: for (size_t i = 0; i < n; i++) o[i] = cv_val_get_i64(v, i); break;
    }
    return o;
}

/* Range of an integer dtype as int64 bits (uint64's top is all ones). */
static void int_range(carve_dtype t, int64_t *lo, uint64_t *hi)
{
    switch (t) {
    case CARVE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case CARVE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case CARVE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case CARVE_INT64: *lo = INT64_MIN, *hi = INT64_MAX; return;
    case CARVE_UINT8: *lo = 0, *hi = UINT8_MAX; return;
    case CARVE_UINT16: *lo = 0, *hi = UINT16_MAX; return;
    case CARVE_UINT32: *lo = 0, *hi = UINT32_MAX; return;
    case CARVE_BOOL: *lo = 0, *hi = 1; return;
    default: *lo = 0, *hi = UINT64_MAX; return;
    }
}

/* ================================================================ reductions */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LSE, R_SUMSQ } rkind;

/* op-list: data (the family's rows mapped to their kernel variant) */
static const struct {
    const char *op;
    rkind kind;
    int axes_input_since; /* opset where axes moved from attribute to input */
} reductions[] = {
    {"ReduceSum", R_SUM, 13},         {"ReduceMean", R_MEAN, 18},    {"ReduceMax", R_MAX, 18},
    {"ReduceMin", R_MIN, 18},         {"ReduceProd", R_PROD, 18},    {"ReduceL1", R_L1, 18},
    {"ReduceL2", R_L2, 18},           {"ReduceLogSum", R_LOGSUM, 18}, {"ReduceLogSumExp", R_LSE, 18},
    {"ReduceSumSquare", R_SUMSQ, 18},
};

static int reduction_of(const char *op)
{
    for (size_t i = 0; i < sizeof reductions / sizeof *reductions; i++)
        if (!strcmp(reductions[i].op, op))
            return (int)i;
    return -1;
}

/* The plan: dims of size 1 dropped, neighbours of the same kind merged. */
typedef struct {
    int n;
    int64_t dim[CARVE_MAX_RANK];
    bool red[CARVE_MAX_RANK];
    int64_t ostride[CARVE_MAX_RANK]; /* stride in the output; 0 on reduced runs */
    size_t onelem, rcount;           /* outputs; inputs per output */
} rplan;

static void rplan_make(rplan *p, int rank, const int64_t *dims, const bool *mask)
{
    p->n = 0;
    p->onelem = 1;
    p->rcount = 1;
    for (int i = 0; i < rank; i++) {
        if (mask[i])
            p->rcount *= (size_t)dims[i];
        else
            p->onelem *= (size_t)dims[i];
        if (dims[i] == 1)
            continue;
        if (p->n && p->red[p->n - 1] == mask[i]) {
            p->dim[p->n - 1] *= dims[i];
        } else {
            p->dim[p->n] = dims[i];
            p->red[p->n] = mask[i];
            p->n++;
        }
    }
    if (!p->n) {
        p->dim[0] = 1;
        p->red[0] = false;
        p->n = 1;
    }
    int64_t s = 1;
    for (int i = p->n - 1; i >= 0; i--) {
        p->ostride[i] = p->red[i] ? 0 : s;
        if (!p->red[i])
            s *= p->dim[i];
    }
}

typedef struct {
    const void *x;
    void *acc;           /* double[] (float path) or uint64_t[]/int64_t[] (integer path) */
    const double *shift; /* ReduceLogSumExp: the per-output maximum */
} rctx;

typedef void (*row_fn)(const rctx *c, size_t io, size_t oo, size_t len, bool red);

/* Walks the input in memory order, one innermost run per call. */
static void rplan_walk(const rplan *p, size_t total, row_fn fn, const rctx *c)
{
    int n = p->n;
    size_t len = (size_t)p->dim[n - 1];
    bool red = p->red[n - 1];
    if (!len || !total)
        return;
    size_t rows = total / len, oo = 0;
    int64_t idx[CARVE_MAX_RANK] = {0};
    for (size_t r = 0; r < rows; r++) {
        fn(c, r * len, oo, len, red);
        for (int d = n - 2; d >= 0; d--) {
            oo += (size_t)p->ostride[d];
            if (++idx[d] < p->dim[d])
                break;
            oo -= (size_t)(p->ostride[d] * p->dim[d]);
            idx[d] = 0;
        }
    }
}

/* Float rows: F(v, m) is the term added per element (m: the shift). Four
 * partial sums break the dependency chain of the double adds. */
#define F_ID(v, m) ((double)(v))
#define F_ABS(v, m) fabs((double)(v))
#define F_SQ(v, m) ((double)(v) * (double)(v))
#define F_EXP(v, m) exp((double)(v) - (m))

#define ACC_ROW(NAME, T, A, F)                                                           \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const T *x = (const T *)c->x + io;                                               \
        A *a = (A *)c->acc + oo;                                                         \
        const double *sh = c->shift ? c->shift + oo : NULL;                              \
        (void)sh;                                                                        \
        if (red) {                                                                       \
            A s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                            \
            double m = sh ? sh[0] : 0;                                                   \
            (void)m;                                                                     \
            size_t j = 0;                                                                \
            for (; j + 4 <= len; j += 4) {                                               \
                s0 += F(x[j], m);                                                        \
                s1 += F(x[j + 1], m);                                                    \
                s2 += F(x[j + 2], m);                                                    \
                s3 += F(x[j + 3], m);                                                    \
            }                                                                            \
            for (; j < len; j++)                                                         \
                s0 += F(x[j], m);                                                        \
            *a += (s0 + s1) + (s2 + s3);                                                 \
        } else {                                                                         \
            for (size_t j = 0; j < len; j++)                                             \
                a[j] += F(x[j], sh[j]);                                                  \
        }                                                                                \
    }

/* NaN wins, like numpy's maximum/minimum. The reduced run keeps four
 * branch-free partial extremes in T (exact) and a NaN flag. */
#define CMP_ROW(NAME, T, OP)                                                             \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const T *x = (const T *)c->x + io;                                               \
        double *a = (double *)c->acc + oo;                                               \
        if (red) {                                                                       \
            T b0 = (T)*a, b1 = b0, b2 = b0, b3 = b0;                                     \
            bool nan = *a != *a;                                                         \
            size_t j = 0;                                                                \
            for (; j + 4 <= len; j += 4) {                                               \
                b0 = x[j] OP b0 ? x[j] : b0;                                             \
                b1 = x[j + 1] OP b1 ? x[j + 1] : b1;                                     \
                b2 = x[j + 2] OP b2 ? x[j + 2] : b2;                                     \
                b3 = x[j + 3] OP b3 ? x[j + 3] : b3;                                     \
                nan |= (x[j] != x[j]) | (x[j + 1] != x[j + 1]) | (x[j + 2] != x[j + 2]) |  \
                       (x[j + 3] != x[j + 3]);                                           \
            }                                                                            \
            for (; j < len; j++) {                                                       \
                b0 = x[j] OP b0 ? x[j] : b0;                                             \
                nan |= x[j] != x[j];                                                     \
            }                                                                            \
            b0 = b1 OP b0 ? b1 : b0;                                                     \
            b2 = b3 OP b2 ? b3 : b2;                                                     \
            *a = nan ? NAN : b2 OP b0 ? b2 : b0;                                         \
        } else {                                                                         \
            for (size_t j = 0; j < len; j++) {                                           \
                double v = x[j];                                                         \
                if (v OP a[j] || v != v)                                                 \
                    a[j] = v;                                                            \
            }                                                                            \
        }                                                                                \
    }

#define PROD_ROW(NAME, T, A)                                                             \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const T *x = (const T *)c->x + io;                                               \
        A *a = (A *)c->acc + oo;                                                         \
        if (red) {                                                                       \
            A p = 1;                                                                     \
            for (size_t j = 0; j < len; j++)                                             \
                p *= (A)x[j];                                                            \
            *a *= p;                                                                     \
        } else {                                                                         \
            for (size_t j = 0; j < len; j++)                                             \
                a[j] *= (A)x[j];                                                         \
        }                                                                                \
    }

ACC_ROW(row_sum_f, float, double, F_ID)
ACC_ROW(row_abs_f, float, double, F_ABS)
ACC_ROW(row_sq_f, float, double, F_SQ)
ACC_ROW(row_exp_f, float, double, F_EXP)
CMP_ROW(row_max_f, float, >)
CMP_ROW(row_min_f, float, <)
PROD_ROW(row_prod_f, float, double)
ACC_ROW(row_sum_d, double, double, F_ID)
ACC_ROW(row_abs_d, double, double, F_ABS)
ACC_ROW(row_sq_d, double, double, F_SQ)
ACC_ROW(row_exp_d, double, double, F_EXP)
CMP_ROW(row_max_d, double, >)
CMP_ROW(row_min_d, double, <)
PROD_ROW(row_prod_d, double, double)

/* Integer rows over int64 input (uint64 bits for unsigned), wrapping in
 * uint64 (so the four partial sums give the exact sum). */
#define I_ID(v, m) ((uint64_t)(v))
#define I_ABS(v, m) ((v) < 0 ? 0 - (uint64_t)(v) : (uint64_t)(v))
#define I_SQ(v, m) ((uint64_t)(v) * (uint64_t)(v))

#define ICMP_ROW(NAME, T, OP)                                                            \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const T *x = (const T *)c->x + io;                                               \
        T *a = (T *)c->acc + oo;                                                         \
        if (red) {                                                                       \
            T b = *a;                                                                    \
            for (size_t j = 0; j < len; j++)                                             \
                b = x[j] OP b ? x[j] : b;                                                \
            *a = b;                                                                      \
        } else {                                                                         \
            for (size_t j = 0; j < len; j++)                                             \
                a[j] = x[j] OP a[j] ? x[j] : a[j];                                       \
        }                                                                                \
    }

ACC_ROW(row_sum_i, int64_t, uint64_t, I_ID)
ACC_ROW(row_abs_i, int64_t, uint64_t, I_ABS)
ACC_ROW(row_sq_i, int64_t, uint64_t, I_SQ)
PROD_ROW(row_prod_i, int64_t, uint64_t)
ICMP_ROW(row_max_s, int64_t, >)
ICMP_ROW(row_min_s, int64_t, <)
ICMP_ROW(row_max_u, uint64_t, >)
ICMP_ROW(row_min_u, uint64_t, <)

/* Which axes are reduced. axes_since: the opset where axes became an
 * input. Shared by the kernel (axes known) and inference. */
static bool axes_mask(const int64_t *axes, size_t n, int rank, bool *mask, char *why, size_t whysz)
{
    for (int i = 0; i < rank; i++)
        mask[i] = false;
    for (size_t i = 0; i < n; i++) {
        int a = sh_axis(axes[i], rank);
        if (a < 0) {
            snprintf(why, whysz, "axes value %lld is out of range for input rank %d", (long long)axes[i], rank);
            return false;
        }
        if (mask[a]) {
            snprintf(why, whysz, "axes value %lld names axis %d twice", (long long)axes[i], a);
            return false;
        }
        mask[a] = true;
    }
    return true;
}

/* Reads an axes tensor (int64 or int32, rank <= 1) into buf. */
static bool axes_from_val(const cv_val *a, int64_t *buf, size_t cap, size_t *n, char *why, size_t whysz)
{
    if (a->kind != CV_VAL_TENSOR || (a->dtype != CARVE_INT64 && a->dtype != CARVE_INT32) || a->rank > 1) {
        snprintf(why, whysz, "input 1 'axes' must be a 1-D int64 tensor");
        return false;
    }
    if (a->nelem > cap) {
        snprintf(why, whysz, "input 1 'axes' has %zu values, more than the input rank allows", a->nelem);
        return false;
    }
    for (size_t i = 0; i < a->nelem; i++)
        buf[i] = cv_val_get_i64(a, i);
    *n = a->nelem;
    return true;
}

static carve_status reduce_mask(cv_kctx *k, int since, const cv_val *axes_in, int rank, bool *mask)
{
    int64_t buf[CARVE_MAX_RANK];
    const int64_t *axes = buf;
    size_t n = 0;
    char why[256];
    if (k->opset < since) {
        int na = cv_attr_ints(k->m, k->node, "axes", &axes);
        n = na > 0 ? (size_t)na : 0;
    } else if (axes_in) {
        if (!axes_from_val(axes_in, buf, CARVE_MAX_RANK, &n, why, sizeof why))
            return cv_kerr(k, "%s", why);
        if (!n && cv_attr_i(k->m, k->node, "noop_with_empty_axes", 0)) {
            for (int i = 0; i < rank; i++)
                mask[i] = false;
            return CARVE_OK;
        }
    } else if (cv_attr_i(k->m, k->node, "noop_with_empty_axes", 0)) {
        for (int i = 0; i < rank; i++)
            mask[i] = false;
        return CARVE_OK;
    }
    if (!n) {
        for (int i = 0; i < rank; i++)
            mask[i] = true;
        return CARVE_OK;
    }
    if (!axes_mask(axes, n, rank, mask, why, sizeof why))
        return cv_kerr(k, "%s", why);
    return CARVE_OK;
}

static row_fn float_row(rkind kind, bool dbl)
{
    switch (kind) {
    case R_SUM: case R_MEAN: case R_LOGSUM: return dbl ? row_sum_d : row_sum_f;
    case R_L1: return dbl ? row_abs_d : row_abs_f;
    case R_L2: case R_SUMSQ: return dbl ? row_sq_d : row_sq_f;
    case R_MAX: return dbl ? row_max_d : row_max_f;
    case R_MIN: return dbl ? row_min_d : row_min_f;
    case R_PROD: return dbl ? row_prod_d : row_prod_f;
    case R_LSE: return dbl ? row_exp_d : row_exp_f;
    }
    return NULL;
}

/* Float path: x is float32 or double; results land in acc (double). */
static bool reduce_float(const cv_val *x, const rplan *p, rkind kind, double *acc)
{
    bool dbl = x->dtype == CARVE_DOUBLE;
    size_t no = p->onelem;
    double init = kind == R_PROD ? 1 : kind == R_MAX ? -INFINITY : kind == R_MIN ? INFINITY : 0;
    for (size_t o = 0; o < no; o++)
        acc[o] = init;
    rctx c = {x->data, acc, NULL};
    if (kind != R_LSE) {
        rplan_walk(p, x->nelem, float_row(kind, dbl), &c);
        return true;
    }
    /* log(sum(exp(x - m))) + m with m the maximum, 0 where m is not finite */
    double *shift = cv_malloc((no ? no : 1) * sizeof *shift);
    if (!shift)
        return false;
    for (size_t o = 0; o < no; o++)
        shift[o] = -INFINITY;
    rctx cm = {x->data, shift, NULL};
    rplan_walk(p, x->nelem, dbl ? row_max_d : row_max_f, &cm);
    for (size_t o = 0; o < no; o++)
        if (!isfinite(shift[o]))
            shift[o] = 0;
    for (size_t o = 0; o < no; o++)
        acc[o] = 0;
    c.shift = shift;
    rplan_walk(p, x->nelem, float_row(kind, dbl), &c);
    for (size_t o = 0; o < no; o++)
        acc[o] = log(acc[o]) + shift[o];
    cv_free(shift);
    return true;
}

static void finish_float(rkind kind, double *acc, size_t no, size_t rcount)
{
    switch (kind) {
    case R_MEAN: /* of nothing: the spec leaves it undefined; onnxruntime gives 0 */
        for (size_t o = 0; o < no; o++)
            acc[o] = rcount ? acc[o] / (double)rcount : 0;
        break;
    case R_L2:
        for (size_t o = 0; o < no; o++)
            acc[o] = sqrt(acc[o]);
        break;
    case R_LOGSUM:
        for (size_t o = 0; o < no; o++)
            acc[o] = log(acc[o]);
        break;
    default: break;
    }
}

/* A double result stored into an integer dtype the way onnxruntime's
 * static_cast does on x86-64: cvttsd2si into 32 bits for types up to 32
 * bits (uint32 through 64), 64 bits otherwise; NaN and out-of-range values
 * give the "integer indefinite" (the most negative value), then the low
 * bits are kept. */
static void set_int_x86(cv_val *y, size_t i, double x)
{
    carve_dtype t = y->dtype;
    if (t == CARVE_INT64 || t == CARVE_UINT64 || t == CARVE_UINT32) {
        int64_t q;
        if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {
            if (t == CARVE_UINT64 && x >= 9223372036854775808.0 && x < 18446744073709551616.0) {
                cv_val_set_i64(y, i, (int64_t)((uint64_t)(x - 9223372036854775808.0) | (1ull << 63)));
                return;
            }
            q = INT64_MIN;
        } else {
            q = (int64_t)x;
        }
        cv_val_set_i64(y, i, q);
        return;
    }
    int32_t q = x >= -2147483648.0 && x < 2147483648.0 ? (int32_t)x : INT32_MIN;
    cv_val_set_i64(y, i, q);
}

static carve_status reduce_int(cv_kctx *k, const cv_val *x, const rplan *p, rkind kind, cv_val *y)
{
    bool owned;
    int64_t *xi = rd_ints_of(x, &owned);
    size_t no = p->onelem;
    uint64_t *acc = cv_malloc((no ? no : 1) * sizeof *acc);
    if (!xi || !acc) {
        if (owned)
            cv_free(xi);
        cv_free(acc);
        return cv_knomem(k);
    }
    bool sgn = cv_dtype_is_signed(x->dtype);
    int64_t lo;
    uint64_t hi;
    int_range(x->dtype, &lo, &hi);
    row_fn fn;
    switch (kind) {
    case R_MAX:
        fn = sgn ? row_max_s : row_max_u;
        for (size_t o = 0; o < no; o++)
            acc[o] = (uint64_t)lo;
        break;
    case R_MIN:
        fn = sgn ? row_min_s : row_min_u;
        for (size_t o = 0; o < no; o++)
            acc[o] = hi;
        break;
    case R_PROD:
        fn = row_prod_i;
        for (size_t o = 0; o < no; o++)
            acc[o] = 1;
        break;
    default:
        fn = kind == R_L1 && sgn ? row_abs_i : kind == R_L2 || kind == R_SUMSQ ? row_sq_i : row_sum_i;
        for (size_t o = 0; o < no; o++)
            acc[o] = 0;
        break;
    }
    rctx c = {xi, acc, NULL};
    rplan_walk(p, x->nelem, fn, &c);
    for (size_t o = 0; o < no; o++) {
        uint64_t a = acc[o];
        /* two's complement view of the wrapped sum, without an
         * implementation-defined conversion */
        int64_t s = a <= (uint64_t)INT64_MAX ? (int64_t)a : -(int64_t)(~a) - 1;
        switch (kind) {
        case R_MEAN:
            if (!p->rcount) /* the spec leaves it undefined; onnxruntime gives 0 */
                cv_val_set_i64(y, o, 0);
            else if (sgn)
                cv_val_set_i64(y, o, s / (int64_t)p->rcount);
            else
                cv_val_set_i64(y, o, (int64_t)(a / p->rcount));
            break;
        case R_L2: set_int_x86(y, o, sqrt((double)a)); break;
        case R_LOGSUM: set_int_x86(y, o, log(sgn ? (double)s : (double)a)); break;
        default: cv_val_set_i64(y, o, s); break;
        }
    }
    if (owned)
        cv_free(xi);
    cv_free(acc);
    return CARVE_OK;
}

carve_status k_reduce(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_node *nd = &k->m->nodes[k->node];
    int which = reduction_of(nd->op);
    if (which < 0)
        return cv_kerr(k, "k_reduce does not know this op");
    rkind kind = reductions[which].kind;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 0 'data' is not a tensor");
    carve_dtype dt = x->dtype;
    bool flt = rd_is_std_float(dt);
    if (!flt && !rd_is_std_int(dt) && !(dt == CARVE_BOOL && (kind == R_MAX || kind == R_MIN)))
        return cv_kerr(k, "input 0 'data' has type %s, which %s does not take", carve_dtype_name(dt), nd->op);
    bool mask[CARVE_MAX_RANK];
    carve_status st = reduce_mask(k, reductions[which].axes_input_since, n_in > 1 ? in[1] : NULL, x->rank, mask);
    if (st)
        return st;
    bool keep = cv_attr_i(k->m, k->node, "keepdims", 1) != 0;
    int orank = 0;
    int64_t odims[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        if (!mask[i])
            odims[orank++] = x->dims[i];
        else if (keep)
            odims[orank++] = 1;
    cv_val *y = cv_val_new(dt, orank, odims);
    if (!y)
        return cv_knomem(k);
    rplan p;
    rplan_make(&p, x->rank, x->dims, mask);
    if (!flt && kind != R_LSE) {
        st = reduce_int(k, x, &p, kind, y);
        return cv_kout(st, y, &out[0]);
    }
    /* floats (float16/bfloat16 through float32), and LogSumExp of ints
     * through double */
    cv_val *xf = NULL;
    if (dt == CARVE_FLOAT || dt == CARVE_DOUBLE) {
        xf = cv_val_ref((cv_val *)x);
    } else if (flt) {
        xf = rd_to_f32(x);
    } else {
        xf = cv_val_new(CARVE_DOUBLE, x->rank, x->dims);
        for (size_t i = 0; xf && i < x->nelem; i++)
            ((double *)xf->data)[i] = cv_val_get_f64(x, i);
    }
    double *acc = cv_malloc((p.onelem ? p.onelem : 1) * sizeof *acc);
    if (!xf || !acc || !reduce_float(xf, &p, kind, acc)) {
        cv_val_unref(xf);
        cv_free(acc);
        cv_val_unref(y);
        return cv_knomem(k);
    }
    finish_float(kind, acc, p.onelem, p.rcount);
    if (dt == CARVE_FLOAT) {
        float *o = y->data;
        for (size_t i = 0; i < p.onelem; i++)
            o[i] = (float)acc[i];
    } else if (dt == CARVE_DOUBLE) {
        memcpy(y->data, acc, p.onelem * sizeof *acc);
    } else if (dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16) {
        uint16_t *o = y->data;
        for (size_t i = 0; i < p.onelem; i++)
            o[i] = dt == CARVE_FLOAT16 ? cv_f32_to_f16((float)acc[i]) : cv_f32_to_bf16((float)acc[i]);
    } else {
        for (size_t i = 0; i < p.onelem; i++)
            set_int_x86(y, i, acc[i]);
    }
    cv_val_unref(xf);
    cv_free(acc);
    out[0] = y;
    return CARVE_OK;
}

carve_status i_reduce(cv_ictx *c)
{
    const cv_node *nd = &c->m->nodes[c->node];
    int which = reduction_of(nd->op);
    const cv_type *t = sh_tin(c, 0);
    carve_dtype dt = t ? t->dtype : CARVE_UNDEFINED;
    if (which < 0 || !t || t->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int rank = t->rank;
    bool keep = cv_attr_i(c->m, c->node, "keepdims", 1) != 0;
    bool noop = cv_attr_i(c->m, c->node, "noop_with_empty_axes", 0) != 0;
    int64_t buf[CARVE_MAX_RANK];
    const int64_t *axes = buf;
    size_t n = 0;
    char why[256];
    if (c->opset < reductions[which].axes_input_since) {
        int na = cv_attr_ints(c->m, c->node, "axes", &axes);
        n = na > 0 ? (size_t)na : 0;
        noop = false;
    } else if (nd->n_in > 1 && nd->in[1] != CARVE_NONE) {
        const cv_val *a = c->const_input(c, 1);
        if (!a) {
            /* axes known at run time only */
            carve_dim d[CARVE_MAX_RANK];
            for (int i = 0; i < rank; i++)
                d[i] = (carve_dim){-1, NULL};
            if (keep)
                return cv_infer_set(c, 0, dt, rank, d);
            const cv_type *at = sh_tin(c, 1);
            if (at && at->rank == 1 && at->dims[0].value > 0 && at->dims[0].value <= rank)
                return cv_infer_set(c, 0, dt, rank - (int)at->dims[0].value, d);
            return cv_infer_set(c, 0, dt, -1, NULL);
        }
        if (!axes_from_val(a, buf, CARVE_MAX_RANK, &n, why, sizeof why))
            return cv_ierr(c, "%s", why);
    }
    bool mask[CARVE_MAX_RANK];
    if (!n) {
        for (int i = 0; i < rank; i++)
            mask[i] = !noop;
    } else if (!axes_mask(axes, n, rank, mask, why, sizeof why)) {
        return cv_ierr(c, "%s", why);
    }
    carve_dim d[CARVE_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < rank; i++)
        if (!mask[i])
            d[orank++] = t->dims[i];
        else if (keep)
            d[orank++] = (carve_dim){1, NULL};
    return cv_infer_set(c, 0, dt, orank, d);
}

/* ================================================================ LpNormalization */

/* Zero norm gives zeros (onnxruntime does the same). */
#define LPNORM_IMPL(NAME, T)                                                                      \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, int p, double *nrm) \
    {                                                                                             \
        for (size_t o = 0; o < outer; o++) {                                                      \
            const T *xo = x + o * n * inner;                                                      \
            T *yo = y + o * n * inner;                                                            \
            for (size_t j = 0; j < inner; j++)                                                    \
                nrm[j] = 0;                                                                       \
            for (size_t i = 0; i < n; i++)                                                        \
                for (size_t j = 0; j < inner; j++) {                                              \
                    double v = xo[i * inner + j];                                                 \
                    nrm[j] += p == 1 ? fabs(v) : v * v;                                           \
                }                                                                                 \
            for (size_t j = 0; j < inner; j++)                                                    \
                nrm[j] = p == 1 ? nrm[j] : sqrt(nrm[j]);                                          \
            for (size_t i = 0; i < n; i++)                                                        \
                for (size_t j = 0; j < inner; j++)                                                \
                    yo[i * inner + j] = nrm[j] == 0 ? (T)0 : (T)(xo[i * inner + j] / nrm[j]);     \
        }                                                                                         \
    }

LPNORM_IMPL(lpnorm_f32, float)
LPNORM_IMPL(lpnorm_f64, double)

carve_status k_lpnorm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !rd_is_std_float(x->dtype))
        return cv_kerr(k, "input 0 'input' has type %s, which LpNormalization does not take",
                       carve_dtype_name(x->dtype));
    int64_t axis = cv_attr_i(k->m, k->node, "axis", -1);
    int64_t p = cv_attr_i(k->m, k->node, "p", 2);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    if (p != 1 && p != 2)
        return cv_kerr(k, "attribute 'p' is %lld; only 1 and 2 are defined", (long long)p);
    size_t outer = sh_span(x->dims, 0, a), n = (size_t)x->dims[a], inner = sh_span(x->dims, a + 1, x->rank);
    double *nrm = cv_malloc(inner * sizeof *nrm + 1);
    cv_val *y = NULL, *xf = NULL, *yf = NULL;
    if (!nrm)
        goto nomem;
    if (x->dtype == CARVE_FLOAT || x->dtype == CARVE_DOUBLE) {
        if (!(y = cv_val_like(x)))
            goto nomem;
        if (x->dtype == CARVE_FLOAT)
            lpnorm_f32(x->data, y->data, outer, n, inner, (int)p, nrm);
        else
            lpnorm_f64(x->data, y->data, outer, n, inner, (int)p, nrm);
    } else {
        if (!(xf = rd_to_f32(x)) || !(yf = cv_val_like(xf)))
            goto nomem;
        lpnorm_f32(xf->data, yf->data, outer, n, inner, (int)p, nrm);
        if (!(y = rd_from_f32(yf, x->dtype)))
            goto nomem;
    }
    cv_free(nrm);
    cv_val_unref(xf);
    cv_val_unref(yf);
    out[0] = y;
    return CARVE_OK;
nomem:
    cv_free(nrm);
    cv_val_unref(xf);
    cv_val_unref(yf);
    cv_val_unref(y);
    return cv_knomem(k);
}

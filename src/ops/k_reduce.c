/* k_reduce.c: reductions (ReduceSum & co), ArgMax/ArgMin, the softmax
 * family, CumSum, TopK, LpNormalization and the two losses; their inference,
 * the decompositions of Softmax and LogSoftmax, and the helpers the reduce
 * family shares (k_reduce.h).
 *
 * Reductions run on a plan: the input dims coalesced into alternating runs
 * of kept and reduced dims, walked once in memory order. The innermost run
 * is either reduced into one accumulator or added element-wise into a row of
 * accumulators, so every inner loop is contiguous. float32 accumulates in
 * double; integers accumulate exactly, wrapping modulo 2^64 like the
 * output type would. */
#include "k_reduce.h"

#include <math.h>
#include <stdarg.h>
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

/* ---------------------------------------------------------------- decomposition pieces */

static carve_value_id piece(cv_rw *rw, const char *op, uint32_t n_in, const carve_value_id *ins,
                            carve_value_id out, carve_node_id *node)
{
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i] == CARVE_NONE)
            return CARVE_NONE;
    carve_node_id id = cv_rw_node(rw, op, op, n_in, ins, 1, &out);
    if (id == CARVE_NONE)
        return CARVE_NONE;
    if (node)
        *node = id;
    return rw->m->nodes[id].out[0];
}

carve_value_id rd_unary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id out)
{
    return piece(rw, op, 1, &a, out, NULL);
}

carve_value_id rd_binary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id b, carve_value_id out)
{
    carve_value_id ins[2] = {a, b};
    return piece(rw, op, 2, ins, out, NULL);
}

carve_value_id rd_reduce(cv_rw *rw, const char *op, carve_value_id x, size_t n_axes, const int64_t *axes,
                         carve_value_id out)
{
    int64_t opset = carve_model_opset(rw->m, "");
    bool as_input = opset >= (strcmp(op, "ReduceSum") ? 18 : 13);
    carve_node_id id = CARVE_NONE;
    carve_value_id r;
    if (as_input) {
        carve_value_id ins[2] = {x, cv_rw_ints(rw, "axes", n_axes, axes)};
        r = piece(rw, op, 2, ins, out, &id);
    } else {
        r = piece(rw, op, 1, &x, out, &id);
        if (r != CARVE_NONE && carve_node_set_attr_ints(rw->m, id, "axes", n_axes, axes))
            return CARVE_NONE;
    }
    if (r != CARVE_NONE && carve_node_set_attr_int(rw->m, id, "keepdims", 1))
        return CARVE_NONE;
    return r;
}

carve_value_id rd_unsqueeze(cv_rw *rw, carve_value_id x, size_t n_axes, const int64_t *axes)
{
    if (carve_model_opset(rw->m, "") >= 13) {
        carve_value_id ins[2] = {x, cv_rw_ints(rw, "axes", n_axes, axes)};
        return piece(rw, "Unsqueeze", 2, ins, CARVE_NONE, NULL);
    }
    carve_node_id id = CARVE_NONE;
    carve_value_id r = piece(rw, "Unsqueeze", 1, &x, CARVE_NONE, &id);
    if (r != CARVE_NONE && carve_node_set_attr_ints(rw->m, id, "axes", n_axes, axes))
        return CARVE_NONE;
    return r;
}

carve_value_id rd_reshape(cv_rw *rw, carve_value_id x, carve_value_id shape, carve_value_id out)
{
    carve_value_id ins[2] = {x, shape};
    return piece(rw, "Reshape", 2, ins, out, NULL);
}

carve_value_id rd_cast(cv_rw *rw, carve_value_id x, carve_dtype to, carve_value_id out)
{
    carve_node_id id = CARVE_NONE;
    carve_value_id r = piece(rw, "Cast", 1, &x, out, &id);
    if (r != CARVE_NONE && carve_node_set_attr_int(rw->m, id, "to", to))
        return CARVE_NONE;
    return r;
}

carve_status rd_failed(cv_rw *rw)
{
    const cv_node *n = &rw->m->nodes[rw->node];
    return cv_error(rw->m->ctx, CARVE_ERR_NOMEM, "node '%s' (%s): out of memory decomposing", n->name, n->op);
}

carve_status rd_unsupported(cv_rw *rw, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    carve_status s = cv_node_verr(rw->m, rw->node, CARVE_ERR_UNSUPPORTED, "cannot decompose: ", fmt, ap);
    va_end(ap);
    return s;
}

/* Sign- or zero-extends any integer/bool tensor into int64 (uint64 keeps its
 * bits). The caller frees the result unless it is v's own data. */
static int64_t *ints_of(const cv_val *v, bool *owned)
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

static bool is_std_float(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

static bool is_std_int(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_INT16: case CARVE_INT32: case CARVE_INT64:
    case CARVE_UINT8: case CARVE_UINT16: case CARVE_UINT32: case CARVE_UINT64:
        return true;
    default: return false;
    }
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

#define ACC_ROW(NAME, T, F)                                                              \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const T *x = (const T *)c->x + io;                                               \
        double *a = (double *)c->acc + oo;                                               \
        const double *sh = c->shift ? c->shift + oo : NULL;                              \
        (void)sh;                                                                        \
        if (red) {                                                                       \
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0, m = sh ? sh[0] : 0;                   \
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

#define PROD_ROW(NAME, T)                                                                \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const T *x = (const T *)c->x + io;                                               \
        double *a = (double *)c->acc + oo;                                               \
        if (red) {                                                                       \
            double p = 1;                                                                \
            for (size_t j = 0; j < len; j++)                                             \
                p *= x[j];                                                               \
            *a *= p;                                                                     \
        } else {                                                                         \
            for (size_t j = 0; j < len; j++)                                             \
                a[j] *= x[j];                                                            \
        }                                                                                \
    }

ACC_ROW(row_sum_f, float, F_ID)
ACC_ROW(row_abs_f, float, F_ABS)
ACC_ROW(row_sq_f, float, F_SQ)
ACC_ROW(row_exp_f, float, F_EXP)
CMP_ROW(row_max_f, float, >)
CMP_ROW(row_min_f, float, <)
PROD_ROW(row_prod_f, float)
ACC_ROW(row_sum_d, double, F_ID)
ACC_ROW(row_abs_d, double, F_ABS)
ACC_ROW(row_sq_d, double, F_SQ)
ACC_ROW(row_exp_d, double, F_EXP)
CMP_ROW(row_max_d, double, >)
CMP_ROW(row_min_d, double, <)
PROD_ROW(row_prod_d, double)

/* Integer rows over int64 input (uint64 bits for unsigned), wrapping in
 * uint64. */
#define I_ID(v) ((uint64_t)(v))
#define I_ABS(v) ((v) < 0 ? 0 - (uint64_t)(v) : (uint64_t)(v))
#define I_SQ(v) ((uint64_t)(v) * (uint64_t)(v))

#define IACC_ROW(NAME, F)                                                                \
    static void NAME(const rctx *c, size_t io, size_t oo, size_t len, bool red)          \
    {                                                                                    \
        const int64_t *x = (const int64_t *)c->x + io;                                   \
        uint64_t *a = (uint64_t *)c->acc + oo;                                           \
        if (red) {                                                                       \
            uint64_t s = 0;                                                              \
            for (size_t j = 0; j < len; j++)                                             \
                s += F(x[j]);                                                            \
            *a += s;                                                                     \
        } else {                                                                         \
            for (size_t j = 0; j < len; j++)                                             \
                a[j] += F(x[j]);                                                         \
        }                                                                                \
    }

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

static void row_prod_i(const rctx *c, size_t io, size_t oo, size_t len, bool red)
{
    const int64_t *x = (const int64_t *)c->x + io;
    uint64_t *a = (uint64_t *)c->acc + oo;
    if (red) {
        uint64_t p = 1;
        for (size_t j = 0; j < len; j++)
            p *= (uint64_t)x[j];
        *a *= p;
    } else {
        for (size_t j = 0; j < len; j++)
            a[j] *= (uint64_t)x[j];
    }
}

IACC_ROW(row_sum_i, I_ID)
IACC_ROW(row_abs_i, I_ABS)
IACC_ROW(row_sq_i, I_SQ)
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
    int64_t *xi = ints_of(x, &owned);
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
    bool flt = is_std_float(dt);
    if (!flt && !is_std_int(dt) && !(dt == CARVE_BOOL && (kind == R_MAX || kind == R_MIN)))
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
        if (st) {
            cv_val_unref(y);
            return st;
        }
        out[0] = y;
        return CARVE_OK;
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

static const cv_type *tensor_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR ? t : NULL;
}

carve_status i_reduce(cv_ictx *c)
{
    const cv_node *nd = &c->m->nodes[c->node];
    int which = reduction_of(nd->op);
    const cv_type *t = tensor_in(c, 0);
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
            const cv_type *at = tensor_in(c, 1);
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

/* ================================================================ ArgMax / ArgMin */

/* NaN counts as the extreme (numpy); ties go to the first index, or the
 * last with select_last_index. */
#define ARG_IMPL(NAME, T)                                                                          \
    static void NAME(const T *x, int64_t *y, size_t outer, size_t n, size_t inner, bool is_max,   \
                     bool last, T *best)                                                           \
    {                                                                                              \
        for (size_t o = 0; o < outer; o++) {                                                       \
            const T *xo = x + o * n * inner;                                                       \
            int64_t *yo = y + o * inner;                                                           \
            for (size_t j = 0; j < inner; j++) {                                                   \
                best[j] = xo[j];                                                                   \
                yo[j] = 0;                                                                         \
            }                                                                                      \
            for (size_t i = 1; i < n; i++) {                                                       \
                const T *r = xo + i * inner;                                                       \
                for (size_t j = 0; j < inner; j++) {                                               \
                    T v = r[j], b = best[j];                                                       \
                    bool take = v != v ? (b == b || last)                                          \
                                       : is_max ? (v > b || (last && v == b)) : (v < b || (last && v == b)); \
                    if (take) {                                                                    \
                        best[j] = v;                                                               \
                        yo[j] = (int64_t)i;                                                        \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

ARG_IMPL(arg_f32, float)
ARG_IMPL(arg_f64, double)
ARG_IMPL(arg_i64, int64_t)
ARG_IMPL(arg_u64, uint64_t)

carve_status k_argreduce(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_node *nd = &k->m->nodes[k->node];
    bool is_max = !strcmp(nd->op, "ArgMax");
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !(is_std_float(x->dtype) || is_std_int(x->dtype)))
        return cv_kerr(k, "input 0 'data' has type %s, which %s does not take", carve_dtype_name(x->dtype), nd->op);
    int64_t axis = cv_attr_i(k->m, k->node, "axis", 0);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    bool keep = cv_attr_i(k->m, k->node, "keepdims", 1) != 0;
    bool last = k->opset >= 12 && cv_attr_i(k->m, k->node, "select_last_index", 0) != 0;
    size_t n = (size_t)x->dims[a], outer = sh_span(x->dims, 0, a), inner = sh_span(x->dims, a + 1, x->rank);
    int orank = 0;
    int64_t odims[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        if (i != a)
            odims[orank++] = x->dims[i];
        else if (keep)
            odims[orank++] = 1;
    if (!n && outer * inner != 0)
        return cv_kerr(k, "cannot take %s over axis %d of size 0", nd->op, a);
    cv_val *y = cv_val_new(CARVE_INT64, orank, odims);
    if (!y)
        return cv_knomem(k);
    if (!y->nelem) {
        out[0] = y;
        return CARVE_OK;
    }
    void *best = cv_malloc(inner * 8);
    cv_val *xf = NULL;
    int64_t *xi = NULL;
    bool owned = false;
    if (!best)
        goto nomem;
    switch (x->dtype) {
    case CARVE_FLOAT: arg_f32(x->data, y->data, outer, n, inner, is_max, last, best); break;
    case CARVE_DOUBLE: arg_f64(x->data, y->data, outer, n, inner, is_max, last, best); break;
    case CARVE_FLOAT16: case CARVE_BFLOAT16:
        if (!(xf = rd_to_f32(x)))
            goto nomem;
        arg_f32(xf->data, y->data, outer, n, inner, is_max, last, best);
        break;
    default:
        if (!(xi = ints_of(x, &owned)))
            goto nomem;
        if (cv_dtype_is_signed(x->dtype))
            arg_i64(xi, y->data, outer, n, inner, is_max, last, best);
        else
            arg_u64((const uint64_t *)xi, y->data, outer, n, inner, is_max, last, best);
        break;
    }
    if (owned)
        cv_free(xi);
    cv_val_unref(xf);
    cv_free(best);
    out[0] = y;
    return CARVE_OK;
nomem:
    cv_free(best);
    cv_val_unref(y);
    return cv_knomem(k);
}

carve_status i_argreduce(cv_ictx *c)
{
    const cv_type *t = tensor_in(c, 0);
    if (!t || t->rank < 0)
        return cv_infer_set(c, 0, CARVE_INT64, -1, NULL);
    int64_t axis = cv_attr_i(c->m, c->node, "axis", 0);
    int a = sh_axis(axis, t->rank);
    if (a < 0)
        return cv_ierr(c, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, t->rank);
    bool keep = cv_attr_i(c->m, c->node, "keepdims", 1) != 0;
    carve_dim d[CARVE_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < t->rank; i++)
        if (i != a)
            d[orank++] = t->dims[i];
        else if (keep)
            d[orank++] = (carve_dim){1, NULL};
    return cv_infer_set(c, 0, CARVE_INT64, orank, d);
}

/* ================================================================ Softmax, LogSoftmax, Hardmax */

enum { SM_SOFT, SM_LOG, SM_HARD };

/* exp(v) for v <= 0 (shifted softmax inputs, -inf included), without a
 * libm call so the loops vectorize: Cody-Waite reduction by ln 2 and the
 * Cephes polynomial (within 1.4 ulp on [-87, 0]). Below -87 the result
 * flushes to 0 (exp(-87) = 1.6e-38 is nothing next to a row sum >= 1). */
static inline float exp_neg(float v)
{
    float c = v < -87.0f ? -87.0f : v;
    float t = c * 1.44269504088896341f + 12582912.0f; /* round(c / ln 2) in the low bits */
    float k = t - 12582912.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    float r = c - k * 0.693359375f - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t eb = (tb - 0x4B400000u + 127u) << 23; /* 2^k, k in [-126, 0] */
    float sc;
    memcpy(&sc, &eb, sizeof sc);
    return v < -87.0f ? 0.0f : p * sc;
}

/* y = exp(x - m) for one row (m: a scalar) or element-wise shifts. */
static void exp_row(const float *x, float m, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exp_neg(x[i] - m);
}

static void exp_rows(const float *x, const float *m, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exp_neg(x[i] - m[i]);
}

static double sum_row(const float *y, size_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += y[i];
        s1 += y[i + 1];
        s2 += y[i + 2];
        s3 += y[i + 3];
    }
    for (; i < n; i++)
        s0 += y[i];
    return (s0 + s1) + (s2 + s3);
}

/* Softmax or LogSoftmax of one [n, inner] block of float32 with the fast
 * exp; false (y untouched) when the block holds a NaN or +inf, or a row is
 * all -inf, which the libm path then handles (-inf elsewhere, as attention
 * masks have, stays on the fast path). sc: 3 * inner doubles of scratch. */
static bool softmax_f32_block(const float *xo, float *yo, size_t n, size_t inner, int kind, double *sc)
{
    int ok = 1;
    if (inner == 1) {
        float m0 = xo[0], m1 = m0, m2 = m0, m3 = m0;
        size_t i = 0;
        for (; i + 4 <= n; i += 4) {
            m0 = xo[i] > m0 ? xo[i] : m0;
            m1 = xo[i + 1] > m1 ? xo[i + 1] : m1;
            m2 = xo[i + 2] > m2 ? xo[i + 2] : m2;
            m3 = xo[i + 3] > m3 ? xo[i + 3] : m3;
            ok &= (xo[i] < INFINITY) & (xo[i + 1] < INFINITY) & (xo[i + 2] < INFINITY) & (xo[i + 3] < INFINITY);
        }
        for (; i < n; i++) {
            m0 = xo[i] > m0 ? xo[i] : m0;
            ok &= xo[i] < INFINITY;
        }
        m0 = m1 > m0 ? m1 : m0;
        m2 = m3 > m2 ? m3 : m2;
        float mx = m2 > m0 ? m2 : m0;
        if (!ok || !(mx > -INFINITY))
            return false;
        exp_row(xo, mx, yo, n);
        double s = sum_row(yo, n);
        if (kind == SM_SOFT) {
            float inv = (float)(1.0 / s);
            for (i = 0; i < n; i++)
                yo[i] *= inv;
        } else {
            float ls = (float)log(s);
            for (i = 0; i < n; i++)
                yo[i] = (xo[i] - mx) - ls;
        }
        return true;
    }
    /* rows of inner elements, statistics per column */
    float *mx = (float *)sc, *t = mx + inner;
    double *s = sc + inner;
    memcpy(mx, xo, inner * sizeof *mx);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < inner; j++) {
            float v = xo[i * inner + j];
            mx[j] = v > mx[j] ? v : mx[j];
            ok &= v < INFINITY;
        }
    for (size_t j = 0; j < inner; j++)
        ok &= mx[j] > -INFINITY;
    if (!ok)
        return false;
    for (size_t j = 0; j < inner; j++)
        s[j] = 0;
    for (size_t i = 0; i < n; i++) {
        float *e = kind == SM_SOFT ? yo + i * inner : t;
        exp_rows(xo + i * inner, mx, e, inner);
        for (size_t j = 0; j < inner; j++)
            s[j] += e[j];
    }
    if (kind == SM_SOFT) {
        for (size_t j = 0; j < inner; j++)
            t[j] = (float)(1.0 / s[j]);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < inner; j++)
                yo[i * inner + j] *= t[j];
    } else {
        for (size_t j = 0; j < inner; j++)
            t[j] = mx[j] + (float)log(s[j]);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < inner; j++)
                yo[i * inner + j] = xo[i * inner + j] - t[j];
    }
    return true;
}

/* x viewed as [outer, n, inner], normalized along n. scratch: 2*inner
 * doubles. Sums run in double. */
#define SOFTMAX_IMPL(NAME, T, EXP)                                                               \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, int kind, double *sc) \
    {                                                                                            \
        if (!n)                                                                                  \
            return;                                                                              \
        for (size_t o = 0; o < outer; o++) {                                                     \
            const T *xo = x + o * n * inner;                                                     \
            T *yo = y + o * n * inner;                                                           \
            if (inner == 1) {                                                                    \
                size_t at = 0;                                                                   \
                for (size_t i = 1; i < n; i++)                                                   \
                    if (xo[i] > xo[at])                                                          \
                        at = i;                                                                  \
                T mx = xo[at];                                                                   \
                if (kind == SM_HARD) {                                                           \
                    for (size_t i = 0; i < n; i++)                                               \
                        yo[i] = 0;                                                               \
                    yo[at] = 1;                                                                  \
                    continue;                                                                    \
                }                                                                                \
                double s = 0;                                                                    \
                if (kind == SM_SOFT) {                                                           \
                    for (size_t i = 0; i < n; i++) {                                             \
                        T e = EXP(xo[i] - mx);                                                   \
                        yo[i] = e;                                                               \
                        s += e;                                                                  \
                    }                                                                            \
                    T inv = (T)(1.0 / s);                                                        \
                    for (size_t i = 0; i < n; i++)                                               \
                        yo[i] *= inv;                                                            \
                } else {                                                                         \
                    for (size_t i = 0; i < n; i++)                                               \
                        s += EXP(xo[i] - mx);                                                    \
                    T ls = (T)log(s);                                                            \
                    for (size_t i = 0; i < n; i++)                                               \
                        yo[i] = (xo[i] - mx) - ls;                                               \
                }                                                                                \
                continue;                                                                        \
            }                                                                                    \
            double *mx = sc, *s = sc + inner;                                                    \
            for (size_t j = 0; j < inner; j++) {                                                 \
                mx[j] = xo[j];                                                                   \
                s[j] = 0;                                                                        \
            }                                                                                    \
            for (size_t i = 1; i < n; i++)                                                       \
                for (size_t j = 0; j < inner; j++)                                               \
                    if (xo[i * inner + j] > mx[j]) {                                             \
                        mx[j] = xo[i * inner + j];                                               \
                        if (kind == SM_HARD)                                                     \
                            s[j] = (double)i;                                                    \
                    }                                                                            \
            if (kind == SM_HARD) {                                                               \
                for (size_t i = 0; i < n; i++)                                                   \
                    for (size_t j = 0; j < inner; j++)                                           \
                        yo[i * inner + j] = (size_t)s[j] == i;                                   \
                continue;                                                                        \
            }                                                                                    \
            for (size_t i = 0; i < n; i++)                                                       \
                for (size_t j = 0; j < inner; j++) {                                             \
                    T e = EXP((T)(xo[i * inner + j] - (T)mx[j]));                                \
                    if (kind == SM_SOFT)                                                         \
                        yo[i * inner + j] = e;                                                   \
                    s[j] += e;                                                                   \
                }                                                                                \
            if (kind == SM_SOFT) {                                                               \
                for (size_t j = 0; j < inner; j++)                                               \
                    s[j] = 1.0 / s[j];                                                           \
                for (size_t i = 0; i < n; i++)                                                   \
                    for (size_t j = 0; j < inner; j++)                                           \
                        yo[i * inner + j] *= (T)s[j];                                            \
            } else {                                                                             \
                for (size_t j = 0; j < inner; j++)                                               \
                    s[j] = log(s[j]);                                                            \
                for (size_t i = 0; i < n; i++)                                                   \
                    for (size_t j = 0; j < inner; j++)                                           \
                        yo[i * inner + j] = (T)(xo[i * inner + j] - (T)mx[j]) - (T)s[j];         \
            }                                                                                    \
        }                                                                                        \
    }

SOFTMAX_IMPL(softmax_f32, float, expf)
SOFTMAX_IMPL(softmax_f64, double, exp)

static void softmax_f32_any(const float *x, float *y, size_t outer, size_t n, size_t inner, int kind, double *sc)
{
    if (kind == SM_HARD || !n) {
        softmax_f32(x, y, outer, n, inner, kind, sc);
        return;
    }
    for (size_t o = 0; o < outer; o++) {
        const float *xo = x + o * n * inner;
        float *yo = y + o * n * inner;
        if (!softmax_f32_block(xo, yo, n, inner, kind, sc))
            softmax_f32(xo, yo, 1, n, inner, kind, sc);
    }
}

/* Runs one of the three on x viewed as [outer, n, inner]; *y gets a new
 * tensor of x's dtype and shape. */
static carve_status softmax_run(cv_kctx *k, const cv_val *x, size_t outer, size_t n, size_t inner, int kind,
                                cv_val **y)
{
    *y = NULL;
    /* scratch: 2 * inner doubles, or inner floats + inner doubles + inner floats */
    double *sc = cv_malloc(3 * inner * sizeof *sc + 8);
    cv_val *xf = NULL, *yf = NULL;
    if (!sc)
        goto nomem;
    if (x->dtype == CARVE_DOUBLE || x->dtype == CARVE_FLOAT) {
        if (!(*y = cv_val_like(x)))
            goto nomem;
        if (x->dtype == CARVE_DOUBLE)
            softmax_f64(x->data, (*y)->data, outer, n, inner, kind, sc);
        else
            softmax_f32_any(x->data, (*y)->data, outer, n, inner, kind, sc);
    } else {
        if (!(xf = rd_to_f32(x)) || !(yf = cv_val_like(xf)))
            goto nomem;
        softmax_f32_any(xf->data, yf->data, outer, n, inner, kind, sc);
        if (!(*y = rd_from_f32(yf, x->dtype)))
            goto nomem;
    }
    cv_free(sc);
    cv_val_unref(xf);
    cv_val_unref(yf);
    return CARVE_OK;
nomem:
    cv_free(sc);
    cv_val_unref(xf);
    cv_val_unref(yf);
    return cv_knomem(k);
}

carve_status k_softmax(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_node *nd = &k->m->nodes[k->node];
    int kind = !strcmp(nd->op, "Softmax") ? SM_SOFT : !strcmp(nd->op, "LogSoftmax") ? SM_LOG : SM_HARD;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !is_std_float(x->dtype))
        return cv_kerr(k, "input 0 'input' has type %s, which %s does not take", carve_dtype_name(x->dtype), nd->op);
    /* before 13: coerced to 2-D at axis (default 1); from 13: one axis
     * (default -1) */
    bool old = k->opset < 13;
    int64_t axis = cv_attr_i(k->m, k->node, "axis", old ? 1 : -1);
    int a = old && axis == x->rank ? x->rank : sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    size_t outer = sh_span(x->dims, 0, a);
    size_t n = old ? sh_span(x->dims, a, x->rank) : (size_t)x->dims[a];
    size_t inner = old ? 1 : sh_span(x->dims, a + 1, x->rank);
    return softmax_run(k, x, outer, n, inner, kind, &out[0]);
}

static carve_status d_softmax_common(cv_rw *rw, bool log_)
{
    carve_model *m = rw->m;
    carve_value_id x = m->nodes[rw->node].in[0], y = m->nodes[rw->node].out[0];
    int64_t axis = cv_attr_i(m, rw->node, "axis", -1);
    carve_value_id mx = rd_reduce(rw, "ReduceMax", x, 1, &axis, CARVE_NONE);
    carve_value_id d = rd_binary(rw, "Sub", x, mx, CARVE_NONE);
    carve_value_id e = rd_unary(rw, "Exp", d, CARVE_NONE);
    carve_value_id s = rd_reduce(rw, "ReduceSum", e, 1, &axis, CARVE_NONE);
    carve_value_id r;
    if (log_)
        r = rd_binary(rw, "Sub", d, rd_unary(rw, "Log", s, CARVE_NONE), y);
    else
        r = rd_binary(rw, "Div", e, s, y);
    return r == CARVE_NONE ? rd_failed(rw) : CARVE_OK;
}

/* Both follow the spec's function body (opset 13): max-shifted Exp over
 * ReduceSum. */
carve_status d_softmax(cv_rw *rw) { return d_softmax_common(rw, false); }
carve_status d_logsoftmax(cv_rw *rw) { return d_softmax_common(rw, true); }

/* ================================================================ CumSum */

#define CUMSUM_IMPL(NAME, T, A, TO_A, FROM_A)                                                    \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, bool excl, bool rev, \
                     A *run)                                                                     \
    {                                                                                            \
        for (size_t o = 0; o < outer; o++) {                                                     \
            for (size_t j = 0; j < inner; j++)                                                   \
                run[j] = 0;                                                                      \
            for (size_t s = 0; s < n; s++) {                                                     \
                size_t i = rev ? n - 1 - s : s;                                                  \
                const T *xr = x + (o * n + i) * inner;                                           \
                T *yr = y + (o * n + i) * inner;                                                 \
                if (excl)                                                                        \
                    for (size_t j = 0; j < inner; j++) {                                         \
                        yr[j] = FROM_A(run[j]);                                                  \
                        run[j] += TO_A(xr[j]);                                                   \
                    }                                                                            \
                else                                                                             \
                    for (size_t j = 0; j < inner; j++) {                                         \
                        run[j] += TO_A(xr[j]);                                                   \
                        yr[j] = FROM_A(run[j]);                                                  \
                    }                                                                            \
            }                                                                                    \
        }                                                                                        \
    }

#define TO_D(v) ((double)(v))
#define TO_U(v) ((uint64_t)(v))
#define TO_UI32(v) ((uint64_t)(int64_t)(v))
CUMSUM_IMPL(cumsum_f32, float, double, TO_D, (float))
CUMSUM_IMPL(cumsum_f64, double, double, TO_D, (double))
CUMSUM_IMPL(cumsum_i32, int32_t, uint64_t, TO_UI32, (int32_t)(uint32_t))
CUMSUM_IMPL(cumsum_u32, uint32_t, uint64_t, TO_U, (uint32_t))
CUMSUM_IMPL(cumsum_u64, uint64_t, uint64_t, TO_U, (uint64_t))

carve_status k_cumsum(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0], *av = in[1];
    carve_dtype dt = x->dtype;
    if (x->kind != CV_VAL_TENSOR || !(is_std_float(dt) || dt == CARVE_INT32 || dt == CARVE_INT64 ||
                                      dt == CARVE_UINT32 || dt == CARVE_UINT64))
        return cv_kerr(k, "input 0 'x' has type %s, which CumSum does not take", carve_dtype_name(dt));
    if (av->kind != CV_VAL_TENSOR || (av->dtype != CARVE_INT32 && av->dtype != CARVE_INT64) || av->rank > 1 ||
        av->nelem != 1)
        return cv_kerr(k, "input 1 'axis' must be an int32/int64 scalar (or 1-element tensor)");
    int64_t axis = cv_val_get_i64(av, 0);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "input 1 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    bool excl = cv_attr_i(k->m, k->node, "exclusive", 0) != 0;
    bool rev = cv_attr_i(k->m, k->node, "reverse", 0) != 0;
    size_t outer = sh_span(x->dims, 0, a), n = (size_t)x->dims[a], inner = sh_span(x->dims, a + 1, x->rank);
    cv_val *y = cv_val_like(x), *xf = NULL, *yf = NULL;
    void *run = cv_malloc(inner * 8 + 8);
    if (!y || !run)
        goto nomem;
    switch (dt) {
    case CARVE_FLOAT: cumsum_f32(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_DOUBLE: cumsum_f64(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_INT32: cumsum_i32(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_UINT32: cumsum_u32(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_INT64: case CARVE_UINT64:
        /* int64 through its uint64 bits: wrapping without signed overflow */
        cumsum_u64(x->data, y->data, outer, n, inner, excl, rev, run);
        break;
    default:
        if (!(xf = rd_to_f32(x)) || !(yf = cv_val_like(xf)))
            goto nomem;
        cumsum_f32(xf->data, yf->data, outer, n, inner, excl, rev, run);
        cv_val_unref(y);
        if (!(y = rd_from_f32(yf, dt)))
            goto nomem;
        break;
    }
    cv_val_unref(xf);
    cv_val_unref(yf);
    cv_free(run);
    out[0] = y;
    return CARVE_OK;
nomem:
    cv_val_unref(xf);
    cv_val_unref(yf);
    cv_val_unref(y);
    cv_free(run);
    return cv_knomem(k);
}

/* ================================================================ TopK */

/* Every dtype maps to a uint64 key whose unsigned order is the value order
 * (NaN above +inf, -0 == +0); "smallest" flips the key. Ties: lower index
 * first. */
typedef struct {
    uint64_t key;
    int64_t idx;
} tk_item;

static uint64_t key_f64(double d)
{
    if (d != d)
        return UINT64_MAX;
    d += 0.0; /* -0 -> +0 */
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return (u >> 63) ? ~u : u | (1ull << 63);
}

/* a ranks before b */
static bool tk_before(const tk_item *a, const tk_item *b)
{
    return a->key > b->key || (a->key == b->key && a->idx < b->idx);
}

static int tk_cmp(const void *pa, const void *pb)
{
    const tk_item *a = pa, *b = pb;
    return tk_before(a, b) ? -1 : tk_before(b, a) ? 1 : 0;
}

/* Min-heap on rank: the root is the item that ranks last. */
static void tk_sift(tk_item *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && tk_before(&h[w], &h[l]))
            w = l;
        if (r < n && tk_before(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        tk_item t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* The best k of items[0..n) into items[0..k), in rank order. */
static void tk_select(tk_item *items, size_t n, size_t k)
{
    if (!k)
        return;
    if (k * 4 >= n) {
        qsort(items, n, sizeof *items, tk_cmp);
        return;
    }
    for (size_t i = k / 2 + 1; i-- > 0;)
        tk_sift(items, k, i);
    for (size_t i = k; i < n; i++)
        if (tk_before(&items[i], &items[0])) {
            items[0] = items[i];
            tk_sift(items, k, 0);
        }
    qsort(items, k, sizeof *items, tk_cmp);
}

static void tk_keys(const cv_val *x, size_t base, size_t n, size_t stride, bool largest, tk_item *it)
{
    const void *d = x->data;
    switch (x->dtype) {
    case CARVE_FLOAT:
        for (size_t i = 0; i < n; i++)
            it[i].key = key_f64(((const float *)d)[base + i * stride]);
        break;
    case CARVE_DOUBLE:
        for (size_t i = 0; i < n; i++)
            it[i].key = key_f64(((const double *)d)[base + i * stride]);
        break;
    case CARVE_UINT64:
        for (size_t i = 0; i < n; i++)
            it[i].key = ((const uint64_t *)d)[base + i * stride];
        break;
    default:
        if (cv_dtype_is_signed(x->dtype))
            for (size_t i = 0; i < n; i++)
                it[i].key = (uint64_t)cv_val_get_i64(x, base + i * stride) ^ (1ull << 63);
        else if (cv_dtype_is_int(x->dtype))
            for (size_t i = 0; i < n; i++)
                it[i].key = (uint64_t)cv_val_get_i64(x, base + i * stride);
        else
            for (size_t i = 0; i < n; i++)
                it[i].key = key_f64(cv_val_get_f64(x, base + i * stride));
        break;
    }
    for (size_t i = 0; i < n; i++) {
        it[i].idx = (int64_t)i;
        if (!largest)
            it[i].key = ~it[i].key;
    }
}

carve_status k_topk(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !(is_std_float(x->dtype) || is_std_int(x->dtype)))
        return cv_kerr(k, "input 0 'X' has type %s, which TopK does not take", carve_dtype_name(x->dtype));
    int64_t axis = cv_attr_i(k->m, k->node, "axis", -1);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    bool largest = k->opset < 11 || cv_attr_i(k->m, k->node, "largest", 1) != 0;
    int64_t kk;
    if (k->opset < 10) {
        if (!carve_node_attr_int(k->m, k->node, "k", &kk))
            return cv_kerr(k, "attribute 'k' is missing");
    } else {
        const cv_val *kv = n_in > 1 ? in[1] : NULL;
        if (!kv || kv->kind != CV_VAL_TENSOR || kv->dtype != CARVE_INT64 || kv->rank > 1 || kv->nelem != 1)
            return cv_kerr(k, "input 1 'K' must be a 1-D int64 tensor with one value");
        kk = ((const int64_t *)kv->data)[0];
    }
    size_t n = (size_t)x->dims[a];
    if (kk < 0 || (uint64_t)kk > n)
        return cv_kerr(k, "k is %lld, outside [0, %zu] (the size of axis %d)", (long long)kk, n, a);
    size_t outer = sh_span(x->dims, 0, a), inner = sh_span(x->dims, a + 1, x->rank), kn = (size_t)kk;
    int64_t odims[CARVE_MAX_RANK];
    memcpy(odims, x->dims, (size_t)x->rank * sizeof *odims);
    odims[a] = kk;
    cv_val *vals = cv_val_new(x->dtype, x->rank, odims), *idx = cv_val_new(CARVE_INT64, x->rank, odims);
    tk_item *it = cv_malloc((n ? n : 1) * sizeof *it);
    if (!vals || !idx || !it) {
        cv_val_unref(vals);
        cv_val_unref(idx);
        cv_free(it);
        return cv_knomem(k);
    }
    size_t esz = cv_dtype_nbytes(x->dtype, 1);
    const uint8_t *xd = x->data;
    uint8_t *vd = vals->data;
    int64_t *id = idx->data;
    for (size_t o = 0; o < outer && kn; o++)
        for (size_t j = 0; j < inner; j++) {
            tk_keys(x, o * n * inner + j, n, inner, largest, it);
            tk_select(it, n, kn);
            for (size_t q = 0; q < kn; q++) {
                size_t dst = (o * kn + q) * inner + j, src = (o * n + (size_t)it[q].idx) * inner + j;
                memcpy(vd + dst * esz, xd + src * esz, esz);
                id[dst] = it[q].idx;
            }
        }
    cv_free(it);
    out[0] = vals;
    out[1] = idx;
    return CARVE_OK;
}

carve_status i_topk(cv_ictx *c)
{
    const cv_type *t = tensor_in(c, 0);
    carve_dtype dt = t ? t->dtype : CARVE_UNDEFINED;
    if (!t || t->rank < 0) {
        carve_status s = cv_infer_set(c, 0, dt, -1, NULL);
        return s ? s : cv_infer_set(c, 1, CARVE_INT64, -1, NULL);
    }
    int64_t axis = cv_attr_i(c->m, c->node, "axis", -1);
    int a = sh_axis(axis, t->rank);
    if (a < 0)
        return cv_ierr(c, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, t->rank);
    carve_dim d[CARVE_MAX_RANK];
    memcpy(d, t->dims, (size_t)t->rank * sizeof *d);
    d[a] = (carve_dim){-1, NULL};
    int64_t kk = -1;
    if (c->opset < 10) {
        if (!carve_node_attr_int(c->m, c->node, "k", &kk))
            kk = -1;
    } else {
        const cv_val *kv = c->const_input(c, 1);
        if (kv && kv->kind == CV_VAL_TENSOR && kv->nelem == 1 && cv_dtype_is_int(kv->dtype))
            kk = cv_val_get_i64(kv, 0);
    }
    if (kk >= 0) {
        if (t->dims[a].value >= 0 && kk > t->dims[a].value)
            return cv_ierr(c, "k is %lld, larger than axis %d of size %lld", (long long)kk, a,
                        (long long)t->dims[a].value);
        d[a] = (carve_dim){kk, NULL};
    }
    carve_status s = cv_infer_set(c, 0, dt, t->rank, d);
    return s ? s : cv_infer_set(c, 1, CARVE_INT64, t->rank, d);
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
    if (x->kind != CV_VAL_TENSOR || !is_std_float(x->dtype))
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

/* ================================================================ losses */

/* Negative log likelihood of x (N, C, d...) log-probabilities at target
 * (N, d...), weighted by w (C), with the node's reduction and
 * ignore_index. */
static carve_status nll_core(cv_kctx *k, const cv_val *x, const cv_val *t, const cv_val *w, const char *tname,
                             cv_val **loss)
{
    *loss = NULL;
    if (x->rank < 2)
        return cv_kerr(k, "input 0 has rank %d; it must be (N, C, d1, ...)", x->rank);
    if (t->kind != CV_VAL_TENSOR || (t->dtype != CARVE_INT32 && t->dtype != CARVE_INT64))
        return cv_kerr(k, "input 1 '%s' must be int32 or int64", tname);
    bool shape_ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int i = 1; shape_ok && i < t->rank; i++)
        shape_ok = t->dims[i] == x->dims[i + 1];
    if (!shape_ok)
        return cv_kerr(k, "input 1 '%s' must have the shape of input 0 without its dim 1", tname);
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], D = sh_span(x->dims, 2, x->rank);
    if (w && (w->kind != CV_VAL_TENSOR || w->rank != 1 || (size_t)w->dims[0] != C))
        return cv_kerr(k, "input 2 'weight' must be 1-D with %zu values (the class count)", C);
    const char *red = cv_attr_s(k->m, k->node, "reduction", "mean");
    int mode = !strcmp(red, "none") ? 0 : !strcmp(red, "sum") ? 1 : !strcmp(red, "mean") ? 2 : -1;
    if (mode < 0)
        return cv_kerr(k, "attribute 'reduction' is '%s'; expected none, sum or mean", red);
    int64_t ii = 0;
    bool has_ii = carve_node_attr_int(k->m, k->node, "ignore_index", &ii);
    cv_val *y = mode ? cv_val_new(x->dtype, 0, NULL) : cv_val_new(x->dtype, t->rank, t->dims);
    if (!y)
        return cv_knomem(k);
    double sum = 0, wsum = 0;
    for (size_t s = 0; s < N * D; s++) {
        int64_t c = cv_val_get_i64(t, s);
        double l = 0;
        if (!(has_ii && c == ii)) {
            if (c < 0 || (uint64_t)c >= C) {
                cv_val_unref(y);
                return cv_kerr(k, "input 1 '%s' value %lld at %zu is not a class in [0, %zu)", tname, (long long)c,
                               s, C);
            }
            size_t n = s / D, d = s % D;
            double wc = w ? cv_val_get_f64(w, (size_t)c) : 1;
            l = -cv_val_get_f64(x, (n * C + (size_t)c) * D + d) * wc;
            wsum += wc;
        }
        if (!mode)
            cv_val_set_f64(y, s, l);
        sum += l;
    }
    if (mode == 1)
        cv_val_set_f64(y, 0, sum);
    else if (mode == 2)
        cv_val_set_f64(y, 0, wsum != 0 ? sum / wsum : NAN);
    *loss = y;
    return CARVE_OK;
}

carve_status k_nllloss(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    if (in[0]->kind != CV_VAL_TENSOR || !is_std_float(in[0]->dtype))
        return cv_kerr(k, "input 0 'input' has type %s, which NegativeLogLikelihoodLoss does not take",
                       carve_dtype_name(in[0]->dtype));
    return nll_core(k, in[0], in[1], n_in > 2 ? in[2] : NULL, "target", &out[0]);
}

carve_status k_sceloss(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !is_std_float(x->dtype))
        return cv_kerr(k, "input 0 'scores' has type %s, which SoftmaxCrossEntropyLoss does not take",
                       carve_dtype_name(x->dtype));
    if (x->rank < 2)
        return cv_kerr(k, "input 0 'scores' has rank %d; it must be (N, C, d1, ...)", x->rank);
    cv_val *lp;
    carve_status s = softmax_run(k, x, (size_t)x->dims[0], (size_t)x->dims[1], sh_span(x->dims, 2, x->rank), SM_LOG,
                                 &lp);
    if (s)
        return s;
    s = nll_core(k, lp, in[1], n_in > 2 ? in[2] : NULL, "labels", &out[0]);
    if (s || n_out < 2)
        cv_val_unref(lp);
    else
        out[1] = lp;
    return s;
}

static carve_status loss_infer(cv_ictx *c)
{
    const cv_type *x = tensor_in(c, 0), *t = tensor_in(c, 1);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (x && x->rank >= 0 && x->rank < 2)
        return cv_ierr(c, "input 0 has rank %d; it must be (N, C, d1, ...)", x->rank);
    if (x && t && x->rank >= 0 && t->rank >= 0 && t->rank != x->rank - 1)
        return cv_ierr(c, "input 1 has rank %d; it must be %d (input 0's rank less one)", t->rank, x->rank - 1);
    const char *red = cv_attr_s(c->m, c->node, "reduction", "mean");
    if (strcmp(red, "none"))
        return cv_infer_set(c, 0, dt, 0, NULL);
    if (t && t->rank >= 0)
        return cv_infer_set(c, 0, dt, t->rank, t->dims);
    if (x && x->rank >= 2) {
        carve_dim d[CARVE_MAX_RANK];
        d[0] = x->dims[0];
        for (int i = 2; i < x->rank; i++)
            d[i - 1] = x->dims[i];
        return cv_infer_set(c, 0, dt, x->rank - 1, d);
    }
    return cv_infer_set(c, 0, dt, -1, NULL);
}

carve_status i_nllloss(cv_ictx *c) { return loss_infer(c); }

carve_status i_sceloss(cv_ictx *c)
{
    carve_status s = loss_infer(c);
    return s ? s : cv_infer_like(c, 1, 0, CARVE_UNDEFINED);
}

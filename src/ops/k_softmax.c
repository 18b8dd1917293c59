/* k_softmax.c: the softmax family (Softmax, LogSoftmax, Hardmax) and the
 * two losses built on log-probabilities (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss), with their inference. Their decompositions are
 * in d_reduce.c. */
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
    if (x->kind != CV_VAL_TENSOR || !rd_is_std_float(x->dtype))
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
    if (in[0]->kind != CV_VAL_TENSOR || !rd_is_std_float(in[0]->dtype))
        return cv_kerr(k, "input 0 'input' has type %s, which NegativeLogLikelihoodLoss does not take",
                       carve_dtype_name(in[0]->dtype));
    return nll_core(k, in[0], in[1], n_in > 2 ? in[2] : NULL, "target", &out[0]);
}

carve_status k_sceloss(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !rd_is_std_float(x->dtype))
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
    const cv_type *x = sh_tin(c, 0), *t = sh_tin(c, 1);
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

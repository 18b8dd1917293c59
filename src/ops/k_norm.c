/* k_norm.c: normalizations (BatchNormalization, InstanceNormalization,
 * LayerNormalization, GroupNormalization, MeanVarianceNormalization, LRN)
 * and their inference; their decompositions into core ops are in d_norm.c.
 *
 * Statistics are two-pass (mean, then mean of squared deviations) in
 * double, so a large mean never cancels the variance away; the element loop
 * then runs in the tensor's own float type: y = (x - mean) * a + b with a and
 * b per channel or per row. float16/bfloat16 go through float32. */
#include "k_norm.h"

#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width; the row loops here are hot in real models. Without
 * trapping math it may also if-convert the clamps in front of arithmetic
 * (carve never reads floating-point exception flags). */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif

/* Mean and (population) variance of a contiguous run, in double. */
#define STATS_IMPL(NAME, T)                                                   \
    static void NAME(const T *x, size_t n, double *mean, double *var)         \
    {                                                                         \
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                \
        size_t j = 0;                                                         \
        for (; j + 4 <= n; j += 4) {                                          \
            s0 += x[j];                                                       \
            s1 += x[j + 1];                                                   \
            s2 += x[j + 2];                                                   \
            s3 += x[j + 3];                                                   \
        }                                                                     \
        for (; j < n; j++)                                                    \
            s0 += x[j];                                                       \
        double m = n ? ((s0 + s1) + (s2 + s3)) / (double)n : NAN;             \
        s0 = s1 = s2 = s3 = 0;                                                \
        for (j = 0; j + 4 <= n; j += 4) {                                     \
            double d0 = x[j] - m, d1 = x[j + 1] - m, d2 = x[j + 2] - m,       \
                   d3 = x[j + 3] - m;                                         \
            s0 += d0 * d0;                                                    \
            s1 += d1 * d1;                                                    \
            s2 += d2 * d2;                                                    \
            s3 += d3 * d3;                                                    \
        }                                                                     \
        for (; j < n; j++)                                                    \
            s0 += (x[j] - m) * (x[j] - m);                                    \
        *mean = m;                                                            \
        *var = n ? ((s0 + s1) + (s2 + s3)) / (double)n : NAN;                 \
    }

STATS_IMPL(stats_f32, float)
STATS_IMPL(stats_f64, double)

/* y[j] = (x[j] - m) * a + b over a contiguous run. The mean is applied as
 * two parts (its rounding to T and the remainder), so a mean much larger
 * than the spread loses nothing to its own rounding. */
#define AFFINE_IMPL(NAME, T)                                                                \
    static void NAME(const T *x, T *y, size_t n, double m, double a, double b)              \
    {                                                                                       \
        T mh = (T)m, ml = (T)(m - mh), at = (T)a, bt = (T)b;                                \
        for (size_t j = 0; j < n; j++)                                                      \
            y[j] = ((x[j] - mh) - ml) * at + bt;                                            \
    }

AFFINE_IMPL(affine_f32, float)
AFFINE_IMPL(affine_f64, double)

/* The n elements of a work tensor (float32 or double) from element off:
 * their statistics, and the affine step from xw into yw. */
static void stats_at(const cv_val *xw, size_t off, size_t n, double *mean, double *var)
{
    if (xw->dtype == CARVE_DOUBLE)
        stats_f64((const double *)xw->data + off, n, mean, var);
    else
        stats_f32((const float *)xw->data + off, n, mean, var);
}

static void affine_at(const cv_val *xw, cv_val *yw, size_t off, size_t n, double m, double a, double b)
{
    if (xw->dtype == CARVE_DOUBLE)
        affine_f64((const double *)xw->data + off, (double *)yw->data + off, n, m, a, b);
    else
        affine_f32((const float *)xw->data + off, (float *)yw->data + off, n, m, a, b);
}

/* The float tensor a kernel computes on: x itself (float32/double) or a
 * float32 copy. */
static cv_val *work_of(const cv_val *x)
{
    return x->dtype == CARVE_FLOAT || x->dtype == CARVE_DOUBLE ? cv_val_ref((cv_val *)x) : rd_to_f32(x);
}

/* Turns the work result back into dtype (consumes yw). */
static cv_val *result_of(cv_val *yw, carve_dtype dtype)
{
    if (!yw || yw->dtype == dtype)
        return yw;
    cv_val *y = rd_from_f32(yw, dtype);
    cv_val_unref(yw);
    return y;
}

/* A small parameter tensor as doubles; NULL on NOMEM. */
static double *params_of(const cv_val *p, size_t n)
{
    double *d = cv_malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; d && i < n; i++)
        d[i] = cv_val_get_f64(p, i);
    return d;
}

/* What a normalization kernel works on: scale and bias as n doubles each
 * (when given), ntmp doubles of scratch (when not 0), x's working copy and
 * the result's. */
typedef struct {
    double *sc, *bi, *tmp;
    cv_val *xw, *yw;
} norm_work;

static void norm_free(norm_work *w)
{
    cv_free(w->sc);
    cv_free(w->bi);
    cv_free(w->tmp);
    cv_val_unref(w->xw);
    cv_val_unref(w->yw);
}

/* Fills w; CARVE_OK or NOMEM (then w holds nothing). */
static carve_status norm_begin(cv_kctx *k, norm_work *w, const cv_val *x, const cv_val *s, const cv_val *b, size_t n,
                               size_t ntmp)
{
    w->sc = s ? params_of(s, n) : NULL, w->bi = b ? params_of(b, n) : NULL;
    w->tmp = ntmp ? cv_malloc(ntmp * sizeof *w->tmp) : NULL;
    w->xw = work_of(x), w->yw = w->xw ? cv_val_like(w->xw) : NULL;
    if ((!s || w->sc) && (!b || w->bi) && (!ntmp || w->tmp) && w->xw && w->yw)
        return CARVE_OK;
    norm_free(w);
    return cv_knomem(k);
}

/* Frees w and makes out[0] the result in dtype. */
static carve_status norm_end(cv_kctx *k, norm_work *w, carve_dtype dtype, cv_val **out)
{
    cv_val *yw = w->yw;
    w->yw = NULL;
    norm_free(w);
    out[0] = result_of(yw, dtype);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

/* p broadcast (numpy, right-aligned) to dims[0..r), as doubles. false when
 * it does not broadcast. */
static bool bcast_params(const cv_val *p, int r, const int64_t *dims, double *dst)
{
    if (p->rank > r)
        return false;
    for (int i = 0; i < p->rank; i++) {
        int64_t pd = p->dims[i], od = dims[r - p->rank + i];
        if (pd != od && pd != 1)
            return false;
    }
    int64_t st[CARVE_MAX_RANK];
    cv_bcast_strides(p->rank, p->dims, r, dims, st);
    size_t n = cv_nelem(r, dims);
    for (size_t i = 0; i < n; i++) {
        size_t rem = i, off = 0;
        for (int d = r - 1; d >= 0; d--) {
            size_t dd = (size_t)dims[d];
            off += (rem % dd) * (size_t)st[d];
            rem /= dd;
        }
        dst[i] = cv_val_get_f64(p, off);
    }
    return true;
}

static bool float_input(cv_kctx *k, const cv_val *x, const char *name)
{
    if (x->kind == CV_VAL_TENSOR && norm_is_float(x->dtype))
        return true;
    cv_kerr(k, "input 0 '%s' has type %s, which %s does not take", name, carve_dtype_name(x->dtype),
            k->m->nodes[k->node].op);
    return false;
}

/* x (input 0, `name`) is a float tensor of rank 2 or more (N, C, D1, ...). */
static bool nc_input(cv_kctx *k, const cv_val *x, const char *name)
{
    if (!float_input(k, x, name))
        return false;
    if (x->rank >= 2)
        return true;
    cv_kerr(k, "input 0 '%s' has rank %d; it must be (N, C, D1, ...)", name, x->rank);
    return false;
}

static bool check_count(cv_kctx *k, const cv_val *p, uint32_t i, const char *name, size_t want, const char *what)
{
    if (p && p->kind == CV_VAL_TENSOR && norm_is_float(p->dtype) && p->nelem == want)
        return true;
    if (p && p->kind == CV_VAL_TENSOR && !norm_is_float(p->dtype))
        cv_kerr(k, "input %u '%s' has type %s; expected a float type", i, name, carve_dtype_name(p->dtype));
    else
        cv_kerr(k, "input %u '%s' has %zu values, expected %zu (%s)", i, name, p ? p->nelem : 0, want, what);
    return false;
}

/* InstanceNormalization's and GroupNormalization's start: inputs 1 and 2
 * (scale and `bias`) of n floats each (`what` says why n), then norm_begin;
 * CARVE_ERR_INVALID or NOMEM with the error set. */
static carve_status norm_begin_sb(cv_kctx *k, norm_work *w, cv_val **in, const char *bias, size_t n, const char *what)
{
    if (!check_count(k, in[1], 1, "scale", n, what) || !check_count(k, in[2], 2, bias, n, what))
        return CARVE_ERR_INVALID;
    return norm_begin(k, w, in[0], in[1], in[2], n, 0);
}

/* ================================================================ BatchNormalization */

static bool bn_training(cv_kctx *k, uint32_t n_out)
{
    if (k->opset >= 14)
        return cv_attr_i(k->m, k->node, "training_mode", 0) != 0;
    const cv_node *nd = &k->m->nodes[k->node];
    for (uint32_t i = 1; i < n_out; i++)
        if (nd->out[i] != CARVE_NONE)
            return true;
    return false;
}

carve_status k_batchnorm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in;
    const cv_val *x = in[0];
    if (!float_input(k, x, "X"))
        return CARVE_ERR_INVALID;
    if (x->rank < 1)
        return cv_kerr(k, "input 0 'X' is a scalar; it must be (N, C, ...)");
    bool training = bn_training(k, n_out);
    if (training && k->opset < 7 && cv_attr_i(k->m, k->node, "is_test", 0))
        return cv_kerr(k, "attribute 'is_test' is 1 but the node asks for the training outputs");
    /* before 9, spatial=0 keeps one statistic per (C, D1, ...) element */
    bool spatial = k->opset >= 9 || cv_attr_i(k->m, k->node, "spatial", 1) != 0;
    size_t N = (size_t)x->dims[0];
    size_t C = x->rank < 2 ? 1 : spatial ? (size_t)x->dims[1] : sh_span(x->dims, 1, x->rank);
    size_t S = x->rank < 2 || !spatial ? 1 : sh_span(x->dims, 2, x->rank);
    static const char *const names[5] = {"X", "scale", "B", "input_mean", "input_var"};
    for (uint32_t i = 1; i < 5; i++)
        if (!check_count(k, in[i], i, names[i], C, "one per channel"))
            return CARVE_ERR_INVALID;
    double eps = cv_attr_f(k->m, k->node, "epsilon", 1e-5f);
    double mom = cv_attr_f(k->m, k->node, "momentum", 0.9f);
    double *sc = params_of(in[1], C), *bi = params_of(in[2], C), *mu = params_of(in[3], C),
           *va = params_of(in[4], C), *bm = cv_malloc(((C ? C : 1) * 2 + 2 * N) * sizeof(double));
    /* the affine loop below covers N x C runs of S elements: all of y */
    cv_val *xw = work_of(x), *yw = xw ? cv_val_new_uninit(xw->dtype, xw->rank, xw->dims) : NULL, *y = NULL;
    carve_status st = CARVE_OK;
    if (!sc || !bi || !mu || !va || !bm || !xw || !yw) {
        st = cv_knomem(k);
        goto done;
    }
    double *bv = bm + C, *pm = bv + C, *pv = pm + N;
    if (training) {
        /* batch statistics over N and the spatial dims: per (n, c) run,
         * then pooled (equal run sizes) */
        for (size_t c = 0; c < C; c++) {
            double s = 0, q = 0;
            for (size_t n = 0; n < N; n++) {
                stats_at(xw, (n * C + c) * S, S, &pm[n], &pv[n]);
                s += pm[n];
            }
            bm[c] = N * S != 0 ? s / (double)N : NAN;
            for (size_t n = 0; n < N; n++)
                q += pv[n] + (pm[n] - bm[c]) * (pm[n] - bm[c]);
            bv[c] = N * S != 0 ? q / (double)N : NAN;
        }
    }
    for (size_t c = 0; c < C; c++) {
        double m = training ? bm[c] : mu[c], v = training ? bv[c] : va[c];
        double a = sc[c] / sqrt(v + eps);
        for (size_t n = 0; n < N; n++)
            affine_at(xw, yw, (n * C + c) * S, S, m, a, bi[c]);
    }
    if (!(y = result_of(cv_val_ref(yw), x->dtype))) {
        st = cv_knomem(k);
        goto done;
    }
    out[0] = y;
    if (training) {
        /* 14+: running_mean, running_var; before: mean, var, saved_mean,
         * saved_var */
        for (uint32_t i = 1; i < n_out && i < 5; i++) {
            cv_val *o = cv_val_like(in[i == 1 || i == 3 ? 3 : 4]);
            if (!o) {
                st = cv_knomem(k);
                goto done;
            }
            for (size_t c = 0; c < C; c++) {
                double r = i == 1 ? mu[c] * mom + bm[c] * (1 - mom)
                         : i == 2 ? va[c] * mom + bv[c] * (1 - mom)
                         : i == 3 ? bm[c] : bv[c];
                cv_val_set_f64(o, c, r);
            }
            out[i] = o;
        }
    }
done:
    cv_free(sc);
    cv_free(bi);
    cv_free(mu);
    cv_free(va);
    cv_free(bm);
    cv_val_unref(xw);
    cv_val_unref(yw);
    return st;
}

carve_status i_batchnorm(cv_ictx *c)
{
    carve_status s = cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
    const cv_node *nd = &c->m->nodes[c->node];
    for (uint32_t i = 1; !s && i < nd->n_out && i < 5; i++)
        s = cv_infer_like(c, i, i == 1 || i == 3 ? 3 : 4, CARVE_UNDEFINED);
    return s;
}

/* ================================================================ InstanceNormalization */

carve_status k_instancenorm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (!nc_input(k, x, "input"))
        return CARVE_ERR_INVALID;
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], S = sh_span(x->dims, 2, x->rank);
    double eps = cv_attr_f(k->m, k->node, "epsilon", 1e-5f);
    norm_work w;
    carve_status s = norm_begin_sb(k, &w, in, "B", C, "one per channel");
    if (s)
        return s;
    for (size_t r = 0; r < N * C; r++) {
        size_t c = r % C, off = r * S;
        double mean, var;
        stats_at(w.xw, off, S, &mean, &var);
        affine_at(w.xw, w.yw, off, S, mean, w.sc[c] / sqrt(var + eps), w.bi[c]);
    }
    return norm_end(k, &w, x->dtype, out);
}

/* ================================================================ LayerNormalization */

#define LN_IMPL(NAME, T, STATS)                                                                     \
    static void NAME(const T *x, T *y, size_t outer, size_t n, const T *s, const T *b, double eps, \
                     double *mean, double *inv)                                                     \
    {                                                                                               \
        for (size_t o = 0; o < outer; o++) {                                                        \
            const T *xr = x + o * n;                                                                \
            T *yr = y + o * n;                                                                      \
            double mu, var;                                                                         \
            STATS(xr, n, &mu, &var);                                                                \
            double iv = 1.0 / sqrt(var + eps);                                                      \
            mean[o] = mu;                                                                           \
            inv[o] = iv;                                                                            \
            T mh = (T)mu, ml = (T)(mu - mh), it = (T)iv;                                            \
            if (b)                                                                                  \
                for (size_t j = 0; j < n; j++)                                                      \
                    yr[j] = ((xr[j] - mh) - ml) * it * s[j] + b[j];                                 \
            else                                                                                    \
                for (size_t j = 0; j < n; j++)                                                      \
                    yr[j] = ((xr[j] - mh) - ml) * it * s[j];                                        \
        }                                                                                           \
    }

LN_IMPL(ln_f32, float, stats_f32)
LN_IMPL(ln_f64, double, stats_f64)

carve_status k_layernorm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    const cv_val *x = in[0], *sv = in[1], *bv = n_in > 2 ? in[2] : NULL;
    if (!float_input(k, x, "X"))
        return CARVE_ERR_INVALID;
    int64_t axis = cv_attr_i(k->m, k->node, "axis", -1);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "attribute 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    size_t outer = sh_span(x->dims, 0, a), n = sh_span(x->dims, a, x->rank);
    double eps = cv_attr_f(k->m, k->node, "epsilon", 1e-5f);
    int nr = x->rank - a;
    const int64_t *nd = x->dims + a;
    double *sd = cv_malloc((n ? n : 1) * 2 * sizeof *sd), *stats = cv_malloc((outer ? outer : 1) * 2 * sizeof *stats);
    cv_val *xw = work_of(x), *yw = xw ? cv_val_like(xw) : NULL;
    void *sb = NULL;
    carve_status st = CARVE_OK;
    if (!sd || !stats || !xw || !yw) {
        st = cv_knomem(k);
        goto done;
    }
    double *bd = sd + n;
    if (sv->kind != CV_VAL_TENSOR || !norm_is_float(sv->dtype) || !bcast_params(sv, nr, nd, sd)) {
        st = cv_kerr(k, "input 1 'Scale' (rank %d) does not broadcast to the normalized shape (rank %d, from axis %d)",
                     sv->rank, nr, a);
        goto done;
    }
    if (bv && (bv->kind != CV_VAL_TENSOR || !norm_is_float(bv->dtype) || !bcast_params(bv, nr, nd, bd))) {
        st = cv_kerr(k, "input 2 'B' (rank %d) does not broadcast to the normalized shape (rank %d, from axis %d)",
                     bv->rank, nr, a);
        goto done;
    }
    if (xw->dtype == CARVE_DOUBLE) {
        ln_f64(xw->data, yw->data, outer, n, sd, bv ? bd : NULL, eps, stats, stats + outer);
    } else {
        float *sf = sb = cv_malloc((n ? n : 1) * 2 * sizeof *sf);
        if (!sf) {
            st = cv_knomem(k);
            goto done;
        }
        for (size_t j = 0; j < n; j++) {
            sf[j] = (float)sd[j];
            sf[n + j] = (float)bd[j];
        }
        ln_f32(xw->data, yw->data, outer, n, sf, bv ? sf + n : NULL, eps, stats, stats + outer);
    }
    if (!(out[0] = result_of(cv_val_ref(yw), x->dtype))) {
        st = cv_knomem(k);
        goto done;
    }
    /* Mean and InvStdDev: X's dims before axis, 1 after */
    int64_t sdims[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        sdims[i] = i < a ? x->dims[i] : 1;
    carve_dtype ut = norm_stash_type(k->m, k->node);
    for (uint32_t i = 1; i < n_out && i < 3; i++) {
        cv_val *o = cv_val_new(ut, x->rank, sdims);
        if (!o) {
            st = cv_knomem(k);
            goto done;
        }
        for (size_t r = 0; r < outer; r++)
            cv_val_set_f64(o, r, stats[(i - 1) * outer + r]);
        out[i] = o;
    }
done:
    cv_free(sd);
    cv_free(stats);
    cv_free(sb);
    cv_val_unref(xw);
    cv_val_unref(yw);
    return st;
}

carve_status i_layernorm(cv_ictx *c)
{
    carve_status s = cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
    const cv_node *nd = &c->m->nodes[c->node];
    if (s || nd->n_out < 2)
        return s;
    const cv_type *t = cv_infer_in(c, 0);
    carve_dtype ut = norm_stash_type(c->m, c->node);
    if (!t || t->kind != CARVE_TYPE_TENSOR || t->rank < 0) {
        s = cv_infer_set(c, 1, ut, -1, NULL);
        return s ? s : cv_infer_set(c, 2, ut, -1, NULL);
    }
    int64_t axis = cv_attr_i(c->m, c->node, "axis", -1);
    int a = sh_axis(axis, t->rank);
    if (a < 0)
        return cv_ierr(c, "attribute 'axis' is out of range for the input rank");
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        d[i] = i < a ? t->dims[i] : (carve_dim){1, NULL};
    s = cv_infer_set(c, 1, ut, t->rank, d);
    return s ? s : cv_infer_set(c, 2, ut, t->rank, d);
}

/* ================================================================ GroupNormalization */

/* Opset 18: scale and bias per group. Opset 21: per channel (and
 * stash_type, which only sets the precision: carve always computes the
 * statistics in double). */
carve_status k_groupnorm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (!nc_input(k, x, "X"))
        return CARVE_ERR_INVALID;
    int64_t g;
    if (!carve_node_attr_int(k->m, k->node, "num_groups", &g))
        return cv_kerr(k, "attribute 'num_groups' is missing");
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], S = sh_span(x->dims, 2, x->rank);
    if (g <= 0 || C % (uint64_t)g)
        return cv_kerr(k, "attribute 'num_groups' is %lld; it must divide the %zu channels", (long long)g, C);
    size_t G = (size_t)g, cg = C / G;
    bool per_channel = k->opset >= 21;
    size_t np = per_channel ? C : G;
    const char *what = per_channel ? "one per channel" : "one per group before opset 21";
    double eps = cv_attr_f(k->m, k->node, "epsilon", 1e-5f);
    norm_work w;
    carve_status s = norm_begin_sb(k, &w, in, "bias", np, what);
    if (s)
        return s;
    for (size_t n = 0; n < N; n++)
        for (size_t q = 0; q < G; q++) {
            size_t off = (n * C + q * cg) * S;
            double mean, var;
            stats_at(w.xw, off, cg * S, &mean, &var);
            double iv = 1.0 / sqrt(var + eps);
            for (size_t c = 0; c < cg; c++) {
                size_t p = per_channel ? q * cg + c : q;
                affine_at(w.xw, w.yw, off + c * S, S, mean, iv * w.sc[p], w.bi[p]);
            }
        }
    return norm_end(k, &w, x->dtype, out);
}

/* ================================================================ MeanVarianceNormalization */

/* (X - mean) / (std + 1e-9) over axes (default [0, 2, 3]), with the
 * statistics per group of the non-reduced axes. */
#define MVN_IMPL(NAME, T)                                                                              \
    static void NAME(const T *x, T *y, int rank, const int64_t *dims, const int64_t *ost, size_t no, \
                     double *acc)                                                                      \
    {                                                                                                  \
        size_t total = cv_nelem(rank, dims);                                                           \
        double *mean = acc, *var = acc + no, *cnt = acc + 2 * no;                                      \
        for (int pass = 0; pass < 3; pass++) {                                                         \
            int64_t idx[CARVE_MAX_RANK] = {0};                                                         \
            size_t o = 0;                                                                              \
            for (size_t i = 0; i < total; i++) {                                                       \
                if (pass == 0) {                                                                       \
                    mean[o] += x[i];                                                                   \
                    cnt[o] += 1;                                                                       \
                } else if (pass == 1) {                                                                \
                    double d = x[i] - mean[o];                                                         \
                    var[o] += d * d;                                                                   \
                } else {                                                                               \
                    y[i] = (T)((x[i] - mean[o]) * var[o]);                                             \
                }                                                                                      \
                for (int d = rank - 1; d >= 0; d--) {                                                  \
                    o += (size_t)ost[d];                                                               \
                    if (++idx[d] < dims[d])                                                            \
                        break;                                                                         \
                    o -= (size_t)(ost[d] * dims[d]);                                                   \
                    idx[d] = 0;                                                                        \
                }                                                                                      \
            }                                                                                          \
            if (pass == 0)                                                                             \
                for (size_t q = 0; q < no; q++)                                                        \
                    mean[q] = cnt[q] ? mean[q] / cnt[q] : 0;                                           \
            else if (pass == 1)                                                                        \
                for (size_t q = 0; q < no; q++)                                                        \
                    var[q] = 1.0 / (sqrt(cnt[q] ? var[q] / cnt[q] : 0) + 1e-9);                        \
        }                                                                                              \
    }

MVN_IMPL(mvn_f32, float)
MVN_IMPL(mvn_f64, double)

static bool mvn_axes(const carve_model *m, carve_node_id n, int rank, bool *mask, int64_t *bad)
{
    static const int64_t dflt[3] = {0, 2, 3};
    const int64_t *axes = dflt;
    int na = cv_attr_ints(m, n, "axes", &axes);
    if (na < 0) {
        axes = dflt;
        na = 3;
    }
    for (int i = 0; i < rank; i++)
        mask[i] = false;
    for (int i = 0; i < na; i++) {
        int a = sh_axis(axes[i], rank);
        if (a < 0) {
            *bad = axes[i];
            return false;
        }
        mask[a] = true;
    }
    return true;
}

carve_status k_mvn(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (!float_input(k, x, "X"))
        return CARVE_ERR_INVALID;
    bool mask[CARVE_MAX_RANK];
    int64_t bad = 0;
    if (!mvn_axes(k->m, k->node, x->rank, mask, &bad))
        return cv_kerr(k, "attribute 'axes' value %lld is out of range for input rank %d (the default is [0, 2, 3])",
                       (long long)bad, x->rank);
    int64_t ost[CARVE_MAX_RANK];
    size_t no = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        ost[i] = mask[i] ? 0 : (int64_t)no;
        if (!mask[i])
            no *= (size_t)x->dims[i];
    }
    norm_work w;
    if (norm_begin(k, &w, x, NULL, NULL, 0, (no ? no : 1) * 3))
        return CARVE_ERR_NOMEM;
    memset(w.tmp, 0, (no ? no : 1) * 3 * sizeof *w.tmp);
    if (w.xw->dtype == CARVE_DOUBLE)
        mvn_f64(w.xw->data, w.yw->data, x->rank, x->dims, ost, no, w.tmp);
    else
        mvn_f32(w.xw->data, w.yw->data, x->rank, x->dims, ost, no, w.tmp);
    return norm_end(k, &w, x->dtype, out);
}

/* ================================================================ LRN */

#define LRN_IMPL(NAME, T)                                                                            \
    static void NAME(const T *x, T *y, size_t N, size_t C, size_t S, int64_t size, double alpha,    \
                     double beta, double bias, double *sq)                                           \
    {                                                                                                \
        int64_t lo_off = (size - 1) / 2, hi_off = size / 2; /* floor and ceil of (size-1)/2 */       \
        double k = alpha / (double)size;                                                             \
        for (size_t n = 0; n < N; n++)                                                               \
            for (size_t c = 0; c < C; c++) {                                                         \
                int64_t lo = (int64_t)c - lo_off, hi = (int64_t)c + hi_off;                          \
                if (lo < 0)                                                                          \
                    lo = 0;                                                                          \
                if (hi > (int64_t)C - 1)                                                             \
                    hi = (int64_t)C - 1;                                                             \
                for (size_t s = 0; s < S; s++)                                                       \
                    sq[s] = 0;                                                                       \
                for (int64_t i = lo; i <= hi; i++) {                                                 \
                    const T *r = x + (n * C + (size_t)i) * S;                                        \
                    for (size_t s = 0; s < S; s++)                                                   \
                        sq[s] += (double)r[s] * r[s];                                                \
                }                                                                                    \
                const T *xr = x + (n * C + c) * S;                                                   \
                T *yr = y + (n * C + c) * S;                                                         \
                for (size_t s = 0; s < S; s++)                                                       \
                    yr[s] = (T)(xr[s] / pow(bias + k * sq[s], beta));                                \
            }                                                                                        \
    }

LRN_IMPL(lrn_f32, float)
LRN_IMPL(lrn_f64, double)

carve_status k_lrn(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (!nc_input(k, x, "X"))
        return CARVE_ERR_INVALID;
    int64_t size;
    if (!carve_node_attr_int(k->m, k->node, "size", &size) || size < 1)
        return cv_kerr(k, "attribute 'size' is missing or below 1");
    double alpha = cv_attr_f(k->m, k->node, "alpha", 1e-4f), beta = cv_attr_f(k->m, k->node, "beta", 0.75f),
           bias = cv_attr_f(k->m, k->node, "bias", 1.0f);
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], S = sh_span(x->dims, 2, x->rank);
    norm_work w;
    if (norm_begin(k, &w, x, NULL, NULL, 0, S ? S : 1))
        return CARVE_ERR_NOMEM;
    if (w.xw->dtype == CARVE_DOUBLE)
        lrn_f64(w.xw->data, w.yw->data, N, C, S, size, alpha, beta, bias, w.tmp);
    else
        lrn_f32(w.xw->data, w.yw->data, N, C, S, size, alpha, beta, bias, w.tmp);
    return norm_end(k, &w, x->dtype, out);
}

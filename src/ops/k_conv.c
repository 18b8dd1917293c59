/* k_conv.c: convolutions. Conv and ConvTranspose, the shape inference of
 * every convolution (ConvInteger and QLinearConv too), and the window
 * geometry (win_read, win_fwd, win_bwd) the pools share (k_pool.c). The
 * depthwise loop is in k_conv_dw.c, the integer forms in k_qlinear.c.
 *
 * Conv runs one GEMM (OpenBLAS) per image, group and tile of output lines:
 * a 1x1 stride-1 unpadded kernel multiplies the input directly, a 2-D
 * depthwise kernel (one input channel per group) is a direct loop, anything
 * else is unrolled patch by patch (im2col) into a column buffer of about
 * COL_BUDGET elements, so a 1024x1024 image never needs a gigabyte of
 * columns. ConvTranspose is the adjoint: one GEMM into columns, then col2im
 * adds them into the output. float16/bfloat16 compute in float32 and round
 * once at the end; double computes in double; the integer forms
 * (k_qlinear.c) centre both operands on their zero points and run the
 * double path, which is exact. */
#include "k_conv.h"

#include "blas.h"
#include <limits.h>
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width; the bias fill and im2col's gathers are not. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Column tile: 4 MB of float32 stays in cache between im2col writing it
 * and the GEMM reading it; 16 MB tiles measured a third slower. */
#define COL_BUDGET ((size_t)1 << 20)

enum { AP_NOTSET, AP_SAME_UPPER, AP_SAME_LOWER, AP_VALID };

/* An INTS attribute of exactly `want` values in [lo, hi] into v (defaults
 * dflt when absent). */
static bool read_ints(const carve_model *m, carve_node_id node, const char *name, int want, int64_t lo, int64_t hi,
                      int64_t dflt, int64_t *v, char *err, size_t errsz)
{
    const int64_t *a;
    int c = cv_attr_ints(m, node, name, &a);
    if (c < 0) {
        for (int i = 0; i < want; i++)
            v[i] = dflt;
        return true;
    }
    if (c != want) {
        snprintf(err, errsz, "attribute '%s' has %d values, expected %d", name, c, want);
        return false;
    }
    for (int i = 0; i < c; i++) {
        if (a[i] < lo || a[i] > hi) {
            snprintf(err, errsz, "attribute '%s' value %lld is out of range [%lld, %lld]", name, (long long)a[i],
                     (long long)lo, (long long)hi);
            return false;
        }
        v[i] = a[i];
    }
    return true;
}

/* Reads kernel_shape (else the kernel dims of W, wk, -1 where unknown),
 * strides, dilations, pads, auto_pad, ceil_mode and output_padding. */
bool win_read(const carve_model *m, carve_node_id node, int n, const int64_t *wk, win *w, char *err,
                     size_t errsz)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    const int64_t *ks;
    int c = cv_attr_ints(m, node, "kernel_shape", &ks);
    if (c >= 0) {
        if (!read_ints(m, node, "kernel_shape", n, 1, INT32_MAX, 1, w->k, err, errsz))
            return false;
        for (int i = 0; wk && i < n; i++)
            if (wk[i] >= 0 && wk[i] != w->k[i]) {
                snprintf(err, errsz, "attribute 'kernel_shape' value %d is %lld but input 1 'W' has %lld there", i,
                         (long long)w->k[i], (long long)wk[i]);
                return false;
            }
    } else if (wk) {
        memcpy(w->k, wk, (size_t)n * sizeof *wk);
    } else {
        snprintf(err, errsz, "attribute 'kernel_shape' is missing");
        return false;
    }
    int64_t pads[2 * NSP];
    if (!read_ints(m, node, "strides", n, 1, INT32_MAX, 1, w->s, err, errsz) ||
        !read_ints(m, node, "dilations", n, 1, INT32_MAX, 1, w->d, err, errsz) ||
        !read_ints(m, node, "pads", 2 * n, 0, INT32_MAX, 0, pads, err, errsz) ||
        !read_ints(m, node, "output_padding", n, 0, INT32_MAX, 0, w->op, err, errsz))
        return false;
    memcpy(w->pb, pads, (size_t)n * sizeof *pads);
    memcpy(w->pe, pads + n, (size_t)n * sizeof *pads);
    const char *ap = cv_attr_s(m, node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !*ap)
        w->autopad = AP_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        w->autopad = AP_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        w->autopad = AP_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        w->autopad = AP_VALID;
    else {
        snprintf(err, errsz, "attribute 'auto_pad' is '%s', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
        return false;
    }
    w->ceil = cv_attr_i(m, node, "ceil_mode", 0) != 0;
    return true;
}

/* Output size and pads of a conv or pool along axis i for input size in
 * (-1: unknown, giving -1 unless auto_pad decides alone). */
bool win_fwd(win *w, int i, int64_t in, char *err, size_t errsz)
{
    int64_t s = w->s[i];
    w->in[i] = in;
    w->out[i] = -1;
    if (in < 0)
        return true;
    if (in > DIM_MAX) {
        snprintf(err, errsz, "spatial axis %d: size %lld is too large", i, (long long)in);
        return false;
    }
    if (w->autopad == AP_SAME_UPPER || w->autopad == AP_SAME_LOWER) {
        int64_t out = win_cdiv(in, s);
        w->out[i] = out;
        if (w->k[i] < 0)
            return true;
        int64_t total = (out - 1) * s + (w->k[i] - 1) * w->d[i] + 1 - in;
        if (total < 0)
            total = 0;
        if (w->autopad == AP_SAME_UPPER)
            w->pb[i] = total / 2, w->pe[i] = total - total / 2;
        else
            w->pe[i] = total / 2, w->pb[i] = total - total / 2;
        return true;
    }
    if (w->k[i] < 0)
        return true;
    if (w->autopad == AP_VALID)
        w->pb[i] = w->pe[i] = 0;
    int64_t eff = (w->k[i] - 1) * w->d[i] + 1, span = in + w->pb[i] + w->pe[i] - eff;
    if (span < 0 && in == 0) { /* an empty axis stays empty */
        w->out[i] = 0;
        return true;
    }
    if (span < 0) {
        snprintf(err, errsz, "spatial axis %d: the window (%lld with dilation) is larger than the padded input (%lld)", i,
                 (long long)eff, (long long)(in + w->pb[i] + w->pe[i]));
        return false;
    }
    int64_t out = (w->ceil ? win_cdiv(span, s) : span / s) + 1;
    if (w->ceil && (out - 1) * s >= in + w->pb[i]) /* the last window must start inside the input or its begin pad */
        out--;
    w->out[i] = out;
    return true;
}

/* ConvTranspose: output size and pads along axis i; os is the output_shape
 * attribute's value for the axis or -1. */
bool win_bwd(win *w, int i, int64_t in, int64_t os, char *err, size_t errsz)
{
    int64_t s = w->s[i];
    bool same = w->autopad == AP_SAME_UPPER || w->autopad == AP_SAME_LOWER;
    if ((in >= 0 && !win_span_ok(in + 1, s)) || os > DIM_MAX) {
        snprintf(err, errsz, "spatial axis %d: input size %lld (stride %lld) or output_shape %lld is too large", i,
                 (long long)in, (long long)s, (long long)os);
        return false;
    }
    w->in[i] = in;
    int64_t out = os >= 0 ? os : same && in >= 0 ? in * s : -1;
    w->out[i] = out;
    if (in < 0 || w->k[i] < 0)
        return true;
    int64_t natural = s * (in - 1) + w->op[i] + (w->k[i] - 1) * w->d[i] + 1;
    if (out >= 0) {
        /* pads from the total, the odd one at the end for SAME_UPPER, at the
         * beginning otherwise (the spec's formula) */
        int64_t total = natural - out;
        if (w->autopad == AP_SAME_UPPER)
            w->pb[i] = win_fdiv(total, 2), w->pe[i] = total - win_fdiv(total, 2);
        else
            w->pe[i] = win_fdiv(total, 2), w->pb[i] = total - win_fdiv(total, 2);
    } else {
        if (w->autopad == AP_VALID)
            w->pb[i] = w->pe[i] = 0;
        out = natural - w->pb[i] - w->pe[i];
    }
    if (out < 0) {
        snprintf(err, errsz, "spatial axis %d: the output size would be %lld", i, (long long)out);
        return false;
    }
    w->out[i] = out;
    return true;
}

/* ---------------------------------------------------------------- GEMM */

static bool gemm(bool dbl, bool ta, size_t M, size_t N, size_t K, const void *A, size_t lda, const void *B, size_t ldb,
                 double beta, void *C, size_t ldc)
{
    if (!M || !N || !K)
        return true; /* callers pre-fill C */
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
        return false;
    if (dbl)
        cv_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, A,
                    (int)lda, B, (int)ldb, beta, C, (int)ldc);
    else
        cv_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A,
                    (int)lda, B, (int)ldb, (float)beta, C, (int)ldc);
    return true;
}

/* ---------------------------------------------------------------- Conv */

/* Unrolls output lines [l0, l1) (all spatial axes but the last) of the Cg
 * channels at x into col: row (c, kernel offset), one column per output
 * position of the tile. */
static void im2col(const win *w, const uint8_t *x, size_t es, int64_t Cg, int64_t l0, int64_t l1, uint8_t *col)
{
    int n = w->n, last = n - 1;
    int64_t L = w->out[last], IW = w->in[last], KK = (int64_t)win_prod(n, w->k), s = w->s[last];
    size_t Pin = win_prod(n, w->in), cols = (size_t)((l1 - l0) * L);
    int64_t kc[NSP];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kk = 0; kk < KK; kk++) {
            int64_t r = kk;
            for (int j = n - 1; j >= 0; j--)
                kc[j] = r % w->k[j], r /= w->k[j];
            uint8_t *dst = col + (size_t)(c * KK + kk) * cols * es;
            int64_t off = kc[last] * w->d[last] - w->pb[last], lo, hi;
            win_valid_range(off, s, IW, L, &lo, &hi);
            for (int64_t l = l0; l < l1; l++, dst += (size_t)L * es) {
                int64_t rem = l, row = 0, stride = 1;
                bool ok = lo < hi;
                for (int j = n - 2; ok && j >= 0; j--) {
                    int64_t ic = (rem % w->out[j]) * w->s[j] - w->pb[j] + kc[j] * w->d[j];
                    rem /= w->out[j];
                    ok = ic >= 0 && ic < w->in[j];
                    row += ic * stride, stride *= w->in[j];
                }
                if (!ok) {
                    memset(dst, 0, (size_t)L * es);
                    continue;
                }
                const uint8_t *src = x + ((size_t)c * Pin + (size_t)(row * IW)) * es;
                memset(dst, 0, (size_t)lo * es);
                memset(dst + (size_t)hi * es, 0, (size_t)(L - hi) * es);
                if (s == 1) {
                    memcpy(dst + (size_t)lo * es, src + (size_t)(lo + off) * es, (size_t)(hi - lo) * es);
                } else if (es == 4) {
                    const float *sp = (const float *)src;
                    float *dp = (float *)dst;
                    for (int64_t o = lo; o < hi; o++)
                        dp[o] = sp[o * s + off];
                } else {
                    const double *sp = (const double *)src;
                    double *dp = (double *)dst;
                    for (int64_t o = lo; o < hi; o++)
                        dp[o] = sp[o * s + off];
                }
            }
        }
}

/* Fills each output channel with its bias, or y with zeros when there is
 * none: the GEMMs and the depthwise loop accumulate into every element. */
static void fill_bias(bool dbl, void *y, int64_t N, int64_t M, size_t P, const void *b)
{
    if (!b) {
        memset(y, 0, (size_t)N * (size_t)M * P * (dbl ? 8 : 4));
        return;
    }
    for (int64_t nn = 0; P && nn < N; nn++)
        for (int64_t m = 0; m < M; m++) {
            size_t o = (size_t)(nn * M + m) * P;
            if (dbl) {
                double v = ((const double *)b)[m], *yp = (double *)y + o;
                for (size_t i = 0; i < P; i++)
                    yp[i] = v;
            } else {
                float v = ((const float *)b)[m], *yp = (float *)y + o;
                for (size_t i = 0; i < P; i++)
                    yp[i] = v;
            }
        }
}

/* y[off..off+n) = channel m's bias (0 without one): conv_fwd fills each
 * tile just before its GEMM accumulates into it, so the tile is in cache
 * for the GEMM instead of being written to memory beforehand. */
static void fill_seg(bool dbl, void *y, size_t off, size_t n, const void *b, int64_t m)
{
    if (!b) {
        memset((char *)y + off * (dbl ? 8 : 4), 0, n * (dbl ? 8 : 4)); /* +0.0 is all zero bits */
    } else if (dbl) {
        double v = ((const double *)b)[m], *yp = (double *)y + off;
        for (size_t i = 0; i < n; i++)
            yp[i] = v;
    } else {
        float v = ((const float *)b)[m], *yp = (float *)y + off;
        for (size_t i = 0; i < n; i++)
            yp[i] = v;
    }
}

/* y = conv(x, w) + b on float32 (dbl false) or double data. */
carve_status conv_fwd(cv_kctx *k, const convg *g, bool dbl, const void *x, const void *wt, const void *b,
                             void *y)
{
    const win *w = &g->w;
    int n = w->n;
    size_t es = dbl ? 8 : 4, P = win_prod(n, w->out), Pin = win_prod(n, w->in), KK = win_prod(n, w->k);
    int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    size_t Kd = (size_t)Cg * KK;
    /* a fused element-wise chain (ops.h), bound by conv_float: float32 only */
    const cv_epi *e = dbl ? NULL : k->epi;
    if (!P || !Kd || !g->N || !g->M) {
        fill_bias(dbl, y, g->N, g->M, P, b);
        if (e)
            cv_epi_apply(e, y, 0, (size_t)g->N * (size_t)g->M * P);
        return CARVE_OK;
    }
    bool pointwise = true;
    for (int i = 0; i < n; i++)
        pointwise = pointwise && w->k[i] == 1 && w->s[i] == 1 && w->pb[i] == 0 && w->pe[i] == 0;
    if (!dbl && n == 2 && Cg == 1 && g->group > 1 && !pointwise)
        return conv_dw2d(g, x, wt, b, y, e) ? CARVE_OK : cv_knomem(k);
    const uint8_t *xb = x, *wb = wt;
    uint8_t *yb = y;
    if (pointwise) {
        for (int64_t nn = 0; nn < g->N; nn++)
            for (int64_t gg = 0; gg < g->group; gg++) {
                size_t yo = (size_t)(nn * g->M + gg * Mg) * P;
                for (int64_t mm = 0; mm < Mg; mm++)
                    fill_seg(dbl, y, yo + (size_t)mm * P, P, b, gg * Mg + mm);
                if (!gemm(dbl, false, (size_t)Mg, P, (size_t)Cg, wb + (size_t)(gg * Mg) * Kd * es, Kd,
                          xb + (size_t)(nn * g->C + gg * Cg) * Pin * es, Pin, 1.0, yb + yo * es, P))
                    return cv_kerr(k, "convolution too large for BLAS (a dimension exceeds 2^31-1)");
                if (e)
                    cv_epi_apply(e, (float *)y + yo, yo, (size_t)Mg * P);
            }
        return CARVE_OK;
    }
    int64_t L = w->out[n - 1], NL = (int64_t)(P / (size_t)L);
    int64_t lines = (int64_t)(COL_BUDGET / (Kd * (size_t)L));
    if (lines < 1)
        lines = 1;
    if (lines > NL)
        lines = NL;
    uint8_t *col = cv_scratch_alloc(Kd * (size_t)(lines * L) * es);
    if (!col)
        return cv_knomem(k);
    carve_status st = CARVE_OK;
    for (int64_t nn = 0; !st && nn < g->N; nn++)
        for (int64_t gg = 0; !st && gg < g->group; gg++) {
            const uint8_t *xg = xb + (size_t)(nn * g->C + gg * Cg) * Pin * es;
            uint8_t *yg = yb + (size_t)(nn * g->M + gg * Mg) * P * es;
            for (int64_t l0 = 0; !st && l0 < NL; l0 += lines) {
                int64_t l1 = l0 + lines < NL ? l0 + lines : NL;
                size_t cols = (size_t)((l1 - l0) * L);
                im2col(w, xg, es, Cg, l0, l1, col);
                for (int64_t mm = 0; mm < Mg; mm++)
                    fill_seg(dbl, y, (size_t)(nn * g->M + gg * Mg + mm) * P + (size_t)(l0 * L), cols, b, gg * Mg + mm);
                if (!gemm(dbl, false, (size_t)Mg, cols, Kd, wb + (size_t)(gg * Mg) * Kd * es, Kd, col, cols, 1.0,
                          yg + (size_t)(l0 * L) * es, P))
                    st = cv_kerr(k, "convolution too large for BLAS (a dimension exceeds 2^31-1)");
                /* the epilogue on the tile just made, still in cache: its
                 * rows at once when the tile is whole planes */
                size_t y0 = (size_t)(nn * g->M + gg * Mg) * P + (size_t)(l0 * L);
                if (e && !st && cols == P)
                    cv_epi_apply(e, (float *)y + y0, y0, (size_t)Mg * P);
                for (int64_t mm = 0; e && !st && cols != P && mm < Mg; mm++)
                    cv_epi_apply(e, (float *)y + y0 + (size_t)mm * P, y0 + (size_t)mm * P, cols);
            }
        }
    cv_scratch_free(col);
    return st;
}

/* Shapes and attributes of a Conv-like node; W is [M, C/group, k...]
 * (transpose: [C, M/group, k...]). */
carve_status conv_prep(cv_kctx *k, const cv_val *x, const cv_val *wt, const cv_val *b, bool transpose,
                              convg *g)
{
    char sx[256], sw[256], err[512];
    if (x->rank < 3)
        return cv_kerr(k, "input 0 'X' %s has rank %d, expected at least 3 (N, C, spatial...)",
                       cv_shape_str(sx, sizeof sx, x->rank, x->dims), x->rank);
    if (wt->rank != x->rank)
        return cv_kerr(k, "input 1 'W' %s has rank %d but input 0 'X' %s has rank %d",
                       cv_shape_str(sw, sizeof sw, wt->rank, wt->dims), wt->rank,
                       cv_shape_str(sx, sizeof sx, x->rank, x->dims), x->rank);
    g->group = cv_attr_i(k->m, k->node, "group", 1);
    g->N = x->dims[0], g->C = x->dims[1];
    if (g->group < 1 || g->group > INT32_MAX || g->C % g->group || (g->C && g->group > g->C))
        return cv_kerr(k, "attribute 'group' is %lld, which does not divide input 0's %lld channels",
                       (long long)g->group, (long long)g->C);
    if (!transpose) {
        g->M = wt->dims[0];
        if (wt->dims[1] != g->C / g->group)
            return cv_kerr(k, "input 1 'W' %s has %lld channels per group but input 0 'X' %s has %lld channels in %lld groups",
                           cv_shape_str(sw, sizeof sw, wt->rank, wt->dims), (long long)wt->dims[1],
                           cv_shape_str(sx, sizeof sx, x->rank, x->dims), (long long)g->C, (long long)g->group);
        if (g->M % g->group)
            return cv_kerr(k, "input 1 'W' has %lld output channels, not divisible by group %lld", (long long)g->M,
                           (long long)g->group);
    } else {
        if (wt->dims[0] != g->C)
            return cv_kerr(k, "input 1 'W' %s has %lld input channels but input 0 'X' %s has %lld",
                           cv_shape_str(sw, sizeof sw, wt->rank, wt->dims), (long long)wt->dims[0],
                           cv_shape_str(sx, sizeof sx, x->rank, x->dims), (long long)g->C);
        if (wt->dims[1] > INT64_MAX / g->group)
            return cv_kerr(k, "input 1 'W' has %lld output channels per group, too many", (long long)wt->dims[1]);
        g->M = wt->dims[1] * g->group;
    }
    if (b && (b->rank != 1 || b->dims[0] != g->M))
        return cv_kerr(k, "input 2 'B' %s must be 1-D with %lld elements (one per output channel)",
                       cv_shape_str(sw, sizeof sw, b->rank, b->dims), (long long)g->M);
    int n = x->rank - 2;
    if (!win_read(k->m, k->node, n, wt->dims + 2, &g->w, err, sizeof err))
        return cv_kerr(k, "%s", err);
    const int64_t *os = NULL;
    int nos = transpose ? cv_attr_ints(k->m, k->node, "output_shape", &os) : -1;
    if (nos >= 0 && nos != n && nos != n + 2)
        return cv_kerr(k, "attribute 'output_shape' has %d values, expected %d", nos, n);
    for (int i = 0; i < n; i++) {
        bool ok = transpose ? win_bwd(&g->w, i, x->dims[2 + i], nos >= 0 ? os[nos - n + i] : -1, err, sizeof err)
                            : win_fwd(&g->w, i, x->dims[2 + i], err, sizeof err);
        if (!ok)
            return cv_kerr(k, "%s", err);
    }
    return CARVE_OK;
}

carve_status conv_out_shape(const convg *g, int64_t *od)
{
    od[0] = g->N, od[1] = g->M;
    memcpy(od + 2, g->w.out, (size_t)g->w.n * sizeof *od);
    return CARVE_OK;
}

typedef carve_status (*conv_core)(cv_kctx *, const convg *, bool, const void *, const void *, const void *, void *);

/* Float Conv/ConvTranspose: types, working copies, core, rounding back. */
static carve_status conv_float(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, bool transpose, conv_core core)
{
    cv_val *x = in[0], *wt = in[1], *b = n_in > 2 ? in[2] : NULL;
    if (!conv_is_float(x->dtype))
        return cv_kerr(k, "input 0 'X' is %s, expected a float type", carve_dtype_name(x->dtype));
    if (wt->dtype != x->dtype || (b && b->dtype != x->dtype))
        return cv_kerr(k, "input %d '%s' is %s but input 0 'X' is %s", wt->dtype != x->dtype ? 1 : 2,
                       wt->dtype != x->dtype ? "W" : "B", carve_dtype_name(wt->dtype != x->dtype ? wt->dtype : b->dtype),
                       carve_dtype_name(x->dtype));
    convg g;
    carve_status st = conv_prep(k, x, wt, b, transpose, &g);
    if (st)
        return st;
    int64_t od[CARVE_MAX_RANK];
    conv_out_shape(&g, od);
    bool dbl = x->dtype == CARVE_DOUBLE;
    cv_val *xw = dbl ? cv_val_ref(x) : nn_f32(x), *ww = dbl ? cv_val_ref(wt) : nn_f32(wt);
    cv_val *bw = !b ? NULL : dbl ? cv_val_ref(b) : nn_f32(b);
    cv_val *y = cv_val_new_uninit(dbl ? CARVE_DOUBLE : CARVE_FLOAT, x->rank, od); /* core: fills the bias first */
    /* Conv on float32 applies a fused element-wise chain (ops.h) */
    cv_epi *epi = k->epi;
    bool fuse = epi && !transpose && x->dtype == CARVE_FLOAT && cv_epi_bind(epi, CARVE_FLOAT, x->rank, od);
    k->epi = fuse ? epi : NULL;
    if (!xw || !ww || (b && !bw) || !y)
        st = cv_knomem(k);
    else
        st = core(k, &g, dbl, xw->data, ww->data, bw ? bw->data : NULL, y->data);
    k->epi = epi;
    if (fuse && !st)
        epi->applied = true;
    cv_val_unref(xw);
    cv_val_unref(ww);
    cv_val_unref(bw);
    if (!st && !dbl && !(y = nn_f32_to(y, x->dtype)))
        return cv_knomem(k);
    if (st) {
        cv_val_unref(y);
        return st;
    }
    out[0] = y;
    return CARVE_OK;
}

carve_status k_conv(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    return conv_float(k, in, n_in, out, false, conv_fwd);
}

/* ---------------------------------------------------------------- ConvTranspose */

/* Adds columns (row (m, kernel offset), one column per input position of
 * input lines [l0, l1)) into the Mg output channels at y. */
static void col2im(const win *w, const uint8_t *col, bool dbl, int64_t Mg, int64_t l0, int64_t l1, uint8_t *y)
{
    int n = w->n, last = n - 1;
    int64_t IL = w->in[last], OW = w->out[last], KK = (int64_t)win_prod(n, w->k), s = w->s[last];
    size_t P = win_prod(n, w->out), cols = (size_t)((l1 - l0) * IL), es = dbl ? 8 : 4;
    int64_t kc[NSP];
    for (int64_t m = 0; m < Mg; m++)
        for (int64_t kk = 0; kk < KK; kk++) {
            int64_t r = kk;
            for (int j = n - 1; j >= 0; j--)
                kc[j] = r % w->k[j], r /= w->k[j];
            const uint8_t *src = col + (size_t)(m * KK + kk) * cols * es;
            int64_t off = kc[last] * w->d[last] - w->pb[last], lo, hi;
            win_valid_range(off, s, OW, IL, &lo, &hi);
            for (int64_t l = l0; l < l1; l++, src += (size_t)IL * es) {
                int64_t rem = l, row = 0, stride = 1;
                bool ok = lo < hi;
                for (int j = n - 2; ok && j >= 0; j--) {
                    int64_t oc = (rem % w->in[j]) * w->s[j] - w->pb[j] + kc[j] * w->d[j];
                    rem /= w->in[j];
                    ok = oc >= 0 && oc < w->out[j];
                    row += oc * stride, stride *= w->out[j];
                }
                if (!ok)
                    continue;
                size_t base = (size_t)m * P + (size_t)(row * OW);
                if (dbl) {
                    const double *sp = (const double *)src;
                    double *dp = (double *)y + base;
                    for (int64_t i = lo; i < hi; i++)
                        dp[i * s + off] += sp[i];
                } else {
                    const float *sp = (const float *)src;
                    float *dp = (float *)y + base;
                    for (int64_t i = lo; i < hi; i++)
                        dp[i * s + off] += sp[i];
                }
            }
        }
}

static carve_status convt_core(cv_kctx *k, const convg *g, bool dbl, const void *x, const void *wt, const void *b,
                               void *y)
{
    const win *w = &g->w;
    int n = w->n;
    size_t es = dbl ? 8 : 4, P = win_prod(n, w->out), Pin = win_prod(n, w->in), KK = win_prod(n, w->k);
    int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    size_t rows = (size_t)Mg * KK;
    fill_bias(dbl, y, g->N, g->M, P, b);
    if (!P || !Pin || !rows || !Cg || !g->N)
        return CARVE_OK;
    int64_t IL = w->in[n - 1], NL = (int64_t)(Pin / (size_t)IL);
    int64_t lines = (int64_t)(COL_BUDGET / (rows * (size_t)IL));
    if (lines < 1)
        lines = 1;
    if (lines > NL)
        lines = NL;
    uint8_t *col = cv_scratch_alloc(rows * (size_t)(lines * IL) * es);
    if (!col)
        return cv_knomem(k);
    const uint8_t *xb = x, *wb = wt;
    uint8_t *yb = y;
    carve_status st = CARVE_OK;
    for (int64_t nn = 0; !st && nn < g->N; nn++)
        for (int64_t gg = 0; !st && gg < g->group; gg++) {
            const uint8_t *wg = wb + (size_t)(gg * Cg) * rows * es;
            const uint8_t *xg = xb + (size_t)(nn * g->C + gg * Cg) * Pin * es;
            uint8_t *yg = yb + (size_t)(nn * g->M + gg * Mg) * P * es;
            for (int64_t l0 = 0; !st && l0 < NL; l0 += lines) {
                int64_t l1 = l0 + lines < NL ? l0 + lines : NL;
                size_t cols = (size_t)((l1 - l0) * IL);
                if (!gemm(dbl, true, rows, cols, (size_t)Cg, wg, rows, xg + (size_t)(l0 * IL) * es, Pin, 0.0, col, cols))
                    st = cv_kerr(k, "convolution too large for BLAS (a dimension exceeds 2^31-1)");
                else
                    col2im(w, col, dbl, Mg, l0, l1, yg);
            }
        }
    cv_scratch_free(col);
    return st;
}

carve_status k_convtranspose(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    return conv_float(k, in, n_in, out, true, convt_core);
}
/* ---------------------------------------------------------------- inference */

/* Conv-like output: X is input xi, W input wi; dtype dt. */
static carve_status conv_infer(cv_ictx *c, uint32_t xi, uint32_t wi, carve_dtype dt, bool transpose)
{
    const cv_type *x = nn_tensor_in(c, xi), *w = nn_tensor_in(c, wi);
    int rank = x ? x->rank : w ? w->rank : -1;
    if (rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (rank < 3)
        return cv_ierr(c, "input %u has rank %d, expected at least 3 (N, C, spatial...)", x ? xi : wi, rank);
    if (x && w && x->rank != w->rank)
        return cv_ierr(c, "input %u 'W' has rank %d but input %u 'X' has rank %d", wi, w->rank, xi, x->rank);
    int n = rank - 2;
    int64_t group = cv_attr_i(c->m, c->node, "group", 1);
    if (group < 1 || group > INT32_MAX)
        return cv_ierr(c, "attribute 'group' is %lld", (long long)group);
    carve_dim d[CARVE_MAX_RANK];
    d[0] = x ? x->dims[0] : nn_known(-1);
    if (!transpose)
        d[1] = w ? w->dims[0] : nn_known(-1);
    else
        d[1] = w && w->dims[1].value >= 0 && w->dims[1].value <= INT64_MAX / group ? nn_known(w->dims[1].value * group)
                                                                                   : nn_known(-1);
    if (x && w && x->dims[1].value >= 0) {
        int64_t C = x->dims[1].value, wc = transpose ? w->dims[0].value : w->dims[1].value;
        if (C % group)
            return cv_ierr(c, "attribute 'group' %lld does not divide the %lld input channels", (long long)group,
                           (long long)C);
        if (wc >= 0 && wc != (transpose ? C : C / group))
            return cv_ierr(c, "input %u 'W' has %lld input channels%s but input %u 'X' has %lld channels in %lld groups",
                           wi, (long long)wc, transpose ? "" : " per group", xi, (long long)C, (long long)group);
    }
    int64_t wk[NSP];
    for (int i = 0; i < n; i++)
        wk[i] = w ? w->dims[2 + i].value : -1;
    win win_;
    char err[512];
    if (!win_read(c->m, c->node, n, wk, &win_, err, sizeof err))
        return cv_ierr(c, "%s", err);
    const int64_t *os = NULL;
    int nos = transpose ? cv_attr_ints(c->m, c->node, "output_shape", &os) : -1;
    if (nos >= 0 && nos != n && nos != n + 2)
        return cv_ierr(c, "attribute 'output_shape' has %d values, expected %d", nos, n);
    for (int i = 0; i < n; i++) {
        int64_t in = x ? x->dims[2 + i].value : -1;
        bool ok = transpose ? win_bwd(&win_, i, in, nos >= 0 ? os[nos - n + i] : -1, err, sizeof err)
                            : win_fwd(&win_, i, in, err, sizeof err);
        if (!ok)
            return cv_ierr(c, "%s", err);
        d[2 + i] = nn_known(win_.out[i]);
    }
    return cv_infer_set(c, 0, dt, rank, d);
}

carve_status i_conv(cv_ictx *c) { return conv_infer(c, 0, 1, nn_dtype_in(c, 0), false); }
carve_status i_convtranspose(cv_ictx *c) { return conv_infer(c, 0, 1, nn_dtype_in(c, 0), true); }
carve_status i_convinteger(cv_ictx *c) { return conv_infer(c, 0, 1, CARVE_INT32, false); }
carve_status i_qlinearconv(cv_ictx *c) { return conv_infer(c, 0, 3, nn_dtype_in(c, 7), false); }

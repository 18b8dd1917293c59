/* k_conv.c: convolutions and pooling. Conv, ConvTranspose, ConvInteger,
 * QLinearConv, MaxPool (with Indices), AveragePool, LpPool, the global pools
 * and MaxUnpool, with their shape inference.
 *
 * Conv runs one GEMM (OpenBLAS) per image, group and tile of output lines:
 * a 1x1 stride-1 unpadded kernel multiplies the input directly, a 2-D
 * depthwise kernel (one input channel per group) is a direct loop, anything
 * else is unrolled patch by patch (im2col) into a column buffer of about
 * COL_BUDGET elements, so a 1024x1024 image never needs a gigabyte of
 * columns. ConvTranspose is the adjoint: one GEMM into columns, then col2im
 * adds them into the output. float16/bfloat16 compute in float32 and round
 * once at the end; double computes in double; the integer forms centre both
 * operands on their zero points and run the double path, which is exact. */
#include "k_nn.h"

#include "blas.h"
#include <limits.h>
#include <math.h>
#include <string.h>

#define NSP (CARVE_MAX_RANK - 2)
/* Column tile: 4 MB of float32 stays in cache between im2col writing it
 * and the GEMM reading it; 16 MB tiles measured a third slower. */
#define COL_BUDGET ((size_t)1 << 20)
/* Spatial sizes (and size x stride) beyond this are refused before any
 * arithmetic on them could overflow; no real tensor comes near. */
#define DIM_MAX ((int64_t)1 << 40)

enum { AP_NOTSET, AP_SAME_UPPER, AP_SAME_LOWER, AP_VALID };

/* The sliding window of a conv or pool along each spatial axis. */
typedef struct {
    int n;                                            /* spatial rank */
    int64_t k[NSP], s[NSP], d[NSP], pb[NSP], pe[NSP]; /* kernel, strides, dilations, pads */
    int64_t op[NSP];                                  /* ConvTranspose output_padding */
    int autopad;
    bool ceil;
    int64_t in[NSP], out[NSP];
} win;

static int64_t fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); } /* floor, b > 0 */
static int64_t cdiv(int64_t a, int64_t b) { return -fdiv(-a, b); }                        /* ceil, b > 0 */

/* in and (in - 1) * s both within DIM_MAX. */
static bool span_ok(int64_t in, int64_t s) { return in <= DIM_MAX && (in <= 1 || in - 1 <= DIM_MAX / s); }

static size_t prod(int n, const int64_t *d)
{
    size_t p = 1;
    for (int i = 0; i < n; i++)
        p *= (size_t)d[i];
    return p;
}

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
static bool win_read(const carve_model *m, carve_node_id node, int n, const int64_t *wk, win *w, char *err,
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
static bool win_fwd(win *w, int i, int64_t in, char *err, size_t errsz)
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
        int64_t out = cdiv(in, s);
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
    int64_t out = (w->ceil ? cdiv(span, s) : span / s) + 1;
    if (w->ceil && (out - 1) * s >= in + w->pb[i]) /* the last window must start inside the input or its begin pad */
        out--;
    w->out[i] = out;
    return true;
}

/* ConvTranspose: output size and pads along axis i; os is the output_shape
 * attribute's value for the axis or -1. */
static bool win_bwd(win *w, int i, int64_t in, int64_t os, char *err, size_t errsz)
{
    int64_t s = w->s[i];
    bool same = w->autopad == AP_SAME_UPPER || w->autopad == AP_SAME_LOWER;
    if ((in >= 0 && !span_ok(in + 1, s)) || os > DIM_MAX) {
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
            w->pb[i] = fdiv(total, 2), w->pe[i] = total - fdiv(total, 2);
        else
            w->pe[i] = fdiv(total, 2), w->pb[i] = total - fdiv(total, 2);
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

typedef struct {
    win w;
    int64_t N, C, M, group;
} convg;

/* Outputs o in [lo, hi) of a line of nout whose input o*s + off lies in
 * [0, len). */
static void valid_range(int64_t off, int64_t s, int64_t len, int64_t nout, int64_t *lo, int64_t *hi)
{
    int64_t a = cdiv(-off, s), b = fdiv(len - 1 - off, s) + 1;
    if (a < 0)
        a = 0;
    if (b > nout)
        b = nout;
    if (b < a)
        b = a;
    *lo = a, *hi = b;
}

/* Unrolls output lines [l0, l1) (all spatial axes but the last) of the Cg
 * channels at x into col: row (c, kernel offset), one column per output
 * position of the tile. */
static void im2col(const win *w, const uint8_t *x, size_t es, int64_t Cg, int64_t l0, int64_t l1, uint8_t *col)
{
    int n = w->n, last = n - 1;
    int64_t L = w->out[last], IW = w->in[last], KK = (int64_t)prod(n, w->k), s = w->s[last];
    size_t Pin = prod(n, w->in), cols = (size_t)((l1 - l0) * L);
    int64_t kc[NSP];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kk = 0; kk < KK; kk++) {
            int64_t r = kk;
            for (int j = n - 1; j >= 0; j--)
                kc[j] = r % w->k[j], r /= w->k[j];
            uint8_t *dst = col + (size_t)(c * KK + kk) * cols * es;
            int64_t off = kc[last] * w->d[last] - w->pb[last], lo, hi;
            valid_range(off, s, IW, L, &lo, &hi);
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

/* y[o] += w * x[o*s + off] for o in [lo, hi): one kernel tap along an
 * output row. GCC -O2 does not vectorize loops of unknown trip count; the
 * unrolled body it does (SLP), three times faster than the plain loop. */
static void tap_row(float *restrict y, const float *restrict x, float w, int64_t s, int64_t off, int64_t lo,
                    int64_t hi)
{
    int64_t o = lo;
    if (s == 1) {
        const float *restrict xs = x + off + lo;
        float *restrict ys = y + lo;
        int64_t n = hi - lo, i = 0;
        for (; i + 8 <= n; i += 8) {
            ys[i] += w * xs[i], ys[i + 1] += w * xs[i + 1], ys[i + 2] += w * xs[i + 2], ys[i + 3] += w * xs[i + 3];
            ys[i + 4] += w * xs[i + 4], ys[i + 5] += w * xs[i + 5], ys[i + 6] += w * xs[i + 6], ys[i + 7] += w * xs[i + 7];
        }
        for (; i < n; i++)
            ys[i] += w * xs[i];
        return;
    }
    for (; o < hi; o++)
        y[o] += w * x[o * s + off];
}

#if defined(__GNUC__)
/* Four floats: GCC and clang vector extensions, one SSE register. Lane by
 * lane the arithmetic is the scalar code's (a multiply, then an add). */
typedef float dw_vec __attribute__((vector_size(16)));
#define DW_VEC 4
#endif

/* The kernel rows of one output row of a depthwise channel that land
 * inside the input: output o reads x[xo[q] + o * stride + kw * dw] with
 * weight w[q][kw]. */
typedef struct {
    const float *x;
    int64_t *xo;
    const float **w;
    int64_t n, kw, dw;
} dwrows;

#if defined(DW_VEC) && (defined(__clang__) || __GNUC__ >= 12)
/* Outputs o..o+3 of stride 2 read x[p], x[p + 2], x[p + 4], x[p + 6]. */
static inline dw_vec dw_load2(const float *p)
{
    dw_vec a, b;
    memcpy(&a, p, sizeof a);
    memcpy(&b, p + DW_VEC, sizeof b);
    return __builtin_shufflevector(a, b, 0, 2, 4, 6);
}
#define DW_STRIDE2 1
#endif

/* Outputs [lo, hi) of a row where every kernel column lands inside the
 * input: each output takes its taps in the order of the per-tap sweeps
 * (kernel rows, then columns), so its sum rounds as theirs did, but a strip
 * of 16 (then 4) outputs is held in registers over all taps: y is loaded
 * and stored once per strip instead of once per tap. Stride s is 1 or 2;
 * vhi bounds the outputs whose stride-2 loads (8 floats for 4 outputs)
 * stay inside the row. */
static void dw_interior(float *restrict y, const dwrows *r, int64_t s, int64_t lo, int64_t hi, int64_t vhi)
{
    int64_t o = lo, KW = r->kw, dw = r->dw;
#ifdef DW_VEC
    if (s == 1) {
        for (; o + 4 * DW_VEC <= hi; o += 4 * DW_VEC) {
            dw_vec a0, a1, a2, a3;
            memcpy(&a0, y + o, sizeof a0);
            memcpy(&a1, y + o + DW_VEC, sizeof a1);
            memcpy(&a2, y + o + 2 * DW_VEC, sizeof a2);
            memcpy(&a3, y + o + 3 * DW_VEC, sizeof a3);
            for (int64_t q = 0; q < r->n; q++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    const float *xs = r->x + (r->xo[q] + o + kw * dw);
                    float wq = r->w[q][kw];
                    dw_vec x0, x1, x2, x3;
                    memcpy(&x0, xs, sizeof x0);
                    memcpy(&x1, xs + DW_VEC, sizeof x1);
                    memcpy(&x2, xs + 2 * DW_VEC, sizeof x2);
                    memcpy(&x3, xs + 3 * DW_VEC, sizeof x3);
                    a0 += wq * x0;
                    a1 += wq * x1;
                    a2 += wq * x2;
                    a3 += wq * x3;
                }
            memcpy(y + o, &a0, sizeof a0);
            memcpy(y + o + DW_VEC, &a1, sizeof a1);
            memcpy(y + o + 2 * DW_VEC, &a2, sizeof a2);
            memcpy(y + o + 3 * DW_VEC, &a3, sizeof a3);
        }
        for (; o + DW_VEC <= hi; o += DW_VEC) {
            dw_vec a;
            memcpy(&a, y + o, sizeof a);
            for (int64_t q = 0; q < r->n; q++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    dw_vec xv;
                    memcpy(&xv, r->x + (r->xo[q] + o + kw * dw), sizeof xv);
                    a += r->w[q][kw] * xv;
                }
            memcpy(y + o, &a, sizeof a);
        }
    }
#ifdef DW_STRIDE2
    if (s == 2) {
        for (; o + 2 * DW_VEC <= vhi; o += 2 * DW_VEC) {
            dw_vec a0, a1;
            memcpy(&a0, y + o, sizeof a0);
            memcpy(&a1, y + o + DW_VEC, sizeof a1);
            for (int64_t q = 0; q < r->n; q++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    const float *xs = r->x + (r->xo[q] + 2 * o + kw * dw);
                    float wq = r->w[q][kw];
                    a0 += wq * dw_load2(xs);
                    a1 += wq * dw_load2(xs + 2 * DW_VEC);
                }
            memcpy(y + o, &a0, sizeof a0);
            memcpy(y + o + DW_VEC, &a1, sizeof a1);
        }
        for (; o + DW_VEC <= vhi; o += DW_VEC) {
            dw_vec a;
            memcpy(&a, y + o, sizeof a);
            for (int64_t q = 0; q < r->n; q++)
                for (int64_t kw = 0; kw < KW; kw++)
                    a += r->w[q][kw] * dw_load2(r->x + (r->xo[q] + 2 * o + kw * dw));
            memcpy(y + o, &a, sizeof a);
        }
    }
#endif
#endif
    (void)vhi;
    for (; o < hi; o++) {
        float a = y[o];
        for (int64_t q = 0; q < r->n; q++)
            for (int64_t kw = 0; kw < KW; kw++)
                a += r->w[q][kw] * r->x[r->xo[q] + o * s + kw * dw];
        y[o] = a;
    }
}

/* Output o near a row's end, where only some kernel columns land inside
 * the input (column kw does for o in [lo[kw], hi[kw]); they are a range). */
static void dw_edge(float *restrict y, const dwrows *r, int64_t s, int64_t o, const int64_t *lo, const int64_t *hi)
{
    int64_t k0 = 0, k1 = r->kw;
    while (k0 < k1 && !(o >= lo[k0] && o < hi[k0]))
        k0++;
    while (k1 > k0 && !(o >= lo[k1 - 1] && o < hi[k1 - 1]))
        k1--;
    float a = y[o];
    for (int64_t q = 0; q < r->n; q++)
        for (int64_t kw = k0; kw < k1; kw++)
            a += r->w[q][kw] * r->x[r->xo[q] + o * s + kw * r->dw];
    y[o] = a;
}

/* Depthwise 2-D (one input channel per group), float32, added to the bias
 * already in y. Strides 1 and 2 along the row: output by output over all
 * its taps (dw_interior, dw_edge). Other strides: one multiply-add sweep
 * per output row and kernel tap. */
static bool conv_dw2d(const convg *g, const float *x, const float *wt, float *y)
{
    const win *w = &g->w;
    int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], KH = w->k[0], KW = w->k[1];
    int64_t sh = w->s[0], sw = w->s[1], dh = w->d[0], dw = w->d[1], pt = w->pb[0], pl = w->pb[1];
    int64_t mult = g->M / g->group;
    size_t nb = ((size_t)KW * 2 + (size_t)KH) * sizeof(int64_t) + (size_t)KH * sizeof(const float *);
    int64_t *lo = cv_malloc(nb), *hi = lo + KW;
    if (!lo)
        return false;
    dwrows r = {NULL, hi + KW, (const float **)(hi + KW + KH), 0, KW, dw};
    /* outputs [ilo, ihi) have every kernel column inside the row; below
     * vhi, the one float past the last column read is too (stride 2) */
    int64_t ilo = 0, ihi = OW;
    for (int64_t kw = 0; kw < KW; kw++) {
        valid_range(kw * dw - pl, sw, W, OW, &lo[kw], &hi[kw]);
        ilo = lo[kw] > ilo ? lo[kw] : ilo;
        ihi = hi[kw] < ihi ? hi[kw] : ihi;
    }
    if (ihi < ilo)
        ihi = ilo;
    int64_t vhi = ihi;
    while (vhi > ilo && (vhi - 1) * sw + (KW - 1) * dw - pl + 1 >= W)
        vhi--;
    bool fused = sw == 1 || sw == 2;
    for (int64_t nn = 0; nn < g->N; nn++)
        for (int64_t m = 0; m < g->M; m++) {
            const float *xp = x + (size_t)(nn * g->C + m / mult) * (size_t)(H * W);
            const float *wp = wt + (size_t)(m * KH * KW);
            float *yp = y + (size_t)(nn * g->M + m) * (size_t)(OH * OW);
            if (!fused) {
                for (int64_t oh = 0; oh < OH; oh++, yp += OW)
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t ih = oh * sh - pt + kh * dh;
                        if (ih < 0 || ih >= H)
                            continue;
                        for (int64_t kw = 0; kw < KW; kw++)
                            tap_row(yp, xp + ih * W, wp[kh * KW + kw], sw, kw * dw - pl, lo[kw], hi[kw]);
                    }
                continue;
            }
            for (int64_t oh = 0; oh < OH; oh++, yp += OW) {
                r.x = xp, r.n = 0;
                for (int64_t kh = 0; kh < KH; kh++) {
                    int64_t ih = oh * sh - pt + kh * dh;
                    if (ih < 0 || ih >= H)
                        continue;
                    r.xo[r.n] = ih * W - pl;
                    r.w[r.n++] = wp + kh * KW;
                }
                if (!r.n)
                    continue;
                for (int64_t o = 0; o < ilo; o++)
                    dw_edge(yp, &r, sw, o, lo, hi);
                dw_interior(yp, &r, sw, ilo, ihi, vhi);
                for (int64_t o = ihi; o < OW; o++)
                    dw_edge(yp, &r, sw, o, lo, hi);
            }
        }
    cv_free(lo);
    return true;
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

/* y = conv(x, w) + b on float32 (dbl false) or double data. */
static carve_status conv_fwd(cv_kctx *k, const convg *g, bool dbl, const void *x, const void *wt, const void *b,
                             void *y)
{
    const win *w = &g->w;
    int n = w->n;
    size_t es = dbl ? 8 : 4, P = prod(n, w->out), Pin = prod(n, w->in), KK = prod(n, w->k);
    int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    size_t Kd = (size_t)Cg * KK;
    fill_bias(dbl, y, g->N, g->M, P, b);
    if (!P || !Kd || !g->N || !g->M)
        return CARVE_OK;
    bool pointwise = true;
    for (int i = 0; i < n; i++)
        pointwise = pointwise && w->k[i] == 1 && w->s[i] == 1 && w->pb[i] == 0 && w->pe[i] == 0;
    if (!dbl && n == 2 && Cg == 1 && g->group > 1 && !pointwise)
        return conv_dw2d(g, x, wt, y) ? CARVE_OK : cv_knomem(k);
    const uint8_t *xb = x, *wb = wt;
    uint8_t *yb = y;
    if (pointwise) {
        for (int64_t nn = 0; nn < g->N; nn++)
            for (int64_t gg = 0; gg < g->group; gg++)
                if (!gemm(dbl, false, (size_t)Mg, P, (size_t)Cg, wb + (size_t)(gg * Mg) * Kd * es, Kd,
                          xb + (size_t)(nn * g->C + gg * Cg) * Pin * es, Pin, 1.0,
                          yb + (size_t)(nn * g->M + gg * Mg) * P * es, P))
                    return cv_kerr(k, "convolution too large for BLAS (a dimension exceeds 2^31-1)");
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
                if (!gemm(dbl, false, (size_t)Mg, cols, Kd, wb + (size_t)(gg * Mg) * Kd * es, Kd, col, cols, 1.0,
                          yg + (size_t)(l0 * L) * es, P))
                    st = cv_kerr(k, "convolution too large for BLAS (a dimension exceeds 2^31-1)");
            }
        }
    cv_scratch_free(col);
    return st;
}

static bool is_conv_float(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

/* Shapes and attributes of a Conv-like node; W is [M, C/group, k...]
 * (transpose: [C, M/group, k...]). */
static carve_status conv_prep(cv_kctx *k, const cv_val *x, const cv_val *wt, const cv_val *b, bool transpose,
                              convg *g)
{
    char sx[256], sw[256], err[512];
    if (x->rank < 3)
        return cv_kerr(k, "input 0 'X' %s has rank %d, expected at least 3 (N, C, spatial...)",
                       nn_shape_str(sx, sizeof sx, x->rank, x->dims), x->rank);
    if (wt->rank != x->rank)
        return cv_kerr(k, "input 1 'W' %s has rank %d but input 0 'X' %s has rank %d",
                       nn_shape_str(sw, sizeof sw, wt->rank, wt->dims), wt->rank,
                       nn_shape_str(sx, sizeof sx, x->rank, x->dims), x->rank);
    g->group = cv_attr_i(k->m, k->node, "group", 1);
    g->N = x->dims[0], g->C = x->dims[1];
    if (g->group < 1 || g->group > INT32_MAX || g->C % g->group || (g->C && g->group > g->C))
        return cv_kerr(k, "attribute 'group' is %lld, which does not divide input 0's %lld channels",
                       (long long)g->group, (long long)g->C);
    if (!transpose) {
        g->M = wt->dims[0];
        if (wt->dims[1] != g->C / g->group)
            return cv_kerr(k, "input 1 'W' %s has %lld channels per group but input 0 'X' %s has %lld channels in %lld groups",
                           nn_shape_str(sw, sizeof sw, wt->rank, wt->dims), (long long)wt->dims[1],
                           nn_shape_str(sx, sizeof sx, x->rank, x->dims), (long long)g->C, (long long)g->group);
        if (g->M % g->group)
            return cv_kerr(k, "input 1 'W' has %lld output channels, not divisible by group %lld", (long long)g->M,
                           (long long)g->group);
    } else {
        if (wt->dims[0] != g->C)
            return cv_kerr(k, "input 1 'W' %s has %lld input channels but input 0 'X' %s has %lld",
                           nn_shape_str(sw, sizeof sw, wt->rank, wt->dims), (long long)wt->dims[0],
                           nn_shape_str(sx, sizeof sx, x->rank, x->dims), (long long)g->C);
        if (wt->dims[1] > INT64_MAX / g->group)
            return cv_kerr(k, "input 1 'W' has %lld output channels per group, too many", (long long)wt->dims[1]);
        g->M = wt->dims[1] * g->group;
    }
    if (b && (b->rank != 1 || b->dims[0] != g->M))
        return cv_kerr(k, "input 2 'B' %s must be 1-D with %lld elements (one per output channel)",
                       nn_shape_str(sw, sizeof sw, b->rank, b->dims), (long long)g->M);
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

static carve_status out_shape(const convg *g, int64_t *od)
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
    if (!is_conv_float(x->dtype))
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
    out_shape(&g, od);
    bool dbl = x->dtype == CARVE_DOUBLE;
    cv_val *xw = dbl ? cv_val_ref(x) : nn_f32(x), *ww = dbl ? cv_val_ref(wt) : nn_f32(wt);
    cv_val *bw = !b ? NULL : dbl ? cv_val_ref(b) : nn_f32(b);
    cv_val *y = cv_val_new_uninit(dbl ? CARVE_DOUBLE : CARVE_FLOAT, x->rank, od); /* core: fill_bias first */
    if (!xw || !ww || (b && !bw) || !y)
        st = cv_knomem(k);
    else
        st = core(k, &g, dbl, xw->data, ww->data, bw ? bw->data : NULL, y->data);
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
    int64_t IL = w->in[last], OW = w->out[last], KK = (int64_t)prod(n, w->k), s = w->s[last];
    size_t P = prod(n, w->out), cols = (size_t)((l1 - l0) * IL), es = dbl ? 8 : 4;
    int64_t kc[NSP];
    for (int64_t m = 0; m < Mg; m++)
        for (int64_t kk = 0; kk < KK; kk++) {
            int64_t r = kk;
            for (int j = n - 1; j >= 0; j--)
                kc[j] = r % w->k[j], r /= w->k[j];
            const uint8_t *src = col + (size_t)(m * KK + kk) * cols * es;
            int64_t off = kc[last] * w->d[last] - w->pb[last], lo, hi;
            valid_range(off, s, OW, IL, &lo, &hi);
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
    size_t es = dbl ? 8 : 4, P = prod(n, w->out), Pin = prod(n, w->in), KK = prod(n, w->k);
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

/* ---------------------------------------------------------------- ConvInteger, QLinearConv */

static bool is_q8(carve_dtype t) { return t == CARVE_INT8 || t == CARVE_UINT8; }

/* x - zp (a one-element tensor or NULL) as doubles. */
static double *centre_scalar(const cv_val *x, const cv_val *zp)
{
    double *d = nn_decode(x);
    double z = zp && zp->nelem ? cv_val_get_f64(zp, 0) : 0;
    for (size_t i = 0; d && z != 0 && i < x->nelem; i++)
        d[i] -= z;
    return d;
}

/* w - zp[m] for output channel m (zp: one element or one per channel). */
static double *centre_channels(const cv_val *w, const cv_val *zp, int64_t M)
{
    double *d = nn_decode(w);
    if (!d || !zp || !M)
        return d;
    size_t per = w->nelem / (size_t)M;
    for (size_t i = 0; i < w->nelem; i++)
        d[i] -= cv_val_get_f64(zp, zp->nelem == 1 ? 0 : i / per);
    return d;
}

static carve_status check_zp(cv_kctx *k, const cv_val *zp, const cv_val *of, int64_t n_ok, const char *zn,
                             const char *on)
{
    if (!zp)
        return CARVE_OK;
    if (zp->dtype != of->dtype)
        return cv_kerr(k, "input '%s' is %s but input '%s' is %s", zn, carve_dtype_name(zp->dtype), on,
                       carve_dtype_name(of->dtype));
    if (zp->nelem != 1 && (zp->rank != 1 || (int64_t)zp->nelem != n_ok))
        return cv_kerr(k, "input '%s' has %zu elements: expected a scalar%s", zn, zp->nelem,
                       n_ok > 1 ? " or one per output channel" : "");
    return CARVE_OK;
}

/* The exact integer convolution of x and w centred on their zero points,
 * plus bias b (int32 or NULL), in double. */
static carve_status int_conv(cv_kctx *k, const cv_val *x, const cv_val *xzp, const cv_val *w, const cv_val *wzp,
                             const cv_val *b, const char *const names[4], convg *g, double **acc)
{
    *acc = NULL;
    if (!is_q8(x->dtype) || !is_q8(w->dtype))
        return cv_kerr(k, "inputs '%s' and '%s' are %s and %s, expected int8 or uint8", names[0], names[2],
                       carve_dtype_name(x->dtype), carve_dtype_name(w->dtype));
    if (b && b->dtype != CARVE_INT32)
        return cv_kerr(k, "input 8 'B' is %s, expected int32", carve_dtype_name(b->dtype));
    carve_status st = conv_prep(k, x, w, b, false, g);
    if (!st)
        st = check_zp(k, xzp, x, 1, names[1], names[0]);
    if (!st)
        st = check_zp(k, wzp, w, g->M, names[3], names[2]);
    if (st)
        return st;
    int64_t od[CARVE_MAX_RANK];
    out_shape(g, od);
    size_t ny = cv_nelem(x->rank, od);
    double *X = centre_scalar(x, xzp), *W = centre_channels(w, wzp, g->M), *B = b ? nn_decode(b) : NULL;
    double *Y = cv_scratch_alloc((ny ? ny : 1) * sizeof *Y); /* conv_fwd fills it first */
    if (!X || !W || (b && !B) || !Y)
        st = cv_knomem(k);
    else
        st = conv_fwd(k, g, true, X, W, B, Y);
    cv_scratch_free(X);
    cv_scratch_free(W);
    cv_scratch_free(B);
    if (st)
        cv_scratch_free(Y);
    else
        *acc = Y;
    return st;
}

carve_status k_convinteger(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    static const char *const names[4] = {"x", "x_zero_point", "w", "w_zero_point"};
    convg g;
    double *acc;
    carve_status st = int_conv(k, in[0], n_in > 2 ? in[2] : NULL, in[1], n_in > 3 ? in[3] : NULL, NULL, names, &g, &acc);
    if (st)
        return st;
    int64_t od[CARVE_MAX_RANK];
    out_shape(&g, od);
    cv_val *y = cv_val_new_uninit(CARVE_INT32, in[0]->rank, od);
    if (!y) {
        cv_scratch_free(acc);
        return cv_knomem(k);
    }
    int32_t *o = y->data;
    for (size_t i = 0; i < y->nelem; i++) /* exact integers; wrap like int32 accumulation */
        o[i] = (int32_t)(uint32_t)(uint64_t)(int64_t)acc[i];
    cv_scratch_free(acc);
    out[0] = y;
    return CARVE_OK;
}

carve_status k_qlinearconv(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0], *xs = in[1], *xzp = in[2], *w = in[3], *ws = in[4], *wzp = in[5], *ys = in[6],
                 *yzp = in[7], *b = n_in > 8 ? in[8] : NULL;
    if (!yzp || !is_q8(yzp->dtype) || yzp->nelem != 1)
        return cv_kerr(k, "input 7 'y_zero_point' must be an int8 or uint8 scalar");
    if (xs->nelem != 1 || ys->nelem != 1 || !cv_dtype_is_float(xs->dtype) || !cv_dtype_is_float(ys->dtype) ||
        !cv_dtype_is_float(ws->dtype))
        return cv_kerr(k, "inputs 'x_scale', 'w_scale' and 'y_scale' must be float ('x_scale' and 'y_scale' scalars)");
    static const char *const names[4] = {"x", "x_zero_point", "w", "w_zero_point"};
    convg g;
    double *acc;
    carve_status st = int_conv(k, x, xzp, w, wzp, b, names, &g, &acc);
    if (st)
        return st;
    if (ws->nelem != 1 && (ws->rank != 1 || (int64_t)ws->nelem != g.M)) {
        cv_scratch_free(acc);
        return cv_kerr(k, "input 4 'w_scale' has %zu elements: expected a scalar or one per output channel (%lld)",
                       ws->nelem, (long long)g.M);
    }
    int64_t od[CARVE_MAX_RANK];
    out_shape(&g, od);
    cv_val *y = cv_val_new_uninit(yzp->dtype, x->rank, od); /* nn_requant stores every element */
    if (!y) {
        cv_scratch_free(acc);
        return cv_knomem(k);
    }
    /* The multiplier in float32, applied in double (as the ONNX reference:
     * numpy promotes int32 * float32 to float64). */
    float fx = (float)cv_val_get_f64(xs, 0), fy = (float)cv_val_get_f64(ys, 0);
    size_t P = prod(g.w.n, g.w.out);
    for (int64_t nn = 0; nn < g.N; nn++)
        for (int64_t m = 0; m < g.M; m++) {
            float mult = fx * (float)cv_val_get_f64(ws, ws->nelem == 1 ? 0 : (size_t)m) / fy;
            double *a = acc + (size_t)(nn * g.M + m) * P;
            for (size_t i = 0; i < P; i++)
                a[i] *= (double)mult;
        }
    bool ok = nn_requant(y, acc, yzp);
    cv_scratch_free(acc);
    if (!ok) {
        cv_val_unref(y);
        return cv_knomem(k);
    }
    out[0] = y;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- pooling */

typedef enum { PK_MAX, PK_AVG, PK_LP } pool_kind;

static double ld(const void *x, bool dbl, size_t i) { return dbl ? ((const double *)x)[i] : ((const float *)x)[i]; }

static void put(void *y, bool dbl, size_t i, double v)
{
    if (dbl)
        ((double *)y)[i] = v;
    else
        ((float *)y)[i] = (float)v;
}

/* Per axis and output coordinate: the window start, the taps [tlo, thi)
 * inside the input, and the taps inside input + explicit pads. */
typedef struct {
    int64_t start, tlo, thi, npad;
} wtap;

typedef struct {
    pool_kind kind;
    bool count_pad, col_major;
    double p;
} pool_opts;

/* Pools `planes` planes of x (float32 or double) into y, argmax into ind. */
static bool pool_planes(const win *w, const pool_opts *po, size_t planes, bool dbl, const void *x, void *y,
                        int64_t *ind)
{
    int n = w->n;
    size_t Pin = prod(n, w->in), P = prod(n, w->out), ntab = 0;
    for (int j = 0; j < n; j++)
        ntab += (size_t)w->out[j];
    wtap *tab = cv_malloc((ntab ? ntab : 1) * sizeof *tab), *t[NSP];
    if (!tab)
        return false;
    int64_t istr[NSP], s = 1;
    for (int j = n - 1; j >= 0; j--)
        istr[j] = s, s *= w->in[j];
    size_t at = 0;
    for (int j = 0; j < n; j++) {
        t[j] = tab + at;
        at += (size_t)w->out[j];
        for (int64_t o = 0; o < w->out[j]; o++) {
            wtap *e = &t[j][o];
            int64_t k = w->k[j], d = w->d[j], in = w->in[j];
            e->start = o * w->s[j] - w->pb[j];
            e->tlo = cdiv(-e->start, d), e->thi = fdiv(in - 1 - e->start, d) + 1;
            e->tlo = e->tlo < 0 ? 0 : e->tlo, e->thi = e->thi > k ? k : e->thi;
            if (e->thi < e->tlo)
                e->thi = e->tlo;
            int64_t plo = cdiv(-w->pb[j] - e->start, d), phi = fdiv(in + w->pe[j] - 1 - e->start, d) + 1;
            plo = plo < 0 ? 0 : plo, phi = phi > k ? k : phi;
            e->npad = phi > plo ? phi - plo : 0;
        }
    }
    int last = n - 1;
    for (size_t pl = 0; pl < planes; pl++) {
        int64_t oc[NSP] = {0};
        for (size_t q = 0; q < P; q++) {
            const wtap *e[NSP];
            int64_t valid = 1, npad = 1;
            for (int j = 0; j < n; j++) {
                e[j] = &t[j][oc[j]];
                valid *= e[j]->thi - e[j]->tlo;
                npad *= e[j]->npad;
            }
            double best = -INFINITY, acc = 0;
            int64_t bi = -1;
            if (valid > 0) {
                int64_t tc[NSP];
                for (int j = 0; j < n; j++)
                    tc[j] = e[j]->tlo;
                const wtap *el = e[last];
                for (;;) {
                    int64_t base = 0;
                    for (int j = 0; j < last; j++)
                        base += (e[j]->start + tc[j] * w->d[j]) * istr[j];
                    base += el->start;
                    size_t xo = pl * Pin;
                    int64_t dl = w->d[last];
                    if (po->kind == PK_MAX) {
                        for (int64_t tt = el->tlo; tt < el->thi; tt++) {
                            int64_t i = base + tt * dl;
                            double v = ld(x, dbl, xo + (size_t)i);
                            if (v > best || bi < 0)
                                best = v, bi = i;
                        }
                    } else if (po->kind == PK_AVG) {
                        for (int64_t tt = el->tlo; tt < el->thi; tt++)
                            acc += ld(x, dbl, xo + (size_t)(base + tt * dl));
                    } else {
                        for (int64_t tt = el->tlo; tt < el->thi; tt++)
                            acc += pow(fabs(ld(x, dbl, xo + (size_t)(base + tt * dl))), po->p);
                    }
                    int j = last - 1;
                    for (; j >= 0 && ++tc[j] == e[j]->thi; j--)
                        tc[j] = e[j]->tlo;
                    if (j < 0)
                        break;
                }
            }
            size_t yo = pl * P + q;
            if (po->kind == PK_MAX) {
                put(y, dbl, yo, best);
                if (ind) {
                    int64_t si = bi < 0 ? 0 : bi;
                    if (po->col_major && bi >= 0) {
                        int64_t r = bi, cm = 0, cs = 1;
                        for (int j = 0; j < n; j++) {
                            cm += (r / istr[j]) * cs;
                            r %= istr[j];
                            cs *= w->in[j];
                        }
                        si = cm;
                    }
                    ind[yo] = (int64_t)(pl * Pin) + si;
                }
            } else if (po->kind == PK_AVG) {
                int64_t cnt = po->count_pad ? npad : valid;
                put(y, dbl, yo, cnt ? acc / (double)cnt : NAN);
            } else {
                put(y, dbl, yo, pow(acc, 1.0 / po->p));
            }
            for (int j = last; j >= 0 && ++oc[j] == w->out[j]; j--)
                oc[j] = 0;
        }
    }
    cv_free(tab);
    return true;
}

/* LpPool's p: a float before opset 2, an int after. */
static double lp_p(const carve_model *m, carve_node_id node)
{
    int64_t pi;
    float pf;
    if (carve_node_attr_int(m, node, "p", &pi))
        return (double)pi;
    if (carve_node_attr_float(m, node, "p", &pf))
        return pf;
    return 2.0;
}

static carve_status pool(cv_kctx *k, pool_kind kind, cv_val **in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    bool fl = cv_dtype_is_float(x->dtype) && x->dtype != CARVE_FLOAT8E4M3FN && x->dtype != CARVE_FLOAT8E4M3FNUZ &&
              x->dtype != CARVE_FLOAT8E5M2 && x->dtype != CARVE_FLOAT8E5M2FNUZ;
    if (!fl && !(kind == PK_MAX && (x->dtype == CARVE_INT8 || x->dtype == CARVE_UINT8)))
        return cv_kerr(k, "input 0 'X' is %s, expected a float type%s", carve_dtype_name(x->dtype),
                       kind == PK_MAX ? ", int8 or uint8" : "");
    char sx[256], err[512];
    if (x->rank < 3)
        return cv_kerr(k, "input 0 'X' %s has rank %d, expected at least 3 (N, C, spatial...)",
                       nn_shape_str(sx, sizeof sx, x->rank, x->dims), x->rank);
    win w;
    int n = x->rank - 2;
    if (!win_read(k->m, k->node, n, NULL, &w, err, sizeof err))
        return cv_kerr(k, "%s", err);
    for (int i = 0; i < n; i++)
        if (!win_fwd(&w, i, x->dims[2 + i], err, sizeof err))
            return cv_kerr(k, "%s", err);
    pool_opts po = {kind, cv_attr_i(k->m, k->node, "count_include_pad", 0) != 0,
                    cv_attr_i(k->m, k->node, "storage_order", 0) != 0, kind == PK_LP ? lp_p(k->m, k->node) : 1};
    if (kind == PK_LP && !(po.p > 0))
        return cv_kerr(k, "attribute 'p' is %g, expected > 0", po.p);
    int64_t od[CARVE_MAX_RANK] = {x->dims[0], x->dims[1]};
    memcpy(od + 2, w.out, (size_t)n * sizeof *od);
    bool dbl = x->dtype == CARVE_DOUBLE;
    /* pool_planes writes every output element (and its index) */
    cv_val *xw = dbl ? cv_val_ref(x) : nn_f32(x), *y = cv_val_new_uninit(dbl ? CARVE_DOUBLE : CARVE_FLOAT, x->rank, od);
    cv_val *ind = kind == PK_MAX && n_out > 1 ? cv_val_new_uninit(CARVE_INT64, x->rank, od) : NULL;
    bool ok = xw && y && (ind || !(kind == PK_MAX && n_out > 1)) &&
              pool_planes(&w, &po, (size_t)x->dims[0] * (size_t)x->dims[1], dbl, xw->data, y->data, ind ? ind->data : NULL);
    cv_val_unref(xw);
    if (ok && !dbl)
        ok = (y = nn_f32_to(y, x->dtype)) != NULL;
    if (!ok) {
        cv_val_unref(y);
        cv_val_unref(ind);
        return cv_knomem(k);
    }
    out[0] = y;
    if (ind)
        out[1] = ind;
    return CARVE_OK;
}

carve_status k_maxpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in;
    return pool(k, PK_MAX, in, out, n_out);
}

carve_status k_avgpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in;
    return pool(k, PK_AVG, in, out, n_out);
}

carve_status k_lppool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in;
    return pool(k, PK_LP, in, out, n_out);
}

/* Global pools reduce each [N, C] plane to one value. */
static carve_status global_pool(cv_kctx *k, pool_kind kind, cv_val **in, cv_val **out)
{
    cv_val *x = in[0];
    if (!is_conv_float(x->dtype))
        return cv_kerr(k, "input 0 'X' is %s, expected a float type", carve_dtype_name(x->dtype));
    if (x->rank < 2)
        return cv_kerr(k, "input 0 'X' has rank %d, expected at least 2 (N, C, spatial...)", x->rank);
    double p = kind == PK_LP ? lp_p(k->m, k->node) : 1;
    if (kind == PK_LP && !(p > 0))
        return cv_kerr(k, "attribute 'p' is %g, expected > 0", p);
    int64_t od[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        od[i] = i < 2 ? x->dims[i] : 1;
    bool dbl = x->dtype == CARVE_DOUBLE;
    cv_val *xw = dbl ? cv_val_ref(x) : nn_f32(x), *y = cv_val_new_uninit(dbl ? CARVE_DOUBLE : CARVE_FLOAT, x->rank, od);
    if (!xw || !y) {
        cv_val_unref(xw);
        cv_val_unref(y);
        return cv_knomem(k);
    }
    size_t planes = (size_t)x->dims[0] * (size_t)x->dims[1], S = cv_nelem(x->rank - 2, x->dims + 2);
    for (size_t pl = 0; pl < planes; pl++) {
        double r;
        if (kind == PK_MAX) {
            r = -INFINITY;
            if (dbl) {
                const double *s = (const double *)xw->data + pl * S;
                for (size_t i = 0; i < S; i++)
                    r = s[i] > r ? s[i] : r;
            } else {
                const float *s = (const float *)xw->data + pl * S;
                float m = -INFINITY;
                for (size_t i = 0; i < S; i++)
                    m = s[i] > m ? s[i] : m;
                r = m;
            }
        } else {
            double acc = 0;
            if (kind == PK_AVG && !dbl) {
                const float *s = (const float *)xw->data + pl * S;
                for (size_t i = 0; i < S; i++)
                    acc += s[i];
            } else {
                for (size_t i = 0; i < S; i++) {
                    double v = ld(xw->data, dbl, pl * S + i);
                    acc += kind == PK_AVG ? v : pow(fabs(v), p);
                }
            }
            r = kind == PK_AVG ? (S ? acc / (double)S : NAN) : pow(acc, 1.0 / p);
        }
        put(y->data, dbl, pl, r);
    }
    cv_val_unref(xw);
    if (!dbl && !(y = nn_f32_to(y, x->dtype)))
        return cv_knomem(k);
    out[0] = y;
    return CARVE_OK;
}

carve_status k_globalavgpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    return global_pool(k, PK_AVG, in, out);
}

carve_status k_globalmaxpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    return global_pool(k, PK_MAX, in, out);
}

carve_status k_globallppool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    return global_pool(k, PK_LP, in, out);
}

/* ---------------------------------------------------------------- MaxUnpool */

/* The default MaxUnpool output size along an axis: the input of the MaxPool
 * that would give `in` (dilations do not exist for MaxUnpool). */
static int64_t unpool_dim(const win *w, int i, int64_t in)
{
    return in < 0 || !span_ok(in, w->s[i]) ? -1 : (in - 1) * w->s[i] + w->k[i] - w->pb[i] - w->pe[i];
}

carve_status k_maxunpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0], *ix = in[1], *os = n_in > 2 ? in[2] : NULL;
    char sx[256], si[256], err[512];
    if (!is_conv_float(x->dtype))
        return cv_kerr(k, "input 0 'X' is %s, expected a float type", carve_dtype_name(x->dtype));
    if (x->rank < 3)
        return cv_kerr(k, "input 0 'X' has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    if (ix->dtype != CARVE_INT64 || ix->rank != x->rank || memcmp(ix->dims, x->dims, (size_t)x->rank * sizeof *x->dims))
        return cv_kerr(k, "input 1 'I' (%s %s) must be int64 with the shape of input 0 'X' %s", carve_dtype_name(ix->dtype),
                       nn_shape_str(si, sizeof si, ix->rank, ix->dims), nn_shape_str(sx, sizeof sx, x->rank, x->dims));
    win w;
    int n = x->rank - 2;
    if (!win_read(k->m, k->node, n, NULL, &w, err, sizeof err))
        return cv_kerr(k, "%s", err);
    int64_t od[CARVE_MAX_RANK] = {x->dims[0], x->dims[1]}, dd[CARVE_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < n; i++) {
        od[2 + i] = dd[2 + i] = unpool_dim(&w, i, x->dims[2 + i]);
        if (dd[2 + i] < 0)
            return cv_kerr(k, "spatial axis %d: the output size would be %lld", i, (long long)dd[2 + i]);
    }
    if (os) {
        if (os->rank != 1 || (int)os->nelem != x->rank || !cv_dtype_is_int(os->dtype))
            return cv_kerr(k, "input 2 'output_shape' must be a 1-D integer tensor of %d values", x->rank);
        for (int i = 0; i < x->rank; i++) {
            od[i] = cv_val_get_i64(os, (size_t)i);
            if (od[i] < 0)
                return cv_kerr(k, "input 2 'output_shape' value %d is %lld", i, (long long)od[i]);
        }
    }
    /* Indices count in the default output shape (the MaxPool input);
     * output_shape pads at the end: an index keeps its coordinates. */
    bool remap = false;
    for (int i = 0; i < n; i++)
        remap = remap || dd[2 + i] != od[2 + i];
    if (remap && (od[0] != x->dims[0] || od[1] != x->dims[1]))
        return cv_kerr(k, "input 2 'output_shape' starts with %lld, %lld but input 0 'X' with %lld, %lld",
                       (long long)od[0], (long long)od[1], (long long)x->dims[0], (long long)x->dims[1]);
    size_t range = remap ? cv_nelem(x->rank, dd) : cv_nelem(x->rank, od);
    cv_val *y = cv_val_new(x->dtype, x->rank, od);
    if (!y)
        return cv_knomem(k);
    size_t es = cv_dtype_nbytes(x->dtype, 1);
    const int64_t *iv = ix->data;
    for (size_t i = 0; i < x->nelem; i++) {
        int64_t at = iv[i];
        bool ok = at >= 0 && (uint64_t)at < range;
        if (ok && remap) {
            int64_t r = at, o = 0, mul = 1;
            for (int j = x->rank - 1; ok && j >= 0; j--) {
                int64_t cj = r % dd[j];
                r /= dd[j];
                ok = cj < od[j];
                o += cj * mul, mul *= od[j];
            }
            at = o;
        }
        if (!ok) {
            cv_val_unref(y);
            return cv_kerr(k, "input 1 'I' element %zu is %lld, outside the output", i, (long long)iv[i]);
        }
        memcpy((uint8_t *)y->data + (size_t)at * es, (const uint8_t *)x->data + i * es, es);
    }
    out[0] = y;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- inference */

static const cv_type *tensor_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

static carve_dtype dtype_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
}

static carve_dim known(int64_t v) { return (carve_dim){v, NULL}; }

/* Conv-like output: X is input xi, W input wi; dtype dt. */
static carve_status conv_infer(cv_ictx *c, uint32_t xi, uint32_t wi, carve_dtype dt, bool transpose)
{
    const cv_type *x = tensor_in(c, xi), *w = tensor_in(c, wi);
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
    d[0] = x ? x->dims[0] : known(-1);
    if (!transpose)
        d[1] = w ? w->dims[0] : known(-1);
    else
        d[1] = w && w->dims[1].value >= 0 && w->dims[1].value <= INT64_MAX / group ? known(w->dims[1].value * group)
                                                                                   : known(-1);
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
        d[2 + i] = known(win_.out[i]);
    }
    return cv_infer_set(c, 0, dt, rank, d);
}

carve_status i_conv(cv_ictx *c) { return conv_infer(c, 0, 1, dtype_in(c, 0), false); }
carve_status i_convtranspose(cv_ictx *c) { return conv_infer(c, 0, 1, dtype_in(c, 0), true); }
carve_status i_convinteger(cv_ictx *c) { return conv_infer(c, 0, 1, CARVE_INT32, false); }
carve_status i_qlinearconv(cv_ictx *c) { return conv_infer(c, 0, 3, dtype_in(c, 7), false); }

carve_status i_pool(cv_ictx *c)
{
    const cv_type *x = tensor_in(c, 0);
    carve_dtype dt = dtype_in(c, 0);
    carve_status s;
    if (!x) {
        s = cv_infer_set(c, 0, dt, -1, NULL);
        return s ? s : cv_infer_set(c, 1, CARVE_INT64, -1, NULL);
    }
    if (x->rank < 3)
        return cv_ierr(c, "input 0 'X' has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    int n = x->rank - 2;
    win w;
    char err[512];
    if (!win_read(c->m, c->node, n, NULL, &w, err, sizeof err))
        return cv_ierr(c, "%s", err);
    carve_dim d[CARVE_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < n; i++) {
        if (!win_fwd(&w, i, x->dims[2 + i].value, err, sizeof err))
            return cv_ierr(c, "%s", err);
        d[2 + i] = known(w.out[i]);
    }
    s = cv_infer_set(c, 0, dt, x->rank, d);
    return s ? s : cv_infer_set(c, 1, CARVE_INT64, x->rank, d);
}

carve_status i_globalpool(cv_ictx *c)
{
    const cv_type *x = tensor_in(c, 0);
    carve_dtype dt = dtype_in(c, 0);
    if (!x)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (x->rank < 2)
        return cv_ierr(c, "input 0 'X' has rank %d, expected at least 2 (N, C, spatial...)", x->rank);
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        d[i] = i < 2 ? x->dims[i] : known(1);
    return cv_infer_set(c, 0, dt, x->rank, d);
}

carve_status i_maxunpool(cv_ictx *c)
{
    const cv_type *x = tensor_in(c, 0);
    carve_dtype dt = dtype_in(c, 0);
    const cv_val *os = c->const_input(c, 2);
    if (os && os->rank == 1 && os->nelem <= CARVE_MAX_RANK && cv_dtype_is_int(os->dtype)) {
        if (x && (size_t)x->rank != os->nelem)
            return cv_ierr(c, "input 2 'output_shape' has %zu values but input 0 'X' has rank %d", os->nelem, x->rank);
        carve_dim d[CARVE_MAX_RANK];
        for (size_t i = 0; i < os->nelem; i++)
            d[i] = known(cv_val_get_i64(os, i));
        return cv_infer_set(c, 0, dt, (int)os->nelem, d);
    }
    if (!x)
        return cv_infer_set(c, 0, dt, -1, NULL);
    if (x->rank < 3)
        return cv_ierr(c, "input 0 'X' has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    carve_dim d[CARVE_MAX_RANK] = {x->dims[0], x->dims[1]};
    if (cv_infer_in(c, 2)) /* output_shape known only at run time */
        return cv_infer_set(c, 0, dt, x->rank, NULL);
    win w;
    char err[512];
    if (!win_read(c->m, c->node, x->rank - 2, NULL, &w, err, sizeof err))
        return cv_ierr(c, "%s", err);
    for (int i = 0; i < x->rank - 2; i++) {
        int64_t v = unpool_dim(&w, i, x->dims[2 + i].value);
        d[2 + i] = known(v < 0 ? -1 : v);
    }
    return cv_infer_set(c, 0, dt, x->rank, d);
}

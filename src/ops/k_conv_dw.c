/* k_conv_dw.c: the direct loop of a 2-D depthwise Conv (one input channel
 * per group), float32, which k_conv.c's conv_fwd takes instead of im2col and
 * a GEMM: strides 1 and 2 hold a strip of outputs in registers over all
 * taps, other strides sweep one kernel tap at a time (the strips take each
 * output's taps in the sweeps' order, so they round alike). */
#include "k_conv.h"

#include <string.h>

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
    float b0; /* the channel's bias: where each output's sum starts */
} dwrows;

#ifdef DW_VEC
/* Stride 1, outputs from o one vector V of L floats at a time while they
 * fit below hi (the tail of the wider strips): each sum starts from the
 * bias and takes the taps in the sweeps' order. Returns the first output
 * left. SPEC: the function's storage and attributes. */
#define DW_STRIP1(SPEC, NAME, V, L)                                                    \
    SPEC int64_t NAME(float *restrict y, const dwrows *r, int64_t o, int64_t hi)       \
    {                                                                                  \
        for (; o + L <= hi; o += L) {                                                  \
            V a;                                                                       \
            for (int l = 0; l < L; l++)                                                \
                a[l] = r->b0;                                                          \
            for (int64_t q = 0; q < r->n; q++)                                         \
                for (int64_t kw = 0; kw < r->kw; kw++) {                               \
                    V xv;                                                              \
                    memcpy(&xv, r->x + (r->xo[q] + o + kw * r->dw), sizeof xv);        \
                    a += r->w[q][kw] * xv;                                             \
                }                                                                      \
            memcpy(y + o, &a, sizeof a);                                               \
        }                                                                              \
        return o;                                                                      \
    }

DW_STRIP1(static, dw_strip4, dw_vec, DW_VEC)
#endif

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

#if defined(DW_STRIDE2) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* Eight floats, one AVX2 register, where the CPU has it: the strips of
 * dw_interior twice as wide. Lane by lane the same multiply, then add (no
 * FMA: float expressions are not contracted in ISO C mode), so the same
 * bits. Returns the first output it left to dw_interior. */
typedef float dw_vec8 __attribute__((vector_size(32)));
#define DW_AVX2 1

DW_STRIP1(__attribute__((target("avx2"))) static, dw_strip8, dw_vec8, 8)

__attribute__((target("avx2"))) static int64_t dw_strips8(float *restrict y, const dwrows *r, int64_t s, int64_t o,
                                                          int64_t hi, int64_t vhi)
{
    int64_t KW = r->kw, dw = r->dw;
    const float b = r->b0;
    const dw_vec8 b8 = {b, b, b, b, b, b, b, b};
    if (s == 1) {
        for (; o + 16 <= hi; o += 16) {
            dw_vec8 a0 = b8, a1 = b8;
            for (int64_t q = 0; q < r->n; q++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    const float *xs = r->x + (r->xo[q] + o + kw * dw);
                    float wq = r->w[q][kw];
                    dw_vec8 x0, x1;
                    memcpy(&x0, xs, sizeof x0);
                    memcpy(&x1, xs + 8, sizeof x1);
                    a0 += wq * x0;
                    a1 += wq * x1;
                }
            memcpy(y + o, &a0, sizeof a0);
            memcpy(y + o + 8, &a1, sizeof a1);
        }
        o = dw_strip8(y, r, o, hi);
    } else if (s == 2) {
        for (; o + 8 <= vhi; o += 8) {
            dw_vec8 a;
            a = b8;
            for (int64_t q = 0; q < r->n; q++)
                for (int64_t kw = 0; kw < KW; kw++) {
                    const float *xs = r->x + (r->xo[q] + 2 * o + kw * dw);
                    dw_vec8 u, v;
                    memcpy(&u, xs, sizeof u);
                    memcpy(&v, xs + 8, sizeof v);
                    a += r->w[q][kw] * __builtin_shufflevector(u, v, 0, 2, 4, 6, 8, 10, 12, 14);
                }
            memcpy(y + o, &a, sizeof a);
        }
    }
    return o;
}
#endif

/* Outputs [lo, hi) of a row where every kernel column lands inside the
 * input: each output takes its taps in the order of the per-tap sweeps
 * (kernel rows, then columns), so its sum rounds as theirs did, but a strip
 * of 16 (then 4) outputs is held in registers over all taps, starting from
 * the bias: y is stored once per strip instead of once per tap. Stride s is 1 or 2;
 * vhi bounds the outputs whose stride-2 loads (8 floats for 4 outputs)
 * stay inside the row. */
static void dw_interior(float *restrict y, const dwrows *r, int64_t s, int64_t lo, int64_t hi, int64_t vhi)
{
    int64_t o = lo, KW = r->kw, dw = r->dw;
#ifdef DW_VEC
    const dw_vec b4 = {r->b0, r->b0, r->b0, r->b0};
#endif
#ifdef DW_AVX2
    if (__builtin_cpu_supports("avx2"))
        o = dw_strips8(y, r, s, o, hi, vhi);
#endif
#ifdef DW_VEC
    if (s == 1) {
        for (; o + 4 * DW_VEC <= hi; o += 4 * DW_VEC) {
            dw_vec a0, a1, a2, a3;
            a0 = b4, a1 = b4, a2 = b4, a3 = b4;
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
        o = dw_strip4(y, r, o, hi);
    }
#ifdef DW_STRIDE2
    if (s == 2) {
        for (; o + 2 * DW_VEC <= vhi; o += 2 * DW_VEC) {
            dw_vec a0, a1;
            a0 = b4, a1 = b4;
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
            a = b4;
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
        float a = r->b0;
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
    float a = r->b0;
    for (int64_t q = 0; q < r->n; q++)
        for (int64_t kw = k0; kw < k1; kw++)
            a += r->w[q][kw] * r->x[r->xo[q] + o * s + kw * r->dw];
    y[o] = a;
}

/* Depthwise 2-D (one input channel per group), float32, plus bias, then
 * the fused chain e on each plane while it is in cache. Strides 1 and 2
 * along the row: output by output over all its taps (dw_interior,
 * dw_edge), each sum starting from the bias (r.b0), so y is only written.
 * Other strides: the plane is filled with the bias, then one multiply-add
 * sweep per output row and kernel tap. */
bool conv_dw2d(const convg *g, const float *x, const float *wt, const float *b, float *y, const cv_epi *e)
{
    const win *w = &g->w;
    int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1], KH = w->k[0], KW = w->k[1];
    int64_t sh = w->s[0], sw = w->s[1], dh = w->d[0], dw = w->d[1], pt = w->pb[0], pl = w->pb[1];
    int64_t mult = g->M / g->group;
    size_t nb = ((size_t)KW * 2 + (size_t)KH) * sizeof(int64_t) + (size_t)KH * sizeof(const float *);
    int64_t *lo = cv_malloc(nb), *hi = lo + KW;
    if (!lo)
        return false;
    dwrows r = {NULL, hi + KW, (const float **)(hi + KW + KH), 0, KW, dw, 0.0f};
    /* outputs [ilo, ihi) have every kernel column inside the row; below
     * vhi, the one float past the last column read is too (stride 2) */
    int64_t ilo = 0, ihi = OW;
    for (int64_t kw = 0; kw < KW; kw++) {
        win_valid_range(kw * dw - pl, sw, W, OW, &lo[kw], &hi[kw]);
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
            size_t yo = (size_t)(nn * g->M + m) * (size_t)(OH * OW);
            float *yp = y + yo, bv = b ? b[m] : 0.0f;
            if (!fused) { /* the sweeps add into y: it starts as the bias */
                for (int64_t i = 0; i < OH * OW; i++)
                    yp[i] = bv;
                for (int64_t oh = 0; oh < OH; oh++, yp += OW)
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t ih = oh * sh - pt + kh * dh;
                        if (ih < 0 || ih >= H)
                            continue;
                        for (int64_t kw = 0; kw < KW; kw++)
                            tap_row(yp, xp + ih * W, wp[kh * KW + kw], sw, kw * dw - pl, lo[kw], hi[kw]);
                    }
            } else {
                for (int64_t oh = 0; oh < OH; oh++, yp += OW) {
                    r.x = xp, r.n = 0;
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t ih = oh * sh - pt + kh * dh;
                        if (ih < 0 || ih >= H)
                            continue;
                        r.xo[r.n] = ih * W - pl;
                        r.w[r.n++] = wp + kh * KW;
                    }
                    r.b0 = bv;
                    if (!r.n) { /* the row lies in the padding */
                        for (int64_t o = 0; o < OW; o++)
                            yp[o] = bv;
                        continue;
                    }
                    for (int64_t o = 0; o < ilo; o++)
                        dw_edge(yp, &r, sw, o, lo, hi);
                    dw_interior(yp, &r, sw, ilo, ihi, vhi);
                    for (int64_t o = ihi; o < OW; o++)
                        dw_edge(yp, &r, sw, o, lo, hi);
                }
            }
            if (e) /* the fused element-wise chain (ops.h) on the plane just made, in cache */
                cv_epi_apply(e, y + yo, yo, (size_t)(OH * OW));
        }
    cv_free(lo);
    return true;
}

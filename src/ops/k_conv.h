/* k_conv.h: what the conv family's files share (k_conv.c, k_conv_dw.c,
 * k_pool.c, k_qlinear.c): the sliding window of a conv or pool along each
 * spatial axis (read from the attributes in k_conv.c), and the convolution
 * core the integer convolutions reuse. Internal to src/ops/. */
#ifndef CARVE_K_CONV_H
#define CARVE_K_CONV_H

#include "k_nn.h"

#define NSP (CARVE_MAX_RANK - 2)
/* Spatial sizes (and size x stride) beyond this are refused before any
 * arithmetic on them could overflow; no real tensor comes near. */
#define DIM_MAX ((int64_t)1 << 40)

/* The sliding window of a conv or pool along each spatial axis. */
typedef struct {
    int n;                                            /* spatial rank */
    int64_t k[NSP], s[NSP], d[NSP], pb[NSP], pe[NSP]; /* kernel, strides, dilations, pads */
    int64_t op[NSP];                                  /* ConvTranspose output_padding */
    int autopad;
    bool ceil;
    int64_t in[NSP], out[NSP];
} win;

static inline int64_t win_fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); } /* floor, b > 0 */
static inline int64_t win_cdiv(int64_t a, int64_t b) { return -win_fdiv(-a, b); }                        /* ceil, b > 0 */

/* in and (in - 1) * s both within DIM_MAX. */
static inline bool win_span_ok(int64_t in, int64_t s) { return in <= DIM_MAX && (in <= 1 || in - 1 <= DIM_MAX / s); }

/* The product of d[0..n). */
static inline size_t win_prod(int n, const int64_t *d)
{
    size_t p = 1;
    for (int i = 0; i < n; i++)
        p *= (size_t)d[i];
    return p;
}

/* Outputs o in [lo, hi) of a line of nout whose input o*s + off lies in
 * [0, len). */
static inline void win_valid_range(int64_t off, int64_t s, int64_t len, int64_t nout, int64_t *lo, int64_t *hi)
{
    int64_t a = win_cdiv(-off, s), b = win_fdiv(len - 1 - off, s) + 1;
    if (a < 0)
        a = 0;
    if (b > nout)
        b = nout;
    if (b < a)
        b = a;
    *lo = a, *hi = b;
}

/* Reads kernel_shape (else the kernel dims of W, wk, -1 where unknown),
 * strides, dilations, pads, auto_pad, ceil_mode and output_padding; false
 * with a message in err. */
bool win_read(const carve_model *m, carve_node_id node, int n, const int64_t *wk, win *w, char *err, size_t errsz);
/* Output size and pads of a conv or pool along axis i for input size in
 * (-1: unknown, giving -1 unless auto_pad decides alone). */
bool win_fwd(win *w, int i, int64_t in, char *err, size_t errsz);
/* ConvTranspose: output size and pads along axis i; os is the output_shape
 * attribute's value for the axis or -1. */
bool win_bwd(win *w, int i, int64_t in, int64_t os, char *err, size_t errsz);

/* A Conv-like node's shapes: its window, batch, input and output channels
 * and groups. */
typedef struct {
    win w;
    int64_t N, C, M, group;
} convg;

static inline bool conv_is_float(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

/* Shapes and attributes of a Conv-like node; W is [M, C/group, k...]
 * (transpose: [C, M/group, k...]). */
carve_status conv_prep(cv_kctx *k, const cv_val *x, const cv_val *wt, const cv_val *b, bool transpose, convg *g);
/* The output dims (N, M, spatial...) into od. */
carve_status conv_out_shape(const convg *g, int64_t *od);
/* y = conv(x, w) + b on float32 (dbl false) or double data. */
carve_status conv_fwd(cv_kctx *k, const convg *g, bool dbl, const void *x, const void *wt, const void *b, void *y);
/* Depthwise 2-D (one input channel per group), float32, plus bias b (or
 * NULL), then the fused element-wise chain e (or NULL) on each plane
 * (k_conv_dw.c). false on NOMEM. */
bool conv_dw2d(const convg *g, const float *x, const float *wt, const float *b, float *y, const cv_epi *e);

#endif /* CARVE_K_CONV_H */

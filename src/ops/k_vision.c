/* k_vision.c: RoiAlign (opsets 10, 16), GridSample (16) and
 * NonMaxSuppression (10, 11).
 *
 * RoiAlign and NonMaxSuppression follow onnxruntime's CPU kernels where the
 * spec leaves details open (max mode takes the largest weighted corner, a
 * box is suppressed when IOU > iou_threshold, candidates need score >
 * score_threshold, equal scores keep the lower box index first). GridSample
 * follows PyTorch's grid_sampler_2d, as the spec asks. */
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* float16/bfloat16 go through float32; double stays double. */
static bool real_float(carve_dtype t) { return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16; }

/* ================================================================ RoiAlign */

typedef struct {
    int64_t pos[4];
    double w[4];
} bl_tap;

/* The bilinear taps of one sampling point (onnxruntime's
 * pre_calc_for_bilinear_interpolate): points more than one pixel outside
 * read nothing. */
static bl_tap roi_tap(double y, double x, int64_t h, int64_t w)
{
    bl_tap t;
    memset(&t, 0, sizeof t);
    if (!(y >= -1.0 && y <= (double)h && x >= -1.0 && x <= (double)w))
        return t;
    if (y <= 0)
        y = 0;
    if (x <= 0)
        x = 0;
    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
    if (yl >= h - 1) {
        yh = yl = h - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= w - 1) {
        xh = xl = w - 1;
        x = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
    t.pos[0] = yl * w + xl, t.pos[1] = yl * w + xh, t.pos[2] = yh * w + xl, t.pos[3] = yh * w + xh;
    t.w[0] = hy * hx, t.w[1] = hy * lx, t.w[2] = ly * hx, t.w[3] = ly * lx;
    return t;
}

carve_status k_roialign(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0], *rois = in[1], *bidx = in[2];
    if (!real_float(x->dtype))
        return cv_kerr(k, "input 0 'X' is %s, expected float16, float or double", carve_dtype_name(x->dtype));
    if (x->rank != 4)
        return cv_kerr(k, "input 0 'X' has rank %d, expected 4 (N, C, H, W)", x->rank);
    if (!real_float(rois->dtype) || rois->rank != 2 || rois->dims[1] != 4)
        return cv_kerr(k, "input 1 'rois' must be a float tensor of shape (num_rois, 4)");
    if (!cv_dtype_is_int(bidx->dtype) || bidx->rank != 1 || bidx->dims[0] != rois->dims[0])
        return cv_kerr(k, "input 2 'batch_indices' must be an int64 tensor of shape (%lld)", (long long)rois->dims[0]);
    carve_model *m = k->m;
    int64_t oh = cv_attr_i(m, k->node, "output_height", 1), ow = cv_attr_i(m, k->node, "output_width", 1);
    int64_t sr = cv_attr_i(m, k->node, "sampling_ratio", 0);
    double sscale = cv_attr_f(m, k->node, "spatial_scale", 1.0f);
    const char *mode = cv_attr_s(m, k->node, "mode", "avg");
    const char *ctm = cv_attr_s(m, k->node, "coordinate_transformation_mode", k->opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (oh <= 0 || ow <= 0)
        return cv_kerr(k, "attributes 'output_height' and 'output_width' must be > 0, got %lld and %lld", (long long)oh,
                       (long long)ow);
    if (sr < 0)
        return cv_kerr(k, "attribute 'sampling_ratio' is %lld, expected >= 0", (long long)sr);
    bool avg = !strcmp(mode, "avg");
    if (!avg && strcmp(mode, "max"))
        return cv_kerr(k, "attribute 'mode' is '%s', expected avg or max", mode);
    bool half = !strcmp(ctm, "half_pixel");
    if (k->opset < 16)
        half = false;
    else if (!half && strcmp(ctm, "output_half_pixel"))
        return cv_kerr(k, "attribute 'coordinate_transformation_mode' is '%s', expected half_pixel or output_half_pixel",
                       ctm);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
    for (int64_t r = 0; r < R; r++) {
        int64_t b = cv_val_get_i64(bidx, (size_t)r);
        if (b < 0 || b >= N)
            return cv_kerr(k, "input 2 'batch_indices' value %lld at %lld is outside [0, %lld)", (long long)b,
                           (long long)r, (long long)N);
    }
    int64_t od[4] = {R, C, oh, ow};
    cv_val *y = cv_val_new(x->dtype, 4, od);
    cv_val *xd = NULL, *yd = NULL;
    bl_tap *taps = NULL;
    carve_status st = CARVE_OK;
    if (!y)
        return cv_knomem(k);
    /* compute in double on a double copy when not float32/double */
    bool is_f32 = x->dtype == CARVE_FLOAT, is_f64 = x->dtype == CARVE_DOUBLE;
    if (!is_f32 && !is_f64) {
        xd = cv_val_to_f32(x);
        yd = cv_val_new(CARVE_FLOAT, 4, od);
        if (!xd || !yd) {
            st = cv_knomem(k);
            goto done;
        }
        is_f32 = true;
    }
    if (!y->nelem || H == 0 || W == 0)
        goto done; /* nothing to sample: zeros */
    const void *xsrc = xd ? xd->data : x->data;
    void *ydst = yd ? yd->data : y->data;
    double off = half ? 0.5 : 0.0;
    for (int64_t r = 0; r < R && !st; r++) {
        int64_t b = cv_val_get_i64(bidx, (size_t)r);
        double x1 = cv_val_get_f64(rois, (size_t)r * 4) * sscale - off;
        double y1 = cv_val_get_f64(rois, (size_t)r * 4 + 1) * sscale - off;
        double x2 = cv_val_get_f64(rois, (size_t)r * 4 + 2) * sscale - off;
        double y2 = cv_val_get_f64(rois, (size_t)r * 4 + 3) * sscale - off;
        double rw = x2 - x1, rh = y2 - y1;
        if (!half) {
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double bh = rh / (double)oh, bw = rw / (double)ow;
        double gh = sr > 0 ? (double)sr : ceil(rh / (double)oh), gw = sr > 0 ? (double)sr : ceil(rw / (double)ow);
        /* NaN or absurd rois: no grid (the output stays 0) rather than UB */
        if (!(gh >= 0 && gh <= 1e6))
            gh = 0;
        if (!(gw >= 0 && gw <= 1e6))
            gw = 0;
        int64_t igh = (int64_t)gh, igw = (int64_t)gw;
        double count = (double)(igh * igw > 1 ? igh * igw : 1);
        if ((double)oh * (double)ow * (double)igh * (double)igw > 1e9) {
            st = cv_kerr(k, "roi %lld needs more than 1e9 sampling points; lower 'sampling_ratio'", (long long)r);
            break;
        }
        size_t nt = (size_t)oh * (size_t)ow * (size_t)igh * (size_t)igw;
        cv_free(taps);
        taps = cv_malloc((nt ? nt : 1) * sizeof *taps);
        if (!taps) {
            st = cv_knomem(k);
            break;
        }
        size_t t = 0;
        for (int64_t ph = 0; ph < oh; ph++)
            for (int64_t pw = 0; pw < ow; pw++)
                for (int64_t iy = 0; iy < igh; iy++) {
                    double yy = y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)igh;
                    for (int64_t ix = 0; ix < igw; ix++) {
                        double xx = x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)igw;
                        taps[t++] = roi_tap(yy, xx, H, W);
                    }
                }
        size_t per = (size_t)igh * (size_t)igw;
        for (int64_t c = 0; c < C; c++) {
            size_t plane = ((size_t)b * (size_t)C + (size_t)c) * (size_t)H * (size_t)W;
            size_t obase = ((size_t)r * (size_t)C + (size_t)c) * (size_t)oh * (size_t)ow;
            for (size_t p = 0; p < (size_t)oh * (size_t)ow; p++) {
                double acc = 0;
                bool first = true;
                for (size_t q = 0; q < per; q++) {
                    const bl_tap *tp = &taps[p * per + q];
                    double v[4];
                    for (int i = 0; i < 4; i++)
                        v[i] = is_f32 ? ((const float *)xsrc)[plane + (size_t)tp->pos[i]]
                                      : ((const double *)xsrc)[plane + (size_t)tp->pos[i]];
                    if (avg) {
                        acc += tp->w[0] * v[0] + tp->w[1] * v[1] + tp->w[2] * v[2] + tp->w[3] * v[3];
                    } else {
                        double mv = fmax(fmax(tp->w[0] * v[0], tp->w[1] * v[1]), fmax(tp->w[2] * v[2], tp->w[3] * v[3]));
                        acc = first ? mv : fmax(acc, mv);
                        first = false;
                    }
                }
                if (avg)
                    acc /= count;
                if (is_f32)
                    ((float *)ydst)[obase + p] = (float)acc;
                else
                    ((double *)ydst)[obase + p] = acc;
            }
        }
    }
    if (!st && yd) {
        cv_val *c = cv_val_from_f32(yd, x->dtype);
        if (!c)
            st = cv_knomem(k);
        else {
            memcpy(y->data, c->data, y->nbytes);
            cv_val_unref(c);
        }
    }
done:
    cv_free(taps);
    cv_val_unref(xd);
    cv_val_unref(yd);
    return cv_kout(st, y, &out[0]);
}

carve_status i_roialign(cv_ictx *c)
{
    const cv_type *x = cv_infer_in(c, 0), *r = cv_infer_in(c, 1);
    carve_dtype dt = x && x->kind == CARVE_TYPE_TENSOR ? x->dtype : CARVE_UNDEFINED;
    if (x && x->kind == CARVE_TYPE_TENSOR && x->rank >= 0 && x->rank != 4)
        return cv_ierr(c, "input 0 'X' has rank %d, expected 4", x->rank);
    carve_dim d[4] = {{-1, NULL}, {-1, NULL}, {cv_attr_i(c->m, c->node, "output_height", 1), NULL},
                      {cv_attr_i(c->m, c->node, "output_width", 1), NULL}};
    if (r && r->kind == CARVE_TYPE_TENSOR && r->rank == 2)
        d[0] = r->dims[0];
    if (x && x->kind == CARVE_TYPE_TENSOR && x->rank == 4)
        d[1] = x->dims[1];
    return cv_infer_set(c, 0, dt, 4, d);
}

/* ================================================================ GridSample */

typedef enum { GP_ZEROS, GP_BORDER, GP_REFLECTION } gpad;

static double gs_unnormalize(double c, int64_t size, bool align)
{
    return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}

static double gs_reflect(double in, int64_t twice_low, int64_t twice_high)
{
    if (twice_low == twice_high)
        return 0;
    double mn = (double)twice_low / 2, span = (double)(twice_high - twice_low) / 2;
    in = fabs(in - mn);
    double extra = fmod(in, span);
    double flips = floor(in / span);
    return fmod(flips, 2.0) == 0 ? extra + mn : span - extra + mn;
}

static double gs_pad_coord(double c, int64_t size, gpad pad, bool align)
{
    if (pad == GP_BORDER)
        return fmin((double)(size - 1), fmax(c, 0));
    if (pad == GP_REFLECTION) {
        c = align ? gs_reflect(c, 0, 2 * (size - 1)) : gs_reflect(c, -1, 2 * size - 1);
        return fmin((double)(size - 1), fmax(c, 0));
    }
    return c;
}

/* An integer pixel index, or -1 when outside [0, size) (or not finite). */
static int64_t gs_index(double c, int64_t size)
{
    if (!(c >= 0 && c < (double)size))
        return -1;
    return (int64_t)c;
}

static double cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static double cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

carve_status k_gridsample(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0], *g = in[1];
    carve_model *m = k->m;
    const char *mode = cv_attr_s(m, k->node, "mode", "bilinear");
    const char *pm = cv_attr_s(m, k->node, "padding_mode", "zeros");
    bool align = cv_attr_i(m, k->node, "align_corners", 0) != 0;
    int md; /* 0 nearest, 1 bilinear, 2 bicubic */
    if (!strcmp(mode, "nearest"))
        md = 0;
    else if (!strcmp(mode, "bilinear") || (k->opset >= 20 && !strcmp(mode, "linear")))
        md = 1;
    else if (!strcmp(mode, "bicubic") || (k->opset >= 20 && !strcmp(mode, "cubic")))
        md = 2;
    else
        return cv_kerr(k, "attribute 'mode' is '%s', expected bilinear, nearest or bicubic", mode);
    gpad pad;
    if (!strcmp(pm, "zeros"))
        pad = GP_ZEROS;
    else if (!strcmp(pm, "border"))
        pad = GP_BORDER;
    else if (!strcmp(pm, "reflection"))
        pad = GP_REFLECTION;
    else
        return cv_kerr(k, "attribute 'padding_mode' is '%s', expected zeros, border or reflection", pm);
    if (x->rank != 4)
        return cv_kerr(k, "input 0 'X' has rank %d, expected 4 (N, C, H, W)", x->rank);
    if (!real_float(g->dtype))
        return cv_kerr(k, "input 1 'grid' is %s, expected float16, float or double", carve_dtype_name(g->dtype));
    if (g->rank != 4 || g->dims[0] != x->dims[0] || g->dims[3] != 2)
        return cv_kerr(k, "input 1 'grid' must have shape (%lld, H_out, W_out, 2)", (long long)x->dims[0]);
    bool numeric = (cv_dtype_is_float(x->dtype) || cv_dtype_is_int(x->dtype)) && x->dtype != CARVE_INT4 &&
                   x->dtype != CARVE_UINT4;
    bool gather_only = !numeric;
    if (gather_only && md != 0)
        return cv_kerr(k, "mode '%s' needs numeric data, input 0 'X' is %s", mode, carve_dtype_name(x->dtype));
    if (x->dtype == CARVE_INT4 || x->dtype == CARVE_UINT4 || x->dtype == CARVE_FLOAT4E2M1)
        return cv_kerr(k, "input 0 'X' is %s, which GridSample does not take", carve_dtype_name(x->dtype));
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], OH = g->dims[1], OW = g->dims[2];
    int64_t od[4] = {N, C, OH, OW};
    cv_val *y = cv_val_new(x->dtype, 4, od);
    if (!y)
        return cv_knomem(k);
    int ntap = md == 0 ? 1 : md == 1 ? 4 : 16;
    size_t npix = (size_t)OH * (size_t)OW, plane = (size_t)H * (size_t)W;
    int64_t *ti = cv_malloc(npix * (size_t)ntap * sizeof *ti + 1);
    double *tw = cv_malloc(npix * (size_t)ntap * sizeof *tw + 1);
    float *twf = cv_malloc(npix * (size_t)ntap * sizeof *twf + 1);
    cv_val *xf = NULL, *yf = NULL;
    carve_status st = CARVE_OK;
    /* data path: float32 for float32/16, double for the others that interpolate */
    bool f32 = x->dtype == CARVE_FLOAT || x->dtype == CARVE_FLOAT16 || x->dtype == CARVE_BFLOAT16 ||
               (cv_dtype_is_float(x->dtype) && x->dtype != CARVE_DOUBLE);
    double *xd = NULL, *yd = NULL;
    if (!ti || !tw || !twf) {
        st = cv_knomem(k);
        goto done;
    }
    if (!gather_only) {
        if (f32) {
            xf = x->dtype == CARVE_FLOAT ? cv_val_ref((cv_val *)x) : cv_val_to_f32(x);
            yf = x->dtype == CARVE_FLOAT ? cv_val_ref(y) : cv_val_new(CARVE_FLOAT, 4, od);
            if (!xf || !yf) {
                st = cv_knomem(k);
                goto done;
            }
        } else {
            xd = x->dtype == CARVE_DOUBLE ? x->data : cv_malloc(x->nelem * sizeof *xd + 1);
            yd = x->dtype == CARVE_DOUBLE ? y->data : cv_malloc(y->nelem * sizeof *yd + 1);
            if (!xd || !yd) {
                st = cv_knomem(k);
                goto done;
            }
            if (xd != x->data)
                for (size_t i = 0; i < x->nelem; i++)
                    xd[i] = cv_val_get_f64(x, i);
        }
    }
    for (int64_t b = 0; b < N; b++) {
        /* taps of every output pixel of this batch item (index -1: reads 0) */
        for (size_t p = 0; p < npix; p++) {
            size_t gi = ((size_t)b * npix + p) * 2;
            double gx = cv_val_get_f64(g, gi), gy = cv_val_get_f64(g, gi + 1);
            double ix = gs_unnormalize(gx, W, align), iy = gs_unnormalize(gy, H, align);
            int64_t *pi = ti + p * (size_t)ntap;
            double *pw = tw + p * (size_t)ntap;
            if (md == 0 || md == 1) {
                ix = gs_pad_coord(ix, W, pad, align);
                iy = gs_pad_coord(iy, H, pad, align);
            }
            if (md == 0) {
                int64_t xi = gs_index(nearbyint(ix), W), yi = gs_index(nearbyint(iy), H);
                pi[0] = xi >= 0 && yi >= 0 ? yi * W + xi : -1;
                pw[0] = 1;
            } else if (md == 1) {
                if (!(fabs(ix) < 1e15 && fabs(iy) < 1e15)) {
                    for (int t = 0; t < 4; t++)
                        pi[t] = -1, pw[t] = 0;
                    continue;
                }
                double x0 = floor(ix), y0 = floor(iy);
                double wx[2] = {x0 + 1 - ix, ix - x0}, wy[2] = {y0 + 1 - iy, iy - y0};
                for (int t = 0; t < 4; t++) {
                    int64_t xi = gs_index(x0 + (t & 1), W), yi = gs_index(y0 + (t >> 1), H);
                    pi[t] = xi >= 0 && yi >= 0 ? yi * W + xi : -1;
                    pw[t] = wx[t & 1] * wy[t >> 1];
                }
            } else {
                if (!(fabs(ix) < 1e15 && fabs(iy) < 1e15)) {
                    for (int t = 0; t < 16; t++)
                        pi[t] = -1, pw[t] = 0;
                    continue;
                }
                double x0 = floor(ix), y0 = floor(iy), tx = ix - x0, ty = iy - y0, A = -0.75;
                double wx[4] = {cubic2(tx + 1, A), cubic1(tx, A), cubic1(1 - tx, A), cubic2(2 - tx, A)};
                double wy[4] = {cubic2(ty + 1, A), cubic1(ty, A), cubic1(1 - ty, A), cubic2(2 - ty, A)};
                for (int j = 0; j < 4; j++) {
                    double cy = gs_pad_coord(y0 - 1 + j, H, pad, align);
                    int64_t yi = gs_index(cy, H); /* integral: tap coordinates stay whole */
                    for (int i = 0; i < 4; i++) {
                        double cx = gs_pad_coord(x0 - 1 + i, W, pad, align);
                        int64_t xi = gs_index(cx, W);
                        pi[j * 4 + i] = xi >= 0 && yi >= 0 ? yi * W + xi : -1;
                        pw[j * 4 + i] = wx[i] * wy[j];
                    }
                }
            }
        }
        if (gather_only) {
            size_t es = x->dtype == CARVE_STRING ? sizeof(char *) : cv_dtype_nbytes(x->dtype, 1);
            for (int64_t c = 0; c < C; c++) {
                size_t ib = ((size_t)b * (size_t)C + (size_t)c) * plane, ob = ((size_t)b * (size_t)C + (size_t)c) * npix;
                for (size_t p = 0; p < npix; p++) {
                    if (x->dtype == CARVE_STRING) {
                        const char *s = ti[p] >= 0 ? ((char **)x->data)[ib + (size_t)ti[p]] : "";
                        size_t L = strlen(s);
                        char *d = cv_malloc(L + 1);
                        if (!d) {
                            st = cv_knomem(k);
                            goto done;
                        }
                        memcpy(d, s, L + 1);
                        ((char **)y->data)[ob + p] = d;
                    } else if (ti[p] >= 0) {
                        memcpy((char *)y->data + (ob + p) * es, (const char *)x->data + (ib + (size_t)ti[p]) * es, es);
                    }
                }
            }
            continue;
        }
        if (f32) {
            for (size_t i = 0; i < npix * (size_t)ntap; i++)
                twf[i] = (float)tw[i];
            const float *xs = xf->data;
            float *ys = yf->data;
            for (int64_t c = 0; c < C; c++) {
                const float *src = xs + ((size_t)b * (size_t)C + (size_t)c) * plane;
                float *dst = ys + ((size_t)b * (size_t)C + (size_t)c) * npix;
                for (size_t p = 0; p < npix; p++) {
                    const int64_t *pi = ti + p * (size_t)ntap;
                    const float *pw = twf + p * (size_t)ntap;
                    float acc = 0;
                    for (int t = 0; t < ntap; t++)
                        if (pi[t] >= 0)
                            acc += pw[t] * src[pi[t]];
                    dst[p] = acc;
                }
            }
        } else {
            for (int64_t c = 0; c < C; c++) {
                const double *src = xd + ((size_t)b * (size_t)C + (size_t)c) * plane;
                double *dst = yd + ((size_t)b * (size_t)C + (size_t)c) * npix;
                for (size_t p = 0; p < npix; p++) {
                    const int64_t *pi = ti + p * (size_t)ntap;
                    const double *pw = tw + p * (size_t)ntap;
                    double acc = 0;
                    for (int t = 0; t < ntap; t++)
                        if (pi[t] >= 0)
                            acc += pw[t] * src[pi[t]];
                    dst[p] = acc;
                }
            }
        }
    }
    if (!gather_only && f32 && yf != y) {
        cv_val *c = cv_val_from_f32(yf, x->dtype);
        if (!c) {
            st = cv_knomem(k);
            goto done;
        }
        memcpy(y->data, c->data, y->nbytes);
        cv_val_unref(c);
    } else if (!gather_only && !f32 && yd != y->data) {
        /* integers: nearest copies exactly; interpolated values are rounded
         * to nearest (ties to even) and saturated */
        for (size_t i = 0; i < y->nelem; i++) {
            double v = nearbyint(yd[i]);
            if (v != v)
                v = 0;
            if (y->dtype == CARVE_UINT64)
                ((uint64_t *)y->data)[i] = v <= 0 ? 0 : v >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)v;
            else
                cv_val_set_f64(y, i, v);
        }
    }
done:
    cv_free(ti);
    cv_free(tw);
    cv_free(twf);
    cv_val_unref(xf);
    cv_val_unref(yf);
    if (xd && xd != x->data)
        cv_free(xd);
    if (yd && yd != y->data)
        cv_free(yd);
    return cv_kout(st, y, &out[0]);
}

carve_status i_gridsample(cv_ictx *c)
{
    const cv_type *x = cv_infer_in(c, 0), *g = cv_infer_in(c, 1);
    carve_dtype dt = x && x->kind == CARVE_TYPE_TENSOR ? x->dtype : CARVE_UNDEFINED;
    if (x && x->kind == CARVE_TYPE_TENSOR && x->rank >= 0 && x->rank != 4)
        return cv_ierr(c, "input 0 'X' has rank %d, expected 4", x->rank);
    if (g && g->kind == CARVE_TYPE_TENSOR && g->rank >= 0 && g->rank != 4)
        return cv_ierr(c, "input 1 'grid' has rank %d, expected 4", g->rank);
    carve_dim d[4] = {{-1, NULL}, {-1, NULL}, {-1, NULL}, {-1, NULL}};
    if (x && x->kind == CARVE_TYPE_TENSOR && x->rank == 4)
        d[0] = x->dims[0], d[1] = x->dims[1];
    if (g && g->kind == CARVE_TYPE_TENSOR && g->rank == 4) {
        if (d[0].value < 0 && !d[0].param)
            d[0] = g->dims[0];
        d[2] = g->dims[1], d[3] = g->dims[2];
    }
    return cv_infer_set(c, 0, dt, 4, d);
}

/* ================================================================ NonMaxSuppression */

typedef struct {
    float score;
    int64_t index;
} nms_cand;

/* Highest score first, then lowest index; NaN scores last. */
static int nms_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    bool an = a->score != a->score, bn = b->score != b->score;
    if (an != bn)
        return an ? 1 : -1;
    if (!an && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

typedef struct {
    float x0, y0, x1, y1, area;
} nms_box;

static nms_box nms_make_box(const float *b, bool center)
{
    nms_box r;
    if (center) {
        float hw = b[2] / 2, hh = b[3] / 2;
        r.x0 = b[0] - hw, r.x1 = b[0] + hw, r.y0 = b[1] - hh, r.y1 = b[1] + hh;
    } else {
        r.y0 = fminf(b[0], b[2]), r.y1 = fmaxf(b[0], b[2]);
        r.x0 = fminf(b[1], b[3]), r.x1 = fmaxf(b[1], b[3]);
    }
    r.area = (r.x1 - r.x0) * (r.y1 - r.y0);
    return r;
}

/* onnxruntime's SuppressByIOU. */
static bool nms_suppress(const nms_box *a, const nms_box *b, float thr)
{
    float ix0 = fmaxf(a->x0, b->x0), ix1 = fminf(a->x1, b->x1);
    float iy0 = fmaxf(a->y0, b->y0), iy1 = fminf(a->y1, b->y1);
    if (!(ix1 > ix0) || !(iy1 > iy0))
        return false;
    if (!(a->area > 0) || !(b->area > 0))
        return false;
    float inter = (ix1 - ix0) * (iy1 - iy0);
    float uni = a->area + b->area - inter;
    if (!(uni > 0))
        return false;
    return inter / uni > thr;
}

static bool scalar_or_one(const cv_val *v) { return v->nelem == 1 && (v->rank == 0 || v->rank == 1); }

carve_status k_nms(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *boxes = in[0], *scores = in[1];
    const cv_val *maxv = n_in > 2 ? in[2] : NULL, *iouv = n_in > 3 ? in[3] : NULL, *scv = n_in > 4 ? in[4] : NULL;
    if (boxes->dtype != CARVE_FLOAT || scores->dtype != CARVE_FLOAT)
        return cv_kerr(k, "inputs 'boxes' and 'scores' must be float, got %s and %s", carve_dtype_name(boxes->dtype),
                       carve_dtype_name(scores->dtype));
    if (boxes->rank != 3 || boxes->dims[2] != 4)
        return cv_kerr(k, "input 0 'boxes' must have shape (num_batches, spatial_dimension, 4)");
    if (scores->rank != 3 || scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return cv_kerr(k, "input 1 'scores' must have shape (%lld, num_classes, %lld)", (long long)boxes->dims[0],
                       (long long)boxes->dims[1]);
    int64_t maxb = 0;
    float iou = 0, sthr = 0;
    bool has_sthr = false;
    if (maxv && maxv->nelem) {
        if (!scalar_or_one(maxv) || !cv_dtype_is_int(maxv->dtype))
            return cv_kerr(k, "input 2 'max_output_boxes_per_class' must be an int64 scalar");
        maxb = cv_val_get_i64(maxv, 0);
    }
    if (iouv && iouv->nelem) {
        if (!scalar_or_one(iouv) || !cv_dtype_is_float(iouv->dtype))
            return cv_kerr(k, "input 3 'iou_threshold' must be a float scalar");
        iou = (float)cv_val_get_f64(iouv, 0);
        if (!(iou >= 0 && iou <= 1))
            return cv_kerr(k, "input 3 'iou_threshold' is %g, expected a value in [0, 1]", (double)iou);
    }
    if (scv && scv->nelem) {
        if (!scalar_or_one(scv) || !cv_dtype_is_float(scv->dtype))
            return cv_kerr(k, "input 4 'score_threshold' must be a float scalar");
        sthr = (float)cv_val_get_f64(scv, 0);
        has_sthr = true;
    }
    bool center = cv_attr_i(k->m, k->node, "center_point_box", 0) != 0;
    int64_t B = boxes->dims[0], S = boxes->dims[1], K = scores->dims[1];
    const float *bx = boxes->data, *sc = scores->data;
    nms_cand *cand = cv_malloc((size_t)S * sizeof *cand + 1);
    nms_box *bb = cv_malloc((size_t)S * sizeof *bb + 1);
    int64_t *sel = cv_malloc((size_t)S * sizeof *sel + 1);
    int64_t *res = NULL;
    size_t nres = 0, capres = 0;
    carve_status st = CARVE_OK;
    if (!cand || !bb || !sel) {
        st = cv_knomem(k);
        goto done;
    }
    for (int64_t b = 0; b < B && maxb > 0; b++) {
        for (int64_t i = 0; i < S; i++)
            bb[i] = nms_make_box(bx + ((size_t)b * (size_t)S + (size_t)i) * 4, center);
        for (int64_t c = 0; c < K; c++) {
            const float *s = sc + ((size_t)b * (size_t)K + (size_t)c) * (size_t)S;
            size_t nc = 0;
            for (int64_t i = 0; i < S; i++)
                if (!has_sthr || s[i] > sthr)
                    cand[nc++] = (nms_cand){s[i], i};
            qsort(cand, nc, sizeof *cand, nms_cmp);
            size_t nsel = 0;
            for (size_t i = 0; i < nc && (int64_t)nsel < maxb; i++) {
                bool keep = true;
                for (size_t j = 0; j < nsel && keep; j++)
                    keep = !nms_suppress(&bb[cand[i].index], &bb[sel[j]], iou);
                if (!keep)
                    continue;
                sel[nsel++] = cand[i].index;
                if (nres == capres) {
                    size_t nc2 = capres ? capres * 2 : 64;
                    int64_t *r = cv_realloc(res, nc2 * 3 * sizeof *r);
                    if (!r) {
                        st = cv_knomem(k);
                        goto done;
                    }
                    res = r, capres = nc2;
                }
                res[nres * 3] = b, res[nres * 3 + 1] = c, res[nres * 3 + 2] = cand[i].index;
                nres++;
            }
        }
    }
    {
        int64_t od[2] = {(int64_t)nres, 3};
        cv_val *y = cv_val_new(CARVE_INT64, 2, od);
        if (!y) {
            st = cv_knomem(k);
            goto done;
        }
        if (nres)
            memcpy(y->data, res, nres * 3 * sizeof *res);
        out[0] = y;
    }
done:
    cv_free(cand);
    cv_free(bb);
    cv_free(sel);
    cv_free(res);
    return st;
}

carve_status i_nms(cv_ictx *c)
{
    carve_dim d[2] = {{-1, NULL}, {3, NULL}};
    return cv_infer_set(c, 0, CARVE_INT64, 2, d);
}

/* k_resize.c: Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9), one
 * kernel for both.
 *
 * Every output coordinate maps to an input coordinate per axis (the
 * coordinate_transformation_mode), so the work splits into per-axis tables
 * of (input index, weight) taps, computed once in double, and passes that
 * apply them: nearest is a gather (any dtype), linear and cubic are
 * separable 1-D passes, plus a direct bilinear loop for the 2-D case of
 * image models that rounds as onnxruntime does (see bilinear_f32). The
 * conventions follow the ONNX reference implementation
 * (onnx/reference/ops/op_resize.py): the ratio of a coordinate that falls
 * on a pixel is 1 (the left neighbour is the base), neighbours beyond the
 * edge repeat the edge, exclude_outside drops them and renormalizes,
 * antialias widens the linear/cubic filter by 1/scale when downsampling. */
#include "k_resize.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- passes */

/* One separable pass along an axis: src [outer, in, inner] -> dst [outer,
 * out, inner]. Instantiated for float and double. */
#define DEFINE_PASS(NAME, T)                                                                               \
    static void NAME(const T *src, T *dst, size_t outer, size_t inner, const amap *a, const T *wt)         \
    {                                                                                                      \
        size_t in = (size_t)a->in, out = (size_t)a->out;                                                   \
        int nt = a->ntap;                                                                                  \
        for (size_t o = 0; o < outer; o++) {                                                               \
            const T *s = src + o * in * inner;                                                             \
            T *dd = dst + o * out * inner;                                                                 \
            for (size_t x = 0; x < out; x++) {                                                             \
                const int64_t *ix = a->idx + x * (size_t)nt;                                               \
                const T *w = wt + x * (size_t)nt;                                                          \
                T *drow = dd + x * inner;                                                                  \
                if (inner == 1) {                                                                          \
                    T acc = 0;                                                                             \
                    for (int t = 0; t < nt; t++)                                                           \
                        acc += w[t] * s[ix[t]];                                                            \
                    drow[0] = acc;                                                                         \
                    continue;                                                                              \
                }                                                                                          \
                const T *r0 = s + (size_t)ix[0] * inner;                                                   \
                T w0 = w[0];                                                                               \
                for (size_t i = 0; i < inner; i++)                                                         \
                    drow[i] = w0 * r0[i];                                                                  \
                for (int t = 1; t < nt; t++) {                                                             \
                    const T *rt = s + (size_t)ix[t] * inner;                                               \
                    T wt_ = w[t];                                                                          \
                    if (wt_ == 0)                                                                          \
                        continue;                                                                          \
                    for (size_t i = 0; i < inner; i++)                                                     \
                        drow[i] += wt_ * rt[i];                                                            \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
    }
DEFINE_PASS(pass_f32, float)
DEFINE_PASS(pass_f64, double)

/* ---------------------------------------------------------------- bilinear */

/* One Resize run: attributes, geometry, per-axis tables. */
typedef struct {
    rattrs a;
    rshape rs;
    amap maps[CARVE_MAX_RANK];
} rjob;

/* Linear mode over two adjacent axes, every other axis left alone (NCHW
 * with H and W resized, a 2-D tensor, NHWC), in float32, rounds as
 * onnxruntime does, to the bit: the source coordinate computed in float32,
 * clamped into [0, in - 1]; the neighbours its floor and the next pixel
 * (at the last pixel both are it, weighted 1/2 each); the output
 * w11 X11 + w12 X12 + w21 X21 + w22 X22, summed in that order, each weight
 * the product of the two axis weights. In real arithmetic this is the ONNX
 * reference's value (clamping the coordinate and repeating the edge pixel
 * agree), but the order of the float32 roundings decides the last bit, and
 * a quantized model turns a last bit into a different quantized value
 * (DynamicQuantizeLinear rounds x / scale): through its many Resize and
 * DynamicQuantizeLinear nodes, imgly small's decoder drifted 0.28 from
 * onnxruntime with the separable order. The taps (k_resize.h) serve the
 * oneDNN backend's linear Resize too. */
float rs_coord_f32(ctmode ct, float s, int64_t in, int64_t out, double len, int64_t xo)
{
    float x = (float)xo, fin = (float)in;
    if (s == 1.0f && ct != CT_TF_HALF_PIXEL_FOR_NN)
        return x;
    switch (ct) {
    case CT_HALF_PIXEL: return (x + 0.5f) / s - 0.5f;
    case CT_HALF_PIXEL_SYMMETRIC: {
        float adj = (float)out / (s * fin);
        float off = fin / 2 * (1 - adj);
        return (float)((double)off + ((double)x + 0.5) / (double)s - 0.5);
    }
    case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
    case CT_ALIGN_CORNERS: return len == 1 ? 0.0f : x * (fin - 1) / ((float)len - 1);
    case CT_ASYMMETRIC: return x / s;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5f) / s;
    case CT_TF_CROP_AND_RESIZE: break; /* not on this path */
    }
    return x;
}

void rs_bilinear_taps(ctmode ct, float s, int64_t in, int64_t out, double len, rs_bltap *t)
{
    float last = (float)(in - 1);
    for (int64_t xo = 0; xo < out; xo++) {
        float c = rs_coord_f32(ct, s, in, out, len, xo);
        if (!(c > 0)) /* NaN too, as std::max(0.0f, std::min(c, last)) */
            c = 0;
        if (c > last)
            c = last;
        int64_t i1 = (int64_t)c;
        if (i1 > in - 1)
            i1 = in - 1;
        int64_t i2 = i1 + 1 < in ? i1 + 1 : in - 1;
        t[xo].i1 = (size_t)i1, t[xo].i2 = (size_t)i2;
        if (i1 == i2)
            t[xo].w1 = t[xo].w2 = 0.5f;
        else
            t[xo].w1 = fabsf(c - (float)i2), t[xo].w2 = fabsf(c - (float)i1);
    }
}

/* The axis d of the bilinear path (axes d and d + 1 resized), or -1. */
static int bilinear_axis(const rjob *j)
{
    int r = j->rs.rank;
    if (j->a.mode != RM_LINEAR || j->a.antialias || j->a.ct == CT_TF_CROP_AND_RESIZE || r < 2)
        return -1;
    bool outer_id = true;
    for (int d = 0; d < r - 2 && outer_id; d++)
        outer_id = j->maps[d].identity;
    if (outer_id)
        return r - 2;
    if (r == 4 && j->maps[0].identity && j->maps[3].identity)
        return 1; /* NHWC */
    return -1;
}

/* src [outer, in[d], in[d + 1], inner] -> dst [outer, out[d], out[d + 1], inner]. */
static carve_status bilinear_f32(cv_kctx *k, const rjob *j, int d, const float *src, float *dst)
{
    const rshape *rs = &j->rs;
    size_t ih = (size_t)rs->in[d], iw = (size_t)rs->in[d + 1], oh = (size_t)rs->out[d], ow = (size_t)rs->out[d + 1];
    size_t outer = cv_nelem(d, rs->in), inner = cv_nelem(rs->rank - d - 2, rs->in + d + 2);
    rs_bltap *ty = cv_malloc(oh * sizeof *ty + 1), *tx = cv_malloc(ow * sizeof *tx + 1);
    if (!ty || !tx) {
        cv_free(ty);
        cv_free(tx);
        return cv_knomem(k);
    }
    rs_bilinear_taps(j->a.ct, rs->fscale[d], rs->in[d], rs->out[d], rs->len[d], ty);
    rs_bilinear_taps(j->a.ct, rs->fscale[d + 1], rs->in[d + 1], rs->out[d + 1], rs->len[d + 1], tx);
    for (size_t p = 0; p < outer; p++) {
        const float *s = src + p * ih * iw * inner;
        float *o = dst + p * oh * ow * inner;
        for (size_t y = 0; y < oh; y++) {
            const float *r1 = s + ty[y].i1 * iw * inner, *r2 = s + ty[y].i2 * iw * inner;
            float wy1 = ty[y].w1, wy2 = ty[y].w2;
            if (inner == 1) {
                for (size_t x = 0; x < ow; x++) {
                    const rs_bltap *t = &tx[x];
                    o[x] = t->w1 * wy1 * r1[t->i1] + t->w2 * wy1 * r1[t->i2] + t->w1 * wy2 * r2[t->i1] +
                           t->w2 * wy2 * r2[t->i2];
                }
                o += ow;
                continue;
            }
            for (size_t x = 0; x < ow; x++, o += inner) {
                const rs_bltap *t = &tx[x];
                float c11 = t->w1 * wy1, c12 = t->w2 * wy1, c21 = t->w1 * wy2, c22 = t->w2 * wy2;
                const float *a11 = r1 + t->i1 * inner, *a12 = r1 + t->i2 * inner;
                const float *a21 = r2 + t->i1 * inner, *a22 = r2 + t->i2 * inner;
                for (size_t c = 0; c < inner; c++)
                    o[c] = c11 * a11[c] + c12 * a12[c] + c21 * a21[c] + c22 * a22[c];
            }
        }
    }
    cv_free(ty);
    cv_free(tx);
    return CARVE_OK;
}

/* ---------------------------------------------------------------- kernel */

static void job_free(rjob *j)
{
    for (int d = 0; d < CARVE_MAX_RANK; d++)
        rs_amap_free(&j->maps[d]);
}

/* Nearest: a gather of whole elements of any size (strings duplicated). */
static carve_status run_nearest(cv_kctx *k, rjob *j, const cv_val *x, cv_val *y)
{
    int rank = j->rs.rank;
    size_t es = x->dtype == CARVE_STRING ? sizeof(char *) : cv_dtype_nbytes(x->dtype, 1);
    if (!y->nelem)
        return CARVE_OK;
    int64_t istride[CARVE_MAX_RANK];
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        istride[d] = s;
        s *= j->rs.in[d];
    }
    /* extrapolation value in the output dtype, as bytes */
    unsigned char extv[16] = {0};
    bool any_ext = false;
    for (int d = 0; d < rank; d++)
        any_ext |= j->maps[d].any_ext;
    if (any_ext && x->dtype != CARVE_STRING) {
        cv_val *t = cv_val_new(x->dtype, 0, NULL);
        if (!t)
            return cv_knomem(k);
        cv_val_set_f64(t, 0, j->a.extrapolation);
        memcpy(extv, t->data, es <= sizeof extv ? es : sizeof extv);
        cv_val_unref(t);
    }
    const amap *last = &j->maps[rank - 1];
    size_t ow = (size_t)last->out;
    size_t rows = y->nelem / ow;
    int64_t pos[CARVE_MAX_RANK] = {0}, prev_off = -1;
    bool prev_ext = false;
    const unsigned char *src = x->data;
    unsigned char *dst = y->data;
    char **ssrc = x->data, **sdst = y->data;
    for (size_t r = 0; r < rows; r++) {
        /* source offset of this row, and whether an outer axis extrapolates */
        int64_t off = 0;
        bool ext = false;
        for (int d = 0; d < rank - 1; d++) {
            off += j->maps[d].idx[pos[d]] * istride[d];
            ext |= j->maps[d].any_ext && j->maps[d].ext[pos[d]];
        }
        size_t o0 = r * ow;
        if (r > 0 && off == prev_off && ext == prev_ext && x->dtype != CARVE_STRING) {
            /* an upsampled row repeats the one before */
            memcpy(dst + o0 * es, dst + (o0 - ow) * es, ow * es);
        } else if (x->dtype == CARVE_STRING) {
            for (size_t xo = 0; xo < ow; xo++) {
                const char *sv = ext || (last->any_ext && last->ext[xo]) ? "" : ssrc[off + last->idx[xo]];
                size_t n = strlen(sv);
                sdst[o0 + xo] = cv_malloc(n + 1);
                if (!sdst[o0 + xo])
                    return cv_knomem(k);
                memcpy(sdst[o0 + xo], sv, n + 1);
            }
        } else if (ext) {
            for (size_t xo = 0; xo < ow; xo++)
                memcpy(dst + (o0 + xo) * es, extv, es);
        } else if (last->identity) {
            memcpy(dst + o0 * es, src + (size_t)off * es, ow * es);
        } else {
            const int64_t *ix = last->idx;
            switch (es) {
            case 1:
                for (size_t xo = 0; xo < ow; xo++)
                    dst[o0 + xo] = src[off + ix[xo]];
                break;
            case 2:
                for (size_t xo = 0; xo < ow; xo++)
                    ((uint16_t *)dst)[o0 + xo] = ((const uint16_t *)src)[off + ix[xo]];
                break;
            case 4:
                for (size_t xo = 0; xo < ow; xo++)
                    ((uint32_t *)dst)[o0 + xo] = ((const uint32_t *)src)[off + ix[xo]];
                break;
            case 8:
                for (size_t xo = 0; xo < ow; xo++)
                    ((uint64_t *)dst)[o0 + xo] = ((const uint64_t *)src)[off + ix[xo]];
                break;
            default:
                for (size_t xo = 0; xo < ow; xo++)
                    memcpy(dst + (o0 + xo) * es, src + (size_t)(off + ix[xo]) * es, es);
            }
            if (last->any_ext)
                for (size_t xo = 0; xo < ow; xo++)
                    if (last->ext[xo])
                        memcpy(dst + (o0 + xo) * es, extv, es);
        }
        prev_off = off, prev_ext = ext;
        for (int d = rank - 2; d >= 0; d--) {
            if (++pos[d] < j->rs.out[d])
                break;
            pos[d] = 0;
        }
    }
    return CARVE_OK;
}

/* Sets every output element with an extrapolating coordinate on any axis. */
#define DEFINE_EXTRAP(NAME, T)                                                                             \
    static void NAME(T *y, const rjob *j, T v)                                                             \
    {                                                                                                      \
        int rank = j->rs.rank;                                                                             \
        int64_t pos[CARVE_MAX_RANK] = {0};                                                                 \
        size_t n = cv_nelem(rank, j->rs.out);                                                              \
        for (size_t i = 0; i < n; i++) {                                                                   \
            for (int d = 0; d < rank; d++)                                                                 \
                if (j->maps[d].any_ext && j->maps[d].ext[pos[d]]) {                                        \
                    y[i] = v;                                                                              \
                    break;                                                                                 \
                }                                                                                          \
            for (int d = rank - 1; d >= 0; d--) {                                                          \
                if (++pos[d] < j->rs.out[d])                                                               \
                    break;                                                                                 \
                pos[d] = 0;                                                                                \
            }                                                                                              \
        }                                                                                                  \
    }
DEFINE_EXTRAP(extrap_f32, float)
DEFINE_EXTRAP(extrap_f64, double)

/* Linear/cubic: separable passes over the non-identity axes, smallest
 * scale first so later passes see less data. */
#define DEFINE_INTERP(NAME, T, PASS, EXTRAP)                                                               \
    static carve_status NAME(cv_kctx *k, rjob *j, const T *x, T *y)                                        \
    {                                                                                                      \
        int rank = j->rs.rank;                                                                             \
        int order[CARVE_MAX_RANK], n = 0;                                                                  \
        bool any_ext = false;                                                                              \
        for (int d = 0; d < rank; d++) {                                                                   \
            any_ext |= j->maps[d].any_ext;                                                                 \
            if (j->maps[d].identity)                                                                       \
                continue;                                                                                  \
            int i = n++;                                                                                   \
            while (i > 0 && j->rs.scale[order[i - 1]] > j->rs.scale[d]) {                                  \
                order[i] = order[i - 1];                                                                   \
                i--;                                                                                       \
            }                                                                                              \
            order[i] = d;                                                                                  \
        }                                                                                                  \
        size_t total = cv_nelem(rank, j->rs.out);                                                          \
        if (n == 0) {                                                                                      \
            memcpy(y, x, total * sizeof(T));                                                               \
            return CARVE_OK;                                                                               \
        }                                                                                                  \
        int64_t cur[CARVE_MAX_RANK];                                                                       \
        memcpy(cur, j->rs.in, sizeof cur);                                                                 \
        const T *src = x;                                                                                  \
        T *bufs[2] = {NULL, NULL};                                                                         \
        T *wts = NULL;                                                                                     \
        carve_status st = CARVE_OK;                                                                        \
        for (int p = 0; p < n; p++) {                                                                      \
            int d = order[p];                                                                              \
            const amap *a = &j->maps[d];                                                                   \
            cur[d] = a->out;                                                                               \
            size_t outer = cv_nelem(d, cur), inner = cv_nelem(rank - d - 1, cur + d + 1);                  \
            T *dst = p == n - 1 ? y : NULL;                                                                \
            if (!dst) {                                                                                    \
                size_t cnt = cv_nelem(rank, cur);                                                          \
                cv_scratch_free(bufs[p & 1]);                                                              \
                bufs[p & 1] = cv_scratch_alloc((cnt ? cnt : 1) * sizeof(T));                               \
                dst = bufs[p & 1];                                                                         \
            }                                                                                              \
            size_t nw = (size_t)a->out * (size_t)a->ntap;                                                  \
            cv_free(wts);                                                                                  \
            wts = cv_malloc((nw ? nw : 1) * sizeof(T));                                                    \
            if (!dst || !wts) {                                                                            \
                st = cv_knomem(k);                                                                         \
                break;                                                                                     \
            }                                                                                              \
            for (size_t i = 0; i < nw; i++)                                                                \
                wts[i] = (T)a->w[i];                                                                       \
            PASS(src, dst, outer, inner, a, wts);                                                          \
            src = dst;                                                                                     \
        }                                                                                                  \
        cv_scratch_free(bufs[0]);                                                                          \
        cv_scratch_free(bufs[1]);                                                                          \
        cv_free(wts);                                                                                      \
        if (!st && any_ext)                                                                                \
            EXTRAP(y, j, (T)j->a.extrapolation);                                                           \
        return st;                                                                                         \
    }
DEFINE_INTERP(interp_f32, float, pass_f32, extrap_f32)
DEFINE_INTERP(interp_f64, double, pass_f64, extrap_f64)

/* Stores interpolated doubles into an integer tensor: truncation toward
 * zero as onnxruntime's static_cast, saturated (cubic overshoots). */
static void store_int(cv_val *y, const double *v)
{
    double lo, hi;
    switch (y->dtype) {
    case CARVE_INT8: lo = -128, hi = 127; break;
    case CARVE_UINT8: lo = 0, hi = 255; break;
    case CARVE_INT16: lo = -32768, hi = 32767; break;
    case CARVE_UINT16: lo = 0, hi = 65535; break;
    case CARVE_INT32: lo = -2147483648.0, hi = 2147483647.0; break;
    case CARVE_UINT32: lo = 0, hi = 4294967295.0; break;
    case CARVE_UINT64: lo = 0, hi = 1.8446744073709552e19; break;
    default: lo = -9.2233720368547758e18, hi = 9.2233720368547758e18; break;
    }
    for (size_t i = 0; i < y->nelem; i++) {
        double x = trunc(v[i]);
        x = x != x ? 0 : x < lo ? lo : x > hi ? hi : x;
        if (y->dtype == CARVE_UINT64)
            ((uint64_t *)y->data)[i] = x >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)x;
        else
            cv_val_set_i64(y, i, x >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)x);
    }
}

carve_status k_resize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0];
    char err[400] = "";
    rjob j;
    memset(&j, 0, sizeof j);
    if (x->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "input 0 'X' is not a tensor");
    int st = rs_read_attrs(k->m, k->node, k->opset, x->rank, &j.a, err, sizeof err);
    if (st == PLAN_ERR)
        return cv_kerr(k, "%s", err);
    bool present[4] = {false, false, false, false};
    const cv_val *vals[4] = {NULL, NULL, NULL, NULL};
    for (uint32_t i = 1; i < n_in && i < 4; i++) {
        present[i] = in[i] != NULL;
        vals[i] = in[i];
    }
    if (x->rank == 0)
        return cv_kerr(k, "input 0 'X' is a scalar; Resize needs rank >= 1");
    st = rs_plan_shape(k->m, k->node, k->opset, &j.a, x->rank, x->dims, present, vals, &j.rs, err, sizeof err);
    if (st != PLAN_OK)
        return cv_kerr(k, "%s", err);
    bool numeric = cv_dtype_is_float(x->dtype) || cv_dtype_is_int(x->dtype);
    if (j.a.mode != RM_NEAREST && (!numeric || x->dtype == CARVE_INT4 || x->dtype == CARVE_UINT4))
        return cv_kerr(k, "mode '%s' needs a numeric input, input 0 'X' is %s", j.a.mode == RM_LINEAR ? "linear" : "cubic",
                       carve_dtype_name(x->dtype));
    if (x->dtype == CARVE_INT4 || x->dtype == CARVE_UINT4 || x->dtype == CARVE_FLOAT4E2M1)
        return cv_kerr(k, "input 0 'X' is %s, which Resize does not take", carve_dtype_name(x->dtype));
    /* every path writes all of y: nearest row by row, bilinear and the
     * last separable pass element by element (a copy when nothing moves) */
    cv_val *y = cv_val_new_uninit(x->dtype, x->rank, j.rs.out);
    if (!y)
        return cv_knomem(k);
    carve_status s = CARVE_OK;
    /* tables only when there is output: an empty tensor may have huge dims */
    for (int d = 0; d < x->rank && !s && y->nelem; d++)
        if (!rs_amap_build(&j.a, &j.rs, d, &j.maps[d]))
            s = cv_knomem(k);
    if (!s && y->nelem) {
        if (j.a.mode == RM_NEAREST) {
            s = run_nearest(k, &j, x, y);
        } else if (cv_dtype_is_float(x->dtype) && x->dtype != CARVE_DOUBLE) {
            int bd = bilinear_axis(&j);
            cv_val *xf = x->dtype == CARVE_FLOAT ? (cv_val *)x : cv_val_to_f32(x);
            cv_val *yf = x->dtype == CARVE_FLOAT ? y : cv_val_new_uninit(CARVE_FLOAT, y->rank, y->dims);
            if (!xf || !yf)
                s = cv_knomem(k);
            else if (bd >= 0)
                s = bilinear_f32(k, &j, bd, xf->data, yf->data);
            else
                s = interp_f32(k, &j, xf->data, yf->data);
            if (!s && yf != y) {
                cv_val *c = cv_val_from_f32(yf, x->dtype);
                if (!c)
                    s = cv_knomem(k);
                else {
                    memcpy(y->data, c->data, y->nbytes);
                    cv_val_unref(c);
                }
            }
            if (xf != x)
                cv_val_unref(xf);
            if (yf != y)
                cv_val_unref(yf);
        } else {
            double *xd = x->dtype == CARVE_DOUBLE ? x->data : cv_malloc(x->nelem * sizeof *xd + 1);
            double *yd = x->dtype == CARVE_DOUBLE ? y->data : cv_malloc(y->nelem * sizeof *yd + 1);
            if (!xd || !yd)
                s = cv_knomem(k);
            else {
                if (xd != x->data)
                    for (size_t i = 0; i < x->nelem; i++)
                        xd[i] = cv_val_get_f64(x, i);
                s = interp_f64(k, &j, xd, yd);
                if (!s && yd != y->data)
                    store_int(y, yd);
            }
            if (xd != x->data)
                cv_free(xd);
            if (yd != y->data)
                cv_free(yd);
        }
    }
    job_free(&j);
    return cv_kout(s, y, &out[0]);
}

/* ---------------------------------------------------------------- inference */

carve_status i_resize(cv_ictx *c)
{
    const cv_node *n = &c->m->nodes[c->node];
    const cv_type *t = cv_infer_in(c, 0);
    if (!t || t->kind != CARVE_TYPE_TENSOR)
        return cv_infer_set(c, 0, CARVE_UNDEFINED, -1, NULL);
    char err[400] = "";
    rattrs a;
    int st = rs_read_attrs(c->m, c->node, c->opset, t->rank, &a, err, sizeof err);
    if (st == PLAN_ERR)
        return cv_ierr(c, "%s", err);
    if (st == PLAN_UNKNOWN) {
        /* rank unknown: sizes over all axes still give the shape */
        int sroi, ssc, ssz;
        rs_input_slots(c->m, c->node, c->opset, &sroi, &ssc, &ssz);
        const cv_val *sz = ssz >= 0 ? c->const_input(c, (uint32_t)ssz) : NULL;
        const int64_t *axes;
        if (sz && sz->nelem && sz->dtype == CARVE_INT64 && sz->nelem <= CARVE_MAX_RANK &&
            (c->opset < 18 || cv_attr_ints(c->m, c->node, "axes", &axes) < 0)) {
            carve_dim d[CARVE_MAX_RANK];
            for (size_t i = 0; i < sz->nelem; i++)
                d[i] = (carve_dim){cv_val_get_i64(sz, i), NULL};
            return cv_infer_set(c, 0, t->dtype, (int)sz->nelem, d);
        }
        return cv_infer_set(c, 0, t->dtype, -1, NULL);
    }
    if (t->rank == 0)
        return cv_ierr(c, "input 0 'X' is a scalar; Resize needs rank >= 1");
    bool present[4] = {false, false, false, false};
    const cv_val *vals[4] = {NULL, NULL, NULL, NULL};
    for (uint32_t i = 1; i < n->n_in && i < 4; i++) {
        present[i] = n->in[i] != CARVE_NONE;
        vals[i] = c->const_input(c, i);
    }
    int64_t dims[CARVE_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        dims[d] = t->dims[d].value;
    rshape rs;
    st = rs_plan_shape(c->m, c->node, c->opset, &a, t->rank, dims, present, vals, &rs, err, sizeof err);
    if (st == PLAN_ERR)
        return cv_ierr(c, "%s", err);
    carve_dim od[CARVE_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        bool resized = false;
        for (int i = 0; i < a.naxes; i++)
            resized |= a.axes[i] == d;
        if (st == PLAN_UNKNOWN)
            od[d] = resized ? (carve_dim){-1, NULL} : t->dims[d];
        else if (rs.out[d] >= 0)
            od[d] = (carve_dim){rs.out[d], NULL};
        else if (rs.same[d])
            od[d] = t->dims[d]; /* an axis left alone keeps its symbol */
        else
            od[d] = (carve_dim){-1, NULL};
    }
    return cv_infer_set(c, 0, t->dtype, t->rank, od);
}

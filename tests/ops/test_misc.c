/* test_misc.c: Resize/Upsample against an independent implementation of the
 * ONNX reference algorithm (written here, element by element, the literal
 * way: nearest neighbours found by sorting, edge padding, nested 1-D
 * interpolation), Resize shape inference with constant scales/sizes and
 * symbolic dims, NonMaxSuppression edge cases, RoiAlign, GridSample, the
 * signal ops against direct double-precision formulas, StringNormalizer,
 * and the error texts of bad inputs. */
#include "tb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ================================================================ model building */

static cv_val *vec_f32(int n, const float *x)
{
    int64_t d = n;
    cv_val *v = cv_val_new(CARVE_FLOAT, 1, &d);
    memcpy(v->data, x, (size_t)n * sizeof *x);
    return v;
}

static cv_val *vec_i64(int n, const int64_t *x)
{
    int64_t d = n;
    cv_val *v = cv_val_new(CARVE_INT64, 1, &d);
    memcpy(v->data, x, (size_t)n * sizeof *x);
    return v;
}

static cv_val *tensor_f32(int rank, const int64_t *dims, const float *x)
{
    cv_val *v = cv_val_new(CARVE_FLOAT, rank, dims);
    memcpy(v->data, x, v->nbytes);
    return v;
}

/* ================================================================ Resize reference */

typedef struct {
    int mode; /* 0 nearest, 1 linear, 2 cubic */
    const char *ct, *nm;
    double A;
    bool exclude, antialias;
    double extrap;
} rref;

static double ref_cubic(double x, double A)
{
    x = fabs(x);
    if (x <= 1)
        return (A + 2) * x * x * x - (A + 3) * x * x + 1;
    if (x < 2)
        return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
    return 0;
}

/* The reference's get_coeffs(ratio, scale): returns the count. */
static int ref_coeffs(const rref *p, double ratio, double scale, double *c)
{
    if (p->mode == 0) {
        if (ratio == 1) {
            c[0] = 0, c[1] = 1;
        } else if (!strcmp(p->nm, "round_prefer_floor")) {
            c[0] = ratio <= 0.5, c[1] = ratio > 0.5;
        } else if (!strcmp(p->nm, "round_prefer_ceil")) {
            c[0] = ratio < 0.5, c[1] = ratio >= 0.5;
        } else if (!strcmp(p->nm, "floor")) {
            c[0] = 1, c[1] = 0;
        } else {
            c[0] = 0, c[1] = 1;
        }
        return 2;
    }
    if (!p->antialias) {
        if (p->mode == 1) {
            c[0] = 1 - ratio, c[1] = ratio;
            return 2;
        }
        double A = p->A, r = ratio;
        c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
        c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
        c[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
        c[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
        return 4;
    }
    if (scale > 1)
        scale = 1;
    int start = p->mode == 1 ? (int)floor(-1 / scale) + 1 : (int)floor(-2 / scale) + 1;
    int n = 2 - 2 * start;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double a = ((double)(start + i) - ratio) * scale;
        c[i] = p->mode == 1 ? fmax(0, fmin(1, 1 - fabs(a))) : ref_cubic(a, p->A);
        sum += c[i];
    }
    for (int i = 0; i < n; i++)
        c[i] /= sum;
    return n;
}

typedef struct {
    long idx;
    double dist;
} nb;

static int nb_cmp(const void *a, const void *b)
{
    const nb *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int long_cmp(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* interpolate_1d_with_x of the reference. len: length_resized as a real. */
static double ref_1d(const rref *p, const double *data, long in, double scale, double len, long outint, long x,
                     double r0, double r1)
{
    double xo;
    if (!strcmp(p->ct, "align_corners"))
        xo = len == 1 ? 0 : (double)x * (double)(in - 1) / (len - 1);
    else if (!strcmp(p->ct, "asymmetric"))
        xo = (double)x / scale;
    else if (!strcmp(p->ct, "tf_half_pixel_for_nn"))
        xo = ((double)x + 0.5) / scale;
    else if (!strcmp(p->ct, "tf_crop_and_resize")) {
        xo = len == 1 ? (r1 - r0) * (double)(in - 1) / 2 : (double)x * (r1 - r0) * (double)(in - 1) / (len - 1);
        xo += r0 * (double)(in - 1);
        if (xo < 0 || xo > (double)(in - 1))
            return p->extrap;
    } else if (!strcmp(p->ct, "pytorch_half_pixel"))
        xo = len > 1 ? ((double)x + 0.5) / scale - 0.5 : 0;
    else if (!strcmp(p->ct, "half_pixel_symmetric")) {
        double adj = (double)outint / len;
        xo = (double)in / 2 * (1 - adj) + ((double)x + 0.5) / scale - 0.5;
    } else
        xo = ((double)x + 0.5) / scale - 0.5;
    double ratio = xo - floor(xo);
    if (ratio == 0)
        ratio = 1;
    double c[64];
    int n = ref_coeffs(p, ratio, scale, c);
    long pad = (n + 1) / 2, plen = in + 2 * pad;
    nb *cand = malloc((size_t)plen * sizeof *cand);
    for (long i = 0; i < plen; i++)
        cand[i] = (nb){i, fabs(xo + (double)pad - (double)i)};
    qsort(cand, (size_t)plen, sizeof *cand, nb_cmp);
    long idx[64];
    for (int i = 0; i < n; i++)
        idx[i] = cand[i].idx;
    free(cand);
    qsort(idx, (size_t)n, sizeof *idx, long_cmp);
    double pts[64];
    for (int i = 0; i < n; i++) {
        long o = idx[i] - pad;
        pts[i] = data[o < 0 ? 0 : o >= in ? in - 1 : o];
        idx[i] = o;
    }
    if (p->exclude) {
        double s = 0;
        for (int i = 0; i < n; i++) {
            if (idx[i] < 0 || idx[i] >= in)
                c[i] = 0;
            s += c[i];
        }
        for (int i = 0; i < n; i++)
            c[i] /= s;
    }
    double v = 0;
    for (int i = 0; i < n; i++)
        v += c[i] * pts[i];
    return v;
}

/* interpolate_nd_with_x: the first axis over the recursively interpolated
 * sub-tensors. */
static double ref_nd(const rref *p, const double *data, int rank, const long *in, const double *scale,
                     const double *len, const long *out, const long *x, const double *r0, const double *r1)
{
    if (rank == 1)
        return ref_1d(p, data, in[0], scale[0], len[0], out[0], x[0], r0[0], r1[0]);
    long stride = 1;
    for (int d = 1; d < rank; d++)
        stride *= in[d];
    double *line = malloc((size_t)in[0] * sizeof *line);
    for (long i = 0; i < in[0]; i++)
        line[i] = ref_nd(p, data + i * stride, rank - 1, in + 1, scale + 1, len + 1, out + 1, x + 1, r0 + 1, r1 + 1);
    double v = ref_1d(p, line, in[0], scale[0], len[0], out[0], x[0], r0[0], r1[0]);
    free(line);
    return v;
}

/* One Resize case: the node built from the arguments, the expected output
 * from the reference above. scales or sizes (one NULL), over axes (NULL: all). */
typedef struct {
    int64_t opset;
    const char *mode, *ct, *nm, *policy;
    double A;
    int exclude, antialias;
    float extrap;
    int rank;
    int64_t shape[6];
    int naxes;
    const int64_t *axes;
    const float *scales;
    const int64_t *sizes;
    const float *roi;
    carve_dtype dtype;
} rcase;

static void check_resize_case(const rcase *rc, const char *label)
{
    int rank = rc->rank, na = rc->naxes ? rc->naxes : rank;
    int ax[6];
    for (int i = 0; i < na; i++)
        ax[i] = rc->axes ? (int)(rc->axes[i] < 0 ? rc->axes[i] + rank : rc->axes[i]) : i;
    /* expected geometry */
    long in[6] = {0}, out[6] = {0};
    double scale[6], len[6], r0[6], r1[6];
    for (int d = 0; d < rank; d++) {
        in[d] = out[d] = (long)rc->shape[d];
        scale[d] = 1, len[d] = (double)in[d], r0[d] = 0, r1[d] = 1;
    }
    if (rc->scales) {
        for (int i = 0; i < na; i++) {
            int d = ax[i];
            scale[d] = rc->scales[i];
            len[d] = scale[d] * (double)in[d];
            out[d] = (long)floor(len[d]);
        }
    } else if (!rc->policy || !strcmp(rc->policy, "stretch")) {
        for (int i = 0; i < na; i++) {
            int d = ax[i];
            out[d] = (long)rc->sizes[i];
            scale[d] = (double)out[d] / (double)in[d];
            len[d] = (double)out[d];
        }
    } else {
        double s = !strcmp(rc->policy, "not_larger") ? 1e300 : 0;
        for (int i = 0; i < na; i++) {
            double r = (double)rc->sizes[i] / (double)in[ax[i]];
            s = !strcmp(rc->policy, "not_larger") ? fmin(s, r) : fmax(s, r);
        }
        for (int i = 0; i < na; i++) {
            int d = ax[i];
            scale[d] = s;
            len[d] = s * (double)in[d];
            out[d] = (long)(len[d] + 0.5);
        }
    }
    if (rc->roi)
        for (int i = 0; i < na; i++)
            r0[ax[i]] = rc->roi[i], r1[ax[i]] = rc->roi[na + i];
    /* the node */
    tb t;
    tb_init(&t, rc->opset);
    carve_dtype dt = rc->dtype ? rc->dtype : CARVE_FLOAT;
    cv_val *x = ot_random(dt, rank, rc->shape, 7 + (uint32_t)rank, -3, 5);
    carve_value_id ins[4] = {tb_in(&t, "X", x), CARVE_NONE, CARVE_NONE, CARVE_NONE};
    if (rc->roi)
        ins[1] = tb_const(&t, "roi", vec_f32(2 * na, rc->roi));
    if (rc->scales)
        ins[2] = tb_const(&t, "scales", vec_f32(na, rc->scales));
    if (rc->sizes)
        ins[3] = tb_const(&t, "sizes", vec_i64(na, rc->sizes));
    carve_node_id n = tb_node(&t, "Resize", rc->sizes ? 4 : 3, ins, 1);
    carve_node_set_attr_string(t.m, n, "mode", rc->mode);
    if (rc->ct)
        carve_node_set_attr_string(t.m, n, "coordinate_transformation_mode", rc->ct);
    if (rc->nm)
        carve_node_set_attr_string(t.m, n, "nearest_mode", rc->nm);
    if (rc->A != 0)
        carve_node_set_attr_float(t.m, n, "cubic_coeff_a", (float)rc->A);
    if (rc->exclude)
        carve_node_set_attr_int(t.m, n, "exclude_outside", 1);
    if (rc->antialias)
        carve_node_set_attr_int(t.m, n, "antialias", 1);
    if (rc->extrap != 0)
        carve_node_set_attr_float(t.m, n, "extrapolation_value", rc->extrap);
    if (rc->policy)
        carve_node_set_attr_string(t.m, n, "keep_aspect_ratio_policy", rc->policy);
    if (rc->axes)
        carve_node_set_attr_ints(t.m, n, "axes", (size_t)na, rc->axes);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s == CARVE_OK, "%s: run: %s", label, carve_errmsg(t.ctx));
    if (!s) {
        bool shape_ok = y->rank == rank;
        for (int d = 0; d < rank && shape_ok; d++)
            shape_ok = y->dims[d] == out[d];
        OT_CHECK(shape_ok, "%s: output shape differs from the reference (dim 2: %lld vs %ld)", label,
                 (long long)(rank > 2 ? y->dims[2] : y->dims[0]), rank > 2 ? out[2] : out[0]);
        if (shape_ok) {
            rref p = {!strcmp(rc->mode, "nearest") ? 0 : !strcmp(rc->mode, "linear") ? 1 : 2,
                      rc->ct ? rc->ct : "half_pixel", rc->nm ? rc->nm : "round_prefer_floor",
                      rc->A != 0 ? rc->A : -0.75, rc->exclude != 0, rc->antialias != 0, rc->extrap};
            double *xd = malloc(x->nelem * sizeof *xd);
            for (size_t i = 0; i < x->nelem; i++)
                xd[i] = cv_val_get_f64(x, i);
            long pos[6] = {0};
            double tol = dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16 ? 1e-2 : 1e-5;
            bool ok = true;
            for (size_t i = 0; i < y->nelem && ok; i++) {
                double want = ref_nd(&p, xd, rank, in, scale, len, out, pos, r0, r1);
                double got = cv_val_get_f64(y, i);
                if (cv_dtype_is_int(dt))
                    want = strcmp(rc->mode, "nearest") ? trunc(want) : want;
                ok = fabs(got - want) <= tol + tol * fabs(want);
                OT_CHECK(ok, "%s: element %zu is %.9g, the reference gives %.9g", label, i, got, want);
                for (int d = rank - 1; d >= 0; d--) {
                    if (++pos[d] < out[d])
                        break;
                    pos[d] = 0;
                }
            }
            free(xd);
        }
        cv_val_unref(y);
    }
    tb_free(&t);
}

static void test_resize_reference(void)
{
    static const char *cts[] = {"half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners",
                                "tf_crop_and_resize", "half_pixel_symmetric", "tf_half_pixel_for_nn"};
    static const char *modes[] = {"nearest", "linear", "cubic"};
    static const char *nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    static const float up[] = {1, 1, 2, 3}, down[] = {1, 1, 0.6f, 0.8f}, mixed[] = {1, 1, 1.7f, 0.35f};
    static const int64_t sz_up[] = {1, 2, 7, 8}, sz_down[] = {1, 2, 3, 2}, sz_one[] = {1, 2, 1, 9};
    static const float roi[] = {0, 0, 0.2f, 0.4f, 1, 1, 0.6f, 1.2f};
    const float *scale_sets[] = {up, down, mixed};
    const int64_t *size_sets[] = {sz_up, sz_down, sz_one};
    char label[256];
    for (int mi = 0; mi < 3; mi++)
        for (int ci = 0; ci < 7; ci++)
            for (int si = 0; si < 6; si++)
                for (int ni = 0; ni < (mi == 0 ? 4 : 1); ni++) {
                    const char *ct = cts[ci];
                    if (!strcmp(ct, "tf_half_pixel_for_nn") && mi != 0)
                        continue;
                    rcase rc = {19, modes[mi], ct, mi == 0 ? nms[ni] : NULL, NULL, 0, 0, 0, 0, 4, {1, 2, 4, 5},
                                0, NULL, NULL, NULL, NULL, CARVE_FLOAT};
                    if (!strcmp(ct, "tf_half_pixel_for_nn"))
                        rc.opset = 11;
                    if (si < 3)
                        rc.scales = scale_sets[si];
                    else
                        rc.sizes = size_sets[si - 3];
                    if (!strcmp(ct, "tf_crop_and_resize")) {
                        rc.roi = roi;
                        rc.extrap = 10;
                    }
                    snprintf(label, sizeof label, "Resize %s %s %s set %d", modes[mi], ct, rc.nm ? rc.nm : "", si);
                    check_resize_case(&rc, label);
                }
    /* cubic coefficient and exclude_outside */
    for (int si = 0; si < 3; si++) {
        rcase rc = {13, "cubic", "half_pixel", NULL, NULL, -0.5, 1, 0, 0, 4, {1, 2, 4, 5}, 0, NULL,
                    scale_sets[si], NULL, NULL, CARVE_FLOAT};
        snprintf(label, sizeof label, "Resize cubic A=-0.5 exclude_outside set %d", si);
        check_resize_case(&rc, label);
    }
    /* opset 18: antialias, axes, keep_aspect_ratio_policy */
    static const float aa_scales[] = {0.3f, 0.45f}, aa_up[] = {0.5f, 2.5f};
    static const int64_t ax23[] = {2, 3}, axneg[] = {-1, -2};
    static const int64_t kar_sizes[] = {5, 9};
    for (int mi = 1; mi < 3; mi++)
        for (int ex = 0; ex < 2; ex++) {
            rcase rc = {18, modes[mi], "half_pixel", NULL, NULL, 0, ex, 1, 0, 4, {1, 2, 9, 11}, 2, ax23,
                        aa_scales, NULL, NULL, CARVE_FLOAT};
            snprintf(label, sizeof label, "Resize %s antialias downsample exclude %d", modes[mi], ex);
            check_resize_case(&rc, label);
            rc.scales = aa_up;
            rc.axes = axneg;
            snprintf(label, sizeof label, "Resize %s antialias mixed, negative axes, exclude %d", modes[mi], ex);
            check_resize_case(&rc, label);
            rc.ct = "align_corners";
            snprintf(label, sizeof label, "Resize %s antialias align_corners exclude %d", modes[mi], ex);
            check_resize_case(&rc, label);
        }
    static const char *pols[] = {"stretch", "not_larger", "not_smaller"};
    for (int pi = 0; pi < 3; pi++)
        for (int mi = 0; mi < 3; mi++) {
            rcase rc = {18, modes[mi], "half_pixel", NULL, pols[pi], 0, 0, 0, 0, 4, {1, 2, 4, 6}, 2, ax23, NULL,
                        kar_sizes, NULL, CARVE_FLOAT};
            snprintf(label, sizeof label, "Resize %s keep_aspect_ratio_policy %s", modes[mi], pols[pi]);
            check_resize_case(&rc, label);
        }
    /* other ranks and dtypes: 1-D, 3-D over all axes, float16, double, ints */
    static const float s1[] = {2.5f}, s3[] = {1.5f, 0.5f, 2};
    for (int mi = 0; mi < 3; mi++) {
        rcase a = {13, modes[mi], "half_pixel", NULL, NULL, 0, 0, 0, 0, 1, {6}, 0, NULL, s1, NULL, NULL, CARVE_FLOAT};
        snprintf(label, sizeof label, "Resize %s 1-D", modes[mi]);
        check_resize_case(&a, label);
        rcase b = {13, modes[mi], "asymmetric", NULL, NULL, 0, 0, 0, 0, 3, {2, 4, 3}, 0, NULL, s3, NULL, NULL,
                   CARVE_FLOAT};
        snprintf(label, sizeof label, "Resize %s 3-D all axes", modes[mi]);
        check_resize_case(&b, label);
        static const carve_dtype dts[] = {CARVE_FLOAT16, CARVE_DOUBLE, CARVE_BFLOAT16, CARVE_INT32, CARVE_UINT8};
        for (int di = 0; di < 5; di++) {
            rcase c = {13, modes[mi], "align_corners", NULL, NULL, 0, 0, 0, 0, 4, {1, 2, 4, 5}, 0, NULL, mixed,
                       NULL, NULL, dts[di]};
            if (cv_dtype_is_int(dts[di]) && mi == 2)
                continue; /* cubic overshoot clamps: not what the plain reference gives */
            snprintf(label, sizeof label, "Resize %s %s", modes[mi], carve_dtype_name(dts[di]));
            check_resize_case(&c, label);
        }
    }
}

/* Values worked out by hand, through the fast bilinear path and the opset
 * 10 / Upsample nearest rule. */
static void test_resize_fixed(void)
{
    {   /* bilinear 2x, half_pixel: the spec example */
        tb t;
        tb_init(&t, 13);
        int64_t d[4] = {1, 1, 2, 2};
        static const float xv[] = {1, 2, 3, 4}, sc[] = {1, 1, 2, 2};
        static const float want[] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
                                     2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4};
        carve_value_id ins[3] = {tb_in(&t, "X", tensor_f32(4, d, xv)), CARVE_NONE,
                                 tb_const(&t, "scales", vec_f32(4, sc))};
        carve_node_id n = tb_node(&t, "Resize", 3, ins, 1);
        carve_node_set_attr_string(t.m, n, "mode", "linear");
        cv_val *y;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "bilinear 2x: %s", carve_errmsg(t.ctx));
        for (int i = 0; y && i < 16; i++)
            OT_CHECK(fabsf(((float *)y->data)[i] - want[i]) < 1e-6f, "bilinear 2x element %d: %g, expected %g", i,
                     (double)((float *)y->data)[i], (double)want[i]);
        cv_val_unref(y);
        tb_free(&t);
    }
    {   /* Resize-10: asymmetric; nearest floors upsampling, takes the ceiling downsampling */
        tb t;
        tb_init(&t, 10);
        int64_t d[2] = {1, 5};
        static const float xv[] = {10, 11, 12, 13, 14}, sc[] = {1, 0.5f};
        carve_value_id ins[2] = {tb_in(&t, "X", tensor_f32(2, d, xv)), tb_const(&t, "scales", vec_f32(2, sc))};
        tb_node(&t, "Resize", 2, ins, 1);
        cv_val *y;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "Resize-10: %s", carve_errmsg(t.ctx));
        /* out 2: x_orig 0 and 2 (ceil of whole numbers) */
        OT_CHECK(y && y->dims[1] == 2 && ((float *)y->data)[0] == 10 && ((float *)y->data)[1] == 12,
                 "Resize-10 nearest downsample");
        cv_val_unref(y);
        tb_free(&t);
    }
    {   /* Upsample-7: scales attribute; 3x nearest on int64 */
        tb t;
        tb_init(&t, 7);
        int64_t d[1] = {2};
        cv_val *x = cv_val_new(CARVE_INT64, 1, d);
        ((int64_t *)x->data)[0] = 5, ((int64_t *)x->data)[1] = -7;
        carve_value_id ins[1] = {tb_in(&t, "X", x)};
        carve_node_id n = tb_node(&t, "Upsample", 1, ins, 1);
        static const float sc[] = {3};
        carve_node_set_attr_floats(t.m, n, "scales", 1, sc);
        cv_val *y;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "Upsample-7: %s", carve_errmsg(t.ctx));
        static const int64_t want[] = {5, 5, 5, -7, -7, -7};
        OT_CHECK(y && y->nelem == 6 && !memcmp(y->data, want, sizeof want), "Upsample-7 nearest int64");
        cv_val_unref(y);
        tb_free(&t);
    }
    {   /* Upsample-9 linear (scales input): asymmetric */
        tb t;
        tb_init(&t, 9);
        int64_t d[1] = {2};
        static const float xv[] = {0, 4}, sc[] = {2};
        carve_value_id ins[2] = {tb_in(&t, "X", tensor_f32(1, d, xv)), tb_const(&t, "scales", vec_f32(1, sc))};
        carve_node_id n = tb_node(&t, "Upsample", 2, ins, 1);
        carve_node_set_attr_string(t.m, n, "mode", "linear");
        cv_val *y;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "Upsample-9: %s", carve_errmsg(t.ctx));
        static const float want[] = {0, 2, 4, 4};
        OT_CHECK(y && y->nelem == 4 && !memcmp(y->data, want, sizeof want), "Upsample-9 linear asymmetric");
        cv_val_unref(y);
        tb_free(&t);
    }
    {   /* nearest on strings (any dtype gathers) */
        tb t;
        tb_init(&t, 13);
        int64_t d[1] = {2};
        cv_val *x = cv_val_new(CARVE_STRING, 1, d);
        ((char **)x->data)[0] = strcpy(cv_malloc(2), "a");
        ((char **)x->data)[1] = strcpy(cv_malloc(3), "bc");
        static const int64_t sz[] = {4};
        carve_value_id ins[4] = {tb_in(&t, "X", x), CARVE_NONE, CARVE_NONE, tb_const(&t, "sizes", vec_i64(1, sz))};
        tb_node(&t, "Resize", 4, ins, 1);
        cv_val *y;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "Resize strings: %s", carve_errmsg(t.ctx));
        OT_CHECK(y && y->nelem == 4 && !strcmp(((char **)y->data)[0], "a") && !strcmp(((char **)y->data)[1], "a") &&
                     !strcmp(((char **)y->data)[2], "bc") && !strcmp(((char **)y->data)[3], "bc"),
                 "Resize nearest on strings");
        cv_val_unref(y);
        tb_free(&t);
    }
}

/* Bilinear rounding. X is chosen so that every output of its 2x half_pixel
 * upsample is a float32 in real arithmetic, so the spec's values are known
 * exactly and worked out by hand. Output (2, 2): source coordinate
 * (2 + 0.5) / 2 - 0.5 = 0.75 on both axes, weights 1/4 (pixel 0) and 3/4
 * (pixel 1):
 *   -2048/16 + 65536 * 3/16 + 0.1875 * 3/16 - 131072 * 9/16
 *   = -128 + 12288 + 0.03515625 - 73728 = -61567.96484375.
 * Summing the four weighted pixels in order, as onnxruntime does, gives it;
 * interpolating the rows first, then between them, rounded it to
 * -61567.96875, and in a quantized model (imgly small) such last bits grew
 * into a 0.28 difference from onnxruntime. NCHW, NHWC (two channels, the
 * second negated) and an upsample of the width alone. */
static void test_resize_rounding(void)
{
    static const float xv[] = {-2048, 65536, 0.1875f, -131072};
    static const float want[4][4] = {{-2048, 14848, 48640, 65536},
                                     {-1535.953125f, 2944.03515625f, 11904.01171875f, 16384},
                                     {-511.859375f, -20863.89453125f, -61567.96484375f, -81920},
                                     {0.1875f, -32767.859375f, -98303.953125f, -131072}};
    static const char *const layouts[] = {"NCHW", "NHWC", "width alone"};
    for (int li = 0; li < 3; li++) {
        int64_t d[4] = {1, 1, 2, 2}, sz[4] = {1, 1, 4, 4};
        int ch = 1;
        float x[8];
        if (li == 1) {
            ch = 2;
            d[1] = 2, d[3] = 2, sz[1] = 4, sz[3] = 2;
            for (int i = 0; i < 4; i++)
                x[2 * i] = xv[i], x[2 * i + 1] = -xv[i];
        } else {
            memcpy(x, xv, sizeof xv);
            if (li == 2)
                sz[2] = 2;
        }
        tb t;
        tb_init(&t, 13);
        carve_value_id ins[4] = {tb_in(&t, "X", tensor_f32(4, d, x)), CARVE_NONE, CARVE_NONE,
                                 tb_const(&t, "sizes", vec_i64(4, sz))};
        carve_node_id n = tb_node(&t, "Resize", 4, ins, 1);
        carve_node_set_attr_string(t.m, n, "mode", "linear");
        cv_val *y;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "Resize rounding %s: %s", layouts[li], carve_errmsg(t.ctx));
        size_t ny = li == 2 ? 8 : 16;
        OT_CHECK(y && y->nelem == ny * (size_t)ch, "Resize rounding %s: %zu elements", layouts[li], y ? y->nelem : 0);
        for (size_t i = 0; y && y->nelem == ny * (size_t)ch && i < ny; i++) {
            size_t wi = li == 2 ? (i < 4 ? i : i + 8) : i; /* the width alone: the first and last rows */
            for (int c = 0; c < ch; c++) {
                float got = ((float *)y->data)[i * (size_t)ch + (size_t)c], w = want[wi / 4][wi % 4];
                if (c)
                    w = -w;
                OT_CHECK(got == w, "Resize rounding %s: element %zu channel %d is %.9g, the exact value is %.9g",
                         layouts[li], i, c, (double)got, (double)w);
            }
        }
        cv_val_unref(y);
        tb_free(&t);
    }
}

/* ================================================================ Resize inference */

static carve_dim sym(const char *p) { return (carve_dim){-1, p}; }
static carve_dim fix(int64_t v) { return (carve_dim){v, NULL}; }

/* A Resize on X [N, 3, 32, 40] (N symbolic) with the given constant inputs;
 * runs inference and returns its status; *out gets y's dims. */
static carve_status infer_resize(int64_t opset, const float *scales, int nsc, const int64_t *sizes, int nsz,
                                 const int64_t *axes, int nax, const char *policy, bool scales_is_input,
                                 int *rank, carve_dim *out, char *msg, size_t msz)
{
    tb t;
    tb_init(&t, opset);
    carve_dim xd[4] = {sym("N"), fix(3), fix(32), fix(40)};
    carve_value_id ins[4] = {carve_graph_add_input(t.m, 0, "X", CARVE_FLOAT, 4, xd), CARVE_NONE, CARVE_NONE,
                             CARVE_NONE};
    if (scales && scales_is_input) {
        carve_dim sd[1] = {fix(nsc)};
        ins[2] = carve_graph_add_input(t.m, 0, "scales", CARVE_FLOAT, 1, sd);
    } else if (scales) {
        ins[2] = tb_const(&t, "scales", vec_f32(nsc, scales));
    }
    if (sizes)
        ins[3] = tb_const(&t, "sizes", vec_i64(nsz, sizes));
    carve_node_id n = tb_node(&t, "Resize", sizes ? 4 : 3, ins, 1);
    if (axes)
        carve_node_set_attr_ints(t.m, n, "axes", (size_t)nax, axes);
    if (policy)
        carve_node_set_attr_string(t.m, n, "keep_aspect_ratio_policy", policy);
    carve_status s = cv_infer_model(t.m, NULL);
    snprintf(msg, msz, "%s", s ? carve_errmsg(t.ctx) : "");
    *rank = carve_value_rank(t.m, tb_out(&t, 0));
    for (int i = 0; i < *rank && i < 4; i++) {
        out[i] = carve_value_dim(t.m, tb_out(&t, 0), i);
        /* the param lives in the model's arena: keep only whether it is "N" */
        out[i].param = out[i].param && !strcmp(out[i].param, "N") ? "N" : out[i].param ? "?" : NULL;
    }
    tb_free(&t);
    return s;
}

static bool dims_are(int rank, const carve_dim *d, const char *p0, int64_t d1, int64_t d2, int64_t d3)
{
    return rank == 4 && (p0 ? d[0].param && !strcmp(d[0].param, p0) : d[0].value >= 0) && d[1].value == d1 &&
           d[2].value == d2 && d[3].value == d3;
}

static void test_resize_inference(void)
{
    int rank;
    carve_dim d[4];
    char msg[1024];
    static const float sc2[] = {1, 1, 2, 0.5f}, sc_odd[] = {1, 1, 0.7f, 1.5f};
    carve_status s = infer_resize(13, sc2, 4, NULL, 0, NULL, 0, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && dims_are(rank, d, "N", 3, 64, 20), "Resize scales [1,1,2,0.5] on [N,3,32,40]: %s", msg);
    s = infer_resize(13, sc_odd, 4, NULL, 0, NULL, 0, NULL, false, &rank, d, msg, sizeof msg);
    /* floor(32 * 0.7f) = floor(22.39...) and floor(40 * 1.5) */
    OT_CHECK(!s && dims_are(rank, d, "N", 3, 22, 60), "Resize floors in * scale: %s", msg);
    static const int64_t sizes4[] = {1, 3, 17, 19};
    s = infer_resize(13, NULL, 0, sizes4, 4, NULL, 0, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && rank == 4 && d[0].value == 1 && d[2].value == 17 && d[3].value == 19,
             "Resize sizes give the whole shape: %s", msg);
    static const int64_t sizes2[] = {64, 48}, ax[] = {2, 3};
    s = infer_resize(18, NULL, 0, sizes2, 2, ax, 2, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && dims_are(rank, d, "N", 3, 64, 48), "Resize-18 sizes over axes keep N: %s", msg);
    s = infer_resize(18, NULL, 0, sizes2, 2, ax, 2, "not_larger", false, &rank, d, msg, sizeof msg);
    /* scale min(64/32, 48/40) = 1.2: 38.4 -> 38, 48 */
    OT_CHECK(!s && dims_are(rank, d, "N", 3, 38, 48), "Resize-18 not_larger: %s", msg);
    s = infer_resize(18, NULL, 0, sizes2, 2, ax, 2, "not_smaller", false, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && dims_are(rank, d, "N", 3, 64, 80), "Resize-18 not_smaller: %s", msg);
    static const float sc_ax[] = {0.5f, 2};
    s = infer_resize(18, sc_ax, 2, NULL, 0, ax, 2, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && dims_are(rank, d, "N", 3, 16, 80), "Resize-18 scales over axes: %s", msg);
    /* scales only known at run time: rank known, dims unknown */
    s = infer_resize(13, sc2, 4, NULL, 0, NULL, 0, NULL, true, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && rank == 4 && d[2].value == -1 && d[3].value == -1, "Resize with run-time scales: %s", msg);
    s = infer_resize(18, sc_ax, 2, NULL, 0, ax, 2, NULL, true, &rank, d, msg, sizeof msg);
    OT_CHECK(!s && rank == 4 && d[0].param && !strcmp(d[0].param, "N") && d[1].value == 3 && d[2].value == -1,
             "Resize-18 run-time scales keep the axes not resized: %s", msg);
    /* errors */
    static const float sc3[] = {1, 2, 2};
    s = infer_resize(13, sc3, 3, NULL, 0, NULL, 0, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(s && strstr(msg, "node 'n' (Resize)") && strstr(msg, "'scales' has 3 values but input 0 has rank 4"),
             "Resize scales of the wrong length: '%s'", msg);
    s = infer_resize(13, sc2, 4, sizes4, 4, NULL, 0, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(s && strstr(msg, "only one may be"), "Resize with scales and sizes: '%s'", msg);
    static const int64_t badax[] = {2, 4};
    s = infer_resize(18, sc_ax, 2, NULL, 0, badax, 2, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(s && strstr(msg, "'axes' value 4 is out of range"), "Resize-18 bad axes: '%s'", msg);
    static const float negsc[] = {1, 1, -2, 2};
    s = infer_resize(13, negsc, 4, NULL, 0, NULL, 0, NULL, false, &rank, d, msg, sizeof msg);
    OT_CHECK(s && strstr(msg, "expected a finite value > 0"), "Resize negative scale: '%s'", msg);
    /* a declared output shape that contradicts the scales */
    {
        tb t;
        tb_init(&t, 13);
        carve_dim xd[4] = {sym("N"), fix(3), fix(32), fix(40)};
        carve_value_id ins[3] = {carve_graph_add_input(t.m, 0, "X", CARVE_FLOAT, 4, xd), CARVE_NONE,
                                 tb_const(&t, "scales", vec_f32(4, sc2))};
        tb_node(&t, "Resize", 3, ins, 1);
        carve_dim yd[4] = {sym("N"), fix(3), fix(65), fix(20)};
        carve_value_set_type(t.m, tb_out(&t, 0), CARVE_FLOAT, 4, yd);
        s = cv_infer_model(t.m, NULL);
        OT_CHECK(s && strstr(carve_errmsg(t.ctx), "dim 2 is 64 by inference but the model declares 65"),
                 "Resize contradicting declared shape: '%s'", carve_errmsg(t.ctx));
        tb_free(&t);
    }
    /* Upsample-7: attribute scales, symbolic batch kept */
    {
        tb t;
        tb_init(&t, 7);
        carve_dim xd[4] = {sym("N"), fix(8), fix(5), fix(6)};
        carve_value_id ins[1] = {carve_graph_add_input(t.m, 0, "X", CARVE_FLOAT, 4, xd)};
        carve_node_id n = tb_node(&t, "Upsample", 1, ins, 1);
        static const float sc[] = {1, 1, 2, 3};
        carve_node_set_attr_floats(t.m, n, "scales", 4, sc);
        s = cv_infer_model(t.m, NULL);
        carve_dim d0 = carve_value_dim(t.m, tb_out(&t, 0), 0), d3 = carve_value_dim(t.m, tb_out(&t, 0), 3);
        OT_CHECK(!s && d0.param && !strcmp(d0.param, "N") && carve_value_dim(t.m, tb_out(&t, 0), 2).value == 10 && d3.value == 18,
                 "Upsample-7 inference: %s", carve_errmsg(t.ctx));
        tb_free(&t);
    }
}

/* Run-time error texts. */
static void test_resize_errors(void)
{
    tb t;
    tb_init(&t, 13);
    int64_t d[4] = {1, 1, 2, 2};
    cv_val *x = ot_random(CARVE_FLOAT, 4, d, 1, 0, 1);
    static const float sc[] = {1, 1, 2, 2};
    carve_value_id ins[3] = {tb_in(&t, "X", x), CARVE_NONE, tb_const(&t, "scales", vec_f32(4, sc))};
    carve_node_id n = tb_node(&t, "Resize", 3, ins, 1);
    carve_node_set_attr_string(t.m, n, "mode", "bicubic");
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "attribute 'mode' is 'bicubic'"), "Resize bad mode: '%s'",
             carve_errmsg(t.ctx));
    carve_node_set_attr_string(t.m, n, "mode", "nearest");
    carve_node_set_attr_string(t.m, n, "coordinate_transformation_mode", "half_pixel_symmetric");
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "not a mode of opset 13"), "half_pixel_symmetric before 19: '%s'",
             carve_errmsg(t.ctx));
    carve_node_set_attr_string(t.m, n, "coordinate_transformation_mode", "half_pixel");
    carve_node_set_attr_string(t.m, n, "nearest_mode", "nearest");
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "attribute 'nearest_mode' is 'nearest'"), "bad nearest_mode: '%s'",
             carve_errmsg(t.ctx));
    tb_free(&t);
    /* neither scales nor sizes */
    tb_init(&t, 13);
    x = ot_random(CARVE_FLOAT, 4, d, 1, 0, 1);
    carve_value_id ins2[3] = {tb_in(&t, "X", x), CARVE_NONE, tb_const(&t, "scales", vec_f32(0, sc))};
    tb_node(&t, "Resize", 3, ins2, 1);
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "neither 'scales' nor 'sizes' is given"), "no scales/sizes: '%s'",
             carve_errmsg(t.ctx));
    tb_free(&t);
    /* linear on strings */
    tb_init(&t, 13);
    int64_t d1 = 1;
    cv_val *xs = cv_val_new(CARVE_STRING, 1, &d1);
    ((char **)xs->data)[0] = strcpy(cv_malloc(2), "a");
    static const float s1[] = {2};
    carve_value_id ins3[3] = {tb_in(&t, "X", xs), CARVE_NONE, tb_const(&t, "scales", vec_f32(1, s1))};
    n = tb_node(&t, "Resize", 3, ins3, 1);
    carve_node_set_attr_string(t.m, n, "mode", "linear");
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "needs a numeric input, input 0 'X' is string"),
             "linear on strings: '%s'", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ NonMaxSuppression */

/* Runs NMS (center_point_box cpb) and compares the selected triples. max < 0:
 * input omitted; iou/score NaN: omitted. */
static void check_nms(const char *label, int B, int S, int K, const float *boxes, const float *scores, int64_t max,
                      float iou, float score, int cpb, int nwant, const int64_t *want)
{
    tb t;
    tb_init(&t, 11);
    int64_t bd[3] = {B, S, 4}, sd[3] = {B, K, S};
    carve_value_id ins[5] = {tb_in(&t, "boxes", tensor_f32(3, bd, boxes)),
                             tb_in(&t, "scores", tensor_f32(3, sd, scores)), CARVE_NONE, CARVE_NONE, CARVE_NONE};
    if (max >= 0)
        ins[2] = tb_const(&t, "max", vec_i64(1, &max));
    if (iou == iou)
        ins[3] = tb_const(&t, "iou", vec_f32(1, &iou));
    if (score == score)
        ins[4] = tb_const(&t, "score", vec_f32(1, &score));
    int n_in = score == score ? 5 : iou == iou ? 4 : max >= 0 ? 3 : 2;
    carve_node_id n = tb_node(&t, "NonMaxSuppression", n_in, ins, 1);
    if (cpb)
        carve_node_set_attr_int(t.m, n, "center_point_box", 1);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s == CARVE_OK, "%s: %s", label, carve_errmsg(t.ctx));
    if (!s) {
        bool ok = y->dtype == CARVE_INT64 && y->rank == 2 && y->dims[0] == nwant && y->dims[1] == 3 &&
                  (!nwant || !memcmp(y->data, want, (size_t)nwant * 3 * sizeof *want));
        OT_CHECK(ok, "%s: %lld boxes selected, expected %d (first %lld,%lld,%lld)", label, (long long)y->dims[0], nwant,
                 y->nelem ? (long long)((int64_t *)y->data)[0] : -1LL, y->nelem ? (long long)((int64_t *)y->data)[1] : -1LL,
                 y->nelem ? (long long)((int64_t *)y->data)[2] : -1LL);
        cv_val_unref(y);
    }
    tb_free(&t);
}

static void test_nms(void)
{
    /* three boxes: 0 and 1 overlap (IOU 0.81), 2 apart; [y1, x1, y2, x2] */
    static const float boxes[] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11};
    static const float scores[] = {0.9f, 0.75f, 0.6f};
    static const int64_t w_iou[] = {0, 0, 0, 0, 0, 2};
    check_nms("NMS suppress by IOU", 1, 3, 1, boxes, scores, 10, 0.5f, NAN, 0, 2, w_iou);
    static const int64_t w_all[] = {0, 0, 0, 0, 0, 1, 0, 0, 2};
    check_nms("NMS IOU threshold 1 keeps all", 1, 3, 1, boxes, scores, 10, 1.0f, NAN, 0, 3, w_all);
    check_nms("NMS without max_output_boxes_per_class selects nothing", 1, 3, 1, boxes, scores, -1, NAN, NAN, 0, 0,
              NULL);
    check_nms("NMS max_output_boxes_per_class 0", 1, 3, 1, boxes, scores, 0, 0.5f, NAN, 0, 0, NULL);
    check_nms("NMS limit 1", 1, 3, 1, boxes, scores, 1, 0.5f, NAN, 0, 1, w_iou);
    static const int64_t w_sc[] = {0, 0, 0};
    check_nms("NMS score threshold (strict)", 1, 3, 1, boxes, scores, 10, 0.5f, 0.6f, 0, 1, w_sc);
    check_nms("NMS score threshold removes all", 1, 3, 1, boxes, scores, 10, 0.5f, 0.95f, 0, 0, NULL);
    /* equal scores: the lower index first; identical boxes suppress each other */
    static const float same_boxes[] = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1};
    static const float same_scores[] = {0.5f, 0.5f, 0.5f};
    static const int64_t w_same[] = {0, 0, 0};
    check_nms("NMS identical boxes and scores", 1, 3, 1, same_boxes, same_scores, 5, 0.5f, NAN, 0, 1, w_same);
    /* zero-area boxes never suppress */
    static const float flat[] = {0, 0, 0, 1, 0, 0, 0, 1};
    static const float flat_s[] = {0.9f, 0.8f};
    static const int64_t w_flat[] = {0, 0, 0, 0, 0, 1};
    check_nms("NMS zero-area boxes", 1, 2, 1, flat, flat_s, 5, 0.0f, NAN, 0, 2, w_flat);
    /* flipped corners and center format describe the same boxes */
    static const float flipped[] = {1, 1, 0, 0, 1, 1.1f, 0, 0.1f, 1, 11, 0, 10};
    check_nms("NMS flipped corners", 1, 3, 1, flipped, scores, 10, 0.5f, NAN, 0, 2, w_iou);
    static const float center[] = {0.5f, 0.5f, 1, 1, 0.6f, 0.5f, 1, 1, 10.5f, 0.5f, 1, 1};
    check_nms("NMS center_point_box", 1, 3, 1, center, scores, 10, 0.5f, NAN, 1, 2, w_iou);
    /* two batches, two classes: ordered by batch, class, then selection */
    static const float b2[] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 0, 1, 1, 0, 5, 1, 6};
    static const float s2[] = {0.1f, 0.9f, 0.8f, 0.7f, 0.3f, 0.4f, 0.5f, 0.6f};
    static const int64_t w2[] = {0, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0};
    check_nms("NMS two batches two classes", 2, 2, 2, b2, s2, 5, 0.5f, NAN, 0, 6, w2);
    /* errors */
    tb t;
    tb_init(&t, 11);
    int64_t bd[3] = {1, 3, 4}, sd[3] = {1, 1, 2};
    carve_value_id ins[2] = {tb_in(&t, "boxes", tensor_f32(3, bd, boxes)), tb_in(&t, "scores", tensor_f32(3, sd, scores))};
    tb_node(&t, "NonMaxSuppression", 2, ins, 1);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "input 1 'scores' must have shape (1, num_classes, 3)"),
             "NMS score shape error: '%s'", carve_errmsg(t.ctx));
    tb_free(&t);
    tb_init(&t, 11);
    int64_t sd2[3] = {1, 1, 3};
    float bad_iou = 1.5f;
    int64_t mx = 3;
    carve_value_id ins2[4] = {tb_in(&t, "boxes", tensor_f32(3, bd, boxes)),
                              tb_in(&t, "scores", tensor_f32(3, sd2, scores)), tb_const(&t, "max", vec_i64(1, &mx)),
                              tb_const(&t, "iou", vec_f32(1, &bad_iou))};
    tb_node(&t, "NonMaxSuppression", 4, ins2, 1);
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "'iou_threshold' is 1.5, expected a value in [0, 1]"),
             "NMS iou range error: '%s'", carve_errmsg(t.ctx));
    s = cv_infer_model(t.m, NULL);
    OT_CHECK(!s && carve_value_dtype(t.m, tb_out(&t, 0)) == CARVE_INT64 && carve_value_rank(t.m, tb_out(&t, 0)) == 2 &&
                 carve_value_dim(t.m, tb_out(&t, 0), 0).value == -1 && carve_value_dim(t.m, tb_out(&t, 0), 1).value == 3,
             "NMS inference: [?, 3] int64");
    tb_free(&t);
}

/* ================================================================ RoiAlign, GridSample */

/* t (opset 16) with a RoiAlign of the 1x1x3x3 x on the one roi, batch
 * index bi. */
static carve_node_id roialign(tb *t, const float *x, const float *roi, int64_t bi)
{
    tb_init(t, 16);
    int64_t xd[4] = {1, 1, 3, 3}, rd[2] = {1, 4};
    carve_value_id ins[3] = {tb_in(t, "X", tensor_f32(4, xd, x)), tb_in(t, "rois", tensor_f32(2, rd, roi)),
                             tb_const(t, "bi", vec_i64(1, &bi))};
    return tb_node(t, "RoiAlign", 3, ins, 1);
}

static void test_roialign(void)
{
    /* a 1x1x3x3 ramp: bilinear samples of a linear function are exact, so
     * avg over the bin is the value at the bin centre */
    static const float xv[] = {0, 1, 2, 3, 4, 5, 6, 7, 8}; /* f(y, x) = 3y + x */
    static const float rois[] = {0.5f, 0.5f, 1.5f, 1.5f};
    for (int half = 0; half < 2; half++)
        for (int mx = 0; mx < 2; mx++) {
            tb t;
            carve_node_id n = roialign(&t, xv, rois, 0);
            carve_node_set_attr_int(t.m, n, "output_height", 1);
            carve_node_set_attr_int(t.m, n, "output_width", 2);
            carve_node_set_attr_int(t.m, n, "sampling_ratio", 2);
            carve_node_set_attr_string(t.m, n, "coordinate_transformation_mode", half ? "half_pixel" : "output_half_pixel");
            if (mx)
                carve_node_set_attr_string(t.m, n, "mode", "max");
            cv_val *y;
            carve_status s = tb_run(&t, &y);
            OT_CHECK(!s, "RoiAlign: %s", carve_errmsg(t.ctx));
            if (!s) {
                /* roi [0.5, 1.5] (minus 0.5 with half_pixel); 1 row, 2 bins; 2x2 samples */
                double off = half ? 0.5 : 0, x0 = 0.5 - off, y0 = 0.5 - off;
                for (int b = 0; b < 2; b++) {
                    double want;
                    if (!mx) {
                        double cy = y0 + 0.5, cx = x0 + 0.5 * b + 0.25; /* bin centres */
                        want = 3 * cy + cx;
                    } else {
                        /* largest weighted corner over the samples (onnxruntime's max) */
                        want = -1e30;
                        for (int iy = 0; iy < 2; iy++)
                            for (int ix = 0; ix < 2; ix++) {
                                double yy = y0 + (iy + 0.5) * 0.5, xx = x0 + 0.5 * b + (ix + 0.5) * 0.25;
                                int yl = (int)yy, xl = (int)xx;
                                double ly = yy - yl, lx = xx - xl;
                                double c[4] = {(1 - ly) * (1 - lx) * xv[yl * 3 + xl], (1 - ly) * lx * xv[yl * 3 + xl + 1],
                                               ly * (1 - lx) * xv[(yl + 1) * 3 + xl], ly * lx * xv[(yl + 1) * 3 + xl + 1]};
                                for (int q = 0; q < 4; q++)
                                    want = fmax(want, c[q]);
                            }
                    }
                    double got = ((float *)y->data)[b];
                    OT_CHECK(fabs(got - want) < 1e-5, "RoiAlign %s %s bin %d: %g, expected %g",
                             half ? "half_pixel" : "output_half_pixel", mx ? "max" : "avg", b, got, want);
                }
                cv_val_unref(y);
            }
            tb_free(&t);
        }
    /* a batch index out of range */
    tb t;
    roialign(&t, xv, rois, 2);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "'batch_indices' value 2 at 0 is outside [0, 1)"),
             "RoiAlign batch index error: '%s'", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* GridSample (align_corners=1, attribute name = value) of x on grid (dims
 * gd); the run's status, its output in *y and its message in msg. */
static carve_status gridsample(const cv_val *x, const int64_t *gd, const float *grid, const char *name,
                               const char *value, cv_val **y, char *msg, size_t msgsz)
{
    tb t;
    tb_init(&t, 16);
    carve_value_id ins[2] = {tb_in(&t, "X", cv_val_ref((cv_val *)x)), tb_in(&t, "grid", tensor_f32(4, gd, grid))};
    carve_node_id n = tb_node(&t, "GridSample", 2, ins, 1);
    carve_node_set_attr_string(t.m, n, name, value);
    carve_node_set_attr_int(t.m, n, "align_corners", 1);
    carve_status s = tb_run(&t, y);
    snprintf(msg, msgsz, "%s", carve_errmsg(t.ctx));
    tb_free(&t);
    return s;
}

static void test_gridsample(void)
{
    /* an identity grid with align_corners=1 reproduces the input in every
     * mode; a shifted grid reads zeros / the border / reflections */
    int64_t xd[4] = {1, 2, 3, 4}, gd[4] = {1, 3, 4, 2};
    cv_val *x = ot_random(CARVE_FLOAT, 4, xd, 3, -1, 1);
    float grid[24];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            grid[(i * 4 + j) * 2] = -1 + 2.0f * (float)j / 3;
            grid[(i * 4 + j) * 2 + 1] = -1 + 2.0f * (float)i / 2;
        }
    static const char *modes[] = {"bilinear", "nearest", "bicubic"};
    char msg[300];
    for (int mi = 0; mi < 3; mi++) {
        cv_val *y = NULL;
        carve_status s = gridsample(x, gd, grid, "mode", modes[mi], &y, msg, sizeof msg);
        char why[200] = "";
        OT_CHECK(!s && ot_close(y, x, 1e-5, 1e-5, why, sizeof why), "GridSample %s identity: %s %s", modes[mi],
                 msg, why);
        cv_val_unref(y);
    }
    /* one point left of the image by one pixel (align_corners=1): x = -1 - 2/3 */
    static const char *pads[] = {"zeros", "border", "reflection"};
    float g1[2] = {-1 - 2.0f / 3, -1};
    int64_t g1d[4] = {1, 1, 1, 2};
    for (int pi = 0; pi < 3; pi++) {
        cv_val *y = NULL;
        carve_status s = gridsample(x, g1d, g1, "padding_mode", pads[pi], &y, msg, sizeof msg);
        OT_CHECK(!s, "GridSample %s: %s", pads[pi], msg);
        if (!s) {
            const float *xs = x->data;
            for (int c = 0; c < 2; c++) {
                double want = pi == 0 ? 0 : pi == 1 ? xs[c * 12] : xs[c * 12 + 1];
                double got = ((float *)y->data)[c];
                OT_CHECK(fabs(got - want) < 1e-5, "GridSample %s channel %d: %g, expected %g", pads[pi], c, got, want);
            }
            cv_val_unref(y);
        }
    }
    cv_val_unref(x);
}

/* ================================================================ signal ops */

static void test_windows(void)
{
    static const char *ops[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    for (int oi = 0; oi < 3; oi++)
        for (int per = 0; per < 2; per++) {
            tb t;
            tb_init(&t, 17);
            int32_t n = 7;
            cv_val *sz = cv_val_new(CARVE_INT32, 0, NULL);
            *(int32_t *)sz->data = n;
            carve_value_id ins[1] = {tb_in(&t, "size", sz)};
            carve_node_id nd = tb_node(&t, ops[oi], 1, ins, 1);
            carve_node_set_attr_int(t.m, nd, "periodic", per);
            carve_node_set_attr_int(t.m, nd, "output_datatype", CARVE_DOUBLE);
            cv_val *y;
            carve_status s = tb_run(&t, &y);
            OT_CHECK(!s && y->dtype == CARVE_DOUBLE && y->nelem == 7, "%s: %s", ops[oi], carve_errmsg(t.ctx));
            for (int i = 0; !s && i < n; i++) {
                double N = per ? n : n - 1, a = 2 * M_PI * i / N, want;
                if (oi == 0)
                    want = 0.5 - 0.5 * cos(a);
                else if (oi == 1)
                    want = 0.54347826086956519 - 0.45652173913043481 * cos(a);
                else
                    want = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);
                OT_CHECK(fabs(((double *)y->data)[i] - want) < 1e-12, "%s periodic=%d element %d: %.17g, expected %.17g",
                         ops[oi], per, i, ((double *)y->data)[i], want);
            }
            cv_val_unref(y);
            tb_free(&t);
        }
}

/* DFT of x (real or complex) along axis 1 of [1, L, c], checked against a
 * direct sum in long double. */
static void check_dft(int64_t L, int cplx, int64_t dftlen, int inverse, int onesided, carve_dtype dt)
{
    tb t;
    tb_init(&t, 17);
    int64_t xd[3] = {2, L, cplx ? 2 : 1};
    cv_val *x = ot_random(dt, 3, xd, (uint32_t)(L * 3 + cplx), -1, 1);
    carve_value_id ins[2] = {tb_in(&t, "x", x), CARVE_NONE};
    if (dftlen > 0)
        ins[1] = tb_const(&t, "len", vec_i64(1, &dftlen));
    carve_node_id n = tb_node(&t, "DFT", dftlen > 0 ? 2 : 1, ins, 1);
    carve_node_set_attr_int(t.m, n, "inverse", inverse);
    carve_node_set_attr_int(t.m, n, "onesided", onesided);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    int64_t N = dftlen > 0 ? dftlen : L, nout = onesided ? N / 2 + 1 : N;
    OT_CHECK(!s && y->rank == 3 && y->dims[1] == nout && y->dims[2] == 2, "DFT L=%lld n=%lld: %s", (long long)L,
             (long long)N, carve_errmsg(t.ctx));
    double tol = dt == CARVE_FLOAT16 ? 2e-2 : dt == CARVE_DOUBLE ? 1e-10 : 1e-4;
    for (int b = 0; !s && b < 2; b++)
        for (int64_t k = 0; k < nout; k++) {
            long double sr = 0, si = 0;
            for (int64_t j = 0; j < N && j < L; j++) {
                long double a = (inverse ? 2 : -2) * 3.14159265358979323846264338327950288L * (long double)((j * k) % N) /
                                (long double)N;
                long double xr = cv_val_get_f64(x, (size_t)((b * L + j) * xd[2]));
                long double xi = cplx ? cv_val_get_f64(x, (size_t)((b * L + j) * 2 + 1)) : 0;
                sr += xr * cosl(a) - xi * sinl(a);
                si += xr * sinl(a) + xi * cosl(a);
            }
            if (inverse)
                sr /= N, si /= N;
            double gr = cv_val_get_f64(y, (size_t)((b * nout + k) * 2)), gi = cv_val_get_f64(y, (size_t)((b * nout + k) * 2 + 1));
            OT_CHECK(fabs(gr - (double)sr) <= tol * (1 + fabs((double)sr)) && fabs(gi - (double)si) <= tol * (1 + fabs((double)si)),
                     "DFT %s L=%lld n=%lld inv=%d one=%d bin %lld: (%g, %g), expected (%g, %g)", carve_dtype_name(dt),
                     (long long)L, (long long)N, inverse, onesided, (long long)k, gr, gi, (double)sr, (double)si);
        }
    cv_val_unref(y);
    tb_free(&t);
}

static void test_dft(void)
{
    check_dft(8, 0, 0, 0, 0, CARVE_FLOAT);     /* radix 2 */
    check_dft(64, 1, 0, 0, 0, CARVE_DOUBLE);
    check_dft(12, 1, 0, 1, 0, CARVE_FLOAT);    /* direct */
    check_dft(7, 0, 0, 0, 1, CARVE_DOUBLE);    /* onesided, odd */
    check_dft(10, 0, 16, 0, 1, CARVE_FLOAT);   /* zero-padded to a power of two */
    check_dft(10, 1, 6, 1, 0, CARVE_FLOAT);    /* truncated */
    check_dft(16, 0, 0, 0, 0, CARVE_FLOAT16);
    check_dft(1, 0, 0, 0, 0, CARVE_FLOAT);
    /* errors */
    tb t;
    tb_init(&t, 17);
    int64_t xd[3] = {1, 4, 2};
    carve_value_id ins[1] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 3, xd, 1, 0, 1))};
    carve_node_id n = tb_node(&t, "DFT", 1, ins, 1);
    carve_node_set_attr_int(t.m, n, "onesided", 1);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "onesided needs a real input"), "DFT onesided complex: '%s'",
             carve_errmsg(t.ctx));
    carve_node_set_attr_int(t.m, n, "inverse", 1);
    s = tb_run(&t, &y);
    OT_CHECK(s == CARVE_ERR_UNSUPPORTED && strstr(carve_errmsg(t.ctx), "'onesided' and 'inverse' both 1"),
             "DFT onesided inverse: '%s'", carve_errmsg(t.ctx));
    carve_node_set_attr_int(t.m, n, "inverse", 0);
    carve_node_set_attr_int(t.m, n, "onesided", 0);
    carve_node_set_attr_int(t.m, n, "axis", 2);
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "axis 2 is out of range"), "DFT axis on the complex dim: '%s'",
             carve_errmsg(t.ctx));
    tb_free(&t);
    /* inference with a symbolic batch */
    tb_init(&t, 17);
    carve_dim d[3] = {sym("B"), fix(10), fix(1)};
    int64_t len = 16;
    carve_value_id ins2[2] = {carve_graph_add_input(t.m, 0, "x", CARVE_FLOAT, 3, d), tb_const(&t, "len", vec_i64(1, &len))};
    n = tb_node(&t, "DFT", 2, ins2, 1);
    carve_node_set_attr_int(t.m, n, "onesided", 1);
    s = cv_infer_model(t.m, NULL);
    carve_dim o0 = carve_value_dim(t.m, tb_out(&t, 0), 0);
    OT_CHECK(!s && o0.param && !strcmp(o0.param, "B") && carve_value_dim(t.m, tb_out(&t, 0), 1).value == 9 &&
                 carve_value_dim(t.m, tb_out(&t, 0), 2).value == 2,
             "DFT inference [B, 9, 2]: %s", carve_errmsg(t.ctx));
    tb_free(&t);
}

static void test_stft(void)
{
    /* signal 1x20 real, frame 8, step 4, Hann-like window: direct sums */
    tb t;
    tb_init(&t, 17);
    int64_t xd[3] = {1, 20, 1};
    cv_val *x = ot_random(CARVE_FLOAT, 3, xd, 5, -1, 1);
    float w[8];
    for (int i = 0; i < 8; i++)
        w[i] = (float)(0.5 - 0.5 * cos(2 * M_PI * i / 8));
    int64_t step = 4;
    carve_value_id ins[3] = {tb_in(&t, "x", x), tb_const(&t, "step", vec_i64(1, &step)), tb_const(&t, "w", vec_f32(8, w))};
    tb_node(&t, "STFT", 3, ins, 1);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(!s && y->rank == 4 && y->dims[1] == 4 && y->dims[2] == 5 && y->dims[3] == 2, "STFT shape: %s",
             carve_errmsg(t.ctx));
    for (int f = 0; !s && f < 4; f++)
        for (int k = 0; k < 5; k++) {
            double sr = 0, si = 0;
            for (int j = 0; j < 8; j++) {
                double v = ((float *)x->data)[f * 4 + j] * w[j], a = -2 * M_PI * j * k / 8;
                sr += v * cos(a), si += v * sin(a);
            }
            const float *o = (const float *)y->data + (f * 5 + k) * 2;
            OT_CHECK(fabs(o[0] - sr) < 1e-5 && fabs(o[1] - si) < 1e-5, "STFT frame %d bin %d: (%g, %g), expected (%g, %g)",
                     f, k, (double)o[0], (double)o[1], sr, si);
        }
    cv_val_unref(y);
    s = cv_infer_model(t.m, NULL);
    OT_CHECK(!s && carve_value_dim(t.m, tb_out(&t, 0), 1).value == 4 && carve_value_dim(t.m, tb_out(&t, 0), 2).value == 5,
             "STFT inference: %s", carve_errmsg(t.ctx));
    tb_free(&t);
    /* frame_length disagreeing with the window */
    tb_init(&t, 17);
    int64_t fl = 6;
    carve_value_id ins2[4] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 3, xd, 5, -1, 1)),
                              tb_const(&t, "step", vec_i64(1, &step)), tb_const(&t, "w", vec_f32(8, w)),
                              tb_const(&t, "fl", vec_i64(1, &fl))};
    tb_node(&t, "STFT", 4, ins2, 1);
    s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "input 3 'frame_length' is 6 but input 2 'window' has 8 values"),
             "STFT frame_length error: '%s'", carve_errmsg(t.ctx));
    tb_free(&t);
}

/* t (opset 17) with a MelWeightMatrix of constant inputs. */
static void melweightmatrix(tb *t, int64_t nmel, int64_t dft, int64_t rate, float lo, float hi)
{
    tb_init(t, 17);
    carve_value_id ins[5] = {tb_const(t, "nmel", vec_i64(1, &nmel)), tb_const(t, "dft", vec_i64(1, &dft)),
                             tb_const(t, "rate", vec_i64(1, &rate)), tb_const(t, "lo", vec_f32(1, &lo)),
                             tb_const(t, "hi", vec_f32(1, &hi))};
    tb_node(t, "MelWeightMatrix", 5, ins, 1);
}

static void test_melweightmatrix(void)
{
    tb t;
    melweightmatrix(&t, 4, 16, 8000, 0, 4000);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(!s && y->rank == 2 && y->dims[0] == 9 && y->dims[1] == 4, "MelWeightMatrix shape: %s", carve_errmsg(t.ctx));
    if (!s) {
        /* the reference's bins, computed here */
        double hm = 2595 * log10(1 + 4000.0 / 700), step = hm / 6;
        long fb[6];
        for (int i = 0; i < 6; i++)
            fb[i] = (long)floor(17 * 700 * (pow(10, step * i / 2595) - 1) / 8000);
        for (int m = 0; m < 4; m++)
            for (long j = 0; j < 9; j++) {
                double want = 0;
                if (j >= fb[m] && j <= fb[m + 1] && fb[m + 1] > fb[m])
                    want = (double)(j - fb[m]) / (double)(fb[m + 1] - fb[m]);
                if (fb[m + 1] == fb[m] && j == fb[m])
                    want = 1;
                if (j >= fb[m + 1] && j < fb[m + 2])
                    want = (double)(fb[m + 2] - j) / (double)(fb[m + 2] - fb[m + 1]);
                double got = ((float *)y->data)[j * 4 + m];
                OT_CHECK(fabs(got - want) < 1e-6, "MelWeightMatrix [%ld, %d]: %g, expected %g", j, m, got, want);
            }
        cv_val_unref(y);
    }
    tb_free(&t);
}

/* ================================================================ StringNormalizer */

static cv_val *strings(int rank, const int64_t *dims, const char *const *s)
{
    cv_val *v = cv_val_new(CARVE_STRING, rank, dims);
    for (size_t i = 0; i < v->nelem; i++)
        ((char **)v->data)[i] = strcpy(cv_malloc(strlen(s[i]) + 1), s[i]);
    return v;
}

/* t (opset 10) with a StringNormalizer of the C words as [C] (or [1, C]
 * when twodim) and the stopword "monday". */
static carve_node_id stringnormalizer(tb *t, bool twodim, int64_t C, const char *const *words)
{
    static const char *stop[] = {"monday"};
    tb_init(t, 10);
    int64_t d1[1] = {C}, d2[2] = {1, C};
    carve_value_id ins[1] = {tb_in(t, "x", strings(twodim ? 2 : 1, twodim ? d2 : d1, words))};
    carve_node_id n = tb_node(t, "StringNormalizer", 1, ins, 1);
    carve_node_set_attr_strings(t->m, n, "stopwords", 1, stop);
    return n;
}

static void test_stringnormalizer(void)
{
    static const char *words[] = {"Monday", "caf\xc3\xa9", "MONDAY", "tuesday"};
    for (int twodim = 0; twodim < 2; twodim++) {
        tb t;
        carve_node_id n = stringnormalizer(&t, twodim, 4, words);
        carve_node_set_attr_string(t.m, n, "case_change_action", "UPPER");
        cv_val *y;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(!s && y->nelem == 2 && y->rank == (twodim ? 2 : 1) && !strcmp(((char **)y->data)[0], "CAF\xc3\xa9") &&
                     !strcmp(((char **)y->data)[1], "TUESDAY"),
                 "StringNormalizer case-insensitive stopwords, ASCII upper: %s", carve_errmsg(t.ctx));
        cv_val_unref(y);
        /* case-sensitive: only "monday" itself would go; none here */
        carve_node_set_attr_int(t.m, n, "is_case_sensitive", 1);
        carve_node_set_attr_string(t.m, n, "case_change_action", "LOWER");
        s = tb_run(&t, &y);
        OT_CHECK(!s && y->nelem == 4 && !strcmp(((char **)y->data)[2], "monday"), "StringNormalizer case-sensitive: %s",
                 carve_errmsg(t.ctx));
        cv_val_unref(y);
        tb_free(&t);
    }
    /* everything removed: [1] or [1, 1] holding "" */
    static const char *all[] = {"monday", "Monday"};
    for (int twodim = 0; twodim < 2; twodim++) {
        tb t;
        stringnormalizer(&t, twodim, 2, all);
        cv_val *y;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(!s && y->nelem == 1 && y->rank == (twodim ? 2 : 1) && y->dims[0] == 1 && !((char **)y->data)[0][0],
                 "StringNormalizer all removed (%s)", twodim ? "[1, C]" : "[C]");
        cv_val_unref(y);
        tb_free(&t);
    }
    /* [2, C] is refused */
    tb t;
    tb_init(&t, 10);
    int64_t d[2] = {2, 2};
    static const char *four[] = {"a", "b", "c", "d"};
    carve_value_id ins[1] = {tb_in(&t, "x", strings(2, d, four))};
    tb_node(&t, "StringNormalizer", 1, ins, 1);
    cv_val *y;
    carve_status s = tb_run(&t, &y);
    OT_CHECK(s && strstr(carve_errmsg(t.ctx), "must have shape [C] or [1, C]"), "StringNormalizer [2, C]: '%s'",
             carve_errmsg(t.ctx));
    tb_free(&t);
}

/* ================================================================ hostile inputs */

/* NaN/huge values must give a value or a clean error, never UB (the
 * sanitizer build runs this). */
static void test_hostile(void)
{
    {   /* GridSample: NaN and huge grid coordinates read zeros / edges */
        static const char *modes[] = {"bilinear", "nearest", "bicubic"};
        static const char *pads[] = {"zeros", "border", "reflection"};
        float g[8] = {NAN, 0, 1e30f, -1e30f, INFINITY, 0.5f, 3e9f, 0};
        int64_t xd[4] = {1, 1, 2, 3}, gd[4] = {1, 1, 4, 2};
        for (int mi = 0; mi < 3; mi++)
            for (int pi = 0; pi < 3; pi++) {
                tb t;
                tb_init(&t, 16);
                carve_value_id ins[2] = {tb_in(&t, "X", ot_random(CARVE_FLOAT, 4, xd, 1, 0, 1)),
                                         tb_in(&t, "grid", tensor_f32(4, gd, g))};
                carve_node_id n = tb_node(&t, "GridSample", 2, ins, 1);
                carve_node_set_attr_string(t.m, n, "mode", modes[mi]);
                carve_node_set_attr_string(t.m, n, "padding_mode", pads[pi]);
                cv_val *y;
                carve_status s = tb_run(&t, &y);
                OT_CHECK(!s && y->nelem == 4, "GridSample %s %s on NaN/huge grid: %s", modes[mi], pads[pi],
                         carve_errmsg(t.ctx));
                cv_val_unref(y);
                tb_free(&t);
            }
    }
    {   /* RoiAlign: NaN and huge rois */
        static const float rois[] = {NAN, 0, 1, 1, 0, 0, 1e30f, 1e30f, -1e30f, 0, 2, 2};
        int64_t xd[4] = {1, 1, 3, 3}, rd[2] = {3, 4};
        int64_t bi[3] = {0, 0, 0};
        tb t;
        tb_init(&t, 16);
        carve_value_id ins[3] = {tb_in(&t, "X", ot_random(CARVE_FLOAT, 4, xd, 1, 0, 1)),
                                 tb_in(&t, "rois", tensor_f32(2, rd, rois)), tb_const(&t, "bi", vec_i64(3, bi))};
        tb_node(&t, "RoiAlign", 3, ins, 1);
        cv_val *y;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(!s || strstr(carve_errmsg(t.ctx), "sampling points"), "RoiAlign on NaN/huge rois: %s",
                 carve_errmsg(t.ctx));
        cv_val_unref(y);
        tb_free(&t);
    }
    {   /* Resize: tiny and huge scales, huge sizes beside an empty axis */
        static const float tiny[] = {1, 1e-30f}, huge[] = {1, 1e30f}, nan2[] = {1, NAN};
        const float *sets[] = {tiny, huge, nan2};
        for (int i = 0; i < 3; i++) {
            tb t;
            tb_init(&t, 13);
            int64_t xd[2] = {2, 3};
            carve_value_id ins[3] = {tb_in(&t, "X", ot_random(CARVE_FLOAT, 2, xd, 1, 0, 1)), CARVE_NONE,
                                     tb_const(&t, "scales", vec_f32(2, sets[i]))};
            carve_node_id n = tb_node(&t, "Resize", 3, ins, 1);
            carve_node_set_attr_string(t.m, n, "mode", "cubic");
            cv_val *y;
            carve_status s = tb_run(&t, &y);
            OT_CHECK(i == 0 ? !s && y->nelem == 0 : s != CARVE_OK, "Resize scale set %d: %s", i, carve_errmsg(t.ctx));
            cv_val_unref(y);
            tb_free(&t);
        }
        tb t;
        tb_init(&t, 18);
        int64_t xd[2] = {0, 3};
        static const int64_t sz[] = {0, (int64_t)1 << 60};
        carve_value_id ins[4] = {tb_in(&t, "X", ot_random(CARVE_FLOAT, 2, xd, 1, 0, 1)), CARVE_NONE, CARVE_NONE,
                                 tb_const(&t, "sizes", vec_i64(2, sz))};
        carve_node_id n = tb_node(&t, "Resize", 4, ins, 1);
        carve_node_set_attr_string(t.m, n, "mode", "linear");
        carve_node_set_attr_int(t.m, n, "antialias", 1);
        cv_val *y;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(!s && y->nelem == 0 && y->dims[1] == ((int64_t)1 << 60), "Resize to an empty huge shape: %s",
                 carve_errmsg(t.ctx));
        cv_val_unref(y);
        tb_free(&t);
    }
    {   /* DFT: a dft_length far too large is NOMEM, not an overflow */
        tb t;
        tb_init(&t, 17);
        int64_t xd[3] = {0, 4, 1}, len = (int64_t)1 << 62;
        carve_value_id ins[2] = {tb_in(&t, "x", ot_random(CARVE_FLOAT, 3, xd, 1, 0, 1)), tb_const(&t, "len", vec_i64(1, &len))};
        tb_node(&t, "DFT", 2, ins, 1);
        cv_val *y;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(s == CARVE_ERR_NOMEM, "DFT huge dft_length: %s", carve_errmsg(t.ctx));
        tb_free(&t);
    }
    {   /* MelWeightMatrix: huge num_mel_bins, NaN edges */
        tb t;
        melweightmatrix(&t, INT64_MAX, 16, 8000, 0, NAN);
        cv_val *y;
        carve_status s = tb_run(&t, &y);
        OT_CHECK(s && strstr(carve_errmsg(t.ctx), "'upper_edge_hertz' (nan)"), "MelWeightMatrix NaN edge: '%s'",
                 carve_errmsg(t.ctx));
        tb_free(&t);
    }
}

int main(void)
{
    test_resize_reference();
    test_resize_fixed();
    test_resize_rounding();
    test_resize_inference();
    test_resize_errors();
    test_nms();
    test_roialign();
    test_gridsample();
    test_windows();
    test_dft();
    test_stft();
    test_melweightmatrix();
    test_stringnormalizer();
    test_hostile();
    return ot_finish();
}

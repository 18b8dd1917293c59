/* k_resize_plan.c: what a Resize or Upsample node asks for (its
 * attributes, the output shape with scales and roi from the inputs) and
 * the per-axis tables of (input index, weight) taps the kernel applies;
 * shared by the kernel and inference of k_resize.c through k_resize.h. */
#include "k_resize.h"

#include <math.h>
#include <string.h>

static bool is_upsample(const carve_model *m, carve_node_id n) { return !strcmp(m->nodes[n].op, "Upsample"); }

/* Node input positions of roi, scales and sizes (-1: the op has none). */
void rs_input_slots(const carve_model *m, carve_node_id n, int64_t opset, int *roi, int *scales, int *sizes)
{
    *roi = *scales = *sizes = -1;
    if (is_upsample(m, n)) {
        if (opset >= 9)
            *scales = 1;
    } else if (opset < 11) {
        *scales = 1;
    } else {
        *roi = 1, *scales = 2, *sizes = 3;
    }
}

/* Reads and checks the attributes; rank is the input's rank (-1 unknown:
 * axes are then left unnormalized and unchecked). */
int rs_read_attrs(const carve_model *m, carve_node_id n, int64_t opset, int rank, rattrs *a, char *err, size_t esz)
{
    memset(a, 0, sizeof *a);
    bool legacy = is_upsample(m, n) || opset < 11;
    const char *mode = cv_attr_s(m, n, "mode", "nearest");
    if (!strcmp(mode, "nearest"))
        a->mode = RM_NEAREST;
    else if (!strcmp(mode, "linear") || (legacy && !strcmp(mode, "bilinear")))
        a->mode = RM_LINEAR;
    else if (!strcmp(mode, "cubic") && !legacy)
        a->mode = RM_CUBIC;
    else {
        snprintf(err, esz, "attribute 'mode' is '%s', expected nearest, linear%s", mode, legacy ? "" : " or cubic");
        return PLAN_ERR;
    }
    a->ct = CT_ASYMMETRIC;
    a->nm = NM_SIMPLE;
    a->cubic_a = -0.75;
    a->policy = KAR_STRETCH;
    if (!legacy) {
        const char *ct = cv_attr_s(m, n, "coordinate_transformation_mode", "half_pixel");
        static const struct { const char *name; ctmode ct; int since; } cts[] = {
            {"half_pixel", CT_HALF_PIXEL, 11},           {"pytorch_half_pixel", CT_PYTORCH_HALF_PIXEL, 11},
            {"align_corners", CT_ALIGN_CORNERS, 11},     {"asymmetric", CT_ASYMMETRIC, 11},
            {"tf_half_pixel_for_nn", CT_TF_HALF_PIXEL_FOR_NN, 11},
            {"tf_crop_and_resize", CT_TF_CROP_AND_RESIZE, 11}, {"half_pixel_symmetric", CT_HALF_PIXEL_SYMMETRIC, 19},
        };
        size_t i = 0;
        while (i < sizeof cts / sizeof *cts && (strcmp(cts[i].name, ct) || opset < cts[i].since))
            i++;
        if (i == sizeof cts / sizeof *cts) {
            snprintf(err, esz, "attribute 'coordinate_transformation_mode' is '%s', not a mode of opset %lld", ct,
                     (long long)opset);
            return PLAN_ERR;
        }
        a->ct = cts[i].ct;
        const char *nm = cv_attr_s(m, n, "nearest_mode", "round_prefer_floor");
        if (!strcmp(nm, "round_prefer_floor"))
            a->nm = NM_ROUND_PREFER_FLOOR;
        else if (!strcmp(nm, "round_prefer_ceil"))
            a->nm = NM_ROUND_PREFER_CEIL;
        else if (!strcmp(nm, "floor"))
            a->nm = NM_FLOOR;
        else if (!strcmp(nm, "ceil"))
            a->nm = NM_CEIL;
        else {
            snprintf(err, esz, "attribute 'nearest_mode' is '%s', expected round_prefer_floor, round_prefer_ceil, "
                     "floor or ceil", nm);
            return PLAN_ERR;
        }
        a->cubic_a = cv_attr_f(m, n, "cubic_coeff_a", -0.75f);
        a->exclude_outside = cv_attr_i(m, n, "exclude_outside", 0) != 0;
        a->extrapolation = cv_attr_f(m, n, "extrapolation_value", 0.0f);
    }
    a->naxes = rank < 0 ? 0 : rank;
    for (int i = 0; i < a->naxes; i++)
        a->axes[i] = i;
    if (!legacy && opset >= 18) {
        a->antialias = cv_attr_i(m, n, "antialias", 0) != 0;
        const char *p = cv_attr_s(m, n, "keep_aspect_ratio_policy", "stretch");
        if (!strcmp(p, "stretch"))
            a->policy = KAR_STRETCH;
        else if (!strcmp(p, "not_larger"))
            a->policy = KAR_NOT_LARGER;
        else if (!strcmp(p, "not_smaller"))
            a->policy = KAR_NOT_SMALLER;
        else {
            snprintf(err, esz, "attribute 'keep_aspect_ratio_policy' is '%s', expected stretch, not_larger or "
                     "not_smaller", p);
            return PLAN_ERR;
        }
        const int64_t *ax;
        int nax = cv_attr_ints(m, n, "axes", &ax);
        if (nax >= 0) {
            if (rank < 0)
                return PLAN_UNKNOWN;
            if (nax > rank) {
                snprintf(err, esz, "attribute 'axes' has %d values but input 0 has rank %d", nax, rank);
                return PLAN_ERR;
            }
            bool seen[CARVE_MAX_RANK] = {0};
            for (int i = 0; i < nax; i++) {
                int64_t x = ax[i];
                if (x < -rank || x >= rank) {
                    snprintf(err, esz, "attribute 'axes' value %lld is out of range for rank %d", (long long)x, rank);
                    return PLAN_ERR;
                }
                if (x < 0)
                    x += rank;
                if (seen[x]) {
                    snprintf(err, esz, "attribute 'axes' repeats axis %lld", (long long)x);
                    return PLAN_ERR;
                }
                seen[x] = true;
                a->axes[i] = (int)x;
            }
            a->naxes = nax;
        }
    }
    if (rank < 0)
        return PLAN_UNKNOWN;
    return PLAN_OK;
}

/* Output shape, scales and roi from the inputs. present[i]: node input i is
 * given; val[i]: its value (NULL when not known: inference). in[] may hold
 * -1 for unknown dims (inference); their outputs are then -1. */
int rs_plan_shape(const carve_model *m, carve_node_id n, int64_t opset, const rattrs *a, int rank,
                  const int64_t *in, const bool *present, const cv_val *const *val, rshape *rs, char *err,
                  size_t esz)
{
    memset(rs, 0, sizeof *rs);
    rs->rank = rank;
    for (int d = 0; d < rank; d++) {
        rs->in[d] = rs->out[d] = in[d];
        rs->scale[d] = 1.0;
        rs->fscale[d] = 1.0f;
        rs->len[d] = (double)in[d];
        rs->roi0[d] = 0.0, rs->roi1[d] = 1.0;
        rs->same[d] = true;
    }
    int sroi, ssc, ssz;
    rs_input_slots(m, n, opset, &sroi, &ssc, &ssz);
    int na = a->naxes;
    double sc[CARVE_MAX_RANK];
    int64_t sz[CARVE_MAX_RANK];
    bool have_scales = false, have_sizes = false;
    if (ssc < 0) { /* Upsample-7: attribute */
        const float *f;
        int cnt = cv_attr_floats(m, n, "scales", &f);
        if (cnt < 0) {
            snprintf(err, esz, "attribute 'scales' is missing");
            return PLAN_ERR;
        }
        if (cnt != na) {
            snprintf(err, esz, "attribute 'scales' has %d values but input 0 has rank %d", cnt, rank);
            return PLAN_ERR;
        }
        for (int i = 0; i < cnt; i++)
            sc[i] = f[i];
        have_scales = true;
    } else {
        const cv_val *s = present[ssc] ? val[ssc] : NULL;
        if (present[ssc] && !s)
            return PLAN_UNKNOWN;
        if (s && s->nelem) {
            if (!cv_dtype_is_float(s->dtype)) {
                snprintf(err, esz, "input %d 'scales' is %s, expected a float tensor", ssc, carve_dtype_name(s->dtype));
                return PLAN_ERR;
            }
            if (s->nelem != (size_t)na) {
                snprintf(err, esz, "input %d 'scales' has %zu values but %s %d", ssc, s->nelem,
                         na == rank ? "input 0 has rank" : "attribute 'axes' has", na);
                return PLAN_ERR;
            }
            for (int i = 0; i < na; i++)
                sc[i] = cv_val_get_f64(s, (size_t)i);
            have_scales = true;
        }
    }
    if (ssz >= 0 && present[ssz]) {
        const cv_val *s = val[ssz];
        if (!s)
            return PLAN_UNKNOWN;
        if (s->nelem) {
            if (s->dtype != CARVE_INT64) {
                snprintf(err, esz, "input %d 'sizes' is %s, expected int64", ssz, carve_dtype_name(s->dtype));
                return PLAN_ERR;
            }
            if (s->nelem != (size_t)na) {
                snprintf(err, esz, "input %d 'sizes' has %zu values but %s %d", ssz, s->nelem,
                         na == rank ? "input 0 has rank" : "attribute 'axes' has", na);
                return PLAN_ERR;
            }
            for (int i = 0; i < na; i++) {
                sz[i] = cv_val_get_i64(s, (size_t)i);
                if (sz[i] < 0) {
                    snprintf(err, esz, "input %d 'sizes' value %d is %lld, expected >= 0", ssz, i, (long long)sz[i]);
                    return PLAN_ERR;
                }
            }
            have_sizes = true;
        }
    }
    if (have_scales && have_sizes) {
        snprintf(err, esz, "inputs 'scales' and 'sizes' are both given; only one may be");
        return PLAN_ERR;
    }
    if (!have_scales && !have_sizes) {
        snprintf(err, esz, "neither 'scales' nor 'sizes' is given");
        return PLAN_ERR;
    }
    if (have_scales) {
        for (int i = 0; i < na; i++) {
            int d = a->axes[i];
            if (!(sc[i] > 0) || isinf(sc[i])) {
                snprintf(err, esz, "'scales' value %d is %g, expected a finite value > 0", i, sc[i]);
                return PLAN_ERR;
            }
            rs->scale[d] = sc[i];
            rs->fscale[d] = (float)sc[i];
            rs->same[d] = sc[i] == 1.0;
            if (in[d] < 0)
                continue;
            double o = floor((double)in[d] * sc[i]);
            if (o >= 4.0e18) {
                snprintf(err, esz, "'scales' value %d (%g) makes axis %d of size %lld too large", i, sc[i], d,
                         (long long)in[d]);
                return PLAN_ERR;
            }
            rs->out[d] = (int64_t)o;
            rs->len[d] = (double)in[d] * sc[i];
        }
    } else if (a->policy == KAR_STRETCH) {
        for (int i = 0; i < na; i++) {
            int d = a->axes[i];
            rs->out[d] = sz[i];
            rs->len[d] = (double)sz[i];
            rs->same[d] = false;
            if (in[d] < 0)
                continue;
            if (in[d] == 0 && sz[i] != 0) {
                snprintf(err, esz, "input 0 axis %d is empty and cannot be resized to %lld", d, (long long)sz[i]);
                return PLAN_ERR;
            }
            rs->scale[d] = in[d] ? (double)sz[i] / (double)in[d] : 1.0;
            rs->fscale[d] = in[d] ? (float)sz[i] / (float)in[d] : 1.0f;
        }
    } else {
        double s = a->policy == KAR_NOT_LARGER ? INFINITY : 0.0;
        float fs = a->policy == KAR_NOT_LARGER ? INFINITY : 0.0f;
        for (int i = 0; i < na; i++) {
            int d = a->axes[i];
            if (in[d] < 0) {
                for (int j = 0; j < na; j++) {
                    rs->out[a->axes[j]] = -1;
                    rs->same[a->axes[j]] = false;
                }
                return PLAN_OK;
            }
            if (in[d] == 0) {
                snprintf(err, esz, "input 0 axis %d is empty; keep_aspect_ratio_policy needs a size", d);
                return PLAN_ERR;
            }
            double r = (double)sz[i] / (double)in[d];
            float fr = (float)sz[i] / (float)in[d];
            s = a->policy == KAR_NOT_LARGER ? fmin(s, r) : fmax(s, r);
            fs = a->policy == KAR_NOT_LARGER ? fminf(fs, fr) : fmaxf(fs, fr);
        }
        for (int i = 0; i < na; i++) {
            int d = a->axes[i];
            rs->scale[d] = s;
            rs->fscale[d] = fs;
            rs->same[d] = false;
            rs->len[d] = s * (double)in[d];
            double o = floor(rs->len[d] + 0.5);
            if (!(o < 4.0e18)) {
                snprintf(err, esz, "keep_aspect_ratio_policy makes axis %d too large", d);
                return PLAN_ERR;
            }
            rs->out[d] = (int64_t)o;
        }
    }
    if (a->ct == CT_TF_CROP_AND_RESIZE && sroi >= 0 && present[sroi]) {
        const cv_val *r = val[sroi];
        if (!r)
            return PLAN_OK; /* the roi does not change the shape */
        if (r->nelem) {
            if (r->nelem != (size_t)(2 * na)) {
                snprintf(err, esz, "input %d 'roi' has %zu values, expected %d (start and end of each resized axis)",
                         sroi, r->nelem, 2 * na);
                return PLAN_ERR;
            }
            for (int i = 0; i < na; i++) {
                rs->roi0[a->axes[i]] = cv_val_get_f64(r, (size_t)i);
                rs->roi1[a->axes[i]] = cv_val_get_f64(r, (size_t)(na + i));
            }
        }
    }
    return PLAN_OK;
}

/* ---------------------------------------------------------------- per-axis tables */

void rs_amap_free(amap *a)
{
    cv_free(a->idx);
    cv_free(a->w);
    cv_free(a->ext);
    memset(a, 0, sizeof *a);
}

double rs_orig_coord(const rattrs *a, const rshape *rs, int d, int64_t xo)
{
    double x = (double)xo, s = rs->scale[d], in = (double)rs->in[d], len = rs->len[d];
    switch (a->ct) {
    case CT_HALF_PIXEL: return (x + 0.5) / s - 0.5;
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)rs->out[d] / len;
        return in / 2 * (1 - adj) + (x + 0.5) / s - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case CT_ALIGN_CORNERS: return len == 1 ? 0.0 : x * (in - 1) / (len - 1);
    case CT_ASYMMETRIC: return x / s;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / s;
    case CT_TF_CROP_AND_RESIZE: {
        double r0 = rs->roi0[d], r1 = rs->roi1[d];
        double xo2 = len == 1 ? (r1 - r0) * (in - 1) / 2 : x * (r1 - r0) * (in - 1) / (len - 1);
        return xo2 + r0 * (in - 1);
    }
    }
    return x;
}

static double filter_w(const rattrs *a, double t)
{
    t = fabs(t);
    if (a->mode == RM_LINEAR)
        return t < 1 ? 1 - t : 0;
    double A = a->cubic_a;
    if (t <= 1)
        return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2)
        return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    return 0;
}

static int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/* Builds the taps of axis d. false on NOMEM. */
bool rs_amap_build(const rattrs *a, const rshape *rs, int d, amap *m)
{
    memset(m, 0, sizeof *m);
    int64_t in = rs->in[d], out = rs->out[d];
    m->in = in, m->out = out;
    double fs = 1.0; /* filter scale: antialias widens the filter when downsampling */
    int start = 0;
    if (a->mode == RM_NEAREST) {
        m->ntap = 1;
    } else {
        fs = a->antialias && rs->scale[d] < 1 ? rs->scale[d] : 1.0;
        double support = a->mode == RM_LINEAR ? 1.0 : 2.0;
        double st = floor(-support / fs) + 1;
        if (st < -(double)(in + 4))
            st = -(double)(in + 4); /* taps past the padded edge repeat it */
        if (st < -(double)(1 << 23))
            return false; /* a filter of millions of taps: reported as NOMEM */
        start = (int)st;
        m->ntap = 2 - 2 * start;
    }
    if (out > 0 && (size_t)m->ntap > SIZE_MAX / 16 / (size_t)out)
        return false;
    size_t nt = (size_t)out * (size_t)m->ntap;
    m->idx = cv_malloc((nt ? nt : 1) * sizeof *m->idx);
    m->w = cv_malloc((nt ? nt : 1) * sizeof *m->w);
    m->ext = cv_malloc(out ? (size_t)out : 1);
    if (!m->idx || !m->w || !m->ext) {
        rs_amap_free(m);
        return false;
    }
    m->identity = out == in;
    for (int64_t xo = 0; xo < out; xo++) {
        double x = rs_orig_coord(a, rs, d, xo);
        m->ext[xo] = a->ct == CT_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1));
        m->any_ext |= m->ext[xo];
        if (m->ext[xo] || x != (double)xo)
            m->identity = false;
        /* Keeps the cast below defined; such coordinates read the edge anyway. */
        double lim = (double)in + 8.0 + (double)m->ntap;
        if (!(x > -lim))
            x = -lim;
        if (!(x < lim))
            x = lim;
        double fl = floor(x);
        int64_t base = (int64_t)fl;
        double r = x - fl;
        if (r == 0) { /* on a pixel: ratio 1 from the left neighbour */
            base -= 1;
            r = 1;
        }
        int64_t *ix = m->idx + (size_t)xo * (size_t)m->ntap;
        double *w = m->w + (size_t)xo * (size_t)m->ntap;
        if (a->mode == RM_NEAREST) {
            int64_t pick;
            if (r == 1)
                pick = base + 1;
            else if (a->nm == NM_SIMPLE)
                pick = rs->scale[d] < 1 ? base + 1 : base;
            else if (a->nm == NM_ROUND_PREFER_FLOOR)
                pick = r <= 0.5 ? base : base + 1;
            else if (a->nm == NM_ROUND_PREFER_CEIL)
                pick = r < 0.5 ? base : base + 1;
            else if (a->nm == NM_FLOOR)
                pick = base;
            else
                pick = base + 1;
            ix[0] = clampi(pick, in);
            w[0] = 1;
            if (ix[0] != xo)
                m->identity = false;
            continue;
        }
        double sum = 0;
        for (int t = 0; t < m->ntap; t++) {
            int64_t j = start + t;
            int64_t p = base + j;
            double wt = filter_w(a, fs * ((double)j - r));
            if (a->exclude_outside && (p < 0 || p >= in))
                wt = 0;
            ix[t] = clampi(p, in);
            w[t] = wt;
            sum += wt;
        }
        if ((a->exclude_outside || fs != 1.0 || a->antialias) && sum != 0)
            for (int t = 0; t < m->ntap; t++)
                w[t] /= sum;
    }
    return true;
}

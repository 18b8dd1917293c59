/* k_signal.c: signal ops of opset 17: HannWindow, HammingWindow,
 * BlackmanWindow, DFT (and its opset-20 form, axis as an input), STFT and
 * MelWeightMatrix.
 *
 * Everything is computed in double and stored in the output dtype. A DFT of
 * a power-of-two length runs as an iterative radix-2 FFT; other lengths run
 * directly (O(n^2)) over an exact twiddle table. */
#include "ops.h"

#include <math.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

/* A scalar int input (shape [] or [1]); false when it is not one. */
static bool int_scalar(const cv_val *v, int64_t *x)
{
    if (!v || v->nelem != 1 || v->rank > 1 || !cv_dtype_is_int(v->dtype))
        return false;
    *x = cv_val_get_i64(v, 0);
    return true;
}

static bool out_dtype_ok(int64_t t)
{
    switch (t) {
    case CARVE_UINT8: case CARVE_UINT16: case CARVE_UINT32: case CARVE_UINT64: case CARVE_INT8:
    case CARVE_INT16: case CARVE_INT32: case CARVE_INT64: case CARVE_FLOAT16: case CARVE_FLOAT:
    case CARVE_DOUBLE: case CARVE_BFLOAT16:
        return true;
    default:
        return false;
    }
}

/* ================================================================ windows */

carve_status k_window(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const char *op = k->m->nodes[k->node].op;
    int64_t size;
    if (!int_scalar(in[0], &size))
        return cv_kerr(k, "input 0 'size' must be an int32 or int64 scalar");
    if (size < 0)
        return cv_kerr(k, "input 0 'size' is %lld, expected >= 0", (long long)size);
    int64_t dt = cv_attr_i(k->m, k->node, "output_datatype", CARVE_FLOAT);
    if (!out_dtype_ok(dt))
        return cv_kerr(k, "attribute 'output_datatype' is %lld, not a numeric type this op produces", (long long)dt);
    bool periodic = cv_attr_i(k->m, k->node, "periodic", 1) != 0;
    /* a0 - a1 cos(x) + a2 cos(2x), the spec's function bodies */
    double a0, a1, a2;
    if (!strcmp(op, "HannWindow"))
        a0 = 0.5, a1 = 0.5, a2 = 0;
    else if (!strcmp(op, "HammingWindow"))
        a0 = 25.0 / 46.0, a1 = 21.0 / 46.0, a2 = 0;
    else
        a0 = 0.42, a1 = 0.5, a2 = 0.08;
    cv_val *y = cv_val_new((carve_dtype)dt, 1, &size);
    if (!y)
        return cv_knomem(k);
    /* size 1 symmetric divides by zero: NaN, as the function body and onnxruntime */
    double inc = 2 * PI / (double)(periodic ? size : size - 1);
    for (int64_t i = 0; i < size; i++) {
        double x = inc * (double)i;
        cv_val_set_f64(y, (size_t)i, a0 - a1 * cos(x) + a2 * cos(2 * x));
    }
    out[0] = y;
    return CARVE_OK;
}

carve_status i_window(cv_ictx *c)
{
    int64_t dt = cv_attr_i(c->m, c->node, "output_datatype", CARVE_FLOAT);
    const cv_val *s = c->const_input(c, 0);
    int64_t size;
    carve_dim d = {-1, NULL};
    if (s && int_scalar(s, &size) && size >= 0)
        d.value = size;
    return cv_infer_set(c, 0, out_dtype_ok(dt) ? (carve_dtype)dt : CARVE_UNDEFINED, 1, &d);
}

/* ================================================================ DFT core */

typedef struct {
    size_t n;
    double *cs, *sn; /* cos/sin(2 pi k / n), k < n; one block with wr, wi */
    double *wr, *wi; /* scratch of n */
    size_t *rev;     /* bit reversal (power-of-two n) */
    bool pow2;
} dft_plan;

static void plan_free(dft_plan *p)
{
    cv_free(p->cs);
    cv_free(p->rev);
    memset(p, 0, sizeof *p);
}

static bool plan_init(dft_plan *p, size_t n)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->pow2 = n && !(n & (n - 1));
    p->cs = cv_malloc(4 * n * sizeof *p->cs + 1);
    p->rev = p->pow2 ? cv_malloc(n * sizeof *p->rev + 1) : NULL;
    if (!p->cs || (p->pow2 && !p->rev)) {
        plan_free(p);
        return false;
    }
    p->sn = p->cs + n, p->wr = p->sn + n, p->wi = p->wr + n;
    for (size_t k = 0; k < n; k++) {
        /* exact symmetry for the quarter turns */
        double a = 2 * PI * (double)k / (double)n;
        p->cs[k] = cos(a);
        p->sn[k] = sin(a);
        if (4 * k == n)
            p->cs[k] = 0, p->sn[k] = 1;
        else if (2 * k == n)
            p->cs[k] = -1, p->sn[k] = 0;
        else if (4 * k == 3 * n)
            p->cs[k] = 0, p->sn[k] = -1;
    }
    if (p->pow2) {
        int bits = 0;
        while (((size_t)1 << bits) < n)
            bits++;
        for (size_t i = 0; i < n; i++) {
            size_t r = 0;
            for (int b = 0; b < bits; b++)
                if (i & ((size_t)1 << b))
                    r |= (size_t)1 << (bits - 1 - b);
            p->rev[i] = r;
        }
    }
    return true;
}

/* In place on (re, im) of length p->n. sign -1: forward, +1: inverse
 * (unnormalized). */
static void transform(dft_plan *p, double *re, double *im, int sign)
{
    size_t n = p->n;
    if (p->pow2) {
        for (size_t i = 0; i < n; i++)
            if (p->rev[i] > i) {
                size_t j = p->rev[i];
                double t = re[i];
                re[i] = re[j], re[j] = t;
                t = im[i];
                im[i] = im[j], im[j] = t;
            }
        for (size_t len = 2; len <= n; len <<= 1) {
            size_t half = len / 2, step = n / len;
            for (size_t s = 0; s < n; s += len)
                for (size_t j = 0; j < half; j++) {
                    double c = p->cs[j * step], sn = sign * p->sn[j * step];
                    size_t a = s + j, b = a + half;
                    double tr = re[b] * c - im[b] * sn, ti = re[b] * sn + im[b] * c;
                    re[b] = re[a] - tr, im[b] = im[a] - ti;
                    re[a] += tr, im[a] += ti;
                }
        }
        return;
    }
    for (size_t k = 0; k < n; k++) {
        double sr = 0, si = 0;
        size_t idx = 0; /* (j * k) mod n, kept exact */
        for (size_t j = 0; j < n; j++) {
            double c = p->cs[idx], sn = sign * p->sn[idx];
            sr += re[j] * c - im[j] * sn;
            si += re[j] * sn + im[j] * c;
            idx += k;
            if (idx >= n)
                idx -= n;
        }
        p->wr[k] = sr, p->wi[k] = si;
    }
    memcpy(re, p->wr, n * sizeof *re);
    memcpy(im, p->wi, n * sizeof *im);
}

static bool signal_dtype(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

static double getd(const cv_val *v, size_t i)
{
    if (v->dtype == CARVE_FLOAT)
        return ((const float *)v->data)[i];
    if (v->dtype == CARVE_DOUBLE)
        return ((const double *)v->data)[i];
    return cv_val_get_f64(v, i);
}

static void setd(cv_val *v, size_t i, double x)
{
    if (v->dtype == CARVE_FLOAT)
        ((float *)v->data)[i] = (float)x;
    else if (v->dtype == CARVE_DOUBLE)
        ((double *)v->data)[i] = x;
    else
        cv_val_set_f64(v, i, x);
}

/* What DFT and STFT transform with: their output y (x's dtype, dims od),
 * the plan for n points, re and im of n doubles and (STFT) the window's n
 * values in w, one block. */
typedef struct {
    cv_val *y;
    dft_plan p;
    double *re, *im, *w;
} fft_work;

/* CARVE_OK, or NOMEM (then f holds nothing). */
static carve_status fft_begin(cv_kctx *k, fft_work *f, const cv_val *x, int rank, const int64_t *od, size_t n,
                              bool window)
{
    f->y = cv_val_new(x->dtype, rank, od);
    f->re = f->y ? cv_malloc((window ? 3 : 2) * n * sizeof *f->re + 1) : NULL;
    if (f->re && plan_init(&f->p, n)) {
        f->im = f->re + n;
        f->w = window ? f->im + n : NULL;
        return CARVE_OK;
    }
    cv_free(f->re);
    cv_val_unref(f->y);
    return cv_knomem(k);
}

/* Frees the work and hands y over to out[0]. */
static carve_status fft_end(fft_work *f, cv_val **out)
{
    plan_free(&f->p);
    cv_free(f->re);
    out[0] = f->y;
    return CARVE_OK;
}

/* DFT and STFT: bins re[j] + i im[j] (j < n), times norm, into y's
 * complex pairs from element e0 on, step elements apart. */
static void put_bins(cv_val *y, size_t e0, size_t step, const double *re, const double *im, size_t n, double norm)
{
    for (size_t j = 0; j < n; j++) {
        setd(y, e0 + j * step, re[j] * norm);
        setd(y, e0 + j * step + 1, im[j] * norm);
    }
}

/* ================================================================ DFT */

/* The DFT's axis: attribute (17) or input 2 (20, default -2), normalized
 * into [0, rank - 2]. */
static bool dft_axis(const carve_model *m, carve_node_id n, int64_t opset, const cv_val *axis_in, int rank,
                     int64_t *axis, char *err, size_t esz)
{
    int64_t a;
    if (opset >= 20) {
        a = -2;
        if (axis_in && !int_scalar(axis_in, &a)) {
            snprintf(err, esz, "input 2 'axis' must be an int scalar");
            return false;
        }
    } else {
        a = cv_attr_i(m, n, "axis", 1);
    }
    int64_t r = rank;
    if (a < -r || a > r - 2 || (a < 0 && a > -2)) {
        snprintf(err, esz, "axis %lld is out of range for an input of rank %d (the last axis holds real/imaginary)",
                 (long long)a, rank);
        return false;
    }
    *axis = a < 0 ? a + r : a;
    return true;
}

carve_status k_dft(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0];
    if (!signal_dtype(x->dtype))
        return cv_kerr(k, "input 0 'input' is %s, expected float16, bfloat16, float or double",
                       carve_dtype_name(x->dtype));
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
        return cv_kerr(k, "input 0 'input' must have rank >= 2 and a last dim of 1 (real) or 2 (complex)");
    char err[200];
    int64_t axis;
    if (!dft_axis(k->m, k->node, k->opset, n_in > 2 ? in[2] : NULL, x->rank, &axis, err, sizeof err))
        return cv_kerr(k, "%s", err);
    bool inverse = cv_attr_i(k->m, k->node, "inverse", 0) != 0;
    bool onesided = cv_attr_i(k->m, k->node, "onesided", 0) != 0;
    bool cplx = x->dims[x->rank - 1] == 2;
    if (onesided && inverse) {
        /* Read by later revisions of the spec as an inverse real FFT (a
         * one-sided spectrum in, a real signal out), by opset 17 as not
         * possible: refused rather than guessed. */
        return cv_node_err(k->m, k->node, CARVE_ERR_UNSUPPORTED, "",
                           "attributes 'onesided' and 'inverse' both 1 are not supported");
    }
    if (onesided && cplx)
        return cv_kerr(k, "attribute 'onesided' is 1 but input 0 is complex (last dim 2); onesided needs a real input");
    int64_t L = x->dims[axis], n = L;
    if (n_in > 1 && in[1]) {
        if (!int_scalar(in[1], &n))
            return cv_kerr(k, "input 1 'dft_length' must be an int32 or int64 scalar");
        if (n < 1)
            return cv_kerr(k, "input 1 'dft_length' is %lld, expected >= 1", (long long)n);
    }
    if (n > ((int64_t)1 << 34))
        return cv_knomem(k);
    int64_t nout = onesided ? n / 2 + 1 : n;
    int64_t od[CARVE_MAX_RANK];
    memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
    od[axis] = nout;
    od[x->rank - 1] = 2;
    fft_work fw;
    carve_status s = fft_begin(k, &fw, x, x->rank, od, (size_t)n, false);
    if (s)
        return s;
    double *re = fw.re, *im = fw.im;
    size_t outer = cv_nelem((int)axis, x->dims), inner = cv_nelem(x->rank - 2 - (int)axis, x->dims + axis + 1);
    size_t ci = (size_t)x->dims[x->rank - 1];
    size_t take = (size_t)(L < n ? L : n);
    double norm = inverse ? 1.0 / (double)n : 1.0;
    for (size_t o = 0; o < outer; o++)
        for (size_t q = 0; q < inner; q++) {
            for (size_t j = 0; j < (size_t)n; j++) {
                re[j] = im[j] = 0;
                if (j < take) {
                    size_t e = ((o * (size_t)L + j) * inner + q) * ci;
                    re[j] = getd(x, e);
                    if (cplx)
                        im[j] = getd(x, e + 1);
                }
            }
            transform(&fw.p, re, im, inverse ? 1 : -1);
            put_bins(fw.y, (o * (size_t)nout * inner + q) * 2, inner * 2, re, im, (size_t)nout, norm);
        }
    return fft_end(&fw, out);
}

/* DFT's dims: the transformed axis has the DFT's length (halved plus one
 * when onesided), the last dim is 2. */
static carve_status dft_dims(cv_ictx *c, const cv_type *t, int *rank, carve_dim *d)
{
    (void)rank;
    const cv_node *n = &c->m->nodes[c->node];
    if (t->rank < 2)
        return cv_ierr(c, "input 0 has rank %d, expected >= 2", t->rank);
    memcpy(d, t->dims, (size_t)t->rank * sizeof *d);
    d[t->rank - 1] = (carve_dim){2, NULL};
    char err[200];
    int64_t axis;
    bool axis_known = c->opset < 20 || n->n_in < 3 || n->in[2] == CARVE_NONE || c->const_input(c, 2);
    if (!axis_known) {
        for (int i = 0; i < t->rank - 1; i++)
            d[i] = (carve_dim){-1, NULL};
        return CARVE_OK;
    }
    if (!dft_axis(c->m, c->node, c->opset, c->opset >= 20 ? c->const_input(c, 2) : NULL, t->rank, &axis, err,
                  sizeof err))
        return cv_ierr(c, "%s", err);
    bool onesided = cv_attr_i(c->m, c->node, "onesided", 0) != 0;
    carve_dim len = t->dims[axis];
    if (n->n_in > 1 && n->in[1] != CARVE_NONE) {
        const cv_val *l = c->const_input(c, 1);
        int64_t v;
        len = l && int_scalar(l, &v) && v >= 1 ? (carve_dim){v, NULL} : (carve_dim){-1, NULL};
    }
    if (onesided)
        len = len.value >= 0 ? (carve_dim){len.value / 2 + 1, NULL} : (carve_dim){-1, NULL};
    d[axis] = len;
    return CARVE_OK;
}

carve_status i_dft(cv_ictx *c) { return cv_infer_dims(c, dft_dims); }

/* ================================================================ STFT */

/* frame_length from input 3 or the window; 0 with err set on bad input. */
static int64_t stft_frame_length(const cv_val *window, const cv_val *flen, char *err, size_t esz)
{
    int64_t fl = -1;
    if (flen) {
        if (!int_scalar(flen, &fl)) {
            snprintf(err, esz, "input 3 'frame_length' must be an int32 or int64 scalar");
            return 0;
        }
        if (fl < 1) {
            snprintf(err, esz, "input 3 'frame_length' is %lld, expected >= 1", (long long)fl);
            return 0;
        }
    }
    if (window) {
        if (window->rank != 1) {
            snprintf(err, esz, "input 2 'window' has rank %d, expected 1", window->rank);
            return 0;
        }
        if (fl >= 0 && fl != window->dims[0]) {
            snprintf(err, esz, "input 3 'frame_length' is %lld but input 2 'window' has %lld values", (long long)fl,
                     (long long)window->dims[0]);
            return 0;
        }
        fl = window->dims[0];
        if (fl < 1) {
            snprintf(err, esz, "input 2 'window' is empty");
            return 0;
        }
    }
    if (fl < 0) {
        snprintf(err, esz, "neither input 2 'window' nor input 3 'frame_length' is given");
        return 0;
    }
    return fl;
}

carve_status k_stft(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0], *window = n_in > 2 ? in[2] : NULL, *flen = n_in > 3 ? in[3] : NULL;
    if (!signal_dtype(x->dtype))
        return cv_kerr(k, "input 0 'signal' is %s, expected float16, bfloat16, float or double", carve_dtype_name(x->dtype));
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
        return cv_kerr(k, "input 0 'signal' must have shape (batch_size, signal_length, 1 or 2)");
    int64_t step;
    if (!int_scalar(in[1], &step))
        return cv_kerr(k, "input 1 'frame_step' must be an int32 or int64 scalar");
    if (step < 1)
        return cv_kerr(k, "input 1 'frame_step' is %lld, expected >= 1", (long long)step);
    if (window && !signal_dtype(window->dtype))
        return cv_kerr(k, "input 2 'window' is %s, expected a float tensor", carve_dtype_name(window->dtype));
    char err[200];
    int64_t fl = stft_frame_length(window, flen, err, sizeof err);
    if (!fl)
        return cv_kerr(k, "%s", err);
    bool onesided = cv_attr_i(k->m, k->node, "onesided", 1) != 0;
    bool cplx = x->dims[2] == 2;
    if (onesided && cplx)
        return cv_kerr(k, "attribute 'onesided' is 1 but input 0 'signal' is complex; onesided needs a real signal");
    int64_t B = x->dims[0], L = x->dims[1];
    if (L < fl)
        return cv_kerr(k, "input 0 'signal' has %lld samples, fewer than the frame length %lld", (long long)L,
                       (long long)fl);
    int64_t frames = (L - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl;
    int64_t od[4] = {B, frames, bins, 2};
    fft_work fw;
    carve_status s = fft_begin(k, &fw, x, 4, od, (size_t)fl, true);
    if (s)
        return s;
    double *re = fw.re, *im = fw.im, *w = fw.w;
    for (int64_t i = 0; i < fl; i++)
        w[i] = window ? getd(window, (size_t)i) : 1.0;
    size_t ci = (size_t)x->dims[2];
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t j = 0; j < fl; j++) {
                size_t e = ((size_t)b * (size_t)L + (size_t)(f * step + j)) * ci;
                re[j] = getd(x, e) * w[j];
                im[j] = cplx ? getd(x, e + 1) * w[j] : 0;
            }
            transform(&fw.p, re, im, -1);
            put_bins(fw.y, ((size_t)b * (size_t)frames + (size_t)f) * (size_t)bins * 2, 2, re, im, (size_t)bins,
                     1.0);
        }
    return fft_end(&fw, out);
}

carve_status i_stft(cv_ictx *c)
{
    const cv_node *n = &c->m->nodes[c->node];
    const cv_type *t = cv_infer_in(c, 0);
    carve_dtype dt = t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
    carve_dim d[4] = {{-1, NULL}, {-1, NULL}, {-1, NULL}, {2, NULL}};
    if (t && t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 && t->rank != 3)
        return cv_ierr(c, "input 0 'signal' has rank %d, expected 3", t->rank);
    bool have_t = t && t->kind == CARVE_TYPE_TENSOR && t->rank == 3;
    if (have_t)
        d[0] = t->dims[0];
    /* frame length: input 3's value or the window's length */
    int64_t fl = -1, step = -1, v;
    const cv_val *flv = n->n_in > 3 && n->in[3] != CARVE_NONE ? c->const_input(c, 3) : NULL;
    if (flv && int_scalar(flv, &v))
        fl = v;
    const cv_type *wt = cv_infer_in(c, 2);
    if (fl < 0 && wt && wt->kind == CARVE_TYPE_TENSOR && wt->rank == 1)
        fl = wt->dims[0].value;
    const cv_val *sv = c->const_input(c, 1);
    if (sv && int_scalar(sv, &v) && v >= 1)
        step = v;
    bool onesided = cv_attr_i(c->m, c->node, "onesided", 1) != 0;
    if (fl >= 1) {
        d[2] = (carve_dim){onesided ? fl / 2 + 1 : fl, NULL};
        if (step >= 1 && have_t && t->dims[1].value >= fl)
            d[1] = (carve_dim){(t->dims[1].value - fl) / step + 1, NULL};
    }
    return cv_infer_set(c, 0, dt, 4, d);
}

/* ================================================================ MelWeightMatrix */

carve_status k_melweightmatrix(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    int64_t nmel, dftlen, rate;
    if (!int_scalar(in[0], &nmel))
        return cv_kerr(k, "input 0 'num_mel_bins' must be an int32 or int64 scalar");
    if (!int_scalar(in[1], &dftlen))
        return cv_kerr(k, "input 1 'dft_length' must be an int32 or int64 scalar");
    if (!int_scalar(in[2], &rate))
        return cv_kerr(k, "input 2 'sample_rate' must be an int32 or int64 scalar");
    if (in[3]->nelem != 1 || !cv_dtype_is_float(in[3]->dtype) || in[4]->nelem != 1 || !cv_dtype_is_float(in[4]->dtype))
        return cv_kerr(k, "inputs 3 'lower_edge_hertz' and 4 'upper_edge_hertz' must be float scalars");
    double lo = cv_val_get_f64(in[3], 0), hi = cv_val_get_f64(in[4], 0);
    if (nmel < 1)
        return cv_kerr(k, "input 0 'num_mel_bins' is %lld, expected >= 1", (long long)nmel);
    if (dftlen < 1)
        return cv_kerr(k, "input 1 'dft_length' is %lld, expected >= 1", (long long)dftlen);
    if (rate < 1)
        return cv_kerr(k, "input 2 'sample_rate' is %lld, expected >= 1", (long long)rate);
    if (!(lo >= 0) || !(hi >= lo) || isinf(hi))
        return cv_kerr(k, "'lower_edge_hertz' (%g) and 'upper_edge_hertz' (%g) must satisfy 0 <= lower <= upper", lo, hi);
    int64_t dt = cv_attr_i(k->m, k->node, "output_datatype", CARVE_FLOAT);
    if (!out_dtype_ok(dt))
        return cv_kerr(k, "attribute 'output_datatype' is %lld, not a numeric type this op produces", (long long)dt);
    int64_t nbins = dftlen / 2 + 1;
    int64_t od[2] = {nbins, nmel};
    cv_val *y = cv_val_new((carve_dtype)dt, 2, od);
    if (!y)
        return cv_knomem(k);
    /* y exists, so nmel is bounded and nmel + 2 cannot overflow */
    int64_t *fb = cv_malloc((size_t)(nmel + 2) * sizeof *fb);
    if (!fb) {
        cv_val_unref(y);
        return cv_knomem(k);
    }
    /* as the spec's reference: nmel + 2 points, the step over nmel + 2 */
    double lmel = 2595 * log10(1 + lo / 700), hmel = 2595 * log10(1 + hi / 700);
    double step = (hmel - lmel) / (double)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700 * (pow(10, (lmel + step * (double)i) / 2595) - 1);
        double b = floor((double)(dftlen + 1) * hz / (double)rate);
        fb[i] = b < 0 ? 0 : b > (double)nbins + 1 ? nbins + 1 : (int64_t)b;
    }
    /* bins past the spectrum (upper edge above Nyquist) are dropped */
    for (int64_t i = 0; i < nmel; i++) {
        int64_t l = fb[i], ctr = fb[i + 1], h = fb[i + 2];
        if (ctr - l == 0) {
            if (ctr < nbins)
                cv_val_set_f64(y, (size_t)(ctr * nmel + i), 1);
        } else {
            for (int64_t j = l; j <= ctr && j < nbins; j++)
                cv_val_set_f64(y, (size_t)(j * nmel + i), (double)(j - l) / (double)(ctr - l));
        }
        if (h - ctr > 0)
            for (int64_t j = ctr; j < h && j < nbins; j++)
                cv_val_set_f64(y, (size_t)(j * nmel + i), (double)(h - j) / (double)(h - ctr));
    }
    cv_free(fb);
    out[0] = y;
    return CARVE_OK;
}

carve_status i_melweightmatrix(cv_ictx *c)
{
    int64_t dt = cv_attr_i(c->m, c->node, "output_datatype", CARVE_FLOAT);
    carve_dim d[2] = {{-1, NULL}, {-1, NULL}};
    int64_t v;
    const cv_val *a = c->const_input(c, 0), *b = c->const_input(c, 1);
    if (a && int_scalar(a, &v) && v >= 1)
        d[1].value = v;
    if (b && int_scalar(b, &v) && v >= 1)
        d[0].value = v / 2 + 1;
    return cv_infer_set(c, 0, out_dtype_ok(dt) ? (carve_dtype)dt : CARVE_UNDEFINED, 2, d);
}

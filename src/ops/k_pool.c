/* k_pool.c: pooling. MaxPool (with Indices), AveragePool, LpPool, the
 * global pools and MaxUnpool, with their shape inference. The window
 * geometry (kernel, strides, dilations, pads, auto_pad, ceil_mode) is the
 * convolutions' (k_conv.h). Pools compute in float32 or double;
 * float16/bfloat16 go through float32. */
#include "k_conv.h"

#include <math.h>
#include <string.h>

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
    size_t Pin = win_prod(n, w->in), P = win_prod(n, w->out), ntab = 0;
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
            e->tlo = win_cdiv(-e->start, d), e->thi = win_fdiv(in - 1 - e->start, d) + 1;
            e->tlo = e->tlo < 0 ? 0 : e->tlo, e->thi = e->thi > k ? k : e->thi;
            if (e->thi < e->tlo)
                e->thi = e->tlo;
            int64_t plo = win_cdiv(-w->pb[j] - e->start, d), phi = win_fdiv(in + w->pe[j] - 1 - e->start, d) + 1;
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
                       cv_shape_str(sx, sizeof sx, x->rank, x->dims), x->rank);
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
    if (!conv_is_float(x->dtype))
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
    return in < 0 || !win_span_ok(in, w->s[i]) ? -1 : (in - 1) * w->s[i] + w->k[i] - w->pb[i] - w->pe[i];
}

carve_status k_maxunpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const cv_val *x = in[0], *ix = in[1], *os = n_in > 2 ? in[2] : NULL;
    char sx[256], si[256], err[512];
    if (!conv_is_float(x->dtype))
        return cv_kerr(k, "input 0 'X' is %s, expected a float type", carve_dtype_name(x->dtype));
    if (x->rank < 3)
        return cv_kerr(k, "input 0 'X' has rank %d, expected at least 3 (N, C, spatial...)", x->rank);
    if (ix->dtype != CARVE_INT64 || ix->rank != x->rank || memcmp(ix->dims, x->dims, (size_t)x->rank * sizeof *x->dims))
        return cv_kerr(k, "input 1 'I' (%s %s) must be int64 with the shape of input 0 'X' %s", carve_dtype_name(ix->dtype),
                       cv_shape_str(si, sizeof si, ix->rank, ix->dims), cv_shape_str(sx, sizeof sx, x->rank, x->dims));
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

carve_status i_pool(cv_ictx *c)
{
    const cv_type *x = nn_tensor_in(c, 0);
    carve_dtype dt = nn_dtype_in(c, 0);
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
        d[2 + i] = nn_known(w.out[i]);
    }
    s = cv_infer_set(c, 0, dt, x->rank, d);
    return s ? s : cv_infer_set(c, 1, CARVE_INT64, x->rank, d);
}

/* Global pooling's dims: N, C, then 1 for each spatial axis. */
static carve_status globalpool_dims(cv_ictx *c, const cv_type *x, int *rank, carve_dim *d)
{
    if (x->rank < 2)
        return cv_ierr(c, "input 0 'X' has rank %d, expected at least 2 (N, C, spatial...)", x->rank);
    for (int i = 0; i < *rank; i++)
        d[i] = i < 2 ? x->dims[i] : nn_known(1);
    return CARVE_OK;
}

carve_status i_globalpool(cv_ictx *c) { return cv_infer_dims(c, globalpool_dims); }

carve_status i_maxunpool(cv_ictx *c)
{
    const cv_type *x = nn_tensor_in(c, 0);
    carve_dtype dt = nn_dtype_in(c, 0);
    const cv_val *os = c->const_input(c, 2);
    if (os && os->rank == 1 && os->nelem <= CARVE_MAX_RANK && cv_dtype_is_int(os->dtype)) {
        if (x && (size_t)x->rank != os->nelem)
            return cv_ierr(c, "input 2 'output_shape' has %zu values but input 0 'X' has rank %d", os->nelem, x->rank);
        carve_dim d[CARVE_MAX_RANK];
        for (size_t i = 0; i < os->nelem; i++)
            d[i] = nn_known(cv_val_get_i64(os, i));
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
        d[2 + i] = nn_known(v < 0 ? -1 : v);
    }
    return cv_infer_set(c, 0, dt, x->rank, d);
}

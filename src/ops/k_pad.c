/* k_pad.c: the layout ops that make more elements than they read: Expand,
 * Tile, Pad. Like k_layout.c's they move bytes (any dtype, strings as
 * pointers copied at the end, 4-bit types unpacked first) and copy
 * contiguous runs whole; repeats are filled by doubling (sh_fill). */
#include "k_shape.h"

#include <string.h>

/* ================================================================ Expand */

carve_status k_expand(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_expand, in, n_in, out, n_out);
    cv_val *x = in[0];
    int64_t shape[CARVE_MAX_RANK];
    size_t n;
    carve_status s = sh_ints(k, in[1], "input 1 'shape'", shape, CARVE_MAX_RANK, &n);
    if (s)
        return s;
    int r = x->rank > (int)n ? x->rank : (int)n;
    int64_t dims[CARVE_MAX_RANK], st[CARVE_MAX_RANK], xst[CARVE_MAX_RANK];
    sh_strides(x->rank, x->dims, xst);
    for (int i = 0; i < r; i++) {
        int xi = i - (r - x->rank), si = i - (r - (int)n);
        int64_t a = xi >= 0 ? x->dims[xi] : 1, b = si >= 0 ? shape[si] : 1;
        if (b < 0) {
            char sb[300];
            return cv_kerr(k, "input 1 'shape' %s has a negative dim", sh_dims_str(sb, sizeof sb, (int)n, shape));
        }
        if (a != b && a != 1 && b != 1) {
            char sa[300], sb[300];
            return cv_kerr(k, "input of shape %s does not broadcast to %s (dim %d: %lld against %lld)",
                           sh_dims_str(sa, sizeof sa, x->rank, x->dims), sh_dims_str(sb, sizeof sb, (int)n, shape), i,
                           (long long)a, (long long)b);
        }
        dims[i] = a == 1 ? b : a;
        st[i] = xi >= 0 && a != 1 ? xst[xi] : 0;
    }
    if (r == x->rank && !memcmp(dims, x->dims, (size_t)r * sizeof *dims)) {
        out[0] = cv_val_ref(x);
        return CARVE_OK;
    }
    return sh_strided_out(k, x, r, dims, st, 0, out);
}

carve_status i_expand(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    int64_t shape[CARVE_MAX_RANK];
    size_t n;
    if (!sh_const_ints(c, 1, shape, CARVE_MAX_RANK, &n)) {
        int64_t len = sh_len1(c, 1);
        if (!x || x->rank < 0 || len < 0 || len > CARVE_MAX_RANK)
            return cv_infer_set(c, 0, dt, -1, NULL);
        return cv_infer_set(c, 0, dt, x->rank > (int)len ? x->rank : (int)len, NULL);
    }
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int r = x->rank > (int)n ? x->rank : (int)n;
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int xi = i - (r - x->rank), si = i - (r - (int)n);
        carve_dim a = xi >= 0 ? x->dims[xi] : sh_dk(1);
        int64_t b = si >= 0 ? shape[si] : 1;
        if (b < 0)
            return cv_ierr(c, "input 1 'shape' has a negative dim %lld", (long long)b);
        if (b == 1)
            d[i] = a;
        else if (a.value == 1 || a.value < 0)
            d[i] = sh_dk(b); /* a symbolic dim is 1 or b, or the run fails */
        else if (a.value == b)
            d[i] = a;
        else
            return cv_ierr(c, "input dim %d of size %lld does not broadcast to %lld", xi, (long long)a.value,
                           (long long)b);
    }
    return cv_infer_set(c, 0, dt, r, d);
}

/* ================================================================ Tile */

/* repeats: Tile-6 input 1; Tile-1 inputs tiles (scalar) and axis (scalar). */
static carve_status tile_repeats(cv_kctx *k, cv_val **in, uint32_t n_in, int rank, int64_t *rep)
{
    if (k->opset < 6) {
        int64_t tiles, ax;
        carve_status s;
        if ((s = sh_scalar_i64(k, in[1], "input 1 'tiles'", &tiles)) ||
            (s = sh_scalar_i64(k, in[2], "input 2 'axis'", &ax)))
            return s;
        int a = sh_axis(ax, rank);
        if (a < 0)
            return cv_kerr(k, "input 2 'axis' %lld is out of range for rank %d", (long long)ax, rank);
        for (int i = 0; i < rank; i++)
            rep[i] = i == a ? tiles : 1;
    } else {
        size_t n;
        carve_status s = sh_ints(k, in[1], "input 1 'repeats'", rep, CARVE_MAX_RANK, &n);
        if (s)
            return s;
        if (n != (size_t)rank)
            return cv_kerr(k, "input 1 'repeats' has %zu values but the input has rank %d", n, rank);
    }
    for (int i = 0; i < rank; i++)
        if (rep[i] < 0)
            return cv_kerr(k, "repeat count %lld on axis %d is negative", (long long)rep[i], i);
    return CARVE_OK;
}

carve_status k_tile(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, 1))
        return sh_unpacked(k, k_tile, in, n_in, out, n_out);
    cv_val *x = in[0];
    int r = x->rank;
    int64_t rep[CARVE_MAX_RANK], dims[CARVE_MAX_RANK];
    carve_status s = tile_repeats(k, in, n_in, r, rep);
    if (s)
        return s;
    for (int i = 0; i < r; i++) {
        if (rep[i] && x->dims[i] > INT64_MAX / rep[i])
            return cv_kerr(k, "axis %d of size %lld repeated %lld times overflows", i, (long long)x->dims[i],
                           (long long)rep[i]);
        dims[i] = x->dims[i] * rep[i];
    }
    cv_val *v = cv_val_new(x->dtype, r, dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype);
    if (v->nelem && r == 0) {
        memcpy(v->data, x->data, es);
    } else if (v->nelem) {
        /* 1. every input row goes to its place in the first tile, repeated
         *    along the last axis; 2. for each axis from the inner ones out,
         *    the block of the first tile is copied rep-1 times after itself. */
        int64_t ost[CARVE_MAX_RANK];
        sh_strides(r, dims, ost);
        char *dst = v->data;
        const char *src = x->data;
        size_t rowb = (size_t)x->dims[r - 1] * es, rows = x->nelem / (size_t)x->dims[r - 1];
        int64_t idx[CARVE_MAX_RANK] = {0};
        for (size_t q = 0; q < rows; q++) {
            size_t off = 0;
            for (int i = 0; i < r - 1; i++)
                off += (size_t)idx[i] * (size_t)ost[i];
            char *o = dst + off * es;
            memcpy(o, src + q * rowb, rowb);
            sh_fill(o, o, (size_t)rep[r - 1], rowb);
            for (int i = r - 2; i >= 0; i--) {
                if (++idx[i] < x->dims[i])
                    break;
                idx[i] = 0;
            }
        }
        for (int a = r - 2; a >= 0; a--) {
            if (rep[a] == 1)
                continue;
            size_t blk = (size_t)x->dims[a] * (size_t)ost[a] * es;
            size_t pre = sh_span(x->dims, 0, a);
            int64_t j[CARVE_MAX_RANK] = {0};
            for (size_t q = 0; q < pre; q++) {
                size_t off = 0;
                for (int i = 0; i < a; i++)
                    off += (size_t)j[i] * (size_t)ost[i];
                sh_fill(dst + off * es, dst + off * es, (size_t)rep[a], blk);
                for (int i = a - 1; i >= 0; i--) {
                    if (++j[i] < x->dims[i])
                        break;
                    j[i] = 0;
                }
            }
        }
    }
    return sh_finish(k, v, &out[0]);
}

/* Tile's dims: each axis times its repeat count (known or not). */
static carve_status tile_dims(cv_ictx *c, const cv_type *x, int *rank, carve_dim *d)
{
    int r = *rank;
    int64_t rep[CARVE_MAX_RANK];
    size_t n;
    bool known;
    if (c->opset < 6) {
        int64_t t[1], a[1];
        size_t n1, n2;
        known = sh_const_ints(c, 1, t, 1, &n1) && sh_const_ints(c, 2, a, 1, &n2) && n1 == 1 && n2 == 1;
        int ax = known ? sh_axis(a[0], r) : -1;
        if (known && ax < 0)
            return cv_ierr(c, "input 2 'axis' %lld is out of range for rank %d", (long long)a[0], r);
        for (int i = 0; known && i < r; i++)
            rep[i] = i == ax ? t[0] : 1;
        n = (size_t)r;
    } else {
        known = sh_const_ints(c, 1, rep, CARVE_MAX_RANK, &n);
        if (known && n != (size_t)r)
            return cv_ierr(c, "input 1 'repeats' has %zu values but the input has rank %d", n, r);
    }
    for (int i = 0; i < r; i++) {
        if (!known) {
            d[i] = x->dims[i].value == 0 ? sh_dk(0) : sh_du();
            continue;
        }
        if (rep[i] < 0)
            return cv_ierr(c, "repeat count %lld on axis %d is negative", (long long)rep[i], i);
        if (rep[i] == 1)
            d[i] = x->dims[i];
        else if (rep[i] == 0 || x->dims[i].value == 0)
            d[i] = sh_dk(0);
        else if (x->dims[i].value > 0 && x->dims[i].value <= INT64_MAX / rep[i])
            d[i] = sh_dk(x->dims[i].value * rep[i]);
        else
            d[i] = sh_du();
    }
    return CARVE_OK;
}

carve_status i_tile(cv_ictx *c) { return cv_infer_dims(c, tile_dims); }

/* ================================================================ Pad */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

static int pad_mode(const char *s)
{
    if (!strcmp(s, "constant"))
        return PAD_CONSTANT;
    if (!strcmp(s, "reflect"))
        return PAD_REFLECT;
    if (!strcmp(s, "edge"))
        return PAD_EDGE;
    if (!strcmp(s, "wrap"))
        return PAD_WRAP;
    return -1;
}

/* Where output coordinate x (relative to the kept input, may be outside
 * [0, n)) reads from; n >= 1. */
static int64_t pad_map(int64_t x, int64_t n, int mode)
{
    if (x >= 0 && x < n)
        return x;
    if (mode == PAD_EDGE)
        return x < 0 ? 0 : n - 1;
    if (mode == PAD_WRAP) {
        int64_t q = x % n;
        return q < 0 ? q + n : q;
    }
    if (n == 1)
        return 0;
    int64_t p = 2 * (n - 1), q = x % p;
    if (q < 0)
        q += p;
    return q < n ? q : p - q;
}

/* Pads (begin, end per axis of the input) from the attribute or the inputs,
 * with the axes input of opset 18. */
static carve_status pad_amounts(cv_kctx *k, cv_val **in, uint32_t n_in, int rank, int64_t *beg, int64_t *end)
{
    int64_t pads[2 * CARVE_MAX_RANK], axes[CARVE_MAX_RANK];
    size_t n, na = (size_t)rank;
    carve_status s;
    if (k->opset < 11) {
        const int64_t *v;
        const char *name = k->opset < 2 ? "paddings" : "pads";
        int cnt = cv_attr_ints(k->m, k->node, name, &v);
        if (cnt < 0)
            return cv_kerr(k, "attribute '%s' is missing", name);
        if (cnt > 2 * CARVE_MAX_RANK)
            return cv_kerr(k, "attribute '%s' has %d values for an input of rank %d", name, cnt, rank);
        n = (size_t)cnt;
        memcpy(pads, v, n * sizeof *v);
    } else if ((s = sh_ints(k, in[1], "input 1 'pads'", pads, 2 * CARVE_MAX_RANK, &n))) {
        return s;
    }
    if (k->opset >= 18 && n_in > 3 && in[3]) {
        if ((s = sh_ints(k, in[3], "input 3 'axes'", axes, CARVE_MAX_RANK, &na)) ||
            (s = sh_axes(k, axes, na, rank, "input 3 'axes'")))
            return s;
    } else {
        for (int i = 0; i < rank; i++)
            axes[i] = i;
    }
    if (n != 2 * na)
        return cv_kerr(k, "pads has %zu values; it needs 2 per %s (%zu)", n,
                       na == (size_t)rank ? "input axis" : "axis in 'axes'", 2 * na);
    for (int i = 0; i < rank; i++)
        beg[i] = end[i] = 0;
    for (size_t i = 0; i < na; i++) {
        beg[axes[i]] = pads[i];
        end[axes[i]] = pads[i + na];
    }
    return CARVE_OK;
}

carve_status k_pad(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_pad, in, n_in, out, n_out);
    cv_val *x = in[0];
    int r = x->rank;
    const char *ms = cv_attr_s(k->m, k->node, "mode", "constant");
    int mode = pad_mode(ms);
    if (mode < 0)
        return cv_kerr(k, "mode '%s' is not one of constant, reflect, edge, wrap", ms);
    int64_t beg[CARVE_MAX_RANK], end[CARVE_MAX_RANK];
    carve_status s = pad_amounts(k, in, n_in, r, beg, end);
    if (s)
        return s;
    /* negative pads crop first; the kept input is [lo, lo + keep) */
    int64_t lo[CARVE_MAX_RANK], keep[CARVE_MAX_RANK], pb[CARVE_MAX_RANK], dims[CARVE_MAX_RANK];
    bool any = false;
    for (int i = 0; i < r; i++) {
        int64_t d = x->dims[i], cb = beg[i] < 0 ? beg[i] : 0, ce = end[i] < 0 ? end[i] : 0;
        if (beg[i] > INT32_MAX * (int64_t)1024 || end[i] > INT32_MAX * (int64_t)1024 || -cb > d || -ce > d ||
            d + cb + ce < 0)
            return cv_kerr(k, "pads %lld, %lld on axis %d of size %lld leave no valid shape", (long long)beg[i],
                           (long long)end[i], i, (long long)d);
        lo[i] = -cb;
        keep[i] = d + cb + ce;
        pb[i] = beg[i] > 0 ? beg[i] : 0;
        dims[i] = keep[i] + pb[i] + (end[i] > 0 ? end[i] : 0);
        if (mode != PAD_CONSTANT && keep[i] == 0 && dims[i] > 0)
            return cv_kerr(k, "axis %d has nothing to %s-pad from", i, ms);
        any = any || beg[i] || end[i];
    }
    if (!any) {
        out[0] = cv_val_ref(x);
        return CARVE_OK;
    }
    /* the padding value, as one element of x's dtype */
    size_t es = sh_esize(x->dtype);
    unsigned char fill[16] = {0};
    if (mode == PAD_CONSTANT) {
        if (k->opset < 11) {
            if (x->dtype == CARVE_STRING)
                return cv_kerr(k, "a string input cannot be padded with a float value");
            cv_val tmp = {.dtype = x->dtype, .nelem = 1, .data = fill};
            cv_val_set_f64(&tmp, 0, cv_attr_f(k->m, k->node, "value", 0));
        } else if (n_in > 2 && in[2] && in[2]->nelem) {
            if (in[2]->dtype != x->dtype)
                return cv_kerr(k, "input 2 'constant_value' is %s but the data is %s", carve_dtype_name(in[2]->dtype),
                               carve_dtype_name(x->dtype));
            memcpy(fill, in[2]->data, es);
        }
    }
    cv_val *v = cv_val_new(x->dtype, r, dims);
    if (!v)
        return cv_knomem(k);
    if (v->nelem) {
        int64_t xst[CARVE_MAX_RANK];
        sh_strides(r, x->dims, xst);
        int64_t ow = dims[r - 1], kw = keep[r - 1], pw = pb[r - 1];
        size_t rows = v->nelem / (size_t)ow;
        int64_t idx[CARVE_MAX_RANK] = {0};
        char *dst = v->data;
        const char *src = x->data;
        for (size_t q = 0; q < rows; q++, dst += (size_t)ow * es) {
            /* the input row this output row reads, or none (constant) */
            int64_t off = 0;
            bool inside = true;
            for (int i = 0; i < r - 1; i++) {
                int64_t c = idx[i] - pb[i];
                if (c < 0 || c >= keep[i]) {
                    if (mode == PAD_CONSTANT) {
                        inside = false;
                        break;
                    }
                    c = pad_map(c, keep[i], mode);
                }
                off += (lo[i] + c) * xst[i];
            }
            for (int i = r - 2; i >= 0; i--) {
                if (++idx[i] < dims[i])
                    break;
                idx[i] = 0;
            }
            if (!inside) {
                sh_fill(dst, fill, (size_t)ow, es);
                continue;
            }
            const char *row = src + (size_t)(off + lo[r - 1]) * es;
            if (kw)
                memcpy(dst + (size_t)pw * es, row, (size_t)kw * es);
            if (mode == PAD_CONSTANT) {
                sh_fill(dst, fill, (size_t)pw, es);
                sh_fill(dst + (size_t)(pw + kw) * es, fill, (size_t)(ow - pw - kw), es);
            } else {
                for (int64_t j = 0; j < pw; j++)
                    memcpy(dst + (size_t)j * es, row + (size_t)pad_map(j - pw, kw, mode) * es, es);
                for (int64_t j = pw + kw; j < ow; j++)
                    memcpy(dst + (size_t)j * es, row + (size_t)pad_map(j - pw, kw, mode) * es, es);
            }
        }
    }
    return sh_finish(k, v, &out[0]);
}

/* Pad's dims: each padded axis grows by its two pads (known or not). */
static carve_status pad_dims(cv_ictx *c, const cv_type *x, int *rank, carve_dim *d)
{
    int r = *rank;
    int64_t pads[2 * CARVE_MAX_RANK], axes[CARVE_MAX_RANK];
    size_t n = 0, na = (size_t)r;
    bool known;
    if (c->opset < 11) {
        const int64_t *v;
        int cnt = cv_attr_ints(c->m, c->node, c->opset < 2 ? "paddings" : "pads", &v);
        known = cnt >= 0 && cnt <= 2 * CARVE_MAX_RANK;
        if (known) {
            n = (size_t)cnt;
            memcpy(pads, v, n * sizeof *v);
        }
    } else {
        known = sh_const_ints(c, 1, pads, 2 * CARVE_MAX_RANK, &n);
    }
    if (c->opset >= 18 && cv_infer_in(c, 3))
        known = known && sh_const_ints(c, 3, axes, CARVE_MAX_RANK, &na);
    else
        for (int i = 0; i < r; i++)
            axes[i] = i;
    if (!known) {
        for (int i = 0; i < r; i++)
            d[i] = sh_du();
        return CARVE_OK;
    }
    if (n != 2 * na)
        return cv_ierr(c, "pads has %zu values; it needs 2 per padded axis (%zu)", n, 2 * na);
    memcpy(d, x->dims, (size_t)r * sizeof *d);
    for (size_t i = 0; i < na; i++) {
        int a = sh_axis(axes[i], r);
        if (a < 0)
            return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)axes[i], r);
        int64_t b = pads[i], e = pads[i + na];
        if (b > INT32_MAX * (int64_t)1024 || e > INT32_MAX * (int64_t)1024 || b < -INT32_MAX * (int64_t)1024 ||
            e < -INT32_MAX * (int64_t)1024)
            return cv_ierr(c, "pads %lld, %lld on axis %d are out of range", (long long)b, (long long)e, a);
        if (x->dims[a].value >= 0) {
            int64_t o = x->dims[a].value + b + e;
            if (o < 0 || -b > x->dims[a].value || -e > x->dims[a].value)
                return cv_ierr(c, "pads %lld, %lld on axis %d of size %lld leave no valid shape", (long long)b,
                               (long long)e, a, (long long)x->dims[a].value);
            d[a] = sh_dk(o);
        } else if (b + e != 0) {
            d[a] = sh_du();
        }
    }
    return CARVE_OK;
}

carve_status i_pad(cv_ictx *c) { return cv_infer_dims(c, pad_dims); }

/* k_reshape.c: the ops that rename a shape without moving an element:
 * Reshape, Flatten, Squeeze, Unsqueeze, and their inference on symbolic dims. */
#include "k_shape.h"

#include <stdio.h>
#include <string.h>

/* "[N,3,?]" for errors on symbolic shapes. */
static const char *sym_str(char *buf, size_t sz, int rank, const carve_dim *d)
{
    size_t k = (size_t)snprintf(buf, sz, "[");
    for (int i = 0; i < rank && k < sz; i++) {
        if (d[i].value >= 0)
            k += (size_t)snprintf(buf + k, sz - k, "%s%lld", i ? "," : "", (long long)d[i].value);
        else
            k += (size_t)snprintf(buf + k, sz - k, "%s%s", i ? "," : "", d[i].param ? d[i].param : "?");
    }
    if (k < sz)
        snprintf(buf + k, sz - k, "]");
    return buf;
}

/* ================================================================ Reshape, Flatten, Squeeze, Unsqueeze */

/* Output of a shape change: the input itself when the dims do not change,
 * else a copy with new dims (values do not share buffers). */
static carve_status renamed(cv_kctx *k, cv_val *x, int rank, const int64_t *dims, cv_val **out)
{
    if (rank == x->rank && (!rank || !memcmp(dims, x->dims, (size_t)rank * sizeof *dims))) {
        out[0] = cv_val_ref(x);
        return CARVE_OK;
    }
    out[0] = cv_val_reshaped(x, rank, dims);
    return out[0] ? CARVE_OK : cv_knomem(k);
}

static carve_status reshape_error(cv_kctx *k, const cv_val *x, const int64_t *shape, size_t n, const char *why)
{
    char a[300], b[300];
    sh_dims_str(a, sizeof a, x->rank, x->dims);
    sh_dims_str(b, sizeof b, (int)n, shape);
    return cv_kerr(k, "cannot reshape input of shape %s (%zu elements) to shape %s: %s", a, x->nelem, b, why);
}

carve_status k_reshape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    int64_t shape[CARVE_MAX_RANK];
    size_t n = 0;
    if (k->opset < 5) {
        const int64_t *v;
        int cnt = cv_attr_ints(k->m, k->node, "shape", &v);
        if (cnt < 0)
            return cv_kerr(k, "attribute 'shape' is missing");
        if (cnt > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'shape' has %d values, carve's rank limit is %d", cnt, CARVE_MAX_RANK);
        n = (size_t)cnt;
        if (n)
            memcpy(shape, v, n * sizeof *v);
    } else {
        carve_status s = sh_ints(k, in[1], "input 1 'shape'", shape, CARVE_MAX_RANK, &n);
        if (s)
            return s;
    }
    bool allowzero = k->opset >= 14 && cv_attr_i(k->m, k->node, "allowzero", 0) != 0;
    int64_t dims[CARVE_MAX_RANK];
    int neg = -1;
    bool has_zero = false;
    uint64_t p = 1;
    bool overflow = false;
    for (size_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v == 0 && !allowzero) {
            if ((int)i >= x->rank)
                return reshape_error(k, x, shape, n, "a 0 copies the input dim at its position, and the input has no "
                                                     "dim there");
            v = x->dims[i];
        } else if (v == -1) {
            if (neg >= 0)
                return reshape_error(k, x, shape, n, "more than one -1");
            neg = (int)i;
            continue;
        } else if (v < -1) {
            return reshape_error(k, x, shape, n, "a dim below -1");
        }
        if (shape[i] == 0)
            has_zero = true;
        dims[i] = v;
        if (v && p > (uint64_t)INT64_MAX / (uint64_t)v)
            overflow = true;
        p *= (uint64_t)v;
    }
    if (neg >= 0) {
        if (allowzero && has_zero)
            return reshape_error(k, x, shape, n, "with allowzero=1 a 0 cannot stand beside a -1");
        if (overflow || p == 0)
            return reshape_error(k, x, shape, n, "the -1 cannot be inferred");
        if (x->nelem % p)
            return reshape_error(k, x, shape, n, "the element count is not a multiple of the known dims");
        dims[neg] = (int64_t)(x->nelem / p);
    } else if (overflow || p != x->nelem) {
        char why[64];
        snprintf(why, sizeof why, "%llu elements", overflow ? 0ULL : (unsigned long long)p);
        return reshape_error(k, x, shape, n, overflow ? "the element count overflows" : why);
    }
    return renamed(k, x, (int)n, dims, out);
}

/* For a Reshape whose -1 is to be inferred or whose counts are checked:
 * cancels equal params on both sides, then compares known products. */
carve_status i_reshape(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    int64_t shape[CARVE_MAX_RANK];
    size_t n = 0;
    bool known;
    if (c->opset < 5) {
        const int64_t *v;
        int cnt = cv_attr_ints(c->m, c->node, "shape", &v);
        known = cnt >= 0 && cnt <= CARVE_MAX_RANK;
        if (known) {
            n = (size_t)cnt;
            if (n)
                memcpy(shape, v, n * sizeof *v);
        }
    } else {
        known = sh_const_ints(c, 1, shape, CARVE_MAX_RANK, &n);
    }
    if (!known) {
        int64_t len = c->opset < 5 ? -1 : sh_len1(c, 1);
        return cv_infer_set(c, 0, dt, len >= 0 && len <= CARVE_MAX_RANK ? (int)len : -1, NULL);
    }
    bool allowzero = c->opset >= 14 && cv_attr_i(c->m, c->node, "allowzero", 0) != 0;
    int r = x ? x->rank : -1;
    carve_dim out[CARVE_MAX_RANK];
    int neg = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v == 0 && !allowzero) {
            if (r >= 0 && (int)i >= r)
                return cv_ierr(c, "shape[%zu] is 0 (copy the input dim) but the input has rank %d", i, r);
            out[i] = r >= 0 ? x->dims[i] : sh_du();
        } else if (v == -1) {
            if (neg >= 0)
                return cv_ierr(c, "shape has more than one -1");
            neg = (int)i;
            out[i] = sh_du();
        } else if (v < -1) {
            return cv_ierr(c, "shape[%zu] is %lld", i, (long long)v);
        } else {
            out[i] = sh_dk(v);
        }
    }
    if (r >= 0) {
        /* both sides as known product x params; equal params cancel */
        bool used_in[CARVE_MAX_RANK] = {0}, used_out[CARVE_MAX_RANK] = {0};
        for (size_t i = 0; i < n; i++) {
            if ((int)i == neg || out[i].value >= 0 || !out[i].param)
                continue;
            for (int j = 0; j < r; j++)
                if (!used_in[j] && x->dims[j].value < 0 && x->dims[j].param &&
                    !strcmp(x->dims[j].param, out[i].param)) {
                    used_in[j] = used_out[i] = true;
                    break;
                }
        }
        uint64_t pin = 1, pout = 1;
        int open_in = 0, open_out = 0, at = -1;
        bool ovf = false, zero_in = false;
        for (int j = 0; j < r; j++) {
            if (used_in[j])
                continue;
            if (x->dims[j].value < 0) {
                open_in++;
                at = j;
                if (!x->dims[j].param)
                    open_in += 100; /* unknown without a name: nothing to match */
            } else if (x->dims[j].value == 0) {
                zero_in = true;
            } else if (pin > (uint64_t)INT64_MAX / (uint64_t)x->dims[j].value) {
                ovf = true;
            } else {
                pin *= (uint64_t)x->dims[j].value;
            }
        }
        for (size_t i = 0; i < n; i++) {
            if ((int)i == neg || used_out[i])
                continue;
            if (out[i].value < 0)
                open_out++;
            else if (out[i].value && pout > (uint64_t)INT64_MAX / (uint64_t)out[i].value)
                ovf = true;
            else
                pout *= (uint64_t)out[i].value;
        }
        if (zero_in)
            pin = 0;
        if (!ovf && !open_out && neg >= 0) {
            if (!open_in) {
                if (pout == 0) {
                    if (pin != 0)
                        goto mismatch;
                } else if (pin % pout) {
                    goto mismatch;
                } else {
                    out[neg] = sh_dk((int64_t)(pin / pout));
                }
            } else if (open_in == 1 && pin == pout && pout != 0) {
                out[neg] = x->dims[at];
            }
        } else if (!ovf && !open_out && !open_in && neg < 0 && pin != pout) {
            goto mismatch;
        }
    }
    return cv_infer_set(c, 0, dt, (int)n, out);
mismatch:;
    char a[300], b[300];
    return cv_ierr(c, "cannot reshape input of shape %s to shape %s: the element counts differ",
                   sym_str(a, sizeof a, x->rank, x->dims), sh_dims_str(b, sizeof b, (int)n, shape));
}

/* Flatten's axis in [0, rank] (rank: all dims in the first), or -1 with the
 * reason in why (kernel and inference say the same). */
static int flatten_axis(const carve_model *m, carve_node_id n, int rank, char *why, size_t whysz)
{
    int64_t axis = cv_attr_i(m, n, "axis", 1);
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis > rank) {
        snprintf(why, whysz, "axis %lld is out of range for rank %d", (long long)cv_attr_i(m, n, "axis", 1), rank);
        return -1;
    }
    return (int)axis;
}

carve_status k_flatten(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    char why[96];
    int axis = flatten_axis(k->m, k->node, x->rank, why, sizeof why);
    if (axis < 0)
        return cv_kerr(k, "%s", why);
    int64_t dims[2] = {(int64_t)sh_span(x->dims, 0, axis), (int64_t)sh_span(x->dims, axis, x->rank)};
    return renamed(k, x, 2, dims, out);
}

carve_status i_flatten(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, 2, NULL);
    char why[96];
    int axis = flatten_axis(c->m, c->node, x->rank, why, sizeof why);
    if (axis < 0)
        return cv_ierr(c, "%s", why);
    carve_dim d[2] = {sh_dim_prod(x->dims, 0, axis), sh_dim_prod(x->dims, axis, x->rank)};
    return cv_infer_set(c, 0, dt, 2, d);
}

/* Squeeze/Unsqueeze axes: attribute before opset 13, input from 13. */
typedef struct {
    int64_t v[CARVE_MAX_RANK];
    size_t n;
    bool given;    /* false when there are none (Squeeze: all unit dims) */
    int64_t count; /* inference: how many there are, -1 when unknown */
} sq_axes;

/* The attribute form; false when it has more values (*cnt) than carve's
 * rank limit. */
static bool attr_axes(const carve_model *m, carve_node_id node, sq_axes *a, int *cnt)
{
    const int64_t *v;
    *cnt = cv_attr_ints(m, node, "axes", &v);
    if (*cnt < 0)
        return true;
    if (*cnt > CARVE_MAX_RANK)
        return false;
    a->n = (size_t)*cnt;
    if (*cnt)
        memcpy(a->v, v, (size_t)*cnt * sizeof *v);
    a->given = true;
    a->count = *cnt;
    return true;
}

static carve_status kernel_axes(cv_kctx *k, cv_val **in, uint32_t n_in, sq_axes *a)
{
    *a = (sq_axes){.count = -1};
    int cnt;
    if (k->opset < 13 && !attr_axes(k->m, k->node, a, &cnt))
        return cv_kerr(k, "attribute 'axes' has %d values, more than carve's rank limit %d", cnt, CARVE_MAX_RANK);
    if (k->opset < 13)
        return CARVE_OK;
    if (n_in < 2 || !in[1])
        return CARVE_OK;
    a->given = true;
    return sh_ints(k, in[1], "input 1 'axes'", a->v, CARVE_MAX_RANK, &a->n);
}

/* false when the axes are not known (inference). */
static bool infer_axes(cv_ictx *c, sq_axes *a)
{
    *a = (sq_axes){.count = -1};
    int cnt;
    if (c->opset < 13)
        return attr_axes(c->m, c->node, a, &cnt);
    if (!cv_infer_in(c, 1))
        return true;
    a->given = true;
    a->count = sh_len1(c, 1);
    return sh_const_ints(c, 1, a->v, CARVE_MAX_RANK, &a->n);
}

/* Squeeze's kernel once its axes are read (sq_kernel). */
static carve_status squeeze_kernel(cv_kctx *k, cv_val *x, sq_axes *ax, cv_val **out)
{
    bool drop[CARVE_MAX_RANK] = {0};
    if (ax->given && ax->n) {
        /* a repeated axis counts once, as onnxruntime does */
        for (size_t i = 0; i < ax->n; i++) {
            int a = sh_axis(ax->v[i], x->rank);
            if (a < 0)
                return cv_kerr(k, "axes: axis %lld is out of range for rank %d", (long long)ax->v[i], x->rank);
            ax->v[i] = a;
        }
        for (size_t i = 0; i < ax->n; i++) {
            if (x->dims[ax->v[i]] != 1)
                return cv_kerr(k, "axis %lld has size %lld; only size-1 axes can be squeezed", (long long)ax->v[i],
                               (long long)x->dims[ax->v[i]]);
            drop[ax->v[i]] = true;
        }
    } else {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->dims[i] == 1;
    }
    int64_t dims[CARVE_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            dims[r++] = x->dims[i];
    return renamed(k, x, r, dims, out);
}

/* Squeeze's inference once the input's rank is known (sq_infer). */
static carve_status squeeze_infer(cv_ictx *c, const cv_type *x, const sq_axes *ax, bool known)
{
    carve_dtype dt = x->dtype;
    int r = x->rank;
    if (!known)
        return cv_infer_set(c, 0, dt, ax->count >= 0 && ax->count <= r ? r - (int)ax->count : -1, NULL);
    bool drop[CARVE_MAX_RANK] = {0};
    if (ax->given && ax->n) {
        for (size_t i = 0; i < ax->n; i++) {
            int a = sh_axis(ax->v[i], r);
            if (a < 0)
                return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)ax->v[i], r);
            if (x->dims[a].value >= 0 && x->dims[a].value != 1)
                return cv_ierr(c, "axis %d has size %lld; only size-1 axes can be squeezed", a,
                               (long long)x->dims[a].value);
            drop[a] = true;
        }
    } else {
        for (int i = 0; i < r; i++) {
            if (x->dims[i].value < 0)
                return cv_infer_set(c, 0, dt, -1, NULL); /* might be 1 */
            drop[i] = x->dims[i].value == 1;
        }
    }
    carve_dim d[CARVE_MAX_RANK];
    int o = 0;
    for (int i = 0; i < r; i++)
        if (!drop[i])
            d[o++] = x->dims[i];
    return cv_infer_set(c, 0, dt, o, d);
}

/* Unsqueeze's kernel once its axes are read (sq_kernel). */
static carve_status unsqueeze_kernel(cv_kctx *k, cv_val *x, sq_axes *ax, cv_val **out)
{
    carve_status s;
    if (!ax->given)
        return cv_kerr(k, "%s 'axes' is missing", k->opset < 13 ? "attribute" : "input 1");
    if (x->rank + (int)ax->n > CARVE_MAX_RANK)
        return cv_kerr(k, "the output would have rank %d, above carve's limit %d", x->rank + (int)ax->n, CARVE_MAX_RANK);
    int r = x->rank + (int)ax->n;
    if ((s = sh_axes(k, ax->v, ax->n, r, "axes")))
        return s;
    bool ins[CARVE_MAX_RANK] = {0};
    for (size_t i = 0; i < ax->n; i++)
        ins[ax->v[i]] = true;
    int64_t dims[CARVE_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        dims[i] = ins[i] ? 1 : x->dims[j++];
    return renamed(k, x, r, dims, out);
}

/* Unsqueeze's inference once the input's rank is known (sq_infer). */
static carve_status unsqueeze_infer(cv_ictx *c, const cv_type *x, const sq_axes *ax, bool known)
{
    carve_dtype dt = x->dtype;
    if (!known || !ax->given) {
        int64_t r = ax->count >= 0 ? x->rank + ax->count : -1;
        return cv_infer_set(c, 0, dt, r >= 0 && r <= CARVE_MAX_RANK ? (int)r : -1, NULL);
    }
    int r = x->rank + (int)ax->n;
    if (r > CARVE_MAX_RANK)
        return cv_ierr(c, "the output would have rank %d, above carve's limit %d", r, CARVE_MAX_RANK);
    bool ins[CARVE_MAX_RANK] = {0};
    for (size_t i = 0; i < ax->n; i++) {
        int a = sh_axis(ax->v[i], r);
        if (a < 0)
            return cv_ierr(c, "axis %lld is out of range for output rank %d", (long long)ax->v[i], r);
        if (ins[a])
            return cv_ierr(c, "axis %lld is given twice", (long long)ax->v[i]);
        ins[a] = true;
    }
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0, j = 0; i < r; i++)
        d[i] = ins[i] ? sh_dk(1) : x->dims[j++];
    return cv_infer_set(c, 0, dt, r, d);
}

static carve_status sq_kernel(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, bool un)
{
    sq_axes ax;
    carve_status s = kernel_axes(k, in, n_in, &ax);
    if (s)
        return s;
    return un ? unsqueeze_kernel(k, in[0], &ax, out) : squeeze_kernel(k, in[0], &ax, out);
}

carve_status k_squeeze(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    return sq_kernel(k, in, n_in, out, false);
}

carve_status k_unsqueeze(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    return sq_kernel(k, in, n_in, out, true);
}

static carve_status sq_infer(cv_ictx *c, bool un)
{
    const cv_type *x = sh_tin(c, 0);
    sq_axes ax;
    bool known = infer_axes(c, &ax);
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, sh_idtype(c, 0), -1, NULL);
    return un ? unsqueeze_infer(c, x, &ax, known) : squeeze_infer(c, x, &ax, known);
}

carve_status i_squeeze(cv_ictx *c) { return sq_infer(c, false); }
carve_status i_unsqueeze(cv_ictx *c) { return sq_infer(c, true); }

/* k_layout.c: ops that move elements into a new layout: Transpose, Concat,
 * Split, Slice, DepthToSpace, SpaceToDepth, ReverseSequence (Expand, Tile
 * and Pad, which make more elements than they read, are in k_pad.c). All
 * move bytes (any dtype; strings as pointers copied at the end; 4-bit types
 * unpacked first) and copy contiguous runs whole. The decompositions of
 * DepthToSpace and SpaceToDepth are in d_layout.c. */
#include "k_shape.h"

#include <stdio.h>
#include <string.h>

/* ================================================================ Transpose */

static carve_status perm_of(const carve_model *m, carve_node_id n, int rank, int *perm, char *err, size_t errsz)
{
    const int64_t *p;
    int cnt = cv_attr_ints(m, n, "perm", &p);
    if (cnt < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return CARVE_OK;
    }
    if (cnt != rank) {
        snprintf(err, errsz, "attribute 'perm' has %d values but the input has rank %d", cnt, rank);
        return CARVE_ERR_INVALID;
    }
    bool seen[CARVE_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        int a = sh_axis(p[i], rank);
        if (a < 0 || seen[a]) {
            snprintf(err, errsz, "attribute 'perm' is not a permutation of 0..%d (value %lld)", rank - 1,
                     (long long)p[i]);
            return CARVE_ERR_INVALID;
        }
        seen[a] = true;
        perm[i] = a;
    }
    return CARVE_OK;
}

carve_status k_transpose(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_transpose, in, n_in, out, n_out);
    cv_val *x = in[0];
    int perm[CARVE_MAX_RANK];
    char err[200];
    if (perm_of(k->m, k->node, x->rank, perm, err, sizeof err))
        return cv_kerr(k, "%s", err);
    bool same = true;
    for (int i = 0; i < x->rank; i++)
        same = same && perm[i] == i;
    if (same) {
        out[0] = cv_val_ref(x);
        return CARVE_OK;
    }
    int64_t st[CARVE_MAX_RANK], dims[CARVE_MAX_RANK], ost[CARVE_MAX_RANK];
    sh_strides(x->rank, x->dims, st);
    for (int i = 0; i < x->rank; i++) {
        dims[i] = x->dims[perm[i]];
        ost[i] = st[perm[i]];
    }
    return sh_strided_out(k, x, x->rank, dims, ost, 0, out);
}

carve_status i_transpose(cv_ictx *c)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (!x || x->rank < 0) {
        const int64_t *p;
        int cnt = cv_attr_ints(c->m, c->node, "perm", &p);
        return cv_infer_set(c, 0, dt, cnt >= 0 && cnt <= CARVE_MAX_RANK ? cnt : -1, NULL);
    }
    int perm[CARVE_MAX_RANK];
    char err[200];
    if (perm_of(c->m, c->node, x->rank, perm, err, sizeof err))
        return cv_ierr(c, "%s", err);
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        d[i] = x->dims[perm[i]];
    return cv_infer_set(c, 0, dt, x->rank, d);
}

/* ================================================================ Concat */

static int64_t concat_axis_attr(const carve_model *m, carve_node_id n, int64_t opset, bool *present)
{
    const cv_attr *a = cv_node_attr_find(m, n, "axis");
    *present = a && a->kind == CARVE_ATTR_INT;
    if (*present)
        return a->u.i;
    return opset < 4 ? 1 : 0; /* Concat-1 defaulted to 1; later it is required */
}

carve_status k_concat(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_concat, in, n_in, out, n_out);
    cv_val *x = in[0];
    bool present;
    int64_t ax = concat_axis_attr(k->m, k->node, k->opset, &present);
    if (!present && k->opset >= 4)
        return cv_kerr(k, "attribute 'axis' is missing");
    if (x->rank == 0)
        return cv_kerr(k, "input 0 is a scalar; Concat needs rank >= 1");
    int axis = sh_axis(ax, x->rank);
    if (axis < 0)
        return cv_kerr(k, "axis %lld is out of range for rank %d", (long long)ax, x->rank);
    int64_t dims[CARVE_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    dims[axis] = 0;
    for (uint32_t i = 0; i < n_in; i++) {
        const cv_val *y = in[i];
        if (!y)
            return cv_kerr(k, "input %u is missing", i);
        if (y->dtype != x->dtype)
            return cv_kerr(k, "input %u is %s but input 0 is %s", i, carve_dtype_name(y->dtype),
                           carve_dtype_name(x->dtype));
        if (y->rank != x->rank)
            return cv_kerr(k, "input %u has rank %d but input 0 has rank %d", i, y->rank, x->rank);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && y->dims[d] != x->dims[d]) {
                char a[300], b[300];
                return cv_kerr(k, "input %u has shape %s, input 0 has %s: they may differ only on axis %d", i,
                               sh_dims_str(a, sizeof a, y->rank, y->dims), sh_dims_str(b, sizeof b, x->rank, x->dims),
                               axis);
            }
        dims[axis] += y->dims[axis];
    }
    /* outer x (every input's block) covers the output once */
    cv_val *v = cv_val_new_uninit(x->dtype, x->rank, dims);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype), outer = sh_span(dims, 0, axis), inner = sh_span(dims, axis + 1, x->rank) * es;
    char *dst = v->data;
    if (v->nelem)
        for (size_t o = 0; o < outer; o++)
            for (uint32_t i = 0; i < n_in; i++) {
                size_t blk = (size_t)in[i]->dims[axis] * inner;
                if (blk)
                    memcpy(dst, (const char *)in[i]->data + o * blk, blk);
                dst += blk;
            }
    return sh_finish(k, v, &out[0]);
}

carve_status i_concat(cv_ictx *c)
{
    uint32_t n = c->m->nodes[c->node].n_in;
    carve_dtype dt = CARVE_UNDEFINED;
    const cv_type *ref = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const cv_type *t = sh_tin(c, i);
        if (t && !dt)
            dt = t->dtype;
        if (t && t->dtype && dt && t->dtype != dt)
            return cv_ierr(c, "input %u is %s but an earlier input is %s", i, carve_dtype_name(t->dtype),
                           carve_dtype_name(dt));
        if (t && t->rank >= 0) {
            if (ref && ref->rank != t->rank)
                return cv_ierr(c, "input %u has rank %d but an earlier input has rank %d", i, t->rank, ref->rank);
            if (!ref)
                ref = t;
        }
    }
    if (!ref)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int r = ref->rank;
    if (r == 0)
        return cv_ierr(c, "inputs are scalars; Concat needs rank >= 1");
    bool present;
    int64_t ax = concat_axis_attr(c->m, c->node, c->opset, &present);
    int axis = sh_axis(ax, r);
    if (axis < 0)
        return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)ax, r);
    carve_dim d[CARVE_MAX_RANK];
    bool first = true, sum_known = true;
    int64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        const cv_type *t = sh_tin(c, i);
        if (!t || t->rank < 0) {
            sum_known = false;
            continue;
        }
        for (int j = 0; j < r; j++) {
            if (j == axis)
                continue;
            carve_dim a = t->dims[j];
            if (first) {
                d[j] = a;
            } else if (d[j].value >= 0 && a.value >= 0 && d[j].value != a.value) {
                return cv_ierr(c, "input %u has size %lld on axis %d where an earlier input has %lld", i,
                               (long long)a.value, j, (long long)d[j].value);
            } else if (d[j].value < 0 && a.value >= 0) {
                d[j] = a; /* a known size settles a symbolic one */
            } else if (d[j].value < 0 && !sh_dim_same(d[j], a) && a.value < 0) {
                if (!d[j].param)
                    d[j] = a;
                else if (a.param)
                    d[j] = sh_du(); /* two different names: nothing to keep */
            }
        }
        first = false;
        if (t->dims[axis].value < 0)
            sum_known = false;
        else
            sum += t->dims[axis].value;
    }
    d[axis] = sum_known ? sh_dk(sum) : sh_du();
    return cv_infer_set(c, 0, dt, r, d);
}

/* ================================================================ Split */

/* Split's axis in [0, rank), or -1 with the reason in why. */
static int split_axis(const carve_model *m, carve_node_id n, int rank, char *why, size_t whysz)
{
    if (rank == 0) {
        snprintf(why, whysz, "input 0 'input' is a scalar; Split needs rank >= 1");
        return -1;
    }
    return sh_axis_attr(m, n, 0, rank, "rank", why, whysz);
}

/* Sizes of n_out outputs splitting d without a 'split' list: num (opset
 * 18's num_outputs) chunks of ceil(d / num), the last one smaller, or equal
 * parts; false when d does not split into equal parts. */
static bool split_even(int64_t d, int64_t num, uint32_t n_out, int64_t *sizes)
{
    if (num) {
        int64_t chunk = (d + num - 1) / num, left = d;
        for (uint32_t i = 0; i < n_out && i < 256; i++) {
            sizes[i] = left < chunk ? left : chunk;
            left -= sizes[i];
        }
        return true;
    }
    if (n_out && d % (int64_t)n_out)
        return false;
    for (uint32_t i = 0; i < n_out && i < 256; i++)
        sizes[i] = d / (int64_t)n_out;
    return true;
}

/* What a Split does: the axis and the sizes of its outputs along it. */
typedef struct {
    int axis;
    bool known; /* sizes hold them (inference may not know them yet) */
    int64_t sizes[256]; /* a Split has at most 256 outputs (the table's limit) */
} split_plan;

/* The plan of a Split of an input of rank and dims (-1: a size not known)
 * into n_out outputs, the same for the kernel and inference, with errors
 * that name the node. The sizes are the 'split' list (the input, given by
 * the caller, which reads it: listed, with list NULL while its values are
 * not known; before opset 13 the attribute), else num_outputs' chunks
 * (opset 18) or equal parts. */
#define split_err(...) cv_node_err(m, node, CARVE_ERR_INVALID, "", __VA_ARGS__)
static carve_status split_make(const carve_model *m, carve_node_id node, int64_t opset, int rank, const int64_t *dims,
                               bool listed, const int64_t *list, size_t n, uint32_t n_out, split_plan *p)
{
    char why[96];
    if ((p->axis = split_axis(m, node, rank, why, sizeof why)) < 0)
        return split_err("%s", why);
    int64_t d = dims[p->axis];
    p->known = true;
    if (!listed && opset < 13) {
        int cnt = cv_attr_ints(m, node, "split", &list);
        if (cnt > 256)
            return split_err("attribute 'split' has %d values, more than the %u outputs", cnt, n_out);
        listed = cnt >= 0;
        n = cnt >= 0 ? (size_t)cnt : 0;
    }
    if (listed) {
        if (!list) {
            p->known = false;
            return CARVE_OK;
        }
        if (n != n_out)
            return split_err("'split' has %zu sizes but the node has %u outputs", n, n_out);
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            if (list[i] < 0)
                return split_err("'split' size %zu is negative (%lld)", i, (long long)list[i]);
            if (list[i] > INT64_MAX - sum)
                return split_err("'split' sizes add up to more than int64 holds");
            sum += list[i];
            p->sizes[i] = list[i];
        }
        if (d >= 0 && sum != d)
            return split_err("'split' sizes do not add up to %lld, the size of axis %d (they add up to %lld)",
                             (long long)d, p->axis, (long long)sum);
        return CARVE_OK;
    }
    int64_t num = opset >= 18 ? cv_attr_i(m, node, "num_outputs", 0) : 0;
    if (num && num != (int64_t)n_out)
        return split_err("attribute 'num_outputs' is %lld but the node has %u outputs", (long long)num, n_out);
    if (d < 0)
        p->known = false;
    else if (!split_even(d, num, n_out, p->sizes))
        return split_err("axis %d of size %lld does not split into %u equal parts", p->axis, (long long)d, n_out);
    return CARVE_OK;
}
#undef split_err

carve_status k_split(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_split, in, n_in, out, n_out);
    cv_val *x = in[0];
    int64_t list[256];
    size_t n = 0;
    bool listed = (k->opset < 2 || k->opset >= 13) && n_in > 1 && in[1];
    carve_status s = listed ? sh_ints(k, in[1], "input 1 'split'", list, 256, &n) : CARVE_OK;
    split_plan p;
    if (s || (s = split_make(k->m, k->node, k->opset, x->rank, x->dims, listed, list, n, n_out, &p)))
        return s;
    int axis = p.axis;
    const int64_t *sizes = p.sizes;
    int64_t d = x->dims[axis];
    size_t es = sh_esize(x->dtype), outer = sh_span(x->dims, 0, axis),
           inner = sh_span(x->dims, axis + 1, x->rank) * es, row = (size_t)d * inner, off = 0;
    for (uint32_t i = 0; i < n_out; i++) {
        int64_t dims[CARVE_MAX_RANK];
        memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
        dims[axis] = sizes[i];
        cv_val *v = cv_val_new_uninit(x->dtype, x->rank, dims); /* outer blocks of blk bytes: all of it */
        if (!v)
            return cv_knomem(k);
        size_t blk = (size_t)sizes[i] * inner;
        if (blk)
            for (size_t o = 0; o < outer; o++)
                memcpy((char *)v->data + o * blk, (const char *)x->data + o * row + off, blk);
        off += blk;
        carve_status st = sh_finish(k, v, &out[i]);
        if (st)
            return st;
    }
    return CARVE_OK;
}

carve_status i_split(cv_ictx *c)
{
    uint32_t n_out = c->m->nodes[c->node].n_out;
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (!x || x->rank < 0)
        return sh_iunknown(c, n_out, dt);
    int64_t list[256], dims[CARVE_MAX_RANK];
    size_t n = 0;
    bool listed = (c->opset < 2 || c->opset >= 13) && cv_infer_in(c, 1);
    bool known = listed && sh_const_ints(c, 1, list, 256, &n);
    for (int i = 0; i < x->rank; i++)
        dims[i] = x->dims[i].value;
    split_plan p;
    carve_status s = split_make(c->m, c->node, c->opset, x->rank, dims, listed, known ? list : NULL, n, n_out, &p);
    for (uint32_t i = 0; i < n_out && !s; i++) {
        carve_dim d[CARVE_MAX_RANK];
        memcpy(d, x->dims, (size_t)x->rank * sizeof *d);
        d[p.axis] = p.known && i < 256 ? sh_dk(p.sizes[i]) : sh_du();
        if (n_out == 1)
            d[p.axis] = x->dims[p.axis]; /* one output: the whole input */
        s = cv_infer_set(c, i, dt, x->rank, d);
    }
    return s;
}

/* ================================================================ Slice */

/* First index and count of a slice of a dim of size d (step != 0), with the
 * clamping rules of Slice-10+. No overflow for any int64 inputs. */
static void slice_dim(int64_t d, int64_t s, int64_t e, int64_t step, int64_t *first, int64_t *count)
{
    if (s < 0)
        s += d;
    if (e < 0)
        e += d;
    if (step > 0) {
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        *first = s;
        *count = e > s ? (int64_t)(((uint64_t)(e - s) + (uint64_t)step - 1) / (uint64_t)step) : 0;
    } else {
        s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
        e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        uint64_t mag = (uint64_t)0 - (uint64_t)step;
        *first = s;
        *count = d > 0 && s > e ? (int64_t)(((uint64_t)(s - e) + mag - 1) / mag) : 0;
    }
}

typedef struct slice_args {
    int64_t starts[CARVE_MAX_RANK], ends[CARVE_MAX_RANK], axes[CARVE_MAX_RANK], steps[CARVE_MAX_RANK];
    size_t n;
} slice_args;

carve_status k_slice(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_slice, in, n_in, out, n_out);
    cv_val *x = in[0];
    slice_args a;
    size_t ne = 0, na, ns;
    carve_status s;
    bool have_axes = false, have_steps = false;
    if (k->opset < 10) {
        const int64_t *v;
        int c1 = cv_attr_ints(k->m, k->node, "starts", &v);
        if (c1 < 0 || c1 > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'starts' is missing or too long");
        memcpy(a.starts, v, (size_t)c1 * sizeof *v);
        int c2 = cv_attr_ints(k->m, k->node, "ends", &v);
        if (c2 < 0 || c2 > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'ends' is missing or too long");
        memcpy(a.ends, v, (size_t)c2 * sizeof *v);
        int c3 = cv_attr_ints(k->m, k->node, "axes", &v);
        if (c3 > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'axes' is too long");
        if (c3 >= 0) {
            memcpy(a.axes, v, (size_t)c3 * sizeof *v);
            have_axes = true;
        }
        a.n = (size_t)c1;
        ne = (size_t)c2;
        na = c3 >= 0 ? (size_t)c3 : 0;
    } else {
        if ((s = sh_ints(k, in[1], "input 1 'starts'", a.starts, CARVE_MAX_RANK, &a.n)) ||
            (s = sh_ints(k, in[2], "input 2 'ends'", a.ends, CARVE_MAX_RANK, &ne)))
            return s;
        if (n_in > 3 && in[3]) {
            if ((s = sh_ints(k, in[3], "input 3 'axes'", a.axes, CARVE_MAX_RANK, &na)))
                return s;
            have_axes = true;
        }
        if (n_in > 4 && in[4]) {
            if ((s = sh_ints(k, in[4], "input 4 'steps'", a.steps, CARVE_MAX_RANK, &ns)))
                return s;
            have_steps = true;
            if (ns != a.n)
                return cv_kerr(k, "'steps' has %zu values but 'starts' has %zu", ns, a.n);
        }
    }
    if (ne != a.n)
        return cv_kerr(k, "'ends' has %zu values but 'starts' has %zu", ne, a.n);
    if (have_axes && na != a.n)
        return cv_kerr(k, "'axes' has %zu values but 'starts' has %zu", na, a.n);
    if (!have_axes) {
        if (a.n > (size_t)x->rank)
            return cv_kerr(k, "'starts' has %zu values but the input has rank %d", a.n, x->rank);
        for (size_t i = 0; i < a.n; i++)
            a.axes[i] = (int64_t)i;
    }
    if ((s = sh_axes(k, a.axes, a.n, x->rank, "axes")))
        return s;
    int64_t st[CARVE_MAX_RANK], dims[CARVE_MAX_RANK], ost[CARVE_MAX_RANK];
    sh_strides(x->rank, x->dims, st);
    memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    memcpy(ost, st, sizeof st);
    size_t base = 0;
    bool whole = true;
    for (size_t i = 0; i < a.n; i++) {
        int ax = (int)a.axes[i];
        int64_t step = have_steps ? a.steps[i] : 1;
        if (step == 0)
            return cv_kerr(k, "'steps' value %zu is 0", i);
        int64_t first, count;
        slice_dim(x->dims[ax], a.starts[i], a.ends[i], step, &first, &count);
        dims[ax] = count;
        if (count) {
            base += (size_t)first * (size_t)st[ax];
            ost[ax] = st[ax] * step;
        }
        whole = whole && count == x->dims[ax] && (step == 1 || count <= 1);
    }
    if (whole) {
        out[0] = cv_val_ref(x);
        return CARVE_OK;
    }
    /* one contiguous run of x's bytes: a view of them (cv_val_view) */
    int64_t cst[CARVE_MAX_RANK];
    sh_strides(x->rank, dims, cst);
    bool run = true;
    for (int i = 0; i < x->rank; i++)
        run = run && (dims[i] <= 1 || ost[i] == cst[i]);
    size_t es = sh_esize(x->dtype);
    if (run && es && x->dtype != CARVE_STRING) {
        cv_val *v = cv_val_view(x, x->rank, dims, base * es);
        if (v) {
            out[0] = v;
            return CARVE_OK;
        }
    }
    return sh_strided_out(k, x, x->rank, dims, ost, base, out);
}

/* Output size of a slice of a dim that may be symbolic. */
static carve_dim slice_dim_sym(carve_dim d, int64_t s, int64_t e, int64_t step)
{
    if (d.value >= 0) {
        int64_t first, count;
        slice_dim(d.value, s, e, step, &first, &count);
        return sh_dk(count);
    }
    /* the whole axis, forward or backward, keeps its size whatever it is */
    const int64_t big = INT32_MAX;
    if (step == 1 && s == 0 && e >= big)
        return d;
    if (step == -1 && (s == -1 || s >= big) && e <= -big)
        return d;
    return sh_du();
}

/* Slice's dims: each sliced axis's length (known or not). */
static carve_status slice_dims(cv_ictx *c, const cv_type *x, int *rank, carve_dim *d)
{
    int r = *rank;
    slice_args a;
    size_t ne = 0, na = 0, ns = 0;
    bool kn_se, kn_axes = true, kn_steps = true, have_axes = false, have_steps = false;
    if (c->opset < 10) {
        const int64_t *v;
        int c1 = cv_attr_ints(c->m, c->node, "starts", &v);
        kn_se = c1 >= 0 && c1 <= CARVE_MAX_RANK;
        if (kn_se)
            memcpy(a.starts, v, (size_t)c1 * sizeof *v);
        int c2 = cv_attr_ints(c->m, c->node, "ends", &v);
        kn_se = kn_se && c2 >= 0 && c2 <= CARVE_MAX_RANK;
        if (kn_se)
            memcpy(a.ends, v, (size_t)c2 * sizeof *v);
        int c3 = cv_attr_ints(c->m, c->node, "axes", &v);
        if (c3 >= 0 && c3 <= CARVE_MAX_RANK) {
            memcpy(a.axes, v, (size_t)c3 * sizeof *v);
            have_axes = true;
            na = (size_t)c3;
        }
        a.n = c1 > 0 ? (size_t)c1 : 0;
        ne = c2 > 0 ? (size_t)c2 : 0;
    } else {
        kn_se = sh_const_ints(c, 1, a.starts, CARVE_MAX_RANK, &a.n) && sh_const_ints(c, 2, a.ends, CARVE_MAX_RANK, &ne);
        if (cv_infer_in(c, 3)) {
            have_axes = true;
            kn_axes = sh_const_ints(c, 3, a.axes, CARVE_MAX_RANK, &na);
        }
        if (cv_infer_in(c, 4)) {
            have_steps = true;
            kn_steps = sh_const_ints(c, 4, a.steps, CARVE_MAX_RANK, &ns);
        }
    }
    memcpy(d, x->dims, (size_t)r * sizeof *d);
    if (!kn_axes || (!have_axes && !kn_se)) {
        for (int i = 0; i < r; i++)
            d[i] = sh_du();
        return CARVE_OK;
    }
    size_t n = have_axes ? na : a.n;
    if (!have_axes) {
        if (a.n > (size_t)r)
            return cv_ierr(c, "'starts' has %zu values but the input has rank %d", a.n, r);
        for (size_t i = 0; i < a.n; i++)
            a.axes[i] = (int64_t)i;
    }
    bool seen[CARVE_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++) {
        int ax = sh_axis(a.axes[i], r);
        if (ax < 0)
            return cv_ierr(c, "axis %lld is out of range for rank %d", (long long)a.axes[i], r);
        if (seen[ax])
            return cv_ierr(c, "axis %lld is given twice", (long long)a.axes[i]);
        seen[ax] = true;
        a.axes[i] = ax;
    }
    if (kn_se && (ne != a.n || (have_axes && na != a.n) || (have_steps && kn_steps && ns != a.n)))
        return cv_ierr(c, "'starts', 'ends', 'axes' and 'steps' must have the same length (%zu, %zu, %zu, %zu)", a.n,
                       ne, have_axes ? na : a.n, have_steps ? ns : a.n);
    for (size_t i = 0; i < n; i++) {
        int ax = (int)a.axes[i];
        if (!kn_se || !kn_steps) {
            d[ax] = sh_du();
            continue;
        }
        int64_t step = have_steps ? a.steps[i] : 1;
        if (step == 0)
            return cv_ierr(c, "'steps' value %zu is 0", i);
        d[ax] = slice_dim_sym(x->dims[ax], a.starts[i], a.ends[i], step);
    }
    return CARVE_OK;
}

carve_status i_slice(cv_ictx *c) { return cv_infer_dims(c, slice_dims); }

/* ================================================================ DepthToSpace, SpaceToDepth */

bool sh_space_dcr(const carve_model *m, carve_node_id n, int64_t opset, bool *ok)
{
    const char *s = opset >= 11 ? cv_attr_s(m, n, "mode", "DCR") : "DCR";
    *ok = !strcmp(s, "DCR") || !strcmp(s, "CRD");
    return !strcmp(s, "DCR");
}

/* The 6-D views (k_shape.h):
 * DepthToSpace DCR: [N,b,b,C',H,W] perm [0,3,4,1,5,2];
 *              CRD: [N,C',b,b,H,W] perm [0,1,4,2,5,3];
 * SpaceToDepth:     [N,C,H',b,W',b] perm [0,3,5,1,2,4]. */
const int *sh_space_perm(bool to_space, bool dcr)
{
    static const int perm_dcr[6] = {0, 3, 4, 1, 5, 2}, perm_crd[6] = {0, 1, 4, 2, 5, 3},
                     perm_s2d[6] = {0, 3, 5, 1, 2, 4};
    return to_space ? (dcr ? perm_dcr : perm_crd) : perm_s2d;
}

static carve_status space_kernel(cv_kctx *k, cv_val *x, bool to_space, cv_val **out)
{
    if (x->rank != 4)
        return cv_kerr(k, "input 0 'input' must have rank 4 (N, C, H, W), it has rank %d", x->rank);
    int64_t b = cv_attr_i(k->m, k->node, "blocksize", 0);
    if (b < 1 || b > INT32_MAX)
        return cv_kerr(k, "attribute 'blocksize' is %lld; it must be at least 1", (long long)b);
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t v6[6], fin[4];
    const int *perm;
    if (to_space) {
        bool ok;
        bool dcr = sh_space_dcr(k->m, k->node, k->opset, &ok);
        if (!ok)
            return cv_kerr(k, "mode '%s' is not DCR or CRD", cv_attr_s(k->m, k->node, "mode", ""));
        if (C % (b * b))
            return cv_kerr(k, "channels (%lld) are not a multiple of blocksize^2 (%lld)", (long long)C,
                           (long long)(b * b));
        int64_t c2 = C / (b * b);
        int64_t a[6] = {N, b, b, c2, H, W}, q[6] = {N, c2, b, b, H, W};
        memcpy(v6, dcr ? a : q, sizeof v6);
        perm = sh_space_perm(true, dcr);
        fin[0] = N, fin[1] = c2, fin[2] = H * b, fin[3] = W * b;
    } else {
        if (H % b || W % b)
            return cv_kerr(k, "height %lld and width %lld must be multiples of blocksize %lld", (long long)H,
                           (long long)W, (long long)b);
        int64_t a[6] = {N, C, H / b, b, W / b, b};
        memcpy(v6, a, sizeof v6);
        perm = sh_space_perm(false, false);
        fin[0] = N, fin[1] = C * b * b, fin[2] = H / b, fin[3] = W / b;
    }
    int64_t st6[6], dims[6], st[6];
    sh_strides(6, v6, st6);
    for (int i = 0; i < 6; i++) {
        dims[i] = v6[perm[i]];
        st[i] = st6[perm[i]];
    }
    cv_val *t = NULL;
    carve_status s = sh_strided_out(k, x, 6, dims, st, 0, &t);
    if (s)
        return s;
    t->rank = 4;
    memcpy(t->dims, fin, sizeof fin);
    out[0] = t;
    return CARVE_OK;
}

carve_status k_depthtospace(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_depthtospace, in, n_in, out, n_out);
    return space_kernel(k, in[0], true, out);
}

carve_status k_spacetodepth(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, n_in))
        return sh_unpacked(k, k_spacetodepth, in, n_in, out, n_out);
    return space_kernel(k, in[0], false, out);
}

static carve_dim dim_mul(carve_dim d, int64_t b)
{
    if (b == 1)
        return d;
    if (d.value >= 0 && d.value <= INT64_MAX / b)
        return sh_dk(d.value * b);
    return sh_du();
}

static carve_status space_infer(cv_ictx *c, bool to_space)
{
    const cv_type *x = sh_tin(c, 0);
    carve_dtype dt = x ? x->dtype : CARVE_UNDEFINED;
    if (x && x->rank >= 0 && x->rank != 4)
        return cv_ierr(c, "input 0 'input' must have rank 4 (N, C, H, W), it has rank %d", x->rank);
    int64_t b = cv_attr_i(c->m, c->node, "blocksize", 0);
    if (b < 1 || b > INT32_MAX)
        return cv_ierr(c, "attribute 'blocksize' is %lld; it must be at least 1", (long long)b);
    if (!x || x->rank < 0)
        return cv_infer_set(c, 0, dt, 4, NULL);
    carve_dim d[4] = {x->dims[0], sh_du(), sh_du(), sh_du()};
    carve_dim C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (to_space) {
        if (C.value >= 0 && C.value % (b * b))
            return cv_ierr(c, "channels (%lld) are not a multiple of blocksize^2 (%lld)", (long long)C.value,
                           (long long)(b * b));
        d[1] = C.value >= 0 ? sh_dk(C.value / (b * b)) : b == 1 ? C : sh_du();
        d[2] = dim_mul(H, b);
        d[3] = dim_mul(W, b);
    } else {
        if ((H.value >= 0 && H.value % b) || (W.value >= 0 && W.value % b))
            return cv_ierr(c, "height and width must be multiples of blocksize %lld", (long long)b);
        d[1] = dim_mul(C, b * b);
        d[2] = H.value >= 0 ? sh_dk(H.value / b) : b == 1 ? H : sh_du();
        d[3] = W.value >= 0 ? sh_dk(W.value / b) : b == 1 ? W : sh_du();
    }
    return cv_infer_set(c, 0, dt, 4, d);
}

carve_status i_depthtospace(cv_ictx *c) { return space_infer(c, true); }
carve_status i_spacetodepth(cv_ictx *c) { return space_infer(c, false); }

/* ================================================================ ReverseSequence */

carve_status k_reversesequence(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (sh_any4(in, 1))
        return sh_unpacked(k, k_reversesequence, in, n_in, out, n_out);
    cv_val *x = in[0], *lens = in[1];
    if (x->rank < 2)
        return cv_kerr(k, "input 0 'input' must have rank >= 2, it has rank %d", x->rank);
    int64_t ba = cv_attr_i(k->m, k->node, "batch_axis", 1), ta = cv_attr_i(k->m, k->node, "time_axis", 0);
    if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
        return cv_kerr(k, "batch_axis (%lld) and time_axis (%lld) must be 0 and 1 in some order", (long long)ba,
                       (long long)ta);
    int64_t B = x->dims[ba], T = x->dims[ta];
    if (!cv_dtype_is_int(lens->dtype) || lens->rank != 1 || lens->dims[0] != B)
        return cv_kerr(k, "input 1 'sequence_lens' must be 1-D integers with one length per batch (%lld)", (long long)B);
    for (int64_t b = 0; b < B; b++) {
        int64_t l = cv_val_get_i64(lens, (size_t)b);
        if (l < 0 || l > T)
            return cv_kerr(k, "input 1 'sequence_lens'[%lld] is %lld, outside [0, %lld]", (long long)b, (long long)l,
                           (long long)T);
    }
    cv_val *v = cv_val_like(x);
    if (!v)
        return cv_knomem(k);
    size_t es = sh_esize(x->dtype), inner = sh_span(x->dims, 2, x->rank) * es;
    for (int64_t b = 0; b < B && inner; b++) {
        int64_t l = cv_val_get_i64(lens, (size_t)b);
        for (int64_t t = 0; t < T; t++) {
            int64_t s = t < l ? l - 1 - t : t;
            size_t o = ta == 0 ? (size_t)(t * B + b) : (size_t)(b * T + t);
            size_t i = ta == 0 ? (size_t)(s * B + b) : (size_t)(b * T + s);
            memcpy((char *)v->data + o * inner, (const char *)x->data + i * inner, inner);
        }
    }
    return sh_finish(k, v, &out[0]);
}

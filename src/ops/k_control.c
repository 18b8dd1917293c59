/* k_control.c: control flow (If, Loop, Scan, SequenceMap).
 *
 * Bodies run on the runtime that runs the node (k->run->graph): its value
 * env is model-wide, so a body reads captured outer values directly. Body
 * inputs are bound by position, outputs come back as references. An error
 * inside a body is reported with the outer node and the iteration in front
 * of the inner node's message. */
#include "ops.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static carve_status need_interp(cv_kctx *k)
{
    return k->run && k->run->graph ? CARVE_OK : cv_kerr(k, "runs a subgraph and needs an interpreter (not a constant-folding context)");
}

/* The graph attribute `name`, with its input/output counts checked. */
static carve_status body_graph(cv_kctx *k, const char *name, size_t n_in, size_t n_out, const char *in_what,
                               const char *out_what, carve_graph_id *g)
{
    *g = cv_attr_g(k->m, k->node, name);
    if (*g == CARVE_NONE)
        return cv_kerr(k, "attribute '%s' (a graph) is required", name);
    size_t gi = carve_graph_input_count(k->m, *g), go = carve_graph_output_count(k->m, *g);
    if (gi != n_in)
        return cv_kerr(k, "attribute '%s': graph '%s' has %zu inputs, expected %zu (%s)", name,
                       carve_graph_name(k->m, *g), gi, n_in, in_what);
    if (go != n_out)
        return cv_kerr(k, "attribute '%s': graph '%s' has %zu outputs, expected %zu (%s)", name,
                       carve_graph_name(k->m, *g), go, n_out, out_what);
    return CARVE_OK;
}

/* Runs body g; on failure puts "node (op): <where>: " in front of the inner
 * message. outs[] must hold NULLs; they receive references. */
static carve_status run_body(cv_kctx *k, carve_graph_id g, cv_val **ins, cv_val **outs, const char *where)
{
    carve_status s = k->run->graph(k->run->self, g, ins, outs);
    if (!s)
        return CARVE_OK;
    char inner[sizeof k->m->ctx->msg];
    snprintf(inner, sizeof inner, "%s", k->m->ctx->msg);
    const cv_node *n = &k->m->nodes[k->node];
    return cv_error(k->m->ctx, s, "node '%s' (%s): %s: %s", n->name, n->op, where, inner);
}

/* True/false of a one-element tensor (the If and Loop conditions). */
static carve_status read_cond(cv_kctx *k, const cv_val *v, const char *what, bool *out)
{
    if (v->kind != CV_VAL_TENSOR || v->nelem != 1)
        return cv_kerr(k, "%s must be a bool tensor with one element", what);
    if (v->dtype != CARVE_BOOL)
        return cv_kerr(k, "%s is %s, expected bool", what, carve_dtype_name(v->dtype));
    *out = *(const uint8_t *)v->data != 0;
    return CARVE_OK;
}

static cv_val *bool_scalar(bool b)
{
    cv_val *v = cv_val_new(CARVE_BOOL, 0, NULL);
    if (v)
        *(uint8_t *)v->data = b;
    return v;
}

static void unref_all(cv_val **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cv_val_unref(v[i]);
        v[i] = NULL;
    }
}

/* x[..., idx, ...] along axis: a copy of rank one less. */
static cv_val *slice_axis(const cv_val *x, int axis, int64_t idx)
{
    int64_t dims[CARVE_MAX_RANK];
    size_t outer = 1, inner = 1;
    for (int d = 0, j = 0; d < x->rank; d++) {
        if (d == axis)
            continue;
        dims[j++] = x->dims[d];
        if (d < axis)
            outer *= (size_t)x->dims[d];
        else
            inner *= (size_t)x->dims[d];
    }
    cv_val *o = cv_val_new(x->dtype, x->rank - 1, dims);
    size_t len = (size_t)x->dims[axis];
    for (size_t q = 0; o && q < outer; q++)
        if (!cv_val_copy_elems(o, q * inner, x, (q * len + (size_t)idx) * inner, inner)) {
            cv_val_unref(o);
            return NULL;
        }
    return o;
}

/* Checks item t against the first item of its output (shape and dtype). */
static carve_status same_shape(cv_kctx *k, const cv_val *first, const cv_val *t, const char *what, uint32_t idx,
                               size_t iter)
{
    if (t->kind != CV_VAL_TENSOR)
        return cv_kerr(k, "%s %u is not a tensor at iteration %zu", what, idx, iter);
    bool same = t->dtype == first->dtype && t->rank == first->rank;
    for (int d = 0; same && d < t->rank; d++)
        same = t->dims[d] == first->dims[d];
    if (same)
        return CARVE_OK;
    char a[200], b[200];
    cv_shape_str(a, sizeof a, t->rank, t->dims);
    cv_shape_str(b, sizeof b, first->rank, first->dims);
    return cv_kerr(k, "%s %u is %s %s at iteration %zu but %s %s at iteration 0 (it must keep one shape)", what, idx,
                   carve_dtype_name(t->dtype), a, iter, carve_dtype_name(first->dtype), b);
}

/* Stacks n same-shape tensors along a new axis (in reverse order when rev). */
static carve_status stack(cv_kctx *k, cv_val **items, size_t n, int64_t axis, bool rev, const char *what, uint32_t idx,
                          cv_val **out)
{
    const cv_val *f = items[0];
    int r = f->rank + 1;
    if (r > CARVE_MAX_RANK)
        return cv_kerr(k, "%s %u would have rank %d, carve allows %d", what, idx, r, CARVE_MAX_RANK);
    if (axis < -r || axis >= r)
        return cv_kerr(k, "%s %u: axis %lld is out of range for rank %d", what, idx, (long long)axis, r);
    if (axis < 0)
        axis += r;
    for (size_t i = 1; i < n; i++) {
        carve_status s = same_shape(k, f, items[i], what, idx, i);
        if (s)
            return s;
    }
    int64_t dims[CARVE_MAX_RANK];
    size_t outer = 1, inner = 1;
    for (int d = 0, j = 0; d < r; d++) {
        if (d == axis) {
            dims[d] = (int64_t)n;
            continue;
        }
        dims[d] = f->dims[j++];
        if (d < axis)
            outer *= (size_t)dims[d];
        else
            inner *= (size_t)dims[d];
    }
    cv_val *o = cv_val_new(f->dtype, r, dims);
    if (!o)
        return cv_knomem(k);
    for (size_t t = 0; t < n; t++) {
        const cv_val *it = items[rev ? n - 1 - t : t];
        for (size_t q = 0; q < outer; q++)
            if (!cv_val_copy_elems(o, (q * n + t) * inner, it, q * inner, inner)) {
                cv_val_unref(o);
                return cv_knomem(k);
            }
    }
    *out = o;
    return CARVE_OK;
}

/* dtype and dims of body output i as declared (unknown dims become 0, an
 * unknown dtype float): the shape of an empty scan output. */
static void declared(const carve_model *m, carve_graph_id g, size_t i, carve_dtype *dt, int *rank, int64_t *dims)
{
    const cv_type *t = &m->values[carve_graph_output(m, g, i)].type;
    *dt = t->kind == CARVE_TYPE_TENSOR && t->dtype ? t->dtype : CARVE_FLOAT;
    *rank = t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 && t->rank < CARVE_MAX_RANK ? t->rank : 0;
    for (int d = 0; d < *rank; d++)
        dims[d] = t->dims[d].value >= 0 ? t->dims[d].value : 0;
}

/* Growable list of values. */
typedef struct {
    cv_val **v;
    size_t n, cap;
} vlist;

static bool vlist_push(vlist *l, cv_val *x)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        cv_val **v = cv_realloc(l->v, cap * sizeof *v);
        if (!v)
            return false;
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = x;
    return true;
}

/* Frees a body's input and output arrays with the values left in them. */
static void body_io_free(cv_val **bin, size_t n_in, cv_val **bout, size_t n_out)
{
    unref_all(bin, n_in);
    unref_all(bout, n_out);
    cv_free(bin);
    cv_free(bout);
}

/* The end of Scan's kernels: outputs dropped on failure s, the body's nb
 * inputs and nb outputs freed either way; returns s. */
static carve_status body_end(carve_status s, cv_val **out, uint32_t n_out, cv_val **bin, cv_val **bout, size_t nb)
{
    if (s)
        unref_all(out, n_out);
    body_io_free(bin, nb, bout, nb);
    return s;
}

static void vlists_free(vlist *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++) {
        unref_all(l[i].v, l[i].n);
        cv_free(l[i].v);
    }
    cv_free(l);
}

/* Loop and Scan: takes one iteration's scan outputs y[0..n) (each set to
 * NULL) onto scans[0..n), each a tensor of the shape of its first. */
static carve_status collect_scans(cv_kctx *k, vlist *scans, uint32_t n, cv_val **y, int64_t it)
{
    carve_status s = CARVE_OK;
    for (uint32_t j = 0; j < n && !s; j++) {
        cv_val *x = y[j];
        y[j] = NULL;
        if (x->kind != CV_VAL_TENSOR)
            s = cv_kerr(k, "scan output %u is not a tensor at iteration %lld", j, (long long)it);
        else if (scans[j].n)
            s = same_shape(k, scans[j].v[0], x, "scan output", j, scans[j].n);
        if (s || !vlist_push(&scans[j], x)) {
            cv_val_unref(x);
            if (!s)
                s = cv_knomem(k);
        }
    }
    return s;
}

/* ---------------------------------------------------------------- If */

carve_status k_if(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in;
    carve_status s = need_interp(k);
    bool cond = false;
    if (!s)
        s = read_cond(k, in[0], "input 0 'cond'", &cond);
    if (s)
        return s;
    const char *branch = cond ? "then_branch" : "else_branch";
    carve_graph_id g;
    s = body_graph(k, branch, 0, n_out, "a branch takes no inputs", "one per output of the node", &g);
    if (s)
        return s;
    memset(out, 0, n_out * sizeof *out);
    return run_body(k, g, NULL, out, branch);
}

/* ---------------------------------------------------------------- Loop */

carve_status k_loop(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    carve_status s = need_interp(k);
    if (s)
        return s;
    uint32_t n_car = n_in - 2;
    if (n_out < n_car)
        return cv_kerr(k, "has %u loop-carried inputs but only %u outputs", n_car, n_out);
    uint32_t n_scan = n_out - n_car;
    char what[160];
    snprintf(what, sizeof what, "condition, %u loop-carried values and %u scan outputs", n_car, n_scan);
    carve_graph_id g;
    s = body_graph(k, "body", 2 + (size_t)n_car, 1 + (size_t)n_out, "iteration number, condition and loop-carried values",
                   what, &g);
    if (s)
        return s;
    int64_t max_trip = INT64_MAX;
    bool has_m = in[0] != NULL, has_cond = in[1] != NULL, cond = true;
    if (has_m) {
        if (in[0]->kind != CV_VAL_TENSOR || !cv_dtype_is_int(in[0]->dtype) || in[0]->nelem != 1)
            return cv_kerr(k, "input 0 'M' must be an int64 tensor with one element");
        max_trip = cv_val_get_i64(in[0], 0);
    }
    if (has_cond && (s = read_cond(k, in[1], "input 1 'cond'", &cond)))
        return s;
    for (uint32_t i = 0; i < n_car; i++)
        if (!in[2 + i])
            return cv_kerr(k, "input %u (loop-carried value %u) is omitted", 2 + i, i);

    size_t nb_in = 2 + (size_t)n_car, nb_out = 1 + (size_t)n_out;
    cv_val **bin = cv_malloc(nb_in * sizeof *bin), **bout = cv_malloc(nb_out * sizeof *bout);
    vlist *scans = cv_malloc((n_scan + 1) * sizeof *scans);
    if (!bin || !bout || !scans) {
        cv_free(bin), cv_free(bout), cv_free(scans);
        return cv_knomem(k);
    }
    memset(bin, 0, nb_in * sizeof *bin);
    memset(bout, 0, nb_out * sizeof *bout);
    memset(scans, 0, (n_scan + 1) * sizeof *scans);
    for (uint32_t i = 0; i < n_car; i++)
        bin[2 + i] = cv_val_ref(in[2 + i]);

    /* The spec ignores the body's condition when the node has no cond
     * input; with neither M nor cond that would never end, so then (as
     * onnxruntime does) the body's condition stops the loop. The body's
     * condition input is always the previous iteration's output. */
    bool use_body_cond = has_cond || !has_m, cond_in = cond;
    int64_t it = 0;
    for (; it < max_trip && cond; it++) {
        bin[0] = cv_val_scalar_i64(it);
        bin[1] = bool_scalar(cond_in);
        if (!bin[0] || !bin[1]) {
            s = cv_knomem(k);
            break;
        }
        char where[64];
        snprintf(where, sizeof where, "body iteration %lld", (long long)it);
        s = run_body(k, g, bin, bout, where);
        unref_all(bin, nb_in);
        if (s)
            break;
        if (use_body_cond) {
            s = read_cond(k, bout[0], "the body's condition output", &cond);
            if (s)
                break;
            cond_in = cond;
        } else {
            const cv_val *c = bout[0]; /* ignored, passed on when it is a bool */
            cond_in = c->kind == CV_VAL_TENSOR && c->dtype == CARVE_BOOL && c->nelem == 1 ? *(uint8_t *)c->data != 0
                                                                                          : true;
        }
        cv_val_unref(bout[0]);
        bout[0] = NULL;
        for (uint32_t i = 0; i < n_car; i++) {
            bin[2 + i] = bout[1 + i];
            bout[1 + i] = NULL;
        }
        if (!s)
            s = collect_scans(k, scans, n_scan, bout + 1 + n_car, it);
        unref_all(bout, nb_out);
        if (s)
            break;
    }
    for (uint32_t i = 0; !s && i < n_car; i++) {
        out[i] = bin[2 + i];
        bin[2 + i] = NULL;
    }
    for (uint32_t j = 0; !s && j < n_scan; j++) {
        if (scans[j].n) {
            s = stack(k, scans[j].v, scans[j].n, 0, false, "scan output", j, &out[n_car + j]);
            continue;
        }
        /* no iteration: [0, body output dims...] */
        carve_dtype dt;
        int r;
        int64_t dims[CARVE_MAX_RANK];
        declared(k->m, g, 1 + (size_t)n_car + j, &dt, &r, dims + 1);
        dims[0] = 0;
        out[n_car + j] = cv_val_new(dt, r + 1, dims);
        if (!out[n_car + j])
            s = cv_knomem(k);
    }
    vlists_free(scans, n_scan);
    body_io_free(bin, nb_in, bout, nb_out);
    return s;
}

/* ---------------------------------------------------------------- Scan */

/* Reads an optional INTS attribute of exactly n values (NULL when absent). */
static carve_status axes_attr(cv_kctx *k, const char *name, uint32_t n, const int64_t **v)
{
    int c = cv_attr_ints(k->m, k->node, name, v);
    if (c < 0) {
        *v = NULL;
        return CARVE_OK;
    }
    if ((uint32_t)c != n)
        return cv_kerr(k, "attribute '%s' has %d values, expected %u", name, c, n);
    return CARVE_OK;
}

/* Scan before opset 9: stores y as slice `at` of *o, whose shape is
 * lead[0..nl) then y's (made on first use); every slice has the shape of
 * the first (what, idx and nth name y in the error). */
static carve_status store_slice(cv_kctx *k, cv_val **o, int nl, const int64_t *lead, size_t at, const cv_val *y,
                                const char *what, uint32_t idx, size_t nth)
{
    if (!*o) {
        int64_t d[CARVE_MAX_RANK];
        memcpy(d, lead, (size_t)nl * sizeof *d);
        memcpy(d + nl, y->dims, (size_t)y->rank * sizeof *d);
        if (!(*o = cv_val_new(y->dtype, y->rank + nl, d)))
            return cv_knomem(k);
    }
    cv_val first = **o;
    first.rank = y->rank;
    memcpy(first.dims, (*o)->dims + nl, (size_t)y->rank * sizeof *first.dims);
    carve_status s = same_shape(k, &first, y, what, idx, nth);
    if (!s && !cv_val_copy_elems(*o, at * y->nelem, y, 0, y->nelem))
        s = cv_knomem(k);
    return s;
}

/* One Scan step: unless s is already an error, runs the body on bin (the
 * n_st states, then the m scan input slices), frees the slices and makes
 * the state outputs the next step's states; returns the status. */
static carve_status scan_step(cv_kctx *k, carve_graph_id g, cv_val **bin, cv_val **bout, uint32_t n_st, uint32_t m,
                              const char *where, carve_status s)
{
    if (!s)
        s = run_body(k, g, bin, bout, where);
    unref_all(bin + n_st, m);
    for (uint32_t i = 0; i < n_st && !s; i++) {
        cv_val_unref(bin[i]);
        bin[i] = bout[i];
        bout[i] = NULL;
    }
    return s;
}

/* Scan-8: batched; input 0 is sequence_lens, axis 0 is the batch, axis 1 the
 * sequence. Scan outputs are [batch, max_seq, ...] padded with zeros. */
static carve_status scan8(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out, uint32_t m)
{
    uint32_t n_st = n_in - 1 - m, n_scan = n_out - n_st;
    char what[128];
    snprintf(what, sizeof what, "%u state variables and %u scan outputs", n_st, n_scan);
    carve_graph_id g;
    carve_status s = body_graph(k, "body", (size_t)n_st + m, n_out, "state variables and scan input elements", what, &g);
    const int64_t *dirs;
    if (!s)
        s = axes_attr(k, "directions", m, &dirs);
    if (s)
        return s;
    const cv_val *x0 = in[1 + n_st];
    for (uint32_t j = 0; j < m; j++) {
        const cv_val *x = in[1 + n_st + j];
        if (!x || x->kind != CV_VAL_TENSOR || x->rank < 2)
            return cv_kerr(k, "input %u (scan input %u) must be a tensor of rank >= 2 ([batch, sequence, ...])",
                           1 + n_st + j, j);
        if (x->dims[0] != x0->dims[0] || x->dims[1] != x0->dims[1])
            return cv_kerr(k, "scan input %u has batch %lld and sequence %lld but scan input 0 has %lld and %lld", j,
                           (long long)x->dims[0], (long long)x->dims[1], (long long)x0->dims[0],
                           (long long)x0->dims[1]);
    }
    int64_t batch = x0->dims[0], max_seq = x0->dims[1];
    for (uint32_t i = 0; i < n_st; i++) {
        const cv_val *x = in[1 + i];
        if (!x || x->kind != CV_VAL_TENSOR || x->rank < 1 || x->dims[0] != batch)
            return cv_kerr(k, "input %u (state variable %u) must be a tensor with batch %lld as its first dim", 1 + i,
                           i, (long long)batch);
    }
    const cv_val *lens = in[0];
    if (lens && (lens->kind != CV_VAL_TENSOR || !cv_dtype_is_int(lens->dtype) || lens->rank != 1 ||
                 lens->dims[0] != batch))
        return cv_kerr(k, "input 0 'sequence_lens' must be an integer tensor of shape [%lld]", (long long)batch);
    for (int64_t b = 0; lens && b < batch; b++) {
        int64_t l = cv_val_get_i64(lens, (size_t)b);
        if (l < 0 || l > max_seq)
            return cv_kerr(k, "input 0 'sequence_lens' value %lld is %lld, outside [0, %lld]", (long long)b,
                           (long long)l, (long long)max_seq);
    }
    size_t nb = (size_t)n_st + (m > n_scan ? m : n_scan) + 1;
    cv_val **bin = cv_malloc(nb * sizeof *bin), **bout = cv_malloc(nb * sizeof *bout);
    if (!bin || !bout) {
        cv_free(bin), cv_free(bout);
        return cv_knomem(k);
    }
    memset(bin, 0, nb * sizeof *bin);
    memset(bout, 0, nb * sizeof *bout);
    memset(out, 0, n_out * sizeof *out);
    for (int64_t b = 0; b < batch && !s; b++) {
        for (uint32_t i = 0; i < n_st && !s; i++)
            if (!(bin[i] = slice_axis(in[1 + i], 0, b)))
                s = cv_knomem(k);
        int64_t len = lens ? cv_val_get_i64(lens, (size_t)b) : max_seq;
        for (int64_t t = 0; t < len && !s; t++) {
            for (uint32_t j = 0; j < m && !s; j++) {
                const cv_val *x = in[1 + n_st + j];
                int64_t idx = dirs && dirs[j] ? len - 1 - t : t;
                int64_t d[CARVE_MAX_RANK];
                size_t inner = 1;
                for (int q = 2; q < x->rank; q++)
                    inner *= (size_t)(d[q - 2] = x->dims[q]);
                bin[n_st + j] = cv_val_new(x->dtype, x->rank - 2, d);
                if (!bin[n_st + j] ||
                    !cv_val_copy_elems(bin[n_st + j], 0, x, ((size_t)b * (size_t)max_seq + (size_t)idx) * inner, inner))
                    s = cv_knomem(k);
            }
            char where[80];
            snprintf(where, sizeof where, "body at batch %lld step %lld", (long long)b, (long long)t);
            s = scan_step(k, g, bin, bout, n_st, m, where, s);
            for (uint32_t j = 0; j < n_scan && !s; j++) {
                cv_val *y = bout[n_st + j], **o = &out[n_st + j];
                if (y->kind != CV_VAL_TENSOR || y->rank + 2 > CARVE_MAX_RANK) {
                    s = cv_kerr(k, "scan output %u must be a tensor of rank below %d", j, CARVE_MAX_RANK - 1);
                    break;
                }
                const int64_t lead[2] = {batch, max_seq};
                s = store_slice(k, o, 2, lead, (size_t)b * (size_t)max_seq + (size_t)t, y, "scan output", j, (size_t)t);
            }
            unref_all(bout, nb);
        }
        /* final states of this batch row */
        for (uint32_t i = 0; i < n_st && !s; i++) {
            cv_val *y = bin[i], **o = &out[i];
            if (y->kind != CV_VAL_TENSOR || y->rank + 1 > CARVE_MAX_RANK) {
                s = cv_kerr(k, "state variable %u must stay a tensor", i);
                break;
            }
            s = store_slice(k, o, 1, &batch, (size_t)b, y, "state variable", i, (size_t)b);
        }
        unref_all(bin, nb);
    }
    /* no batch row ran: states keep their initial values, scan outputs are
     * empty-ish tensors of the declared shape */
    for (uint32_t i = 0; i < n_st && !s; i++)
        if (!out[i])
            out[i] = cv_val_ref(in[1 + i]);
    for (uint32_t j = 0; j < n_scan && !s; j++) {
        if (out[n_st + j])
            continue;
        carve_dtype dt;
        int r;
        int64_t d[CARVE_MAX_RANK];
        declared(k->m, g, (size_t)n_st + j, &dt, &r, d + 2);
        d[0] = batch, d[1] = max_seq;
        if (r + 2 > CARVE_MAX_RANK || !(out[n_st + j] = cv_val_new(dt, r + 2, d)))
            s = cv_knomem(k);
    }
    return body_end(s, out, n_out, bin, bout, nb);
}

carve_status k_scan(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    carve_status s = need_interp(k);
    if (s)
        return s;
    int64_t m64;
    if (!carve_node_attr_int(k->m, k->node, "num_scan_inputs", &m64))
        return cv_kerr(k, "attribute 'num_scan_inputs' is required");
    uint32_t first = k->opset < 9; /* Scan-8 has sequence_lens first */
    if (m64 < 1 || m64 > (int64_t)(n_in - first))
        return cv_kerr(k, "attribute 'num_scan_inputs' is %lld but the node has %u inputs", (long long)m64,
                       n_in - first);
    uint32_t m = (uint32_t)m64, n_st = n_in - first - m;
    if (n_out < n_st)
        return cv_kerr(k, "has %u state variables but only %u outputs", n_st, n_out);
    if (first)
        return scan8(k, in, n_in, out, n_out, m);
    uint32_t n_scan = n_out - n_st;
    char what[128];
    snprintf(what, sizeof what, "%u state variables and %u scan outputs", n_st, n_scan);
    carve_graph_id g;
    const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
    s = body_graph(k, "body", (size_t)n_st + m, n_out, "state variables and scan input elements", what, &g);
    if (!s)
        s = axes_attr(k, "scan_input_axes", m, &in_axes);
    if (!s)
        s = axes_attr(k, "scan_input_directions", m, &in_dirs);
    if (!s)
        s = axes_attr(k, "scan_output_axes", n_scan, &out_axes);
    if (!s)
        s = axes_attr(k, "scan_output_directions", n_scan, &out_dirs);
    if (s)
        return s;
    for (uint32_t i = 0; i < n_st; i++)
        if (!in[i])
            return cv_kerr(k, "input %u (state variable %u) is omitted", i, i);
    int *axis = cv_malloc((m + 1) * sizeof *axis);
    if (!axis)
        return cv_knomem(k);
    int64_t seq = -1;
    for (uint32_t j = 0; j < m && !s; j++) {
        const cv_val *x = in[n_st + j];
        int64_t a = in_axes ? in_axes[j] : 0;
        if (!x || x->kind != CV_VAL_TENSOR || x->rank < 1) {
            s = cv_kerr(k, "input %u (scan input %u) must be a tensor of rank >= 1", n_st + j, j);
        } else if (a < -x->rank || a >= x->rank) {
            s = cv_kerr(k, "attribute 'scan_input_axes' value %u is %lld but scan input %u has rank %d", j,
                        (long long)a, j, x->rank);
        } else {
            axis[j] = (int)(a < 0 ? a + x->rank : a);
            if (seq >= 0 && x->dims[axis[j]] != seq)
                s = cv_kerr(k, "scan input %u has %lld steps along axis %d but scan input 0 has %lld", j,
                            (long long)x->dims[axis[j]], axis[j], (long long)seq);
            seq = x->dims[axis[j]];
        }
    }
    size_t nb = (size_t)n_st + (m > n_scan ? m : n_scan) + 1;
    cv_val **bin = cv_malloc(nb * sizeof *bin), **bout = cv_malloc(nb * sizeof *bout);
    vlist *scans = cv_malloc((n_scan + 1) * sizeof *scans);
    if (s || !bin || !bout || !scans) {
        cv_free(bin), cv_free(bout), cv_free(scans), cv_free(axis);
        return s ? s : cv_knomem(k);
    }
    memset(bin, 0, nb * sizeof *bin);
    memset(bout, 0, nb * sizeof *bout);
    memset(scans, 0, (n_scan + 1) * sizeof *scans);
    for (uint32_t i = 0; i < n_st; i++)
        bin[i] = cv_val_ref(in[i]);
    for (int64_t t = 0; t < seq && !s; t++) {
        for (uint32_t j = 0; j < m && !s; j++) {
            int64_t idx = in_dirs && in_dirs[j] ? seq - 1 - t : t;
            if (!(bin[n_st + j] = slice_axis(in[n_st + j], axis[j], idx)))
                s = cv_knomem(k);
        }
        char where[64];
        snprintf(where, sizeof where, "body iteration %lld", (long long)t);
        s = scan_step(k, g, bin, bout, n_st, m, where, s);
        if (!s)
            s = collect_scans(k, scans, n_scan, bout + n_st, t);
        unref_all(bout, nb);
    }
    memset(out, 0, n_out * sizeof *out);
    for (uint32_t i = 0; i < n_st && !s; i++) {
        out[i] = bin[i];
        bin[i] = NULL;
    }
    for (uint32_t j = 0; j < n_scan && !s; j++) {
        int64_t a = out_axes ? out_axes[j] : 0;
        bool rev = out_dirs && out_dirs[j];
        if (scans[j].n) {
            s = stack(k, scans[j].v, scans[j].n, a, rev, "scan output", j, &out[n_st + j]);
            continue;
        }
        carve_dtype dt;
        int r;
        int64_t d[CARVE_MAX_RANK];
        declared(k->m, g, (size_t)n_st + j, &dt, &r, d);
        if (r + 1 > CARVE_MAX_RANK || a < -(r + 1) || a > r) {
            s = cv_kerr(k, "attribute 'scan_output_axes' value %u is %lld, out of range for rank %d", j, (long long)a,
                        r + 1);
            break;
        }
        if (a < 0)
            a += r + 1;
        memmove(d + a + 1, d + a, (size_t)(r - a) * sizeof *d);
        d[a] = 0;
        if (!(out[n_st + j] = cv_val_new(dt, r + 1, d)))
            s = cv_knomem(k);
    }
    vlists_free(scans, n_scan);
    cv_free(axis);
    return body_end(s, out, n_out, bin, bout, nb);
}

/* ---------------------------------------------------------------- SequenceMap */

carve_status k_seqmap(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    carve_graph_id g;
    carve_status s = need_interp(k);
    if (!s)
        s = body_graph(k, "body", n_in, n_out, "one per input of the node", "one per output of the node", &g);
    if (s)
        return s;
    if (!in[0] || in[0]->kind != CV_VAL_SEQUENCE)
        return cv_kerr(k, "input 0 'input_sequence' is not a sequence");
    uint32_t len = in[0]->n_items;
    for (uint32_t j = 1; j < n_in; j++) {
        if (!in[j])
            return cv_kerr(k, "input %u is omitted", j);
        if (in[j]->kind == CV_VAL_SEQUENCE && in[j]->n_items != len)
            return cv_kerr(k, "input %u is a sequence of %u tensors but input 0 has %u", j, in[j]->n_items, len);
    }
    cv_val **bin = cv_malloc((n_in + 1) * sizeof *bin), **bout = cv_malloc((n_out + 1) * sizeof *bout);
    vlist *res = cv_malloc((n_out + 1) * sizeof *res);
    if (!bin || !bout || !res) {
        cv_free(bin), cv_free(bout), cv_free(res);
        return cv_knomem(k);
    }
    memset(bout, 0, (n_out + 1) * sizeof *bout);
    memset(res, 0, (n_out + 1) * sizeof *res);
    for (uint32_t i = 0; i < len && !s; i++) {
        for (uint32_t j = 0; j < n_in; j++)
            bin[j] = in[j]->kind == CV_VAL_SEQUENCE ? in[j]->items[i] : in[j];
        char where[64];
        snprintf(where, sizeof where, "body on element %u", i);
        s = run_body(k, g, bin, bout, where);
        for (uint32_t j = 0; j < n_out && !s; j++) {
            cv_val *y = bout[j];
            bout[j] = NULL;
            if (y->kind != CV_VAL_TENSOR)
                s = cv_kerr(k, "body output %u is not a tensor on element %u", j, i);
            else if (res[j].n && y->dtype != res[j].v[0]->dtype)
                s = cv_kerr(k, "body output %u is %s on element %u but %s on element 0", j,
                            carve_dtype_name(y->dtype), i, carve_dtype_name(res[j].v[0]->dtype));
            if (s || !vlist_push(&res[j], y)) {
                cv_val_unref(y);
                if (!s)
                    s = cv_knomem(k);
            }
        }
        unref_all(bout, n_out);
    }
    for (uint32_t j = 0; j < n_out && !s; j++) {
        carve_dtype dt = CARVE_UNDEFINED;
        if (res[j].n) {
            dt = res[j].v[0]->dtype;
        } else {
            const cv_type *t = &k->m->values[carve_graph_output(k->m, g, j)].type;
            if (t->kind == CARVE_TYPE_TENSOR)
                dt = t->dtype;
        }
        if (!(out[j] = cv_val_sequence(dt, (uint32_t)res[j].n, res[j].v)))
            s = cv_knomem(k);
    }
    if (s)
        unref_all(out, n_out);
    vlists_free(res, n_out);
    cv_free(bin);
    cv_free(bout);
    return s;
}

/* ---------------------------------------------------------------- inference */

static const cv_type *gout_type(const carve_model *m, carve_graph_id g, size_t i)
{
    if (g == CARVE_NONE || i >= carve_graph_output_count(m, g))
        return NULL;
    return &m->values[carve_graph_output(m, g, i)].type;
}

/* Type of output i that is `a` or `b` (either may be NULL): the dtype both
 * agree on and the dims they agree on. an/bn name a and b in errors. */
static carve_status set_merged(cv_ictx *c, uint32_t i, const cv_type *a, const cv_type *b, const char *an,
                               const char *bn)
{
    bool ta = a && a->kind == CARVE_TYPE_TENSOR, tb = b && b->kind == CARVE_TYPE_TENSOR;
    if (!ta && !tb)
        return CARVE_OK;
    if (!ta || !tb) {
        if ((a && a->kind == CARVE_TYPE_OTHER) || (b && b->kind == CARVE_TYPE_OTHER))
            return CARVE_OK;
        return cv_infer_set(c, i, ta ? a->dtype : b->dtype, -1, NULL);
    }
    if (a->dtype && b->dtype && a->dtype != b->dtype)
        return cv_ierr(c, "output %u is %s in %s but %s in %s", i, carve_dtype_name(a->dtype), an,
                       carve_dtype_name(b->dtype), bn);
    carve_dtype dt = a->dtype ? a->dtype : b->dtype;
    if (a->rank < 0 || b->rank < 0 || a->rank != b->rank)
        return cv_infer_set(c, i, dt, -1, NULL);
    carve_dim dims[CARVE_MAX_RANK];
    for (int d = 0; d < a->rank; d++) {
        carve_dim x = a->dims[d], y = b->dims[d];
        if (x.value >= 0 && x.value == y.value)
            dims[d] = x;
        else if (x.value < 0 && y.value < 0 && x.param && y.param && !strcmp(x.param, y.param))
            dims[d] = x;
        else
            dims[d] = (carve_dim){-1, NULL};
    }
    return cv_infer_set(c, i, dt, a->rank, dims);
}

/* Loop-carried output i of Loop and Scan: the body's output t merged with
 * the initial value, input j. */
static carve_status set_carried(cv_ictx *c, uint32_t i, const cv_type *t, uint32_t j)
{
    return set_merged(c, i, t, cv_infer_in(c, j), "the body's output", "the initial value");
}

/* Output i is body output type t with dim `lead` inserted at axis (a scan
 * output); axis counts in the result's rank. */
static carve_status set_stacked(cv_ictx *c, uint32_t i, const cv_type *t, int64_t axis, int n_lead,
                                const carve_dim *lead)
{
    if (!t || t->kind != CARVE_TYPE_TENSOR)
        return CARVE_OK;
    int r = t->rank + n_lead;
    if (t->rank < 0 || r > CARVE_MAX_RANK)
        return cv_infer_set(c, i, t->dtype, -1, NULL);
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis + n_lead > r)
        return cv_infer_set(c, i, t->dtype, -1, NULL);
    carve_dim dims[CARVE_MAX_RANK];
    for (int d = 0, j = 0; d < r; d++)
        dims[d] = d >= axis && d < axis + n_lead ? lead[d - axis] : t->dims[j++];
    return cv_infer_set(c, i, t->dtype, r, dims);
}

carve_status i_if(cv_ictx *c)
{
    carve_graph_id tg = cv_attr_g(c->m, c->node, "then_branch"), eg = cv_attr_g(c->m, c->node, "else_branch");
    const cv_node *n = &c->m->nodes[c->node];
    carve_status s = CARVE_OK;
    for (uint32_t i = 0; !s && i < n->n_out; i++)
        s = set_merged(c, i, gout_type(c->m, tg, i), gout_type(c->m, eg, i), "then_branch", "else_branch");
    return s;
}

carve_status i_loop(cv_ictx *c)
{
    carve_graph_id g = cv_attr_g(c->m, c->node, "body");
    const cv_node *n = &c->m->nodes[c->node];
    if (g == CARVE_NONE || n->n_in < 2)
        return CARVE_OK;
    uint32_t n_car = n->n_in - 2;
    /* The trip count is known when M is constant and no cond can stop it. */
    carve_dim trip = {-1, NULL};
    const cv_val *mv = c->const_input(c, 0);
    if (mv && mv->kind == CV_VAL_TENSOR && mv->nelem == 1 && cv_dtype_is_int(mv->dtype) &&
        (n->in[1] == CARVE_NONE)) {
        int64_t t = cv_val_get_i64(mv, 0);
        trip.value = t > 0 ? t : 0;
    }
    carve_status s = CARVE_OK;
    for (uint32_t i = 0; !s && i < n->n_out; i++)
        s = i < n_car ? set_carried(c, i, gout_type(c->m, g, 1 + i), 2 + i)
                      : set_stacked(c, i, gout_type(c->m, g, 1 + i), 0, 1, &trip);
    return s;
}

carve_status i_scan(cv_ictx *c)
{
    carve_graph_id g = cv_attr_g(c->m, c->node, "body");
    const cv_node *n = &c->m->nodes[c->node];
    int64_t m;
    uint32_t first = c->opset < 9;
    if (g == CARVE_NONE || !carve_node_attr_int(c->m, c->node, "num_scan_inputs", &m) || m < 1 ||
        m > (int64_t)n->n_in - first)
        return CARVE_OK;
    uint32_t n_st = n->n_in - first - (uint32_t)m;
    const cv_type *x0 = cv_infer_in(c, first + n_st);
    const int64_t *in_axes = NULL, *out_axes = NULL;
    int n_in_axes = cv_attr_ints(c->m, c->node, "scan_input_axes", &in_axes);
    int n_out_axes = cv_attr_ints(c->m, c->node, "scan_output_axes", &out_axes);
    carve_dim lead[2] = {{-1, NULL}, {-1, NULL}};
    if (x0 && x0->kind == CARVE_TYPE_TENSOR && x0->rank >= 1) {
        if (first) {
            lead[0] = x0->dims[0];
            if (x0->rank >= 2)
                lead[1] = x0->dims[1];
        } else {
            int64_t a = n_in_axes > 0 ? in_axes[0] : 0;
            if (a < 0)
                a += x0->rank;
            if (a >= 0 && a < x0->rank)
                lead[0] = x0->dims[a];
        }
    }
    carve_status s = CARVE_OK;
    for (uint32_t i = 0; !s && i < n->n_out; i++) {
        const cv_type *t = gout_type(c->m, g, i);
        if (i < n_st && first)
            s = set_stacked(c, i, t, 0, 1, lead);
        else if (i < n_st)
            s = set_carried(c, i, t, i);
        else if (first)
            s = set_stacked(c, i, t, 0, 2, lead);
        else
            s = set_stacked(c, i, t, n_out_axes > (int)(i - n_st) ? out_axes[i - n_st] : 0, 1, lead);
    }
    return s;
}

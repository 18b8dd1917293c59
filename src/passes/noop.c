/* noop.c: ops that compute nothing go.
 *
 * Exporters leave such ops behind (an Identity before every graph output, a
 * Cast to the type the value has, a Mul by a constant one, a Slice over the
 * whole range); folding leaves more (a Mul by a scale that folded to ones).
 * Each is decided from constants and inferred types only:
 *   Identity; Dropout in inference with its mask unread; Cast to its input's
 *   type; Mul or Div by ones and Add or Sub of zeros whose broadcast leaves
 *   the shape; Slice whose every range covers its axis; Transpose by the
 *   identity permutation; Reshape to the static shape its input has.
 * Readers of the output read the input instead. A graph output keeps its
 * name: the input's producer writes it instead when nothing else reads the
 * input, otherwise the op stays (onnxruntime refuses a subgraph output that
 * is an outer value, so that is never made). */
#include "passes.h"

#include <string.h>

static const cv_type *tensor_type(const carve_model *m, carve_value_id v)
{
    const cv_type *t = v == CARVE_NONE ? NULL : &m->values[v].type;
    return t && t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 && t->dtype ? t : NULL;
}

/* Is constant c, every element equal to e, with a broadcast that leaves x's
 * shape as it is? */
static bool neutral(const carve_model *m, carve_value_id x, carve_value_id cv, double e)
{
    const cv_tensor *c = cv_fold_const(m, cv);
    if (!c)
        return false;
    const cv_type *xt = tensor_type(m, x);
    if (!xt || c->dtype != xt->dtype || c->dtype == CARVE_STRING || c->rank > xt->rank ||
        (c->nelem && !c->data))
        return false;
    for (int k = 1; k <= c->rank; k++) {
        int64_t cd = c->dims[c->rank - k], xd = xt->dims[xt->rank - k].value;
        if (cd != 1 && cd != xd)
            return false;
    }
    cv_val *v = cv_val_from_tensor(c);
    bool all = v != NULL;
    for (size_t i = 0; all && i < v->nelem; i++)
        all = cv_val_get_f64(v, i) == e;
    cv_val_unref(v);
    return all;
}

/* The ints of constant v (at most n), or -1. */
static int const_ints(const carve_model *m, carve_value_id v, int64_t *out, int n)
{
    const cv_tensor *t = cv_fold_const(m, v);
    if (!t || (t->dtype != CARVE_INT64 && t->dtype != CARVE_INT32) || t->rank > 1 || t->nelem > (size_t)n)
        return -1;
    cv_val *x = cv_val_from_tensor(t);
    if (!x)
        return -1;
    for (size_t i = 0; i < x->nelem; i++)
        out[i] = cv_val_get_i64(x, i);
    cv_val_unref(x);
    return (int)t->nelem;
}

/* Does the Slice take every element? Each range must start at the first
 * element and reach past the last with step 1 (by the static dim, or by
 * ends that no dim reaches). */
static bool full_slice(const carve_model *m, carve_node_id id)
{
    const cv_node *n = &m->nodes[id];
    const cv_type *xt = tensor_type(m, n->in[0]);
    if (!xt)
        return false;
    int64_t starts[CARVE_MAX_RANK], ends[CARVE_MAX_RANK], axes[CARVE_MAX_RANK], steps[CARVE_MAX_RANK];
    int ns, ne, na, nst = -1;
    if (carve_model_opset(m, "") < 10) {
        const int64_t *p;
        ns = cv_attr_ints(m, id, "starts", &p);
        if (ns < 0 || ns > CARVE_MAX_RANK)
            return false;
        if (ns)
            memcpy(starts, p, (size_t)ns * sizeof *p);
        ne = cv_attr_ints(m, id, "ends", &p);
        if (ne != ns)
            return false;
        if (ne)
            memcpy(ends, p, (size_t)ne * sizeof *p);
        na = cv_attr_ints(m, id, "axes", &p);
        if (na > 0 && na <= CARVE_MAX_RANK)
            memcpy(axes, p, (size_t)na * sizeof *p);
    } else {
        ns = const_ints(m, n->in[1], starts, CARVE_MAX_RANK);
        ne = n->n_in > 2 ? const_ints(m, n->in[2], ends, CARVE_MAX_RANK) : -1;
        na = n->n_in > 3 && n->in[3] != CARVE_NONE ? const_ints(m, n->in[3], axes, CARVE_MAX_RANK) : -2;
        nst = n->n_in > 4 && n->in[4] != CARVE_NONE ? const_ints(m, n->in[4], steps, CARVE_MAX_RANK) : -2;
        if (ns < 0 || ne != ns || na == -1 || nst == -1 || (nst >= 0 && nst != ns))
            return false;
        na = na == -2 ? -1 : na;
    }
    if (na >= 0 && na != ns)
        return false;
    for (int i = 0; i < ns; i++) {
        int64_t axis = na >= 0 ? axes[i] : i;
        if (axis < 0)
            axis += xt->rank;
        if (axis < 0 || axis >= xt->rank)
            return false;
        int64_t dim = xt->dims[axis].value;
        if ((nst >= 0 && steps[i] != 1) || (starts[i] != 0 && !(dim >= 0 && starts[i] <= -dim)))
            return false;
        if (!(ends[i] >= ((int64_t)1 << 31) - 1 || (dim >= 0 && ends[i] >= dim)))
            return false;
    }
    return true;
}

/* op-list: data (the ops that may compute nothing; NOOP_* are their kinds,
 * cv_fold_op_kind) */
static const char *const noop_ops[] = {"Identity", "Dropout", "Cast", "Slice", "Transpose", "Reshape",
                                       "Mul", "Add", "Div", "Sub"};
enum { NOOP_IDENTITY = 1, NOOP_DROPOUT, NOOP_CAST, NOOP_SLICE, NOOP_TRANSPOSE, NOOP_RESHAPE, NOOP_ARITH };

/* The arithmetic no-ops, kinds NOOP_ARITH on in noop_ops' order: the
 * neutral element, whether the constant may stand on either side, what the
 * report calls it. */
static const struct {
    double e;
    bool commutes;
    const char *what;
} arith[] = {
    {1, true, "a Mul by ones"},
    {0, true, "an Add of zeros"},
    {1, false, "a Div by ones"},
    {0, false, "a Sub of zeros"},
};
_Static_assert(NOOP_ARITH - 1 + sizeof arith / sizeof *arith == sizeof noop_ops / sizeof *noop_ops,
               "an arith row per arithmetic op");

/* Which input of node id (of kind `kind`, not 0) passes through unchanged,
 * or -1; *what says why. */
static int passes_through(const cv_fold *f, carve_node_id id, uint32_t kind, int64_t opset, const char **what)
{
    const carve_model *m = f->m;
    const cv_node *n = &m->nodes[id];
    if (n->n_in < 1 || n->in[0] == CARVE_NONE || n->n_out < 1 || n->out[0] == CARVE_NONE)
        return -1;
    for (uint32_t j = 1; j < n->n_out; j++)
        if (n->out[j] != CARVE_NONE && (f->uses[n->out[j]] || f->is_out[n->out[j]]))
            return -1;
    if (kind >= NOOP_ARITH) {
        /* most Adds and Muls have no constant input: no call for them */
        uint32_t i = kind - NOOP_ARITH;
        if (n->n_in != 2 || (!cv_fold_const(m, n->in[1]) && !(arith[i].commutes && cv_fold_const(m, n->in[0]))))
            return -1;
        *what = arith[i].what;
        if (neutral(m, n->in[0], n->in[1], arith[i].e))
            return 0;
        return arith[i].commutes && neutral(m, n->in[1], n->in[0], arith[i].e) ? 1 : -1;
    }
    const cv_type *xt = tensor_type(m, n->in[0]);
    switch (kind) {
    case NOOP_IDENTITY:
        *what = "an Identity";
        return 0;
    case NOOP_DROPOUT: {
        bool inference = opset >= 12 ? n->n_in < 3 || n->in[2] == CARVE_NONE : opset >= 7 || cv_attr_i(m, id, "is_test", 0);
        if (opset >= 12 && !inference) {
            const cv_tensor *t = cv_fold_const(m, n->in[2]);
            cv_val *v = t ? cv_val_from_tensor(t) : NULL;
            inference = v && v->nelem == 1 && cv_val_get_f64(v, 0) == 0;
            cv_val_unref(v);
        }
        *what = "a Dropout in inference";
        return inference ? 0 : -1;
    }
    case NOOP_CAST:
        *what = "a Cast to the type its input has";
        return xt && cv_attr_i(m, id, "to", 0) == xt->dtype ? 0 : -1;
    case NOOP_SLICE:
        *what = "a Slice over the whole range";
        return full_slice(m, id) ? 0 : -1;
    case NOOP_TRANSPOSE: {
        const int64_t *p;
        int cnt = cv_attr_ints(m, id, "perm", &p);
        bool same = cnt >= 0 || (xt && xt->rank <= 1);
        for (int i = 0; cnt >= 0 && i < cnt; i++)
            same = same && p[i] == i;
        *what = "a Transpose by the identity";
        return same ? 0 : -1;
    }
    case NOOP_RESHAPE: {
        if (opset < 5 || n->n_in != 2 || !xt)
            return -1;
        int64_t s[CARVE_MAX_RANK];
        int cnt = const_ints(m, n->in[1], s, CARVE_MAX_RANK);
        bool same = cnt == xt->rank;
        for (int i = 0; same && i < cnt; i++)
            same = xt->dims[i].value >= 0 && s[i] == xt->dims[i].value;
        *what = "a Reshape to the shape its input has";
        return same ? 0 : -1;
    }
    default:
        return -1;
    }
}

/* One pass over each live graph. Readers of a removed op's output read its
 * input instead: the list is in topological order, so a node's own inputs
 * are redirected when its turn comes, and the rest of the graph and its
 * subgraphs once at the end (not one whole-graph rewrite per removed op);
 * removed ops leave the list in one sweep too. */
typedef struct {
    bool *changed;
    cv_fold_ops ops;   /* noop_ops */
    int64_t opset;     /* ai.onnx's */
    carve_value_id *rep; /* by value id, made at the first removal */
    uint32_t n_rep;
    cv_ids replaced; /* the values rep replaces, to reset it per graph */
    bool redirected; /* in the current graph */
} noop_sweep;

static carve_status noop_graph(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *arg)
{
    (void)g;
    carve_model *m = f->m;
    noop_sweep *w = arg;
    carve_status s = CARVE_OK;
    w->redirected = false;
    for (uint32_t i = 0; i < nodes->n && !s; i++) {
        carve_node_id id = nodes->v[i];
        const char *what = NULL;
        if (m->nodes[id].dead)
            continue;
        cv_node *nd = &m->nodes[id];
        for (uint32_t j = 0; w->redirected && j < nd->n_in; j++)
            nd->in[j] = cv_fold_resolve(w->rep, w->n_rep, nd->in[j]);
        uint32_t kind = cv_fold_op_kind(&w->ops, f, id);
        int k_in = kind ? passes_through(f, id, kind, w->opset, &what) : -1;
        if (k_in < 0)
            continue;
        const cv_node *n = &m->nodes[id];
        carve_value_id x = n->in[k_in], y = n->out[0];
        const cv_type *xt = tensor_type(m, x), *yt = tensor_type(m, y);
        if (xt && yt && xt->dtype != yt->dtype)
            continue; /* a type the model declares differently: leave it */
        if (!f->is_out[y]) {
            if (!w->rep) {
                if (!(w->rep = cv_malloc(((size_t)w->n_rep + 1) * sizeof *w->rep))) {
                    s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
                    break;
                }
                for (uint32_t v = 0; v < w->n_rep; v++)
                    w->rep[v] = CARVE_NONE;
            }
            if (y < w->n_rep && cv_ids_push(&w->replaced, y)) {
                w->rep[y] = x;
            } else if (y < w->n_rep) {
                s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
                break;
            } else {
                cv_fold_replace_reads(m, n->graph, y, x, false);
            }
            w->redirected = true;
            f->uses[x] += f->uses[y];
            f->uses[y] = 0;
        } else {
            carve_node_id p = m->values[x].producer;
            if (p == CARVE_NONE || m->nodes[p].graph != n->graph || f->uses[x] != 1 || f->is_out[x])
                continue;
            cv_fold_rebind_output(f, p, m->values[x].out_index, y);
        }
        f->uses[x]--;
        const char *why = cv_arena_printf(&m->arena, "%s: it computes nothing", what);
        if (!why)
            s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        else
            cv_fold_drop(f, id, CV_FATE_REMOVED, CARVE_NONE, why);
        *w->changed = true;
    }
    return s;
}

/* The rest of the graph and its subgraphs read the kept inputs, at once. */
static carve_status noop_redirect(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *arg)
{
    (void)nodes;
    noop_sweep *w = arg;
    if (w->redirected) {
        cv_fold_replace_reads_map(f->m, g, w->rep, w->n_rep);
        for (uint32_t q = 0; q < w->replaced.n; q++)
            w->rep[w->replaced.v[q]] = CARVE_NONE;
        w->replaced.n = 0;
    }
    w->redirected = false;
    return CARVE_OK;
}

static carve_status sweep(cv_fold *f, bool *changed)
{
    noop_sweep w = {.changed = changed,
                    .ops = CV_FOLD_OPS(noop_ops),
                    .opset = carve_model_opset(f->m, ""),
                    .n_rep = f->m->n_values};
    carve_status s = cv_fold_sweep(f, noop_graph, noop_redirect, &w, "folding");
    cv_fold_ops_free(&w.ops);
    cv_free(w.rep);
    cv_ids_free(&w.replaced);
    return s;
}

carve_status cv_fold_noop(cv_fold *f)
{
    bool changed = true;
    carve_status s = CARVE_OK;
    for (int round = 0; changed && !s && round < 8; round++) {
        changed = false;
        s = sweep(f, &changed);
    }
    return s;
}

/* fold_qdq.c: layout ops after a quantized weight's DequantizeLinear.
 *
 * Folding never computes the DequantizeLinear of a constant integer weight:
 * the target needs the integer weight and its encoding. A Transpose, Reshape,
 * Squeeze, Unsqueeze or Flatten that follows it would then stay an op on a
 * constant; instead it is applied to the integer weight (with the op's own
 * kernel) and the DequantizeLinear's attributes follow:
 *   w_int8 -> DequantizeLinear -> Transpose -> MatMul
 * becomes
 *   w_int8' -> DequantizeLinear' -> MatMul
 * Per-tensor encodings need nothing; per-axis ones get the axis's new
 * position; blocked ones (opset 21 block_size) also get their scale and zero
 * point moved the same way. When the quantization axis has no image through
 * the op (a reshape that splits or merges it) the op is left alone. */
#include "passes.h"

#include <string.h>

/* Where the quantization axis of a tensor of dims `in` lands when its
 * elements are laid out again as dims `out` (same order, new shape): the j
 * with prod(out[0..j)) == prod(in[0..axis)) and out[j] == in[axis]; -1 when
 * the axis is split or merged. */
static int reshaped_axis(int in_rank, const int64_t *in, int axis, int out_rank, const int64_t *out)
{
    (void)in_rank;
    uint64_t pre = 1, p = 1;
    for (int i = 0; i < axis; i++)
        pre *= (uint64_t)in[i];
    for (int j = 0; j < out_rank && p <= pre; j++) {
        if (p == pre && out[j] == in[axis])
            return j;
        p *= (uint64_t)out[j];
    }
    return -1;
}

/* The Transpose's permutation (its attribute, or reversed axes). */
static bool perm_of(const carve_model *m, carve_node_id n, int rank, int *perm)
{
    const int64_t *p;
    int cnt = cv_attr_ints(m, n, "perm", &p);
    if (cnt < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return true;
    }
    if (cnt != rank)
        return false;
    for (int i = 0; i < rank; i++) {
        if (p[i] < 0 || p[i] >= rank)
            return false;
        perm[i] = (int)p[i];
    }
    return true;
}

/* Runs layout node l on x in place of its input 0 (other inputs as in the
 * model: constants). */
static cv_val *apply(carve_model *m, carve_node_id l, const cv_tensor *x)
{
    const cv_node *n = &m->nodes[l];
    cv_val *in[2] = {cv_val_from_tensor(x), NULL}, *out[1] = {NULL};
    bool ok = in[0] != NULL && n->n_in <= 2;
    if (ok && n->n_in == 2 && n->in[1] != CARVE_NONE)
        ok = (in[1] = cv_val_from_tensor(cv_fold_const(m, n->in[1]))) != NULL;
    if (ok && cv_fold_kernel(m, l, in, n->n_in, out, 1))
        out[0] = NULL;
    cv_val_unref(in[0]);
    cv_val_unref(in[1]);
    if (out[0] && out[0]->kind != CV_VAL_TENSOR) {
        cv_val_unref(out[0]);
        out[0] = NULL;
    }
    return ok ? out[0] : NULL;
}

typedef enum { Q_TENSOR, Q_AXIS, Q_BLOCK } qkind;

/* Moves layout node l onto the weight of the DequantizeLinear before it. */
static carve_status move_one(cv_fold *f, carve_node_id l, bool *changed)
{
    carve_model *m = f->m;
    const cv_node *n = &m->nodes[l];
    if (!cv_op_has(m, l, CV_OP_LAYOUT) || n->n_in < 1 || n->n_in > 2 || n->n_out != 1 || n->out[0] == CARVE_NONE ||
        n->in[0] == CARVE_NONE)
        return CARVE_OK;
    carve_value_id x = n->in[0];
    carve_node_id dq = m->values[x].producer;
    if (dq == CARVE_NONE || !cv_node_is(&m->nodes[dq], "DequantizeLinear") || m->nodes[dq].graph != n->graph ||
        f->uses[x] != 1 || f->is_out[x])
        return CARVE_OK;
    if (n->n_in == 2 && n->in[1] != CARVE_NONE && !cv_fold_const(m, n->in[1]))
        return CARVE_OK; /* a shape or axes known only at run time */
    const cv_node *d = &m->nodes[dq];
    const cv_tensor *w = cv_fold_const(m, d->in[0]);
    const cv_tensor *sc = d->n_in > 1 ? cv_fold_const(m, d->in[1]) : NULL;
    carve_value_id zpv = d->n_in > 2 ? d->in[2] : CARVE_NONE;
    const cv_tensor *zp = cv_fold_const(m, zpv);
    if (!w || !sc || (zpv != CARVE_NONE && !zp) || w->dtype == CARVE_STRING)
        return CARVE_OK;
    int64_t opset = carve_model_opset(m, "");
    int64_t block = opset >= 21 ? cv_attr_i(m, dq, "block_size", 0) : 0;
    int64_t axis = cv_attr_i(m, dq, "axis", 1);
    if (axis < 0)
        axis += w->rank;
    qkind kind;
    if (block == 0 && sc->nelem == 1 && sc->rank <= 1)
        kind = Q_TENSOR;
    else if (axis < 0 || axis >= w->rank)
        return CARVE_OK;
    else if (block == 0 && sc->rank == 1 && sc->dims[0] == w->dims[axis])
        kind = Q_AXIS;
    else if (block > 0 && sc->rank == w->rank)
        kind = Q_BLOCK;
    else
        return CARVE_OK;
    cv_val *wq = apply(m, l, w), *sq = NULL, *zq = NULL;
    if (!wq)
        return CARVE_OK;
    int new_axis = (int)axis;
    int64_t sdims[CARVE_MAX_RANK];
    bool ok = true;
    if (kind != Q_TENSOR) {
        if (cv_node_is(n, "Transpose")) {
            int perm[CARVE_MAX_RANK];
            ok = perm_of(m, l, w->rank, perm);
            new_axis = -1;
            for (int j = 0; ok && j < w->rank; j++)
                if (perm[j] == axis)
                    new_axis = j;
        } else {
            new_axis = reshaped_axis(w->rank, w->dims, (int)axis, wq->rank, wq->dims);
        }
        ok = ok && new_axis >= 0;
    }
    if (ok && kind == Q_BLOCK) {
        if (cv_node_is(n, "Transpose")) {
            /* the scale has the weight's rank: the same permutation moves it */
            sq = apply(m, l, sc);
            zq = zp ? apply(m, l, zp) : NULL;
            ok = sq && (!zp || zq);
        } else {
            memcpy(sdims, wq->dims, (size_t)wq->rank * sizeof *sdims);
            sdims[new_axis] = sc->dims[axis];
        }
    }
    if (!ok) {
        cv_val_unref(wq);
        cv_val_unref(sq);
        cv_val_unref(zq);
        return CARVE_OK;
    }
    carve_graph_id g = n->graph;
    const char *base = m->values[n->out[0]].name;
    char name[512];
    snprintf(name, sizeof name, "%s_quantized", base);
    carve_value_id wv = cv_fold_new_init(f, g, name, wq->dtype, wq->rank, wq->dims, wq->data, wq->nbytes);
    carve_value_id sv = CARVE_NONE, zv = CARVE_NONE;
    if (wv != CARVE_NONE && kind == Q_BLOCK) {
        snprintf(name, sizeof name, "%s_scale", base);
        sv = sq ? cv_fold_new_init(f, g, name, sq->dtype, sq->rank, sq->dims, sq->data, sq->nbytes)
                : cv_fold_new_init(f, g, name, sc->dtype, wq->rank, sdims, sc->data, sc->nbytes);
        if (zp) {
            snprintf(name, sizeof name, "%s_zero_point", base);
            zv = zq ? cv_fold_new_init(f, g, name, zq->dtype, zq->rank, zq->dims, zq->data, zq->nbytes)
                    : cv_fold_new_init(f, g, name, zp->dtype, wq->rank, sdims, zp->data, zp->nbytes);
        }
    }
    cv_val_unref(wq);
    cv_val_unref(sq);
    cv_val_unref(zq);
    if (wv == CARVE_NONE || (kind == Q_BLOCK && (sv == CARVE_NONE || (zp && zv == CARVE_NONE))))
        return carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
    const char *why = cv_arena_printf(&m->arena, "%s applied to the quantized weight '%s' of DequantizeLinear '%s'",
                                      m->nodes[l].op, m->values[m->nodes[dq].in[0]].name, m->nodes[dq].name);
    cv_node *dn = &m->nodes[dq];
    dn->in[0] = wv;
    if (kind == Q_BLOCK) {
        dn->in[1] = sv;
        if (zp)
            dn->in[2] = zv;
    }
    if (kind != Q_TENSOR) {
        cv_attr *a = cv_node_attr_add(m, dq, "axis", CARVE_ATTR_INT);
        if (!a)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        a->u.i = new_axis;
    }
    if (!why || cv_model_nomem(m))
        return CARVE_ERR_NOMEM;
    cv_fold_rebind_output(f, dq, 0, m->nodes[l].out[0]);
    cv_fold_drop(f, l, CV_FATE_REMOVED, dq, why);
    f->st.layout_moved++;
    *changed = true;
    return CARVE_OK;
}

static carve_status move_graph(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *changed)
{
    (void)g;
    carve_status s = CARVE_OK;
    for (uint32_t i = 0; i < nodes->n && !s; i++) /* the layout test first: no call for other ops */
        if (!f->m->nodes[nodes->v[i]].dead && cv_op_has(f->m, nodes->v[i], CV_OP_LAYOUT))
            s = move_one(f, nodes->v[i], changed);
    return s;
}

carve_status cv_fold_qdq(cv_fold *f)
{
    bool changed = true;
    carve_status s = CARVE_OK;
    for (int round = 0; changed && !s && round < 16; round++) {
        changed = false;
        s = cv_fold_sweep(f, move_graph, NULL, &changed, "folding"); /* moved ops leave the list in one sweep */
    }
    return s;
}

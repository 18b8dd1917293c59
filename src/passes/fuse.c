/* fuse.c: folding in disguise, two rewrites that remove an op by moving its
 * arithmetic into constants.
 *
 * BatchNormalization (inference) after a Conv or Gemm whose weights are
 * constant float32 tensors: with s = scale / sqrt(var + eps) per channel,
 *   Conv:  W' = W * s (output channel = dim 0), B' = (B - mean) * s + bias
 *   Gemm:  B' = B * s (along N), C' = (beta * C - mean) * s + bias, beta' = 1
 * The Conv or Gemm keeps its name and now writes the BatchNormalization's
 * output. Weights that come from a DequantizeLinear are not constants here,
 * so quantized weights are left alone.
 *
 * MatMul followed by an Add of a constant bias becomes one Gemm when both
 * MatMul operands are 2-D and the bias broadcasts one way to the product
 * ([], [1], [N], [1,N], [M,1], [M,N]); the Gemm is named from the MatMul
 * ("<MatMul>/Gemm") and writes the Add's output. Lowering's rules then keep
 * it whole or decompose it again, per target. */
#include "passes.h"

#include <math.h>
#include <string.h>

static const cv_tensor *f32_const(const carve_model *m, carve_value_id v)
{
    const cv_tensor *t = cv_fold_const(m, v);
    return t && t->dtype == CARVE_FLOAT && (t->data || !t->nelem) ? t : NULL;
}

/* Does only `reader` read v (and v is no graph output)? */
static bool single_use(const cv_fold *f, carve_value_id v)
{
    return v != CARVE_NONE && v < f->n_uses && f->uses[v] == 1 && !f->is_out[v];
}

/* bn: a BatchNormalization */
static carve_status fuse_bn(cv_fold *f, carve_node_id bn, int64_t opset, bool *changed)
{
    carve_model *m = f->m;
    const cv_node *b = &m->nodes[bn];
    if (b->n_in != 5 || b->n_out < 1 || b->out[0] == CARVE_NONE)
        return CARVE_OK;
    for (uint32_t j = 1; j < b->n_out; j++)
        if (b->out[j] != CARVE_NONE && (f->uses[b->out[j]] || f->is_out[b->out[j]]))
            return CARVE_OK; /* training statistics are read */
    if ((opset >= 14 && cv_attr_i(m, bn, "training_mode", 0)) || (opset < 7 && !cv_attr_i(m, bn, "is_test", 0)) ||
        (opset < 9 && cv_attr_i(m, bn, "spatial", 1) != 1))
        return CARVE_OK;
    carve_value_id x = b->in[0];
    carve_node_id p = x == CARVE_NONE ? CARVE_NONE : m->values[x].producer;
    if (p == CARVE_NONE || m->nodes[p].graph != b->graph || !single_use(f, x))
        return CARVE_OK;
    const cv_node *pn = &m->nodes[p];
    bool conv = cv_node_is(pn, "Conv"), gemm = cv_node_is(pn, "Gemm");
    if ((!conv && !gemm) || pn->n_in < 2 || pn->n_out != 1)
        return CARVE_OK;
    const cv_tensor *scale = f32_const(m, b->in[1]), *bias = f32_const(m, b->in[2]), *mean = f32_const(m, b->in[3]),
                    *var = f32_const(m, b->in[4]);
    const cv_tensor *w = f32_const(m, pn->in[1]);
    carve_value_id bv = pn->n_in > 2 ? pn->in[2] : CARVE_NONE;
    const cv_tensor *b0 = f32_const(m, bv);
    if (!scale || !bias || !mean || !var || !w || (bv != CARVE_NONE && !b0))
        return CARVE_OK;
    size_t c = scale->nelem;
    if (bias->nelem != c || mean->nelem != c || var->nelem != c || !c)
        return CARVE_OK;
    bool trans_b = gemm && cv_attr_i(m, p, "transB", 0);
    if (conv && (w->rank < 3 || (size_t)w->dims[0] != c || (b0 && b0->nelem != c)))
        return CARVE_OK;
    if (gemm) {
        if (w->rank != 2 || (size_t)w->dims[trans_b ? 0 : 1] != c)
            return CARVE_OK;
        /* C must broadcast along N only: [], [1], [N], [1,N] */
        if (b0 && !(b0->nelem == 1 || (b0->nelem == c && (b0->rank == 1 || (b0->rank == 2 && b0->dims[0] == 1)))))
            return CARVE_OK;
    }
    double eps = cv_attr_f(m, bn, "epsilon", 1e-5f);
    double gemm_beta = gemm ? cv_attr_f(m, p, "beta", 1.0f) : 1.0;
    const float *sv = scale->data, *bb = bias->data, *mv = mean->data, *vv = var->data;
    const float *w0 = w->data, *c0 = b0 ? b0->data : NULL;
    float *nb = cv_malloc(c * sizeof *nb);
    double *s = cv_malloc(c * sizeof *s);
    if (!nb || !s) {
        cv_free(nb);
        cv_free(s);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    }
    for (size_t k = 0; k < c; k++) {
        s[k] = sv[k] / sqrt((double)vv[k] + eps);
        double b_in = c0 ? (gemm ? gemm_beta : 1.0) * c0[b0->nelem == 1 ? 0 : k] : 0.0;
        nb[k] = (float)((b_in - mv[k]) * s[k] + bb[k]);
    }
    const char *bname = m->nodes[bn].name;
    char name[512];
    snprintf(name, sizeof name, "%s/%s", bname, conv ? "W" : "B");
    carve_graph_id g = m->nodes[p].graph;
    /* the new weights are written over a copy of the old ones in the new
     * initializer itself: no buffer of their own to fault in and copy */
    carve_value_id wv = cv_fold_new_init(f, g, name, CARVE_FLOAT, w->rank, w->dims, w0, w->nbytes);
    if (wv != CARVE_NONE) {
        float *nw = (float *)m->values[wv].init->data;
        if (conv || trans_b) {
            size_t blk = w->nelem / c; /* output channel = dim 0: rows */
            for (size_t k = 0, i = 0; k < c; k++) /* a row at a time: no division per weight */
                for (size_t e = i + blk; i < e; i++)
                    nw[i] = (float)(w0[i] * s[k]);
        } else {
            for (size_t i = 0; i < w->nelem; i++) /* [K, N]: columns */
                nw[i] = (float)(w0[i] * s[i % c]);
        }
    }
    int64_t cd = (int64_t)c;
    snprintf(name, sizeof name, "%s/%s", bname, conv ? "B" : "C");
    carve_value_id nbv =
        wv == CARVE_NONE ? CARVE_NONE : cv_fold_new_init(f, g, name, CARVE_FLOAT, 1, &cd, nb, c * sizeof *nb);
    cv_free(nb);
    cv_free(s);
    if (nbv == CARVE_NONE)
        return carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
    m->nodes[p].in[1] = wv;
    if (!cv_fold_set_input(m, p, 2, nbv))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    if (gemm) {
        cv_attr *a = cv_node_attr_add(m, p, "beta", CARVE_ATTR_FLOAT);
        if (!a)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        a->u.f = 1.0f;
    }
    const char *why = cv_arena_printf(&m->arena, "BatchNormalization folded into the weights and bias of %s '%s'",
                                      m->nodes[p].op, m->nodes[p].name);
    if (!why)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    cv_fold_rebind_output(f, p, 0, m->nodes[bn].out[0]);
    cv_fold_drop(f, bn, CV_FATE_REMOVED, p, why);
    f->st.bn_fused++;
    *changed = true;
    return CARVE_OK;
}

/* The static value of dim d of v's type, -1 when unknown. */
static int64_t dim_of(const carve_model *m, carve_value_id v, int d)
{
    const cv_type *t = &m->values[v].type;
    return t->kind == CARVE_TYPE_TENSOR && d < t->rank ? t->dims[d].value : -1;
}

static int rank_of(const carve_model *m, carve_value_id v)
{
    const cv_type *t = &m->values[v].type;
    return t->kind == CARVE_TYPE_TENSOR ? t->rank : -1;
}

/* add: an Add; at: where the sweep found it in its graph's list (checked
 * before use). */
static carve_status fuse_gemm(cv_fold *f, carve_node_id add, uint32_t at, int64_t opset, bool *changed)
{
    carve_model *m = f->m;
    const cv_node *a = &m->nodes[add];
    if (a->n_in != 2 || a->n_out != 1 || a->out[0] == CARVE_NONE || opset < 7)
        return CARVE_OK;
    for (int side = 0; side < 2; side++) {
        carve_value_id mm = a->in[side], cv = a->in[1 - side];
        const cv_tensor *c = cv_fold_const(m, cv);
        carve_node_id p = !c || mm == CARVE_NONE ? CARVE_NONE : m->values[mm].producer;
        if (p == CARVE_NONE || !cv_node_is(&m->nodes[p], "MatMul") || m->nodes[p].graph != a->graph ||
            !single_use(f, mm) || m->nodes[p].n_in != 2)
            continue;
        carve_value_id av = m->nodes[p].in[0], bv = m->nodes[p].in[1];
        carve_dtype dt = m->values[mm].type.dtype;
        if (av == CARVE_NONE || bv == CARVE_NONE || rank_of(m, av) != 2 || rank_of(m, bv) != 2 || c->dtype != dt ||
            (dt != CARVE_FLOAT && dt != CARVE_DOUBLE && dt != CARVE_FLOAT16))
            continue;
        int64_t mdim = dim_of(m, av, 0), ndim = dim_of(m, bv, 1);
        if (ndim < 0)
            continue;
        bool fits = c->rank == 0 || (c->rank == 1 && (c->dims[0] == 1 || c->dims[0] == ndim)) ||
                    (c->rank == 2 && (c->dims[0] == 1 || (mdim >= 0 && c->dims[0] == mdim)) &&
                     (c->dims[1] == 1 || c->dims[1] == ndim));
        if (!fits)
            continue;
        carve_graph_id g = a->graph;
        carve_node_id gid = cv_node_new(m, g, "Gemm", "", 3, 1);
        if (gid == CARVE_NONE || !cv_names_derive(m, gid, p, "Gemm") || !cv_fold_grow(f))
            return carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
        cv_node *gn = &m->nodes[gid];
        gn->in[0] = av;
        gn->in[1] = bv;
        gn->in[2] = cv;
        f->nodes[gid].from = p;
        cv_ids *l = &m->graphs[g].nodes;
        if (f->lazy_g == g && at + 1 < l->n && l->v[at] == add && l->v[l->n - 1] == gid) {
            /* dropped nodes stay listed: the Gemm takes the Add's place
             * without shifting the list (the order the move below makes) */
            l->n--;
            l->v[at] = gid;
        } else {
            uint32_t pos = cv_graph_node_pos(m, add);
            cv_graph_move_tail(m, g, 1, pos);
        }
        cv_fold_rebind_output(f, gid, 0, m->nodes[add].out[0]);
        const char *why = cv_arena_printf(&m->arena, "MatMul '%s' and Add '%s' became Gemm '%s'", m->nodes[p].name,
                                          m->nodes[add].name, m->nodes[gid].name);
        if (!why)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        cv_fold_drop(f, add, CV_FATE_REMOVED, gid, why);
        cv_fold_drop(f, p, CV_FATE_REMOVED, gid, why);
        f->st.gemm_fused++;
        *changed = true;
        return CARVE_OK;
    }
    return CARVE_OK;
}

/* op-list: data (the ops the fusions start from; FUSE_* are their kinds) */
static const char *const fuse_ops[] = {"BatchNormalization", "Add"};
enum { FUSE_BN = 1, FUSE_ADD };

typedef struct {
    bool *changed;
    cv_fold_ops ops; /* fuse_ops */
    int64_t opset;   /* ai.onnx's */
} fuse_sweep;

/* One sweep over the live graphs; *changed when something fused. */
/* fused nodes leave the list in one sweep at the end, so positions in it
 * stay those of `nodes` until then */
static carve_status fuse_graph(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *arg)
{
    (void)g;
    fuse_sweep *w = arg;
    carve_status s = CARVE_OK;
    for (uint32_t i = 0; i < nodes->n && !s; i++)
        if (!f->m->nodes[nodes->v[i]].dead && cv_fold_op_kind(&w->ops, f, nodes->v[i]) == FUSE_BN)
            s = fuse_bn(f, nodes->v[i], w->opset, w->changed);
    for (uint32_t i = 0; i < nodes->n && !s; i++) {
        const cv_node *a = &f->m->nodes[nodes->v[i]];
        /* an Add with no constant input fuses nothing: no call for it */
        if (!a->dead && cv_fold_op_kind(&w->ops, f, nodes->v[i]) == FUSE_ADD && a->n_in == 2 &&
            (cv_fold_const(f->m, a->in[0]) || cv_fold_const(f->m, a->in[1])))
            s = fuse_gemm(f, nodes->v[i], i, w->opset, w->changed);
    }
    return s;
}

static carve_status sweep(cv_fold *f, bool *changed)
{
    fuse_sweep w = {changed, CV_FOLD_OPS(fuse_ops), carve_model_opset(f->m, "")};
    carve_status s = cv_fold_sweep(f, fuse_graph, NULL, &w, "folding");
    cv_fold_ops_free(&w.ops);
    return s;
}

carve_status cv_fold_fuse(cv_fold *f)
{
    /* again while something fused: MatMul + Add + BatchNormalization needs
     * the Gemm before the BatchNormalization can go into it */
    bool changed = true;
    carve_status s = CARVE_OK;
    for (int round = 0; changed && !s && round < 4; round++) {
        changed = false;
        s = sweep(f, &changed);
    }
    return s;
}

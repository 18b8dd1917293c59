/* qdq_apply.c: an AIMET encodings file applied to a float model as
 * QuantizeLinear/DequantizeLinear (`carve qdq`, carve_apply_encodings).
 *
 * AIMET's grid (x = (q_unsigned + offset) * scale) becomes ONNX's: a
 * symmetric encoding (is_sym) a signed type with zero point
 * -offset - 2^(bw-1), an asymmetric one an unsigned type with zero point
 * -offset; both give the same float grid. A param encoding of an
 * initializer W stores W quantized (rounded half to even, saturated, as
 * QuantizeLinear does) and reads it through a DequantizeLinear whose output
 * keeps the name W; an activation encoding of X puts X -> Q -> DQ before
 * X's readers (a graph output X keeps its name on the DQ's output). Per
 * channel, the axis is the one the weight's reader implies (Conv 0,
 * ConvTranspose 1, MatMul last, Gemm by transB), else the only axis as long
 * as the scale list; per block, the reduction axis (Conv 1, ConvTranspose 0,
 * MatMul second to last, Gemm by transB). dtype FLOAT of 16 bits is a
 * float16 round trip (Cast, Cast); of 32 bits, nothing. Tensors the graph
 * already quantizes (a DequantizeLinear's output, a QuantizeLinear's input)
 * are left alone. A model whose opset is below what an encoding needs (13
 * per channel; 21 for 4 or 16 bits and per block) is raised by carve's
 * upgrade pass (carve_upgrade) first. */
#include "partition.h"

#include "../io/files.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_onnx(const cv_node *n, const char *op) { return !*n->domain && !strcmp(n->op, op); }

typedef enum { A_SKIP, A_PARAM, A_ACT, A_CAST } action;

typedef struct {
    const cv_enc *e;
    carve_value_id v;
    action a;
    carve_dtype dt;
    int axis;     /* per channel / per block */
    int srank;    /* the scale tensor's shape */
    int64_t sdims[CARVE_MAX_RANK];
} plan;

static carve_status err(carve_model *m, const cv_enc *e, const char *fmt, const char *what)
{
    char msg[300];
    snprintf(msg, sizeof msg, fmt, what);
    return cv_error(m->ctx, CARVE_ERR_INVALID, "encodings: '%s' (%s encoding): %s", e->name,
                    e->param ? "param" : "activation", msg);
}

/* The first reader of v in graph 0 and the input slot it reads v at. */
static carve_node_id first_reader(const carve_model *m, carve_value_id v, uint32_t *slot)
{
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] == v) {
                *slot = k;
                return g->nodes.v[i];
            }
    }
    return CARVE_NONE;
}

static bool read_by_q(const carve_model *m, carve_value_id v)
{
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        if (is_onnx(n, "QuantizeLinear") && n->n_in && n->in[0] == v)
            return true;
    }
    return false;
}

/* The channel axis (block: the blocked axis) the reader of weight v implies; -1 when none. */
static int use_axis(const carve_model *m, carve_value_id v, int rank, bool block)
{
    uint32_t k = 0;
    carve_node_id r = first_reader(m, v, &k);
    if (r == CARVE_NONE || k != 1)
        return -1;
    const cv_node *n = &m->nodes[r];
    if (is_onnx(n, "Conv"))
        return block ? 1 : 0;
    if (is_onnx(n, "ConvTranspose"))
        return block ? 0 : 1;
    if (is_onnx(n, "MatMul") && rank >= 2)
        return block ? rank - 2 : rank - 1;
    if (is_onnx(n, "Gemm") && rank == 2)
        return (cv_attr_i(m, r, "transB", 0) != 0) != block ? 0 : 1;
    return -1;
}

static size_t block_count(int rank, const int64_t *dims, int axis, int64_t bs)
{
    size_t c = 1;
    for (int i = 0; i < rank; i++)
        c *= i == axis ? (size_t)((dims[i] + bs - 1) / bs) : (size_t)dims[i];
    return c;
}

static carve_status plan_one(carve_model *m, const cv_enc *e, plan *p, bool check_opset)
{
    memset(p, 0, sizeof *p);
    p->e = e;
    carve_value_id v = carve_graph_find_value(m, 0, e->name);
    if (v == CARVE_NONE || m->values[v].graph != 0)
        return err(m, e, "%s", "the model's main graph has no value of this name");
    p->v = v;
    const cv_value *x = &m->values[v];
    carve_node_id prod = x->producer;
    if ((prod != CARVE_NONE && is_onnx(&m->nodes[prod], "DequantizeLinear")) || read_by_q(m, v)) {
        p->a = A_SKIP; /* the graph quantizes it already */
        return CARVE_OK;
    }
    if (x->type.kind != CARVE_TYPE_TENSOR || x->type.dtype != CARVE_FLOAT) {
        char f[96];
        snprintf(f, sizeof f, "the value is %s, not float32", x->type.kind == CARVE_TYPE_TENSOR
                                                                   ? carve_dtype_name(x->type.dtype) : "not a tensor");
        return err(m, e, "%s", f);
    }
    if (e->is_float) {
        p->a = e->bw == 16 ? A_CAST : A_SKIP;
        return CARVE_OK;
    }
    bool is_const = x->init && !x->is_input;
    int64_t opset = carve_model_opset(m, "");
    int64_t need = e->kind == CV_ENC_TENSOR ? 10 : 13;
    if (e->bw == 4 || e->bw == 16 || e->kind == CV_ENC_BLOCK)
        need = 21;
    int64_t half = (int64_t)1 << (e->bw - 1);
    if (e->bw == 32) {
        if (!is_const)
            return err(m, e, "%s", "32 bits: QuantizeLinear has no 32-bit type (only a constant can be int32)");
        for (uint32_t i = 0; i < e->n; i++)
            if (e->offset[i] != -half)
                return err(m, e, "%s", "32 bits must be symmetric (offset -2^31: int32 with zero point 0)");
    }
    p->dt = e->bw == 32  ? CARVE_INT32
            : e->bw == 16 ? (e->sym ? CARVE_INT16 : CARVE_UINT16)
            : e->bw == 8  ? (e->sym ? CARVE_INT8 : CARVE_UINT8)
                          : (e->sym ? CARVE_INT4 : CARVE_UINT4);
    for (uint32_t i = 0; i < e->n; i++) {
        int64_t z = e->sym ? -e->offset[i] - half : -e->offset[i];
        int64_t lo = e->sym ? -half : 0, hi = e->sym ? half - 1 : 2 * half - 1;
        if (z < lo || z > hi) {
            char f[128];
            snprintf(f, sizeof f, "offset %lld gives zero point %lld outside %s", (long long)e->offset[i],
                     (long long)z, carve_dtype_name(p->dt));
            return err(m, e, "%s", f);
        }
    }
    if (check_opset && opset < need) {
        char f[200];
        snprintf(f, sizeof f,
                 "needs QuantizeLinear/DequantizeLinear of opset %lld (%s), and the model imports opset %lld, "
                 "which carve's upgrade could not raise",
                 (long long)need, e->kind == CV_ENC_BLOCK ? "per block" : e->bw != 8 && e->bw != 32 ? "4 or 16 bits" : "per channel",
                 (long long)opset);
        return err(m, e, "%s", f);
    }
    p->a = is_const && e->param ? A_PARAM : A_ACT;
    if (e->kind == CV_ENC_TENSOR)
        return CARVE_OK;
    int rank = x->type.rank;
    int64_t dims[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        dims[i] = x->type.dims[i].value;
        if (dims[i] < 0)
            return err(m, e, "%s", "per channel or per block needs the tensor's static shape");
    }
    if (rank < 1)
        return err(m, e, "%s", "per channel or per block needs a tensor of rank 1 or more");
    bool blk = e->kind == CV_ENC_BLOCK;
    int axis = p->a == A_PARAM ? use_axis(m, v, rank, blk) : (rank > 1 ? 1 : 0);
    bool fits = axis >= 0 && (blk ? block_count(rank, dims, axis, e->block) == e->n : (size_t)dims[axis] == e->n);
    for (int a = 0; !fits && a < rank; a++) {
        bool f = blk ? block_count(rank, dims, a, e->block) == e->n : (size_t)dims[a] == e->n;
        if (f && fits)
            return err(m, e, "%s", "several axes fit the scale list and no reader says which");
        if (f) {
            axis = a;
            fits = true;
        }
    }
    if (!fits) {
        char f[128];
        snprintf(f, sizeof f, "%u scales fit no axis of the tensor (rank %d)%s", e->n, rank,
                 blk ? " with this block_size" : "");
        return err(m, e, "%s", f);
    }
    p->axis = axis;
    if (blk) {
        p->srank = rank;
        for (int i = 0; i < rank; i++)
            p->sdims[i] = i == axis ? (dims[i] + e->block - 1) / e->block : dims[i];
    } else {
        p->srank = 1;
        p->sdims[0] = e->n;
    }
    return CARVE_OK;
}

static carve_status nomem(carve_model *m) { return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory applying encodings"); }

/* The scale and zero-point initializers of an encoding. */
static carve_status grid_inits(carve_model *m, const plan *p, carve_value_id *s, carve_value_id *z)
{
    const cv_enc *e = p->e;
    int rank = e->kind == CV_ENC_TENSOR ? 0 : p->srank;
    float *sf = cv_malloc(e->n * sizeof *sf);
    cv_val *zv = cv_val_new(p->dt, rank, p->sdims);
    if (!sf || !zv) {
        cv_free(sf);
        cv_val_unref(zv);
        return nomem(m);
    }
    int64_t half = (int64_t)1 << (e->bw - 1);
    for (uint32_t i = 0; i < e->n; i++) {
        sf[i] = (float)e->scale[i];
        cv_val_set_i64(zv, i, e->sym ? -e->offset[i] - half : -e->offset[i]);
    }
    const char *sn = cv_value_unique_name(m, 0, cv_arena_join(&m->arena, e->name, "_", "scale"));
    *s = sn ? carve_graph_add_initializer(m, 0, sn, CARVE_FLOAT, rank, p->sdims, sf, e->n * sizeof *sf) : CARVE_NONE;
    const char *zn = cv_value_unique_name(m, 0, cv_arena_join(&m->arena, e->name, "_", "zero_point"));
    *z = zn && *s != CARVE_NONE ? carve_graph_add_initializer(m, 0, zn, p->dt, rank, p->sdims, zv->data, zv->nbytes)
                                : CARVE_NONE;
    cv_free(sf);
    cv_val_unref(zv);
    return *z == CARVE_NONE ? carve_errcode(m->ctx) ? carve_errcode(m->ctx) : nomem(m) : CARVE_OK;
}

static carve_node_id add_qdq_node(carve_model *m, const plan *p, const char *op, carve_value_id in, carve_value_id s,
                                  carve_value_id z, carve_value_id out)
{
    carve_node_id id = cv_node_new(m, 0, op, "", 3, 1);
    if (id == CARVE_NONE)
        return id;
    m->nodes[id].in[0] = in;
    m->nodes[id].in[1] = s;
    m->nodes[id].in[2] = z;
    m->nodes[id].out[0] = out;
    m->values[out].producer = id;
    m->values[out].out_index = 0;
    m->nodes[id].name = cv_arena_printf(&m->arena, "%s/%s", p->e->name, op);
    if (!m->nodes[id].name || !cv_names_give(m, id))
        return CARVE_NONE;
    if (p->e->kind != CV_ENC_TENSOR && carve_node_set_attr_int(m, id, "axis", p->axis))
        return CARVE_NONE;
    if (p->e->kind == CV_ENC_BLOCK && carve_node_set_attr_int(m, id, "block_size", p->e->block))
        return CARVE_NONE;
    return id;
}

/* A new value of graph 0 typed like v with dtype dt. */
static carve_value_id like(carve_model *m, carve_value_id v, const char *suffix, carve_dtype dt)
{
    const char *nm = cv_value_unique_name(m, 0, cv_arena_join(&m->arena, m->values[v].name, "_", suffix));
    carve_value_id n = nm ? cv_value_new(m, 0, nm) : CARVE_NONE;
    if (n == CARVE_NONE)
        return n;
    const cv_type t = m->values[v].type;
    if (carve_value_set_type(m, n, dt, t.rank, t.dims))
        return CARVE_NONE;
    return n;
}

/* W (a float initializer) stored quantized, read through a DequantizeLinear
 * whose output is W. */
static carve_status apply_param(carve_model *m, const plan *p)
{
    carve_value_id s, z;
    carve_status st = grid_inits(m, p, &s, &z);
    if (st)
        return st;
    carve_value_id v = p->v;
    const cv_tensor *w = m->values[v].init;
    cv_val *wv = cv_val_from_tensor(w), *sv = cv_val_from_tensor(m->values[s].init), *q = NULL;
    cv_val *zv = cv_val_from_tensor(m->values[z].init);
    if (wv && sv && zv)
        q = cv_val_new(p->dt, w->rank, w->dims);
    if (!q) {
        cv_val_unref(wv), cv_val_unref(sv), cv_val_unref(zv);
        return nomem(m);
    }
    int bw = p->e->bw;
    bool sgn = p->e->sym;
    double lo = sgn ? -ldexp(1.0, bw - 1) : 0, hi = sgn ? ldexp(1.0, bw - 1) - 1 : ldexp(1.0, bw) - 1;
    int64_t axis = p->e->kind == CV_ENC_TENSOR ? 0 : p->axis, block = p->e->kind == CV_ENC_BLOCK ? p->e->block : 0;
    for (size_t i = 0; i < wv->nelem; i++) {
        size_t k = cv_enc_scale_index(w->rank, w->dims, axis, block, sv->nelem, i);
        double r = (double)rintf((float)cv_val_get_f64(wv, i) / (float)cv_val_get_f64(sv, k)) +
                   (double)cv_val_get_i64(zv, k);
        cv_val_set_i64(q, i, (int64_t)(r < lo ? lo : r > hi ? hi : r));
    }
    const char *qn = cv_value_unique_name(m, 0, cv_arena_join(&m->arena, p->e->name, "_", "quantized"));
    carve_value_id qi = qn ? carve_graph_add_initializer(m, 0, qn, p->dt, q->rank, q->dims, q->data, q->nbytes)
                           : CARVE_NONE;
    cv_val_unref(wv), cv_val_unref(sv), cv_val_unref(zv), cv_val_unref(q);
    if (qi == CARVE_NONE)
        return nomem(m);
    /* W stops being an initializer and becomes the DequantizeLinear's output */
    cv_ids *inits = &m->graphs[0].inits;
    uint32_t k = 0;
    for (uint32_t i = 0; i < inits->n; i++)
        if (inits->v[i] != v)
            inits->v[k++] = inits->v[i];
    inits->n = k;
    m->values[v].init = NULL;
    return add_qdq_node(m, p, "DequantizeLinear", qi, s, z, v) == CARVE_NONE ? nomem(m) : CARVE_OK;
}

/* Readers of X read y instead; a graph output X becomes y, which takes X's
 * name (X is renamed). */
static carve_status reroute(carve_model *m, carve_value_id x, carve_value_id y)
{
    cv_fold_replace_reads(m, 0, x, y, false);
    cv_graph *g = &m->graphs[0];
    bool out = false;
    for (uint32_t i = 0; i < g->outputs.n; i++)
        if (g->outputs.v[i] == x && !m->values[x].is_input) {
            g->outputs.v[i] = y;
            out = true;
        }
    if (!out)
        return CARVE_OK;
    const char *xn = m->values[x].name, *yn = m->values[y].name;
    const char *fn = cv_value_unique_name(m, 0, cv_arena_join(&m->arena, xn, "_", "float"));
    if (!fn)
        return nomem(m);
    cv_strmap_del(&g->scope, xn);
    cv_strmap_del(&g->scope, yn);
    m->values[x].name = fn;
    m->values[y].name = xn;
    if (!cv_strmap_put(&g->scope, fn, x) || !cv_strmap_put(&g->scope, xn, y))
        return nomem(m);
    return CARVE_OK;
}

static carve_status apply_act(carve_model *m, const plan *p)
{
    carve_value_id x = p->v, s = CARVE_NONE, z = CARVE_NONE;
    carve_status st = p->a == A_ACT ? grid_inits(m, p, &s, &z) : CARVE_OK;
    if (st)
        return st;
    carve_dtype mid = p->a == A_ACT ? p->dt : CARVE_FLOAT16;
    carve_value_id xq = like(m, x, p->a == A_ACT ? "quantized" : "float16", mid);
    carve_value_id xd = xq != CARVE_NONE ? like(m, x, p->a == A_ACT ? "dequantized" : "float32", CARVE_FLOAT) : CARVE_NONE;
    if (xd == CARVE_NONE)
        return nomem(m);
    if (p->a == A_ACT) {
        if (add_qdq_node(m, p, "DequantizeLinear", xq, s, z, xd) == CARVE_NONE || (st = reroute(m, x, xd)) ||
            add_qdq_node(m, p, "QuantizeLinear", x, s, z, xq) == CARVE_NONE)
            return st ? st : nomem(m);
        return CARVE_OK;
    }
    const carve_value_id ins[2] = {xq, x}, outs[2] = {xd, xq};
    const int64_t to[2] = {CARVE_FLOAT, CARVE_FLOAT16};
    for (int k = 0; k < 2; k++) {
        carve_node_id c = cv_node_new(m, 0, "Cast", "", 1, 1);
        if (c == CARVE_NONE)
            return nomem(m);
        m->nodes[c].in[0] = ins[k];
        m->nodes[c].out[0] = outs[k];
        m->values[outs[k]].producer = c;
        m->nodes[c].name = cv_arena_printf(&m->arena, "%s/Cast", p->e->name);
        if (!m->nodes[c].name || !cv_names_give(m, c) || carve_node_set_attr_int(m, c, "to", to[k]))
            return nomem(m);
        if (k == 0 && (st = reroute(m, x, xd)))
            return st;
    }
    return CARVE_OK;
}

carve_status carve_apply_encodings(carve_model *m, const char *json, size_t len, carve_qdq_stats *stats)
{
    carve_qdq_stats local = {0};
    cv_enc_list l;
    carve_status st = cv_enc_parse(m->ctx, json, len, &l);
    if (st)
        return st;
    if ((st = cv_infer_model(m, NULL))) { /* dtypes and shapes to check the encodings against */
        cv_enc_list_free(&l);
        return st;
    }
    plan *ps = cv_malloc((l.n + 1) * sizeof *ps);
    if (!ps) {
        cv_enc_list_free(&l);
        return nomem(m);
    }
    /* the whole file first (opsets aside): m changes only if all of it fits */
    int64_t need = 0;
    for (uint32_t i = 0; i < l.n && !st; i++) {
        const cv_enc *e = &l.v[i];
        if (!(st = plan_one(m, e, &ps[i], false)) && (ps[i].a == A_PARAM || ps[i].a == A_ACT)) {
            int64_t n = e->bw == 4 || e->bw == 16 || e->kind == CV_ENC_BLOCK ? 21 : e->kind == CV_ENC_CHANNEL ? 13 : 10;
            need = n > need ? n : need;
        }
    }
    /* 4 and 16 bits, per block (opset 21) and per channel (13) need newer
     * Q/DQ: carve's upgrade pass raises the model's opset (all or nothing) */
    if (!st && carve_model_opset(m, "") < need) {
        carve_upgrade_stats us = {0};
        if ((st = carve_upgrade(m, &us)) == CARVE_OK && us.refused[0])
            st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                          "encodings: need QuantizeLinear/DequantizeLinear of opset %lld; the model imports opset %lld "
                          "and carve's upgrade refused: %s",
                          (long long)need, (long long)us.opset_before, us.refused);
    }
    for (uint32_t i = 0; i < l.n && !st; i++)
        st = plan_one(m, &l.v[i], &ps[i], true);
    for (uint32_t i = 0; i < l.n && !st; i++) {
        switch (ps[i].a) {
        case A_SKIP: local.skipped++; break;
        case A_PARAM: st = apply_param(m, &ps[i]), local.params++; break;
        case A_ACT: st = apply_act(m, &ps[i]), local.activations++; break;
        case A_CAST: st = apply_act(m, &ps[i]), local.casts++; break;
        }
    }
    if (!st && l.n)
        st = cv_topo_sort(m, 0);
    if (!st)
        st = carve_model_verify(m);
    cv_free(ps);
    cv_enc_list_free(&l);
    if (!st && stats)
        *stats = local;
    return st;
}

carve_status carve_apply_encodings_file(carve_model *m, const char *path, carve_qdq_stats *stats)
{
    cv_input in = {0};
    carve_status st = cv_input_map(m->ctx, path, "encodings file", (uint64_t)1 << 31, &in);
    if (st)
        return st;
    st = carve_apply_encodings(m, (const char *)in.data, in.size, stats);
    cv_input_unmap(&in);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(m->ctx));
        cv_error(m->ctx, st, "%s: %s", path, msg);
    }
    return st;
}

/* qdq_strip.c: the AIMET encodings of a QDQ graph, and the float graph AIMET
 * users hand to a converter with them (--strip-qdq).
 *
 * Names follow what AIMET sees: for X -> QuantizeLinear -> DequantizeLinear
 * -> X' the encoding names the float tensor X, and with the pair stripped
 * X' is read as X; a constant weight's DequantizeLinear output W' names the
 * param encoding, and stripped, W' becomes a float initializer of that
 * name. A pair is stripped only where applying its encoding again (carve
 * qdq, carve_apply_encodings) gives back the same graph values bit for bit:
 * never a requantization (DQ -> Q), a quantized graph output, an X that
 * other ops read unquantized, or a weight whose integers do not survive
 * the trip through float (int32 biases above 2^24). */
#include "partition.h"

#include <math.h>
#include <string.h>

static bool is_onnx(const cv_node *n, const char *op) { return !*n->domain && !strcmp(n->op, op); }

typedef struct {
    carve_model *m;
    uint8_t *flags; /* by value id: OUT graph output, CAP read by a subgraph */
    uint32_t n_flags;
} sctx;
enum { F_OUT = 1, F_CAP = 2 };

static uint8_t flags_of(const sctx *s, carve_value_id v) { return v < s->n_flags ? s->flags[v] : F_CAP; }

/* Live readers of v among graph 0's nodes. */
static bool readers(const carve_model *m, carve_value_id v, cv_ids *out)
{
    out->n = 0;
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        if (n->dead)
            continue;
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] == v) {
                if (!cv_ids_push(out, g->nodes.v[i]))
                    return false;
                break;
            }
    }
    return true;
}

static bool same_tensor(const carve_model *m, carve_value_id a, carve_value_id b)
{
    if (a == b)
        return true;
    if (a == CARVE_NONE || b == CARVE_NONE)
        return false;
    const cv_tensor *x = cv_const_tensor(m, a), *y = cv_const_tensor(m, b);
    if (!x || !y || x->dtype != y->dtype || x->rank != y->rank || x->nbytes != y->nbytes)
        return false;
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] != y->dims[i])
            return false;
    return !memcmp(x->data, y->data, x->nbytes);
}

/* Do Q/DQ nodes a and b use the same grid? */
static bool same_params(const carve_model *m, carve_node_id a, carve_node_id b)
{
    const cv_node *x = &m->nodes[a], *y = &m->nodes[b];
    carve_value_id xz = x->n_in > 2 ? x->in[2] : CARVE_NONE, yz = y->n_in > 2 ? y->in[2] : CARVE_NONE;
    return x->n_in > 1 && y->n_in > 1 && same_tensor(m, x->in[1], y->in[1]) && same_tensor(m, xz, yz) &&
           cv_attr_i(m, a, "axis", 1) == cv_attr_i(m, b, "axis", 1) &&
           cv_attr_i(m, a, "block_size", 0) == cv_attr_i(m, b, "block_size", 0);
}

/* Scale index of element idx of a tensor of shape dims for a Q/DQ of
 * `axis` and `block` (0: per axis) whose scale has nscale elements. */
size_t cv_enc_scale_index(int rank, const int64_t *dims, int64_t axis, int64_t block, size_t nscale, size_t idx)
{
    if (nscale <= 1 || rank == 0)
        return 0;
    if (axis < 0)
        axis += rank;
    size_t inner = 1;
    for (int i = (int)axis + 1; i < rank; i++)
        inner *= (size_t)dims[i];
    size_t dim = (size_t)dims[axis], a = (idx / inner) % dim;
    if (block <= 0)
        return a;
    size_t nb = (dim + (size_t)block - 1) / (size_t)block, o = idx / (dim * inner);
    return (o * nb + a / (size_t)block) * inner + idx % inner;
}

/* Does quantizing w again with node n's grid give back its integers q? */
static bool round_trips(const carve_model *m, carve_node_id id, const cv_val *q, const cv_val *w, const cv_val *sc,
                        const cv_val *zp)
{
    int bits = cv_enc_int_bits(q->dtype);
    bool sgn = cv_dtype_is_signed(q->dtype);
    int64_t lo = sgn ? -((int64_t)1 << (bits - 1)) : 0, hi = sgn ? ((int64_t)1 << (bits - 1)) - 1 : ((int64_t)1 << bits) - 1;
    int64_t axis = cv_attr_i(m, id, "axis", 1), block = cv_attr_i(m, id, "block_size", 0);
    for (size_t i = 0; i < q->nelem; i++) {
        size_t s = cv_enc_scale_index(q->rank, q->dims, axis, block, sc->nelem, i);
        float r = rintf((float)cv_val_get_f64(w, i) / (float)cv_val_get_f64(sc, s));
        double back = (double)r + (double)(zp ? cv_val_get_i64(zp, s) : 0);
        back = back < (double)lo ? (double)lo : back > (double)hi ? (double)hi : back;
        if ((int64_t)back != cv_val_get_i64(q, i))
            return false;
    }
    return true;
}

/* A constant's DequantizeLinear becomes the float initializer it computes,
 * named as its output, when the integers come back; false: it stays. */
static carve_status strip_weight(carve_model *m, carve_node_id id, bool *done)
{
    *done = false;
    const cv_node *n = &m->nodes[id];
    cv_val *in[3] = {NULL, NULL, NULL}, *out[1] = {NULL};
    carve_status st = CARVE_OK;
    for (uint32_t k = 0; k < n->n_in && k < 3; k++)
        if (n->in[k] != CARVE_NONE && !(in[k] = cv_val_from_tensor(cv_const_tensor(m, n->in[k])))) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
            goto out;
        }
    if (cv_fold_kernel(m, id, in, n->n_in, out, 1) != CARVE_OK || out[0]->dtype != CARVE_FLOAT ||
        !round_trips(m, id, in[0], out[0], in[1], in[2]))
        goto out;
    carve_value_id v = n->out[0];
    cv_tensor *t = cv_tensor_new(m, CARVE_FLOAT, out[0]->rank, out[0]->dims, out[0]->data, out[0]->nbytes);
    if (!t) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
        goto out;
    }
    t->name = m->values[v].name;
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        d[i] = (carve_dim){t->dims[i], NULL};
    if ((st = carve_value_set_type(m, v, CARVE_FLOAT, t->rank, d)))
        goto out;
    cv_node_remove_later(m, id);
    m->values[v].init = t;
    m->values[v].producer = CARVE_NONE;
    if (!cv_ids_push(&m->graphs[0].inits, v))
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
    *done = !st;
out:
    for (int k = 0; k < 3; k++)
        cv_val_unref(in[k]);
    cv_val_unref(out[0]);
    return st;
}

/* Can the pair(s) after QuantizeLinear q go (see the header)? */
static bool strippable_q(sctx *s, carve_node_id q, cv_ids *r)
{
    carve_model *m = s->m;
    const cv_node *n = &m->nodes[q];
    carve_value_id x = n->in[0], y = n->out[0];
    carve_node_id p = m->values[x].producer;
    if (p != CARVE_NONE && is_onnx(&m->nodes[p], "DequantizeLinear"))
        return false; /* a requantization */
    if (flags_of(s, x) || flags_of(s, y) || !readers(m, x, r))
        return false;
    for (uint32_t i = 0; i < r->n; i++)
        if (!is_onnx(&m->nodes[r->v[i]], "QuantizeLinear") || !same_params(m, q, r->v[i]))
            return false;
    if (!readers(m, y, r) || !r->n)
        return false;
    for (uint32_t i = 0; i < r->n; i++) {
        const cv_node *d = &m->nodes[r->v[i]];
        if (!is_onnx(d, "DequantizeLinear") || d->in[0] != y || !same_params(m, q, r->v[i]) ||
            (flags_of(s, d->out[0]) & F_CAP))
            return false;
    }
    return true;
}

/* X -> Q -> DQ -> X': readers of X' read X; a graph output X' is written
 * by an Identity of X. r: the DequantizeLinear readers. */
static carve_status strip_pair(sctx *s, carve_node_id q, const cv_ids *r, bool *identities)
{
    carve_model *m = s->m;
    carve_value_id x = m->nodes[q].in[0];
    for (uint32_t i = 0; i < r->n; i++) {
        carve_node_id d = r->v[i];
        carve_value_id xd = m->nodes[d].out[0];
        cv_node_remove_later(m, d);
        if (flags_of(s, xd) & F_OUT) {
            carve_node_id id = cv_node_new(m, 0, "Identity", "", 1, 1);
            if (id == CARVE_NONE || !cv_names_derive(m, id, d, "identity"))
                return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
            m->nodes[id].in[0] = x;
            m->nodes[id].out[0] = xd;
            m->values[xd].producer = id;
            m->values[xd].out_index = 0;
            *identities = true;
        } else {
            cv_fold_replace_reads(m, 0, xd, x, false);
            cv_strmap_del_if(&m->graphs[0].scope, m->values[xd].name, xd);
        }
    }
    cv_strmap_del_if(&m->graphs[0].scope, m->values[m->nodes[q].out[0]].name, m->nodes[q].out[0]);
    cv_node_remove_later(m, q);
    return CARVE_OK;
}

/* Initializers of graph 0 nothing reads any more (the integer weights of
 * stripped DequantizeLinears, their scales) go. */
static carve_status drop_unread(sctx *s)
{
    carve_model *m = s->m;
    cv_graph *g = &m->graphs[0];
    uint8_t *read = cv_malloc((size_t)m->n_values + 1);
    if (!read)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
    memset(read, 0, (size_t)m->n_values + 1);
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] != CARVE_NONE)
                read[n->in[k]] = 1;
    }
    uint32_t w = 0;
    for (uint32_t i = 0; i < g->inits.n; i++) {
        carve_value_id v = g->inits.v[i];
        if (read[v] || flags_of(s, v) || m->values[v].is_input)
            g->inits.v[w++] = v;
        else
            cv_strmap_del_if(&g->scope, m->values[v].name, v);
    }
    g->inits.n = w;
    cv_free(read);
    return CARVE_OK;
}

static carve_status mark(sctx *s)
{
    carve_model *m = s->m;
    s->n_flags = m->n_values;
    s->flags = cv_malloc((size_t)m->n_values + 1);
    if (!s->flags)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
    memset(s->flags, 0, (size_t)m->n_values + 1);
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; i < g->outputs.n; i++)
        s->flags[g->outputs.v[i]] |= F_OUT;
    cv_ids cap = {0};
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++)
                if (!cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], &cap)) {
                    cv_ids_free(&cap);
                    return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory stripping QDQ");
                }
        }
    }
    for (uint32_t i = 0; i < cap.n; i++)
        if (cap.v[i] < s->n_flags)
            s->flags[cap.v[i]] |= F_CAP;
    cv_ids_free(&cap);
    return CARVE_OK;
}

carve_status cv_qdq_encodings(carve_model *m, bool strip, cv_enc_list *l, uint32_t *kept)
{
    memset(l, 0, sizeof *l);
    uint32_t left = 0;
    sctx s = {m, NULL, 0};
    cv_ids nodes = {0}, r = {0};
    carve_status st = mark(&s);
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; !st && i < g->nodes.n; i++)
        if (!cv_ids_push(&nodes, g->nodes.v[i]))
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    bool identities = false, removed = false;
    for (uint32_t i = 0; !st && i < nodes.n; i++) {
        carve_node_id id = nodes.v[i];
        const cv_node *n = &m->nodes[id];
        bool q = is_onnx(n, "QuantizeLinear"), dq = is_onnx(n, "DequantizeLinear");
        if (n->dead || (!q && !dq) || n->n_in < 2 || n->in[0] == CARVE_NONE || !n->n_out || n->out[0] == CARVE_NONE)
            continue;
        bool param = dq && cv_value_is_const(m, n->in[0]) && cv_const_tensor(m, n->in[0]);
        carve_node_id from = m->values[n->in[0]].producer;
        if (dq && !param && from != CARVE_NONE && is_onnx(&m->nodes[from], "QuantizeLinear")) {
            left++; /* X -> Q -> DQ -> X': the encoding is X's, made at the Q */
            continue;
        }
        carve_value_id named = q ? n->in[0] : n->out[0];
        cv_enc_status es = CV_ENC_SKIP;
        if (!cv_enc_find(l, m->values[named].name))
            es = cv_enc_from_node(m, id, m->values[named].name, param, l);
        else if (q)
            es = CV_ENC_OK; /* X read by several Q nodes: the first one named it */
        if (es == CV_ENC_NOMEM) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing encodings");
            break;
        }
        bool gone = false;
        if (strip && es == CV_ENC_OK && q && strippable_q(&s, id, &r) && !(st = strip_pair(&s, id, &r, &identities)))
            gone = removed = true;
        else if (strip && es == CV_ENC_OK && param && !(flags_of(&s, n->out[0]) & F_CAP) &&
                 !(st = strip_weight(m, id, &gone)) && gone)
            removed = true;
        if (!gone)
            left++;
    }
    if (!st && removed) {
        cv_graph_drop_dead(m, 0);
        st = drop_unread(&s);
    }
    if (!st && identities)
        st = cv_topo_sort(m, 0);
    if (!st && strip)
        st = carve_model_verify(m);
    cv_ids_free(&nodes);
    cv_ids_free(&r);
    cv_free(s.flags);
    if (st)
        cv_enc_list_free(l);
    else if (kept)
        *kept = left;
    return st;
}

static carve_status to_json(carve_model *m, cv_enc_list *l, carve_aimet_version v, char **json)
{
    carve_status st = l->n ? cv_enc_write(m->ctx, l, v, json) : CARVE_OK;
    cv_enc_list_free(l);
    return st;
}

carve_status carve_aimet_encodings(carve_model *m, carve_aimet_version v, char **json)
{
    *json = NULL;
    cv_enc_list l;
    carve_status st = cv_qdq_encodings(m, false, &l, NULL);
    return st ? st : to_json(m, &l, v, json);
}

carve_status carve_strip_qdq(carve_model *m, carve_aimet_version v, char **json, uint32_t *kept)
{
    *json = NULL;
    cv_enc_list l;
    carve_status st;
    if (v == CARVE_AIMET_0_6_1) { /* refuse before changing the graph */
        char *probe = NULL;
        if ((st = carve_aimet_encodings(m, v, &probe)))
            return st;
        cv_free(probe);
    }
    st = cv_qdq_encodings(m, true, &l, kept);
    return st ? st : to_json(m, &l, v, json);
}

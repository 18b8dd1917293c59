/* legalize.c: rewrites a Delegate body into what the target can run, as its
 * profile asks:
 *  - int64_to_int32: int64 values become int32 inside the body while the
 *    Delegate's inputs and outputs keep the model's dtypes: Casts at the
 *    body's edges, int32 copies of int64 constants (Slice bounds clamped to
 *    the int32 range, which keeps their meaning; other out-of-range
 *    constants never reach here: capability sent those nodes to CPU), Cast
 *    nodes retargeted, and a Cast after ops whose output is int64 by
 *    definition (Shape, ArgMax...).
 *  - uint8_cast_via_int32: an unquantized Cast uint8 -> float becomes uint8 ->
 *    int32 -> float (HTP's direct cast maps every non-zero input to 1).
 * New nodes are named from the Delegate ("Delegate_0/x/to_int32"). */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

/* Ops whose int64 outputs are int64 whatever their inputs: a column of the
 * op table (CV_OP_MAKES_INT64). */
bool cv_op_makes_int64(const carve_model *m, carve_node_id n)
{
    return cv_op_has(m, n, CV_OP_MAKES_INT64);
}

static carve_node_id add_cast(carve_model *m, carve_graph_id body, carve_node_id from, const char *piece,
                              carve_value_id in, carve_value_id out, carve_dtype to)
{
    carve_node_id c = cv_node_new(m, body, "Cast", "", 1, 1);
    if (c == CARVE_NONE)
        return CARVE_NONE;
    if (!cv_names_derive(m, c, from, piece)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        return CARVE_NONE;
    }
    m->nodes[c].in[0] = in;
    m->nodes[c].out[0] = out;
    m->values[out].producer = c;
    m->values[out].out_index = 0;
    if (carve_node_set_attr_int(m, c, "to", to))
        return CARVE_NONE;
    return c;
}

static carve_value_id new_value(carve_model *m, carve_graph_id body, const char *base, const cv_value *like,
                                carve_dtype dtype)
{
    cv_type type = like->type; /* like points into m->values, which cv_value_new may move */
    const char *nm = cv_value_unique_name(m, body, base);
    carve_value_id v = nm ? cv_value_new(m, body, nm) : CARVE_NONE;
    if (v == CARVE_NONE)
        return v;
    m->values[v].type = type;
    m->values[v].type.dtype = dtype;
    return v;
}

/* Replacements of value reads, applied to a body in one pass. */
typedef struct {
    cv_ids from, to;
} vmap;

static bool vmap_add(vmap *r, carve_value_id from, carve_value_id to)
{
    return cv_ids_push(&r->from, from) && cv_ids_push(&r->to, to);
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Rewrites reads in the first `n_nodes` nodes of the body (nodes added
 * after them, the edge casts, read the originals on purpose). */
/* Does input k of node id stay an int64 constant? A constant that decides
 * a shape (Reshape's shape, Resize's sizes, axes...) is a static parameter
 * the backend reads at compile time, and ONNX requires it int64. Slice
 * bounds and Range take int32 and are converted. */
static bool keeps_int64(const carve_model *m, carve_node_id id, uint32_t k)
{
    const cv_op_def *def = cv_op_for_node(m, id);
    /* op-list: data: Slice bounds and Range take int32 (a rule still to become a table flag) */
    return def && k < 32 && ((def->shape_inputs >> k) & 1) && strcmp(m->nodes[id].op, "Slice") &&
           strcmp(m->nodes[id].op, "Range");
}

/* Reads of r's values in the first n_nodes nodes of body read their int32
 * copies, but for inputs that keep int64 (a constant read both as a shape
 * parameter and as data gets a copy for the data only). */
static bool vmap_apply(carve_model *m, carve_graph_id body, uint32_t n_nodes, vmap *r)
{
    uint32_t k = r->from.n;
    if (!k)
        return true;
    uint32_t *pairs = cv_malloc((size_t)k * 2 * sizeof *pairs);
    if (!pairs)
        return false;
    for (uint32_t i = 0; i < k; i++)
        pairs[2 * i] = r->from.v[i], pairs[2 * i + 1] = r->to.v[i];
    qsort(pairs, k, 2 * sizeof *pairs, cmp_pair);
    const cv_graph *g = &m->graphs[body];
    for (uint32_t i = 0; i < n_nodes; i++) {
        cv_node *n = &m->nodes[g->nodes.v[i]];
        for (uint32_t j = 0; j < n->n_in; j++) {
            if (keeps_int64(m, g->nodes.v[i], j))
                continue;
            uint32_t key[2] = {n->in[j], 0};
            const uint32_t *hit = n->in[j] == CARVE_NONE ? NULL : bsearch(key, pairs, k, 2 * sizeof *pairs, cmp_pair);
            if (hit)
                n->in[j] = hit[1];
        }
    }
    cv_free(pairs);
    return true;
}

static carve_status int64_to_int32(cv_lower *lw, const carve_target *tg, carve_node_id dn, carve_graph_id body)
{
    carve_model *m = lw->m;
    cv_graph *g = &m->graphs[body];
    const char *dname = m->nodes[dn].name;
    /* 1. edges in: Cast(int64 -> int32) right after each int64 input */
    uint32_t n_inputs = g->inputs.n, n_body = g->nodes.n;
    vmap r = {{0}, {0}};
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < n_inputs; i++) {
        carve_value_id v = m->graphs[body].inputs.v[i];
        if (m->values[v].type.dtype != CARVE_INT64)
            continue;
        const char *base = cv_arena_printf(&m->arena, "%s/int32", m->values[v].name);
        carve_value_id v32 = base ? new_value(m, body, base, &m->values[v], CARVE_INT32) : CARVE_NONE;
        if (v32 == CARVE_NONE || !vmap_add(&r, v, v32)) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
            goto out;
        }
        const char *piece = cv_arena_printf(&m->arena, "in%u/to_int32", i);
        if (add_cast(m, body, dn, piece, v, v32, CARVE_INT32) == CARVE_NONE) {
            st = carve_errcode(m->ctx);
            goto out;
        }
    }
    /* 2. int64 constants read from the outer scope: body-local int32 copies
     * (one per constant, made at its first read) */
    for (uint32_t i = 0; i < n_body; i++) {
        carve_node_id id = m->graphs[body].nodes.v[i];
        for (uint32_t k = 0; k < m->nodes[id].n_in; k++) {
            carve_value_id v = m->nodes[id].in[k];
            if (v == CARVE_NONE || m->values[v].graph == body || m->values[v].type.dtype != CARVE_INT64 ||
                !cv_value_is_const(m, v))
                continue;
            if (keeps_int64(m, id, k))
                continue;
            bool done = false;
            for (uint32_t q = 0; q < r.from.n && !done; q++)
                done = r.from.v[q] == v;
            if (done)
                continue;
            const cv_value *x = &m->values[v];
            const cv_tensor *t = x->init;
            if (!t) {
                const cv_attr *a = cv_node_attr_find(m, x->producer, "value");
                t = a && a->kind == CARVE_ATTR_TENSOR ? a->u.t : NULL;
            }
            if (!t || t->dtype != CARVE_INT64) {
                st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                              "node '%s' (%s): int64 constant '%s' has no data to legalize", m->nodes[id].name,
                              m->nodes[id].op, x->name);
                goto out;
            }
            int32_t *d32 = cv_malloc((t->nelem ? t->nelem : 1) * sizeof *d32);
            if (!d32) {
                st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
                goto out;
            }
            bool clamped = false;
            for (size_t e = 0; e < t->nelem; e++) {
                int64_t q;
                memcpy(&q, (const int64_t *)t->data + e, sizeof q);
                if (q > INT32_MAX || q < INT32_MIN) {
                    if (!((k == 1 || k == 2) && tg->lg_clamp_slice && cv_node_is(&m->nodes[id], "Slice") &&
                          !(lw->o && (lw->o->disable_legalize & CARVE_LEGALIZE_SLICE_CLAMP)))) {
                        /* without the clamp, the value wraps as HTP would */
                        d32[e] = (int32_t)(uint32_t)(uint64_t)q;
                        continue;
                    }
                    q = q > INT32_MAX ? INT32_MAX : INT32_MIN;
                    clamped = true;
                }
                d32[e] = (int32_t)q;
            }
            const char *base =
                cv_arena_printf(&m->arena, "%s/%s%s", dname, x->name, clamped ? "/int32_clamped" : "/int32");
            const char *nm = base ? cv_value_unique_name(m, body, base) : NULL;
            carve_value_id c = nm ? carve_graph_add_initializer(m, body, nm, CARVE_INT32, t->rank, t->dims, d32,
                                                                t->nelem * sizeof *d32)
                                  : CARVE_NONE;
            cv_free(d32);
            /* every read of this constant inside the body uses the copy */
            if (c == CARVE_NONE || !vmap_add(&r, v, c)) {
                st = carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
                goto out;
            }
        }
    }
    if (!vmap_apply(m, body, n_body, &r)) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        goto out;
    }
    /* 3. int64 values made inside become int32 */
    uint32_t n_nodes = m->graphs[body].nodes.n;
    for (uint32_t i = 0; i < n_nodes; i++) {
        carve_node_id id = m->graphs[body].nodes.v[i];
        cv_node *n = &m->nodes[id];
        if (cv_node_is(n, "Cast") && m->nodes[id].n_attr && cv_attr_i(m, id, "to", 0) == CARVE_INT64 &&
            !cv_node_attr_find(m, id, "saturate")) {
            carve_node_set_attr_int(m, id, "to", CARVE_INT32);
            m->values[n->out[0]].type.dtype = CARVE_INT32;
            continue;
        }
        /* n is not read below: add_cast makes nodes, which may move m->nodes */
        for (uint32_t k = 0; k < m->nodes[id].n_out; k++) {
            carve_value_id v = m->nodes[id].out[k];
            if (v == CARVE_NONE || m->values[v].type.dtype != CARVE_INT64)
                continue;
            if (cv_op_makes_int64(m, id)) {
                /* keep the op's int64 output, cast right after it */
                const char *base = cv_arena_printf(&m->arena, "%s/int64", m->values[v].name);
                carve_value_id v64 = base ? new_value(m, body, base, &m->values[v], CARVE_INT64) : CARVE_NONE;
                if (v64 == CARVE_NONE) {
                    st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
                    goto out;
                }
                m->nodes[id].out[k] = v64;
                m->values[v64].producer = id;
                m->values[v64].out_index = k;
                m->values[v].type.dtype = CARVE_INT32;
                const char *piece = cv_arena_printf(&m->arena, "out%u/to_int32", k);
                if (add_cast(m, body, id, piece, v64, v, CARVE_INT32) == CARVE_NONE) {
                    st = carve_errcode(m->ctx);
                    goto out;
                }
                continue;
            }
            m->values[v].type.dtype = CARVE_INT32;
            if (!strcmp(m->nodes[id].op, "ConstantOfShape")) {
                const cv_tensor *vt = cv_attr_t(m, id, "value");
                if (vt && vt->dtype == CARVE_INT64) {
                    int64_t q;
                    memcpy(&q, vt->data, sizeof q);
                    int32_t q32 = (int32_t)(q > INT32_MAX ? INT32_MAX : q < INT32_MIN ? INT32_MIN : q);
                    int64_t one = 1;
                    if (carve_node_set_attr_tensor(m, id, "value", CARVE_INT32, 1, &one, &q32, sizeof q32)) {
                        st = carve_errcode(m->ctx);
                        goto out;
                    }
                }
            }
        }
    }
    /* 4. edges out: Cast(int32 -> int64) in front of each int64 output */
    cv_graph *gb = &m->graphs[body];
    for (uint32_t i = 0; i < gb->outputs.n; i++) {
        carve_value_id v = m->graphs[body].outputs.v[i];
        carve_value_id outer = m->nodes[dn].out[i];
        if (m->values[outer].type.dtype != CARVE_INT64 || m->values[v].type.dtype != CARVE_INT32)
            continue;
        const char *base = cv_arena_printf(&m->arena, "%s/int64", m->values[v].name);
        carve_value_id v64 = base ? new_value(m, body, base, &m->values[v], CARVE_INT64) : CARVE_NONE;
        if (v64 == CARVE_NONE) {
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
            goto out;
        }
        const char *piece = cv_arena_printf(&m->arena, "out%u/to_int64", i);
        if (add_cast(m, body, dn, piece, v, v64, CARVE_INT64) == CARVE_NONE) {
            st = carve_errcode(m->ctx);
            goto out;
        }
        m->graphs[body].outputs.v[i] = v64;
    }
out:
    cv_ids_free(&r.from);
    cv_ids_free(&r.to);
    return st;
}

static carve_status uint8_cast(cv_lower *lw, carve_graph_id body)
{
    carve_model *m = lw->m;
    uint32_t n_nodes = m->graphs[body].nodes.n;
    for (uint32_t i = 0; i < n_nodes; i++) {
        carve_node_id id = m->graphs[body].nodes.v[i];
        cv_node *n = &m->nodes[id];
        if (!cv_node_is(n, "Cast") || n->in[0] == CARVE_NONE || n->out[0] == CARVE_NONE)
            continue;
        carve_value_id x = n->in[0], y = n->out[0];
        int64_t to = cv_attr_i(m, id, "to", 0);
        if (m->values[x].type.dtype != CARVE_UINT8 || (to != CARVE_FLOAT && to != CARVE_FLOAT16))
            continue;
        carve_node_id p = m->values[x].producer;
        if (p != CARVE_NONE && !strcmp(m->nodes[p].op, "QuantizeLinear"))
            continue; /* quantized: the encoding says how to read it */
        const char *base = cv_arena_printf(&m->arena, "%s/int32", m->values[y].name);
        carve_value_id mid = base ? new_value(m, body, base, &m->values[y], CARVE_INT32) : CARVE_NONE;
        if (mid == CARVE_NONE)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory legalizing");
        m->nodes[id].out[0] = mid;
        m->values[mid].producer = id;
        m->values[mid].out_index = 0;
        if (carve_node_set_attr_int(m, id, "to", CARVE_INT32))
            return carve_errcode(m->ctx);
        if (add_cast(m, body, id, "to_float", mid, y, (carve_dtype)to) == CARVE_NONE)
            return carve_errcode(m->ctx);
    }
    return CARVE_OK;
}

carve_status cv_legalize_body(cv_lower *lw, const carve_target *t, carve_node_id dn, carve_graph_id body)
{
    uint32_t off = lw->o ? lw->o->disable_legalize : 0;
    carve_status st = CARVE_OK;
    if (t->lg_u8cast && !(off & CARVE_LEGALIZE_UINT8_CAST))
        st = uint8_cast(lw, body);
    if (!st && t->lg_int64 && !(off & CARVE_LEGALIZE_INT64))
        st = int64_to_int32(lw, t, dn, body);
    if (!st && t->lg_softmax_transpose)
        st = cv_legalize_softmax_axis(lw, t, body);
    if (!st && t->lg_requant16)
        st = cv_legalize_requant16(lw, t, body);
    if (!st)
        st = cv_topo_sort(lw->m, body);
    return st;
}

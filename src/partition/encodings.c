/* encodings.c: the `encodings` attribute of a Delegate whose body holds QDQ
 * nodes, for the backend compiler that turns the body into quantized ops.
 *
 * A JSON object mapping each quantized value of the body (the input of a
 * DequantizeLinear, the output of a QuantizeLinear) to
 *   {"dtype": "uint8", "granularity": "per_tensor" | "per_axis" | "blocked",
 *    "scale": 0.02 | [..] | {"value": NAME},        (a runtime scale by name)
 *    "zero_point": 128 | [..] | {"value": NAME},    (0 when absent)
 *    "axis": 0, "block_size": 32,                   (when per-axis / blocked)
 *    "bits": 8}
 * "bits" is the width the quantized values need: the dtype's width, except
 * that a constant int8 (uint8) tensor whose values and zero points all lie
 * in [-8, 7] ([0, 15]) is a 4-bit weight stored in 8 bits, as exporters
 * write int4 weights for runtimes without int4: 4.
 * A QuantizeLinear that reads a DequantizeLinear directly (a requantization;
 * the pair stays as it is in the body) also carries
 *   "requantize": {"from": NAME, "as": "Cast" | "Convert"}
 * "Cast" when HTP can run it as a reinterpretation: same width (8 or 16
 * bits), one type signed and the other unsigned, equal scales, and zero
 * points that differ by exactly the half range in the matching direction
 * (q_uint8 = q_int8 + 128); "Convert" otherwise. An ONNX Cast from int8 to
 * uint8 would be wrong there: it maps -1 to 255 where the requantization
 * needs 127. */
#include "partition.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static bool is_onnx(const cv_node *n, const char *op) { return !*n->domain && !strcmp(n->op, op); }

/* A scale or zero point: a number (one element), an array, or a reference
 * to a runtime value by name. */
static cJSON *param_json(const carve_model *m, carve_value_id v, bool as_int)
{
    const cv_tensor *t = cv_const_tensor(m, v);
    if (!t) {
        cJSON *o = cJSON_CreateObject();
        if (o && !cJSON_AddStringToObject(o, "value", m->values[v].name)) {
            cJSON_Delete(o);
            return NULL;
        }
        return o;
    }
    cv_val *x = cv_val_from_tensor(t);
    if (!x)
        return NULL;
    cJSON *j;
    if (t->rank == 0) {
        j = cJSON_CreateNumber(as_int ? (double)cv_val_get_i64(x, 0) : cv_val_get_f64(x, 0));
    } else {
        j = cJSON_CreateArray();
        for (size_t i = 0; j && i < x->nelem; i++) {
            cJSON *e = cJSON_CreateNumber(as_int ? (double)cv_val_get_i64(x, i) : cv_val_get_f64(x, i));
            if (!e || !cJSON_AddItemToArray(j, e)) {
                cJSON_Delete(e);
                cJSON_Delete(j);
                j = NULL;
            }
        }
    }
    cv_val_unref(x);
    return j;
}

/* Do the elements of constant value v (NULL: none) all lie in [lo, hi]? */
static bool const_within(const carve_model *m, carve_value_id v, int64_t lo, int64_t hi)
{
    const cv_tensor *t = v != CARVE_NONE ? cv_const_tensor(m, v) : NULL;
    if (v != CARVE_NONE && !t)
        return false;
    if (!t)
        return true;
    cv_val *x = cv_val_from_tensor(t);
    bool in = x != NULL;
    for (size_t i = 0; in && i < x->nelem; i++) {
        int64_t e = cv_val_get_i64(x, i);
        in = e >= lo && e <= hi;
    }
    cv_val_unref(x);
    return in;
}

/* The bits quantized value q of dtype t needs (see the header); 0 for a
 * dtype that is not an integer. */
static int bits_of(const carve_model *m, carve_value_id q, carve_dtype t, carve_value_id zp)
{
    switch (t) {
    case CARVE_INT4: case CARVE_UINT4: return 4;
    case CARVE_INT8: case CARVE_UINT8: {
        int64_t lo = t == CARVE_INT8 ? -8 : 0, hi = t == CARVE_INT8 ? 7 : 15;
        bool narrow = cv_const_tensor(m, q) && const_within(m, q, lo, hi) && const_within(m, zp, lo, hi);
        return narrow ? 4 : 8;
    }
    case CARVE_INT16: case CARVE_UINT16: return 16;
    case CARVE_INT32: case CARVE_UINT32: return 32;
    default: return 0;
    }
}

static bool add(cJSON *o, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(o, key, item))
        return true;
    cJSON_Delete(item);
    return false;
}

/* The encoding of quantized value q given the Q/DQ node's scale, zero
 * point and attributes. */
static cJSON *encoding(const carve_model *m, carve_node_id n, carve_value_id q)
{
    const cv_node *x = &m->nodes[n];
    carve_value_id s = x->n_in > 1 ? x->in[1] : CARVE_NONE, zp = x->n_in > 2 ? x->in[2] : CARVE_NONE;
    const cv_type *qt = &m->values[q].type;
    const cv_type *st = s != CARVE_NONE ? &m->values[s].type : NULL;
    int64_t axis = cv_attr_i(m, n, "axis", 1), block = cv_attr_i(m, n, "block_size", 0);
    bool scalar = st && st->rank == 0;
    if (axis < 0 && qt->rank > 0)
        axis += qt->rank;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    bool ok = cJSON_AddStringToObject(o, "dtype", carve_dtype_name(qt->dtype)) &&
              cJSON_AddStringToObject(o, "granularity", scalar ? "per_tensor" : block > 0 ? "blocked" : "per_axis") &&
              s != CARVE_NONE && add(o, "scale", param_json(m, s, false)) &&
              add(o, "zero_point", zp != CARVE_NONE ? param_json(m, zp, true) : cJSON_CreateNumber(0));
    if (!scalar && ok)
        ok = cJSON_AddNumberToObject(o, "axis", (double)axis) != NULL;
    if (block > 0 && ok)
        ok = cJSON_AddNumberToObject(o, "block_size", (double)block) != NULL;
    int bits = bits_of(m, q, qt->dtype, zp);
    if (bits && ok)
        ok = cJSON_AddNumberToObject(o, "bits", bits) != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int width_of(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_UINT8: return 8;
    case CARVE_INT16: case CARVE_UINT16: return 16;
    default: return 0;
    }
}

/* Elementwise equal constant float tensors. */
static bool same_scales(const carve_model *m, carve_value_id a, carve_value_id b)
{
    const cv_tensor *ta = cv_const_tensor(m, a), *tb = cv_const_tensor(m, b);
    if (!ta || !tb || ta->nelem != tb->nelem)
        return false;
    cv_val *x = cv_val_from_tensor(ta), *y = cv_val_from_tensor(tb);
    bool same = x && y;
    for (size_t i = 0; same && i < x->nelem; i++)
        same = cv_val_get_f64(x, i) == cv_val_get_f64(y, i);
    cv_val_unref(x);
    cv_val_unref(y);
    return same;
}

/* zero_point of a Q/DQ node, element i (0 when absent); false when it is not
 * a constant. */
static bool zp_at(const carve_model *m, const cv_node *n, size_t i, size_t nelem, int64_t *out)
{
    if (n->n_in < 3 || n->in[2] == CARVE_NONE) {
        *out = 0;
        return true;
    }
    const cv_tensor *t = cv_const_tensor(m, n->in[2]);
    if (!t || (t->nelem != nelem && t->nelem != 1))
        return false;
    cv_val *x = cv_val_from_tensor(t);
    if (!x)
        return false;
    *out = cv_val_get_i64(x, t->nelem == 1 ? 0 : i);
    cv_val_unref(x);
    return true;
}

/* How HTP runs the requantization dq -> q (see the header). */
static const char *requant_as(const carve_model *m, carve_node_id dq, carve_node_id q)
{
    const cv_node *a = &m->nodes[dq], *b = &m->nodes[q];
    carve_dtype from = m->values[a->in[0]].type.dtype, to = m->values[b->out[0]].type.dtype;
    int w = width_of(from);
    if (!w || w != width_of(to) || cv_dtype_is_signed(from) == cv_dtype_is_signed(to))
        return "Convert";
    if (a->n_in < 2 || b->n_in < 2 || !same_scales(m, a->in[1], b->in[1]))
        return "Convert";
    if (cv_attr_i(m, dq, "block_size", 0) != cv_attr_i(m, q, "block_size", 0))
        return "Convert";
    const cv_tensor *sc = cv_const_tensor(m, a->in[1]);
    if (sc->rank > 0 && cv_attr_i(m, dq, "axis", 1) != cv_attr_i(m, q, "axis", 1))
        return "Convert";
    int64_t half = (int64_t)1 << (w - 1), want = cv_dtype_is_signed(to) ? -half : half;
    for (size_t i = 0; i < sc->nelem; i++) {
        int64_t zf, zt;
        if (!zp_at(m, a, i, sc->nelem, &zf) || !zp_at(m, b, i, sc->nelem, &zt) || zt - zf != want)
            return "Convert";
    }
    return "Cast";
}

static carve_status nomem(carve_model *m) { return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing encodings"); }

carve_status cv_delegate_encodings(carve_model *m, cv_lpart *lp, carve_graph_id body)
{
    const cv_graph *bg = &m->graphs[body];
    cJSON *root = NULL;
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < bg->nodes.n && !st; i++) {
        carve_node_id id = bg->nodes.v[i];
        const cv_node *n = &m->nodes[id];
        bool dq = is_onnx(n, "DequantizeLinear"), q = is_onnx(n, "QuantizeLinear");
        if ((!dq && !q) || !n->n_in || n->in[0] == CARVE_NONE || (q && (!n->n_out || n->out[0] == CARVE_NONE)))
            continue;
        carve_value_id v = dq ? n->in[0] : n->out[0];
        const char *name = m->values[v].name;
        if (!root && !(root = cJSON_CreateObject()))
            return nomem(m);
        if (cJSON_GetObjectItemCaseSensitive(root, name))
            continue; /* described by the node that made it or read it first */
        cJSON *e = encoding(m, id, v);
        if (!e || !cJSON_AddItemToObject(root, name, e)) {
            cJSON_Delete(e);
            st = nomem(m);
            break;
        }
        carve_node_id p = m->values[n->in[0]].producer;
        if (q && p != CARVE_NONE && m->nodes[p].graph == body && is_onnx(&m->nodes[p], "DequantizeLinear")) {
            cJSON *r = cJSON_CreateObject();
            if (!r || !cJSON_AddItemToObject(e, "requantize", r) ||
                !cJSON_AddStringToObject(r, "from", m->values[m->nodes[p].in[0]].name) ||
                !cJSON_AddStringToObject(r, "as", requant_as(m, p, id))) {
                st = nomem(m);
                break;
            }
        }
        if (!cv_ids_push(&lp->encoded, v))
            st = nomem(m);
    }
    if (root && !st) {
        char *s = cJSON_PrintUnformatted(root);
        st = s ? carve_node_set_attr_string(m, lp->delegate, "encodings", s) : nomem(m);
        cJSON_free(s);
    }
    cJSON_Delete(root);
    return st;
}

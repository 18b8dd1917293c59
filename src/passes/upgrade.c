/* upgrade.c: brings a model's ai.onnx nodes, subgraphs included, to the
 * newest ai.onnx opset carve's op table knows (docs/upgrade.md). Ops whose
 * meaning did not change just take the new opset; the others are rewritten
 * to their current form with the same results:
 *   - Softmax, LogSoftmax, Hardmax (< 13): over the last axis, axis = -1;
 *     else Flatten(axis) -> op(axis = -1) -> Reshape to the input's shape,
 *     the coerce-to-2D meaning of the old op;
 *   - Upsample, Resize-10: Resize with coordinate_transformation_mode
 *     asymmetric (and nearest_mode floor when upsampling, ceil when
 *     downsampling: what the old ops did);
 *   - attributes that became inputs: Slice (10), Pad (11), Clip (11),
 *     TopK (10), Reshape (5), Squeeze/Unsqueeze (13), Split (13; 18 takes
 *     num_outputs when no sizes are given), ReduceSum (13), the other
 *     Reduce* (18), DFT's axis (20);
 *   - BatchNormalization: is_test and spatial (=1) dropped, the training
 *     outputs of opsets < 14 dropped when nothing reads them; Dropout:
 *     is_test and ratio dropped (inference ignores them), GroupNormalization
 *     (< 21) scale and bias per channel; Scatter -> ScatterElements;
 *     RoiAlign (< 16) keeps output_half_pixel; GridSample (< 20) modes
 *     renamed; Concat (< 4) axis 1 said; consumed_inputs, Gemm's and the
 *     elementwise ops' legacy broadcast (< 7, where it is numpy's) dropped;
 *   - refused (no rewrite here): Cast (< 6), Tile (< 6), Scan (< 9), LpPool
 *     and GlobalLpPool (< 2), Resize (< 13) with tf_half_pixel_for_nn.
 * The rules are data: the table `rules` (op, opsets, a condition on the
 * node, a handler), asked once per op table row; a node takes the first
 * rule that applies. Nodes keep their ids and names (skip lists name
 * them); nodes made are named "<node>/<piece>". The model is upgraded
 * whole or not at all: a node with no faithful rewrite leaves it as it
 * was, with the reason. */
#include "passes.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef struct up {
    carve_model *m;
    int64_t from;  /* the model's ai.onnx opset */
    int64_t to;    /* the opset it gets */
    bool dry;      /* check only: nothing is changed */
    carve_upgrade_stats *st;
    carve_node_id *origin; /* by node id: the node a made node comes from (cv_malloc'd) */
    uint32_t n_origin;
    carve_status err;
    bool changed;          /* the node at hand was rewritten */
    uint8_t *rule_at;      /* by op table row: 0 not looked up, else 1 + its first rule (N_RULES: none) */
    cv_ids todo;   /* the nodes the dry walk found something to do for, in walk order */
    char why[400];
} up;

/* The newest ai.onnx opset of the op table. */
int64_t cv_upgrade_newest(void)
{
    int64_t v = 1;
    for (size_t i = 0; i < cv_op_count(); i++) {
        const cv_op_def *d = cv_op_at(i);
        if (!*d->domain && d->since > v)
            v = d->since;
    }
    return v;
}

static bool refuse(up *u, carve_node_id id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(up *u, carve_node_id id, const char *fmt, ...)
{
    const cv_node *n = &u->m->nodes[id];
    int k = snprintf(u->why, sizeof u->why, "node '%s' (%s, opset %lld): ", n->name, n->op, (long long)u->from);
    va_list ap;
    va_start(ap, fmt);
    if (k > 0 && (size_t)k < sizeof u->why)
        vsnprintf(u->why + k, sizeof u->why - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static bool nomem(up *u)
{
    if (!u->err)
        u->err = cv_error(u->m->ctx, CARVE_ERR_NOMEM, "out of memory upgrading the opset");
    return false;
}

static bool has_attr(const carve_model *m, carve_node_id id, const char *name)
{
    return cv_node_attr_find(m, id, name) != NULL;
}

static void drop_attr(up *u, carve_node_id id, const char *name)
{
    cv_node *n = &u->m->nodes[id];
    for (uint32_t i = 0; i < n->n_attr; i++)
        if (!strcmp(n->attr[i].name, name)) {
            memmove(&n->attr[i], &n->attr[i + 1], (n->n_attr - i - 1) * sizeof *n->attr);
            n->n_attr--;
            u->changed = true;
            return;
        }
}

static bool set_int(up *u, carve_node_id id, const char *name, int64_t v)
{
    cv_attr *a = cv_node_attr_add(u->m, id, name, CARVE_ATTR_INT);
    if (!a)
        return nomem(u);
    a->u.i = v;
    u->changed = true;
    return true;
}

static bool set_str(up *u, carve_node_id id, const char *name, const char *s)
{
    cv_attr *a = cv_node_attr_add(u->m, id, name, CARVE_ATTR_STRING);
    char *d = cv_arena_strdup(&u->m->arena, s);
    if (!a || !d)
        return nomem(u);
    a->u.s.p = (const uint8_t *)d;
    a->u.s.n = strlen(d);
    u->changed = true;
    return true;
}

static bool note_origin(up *u, carve_node_id made, carve_node_id from)
{
    if (made >= u->n_origin) {
        uint32_t cap = u->n_origin ? u->n_origin : 64;
        while (cap <= made)
            cap *= 2;
        carve_node_id *o = cv_realloc(u->origin, cap * sizeof *o);
        if (!o)
            return nomem(u);
        for (uint32_t i = u->n_origin; i < cap; i++)
            o[i] = CARVE_NONE;
        u->origin = o;
        u->n_origin = cap;
    }
    u->origin[made] = from;
    u->st->nodes_added++;
    return true;
}

/* An int64 1-D initializer "<node>/<piece>" read as input i of node id. */
static bool ints_input(up *u, carve_node_id id, uint32_t i, const char *piece, size_t cnt, const int64_t *v)
{
    cv_rw rw = {u->m, id, u->m->nodes[id].graph, {0}};
    carve_value_id c = cv_rw_ints(&rw, piece, cnt, v);
    if (c == CARVE_NONE || !cv_fold_set_input(u->m, id, i, c))
        return nomem(u);
    u->changed = true;
    return true;
}

/* The INTS attribute `name` made int64 input i (nothing when absent). */
static bool attr_to_input(up *u, carve_node_id id, const char *name, uint32_t i)
{
    const int64_t *v;
    int cnt = cv_attr_ints(u->m, id, name, &v);
    if (cnt < 0)
        return true;
    if (u->dry)
        return true;
    int64_t *copy = cv_arena_memdup(&u->m->arena, v, (size_t)cnt * sizeof *v + 1);
    if (!copy)
        return nomem(u);
    drop_attr(u, id, name);
    return ints_input(u, id, i, name, (size_t)cnt, copy);
}

/* v's value when it is a compile-time constant: an initializer or a
 * Constant node's tensor. */
static const cv_tensor *const_of(const carve_model *m, carve_value_id v)
{
    const cv_tensor *t = cv_fold_const(m, v);
    carve_node_id p = m->values[v].producer;
    if (!t && p != CARVE_NONE && !strcmp(m->nodes[p].op, "Constant") && !*m->nodes[p].domain) {
        const cv_attr *a = cv_node_attr_find(m, p, "value");
        if (a && a->kind == CARVE_ATTR_TENSOR)
            t = a->u.t;
    }
    return t;
}

static const cv_type *in_type(const up *u, carve_node_id id, uint32_t i, cv_type *copy)
{
    const cv_node *n = &u->m->nodes[id];
    if (i >= n->n_in || n->in[i] == CARVE_NONE)
        return NULL;
    /* a copy: a rewrite adds values, which may move the values array
     * (the dims live in the arena and stay) */
    *copy = u->m->values[n->in[i]].type;
    return copy->kind == CARVE_TYPE_TENSOR ? copy : NULL;
}

/* A scalar initializer of dtype dt holding x, read as input i. */
static bool scalar_input(up *u, carve_node_id id, uint32_t i, const char *piece, carve_dtype dt, double x)
{
    cv_rw rw = {u->m, id, u->m->nodes[id].graph, {0}};
    carve_value_id c = cv_rw_scalar_f(&rw, piece, dt, x);
    if (c == CARVE_NONE) {
        u->err = carve_errcode(u->m->ctx);
        return false;
    }
    if (!cv_fold_set_input(u->m, id, i, c))
        return nomem(u);
    u->changed = true;
    return true;
}

/* Softmax, LogSoftmax, Hardmax before 13: the input coerced to 2-D at axis. */
static bool up_softmax(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    cv_type tt;
    const cv_type *t = in_type(u, id, 0, &tt);
    if (!t || t->rank < 1)
        return refuse(u, id, "the rank of input 0 is unknown: the old op's coerce-to-2D meaning needs it");
    int64_t axis = cv_attr_i(m, id, "axis", 1), r = t->rank;
    if (axis < -r || axis >= r)
        return refuse(u, id, "axis %lld is out of range for rank %lld", (long long)axis, (long long)r);
    if (axis < 0)
        axis += r;
    if (u->dry)
        return true;
    if (!set_int(u, id, "axis", -1))
        return false;
    if (axis == r - 1)
        return true; /* one axis: the old and new meaning agree */
    carve_graph_id g = m->nodes[id].graph;
    cv_rw rw = {m, id, g, {0}};
    uint32_t pos = cv_graph_node_pos(m, id);
    carve_value_id x = m->nodes[id].in[0], y = m->nodes[id].out[0];
    carve_node_id fl = cv_rw_node(&rw, "Flatten", "Flatten", 1, &x, 1, NULL);
    if (fl == CARVE_NONE || !note_origin(u, fl, id))
        return nomem(u);
    cv_attr *a = cv_node_attr_add(m, fl, "axis", CARVE_ATTR_INT);
    if (!a)
        return nomem(u);
    a->u.i = axis;
    cv_graph_move_tail(m, g, 1, pos);
    /* the op reads the 2-D view and writes a fresh value; Reshape writes y */
    const char *tn = cv_value_unique_name(m, g, cv_arena_printf(&m->arena, "%s/2d", m->nodes[id].name));
    carve_value_id t2 = tn ? cv_value_new(m, g, tn) : CARVE_NONE;
    if (t2 == CARVE_NONE)
        return nomem(u);
    m->nodes[id].in[0] = m->nodes[fl].out[0];
    m->nodes[id].out[0] = t2;
    m->values[t2].producer = id;
    m->values[t2].out_index = 0;
    bool stat = true;
    for (int d = 0; d < r; d++)
        stat = stat && t->dims[d].value >= 0;
    carve_value_id shape;
    uint32_t made = 1;
    if (stat) {
        int64_t dims[CARVE_MAX_RANK];
        for (int d = 0; d < r; d++)
            dims[d] = t->dims[d].value;
        shape = cv_rw_ints(&rw, "shape", (size_t)r, dims);
        if (shape == CARVE_NONE)
            return nomem(u);
    } else {
        carve_node_id sh = cv_rw_node(&rw, "Shape", "Shape", 1, &x, 1, NULL);
        if (sh == CARVE_NONE || !note_origin(u, sh, id))
            return nomem(u);
        shape = m->nodes[sh].out[0];
        made++;
    }
    carve_value_id rin[2] = {t2, shape};
    carve_node_id rs = cv_rw_node(&rw, "Reshape", "Reshape", 2, rin, 1, &y);
    if (rs == CARVE_NONE || !note_origin(u, rs, id))
        return nomem(u);
    cv_graph_move_tail(m, g, made, pos + 2);
    cv_ids_free(&rw.pieces);
    return true;
}

/* Upsample (7, 9) and Resize-10 to Resize: asymmetric coordinates; the old
 * nearest rounding floors when upsampling an axis and takes the ceiling
 * when downsampling it, which nearest_mode says for all axes at once. */
static bool up_resize_legacy(up *u, carve_node_id id, bool ups)
{
    carve_model *m = u->m;
    const cv_node *n = &m->nodes[id];
    const char *mode = cv_attr_s(m, id, "mode", "nearest");
    bool nearest = !strcmp(mode, "nearest");
    if (!nearest && strcmp(mode, "linear") && strcmp(mode, "bilinear"))
        return refuse(u, id, "mode '%s' has no Resize form", mode);
    /* the scales: Upsample-7's attribute or input 1 */
    const float *sa = NULL;
    int ns = -1;
    const cv_tensor *sc = NULL;
    if (ups && u->from < 9)
        ns = cv_attr_floats(m, id, "scales", &sa);
    else if (n->n_in > 1 && n->in[1] != CARVE_NONE && (sc = const_of(m, n->in[1])) != NULL &&
             sc->dtype == CARVE_FLOAT)
        ns = (int)sc->nelem, sa = sc->data;
    const char *nm = "floor";
    if (nearest) {
        if (ns < 0)
            return refuse(u, id, "the scales are not a constant: nearest_mode (floor or ceil) depends on them");
        bool up_ax = false, down_ax = false;
        for (int i = 0; i < ns; i++) {
            float s;
            memcpy(&s, sa + i, sizeof s);
            up_ax |= s > 1, down_ax |= s < 1;
        }
        if (up_ax && down_ax)
            return refuse(u, id, "upsamples one axis and downsamples another: Resize's single nearest_mode cannot "
                                 "round both ways");
        nm = down_ax ? "ceil" : "floor";
    } else if (ups && u->from < 9 && ns < 0) {
        return refuse(u, id, "no scales attribute");
    }
    if (u->dry)
        return true;
    carve_value_id x = n->in[0];
    carve_value_id scales = n->n_in > 1 ? n->in[1] : CARVE_NONE;
    if (ups && u->from < 9) {
        cv_rw rw = {m, id, n->graph, {0}};
        int64_t d1[1] = {ns};
        scales = cv_rw_const(&rw, "scales", CARVE_FLOAT, 1, d1, sa, (size_t)ns * sizeof *sa);
        if (scales == CARVE_NONE)
            return nomem(u);
        drop_attr(u, id, "scales");
    }
    cv_node *w = &m->nodes[id];
    /* op and domain are fixed at creation for caches keyed by them; the
     * opset change below bumps opset_gen, so every cached row is stale */
    w->op = cv_arena_strdup(&m->arena, "Resize");
    if (!w->op)
        return nomem(u);
    w->def = NULL;
    w->def_gen = 0;
    u->changed = true;
    carve_value_id *in = cv_arena_alloc(&m->arena, 3 * sizeof *in);
    if (!in)
        return nomem(u);
    in[0] = x, in[1] = CARVE_NONE, in[2] = scales;
    w->in = in;
    w->n_in = 3;
    if (!set_str(u, id, "mode", nearest ? "nearest" : "linear") ||
        !set_str(u, id, "coordinate_transformation_mode", "asymmetric") ||
        (nearest && !set_str(u, id, "nearest_mode", nm)))
        return false;
    return true;
}

/* Pad before 11: pads (paddings before 2) and value as inputs. */
static bool up_pad(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    const char *pname = u->from < 2 ? "paddings" : "pads";
    const int64_t *p;
    int cnt = cv_attr_ints(m, id, pname, &p);
    if (cnt < 0)
        return refuse(u, id, "no %s attribute", pname);
    float value = cv_attr_f(m, id, "value", 0.0f);
    cv_type tt;
    const cv_type *t = in_type(u, id, 0, &tt);
    if (value != 0.0f && (!t || t->dtype == CARVE_UNDEFINED))
        return refuse(u, id, "the type of input 0 is unknown: the constant value needs it");
    if (u->dry)
        return true;
    int64_t *copy = cv_arena_memdup(&m->arena, p, (size_t)cnt * sizeof *p + 1);
    if (!copy)
        return nomem(u);
    drop_attr(u, id, pname);
    drop_attr(u, id, "value");
    if (!ints_input(u, id, 1, "pads", (size_t)cnt, copy))
        return false;
    return value == 0.0f || scalar_input(u, id, 2, "value", t->dtype, value);
}

/* Clip before 11: min and max as inputs of the input's type. */
static bool up_clip(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    bool lo = has_attr(m, id, "min"), hi = has_attr(m, id, "max");
    cv_type tt;
    const cv_type *t = in_type(u, id, 0, &tt);
    if ((lo || hi) && (!t || !cv_dtype_is_float(t->dtype)))
        return refuse(u, id, "input 0 is not of a known float type: min and max need it");
    if (u->dry)
        return true;
    float a = cv_attr_f(m, id, "min", -FLT_MAX), b = cv_attr_f(m, id, "max", FLT_MAX);
    drop_attr(u, id, "min");
    drop_attr(u, id, "max");
    if (lo && !scalar_input(u, id, 1, "min", t->dtype, a))
        return false;
    if (hi && !scalar_input(u, id, 2, "max", t->dtype, b))
        return false;
    return true;
}

/* Split: sizes from the attribute (opsets 2..12) to input 1; from 18 a
 * split into equal parts says how many. */
static bool up_split(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    const cv_node *n = &m->nodes[id];
    if (u->from < 13 && u->from >= 2 && !attr_to_input(u, id, "split", 1))
        return false;
    if (u->dry)
        return true;
    n = &m->nodes[id];
    bool sizes = n->n_in > 1 && n->in[1] != CARVE_NONE;
    if (u->to >= 18 && u->from < 18 && !sizes && !has_attr(m, id, "num_outputs"))
        return set_int(u, id, "num_outputs", n->n_out);
    return true;
}

/* BatchNormalization: the inference form. */
static bool up_batchnorm(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    const cv_node *n = &m->nodes[id];
    if (u->from < 9 && cv_attr_i(m, id, "spatial", 1) == 0)
        return refuse(u, id, "spatial = 0 (statistics per element) has no form from opset 9");
    if (u->from < 7 && has_attr(m, id, "is_test") && !cv_attr_i(m, id, "is_test", 0))
        return refuse(u, id, "is_test = 0: training mode");
    uint32_t keep = n->n_out;
    if (u->from < 14 && u->to >= 14) {
        keep = 1;
        for (uint32_t i = 1; i < n->n_out; i++)
            if (n->out[i] != CARVE_NONE && !cv_upgrade_value_unread(m, n->out[i]))
                return refuse(u, id, "output %u '%s' (a training statistic) is read", i, m->values[n->out[i]].name);
    }
    if (u->dry)
        return true;
    drop_attr(u, id, "is_test");
    drop_attr(u, id, "spatial");
    drop_attr(u, id, "momentum_unused");
    if (keep < n->n_out) {
        for (uint32_t i = keep; i < n->n_out; i++)
            if (n->out[i] != CARVE_NONE)
                m->values[n->out[i]].producer = CARVE_NONE;
        m->nodes[id].n_out = keep;
        u->changed = true;
    }
    return true;
}

/* Dropout before 12: inference ignores ratio; the mask's type changed at 10. */
static bool up_dropout(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    const cv_node *n = &m->nodes[id];
    if (u->from < 7 && has_attr(m, id, "is_test") && !cv_attr_i(m, id, "is_test", 0))
        return refuse(u, id, "is_test = 0: training mode");
    if (u->from < 10 && n->n_out > 1 && n->out[1] != CARVE_NONE && !cv_upgrade_value_unread(m, n->out[1]))
        return refuse(u, id, "its mask is read: before opset 10 the mask has the input's type, from 10 bool");
    if (u->dry)
        return true;
    drop_attr(u, id, "is_test");
    drop_attr(u, id, "ratio");
    if (u->from < 10 && n->n_out > 1) {
        if (n->out[1] != CARVE_NONE)
            m->values[n->out[1]].producer = CARVE_NONE;
        m->nodes[id].n_out = 1;
        u->changed = true;
    }
    return true;
}

/* GroupNormalization 18..20: one scale and bias per group; from 21 per
 * channel (each group's value repeated over its channels). */
static bool up_groupnorm(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    const cv_node *n = &m->nodes[id];
    cv_type tt;
    const cv_type *t = in_type(u, id, 0, &tt);
    int64_t groups = cv_attr_i(m, id, "num_groups", 0);
    if (!t || t->rank < 2 || t->dims[1].value <= 0 || groups <= 0 || t->dims[1].value % groups)
        return refuse(u, id, "the channel count is unknown or not a multiple of num_groups");
    int64_t c = t->dims[1].value;
    const cv_tensor *ts[2];
    for (uint32_t i = 1; i <= 2; i++) {
        ts[i - 1] = n->n_in > i && n->in[i] != CARVE_NONE ? const_of(m, n->in[i]) : NULL;
        if (!ts[i - 1] || (int64_t)ts[i - 1]->nelem != groups)
            return refuse(u, id, "input %u is not a constant of num_groups values: it cannot be made per channel", i);
    }
    if (u->dry)
        return true;
    for (uint32_t i = 1; i <= 2; i++) {
        const cv_tensor *s = ts[i - 1];
        size_t es = cv_dtype_nbytes(s->dtype, 1);
        uint8_t *buf = cv_arena_alloc(&m->arena, (size_t)c * es);
        if (!buf)
            return nomem(u);
        for (int64_t k = 0; k < c; k++)
            memcpy(buf + (size_t)k * es, (const uint8_t *)s->data + (size_t)(k / (c / groups)) * es, es);
        cv_rw rw = {m, id, n->graph, {0}};
        int64_t d1[1] = {c};
        carve_value_id v = cv_rw_const(&rw, i == 1 ? "scale" : "bias", s->dtype, 1, d1, buf, (size_t)c * es);
        if (v == CARVE_NONE)
            return nomem(u);
        m->nodes[id].in[i] = v;
        u->changed = true;
    }
    return true;
}

/* The elementwise ops whose legacy broadcast (< 7) differs from numpy's. */
static bool up_legacy_broadcast(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    /* Gemm-6's broadcast of C is what Gemm-7 does always */
    if (cv_attr_i(m, id, "broadcast", 0) && strcmp(m->nodes[id].op, "Gemm")) {
        cv_type ta, tb;
        const cv_type *a = in_type(u, id, 0, &ta), *b = in_type(u, id, 1, &tb);
        if (!a || !b || a->rank < 0 || b->rank < 0)
            return refuse(u, id, "broadcast = 1 with operand ranks unknown");
        int64_t axis = cv_attr_i(m, id, "axis", a->rank - b->rank);
        if (axis < 0)
            axis += a->rank;
        bool scalar = b->rank == 0 || (b->rank == 1 && b->dims[0].value == 1);
        if (axis != a->rank - b->rank && !scalar)
            return refuse(u, id, "broadcast = 1 aligns input 1 at axis %lld, not at the trailing axes as numpy does",
                          (long long)axis);
    }
    if (u->dry)
        return true;
    drop_attr(u, id, "broadcast");
    drop_attr(u, id, "axis");
    return true;
}

/* Upsample (both forms) and Resize-10: see up_resize_legacy. */
static bool up_upsample(up *u, carve_node_id id) { return up_resize_legacy(u, id, true); }
static bool up_resize10(up *u, carve_node_id id) { return up_resize_legacy(u, id, false); }

/* Squeeze, Unsqueeze (13), the Reduce ops (13, 18): axes as input 1. */
static bool up_axes(up *u, carve_node_id id) { return attr_to_input(u, id, "axes", 1); }

/* Slice before 10: starts, ends and axes as inputs. */
static bool up_slice(up *u, carve_node_id id)
{
    const int64_t *p;
    if (cv_attr_ints(u->m, id, "starts", &p) < 0 || cv_attr_ints(u->m, id, "ends", &p) < 0)
        return refuse(u, id, "no starts or ends attribute");
    return attr_to_input(u, id, "starts", 1) && attr_to_input(u, id, "ends", 2) && attr_to_input(u, id, "axes", 3);
}

/* TopK before 10: k as input 1. */
static bool up_topk(up *u, carve_node_id id)
{
    int64_t k = cv_attr_i(u->m, id, "k", -1);
    if (k < 0)
        return refuse(u, id, "no k attribute");
    if (u->dry)
        return true;
    drop_attr(u, id, "k");
    return ints_input(u, id, 1, "k", 1, &k);
}

/* Reshape before 5: shape as input 1. */
static bool up_reshape(up *u, carve_node_id id)
{
    const int64_t *p;
    if (cv_attr_ints(u->m, id, "shape", &p) < 0)
        return refuse(u, id, "no shape attribute");
    return attr_to_input(u, id, "shape", 1);
}

/* Concat before 4 without an axis: the default was 1. */
static bool no_axis(const carve_model *m, carve_node_id id) { return !has_attr(m, id, "axis"); }
static bool up_concat(up *u, carve_node_id id) { return u->dry || set_int(u, id, "axis", 1); }

/* Scatter: ScatterElements, the same op renamed. */
static bool up_scatter(up *u, carve_node_id id)
{
    if (u->dry)
        return true;
    cv_node *w = &u->m->nodes[id]; /* same meaning, new name (see up_resize_legacy) */
    w->op = cv_arena_strdup(&u->m->arena, "ScatterElements");
    w->def = NULL;
    w->def_gen = 0;
    u->changed = true;
    return w->op ? true : nomem(u);
}

/* RoiAlign before 16 without a coordinate_transformation_mode: the old
 * one, output_half_pixel (16's default is half_pixel). */
static bool no_ctm(const carve_model *m, carve_node_id id)
{
    return !has_attr(m, id, "coordinate_transformation_mode");
}
static bool up_roialign(up *u, carve_node_id id)
{
    return u->dry || set_str(u, id, "coordinate_transformation_mode", "output_half_pixel");
}

/* GridSample before 20: modes bilinear and bicubic renamed. */
static bool up_gridsample(up *u, carve_node_id id)
{
    const char *md = cv_attr_s(u->m, id, "mode", "bilinear");
    const char *nw = !strcmp(md, "bilinear") ? "linear" : !strcmp(md, "bicubic") ? "cubic" : NULL;
    return u->dry || !nw || set_str(u, id, "mode", nw);
}

/* DFT before 20: axis as input 2. */
static bool up_dft(up *u, carve_node_id id)
{
    carve_model *m = u->m;
    int64_t ax = cv_attr_i(m, id, "axis", 1);
    if (u->dry)
        return true;
    drop_attr(u, id, "axis");
    cv_rw rw = {m, id, m->nodes[id].graph, {0}};
    carve_value_id c = cv_rw_const(&rw, "axis", CARVE_INT64, 0, NULL, &ax, sizeof ax);
    if (c == CARVE_NONE || !cv_fold_set_input(m, id, 2, c))
        return nomem(u);
    return true;
}

/* The refusals: old forms with no rewrite here. */
static bool tf_half_pixel(const carve_model *m, carve_node_id id)
{
    return !strcmp(cv_attr_s(m, id, "coordinate_transformation_mode", ""), "tf_half_pixel_for_nn");
}
static bool no_tf_half_pixel(up *u, carve_node_id id)
{
    return refuse(u, id, "coordinate_transformation_mode tf_half_pixel_for_nn was removed in opset 13");
}
static bool no_cast(up *u, carve_node_id id) { return refuse(u, id, "'to' is a type name string (opset < 6)"); }
static bool no_tile(up *u, carve_node_id id)
{
    return refuse(u, id, "Tile-1's tiles and axis inputs have no rewrite here");
}
static bool no_scan(up *u, carve_node_id id) { return refuse(u, id, "Scan-8's batch form has no rewrite here"); }
static bool no_lppool(up *u, carve_node_id id) { return refuse(u, id, "p is a float before opset 2"); }

/* A rule: it applies to a node of op `op` when the model's opset is below
 * `below`, the opset it gets at least `to_min` (ANY: whatever it is) and
 * `when` (NULL: always) holds of the node. A node takes the first rule
 * that applies to it; a node with none only drops consumed_inputs. */
typedef struct up_rule {
    const char *op;
    int below, to_min;
    bool (*when)(const carve_model *m, carve_node_id id);
    bool (*fn)(up *u, carve_node_id id);
} up_rule;
#define ANY 0

/* op-list: data (ONNX's version history: the ops an upgrade step changes) */
static const up_rule rules[] = {
    {"Softmax", 13, ANY, NULL, up_softmax},
    {"LogSoftmax", 13, ANY, NULL, up_softmax},
    {"Hardmax", 13, ANY, NULL, up_softmax},
    {"Upsample", ANY, ANY, NULL, up_upsample},
    {"Resize", 11, ANY, NULL, up_resize10},
    {"Resize", 13, ANY, tf_half_pixel, no_tf_half_pixel},
    {"Slice", 10, ANY, NULL, up_slice},
    {"Pad", 11, ANY, NULL, up_pad},
    {"Clip", 11, ANY, NULL, up_clip},
    {"Squeeze", 13, ANY, NULL, up_axes},
    {"Unsqueeze", 13, ANY, NULL, up_axes},
    {"ReduceSum", 13, 13, NULL, up_axes},
    {"ReduceMean", 18, 18, NULL, up_axes},
    {"ReduceMax", 18, 18, NULL, up_axes},
    {"ReduceMin", 18, 18, NULL, up_axes},
    {"ReduceProd", 18, 18, NULL, up_axes},
    {"ReduceL1", 18, 18, NULL, up_axes},
    {"ReduceL2", 18, 18, NULL, up_axes},
    {"ReduceLogSum", 18, 18, NULL, up_axes},
    {"ReduceLogSumExp", 18, 18, NULL, up_axes},
    {"ReduceSumSquare", 18, 18, NULL, up_axes},
    {"Split", ANY, ANY, NULL, up_split},
    {"TopK", 10, ANY, NULL, up_topk},
    {"Reshape", 5, ANY, NULL, up_reshape},
    {"BatchNormalization", ANY, ANY, NULL, up_batchnorm},
    {"Dropout", 12, ANY, NULL, up_dropout},
    {"GroupNormalization", 21, 21, NULL, up_groupnorm},
    {"Concat", 4, ANY, no_axis, up_concat},
    {"Add", 7, ANY, NULL, up_legacy_broadcast},
    {"Sub", 7, ANY, NULL, up_legacy_broadcast},
    {"Mul", 7, ANY, NULL, up_legacy_broadcast},
    {"Div", 7, ANY, NULL, up_legacy_broadcast},
    {"Pow", 7, ANY, NULL, up_legacy_broadcast},
    {"And", 7, ANY, NULL, up_legacy_broadcast},
    {"Or", 7, ANY, NULL, up_legacy_broadcast},
    {"Xor", 7, ANY, NULL, up_legacy_broadcast},
    {"Equal", 7, ANY, NULL, up_legacy_broadcast},
    {"Greater", 7, ANY, NULL, up_legacy_broadcast},
    {"Less", 7, ANY, NULL, up_legacy_broadcast},
    {"Gemm", 7, ANY, NULL, up_legacy_broadcast},
    {"Scatter", ANY, ANY, NULL, up_scatter},
    {"RoiAlign", 16, ANY, no_ctm, up_roialign},
    {"GridSample", 20, 20, NULL, up_gridsample},
    {"DFT", 20, 20, NULL, up_dft},
    {"Cast", 6, ANY, NULL, no_cast},
    {"Tile", 6, ANY, NULL, no_tile},
    {"Scan", 9, ANY, NULL, no_scan},
    {"LpPool", 2, ANY, NULL, no_lppool},
    {"GlobalLpPool", 2, ANY, NULL, no_lppool},
};
#define N_RULES (sizeof rules / sizeof *rules)
_Static_assert(N_RULES < 255, "rule_at holds 1 + a rule's index in a byte");

/* The first rule from index r on for op at the upgrade's opsets (their
 * `when` not asked); N_RULES when none. */
static size_t rule_from(const up *u, const char *op, size_t r)
{
    for (; r < N_RULES; r++) {
        const up_rule *w = &rules[r];
        if ((w->below == ANY || u->from < w->below) && u->to >= w->to_min && op[0] == w->op[0] && !strcmp(op, w->op))
            return r;
    }
    return N_RULES;
}

/* The rule of ai.onnx node id (row def, NULL when the table lacks its op
 * at the model's opset), NULL when none: the first rule by op and opsets,
 * remembered by row, then the rules whose `when` fails are passed. */
static const up_rule *rule_look(up *u, carve_node_id id, const cv_op_def *def)
{
    const char *op = u->m->nodes[id].op;
    size_t r;
    if (def) {
        uint8_t *at = &u->rule_at[cv_op_row(def)];
        if (!*at)
            *at = (uint8_t)(1 + rule_from(u, op, 0));
        r = *at - 1u;
    } else {
        r = rule_from(u, op, 0);
    }
    while (r < N_RULES && rules[r].when && !rules[r].when(u->m, id))
        r = rule_from(u, op, r + 1);
    return r < N_RULES ? &rules[r] : NULL;
}

/* rule_look, with the answer for most nodes (a row no rule names, a row
 * whose rule holds always) at a glance. */
static inline const up_rule *rule_for(up *u, carve_node_id id)
{
    const cv_op_def *def = cv_op_for_node(u->m, id);
    size_t at = def ? u->rule_at[cv_op_row(def)] : 0;
    if (at == 1 + N_RULES)
        return NULL;
    return at && !rules[at - 1].when ? &rules[at - 1] : rule_look(u, id, def);
}

/* The dry walk: every node of every graph is checked (none changed); the
 * nodes with something to do go to u->todo, in walk order: an ai.onnx node
 * with a rule, or with consumed_inputs (ignored since opset 6) to drop.
 * Other domains keep their opsets, consumed_inputs included. */
static bool walk_dry(up *u, const cv_ids *graphs)
{
    carve_model *m = u->m;
    for (uint32_t k = 0; k < graphs->n; k++) {
        const cv_graph *g = &m->graphs[graphs->v[k]];
        for (uint32_t i = 0; i < g->nodes.n; i++) {
            carve_node_id id = g->nodes.v[i];
            const cv_node *n = &m->nodes[id];
            if (*n->domain)
                continue;
            const up_rule *r = rule_for(u, id);
            if (r) {
                if (!r->fn(u, id))
                    return false; /* refused, or out of memory */
            } else if (!n->n_attr || !has_attr(m, id, "consumed_inputs")) {
                continue; /* nothing to do */
            }
            if (!cv_ids_push(&u->todo, id))
                return nomem(u);
        }
    }
    return true;
}

/* The real walk over the nodes the dry walk listed (pieces are inserted
 * around their node: the ids were taken before any change). */
static bool walk(up *u)
{
    for (uint32_t i = 0; i < u->todo.n; i++) {
        carve_node_id id = u->todo.v[i];
        u->changed = false;
        drop_attr(u, id, "consumed_inputs");
        const up_rule *r = rule_for(u, id);
        if (r && !r->fn(u, id))
            return false;
        if (u->changed)
            u->st->nodes_rewritten++;
    }
    return true;
}

bool cv_upgrade_value_unread(const carve_model *m, carve_value_id v)
{
    carve_graph_id g0 = m->values[v].graph;
    for (carve_graph_id g = 0; g < m->n_graphs; g++) {
        if (!cv_graph_encloses(m, g0, g))
            continue;
        const cv_graph *gr = &m->graphs[g];
        for (uint32_t i = 0; i < gr->outputs.n; i++)
            if (gr->outputs.v[i] == v)
                return false;
        for (uint32_t i = 0; i < gr->nodes.n; i++) {
            const cv_node *n = &m->nodes[gr->nodes.v[i]];
            for (uint32_t j = 0; j < n->n_in; j++)
                if (n->in[j] == v)
                    return false;
        }
    }
    return true;
}

/* Every node's op table row, before the opset changes (cached on the nodes
 * by inference: no search), to tell afterwards whether any row moved. */
static const cv_op_def **rows_before(const carve_model *m)
{
    const cv_op_def **r = cv_malloc(((size_t)m->n_nodes + 1) * sizeof *r);
    for (carve_node_id id = 0; r && id < m->n_nodes; id++)
        r[id] = m->nodes[id].dead ? NULL : cv_op_for_node(m, id);
    return r;
}

carve_status cv_upgrade_run(carve_model *m, carve_upgrade_stats *stats, carve_node_id **origin, bool *types_kept)
{
    carve_upgrade_stats local;
    carve_upgrade_stats *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    if (origin)
        *origin = NULL;
    if (types_kept)
        *types_kept = false;
    int64_t from = carve_model_opset(m, "");
    int64_t to = cv_upgrade_newest();
    st->opset_before = st->opset_after = from;
    if (from <= 0 || from >= to)
        return CARVE_OK;
    carve_status s = cv_infer_model(m, NULL);
    if (s)
        return s;
    cv_ids graphs = {0};
    if (!cv_fold_graphs(m, &graphs))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory upgrading the opset");
    up u = {.m = m, .from = from, .to = to, .dry = true, .st = st};
    u.rule_at = cv_zalloc(m->ctx, cv_op_count(), "upgrading the opset");
    if (!u.rule_at) {
        cv_ids_free(&graphs);
        return CARVE_ERR_NOMEM;
    }
    bool ok = walk_dry(&u, &graphs);
    cv_ids_free(&graphs);
    if (!ok) {
        cv_ids_free(&u.todo);
        cv_free(u.origin);
        cv_free(u.rule_at);
        if (u.err)
            return u.err;
        snprintf(st->refused, sizeof st->refused, "%s", u.why);
        if (types_kept)
            *types_kept = true; /* the model is as it was when inferred */
        return CARVE_OK;
    }
    u.dry = false;
    ok = walk(&u);
    cv_ids_free(&u.todo);
    cv_free(u.rule_at);
    if (!ok) { /* only out of memory gets here: the dry run checked the rest */
        cv_free(u.origin);
        return u.err ? u.err : cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "opset upgrade: %s", u.why);
    }
    /* The rows every node had (cached by inference), to find the new ones
     * once per op: and if no node was rewritten and no row moved, the types
     * inferred above are what inference at the new opset gives. */
    const cv_op_def **rows = rows_before(m);
    if ((s = carve_model_set_opset(m, "", to))) {
        cv_free(rows);
        cv_free(u.origin);
        return s;
    }
    bool same = rows && cv_op_rows_after(m, rows);
    if (types_kept)
        *types_kept = same && !st->nodes_rewritten && !u.n_origin;
    cv_free(rows);
    if (carve_model_ir_version(m) < 10)
        carve_model_set_ir_version(m, 10); /* opset 21 came with IR version 10 */
    st->opset_after = to;
    if (origin) {
        *origin = cv_malloc((m->n_nodes ? m->n_nodes : 1) * sizeof **origin);
        if (!*origin) {
            cv_free(u.origin);
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory upgrading the opset");
        }
        for (uint32_t i = 0; i < m->n_nodes; i++)
            (*origin)[i] = i < u.n_origin ? u.origin[i] : CARVE_NONE;
    }
    cv_free(u.origin);
    return CARVE_OK;
}

carve_status carve_upgrade(carve_model *m, carve_upgrade_stats *stats)
{
    if (!m)
        return CARVE_ERR_ARG;
    return cv_upgrade_run(m, stats, NULL, NULL);
}

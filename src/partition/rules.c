/* rules.c: the op-specific rules a profile row names in "checks" (the
 * rules a list of allowed attribute values cannot say). Each refusal names
 * the input or attribute and what the target allows; docs/targets.md cites
 * the source of each rule. */
#include "partition.h"

#include <math.h>
#include <string.h>

static const cv_type *io_type(const carve_model *m, carve_value_id v)
{
    if (v == CARVE_NONE)
        return NULL;
    const cv_type *t = &m->values[v].type;
    return t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

/* Gemm's C: absent, [N] or [1, N] (a bias per output column). */
static cv_reason gemm_c(const carve_model *m, const cv_node *n, const carve_target *t, char *msg, size_t msgsz)
{
    if (n->n_in < 3 || n->in[2] == CARVE_NONE)
        return CV_R_NONE;
    const cv_type *c = io_type(m, n->in[2]), *y = io_type(m, n->out[0]);
    int64_t cols = y && y->rank == 2 ? y->dims[1].value : -1;
    bool ok = c && cols >= 0 &&
              ((c->rank == 1 && c->dims[0].value == cols) ||
               (c->rank == 2 && c->dims[0].value == 1 && c->dims[1].value == cols));
    if (!ok) {
        snprintf(msg, msgsz, "input 2 'C' of Gemm must have shape [N] or [1, N] for %s (a bias per output column)",
                 t->name);
        return CV_R_ATTRIBUTE;
    }
    return CV_R_NONE;
}

static cv_reason groups_divide(const carve_model *m, carve_node_id id, const carve_target *t, char *msg,
                               size_t msgsz)
{
    const cv_node *n = &m->nodes[id];
    const cv_type *x = io_type(m, n->in[0]);
    int64_t g = cv_attr_i(m, id, "num_groups", 0);
    if (!x || x->rank < 2 || x->dims[1].value <= 0 || g <= 0 || x->dims[1].value % g) {
        snprintf(msg, msgsz, "attribute num_groups = %lld must divide the channel count (%lld) for %s", (long long)g,
                 (long long)(x && x->rank >= 2 ? x->dims[1].value : -1), t->name);
        return CV_R_ATTRIBUTE;
    }
    return CV_R_NONE;
}

/* Resize on HTP: rank 3 or more, N and C keep their size (spatial dims
 * only), and nearest_mode floor (QNN's ResizeNearestNeighbor) not with
 * pytorch_half_pixel. */
static cv_reason resize_qnn(const carve_model *m, carve_node_id id, const carve_target *t, char *msg, size_t msgsz)
{
    const cv_node *n = &m->nodes[id];
    const cv_type *x = io_type(m, n->in[0]), *y = io_type(m, n->out[0]);
    if (!x || !y || x->rank != y->rank || x->rank < 3) {
        snprintf(msg, msgsz, "%s resizes inputs of rank 3 to 5 with known shapes only", t->name);
        return CV_R_RANK;
    }
    for (int d = 0; d < 2; d++)
        if (x->dims[d].value != y->dims[d].value) {
            snprintf(msg, msgsz, "Resize changes dim %d (%s) from %lld to %lld; %s resizes spatial dims only", d,
                     d ? "C" : "N", (long long)x->dims[d].value, (long long)y->dims[d].value, t->name);
            return CV_R_ATTRIBUTE;
        }
    if (!strcmp(cv_attr_s(m, id, "mode", "nearest"), "nearest") &&
        !strcmp(cv_attr_s(m, id, "nearest_mode", "round_prefer_floor"), "floor") &&
        !strcmp(cv_attr_s(m, id, "coordinate_transformation_mode", "half_pixel"), "pytorch_half_pixel")) {
        snprintf(msg, msgsz, "attribute nearest_mode = 'floor' with coordinate_transformation_mode = "
                             "'pytorch_half_pixel': %s takes floor with half_pixel, align_corners or asymmetric only",
                 t->name);
        return CV_R_ATTRIBUTE;
    }
    return CV_R_NONE;
}

/* Einsum as a (batched) MatMul: "...ij,...jk->...ik" with one letter per
 * dim, the same batch letters on both inputs and the output, in order; B
 * may be taken transposed ("...ij,...kj->...ik"). */
static cv_reason einsum_matmul(const carve_model *m, carve_node_id id, const carve_target *t, char *msg,
                               size_t msgsz)
{
    const char *eq = cv_attr_s(m, id, "equation", "");
    char a[16], b[16], o[16];
    int na = 0, nb = 0, no = 0, part = 0;
    bool bad = false;
    for (const char *p = eq; *p && !bad; p++) {
        char ch = *p;
        if (ch == ' ')
            continue;
        if (ch == ',' && part == 0) {
            part = 1;
        } else if (ch == '-' && p[1] == '>' && part == 1) {
            part = 2;
            p++;
        } else if (ch >= 'a' && ch <= 'z') {
            char *dst = part == 0 ? a : part == 1 ? b : o;
            int *k = part == 0 ? &na : part == 1 ? &nb : &no;
            if (*k >= 15)
                bad = true;
            else
                dst[(*k)++] = ch;
        } else {
            bad = true;
        }
    }
    bool ok = !bad && part == 2 && na >= 2 && na == nb && na == no && !memcmp(a, b, (size_t)na - 2) &&
              !memcmp(a, o, (size_t)na - 2);
    if (ok) {
        char i = a[na - 2], j = a[na - 1], p = b[nb - 2], q = b[nb - 1], r = o[no - 2], s = o[no - 1];
        bool plain = p == j && q != i && q != j && r == i && s == q;       /* ij,jk->ik */
        bool trans = q == j && p != i && p != j && r == i && s == p;       /* ij,kj->ik */
        ok = plain || trans;
        for (int k = 0; ok && k < na - 2; k++)
            ok = a[k] != i && a[k] != j && a[k] != (plain ? q : p);
    }
    if (!ok) {
        snprintf(msg, msgsz, "attribute equation = '%s' is not a MatMul-like equation (...ij,...jk->...ik or "
                             "...ij,...kj->...ik), the only Einsum %s takes", eq, t->name);
        return CV_R_ATTRIBUTE;
    }
    return CV_R_NONE;
}

/* Reshape with allowzero = 1 and a 0 in its (constant) shape. */
static cv_reason reshape_zero(const carve_model *m, carve_node_id id, const carve_target *t, char *msg, size_t msgsz)
{
    const cv_node *n = &m->nodes[id];
    if (!cv_attr_i(m, id, "allowzero", 0) || n->n_in < 2 || n->in[1] == CARVE_NONE)
        return CV_R_NONE;
    const cv_tensor *s = cv_const_tensor(m, n->in[1]);
    bool zero = !s || s->dtype != CARVE_INT64;
    for (size_t i = 0; s && !zero && i < s->nelem; i++) {
        int64_t v;
        memcpy(&v, (const int64_t *)s->data + i, sizeof v);
        zero = v == 0;
    }
    if (zero) {
        snprintf(msg, msgsz, "attribute allowzero = 1 with a 0 in input 1 'shape' (a dim of size 0): %s allows "
                             "allowzero only when the shape has no 0", t->name);
        return CV_R_ATTRIBUTE;
    }
    return CV_R_NONE;
}

/* A QuantizeLinear/DequantizeLinear with a per-axis scale outside a QDQ
 * node unit (standalone) on a runtime value. */
static cv_reason per_tensor(const carve_model *m, const cv_node *n, const carve_target *t,
                            const cv_unit_inner_mask *inner, char *msg, size_t msgsz)
{
    if (inner && ((inner->in | inner->out) & 1)) /* its data value is inside a unit */
        return CV_R_NONE;
    if (n->in[0] != CARVE_NONE && cv_value_is_const(m, n->in[0]))
        return CV_R_NONE; /* a constant: folded into a static tensor */
    const cv_type *s = n->n_in > 1 ? io_type(m, n->in[1]) : NULL;
    size_t cnt = 1;
    for (int d = 0; s && d < s->rank; d++)
        cnt *= s->dims[d].value > 0 ? (size_t)s->dims[d].value : 2;
    if (cnt > 1) {
        snprintf(msg, msgsz, "input 1 '%s' is a per-axis scale: %s takes a standalone %s per tensor only (per-axis "
                             "only on a constant or inside a QDQ node unit)", m->values[n->in[1]].name, t->name, n->op);
        return CV_R_ATTRIBUTE;
    }
    return CV_R_NONE;
}

bool cv_fixed_enc16(const char *op, carve_dtype zt, double *scale, int64_t *zero_point)
{
    bool sig = !strcmp(op, "Sigmoid");
    if ((!sig && strcmp(op, "Tanh")) || (zt != CARVE_UINT16 && zt != CARVE_INT16))
        return false;
    /* uint16: Sigmoid 1/65536 zero point 0, Tanh 1/32768 zero point 32768;
     * int16: the same grid of real values, the zero point moved by 32768 */
    *scale = sig ? 1.0 / 65536 : 1.0 / 32768;
    *zero_point = zt == CARVE_UINT16 ? (sig ? 0 : 32768) : (sig ? -32768 : 0);
    return true;
}

carve_node_id cv_quantize_reading(const carve_model *m, carve_graph_id g, carve_value_id v)
{
    const cv_graph *gr = &m->graphs[g];
    for (uint32_t k = 0; k < gr->nodes.n; k++) {
        const cv_node *q = &m->nodes[gr->nodes.v[k]];
        if (q->n_in >= 2 && q->in[0] == v && !strcmp(q->op, "QuantizeLinear") && !*q->domain)
            return gr->nodes.v[k];
    }
    return CARVE_NONE;
}

/* A 16-bit quantized Sigmoid/Tanh output: HTP computes it at a fixed
 * encoding (cv_fixed_enc16); the output's QuantizeLinear must say that
 * encoding, unless the profile legalizes (requantizes) it. */
static cv_reason fixed_enc16(const carve_model *m, carve_node_id id, const carve_target *t,
                             const cv_unit_inner_mask *inner, char *msg, size_t msgsz)
{
    const cv_node *n = &m->nodes[id];
    /* found once per graph by cv_unit_inner when lowering gives it (a scan
     * of the graph per node was quadratic: 3 s for a 43,000-node chain) */
    carve_node_id qn = inner ? inner->out_q : cv_quantize_reading(m, n->graph, n->out[0]);
    if (qn == CARVE_NONE || t->lg_requant16)
        return CV_R_NONE;
    const cv_node *q = &m->nodes[qn];
    const cv_tensor *sc = cv_const_tensor(m, q->in[1]);
    const cv_tensor *zp = q->n_in > 2 && q->in[2] != CARVE_NONE ? cv_const_tensor(m, q->in[2]) : NULL;
    carve_dtype zt = zp ? zp->dtype : CARVE_UINT8;
    double want_s;
    int64_t want_z;
    if (!cv_fixed_enc16(n->op, zt, &want_s, &want_z))
        return CV_R_NONE;
    double s = -1;
    int64_t z = -1;
    if (sc && sc->nelem == 1 && sc->dtype == CARVE_FLOAT) {
        float f;
        memcpy(&f, sc->data, sizeof f);
        s = f;
    }
    if (zp && zp->nelem == 1)
        z = zt == CARVE_UINT16 ? *(const uint16_t *)zp->data : *(const int16_t *)zp->data;
    if (fabs(s - want_s) > want_s * 1e-6 || z != want_z) {
        snprintf(msg, msgsz, "its %s output is quantized with scale %g, zero point %lld; %s computes a 16-bit %s at "
                             "scale %g, zero point %lld only (legalize.requantize_fixed_16bit requantizes instead)",
                 carve_dtype_name(zt), s, (long long)z, t->name, n->op, want_s, (long long)want_z);
        return CV_R_ENCODING;
    }
    return CV_R_NONE;
}

cv_reason cv_check_rules(const carve_model *m, carve_node_id id, const carve_target *t, uint32_t checks,
                         const cv_unit_inner_mask *inner, char *msg, size_t msgsz)
{
    const cv_node *n = &m->nodes[id];
    cv_reason r = CV_R_NONE;
    if (!r && (checks & CV_CHECK_GEMM_C))
        r = gemm_c(m, n, t, msg, msgsz);
    if (!r && (checks & CV_CHECK_GROUPS_DIVIDE))
        r = groups_divide(m, id, t, msg, msgsz);
    if (!r && (checks & CV_CHECK_RESIZE_QNN))
        r = resize_qnn(m, id, t, msg, msgsz);
    if (!r && (checks & CV_CHECK_EINSUM_MATMUL))
        r = einsum_matmul(m, id, t, msg, msgsz);
    if (!r && (checks & CV_CHECK_RESHAPE_ZERO))
        r = reshape_zero(m, id, t, msg, msgsz);
    if (!r && (checks & CV_CHECK_PER_TENSOR))
        r = per_tensor(m, n, t, inner, msg, msgsz);
    if (!r && (checks & CV_CHECK_FIXED_ENC16))
        r = fixed_enc16(m, id, t, inner, msg, msgsz);
    return r;
}

/*
 * ops_qdq.c: int8 QDQ node units (docs/onednn.md#int8).
 *
 * A statically quantized model (QDQ format) writes an int8 convolution as
 *   x_u8 -> DequantizeLinear --+
 *   w_s8 -> DequantizeLinear --+-> Conv -> QuantizeLinear -> y_u8
 *   b_s32 -> DequantizeLinear -+
 * and carve places the group whole (src/partition/units.c). The backend
 * builds it as one oneDNN int8 primitive: u8/s8 source with its zero
 * point (dnnl_primitive_attr_set_zero_points, DNNL_ARG_SRC), s8 weights
 * (zero point 0, else refused), the bias in accumulator units (f32), one
 * output scale or one per output channel
 * (dnnl_primitive_attr_set_output_scales, s_x * s_w[c] / s_y) and the
 * output's zero point (DNNL_ARG_DST); without a QuantizeLinear the
 * destination is f32 (scale s_x * s_w[c]). MatMul likewise, its weights per
 * tensor or per column N.
 *
 * A DequantizeLinear of a constant outside such a unit is computed at
 * compile time, as the reference computes it, into a float constant; one
 * of a runtime tensor outside a unit, and a QuantizeLinear that ends no
 * unit, are refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dn.h"

/* A refusal (or an error) of dn_q8_plan. */
#define Q8_FAIL(...) (dn_fail(b, __VA_ARGS__), -1)

static bool is_op(const dn_builder *b, carve_node_id n, const char *op)
{
    return !*carve_node_domain(b->m, n) && !strcmp(carve_node_op(b->m, n), op);
}

/* How many times the nodes of the builder's graph read v (SIZE_MAX when v
 * is an output of that graph); *first gets the first reader. */
static size_t readers(const dn_builder *b, carve_value_id v, carve_node_id *first)
{
    for (size_t i = 0; i < carve_graph_output_count(b->m, b->g); i++)
        if (carve_graph_output(b->m, b->g, i) == v)
            return SIZE_MAX;
    size_t c = 0;
    *first = CARVE_NONE;
    for (size_t k = 0; k < carve_graph_node_count(b->m, b->g); k++) {
        carve_node_id n = carve_graph_node(b->m, b->g, k);
        for (size_t i = 0; i < carve_node_input_count(b->m, n); i++)
            if (carve_node_input(b->m, n, i) == v) {
                if (!c++)
                    *first = n;
            }
    }
    return c;
}

/* The DequantizeLinear producing input i of op when op is its only reader
 * (units.c's membership rule), else CARVE_NONE. */
static carve_node_id unit_dq(const dn_builder *b, carve_node_id op, size_t i)
{
    if (!dn_has_in(b, op, i))
        return CARVE_NONE;
    carve_value_id v = carve_node_input(b->m, op, i);
    carve_node_id p = carve_value_producer(b->m, v), r;
    if (p == CARVE_NONE || !is_op(b, p, "DequantizeLinear") || carve_node_graph(b->m, p) != b->g ||
        readers(b, v, &r) != 1)
        return CARVE_NONE;
    return p;
}

/* The QuantizeLinear reading op's output 0 as its only reader. */
static carve_node_id unit_q(const dn_builder *b, carve_node_id op)
{
    carve_value_id v = carve_node_output(b->m, op, 0);
    carve_node_id r;
    if (readers(b, v, &r) != 1 || !is_op(b, r, "QuantizeLinear") || carve_node_input(b->m, r, 0) != v)
        return CARVE_NONE;
    return r;
}

/* A QuantizeLinear's or DequantizeLinear's quantization parameters. */
typedef struct qp {
    carve_value_id q; /* the integer tensor */
    carve_dtype dt;
    int axis;         /* -1: per tensor */
    size_t n;         /* scales (and zero points) */
    const float *scale;
    const void *zp;   /* NULL: 0 */
    carve_dtype zdt;
} qp;

static float qp_scale(const qp *p, size_t i) { return p->scale[p->n == 1 ? 0 : i]; }

static int32_t qp_zp(const qp *p, size_t i)
{
    if (!p->zp)
        return 0;
    size_t k = p->n == 1 ? 0 : i;
    switch (p->zdt) {
    case CARVE_UINT8: return ((const uint8_t *)p->zp)[k];
    case CARVE_INT8: return ((const int8_t *)p->zp)[k];
    default: {
        int32_t z;
        memcpy(&z, (const char *)p->zp + 4 * k, 4);
        return z;
    }
    }
}

static bool qp_read(dn_builder *b, carve_node_id qn, qp *p)
{
    const char *op = carve_node_op(b->m, qn);
    bool quant = is_op(b, qn, "QuantizeLinear");
    memset(p, 0, sizeof *p);
    p->q = quant ? carve_node_output(b->m, qn, 0) : carve_node_input(b->m, qn, 0);
    p->dt = carve_value_dtype(b->m, p->q);
    if (p->dt != CARVE_UINT8 && p->dt != CARVE_INT8 && p->dt != CARVE_INT32)
        return dn_fail(b, DN_R_DTYPE, "%s '%s': the quantized tensor is %s; the onednn backend takes uint8, int8 "
                                      "(and int32 biases)", op, carve_node_name(b->m, qn), carve_dtype_name(p->dt));
    size_t nb = 0;
    carve_value_id sv = dn_has_in(b, qn, 1) ? carve_node_input(b->m, qn, 1) : CARVE_NONE;
    p->scale = sv != CARVE_NONE ? carve_value_data(b->m, sv, &nb) : NULL;
    if (!p->scale || carve_value_dtype(b->m, sv) != CARVE_FLOAT || nb < 4)
        return dn_fail(b, DN_R_INPUT, "%s '%s': input 1 'scale' must be a float32 constant", op,
                       carve_node_name(b->m, qn));
    p->n = nb / 4;
    if (dn_has_in(b, qn, 2)) {
        carve_value_id zv = carve_node_input(b->m, qn, 2);
        size_t zb = 0;
        p->zp = carve_value_data(b->m, zv, &zb);
        p->zdt = carve_value_dtype(b->m, zv);
        int bits = carve_dtype_bits(p->zdt);
        if (!p->zp || (p->zdt != CARVE_UINT8 && p->zdt != CARVE_INT8 && p->zdt != CARVE_INT32) ||
            zb != p->n * (size_t)(bits / 8))
            return dn_fail(b, DN_R_INPUT, "%s '%s': input 2 'zero_point' must be a constant of the scale's count",
                           op, carve_node_name(b->m, qn));
    }
    if (dn_attr_i(b, qn, "block_size", 0) != 0)
        return dn_fail(b, DN_R_ATTR, "%s '%s': blocked quantization (block_size) is not taken by the onednn backend",
                       op, carve_node_name(b->m, qn));
    if (dn_attr_i(b, qn, "output_dtype", 0) != 0 && !quant &&
        dn_attr_i(b, qn, "output_dtype", 0) != CARVE_FLOAT)
        return dn_fail(b, DN_R_DTYPE, "%s '%s': output_dtype other than float32", op, carve_node_name(b->m, qn));
    p->axis = -1;
    if (p->n > 1) {
        int r = carve_value_rank(b->m, p->q);
        int64_t ax = dn_attr_i(b, qn, "axis", 1);
        if (ax < 0)
            ax += r;
        if (ax < 0 || ax >= r || carve_value_dim(b->m, p->q, (int)ax).value != (int64_t)p->n)
            return dn_fail(b, DN_R_ATTR, "%s '%s': %zu scales do not match axis %lld", op, carve_node_name(b->m, qn),
                           p->n, (long long)ax);
        p->axis = (int)ax;
    }
    return true;
}

bool dn_isa_vnni(void)
{
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
           (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
}

void dn_q8_free(dn_q8 *u)
{
    free(u->oscale);
    free(u->bias);
    u->oscale = u->bias = NULL;
}

int dn_q8_plan(dn_builder *b, carve_node_id n, bool matmul, dn_q8 *u)
{
    memset(u, 0, sizeof *u);
    const char *op = matmul ? "MatMul" : "Conv";
    u->dq_x = unit_dq(b, n, 0);
    if (u->dq_x == CARVE_NONE || carve_value_data(b->m, carve_node_input(b->m, u->dq_x, 0), NULL))
        return 0; /* a float activation: the float path */
    if (!dn_isa_vnni())
        return Q8_FAIL(DN_R_DTYPE,
                       "%s: int8 Conv/MatMul refused on this CPU (oneDNN ISA without VNNI: its u8 x s8 kernels "
                       "saturate 16-bit intermediate sums, so results would not be exact)",
                       op);
    qp x, w, bias, y;
    if (!qp_read(b, u->dq_x, &x))
        return -1;
    if ((x.dt != CARVE_UINT8 && x.dt != CARVE_INT8) || x.axis >= 0)
        return Q8_FAIL(DN_R_DTYPE, "%s: an int8 unit's input 0 must be uint8 or int8 quantized per tensor", op);
    u->dq_w = unit_dq(b, n, 1);
    if (u->dq_w == CARVE_NONE || !carve_value_data(b->m, carve_node_input(b->m, u->dq_w, 0), NULL))
        return Q8_FAIL(DN_R_INPUT, "%s: an int8 unit's input 1 must be a DequantizeLinear of constant int8 "
                                      "weights read only by this node", op);
    if (!qp_read(b, u->dq_w, &w))
        return -1;
    int wr = carve_value_rank(b->m, w.q);
    if (w.dt != CARVE_INT8)
        return Q8_FAIL(DN_R_DTYPE, "%s: weights are %s; oneDNN's int8 kernels take int8 weights", op,
                       carve_dtype_name(w.dt));
    if (matmul && wr != 2)
        return Q8_FAIL(DN_R_INPUT, "MatMul: int8 weights of rank %d; the onednn backend takes 2-D int8 weights",
                       wr);
    int oc_axis = matmul ? 1 : 0;
    size_t n_oc = (size_t)carve_value_dim(b->m, w.q, oc_axis).value;
    if (w.axis >= 0 && w.axis != oc_axis)
        return Q8_FAIL(DN_R_ATTR, "%s: weights quantized along axis %d; oneDNN's output scales are per output "
                                     "channel (axis %d)", op, w.axis, oc_axis);
    for (size_t c = 0; c < w.n; c++)
        if (qp_zp(&w, c))
            return Q8_FAIL(DN_R_INPUT, "%s: weight zero point %d (channel %zu); oneDNN 2.6 takes only 0", op,
                           qp_zp(&w, c), c);
    u->dq_b = CARVE_NONE;
    bool has_b = !matmul && dn_has_in(b, n, 2);
    if (has_b) {
        u->dq_b = unit_dq(b, n, 2);
        carve_value_id bv = carve_node_input(b->m, n, 2);
        bool fconst = carve_value_dtype(b->m, bv) == CARVE_FLOAT && carve_value_data(b->m, bv, NULL);
        if (u->dq_b == CARVE_NONE && !fconst)
            return Q8_FAIL(DN_R_INPUT, "Conv: an int8 unit's bias must be constant");
        if (u->dq_b != CARVE_NONE &&
            (!qp_read(b, u->dq_b, &bias) || !carve_value_data(b->m, bias.q, NULL) || bias.dt != CARVE_INT32))
            return Q8_FAIL(DN_R_INPUT, "Conv: an int8 unit's bias must be a DequantizeLinear of int32 constants");
        size_t bbytes = 0;
        carve_value_data(b->m, u->dq_b != CARVE_NONE ? bias.q : bv, &bbytes);
        if (bbytes != 4 * n_oc)
            return Q8_FAIL(DN_R_INPUT, "Conv: the bias holds %zu bytes for %zu output channels", bbytes, n_oc);
    }
    u->q = unit_q(b, n);
    if (u->q != CARVE_NONE) {
        if (!qp_read(b, u->q, &y))
            return -1;
        if ((y.dt != CARVE_UINT8 && y.dt != CARVE_INT8) || y.axis >= 0)
            return Q8_FAIL(DN_R_DTYPE, "%s: the unit's QuantizeLinear must give uint8 or int8 per tensor", op);
    }
    /* In check mode of one node the builder's value table is small. */
    u->x = dn_in_any(b, u->dq_x, 0);
    u->w = u->x ? dn_in_any(b, u->dq_w, 0) : NULL;
    if (!u->w)
        return -1;
    u->xdt = dn_dt(x.dt);
    u->ydt = u->q != CARVE_NONE ? dn_dt(y.dt) : dnnl_f32;
    u->y = u->q != CARVE_NONE ? carve_node_output(b->m, u->q, 0) : carve_node_output(b->m, n, 0);
    u->zp_x = qp_zp(&x, 0);
    u->zp_y = u->q != CARVE_NONE ? qp_zp(&y, 0) : 0;
    u->n_oc = n_oc;
    u->n_scales = w.n == 1 ? 1 : n_oc;
    u->oscale = malloc(u->n_scales * sizeof *u->oscale);
    u->bias = has_b ? malloc(n_oc * sizeof *u->bias) : NULL;
    if (!u->oscale || (has_b && !u->bias)) {
        dn_q8_free(u);
        b->fatal = true;
        return Q8_FAIL(DN_R_LIB, "out of memory");
    }
    double sx = qp_scale(&x, 0), sy = u->q != CARVE_NONE ? qp_scale(&y, 0) : 1.0;
    for (size_t c = 0; c < u->n_scales; c++)
        u->oscale[c] = (float)(sx * qp_scale(&w, c) / sy);
    /* The bias in accumulator units: b * s_b / (s_x * s_w[c]); exactly b_q
     * where the bias scale is s_x * s_w[c], as quantizers write it. */
    for (size_t c = 0; has_b && c < n_oc; c++) {
        double bval, acc_scale = sx * qp_scale(&w, c);
        carve_value_id bv = u->dq_b != CARVE_NONE ? bias.q : carve_node_input(b->m, n, 2);
        const void *bd = carve_value_data(b->m, bv, NULL);
        if (u->dq_b != CARVE_NONE) {
            int32_t q;
            memcpy(&q, (const char *)bd + 4 * c, 4);
            float s = qp_scale(&bias, c);
            bval = (double)((int64_t)q - qp_zp(&bias, c)) * s;
            if ((double)s == acc_scale && !qp_zp(&bias, c)) {
                u->bias[c] = (float)q;
                continue;
            }
        } else {
            float f;
            memcpy(&f, (const char *)bd + 4 * c, 4);
            bval = f;
        }
        u->bias[c] = (float)(bval / acc_scale);
    }
    return 1;
}

bool dn_q8_pd(dn_builder *b, const dn_q8 *u, int oc_mask, const void *op_desc, const char *what,
              dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t attr;
    if (!dn_q8_attr(b, u, oc_mask, &attr))
        return false;
    bool ok = dn_pd(b, op_desc, attr, pd, what);
    dnnl_primitive_attr_destroy(attr);
    return ok;
}

bool dn_q8_attr(dn_builder *b, const dn_q8 *u, int oc_mask, dnnl_primitive_attr_t *attr)
{
    *attr = NULL;
    if (dnnl_primitive_attr_create(attr) != dnnl_success) {
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory");
    }
    dnnl_status_t st = dnnl_primitive_attr_set_output_scales(*attr, (dnnl_dim_t)u->n_scales,
                                                             u->n_scales > 1 ? oc_mask : 0, u->oscale);
    if (st == dnnl_success && u->zp_x)
        st = dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_SRC, 1, 0, &u->zp_x);
    if (st == dnnl_success && u->zp_y)
        st = dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_DST, 1, 0, &u->zp_y);
    /* oneDNN adds the output's zero point before its rounding conversion:
     * rint(v + zp), where QuantizeLinear computes rint(v) + zp; the two
     * differ at ties when zp is odd. A round post-op (half to even, before
     * the zero point) makes the conversion exact. */
    dnnl_post_ops_t po = NULL;
    if (st == dnnl_success && u->q != CARVE_NONE && (st = dnnl_post_ops_create(&po)) == dnnl_success) {
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f);
        if (st == dnnl_success)
            st = dnnl_primitive_attr_set_post_ops(*attr, po);
        dnnl_post_ops_destroy(po);
    }
    if (st != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return dn_dnnl_fail(b, st, "int8 scales and zero points");
    }
    return true;
}

bool dn_q8_weights(dn_builder *b, dn_q8 *u)
{
    if (b->check || u->w->mem)
        return true;
    u->w->is_const = true;
    u->w->mem = dn_const_mem(b, &u->w->md, carve_value_data(b->m, u->w->id, NULL));
    return u->w->mem != NULL;
}

dnnl_memory_t dn_q8_def(dn_builder *b, dn_q8 *u, const dnnl_memory_desc_t *md)
{
    dn_mark_done(b, u->dq_x);
    dn_mark_done(b, u->dq_w);
    if (u->dq_b != CARVE_NONE)
        dn_mark_done(b, u->dq_b);
    if (u->q != CARVE_NONE)
        dn_mark_done(b, u->q);
    dn_val *y = dn_def(b, u->y, md);
    return y ? y->mem : NULL;
}

/* Whether node c is one the int8 units are built around: a Conv or a
 * MatMul (asked of the op table: the families that call dn_q8_plan). */
static bool unit_op(const dn_builder *b, carve_node_id c)
{
    dn_op_fn fn = *carve_node_domain(b->m, c) ? NULL : dn_op_find(carve_node_op(b->m, c));
    return fn == dn_op_conv || fn == dn_op_matmul;
}

static bool unit_matmul(const dn_builder *b, carve_node_id c) { return dn_op_find(carve_node_op(b->m, c)) == dn_op_matmul; }

/* The Conv or MatMul reading n's output when n is a DequantizeLinear of
 * its int8 unit; CARVE_NONE otherwise. */
static carve_node_id unit_op_of_dq(dn_builder *b, carve_node_id n)
{
    carve_node_id c;
    if (readers(b, carve_node_output(b->m, n, 0), &c) != 1 || !unit_op(b, c))
        return CARVE_NONE;
    return c;
}

bool dn_qdq_pd(dn_builder *b, const char *op, const dnnl_memory_desc_t *xmd, const dnnl_memory_desc_t *pmd,
               const dnnl_memory_desc_t *ymd, bool quant, dnnl_primitive_desc_t *pd)
{
    char what[64];
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, quant ? dnnl_binary_div : dnnl_binary_sub, xmd, pmd, ymd);
    if (st != dnnl_success) {
        snprintf(what, sizeof what, "a %s (binary %s)", op, quant ? "div" : "sub");
        return dn_dnnl_fail(b, st, what);
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success)
        st = dnnl_post_ops_create(&po);
    if (st == dnnl_success && quant)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f);
    if (st == dnnl_success)
        st = dnnl_post_ops_append_binary(po, quant ? dnnl_binary_add : dnnl_binary_mul, pmd);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(attr, po);
    snprintf(what, sizeof what, "a %s", op);
    bool ok = st == dnnl_success ? dn_pd(b, &d, attr, pd, what) : dn_dnnl_fail(b, st, "post-ops");
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return ok;
}

/* A standalone QuantizeLinear / DequantizeLinear of a runtime tensor as
 * one binary primitive, exactly as the reference computes it:
 *   DequantizeLinear: (float)(q - zp) * s   sub, then a binary mul post-op
 *   QuantizeLinear: saturate(rint(x / s) + zp)   div (IEEE division, as
 *     the reference's x / s), an eltwise round post-op (half to even), an
 *     add of zp (exact on integers), the saturating conversion to u8/s8.
 * Per tensor, or per axis through a broadcast operand. */
static bool qdq_standalone(dn_builder *b, carve_node_id n, const qp *p, bool quant)
{
    dn_val *x = quant ? dn_in(b, n, 0) : dn_in_any(b, n, 0);
    if (!x)
        return false;
    if (!quant && p->dt == CARVE_INT32)
        return dn_fail(b, DN_R_DTYPE, "DequantizeLinear of the runtime int32 tensor '%s'", carve_value_name(b->m, p->q));
    if (!b->check && !x->mem) {
        b->fatal = true;
        return dn_fail(b, DN_R_INPUT, "input 0 '%s' is not computed in the partition", carve_value_name(b->m, x->id));
    }
    int nd = x->nd;
    dnnl_dims_t pd_dims;
    for (int d = 0; d < nd; d++)
        pd_dims[d] = d == p->axis ? (dnnl_dim_t)p->n : 1;
    dnnl_memory_desc_t pmd, ymd;
    dn_plain_md(&pmd, nd, pd_dims);
    dnnl_data_type_t ydt = quant ? dn_dt(p->dt) : dnnl_f32;
    dnnl_memory_desc_init_by_tag(&ymd, nd, x->dims, ydt, dnnl_format_tag_any);
    /* x's own layout; its plain one where oneDNN has no jit kernel for it */
    dnnl_memory_desc_t xmd = x->md;
    dnnl_primitive_desc_t pd = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            dn_plain_md_dt(&xmd, nd, x->dims, x->md.data_type);
        if (!dn_qdq_pd(b, quant ? "QuantizeLinear" : "DequantizeLinear", &xmd, &pmd, &ymd, quant, &pd))
            return false;
        if (pass || !dn_pd_is_ref(pd) || dn_md_is_plain(&xmd))
            break;
        dnnl_primitive_desc_destroy(pd);
    }
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    /* The operands: the zero points (minuend / addend) and the scales. */
    float *zs = malloc(2 * p->n * sizeof *zs);
    if (!zs) {
        dnnl_primitive_desc_destroy(pd);
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory");
    }
    for (size_t i = 0; i < p->n; i++) {
        zs[i] = (float)qp_zp(p, i);
        zs[p->n + i] = qp_scale(p, i);
    }
    dnnl_memory_t zm = dn_const_mem(b, &pmd, zs), sm = zm ? dn_const_mem(b, &pmd, zs + p->n) : NULL;
    free(zs);
    dnnl_memory_t xm = sm ? dn_as(b, x, &xmd) : NULL;
    dn_val *y = xm ? dn_out(b, n, 0, dn_pd_md(pd, dnnl_query_dst_md)) : NULL;
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC_0, xm},
                               {DNNL_ARG_SRC_1, quant ? sm : zm},
                               {DNNL_ARG_DST, y->mem},
                               {DNNL_ARG_ATTR_MULTIPLE_POST_OP(quant ? 1 : 0) | DNNL_ARG_SRC_1, quant ? zm : sm}};
    return dn_step_add(b, pd, 4, args);
}

bool dn_op_dequantize(dn_builder *b, carve_node_id n)
{
    qp p;
    if (!qp_read(b, n, &p))
        return false;
    carve_node_id c = unit_op_of_dq(b, n);
    if (c != CARVE_NONE) {
        dn_q8 u;
        int k = dn_q8_plan(b, c, unit_matmul(b, c), &u);
        dn_q8_free(&u);
        if (k < 0)
            return false;
        if (k > 0) /* the Conv / MatMul builds it (in check mode: is asked now) */
            return b->check ? dn_op_find(carve_node_op(b->m, c))(b, c) : true;
    }
    if (carve_value_dtype(b->m, carve_node_output(b->m, n, 0)) != CARVE_FLOAT)
        return dn_fail(b, DN_R_DTYPE, "DequantizeLinear to a type other than float32");
    size_t nb = 0;
    const void *q = carve_value_data(b->m, p.q, &nb);
    if (!q)
        return qdq_standalone(b, n, &p, false);
    /* A constant: dequantized now, as the reference does, (q - zp) * s. */
    b->no_pool++;
    dn_val *y = dn_out(b, n, 0, NULL);
    b->no_pool--;
    if (!y || b->check)
        return y != NULL || b->check;
    y->is_const = true;
    size_t cnt = dn_count(y), inner = 1;
    int r = carve_value_rank(b->m, p.q);
    for (int d = p.axis + 1; p.axis >= 0 && d < r; d++)
        inner *= (size_t)carve_value_dim(b->m, p.q, d).value;
    int bytes = carve_dtype_bits(p.dt) / 8;
    if (nb != cnt * (size_t)bytes) {
        b->fatal = true;
        return dn_fail(b, DN_R_INPUT, "constant '%s' holds %zu bytes for %zu values", carve_value_name(b->m, p.q), nb,
                       cnt);
    }
    void *h = NULL;
    dnnl_memory_get_data_handle(y->mem, &h);
    float *out = h;
    for (size_t i = 0; i < cnt; i++) {
        size_t a = p.axis >= 0 ? (i / inner) % p.n : 0;
        int64_t v = p.dt == CARVE_UINT8 ? ((const uint8_t *)q)[i] : p.dt == CARVE_INT8 ? ((const int8_t *)q)[i] : 0;
        if (p.dt == CARVE_INT32) {
            int32_t t;
            memcpy(&t, (const char *)q + 4 * i, 4);
            v = t;
        }
        out[i] = (float)((double)v - (double)qp_zp(&p, a)) * qp_scale(&p, a);
    }
    return true;
}

bool dn_op_quantize(dn_builder *b, carve_node_id n)
{
    qp y;
    if (!qp_read(b, n, &y))
        return false;
    if (y.dt != CARVE_UINT8 && y.dt != CARVE_INT8)
        return dn_fail(b, DN_R_DTYPE, "QuantizeLinear to %s; the onednn backend gives uint8 or int8",
                       carve_dtype_name(y.dt));
    carve_node_id p = carve_value_producer(b->m, carve_node_input(b->m, n, 0));
    if (b->check && p != CARVE_NONE && unit_op(b, p) && unit_q(b, p) == n) {
        dn_q8 u;
        int k = dn_q8_plan(b, p, unit_matmul(b, p), &u);
        dn_q8_free(&u);
        if (k > 0)
            return dn_op_find(carve_node_op(b->m, p))(b, p);
        if (k < 0)
            return false;
    }
    return qdq_standalone(b, n, &y, true);
}

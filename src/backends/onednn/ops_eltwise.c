/*
 * ops_eltwise.c: activations (oneDNN eltwise), binary ops with
 * broadcasting (oneDNN binary) and PRelu. Element-wise ops work in the
 * layout their input lives in, blocked or not.
 */
#include <float.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "dn.h"

/* Add/Sub/Mul of a float32 constant scalar (and Div by a power of two,
 * where x * (1 / c) is exact): eltwise linear, which fuses as a post-op. */
static int scalar_linear(dn_builder *b, carve_node_id n, const char *op, dn_elt *e)
{
    if (carve_node_input_count(b->m, n) != 2)
        return 0;
    for (size_t ci = 0; ci < 2; ci++) {
        carve_value_id cv = carve_node_input(b->m, n, ci), xv = carve_node_input(b->m, n, 1 - ci);
        float c;
        size_t cnt = 0;
        if (cv == CARVE_NONE || xv == CARVE_NONE || !dn_const_floats(b, n, ci, &c, 1, &cnt) || cnt != 1)
            continue;
        /* the output must have the data's shape (no broadcast by the scalar's rank) */
        carve_value_id y = carve_node_output(b->m, n, 0);
        if (carve_value_rank(b->m, y) != carve_value_rank(b->m, xv) || carve_value_dtype(b->m, xv) != CARVE_FLOAT)
            return 0;
        e->data_in = (int)(1 - ci);
        if (!strcmp(op, "Add"))
            e->alpha = 1, e->beta = c;
        else if (!strcmp(op, "Mul"))
            e->alpha = c, e->beta = 0;
        else if (!strcmp(op, "Sub"))
            e->alpha = ci == 1 ? 1.0f : -1.0f, e->beta = ci == 1 ? -c : c;
        else if (!strcmp(op, "Div") && ci == 1) {
            int ex;
            if (!(c != 0 && frexpf(c, &ex) == 0.5f) && !(c != 0 && frexpf(c, &ex) == -0.5f))
                return 0;
            e->alpha = 1.0f / c, e->beta = 0;
        } else
            return 0;
        e->alg = dnnl_eltwise_linear;
        return 1;
    }
    return 0;
}

int dn_eltwise_map(dn_builder *b, carve_node_id n, dn_elt out[2], bool set_reason)
{
    const char *op = carve_node_op(b->m, n);
    if (*carve_node_domain(b->m, n))
        return 0;
    out[0].alpha = out[0].beta = 0;
    out[1].alpha = out[1].beta = 0;
    out[0].data_in = out[1].data_in = 0;
    if (dn_binary_alg(op))
        return scalar_linear(b, n, op, &out[0]);
    static const struct {
        const char *op;
        /* op-list: data: this backend's own mapping of ONNX ops to oneDNN primitives (what a plugin declares) */
        dnnl_alg_kind_t alg;
    } simple[] = {
        {"Relu", dnnl_eltwise_relu}, {"Sigmoid", dnnl_eltwise_logistic}, {"Tanh", dnnl_eltwise_tanh},
        {"Abs", dnnl_eltwise_abs},   {"Sqrt", dnnl_eltwise_sqrt},        {"Exp", dnnl_eltwise_exp},
        {"Log", dnnl_eltwise_log},
    };
    for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
        if (!strcmp(op, simple[i].op)) {
            out[0].alg = simple[i].alg;
            return 1;
        }
    if (!strcmp(op, "HardSwish")) {
        /* oneDNN 2.6 documents hardswish without parameters, but some of its
         * post-op kernels read alpha and beta as x * clip(alpha x + beta, 0,
         * 1): pass ONNX's 1/6 and 1/2, right under both readings. */
        out[0] = (dn_elt){dnnl_eltwise_hardswish, 1.0f / 6.0f, 0.5f, 0};
        return 1;
    }
    if (!strcmp(op, "LeakyRelu")) {
        out[0] = (dn_elt){dnnl_eltwise_relu, dn_attr_f(b, n, "alpha", 0.01f), 0, 0};
        return 1;
    }
    if (!strcmp(op, "Elu")) {
        out[0] = (dn_elt){dnnl_eltwise_elu, dn_attr_f(b, n, "alpha", 1.0f), 0, 0};
        return 1;
    }
    if (!strcmp(op, "Pow")) { /* x ^ c, c a constant scalar: eltwise pow (alpha x^beta) */
        float c;
        size_t cnt = 0;
        if (carve_node_input_count(b->m, n) != 2 || !dn_const_floats(b, n, 1, &c, 1, &cnt) || cnt != 1) {
            if (set_reason)
                dn_fail(b, DN_R_INPUT, "exponent Y of Pow is not a float32 constant scalar; the onednn backend "
                                       "maps x ^ c only");
            return 0;
        }
        if (carve_value_rank(b->m, carve_node_output(b->m, n, 0)) != carve_value_rank(b->m, carve_node_input(b->m, n, 0)))
            return 0;
        out[0] = (dn_elt){dnnl_eltwise_pow, 1.0f, c, 0};
        return 1;
    }
    if (!strcmp(op, "Neg")) {
        out[0] = (dn_elt){dnnl_eltwise_linear, -1.0f, 0, 0};
        return 1;
    }
    if (!strcmp(op, "HardSigmoid")) { /* max(0, min(1, alpha x + beta)) */
        out[0] = (dn_elt){dnnl_eltwise_linear, dn_attr_f(b, n, "alpha", 0.2f), dn_attr_f(b, n, "beta", 0.5f), 0};
        out[1] = (dn_elt){dnnl_eltwise_clip_v2, 0.0f, 1.0f, 0};
        return 2;
    }
    if (!strcmp(op, "Gelu")) {
        char ap[16];
        dn_attr_s(b, n, "approximate", "none", ap, sizeof ap);
        if (!strcmp(ap, "none"))
            out[0].alg = dnnl_eltwise_gelu_erf;
        else if (!strcmp(ap, "tanh"))
            out[0].alg = dnnl_eltwise_gelu_tanh;
        else {
            if (set_reason)
                dn_fail(b, DN_R_ATTR, "attribute approximate = '%s'; allowed: none, tanh", ap);
            return 0;
        }
        return 1;
    }
    if (!strcmp(op, "Clip")) {
        float lo = -FLT_MAX, hi = FLT_MAX;
        if (carve_model_opset(b->m, "") < 11) {
            lo = dn_attr_f(b, n, "min", -FLT_MAX);
            hi = dn_attr_f(b, n, "max", FLT_MAX);
        } else {
            for (size_t i = 1; i <= 2; i++) {
                if (!dn_has_in(b, n, i))
                    continue;
                float v;
                size_t c = 0;
                if (!dn_const_floats(b, n, i, &v, 1, &c) || c != 1) {
                    if (set_reason)
                        dn_fail(b, DN_R_INPUT, "input %s of Clip is not a float32 constant scalar; the onednn "
                                               "backend maps Clip with constant bounds", i == 1 ? "min" : "max");
                    return 0;
                }
                if (i == 1)
                    lo = v;
                else
                    hi = v;
            }
        }
        if (isnan(lo) || isnan(hi)) {
            if (set_reason)
                dn_fail(b, DN_R_INPUT, "Clip bound is NaN");
            return 0;
        }
        out[0] = (dn_elt){dnnl_eltwise_clip_v2, lo, hi, 0};
        return 1;
    }
    return 0;
}

dnnl_alg_kind_t dn_binary_alg(const char *op)
{
    static const struct {
        const char *op;
        /* op-list: data: this backend's own mapping of ONNX ops to oneDNN primitives (what a plugin declares) */
        dnnl_alg_kind_t alg;
    } t[] = {{"Add", dnnl_binary_add}, {"Sub", dnnl_binary_sub}, {"Mul", dnnl_binary_mul},
             {"Div", dnnl_binary_div}, {"Max", dnnl_binary_max}, {"Min", dnnl_binary_min}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(op, t[i].op))
            return t[i].alg;
    return (dnnl_alg_kind_t)0;
}

/* Sigmoid(x) whose sole consumer is Mul(x, Sigmoid(x)): one swish. */
static carve_node_id swish_mul(dn_builder *b, carve_node_id n)
{
    if (strcmp(carve_node_op(b->m, n), "Sigmoid"))
        return CARVE_NONE;
    carve_value_id x = carve_node_input(b->m, n, 0), s = carve_node_output(b->m, n, 0);
    carve_node_id c = dn_sole_consumer(b, s);
    if (c == CARVE_NONE || strcmp(carve_node_op(b->m, c), "Mul") || *carve_node_domain(b->m, c) ||
        carve_node_input_count(b->m, c) != 2)
        return CARVE_NONE;
    carve_value_id i0 = carve_node_input(b->m, c, 0), i1 = carve_node_input(b->m, c, 1);
    return (i0 == x && i1 == s) || (i0 == s && i1 == x) ? c : CARVE_NONE;
}

bool dn_op_eltwise(dn_builder *b, carve_node_id n)
{
    dn_elt e[2];
    int ne = dn_eltwise_map(b, n, e, true);
    if (!ne)
        return b->reason ? false : dn_fail(b, DN_R_OP, "no oneDNN eltwise for %s", carve_node_op(b->m, n));
    dn_val *x = dn_in(b, n, (size_t)e[0].data_in);
    if (!x)
        return false;
    carve_node_id mul = swish_mul(b, n);
    if (mul != CARVE_NONE)
        e[0] = (dn_elt){dnnl_eltwise_swish, 1.0f, 0, 0}, ne = 1;
    /* Scalar affine nodes that follow one another (x * a + b): one linear. */
    carve_node_id merged[8];
    size_t n_merged = 0;
    carve_value_id tail = carve_node_output(b->m, n, 0);
    while (ne == 1 && e[0].alg == dnnl_eltwise_linear && mul == CARVE_NONE && n_merged < 8) {
        carve_node_id c = dn_sole_consumer(b, tail);
        dn_elt q[2];
        if (c == CARVE_NONE || !dn_binary_alg(carve_node_op(b->m, c)) || dn_eltwise_map(b, c, q, false) != 1 ||
            q[0].alg != dnnl_eltwise_linear || carve_node_input(b->m, c, (size_t)q[0].data_in) != tail)
            break;
        e[0].beta = q[0].alpha * e[0].beta + q[0].beta;
        e[0].alpha = q[0].alpha * e[0].alpha;
        merged[n_merged++] = c;
        tail = carve_node_output(b->m, c, 0);
    }
    dn_val *cur = x;
    for (int i = 0; i < ne; i++) {
        dnnl_eltwise_desc_t d;
        dnnl_memory_desc_t smd = cur->md;
        dnnl_status_t st = dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, e[i].alg, &smd, e[i].alpha,
                                                          e[i].beta);
        if (st != dnnl_success)
            return dn_dnnl_fail(b, st, "an eltwise");
        dnnl_primitive_desc_t pd;
        if (!dn_pd(b, &d, NULL, &pd, "an eltwise"))
            return false;
        if (dn_pd_is_ref(pd) && !dn_md_is_plain(&smd)) {
            dnnl_primitive_desc_t pd2 = NULL;
            dn_plain_md(&smd, cur->nd, cur->dims);
            if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, e[i].alg, &smd, e[i].alpha, e[i].beta) ==
                    dnnl_success &&
                dnnl_primitive_desc_create(&pd2, &d, NULL, b->eng, NULL) == dnnl_success) {
                dnnl_primitive_desc_destroy(pd);
                pd = pd2;
            } else {
                smd = cur->md;
            }
        }
        if (b->check) {
            dn_step_add(b, pd, 0, NULL);
            continue;
        }
        carve_value_id ov = mul != CARVE_NONE ? carve_node_output(b->m, mul, 0) : tail;
        dn_val *y;
        if (i + 1 < ne) { /* the intermediate of HardSigmoid: the output value, overwritten in place next */
            y = dn_def(b, ov, dn_pd_md(pd, dnnl_query_dst_md));
        } else if (i > 0) {
            y = cur;
        } else {
            y = mul != CARVE_NONE ? dn_def(b, ov, dn_pd_md(pd, dnnl_query_dst_md))
                                  : dn_def_inplace(b, ov, cur, n, dn_pd_md(pd, dnnl_query_dst_md));
        }
        if (!y) {
            dnnl_primitive_desc_destroy(pd);
            return false;
        }
        dnnl_memory_t sm = dn_as(b, cur, &smd);
        if (!sm) {
            dnnl_primitive_desc_destroy(pd);
            return false;
        }
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, sm}, {DNNL_ARG_DST, y->mem}};
        if (!dn_step_add(b, pd, 2, args))
            return false;
        cur = y;
    }
    if (mul != CARVE_NONE)
        dn_mark_done(b, mul);
    for (size_t i = 0; i < n_merged; i++)
        dn_mark_done(b, merged[i]);
    return true;
}

/* The four nodes of a HardSwish pattern as one oneDNN hardswish. */
static bool hardswish_pattern(dn_builder *b, carve_node_id n, carve_value_id xv, const carve_node_id hs[4],
                              carve_value_id end)
{
    dn_val *x = dn_find(b, xv);
    if (!x && !(x = dn_in(b, n, carve_node_input(b->m, n, 0) == xv ? 0 : 1)))
        return false;
    dnnl_eltwise_desc_t d;
    dnnl_memory_desc_t smd = x->md;
    if (dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, dnnl_eltwise_hardswish, &smd, 1.0f / 6.0f, 0.5f) !=
        dnnl_success)
        return dn_fail(b, DN_R_LIB, "oneDNN refused a hardswish");
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, &d, NULL, &pd, "an eltwise (hardswish)"))
        return false;
    dn_val *y = dn_def(b, end, dn_pd_md(pd, dnnl_query_dst_md));
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, x->mem}, {DNNL_ARG_DST, y->mem}};
    for (int i = 1; i < 4; i++)
        dn_mark_done(b, hs[i]);
    return dn_step_add(b, pd, 2, args);
}

/* Whether a (padded to nd) has dims equal to out. */
static bool full_dims(const dn_val *a, int nd, const dnnl_dims_t out)
{
    int pad = nd - a->rank;
    for (int d = 0; d < nd; d++)
        if ((d < pad ? 1 : a->dims[d - pad]) != out[d])
            return false;
    return true;
}

static void padded(const dn_val *a, int nd, dnnl_dims_t out)
{
    int pad = nd - a->rank;
    for (int d = 0; d < nd; d++)
        out[d] = d < pad ? 1 : a->dims[d - pad];
}

bool dn_op_binary(dn_builder *b, carve_node_id n)
{
    const char *op = carve_node_op(b->m, n);
    dnnl_alg_kind_t alg = dn_binary_alg(op);
    if (!alg)
        return dn_fail(b, DN_R_OP, "no oneDNN binary for %s", op);
    dn_elt e[2];
    carve_node_id hs[4];
    carve_value_id hs_end;
    for (size_t i = 0; i < 2 && alg == dnnl_binary_add; i++)
        if (dn_has_in(b, n, i) && dn_match_hardswish(b, carve_node_input(b->m, n, i), hs, &hs_end) && hs[0] == n)
            return hardswish_pattern(b, n, carve_node_input(b->m, n, i), hs, hs_end);
    if (dn_eltwise_map(b, n, e, false))
        return dn_op_eltwise(b, n); /* by a constant scalar: eltwise linear */
    if (carve_node_input_count(b->m, n) != 2)
        return dn_fail(b, DN_R_INPUT, "%s with %zu inputs; the onednn backend takes two", op,
                       carve_node_input_count(b->m, n));
    dn_val *a = dn_in(b, n, 0), *c = a ? dn_in(b, n, 1) : NULL;
    if (!c)
        return false;
    carve_value_id yv = carve_node_output(b->m, n, 0);
    int nd = carve_value_rank(b->m, yv);
    dnnl_dims_t yd = {1};
    for (int d = 0; d < nd; d++)
        yd[d] = carve_value_dim(b->m, yv, d).value;
    if (nd == 0)
        nd = 1;
    bool commutative = alg == dnnl_binary_add || alg == dnnl_binary_mul || alg == dnnl_binary_max ||
                       alg == dnnl_binary_min;
    if (!full_dims(a, nd, yd)) {
        if (!commutative || !full_dims(c, nd, yd))
            return dn_fail(b, DN_R_INPUT,
                           "%s broadcasts its first input; oneDNN 2.6's binary broadcasts only the second (and "
                           "%s is %scommutative)",
                           op, op, commutative ? "" : "not ");
        dn_val *t = a;
        a = c;
        c = t;
    }
    dnnl_dims_t ad, cd;
    padded(a, nd, ad);
    padded(c, nd, cd);
    bool c_full = full_dims(c, nd, yd);
    dnnl_memory_desc_t amd, cmd, ymd;
    amd = a->rank == nd ? a->md : (dn_plain_md(&amd, nd, ad), amd);
    if (c_full && c->rank == nd)
        cmd = amd; /* the same layout as the first operand */
    else
        dn_plain_md(&cmd, nd, cd);
    dnnl_memory_desc_init_by_tag(&ymd, nd, yd, dnnl_f32, dnnl_format_tag_any);
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, alg, &amd, &cmd, &ymd);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a binary");
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, &d, NULL, &pd, "a binary"))
        return false;
    if (dn_pd_is_ref(pd) && !dn_md_is_plain(&amd)) { /* blocked layout without a jit kernel: plain */
        dnnl_memory_desc_t pa, pc;
        dnnl_primitive_desc_t pd2 = NULL;
        dn_plain_md(&pa, nd, ad);
        pc = c_full ? pa : cmd;
        if (dnnl_binary_desc_init(&d, alg, &pa, &pc, &ymd) == dnnl_success &&
            dnnl_primitive_desc_create(&pd2, &d, NULL, b->eng, NULL) == dnnl_success) {
            dnnl_primitive_desc_destroy(pd);
            pd = pd2;
            amd = pa;
            cmd = pc;
        }
    }
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_desc_t vmd;
    dnnl_memory_t am = a->rank == nd ? dn_as(b, a, &amd) : dn_view(b, a, nd, ad, &vmd);
    dnnl_memory_t cm = !am ? NULL : c_full && c->rank == nd ? dn_as(b, c, &cmd) : dn_view(b, c, nd, cd, &vmd);
    dn_val *y = !cm ? NULL
                : a->rank == nd && a != c && am == a->mem
                    ? dn_def_inplace(b, yv, a, n, dn_pd_md(pd, dnnl_query_dst_md))
                    : dn_def(b, yv, dn_pd_md(pd, dnnl_query_dst_md));
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC_0, am}, {DNNL_ARG_SRC_1, cm}, {DNNL_ARG_DST, y->mem}};
    return dn_step_add(b, pd, 3, args);
}

bool dn_op_prelu(dn_builder *b, carve_node_id n)
{
    dn_val *x = dn_in(b, n, 0), *s = x ? dn_in(b, n, 1) : NULL;
    if (!s)
        return false;
    if (s->rank > x->rank)
        return dn_fail(b, DN_R_INPUT, "slope has rank %d above X's %d", s->rank, x->rank);
    dnnl_dims_t sd;
    padded(s, x->nd, sd);
    dnnl_memory_desc_t smd;
    dn_plain_md(&smd, x->nd, sd);
    dnnl_prelu_desc_t d;
    dnnl_status_t st = dnnl_prelu_forward_desc_init(&d, dnnl_forward_inference, &x->md, &smd);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a prelu");
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, &d, NULL, &pd, "a prelu"))
        return false;
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_desc_t vmd;
    dnnl_memory_t sm = dn_view(b, s, x->nd, sd, &vmd);
    dnnl_memory_t wm = sm ? (dnnl_memory_desc_equal(&vmd, dn_pd_md(pd, dnnl_query_weights_md)) ? sm : NULL) : NULL;
    if (sm && !wm) {
        dn_val t = *s;
        t.md = vmd, t.mem = sm, t.alt_mem = NULL;
        wm = dn_as(b, &t, dn_pd_md(pd, dnnl_query_weights_md));
    }
    dn_val *y = wm ? dn_def(b, carve_node_output(b->m, n, 0), dn_pd_md(pd, dnnl_query_dst_md)) : NULL;
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, x->mem}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, y->mem}};
    return dn_step_add(b, pd, 3, args);
}

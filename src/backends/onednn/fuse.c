/*
 * fuse.c: post-op fusion. After a Conv, ConvTranspose, MatMul or Gemm, the
 * chain of sole consumers that oneDNN can apply on the fly (activations as
 * eltwise post-ops, Add/Mul/Sub/Div/Max/Min of an operand already computed
 * as binary post-ops: the residual "sum" of ResNet-style blocks) becomes
 * part of the primitive (dnnl_post_ops_append_eltwise / _append_binary,
 * oneDNN 2.6). A chain oneDNN does not take whole is shortened until it
 * does.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dn.h"

/* The operand layout of a binary post-op: the operand's own layout when it
 * has the destination's dims, else a plain broadcast view padded with
 * leading ones. */
static void operand_md(const dn_fusion *f, const dn_val *o, int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md,
                       dnnl_dims_t od)
{
    int pad = nd - o->rank;
    bool same = o->rank == nd;
    for (int d = 0; d < nd; d++) {
        od[d] = d < pad ? 1 : o->dims[d - pad];
        same = same && od[d] == dims[d];
    }
    if (same && f->has_pref)
        *md = f->pref;
    else if (same)
        *md = o->md;
    else
        dn_plain_md(md, nd, od);
}

/* The nodes of the body reading v (at most max); SIZE_MAX when v is a body
 * output or read more than max times. */
static size_t consumers(const dn_builder *b, carve_value_id v, carve_node_id *out, size_t max)
{
    for (size_t i = 0; i < carve_graph_output_count(b->m, b->g); i++)
        if (carve_graph_output(b->m, b->g, i) == v)
            return SIZE_MAX;
    size_t c = 0;
    for (size_t k = 0; k < b->n_nodes; k++) {
        carve_node_id n = b->nodes[k];
        for (size_t i = 0; i < carve_node_input_count(b->m, n); i++)
            if (carve_node_input(b->m, n, i) == v) {
                if (c == max)
                    return SIZE_MAX;
                out[c++] = n;
            }
    }
    return c;
}

static bool op_is(const dn_builder *b, carve_node_id n, const char *op)
{
    return !strcmp(carve_node_op(b->m, n), op) && !*carve_node_domain(b->m, n);
}

/* The float constant scalar among n's two inputs, the other being x. */
static bool const_with(dn_builder *b, carve_node_id n, carve_value_id x, float *c)
{
    if (carve_node_input_count(b->m, n) != 2)
        return false;
    for (size_t ci = 0; ci < 2; ci++) {
        size_t cnt = 0;
        if (carve_node_input(b->m, n, 1 - ci) == x && dn_const_floats(b, n, ci, c, 1, &cnt) && cnt == 1)
            return true;
    }
    return false;
}

bool dn_match_hardswish(dn_builder *b, carve_value_id x, carve_node_id nodes[4], carve_value_id *end)
{
    if (b->check)
        return false;
    carve_node_id cx[2], one[1];
    if (consumers(b, x, cx, 2) != 2)
        return false;
    carve_node_id add = op_is(b, cx[0], "Add") ? cx[0] : cx[1], mul = add == cx[0] ? cx[1] : cx[0];
    float c;
    if (!op_is(b, add, "Add") || !op_is(b, mul, "Mul") || !const_with(b, add, x, &c) || c != 3.0f)
        return false;
    carve_value_id a = carve_node_output(b->m, add, 0);
    if (consumers(b, a, one, 1) != 1 || !op_is(b, one[0], "Clip"))
        return false;
    carve_node_id clip = one[0];
    dn_elt e[2];
    if (carve_node_input(b->m, clip, 0) != a || dn_eltwise_map(b, clip, e, false) != 1 || e[0].alpha != 0.0f ||
        e[0].beta != 6.0f)
        return false;
    carve_value_id cv = carve_node_output(b->m, clip, 0);
    if (consumers(b, cv, one, 1) != 1 || one[0] != mul)
        return false;
    carve_value_id mv = carve_node_output(b->m, mul, 0);
    if (consumers(b, mv, one, 1) != 1)
        return false;
    carve_node_id last = one[0];
    if (!((op_is(b, last, "Div") && carve_node_input(b->m, last, 0) == mv && const_with(b, last, mv, &c) &&
           c == 6.0f) ||
          (op_is(b, last, "Mul") && const_with(b, last, mv, &c) && fabsf(c - 1.0f / 6.0f) < 1e-7f)))
        return false;
    for (int d = 0; d < carve_value_rank(b->m, x); d++) /* no broadcasting anywhere */
        if (carve_value_rank(b->m, carve_node_output(b->m, last, 0)) != carve_value_rank(b->m, x))
            return false;
    nodes[0] = add, nodes[1] = clip, nodes[2] = mul, nodes[3] = last;
    *end = carve_node_output(b->m, last, 0);
    return true;
}

void dn_fusion_plan(dn_builder *b, carve_value_id dst, int nd, const dnnl_dims_t dims, bool allow_sum, dn_fusion *f)
{
    bool have_sum = false;
    memset(f, 0, sizeof *f);
    f->first = f->last = dst;
    f->nd = nd;
    memcpy(f->dims, dims, sizeof f->dims);
    carve_value_id cur = dst;
    while (f->n < 8) {
        carve_node_id hs[4];
        carve_value_id hs_end;
        if (dn_match_hardswish(b, cur, hs, &hs_end)) {
            size_t k = f->n;
            f->kind[k] = 0;
            f->n_elt[k] = 1;
            f->elt[k][0] = (dn_elt){dnnl_eltwise_hardswish, 1.0f / 6.0f, 0.5f, 0};
            f->nodes[k] = hs[0];
            f->also[k][0] = hs[1], f->also[k][1] = hs[2], f->also[k][2] = hs[3];
            f->n_also[k] = 3;
            f->n++;
            f->last = cur = hs_end;
            continue;
        }
        carve_node_id c = dn_sole_consumer(b, cur);
        if (c == CARVE_NONE || *carve_node_domain(b->m, c) || carve_node_output_count(b->m, c) != 1)
            break;
        carve_value_id out = carve_node_output(b->m, c, 0);
        if (carve_value_dtype(b->m, out) != CARVE_FLOAT || carve_value_rank(b->m, out) != carve_value_rank(b->m, cur))
            break;
        bool same = true;
        for (int d = 0; d < carve_value_rank(b->m, out); d++)
            same = same && carve_value_dim(b->m, out, d).value == carve_value_dim(b->m, cur, d).value;
        if (!same)
            break;
        size_t k = f->n;
        int ne = dn_eltwise_map(b, c, f->elt[k], false);
        if (ne > 0 && carve_node_input(b->m, c, (size_t)f->elt[k][0].data_in) != cur)
            break;
        if (ne == 1 && k > 0 && f->kind[k - 1] == 0 && f->n_elt[k - 1] == 1 && f->n_also[k - 1] < 3 &&
            f->elt[k - 1][0].alg == dnnl_eltwise_linear && f->elt[k][0].alg == dnnl_eltwise_linear) {
            /* a2 (a1 x + b1) + b2: one linear */
            dn_elt *p = &f->elt[k - 1][0], *q = &f->elt[k][0];
            p->beta = q->alpha * p->beta + q->beta;
            p->alpha = q->alpha * p->alpha;
            f->also[k - 1][f->n_also[k - 1]++] = c;
            f->last = out;
            cur = out;
            continue;
        }
        /* oneDNN 2.6's jit post-op kernels keep one table of constants per
         * eltwise algorithm: a second post-op of the same algorithm with
         * other parameters computes with the first one's (found on two
         * eltwise_linear post-ops after a brgconv; tests/onednn). At most
         * one post-op per algorithm in a chain. */
        bool repeated = false;
        for (size_t j = 0; j < k && ne > 0; j++)
            for (int e = 0; e < f->n_elt[j] && f->kind[j] == 0; e++)
                for (int e2 = 0; e2 < ne; e2++)
                    repeated = repeated || f->elt[j][e].alg == f->elt[k][e2].alg;
        if (repeated && !dn_binary_alg(carve_node_op(b->m, c)))
            break;
        if (repeated)
            ne = 0; /* a scalar Add/Mul/Sub/Div: a binary post-op with its one-element operand instead */
        if (ne > 0) {
            f->kind[k] = 0;
            f->n_elt[k] = ne;
        } else {
            dnnl_alg_kind_t alg = dn_binary_alg(carve_node_op(b->m, c));
            if (!alg || carve_node_input_count(b->m, c) != 2)
                break;
            size_t oi = carve_node_input(b->m, c, 0) == cur ? 1 : 0;
            carve_value_id ov = carve_node_input(b->m, c, oi);
            if (ov == cur || (oi == 0 && (alg == dnnl_binary_sub || alg == dnnl_binary_div)))
                break; /* other - x, other / x: not a post-op */
            if (carve_value_dtype(b->m, ov) != CARVE_FLOAT || !dn_available(b, ov))
                break;
            int orank = carve_value_rank(b->m, ov);
            if (orank > nd)
                break;
            bool bc = true;
            for (int d = 0; d < orank; d++) {
                int64_t x = carve_value_dim(b->m, ov, d).value;
                bc = bc && (x == 1 || x == dims[nd - orank + d]);
            }
            if (!bc)
                break;
            dn_val *o = dn_in(b, c, oi);
            if (!o)
                break;
            bool full = o->rank == nd;
            for (int d = 0; full && d < nd; d++)
                full = o->dims[d] == dims[d];
            f->kind[k] = 1;
            if (full && alg == dnnl_binary_add && allow_sum && !have_sum) {
                /* oneDNN's fast convolutions take a full-size addend as a
                 * sum post-op (accumulated into the destination), not as a
                 * binary one. */
                f->kind[k] = 2;
                have_sum = true;
            }
            f->bin_alg[k] = alg;
            f->bin_src[k] = o;
        }
        f->nodes[k] = c;
        f->n++;
        f->last = out;
        cur = out;
    }
    b->reason = NULL; /* a dn_in that failed above is no refusal */
}

bool dn_fusion_attr(dn_builder *b, const dn_fusion *f, size_t k, dnnl_primitive_attr_t *attr,
                    dnnl_exec_arg_t *args, int *nargs)
{
    *attr = NULL;
    if (!k && !args)
        return true;
    dnnl_post_ops_t po = NULL;
    if (!args) {
        if (dnnl_primitive_attr_create(attr) != dnnl_success || dnnl_post_ops_create(&po) != dnnl_success)
            return false;
    }
    int idx = 0;
    for (size_t i = 0; i < k; i++) {
        if (f->kind[i] == 0) {
            for (int e = 0; e < f->n_elt[i]; e++, idx++)
                if (po)
                    dnnl_post_ops_append_eltwise(po, 1.0f, f->elt[i][e].alg, f->elt[i][e].alpha, f->elt[i][e].beta);
            continue;
        }
        if (f->kind[i] == 2) {
            if (po)
                dnnl_post_ops_append_sum(po, 1.0f);
            idx++;
            continue;
        }
        dn_val *o = f->bin_src[i];
        dnnl_memory_desc_t md;
        dnnl_dims_t od;
        operand_md(f, o, f->nd, f->dims, &md, od);
        if (po)
            dnnl_post_ops_append_binary(po, f->bin_alg[i], &md);
        if (args) {
            dnnl_memory_t mem;
            if (o->rank == f->nd && !memcmp(od, o->dims, sizeof(dnnl_dim_t) * (size_t)f->nd))
                mem = dn_as(b, o, &md);
            else {
                dnnl_memory_desc_t vmd;
                mem = dn_view(b, o, f->nd, od, &vmd);
            }
            if (!mem)
                return false;
            args[*nargs].arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1;
            args[*nargs].memory = mem;
            (*nargs)++;
        }
        idx++;
    }
    if (po) {
        dnnl_status_t st = dnnl_primitive_attr_set_post_ops(*attr, po);
        dnnl_post_ops_destroy(po);
        if (st != dnnl_success) {
            dnnl_primitive_attr_destroy(*attr);
            *attr = NULL;
            return false;
        }
    }
    return true;
}

bool dn_pd_fused(dn_builder *b, const void *op_desc, dn_fusion *f, size_t *k, dnnl_primitive_desc_t *pd,
                 dnnl_exec_arg_t *args, int *nargs, const char *what)
{
    *k = 0;
    f->has_pref = false;
    /* The implementation and destination layout oneDNN picks without
     * post-ops: a fusion that makes it fall back to a slower implementation
     * (a gemm-based or reference convolution) is dropped. */
    char impl[128] = "";
    if (f->n) {
        dnnl_primitive_desc_t plain = NULL;
        if (dnnl_primitive_desc_create(&plain, op_desc, NULL, b->eng, NULL) == dnnl_success) {
            f->pref = *dn_pd_md(plain, dnnl_query_dst_md);
            f->has_pref = true;
            const char *s = NULL;
            if (dnnl_primitive_desc_query(plain, dnnl_query_impl_info_str, 0, &s) == dnnl_success && s)
                snprintf(impl, sizeof impl, "%s", s);
            dnnl_primitive_desc_destroy(plain);
        }
    }
    for (size_t kk = f->n; kk > 0; kk--) {
        dnnl_primitive_attr_t attr = NULL;
        if (!dn_fusion_attr(b, f, kk, &attr, NULL, NULL))
            continue;
        dnnl_status_t st = dnnl_primitive_desc_create(pd, op_desc, attr, b->eng, NULL);
        dnnl_primitive_attr_destroy(attr);
        if (st != dnnl_success)
            continue;
        const char *s = NULL;
        dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &s);
        if (!impl[0] || (s && !strcmp(s, impl))) {
            *k = kk;
            break;
        }
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
    }
    if (!*k && !dn_pd(b, op_desc, NULL, pd, what))
        return false;
    if (!b->check && *k) {
        dnnl_primitive_attr_t none;
        if (!dn_fusion_attr(b, f, *k, &none, args, nargs)) {
            dnnl_primitive_desc_destroy(*pd);
            return false;
        }
    }
    return true;
}

carve_value_id dn_fusion_commit(dn_builder *b, const dn_fusion *f, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        dn_mark_done(b, f->nodes[i]);
        for (int j = 0; j < f->n_also[i]; j++)
            dn_mark_done(b, f->also[i][j]);
    }
    if (!k)
        return f->first;
    size_t l = k - 1;
    carve_node_id endn = f->n_also[l] ? f->also[l][f->n_also[l] - 1] : f->nodes[l];
    return carve_node_output(b->m, endn, 0);
}

dnnl_memory_t dn_fusion_def(dn_builder *b, const dn_fusion *f, size_t k, const dnnl_memory_desc_t *md)
{
    carve_value_id end = dn_fusion_commit(b, f, k);
    const dn_val *addend = NULL;
    carve_node_id add = CARVE_NONE;
    for (size_t i = 0; i < k; i++)
        if (f->kind[i] == 2)
            addend = f->bin_src[i], add = f->nodes[i];
    if (!addend) {
        dn_val *y = dn_def(b, end, md);
        return y ? y->mem : NULL;
    }
    dn_val *o = dn_find(b, addend->id);
    if (!o->is_const && !o->is_view && dn_last_reader(b, o->id, add) && dnnl_memory_desc_equal(&o->md, md)) {
        dn_val *y = dn_def(b, end, NULL); /* in place: the addend's buffer becomes the output */
        if (!y)
            return NULL;
        y->md = *md;
        y->mem = o->mem;
        return y->mem;
    }
    dn_val *y = dn_def(b, end, md);
    if (!y)
        return NULL;
    dnnl_primitive_desc_t rpd;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, &o->md, b->eng, md, b->eng, NULL);
    if (st != dnnl_success) {
        dn_dnnl_fail(b, st, "a reorder (sum operand)");
        return NULL;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, o->mem}, {DNNL_ARG_DST, y->mem}};
    return dn_step_add(b, rpd, 2, args) ? y->mem : NULL;
}

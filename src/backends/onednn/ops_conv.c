/*
 * ops_conv.c: Conv, ConvTranspose, MatMul and Gemm, each with its chain of
 * fused post-ops (fuse.c). Weights and bias are read in the layout oneDNN
 * picks (format_tag any), reordered once at compile time when constant.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dn.h"

/* Reads strides, dilations, pads / auto_pad of a Conv or ConvTranspose
 * with input x, kernel dims kernel[0..k) and output y. */
bool dn_read_spatial(dn_builder *b, carve_node_id n, const dn_val *x, const dn_val *y, bool transpose,
                     dn_spatial *s)
{
    int k = s->k;
    int64_t v[16];
    int c, same;
    if (!dn_read_window(b, n, k, s->strides, s->dil, s->pl, s->pr, &same))
        return false;
    if ((c = dn_attr_ints(b, n, "kernel_shape", v, 16)) >= 0) {
        if (c != k)
            return dn_fail(b, DN_R_ATTR, "attribute kernel_shape has %d values, expected %d", c, k);
        for (int d = 0; d < k; d++)
            if (v[d] != s->kernel[d])
                return dn_fail(b, DN_R_ATTR, "attribute kernel_shape disagrees with the weights' dims");
    }
    int64_t op[16] = {0};
    if (transpose && (c = dn_attr_ints(b, n, "output_padding", op, 16)) >= 0 && c != k)
        return dn_fail(b, DN_R_ATTR, "attribute output_padding has %d values, expected %d", c, k);
    bool upper = same == 'U', lower = same == 'L';
    for (int d = 0; d < k; d++) {
        int64_t in = x->dims[2 + d], out = y->dims[2 + d];
        int64_t kd = (s->kernel[d] - 1) * (s->dil[d] + 1) + 1;
        if (!transpose) {
            if (upper || lower) {
                int64_t total = (out - 1) * s->strides[d] + kd - in;
                if (total < 0)
                    total = 0;
                s->pl[d] = upper ? total / 2 : total - total / 2;
                s->pr[d] = total - s->pl[d];
            }
            /* oneDNN wants out == (in + pl + pr - kd) / s + 1 exactly; a
             * right pad that the floor drops changes nothing. */
            int64_t pr = (out - 1) * s->strides[d] + kd - in - s->pl[d];
            if (pr < s->pr[d])
                s->pr[d] = pr;
        } else {
            int64_t full = (in - 1) * s->strides[d] + kd + op[d];
            if (upper || lower) {
                int64_t total = full - out;
                s->pl[d] = upper ? total / 2 : total - total / 2;
            }
            s->pr[d] = (in - 1) * s->strides[d] + kd - s->pl[d] - out;
            if (s->pr[d] < 0 || s->pl[d] < 0)
                return dn_fail(b, DN_R_ATTR,
                               "output_padding / pads make an output larger than the transposed convolution "
                               "covers (right pad %lld); oneDNN takes no negative padding",
                               (long long)s->pr[d]);
        }
    }
    return true;
}

/* The weights as a plain view (grouped: [G, OC/G, IC/G, k...]); for
 * ConvTranspose ONNX's [IC, OC/G, k...] seen as [G, OC/G, IC/G, k...]. */
void dn_weights_view(const dn_val *w, int64_t g, bool transpose, int k, dnnl_data_type_t dt,
                     dnnl_memory_desc_t *md, int *nd, dnnl_dims_t dims)
{
    int64_t ksz = 1;
    for (int d = 0; d < k; d++)
        ksz *= w->dims[2 + d];
    int64_t oc, icg; /* icg: input channels per group */
    if (!transpose)
        oc = w->dims[0], icg = w->dims[1];
    else
        oc = w->dims[1] * g, icg = w->dims[0] / g;
    int64_t ocg = oc / g;
    dnnl_dims_t st;
    int o = g > 1 ? 1 : 0;
    *nd = 2 + k + o;
    if (g > 1)
        dims[0] = g;
    dims[o] = ocg, dims[o + 1] = icg;
    for (int d = 0; d < k; d++)
        dims[o + 2 + d] = w->dims[2 + d];
    int64_t s = 1;
    for (int d = k - 1; d >= 0; d--) {
        st[o + 2 + d] = s;
        s *= w->dims[2 + d];
    }
    if (!transpose) { /* [G][OCg][ICg][k] row-major */
        st[o + 1] = ksz;
        st[o] = icg * ksz;
        if (g > 1)
            st[0] = ocg * icg * ksz;
    } else { /* [G][ICg][OCg][k] row-major, seen as G, OCg, ICg */
        st[o] = ksz;
        st[o + 1] = ocg * ksz;
        if (g > 1)
            st[0] = icg * ocg * ksz;
    }
    dnnl_memory_desc_init_by_strides(md, *nd, dims, dt, st);
}

/* A reordered copy of w (seen through md) in layout want. */
static dnnl_memory_t weights_mem(dn_builder *b, dn_val *w, const dnnl_memory_desc_t *view, const dnnl_memory_desc_t *want)
{
    if (b->check)
        return NULL;
    dnnl_memory_t base = dn_plain(b, w);
    if (!base)
        return NULL;
    void *h = NULL;
    dnnl_memory_get_data_handle(base, &h);
    dn_val t = *w;
    t.md = *view;
    t.mem = dn_mem_new(b, view, h);
    t.alt_mem = NULL;
    if (!t.mem)
        return NULL;
    return dn_as(b, &t, want);
}

/* The step of a convolution / matmul pd: source, weights, optional bias,
 * destination (NULL: an earlier failure) and the nargs post-op operands
 * the fusion left at args + 4. */
static bool weighted_step(dn_builder *b, dnnl_primitive_desc_t pd, dnnl_memory_t src, dnnl_memory_t w,
                          dnnl_memory_t bias, dnnl_memory_t dst, dnnl_exec_arg_t *args, int nargs)
{
    if (!dst) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, src};
    args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, w};
    args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, dst};
    int base = 3;
    if (bias)
        args[base++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias};
    if (base == 3)
        memmove(args + 3, args + 4, (size_t)nargs * sizeof *args);
    return dn_step_add(b, pd, base + nargs, args);
}

/* The sole consumers after a ConvTranspose's output y that scale and shift
 * each output channel by constants: an Add of a constant broadcasting per
 * channel (or a scalar), a BatchNormalization (inference, constant
 * parameters). Folded into the weights and bias at compile time (oneDNN
 * 2.6 runs a deconvolution's post-ops, and its bias, in reference loops):
 * on OCR det ConvTranspose -> Add -> BatchNormalization ran the
 * normalization on the plain layout between two reorders of 1x24x320x320.
 * wf gets the weights scaled per channel, *shift (the caller frees it) the
 * shift the caller adds with one binary primitive, *end the value the chain
 * defines; *n_fold 0: none. */
static bool deconv_fold(dn_builder *b, carve_value_id y, const dn_val *w, const dn_val *bias, int64_t g, int64_t oc,
                        dn_val *wf, float **shift, carve_node_id *nodes, size_t *n_fold, carve_value_id *end)
{
    *n_fold = 0;
    *end = y;
    float *sc = malloc((size_t)oc * 2 * sizeof *sc), *sh = sc ? sc + oc : NULL, buf[4096];
    const float *wd = carve_value_data(b->m, w->id, NULL);
    if (!sc) {
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory");
    }
    const float *bd = bias ? carve_value_data(b->m, bias->id, NULL) : NULL;
    for (int64_t c = 0; c < oc; c++)
        sc[c] = 1.0f, sh[c] = bd ? bd[c] : 0.0f;
    carve_value_id cur = y;
    int rank = carve_value_rank(b->m, y);
    while (*n_fold < 8 && wd && (!bias || bd) && oc <= 4096) {
        carve_node_id c = dn_sole_consumer(b, cur);
        if (c == CARVE_NONE || *carve_node_domain(b->m, c))
            break;
        const char *op = carve_node_op(b->m, c);
        size_t cnt = 0;
        if (!strcmp(op, "Add") && carve_node_input_count(b->m, c) == 2) {
            size_t ci = carve_node_input(b->m, c, 0) == cur ? 1 : 0;
            carve_value_id cv = carve_node_input(b->m, c, ci);
            int cr = carve_value_rank(b->m, cv);
            bool per_channel = carve_node_input(b->m, c, 1 - ci) == cur && cr >= 0 && cr <= rank &&
                               dn_const_floats(b, c, ci, buf, 4096, &cnt) && (cnt == 1 || cnt == (size_t)oc);
            for (int d = 0; per_channel && d < cr; d++) /* right-aligned: only dim 1 of y may be C */
                per_channel = carve_value_dim(b->m, cv, d).value == 1 || rank - cr + d == 1;
            if (!per_channel)
                break;
            for (int64_t k = 0; k < oc; k++)
                sh[k] += buf[cnt == 1 ? 0 : k];
        } else if (!strcmp(op, "BatchNormalization") && carve_node_input(b->m, c, 0) == cur &&
                   dn_attr_i(b, c, "training_mode", 0) == 0 && carve_node_output_count(b->m, c) == 1) {
            float prm[4][4096];
            bool ok = oc <= 4096;
            for (size_t i = 1; ok && i <= 4; i++)
                ok = dn_const_floats(b, c, i, prm[i - 1], 4096, &cnt) && cnt == (size_t)oc;
            if (!ok)
                break;
            float eps = dn_attr_f(b, c, "epsilon", 1e-5f);
            for (int64_t k = 0; k < oc; k++) {
                float m = prm[0][k] / sqrtf(prm[3][k] + eps);
                sc[k] *= m;
                sh[k] = (sh[k] - prm[2][k]) * m + prm[1][k];
            }
        } else {
            break;
        }
        nodes[(*n_fold)++] = c;
        cur = carve_node_output(b->m, c, 0);
    }
    *end = cur;
    bool ok = true;
    if (*n_fold) {
        /* ONNX's [IC, OC/G, k...]: element i is output channel
         * (ic / ICg) * OCg + (i / ksz) % OCg */
        size_t cntw = dn_count(w), ksz = cntw / (size_t)(w->dims[0] * w->dims[1]);
        int64_t ocg = w->dims[1], icg = w->dims[0] / g;
        float *tmp = malloc(cntw * sizeof *tmp);
        if (tmp) {
            for (size_t i = 0; i < cntw; i++) {
                int64_t ic = (int64_t)(i / ((size_t)ocg * ksz));
                tmp[i] = wd[i] * sc[(ic / icg) * ocg + (int64_t)(i / ksz) % ocg];
            }
            *wf = *w;
            wf->alt_mem = NULL;
            wf->mem = dn_const_mem(b, &w->md, tmp);
            ok = wf->mem != NULL;
            *shift = sc; /* sh == sc + oc: the caller moves it down and frees it */
            memmove(sc, sh, (size_t)oc * sizeof *sc);
            sc = NULL;
        } else {
            b->fatal = true;
            ok = dn_fail(b, DN_R_LIB, "out of memory");
        }
        free(tmp);
    }
    free(sc);
    return ok;
}

static bool conv_emit(dn_builder *b, carve_node_id n, bool transpose, dn_q8 *q, dn_val *x, dn_val *w, dn_val *bias,
                      dn_spatial *sp, int64_t g, dn_val *ytp);

/* end = y + shift[c] per channel c, one binary primitive in y's layout (in
 * place), with the activation that reads end as an eltwise post-op. */
static bool channel_shift(dn_builder *b, carve_value_id y, carve_value_id end, const float *shift)
{
    dn_val *yv = dn_find(b, y);
    if (!yv || !yv->mem) {
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "the deconvolution's output is missing");
    }
    dnnl_dims_t sd;
    for (int d = 0; d < yv->nd; d++)
        sd[d] = d == 1 ? yv->dims[1] : 1;
    dnnl_memory_desc_t smd, ymd = yv->md;
    dn_plain_md(&smd, yv->nd, sd);
    /* one channel: the same bytes seen as abcd, where 2.6's binary with a
     * post-op is about 20x faster than on acdb (20 ms for OCR det's
     * 1x1x640x640 add + sigmoid) */
    dn_val src = *yv;
    if (yv->dims[1] == 1) {
        void *h = NULL;
        dnnl_memory_desc_init_by_tag(&ymd, yv->nd, yv->dims, dnnl_f32, yv->nd == 4 ? dnnl_abcd : dnnl_format_tag_any);
        if (yv->nd != 4)
            ymd = yv->md;
        dnnl_memory_get_data_handle(yv->mem, &h);
        src.md = ymd;
        if (!(src.mem = dn_mem_new(b, &ymd, h)))
            return false;
    }
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, dnnl_binary_add, &src.md, &smd, &ymd);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a binary add (folded per-channel shift)");
    carve_node_id act = dn_sole_consumer(b, end);
    dn_elt e[2];
    int ne = act != CARVE_NONE && carve_node_input(b->m, act, 0) == end ? dn_eltwise_map(b, act, e, false) : 0;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if (ne == 1 && e[0].data_in == 0 && dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_post_ops_create(&po) == dnnl_success &&
        dnnl_post_ops_append_eltwise(po, 1.0f, e[0].alg, e[0].alpha, e[0].beta) == dnnl_success)
        dnnl_primitive_attr_set_post_ops(attr, po);
    else
        ne = 0;
    dnnl_primitive_desc_t pd = NULL;
    bool ok = dn_pd(b, &d, ne ? attr : NULL, &pd, "a binary add (folded per-channel shift)");
    if (ok && ne && dn_pd_is_ref(pd)) {
        /* on a padded blocked layout (24 channels in aBcd16b) 2.6's binary
         * with a post-op is its reference loop (479 ms on OCR det), without
         * one a jit kernel: the activation stays a step of its own */
        dnnl_primitive_desc_destroy(pd);
        ne = 0;
        ok = dn_pd(b, &d, NULL, &pd, "a binary add (folded per-channel shift)");
    }
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (!ok)
        return false;
    if (ne) {
        dn_mark_done(b, act);
        end = carve_node_output(b->m, act, 0);
    }
    dnnl_memory_t sm = dn_const_mem(b, &smd, shift);
    dn_val *o = sm ? dn_def_inplace(b, end, &src, dn_sole_consumer(b, y), &ymd) : NULL;
    if (!o) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC_0, src.mem}, {DNNL_ARG_SRC_1, sm}, {DNNL_ARG_DST, o->mem}};
    return dn_step_add(b, pd, 3, args);
}

/* q: the int8 unit around the Conv (ops_qdq.c), or NULL: float32. */
static bool conv_build(dn_builder *b, carve_node_id n, bool transpose, dn_q8 *q)
{
    dn_val *x = q ? q->x : dn_in(b, n, 0), *w = q ? q->w : x ? dn_in(b, n, 1) : NULL;
    if (!w)
        return false;
    dn_val *bias = NULL;
    if (!q && dn_has_in(b, n, 2) && !(bias = dn_in(b, n, 2)))
        return false;
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return dn_fail(b, DN_R_INPUT, "input X has rank %d and W rank %d; oneDNN takes 1 to 3 spatial dims", x->rank,
                       w->rank);
    int64_t g = dn_attr_i(b, n, "group", 1);
    if (g < 1 || x->dims[1] % g)
        return dn_fail(b, DN_R_ATTR, "attribute group = %lld does not divide the %lld input channels", (long long)g,
                       (long long)x->dims[1]);
    carve_value_id yv = carve_node_output(b->m, n, 0);
    dn_val yt;
    memset(&yt, 0, sizeof yt);
    yt.rank = carve_value_rank(b->m, yv);
    for (int d = 0; d < yt.rank; d++)
        yt.dims[d] = carve_value_dim(b->m, yv, d).value;
    dn_spatial s;
    s.k = x->rank - 2;
    for (int d = 0; d < s.k; d++)
        s.kernel[d] = w->dims[2 + d];
    if (!dn_read_spatial(b, n, x, &yt, transpose, &s))
        return false;
    dn_val wfold;
    carve_node_id folded[8];
    size_t n_fold = 0;
    carve_value_id y_end = yv;
    float *shift = NULL;
    if (transpose && !b->check && w->is_const) {
        if (!deconv_fold(b, yv, w, bias, g, yt.dims[1], &wfold, &shift, folded, &n_fold, &y_end))
            return false;
        if (n_fold)
            w = &wfold, bias = NULL;
    }
    bool ok = conv_emit(b, n, transpose, q, x, w, bias, &s, g, &yt);
    if (ok && n_fold) {
        for (size_t i = 0; i < n_fold; i++)
            dn_mark_done(b, folded[i]);
        ok = channel_shift(b, yv, y_end, shift);
    }
    free(shift);
    return ok;
}

/* The convolution / deconvolution step (conv_build's second half). */
static bool conv_emit(dn_builder *b, carve_node_id n, bool transpose, dn_q8 *q, dn_val *x, dn_val *w, dn_val *bias,
                      dn_spatial *sp, int64_t g, dn_val *ytp)
{
    dn_spatial s = *sp;
    dn_val yt = *ytp;
    carve_value_id yv = carve_node_output(b->m, n, 0);
    dnnl_memory_desc_t xmd, wview, wany, bmd, ymd;
    int wnd;
    dnnl_dims_t wdims;
    /* 2-D deconvolutions in nhwc: oneDNN 2.6 picks aBcd16b, where it runs
     * OCR det's 24 -> 1 channel upsampling 2.5x slower, and where binary and
     * eltwise ops on the padded channels fall back to reference loops */
    dnnl_format_tag_t tag = transpose && x->rank == 4 ? dnnl_acdb : dnnl_format_tag_any;
    dnnl_memory_desc_init_by_tag(&xmd, x->rank, x->dims, q ? q->xdt : dnnl_f32, tag);
    dnnl_memory_desc_init_by_tag(&ymd, yt.rank, yt.dims, q ? q->ydt : dnnl_f32, tag);
    dn_weights_view(w, g, transpose, s.k, q ? dnnl_s8 : dnnl_f32, &wview, &wnd, wdims);
    dnnl_memory_desc_init_by_tag(&wany, wnd, wdims, q ? dnnl_s8 : dnnl_f32, dnnl_format_tag_any);
    bool has_bias = q ? q->bias != NULL : bias != NULL;
    if (q && q->bias) {
        dnnl_dims_t bd = {yt.dims[1]};
        if (q->n_oc != (size_t)yt.dims[1])
            return dn_fail(b, DN_R_INPUT, "W has %zu output channels, Y %lld", q->n_oc, (long long)yt.dims[1]);
        dn_plain_md(&bmd, 1, bd);
    } else if (bias) {
        dnnl_dims_t bd = {yt.dims[1]};
        if (dn_count(bias) != (size_t)yt.dims[1])
            return dn_fail(b, DN_R_INPUT, "input B has %zu values for %lld output channels", dn_count(bias),
                           (long long)yt.dims[1]);
        dn_plain_md(&bmd, 1, bd);
    }
    union {
        dnnl_convolution_desc_t c;
        dnnl_deconvolution_desc_t d;
    } desc;
    dnnl_status_t st = transpose
        ? dnnl_dilated_deconvolution_forward_desc_init(&desc.d, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                       &xmd, &wany, has_bias ? &bmd : NULL, &ymd, s.strides, s.dil,
                                                       s.pl, s.pr)
        : dnnl_dilated_convolution_forward_desc_init(&desc.c, dnnl_forward_inference, dnnl_convolution_direct, &xmd,
                                                     &wany, has_bias ? &bmd : NULL, &ymd, s.strides, s.dil, s.pl,
                                                     s.pr);
    const char *what = q ? "an int8 convolution" : transpose ? "a deconvolution" : "a convolution";
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, what);
    dn_fusion f;
    dn_fusion_plan(b, yv, yt.rank, yt.dims, true, &f);
    if (transpose || q)
        f.n = 0; /* oneDNN 2.6 applies a deconvolution's post-ops in a reference loop: far slower than the ops */

    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int nargs = 0;
    size_t k = 0;
    dnnl_primitive_desc_t pd;
    if (q) {
        if (!dn_q8_pd(b, q, 1 << 1, &desc, what, &pd))
            return false;
    } else if (!dn_pd_fused(b, &desc, &f, &k, &pd, args + 4, &nargs, what)) {
        return false;
    }
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_t xm = dn_as(b, x, dn_pd_md(pd, dnnl_query_src_md));
    dnnl_memory_t wm = xm && (!q || dn_q8_weights(b, q)) ? weights_mem(b, w, &wview, dn_pd_md(pd, dnnl_query_weights_md))
                                                          : NULL;
    dnnl_memory_t bm = !has_bias || !wm ? NULL : q ? dn_const_mem(b, &bmd, q->bias) : dn_plain(b, bias);
    const dnnl_memory_desc_t *ymd_pd = dn_pd_md(pd, dnnl_query_dst_md);
    dnnl_memory_t ym = wm && (!has_bias || bm) ? q ? dn_q8_def(b, q, ymd_pd) : dn_fusion_def(b, &f, k, ymd_pd) : NULL;
    return weighted_step(b, pd, xm, wm, has_bias ? bm : NULL, ym, args, nargs);
}

static bool conv_common(dn_builder *b, carve_node_id n, bool transpose)
{
    dn_q8 q;
    int k = transpose ? 0 : dn_q8_plan(b, n, false, &q);
    if (k < 0)
        return false;
    bool ok = conv_build(b, n, transpose, k ? &q : NULL);
    if (k)
        dn_q8_free(&q);
    return ok;
}

bool dn_op_conv(dn_builder *b, carve_node_id n) { return conv_common(b, n, false); }
bool dn_op_convtranspose(dn_builder *b, carve_node_id n) { return conv_common(b, n, true); }

/* A matmul of a (ad, [.., M, K]) and w ([.., K, N]) seen through strided
 * views, an optional constant bias, into value y (dims yd), with fusion. */
void dn_mm_view(dn_mm_operand *o, dn_val *v, int nd, bool vec_row, bool trans)
{
    /* v's dims padded to nd; a 1-D operand becomes [1, K] (row) or [K, 1]. */
    dnnl_dims_t d;
    int r = v->rank;
    if (r == 1) {
        d[0] = vec_row ? 1 : v->dims[0];
        d[1] = vec_row ? v->dims[0] : 1;
        r = 2;
    } else {
        memcpy(d, v->dims, sizeof d);
    }
    o->v = v;
    o->nd = nd;
    int pad = nd - r;
    for (int i = 0; i < nd; i++)
        o->dims[i] = i < pad ? 1 : d[i - pad];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        o->strides[i] = s;
        s *= o->dims[i];
    }
    if (trans) { /* the buffer is [.., K, M]: swap the last two */
        int64_t t = o->dims[nd - 1];
        o->dims[nd - 1] = o->dims[nd - 2];
        o->dims[nd - 2] = t;
        o->strides[nd - 2] = 1;
        o->strides[nd - 1] = o->dims[nd - 2];
    }
    for (int i = 0; i < nd; i++)
        if (o->dims[i] == 1)
            o->strides[i] = i + 1 < nd ? o->strides[i + 1] * o->dims[i + 1] : 1;
}

dnnl_memory_t dn_mm_mem(dn_builder *b, dn_mm_operand *o, const dnnl_memory_desc_t *view, const dnnl_memory_desc_t *want)
{
    if (b->check)
        return NULL;
    dnnl_memory_t base = dn_plain(b, o->v);
    if (!base)
        return NULL;
    void *h = NULL;
    dnnl_memory_get_data_handle(base, &h);
    dn_val t = *o->v;
    t.md = *view;
    t.mem = dn_mem_new(b, view, h);
    t.alt_mem = NULL;
    return t.mem ? dn_as(b, &t, want) : NULL;
}

/* q: the int8 unit around a MatMul (ops_qdq.c), or NULL: float32. */
static bool matmul_build(dn_builder *b, carve_node_id n, dn_mm_operand *a, dn_mm_operand *w, dn_val *bias,
                         const dnnl_memory_desc_t *bias_md, bool fuse, dn_q8 *q)
{
    carve_value_id yv = carve_node_output(b->m, n, 0);
    int nd = a->nd;
    dnnl_dims_t yd;
    for (int i = 0; i < nd - 2; i++)
        yd[i] = a->dims[i] > w->dims[i] ? a->dims[i] : w->dims[i];
    yd[nd - 2] = a->dims[nd - 2];
    yd[nd - 1] = w->dims[nd - 1];
    dnnl_memory_desc_t amd, wmd, wany, ymd;
    dnnl_data_type_t wdt = q ? dnnl_s8 : dnnl_f32;
    dnnl_memory_desc_init_by_strides(&amd, nd, a->dims, q ? q->xdt : dnnl_f32, a->strides);
    dnnl_memory_desc_init_by_strides(&wmd, nd, w->dims, wdt, w->strides);
    if (w->v->is_const || q)
        dnnl_memory_desc_init_by_tag(&wany, nd, w->dims, wdt, dnnl_format_tag_any);
    else
        wany = wmd;
    dn_plain_md_dt(&ymd, nd, yd, q ? q->ydt : dnnl_f32);
    dnnl_matmul_desc_t desc;
    dnnl_status_t st = dnnl_matmul_desc_init(&desc, &amd, &wany, bias_md, &ymd);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a matmul");
    dn_fusion f;
    if (fuse && !q)
        dn_fusion_plan(b, yv, nd, yd, false, &f);
    else {
        memset(&f, 0, sizeof f);
        f.first = f.last = yv;
    }
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int nargs = 0;
    size_t k = 0;
    dnnl_primitive_desc_t pd;
    if (q) {
        if (!dn_q8_pd(b, q, 1 << (nd - 1), &desc, "an int8 matmul", &pd))
            return false;
    } else if (!dn_pd_fused(b, &desc, &f, &k, &pd, args + 4, &nargs, "a matmul")) {
        return false;
    }
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_t am = dn_mm_mem(b, a, &amd, dn_pd_md(pd, dnnl_query_src_md));
    dnnl_memory_t wm = am && (!q || dn_q8_weights(b, q)) ? dn_mm_mem(b, w, &wmd, dn_pd_md(pd, dnnl_query_weights_md))
                                                          : NULL;
    dnnl_memory_t bm = NULL;
    if (wm && bias) {
        bm = bias->mem; /* made by the caller in bias_md */
    }
    dnnl_memory_desc_t yview;
    dnnl_memory_t ym = !wm ? NULL : q ? dn_q8_def(b, q, &ymd) : dn_def_as(b, dn_fusion_commit(b, &f, k), nd, yd, &yview);
    return weighted_step(b, pd, am, wm, bm, ym, args, nargs);
}

bool dn_op_matmul(dn_builder *b, carve_node_id n)
{
    dn_q8 q;
    int qk = dn_q8_plan(b, n, true, &q);
    if (qk < 0)
        return false;
    if (qk) {
        dn_mm_operand ao, wo;
        int nd = q.x->rank < 2 ? 2 : q.x->rank;
        bool ok = q.x->rank >= 2 ? true : dn_fail(b, DN_R_INPUT, "an int8 MatMul of a 1-D input");
        if (ok) {
            dn_mm_view(&ao, q.x, nd, true, false);
            dn_mm_view(&wo, q.w, nd, false, false);
            ok = matmul_build(b, n, &ao, &wo, NULL, NULL, false, &q);
        }
        dn_q8_free(&q);
        return ok;
    }
    dn_val *a = dn_in(b, n, 0), *w = a ? dn_in(b, n, 1) : NULL;
    if (!w)
        return false;
    if (a->rank < 1 || w->rank < 1)
        return dn_fail(b, DN_R_INPUT, "MatMul of a scalar");
    int ra = a->rank < 2 ? 2 : a->rank, rw = w->rank < 2 ? 2 : w->rank;
    int nd = ra > rw ? ra : rw;
    if (nd > 12)
        return dn_fail(b, DN_R_INPUT, "rank %d; oneDNN takes at most 12", nd);
    dn_mm_operand ao, wo;
    dn_mm_view(&ao, a, nd, true, false);
    dn_mm_view(&wo, w, nd, false, false);
    /* 1-D operands change the output's rank: no post-op fusion then. */
    return matmul_build(b, n, &ao, &wo, NULL, NULL, a->rank >= 2 && w->rank >= 2, NULL);
}

bool dn_op_gemm(dn_builder *b, carve_node_id n)
{
    dn_val *a = dn_in(b, n, 0), *w = a ? dn_in(b, n, 1) : NULL;
    if (!w)
        return false;
    if (a->rank != 2 || w->rank != 2)
        return dn_fail(b, DN_R_INPUT, "Gemm inputs must be 2-D (A rank %d, B rank %d)", a->rank, w->rank);
    bool ta = dn_attr_i(b, n, "transA", 0) != 0, tb = dn_attr_i(b, n, "transB", 0) != 0;
    float alpha = dn_attr_f(b, n, "alpha", 1.0f), beta = dn_attr_f(b, n, "beta", 1.0f);
    dn_mm_operand ao, wo;
    dn_mm_view(&ao, a, 2, true, ta);
    dn_mm_view(&wo, w, 2, false, tb);
    int64_t M = ao.dims[0], N = wo.dims[1];
    dn_val *c = NULL;
    dnnl_memory_desc_t cmd;
    if (dn_has_in(b, n, 2)) {
        if (!(c = dn_in(b, n, 2)))
            return false;
        if (!c->is_const)
            return dn_fail(b, DN_R_INPUT, "input C is computed at run time; the onednn backend takes a constant C "
                                          "(as the matmul's bias)");
        dnnl_dims_t cd = {1, 1};
        if (c->rank > 2)
            return dn_fail(b, DN_R_INPUT, "input C has rank %d", c->rank);
        for (int i = 0; i < c->rank; i++)
            cd[2 - c->rank + i] = c->dims[i];
        if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N))
            return dn_fail(b, DN_R_INPUT, "input C does not broadcast to [%lld, %lld]", (long long)M, (long long)N);
        dn_plain_md(&cmd, 2, cd);
    }
    if (alpha != 1.0f && !w->is_const)
        return dn_fail(b, DN_R_ATTR, "attribute alpha = %g with a B computed at run time; the onednn backend "
                                     "takes alpha != 1 only with a constant B (scaled at compile time)", alpha);
    dn_val scaled_w = *w, scaled_c;
    if (!b->check && alpha != 1.0f) {
        size_t cnt = dn_count(w);
        float *tmp = malloc(cnt * sizeof *tmp);
        const float *src = carve_value_data(b->m, w->id, NULL);
        if (!tmp || !src) {
            free(tmp);
            b->fatal = true;
            return dn_fail(b, DN_R_LIB, "out of memory");
        }
        for (size_t i = 0; i < cnt; i++)
            tmp[i] = src[i] * alpha;
        scaled_w.mem = dn_const_mem(b, &w->md, tmp);
        scaled_w.alt_mem = NULL;
        free(tmp);
        if (!scaled_w.mem)
            return false;
        wo.v = &scaled_w;
    }
    if (c && !b->check) {
        size_t cnt = dn_count(c);
        float *tmp = malloc(cnt * sizeof *tmp);
        const float *src = carve_value_data(b->m, c->id, NULL);
        if (!tmp || !src) {
            free(tmp);
            b->fatal = true;
            return dn_fail(b, DN_R_LIB, "out of memory");
        }
        for (size_t i = 0; i < cnt; i++)
            tmp[i] = src[i] * beta;
        scaled_c = *c;
        scaled_c.mem = dn_const_mem(b, &cmd, tmp);
        free(tmp);
        if (!scaled_c.mem)
            return false;
        c = &scaled_c;
    }
    return matmul_build(b, n, &ao, &wo, c, c ? &cmd : NULL, true, NULL);
}

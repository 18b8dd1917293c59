/*
 * ops_layout.c: Concat, Transpose, the reshape-like ops (Reshape, Flatten,
 * Squeeze, Unsqueeze, Identity: views of a plain buffer, no copy) and
 * Resize (oneDNN resampling, refused where ONNX's coordinate or rounding
 * rules give other source positions than oneDNN's).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dn.h"
#include "ops/k_resize.h" /* the float32 bilinear taps */

bool dn_op_concat(dn_builder *b, carve_node_id n)
{
    size_t cnt = carve_node_input_count(b->m, n);
    if (cnt < 1 || cnt > DN_MAX_ARGS - 2)
        return dn_fail(b, DN_R_INPUT, "Concat of %zu inputs; the onednn backend takes 1 to %d", cnt, DN_MAX_ARGS - 2);
    dn_val *xs[DN_MAX_ARGS];
    dnnl_memory_desc_t mds[DN_MAX_ARGS];
    size_t k = 0;
    for (size_t i = 0; i < cnt; i++) {
        dn_val *x = dn_in(b, n, i);
        if (!x)
            return false;
        if (dn_count(x) == 0)
            continue; /* empty inputs add nothing */
        xs[k] = x;
        mds[k++] = x->md;
    }
    if (!k)
        return dn_fail(b, DN_R_INPUT, "every input is empty");
    int r = xs[0]->rank;
    int64_t axis = dn_attr_i(b, n, "axis", 0);
    if (r < 1 || axis < -r || axis >= r)
        return dn_fail(b, DN_R_ATTR, "attribute axis = %lld outside rank %d", (long long)axis, r);
    if (axis < 0)
        axis += r;
    /* Inputs in different layouts: concatenate plain ones. */
    bool mixed = false;
    for (size_t i = 1; i < k; i++)
        mixed = mixed || mds[i].format_kind != mds[0].format_kind ||
                !dnnl_memory_desc_equal(&mds[i], &mds[0]);
    if (mixed)
        for (size_t i = 0; i < k; i++)
            dn_plain_md(&mds[i], xs[i]->nd, xs[i]->dims);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_concat_primitive_desc_create(&pd, NULL, (int)k, (int)axis, mds, NULL, b->eng);
    if (st != dnnl_success && !mixed) { /* the same blocked layout oneDNN cannot concatenate: plain */
        for (size_t i = 0; i < k; i++)
            dn_plain_md(&mds[i], xs[i]->nd, xs[i]->dims);
        st = dnnl_concat_primitive_desc_create(&pd, NULL, (int)k, (int)axis, mds, NULL, b->eng);
    }
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a concat");
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    for (size_t i = 0; i < k; i++) {
        args[i].arg = DNNL_ARG_MULTIPLE_SRC + (int)i;
        args[i].memory = dn_as(b, xs[i], &mds[i]);
        if (!args[i].memory) {
            dnnl_primitive_desc_destroy(pd);
            return false;
        }
    }
    dn_val *y = dn_out(b, n, 0, dn_pd_md(pd, dnnl_query_dst_md));
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    args[k] = (dnnl_exec_arg_t){DNNL_ARG_DST, y->mem};
    return dn_step_add(b, pd, (int)k + 1, args);
}

/* Transpose: a reorder from the input's plain buffer seen with permuted
 * strides into a plain output. */
bool dn_op_transpose(dn_builder *b, carve_node_id n)
{
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    int r = x->rank;
    int64_t perm[DNNL_MAX_NDIMS];
    int c = dn_attr_ints(b, n, "perm", perm, DNNL_MAX_NDIMS);
    if (c < 0) {
        c = r;
        for (int d = 0; d < r; d++)
            perm[d] = r - 1 - d;
    }
    if (c != r || r > DNNL_MAX_NDIMS)
        return dn_fail(b, DN_R_ATTR, "attribute perm has %d values for rank %d", c, r);
    if (r == 0)
        return dn_op_reshape(b, n);
    dnnl_dims_t xs, vd, vs;
    int64_t s = 1;
    for (int d = r - 1; d >= 0; d--) {
        xs[d] = s;
        s *= x->dims[d];
    }
    bool seen[DNNL_MAX_NDIMS] = {false};
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return dn_fail(b, DN_R_ATTR, "attribute perm is not a permutation");
        seen[perm[d]] = true;
        vd[d] = x->dims[perm[d]];
        vs[d] = xs[perm[d]];
    }
    dnnl_memory_desc_t vmd, ymd;
    dnnl_memory_desc_init_by_strides(&vmd, r, vd, dnnl_f32, vs);
    dn_plain_md(&ymd, r, vd);
    return dn_view_reorder(b, x, &vmd, carve_node_output(b->m, n, 0), &ymd, "a reorder (transpose)");
}

bool dn_op_reshape(dn_builder *b, carve_node_id n)
{
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    if (b->check)
        return true; /* a view: nothing for oneDNN to refuse */
    return dn_out_view(b, n, 0, x) != NULL;
}

/* Slice with unit steps: a reorder from a sub-memory of the input's plain
 * buffer (dnnl_memory_desc_init_submemory) into a plain output. */
bool dn_op_slice(dn_builder *b, carve_node_id n)
{
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    int r = x->rank;
    int64_t starts[DNNL_MAX_NDIMS], ends[DNNL_MAX_NDIMS], axes[DNNL_MAX_NDIMS], steps[DNNL_MAX_NDIMS];
    size_t ns = 0, ne = 0, na = 0, nst = 0;
    if (carve_model_opset(b->m, "") < 10) {
        int c1 = dn_attr_ints(b, n, "starts", starts, DNNL_MAX_NDIMS), c2 = dn_attr_ints(b, n, "ends", ends, DNNL_MAX_NDIMS);
        int c3 = dn_attr_ints(b, n, "axes", axes, DNNL_MAX_NDIMS);
        if (c1 < 0 || c2 != c1)
            return dn_fail(b, DN_R_ATTR, "attributes starts and ends are missing or differ in length");
        ns = ne = (size_t)c1;
        na = c3 < 0 ? 0 : (size_t)c3;
    } else {
        if (!dn_const_ints(b, n, 1, starts, DNNL_MAX_NDIMS, &ns) || !dn_const_ints(b, n, 2, ends, DNNL_MAX_NDIMS, &ne) ||
            ns != ne)
            return dn_fail(b, DN_R_INPUT, "inputs starts and ends must be constants of one length");
        if (dn_has_in(b, n, 3) && !dn_const_ints(b, n, 3, axes, DNNL_MAX_NDIMS, &na))
            return dn_fail(b, DN_R_INPUT, "input axes is not a constant");
        if (dn_has_in(b, n, 4) && !dn_const_ints(b, n, 4, steps, DNNL_MAX_NDIMS, &nst))
            return dn_fail(b, DN_R_INPUT, "input steps is not a constant");
    }
    if (!na)
        for (size_t i = 0; i < ns; i++)
            axes[i] = (int64_t)i;
    if (na && na != ns)
        return dn_fail(b, DN_R_INPUT, "axes has %zu values for %zu starts", na, ns);
    for (size_t i = 0; i < nst; i++)
        if (steps[i] != 1)
            return dn_fail(b, DN_R_INPUT, "steps[%zu] = %lld; the onednn backend slices with step 1 only", i,
                           (long long)steps[i]);
    carve_value_id yv = carve_node_output(b->m, n, 0);
    dnnl_dims_t off = {0}, yd;
    for (int d = 0; d < r; d++)
        yd[d] = carve_value_dim(b->m, yv, d).value;
    for (size_t i = 0; i < ns; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r)
            return dn_fail(b, DN_R_INPUT, "axis %lld outside rank %d", (long long)axes[i], r);
        int64_t dim = x->dims[a], st = starts[i];
        if (st < 0)
            st += dim;
        st = st < 0 ? 0 : st > dim ? dim : st;
        off[a] = st;
    }
    for (int d = 0; d < r; d++)
        if (off[d] + yd[d] > x->dims[d])
            return dn_fail(b, DN_R_INPUT, "the slice of axis %d passes the input's end", d);
    if (r == 0 || dn_count(x) == 0)
        return dn_fail(b, DN_R_INPUT, "empty or scalar input");
    dnnl_memory_desc_t xmd, sub, ymd;
    dn_plain_md(&xmd, x->nd, x->dims);
    dn_plain_md(&ymd, r, yd);
    dnnl_status_t st = dnnl_memory_desc_init_submemory(&sub, &xmd, yd, off);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a sub-memory (slice)");
    return dn_view_reorder(b, x, &sub, carve_node_output(b->m, n, 0), &ymd, "a reorder (slice)");
}

/* ------------------------------------------------------------ Resize */

static double onnx_coord(ctmode ct, double x, double scale, double in, double out)
{
    switch (ct) {
    case CT_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
    case CT_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CT_ALIGN_CORNERS: return out == 1 ? 0.0 : x * (in - 1) / (out - 1);
    case CT_ASYMMETRIC: return x / scale;
    case CT_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = out / (in * scale);
        return in / 2 * (1 - adj) + (x + 0.5) / scale - 0.5;
    }
    default: return x;
    }
}

static int64_t onnx_nearest(const char *nm, double x)
{
    if (!strcmp(nm, "floor"))
        return (int64_t)floor(x);
    if (!strcmp(nm, "ceil"))
        return (int64_t)ceil(x);
    double f = floor(x);
    if (x - f == 0.5)
        return !strcmp(nm, "round_prefer_ceil") ? (int64_t)f + 1 : (int64_t)f;
    return (int64_t)floor(x + 0.5);
}

static int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/* 2-D linear Resize as a host step, to the bit the reference's
 * (src/ops/k_resize.c, bilinear_f32: onnxruntime's float32 roundings):
 * oneDNN's resampling weighs the same source pixels but rounds in another
 * order, and a dynamically quantized model turns a last bit into another
 * quantized step (imgly small drifted 0.31 at its decoder). Per output
 * pixel w11 X11 + w12 X12 + w21 X21 + w22 X22 summed in that order, each
 * weight the product of the two axis weights, the taps of each axis
 * k_resize.c's own (rs_bilinear_taps). */
typedef struct bl_ctx {
    dnnl_memory_t x, y;
    int64_t n, c, ih, iw, oh, ow;
    bool nhwc;
    rs_bltap *ty, *tx; /* in the same allocation */
} bl_ctx;

static void bl_run(void *vctx)
{
    const bl_ctx *c = vctx;
    void *hx = NULL, *hy = NULL;
    dnnl_memory_get_data_handle(c->x, &hx);
    dnnl_memory_get_data_handle(c->y, &hy);
    const float *src = hx;
    float *dst = hy;
    /* planes: n x c (nchw) or n (nhwc, inner c) */
    int64_t planes = c->nhwc ? c->n : c->n * c->c, inner = c->nhwc ? c->c : 1;
    int64_t ih = c->ih, iw = c->iw, oh = c->oh, ow = c->ow;
    long rows = (long)(planes * oh);
#pragma omp parallel for
    for (long r = 0; r < rows; r++) {
        int64_t p = r / oh, y = r % oh;
        const float *s = src + p * ih * iw * inner;
        float *o = dst + (p * oh + y) * ow * inner;
        const float *r1 = s + c->ty[y].i1 * iw * inner, *r2 = s + c->ty[y].i2 * iw * inner;
        float wy1 = c->ty[y].w1, wy2 = c->ty[y].w2;
        for (int64_t x = 0; x < ow; x++, o += inner) {
            const rs_bltap *t = &c->tx[x];
            float c11 = t->w1 * wy1, c12 = t->w2 * wy1, c21 = t->w1 * wy2, c22 = t->w2 * wy2;
            const float *a11 = r1 + t->i1 * inner, *a12 = r1 + t->i2 * inner;
            const float *a21 = r2 + t->i1 * inner, *a22 = r2 + t->i2 * inner;
            /* vectorized across channels; each element's operations and
             * their order stay the reference's */
#pragma omp simd
            for (int64_t k = 0; k < inner; k++)
                o[k] = c11 * a11[k] + c12 * a12[k] + c21 * a21[k] + c22 * a22[k];
        }
    }
}

/* x [N, C, H, W] -> yv [N, C, oh, ow], nchw or nhwc (x's layout when it is
 * one of those, else nhwc). */
static bool bl_build(dn_builder *b, dn_val *x, carve_value_id yv, const dnnl_dims_t yd, ctmode ct, const float *fs,
                     const double *len)
{
    dnnl_memory_desc_t nhwc, nchw;
    dnnl_memory_desc_init_by_tag(&nhwc, 4, x->dims, dnnl_f32, dnnl_acdb);
    dnnl_memory_desc_init_by_tag(&nchw, 4, x->dims, dnnl_f32, dnnl_abcd);
    bool cl = !dnnl_memory_desc_equal(&x->md, &nchw);
    dnnl_memory_desc_t ymd;
    dnnl_memory_desc_init_by_tag(&ymd, 4, yd, dnnl_f32, cl ? dnnl_acdb : dnnl_abcd);
    bl_ctx *c = calloc(1, sizeof *c + (size_t)(yd[2] + yd[3]) * sizeof(rs_bltap));
    dnnl_memory_t xm = c ? dn_as(b, x, cl ? &nhwc : &nchw) : NULL;
    dn_val *y = xm ? dn_def(b, yv, &ymd) : NULL;
    if (!y) {
        free(c);
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory (Resize)");
    }
    c->x = xm, c->y = y->mem, c->nhwc = cl;
    c->n = x->dims[0], c->c = x->dims[1], c->ih = x->dims[2], c->iw = x->dims[3], c->oh = yd[2], c->ow = yd[3];
    c->ty = (rs_bltap *)(c + 1);
    c->tx = c->ty + yd[2];
    rs_bilinear_taps(ct, fs[2], c->ih, c->oh, len[2], c->ty);
    rs_bilinear_taps(ct, fs[3], c->iw, c->ow, len[3], c->tx);
    dnnl_memory_t used[2] = {xm, y->mem};
    return dn_step_host(b, bl_run, c, 2, used);
}

bool dn_op_resize(dn_builder *b, carve_node_id n)
{
    int64_t opset = carve_model_opset(b->m, "");
    if (opset < 11)
        return dn_fail(b, DN_R_ATTR, "Resize before opset 11 (no coordinate_transformation_mode): refused");
    char mode[16], ctb[32], nm[32], kar[16];
    dn_attr_s(b, n, "mode", "nearest", mode, sizeof mode);
    dn_attr_s(b, n, "coordinate_transformation_mode", "half_pixel", ctb, sizeof ctb);
    dn_attr_s(b, n, "nearest_mode", "round_prefer_floor", nm, sizeof nm);
    dn_attr_s(b, n, "keep_aspect_ratio_policy", "stretch", kar, sizeof kar);
    bool linear = !strcmp(mode, "linear");
    if (!linear && strcmp(mode, "nearest"))
        return dn_fail(b, DN_R_ATTR, "attribute mode = '%s'; allowed: nearest, linear", mode);
    if (dn_attr_i(b, n, "antialias", 0))
        return dn_fail(b, DN_R_ATTR, "attribute antialias = 1; allowed: 0");
    if (dn_attr_has(b, n, "axes"))
        return dn_fail(b, DN_R_ATTR, "attribute axes is set; the onednn backend takes Resize over all axes");
    if (strcmp(kar, "stretch"))
        return dn_fail(b, DN_R_ATTR, "attribute keep_aspect_ratio_policy = '%s'; allowed: stretch", kar);
    static const struct {
        const char *name;
        ctmode ct;
    } cts[] = {{"half_pixel", CT_HALF_PIXEL},
               {"pytorch_half_pixel", CT_PYTORCH_HALF_PIXEL},
               {"align_corners", CT_ALIGN_CORNERS},
               {"asymmetric", CT_ASYMMETRIC},
               {"tf_half_pixel_for_nn", CT_TF_HALF_PIXEL_FOR_NN},
               {"half_pixel_symmetric", CT_HALF_PIXEL_SYMMETRIC}};
    ctmode ct = CT_TF_CROP_AND_RESIZE; /* not in the table: refused */
    for (size_t i = 0; i < sizeof cts / sizeof *cts; i++)
        if (!strcmp(ctb, cts[i].name))
            ct = cts[i].ct;
    if (ct == CT_TF_CROP_AND_RESIZE)
        return dn_fail(b, DN_R_ATTR, "attribute coordinate_transformation_mode = '%s'; allowed where they match "
                                     "oneDNN: half_pixel, pytorch_half_pixel, align_corners, asymmetric, "
                                     "tf_half_pixel_for_nn, half_pixel_symmetric", ctb);
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    int r = x->rank;
    if (r < 3 || r > 5)
        return dn_fail(b, DN_R_INPUT, "input X has rank %d; oneDNN resamples 1 to 3 spatial dims of N, C, ...", r);
    carve_value_id yv = carve_node_output(b->m, n, 0);
    dnnl_dims_t yd;
    for (int d = 0; d < r; d++)
        yd[d] = carve_value_dim(b->m, yv, d).value;
    float sc[DNNL_MAX_NDIMS];
    size_t ns = 0;
    bool have_scales = dn_has_in(b, n, 2) && dn_const_floats(b, n, 2, sc, DNNL_MAX_NDIMS, &ns) && ns > 0;
    if (dn_has_in(b, n, 2) && !have_scales) {
        carve_value_id sv = carve_node_input(b->m, n, 2);
        if (carve_value_rank(b->m, sv) != 1 || carve_value_dim(b->m, sv, 0).value != 0)
            return dn_fail(b, DN_R_INPUT, "input scales is not a constant: the source positions depend on its "
                                          "values, which the onednn backend checks at compile time");
    }
    if (have_scales && ns != (size_t)r)
        return dn_fail(b, DN_R_INPUT, "input scales has %zu values for rank %d", ns, r);
    if (yd[0] != x->dims[0] || yd[1] != x->dims[1] || (have_scales && (sc[0] != 1.0f || sc[1] != 1.0f)))
        return dn_fail(b, DN_R_INPUT, "Resize changes the N or C dim; oneDNN resamples spatial dims only");
    float factors[3];
    for (int d = 2; d < r; d++) {
        int64_t in = x->dims[d], out = yd[d];
        if (in < 1 || out < 1)
            return dn_fail(b, DN_R_INPUT, "empty spatial dim");
        double scale = have_scales ? (double)sc[d] : (double)out / (double)in;
        factors[d - 2] = (float)out / (float)in;
        for (int64_t o = 0; o < out; o++) {
            double xo = onnx_coord(ct, (double)o, scale, (double)in, (double)out);
            double xd = ((double)o + 0.5) * (double)in / (double)out - 0.5; /* oneDNN's source position */
            if (linear) {
                double a = xo < 0 ? 0 : xo > in - 1 ? (double)(in - 1) : xo;
                double c = xd < 0 ? 0 : xd > in - 1 ? (double)(in - 1) : xd;
                if (fabs(a - c) > 1e-4)
                    return dn_fail(b, DN_R_ATTR,
                                   "linear Resize with coordinate_transformation_mode = '%s' and these scales "
                                   "samples other source positions than oneDNN (output %lld of axis %d: %g vs %g); "
                                   "oneDNN matches half_pixel with scales out/in",
                                   ctb, (long long)o, d, a, c);
            } else {
                int64_t io = clampi(onnx_nearest(nm, xo), in);
                int64_t id = clampi((int64_t)roundf((float)xd), in);
                if (io != id)
                    return dn_fail(b, DN_R_ATTR,
                                   "nearest Resize with coordinate_transformation_mode = '%s' and nearest_mode = "
                                   "'%s' picks other source pixels than oneDNN (output %lld of axis %d: %lld vs "
                                   "%lld)",
                                   ctb, nm, (long long)o, d, (long long)io, (long long)id);
            }
        }
    }
    dnnl_memory_desc_t ymd;
    dn_any_md(&ymd, r, yd);
    if (linear && r == 4 && !b->check) {
        float fs[4];
        double len[4];
        for (int d = 2; d < 4; d++) {
            fs[d] = have_scales ? sc[d] : (float)yd[d] / (float)x->dims[d];
            len[d] = have_scales ? (double)x->dims[d] * (double)sc[d] : (double)yd[d];
        }
        return bl_build(b, x, yv, yd, ct, fs, len);
    }
    dnnl_resampling_desc_t d;
    dnnl_status_t st = dnnl_resampling_forward_desc_init(&d, dnnl_forward_inference,
                                                         linear ? dnnl_resampling_linear : dnnl_resampling_nearest,
                                                         factors, &x->md, &ymd);
    return dn_step_unary(b, st, &d, "a resampling", x->mem, yv, 0, NULL);
}

/*
 * ops_dynq.c: dynamically quantized models (docs/onednn.md#dynamic-int8).
 *
 * onnxruntime's dynamic quantizer writes each convolution as
 *   x_f32 -> DynamicQuantizeLinear -> (x_u8, s_x, z_x)
 *   ConvInteger(x_u8, w_u8, z_x, z_w) -> Cast(float) -> Mul(s_x * s_w) -> Add(bias) ...
 * The backend builds:
 * - DynamicQuantizeLinear: a host step (the range of x including 0, NaNs
 *   skipped; scale (max - min) / 255, zero point rint(clamp(-min / scale)):
 *   the reference's float operations) and one binary primitive
 *   saturate(rint(x / scale) + zp) to u8 reading scale and zero point from
 *   memories the host step fills.
 * - ConvInteger: one int8 convolution with the runtime source zero point
 *   (DNNL_RUNTIME_S32_VAL, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC) and s8
 *   weights w - z_w. Where w - z_w leaves int8 (uint8 weights with a zero
 *   point: 114 of imgly small's 119 tensors have a few such weights) it is
 *   split exactly into A + B, A = clamp(w - z_w, -128, 127), and the input
 *   channels where B is not 0 are read twice: the convolution runs on x
 *   with those channels appended (a host gather) and weights [A | B], so
 *   the int32 sum stays one exact accumulation.
 * - ConvInteger -> Cast(float) -> Mul(scalar): the convolution's f32
 *   destination with the scalar as its output scale (runtime: 
 *   DNNL_RUNTIME_F32_VAL, DNNL_ARG_ATTR_OUTPUT_SCALES): oneDNN converts the
 *   int32 sum to f32 and multiplies, as Cast then Mul do; the consumers
 *   after it become post-ops (fuse.c). A ConvInteger without that pattern
 *   gives int32 only where its sums stay below 2^24 (oneDNN converts
 *   through f32), else the partition is refused naming it.
 * - Cast from int32 / uint8 / int8 to float: a reorder.
 */
#include <math.h>
#include <stdlib.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <string.h>

#include "dn.h"

static bool is_op(const dn_builder *b, carve_node_id n, const char *op)
{
    return !*carve_node_domain(b->m, n) && !strcmp(carve_node_op(b->m, n), op);
}

/* Every input and output of n has a static, non-empty shape. */
static bool static_shapes(dn_builder *b, carve_node_id n)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t cnt = pass ? carve_node_output_count(b->m, n) : carve_node_input_count(b->m, n);
        for (size_t i = 0; i < cnt; i++) {
            carve_value_id v = pass ? carve_node_output(b->m, n, i) : carve_node_input(b->m, n, i);
            if (v == CARVE_NONE)
                continue;
            int r = carve_value_rank(b->m, v);
            if (r < 0)
                return dn_fail(b, DN_R_SHAPE, "%s %zu '%s' has an unknown shape", pass ? "output" : "input", i,
                               carve_value_name(b->m, v));
            for (int d = 0; d < r; d++) {
                carve_dim dim = carve_value_dim(b->m, v, d);
                if (dim.value <= 0)
                    return dn_fail(b, dim.value < 0 ? DN_R_SHAPE : DN_R_INPUT, "%s %zu '%s' dim %d is %s",
                                   pass ? "output" : "input", i, carve_value_name(b->m, v), d,
                                   dim.value < 0 ? "not fixed (fix it with --dim)" : "0");
            }
        }
    }
    return true;
}

static void *mem_ptr(dnnl_memory_t m)
{
    void *h = NULL;
    dnnl_memory_get_data_handle(m, &h);
    return h;
}

/* ------------------------------------------------------------ DynamicQuantizeLinear */

typedef struct dq_ctx {
    dnnl_memory_t x, scale, zp, zp32, zpf;
    size_t count;
} dq_ctx;

/* The range, scale and zero point exactly as k_dynquantize computes them. */
static void dq_range(void *vctx)
{
    const dq_ctx *c = vctx;
    const float *x = mem_ptr(c->x);
    float mn = 0.0f, mx = 0.0f;
    size_t n = c->count;
#pragma omp parallel
    {
        float lmn = 0.0f, lmx = 0.0f;
        long nb = (long)(n / 64);
#if defined(__SSE__)
        /* minps(x, m) is x < m ? x : m, maxps(x, m) x > m ? x : m: the
         * scalar loop's comparisons lane by lane, NaNs skipped the same;
         * min and max are exact, so the lanes' order does not matter */
        __m128 vmn = _mm_setzero_ps(), vmx = _mm_setzero_ps();
#pragma omp for nowait
        for (long k = 0; k < nb; k++)
            for (size_t i = (size_t)k * 64; i < (size_t)k * 64 + 64; i += 4) {
                __m128 v = _mm_loadu_ps(x + i);
                vmn = _mm_min_ps(v, vmn);
                vmx = _mm_max_ps(v, vmx);
            }
        float a[4], z[4];
        _mm_storeu_ps(a, vmn);
        _mm_storeu_ps(z, vmx);
        for (int l = 0; l < 4; l++) {
            if (a[l] < lmn)
                lmn = a[l];
            if (z[l] > lmx)
                lmx = z[l];
        }
#else
#pragma omp for nowait
        for (long k = 0; k < nb; k++)
            for (size_t i = (size_t)k * 64; i < (size_t)k * 64 + 64; i++) {
                if (x[i] < lmn)
                    lmn = x[i];
                if (x[i] > lmx)
                    lmx = x[i];
            }
#endif
#pragma omp single nowait
        for (size_t i = (size_t)nb * 64; i < n; i++) {
            if (x[i] < lmn)
                lmn = x[i];
            if (x[i] > lmx)
                lmx = x[i];
        }
#pragma omp critical
        {
            if (lmn < mn)
                mn = lmn;
            if (lmx > mx)
                mx = lmx;
        }
    }
    float scale = mx == mn ? 1.0f : (mx - mn) / 255.0f;
    float zpf = 0.0f - mn / scale;
    zpf = zpf < 0.0f ? 0.0f : zpf > 255.0f ? 255.0f : zpf;
    int32_t zp = (int32_t)rintf(zpf);
    *(float *)mem_ptr(c->scale) = scale;
    *(uint8_t *)mem_ptr(c->zp) = (uint8_t)zp;
    *(int32_t *)mem_ptr(c->zp32) = zp;
    *(float *)mem_ptr(c->zpf) = (float)zp;
}

bool dn_op_dynquant(dn_builder *b, carve_node_id n)
{
    if (!static_shapes(b, n))
        return false;
    dn_val *x = dn_in(b, n, 0);
    if (!x)
        return false;
    if (carve_node_output_count(b->m, n) != 3)
        return dn_fail(b, DN_R_INPUT, "DynamicQuantizeLinear with %zu outputs, expected 3",
                       carve_node_output_count(b->m, n));
    if (!b->check && !x->mem) {
        b->fatal = true;
        return dn_fail(b, DN_R_INPUT, "input 0 '%s' is not computed in the partition", carve_value_name(b->m, x->id));
    }
    int nd = x->nd;
    dnnl_dims_t ones;
    for (int d = 0; d < nd; d++)
        ones[d] = 1;
    dnnl_memory_desc_t pmd, ymd, xmd = x->md;
    dn_plain_md(&pmd, nd, ones);
    /* The host step reads every element of the buffer: a padded blocked
     * layout is read plain. */
    if (dnnl_memory_desc_get_size(&xmd) != dn_count(x) * sizeof(float))
        dn_plain_md(&xmd, nd, x->dims);
    dnnl_memory_desc_init_by_tag(&ymd, nd, x->dims, dnnl_u8, dnnl_format_tag_any);
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, dnnl_binary_div, &xmd, &pmd, &ymd);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a DynamicQuantizeLinear (binary div)");
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success)
        st = dnnl_post_ops_create(&po);
    if (st == dnnl_success)
        st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f);
    if (st == dnnl_success)
        st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &pmd);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_primitive_desc_t pd = NULL;
    bool ok = st == dnnl_success ? dn_pd(b, &d, attr, &pd, "a DynamicQuantizeLinear")
                                 : dn_dnnl_fail(b, st, "post-ops");
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (!ok)
        return false;
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_dims_t one = {1};
    dnnl_memory_desc_t s32md;
    dn_plain_md_dt(&s32md, 1, one, dnnl_s32);
    dq_ctx *c = calloc(1, sizeof *c);
    dnnl_memory_t xm = c ? dn_as(b, x, &xmd) : NULL;
    dn_val *ys = xm ? dn_out(b, n, 1, NULL) : NULL;
    dn_val *yz = ys ? dn_out(b, n, 2, NULL) : NULL;
    dnnl_memory_t z32 = yz ? dn_mem_new(b, &s32md, DNNL_MEMORY_ALLOCATE) : NULL;
    dnnl_memory_t zf = z32 ? dn_mem_new(b, &pmd, DNNL_MEMORY_ALLOCATE) : NULL;
    dnnl_memory_t sview = zf ? dn_mem_new(b, &pmd, mem_ptr(ys->mem)) : NULL;
    dn_val *y = sview ? dn_out(b, n, 0, dn_pd_md(pd, dnnl_query_dst_md)) : NULL;
    if (!y) {
        free(c);
        dnnl_primitive_desc_destroy(pd);
        if (!c)
            b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory");
    }
    /* The zero point as int32, for the convolutions' runtime zero point. */
    yz->alt_md = s32md;
    yz->alt_mem = z32;
    c->x = xm, c->scale = ys->mem, c->zp = yz->mem, c->zp32 = z32, c->zpf = zf;
    c->count = dn_count(x);
    dnnl_memory_t used[5] = {xm, ys->mem, yz->mem, z32, zf};
    if (!dn_step_host(b, dq_range, c, 5, used)) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC_0, xm},
                               {DNNL_ARG_SRC_1, sview},
                               {DNNL_ARG_DST, y->mem},
                               {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, zf}};
    return dn_step_add(b, pd, 4, args);
}

/* ------------------------------------------------------------ Cast */

bool dn_op_cast(dn_builder *b, carve_node_id n)
{
    if (!static_shapes(b, n))
        return false;
    int64_t to = dn_attr_i(b, n, "to", 0);
    dn_val *x = dn_in_any(b, n, 0);
    if (!x)
        return false;
    carve_dtype xt = carve_value_dtype(b->m, x->id);
    if (to != CARVE_FLOAT || (xt != CARVE_INT32 && xt != CARVE_UINT8 && xt != CARVE_INT8 && xt != CARVE_FLOAT))
        return dn_fail(b, DN_R_DTYPE, "Cast from %s to %s; the onednn backend casts int32, uint8 and int8 to float32",
                       carve_dtype_name(xt), carve_dtype_name((carve_dtype)to));
    dnnl_memory_desc_t smd, ymd;
    dn_plain_md_dt(&smd, x->nd, x->dims, dn_dt(xt));
    dn_plain_md(&ymd, x->nd, x->dims);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, &smd, b->eng, &ymd, b->eng, NULL);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a reorder (Cast)");
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    if (!x->mem && !x->is_const) {
        dnnl_primitive_desc_destroy(pd);
        b->fatal = true;
        return dn_fail(b, DN_R_INPUT, "input 0 '%s' is not computed in the partition", carve_value_name(b->m, x->id));
    }
    if (!x->mem) {
        size_t nb = 0;
        const void *data = carve_value_data(b->m, x->id, &nb);
        if (nb != dnnl_memory_desc_get_size(&x->md) || !(x->mem = dn_const_mem(b, &x->md, data))) {
            dnnl_primitive_desc_destroy(pd);
            b->fatal = true;
            return dn_fail(b, DN_R_INPUT, "constant '%s' holds %zu bytes", carve_value_name(b->m, x->id), nb);
        }
    }
    dnnl_memory_t xm = dn_as(b, x, &smd);
    dn_val *y = xm ? dn_out(b, n, 0, &ymd) : NULL;
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, y->mem}};
    return dn_step_add(b, pd, 2, args);
}

/* ------------------------------------------------------------ ConvInteger */

typedef struct gather_ctx {
    dnnl_memory_t src, dst;
    size_t pixels, ic, n_extra;
    int32_t idx[]; /* the input channels appended */
} gather_ctx;

/* dst[p] = src[p] followed by src[p][idx[j]], channels last (u8 / s8). */
static void gather_channels(void *vctx)
{
    const gather_ctx *c = vctx;
    const uint8_t *s = mem_ptr(c->src);
    uint8_t *d = mem_ptr(c->dst);
    size_t ic = c->ic, oc = c->ic + c->n_extra;
    long np = (long)c->pixels;
#pragma omp parallel for
    for (long p = 0; p < np; p++) {
        const uint8_t *sp = s + (size_t)p * ic;
        uint8_t *dp = d + (size_t)p * oc;
        memcpy(dp, sp, ic);
        for (size_t j = 0; j < c->n_extra; j++)
            dp[ic + j] = sp[c->idx[j]];
    }
}

/* The ConvInteger's weights w - z_w split into [A | B over the extra input
 * channels] (s8, [OC, IC + n_extra, k...]). */
typedef struct ci_w {
    int8_t *w;
    int32_t *extra;
    size_t n_extra, oc, ic, ksz;
    double bound; /* the largest |sum| a channel can reach: 255 * sum |w - z_w| */
} ci_w;

static int64_t int_at(const void *d, carve_dtype t, size_t i)
{
    return t == CARVE_UINT8 ? ((const uint8_t *)d)[i] : ((const int8_t *)d)[i];
}

static bool ci_weights(dn_builder *b, carve_node_id n, const dn_val *w, ci_w *o)
{
    memset(o, 0, sizeof *o);
    carve_value_id wv = carve_node_input(b->m, n, 1);
    carve_dtype wt = carve_value_dtype(b->m, wv);
    size_t nb = 0;
    const void *wd = carve_value_data(b->m, wv, &nb);
    if (!wd || (wt != CARVE_UINT8 && wt != CARVE_INT8))
        return dn_fail(b, DN_R_INPUT, "ConvInteger: input 1 'w' must be a uint8 or int8 constant");
    o->oc = (size_t)w->dims[0], o->ic = (size_t)w->dims[1];
    o->ksz = dn_count(w) / (o->oc * o->ic);
    if (nb != dn_count(w))
        return dn_fail(b, DN_R_INPUT, "ConvInteger: weights hold %zu bytes for %zu values", nb, dn_count(w));
    size_t nz = 0;
    const void *zd = NULL;
    carve_dtype zt = wt;
    if (dn_has_in(b, n, 3)) {
        carve_value_id zv = carve_node_input(b->m, n, 3);
        zd = carve_value_data(b->m, zv, &nz);
        zt = carve_value_dtype(b->m, zv);
        if (!zd || zt != wt || (nz != 1 && nz != o->oc))
            return dn_fail(b, DN_R_INPUT, "ConvInteger: input 3 'w_zero_point' must be a constant of w's type, one "
                                          "value or one per output channel");
    }
    size_t cnt = dn_count(w);
    int16_t *wp = malloc(cnt * sizeof *wp);
    bool *need = calloc(o->ic, sizeof *need);
    if (!wp || !need) {
        free(wp);
        free(need);
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory");
    }
    for (size_t c = 0, i = 0; c < o->oc; c++) {
        int64_t z = zd ? int_at(zd, zt, nz == 1 ? 0 : c) : 0;
        int64_t sum = 0;
        for (size_t k = 0; k < o->ic; k++)
            for (size_t e = 0; e < o->ksz; e++, i++) {
                int64_t v = (wt == CARVE_UINT8 ? ((const uint8_t *)wd)[i] : ((const int8_t *)wd)[i]) - z;
                wp[i] = (int16_t)v;
                sum += v < 0 ? -v : v;
                if (v > 127 || v < -128)
                    need[k] = true;
            }
        if (255.0 * (double)sum > o->bound)
            o->bound = 255.0 * (double)sum;
    }
    for (size_t k = 0; k < o->ic; k++)
        o->n_extra += need[k];
    size_t icx = o->ic + o->n_extra;
    o->w = malloc(o->oc * icx * o->ksz + 1);
    o->extra = malloc((o->n_extra + 1) * sizeof *o->extra);
    bool ok = o->w && o->extra;
    for (size_t k = 0, j = 0; ok && k < o->ic; k++)
        if (need[k])
            o->extra[j++] = (int32_t)k;
    for (size_t c = 0; ok && c < o->oc; c++)
        for (size_t k = 0; k < icx; k++)
            for (size_t s = 0; s < o->ksz; s++) {
                size_t src = k < o->ic ? k : (size_t)o->extra[k - o->ic];
                int v = wp[(c * o->ic + src) * o->ksz + s];
                int a = v > 127 ? 127 : v < -128 ? -128 : v;
                int q = k < o->ic ? a : v - a; /* B = w - A: 1..128 or -127..-1 */
                if (q > 127) {
                    free(wp);
                    free(need);
                    return dn_fail(b, DN_R_INPUT,
                                   "ConvInteger: weight %d minus zero point is %d (output channel %zu); the onednn "
                                   "backend splits w - z_w into two int8 terms, which reach -256..254",
                                   v + (int)(zd ? int_at(zd, zt, nz == 1 ? 0 : c) : 0), v, c);
                }
                o->w[(c * icx + k) * o->ksz + s] = (int8_t)q;
            }
    free(wp);
    free(need);
    if (!ok) {
        b->fatal = true;
        return dn_fail(b, DN_R_LIB, "out of memory");
    }
    return true;
}

static void ci_free(ci_w *o)
{
    free(o->w);
    free(o->extra);
}

/* The Cast(float) reading the ConvInteger's output y as its only reader,
 * or CARVE_NONE. */
static carve_node_id cast_of(dn_builder *b, carve_value_id y)
{
    carve_node_id c = dn_sole_consumer(b, y);
    if (c == CARVE_NONE || !is_op(b, c, "Cast") || dn_attr_i(b, c, "to", 0) != CARVE_FLOAT)
        return CARVE_NONE;
    return c;
}

bool dn_op_convinteger(dn_builder *b, carve_node_id n)
{
    if (!static_shapes(b, n))
        return false;
    if (!dn_isa_vnni())
        return dn_fail(b, DN_R_DTYPE,
                       "ConvInteger: int8 convolutions refused on this CPU (oneDNN ISA without VNNI: its u8 x s8 "
                       "kernels saturate 16-bit intermediate sums, so results would not be exact)");
    dn_val *x = dn_in_any(b, n, 0), *w = x ? dn_in_any(b, n, 1) : NULL;
    if (!w)
        return false;
    carve_dtype xt = carve_value_dtype(b->m, x->id);
    if (xt != CARVE_UINT8 && xt != CARVE_INT8)
        return dn_fail(b, DN_R_DTYPE, "ConvInteger: input 0 'x' is %s, expected uint8 or int8", carve_dtype_name(xt));
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return dn_fail(b, DN_R_INPUT, "ConvInteger: x has rank %d and w rank %d; oneDNN takes 1 to 3 spatial dims",
                       x->rank, w->rank);
    if (dn_attr_i(b, n, "group", 1) != 1)
        return dn_fail(b, DN_R_ATTR, "ConvInteger: group %lld; the onednn backend takes group 1",
                       (long long)dn_attr_i(b, n, "group", 1));
    if (w->dims[1] != x->dims[1])
        return dn_fail(b, DN_R_INPUT, "ConvInteger: w has %lld input channels, x %lld", (long long)w->dims[1],
                       (long long)x->dims[1]);
    /* The source zero point: a constant, or a runtime scalar. */
    int32_t zp_const = 0;
    dn_val *zpv = NULL;
    if (dn_has_in(b, n, 2)) {
        carve_value_id zv = carve_node_input(b->m, n, 2);
        size_t nz = 0;
        const void *zd = carve_value_data(b->m, zv, &nz);
        int zr = carve_value_rank(b->m, zv);
        if (carve_value_dtype(b->m, zv) != xt || zr < 0 || zr > 1 || (zr == 1 && carve_value_dim(b->m, zv, 0).value != 1))
            return dn_fail(b, DN_R_INPUT, "ConvInteger: input 2 'x_zero_point' must be one value of x's type");
        if (zd && nz == 1)
            zp_const = (int32_t)int_at(zd, xt, 0);
        else if (!(zpv = dn_in_any(b, n, 2)))
            return false;
    }
    ci_w cw;
    if (!ci_weights(b, n, w, &cw))
        return false;
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
    carve_node_id cast = CARVE_NONE;
    bool ok = dn_read_spatial(b, n, x, &yt, false, &s);
    if (ok && !b->check)
        cast = cast_of(b, yv);
    /* check mode: the fused form (f32 destination) is asked */
    bool fused = b->check || cast != CARVE_NONE;
    if (ok && !fused && cw.bound >= 16777216.0)
        ok = dn_fail(b, DN_R_INPUT,
                     "ConvInteger: its int32 sums can reach %.0f; oneDNN converts them through float32, exact only "
                     "below 2^24 (ConvInteger -> Cast -> Mul by a scalar is exact at any size)", cw.bound);
    size_t icx = cw.ic + cw.n_extra;
    dnnl_dims_t xd, wd;
    memcpy(xd, x->dims, sizeof xd);
    memcpy(wd, w->dims, sizeof wd);
    xd[1] = wd[1] = (dnnl_dim_t)icx;
    /* channels last: the gather's layout (and the one oneDNN's int8
     * kernels prefer) */
    static const dnnl_format_tag_t cl[6] = {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb};
    dnnl_memory_desc_t xmd, wany, wplain, ymd;
    dnnl_memory_desc_init_by_tag(&xmd, x->nd, xd, dn_dt(xt), cw.n_extra ? cl[x->nd] : dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wany, x->nd, wd, dnnl_s8, dnnl_format_tag_any);
    dn_plain_md_dt(&wplain, x->nd, wd, dnnl_s8);
    dnnl_memory_desc_init_by_tag(&ymd, yt.rank, yt.dims, fused ? dnnl_f32 : dnnl_s32, dnnl_format_tag_any);
    dnnl_convolution_desc_t desc;
    dnnl_status_t st = dnnl_success;
    if (ok)
        st = dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &xmd,
                                                        &wany, NULL, &ymd, s.strides, s.dil, s.pl, s.pr);
    if (ok && st != dnnl_success)
        ok = dn_dnnl_fail(b, st, "an int8 convolution");
    /* Post-ops after the Cast (fuse.c): the Mul by the scale (a binary
     * post-op: oneDNN 2.6's convolutions take no runtime output scale),
     * the bias, the activation ... */
    dn_fusion f;
    memset(&f, 0, sizeof f);
    if (ok && cast != CARVE_NONE)
        dn_fusion_plan(b, carve_node_output(b->m, cast, 0), yt.rank, yt.dims, true, &f);
    const int32_t rt_s32 = DNNL_RUNTIME_S32_VAL;
    /* The kernel oneDNN picks without post-ops; a fusion that changes it
     * (a slower implementation) is dropped, as in dn_pd_fused. */
    dnnl_primitive_desc_t pd = NULL;
    size_t k = 0;
    const char *base_impl = NULL;
    for (size_t pass = 0; ok && pass <= f.n; pass++) {
        size_t kk = pass ? f.n + 1 - pass : 0; /* 0, then f.n down to 1 */
        dnnl_primitive_attr_t attr = NULL;
        if (kk ? !dn_fusion_attr(b, &f, kk, &attr, NULL, NULL) : dnnl_primitive_attr_create(&attr) != dnnl_success)
            continue;
        st = dnnl_success;
        if (zpv || zp_const)
            st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, zpv ? &rt_s32 : &zp_const);
        dnnl_primitive_desc_t t = NULL;
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&t, &desc, attr, b->eng, NULL);
        dnnl_primitive_attr_destroy(attr);
        if (st != dnnl_success) {
            if (!kk)
                ok = dn_dnnl_fail(b, st, "an int8 convolution (runtime zero point)");
            continue;
        }
        const char *is = NULL;
        dnnl_primitive_desc_query(t, dnnl_query_impl_info_str, 0, &is);
        if (!kk) {
            pd = t;
            base_impl = is;
            continue;
        }
        if (base_impl && is && strcmp(is, base_impl)) {
            dnnl_primitive_desc_destroy(t);
            continue;
        }
        dnnl_primitive_desc_destroy(pd);
        pd = t;
        k = kk;
        break;
    }
    if (!ok || b->check) {
        ci_free(&cw);
        if (ok)
            return dn_step_add(b, pd, 0, NULL);
        if (pd)
            dnnl_primitive_desc_destroy(pd);
        return false;
    }
    /* The source: x as the kernel wants it, or x channels last with the
     * extra channels gathered into a buffer of its own. */
    dnnl_memory_t xm = NULL;
    if (!x->mem) {
        ok = dn_fail(b, DN_R_INPUT, "ConvInteger: input 0 '%s' is not computed in the partition",
                     carve_value_name(b->m, x->id));
        b->fatal = true;
    } else if (!cw.n_extra) {
        xm = dn_as(b, x, dn_pd_md(pd, dnnl_query_src_md));
    } else {
        dnnl_memory_desc_t xcl;
        dnnl_memory_desc_init_by_tag(&xcl, x->nd, x->dims, dn_dt(xt), cl[x->nd]);
        dnnl_memory_t src = dn_as(b, x, &xcl);
        xm = src ? dn_mem_new(b, dn_pd_md(pd, dnnl_query_src_md), DNNL_MEMORY_ALLOCATE) : NULL;
        gather_ctx *g = xm ? malloc(sizeof *g + (cw.n_extra + 1) * sizeof(int32_t)) : NULL;
        if (g) {
            g->src = src, g->dst = xm;
            g->ic = cw.ic, g->n_extra = cw.n_extra;
            g->pixels = dn_count(x) / cw.ic;
            memcpy(g->idx, cw.extra, cw.n_extra * sizeof(int32_t));
            dnnl_memory_t used[2] = {src, xm};
            ok = dn_step_host(b, gather_channels, g, 2, used);
        } else {
            ok = false;
        }
    }
    dn_val wt = *w;
    wt.md = wplain;
    wt.nd = x->nd;
    memcpy(wt.dims, wd, sizeof wt.dims);
    wt.is_const = true;
    wt.alt_mem = NULL;
    wt.mem = ok && xm ? dn_const_mem(b, &wplain, cw.w) : NULL;
    dnnl_memory_t wm = wt.mem ? dn_as(b, &wt, dn_pd_md(pd, dnnl_query_weights_md)) : NULL;
    ci_free(&cw);
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int nargs = 3;
    dnnl_memory_t zm = NULL;
    if (wm && zpv) {
        dnnl_dims_t one = {1};
        dnnl_memory_desc_t zmd;
        dn_plain_md_dt(&zmd, 1, one, dnnl_s32);
        zm = zpv->mem || (zpv->alt_mem && dnnl_memory_desc_equal(&zpv->alt_md, &zmd)) ? dn_as(b, zpv, &zmd) : NULL;
        if (!zm && !b->reason) {
            b->fatal = true;
            dn_fail(b, DN_R_INPUT, "ConvInteger: x_zero_point is not computed in the partition");
        }
    }
    if (wm && (!zpv || zm)) {
        if (zm)
            args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zm};
        dnnl_primitive_attr_t none = NULL;
        if (k && !dn_fusion_attr(b, &f, k, &none, args, &nargs))
            wm = NULL;
    } else {
        wm = NULL;
    }
    dnnl_memory_t ym = NULL;
    if (wm) {
        const dnnl_memory_desc_t *ymd_pd = dn_pd_md(pd, dnnl_query_dst_md);
        if (cast != CARVE_NONE) {
            dn_mark_done(b, cast);
            ym = dn_fusion_def(b, &f, k, ymd_pd);
        } else {
            dn_val *y = dn_def(b, yv, ymd_pd);
            ym = y ? y->mem : NULL;
        }
    }
    if (!ym) {
        dnnl_primitive_desc_destroy(pd);
        if (!b->reason) {
            b->fatal = true;
            dn_fail(b, DN_R_LIB, "ConvInteger: cannot build its memories");
        }
        return false;
    }
    args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, xm};
    args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wm};
    args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, ym};
    return dn_step_add(b, pd, nargs, args);
}

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

/* Widens the range [*mn, *mx] to take lo and hi in: the comparisons are
 * false for a NaN, so NaNs are skipped. */
static inline void widen(float *mn, float *mx, float lo, float hi)
{
    if (lo < *mn)
        *mn = lo;
    if (hi > *mx)
        *mx = hi;
}

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
        for (int l = 0; l < 4; l++)
            widen(&lmn, &lmx, a[l], z[l]);
#else
#pragma omp for nowait
        for (long k = 0; k < nb; k++)
            for (size_t i = (size_t)k * 64; i < (size_t)k * 64 + 64; i++)
                widen(&lmn, &lmx, x[i], x[i]);
#endif
#pragma omp single nowait
        for (size_t i = (size_t)nb * 64; i < n; i++)
            widen(&lmn, &lmx, x[i], x[i]);
#pragma omp critical
        widen(&mn, &mx, lmn, lmx);
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
    if (!dn_check_shapes(b, n, false))
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
    dnnl_primitive_desc_t pd = NULL;
    if (!dn_qdq_pd(b, "DynamicQuantizeLinear", &xmd, &pmd, &ymd, true, &pd))
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
    if (!dn_check_shapes(b, n, false))
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

/* mm: MatMulInteger's B [K, N], seen as N output channels of K inputs. */
static bool ci_weights(dn_builder *b, carve_node_id n, const dn_val *w, bool mm, ci_w *o)
{
    memset(o, 0, sizeof *o);
    const char *op = mm ? "MatMulInteger" : "ConvInteger", *wn = mm ? "b" : "w";
    carve_value_id wv = carve_node_input(b->m, n, 1);
    carve_dtype wt = carve_value_dtype(b->m, wv);
    size_t nb = 0;
    const void *wd = carve_value_data(b->m, wv, &nb);
    if (!wd || (wt != CARVE_UINT8 && wt != CARVE_INT8))
        return dn_fail(b, DN_R_INPUT, "%s: input 1 '%s' must be a uint8 or int8 constant", op, wn);
    o->oc = (size_t)w->dims[mm ? 1 : 0], o->ic = (size_t)w->dims[mm ? 0 : 1];
    o->ksz = dn_count(w) / (o->oc * o->ic);
    /* element (c, k, e) of w: conv [OC][IC][k...], matmul [K][N] */
    size_t sc = mm ? 1 : o->ic * o->ksz, sk = mm ? o->oc : o->ksz;
    if (nb != dn_count(w))
        return dn_fail(b, DN_R_INPUT, "%s: weights hold %zu bytes for %zu values", op, nb, dn_count(w));
    size_t nz = 0;
    const void *zd = NULL;
    carve_dtype zt = wt;
    if (dn_has_in(b, n, 3)) {
        carve_value_id zv = carve_node_input(b->m, n, 3);
        zd = carve_value_data(b->m, zv, &nz);
        zt = carve_value_dtype(b->m, zv);
        if (!zd || zt != wt || (nz != 1 && nz != o->oc))
            return dn_fail(b, DN_R_INPUT, "%s: input 3 '%s_zero_point' must be a constant of %s's type, one value or "
                                          "one per output %s", op, wn, wn, mm ? "column" : "channel");
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
                size_t at = c * sc + k * sk + e;
                int64_t v = (wt == CARVE_UINT8 ? ((const uint8_t *)wd)[at] : ((const int8_t *)wd)[at]) - z;
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
                    free(o->w);
                    free(o->extra);
                    o->w = NULL;
                    o->extra = NULL;
                    return dn_fail(b, DN_R_INPUT,
                                   "%s: weight %d minus zero point is %d (output %s %zu); the onednn backend splits "
                                   "w - z_w into two int8 terms, which reach -256..254",
                                   op, v + (int)(zd ? int_at(zd, zt, nz == 1 ? 0 : c) : 0), v,
                                   mm ? "column" : "channel", c);
                }
                o->w[(c * icx + k) * o->ksz + s] = (int8_t)q;
            }
    free(wp);
    free(need);
    if (!ok) {
        free(o->w);
        free(o->extra);
        o->w = NULL;
        o->extra = NULL;
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

/* A ConvInteger or MatMulInteger being built. */
typedef struct qjob {
    const char *op;
    carve_node_id n;
    bool mm;
    dn_val *x, *w;
    carve_dtype xt;
    int32_t zp_const; /* the source zero point when constant */
    dn_val *zpv;      /* or its runtime value */
    ci_w cw;
    carve_value_id yv;
    int ynd;
    dnnl_dims_t ydims;
    carve_node_id cast; /* the Cast(float) read as the destination, or CARVE_NONE */
    dnnl_memory_desc_t xkl; /* x with its reduced dim last and innermost (the gather's layout) */
} qjob;

/* x, w, the source zero point and the weights of j->n (both ops: inputs
 * x/A 0, w/B 1, x_zero_point 2, w_zero_point 3). */
static bool q_inputs(dn_builder *b, qjob *j)
{
    if (!dn_check_shapes(b, j->n, false))
        return false;
    if (!dn_isa_vnni())
        return dn_fail(b, DN_R_DTYPE,
                       "%s: int8 products refused on this CPU (oneDNN ISA without VNNI: its u8 x s8 kernels "
                       "saturate 16-bit intermediate sums, so results would not be exact)", j->op);
    j->x = dn_in_any(b, j->n, 0);
    j->w = j->x ? dn_in_any(b, j->n, 1) : NULL;
    if (!j->w)
        return false;
    j->xt = carve_value_dtype(b->m, j->x->id);
    if (j->xt != CARVE_UINT8 && j->xt != CARVE_INT8)
        return dn_fail(b, DN_R_DTYPE, "%s: input 0 is %s, expected uint8 or int8", j->op, carve_dtype_name(j->xt));
    j->zp_const = 0;
    j->zpv = NULL;
    if (dn_has_in(b, j->n, 2)) {
        carve_value_id zv = carve_node_input(b->m, j->n, 2);
        size_t nz = 0;
        const void *zd = carve_value_data(b->m, zv, &nz);
        int zr = carve_value_rank(b->m, zv);
        if (carve_value_dtype(b->m, zv) != j->xt || zr < 0 || zr > 1 ||
            (zr == 1 && carve_value_dim(b->m, zv, 0).value != 1))
            return dn_fail(b, DN_R_INPUT, "%s: input 2 (the input's zero point) must be one value of its type (per "
                                          "tensor)", j->op);
        if (zd && nz == 1)
            j->zp_const = (int32_t)int_at(zd, j->xt, 0);
        else if (!(j->zpv = dn_in_any(b, j->n, 2)))
            return false;
    }
    j->yv = carve_node_output(b->m, j->n, 0);
    j->ynd = carve_value_rank(b->m, j->yv);
    for (int d = 0; d < j->ynd; d++)
        j->ydims[d] = carve_value_dim(b->m, j->yv, d).value;
    return true;
}

/* After the op's descriptor: fusion, the primitive, its memories and step.
 * wplain: the plain weights j->cw.w ([OC][IC + extra][k...]) as the op
 * reads them. Frees j->cw. */
static bool q_finish(dn_builder *b, qjob *j, const void *desc, const dnnl_memory_desc_t *wplain)
{
    bool ok = true, fused = b->check || j->cast != CARVE_NONE;
    /* Post-ops after the Cast (fuse.c): the Mul by the scale (a binary
     * post-op: oneDNN 2.6's convolutions take no runtime output scale),
     * the bias, the activation ... */
    dn_fusion f;
    memset(&f, 0, sizeof f);
    if (j->cast != CARVE_NONE)
        dn_fusion_plan(b, carve_node_output(b->m, j->cast, 0), j->ynd, j->ydims, true, &f);
    const int32_t rt_s32 = DNNL_RUNTIME_S32_VAL;
    /* The kernel oneDNN picks without post-ops; a fusion that changes it
     * (a slower implementation) is dropped, as in dn_pd_fused. */
    dnnl_primitive_desc_t pd = NULL;
    size_t k = 0;
    const char *base_impl = NULL;
    (void)fused;
    for (size_t pass = 0; ok && pass <= f.n; pass++) {
        size_t kk = pass ? f.n + 1 - pass : 0; /* 0, then f.n down to 1 */
        dnnl_primitive_attr_t attr = NULL;
        if (kk ? !dn_fusion_attr(b, &f, kk, &attr, NULL, NULL) : dnnl_primitive_attr_create(&attr) != dnnl_success)
            continue;
        dnnl_status_t st = dnnl_success;
        if (j->zpv || j->zp_const)
            st = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, j->zpv ? &rt_s32 : &j->zp_const);
        dnnl_primitive_desc_t t = NULL;
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&t, desc, attr, b->eng, NULL);
        dnnl_primitive_attr_destroy(attr);
        if (st != dnnl_success) {
            if (!kk)
                ok = dn_dnnl_fail(b, st, j->mm ? "an int8 matmul (runtime zero point)"
                                                : "an int8 convolution (runtime zero point)");
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
    ci_w *cw = &j->cw;
    if (!ok || b->check) {
        ci_free(cw);
        if (ok)
            return dn_step_add(b, pd, 0, NULL);
        if (pd)
            dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dn_val *x = j->x;
    /* The source: x as the kernel wants it, or x with the extra channels
     * (columns) gathered into a buffer of its own. */
    dnnl_memory_t xm = NULL;
    if (!x->mem) {
        ok = dn_fail(b, DN_R_INPUT, "%s: input 0 '%s' is not computed in the partition", j->op,
                     carve_value_name(b->m, x->id));
        b->fatal = true;
    } else if (!cw->n_extra) {
        xm = dn_as(b, x, dn_pd_md(pd, dnnl_query_src_md));
    } else {
        dnnl_memory_t src = dn_as(b, x, &j->xkl);
        xm = src ? dn_mem_new(b, dn_pd_md(pd, dnnl_query_src_md), DNNL_MEMORY_ALLOCATE) : NULL;
        gather_ctx *g = xm ? malloc(sizeof *g + (cw->n_extra + 1) * sizeof(int32_t)) : NULL;
        if (g) {
            g->src = src, g->dst = xm;
            g->ic = cw->ic, g->n_extra = cw->n_extra;
            g->pixels = dn_count(x) / cw->ic;
            memcpy(g->idx, cw->extra, cw->n_extra * sizeof(int32_t));
            dnnl_memory_t used[2] = {src, xm};
            ok = dn_step_host(b, gather_channels, g, 2, used);
        } else {
            ok = false;
        }
    }
    dn_val wt = *j->w;
    wt.md = *wplain;
    wt.is_const = true;
    wt.alt_mem = NULL;
    wt.mem = NULL;
    if (ok && xm) { /* the buffer [OC][IC + extra][k...] behind wplain */
        dnnl_memory_desc_t flat;
        dnnl_dims_t all = {(dnnl_dim_t)(cw->oc * (cw->ic + cw->n_extra) * cw->ksz)};
        dn_plain_md_dt(&flat, 1, all, dnnl_s8);
        dnnl_memory_t c = dn_const_mem(b, &flat, cw->w);
        wt.mem = c ? dn_mem_new(b, wplain, mem_ptr(c)) : NULL;
    }
    dnnl_memory_t wm = wt.mem ? dn_as(b, &wt, dn_pd_md(pd, dnnl_query_weights_md)) : NULL;
    ci_free(cw);
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    int nargs = 3;
    dnnl_memory_t zm = NULL;
    dn_val *zpv = j->zpv;
    if (wm && zpv) {
        dnnl_dims_t one = {1};
        dnnl_memory_desc_t zmd;
        dn_plain_md_dt(&zmd, 1, one, dnnl_s32);
        zm = zpv->mem || (zpv->alt_mem && dnnl_memory_desc_equal(&zpv->alt_md, &zmd)) ? dn_as(b, zpv, &zmd) : NULL;
        if (!zm && !b->reason) {
            b->fatal = true;
            dn_fail(b, DN_R_INPUT, "%s: the input's zero point is not computed in the partition", j->op);
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
        if (j->cast != CARVE_NONE) {
            dn_mark_done(b, j->cast);
            ym = dn_fusion_def(b, &f, k, ymd_pd);
        } else {
            dn_val *y = dn_def(b, j->yv, ymd_pd);
            ym = y ? y->mem : NULL;
        }
    }
    if (!ym) {
        dnnl_primitive_desc_destroy(pd);
        if (!b->reason) {
            b->fatal = true;
            dn_fail(b, DN_R_LIB, "%s: cannot build its memories", j->op);
        }
        return false;
    }
    args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, xm};
    args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, wm};
    args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, ym};
    return dn_step_add(b, pd, nargs, args);
}

/* The destination: f32 through the Cast after the node (compile mode; the
 * check mode asks the fused form), else int32, exact only below 2^24.
 * Frees the weights when refused. */
static bool q_dest(dn_builder *b, qjob *j)
{
    if (!b->check)
        j->cast = cast_of(b, j->yv);
    if (b->check || j->cast != CARVE_NONE || j->cw.bound < 16777216.0)
        return true;
    dn_fail(b, DN_R_INPUT,
            "%s: its int32 sums can reach %.0f; oneDNN converts them through float32, exact only below 2^24 "
            "(%s -> Cast -> Mul by a scalar is exact at any size)", j->op, j->cw.bound, j->op);
    ci_free(&j->cw);
    return false;
}

bool dn_op_convinteger(dn_builder *b, carve_node_id n)
{
    qjob j;
    memset(&j, 0, sizeof j);
    j.op = "ConvInteger", j.n = n, j.cast = CARVE_NONE;
    if (!q_inputs(b, &j))
        return false;
    dn_val *x = j.x, *w = j.w;
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return dn_fail(b, DN_R_INPUT, "ConvInteger: x has rank %d and w rank %d; oneDNN takes 1 to 3 spatial dims",
                       x->rank, w->rank);
    if (dn_attr_i(b, n, "group", 1) != 1)
        return dn_fail(b, DN_R_ATTR, "ConvInteger: group %lld; the onednn backend takes group 1",
                       (long long)dn_attr_i(b, n, "group", 1));
    if (w->dims[1] != x->dims[1])
        return dn_fail(b, DN_R_INPUT, "ConvInteger: w has %lld input channels, x %lld", (long long)w->dims[1],
                       (long long)x->dims[1]);
    dn_val yt;
    memset(&yt, 0, sizeof yt);
    yt.rank = j.ynd;
    memcpy(yt.dims, j.ydims, sizeof yt.dims);
    dn_spatial s;
    s.k = x->rank - 2;
    for (int d = 0; d < s.k; d++)
        s.kernel[d] = w->dims[2 + d];
    if (!dn_read_spatial(b, n, x, &yt, false, &s) || !ci_weights(b, n, w, false, &j.cw) || !q_dest(b, &j))
        return false;
    bool fused = b->check || j.cast != CARVE_NONE; /* check mode: the fused form (f32) is asked */
    dnnl_dims_t xd, wd;
    memcpy(xd, x->dims, sizeof xd);
    memcpy(wd, w->dims, sizeof wd);
    xd[1] = wd[1] = (dnnl_dim_t)(j.cw.ic + j.cw.n_extra);
    /* channels last: the gather's layout (and the one oneDNN's int8
     * kernels prefer) */
    static const dnnl_format_tag_t cl[6] = {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb};
    dnnl_memory_desc_t xmd, wany, wplain, ymd;
    dnnl_memory_desc_init_by_tag(&j.xkl, x->nd, x->dims, dn_dt(j.xt), cl[x->nd]);
    dnnl_memory_desc_init_by_tag(&xmd, x->nd, xd, dn_dt(j.xt), j.cw.n_extra ? cl[x->nd] : dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wany, x->nd, wd, dnnl_s8, dnnl_format_tag_any);
    dn_plain_md_dt(&wplain, x->nd, wd, dnnl_s8);
    dnnl_memory_desc_init_by_tag(&ymd, j.ynd, j.ydims, fused ? dnnl_f32 : dnnl_s32, dnnl_format_tag_any);
    dnnl_convolution_desc_t desc;
    dnnl_status_t st = dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                                  dnnl_convolution_direct, &xmd, &wany, NULL, &ymd,
                                                                  s.strides, s.dil, s.pl, s.pr);
    if (st != dnnl_success) {
        ci_free(&j.cw);
        return dn_dnnl_fail(b, st, "an int8 convolution");
    }
    return q_finish(b, &j, &desc, &wplain);
}

bool dn_op_matmulinteger(dn_builder *b, carve_node_id n)
{
    qjob j;
    memset(&j, 0, sizeof j);
    j.op = "MatMulInteger", j.n = n, j.mm = true, j.cast = CARVE_NONE;
    if (!q_inputs(b, &j))
        return false;
    dn_val *x = j.x, *w = j.w;
    if (w->rank != 2 || x->rank < 2 || x->rank > 4 || x->dims[x->rank - 1] != w->dims[0] || j.ynd != x->rank)
        return dn_fail(b, DN_R_INPUT, "MatMulInteger: A of rank %d and B of rank %d; the onednn backend takes A [..., "
                                      "M, K] (rank 2 to 4) and a 2-D B [K, N]", x->rank, w->rank);
    if (!ci_weights(b, n, w, true, &j.cw) || !q_dest(b, &j))
        return false;
    bool fused = b->check || j.cast != CARVE_NONE;
    int nd = x->rank;
    size_t kx = j.cw.ic + j.cw.n_extra, nn = j.cw.oc;
    dnnl_dims_t xd, wd, ws;
    memcpy(xd, x->dims, sizeof xd);
    xd[nd - 1] = (dnnl_dim_t)kx;
    /* B seen as [1.., K + extra, N] over the buffer [N][K + extra] */
    for (int d = 0; d < nd; d++)
        wd[d] = 1, ws[d] = (dnnl_dim_t)(kx * nn);
    wd[nd - 2] = (dnnl_dim_t)kx, wd[nd - 1] = (dnnl_dim_t)nn;
    ws[nd - 2] = 1, ws[nd - 1] = (dnnl_dim_t)kx;
    dnnl_memory_desc_t xmd, wany, wplain, ymd;
    dn_plain_md_dt(&j.xkl, nd, x->dims, dn_dt(j.xt));
    dn_plain_md_dt(&xmd, nd, xd, dn_dt(j.xt));
    dnnl_memory_desc_init_by_tag(&wany, nd, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&wplain, nd, wd, dnnl_s8, ws);
    dn_plain_md_dt(&ymd, nd, j.ydims, fused ? dnnl_f32 : dnnl_s32);
    dnnl_matmul_desc_t desc;
    dnnl_status_t st = dnnl_matmul_desc_init(&desc, &xmd, &wany, NULL, &ymd);
    if (st != dnnl_success) {
        ci_free(&j.cw);
        return dn_dnnl_fail(b, st, "an int8 matmul");
    }
    return q_finish(b, &j, &desc, &wplain);
}

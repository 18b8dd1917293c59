/*
 * test_dynq.c: dynamically quantized convolutions through oneDNN
 * (docs/onednn.md#dynamic-int8) against carve's reference kernels:
 *   x -> DynamicQuantizeLinear -> ConvInteger(w_u8, z_x, z_w) -> Cast ->
 *   Mul(s_x * s_w) -> Add(bias) -> Relu
 * as onnxruntime's dynamic quantizer writes it (imgly's background
 * removal). The integer sum is exact and the float operations after it are
 * the reference's, so every output must be bit-identical: seeded inputs,
 * weights whose w - z_w leaves int8 (split into two int8 terms, the input
 * channels read twice), sums beyond 2^24, zero points 0 and 255, padding,
 * strides, dilations. Refusals name their reason.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "dntest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define EXACT ((dt_tol){0, 0})

static carve_value_id out(dt *t, carve_node_id n, size_t i) { return carve_node_output(t->m, n, i); }

static unsigned rnd(dt *t)
{
    t->seed = t->seed * 1103515245u + 12345u;
    return (t->seed >> 8) & 0xffffff;
}

/* uint8 weights [oc, c, k, k]: seeded in [lo, hi], or (extreme) lo / hi only. */
static carve_value_id weights_u8(dt *t, int64_t oc, int64_t c, int64_t k, int lo, int hi, bool extreme)
{
    size_t n = (size_t)(oc * c * k * k);
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) {
        unsigned u = rnd(t);
        p[i] = (uint8_t)(extreme ? (u & 1 ? hi : lo) : lo + (int)(u % (unsigned)(hi - lo + 1)));
    }
    carve_value_id w = dt_const_data(t, NULL, CARVE_UINT8, 4, D(oc, c, k, k), p, n);
    free(p);
    return w;
}

typedef struct dq_case {
    int64_t c, oc, k, h, w, stride, pad, dil;
    int wlo, whi, zw; /* weights in [wlo, whi], zero point zw (-1: one per output channel) */
    bool extreme;     /* x and w at their extremes: sums beyond 2^24 */
    float xlo, xhi;
} dq_case;

/* The imgly pattern; *relu gets its end, *dql the DynamicQuantizeLinear. */
static carve_node_id dq_build(dt *t, const dq_case *q, carve_value_id *relu, carve_node_id *dqlp)
{
    carve_value_id x = dt_input(t, "x", 4, D(1, q->c, q->h, q->w), q->xlo, q->xhi);
    carve_node_id dql = dt_node(t, "DynamicQuantizeLinear", 1, IDS(x), 3);
    carve_value_id w = weights_u8(t, q->oc, q->c, q->k, q->wlo, q->whi, q->extreme);
    carve_value_id zw;
    if (q->zw >= 0) {
        uint8_t z = (uint8_t)q->zw;
        zw = dt_const_data(t, NULL, CARVE_UINT8, 0, NULL, &z, 1);
    } else {
        uint8_t z[256];
        for (int64_t i = 0; i < q->oc; i++)
            z[i] = (uint8_t)(100 + 7 * i % 60);
        zw = dt_const_data(t, NULL, CARVE_UINT8, 1, D(q->oc), z, (size_t)q->oc);
    }
    carve_node_id ci = dt_node(t, "ConvInteger", 4, IDS(out(t, dql, 0), w, out(t, dql, 2), zw), 1);
    carve_node_set_attr_ints(t->m, ci, "pads", 4, D(q->pad, q->pad, q->pad, q->pad));
    carve_node_set_attr_ints(t->m, ci, "strides", 2, D(q->stride, q->stride));
    carve_node_set_attr_ints(t->m, ci, "dilations", 2, D(q->dil, q->dil));
    carve_node_set_attr_ints(t->m, ci, "kernel_shape", 2, D(q->k, q->k));
    carve_node_id cast = dt_node(t, "Cast", 1, IDS(out(t, ci, 0)), 1);
    carve_node_set_attr_int(t->m, cast, "to", CARVE_FLOAT);
    float ws = 0.00731f;
    carve_value_id s = dt_op2(t, "Mul", out(t, dql, 1), dt_const_f32(t, "w_scale", 1, &ws));
    carve_value_id y = dt_op2(t, "Mul", out(t, cast, 0), s);
    carve_value_id bias = dt_const(t, "bias", 4, D(1, q->oc, 1, 1), -0.5f, 0.5f);
    *relu = dt_op1(t, "Relu", dt_op2(t, "Add", y, bias));
    *dqlp = dql;
    return ci;
}

/* The pattern with the Relu and the DynamicQuantizeLinear's three outputs. */
static carve_node_id dq_model(dt *t, const dq_case *q)
{
    carve_value_id y;
    carve_node_id dql, ci = dq_build(t, q, &y, &dql);
    dt_output(t, y);
    for (size_t i = 0; i < 3; i++)
        dt_output(t, out(t, dql, i));
    return ci;
}

static void dq_exact(const dq_case *q, unsigned seed, const char *file, int line)
{
    dt t;
    dt_init(&t, 11, seed);
    dq_model(&t, q);
    if (t_check(dt_finish(&t), file, line, "model"))
        dt_check_run(&t, EXACT, file, line);
    dt_free(&t);
}

TEST(conv_seeded_split_weights_exact)
{
    /* uint8 weights 0..255 with zero point 121: w - z_w reaches 134, beyond
     * int8 (as in 114 of imgly small's 119 convolutions) */
    dq_case q = {16, 24, 3, 13, 11, 1, 1, 1, 0, 255, 121, false, -1.0f, 3.0f};
    dq_exact(&q, 1, __FILE__, __LINE__);
    q.stride = 2, q.pad = 0;
    dq_exact(&q, 2, __FILE__, __LINE__);
    q.stride = 1, q.pad = 2, q.dil = 2; /* U-Net's dilated blocks */
    dq_exact(&q, 3, __FILE__, __LINE__);
    q.zw = -1; /* one zero point per output channel */
    dq_exact(&q, 4, __FILE__, __LINE__);
}

TEST(conv_int8_weights_no_split_exact)
{
    /* w - z_w within int8: no extra channels */
    dq_case q = {8, 16, 1, 9, 7, 1, 0, 1, 70, 190, 128, false, -2.0f, 0.5f};
    dq_exact(&q, 5, __FILE__, __LINE__);
    q.k = 3, q.pad = 1, q.xlo = 0.0f, q.xhi = 1.0f; /* zero point 0 */
    dq_exact(&q, 6, __FILE__, __LINE__);
    q.xlo = -1.0f, q.xhi = -0.01f; /* all negative: zero point 255 */
    dq_exact(&q, 7, __FILE__, __LINE__);
}

TEST(conv_sums_beyond_2_24_exact)
{
    /* x at its extremes (quantized 0 / 255, zero point 0), weights 1 / 255
     * with zero point 1 (w - z_w = 0 / 254 = 127 + 127): sums up to
     * 64 x 9 x 255 x 254 = 37,307,520 > 2^24, where a sum of two float
     * partial results would round twice */
    dq_case q = {64, 8, 3, 6, 6, 1, 1, 1, 1, 255, 1, true, 0.0f, 1.0f};
    dt t;
    dt_init(&t, 11, 8);
    dq_model(&t, &q);
    REQUIRE(dt_finish(&t));
    /* x all 1: quantized 255, zero point 0 (the range includes 0); the
     * window's sum is 255 x sum(w - z_w), about 576 x 126.5 x 255 */
    float *xv = carve_tensor_data(t.in[0], NULL);
    for (size_t i = 0; i < carve_tensor_count(t.in[0]); i++)
        xv[i] = 1.0f;
    carve_tensor *want[4] = {0}, *got[4] = {0};
    if (dt_run(&t, want, got, __FILE__, __LINE__)) {
        /* the Cast's values: the relu output before bias is s * float(sum) */
        double big = 0;
        for (size_t i = 0; i < carve_tensor_count(want[0]); i++)
            big = fmax(big, carve_tensor_get(want[0], i));
        float s = *(const float *)carve_tensor_data(want[2], NULL) * 0.00731f;
        printf("largest output %g, about %.0f in sum units\n", big, big / s);
        CHECK(big / s > 16777216.0);
        for (int o = 0; o < 4; o++)
            for (size_t i = 0; i < carve_tensor_count(want[o]); i++)
                if (carve_tensor_get(got[o], i) != carve_tensor_get(want[o], i)) {
                    t_check(false, __FILE__, __LINE__, "output %d element %zu: onednn %.9g, reference %.9g", o, i,
                              carve_tensor_get(got[o], i), carve_tensor_get(want[o], i));
                    break;
                }
    }
    for (int o = 0; o < 4; o++) {
        carve_tensor_free(want[o]);
        carve_tensor_free(got[o]);
    }
    dt_free(&t);
}

TEST(dynquant_standalone_exact)
{
    /* DynamicQuantizeLinear alone, on seeded data, on data with half-way
     * points (x / scale at k + 0.5 round to even), all zeros (scale 1),
     * NaNs (skipped by the range, quantized to 0 by both) in the vector
     * blocks and the tail of the range's loop */
    for (int v = 0; v < 4; v++) {
        dt t;
        dt_init(&t, 11, 20 + (unsigned)v);
        carve_value_id x = dt_input(&t, "x", 4, D(2, 5, 9, 17), -3.0f, 1.0f);
        carve_node_id n = dt_node(&t, "DynamicQuantizeLinear", 1, IDS(x), 3);
        for (size_t i = 0; i < 3; i++)
            dt_output(&t, out(&t, n, i));
        REQUIRE(dt_finish(&t));
        float *xv = carve_tensor_data(t.in[0], NULL);
        size_t cnt = carve_tensor_count(t.in[0]);
        for (size_t i = 0; v > 0 && i < cnt; i++)
            /* min -255/2 and max 255/2: scale 1, zero point 127.5 -> 128 */
            xv[i] = v == 2 ? 0.0f : i == 0 ? -127.5f : i == 1 ? 127.5f : (float)((int)(i % 255) - 127) + 0.5f;
        if (v == 3)
            xv[5] = xv[700] = xv[cnt - 2] = NAN;
        DT_RUN(&t, EXACT);
        dt_free(&t);
    }
}

TEST(convinteger_int32_output)
{
    /* a ConvInteger read by no Cast gives int32, exact while its sums stay
     * below 2^24 */
    dt t;
    dt_init(&t, 11, 30);
    carve_value_id x = dt_input_int(&t, "x", CARVE_UINT8, 4, D(1, 4, 6, 6), 0, 255, false);
    carve_value_id w = weights_u8(&t, 8, 4, 3, 0, 255, false);
    uint8_t z = 128;
    carve_value_id zw = dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &z, 1);
    uint8_t zx = 3;
    carve_value_id zxv = dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &zx, 1);
    carve_node_id ci = dt_node(&t, "ConvInteger", 4, IDS(x, w, zxv, zw), 1);
    carve_node_set_attr_ints(t.m, ci, "pads", 4, D(1, 1, 1, 1));
    dt_output(&t, out(&t, ci, 0));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, EXACT);
    dt_free(&t);
}

TEST(convinteger_int32_beyond_2_24_refused)
{
    /* int32 output whose sums can pass 2^24: compile refuses naming it */
    dt t;
    dt_init(&t, 11, 31);
    carve_value_id x = dt_input_int(&t, "x", CARVE_UINT8, 4, D(1, 64, 5, 5), 0, 255, true);
    carve_value_id w = weights_u8(&t, 4, 64, 3, 0, 255, true);
    uint8_t z = 128;
    carve_value_id zw = dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &z, 1);
    carve_node_id ci = dt_node(&t, "ConvInteger", 4, IDS(x, w, CARVE_NONE, zw), 1);
    dt_output(&t, out(&t, ci, 0));
    REQUIRE(dt_finish(&t));
    void *h;
    carve_backend_refusal *r;
    carve_status s = dt_compile(&t, "test", &h, &r);
    CHECK(s == CARVE_ERR_UNSUPPORTED);
    CHECK(h == NULL);
    t_check(strstr(r->message, "2^24") && strstr(r->message, "ConvInteger"), __FILE__, __LINE__, "message: %s",
            r->message);
    CHECK(r->n_nodes == 1 && r->nodes[0] == ci);
    free(r);
    dt_free(&t);
}

TEST(refusals)
{
    dt t;
    dt_init(&t, 11, 40);
    carve_value_id x = dt_input_int(&t, "x", CARVE_UINT8, 4, D(1, 4, 6, 6), 0, 255, false);
    /* weight 255 with zero point 0: w - z_w = 255 needs three int8 terms */
    uint8_t z0 = 0;
    carve_value_id w = weights_u8(&t, 2, 4, 1, 255, 255, false);
    carve_node_id a = dt_node(&t, "ConvInteger", 4,
                              IDS(x, w, CARVE_NONE, dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &z0, 1)), 1);
    /* group 2 */
    carve_node_id g = dt_node(&t, "ConvInteger", 2, IDS(x, weights_u8(&t, 2, 2, 1, 0, 100, false)), 1);
    carve_node_set_attr_int(t.m, g, "group", 2);
    /* runtime weights */
    carve_value_id wr = dt_input_int(&t, "w", CARVE_UINT8, 4, D(2, 4, 1, 1), 0, 255, false);
    carve_node_id rw = dt_node(&t, "ConvInteger", 2, IDS(x, wr), 1);
    /* Cast to another type than float */
    carve_node_id c = dt_node(&t, "Cast", 1, IDS(out(&t, a, 0)), 1);
    carve_node_set_attr_int(t.m, c, "to", CARVE_INT64);
    dt_output(&t, out(&t, g, 0));
    dt_output(&t, out(&t, rw, 0));
    dt_output(&t, out(&t, c, 0));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, a, "unsupported_input", "two int8 terms");
    DT_REFUSED(&t, g, "unsupported_attribute", "group 2");
    DT_REFUSED(&t, rw, "unsupported_input", "must be a uint8 or int8 constant");
    DT_REFUSED(&t, c, "unsupported_dtype", "Cast from int32 to int64");
    dt_free(&t);
}

/* No VNNI (oneDNN limited to AVX2 before its first call): ConvInteger is
 * refused, naming why. */
TEST(refuse_without_vnni)
{
    setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
    dt t;
    dq_case q = {4, 4, 1, 5, 5, 1, 0, 1, 0, 255, 121, false, -1.0f, 1.0f};
    dt_init(&t, 11, 41);
    carve_node_id ci = dq_model(&t, &q);
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, ci, "unsupported_dtype", "oneDNN ISA without VNNI");
    dt_free(&t);
}

/* 2-D linear Resize runs as a host step that rounds as the reference does
 * (src/ops/k_resize.c): bit-identical, on the plain layout and on the
 * channels-last one the int8 convolutions leave, by scales and by sizes. */
TEST(resize_linear_bit_exact)
{
    for (int v = 0; v < 3; v++) {
        dt t;
        dt_init(&t, 13, 50 + (unsigned)v);
        carve_value_id x;
        if (v < 2) {
            x = dt_input(&t, "x", 4, D(1, 3, 7, 9), -2.0f, 2.0f);
        } else { /* after a dynamically quantized convolution: channels last */
            dq_case q = {8, 12, 3, 7, 9, 1, 1, 1, 0, 255, 121, false, -1.0f, 3.0f};
            carve_node_id dql;
            dq_build(&t, &q, &x, &dql);
        }
        carve_node_id r;
        if (v == 1) { /* sizes 17 x 20: scales 17/7, 20/9 */
            int64_t sz[4] = {1, 3, 17, 20};
            carve_value_id sizes = dt_const_i64(&t, "sizes", 4, sz);
            r = dt_node(&t, "Resize", 4, IDS(x, CARVE_NONE, CARVE_NONE, sizes), 1);
            carve_node_set_attr_string(t.m, r, "mode", "linear");
        } else {
            r = dt_resize(&t, x, "linear", v ? "pytorch_half_pixel" : "half_pixel", NULL, 2.0f);
        }
        dt_output(&t, out(&t, r, 0));
        REQUIRE(dt_finish(&t));
        DT_RUN(&t, EXACT);
        dt_free(&t);
    }
}

/* MatMulInteger, as dynamically quantized linear layers write it:
 * x -> DynamicQuantizeLinear -> MatMulInteger(B_u8 [K, N], z_x, z_b) ->
 * Cast -> Mul(s_x * s_b) -> Add(bias [N]); B's rows with w - z_b outside
 * int8 split (A's columns read twice), zero points per tensor or per
 * column; bit-identical. */
static void mm_case(int rank, int64_t k, int64_t nn, int zb, bool extreme, unsigned seed, const char *file, int line)
{
    dt t;
    dt_init(&t, 11, seed);
    const int64_t *xd = rank == 3 ? D(2, 5, k) : D(7, k);
    carve_value_id x = dt_input(&t, "x", rank, xd, -1.0f, 3.0f);
    carve_node_id dql = dt_node(&t, "DynamicQuantizeLinear", 1, IDS(x), 3);
    size_t nb = (size_t)(k * nn);
    uint8_t *bw = malloc(nb);
    for (size_t i = 0; i < nb; i++) {
        unsigned u = rnd(&t);
        bw[i] = (uint8_t)(extreme ? (u & 1 ? 255 : 1) : u % 256);
    }
    carve_value_id bv = dt_const_data(&t, NULL, CARVE_UINT8, 2, D(k, nn), bw, nb);
    free(bw);
    carve_value_id zv;
    if (zb >= 0) {
        uint8_t z = (uint8_t)zb;
        zv = dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &z, 1);
    } else {
        uint8_t z[64];
        for (int64_t i = 0; i < nn; i++)
            z[i] = (uint8_t)(110 + 3 * i % 40);
        zv = dt_const_data(&t, NULL, CARVE_UINT8, 1, D(nn), z, (size_t)nn);
    }
    carve_node_id mm = dt_node(&t, "MatMulInteger", 4, IDS(out(&t, dql, 0), bv, out(&t, dql, 2), zv), 1);
    carve_node_id cast = dt_node(&t, "Cast", 1, IDS(out(&t, mm, 0)), 1);
    carve_node_set_attr_int(t.m, cast, "to", CARVE_FLOAT);
    float ws = 0.0113f;
    carve_value_id s = dt_op2(&t, "Mul", out(&t, dql, 1), dt_const_f32(&t, "b_scale", 1, &ws));
    carve_value_id y = dt_op2(&t, "Mul", out(&t, cast, 0), s);
    dt_output(&t, dt_op2(&t, "Add", y, dt_const(&t, "bias", 1, D(nn), -0.5f, 0.5f)));
    if (t_check(dt_finish(&t), file, line, "model")) {
        if (extreme) { /* x all 1: quantized 255, sums about K x 127 x 255 */
            float *xv = carve_tensor_data(t.in[0], NULL);
            for (size_t i = 0; i < carve_tensor_count(t.in[0]); i++)
                xv[i] = 1.0f;
        }
        dt_check_run(&t, EXACT, file, line);
    }
    dt_free(&t);
}

TEST(matmulinteger_exact)
{
    mm_case(3, 64, 24, 121, false, 60, __FILE__, __LINE__); /* split rows */
    mm_case(2, 40, 16, -1, false, 61, __FILE__, __LINE__);  /* per-column zero points */
    mm_case(2, 600, 8, 1, true, 62, __FILE__, __LINE__);    /* sums about 1.9e7 > 2^24 */
}

TEST(matmulinteger_int32_output)
{
    dt t;
    dt_init(&t, 11, 63);
    carve_value_id a = dt_input_int(&t, "a", CARVE_UINT8, 2, D(5, 32), 0, 255, false);
    uint8_t bw[32 * 12];
    for (size_t i = 0; i < sizeof bw; i++)
        bw[i] = (uint8_t)(rnd(&t) % 256);
    carve_value_id b2 = dt_const_data(&t, NULL, CARVE_UINT8, 2, D(32, 12), bw, sizeof bw);
    uint8_t za = 7, zb = 130;
    carve_node_id mm = dt_node(&t, "MatMulInteger", 4,
                               IDS(a, b2, dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &za, 1),
                                   dt_const_data(&t, NULL, CARVE_UINT8, 0, NULL, &zb, 1)),
                               1);
    dt_output(&t, out(&t, mm, 0));
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, EXACT);
    dt_free(&t);
}

/*
 * test_refuse.c: what the oneDNN backend refuses, with the reason code and
 * a message naming the attribute or input; compile refusals naming the
 * node; the fusions and layouts a compiled partition really uses.
 */
#include "dntest.h"

#include <stdlib.h>
#include <string.h>

#include "backends/onednn/dn.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define SETI(t, n, name, ...)                                                                              \
    carve_node_set_attr_ints((t)->m, (n), (name), sizeof((const int64_t[]){__VA_ARGS__}) / 8,              \
                             (const int64_t[]){__VA_ARGS__})

TEST(maxpool_indices_refused)
{
    dt t;
    dt_init(&t, 13, 1);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 2, 6, 6), -1, 1);
    carve_node_id n = dt_node(&t, "MaxPool", 1, &x, 2);
    SETI(&t, n, "kernel_shape", 2, 2);
    dt_output(&t, carve_node_output(t.m, n, 0));
    dt_output(&t, carve_node_output(t.m, n, 1));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, n, "unsupported_attribute", "Indices");
    dt_free(&t);
}

TEST(avgpool_ceil_include_pad_refused)
{
    dt t;
    dt_init(&t, 13, 2);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 2, 7, 7), -1, 1);
    carve_node_id n = dt_node(&t, "AveragePool", 1, &x, 1);
    SETI(&t, n, "kernel_shape", 2, 2);
    SETI(&t, n, "strides", 2, 2);
    carve_node_set_attr_int(t.m, n, "ceil_mode", 1);
    carve_node_set_attr_int(t.m, n, "count_include_pad", 1);
    dt_output(&t, carve_node_output(t.m, n, 0));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, n, "unsupported_attribute", "count_include_pad");
    dt_free(&t);
}


TEST(resize_semantics_refused)
{
    dt t;
    dt_init(&t, 13, 3);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 2, 5, 6), -1, 1);
    carve_node_id ac = dt_resize(&t, x, "linear", "align_corners", NULL, 2);
    carve_node_id cu = dt_resize(&t, x, "cubic", NULL, NULL, 2);
    carve_node_id ce = dt_resize(&t, x, "nearest", "asymmetric", "ceil", 2);
    carve_node_id odd = dt_resize(&t, x, "linear", NULL, NULL, 0.5f); /* 5 -> 2: scale 0.5, ratio 0.4 */
    carve_node_id tf = dt_resize(&t, x, "linear", "tf_crop_and_resize", NULL, 2);
    carve_node_id all[] = {ac, cu, ce, odd, tf};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        dt_output(&t, carve_node_output(t.m, all[i], 0));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, ac, "unsupported_attribute", "align_corners");
    DT_REFUSED(&t, cu, "unsupported_attribute", "mode = 'cubic'");
    DT_REFUSED(&t, ce, "unsupported_attribute", "nearest_mode = 'ceil'");
    DT_REFUSED(&t, odd, "unsupported_attribute", "other source positions");
    DT_REFUSED(&t, tf, "unsupported_attribute", "tf_crop_and_resize");
    dt_free(&t);
}

TEST(symbolic_dim_refused)
{
    dt t;
    dt_init(&t, 13, 4);
    carve_dim d[2] = {{-1, "batch"}, {8, NULL}};
    carve_value_id x = carve_graph_add_input(t.m, t.g, "x", CARVE_FLOAT, 2, d);
    carve_value_id y = dt_op1(&t, "Relu", x);
    dt_output(&t, y);
    /* the integer ops (ops_dynq.c) check their shapes the same way */
    carve_node_id q = dt_node(&t, "DynamicQuantizeLinear", 1, IDS(x), 3);
    dt_output(&t, carve_node_output(t.m, q, 0));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, carve_value_producer(t.m, y), "dynamic_shape", "input 0 'x' dim 0 is symbolic: batch");
    DT_REFUSED(&t, q, "dynamic_shape", "input 0 'x' dim 0 is symbolic: batch; fix it with --dim");
    dt_free(&t);
}

TEST(dtype_and_int8_refused)
{
    dt t;
    dt_init(&t, 13, 5);
    carve_dim d[1] = {{4, NULL}};
    carve_value_id x = carve_graph_add_input(t.m, t.g, "x", CARVE_INT32, 1, d);
    carve_value_id y = dt_op2(&t, "Add", x, x);
    dt_output(&t, y);
    /* QLinear ops: int8 goes through QDQ node units (test_int8.c);
     * ConvInteger / MatMulInteger are taken (test_dynq.c) */
    carve_value_id a = dt_input_int(&t, "a", CARVE_UINT8, 2, D(2, 4), 0, 255, false);
    uint8_t bv[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    carve_value_id bm = dt_const_data(&t, "b", CARVE_UINT8, 2, D(4, 3), bv, 12);
    float one = 1.0f;
    uint8_t z = 0;
    carve_value_id sc = dt_const_f32(&t, "s", 1, &one), zp = dt_const_data(&t, "z", CARVE_UINT8, 0, NULL, &z, 1);
    carve_node_id q = dt_node(&t, "QLinearMatMul", 8, IDS(a, sc, zp, bm, sc, zp, sc, zp), 1);
    dt_output(&t, carve_node_output(t.m, q, 0));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, carve_value_producer(t.m, y), "unsupported_dtype", "int32");
    DT_REFUSED(&t, q, "unsupported_dtype", "QLinearMatMul: the onednn backend takes int8 as QDQ node units");
    dt_free(&t);
}

TEST(broadcast_and_constant_rules_refused)
{
    dt t;
    dt_init(&t, 17, 6);
    carve_value_id x = dt_input(&t, "x", 2, D(4, 1), -1, 1);
    carve_value_id y = dt_input(&t, "y", 2, D(1, 5), -1, 1);
    carve_value_id both = dt_op2(&t, "Add", x, y); /* both broadcast */
    dt_output(&t, both);
    carve_value_id z = dt_input(&t, "z", 2, D(4, 5), -1, 1);
    carve_value_id sub = dt_op2(&t, "Sub", x, z); /* the first operand broadcasts, not commutative */
    dt_output(&t, sub);
    carve_value_id c = dt_input(&t, "c", 1, D(5), -1, 1);
    carve_value_id w = dt_const(&t, NULL, 2, D(5, 5), -1, 1);
    carve_node_id gemm = dt_node(&t, "Gemm", 3, IDS(z, w, c), 1);
    dt_output(&t, carve_node_output(t.m, gemm, 0));
    carve_value_id s1 = dt_const(&t, NULL, 1, D(1), 1, 2);
    carve_node_id ln = dt_node(&t, "LayerNormalization", 2, IDS(z, s1), 1);
    dt_output(&t, carve_node_output(t.m, ln, 0));
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, carve_value_producer(t.m, both), "unsupported_input", "broadcasts its first input");
    DT_REFUSED(&t, carve_value_producer(t.m, sub), "unsupported_input", "not commutative");
    DT_REFUSED(&t, gemm, "unsupported_input", "input C is computed at run time");
    DT_REFUSED(&t, ln, "unsupported_input", "Scale");
    dt_free(&t);
}

TEST(unmapped_op_refused)
{
    dt t;
    dt_init(&t, 13, 7);
    carve_value_id x = dt_input(&t, "x", 1, D(4), -1, 1);
    carve_value_id y = dt_op1(&t, "Floor", x);
    dt_output(&t, y);
    REQUIRE(dt_finish(&t));
    DT_REFUSED(&t, carve_value_producer(t.m, y), "unsupported_op", "no mapping for Floor");
    dt_free(&t);
}

/* compile() of a body holding a node it cannot build refuses the partition
 * naming that node (and no other), never crashing. */
TEST(compile_refusal_names_node)
{
    dt t;
    dt_init(&t, 13, 8);
    carve_value_id x = dt_input(&t, "x", 2, D(3, 4), -1, 1);
    carve_value_id r = dt_op1(&t, "Relu", x);
    carve_value_id f = dt_op1(&t, "Floor", r);
    dt_output(&t, dt_op1(&t, "Tanh", f));
    REQUIRE(dt_finish(&t));
    carve_backend_refusal *ref;
    void *h;
    CHECK_INT(dt_compile(&t, "part0", &h, &ref), CARVE_ERR_UNSUPPORTED);
    CHECK(h == NULL);
    CHECK_INT(ref->n_nodes, 1);
    CHECK(ref->nodes[0] == carve_value_producer(t.m, f));
    CHECK_CONTAINS(ref->message, "Floor");
    CHECK_CONTAINS(ref->message, "unsupported_op");
    free(ref);
    dt_free(&t);
}

TEST(run_checks_its_inputs)
{
    dt t;
    dt_init(&t, 13, 9);
    carve_value_id x = dt_input(&t, "x", 2, D(3, 4), -1, 1);
    dt_output(&t, dt_op1(&t, "Relu", x));
    REQUIRE(dt_finish(&t));
    const carve_backend *be = cv_onednn_backend();
    carve_backend_refusal *ref;
    void *h;
    REQUIRE(dt_compile(&t, "part0", &h, &ref) == CARVE_OK);
    carve_tensor *wrong = carve_tensor_new(CARVE_FLOAT, 2, D(4, 4)), *out[1] = {NULL};
    char msg[256];
    CHECK_INT(be->run(be->user, h, &wrong, 1, out, 1, msg, sizeof msg), CARVE_ERR_ARG);
    CHECK_CONTAINS(msg, "input 0");
    CHECK(out[0] == NULL);
    CHECK_INT(be->run(be->user, h, &wrong, 2, out, 1, msg, sizeof msg), CARVE_ERR_ARG);
    carve_tensor_free(wrong);
    be->release(be->user, h);
    free(ref);
    dt_free(&t);
}

/* The residual block compiles into two convolutions whose Relu and Add are
 * post-ops (eltwise, and sum: no separate eltwise or binary step), in the
 * layout oneDNN picks: one reorder in, one copy of the addend (the second
 * convolution reads it too, so the sum cannot work in place), no reorder
 * between the convolutions. */
TEST(fusion_and_layouts_in_the_program)
{
    dt t;
    dt_init(&t, 13, 10);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 16, 8, 8), -1, 1);
    carve_value_id w1 = dt_const(&t, NULL, 4, D(16, 16, 3, 3), -1, 1), w2 = dt_const(&t, NULL, 4, D(16, 16, 3, 3), -1, 1);
    carve_node_id c1 = dt_node(&t, "Conv", 2, IDS(x, w1), 1);
    SETI(&t, c1, "pads", 1, 1, 1, 1);
    carve_value_id r = dt_op1(&t, "Relu", carve_node_output(t.m, c1, 0));
    carve_node_id c2 = dt_node(&t, "Conv", 2, IDS(r, w2), 1);
    SETI(&t, c2, "pads", 1, 1, 1, 1);
    carve_value_id sum = dt_op2(&t, "Add", carve_node_output(t.m, c2, 0), r);
    dt_output(&t, dt_op1(&t, "Relu", sum));
    REQUIRE(dt_finish(&t));
    const carve_backend *be = cv_onednn_backend();
    carve_backend_refusal *ref;
    void *h;
    REQUIRE(dt_compile(&t, "part0", &h, &ref) == CARVE_OK);
    dn_prog *prog = h;
    size_t convs = 0, reorders = 0, others = 0;
    for (size_t i = 0; i < prog->n_steps; i++) {
        const_dnnl_primitive_desc_t pd;
        dnnl_primitive_get_primitive_desc(prog->steps[i].prim, &pd);
        dnnl_primitive_kind_t kind;
        dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
        if (kind == dnnl_convolution)
            convs++;
        else if (kind == dnnl_reorder)
            reorders++;
        else
            others++;
    }
    CHECK_INT(convs, 2);
    CHECK_INT(others, 0);
    CHECK_INT(reorders, 2);
    be->release(be->user, h);
    free(ref);
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

/* A residual Add whose other operand is a reshaped view of a value read
 * again later: the sum post-op must not write into the shared buffer (a
 * view is never summed into in place; here the layouts differ too). */
TEST(sum_never_writes_a_shared_buffer)
{
    dt t;
    dt_init(&t, 13, 11);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 8, 6, 6), -1, 1);
    carve_value_id e = dt_op1(&t, "Relu", x);
    carve_value_id shape = dt_const_i64(&t, "shape", 4, D(1, 8, 6, 6));
    carve_value_id r = dt_op2(&t, "Reshape", e, shape); /* a view of e */
    carve_value_id w = dt_const(&t, NULL, 4, D(8, 8, 3, 3), -1, 1);
    carve_node_id c = dt_node(&t, "Conv", 2, IDS(e, w), 1);
    SETI(&t, c, "pads", 1, 1, 1, 1);
    dt_output(&t, dt_op2(&t, "Add", carve_node_output(t.m, c, 0), r));
    dt_output(&t, dt_op1(&t, "Sigmoid", e)); /* e read after the sum */
    REQUIRE(dt_finish(&t));
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

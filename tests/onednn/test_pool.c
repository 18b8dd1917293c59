/*
 * test_pool.c: the buffers of a compiled partition are shared by values
 * whose lives do not overlap (src/backends/onednn/pool.c): the arena is
 * smaller than the values' buffers together, and results stay the
 * reference's: a value read again far later (a skip connection) keeps its
 * buffer, two runs of one handle agree.
 */
#include "dntest.h"

#include <stdlib.h>
#include <string.h>

#include "backends/onednn/dn.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})

/* x [1, c, 16, 16] -> n x (Conv 3x3 pad 1 -> Sigmoid), then Add of the
 * first Sigmoid's output (alive across the whole chain). */
static void chain(dt *t, int64_t c, int n)
{
    carve_value_id x = dt_input(t, "x", 4, D(1, c, 16, 16), -1, 1), first = CARVE_NONE;
    for (int i = 0; i < n; i++) {
        carve_value_id w = dt_const(t, NULL, 4, D(c, c, 3, 3), -0.2f, 0.2f);
        carve_node_id conv = dt_node(t, "Conv", 2, IDS(x, w), 1);
        carve_node_set_attr_ints(t->m, conv, "pads", 4, D(1, 1, 1, 1));
        x = dt_op1(t, "Sigmoid", carve_node_output(t->m, conv, 0));
        /* a Mul by 2 after each: an op of its own between convolutions */
        float two = 2.0f;
        x = dt_op2(t, "Mul", x, dt_const_f32(t, NULL, 1, &two));
        if (!i)
            first = x;
    }
    dt_output(t, dt_op2(t, "Add", x, first));
}

static void pool_case(int64_t c, unsigned seed)
{
    dt t;
    dt_init(&t, 13, seed);
    chain(&t, c, 8);
    REQUIRE(dt_finish(&t));
    const carve_backend *be = cv_onednn_backend();
    carve_backend_refusal *ref;
    void *h;
    REQUIRE(dt_compile(&t, "pool", &h, &ref) == CARVE_OK);
    dn_prog *prog = h;
    size_t one = (size_t)c * 16 * 16 * 4;
    printf("c %lld: buffers %zu bytes alone, arena %zu (one value %zu)\n", (long long)c, prog->bufs_total,
           prog->arena_size, one);
    CHECK(prog->bufs_total >= 8 * one);
    CHECK(prog->arena_size * 2 <= prog->bufs_total);
    /* two runs of the same handle give the same bytes */
    carve_tensor *a[1] = {0}, *b2[1] = {0};
    char msg[256];
    CHECK(be->run(be->user, h, t.in, (size_t)t.n_in, a, 1, msg, sizeof msg) == CARVE_OK);
    CHECK(be->run(be->user, h, t.in, (size_t)t.n_in, b2, 1, msg, sizeof msg) == CARVE_OK);
    if (a[0] && b2[0])
        CHECK(!memcmp(carve_tensor_data(a[0], NULL), carve_tensor_data(b2[0], NULL), carve_tensor_count(a[0]) * 4));
    carve_tensor_free(a[0]);
    carve_tensor_free(b2[0]);
    be->release(be->user, h);
    free(ref);
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

TEST(arena_smaller_results_kept)
{
    pool_case(16, 1);
}

TEST(channels_not_a_multiple_of_16)
{
    pool_case(24, 2);
}

/* A residual Add whose addend was read before by other nodes: the sum
 * post-op accumulates into the addend's buffer (its last reader) instead
 * of a copy; results stay the reference's. */
TEST(sum_in_place_after_earlier_readers)
{
    dt t;
    dt_init(&t, 13, 3);
    carve_value_id x = dt_input(&t, "x", 4, D(1, 16, 8, 8), -1, 1);
    carve_value_id r = x;
    carve_value_id c[3];
    for (int i = 0; i < 3; i++) {
        carve_value_id w = dt_const(&t, NULL, 4, D(16, 16, 3, 3), -0.2f, 0.2f);
        carve_node_id conv = dt_node(&t, "Conv", 2, IDS(i == 2 ? c[1] : i == 1 ? r : x, w), 1);
        carve_node_set_attr_ints(t.m, conv, "pads", 4, D(1, 1, 1, 1));
        c[i] = carve_node_output(t.m, conv, 0);
        if (!i) {
            r = dt_op1(&t, "Relu", c[0]);
            dt_output(&t, dt_op1(&t, "Sigmoid", r)); /* r read before the sum */
        }
    }
    dt_output(&t, dt_op1(&t, "Relu", dt_op2(&t, "Add", c[2], r)));
    REQUIRE(dt_finish(&t));
    const carve_backend *be = cv_onednn_backend();
    carve_backend_refusal *ref;
    void *h;
    REQUIRE(dt_compile(&t, "sum", &h, &ref) == CARVE_OK);
    dn_prog *prog = h;
    size_t reorders = 0;
    for (size_t i = 0; i < prog->n_steps; i++) {
        const_dnnl_primitive_desc_t pd;
        dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
        if (prog->steps[i].prim && dnnl_primitive_get_primitive_desc(prog->steps[i].prim, &pd) == dnnl_success)
            dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
        reorders += kind == dnnl_reorder;
    }
    CHECK_INT(reorders, 1); /* x into the convolution's layout; no copy of r for the sum */
    be->release(be->user, h);
    free(ref);
    DT_RUN(&t, DT_TOL_ACC);
    dt_free(&t);
}

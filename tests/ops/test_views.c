/* test_views.c: Reshape, Flatten, Squeeze and Unsqueeze, and a Slice
 * that takes one contiguous run of bytes, make views (the same bytes, held
 * through a reference to their owner, src/ops/val.c) instead of copies. A view that is a graph output outlives the run and
 * the run's buffer pool (its bytes are copied out of the pool, even when
 * its owner is an output too and was moved first); a view of the caller's
 * input outlives the caller's reference to it; values equal the copies'
 * (checked element by element against the computed Relu). */
#include "opstest.h"

#include <math.h>
#include <string.h>

static carve_value_id node1(carve_model *m, const char *op, const char *name, size_t n_in, const carve_value_id *in)
{
    const char *outs[1] = {name};
    carve_node_id n = carve_graph_add_node(m, 0, op, "", name, n_in, in, 1, outs);
    OT_CHECK(n != CARVE_NONE, "add %s: %s", name, carve_errmsg(carve_model_ctx(m)));
    return carve_node_output(m, n, 0);
}

static float relu(float v) { return v < 0 ? 0 : v; }

static void test_view_outputs(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 13);
    int64_t xd[3] = {4, 8, 16}, shape[2] = {32, 16}, axes[1] = {0};
    carve_dim d[3] = {{4, NULL}, {8, NULL}, {16, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 3, d);
    carve_value_id s = carve_graph_add_initializer(m, 0, "shape", CARVE_INT64, 1, (int64_t[]){2}, shape, sizeof shape);
    carve_value_id ax = carve_graph_add_initializer(m, 0, "axes", CARVE_INT64, 1, (int64_t[]){1}, axes, sizeof axes);
    carve_value_id r = node1(m, "Relu", "r", 1, &x);
    carve_value_id in1[2] = {r, s}, in2[2] = {x, s}, in3[2] = {r, ax};
    carve_value_id v1 = node1(m, "Reshape", "view_of_relu", 2, in1);   /* owner is an output too */
    carve_value_id v2 = node1(m, "Reshape", "view_of_input", 2, in2);  /* the caller's bytes */
    carve_value_id v3 = node1(m, "Unsqueeze", "view_of_view", 2, in3); /* owner not an output */
    carve_value_id v4 = node1(m, "Flatten", "view_of_view2", 1, &v3);
    carve_graph_add_output(m, 0, v1);
    carve_graph_add_output(m, 0, r);
    carve_graph_add_output(m, 0, v2);
    carve_graph_add_output(m, 0, v4);
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "verifies: %s", carve_errmsg(ctx));
    for (int round = 0; round < 2; round++) {
        cv_val *in = ot_random(CARVE_FLOAT, 3, xd, 5 + (uint32_t)round, -2, 2);
        float want[512];
        memcpy(want, in->data, sizeof want);
        carve_tensor *out[4] = {NULL};
        OT_CHECK(carve_model_run(m, &in, out) == CARVE_OK, "run: %s", carve_errmsg(ctx));
        /* the caller lets go of its input and the model of its pool */
        carve_tensor_free(in);
        carve_model_trim(m);
        /* a run in between reuses the pool's buffers */
        cv_val *other = ot_random(CARVE_FLOAT, 3, xd, 99, -2, 2);
        carve_tensor *junk[4] = {NULL};
        OT_CHECK(carve_model_run(m, &other, junk) == CARVE_OK, "second run");
        for (int i = 0; i < 4; i++)
            carve_tensor_free(junk[i]);
        carve_tensor_free(other);
        static const int64_t want_rank[4] = {2, 3, 2, 2};
        for (int i = 0; i < 4; i++) {
            OT_CHECK(out[i] && carve_tensor_rank(out[i]) == want_rank[i] && carve_tensor_count(out[i]) == 512,
                     "output %d: rank %d, 512 elements", i, out[i] ? carve_tensor_rank(out[i]) : -1);
            if (!out[i] || carve_tensor_count(out[i]) != 512)
                continue;
            const float *got = carve_tensor_data(out[i], NULL);
            size_t bad = 512;
            for (size_t j = 0; j < 512 && bad == 512; j++) {
                float e = i == 2 ? want[j] : relu(want[j]);
                if (memcmp(&got[j], &e, sizeof e))
                    bad = j;
            }
            OT_CHECK(bad == 512, "round %d output %d: element %zu differs", round, i, bad);
        }
        for (int i = 0; i < 4; i++)
            carve_tensor_free(out[i]);
    }
    carve_model_free(m);
}

/* Slices of x [2,6,5]: rows 1..4 of image 1 (one run: a view), then a
 * Reshape of that view, and columns 1..3 (strided: a copy), all outputs;
 * and a view read by the Add whose result is the last output. */
static void test_slice_views(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 13);
    int64_t xd[3] = {2, 6, 5};
    carve_dim d[3] = {{2, NULL}, {6, NULL}, {5, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 3, d);
    int64_t one[1] = {1};
    int64_t s0[2] = {1, 1}, e0[2] = {2, 4}, a0[2] = {0, 1}, s1[1] = {1}, e1[1] = {3}, a1[1] = {2}, shp[1] = {15};
    carve_value_id r = node1(m, "Relu", "r", 1, &x);
    carve_value_id run_in[4] = {r, carve_graph_add_initializer(m, 0, "s0", CARVE_INT64, 1, (int64_t[]){2}, s0, 16),
                                carve_graph_add_initializer(m, 0, "e0", CARVE_INT64, 1, (int64_t[]){2}, e0, 16),
                                carve_graph_add_initializer(m, 0, "a0", CARVE_INT64, 1, (int64_t[]){2}, a0, 16)};
    carve_value_id v = node1(m, "Slice", "rows", 4, run_in); /* [1,3,5] */
    carve_value_id col_in[4] = {r, carve_graph_add_initializer(m, 0, "s1", CARVE_INT64, 1, one, s1, 8),
                                carve_graph_add_initializer(m, 0, "e1", CARVE_INT64, 1, one, e1, 8),
                                carve_graph_add_initializer(m, 0, "a1", CARVE_INT64, 1, one, a1, 8)};
    carve_value_id c = node1(m, "Slice", "cols", 4, col_in); /* [2,6,2] */
    carve_value_id rs_in[2] = {v, carve_graph_add_initializer(m, 0, "shp", CARVE_INT64, 1, one, shp, 8)};
    carve_value_id flat = node1(m, "Reshape", "flat", 2, rs_in);
    carve_value_id add_in[2] = {flat, flat};
    carve_value_id twice = node1(m, "Add", "twice", 2, add_in);
    carve_graph_add_output(m, 0, v);
    carve_graph_add_output(m, 0, c);
    carve_graph_add_output(m, 0, flat);
    carve_graph_add_output(m, 0, twice);
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "verifies: %s", carve_errmsg(ctx));
    cv_val *in = ot_random(CARVE_FLOAT, 3, xd, 17, -2, 2);
    float xs[60];
    memcpy(xs, in->data, sizeof xs);
    carve_tensor *out[4] = {NULL};
    OT_CHECK(carve_model_run(m, &in, out) == CARVE_OK, "run: %s", carve_errmsg(ctx));
    carve_tensor_free(in);
    carve_model_trim(m);
    cv_val *other = ot_random(CARVE_FLOAT, 3, xd, 18, -2, 2);
    carve_tensor *junk[4] = {NULL};
    OT_CHECK(carve_model_run(m, &other, junk) == CARVE_OK, "second run");
    for (int i = 0; i < 4; i++)
        carve_tensor_free(junk[i]);
    carve_tensor_free(other);
    bool ok = out[0] && out[1] && out[2] && out[3] && carve_tensor_count(out[0]) == 15 &&
              carve_tensor_count(out[1]) == 24 && carve_tensor_count(out[2]) == 15 && carve_tensor_count(out[3]) == 15;
    OT_CHECK(ok, "four outputs of 15, 24, 15, 15 elements");
    for (int i = 0; ok && i < 15; i++) {
        float want = relu(xs[30 + 5 + i]);
        const float *a = carve_tensor_data(out[0], NULL), *b = carve_tensor_data(out[2], NULL),
                    *t = carve_tensor_data(out[3], NULL);
        float w2 = want + want;
        OT_CHECK(!memcmp(&a[i], &want, 4) && !memcmp(&b[i], &want, 4) && !memcmp(&t[i], &w2, 4),
                 "rows view element %d", i);
    }
    for (int i = 0; ok && i < 24; i++) {
        float want = relu(xs[(i / 2) * 5 + 1 + i % 2]);
        OT_CHECK(!memcmp((const float *)carve_tensor_data(out[1], NULL) + i, &want, 4), "cols copy element %d", i);
    }
    for (int i = 0; i < 4; i++)
        carve_tensor_free(out[i]);
    carve_model_free(m);
}

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    test_view_outputs(ctx);
    test_slice_views(ctx);
    carve_ctx_free(ctx);
    return ot_finish();
}

/* make_example.c: builds carve's bundled example model with the library's
 * own graph-building API. It is small (a few KB) and exercises what later
 * passes care about: a convolution block, a Gemm with bias, a
 * LayerNormalization, a HardSwish, a Softmax, constant-only arithmetic, an
 * int64 shape computation and a bfloat16 round trip.
 *
 *   x[1,3,16,16] -> Conv -> Relu -> GlobalAveragePool -> Reshape(shape from
 *   int64 constants) -> Gemm(+bias) -> LayerNormalization -> HardSwish ->
 *   Add(constant-only arithmetic) -> Softmax -> y[1,16]
 *   y -> Cast(bfloat16) -> Cast(float) -> y_bf16
 */
#include "carve.h"

#include <stdio.h>
#include <stdlib.h>

static uint32_t seed = 12345;
static float rnd(void)
{
    seed = seed * 1664525u + 1013904223u;
    return ((float)(seed >> 8) / (float)(1u << 24)) * 2.0f - 1.0f;
}

static carve_value_id weights(carve_model *m, const char *name, int rank, const int64_t *dims, float scale)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    float *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = rnd() * scale;
    carve_value_id v = carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, rank, dims, w, n * sizeof *w);
    free(w);
    return v;
}

#define NODE(op, name, ins, outs) \
    carve_graph_add_node(m, 0, op, "", name, sizeof(ins) / sizeof *(ins), ins, sizeof(outs) / sizeof *(outs), outs)

static void check(carve_ctx *ctx, bool ok)
{
    if (!ok) {
        fprintf(stderr, "make_example: %s\n", carve_errmsg(ctx));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_example OUT.onnx\n");
        return 2;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    check(ctx, m != NULL);
    carve_model_set_opset(m, "", 17);
    carve_model_set_producer(m, "carve make_example", CARVE_VERSION);
    carve_model_set_doc(m, "carve's bundled example model");

    carve_dim xd[4] = {{1, NULL}, {3, NULL}, {16, NULL}, {16, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 4, xd);
    carve_value_id cw = weights(m, "conv.w", 4, (int64_t[]){8, 3, 3, 3}, 0.3f);
    carve_value_id cb = weights(m, "conv.b", 1, (int64_t[]){8}, 0.1f);
    carve_value_id gw = weights(m, "fc.w", 2, (int64_t[]){8, 16}, 0.5f);
    carve_value_id gb = weights(m, "fc.b", 1, (int64_t[]){16}, 0.1f);
    carve_value_id ls = weights(m, "ln.scale", 1, (int64_t[]){16}, 1.0f);
    carve_value_id lb = weights(m, "ln.bias", 1, (int64_t[]){16}, 0.1f);
    carve_value_id ca = weights(m, "const.a", 1, (int64_t[]){16}, 1.0f);
    carve_value_id cc = weights(m, "const.b", 1, (int64_t[]){16}, 1.0f);
    int64_t batch[1] = {1}, feat[1] = {-1};
    carve_value_id s0 = carve_graph_add_initializer(m, 0, "shape.batch", CARVE_INT64, 1, (int64_t[]){1}, batch, 8);
    carve_value_id s1 = carve_graph_add_initializer(m, 0, "shape.feat", CARVE_INT64, 1, (int64_t[]){1}, feat, 8);
    check(ctx, x != CARVE_NONE && cw != CARVE_NONE && s0 != CARVE_NONE && s1 != CARVE_NONE);

    carve_node_id n;
    n = NODE("Conv", "conv", ((carve_value_id[]){x, cw, cb}), ((const char *[]){"conv.out"}));
    check(ctx, n != CARVE_NONE);
    carve_node_set_attr_ints(m, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
    carve_node_set_attr_ints(m, n, "kernel_shape", 2, (int64_t[]){3, 3});
    carve_value_id v = carve_node_output(m, n, 0);
    v = carve_node_output(m, NODE("Relu", "relu", ((carve_value_id[]){v}), ((const char *[]){"relu.out"})), 0);
    v = carve_node_output(m, NODE("GlobalAveragePool", "pool", ((carve_value_id[]){v}), ((const char *[]){"pool.out"})), 0);
    /* int64 shape arithmetic on constants only: Concat([1], [-1]) */
    carve_value_id shp = carve_node_output(m, NODE("Concat", "shape.concat", ((carve_value_id[]){s0, s1}), ((const char *[]){"shape"})), 0);
    carve_node_set_attr_int(m, carve_value_producer(m, shp), "axis", 0);
    v = carve_node_output(m, NODE("Reshape", "flatten", ((carve_value_id[]){v, shp}), ((const char *[]){"flat"})), 0);
    n = NODE("Gemm", "fc", ((carve_value_id[]){v, gw, gb}), ((const char *[]){"fc.out"}));
    check(ctx, n != CARVE_NONE);
    carve_node_set_attr_float(m, n, "alpha", 1.0f);
    v = carve_node_output(m, n, 0);
    n = NODE("LayerNormalization", "ln", ((carve_value_id[]){v, ls, lb}), ((const char *[]){"ln.out"}));
    carve_node_set_attr_int(m, n, "axis", -1);
    carve_node_set_attr_float(m, n, "epsilon", 1e-5f);
    v = carve_node_output(m, n, 0);
    v = carve_node_output(m, NODE("HardSwish", "hswish", ((carve_value_id[]){v}), ((const char *[]){"hswish.out"})), 0);
    /* constant-only arithmetic: bias2 = const.a * const.b + const.a */
    carve_value_id k = carve_node_output(m, NODE("Mul", "const.mul", ((carve_value_id[]){ca, cc}), ((const char *[]){"const.ab"})), 0);
    k = carve_node_output(m, NODE("Add", "const.add", ((carve_value_id[]){k, ca}), ((const char *[]){"bias2"})), 0);
    v = carve_node_output(m, NODE("Add", "add.bias2", ((carve_value_id[]){v, k}), ((const char *[]){"logits"})), 0);
    n = NODE("Softmax", "softmax", ((carve_value_id[]){v}), ((const char *[]){"y"}));
    carve_node_set_attr_int(m, n, "axis", -1);
    carve_value_id y = carve_node_output(m, n, 0);
    n = NODE("Cast", "to_bf16", ((carve_value_id[]){y}), ((const char *[]){"y.bf16"}));
    carve_node_set_attr_int(m, n, "to", CARVE_BFLOAT16);
    n = NODE("Cast", "from_bf16", ((carve_value_id[]){carve_node_output(m, n, 0)}), ((const char *[]){"y_bf16"}));
    carve_node_set_attr_int(m, n, "to", CARVE_FLOAT);
    carve_value_id ybf = carve_node_output(m, n, 0);

    carve_dim yd[2] = {{1, NULL}, {16, NULL}};
    check(ctx, carve_value_set_type(m, y, CARVE_FLOAT, 2, yd) == CARVE_OK);
    check(ctx, carve_value_set_type(m, ybf, CARVE_FLOAT, 2, yd) == CARVE_OK);
    check(ctx, carve_graph_add_output(m, 0, y) == CARVE_OK);
    check(ctx, carve_graph_add_output(m, 0, ybf) == CARVE_OK);
    check(ctx, carve_model_verify(m) == CARVE_OK);
    check(ctx, carve_model_save_file(m, argv[1], NULL) == CARVE_OK);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return 0;
}

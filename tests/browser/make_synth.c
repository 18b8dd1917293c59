/* make_synth.c: writes the 43,000-node synthetic graph of bench/bench_lower.c
 * (its transformer shape: blocks of LayerNormalization, Q/K/V MatMuls,
 * Softmax, residual Adds, a Gemm MLP) as an ONNX file, for the partition
 * map's browser test (43,010 nodes: 2,530 blocks of 17), and the names of the LayerNormalizations that bench
 * skips to CPU (one block in four; they are decomposed) as a comma-separated
 * list for `carve lower --cpu-nodes`. One block in four has a Cosh, which
 * htp lacks, so the graph has hundreds of partitions and CPU nodes.
 *
 *   make_synth OUT.onnx SKIP.txt [NODES]       (NODES: 43000) */
#include "carve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static carve_value_id op(carve_model *m, const char *name, size_t n_in, const carve_value_id *in, uint32_t *k)
{
    char out[32];
    snprintf(out, sizeof out, "v%u", (*k)++);
    const char *outs[1] = {out};
    return carve_node_output(m, carve_graph_add_node(m, 0, name, "", NULL, n_in, in, 1, outs), 0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: make_synth OUT.onnx SKIP.txt [NODES]\n");
        return 2;
    }
    uint32_t n = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 43000;
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_dim d[2] = {{1, NULL}, {16, NULL}};
    carve_value_id v = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, d);
    float w[256], g[16], z[16];
    for (int i = 0; i < 256; i++)
        w[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < 16; i++)
        g[i] = 1, z[i] = 0;
    int64_t wd[2] = {16, 16}, vd[1] = {16};
    carve_value_id W = carve_graph_add_initializer(m, 0, "W", CARVE_FLOAT, 2, wd, w, sizeof w);
    carve_value_id G = carve_graph_add_initializer(m, 0, "gamma", CARVE_FLOAT, 1, vd, g, sizeof g);
    carve_value_id B = carve_graph_add_initializer(m, 0, "beta", CARVE_FLOAT, 1, vd, z, sizeof z);
    FILE *skip = fopen(argv[2], "w");
    if (!skip) {
        perror(argv[2]);
        return 1;
    }
    uint32_t k = 0;
    for (uint32_t b = 0; b < (n + 16) / 17; b++) { /* 17 nodes a block */
        carve_value_id in[3] = {v, G, B};
        carve_value_id h = op(m, "LayerNormalization", 3, in, &k);
        if (b % 4 == 3)
            fprintf(skip, "%s%s", b == 3 ? "" : ",", carve_node_name(m, carve_value_producer(m, h)));
        carve_value_id q[2] = {h, W};
        carve_value_id qq = op(m, "MatMul", 2, q, &k), kk = op(m, "MatMul", 2, q, &k), vv = op(m, "MatMul", 2, q, &k);
        carve_value_id s[2] = {qq, kk};
        carve_value_id sm = op(m, "Mul", 2, s, &k);
        sm = op(m, b % 4 == 1 ? "Cosh" : "Softmax", 1, &sm, &k);
        carve_value_id a[2] = {sm, vv};
        carve_value_id at = op(m, "Mul", 2, a, &k);
        carve_value_id aw[2] = {at, W};
        at = op(m, "MatMul", 2, aw, &k);
        carve_value_id r[2] = {v, at};
        v = op(m, "Add", 2, r, &k);
        in[0] = v;
        h = op(m, "LayerNormalization", 3, in, &k);
        carve_value_id gin[3] = {h, W, B};
        h = op(m, "Gemm", 3, gin, &k);
        h = op(m, "Relu", 1, &h, &k);
        gin[0] = h;
        h = op(m, "Gemm", 3, gin, &k);
        h = op(m, "Tanh", 1, &h, &k);
        h = op(m, "Sigmoid", 1, &h, &k);
        carve_value_id hh[2] = {h, h};
        h = op(m, "Mul", 2, hh, &k);
        carve_value_id r2[2] = {v, h};
        v = op(m, "Add", 2, r2, &k);
    }
    fclose(skip);
    carve_graph_add_output(m, 0, v);
    int rc = 0;
    if (carve_model_save_file(m, argv[1], NULL) != CARVE_OK) {
        fprintf(stderr, "make_synth: %s\n", carve_errmsg(ctx));
        rc = 1;
    }
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

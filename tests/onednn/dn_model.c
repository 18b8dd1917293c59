/*
 * dn_model.c: a developer's probe (not a CTest): loads a model, fixes dims,
 * folds it, asks the oneDNN backend about every node and prints what it
 * refuses (by op and reason); when it takes every node, compiles the whole
 * main graph as one partition, times RUNS runs against carve's reference
 * and prints the largest difference.
 *   onednn_model MODEL [--dim NAME=N]... [--runs N] [--threads N]
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carve.h"
#include "carve_backend.h"
#include "passes/passes.h"

const carve_backend *cv_onednn_backend(void);

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: onednn_model MODEL [--dim NAME=N]... [--runs N] [--threads N]\n");
        return 2;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    if (carve_model_load_file(ctx, argv[1], NULL, &m) != CARVE_OK) {
        fprintf(stderr, "%s\n", carve_errmsg(ctx));
        return 1;
    }
    int runs = 5;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dim")) {
            char name[256];
            snprintf(name, sizeof name, "%s", argv[i + 1]);
            char *eq = strrchr(name, '=');
            if (!eq)
                return 2;
            *eq = 0;
            carve_model_fix_dim(m, name, atoll(eq + 1));
        } else if (!strcmp(argv[i], "--runs"))
            runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            carve_set_threads(atoi(argv[i + 1]));
    }
    carve_fold_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.recompose = true;
    if (carve_fold(m, &fo, NULL) != CARVE_OK || cv_infer_model(m, NULL) != CARVE_OK) {
        fprintf(stderr, "fold/infer: %s\n", carve_errmsg(ctx));
        return 1;
    }
    const carve_backend *be = cv_onednn_backend();
    printf("backend %s\n", be->version);
    carve_graph_id g = carve_model_main_graph(m);
    size_t n = carve_graph_node_count(m, g), refused = 0;
    char msg[512];
    for (size_t i = 0; i < n; i++) {
        carve_node_id id = carve_graph_node(m, g, i);
        const char *why = be->supports_node(be->user, m, id, msg, sizeof msg);
        if (why) {
            refused++;
            printf("refused %s (%s): %s: %s\n", carve_node_name(m, id), carve_node_op(m, id), why, msg);
        }
    }
    printf("%zu nodes, %zu refused\n", n, refused);
    if (refused)
        return 0;
    size_t n_in = carve_graph_input_count(m, g), n_out = carve_graph_output_count(m, g);
    carve_tensor **in = calloc(n_in, sizeof *in), **want = calloc(n_out, sizeof *want), **got = calloc(n_out, sizeof *got);
    unsigned seed = 1;
    for (size_t i = 0; i < n_in; i++) {
        carve_value_id v = carve_graph_input(m, g, i);
        int64_t dims[CARVE_MAX_RANK];
        int r = carve_value_rank(m, v);
        for (int d = 0; d < r; d++)
            dims[d] = carve_value_dim(m, v, d).value;
        in[i] = carve_tensor_new(CARVE_FLOAT, r, dims);
        float *p = carve_tensor_data(in[i], NULL);
        for (size_t k = 0; k < carve_tensor_count(in[i]); k++) {
            seed = seed * 1103515245u + 12345u;
            p[k] = (float)((seed >> 8) & 0xffff) / 65536.0f;
        }
    }
    double t0 = now_ms();
    if (carve_model_run(m, in, want) != CARVE_OK) {
        fprintf(stderr, "reference: %s\n", carve_errmsg(ctx));
        return 1;
    }
    double tref = now_ms() - t0;
    carve_backend_partition p = {m, g, NULL, "onednn", "all", NULL};
    carve_backend_refusal *ref = calloc(1, sizeof *ref);
    void *h = NULL;
    t0 = now_ms();
    carve_status s = be->compile(be->user, &p, &h, ref);
    printf("compile: %s %.1f ms %s\n", carve_status_name(s), now_ms() - t0, ref->message);
    if (s != CARVE_OK)
        return 1;
    double best = 1e30, total = 0;
    for (int r = 0; r <= runs; r++) {
        for (size_t o = 0; o < n_out; o++)
            carve_tensor_free(got[o]);
        t0 = now_ms();
        if (be->run(be->user, h, in, n_in, got, n_out, msg, sizeof msg) != CARVE_OK) {
            fprintf(stderr, "run: %s\n", msg);
            return 1;
        }
        double dt = now_ms() - t0;
        if (r) { /* the first run is a warm-up */
            total += dt;
            best = dt < best ? dt : best;
        }
    }
    double worst = 0;
    for (size_t o = 0; o < n_out; o++)
        for (size_t k = 0; k < carve_tensor_count(got[o]); k++) {
            double d = fabs(carve_tensor_get(got[o], k) - carve_tensor_get(want[o], k));
            worst = d > worst ? d : worst;
        }
    printf("onednn: %.2f ms mean, %.2f ms best over %d runs (threads %d); reference one run %.1f ms; max |diff| %g\n",
           total / runs, best, runs, carve_get_threads(), tref, worst);
    be->release(be->user, h);
    return 0;
}

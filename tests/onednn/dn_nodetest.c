/*
 * dn_nodetest.c: the ONNX backend node-test cases (Debian's
 * libonnx-testdata) through the oneDNN backend. A case is taken when the
 * backend supports every node of its graph (supports_node, with the real
 * shapes); its graph is then compiled as one partition, run on each
 * test_data_set's inputs, and compared with the expected outputs under the
 * oneDNN tolerance table below (docs/onednn.md#tolerances). Prints each
 * failure, then "N cases: T taken, P passed, F failed".
 *
 *   onednn_nodetest [-v] [--min-taken N] DATA_NODE_DIR
 *
 * -v also prints why each case whose ops the backend maps was not taken.
 *
 * Exit status 1 when a taken case fails or fewer than N were taken.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "carve.h"
#include "carve_backend.h"
#include "passes/passes.h"

const carve_backend *cv_onednn_backend(void);

/* oneDNN is not bit-exact with the reference: its own tolerances, per op
 * (the largest over the case's ops applies). */
static const struct {
    const char *op;
    double atol, rtol;
} tolerances[] = {
    {"", 1e-5, 1e-5},         /* element-wise exact ops, layout ops, pooling max */
    {"Conv", 1e-4, 1e-4},     /* accumulation order of the jit kernels */
    {"ConvTranspose", 1e-4, 1e-4},
    {"MatMul", 1e-4, 1e-4},
    {"Gemm", 1e-4, 1e-4},
    {"AveragePool", 1e-5, 1e-5},
    {"GlobalAveragePool", 1e-5, 1e-5},
    {"BatchNormalization", 1e-4, 1e-4},
    {"LayerNormalization", 1e-4, 1e-4},
    {"Softmax", 1e-5, 1e-4},
    {"LogSoftmax", 1e-4, 1e-4},
    {"ReduceMean", 1e-5, 1e-4},
    {"ReduceSum", 1e-5, 1e-4},
    {"Resize", 1e-5, 1e-5},
    {"Exp", 1e-5, 1e-5},      /* polynomial approximations of the jit eltwise kernels */
    {"Log", 1e-5, 1e-5},
    {"Tanh", 1e-5, 1e-5},
    {"Sigmoid", 1e-5, 1e-5},
    {"Elu", 1e-5, 1e-5},
    {"Gelu", 1e-5, 1e-5},
    {"Sqrt", 1e-6, 1e-6},
};

static void tolerance(const carve_model *m, double *atol, double *rtol)
{
    *atol = tolerances[0].atol, *rtol = tolerances[0].rtol;
    carve_graph_id g = carve_model_main_graph(m);
    for (size_t i = 0; i < carve_graph_node_count(m, g); i++) {
        const char *op = carve_node_op(m, carve_graph_node(m, g, i));
        for (size_t k = 1; k < sizeof tolerances / sizeof *tolerances; k++)
            if (!strcmp(op, tolerances[k].op)) {
                *atol = fmax(*atol, tolerances[k].atol);
                *rtol = fmax(*rtol, tolerances[k].rtol);
            }
    }
}

static bool g_verbose;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* -1 not taken, 0 passed, 1 failed */
static int run_case(const char *dir, const char *name, char *why, size_t wsz)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    int rc = -1;
    if (carve_model_load_file(ctx, path, NULL, &m) != CARVE_OK || cv_infer_model(m, NULL) != CARVE_OK)
        goto out;
    const carve_backend *be = cv_onednn_backend();
    carve_graph_id g = carve_model_main_graph(m);
    size_t n_nodes = carve_graph_node_count(m, g);
    if (!n_nodes)
        goto out;
    char msg[512];
    for (size_t i = 0; i < n_nodes; i++) {
        carve_node_id nd = carve_graph_node(m, g, i);
        const char *r = be->supports_node(be->user, m, nd, msg, sizeof msg);
        if (r) {
            if (g_verbose)
                printf("skip %s: %s: %s: %s\n", name, carve_node_op(m, nd), r, msg);
            goto out;
        }
    }
    size_t n_in = carve_graph_input_count(m, g), n_out = carve_graph_output_count(m, g);
    for (size_t i = 0; i < n_in; i++)
        if (carve_value_dtype(m, carve_graph_input(m, g, i)) != CARVE_FLOAT)
            goto out; /* a partition's runtime inputs are float32 */
    rc = 0;
    carve_backend_partition p = {m, g, NULL, "onednn", name, NULL};
    carve_backend_refusal *ref = calloc(1, sizeof *ref);
    void *h = NULL;
    carve_status s = be->compile(be->user, &p, &h, ref);
    if (s != CARVE_OK) {
        snprintf(why, wsz, "compile: %s", ref->message);
        free(ref);
        rc = s == CARVE_ERR_UNSUPPORTED ? -1 : 1;
        goto out;
    }
    free(ref);
    double atol, rtol;
    tolerance(m, &atol, &rtol);
    for (int set = 0; rc == 0; set++) {
        char sd[2048];
        struct stat st;
        snprintf(sd, sizeof sd, "%.1000s/%.900s/test_data_set_%d", dir, name, set);
        if (stat(sd, &st) != 0)
            break;
        carve_tensor *in[32] = {0}, *want[32] = {0}, *got[32] = {0};
        for (size_t i = 0; i < n_in && i < 32; i++) {
            snprintf(path, sizeof path, "%s/input_%zu.pb", sd, i);
            if (carve_tensor_read(ctx, path, &in[i]) != CARVE_OK) {
                snprintf(why, wsz, "%s", carve_errmsg(ctx));
                rc = 1;
            }
        }
        for (size_t i = 0; i < n_out && i < 32 && rc == 0; i++) {
            snprintf(path, sizeof path, "%s/output_%zu.pb", sd, i);
            if (carve_tensor_read(ctx, path, &want[i]) != CARVE_OK) {
                snprintf(why, wsz, "%s", carve_errmsg(ctx));
                rc = 1;
            }
        }
        if (rc == 0 && be->run(be->user, h, in, n_in, got, n_out, msg, sizeof msg) != CARVE_OK) {
            snprintf(why, wsz, "run: %s", msg);
            rc = 1;
        }
        for (size_t o = 0; o < n_out && rc == 0; o++) {
            if (carve_tensor_count(got[o]) != carve_tensor_count(want[o])) {
                snprintf(why, wsz, "output %zu: %zu elements, expected %zu", o, carve_tensor_count(got[o]),
                         carve_tensor_count(want[o]));
                rc = 1;
                break;
            }
            for (size_t k = 0; k < carve_tensor_count(got[o]); k++) {
                double a = carve_tensor_get(got[o], k), w = carve_tensor_get(want[o], k);
                if (isnan(a) != isnan(w) || (!isnan(w) && fabs(a - w) > atol + rtol * fabs(w))) {
                    snprintf(why, wsz, "set %d output %zu element %zu: %.8g, expected %.8g (atol %g rtol %g)", set,
                             o, k, a, w, atol, rtol);
                    rc = 1;
                    break;
                }
            }
        }
        for (size_t i = 0; i < 32; i++) {
            carve_tensor_free(in[i]);
            carve_tensor_free(want[i]);
            carve_tensor_free(got[i]);
        }
    }
    be->release(be->user, h);
out:
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    long min_taken = 0;
    int a = 1;
    if (argc > 1 && !strcmp(argv[1], "-v")) {
        g_verbose = true;
        argv++, argc--;
    }
    if (argc > 2 && !strcmp(argv[1], "--min-taken")) {
        min_taken = atol(argv[2]);
        a = 3;
    }
    if (a >= argc) {
        fprintf(stderr, "usage: onednn_nodetest [--min-taken N] DATA_NODE_DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[a]);
    if (!d) {
        fprintf(stderr, "cannot open %s\n", argv[a]);
        return 2;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    size_t taken = 0, passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        char why[1024] = "";
        int rc = run_case(argv[a], names[i], why, sizeof why);
        if (rc >= 0)
            taken++;
        if (rc == 0)
            passed++;
        if (rc == 1) {
            failed++;
            printf("FAIL %s: %s\n", names[i], why);
        }
        free(names[i]);
    }
    free(names);
    printf("%zu cases: %zu taken, %zu passed, %zu failed\n", n, taken, passed, failed);
    if ((long)taken < min_taken)
        printf("fewer than %ld cases taken\n", min_taken);
    return failed || (long)taken < min_taken ? 1 : 0;
}

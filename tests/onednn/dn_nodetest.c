/*
 * dn_nodetest.c: the ONNX backend node-test cases (Debian's
 * libonnx-testdata) lowered for the onednn target. A case is taken when
 * lowering made at least one Delegate (the profile and the backend's
 * supports_node accepted its nodes, compile succeeded); the lowered model
 * then runs on each test_data_set's inputs with its Delegates executed by
 * oneDNN (the other nodes on carve's CPU kernels), and is compared with the expected outputs under the
 * oneDNN tolerance table below (docs/onednn.md#tolerances). Prints each
 * failure, then "N cases: T taken, P passed, F failed".
 *
 *   onednn_nodetest [-v] [--min-taken N] DATA_NODE_DIR
 *
 * -v is accepted for symmetry with nodetest and prints nothing more yet.
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
 * (the largest over the case's ops applies). The first row is the floor,
 * nodetest's default (cases computed in float64 by ONNX and stored as
 * float32; the window-function cases' float32 Cos alone needs 1e-4). No op
 * has needed more so far; docs/onednn.md#tolerances. */
static const struct {
    const char *op;
    double atol, rtol;
} tolerances[] = {
    {"", 1e-4, 1e-4},
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
static size_t g_partly; /* taken cases with nodes left on CPU */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Whether every node of the main graph is an ai.carve Delegate. */
static bool all_delegated(const carve_model *m, size_t *n_delegates)
{
    carve_graph_id g = carve_model_main_graph(m);
    size_t n = carve_graph_node_count(m, g);
    *n_delegates = 0;
    for (size_t i = 0; i < n; i++) {
        carve_node_id id = carve_graph_node(m, g, i);
        if (!strcmp(carve_node_op(m, id), "Delegate") && !strcmp(carve_node_domain(m, id), "ai.carve"))
            ++*n_delegates;
    }
    return n && *n_delegates == n;
}

/* -1 not taken, 0 passed, 1 failed. The case is lowered for onednn; it is
 * taken when every node went into Delegates, which then run through oneDNN
 * (carve_model_run executes each Delegate through its backend). */
static int run_case(const char *dir, const char *name, char *why, size_t wsz)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL, *orig = NULL;
    carve_target *t = NULL;
    carve_report *rep = NULL;
    int rc = -1;
    if (carve_model_load_file(ctx, path, NULL, &m) != CARVE_OK ||
        carve_model_load_file(ctx, path, NULL, &orig) != CARVE_OK || cv_infer_model(orig, NULL) != CARVE_OK ||
        carve_target_builtin(ctx, "onednn", &t) != CARVE_OK)
        goto out;
    double atol, rtol;
    tolerance(orig, &atol, &rtol);
    if (carve_lower(m, t, NULL, &rep) != CARVE_OK)
        goto out;
    size_t n_del = 0;
    bool whole = all_delegated(m, &n_del);
    if (!n_del)
        goto out;
    if (!whole)
        g_partly++;
    rc = 0;
    carve_graph_id g = carve_model_main_graph(m);
    size_t n_in = carve_graph_input_count(m, g), n_out = carve_graph_output_count(m, g);
    for (int set = 0; rc == 0; set++) {
        char sd[2048];
        struct stat st;
        snprintf(sd, sizeof sd, "%.1000s/%.900s/test_data_set_%d", dir, name, set);
        if (stat(sd, &st) != 0)
            break;
        carve_tensor *in[32] = {0}, *want[32] = {0}, *got[32] = {0};
        for (size_t i = 0; i < n_in && i < 32 && rc == 0; i++) {
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
        if (rc == 0 && carve_model_run(m, in, got) != CARVE_OK) {
            snprintf(why, wsz, "run: %s", carve_errmsg(ctx));
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
out:
    carve_report_free(rep);
    carve_target_free(t);
    carve_model_free(m);
    carve_model_free(orig);
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
    printf("%zu cases: %zu taken (%zu whole, %zu with nodes on CPU), %zu passed, %zu failed\n", n, taken,
           taken - g_partly, g_partly, passed, failed);
    if ((long)taken < min_taken)
        printf("fewer than %ld cases taken\n", min_taken);
    return failed || (long)taken < min_taken ? 1 : 0;
}

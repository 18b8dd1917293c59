/* nodetest.c: runs ONNX backend node test cases (a folder with model.onnx
 * and test_data_set_N/{input,output}_K.pb) on carve's reference kernels and
 * compares with the expected outputs, with a tolerance per dtype and per op
 * (tolerances.h, also documented in docs/kernels.md).
 *
 *   nodetest [-q] [--upgrade] [--known FILE] CASE_DIR...
 *
 * --upgrade runs carve_upgrade on each model first (cases already at the
 * newest opset are skipped): the upgraded model must give the expected
 * outputs too. A model the upgrade refuses is reported as such and counted
 * apart (it runs unchanged, so it is no test of the upgrade).
 *
 * Cases listed in the known-failures file are expected to fail; one of them
 * passing is reported too (so the list stays true). Closes with
 * "N passed, N failed". */
#define _DEFAULT_SOURCE
#include "nodecase.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *op;
    double atol, rtol;
    const char *why;
} tol_row;

#include "tolerances.h"

static void tolerance(const char *op, carve_dtype dt, double *atol, double *rtol)
{
    *atol = 1e-4, *rtol = 1e-4;
    if (dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16)
        *atol = 1e-2, *rtol = 1e-2;
    for (size_t i = 0; i < sizeof tolerances / sizeof *tolerances; i++)
        if (!strcmp(tolerances[i].op, op)) {
            if (tolerances[i].atol > *atol)
                *atol = tolerances[i].atol;
            if (tolerances[i].rtol > *rtol)
                *rtol = tolerances[i].rtol;
        }
}

static void op_tolerance(const void *op, carve_dtype dt, double *atol, double *rtol) { tolerance(op, dt, atol, rtol); }

/* The op under test: the last node's op (test models are one node, or a
 * function body expanded, whose tolerance is the last op's). */
static const char *main_op(const carve_model *m)
{
    size_t n = carve_graph_node_count(m, 0);
    return n ? carve_node_op(m, carve_graph_node(m, 0, n - 1)) : "";
}

static bool upgrade;
static int n_refused, n_upgraded;

static bool run_case(const char *dir, char *why, size_t whysz)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    bool ok = false;
    cv_interp ip = {0};
    if (carve_model_load_file(ctx, path, NULL, &m)) {
        snprintf(why, whysz, "load: %s", carve_errmsg(ctx));
        goto out;
    }
    if (upgrade) {
        carve_upgrade_stats us;
        if (carve_upgrade(m, &us)) {
            snprintf(why, whysz, "upgrade: %s", carve_errmsg(ctx));
            goto out;
        }
        if (us.refused[0]) {
            n_refused++;
            printf("refused %s: %s\n", dir, us.refused);
        } else if (us.opset_after != us.opset_before) {
            n_upgraded++;
        }
    }
    if (cv_interp_init(&ip, m)) {
        snprintf(why, whysz, "%s", carve_errmsg(ctx));
        goto out;
    }
    const char *op = main_op(m);
    int sets = 0;
    for (int set = 0;; set++) {
        char sd[4096];
        snprintf(sd, sizeof sd, "%s/test_data_set_%d", dir, set);
        struct stat st;
        if (stat(sd, &st) != 0)
            break;
        sets++;
        cv_graph *g = &m->graphs[0];
        uint32_t n_in = g->inputs.n, n_out = g->outputs.n;
        cv_val **in = calloc(n_in + 1, sizeof *in), **out = calloc(n_out + 1, sizeof *out);
        bool set_ok = nc_read_inputs(ctx, m, sd, in, why, whysz);
        if (set_ok && cv_interp_run(&ip, 0, in, out)) {
            snprintf(why, whysz, "run: %s", carve_errmsg(ctx));
            set_ok = false;
        }
        for (uint32_t i = 0; i < n_out && set_ok; i++) {
            snprintf(path, sizeof path, "%s/output_%u.pb", sd, i);
            cv_val *want = NULL;
            if (!nc_read_value(ctx, m, g->outputs.v[i], path, &want, why, whysz)) {
                set_ok = false;
                break;
            }
            char w[600];
            if (!nc_same(out[i], want, op_tolerance, op, w, sizeof w)) {
                snprintf(why, whysz, "set %d output %u '%s': %s", set, i, m->values[g->outputs.v[i]].name, w);
                set_ok = false;
            }
            cv_val_unref(want);
        }
        for (uint32_t i = 0; i < n_in; i++)
            cv_val_unref(in[i]);
        for (uint32_t i = 0; i < n_out; i++)
            cv_val_unref(out[i]);
        free(in);
        free(out);
        if (!set_ok)
            goto out;
    }
    if (!sets) {
        snprintf(why, whysz, "no test_data_set_0");
        goto out;
    }
    ok = true;
out:
    cv_interp_free(&ip);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return ok;
}

int main(int argc, char **argv)
{
    bool quiet = false;
    int pass = 0, fail = 0, xfail = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q")) {
            quiet = true;
            continue;
        }
        if (!strcmp(argv[i], "--upgrade")) {
            upgrade = true;
            continue;
        }
        if (!strcmp(argv[i], "--known") && i + 1 < argc) {
            nc_known_load("nodetest", argv[++i]);
            continue;
        }
        char why[1200] = "";
        char d[4096];
        snprintf(d, sizeof d, "%s", argv[i]);
        size_t l = strlen(d);
        while (l > 1 && d[l - 1] == '/')
            d[--l] = 0;
        bool ok = run_case(d, why, sizeof why);
        bool expected_fail = nc_known_has(d);
        if (ok && !expected_fail) {
            pass++;
            if (!quiet)
                printf("ok    %s\n", d);
        } else if (!ok && expected_fail) {
            xfail++;
            if (!quiet)
                printf("known %s: %s\n", d, why);
        } else if (ok) {
            fail++;
            printf("FAIL  %s: passes but is listed as a known failure; remove it from the list\n", d);
        } else {
            fail++;
            printf("FAIL  %s: %s\n", d, why);
        }
    }
    if (upgrade)
        printf("upgraded %d models, %d refused\n", n_upgraded, n_refused);
    printf("%d passed, %d failed, %d skipped\n", pass, fail, xfail);
    return fail ? 1 : 0;
}

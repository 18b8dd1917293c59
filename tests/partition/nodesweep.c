/* nodesweep.c: every ONNX backend node case of libonnx-testdata lowered for
 * every built-in target, in-process (what `carve check --target T --expect
 * ...` does for one case and one target, without 5,000 process launches):
 *
 *   nodesweep [-v] [--known FILE]... [--shard K/N] [--save DIR] NODE_DIR
 *
 * For each case (every N-th from the K-th, in name order) and each target
 * (htp, gpu, lpai, cpu, cpu_full, and htp+gpu: both in priority order), the model is loaded and lowered with the
 * default CPU profile (the core set). Either
 *   - lowering succeeds, the lowered model runs on the case's inputs (its
 *     Delegate bodies under the target's simulator), its outputs agree with
 *     the original's (carve check's default tolerance, atol 1e-4 rtol 1e-3)
 *     and the original's agree with the case's expected outputs (the ONNX
 *     backend tests' tolerance, atol 1e-7 rtol 1e-3; bfloat16 1e-2, as
 *     `carve check --expect`), or
 *   - lowering refuses with a message that names a node ("node '...'"); the
 *     refusal is counted by class (the text between the op and the reason).
 * Anything else fails. Cases the kernel tests list as known failures
 * (tests/ops/known_failures_*.txt: the original cannot match the expected
 * outputs) are held to lowered == original only.
 * --save DIR writes each lowered model (tests/check_lowered_onnx.py then
 * holds them to onnx.checker with full shape inference).
 * Closes with "N runs: P passed, R refused (by class...), F failed". */
#define _DEFAULT_SOURCE
#include "nodecase.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* the built-in targets, and htp then gpu in priority order (several
 * targets, carve_lower_targets) */
/* --no-upgrade: lower at the model's own opset (for onnx 1.12's checker,
 * which knows opsets up to 17 and IR up to 8; the upgrade brings every
 * model to opset 21). */
static bool no_upgrade;

static const char *const targets[] = {"htp", "gpu", "lpai", "cpu", "cpu_full", "htp+gpu", NULL};
#define N_TARGETS 6

static bool verbose;
static const char *save_dir; /* --save DIR: each lowered model as DIR/<case>.<target>.onnx */

/* Refusal classes: a substring of the message and the class's name. */
static const struct {
    const char *needle, *cls;
} classes[] = {
    {"unsupported_opset", "unsupported_opset"},
    {"the CPU profile has no kernel for it", "no_cpu_kernel"},
    {"cannot decompose", "no_decomposition"},
    {"type constraint", "type_constraint"},
    {NULL, NULL},
};
static size_t class_count[16];
static size_t other_refusals;

/* A fixed tolerance for every dtype (the lowered model against the original). */
static void fixed_tol(const void *arg, carve_dtype dt, double *atol, double *rtol)
{
    (void)dt;
    const double *t = arg;
    *atol = t[0], *rtol = t[1];
}

/* The ONNX backend tests' tolerance; bfloat16 one step of its 8-bit
 * significand (ONNX 1.12's data truncates to bfloat16, carve rounds to
 * nearest even). */
static void expected_tol(const void *arg, carve_dtype dt, double *atol, double *rtol)
{
    (void)arg;
    bool bf = dt == CARVE_BFLOAT16;
    *atol = bf ? 1e-2 : 1e-7, *rtol = bf ? 1e-2 : 1e-3;
}

static carve_status run(carve_model *m, const carve_target *t, cv_val **in, cv_val **out)
{
    cv_interp ip;
    carve_status s = cv_interp_init(&ip, m);
    if (s)
        return s;
    ip.target = t;
    s = cv_interp_run(&ip, 0, in, out);
    cv_interp_free(&ip);
    return s;
}

typedef enum { R_PASS, R_REFUSED, R_FAIL } result;

/* One case, one target. */
static result sweep_one(const char *dir, const char *name, const char *tname, char *why, size_t whysz)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *orig = NULL, *low = NULL;
    carve_target *t = NULL, *t2 = NULL;
    result r = R_FAIL;
    cv_val **in = NULL, **o1 = NULL, **o2 = NULL;
    uint32_t n_in = 0, n_out = 0;
    if (carve_model_load_file(ctx, path, NULL, &orig) || carve_model_load_file(ctx, path, NULL, &low)) {
        snprintf(why, whysz, "load: %s", carve_errmsg(ctx));
        goto out;
    }
    bool pair = !strcmp(tname, "htp+gpu");
    if (carve_target_builtin(ctx, pair ? "htp" : tname, &t) || (pair && carve_target_builtin(ctx, "gpu", &t2))) {
        snprintf(why, whysz, "%s", carve_errmsg(ctx));
        goto out;
    }
    const carve_target *ts[2] = {t, t2};
    carve_lower_opts lo = {.no_upgrade = no_upgrade};
    if (carve_lower_targets(low, ts, pair ? 2 : 1, &lo, NULL)) {
        const char *msg = carve_errmsg(ctx);
        if (!strstr(msg, "node '")) {
            snprintf(why, whysz, "refused without naming a node: %s", msg);
            goto out;
        }
        size_t c = 0;
        while (classes[c].needle && !strstr(msg, classes[c].needle))
            c++;
        if (classes[c].needle)
            class_count[c]++;
        else
            other_refusals++;
        snprintf(why, whysz, "%s", msg);
        r = R_REFUSED;
        goto out;
    }
    if (save_dir) {
        /* to memory, then a plain write: thousands of files need no fsync */
        void *bytes = NULL;
        size_t size = 0;
        snprintf(path, sizeof path, "%s/%s.%s.onnx", save_dir, name, tname);
        FILE *f = NULL;
        bool saved = !carve_model_save_memory(low, &bytes, &size) && (f = fopen(path, "wb")) &&
                     fwrite(bytes, 1, size, f) == size;
        saved = (f ? fclose(f) == 0 : false) && saved;
        carve_free(bytes);
        if (!saved) {
            snprintf(why, whysz, "save %.200s: %s", path, carve_errmsg(ctx));
            goto out;
        }
    }
    const cv_graph *g = &orig->graphs[0];
    n_in = g->inputs.n, n_out = g->outputs.n;
    in = calloc(n_in + 1, sizeof *in), o1 = calloc(n_out + 1, sizeof *o1), o2 = calloc(n_out + 1, sizeof *o2);
    bool expect = !nc_known_has(name);
    int sets = 0;
    for (int set = 0;; set++, sets++) {
        char sd[8300];
        struct stat st;
        snprintf(sd, sizeof sd, "%s/test_data_set_%d", dir, set);
        if (stat(sd, &st) != 0)
            break;
        if (!nc_read_inputs(ctx, orig, sd, in, why, whysz))
            goto out;
        if (run(orig, NULL, in, o1)) {
            snprintf(why, whysz, "running the original: %s", carve_errmsg(ctx));
            goto out;
        }
        if (run(low, pair ? NULL : t, in, o2)) { /* several targets: each Delegate finds its own */
            snprintf(why, whysz, "running the lowered model: %s", carve_errmsg(ctx));
            goto out;
        }
        for (uint32_t i = 0; i < n_out; i++) {
            const char *oname = orig->values[g->outputs.v[i]].name;
            char w[600];
            static const double lowered_tol[2] = {1e-4, 1e-3};
            if (!nc_same(o2[i], o1[i], fixed_tol, lowered_tol, w, sizeof w)) {
                snprintf(why, whysz, "set %d output '%s': lowered differs from the original: %s", set, oname, w);
                goto out;
            }
            if (!expect)
                continue;
            cv_val *want = NULL;
            snprintf(path, sizeof path, "%s/output_%u.pb", sd, i);
            if (!nc_read_value(ctx, orig, g->outputs.v[i], path, &want, why, whysz))
                goto out;
            bool ok = nc_same(o1[i], want, expected_tol, NULL, w, sizeof w);
            cv_val_unref(want);
            if (!ok) {
                snprintf(why, whysz, "set %d output '%s': the original differs from the expected output: %s", set,
                         oname, w);
                goto out;
            }
        }
        for (uint32_t i = 0; i < n_in; i++)
            cv_val_unref(in[i]), in[i] = NULL;
        for (uint32_t i = 0; i < n_out; i++) {
            cv_val_unref(o1[i]), o1[i] = NULL;
            cv_val_unref(o2[i]), o2[i] = NULL;
        }
    }
    if (!sets) {
        snprintf(why, whysz, "no test_data_set_0");
        goto out;
    }
    r = R_PASS;
out:
    for (uint32_t i = 0; in && i < n_in; i++)
        cv_val_unref(in[i]);
    for (uint32_t i = 0; o1 && i < n_out; i++) {
        cv_val_unref(o1[i]);
        cv_val_unref(o2[i]);
    }
    free(in);
    free(o1);
    free(o2);
    carve_target_free(t);
    carve_target_free(t2);
    carve_model_free(orig);
    carve_model_free(low);
    carve_ctx_free(ctx);
    return r;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    const char *root = NULL;
    int shard = 0, shards = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = true;
        else if (!strcmp(argv[i], "--no-upgrade"))
            no_upgrade = true;
        else if (!strcmp(argv[i], "--save") && i + 1 < argc)
            save_dir = argv[++i];
        else if (!strcmp(argv[i], "--known") && i + 1 < argc)
            nc_known_load("nodesweep", argv[++i]);
        else if (!strcmp(argv[i], "--shard") && i + 1 < argc && sscanf(argv[i + 1], "%d/%d", &shard, &shards) == 2 &&
                 shards > 0 && shard >= 0 && shard < shards)
            i++;
        else if (argv[i][0] != '-' && !root)
            root = argv[i];
        else {
            fprintf(stderr, "usage: nodesweep [-v] [--no-upgrade] [--known FILE]... [--shard K/N] [--save DIR] NODE_DIR\n");
            return 2;
        }
    }
    if (!root) {
        fprintf(stderr, "usage: nodesweep [-v] [--known FILE]... [--shard K/N] [--save DIR] NODE_DIR\n");
        return 2;
    }
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr, "nodesweep: cannot open %s\n", root);
        return 2;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "test_", 5)) {
            names = realloc(names, (n + 1) * sizeof *names);
            names[n++] = strdup(e->d_name);
        }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t runs = 0, pass = 0, refused = 0, fail = 0, cases = 0;
    for (size_t k = (size_t)shard; k < n; k += (size_t)shards) {
        char dir[8192];
        snprintf(dir, sizeof dir, "%s/%s", root, names[k]);
        cases++;
        for (int ti = 0; targets[ti]; ti++) {
            char why[2048] = "";
            result r = sweep_one(dir, names[k], targets[ti], why, sizeof why);
            runs++;
            if (r == R_PASS) {
                pass++;
                if (verbose)
                    printf("ok      %s %s\n", targets[ti], names[k]);
            } else if (r == R_REFUSED) {
                refused++;
                if (verbose)
                    printf("refused %s %s: %s\n", targets[ti], names[k], why);
            } else {
                fail++;
                printf("FAIL    %s %s: %s\n", targets[ti], names[k], why);
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%zu cases x %d targets = %zu runs: %zu passed, %zu refused (", cases, N_TARGETS, runs, pass, refused);
    for (size_t c = 0; classes[c].needle; c++)
        printf("%s%s %zu", c ? ", " : "", classes[c].cls, class_count[c]);
    printf(", other %zu), %zu failed; %.1f s\n", other_refusals, fail,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    nc_known_free();
    return fail || other_refusals ? 1 : 0;
}

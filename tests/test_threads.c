/* test_threads.c: libcarve from several threads at once, one context per
 * thread (include/carve.h, "Threads"). Eight threads each load a different
 * ONNX node case of libonnx-testdata, lower it for a target (htp, gpu, lpai,
 * cpu, cpu_full by thread), run the lowered model on the case's inputs, write
 * the report and save the model to memory, several times over; every output
 * must equal, bit for bit, what the same steps gave on one thread before.
 * Run under ThreadSanitizer (CARVE_TSAN=ON) this is the thread-safety test
 * of the load, fold, infer, partition, lower, report, save and run paths.
 *
 *   test_threads [--locale NAME] NODE_DATA_DIR
 *
 * With --locale (CTest threads.comma_locale, tests/test_comma_locale.sh),
 * the program first sets a locale whose decimal point is a comma, then runs
 * the same and also checks that report numbers and Cast from strings keep
 * the "." of the C locale. */
#include "carve.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_THREADS 8
#define ROUNDS 20

static const char *const cases[N_THREADS] = {
    "test_conv_with_strides_padding", "test_gemm_default_single_elem_vector_bias", "test_selu",
    "test_softmax_axis_1", "test_layer_normalization_4d_axis0", "test_lstm_defaults",
    "test_resize_upsample_scales_linear", "test_instancenorm_example",
};
static const char *const targets[] = {"htp", "gpu", "lpai", "cpu", "cpu_full"};

static const char *root;
static bool check_locale; /* --locale: a comma locale is set */

/* After `"total":` in the report, a number with a '.' (never "0,12"). */
static bool report_number_ok(const char *json, char *why, size_t whysz)
{
    const char *p = strstr(json, "\"total\":");
    if (!p) {
        snprintf(why, whysz, "no \"total\" in the report");
        return false;
    }
    p += 8;
    while (*p == ' ')
        p++;
    while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == '-' || *p == '+')
        p++;
    if (*p == ',' && p[1] >= '0' && p[1] <= '9') {
        snprintf(why, whysz, "report number with a decimal comma: %.40s", p - 6);
        return false;
    }
    return true;
}

typedef struct {
    int idx;
    size_t n_out;
    carve_tensor *out[8];  /* the single-thread reference */
    int failures;
    char why[512];
} job;

/* Loads, lowers and runs case j->idx for target t; outputs into out[]. */
static int one_pass(job *j, const char *t, carve_tensor **out, size_t *n_out, char *why, size_t whysz)
{
    char path[4096];
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    carve_target *tg = NULL;
    carve_report *rep = NULL;
    carve_tensor *in[8] = {0};
    int rc = 1;
    snprintf(path, sizeof path, "%s/%s/model.onnx", root, cases[j->idx]);
    if (!ctx || carve_model_load_file(ctx, path, NULL, &m) || carve_target_builtin(ctx, t, &tg) ||
        carve_lower(m, tg, NULL, &rep)) {
        snprintf(why, whysz, "%s on %s: %s", cases[j->idx], t, ctx ? carve_errmsg(ctx) : "no context");
        goto out;
    }
    if (!carve_report_json(rep) || !carve_report_summary(rep)) {
        snprintf(why, whysz, "%s on %s: no report", cases[j->idx], t);
        goto out;
    }
    if (check_locale && !report_number_ok(carve_report_json(rep), why, whysz))
        goto out;
    void *bytes = NULL;
    size_t size = 0;
    if (carve_model_save_memory(m, &bytes, &size)) {
        snprintf(why, whysz, "%s on %s: save: %s", cases[j->idx], t, carve_errmsg(ctx));
        goto out;
    }
    carve_free(bytes);
    carve_graph_id g = carve_model_main_graph(m);
    size_t n_in = carve_graph_input_count(m, g);
    *n_out = carve_graph_output_count(m, g);
    for (size_t i = 0; i < n_in && i < 8; i++) {
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%zu.pb", root, cases[j->idx], i);
        if (carve_tensor_read(ctx, path, &in[i])) {
            snprintf(why, whysz, "%s: %s", cases[j->idx], carve_errmsg(ctx));
            goto out;
        }
    }
    if (carve_model_run_target(m, tg, in, out)) {
        snprintf(why, whysz, "%s on %s: run: %s", cases[j->idx], t, carve_errmsg(ctx));
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < 8; i++)
        carve_tensor_free(in[i]);
    carve_report_free(rep);
    carve_target_free(tg);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

static bool same_bits(carve_tensor *a, carve_tensor *b)
{
    size_t na = 0, nb = 0;
    if (carve_tensor_dtype(a) != carve_tensor_dtype(b) || carve_tensor_rank(a) != carve_tensor_rank(b))
        return false;
    const void *da = carve_tensor_data(a, &na), *db = carve_tensor_data(b, &nb);
    return na == nb && !memcmp(da, db, na);
}

static void *worker(void *arg)
{
    job *j = arg;
    for (int r = 0; r < ROUNDS; r++) {
        const char *t = targets[(size_t)j->idx % (sizeof targets / sizeof *targets)];
        carve_tensor *out[8] = {0};
        size_t n_out = 0;
        if (one_pass(j, t, out, &n_out, j->why, sizeof j->why)) {
            j->failures++;
            return NULL;
        }
        for (size_t i = 0; i < n_out; i++) {
            if (!same_bits(out[i], j->out[i])) {
                snprintf(j->why, sizeof j->why, "%s on %s: output %zu differs from the single-thread run",
                         cases[j->idx], t, i);
                j->failures++;
            }
            carve_tensor_free(out[i]);
        }
    }
    return NULL;
}

/* Cast from strings in the current (comma) locale: "1.5" is 1.5, not 1
 * (strtod of a comma locale stops at the '.'); and float -> string -> float
 * gives the value back. */
static int cast_strings_ok(void)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 13);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (const carve_dim[]){{2, NULL}});
    const char *oc[1] = {"c"}, *o1[1] = {"parsed"}, *o2[1] = {"s"}, *o3[1] = {"back"};
    carve_node_id k = carve_graph_add_node(m, 0, "Constant", "", "k", 0, NULL, 1, oc);
    const char *lits[2] = {"1.5", "-0.25"};
    carve_node_set_attr_strings(m, k, "value_strings", 2, lits);
    carve_value_id cv = carve_node_output(m, k, 0);
    carve_node_id c0 = carve_graph_add_node(m, 0, "Cast", "", "parse", 1, &cv, 1, o1);
    carve_node_set_attr_int(m, c0, "to", CARVE_FLOAT);
    carve_node_id c1 = carve_graph_add_node(m, 0, "Cast", "", "print", 1, &x, 1, o2);
    carve_node_set_attr_int(m, c1, "to", CARVE_STRING);
    carve_value_id sv = carve_node_output(m, c1, 0);
    carve_node_id c2 = carve_graph_add_node(m, 0, "Cast", "", "reparse", 1, &sv, 1, o3);
    carve_node_set_attr_int(m, c2, "to", CARVE_FLOAT);
    carve_graph_add_output(m, 0, carve_node_output(m, c0, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, c2, 0));
    carve_tensor *in = carve_tensor_new(CARVE_FLOAT, 1, (const int64_t[]){2}), *out[2] = {0};
    carve_tensor_set(in, 0, 1.5);
    carve_tensor_set(in, 1, -0.25);
    int bad = 0;
    if (carve_model_run(m, &in, out)) {
        printf("FAIL Cast in a comma locale: %s\n", carve_errmsg(ctx));
        bad = 1;
    } else {
        for (int i = 0; i < 2; i++)
            if (carve_tensor_get(out[i], 0) != 1.5 || carve_tensor_get(out[i], 1) != -0.25) {
                printf("FAIL Cast in a comma locale: output %d is %g, %g, expected 1.5, -0.25\n", i,
                       carve_tensor_get(out[i], 0), carve_tensor_get(out[i], 1));
                bad = 1;
            }
    }
    carve_tensor_free(in);
    carve_tensor_free(out[0]);
    carve_tensor_free(out[1]);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--locale")) {
        const char *l = setlocale(LC_ALL, argv[2]);
        if (!l || strcmp(localeconv()->decimal_point, ",")) {
            printf("FAIL locale %s: %s\n", argv[2], l ? "its decimal point is not a comma" : "cannot be set");
            return 1;
        }
        check_locale = true;
        argv += 2, argc -= 2;
        if (cast_strings_ok())
            return 1;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: test_threads [--locale NAME] NODE_DATA_DIR\n");
        return 2;
    }
    root = argv[1];
    static job jobs[N_THREADS];
    /* the reference: each case once for its target, on this thread */
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i].idx = i;
        if (one_pass(&jobs[i], targets[(size_t)i % (sizeof targets / sizeof *targets)], jobs[i].out, &jobs[i].n_out, jobs[i].why, sizeof jobs[i].why)) {
            printf("FAIL reference: %s\n", jobs[i].why);
            return 1;
        }
    }
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++)
        if (pthread_create(&th[i], NULL, worker, &jobs[i])) {
            printf("FAIL pthread_create\n");
            return 1;
        }
    int failures = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].failures)
            printf("FAIL %s\n", jobs[i].why);
        failures += jobs[i].failures;
        for (size_t k = 0; k < jobs[i].n_out; k++)
            carve_tensor_free(jobs[i].out[k]);
    }
    printf("%d threads x %d rounds: %s\n", N_THREADS, ROUNDS, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

/* cmd_check.c: `carve check MODEL --target T`: lowers the model, runs the
 * original and the lowered model on the same inputs (Delegate bodies under
 * the target's simulator) and compares every output; with --expect, the
 * original's outputs against expected values too. */
#include "lower_opts.h"
#include "carve_backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: carve check MODEL (--target T[+T...][,T[+T...]...] | --target-file FILE...) [--input NAME=FILE]...\n"
               "                   [--random-inputs SEED] [--atol A] [--rtol R] [-o OUT.onnx] [--reference] [options]\n\n"
               "Lowers MODEL, runs the original on carve's reference kernels and the lowered model\n"
               "with each Delegate through its backend (the reference simulator for htp, gpu, lpai), and\n"
               "prints the largest absolute and relative error per output. --target may list\n"
               "several lowerings separated by ',' (htp,gpu: each checked on its own; the original\n"
               "runs once); htp+gpu is one lowering for both in priority order, each Delegate run\n"
               "under its own target. Exits 1 when an\n"
               "element breaks |lowered - original| <= atol + rtol * |original|.\n\n"
               "  --input NAME=FILE     value of input NAME (.npy or TensorProto .pb)\n"
               "  --random-inputs SEED  seeded random values for the other inputs (default seed 1)\n"
               "  --atol A, --rtol R    tolerance (default 1e-4 and 1e-3; integers must match exactly)\n"
               "  --expect NAME=FILE    also compare the original's output NAME with FILE (.npy or .pb)\n"
               "                        at the ONNX backend tests' tolerance (atol 1e-7, rtol 1e-3;\n"
               "                        bfloat16: 1e-2); may be repeated\n"
               "  -o OUT.onnx           also save the lowered model; what runs is that file, loaded back\n"
               "  --reference           run the lowered model's Delegates on the reference kernels\n"
               "%s%s",
            cli_threads_help, cli_lower_help);
}

static bool is_float(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

/* --expect NAME=FILE pairs */
typedef struct expect {
    char *name;
    const char *file;
} expect;

/* Prints one line per output; EXIT_MODEL when beyond tolerance. */
static int compare(const char *name, const char *target, carve_tensor *a, carve_tensor *b, double atol, double rtol)
{
    bool same_shape = carve_tensor_dtype(a) == carve_tensor_dtype(b) && carve_tensor_rank(a) == carve_tensor_rank(b);
    for (int d = 0; same_shape && d < carve_tensor_rank(a); d++)
        same_shape = carve_tensor_dims(a)[d] == carve_tensor_dims(b)[d];
    if (!same_shape) {
        printf("FAIL %s %s: %s\n", target, name,
               strcmp(target, "expected") ? "the lowered model gives another dtype or shape"
                                          : "the original gives another dtype or shape than expected");
        return EXIT_MODEL;
    }
    double max_abs = 0, max_rel = 0;
    size_t bad = 0, n = carve_tensor_count(a);
    bool fl = is_float(carve_tensor_dtype(a));
    for (size_t k = 0; k < n; k++) {
        double x = carve_tensor_get(a, k), y = carve_tensor_get(b, k);
        if (isnan(x) && isnan(y))
            continue;
        double d = fabs(x - y);
        if (isnan(d))
            d = INFINITY;
        max_abs = d > max_abs ? d : max_abs;
        if (x != 0 && d / fabs(x) > max_rel)
            max_rel = d / fabs(x);
        if (fl ? !(d <= atol + rtol * fabs(x)) : d != 0)
            bad++;
    }
    printf("%s %s %s: %s, %zu elements, max abs error %.3g, max rel error %.3g\n", bad ? "FAIL" : "ok  ", target, name,
           carve_dtype_name(carve_tensor_dtype(a)), n, max_abs, max_rel);
    if (bad)
        printf("     %zu element%s beyond atol %g rtol %g\n", bad, bad == 1 ? "" : "s", atol, rtol);
    return bad ? EXIT_MODEL : EXIT_OK;
}

int cmd_check(int argc, char **argv)
{
    cli_lower cl = {0};
    cli_inputs ci = {.have_seed = true, .seed = 1};
    const char *path = NULL, *out = NULL;
    double atol = 1e-4, rtol = 1e-3;
    bool reference = false;
    int rc = EXIT_OK;
    expect ex[64];
    size_t n_ex = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            goto done;
        }
        int r = cli_lower_arg(&cl, "check", argc, argv, &i);
        if (r == 0)
            r = cli_inputs_arg(&ci, "check", argc, argv, &i);
        if (r == 0)
            r = cli_threads_arg("check", argc, argv, &i);
        if (r < 0) {
            rc = EXIT_USAGE;
            goto done;
        }
        if (r > 0)
            continue;
        bool has_val = i + 1 < argc;
        if ((!strcmp(a, "--atol") || !strcmp(a, "--rtol")) && has_val) {
            double x = 0;
            if (!cli_parse_double(argv[++i], &x) || !(x >= 0)) {
                rc = cli_usage_error("check", "%s: '%s' is not a tolerance", a, argv[i]);
                goto done;
            }
            *(!strcmp(a, "--atol") ? &atol : &rtol) = x;
        } else if (!strcmp(a, "--reference")) {
            reference = true;
        } else if (!strcmp(a, "--expect")) {
            const char *arg = has_val ? argv[++i] : "";
            const char *eq = strchr(arg, '=');
            if (!eq || eq == arg || !eq[1]) {
                rc = cli_usage_error("check", "--expect takes NAME=FILE");
                goto done;
            }
            if (n_ex == sizeof ex / sizeof *ex) {
                rc = cli_usage_error("check", "--expect given more than %zu times", sizeof ex / sizeof *ex);
                goto done;
            }
            ex[n_ex].name = malloc((size_t)(eq - arg) + 1);
            if (!ex[n_ex].name) {
                fprintf(stderr, "carve check: out of memory\n");
                rc = EXIT_MODEL;
                goto done;
            }
            memcpy(ex[n_ex].name, arg, (size_t)(eq - arg));
            ex[n_ex].name[eq - arg] = 0;
            ex[n_ex++].file = eq + 1;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has_val) {
            out = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            rc = cli_usage_error("check", "unknown option or missing value: '%s'", a);
            goto done;
        } else if (path) {
            rc = cli_usage_error("check", "one model at a time ('%s' and '%s')", path, a);
            goto done;
        } else {
            path = a;
        }
    }
    if (!path) {
        rc = cli_usage_error("check", "no model given");
        goto done;
    }
    if (!cli_lower_check(&cl, "check", true)) {
        rc = EXIT_USAGE;
        goto done;
    }
    if (out && !strcmp(out, "-")) {
        rc = cli_usage_error("check", "-o needs a file: check loads the saved model back and runs it");
        goto done;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *orig = NULL, *low = NULL;
    carve_report *rep = NULL;
    carve_tensor **in = NULL, **o1 = NULL, **o2 = NULL;
    size_t n_in = 0, n_out = 0, n_targets = 0;
    char **targets = NULL;
    rc = EXIT_MODEL;
    /* --target may list several lowerings (htp,gpu: each on its own;
     * htp+gpu: one joint lowering): the original runs once */
    if (cl.target_name && strchr(cl.target_name, ','))
        targets = cli_split_list(cl.target_name, &n_targets);
    if (!cli_lower_setup(&cl, ctx, "check") || !(orig = cli_load(ctx, path)) || !cli_fix_dims(ctx, orig, &ci, "check"))
        goto free_all;
    carve_graph_id g = carve_model_main_graph(orig);
    n_in = carve_graph_input_count(orig, g);
    n_out = carve_graph_output_count(orig, g);
    in = calloc(n_in + 1, sizeof *in);
    o1 = calloc(n_out + 1, sizeof *o1);
    o2 = calloc(n_out + 1, sizeof *o2);
    if (!cli_inputs_make(ctx, orig, &ci, "check", in))
        goto free_all;
    if (carve_model_run(orig, in, o1) != CARVE_OK) {
        fprintf(stderr, "carve check: running the original model: %s\n", cli_errmsg(ctx));
        goto free_all;
    }
    carve_model_trim(orig); /* run once: its buffers would only add to the lowered run's */
    /* the original against the expected values (the ONNX backend tests'
     * tolerance; bfloat16 one step of its 8-bit significand) */
    int ex_rc = EXIT_OK;
    for (size_t k = 0; k < n_ex; k++) {
        size_t i = 0;
        while (i < n_out && strcmp(carve_value_name(orig, carve_graph_output(orig, g, i)), ex[k].name))
            i++;
        carve_tensor *want = NULL;
        if (i == n_out) {
            fprintf(stderr, "carve check: --expect %s: the model has no output named '%s'\n", ex[k].name, ex[k].name);
            goto free_all;
        }
        if (carve_tensor_read(ctx, ex[k].file, &want) != CARVE_OK) {
            fprintf(stderr, "carve check: --expect %s: %s\n", ex[k].name, carve_errmsg(ctx));
            goto free_all;
        }
        if (carve_tensor_dtype(want) == CARVE_UINT16 && carve_tensor_dtype(o1[i]) == CARVE_BFLOAT16) {
            /* ONNX 1.12's test data stores bfloat16 tensors as uint16: the same bits */
            carve_tensor *bt = carve_tensor_new(CARVE_BFLOAT16, carve_tensor_rank(want), carve_tensor_dims(want));
            size_t nb = 0, nw = 0;
            void *db = bt ? carve_tensor_data(bt, &nb) : NULL, *dw = carve_tensor_data(want, &nw);
            if (db && nb == nw)
                memcpy(db, dw, nb);
            carve_tensor_free(want);
            want = bt;
            if (!want) {
                fprintf(stderr, "carve check: out of memory\n");
                goto free_all;
            }
        }
        bool bf = carve_tensor_dtype(want) == CARVE_BFLOAT16;
        if (compare(ex[k].name, "expected", want, o1[i], bf ? 1e-2 : 1e-7, bf ? 1e-2 : 1e-3) != EXIT_OK)
            ex_rc = EXIT_MODEL;
        carve_tensor_free(want);
    }
    rc = ex_rc;
    for (size_t ti = 0; ti < (n_targets ? n_targets : 1) && rc != EXIT_USAGE; ti++) {
        if (ti && !cli_lower_targets(&cl, ctx, "check", targets[ti])) {
            rc = EXIT_MODEL;
            break;
        }
        char tn[512];
        cli_lower_name(&cl, tn, sizeof tn);
        carve_model_free(low);
        carve_report_free(rep);
        rep = NULL;
        if (!(low = cli_load(ctx, path)) || !cli_fix_dims(ctx, low, &ci, "check")) {
            rc = EXIT_MODEL;
            break;
        }
        if (carve_lower_targets(low, (const carve_target *const *)cl.targets, cl.n_targets, &cl.opts, &rep) !=
            CARVE_OK) {
            fprintf(stderr, "carve check: lowering for %s failed: %s\n", tn, cli_errmsg(ctx));
            rc = EXIT_MODEL;
            continue;
        }
        fputs(carve_report_summary(rep), stderr);
        if (out) {
            /* what is written is what is checked: saved, loaded back, run */
            carve_outputs *os = carve_outputs_new(ctx);
            carve_status s = carve_outputs_protect(os, path, "input model");
            for (int k = 0; !s && k < ci.n_ins; k++)
                s = carve_outputs_protect(os, ci.ins[k].value, "input tensor");
            if (!s)
                s = cli_lower_protect(&cl, os);
            if (!s)
                s = carve_outputs_add_model(os, low, out, NULL);
            if (!s)
                s = carve_outputs_commit(os);
            carve_outputs_free(os);
            carve_model *back = NULL;
            if (!s && (s = carve_model_load_file(ctx, out, NULL, &back)) != CARVE_OK)
                fprintf(stderr, "carve check: the saved model %s does not load back: %s\n", out, carve_errmsg(ctx));
            else if (s)
                fprintf(stderr, "carve check: %s\n", cli_errmsg(ctx));
            if (s) {
                rc = EXIT_MODEL;
                break;
            }
            carve_model_free(low);
            low = back;
        }
        for (size_t i = 0; i < n_out; i++) {
            carve_tensor_free(o2[i]);
            o2[i] = NULL;
        }
        carve_model_use_reference(low, reference);
        if (carve_model_run_target(low, cl.target, in, o2) != CARVE_OK) {
            fprintf(stderr, "carve check: running the model lowered for %s: %s\n", tn, cli_errmsg(ctx));
            rc = EXIT_MODEL;
            continue;
        }
        for (size_t i = 0; i < n_out; i++) {
            const char *name = carve_value_name(orig, carve_graph_output(orig, g, i));
            if (compare(name, tn, o1[i], o2[i], atol, rtol) != EXIT_OK)
                rc = EXIT_MODEL;
        }
    }
free_all:
    for (size_t i = 0; i < n_targets; i++)
        free(targets[i]);
    free(targets);
    for (size_t i = 0; in && i < n_in; i++)
        carve_tensor_free(in[i]);
    for (size_t i = 0; i < n_out; i++) {
        carve_tensor_free(o1 ? o1[i] : NULL);
        carve_tensor_free(o2 ? o2[i] : NULL);
    }
    free(in);
    free(o1);
    free(o2);
    carve_report_free(rep);
    carve_model_free(orig);
    carve_model_free(low);
    carve_ctx_free(ctx);
done:
    for (size_t k = 0; k < n_ex; k++)
        free(ex[k].name);
    cli_lower_free(&cl);
    cli_inputs_free(&ci);
    return rc;
}

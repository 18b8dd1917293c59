/* cmd_run.c: `carve run MODEL [--input NAME=FILE]... [--random-inputs SEED]
 * [--dim NAME=VALUE]... [--output-dir DIR]`. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "ops/blas.h"
#include "carve_backend.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: carve run MODEL [--input NAME=FILE]... [--random-inputs SEED]\n"
               "                 [--dim NAME=VALUE]... [--output-dir DIR] [--dump-values DIR]\n"
               "                 [--backend-lib PATH] [--reference]\n\n"
               "Runs the model on carve's reference CPU kernels (If/Loop/Scan bodies included)\n"
               "and prints a summary of each output. Each Delegate of a lowered model runs through\n"
               "the backend it records (compiled once, kept for --repeat).\n\n"
               "  --input NAME=FILE     value of input NAME, a .npy file or an ONNX TensorProto (.pb)\n"
               "  --random-inputs SEED  fill every input not given with seeded random values\n"
               "                        (floats in [-1,1), integers in [0,10), booleans)\n"
               "  --dim NAME=VALUE      size of symbolic dim NAME for random inputs (default 1)\n"
               "  --repeat N            run N times (1 to 10^9) and print the time per run and peak memory\n"
               "  --warmup N            with --repeat: first run N more times, untimed (0 to 10^6; default 0),\n"
               "                        and print the first run's time (it loads and compiles each\n"
               "                        Delegate's backend) on a line of its own\n"
               "  --output-dir DIR      write each output as DIR/<name>.npy (.pb for dtypes numpy lacks),\n"
               "                        and the inputs used as DIR/inputs/<name>.npy; characters a file\n"
               "                        name cannot hold become _, and two outputs that would then share\n"
               "                        a file are refused (nothing is written)\n"
               "  --reference           run every Delegate's body on the reference kernels (the target's\n"
               "                        simulator) whatever backend it records\n"
               "  --dump-values DIR     also write every value the run computes (inputs, subgraph and\n"
               "                        Delegate bodies included; a Loop body's first iteration) as\n"
               "                        DIR/<name>.npy (.pb for dtypes numpy lacks; names made\n"
               "                        file-safe and distinct) and DIR/index.json mapping each\n"
               "                        value name to its file (docs/artifacts.md)\n"
               "%s%s", cli_backends_help, cli_threads_help);
}

static void summary(const carve_model *m, carve_value_id v, carve_tensor *t)
{
    printf("%s: %s[", carve_value_name(m, v), carve_dtype_name(carve_tensor_dtype(t)));
    size_t n = 1;
    for (int i = 0; i < carve_tensor_rank(t); i++) {
        printf("%s%lld", i ? "," : "", (long long)carve_tensor_dims(t)[i]);
        n *= (size_t)carve_tensor_dims(t)[i];
    }
    printf("]");
    n = carve_tensor_count(t);
    carve_dtype dt = carve_tensor_dtype(t);
    if (dt != CARVE_STRING && n) {
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        for (size_t i = 0; i < n; i++) {
            double x = carve_tensor_get(t, i);
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
            sum += x;
        }
        printf(" min %.6g max %.6g mean %.6g first:", lo, hi, sum / (double)n);
        for (size_t i = 0; i < n && i < 4; i++)
            printf(" %.6g", carve_tensor_get(t, i));
    }
    printf("\n");
}

static const char *ext_for(carve_dtype t)
{
    switch (t) {
    case CARVE_BFLOAT16: case CARVE_STRING: case CARVE_INT4: case CARVE_UINT4: case CARVE_FLOAT4E2M1:
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return ".pb";
    default: return ".npy";
    }
}

/* The files of one --output-dir folder: sanitized names must not collide. */
typedef struct {
    const char *dir;
    char **files;
    const char **tensors;
    size_t n;
} dump_dir;

/* DIR/<name>.npy into the set, with characters a file name cannot hold
 * replaced by '_'; two tensors whose names become one file are refused. */
static int add_value(carve_outputs *o, carve_ctx *ctx, dump_dir *d, const char *name, const carve_tensor *t)
{
    char file[4096], clean[256];
    snprintf(clean, sizeof clean, "%s", name);
    for (char *c = clean; *c; c++)
        if (*c == '/' || *c == '\\' || *c == ':' || *c == ' ')
            *c = '_';
    if (!strcmp(clean, ".") || !strcmp(clean, "..") || !*clean)
        clean[0] = '_';
    snprintf(file, sizeof file, "%s/%s%s", d->dir, clean, ext_for(carve_tensor_dtype(t)));
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->files[i], file)) {
            fprintf(stderr, "carve run: outputs '%s' and '%s' would both be written to %s: nothing was written\n",
                    d->tensors[i], name, file);
            return EXIT_MODEL;
        }
    char **f = realloc(d->files, (d->n + 1) * sizeof *f);
    const char **tn = f ? realloc(d->tensors, (d->n + 1) * sizeof *tn) : NULL;
    if (f)
        d->files = f;
    if (tn)
        d->tensors = tn;
    if (!f || !tn || !(d->files[d->n] = strdup(file))) {
        fprintf(stderr, "carve run: out of memory\n");
        return EXIT_MODEL;
    }
    d->tensors[d->n++] = name;
    if (carve_outputs_add_tensor(o, t, file) != CARVE_OK) {
        fprintf(stderr, "carve run: %s\n", cli_errmsg(ctx));
        return EXIT_MODEL;
    }
    return EXIT_OK;
}

static void dump_dir_free(dump_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->files[i]);
    free(d->files);
    free(d->tensors);
}

/* mkdir that says whether it made the folder; false: printed why. */
static bool make_dir(const char *dir, const char *opt, bool *made)
{
    struct stat st;
    *made = false;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return true;
        fprintf(stderr, "carve run: %s %s: not a folder\n", opt, dir);
        return false;
    }
    if (mkdir(dir, 0777) != 0) {
        fprintf(stderr, "carve run: %s: %s\n", dir, strerror(errno));
        return false;
    }
    *made = true;
    return true;
}

/* --dump-values: each value the run computes goes into the set as it is
 * computed; a value computed again (a Loop body's) keeps its first. */
typedef struct {
    carve_outputs *o;
    carve_ctx *ctx;
    const carve_model *m;
    const char *dir;
    char **names, **stems, **shapes;
    carve_dtype *dts;
    bool *input;
    size_t n, cap;
    int rc;
} dumper;

/* A file-safe stem for value `name`, distinct from the n stems in used[]:
 * characters other than [A-Za-z0-9._-] become '_', a clash gets ~2, ~3... */
static char *dump_stem(const char *name, char **used, size_t n)
{
    char base[200];
    size_t k = 0;
    for (const char *c = name; *c && k + 1 < sizeof base; c++)
        base[k++] = (strchr("._-", *c) || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))
                        ? *c : '_';
    base[k] = 0;
    if (!k || base[0] == '.')
        base[0] = '_', base[k ? k : 1] = 0;
    char *out = malloc(sizeof base + 16);
    if (!out)
        return NULL;
    snprintf(out, sizeof base + 16, "%s", base);
    for (unsigned t = 2;; t++) {
        bool clash = !strcmp(out, "index");
        for (size_t i = 0; i < n && !clash; i++)
            clash = !strcmp(used[i], out);
        if (!clash)
            return out;
        snprintf(out, sizeof base + 16, "%s~%u", base, t);
    }
}

/* Appends s to buf (grown as needed); quoted: as a JSON string. */
static bool json_put(char **buf, size_t *len, size_t *cap, const char *s, bool quoted)
{
    size_t need = *len + (quoted ? 6 * strlen(s) + 3 : strlen(s)) + 1;
    if (need > *cap) {
        char *b = realloc(*buf, need * 2);
        if (!b)
            return false;
        *buf = b;
        *cap = need * 2;
    }
    char *p = *buf + *len;
    if (!quoted) {
        memcpy(p, s, strlen(s) + 1);
        *len += strlen(s);
        return true;
    }
    *p++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            *p++ = '\\', *p++ = (char)*c;
        else if (*c < 0x20)
            p += sprintf(p, "\\u%04x", *c);
        else
            *p++ = (char)*c;
    }
    *p++ = '"';
    *p = 0;
    *len = (size_t)(p - *buf);
    return true;
}

static void dump_one(dumper *d, const char *name, const carve_tensor *t, bool input)
{
    if (d->rc != EXIT_OK)
        return;
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->names[i], name))
            return; /* computed again (a Loop body): the first stays */
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 256;
        char **a = realloc(d->names, cap * sizeof *a);
        if (a)
            d->names = a;
        char **b = a ? realloc(d->stems, cap * sizeof *b) : NULL;
        if (b)
            d->stems = b;
        char **c = b ? realloc(d->shapes, cap * sizeof *c) : NULL;
        if (c)
            d->shapes = c;
        carve_dtype *e = c ? realloc(d->dts, cap * sizeof *e) : NULL;
        if (e)
            d->dts = e;
        bool *f = e ? realloc(d->input, cap * sizeof *f) : NULL;
        if (!f) {
            fprintf(stderr, "carve run: out of memory\n");
            d->rc = EXIT_MODEL;
            return;
        }
        d->input = f;
        d->cap = cap;
    }
    size_t i = d->n;
    char dims[600] = "", path[4400];
    for (int k = 0; k < carve_tensor_rank(t); k++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%lld", k ? ", " : "",
                 (long long)carve_tensor_dims(t)[k]);
    d->names[i] = strdup(name);
    d->stems[i] = dump_stem(name, d->stems, i);
    d->shapes[i] = strdup(dims);
    d->dts[i] = carve_tensor_dtype(t);
    d->input[i] = input;
    d->n++;
    if (!d->names[i] || !d->stems[i] || !d->shapes[i]) {
        fprintf(stderr, "carve run: out of memory\n");
        d->rc = EXIT_MODEL;
        return;
    }
    snprintf(path, sizeof path, "%s/%s%s", d->dir, d->stems[i], ext_for(d->dts[i]));
    if (carve_outputs_add_tensor(d->o, t, path) != CARVE_OK) {
        fprintf(stderr, "carve run: %s\n", carve_errmsg(d->ctx));
        d->rc = EXIT_MODEL;
    }
}

static void dump_traced(void *user, carve_value_id v, const carve_tensor *t)
{
    dumper *d = user;
    carve_node_id p = carve_value_producer(d->m, v);
    if (p == CARVE_NONE || strcmp(carve_node_op(d->m, p), "Constant")) /* a Constant is not computed */
        dump_one(d, carve_value_name(d->m, v), t, false);
}

/* DIR/index.json into the set: each value's name, file, dtype and shape. */
static int dump_index(dumper *d)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    bool ok = json_put(&buf, &len, &cap, "{\n  \"format\": \"carve.values\",\n  \"values\": [", false);
    for (size_t i = 0; ok && i < d->n; i++) {
        char file[300], tail[800];
        snprintf(file, sizeof file, "%s%s", d->stems[i], ext_for(d->dts[i]));
        snprintf(tail, sizeof tail, ", \"dtype\": \"%s\", \"shape\": [%s]%s}", carve_dtype_name(d->dts[i]),
                 d->shapes[i], d->input[i] ? ", \"input\": true" : "");
        ok = json_put(&buf, &len, &cap, i ? ",\n    {\"name\": " : "\n    {\"name\": ", false) &&
             json_put(&buf, &len, &cap, d->names[i], true) && json_put(&buf, &len, &cap, ", \"file\": ", false) &&
             json_put(&buf, &len, &cap, file, true) && json_put(&buf, &len, &cap, tail, false);
    }
    ok = ok && json_put(&buf, &len, &cap, "\n  ]\n}\n", false);
    char path[4400];
    snprintf(path, sizeof path, "%s/index.json", d->dir);
    int rc = ok && carve_outputs_add_bytes(d->o, path, "value index", buf, len) == CARVE_OK ? EXIT_OK : EXIT_MODEL;
    if (!ok)
        fprintf(stderr, "carve run: out of memory\n");
    else if (rc)
        fprintf(stderr, "carve run: %s\n", carve_errmsg(d->ctx));
    free(buf);
    return rc;
}

static void dump_free(dumper *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->names[i]);
        free(d->stems[i]);
        free(d->shapes[i]);
    }
    free(d->names), free(d->stems), free(d->shapes), free(d->dts), free(d->input);
    carve_outputs_free(d->o);
}

int cmd_run(int argc, char **argv)
{
    const char *path = NULL, *outdir = NULL, *dumpdir = NULL;
    cli_inputs ci = {0};
    cli_backends cb = {0};
    bool reference = false;
    long repeat = 0, warmup = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout), EXIT_OK;
        bool has_val = i + 1 < argc;
        int r = cli_inputs_arg(&ci, "run", argc, argv, &i);
        if (r == 0)
            r = cli_backends_arg(&cb, "run", argc, argv, &i);
        if (r == 0)
            r = cli_threads_arg("run", argc, argv, &i);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (!strcmp(a, "--reference")) {
            reference = true;
        } else if (!strcmp(a, "--repeat")) {
            uint64_t x = 0;
            if (!has_val || !cli_parse_u64(argv[++i], 1000000000, &x) || x < 1) {
                cli_inputs_free(&ci);
                return cli_usage_error("run", "--repeat takes a count from 1 to 1000000000");
            }
            repeat = (long)x;
        } else if (!strcmp(a, "--warmup")) {
            uint64_t x = 0;
            if (!has_val || !cli_parse_u64(argv[++i], 1000000, &x)) {
                cli_inputs_free(&ci);
                return cli_usage_error("run", "--warmup takes a count from 0 to 1000000");
            }
            warmup = (long)x;
        } else if (!strcmp(a, "--output-dir")) {
            if (!has_val)
                return cli_usage_error("run", "--output-dir takes a folder");
            outdir = argv[++i];
        } else if (!strcmp(a, "--dump-values")) {
            if (!has_val)
                return cli_usage_error("run", "--dump-values takes a folder");
            dumpdir = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("run", "unknown option '%s'", a);
        } else if (path) {
            return cli_usage_error("run", "one model at a time ('%s' and '%s')", path, a);
        } else {
            path = a;
        }
    }
    if (!path)
        return cli_usage_error("run", "no model given");
    if (warmup && !repeat) {
        cli_inputs_free(&ci);
        return cli_usage_error("run", "--warmup goes with --repeat");
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = cli_backends_load(ctx, &cb, "run") ? cli_load(ctx, path) : NULL;
    if (m && reference)
        carve_model_use_reference(m, true);
    if (!m) {
        carve_ctx_free(ctx);
        return EXIT_MODEL;
    }
    carve_graph_id g = carve_model_main_graph(m);
    size_t n_in = carve_graph_input_count(m, g), n_out = carve_graph_output_count(m, g);
    carve_tensor **in = calloc(n_in + 1, sizeof *in), **out = calloc(n_out + 1, sizeof *out);
    int rc = cli_inputs_make(ctx, m, &ci, "run", in) ? EXIT_OK : EXIT_MODEL;
    /* --dump-values: one set of outputs, committed after the run, or none */
    dumper dump = {NULL, ctx, m, dumpdir, NULL, NULL, NULL, NULL, NULL, 0, 0, EXIT_OK};
    bool made_dump = false;
    if (rc == EXIT_OK && dumpdir) {
        dump.o = carve_outputs_new(ctx);
        carve_status s = carve_outputs_protect(dump.o, path, "input model");
        for (int k = 0; !s && k < ci.n_ins; k++)
            s = carve_outputs_protect(dump.o, ci.ins[k].value, "input tensor");
        if (s)
            fprintf(stderr, "carve run: %s\n", carve_errmsg(ctx));
        if (s || !make_dir(dumpdir, "--dump-values", &made_dump))
            rc = dump.rc = EXIT_MODEL;
        for (size_t i = 0; rc == EXIT_OK && i < n_in; i++)
            if (in[i])
                dump_one(&dump, carve_value_name(m, carve_graph_input(m, g, i)), in[i], true);
        rc = dump.rc;
    }
    double best = 1e300, total = 0, first = 0;
    /* OpenBLAS loads on the first GEMM: here, before the clock starts (it
     * loaded with the process before, and a process's start is not a run) */
    cv_blas_preload();
    for (long r = 0; rc == EXIT_OK && r < warmup + (repeat ? repeat : 1); r++) {
        for (size_t i = 0; i < n_out; i++) {
            carve_tensor_free(out[i]);
            out[i] = NULL;
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (carve_model_run_traced(m, NULL, in, out, dumpdir && r == 0 ? dump_traced : NULL, &dump) != CARVE_OK) {
            fprintf(stderr, "carve run: %s\n", cli_errmsg(ctx));
            rc = EXIT_MODEL;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (r == 0)
            first = ms;
        if (r >= warmup) {
            total += ms;
            best = ms < best ? ms : best;
        }
    }
    if (rc == EXIT_OK && repeat) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double mean = total / (double)repeat;
        int dec = mean < 10 ? 3 : 1; /* short runs (a VAD frame) need the digits */
        if (warmup)
            printf("first run: %.*f ms (one of %ld warm-up runs, not in the time per run)\n", dec, first, warmup);
        printf("time per run: %.*f ms mean, %.*f ms best over %ld runs; peak memory %.1f MiB\n", dec, mean, dec, best,
               repeat, (double)ru.ru_maxrss / 1024.0);
    }
    if (rc == EXIT_OK && dumpdir) {
        rc = dump.rc;
        if (rc == EXIT_OK)
            rc = dump_index(&dump);
        if (rc == EXIT_OK && carve_outputs_commit(dump.o) != CARVE_OK) {
            fprintf(stderr, "carve run: %s\n", carve_errmsg(ctx));
            rc = EXIT_MODEL;
        }
    }
    if (dumpdir) {
        dump_free(&dump); /* an uncommitted set removes its temporaries */
        if (rc != EXIT_OK && made_dump)
            rmdir(dumpdir);
    }
    for (size_t i = 0; i < n_out && rc == EXIT_OK; i++)
        summary(m, carve_graph_output(m, g, i), out[i]);
    if (rc == EXIT_OK && outdir) {
        /* all dumps in one set: written, then renamed, or none */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/inputs", outdir);
        dump_dir din = {dir, NULL, NULL, 0}, dout = {outdir, NULL, NULL, 0};
        bool made_out = false, made_in = false;
        carve_outputs *o = carve_outputs_new(ctx);
        carve_status s = carve_outputs_protect(o, path, "input model");
        for (int k = 0; !s && k < ci.n_ins; k++)
            s = carve_outputs_protect(o, ci.ins[k].value, "input tensor");
        if (s) {
            fprintf(stderr, "carve run: %s\n", cli_errmsg(ctx));
            rc = EXIT_MODEL;
        }
        if (rc == EXIT_OK && (!make_dir(outdir, "--output-dir", &made_out) || !make_dir(dir, "--output-dir", &made_in)))
            rc = EXIT_MODEL;
        for (size_t i = 0; i < n_in && rc == EXIT_OK; i++)
            if (in[i])
                rc = add_value(o, ctx, &din, carve_value_name(m, carve_graph_input(m, g, i)), in[i]);
        for (size_t i = 0; i < n_out && rc == EXIT_OK; i++)
            rc = add_value(o, ctx, &dout, carve_value_name(m, carve_graph_output(m, g, i)), out[i]);
        if (rc == EXIT_OK && carve_outputs_commit(o) != CARVE_OK) {
            fprintf(stderr, "carve run: %s\n", cli_errmsg(ctx));
            rc = EXIT_MODEL;
        }
        carve_outputs_free(o);
        if (rc != EXIT_OK && made_in)
            rmdir(dir);
        if (rc != EXIT_OK && made_out)
            rmdir(outdir);
        dump_dir_free(&din);
        dump_dir_free(&dout);
    }
    for (size_t i = 0; i < n_in; i++)
        carve_tensor_free(in[i]);
    for (size_t i = 0; i < n_out; i++)
        carve_tensor_free(out[i]);
    free(in);
    free(out);
    cli_inputs_free(&ci);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

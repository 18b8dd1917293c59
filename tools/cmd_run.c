/* cmd_run.c: `carve run MODEL [--input NAME=FILE]... [--random-inputs SEED]
 * [--dim NAME=VALUE]... [--output-dir DIR]`. */
#define _DEFAULT_SOURCE
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: carve run MODEL [--input NAME=FILE]... [--random-inputs SEED]\n"
               "                 [--dim NAME=VALUE]... [--output-dir DIR]\n\n"
               "Runs the model on carve's reference CPU kernels (If/Loop/Scan bodies and\n"
               "delegate bodies included) and prints a summary of each output.\n\n"
               "  --input NAME=FILE     value of input NAME, a .npy file or an ONNX TensorProto (.pb)\n"
               "  --random-inputs SEED  fill every input not given with seeded random values\n"
               "                        (floats in [-1,1), integers in [0,10), booleans)\n"
               "  --dim NAME=VALUE      size of symbolic dim NAME for random inputs (default 1)\n"
               "  --output-dir DIR      write each output as DIR/<name>.npy (.pb for dtypes numpy lacks),\n"
               "                        and the inputs used as DIR/inputs/<name>.npy\n");
}

typedef struct {
    const char *name;
    const char *value;
} kv;

static bool split_kv(const char *arg, kv *out)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return false;
    char *name = strndup(arg, (size_t)(eq - arg));
    *out = (kv){name, eq + 1};
    return true;
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static carve_tensor *random_input(const carve_model *m, carve_value_id v, uint64_t *seed, const kv *dims, int n_dims,
                                  char *err, size_t errsz)
{
    if (carve_value_type_kind(m, v) != CARVE_TYPE_TENSOR || carve_value_rank(m, v) < 0) {
        snprintf(err, errsz, "input '%s' has no known tensor shape: give it with --input", carve_value_name(m, v));
        return NULL;
    }
    int r = carve_value_rank(m, v);
    int64_t d[CARVE_MAX_RANK];
    for (int i = 0; i < r; i++) {
        carve_dim x = carve_value_dim(m, v, i);
        d[i] = x.value >= 0 ? x.value : 1;
        for (int k = 0; x.param && k < n_dims; k++)
            if (!strcmp(dims[k].name, x.param))
                d[i] = strtoll(dims[k].value, NULL, 10);
    }
    carve_dtype dt = carve_value_dtype(m, v);
    carve_tensor *t = carve_tensor_new(dt, r, d);
    if (!t) {
        snprintf(err, errsz, "input '%s': cannot make a %s tensor of that shape", carve_value_name(m, v),
                 carve_dtype_name(dt));
        return NULL;
    }
    bool is_float = dt == CARVE_FLOAT || dt == CARVE_DOUBLE || dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16;
    bool is_int = dt == CARVE_INT8 || dt == CARVE_UINT8 || dt == CARVE_INT16 || dt == CARVE_UINT16 ||
                  dt == CARVE_INT32 || dt == CARVE_UINT32 || dt == CARVE_INT64 || dt == CARVE_UINT64;
    if (!is_float && !is_int && dt != CARVE_BOOL) {
        snprintf(err, errsz, "input '%s': random values of %s are not supported; give it with --input",
                 carve_value_name(m, v), carve_dtype_name(dt));
        carve_tensor_free(t);
        return NULL;
    }
    for (size_t i = 0; i < carve_tensor_count(t); i++) {
        double u = (double)rng_next(seed) / 9007199254740992.0;
        carve_tensor_set(t, i, is_float ? u * 2 - 1 : is_int ? floor(u * 10) : (double)(u < 0.5));
    }
    return t;
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

/* DIR/<name>.npy, with characters a file name cannot hold replaced by '_'. */
static int write_value(carve_ctx *ctx, const char *dir, const char *name, const carve_tensor *t)
{
    char file[4096], clean[256];
    snprintf(clean, sizeof clean, "%s", name);
    for (char *c = clean; *c; c++)
        if (*c == '/' || *c == '\\' || *c == ':' || *c == ' ')
            *c = '_';
    snprintf(file, sizeof file, "%s/%s%s", dir, clean, ext_for(carve_tensor_dtype(t)));
    if (carve_tensor_write(ctx, t, file) != CARVE_OK) {
        fprintf(stderr, "carve run: %s\n", carve_errmsg(ctx));
        return EXIT_MODEL;
    }
    return EXIT_OK;
}

int cmd_run(int argc, char **argv)
{
    const char *path = NULL, *outdir = NULL;
    kv ins[64], dims[64];
    int n_ins = 0, n_dims = 0;
    bool have_seed = false;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout), EXIT_OK;
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "--input")) {
            if (!has_val || n_ins == 64 || !split_kv(argv[++i], &ins[n_ins++]))
                return cli_usage_error("run", "--input takes NAME=FILE");
        } else if (!strcmp(a, "--dim")) {
            if (!has_val || n_dims == 64 || !split_kv(argv[++i], &dims[n_dims++]))
                return cli_usage_error("run", "--dim takes NAME=VALUE");
            char *e;
            long long x = strtoll(dims[n_dims - 1].value, &e, 10);
            if (*e || x < 0)
                return cli_usage_error("run", "--dim %s: '%s' is not a size", dims[n_dims - 1].name, dims[n_dims - 1].value);
        } else if (!strcmp(a, "--random-inputs")) {
            char *e;
            if (!has_val)
                return cli_usage_error("run", "--random-inputs takes a seed");
            seed = strtoull(argv[++i], &e, 10);
            if (*e)
                return cli_usage_error("run", "--random-inputs: '%s' is not a number", argv[i]);
            have_seed = true;
        } else if (!strcmp(a, "--output-dir")) {
            if (!has_val)
                return cli_usage_error("run", "--output-dir takes a folder");
            outdir = argv[++i];
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
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = cli_load(ctx, path);
    if (!m) {
        carve_ctx_free(ctx);
        return EXIT_MODEL;
    }
    carve_graph_id g = carve_model_main_graph(m);
    size_t n_in = carve_graph_input_count(m, g), n_out = carve_graph_output_count(m, g);
    carve_tensor **in = calloc(n_in + 1, sizeof *in), **out = calloc(n_out + 1, sizeof *out);
    int rc = EXIT_OK;
    for (int k = 0; k < n_ins && rc == EXIT_OK; k++) {
        size_t i = 0;
        while (i < n_in && strcmp(carve_value_name(m, carve_graph_input(m, g, i)), ins[k].name))
            i++;
        if (i == n_in) {
            fprintf(stderr, "carve run: the model has no input '%s'\n", ins[k].name);
            rc = EXIT_MODEL;
        } else if (carve_tensor_read(ctx, ins[k].value, &in[i]) != CARVE_OK) {
            fprintf(stderr, "carve run: input '%s': %s\n", ins[k].name, carve_errmsg(ctx));
            rc = EXIT_MODEL;
        }
    }
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n_in && rc == EXIT_OK; i++) {
        carve_value_id v = carve_graph_input(m, g, i);
        if (in[i] || !have_seed || carve_value_data(m, v, NULL))
            continue;
        char err[512];
        in[i] = random_input(m, v, &s, dims, n_dims, err, sizeof err);
        if (!in[i]) {
            fprintf(stderr, "carve run: %s\n", err);
            rc = EXIT_MODEL;
        }
    }
    if (rc == EXIT_OK && carve_model_run(m, in, out) != CARVE_OK) {
        fprintf(stderr, "carve run: %s\n", carve_errmsg(ctx));
        rc = EXIT_MODEL;
    }
    if (rc == EXIT_OK && outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "carve run: %s: %s\n", outdir, strerror(errno));
        rc = EXIT_MODEL;
    }
    if (rc == EXIT_OK && outdir) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/inputs", outdir);
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "carve run: %s: %s\n", dir, strerror(errno));
            rc = EXIT_MODEL;
        }
        for (size_t i = 0; i < n_in && rc == EXIT_OK; i++)
            if (in[i])
                rc = write_value(ctx, dir, carve_value_name(m, carve_graph_input(m, g, i)), in[i]);
    }
    for (size_t i = 0; i < n_out && rc == EXIT_OK; i++) {
        carve_value_id v = carve_graph_output(m, g, i);
        summary(m, v, out[i]);
        if (outdir)
            rc = write_value(ctx, outdir, carve_value_name(m, v), out[i]);
    }
    for (size_t i = 0; i < n_in; i++)
        carve_tensor_free(in[i]);
    for (size_t i = 0; i < n_out; i++)
        carve_tensor_free(out[i]);
    free(in);
    free(out);
    for (int k = 0; k < n_ins; k++)
        free((char *)ins[k].name);
    for (int k = 0; k < n_dims; k++)
        free((char *)dims[k].name);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

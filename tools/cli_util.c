/* cli_util.c: helpers the commands share. */
#include "cli.h"
#include "carve_backend.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "carve%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'carve %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return EXIT_USAGE;
}

const char *cli_errmsg(carve_ctx *ctx)
{
    static char buf[2048];
    const char *msg = carve_errmsg(ctx);
    if (!strncmp(msg, "cpu_nodes: ", 11))
        snprintf(buf, sizeof buf, "--cpu-nodes: %s ('carve inspect --nodes' lists them)", msg + 11);
    else if (!strncmp(msg, "cpu_ops: ", 9))
        snprintf(buf, sizeof buf, "--cpu-ops: %s", msg + 9);
    else if (strstr(msg, "' is not registered"))
        snprintf(buf, sizeof buf, "%s; 'carve targets' lists the backends, --backend-lib FILE loads a plugin%s", msg,
                 !strncmp(msg, "Delegate ", 9) ? ", --reference runs the body on the reference kernels" : "");
    else if (!strncmp(msg, "Delegate ", 9) && strstr(msg, "' is not available here: "))
        snprintf(buf, sizeof buf, "%s; --reference runs the body on the reference kernels", msg);
    else
        return msg;
    return buf;
}

carve_model *cli_load(carve_ctx *ctx, const char *path)
{
    carve_model *m = NULL;
    if (carve_model_load_file(ctx, path, NULL, &m) != CARVE_OK) {
        fprintf(stderr, "carve: %s\n", carve_errmsg(ctx));
        return NULL;
    }
    return m;
}

const char *cli_type_str(const carve_model *m, carve_value_id v, char *buf, size_t n)
{
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, __VA_ARGS__))
    switch (carve_value_type_kind(m, v)) {
    case CARVE_TYPE_UNKNOWN: PUT("?"); return buf;
    case CARVE_TYPE_OTHER: PUT("(non-tensor)"); return buf;
    case CARVE_TYPE_TENSOR: break;
    }
    PUT("%s", carve_dtype_name(carve_value_dtype(m, v)));
    int r = carve_value_rank(m, v);
    if (r < 0) {
        PUT("[*]");
        return buf;
    }
    PUT("[");
    for (int i = 0; i < r; i++) {
        carve_dim d = carve_value_dim(m, v, i);
        if (d.param)
            PUT("%s%s", i ? "," : "", d.param);
        else if (d.value >= 0)
            PUT("%s%lld", i ? "," : "", (long long)d.value);
        else
            PUT("%s?", i ? "," : "");
    }
    PUT("]");
#undef PUT
    return buf;
}

int cli_threads_arg(const char *cmd, int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--threads"))
        return 0;
    char *e = NULL;
    long x = *i + 1 < argc ? strtol(argv[*i + 1], &e, 10) : 0;
    if (!e || *e || x < 1 || x > 256) {
        cli_usage_error(cmd, "--threads takes a count from 1 to 256%s%s%s", e ? " ('" : "", e ? argv[*i + 1] : "",
                        e ? "')" : "");
        return -1;
    }
    ++*i;
    carve_set_threads((int)x);
    return 1;
}

const char *cli_threads_help =
    "  --threads N           threads of the CPU kernels' BLAS and of backends (default 1);\n"
    "                        one setting for the whole process (carve_set_threads)\n";

int cli_inputs_arg(cli_inputs *ci, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    bool has_val = *i + 1 < argc;
    cli_kv *kv = NULL;
    if (!strcmp(a, "--input") || !strcmp(a, "--dim")) {
        bool is_in = !strcmp(a, "--input");
        int *n = is_in ? &ci->n_ins : &ci->n_dims;
        if (*n == 64) {
            cli_usage_error(cmd, "%s given more than 64 times", a);
            return -1;
        }
        const char *arg = has_val ? argv[++*i] : "";
        const char *eq = strchr(arg, '=');
        if (!eq || eq == arg || !eq[1]) {
            cli_usage_error(cmd, "%s takes %s", a, is_in ? "NAME=FILE" : "NAME=VALUE");
            return -1;
        }
        kv = is_in ? &ci->ins[(*n)++] : &ci->dims[(*n)++];
        kv->name = malloc((size_t)(eq - arg) + 1);
        if (!kv->name) {
            (*n)--;
            cli_usage_error(cmd, "out of memory");
            return -1;
        }
        memcpy(kv->name, arg, (size_t)(eq - arg));
        kv->name[eq - arg] = 0;
        kv->value = eq + 1;
        uint64_t x;
        if (!is_in && !cli_parse_u64(kv->value, CLI_MAX_DIM, &x)) {
            cli_usage_error(cmd, "--dim %s: '%s' is not a size (digits, at most %llu)", kv->name, kv->value,
                            (unsigned long long)CLI_MAX_DIM);
            free(kv->name); /* a refused option leaves nothing behind */
            kv->name = NULL;
            (*n)--;
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--random-inputs")) {
        if (!has_val) {
            cli_usage_error(cmd, "--random-inputs takes a seed");
            return -1;
        }
        if (!cli_parse_u64(argv[++*i], UINT64_MAX, &ci->seed)) {
            cli_usage_error(cmd, "--random-inputs: '%s' is not a seed (digits, at most %llu)", argv[*i],
                            (unsigned long long)UINT64_MAX);
            return -1;
        }
        ci->have_seed = true;
        return 1;
    }
    return 0;
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static carve_tensor *random_input(const carve_model *m, carve_value_id v, uint64_t *seed, const cli_inputs *ci,
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
        for (int k = 0; x.param && k < ci->n_dims; k++)
            if (!strcmp(ci->dims[k].name, x.param))
                d[i] = strtoll(ci->dims[k].value, NULL, 10);
    }
    carve_dtype dt = carve_value_dtype(m, v);
    bool is_float = dt == CARVE_FLOAT || dt == CARVE_DOUBLE || dt == CARVE_FLOAT16 || dt == CARVE_BFLOAT16;
    bool is_int = dt == CARVE_INT8 || dt == CARVE_UINT8 || dt == CARVE_INT16 || dt == CARVE_UINT16 ||
                  dt == CARVE_INT32 || dt == CARVE_UINT32 || dt == CARVE_INT64 || dt == CARVE_UINT64;
    if (!is_float && !is_int && dt != CARVE_BOOL) {
        snprintf(err, errsz, "input '%s': random values of %s are not supported; give it with --input",
                 carve_value_name(m, v), carve_dtype_name(dt));
        return NULL;
    }
    carve_tensor *t = carve_tensor_new(dt, r, d);
    if (!t) {
        snprintf(err, errsz, "input '%s': cannot make a %s tensor of that shape", carve_value_name(m, v),
                 carve_dtype_name(dt));
        return NULL;
    }
    for (size_t i = 0; i < carve_tensor_count(t); i++) {
        double u = (double)rng_next(seed) / 9007199254740992.0;
        carve_tensor_set(t, i, is_float ? u * 2 - 1 : is_int ? (double)(int)(u * 10) : (double)(u < 0.5));
    }
    return t;
}

bool cli_inputs_make(carve_ctx *ctx, const carve_model *m, const cli_inputs *ci, const char *cmd, carve_tensor **in)
{
    carve_graph_id g = carve_model_main_graph(m);
    size_t n_in = carve_graph_input_count(m, g);
    for (int k = 0; k < ci->n_ins; k++) {
        size_t i = 0;
        while (i < n_in && strcmp(carve_value_name(m, carve_graph_input(m, g, i)), ci->ins[k].name))
            i++;
        if (i == n_in) {
            fprintf(stderr, "carve %s: the model has no input '%s'\n", cmd, ci->ins[k].name);
            return false;
        }
        carve_tensor_free(in[i]);
        in[i] = NULL;
        if (carve_tensor_read(ctx, ci->ins[k].value, &in[i]) != CARVE_OK) {
            fprintf(stderr, "carve %s: input '%s': %s\n", cmd, ci->ins[k].name, carve_errmsg(ctx));
            return false;
        }
    }
    uint64_t s = ci->seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n_in; i++) {
        carve_value_id v = carve_graph_input(m, g, i);
        if (in[i] || !ci->have_seed || carve_value_data(m, v, NULL))
            continue;
        char err[512];
        in[i] = random_input(m, v, &s, ci, err, sizeof err);
        if (!in[i]) {
            fprintf(stderr, "carve %s: %s\n", cmd, err);
            return false;
        }
    }
    return true;
}

void cli_inputs_free(cli_inputs *ci)
{
    for (int k = 0; k < ci->n_ins; k++)
        free(ci->ins[k].name);
    for (int k = 0; k < ci->n_dims; k++)
        free(ci->dims[k].name);
    ci->n_ins = ci->n_dims = 0;
}

bool cli_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    /* digits only: no sign, no blanks, no base prefix, nothing after */
    if (!s || !*s)
        return false;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (x > (max - d) / 10)
            return false;
        x = x * 10 + d;
    }
    *out = x;
    return true;
}

bool cli_parse_bytes(const char *s, size_t *out)
{
    if (!s || !*s)
        return false;
    size_t n = strlen(s);
    unsigned shift = 0;
    char last = s[n - 1];
    if (last == 'k' || last == 'K')
        shift = 10;
    else if (last == 'M')
        shift = 20;
    else if (last == 'G')
        shift = 30;
    char digits[32];
    size_t nd = n - (shift ? 1 : 0);
    if (nd == 0 || nd >= sizeof digits)
        return false;
    memcpy(digits, s, nd);
    digits[nd] = 0;
    uint64_t x;
    if (!cli_parse_u64(digits, (uint64_t)(SIZE_MAX >> shift), &x))
        return false;
    *out = (size_t)x << shift;
    return true;
}

bool cli_parse_double(const char *s, double *out)
{
    /* a plain decimal number: strtod would also take blanks, hex, inf, nan */
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '-' || *p == '+'))
            return false;
    char *e;
    errno = 0;
    double x = strtod(s, &e);
    if (*e || e == s || errno == ERANGE || !isfinite(x))
        return false;
    *out = x;
    return true;
}

char **cli_split_list(const char *s, size_t *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    char **out = calloc(cap + 1, sizeof *out);
    *n = 0;
    const char *p = s;
    while (out && *p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len) {
            out[*n] = malloc(len + 1);
            memcpy(out[*n], p, len);
            out[*n][len] = 0;
            (*n)++;
        }
        p += len + (e ? 1 : 0);
    }
    return out;
}

int cli_backends_arg(cli_backends *cb, const char *cmd, int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--backend-lib"))
        return 0;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "--backend-lib takes the path of a backend's shared object");
        return -1;
    }
    if (cb->n == (int)(sizeof cb->libs / sizeof cb->libs[0])) {
        cli_usage_error(cmd, "--backend-lib: at most %d", (int)(sizeof cb->libs / sizeof cb->libs[0]));
        return -1;
    }
    cb->libs[cb->n++] = argv[++*i];
    return 1;
}

bool cli_backends_load(carve_ctx *ctx, const cli_backends *cb, const char *cmd)
{
    for (int k = 0; k < cb->n; k++)
        if (carve_backend_load(ctx, cb->libs[k], NULL) != CARVE_OK) {
            fprintf(stderr, "carve %s: %s\n", cmd, carve_errmsg(ctx));
            return false;
        }
    return true;
}

const char *cli_backends_help =
    "  --backend-lib PATH      load a backend from a shared object (docs/backends.md); its\n"
    "                          target is then --target <its name> (repeatable)\n";

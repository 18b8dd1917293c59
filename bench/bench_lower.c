/* bench_lower.c: lowering time and memory on synthetic graphs from 1,000 to
 * 1,000,000 nodes: chains, layered random DAGs and transformer-like blocks,
 * built in memory (no file I/O in the figures). Prints per size the time of
 * each lowering phase and peak memory, then the growth exponent of the total
 * time (slope of log time over log nodes). The phases are the report's
 * time_ms; report_ms is the rest of carve_lower's wall time, after the
 * report's "total": building the report itself.
 *
 *   bench_lower [--max N] [--shape chain|dag|transformer|all]
 */
#define _POSIX_C_SOURCE 200809L
#include "carve.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uint64_t rs = 12345;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rs >> 33) % n);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static carve_value_id op1(carve_model *m, const char *op, carve_value_id a, uint32_t k)
{
    char out[32];
    snprintf(out, sizeof out, "v%u", k);
    const char *outs[1] = {out};
    carve_node_id n = carve_graph_add_node(m, 0, op, "", NULL, 1, &a, 1, outs);
    return carve_node_output(m, n, 0);
}

static carve_value_id op2(carve_model *m, const char *op, carve_value_id a, carve_value_id b, uint32_t k)
{
    char out[32];
    snprintf(out, sizeof out, "v%u", k);
    const char *outs[1] = {out};
    carve_value_id in[2] = {a, b};
    carve_node_id n = carve_graph_add_node(m, 0, op, "", NULL, 2, in, 1, outs);
    return carve_node_output(m, n, 0);
}

static carve_model *base(carve_ctx *ctx, carve_value_id *x, int64_t width)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_dim d[2] = {{1, NULL}, {width, NULL}};
    *x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, d);
    return m;
}

/* x -> op -> op -> ...; one node in 50 is an op htp lacks (Sinh). */
static carve_model *chain(carve_ctx *ctx, uint32_t n)
{
    carve_value_id v;
    carve_model *m = base(ctx, &v, 16);
    for (uint32_t k = 0; k < n; k++)
        v = op1(m, k % 50 == 49 ? "Sinh" : k % 3 ? "Relu" : "Tanh", v, k);
    carve_graph_add_output(m, 0, v);
    return m;
}

/* Layers of random Adds over earlier values, 10% of nodes unsupported. */
static carve_model *dag(carve_ctx *ctx, uint32_t n)
{
    carve_value_id x;
    carve_model *m = base(ctx, &x, 16);
    carve_value_id *vals = malloc((size_t)(n + 1) * sizeof *vals);
    uint32_t nv = 0;
    vals[nv++] = x;
    for (uint32_t k = 0; k < n; k++) {
        /* prefer recent values: a layered, deep-ish DAG */
        uint32_t span = nv < 64 ? nv : 64;
        carve_value_id a = vals[nv - 1 - rnd(span)], b = vals[nv - 1 - rnd(span)];
        vals[nv++] = rnd(10) == 0 ? op1(m, "Sinh", a, k) : op2(m, "Add", a, b, k);
    }
    for (uint32_t k = nv > 8 ? nv - 8 : 0; k < nv; k++)
        carve_graph_add_output(m, 0, vals[k]);
    free(vals);
    return m;
}

/* Transformer-like blocks: LayerNormalization, Q/K/V MatMuls, Softmax,
 * residual Adds, a Gemm MLP with Relu; one block in four has its
 * LayerNormalization skipped to CPU (so it is decomposed) and an op htp
 * lacks (Cosh). About 20 nodes a block. */
static carve_model *transformer(carve_ctx *ctx, uint32_t n, const char ***skip, size_t *n_skip)
{
    const int64_t D = 16;
    carve_value_id x;
    carve_model *m = base(ctx, &x, D);
    float w[16 * 16], g[16], z[16];
    for (int i = 0; i < 256; i++)
        w[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < 16; i++)
        g[i] = 1, z[i] = 0;
    int64_t wd[2] = {D, D}, vd[1] = {D};
    carve_value_id W = carve_graph_add_initializer(m, 0, "W", CARVE_FLOAT, 2, wd, w, sizeof w);
    carve_value_id G = carve_graph_add_initializer(m, 0, "gamma", CARVE_FLOAT, 1, vd, g, sizeof g);
    carve_value_id B = carve_graph_add_initializer(m, 0, "beta", CARVE_FLOAT, 1, vd, z, sizeof z);
    uint32_t blocks = n / 20 + 1, k = 0;
    *skip = calloc(blocks + 1, sizeof **skip);
    *n_skip = 0;
    carve_value_id v = x;
    for (uint32_t b = 0; b < blocks; b++) {
        char out[32];
        snprintf(out, sizeof out, "v%u", k++);
        carve_value_id ln_in[3] = {v, G, B};
        const char *outs[1] = {out};
        carve_node_id ln = carve_graph_add_node(m, 0, "LayerNormalization", "", NULL, 3, ln_in, 1, outs);
        if (b % 4 == 3)
            (*skip)[(*n_skip)++] = strdup(carve_node_name(m, ln));
        carve_value_id h = carve_node_output(m, ln, 0);
        carve_value_id q = op2(m, "MatMul", h, W, k++), kk = op2(m, "MatMul", h, W, k++), vv = op2(m, "MatMul", h, W, k++);
        carve_value_id s = op2(m, "Mul", q, kk, k++);
        s = op1(m, b % 4 == 1 ? "Cosh" : "Softmax", s, k++);
        carve_value_id a = op2(m, "Mul", s, vv, k++);
        a = op2(m, "MatMul", a, W, k++);
        v = op2(m, "Add", v, a, k++);
        snprintf(out, sizeof out, "v%u", k++);
        ln_in[0] = v;
        h = carve_node_output(m, carve_graph_add_node(m, 0, "LayerNormalization", "", NULL, 3, ln_in, 1, outs), 0);
        carve_value_id gin[3] = {h, W, B};
        snprintf(out, sizeof out, "v%u", k++);
        h = carve_node_output(m, carve_graph_add_node(m, 0, "Gemm", "", NULL, 3, gin, 1, outs), 0);
        h = op1(m, "Relu", h, k++);
        gin[0] = h;
        snprintf(out, sizeof out, "v%u", k++);
        h = carve_node_output(m, carve_graph_add_node(m, 0, "Gemm", "", NULL, 3, gin, 1, outs), 0);
        h = op1(m, "Tanh", h, k++);
        h = op1(m, "Sigmoid", h, k++);
        h = op2(m, "Mul", h, h, k++);
        v = op2(m, "Add", v, h, k++);
    }
    carve_graph_add_output(m, 0, v);
    return m;
}

static double num(const cJSON *o, const char *k) { return cJSON_GetObjectItem(o, k)->valuedouble; }

int main(int argc, char **argv)
{
    uint32_t max = 1000000;
    const char *which = "all";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc)
            max = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc)
            which = argv[++i];
    }
    static const uint32_t sizes[] = {1000, 10000, 43000, 100000, 300000, 1000000};
    static const char *shapes[] = {"chain", "dag", "transformer"};
    carve_ctx *ctx = carve_ctx_new();
    carve_target *t = NULL;
    if (carve_target_builtin(ctx, "htp", &t)) {
        fprintf(stderr, "%s\n", carve_errmsg(ctx));
        return 1;
    }
    printf("%-12s %9s %6s %6s %9s %9s %9s %9s %9s %9s %9s %9s\n", "shape", "nodes", "parts", "rounds", "fold_ms",
           "infer_ms", "part_ms", "decomp_ms", "deleg_ms", "report_ms", "total_ms", "peak_MiB");
    for (size_t s = 0; s < 3; s++) {
        if (strcmp(which, "all") && strcmp(which, shapes[s]))
            continue;
        double first_t = 0, first_n = 0, last_t = 0, last_n = 0;
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes && sizes[k] <= max; k++) {
            const char **skip = NULL;
            size_t n_skip = 0;
            carve_model *m = s == 0 ? chain(ctx, sizes[k]) : s == 1 ? dag(ctx, sizes[k])
                                                                    : transformer(ctx, sizes[k], &skip, &n_skip);
            size_t nodes = carve_graph_node_count(m, 0);
            carve_lower_opts o = {.cpu_nodes = skip, .n_cpu_nodes = n_skip};
            carve_report *r = NULL;
            double t0 = now_ms();
            carve_status st = carve_lower(m, t, &o, &r);
            double wall = now_ms() - t0;
            if (st) {
                fprintf(stderr, "%s %u: %s\n", shapes[s], sizes[k], carve_errmsg(ctx));
                return 1;
            }
            cJSON *j = cJSON_Parse(carve_report_json(r));
            const cJSON *tm = cJSON_GetObjectItem(j, "time_ms");
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            printf("%-12s %9zu %6d %6d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", shapes[s], nodes,
                   cJSON_GetArraySize(cJSON_GetObjectItem(j, "partitions")), cJSON_GetObjectItem(j, "rounds")->valueint,
                   num(tm, "folding"), num(tm, "inference"), num(tm, "partitioning"), num(tm, "decomposition"),
                   num(tm, "delegates"), wall - num(tm, "total"), wall, (double)ru.ru_maxrss / 1024.0);
            fflush(stdout);
            if (!first_n)
                first_n = (double)nodes, first_t = wall;
            last_n = (double)nodes, last_t = wall;
            cJSON_Delete(j);
            carve_report_free(r);
            carve_model_free(m);
            for (size_t i = 0; i < n_skip; i++)
                free((char *)skip[i]);
            free(skip);
        }
        if (last_n > first_n && first_t > 0)
            printf("%-12s growth exponent %.2f (time ~ nodes^k between %.0f and %.0f nodes)\n", shapes[s],
                   log(last_t / first_t) / log(last_n / first_n), first_n, last_n);
    }
    carve_target_free(t);
    carve_ctx_free(ctx);
    return 0;
}

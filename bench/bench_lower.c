/* bench_lower.c: lowering time and memory on synthetic graphs from 1,000 to
 * 1,000,000 nodes: chains, layered random DAGs and transformer-like blocks,
 * built in memory, and the whole carve command on the same model written
 * to a file. Prints per size the time of each lowering phase and peak
 * memory, then the growth exponent of the total time (slope of log time
 * over log nodes), and again from the 43k and the largest model's whole
 * commands run in turn (the machine's slow and fast spells shared). The
 * phases are the report's time_ms; report_ms is the rest of carve_lower's
 * wall time, after the report's "total": building the report itself.
 * peak_MiB is this process's peak while that size's model is built and
 * lowered (the kernel's high-water mark reset before each).
 *
 *   bench_lower [--max N] [--shape chain|dag|transformer|all] [--carve PATH]
 *               [--runs N] [--in-memory] [--keep]
 *
 * --carve: the carve binary for the whole-command figures (default: ../carve
 * beside this program); --runs: whole-command runs per size (default 3; the
 * median wall and CPU time and the largest peak are printed); --in-memory:
 * leave those out; --keep: keep the last model, its lowering and report in
 * the temporary folder (printed).
 */
#define _DEFAULT_SOURCE
#include "carve.h"
#include "cli.h" /* cli_parse_u64: the CLI's whole-number parser */

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

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

/* Layers of random Adds over earlier values; 10% of nodes are Tanh, kept on
 * CPU (--cpu-ops Tanh), cutting the DAG into many partitions with many
 * outputs each. */
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
        vals[nv++] = rnd(10) == 0 ? op1(m, "Tanh", a, k) : op2(m, "Add", a, b, k);
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

/* The whole-command runs start from a small process forked before any
 * model is built: a child's peak RSS (ru_maxrss) counts what it inherited
 * at fork, so a child of this process, grown by the in-memory models, would
 * report this process's size. The spawner reads NUL-separated argv blocks
 * from a pipe, runs each, and writes back wall ms, CPU ms and peak KiB. */
static int to_spawner = -1, from_spawner = -1;

static void spawner(int in, int out)
{
    static char buf[1 << 16];
    uint32_t len;
    while (read(in, &len, sizeof len) == (ssize_t)sizeof len && len < sizeof buf) {
        size_t got = 0;
        while (got < len) {
            ssize_t k = read(in, buf + got, len - got);
            if (k <= 0)
                _exit(1);
            got += (size_t)k;
        }
        char *args[32];
        int na = 0;
        for (size_t i = 0; i < len && na < 31; i += strlen(buf + i) + 1)
            args[na++] = buf + i;
        args[na] = NULL;
        double r[3] = {-1, 0, 0}, t0 = now_ms();
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0)
                dup2(fd, 2);
            execv(args[0], args);
            _exit(127);
        }
        int status = 0;
        struct rusage ru;
        if (pid > 0 && wait4(pid, &status, 0, &ru) == pid && WIFEXITED(status) && !WEXITSTATUS(status)) {
            r[0] = now_ms() - t0;
            r[1] = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                   (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
            r[2] = (double)ru.ru_maxrss;
        }
        if (write(out, r, sizeof r) != (ssize_t)sizeof r)
            _exit(1);
    }
    _exit(0);
}

static bool start_spawner(void)
{
    int a[2], b[2];
    if (pipe(a) || pipe(b))
        return false;
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        close(a[1]), close(b[0]);
        spawner(a[0], b[1]);
    }
    close(a[0]), close(b[1]);
    to_spawner = a[1], from_spawner = b[0];
    return true;
}

/* Runs argv through the spawner; returns its wall time in ms, its CPU time
 * (user + system: what a loaded machine does not inflate) and its peak RSS
 * in MiB, or a negative time when it fails. */
static double run_child(char **argv, double *cpu_ms, double *peak_mib)
{
    static char buf[1 << 16];
    uint32_t len = 0;
    for (int i = 0; argv[i]; i++) {
        size_t n = strlen(argv[i]) + 1;
        if (len + n > sizeof buf)
            return -1;
        memcpy(buf + len, argv[i], n);
        len += (uint32_t)n;
    }
    double r[3];
    if (write(to_spawner, &len, sizeof len) != (ssize_t)sizeof len || write(to_spawner, buf, len) != (ssize_t)len ||
        read(from_spawner, r, sizeof r) != (ssize_t)sizeof r)
        return -1;
    *cpu_ms = r[1];
    *peak_mib = r[2] / 1024.0;
    return r[0];
}

/* The median of v[0, n) (sorts v). */
static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: a handful of figures */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    return v[n / 2];
}

/* Runs argv `runs` times: the median wall and CPU time, the largest peak. */
static double run_median(char **argv, int runs, double *cpu_ms, double *peak_mib)
{
    double w[16], c[16];
    *peak_mib = 0;
    for (int i = 0; i < runs; i++) {
        double p;
        if ((w[i] = run_child(argv, &c[i], &p)) < 0)
            return -1;
        if (p > *peak_mib)
            *peak_mib = p;
    }
    *cpu_ms = median(c, runs);
    return median(w, runs);
}

/* This process's peak RSS from now on: memory freed by the sizes before is
 * handed back and the kernel's high-water mark reset (clear_refs 5). Returns
 * false where that cannot be done (the peak then carries over). */
static bool peak_reset(void)
{
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The high-water mark of this process's RSS in MiB (VmHWM), NAN unknown. */
static double peak_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = NAN;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtod(line + 6, NULL);
    if (f)
        fclose(f);
    return kib / 1024.0;
}

/* The whole command for a model file: argv in cmd (16 slots). */
static void whole_cmd(char **cmd, const char *carve_bin, const char *in, const char *out, const char *rep,
                      const char *tanh_on_cpu, const char *skip)
{
    int nc = 0;
    const char *a[] = {carve_bin, "lower", in, "--target", "htp", "-o", out, "--report", rep};
    for (size_t i = 0; i < sizeof a / sizeof *a; i++)
        cmd[nc++] = (char *)a[i];
    if (tanh_on_cpu)
        cmd[nc++] = "--cpu-ops", cmd[nc++] = (char *)tanh_on_cpu;
    if (skip)
        cmd[nc++] = "--cpu-nodes", cmd[nc++] = (char *)skip;
    cmd[nc] = NULL;
}

/* Runs a and b in turn, `runs` times each (a, b, a, b...): both sizes see
 * the same spells of a busy machine, where runs of one size after the other
 * would not. Median wall and CPU ms of each; false when a run fails. */
static bool run_alternated(char **a, char **b, int runs, double *wa, double *ca, double *wb, double *cb)
{
    double w[2][16], c[2][16], p;
    for (int i = 0; i < runs; i++)
        if ((w[0][i] = run_child(a, &c[0][i], &p)) < 0 || (w[1][i] = run_child(b, &c[1][i], &p)) < 0)
            return false;
    *wa = median(w[0], runs), *ca = median(c[0], runs), *wb = median(w[1], runs), *cb = median(c[1], runs);
    return true;
}

static double exponent(double t0, double n0, double t1, double n1)
{
    return n1 > n0 && t0 > 0 ? log(t1 / t0) / log(n1 / n0) : NAN;
}

int main(int argc, char **argv)
{
    uint32_t max = 1000000;
    const char *which = "all", *carve_bin = NULL;
    bool whole = true, keep = false;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            uint64_t v = 0;
            if (!cli_parse_u64(argv[++i], 1000000, &v) || v < 1000) {
                fprintf(stderr, "bench_lower: --max takes a whole number from 1000 to 1000000, not '%s'\n", argv[i]);
                return 2;
            }
            max = (uint32_t)v;
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc)
            which = argv[++i];
        else if (!strcmp(argv[i], "--carve") && i + 1 < argc)
            carve_bin = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            uint64_t v = 0;
            if (!cli_parse_u64(argv[++i], 16, &v) || v < 1) {
                fprintf(stderr, "bench_lower: --runs takes 1 to 16, not '%s'\n", argv[i]);
                return 2;
            }
            runs = (int)v;
        } else if (!strcmp(argv[i], "--keep"))
            keep = true;
        else if (!strcmp(argv[i], "--in-memory"))
            whole = false;
        else {
            fprintf(stderr, "usage: bench_lower [--max N] [--shape chain|dag|transformer|all] [--carve PATH] "
                            "[--runs N] [--in-memory] [--keep]\n");
            return 2;
        }
    }
    if (strcmp(which, "all") && strcmp(which, "chain") && strcmp(which, "dag") && strcmp(which, "transformer")) {
        fprintf(stderr, "bench_lower: --shape takes chain, dag, transformer or all, not '%s'\n", which);
        return 2;
    }
    /* the carve binary: beside this one's folder (build/bench/.. = build) */
    char bin[4096];
    if (!carve_bin) {
        snprintf(bin, sizeof bin, "%s", argv[0]);
        char *slash = strrchr(bin, '/');
        size_t k = slash ? (size_t)(slash - bin) : 0;
        snprintf(bin + k, sizeof bin - k, "%s../carve", slash ? "/" : "");
        carve_bin = bin;
    }
    if (whole && access(carve_bin, X_OK) != 0) {
        fprintf(stderr, "bench_lower: no carve binary at %s (give --carve PATH or --in-memory)\n", carve_bin);
        return 2;
    }
    if (whole && !start_spawner()) {
        perror("bench_lower: spawner");
        return 1;
    }
    char dir[] = "/tmp/bench_lower.XXXXXX";
    if (whole && !mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char in_path[64], out_path[64], rep_path[64], skip_path[64];
    /* the 43k files, kept for the alternated runs, and their own outputs:
     * replacing a big size's output frees its pages in the rename, which
     * would be counted to the small one */
    char in43_path[64], out43_path[64], rep43_path[64], skip43_path[64];
    snprintf(in_path, sizeof in_path, "%s/in.onnx", dir);
    snprintf(in43_path, sizeof in43_path, "%s/in43k.onnx", dir);
    snprintf(out43_path, sizeof out43_path, "%s/out43k.onnx", dir);
    snprintf(rep43_path, sizeof rep43_path, "%s/report43k.json", dir);
    snprintf(skip43_path, sizeof skip43_path, "@%s/cpu_nodes43k.txt", dir);
    snprintf(out_path, sizeof out_path, "%s/out.onnx", dir);
    snprintf(rep_path, sizeof rep_path, "%s/report.json", dir);
    snprintf(skip_path, sizeof skip_path, "@%s/cpu_nodes.txt", dir);
    static const uint32_t sizes[] = {1000, 10000, 43000, 100000, 300000, 1000000};
    static const char *shapes[] = {"chain", "dag", "transformer"};
    carve_ctx *ctx = carve_ctx_new();
    carve_target *t = NULL;
    if (carve_target_builtin(ctx, "htp", &t)) {
        fprintf(stderr, "%s\n", carve_errmsg(ctx));
        return 1;
    }
    printf("in memory: carve_lower on a model built in memory (time_ms of the report; report_ms: building it);\n"
           "whole: the carve binary, `carve lower FILE --target htp -o OUT --report R.json`, start to exit,\n"
           "reading the model written to a file first (median wall and CPU time of %d runs); peak: max RSS\n",
           runs);
    printf("%-12s %8s %6s %6s %8s %8s %8s %8s %8s %8s %9s %9s %9s %9s %9s\n", "shape", "nodes", "parts", "rounds",
           "fold_ms", "infer_ms", "part_ms", "decomp", "deleg_ms", "rep_ms", "total_ms", "peak_MiB", "whole_ms",
           "wcpu_ms", "wpeak_MiB");
    for (size_t s = 0; s < 3; s++) {
        if (strcmp(which, "all") && strcmp(which, shapes[s]))
            continue;
        double n_1k = 0, t_1k = 0, w_1k = 0, c_1k = 0, n_43k = 0, t_43k = 0, w_43k = 0, c_43k = 0, n_last = 0,
               t_last = 0, w_last = 0, c_last = 0;
        bool skip_43k = false, skip_last = false; /* cpu_nodes lists beside those sizes' files */
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes && sizes[k] <= max; k++) {
            const char **skip = NULL;
            size_t n_skip = 0;
            peak_reset();
            carve_model *m = s == 0 ? chain(ctx, sizes[k]) : s == 1 ? dag(ctx, sizes[k])
                                                                    : transformer(ctx, sizes[k], &skip, &n_skip);
            size_t nodes = carve_graph_node_count(m, 0);
            static const char *tanh_op[] = {"Tanh"};
            carve_lower_opts o = {.cpu_nodes = skip, .n_cpu_nodes = n_skip};
            if (s == 1)
                o.cpu_ops = tanh_op, o.n_cpu_ops = 1;
            double wms = NAN, wcpu = NAN, wpeak = NAN;
            if (whole) {
                /* when 43k is the last size, its files are the ones --keep keeps */
                bool k43 = sizes[k] == 43000 && max > 43000;
                const char *in = k43 ? in43_path : in_path, *sk = k43 ? skip43_path : skip_path;
                FILE *f = n_skip ? fopen(sk + 1, "w") : NULL;
                for (size_t i = 0; f && i < n_skip; i++)
                    fprintf(f, "%s\n", skip[i]);
                if (f)
                    fclose(f);
                if (carve_model_save_file(m, in, NULL)) {
                    fprintf(stderr, "%s\n", carve_errmsg(ctx));
                    return 1;
                }
                char *cmd[16];
                whole_cmd(cmd, carve_bin, in, k43 ? out43_path : out_path, k43 ? rep43_path : rep_path,
                          s == 1 ? "Tanh" : NULL, n_skip ? sk : NULL);
                wms = run_median(cmd, runs, &wcpu, &wpeak);
                if (wms < 0) {
                    fprintf(stderr, "%s %u: carve lower failed\n", shapes[s], sizes[k]);
                    return 1;
                }
            }
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
            printf("%-12s %8zu %6d %6d %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", shapes[s],
                   nodes, cJSON_GetArraySize(cJSON_GetObjectItem(j, "partitions")),
                   cJSON_GetObjectItem(j, "rounds")->valueint, num(tm, "folding"), num(tm, "inference"),
                   num(tm, "partitioning"), num(tm, "decomposition"), num(tm, "delegates"), wall - num(tm, "total"),
                   wall, peak_now(), wms, wcpu, wpeak);
            fflush(stdout);
            if (!n_1k)
                n_1k = (double)nodes, t_1k = wall, w_1k = wms, c_1k = wcpu;
            if (sizes[k] == 43000)
                n_43k = (double)nodes, t_43k = wall, w_43k = wms, c_43k = wcpu, skip_43k = n_skip > 0;
            n_last = (double)nodes, t_last = wall, w_last = wms, c_last = wcpu, skip_last = n_skip > 0;
            cJSON_Delete(j);
            carve_report_free(r);
            carve_model_free(m);
            for (size_t i = 0; i < n_skip; i++)
                free((char *)skip[i]);
            free(skip);
        }
        /* time ~ nodes^k: the slope of log time over log nodes */
        if (n_last > n_1k)
            printf("%-12s growth exponent from %.0f to %.0f nodes: in memory %.2f, whole %.2f (CPU %.2f)\n",
                   shapes[s], n_1k, n_last, exponent(t_1k, n_1k, t_last, n_last), exponent(w_1k, n_1k, w_last, n_last),
                   exponent(c_1k, n_1k, c_last, n_last));
        if (n_43k && n_last > n_43k)
            printf("%-12s growth exponent from %.0f to %.0f nodes: in memory %.2f, whole %.2f (CPU %.2f)\n",
                   shapes[s], n_43k, n_last, exponent(t_43k, n_43k, t_last, n_last),
                   exponent(w_43k, n_43k, w_last, n_last), exponent(c_43k, n_43k, c_last, n_last));
        /* the same two sizes again, their runs in turn */
        if (whole && n_43k && n_last > n_43k) {
            char *a[16], *b[16];
            whole_cmd(a, carve_bin, in43_path, out43_path, rep43_path, s == 1 ? "Tanh" : NULL,
                      skip_43k ? skip43_path : NULL);
            whole_cmd(b, carve_bin, in_path, out_path, rep_path, s == 1 ? "Tanh" : NULL, skip_last ? skip_path : NULL);
            double wa, ca, wb, cb;
            if (!run_alternated(a, b, runs, &wa, &ca, &wb, &cb)) {
                fprintf(stderr, "%s: carve lower failed\n", shapes[s]);
                return 1;
            }
            printf("%-12s growth exponent from %.0f to %.0f nodes, the two sizes' runs in turn: whole %.2f (CPU "
                   "%.2f; %.1f and %.1f ms)\n",
                   shapes[s], n_43k, n_last, exponent(wa, n_43k, wb, n_last), exponent(ca, n_43k, cb, n_last), wa, wb);
        }
        fflush(stdout);
    }
    if (whole && keep)
        printf("the last model and its lowering are in %s\n", dir);
    else if (whole) {
        unlink(in_path), unlink(out_path), unlink(rep_path), unlink(skip_path + 1);
        unlink(in43_path), unlink(out43_path), unlink(rep43_path), unlink(skip43_path + 1);
        rmdir(dir);
    }
    carve_target_free(t);
    carve_ctx_free(ctx);
    return 0;
}

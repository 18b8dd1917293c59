/* test_perf.c: lowering stays linear, and the thread setting.
 *
 * Each scaling test builds one shape at n and 4n nodes and times every stage
 * of the path a user takes (load the bytes, lower, save the lowered model,
 * the report's JSON): the best of three runs per size. A linear stage grows
 * about 4x, a quadratic one 16x; the tests fail above 10x, a margin wide
 * enough for a shared machine. Stages under 2 ms at n are compared from
 * 2 ms (a timer's noise is not growth). The shapes are those that once made
 * export quadratic: Delegate bodies and a main graph with thousands of
 * outputs. */
#define _GNU_SOURCE
#include "testlib.h"

#include <ftw.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: a loaded machine does not inflate it */
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static carve_value_id op(carve_model *m, const char *type, int n_in, carve_value_id a, carve_value_id b,
                         uint32_t k)
{
    char out[32];
    snprintf(out, sizeof out, "v%u", k);
    const char *outs[1] = {out};
    carve_value_id in[2] = {a, b};
    carve_node_id n = carve_graph_add_node(m, 0, type, "", NULL, (uint32_t)n_in, in, 1, outs);
    return carve_node_output(m, n, 0);
}

static carve_model *base(carve_ctx *ctx, carve_value_id *x)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_dim d[2] = {{1, NULL}, {8, NULL}};
    *x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, d);
    return m;
}

/* An Add chain whose every value is also read by a Tanh kept on CPU: one
 * partition with n outputs, and n graph outputs. */
static carve_model *wide(carve_ctx *ctx, uint32_t n)
{
    carve_value_id x, prev;
    carve_model *m = base(ctx, &x);
    prev = x;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        carve_value_id v = op(m, "Add", 2, prev, x, k++);
        carve_graph_add_output(m, 0, op(m, "Tanh", 1, v, 0, k++));
        prev = v;
    }
    carve_graph_add_output(m, 0, prev);
    return m;
}

/* Layers of Adds over recent values, one node in ten a Tanh kept on CPU. */
static carve_model *dag(carve_ctx *ctx, uint32_t n)
{
    carve_value_id x;
    carve_model *m = base(ctx, &x);
    carve_value_id *vals = malloc((size_t)(n + 1) * sizeof *vals);
    uint32_t nv = 0;
    uint64_t rs = 7;
    vals[nv++] = x;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t span = nv < 64 ? nv : 64;
        rs = rs * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(rs >> 33);
        carve_value_id a = vals[nv - 1 - r % span], b = vals[nv - 1 - (r >> 8) % span];
        vals[nv++] = r % 10 == 0 ? op(m, "Tanh", 1, a, 0, k) : op(m, "Add", 2, a, b, k);
    }
    for (uint32_t k = nv - 8; k < nv; k++)
        carve_graph_add_output(m, 0, vals[k]);
    free(vals);
    return m;
}

/* A chain of Sigmoids and Adds, all taken by the target: its capability
 * check of each Sigmoid once scanned the whole graph for a QuantizeLinear
 * reading it (a 43,000-node chain took 3 s to partition). */
static carve_model *sigmoid_chain(carve_ctx *ctx, uint32_t n)
{
    carve_value_id x, v;
    carve_model *m = base(ctx, &x);
    v = x;
    for (uint32_t k = 0; k < n; k++)
        v = k % 2 ? op(m, "Add", 2, v, x, k) : op(m, "Sigmoid", 1, v, 0, k);
    carve_graph_add_output(m, 0, v);
    return m;
}

enum { ST_LOAD, ST_LOWER, ST_SAVE, ST_REPORT, ST_COUNT };
static const char *const stage_name[ST_COUNT] = {"load", "lower", "save", "report"};

/* Best-of-three time of each stage for shape(n). Freed memory stays in the
 * process (no blocks of their own, no trimming), so the second and third
 * runs of both sizes reuse pages the first one touched: page faults cost
 * 9 us each on some virtual machines (a fresh 4n run faulted ~10x the
 * time of a warm n run there, linear code or not), and they are not what
 * these tests look for. */
static bool time_stages(carve_model *(*shape)(carve_ctx *, uint32_t), uint32_t n, double *best)
{
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    carve_ctx *ctx = carve_ctx_new();
    carve_target *t = NULL;
    bool ok = CHECK_OK(ctx, carve_target_builtin(ctx, "htp", &t));
    carve_model *m = shape(ctx, n);
    size_t nbytes = 0;
    void *bytes = ok && m ? t_save(m, &nbytes) : NULL;
    carve_model_free(m);
    static const char *const tanh_op[] = {"Tanh"};
    carve_lower_opts o = {.cpu_ops = tanh_op, .n_cpu_ops = 1};
    for (int s = 0; s < ST_COUNT; s++)
        best[s] = INFINITY;
    for (int rep = 0; rep < 3 && bytes && ok; rep++) {
        double t0 = now_ms();
        carve_model *l = t_load(ctx, bytes, nbytes);
        double t1 = now_ms();
        carve_report *r = NULL;
        ok = CHECK(l) && CHECK_OK(ctx, carve_lower(l, t, &o, &r));
        double t2 = now_ms();
        void *out = NULL;
        size_t out_n = 0;
        ok = ok && CHECK_OK(ctx, carve_model_save_memory(l, &out, &out_n));
        double t3 = now_ms();
        const char *json = ok ? carve_report_json(r) : NULL;
        double t4 = now_ms();
        ok = ok && CHECK(json && strlen(json) > 100);
        double d[ST_COUNT] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
        for (int s = 0; s < ST_COUNT; s++)
            best[s] = fmin(best[s], d[s]);
        free(out);
        carve_report_free(r);
        carve_model_free(l);
    }
    free(bytes);
    carve_target_free(t);
    carve_ctx_free(ctx);
    return ok;
}

static void check_linear(const char *shape_name, carve_model *(*shape)(carve_ctx *, uint32_t), uint32_t n)
{
    double small[ST_COUNT], big[ST_COUNT];
    REQUIRE(time_stages(shape, n, small));
    REQUIRE(time_stages(shape, 4 * n, big));
    for (int s = 0; s < ST_COUNT; s++) {
        double ratio = big[s] / fmax(small[s], 2.0);
        printf("%s %s: %.2f ms at %u, %.2f ms at %u: x%.1f\n", shape_name, stage_name[s], small[s], n, big[s],
               4 * n, ratio);
        t_check(ratio < 10.0, __FILE__, __LINE__, "%s: stage %s grew x%.1f for 4x the nodes (quadratic?)",
                shape_name, stage_name[s], ratio);
    }
}

TEST(partition_outputs_linear) { check_linear("wide", wide, 3000); }

TEST(layered_dag_linear) { check_linear("dag", dag, 6000); }

TEST(sigmoid_chain_linear) { check_linear("sigmoid chain", sigmoid_chain, 4000); }

TEST(threads_setting)
{
    CHECK_INT(carve_get_threads(), 1); /* the default */
    carve_set_threads(3);
    CHECK_INT(carve_get_threads(), 3);
    carve_set_threads(0);
    CHECK_INT(carve_get_threads(), 1);
    carve_set_threads(-5);
    CHECK_INT(carve_get_threads(), 1);
}

/* Whether OpenBLAS is mapped into this process. */
static bool blas_mapped(void)
{
    size_t n = 0;
    char *maps = t_read_file("/proc/self/maps", &n);
    bool yes = maps && strstr(maps, "libopenblas") != NULL;
    free(maps);
    return yes;
}

/* Lowering without a GEMM never loads OpenBLAS (nor starts its threads);
 * a MatMul run loads it, and it computes the product with 1 and with 2
 * threads. The two need not agree bit for bit: OpenBLAS 0.3.21 on an AMD
 * EPYC (Haswell kernels) gives 1,402 of these 5,120 elements a different
 * last bit at 2 threads (max difference 5.2e-6); on an Intel machine they
 * agreed. Both are held to a plain dot product instead. */
TEST(blas_loaded_on_first_gemm)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_target *t = NULL;
    REQUIRE_OK(ctx, carve_target_builtin(ctx, "htp", &t));
    carve_model *m = dag(ctx, 500);
    carve_report *r = NULL;
    CHECK_OK(ctx, carve_lower(m, t, NULL, &r));
    CHECK(!blas_mapped());
    carve_report_free(r);
    carve_model_free(m);

    m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    enum { M = 64, K = 96, N = 80 };
    carve_dim d[2] = {{M, NULL}, {K, NULL}};
    carve_value_id a = carve_graph_add_input(m, 0, "a", CARVE_FLOAT, 2, d);
    static float w[K * N];
    for (int i = 0; i < K * N; i++)
        w[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    int64_t wd[2] = {K, N};
    carve_value_id b = carve_graph_add_initializer(m, 0, "w", CARVE_FLOAT, 2, wd, w, sizeof w);
    carve_value_id in[2] = {a, b};
    const char *outs[1] = {"y"};
    carve_graph_add_output(m, 0, carve_node_output(m, carve_graph_add_node(m, 0, "MatMul", "", NULL, 2, in, 1, outs), 0));
    int64_t ad[2] = {M, K};
    carve_tensor *x = carve_tensor_new(CARVE_FLOAT, 2, ad);
    for (size_t i = 0; i < carve_tensor_count(x); i++)
        carve_tensor_set(x, i, (double)((i * 13) % 29) / 7.0 - 2.0);
    carve_tensor *y1 = NULL, *y2 = NULL;
    CHECK_OK(ctx, carve_model_run(m, &x, &y1));
    CHECK(blas_mapped());
    carve_set_threads(2);
    CHECK_OK(ctx, carve_model_run(m, &x, &y2));
    carve_set_threads(1);
    if (CHECK(y1 && y2)) {
        size_t n1 = 0, n2 = 0;
        const void *p1 = carve_tensor_data(y1, &n1), *p2 = carve_tensor_data(y2, &n2);
        CHECK(n1 == n2 && n1 == sizeof(float) * M * N);
        /* every element of both against a plain dot product in double */
        const float *f1 = p1, *f2 = p2;
        double worst = 0;
        for (int i = 0; i < M && n1 == n2 && n1 == sizeof(float) * M * N; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++)
                    acc += carve_tensor_get(x, (size_t)i * K + (size_t)k) * w[k * N + j];
                worst = fmax(worst, fmax(fabs(f1[i * N + j] - acc), fabs(f2[i * N + j] - acc)));
            }
        CHECK(worst < 1e-4);
    }
    carve_tensor_free(x);
    carve_tensor_free(y1);
    carve_tensor_free(y2);
    carve_model_free(m);
    carve_target_free(t);
    carve_ctx_free(ctx);
}

/* ---------------------------------------------------------------- encoder */

/* src/onnx/export.c: the protobuf-c route the one-pass encoder replaced. */
carve_status cv_export_reference(carve_model *m, void **out, size_t *size);

static int n_models, n_same;
static carve_target *enc_target;

/* The encoder's bytes are protobuf-c's, for m as loaded and as lowered. */
static void same_bytes(carve_ctx *ctx, carve_model *m, const char *what)
{
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (CHECK_OK(ctx, carve_model_save_memory(m, &a, &na)) && CHECK_OK(ctx, cv_export_reference(m, &b, &nb))) {
        if (t_check(na == nb && memcmp(a, b, na) == 0, __FILE__, __LINE__, "%s: the encoder's %zu bytes differ from "
                    "protobuf-c's %zu", what, na, nb))
            n_same++;
    }
    carve_free(a);
    carve_free(b);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t len = strlen(path);
    if (type != FTW_F || len < 5 || strcmp(path + len - 5, ".onnx"))
        return 0;
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    if (carve_model_load_file(ctx, path, NULL, &m) == CARVE_OK) {
        n_models++;
        same_bytes(ctx, m, path);
        carve_report *r = NULL;
        if (carve_lower(m, enc_target, NULL, &r) == CARVE_OK)
            same_bytes(ctx, m, path);
        carve_report_free(r);
        carve_model_free(m);
    }
    carve_ctx_free(ctx);
    return 0;
}

/* Every test model (and the rich model) loaded, and lowered for htp. */
/* Big tensor data skips copies: the saver writes data of 64 KiB and more
 * from the tensor's memory (a part of the output of its own), the loader
 * leaves data of 4 KiB and more in the chunk protobuf-c decoded it into. The
 * bytes must not change: a file saved equals the model saved to memory and
 * protobuf-c's bytes, with tensors on both sides of each threshold, and a
 * model loaded from it saves to the same bytes again (its data intact). */
TEST(big_tensors_saved_and_loaded_in_place)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    static const size_t sizes[] = {100, 4095, 4096, 65535, 65536, 70000, 300000, 8192, 1 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        uint8_t *d = malloc(sizes[i]);
        REQUIRE(d);
        for (size_t k = 0; k < sizes[i]; k++)
            d[k] = (uint8_t)(k * 131 + i * 17 + (k >> 9));
        char name[32];
        snprintf(name, sizeof name, "w%zu", i);
        int64_t dim[1] = {(int64_t)sizes[i]};
        carve_value_id w = carve_graph_add_initializer(m, 0, name, CARVE_UINT8, 1, dim, d, sizes[i]);
        const char *outs[1] = {name + 1};
        carve_node_id n = carve_graph_add_node(m, 0, "Identity", "", NULL, 1, &w, 1, outs);
        carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
        if (i % 3 == 1) { /* a Constant's tensor, in an attribute */
            char cname[32];
            snprintf(cname, sizeof cname, "c%zu", i);
            const char *couts[1] = {cname};
            carve_node_id c = carve_graph_add_node(m, 0, "Constant", "", NULL, 0, NULL, 1, couts);
            CHECK_OK(ctx, carve_node_set_attr_tensor(m, c, "value", CARVE_UINT8, 1, dim, d, sizes[i]));
            carve_graph_add_output(m, 0, carve_node_output(m, c, 0));
        }
        free(d);
    }
    const char *path = t_path(t_tmpdir(), "big.onnx");
    REQUIRE_OK(ctx, carve_model_save_file(m, path, NULL));
    size_t nf = 0, nm = 0, nr = 0, nb = 0;
    void *file = t_read_file(path, &nf), *mem = NULL, *ref = NULL, *back = NULL;
    REQUIRE(file);
    CHECK_OK(ctx, carve_model_save_memory(m, &mem, &nm));
    CHECK_OK(ctx, cv_export_reference(m, &ref, &nr));
    CHECK(nf > (1u << 20) && nf == nm && !memcmp(file, mem, nf));
    CHECK(nr == nf && !memcmp(file, ref, nf));
    carve_model *l = NULL;
    REQUIRE_OK(ctx, carve_model_load_file(ctx, path, NULL, &l));
    CHECK_OK(ctx, carve_model_save_memory(l, &back, &nb));
    CHECK(nb == nf && !memcmp(file, back, nf));
    carve_model_free(l);
    free(file), carve_free(mem), carve_free(ref), carve_free(back);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(encoder_matches_protobuf_c)
{
    carve_ctx *ctx = carve_ctx_new();
    REQUIRE_OK(ctx, carve_target_builtin(ctx, "htp", &enc_target));
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m);
    same_bytes(ctx, m, "rich model");
    carve_model_free(m);
    m = wide(ctx, 300);
    carve_report *r = NULL;
    static const char *const tanh_op[] = {"Tanh"};
    carve_lower_opts o = {.cpu_ops = tanh_op, .n_cpu_ops = 1};
    CHECK_OK(ctx, carve_lower(m, enc_target, &o, &r));
    same_bytes(ctx, m, "wide model, lowered");
    carve_report_free(r);
    carve_model_free(m);
    CHECK(nftw(CARVE_TESTDATA_DIR, visit, 16, FTW_PHYS) == 0);
    printf("%d test models, %d byte-identical savings\n", n_models, n_same);
    CHECK(n_models > 500);
    carve_target_free(enc_target);
    carve_ctx_free(ctx);
}

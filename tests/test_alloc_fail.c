/* test_alloc_fail.c: allocation failures, injected through
 * carve_set_allocator. For each operation, a first run counts its
 * allocations (N); then for k = 1..N the k-th allocation fails, and then
 * again with every allocation from the k-th on failing. Every run
 * must fail cleanly: an error status (CARVE_ERR_NOMEM with "out of memory"),
 * no half-made result, and every block it allocated given back (counted
 * here, after each run or, for operations on a model that lives on, when
 * the model is freed; the sanitizer build checks the rest). */
#define _DEFAULT_SOURCE
#include "testlib.h"
#include "count_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- driver */

/* An operation under test: runs, frees what it made, returns its status. */
typedef carve_status (*operation)(carve_ctx *ctx, void *arg);

/* Runs op once to count its allocations, then once per allocation with that
 * one failing. Returns the number of runs that failed. with_message: the
 * failure also leaves "out of memory" on the context (the dump, which has
 * no context to write to, only returns NULL). on_model: op works on a model
 * that lives on, which may keep a cache (a scratch array) across calls:
 * blocks are then counted when the model is freed, not after each run. */
static long fail_each(const char *what, operation op, void *arg, carve_ctx *ctx, bool with_message,
                      bool on_model)
{
    t_alloc.count = 0, t_alloc.fail_at = 0;
    long live0 = t_alloc.live;
    if (!t_check(op(ctx, arg) == CARVE_OK, __FILE__, __LINE__, "%s fails without injected failure: %s", what,
                 carve_errmsg(ctx)))
        return 0;
    long n = t_alloc.count;
    t_check(on_model || t_alloc.live == live0, __FILE__, __LINE__, "%s leaks %ld blocks", what, t_alloc.live - live0);
    t_check(n > 0, __FILE__, __LINE__, "%s allocates nothing", what);
    long failed = 0;
    for (long run = 0; run < 2 * n; run++) {
        /* First the k-th allocation alone fails, then every one from k on. */
        long k = run % n + 1;
        t_alloc.onward = run >= n;
        t_alloc.count = 0, t_alloc.fail_at = k;
        live0 = t_alloc.live;
        carve_status s = op(ctx, arg);
        t_alloc.fail_at = 0, t_alloc.onward = false;
        if (s == CARVE_OK) {
            /* The failed allocation had a fallback (none does today). */
            continue;
        }
        failed++;
        const char *msg = carve_errmsg(ctx);
        if (!t_check(s == CARVE_ERR_NOMEM && (!with_message || strstr(msg, "out of memory")), __FILE__, __LINE__,
                     "%s, allocation %ld%s of %ld failing: got %s \"%s\", want out of memory", what, k,
                     t_alloc.onward ? " and on" : "", n,
                     carve_status_name(s), msg))
            break;
        if (!t_check(on_model || t_alloc.live == live0, __FILE__, __LINE__,
                     "%s, allocation %ld%s of %ld failing: %ld blocks leak",
                     what, k, t_alloc.onward ? " and on" : "", n, t_alloc.live - live0))
            break;
    }
    printf("  %s: %ld allocations; failing each alone, then each and all after it: %ld clean failures\n", what,
           n, failed);
    return failed;
}

static long fail_each_allocation(const char *what, operation op, void *arg, carve_ctx *ctx)
{
    return fail_each(what, op, arg, ctx, true, false);
}

static long fail_each_on_model(const char *what, operation op, carve_model *m, bool with_message)
{
    return fail_each(what, op, m, carve_model_ctx(m), with_message, true);
}

/* ---------------------------------------------------------------- operations */

typedef struct {
    void *bytes;
    size_t n;
    const char *path;
} blob;

static carve_status op_load_memory(carve_ctx *ctx, void *arg)
{
    blob *b = arg;
    carve_model *m = (carve_model *)&m; /* must become NULL on failure */
    carve_status s = carve_model_load_memory(ctx, b->bytes, b->n, NULL, &m);
    if (!t_check((s == CARVE_OK) == (m != NULL), __FILE__, __LINE__, "load left *out = %p with status %s",
                 (void *)m, carve_status_name(s)))
        return CARVE_ERR_ARG;
    carve_model_free(m);
    return s;
}

static carve_status op_load_file(carve_ctx *ctx, void *arg)
{
    blob *b = arg;
    carve_model *m = (carve_model *)&m;
    carve_status s = carve_model_load_file(ctx, b->path, NULL, &m);
    if (!t_check((s == CARVE_OK) == (m != NULL), __FILE__, __LINE__, "load left *out set with status %s",
                 carve_status_name(s)))
        return CARVE_ERR_ARG;
    carve_model_free(m);
    return s;
}

static carve_status op_save_memory(carve_ctx *ctx, void *arg)
{
    (void)ctx;
    void *bytes = NULL;
    size_t n = 0;
    carve_status s = carve_model_save_memory(arg, &bytes, &n);
    carve_free(bytes);
    return s;
}

static carve_status op_save_file(carve_ctx *ctx, void *arg)
{
    (void)ctx;
    carve_save_opts o = {"rich.weights", 8};
    return carve_model_save_file(arg, t_path(t_tmpdir(), "rich.onnx"), &o);
}

static carve_status op_dump(carve_ctx *ctx, void *arg)
{
    (void)ctx;
    char *d = carve_model_dump(arg);
    if (!d)
        return CARVE_ERR_NOMEM;
    carve_free(d);
    return CARVE_OK;
}

static carve_status op_build(carve_ctx *ctx, void *arg)
{
    (void)arg;
    carve_model *m = t_rich_model(ctx);
    if (!m)
        return carve_errcode(ctx);
    carve_model_free(m);
    return CARVE_OK;
}

static carve_status op_verify(carve_ctx *ctx, void *arg)
{
    (void)ctx;
    return carve_model_verify(arg);
}

/* ---------------------------------------------------------------- tests */

TEST(build_fails_cleanly)
{
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    CHECK(fail_each_allocation("building the rich model", op_build, NULL, ctx) > 0);
    carve_ctx_free(ctx);
    CHECK_INT(t_alloc.live, 0);
}

TEST(load_from_memory_fails_cleanly)
{
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    blob b = {0};
    REQUIRE_OK(ctx, carve_model_save_memory(m, &b.bytes, &b.n));
    carve_model_free(m);
    CHECK(fail_each_allocation("loading the rich model", op_load_memory, &b, ctx) > 0);
    carve_free(b.bytes);
    carve_ctx_free(ctx);
    CHECK_INT(t_alloc.live, 0);
}

TEST(load_from_file_with_external_data_fails_cleanly)
{
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    const char *dir = t_tmpdir();
    blob b = {.path = t_path(dir, "rich.onnx")};
    carve_save_opts o = {"rich.weights", 8};
    REQUIRE_OK(ctx, carve_model_save_file(m, b.path, &o));
    carve_model_free(m);
    CHECK(fail_each_allocation("loading the rich model and its external data", op_load_file, &b, ctx) > 0);
    carve_ctx_free(ctx);
    CHECK_INT(t_alloc.live, 0);
}

TEST(save_fails_cleanly)
{
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    CHECK(fail_each_on_model("saving to memory", op_save_memory, m, true) > 0);
    CHECK(fail_each_on_model("saving to a file with external data", op_save_file, m, true) > 0);
    carve_model_free(m);
    carve_ctx_free(ctx);
    CHECK_INT(t_alloc.live, 0);
}

TEST(dump_and_verify_fail_cleanly)
{
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    CHECK(fail_each_on_model("dumping", op_dump, m, false) > 0);
    CHECK(fail_each_on_model("verifying", op_verify, m, true) > 0);
    /* The model is intact after all that. */
    CHECK_OK(ctx, carve_model_verify(m));
    carve_model *r = ROUND_TRIP(ctx, m);
    CHECK(r != NULL);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
    CHECK_INT(t_alloc.live, 0);
}

/* The libonnx-testdata models with subgraphs and odd types load under
 * failure too (If, Loop, Scan, sequences, strings). */
TEST(load_testdata_models_fails_cleanly)
{
    static const char *models[] = {
        "node/test_if_seq/model.onnx",      "node/test_loop11/model.onnx",
        "node/test_scan9_sum/model.onnx",   "node/test_strnormalizer_export_monday_casesensintive_lower/model.onnx",
        "node/test_sequence_insert_at_back/model.onnx", "node/test_optional_get_element_sequence/model.onnx",
    };
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    int found = 0;
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", CARVE_TESTDATA_DIR, models[i]);
        blob b = {.path = path};
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fclose(f);
        found++;
        CHECK(fail_each_allocation(models[i], op_load_file, &b, ctx) > 0);
    }
    CHECK(found >= 4); /* the test data is installed (scripts/deps.sh) */
    carve_ctx_free(ctx);
    CHECK_INT(t_alloc.live, 0);
}

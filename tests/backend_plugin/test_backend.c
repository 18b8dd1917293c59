/* test_backend.c: the backend API: the registry, the plugin loader and its
 * errors, lowering and running through a plugin (the demo backend of
 * plugin.c), the compile-refusal fixed point, handles compiled once and
 * released with the model, and Delegates whose backend is missing or not
 * recorded. The program exports its symbols (ENABLE_EXPORTS) so that a
 * plugin finds carve's API in it. */
#include "carve_backend.h"
#include "testlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* x[2,3] -> ops in turn; binary ops take w (an initializer of the main
 * graph, 2x3); node i is named "n<i>_<op>". */
static carve_model *chain(carve_ctx *ctx, const char *const *ops, int n_ops)
{
    carve_model *m = carve_model_new(ctx);
    if (!m || carve_model_set_opset(m, "", 17))
        return NULL;
    carve_dim d[2] = {{2, NULL}, {3, NULL}};
    int64_t wd[2] = {2, 3};
    float w[6] = {0.5f, -1.5f, 2.0f, 0.25f, -0.75f, 1.0f};
    carve_value_id v = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, d);
    carve_value_id wv = carve_graph_add_initializer(m, 0, "w", CARVE_FLOAT, 2, wd, w, sizeof w);
    for (int i = 0; i < n_ops; i++) {
        bool unary = !strcmp(ops[i], "Relu") || !strcmp(ops[i], "Neg");
        carve_value_id in[2] = {v, wv};
        char name[32], out[32];
        snprintf(name, sizeof name, "n%d_%s", i, ops[i]);
        snprintf(out, sizeof out, "t%d", i);
        carve_node_id n = carve_graph_add_node(m, 0, ops[i], "", name, unary ? 1 : 2, in, 1, (const char *[]){out});
        if (n == CARVE_NONE)
            return NULL;
        v = carve_node_output(m, n, 0);
    }
    if (carve_graph_add_output(m, 0, v))
        return NULL;
    return m;
}

static carve_tensor *input(void)
{
    carve_tensor *x = carve_tensor_new(CARVE_FLOAT, 2, (int64_t[]){2, 3});
    float v[6] = {1.0f, -2.0f, 0.5f, -0.25f, 3.0f, -1.0f};
    for (int i = 0; i < 6; i++)
        carve_tensor_set(x, i, v[i]);
    return x;
}

/* Runs m on input() and returns its output (NULL on failure, message on
 * the model's context). */
static carve_tensor *run(carve_model *m)
{
    carve_tensor *x = input(), *y = NULL;
    carve_status s = carve_model_run(m, &x, &y);
    carve_tensor_free(x);
    return s ? NULL : y;
}

static bool same(carve_tensor *a, carve_tensor *b)
{
    if (!a || !b || carve_tensor_count(a) != carve_tensor_count(b))
        return false;
    for (size_t i = 0; i < carve_tensor_count(a); i++)
        if (carve_tensor_get(a, i) != carve_tensor_get(b, i))
            return false;
    return true;
}

/* m's output on input() equals want's, element for element. */
static bool runs_as(carve_model *m, carve_tensor *want)
{
    carve_tensor *y = run(m);
    bool ok = same(y, want);
    carve_tensor_free(y);
    return ok;
}

static int stats(int which)
{
    void *dl = dlopen(DEMO_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    if (!dl)
        return -1;
    int (*f)(int);
    void *sym = dlsym(dl, "demo_stats");
    memcpy(&f, &sym, sizeof f);
    int r = sym ? f(which) : -1;
    dlclose(dl);
    return r;
}

/* The Delegates of m's main graph, in order. */
static size_t delegates(carve_model *m, carve_node_id *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < carve_graph_node_count(m, 0); i++) {
        carve_node_id n = carve_graph_node(m, 0, i);
        if (!strcmp(carve_node_op(m, n), "Delegate") && k < max)
            out[k++] = n;
    }
    return k;
}

/* Lowers a chain of ops for the demo target; *rep gets the report. */
static carve_model *lower_demo(carve_ctx *ctx, const char *const *ops, int n, carve_report **rep, carve_tensor **orig)
{
    carve_model *m = chain(ctx, ops, n);
    carve_target *t = NULL;
    if (!m || carve_target_builtin(ctx, "demo", &t)) {
        carve_model_free(m);
        return NULL;
    }
    *orig = run(m);
    carve_status s = carve_lower(m, t, NULL, rep);
    carve_target_free(t);
    if (s) {
        carve_model_free(m);
        return NULL;
    }
    return m;
}

/* A chain of ops lowered for the demo target in a context of its own with
 * the demo plugin loaded: the lowered model, its report and the unlowered
 * model's output on input(). */
typedef struct {
    carve_ctx *ctx;
    carve_model *m;
    carve_report *rep;
    carve_tensor *want;
} demo_lowered;

static bool demo_lower(demo_lowered *d, const char *const *ops, int n)
{
    *d = (demo_lowered){carve_ctx_new(), NULL, NULL, NULL};
    if (carve_backend_load(d->ctx, DEMO_PLUGIN, NULL) == CARVE_OK)
        d->m = lower_demo(d->ctx, ops, n, &d->rep, &d->want);
    if (!d->m || !d->want)
        fprintf(stderr, "lowering for the demo target: %s\n", carve_errmsg(d->ctx));
    return d->m && d->want;
}

static void demo_free(demo_lowered *d)
{
    carve_tensor_free(d->want);
    carve_report_free(d->rep);
    carve_model_free(d->m);
    carve_ctx_free(d->ctx);
}

TEST(builtins_registered_on_every_context)
{
    carve_ctx *ctx = carve_ctx_new();
    REQUIRE(carve_backend_count(ctx) >= 1);
    const carve_backend *ref = carve_backend_at(ctx, 0);
    CHECK_STR(ref->name, "reference");
    CHECK(carve_backend_find(ctx, "reference") == ref);
    CHECK(carve_backend_find(ctx, "nope") == NULL);
    CHECK(carve_backend_at(ctx, carve_backend_count(ctx)) == NULL);
    CHECK_ERR(ctx, carve_backend_register(ctx, ref), CARVE_ERR_ARG, "'reference' is already registered");
    carve_backend bad = *ref;
    bad.abi_version = 99;
    CHECK_ERR(ctx, carve_backend_register(ctx, &bad), CARVE_ERR_ARG, "ABI version is 99, this carve needs 1");
    bad.abi_version = CARVE_BACKEND_ABI_VERSION;
    bad.struct_size = 16;
    CHECK_ERR(ctx, carve_backend_register(ctx, &bad), CARVE_ERR_ARG, "struct_size is 16");
    carve_backend mine = *ref;
    mine.name = "mine";
    size_t n = carve_backend_count(ctx);
    CHECK_OK(ctx, carve_backend_register(ctx, &mine));
    CHECK_INT(carve_backend_count(ctx), n + 1);
    CHECK(carve_backend_find(ctx, "mine") == &mine);
    carve_ctx_free(ctx);
}

TEST(loader_errors_name_the_file_and_the_fault)
{
    carve_ctx *ctx = carve_ctx_new();
    size_t n = carve_backend_count(ctx);
    const carve_backend *b = (const carve_backend *)1;
    CHECK_ERR(ctx, carve_backend_load(ctx, "/nonexistent/libx.so", &b), CARVE_ERR_IO,
              "backend library /nonexistent/libx.so: cannot be loaded: /nonexistent/libx.so: cannot open");
    CHECK(b == NULL);
    const char *txt = t_path(t_tmpdir(), "not_a_library.so");
    t_write_file(txt, "hello\n", 6);
    CHECK_ERR(ctx, carve_backend_load(ctx, txt, NULL), CARVE_ERR_IO, "cannot be loaded");
    CHECK_CONTAINS(carve_errmsg(ctx), txt);
    CHECK_ERR(ctx, carve_backend_load(ctx, BAD_NO_ENTRY, NULL), CARVE_ERR_INVALID, "no symbol 'carve_backend_entry'");
    CHECK_CONTAINS(carve_errmsg(ctx), BAD_NO_ENTRY);
    CHECK_ERR(ctx, carve_backend_load(ctx, BAD_ABI, NULL), CARVE_ERR_INVALID,
              "its ABI version is 42, this carve needs 1");
    CHECK_CONTAINS(carve_errmsg(ctx), BAD_ABI);
    CHECK_ERR(ctx, carve_backend_load(ctx, BAD_UNAVAILABLE, NULL), CARVE_ERR_UNSUPPORTED,
              "backend 'bad' is not available: no demo accelerator found on this machine");
    CHECK_INT(carve_backend_count(ctx), n);
    CHECK_OK(ctx, carve_backend_load(ctx, DEMO_PLUGIN, &b));
    CHECK_STR(b->name, "demo");
    CHECK_ERR(ctx, carve_backend_load(ctx, DEMO_PLUGIN, NULL), CARVE_ERR_ARG, "'demo' is already registered");
    CHECK_INT(carve_backend_count(ctx), n + 1);
    carve_ctx_free(ctx);
}

TEST(plugin_lowers_and_runs_compiled_once)
{
    carve_ctx *ctx = carve_ctx_new();
    REQUIRE_OK(ctx, carve_backend_load(ctx, DEMO_PLUGIN, NULL));
    carve_target *t = NULL;
    REQUIRE_OK(ctx, carve_target_builtin(ctx, "demo", &t));
    CHECK_STR(carve_target_backend(ctx, t), "demo");
    carve_target_free(t);
    int c0 = stats(0), r0 = stats(1), n0 = stats(2);
    carve_report *rep = NULL;
    carve_tensor *want = NULL;
    carve_model *m = lower_demo(ctx, (const char *[]){"Relu", "Add", "Mul"}, 3, &rep, &want);
    REQUIRE(m && want);
    CHECK_CONTAINS(carve_report_summary(rep), "3 of 3 nodes delegated in 1 partition");
    CHECK_CONTAINS(carve_report_json(rep), "\"backend\":\"demo\"");
    CHECK_CONTAINS(carve_report_json(rep), "\"compile_rounds\":1");
    /* lowering compiled the partition once and released it */
    CHECK_INT(stats(0), c0 + 1);
    CHECK_INT(stats(1), r0 + 1);
    carve_node_id d[4];
    REQUIRE_INT(delegates(m, d, 4), 1);
    CHECK_STR(carve_node_attr_string(m, d[0], "backend", NULL), "demo");
    CHECK_STR(carve_node_attr_string(m, d[0], "backend_version", NULL), "demo 1.0");
    for (int k = 0; k < 3; k++)
        CHECK(runs_as(m, want));
    /* three runs through the demo's own kernels, one compile between them */
    CHECK_INT(stats(2), n0 + 3);
    CHECK_INT(stats(0), c0 + 2);
    CHECK_INT(stats(1), r0 + 1);
    carve_model_free(m);
    CHECK_INT(stats(1), r0 + 2);
    carve_tensor_free(want);
    carve_report_free(rep);
    carve_ctx_free(ctx);
}

TEST(compile_refusal_naming_nodes_moves_them_to_cpu)
{
    demo_lowered l;
    REQUIRE(demo_lower(&l, (const char *[]){"Relu", "Neg", "Add", "Relu"}, 4));
    /* round 1: one partition, refused naming n1_Neg; round 2: {Relu}, {Add, Relu} */
    CHECK_CONTAINS(carve_report_summary(l.rep), "3 of 4 nodes delegated in 2 partitions");
    CHECK_CONTAINS(carve_report_summary(l.rep), "cpu: 1 backend_refused");
    const char *js = carve_report_json(l.rep);
    CHECK_CONTAINS(js, "\"compile_rounds\":2");
    CHECK_CONTAINS(js, "backend demo refused to compile its partition (Delegate_0): demo's Neg kernel cannot be "
                       "compiled (1 node)");
    carve_node_id d[4];
    CHECK_INT(delegates(l.m, d, 4), 2);
    CHECK_OK(l.ctx, carve_model_verify(l.m));
    CHECK(runs_as(l.m, l.want));
    demo_free(&l);
}

TEST(compile_refusal_of_a_whole_partition_reaches_a_fixed_point)
{
    demo_lowered l;
    /* round 1: {Relu Neg Sub Mul} refused naming Neg; round 2: {Relu} and
     * {Sub Mul}, the second refused whole; round 3: {Relu} */
    REQUIRE(demo_lower(&l, (const char *[]){"Relu", "Neg", "Sub", "Mul"}, 4));
    CHECK_CONTAINS(carve_report_summary(l.rep), "1 of 4 nodes delegated in 1 partition");
    CHECK_CONTAINS(carve_report_summary(l.rep), "cpu: 3 backend_refused");
    CHECK_CONTAINS(carve_report_json(l.rep), "\"compile_rounds\":3");
    CHECK_CONTAINS(carve_report_json(l.rep), "demo compiles no partition holding Sub");
    CHECK(runs_as(l.m, l.want));
    demo_free(&l);
}

/* The same three lowerings with --dump-after: each lowering after the first
 * marks its dumps .c2, .c3; the compile dump is written by the lowering
 * whose compile succeeds only. */
TEST(dump_after_names_each_compile_round)
{
    carve_ctx *ctx = carve_ctx_new();
    REQUIRE_OK(ctx, carve_backend_load(ctx, DEMO_PLUGIN, NULL));
    carve_model *m = chain(ctx, (const char *[]){"Relu", "Neg", "Sub", "Mul"}, 4);
    carve_target *t = NULL;
    REQUIRE(m);
    REQUIRE_OK(ctx, carve_target_builtin(ctx, "demo", &t));
    const char *dir = t_path(t_tmpdir(), "dumps");
    REQUIRE(mkdir(dir, 0777) == 0);
    const char *stages[] = {"delegates", "compile"};
    carve_lower_opts o = {.dump_after = stages, .n_dump_after = 2, .dump_dir = dir};
    REQUIRE_OK(ctx, carve_lower(m, t, &o, NULL));
    const char *names[] = {"08-delegates.txt", "08-delegates.c2.txt", "08-delegates.c3.txt", "12-compile.c3.txt"};
    for (int i = 0; i < 4; i++) {
        size_t n = 0;
        char *text = t_read_file(t_path(dir, names[i]), &n);
        CHECK(text && n > 17 && !strncmp(text, "model ir_version=", 17));
        free(text);
    }
    CHECK_INT(t_dir_count(dir), 4);
    carve_target_free(t);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(supports_node_reason_is_merged_into_the_report)
{
    carve_ctx *ctx = carve_ctx_new();
    REQUIRE_OK(ctx, carve_backend_load(ctx, DEMO_PLUGIN, NULL));
    /* Relu -> Add with a one-element constant: the demo does not broadcast */
    carve_model *m = carve_model_new(ctx);
    REQUIRE_OK(ctx, carve_model_set_opset(m, "", 17));
    carve_dim d[2] = {{2, NULL}, {3, NULL}};
    float one = 1.0f;
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, d);
    carve_value_id c = carve_graph_add_initializer(m, 0, "c", CARVE_FLOAT, 0, NULL, &one, sizeof one);
    carve_node_id r = carve_graph_add_node(m, 0, "Relu", "", "relu", 1, &x, 1, (const char *[]){"r"});
    carve_value_id in[2] = {carve_node_output(m, r, 0), c};
    carve_node_id a = carve_graph_add_node(m, 0, "Add", "", "add", 2, in, 1, (const char *[]){"y"});
    REQUIRE_OK(ctx, carve_graph_add_output(m, 0, carve_node_output(m, a, 0)));
    carve_tensor *want = run(m);
    carve_target *t = NULL;
    REQUIRE_OK(ctx, carve_target_builtin(ctx, "demo", &t));
    carve_report *rep = NULL;
    REQUIRE_OK(ctx, carve_lower(m, t, NULL, &rep));
    CHECK_CONTAINS(carve_report_summary(rep), "1 of 2 nodes delegated");
    CHECK_CONTAINS(carve_report_json(rep), "backend demo: no_broadcast: inputs 0 and 1 differ in shape (6 and 1 "
                                           "elements): demo does not broadcast");
    CHECK(runs_as(m, want));
    carve_tensor_free(want);
    carve_report_free(rep);
    carve_target_free(t);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(missing_backend_names_the_delegate_and_reference_runs_it)
{
    demo_lowered l;
    REQUIRE(demo_lower(&l, (const char *[]){"Relu", "Add", "Mul"}, 3));
    size_t n = 0;
    void *bytes = t_save(l.m, &n);
    carve_tensor *want = l.want;
    l.want = NULL;
    demo_free(&l);
    /* a context without the plugin */
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_load(ctx, bytes, n);
    REQUIRE(m);
    carve_tensor *x = input(), *y = NULL;
    CHECK_ERR(ctx, carve_model_run(m, &x, &y), CARVE_ERR_UNSUPPORTED,
              "Delegate 'Delegate_0': its backend 'demo' is not registered");
    CHECK(!strstr(carve_errmsg(ctx), "--")); /* the library names no CLI flag */
    CHECK(y == NULL);
    carve_model_use_reference(m, true);
    CHECK_OK(ctx, carve_model_run(m, &x, &y));
    CHECK(same(y, want));
    carve_tensor_free(x);
    carve_tensor_free(y);
    carve_tensor_free(want);
    carve_model_free(m);
    carve_ctx_free(ctx);
    free(bytes);
}

TEST(old_lowered_model_without_backend_runs_on_reference)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = chain(ctx, (const char *[]){"Relu", "Add", "Mul"}, 3);
    REQUIRE(m);
    carve_tensor *want = run(m);
    carve_target *t = NULL;
    REQUIRE_OK(ctx, carve_target_builtin(ctx, "htp", &t));
    CHECK_STR(carve_target_backend(ctx, t), "reference");
    REQUIRE_OK(ctx, carve_lower(m, t, NULL, NULL));
    carve_target_free(t);
    carve_node_id d[4];
    REQUIRE_INT(delegates(m, d, 4), 1);
    CHECK_STR(carve_node_attr_string(m, d[0], "backend", NULL), "reference");
    CHECK_STR(carve_node_attr_string(m, d[0], "backend_version", NULL), "carve " CARVE_VERSION);
    /* strip the attributes, as a model lowered before backends has none */
    size_t n = 0;
    void *bytes = t_save(m, &n);
    carve_model_free(m);
    Onnx__ModelProto *mp = t_pb_unpack(bytes, n);
    free(bytes);
    REQUIRE(mp);
    size_t stripped = 0;
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        Onnx__NodeProto *np = mp->graph->node[i];
        size_t w = 0;
        for (size_t a = 0; a < np->n_attribute; a++)
            if (strncmp(np->attribute[a]->name, "backend", 7))
                np->attribute[w++] = np->attribute[a];
            else
                stripped++;
        np->n_attribute = w;
    }
    CHECK_INT(stripped, 2);
    bytes = t_pb_pack(mp, &n);
    m = t_load(ctx, bytes, n);
    free(bytes);
    REQUIRE(m);
    REQUIRE_INT(delegates(m, d, 4), 1);
    CHECK(carve_node_attr_string(m, d[0], "backend", NULL) == NULL);
    CHECK(runs_as(m, want));
    carve_tensor_free(want);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(unknown_profile_backend_is_an_error_naming_it)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *p = t_path(t_tmpdir(), "t.json");
    const char *json = "{\"schema_version\": 1, \"name\": \"mytarget\", \"backend\": \"qnn\", \"dtypes\": [\"float32\"],"
                       " \"max_rank\": 4, \"ops\": {\"Relu\": {}}}";
    t_write_file(p, json, strlen(json));
    carve_target *t = NULL;
    REQUIRE_OK(ctx, carve_target_load_file(ctx, p, &t));
    CHECK_STR(carve_target_backend(ctx, t), "qnn");
    carve_model *m = chain(ctx, (const char *[]){"Relu"}, 1);
    REQUIRE(m);
    size_t n = 0;
    void *before = t_save(m, &n);
    CHECK_ERR(ctx, carve_lower(m, t, NULL, NULL), CARVE_ERR_ARG,
              "target mytarget: its backend 'qnn' is not registered");
    CHECK(!strstr(carve_errmsg(ctx), "--"));
    /* refused before anything changed */
    size_t n2 = 0;
    void *after = t_save(m, &n2);
    CHECK(n == n2 && !memcmp(before, after, n));
    free(before);
    free(after);
    const char *bad = "{\"schema_version\": 1, \"name\": \"x\", \"backend\": 3, \"dtypes\": [\"float32\"], \"ops\": {}}";
    t_write_file(p, bad, strlen(bad));
    carve_target *t2 = NULL;
    CHECK_ERR(ctx, carve_target_load_file(ctx, p, &t2), CARVE_ERR_INVALID, "backend: expected a non-empty string");
    carve_target_free(t);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

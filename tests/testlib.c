/* testlib.c: the test runner (main) and the helpers of testlib.h (the
 * whole-file ones are in testfiles.c). */
#define _DEFAULT_SOURCE
#define _XOPEN_SOURCE 700
#include "testlib.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- registry */

#define MAX_TESTS 256

static struct {
    const char *name;
    t_fn fn;
} tests[MAX_TESTS];
static int n_tests;
static int failed_checks; /* in the current test */

void t_register(const char *name, t_fn fn)
{
    if (n_tests == MAX_TESTS) {
        fprintf(stderr, "testlib: more than %d tests in one program\n", MAX_TESTS);
        abort();
    }
    tests[n_tests].name = name;
    tests[n_tests].fn = fn;
    n_tests++;
}

/* ---------------------------------------------------------------- checks */

static void fail_head(const char *file, int line)
{
    const char *base = strrchr(file, '/');
    fprintf(stdout, "  %s:%d: ", base ? base + 1 : file, line);
    failed_checks++;
}

bool t_check(bool ok, const char *file, int line, const char *fmt, ...)
{
    if (ok)
        return true;
    fail_head(file, line);
    fputs("check failed: ", stdout);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    return false;
}

bool t_check_int(long long a, long long b, const char *ea, const char *eb, const char *file, int line)
{
    if (a == b)
        return true;
    fail_head(file, line);
    printf("%s == %s: got %lld, want %lld\n", ea, eb, a, b);
    return false;
}

bool t_check_str(const char *a, const char *b, const char *ea, const char *eb, const char *file, int line)
{
    if (a && b && !strcmp(a, b))
        return true;
    fail_head(file, line);
    printf("%s == %s: got \"%s\", want \"%s\"\n", ea, eb, a ? a : "(null)", b ? b : "(null)");
    return false;
}

bool t_check_contains(const char *hay, const char *needle, const char *ehay, const char *file, int line)
{
    if (hay && strstr(hay, needle))
        return true;
    fail_head(file, line);
    printf("%s should contain \"%s\": got \"%s\"\n", ehay, needle, hay ? hay : "(null)");
    return false;
}

bool t_check_status(carve_status got, carve_status want, carve_ctx *ctx, const char *expr,
                    const char *file, int line)
{
    if (got == want)
        return true;
    fail_head(file, line);
    printf("%s: got %s (%s), want %s\n", expr, carve_status_name(got), ctx ? carve_errmsg(ctx) : "",
           carve_status_name(want));
    return false;
}

bool t_check_error(carve_status got, carve_status want, const char *text, carve_ctx *ctx,
                   const char *expr, const char *file, int line)
{
    const char *msg = carve_errmsg(ctx);
    if (got == want && strstr(msg, text))
        return true;
    fail_head(file, line);
    printf("%s: got %s \"%s\", want %s with \"%s\"\n", expr, carve_status_name(got), got ? msg : "",
           carve_status_name(want), text);
    return false;
}

/* ---------------------------------------------------------------- files */

static char tmp_root[PATH_MAX];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup_tmp(void)
{
    if (tmp_root[0] && !getenv("CARVE_TEST_KEEP_TMP"))
        nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *t_tmpdir(void)
{
    if (!tmp_root[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmp_root, sizeof tmp_root, "%s/carve-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmp_root)) {
            perror("testlib: mkdtemp");
            abort();
        }
        atexit(cleanup_tmp);
    }
    static int k;
    char sub[32];
    snprintf(sub, sizeof sub, "d%d", ++k);
    const char *p = t_path(tmp_root, sub);
    if (mkdir(p, 0755) != 0) {
        perror("testlib: mkdir");
        abort();
    }
    return p;
}

const char *t_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = t_pb_alloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* ---------------------------------------------------------------- models */

void *t_save(carve_model *m, size_t *n)
{
    void *bytes = NULL;
    if (!CHECK_OK(carve_model_ctx(m), carve_model_save_memory(m, &bytes, n)))
        return NULL;
    return bytes;
}

Onnx__ModelProto *t_save_pb(carve_model *m)
{
    size_t len;
    void *bytes = t_save(m, &len);
    Onnx__ModelProto *mp = bytes ? t_pb_unpack(bytes, len) : NULL;
    carve_free(bytes);
    t_check(mp != NULL, __FILE__, __LINE__, "the saved model unpacks");
    return mp;
}

carve_model *t_load(carve_ctx *ctx, const void *bytes, size_t n)
{
    carve_model *m = NULL;
    carve_model_load_memory(ctx, bytes, n, NULL, &m);
    return m;
}

bool t_same_dump(const carve_model *a, const carve_model *b, const char *file, int line)
{
    char *da = carve_model_dump(a), *db = carve_model_dump(b);
    bool same = da && db && !strcmp(da, db);
    if (!same) {
        fail_head(file, line);
        size_t i = 0;
        while (da && db && da[i] && da[i] == db[i])
            i++;
        size_t s = i;
        while (s && da[s - 1] != '\n')
            s--;
        printf("dumps differ at byte %zu:\n    %.*s\n    vs\n    %.*s\n", i, (int)strcspn(da + s, "\n"),
               da + s, (int)strcspn(db + s, "\n"), db + s);
    }
    carve_free(da);
    carve_free(db);
    return same;
}

carve_model *t_round_trip(carve_ctx *ctx, carve_model *m, const char *file, int line)
{
    size_t n = 0;
    void *bytes = NULL;
    if (!t_check_status(carve_model_save_memory(m, &bytes, &n), CARVE_OK, ctx, "save", file, line))
        return NULL;
    carve_model *r = NULL;
    carve_status s = carve_model_load_memory(ctx, bytes, n, NULL, &r);
    carve_free(bytes);
    if (!t_check_status(s, CARVE_OK, ctx, "re-import", file, line))
        return NULL;
    t_same_dump(m, r, file, line);
    return r;
}

/* ---------------------------------------------------------------- protobuf */

typedef struct block {
    struct block *next;
    _Alignas(16) unsigned char data[];
} block;
static block *pool;

void *t_pb_alloc(size_t n)
{
    block *b = calloc(1, sizeof *b + (n ? n : 1));
    if (!b)
        abort();
    b->next = pool;
    pool = b;
    return b->data;
}

static void t_pb_reset(void)
{
    while (pool) {
        block *next = pool->next;
        free(pool);
        pool = next;
    }
}

static void *pool_alloc(void *u, size_t n) { (void)u; return t_pb_alloc(n); }
static void pool_free(void *u, void *p) { (void)u, (void)p; }
static ProtobufCAllocator pool_allocator = {pool_alloc, pool_free, NULL};

Onnx__ModelProto *t_pb_unpack(const void *bytes, size_t n)
{
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pool_allocator, n, bytes);
    t_check(mp != NULL, __FILE__, __LINE__, "protobuf-c cannot unpack %zu bytes", n);
    return mp;
}

uint8_t *t_pb_pack(const Onnx__ModelProto *mp, size_t *n)
{
    *n = onnx__model_proto__get_packed_size(mp);
    uint8_t *buf = malloc(*n ? *n : 1);
    onnx__model_proto__pack(mp, buf);
    return buf;
}

char *t_pb_strdup(const char *s)
{
    char *p = t_pb_alloc(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

void t_pb_push(void ***arr, size_t *n, void *item)
{
    void **a = t_pb_alloc((*n + 1) * sizeof *a);
    if (*n)
        memcpy(a, *arr, *n * sizeof *a);
    a[(*n)++] = item;
    *arr = a;
}

Onnx__NodeProto *t_pb_node(const char *name, const char *op, int n_in, const char *const *in, int n_out,
                           const char *const *out)
{
    Onnx__NodeProto *n = t_pb_alloc(sizeof *n);
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    n->name = name ? t_pb_strdup(name) : NULL;
    n->op_type = t_pb_strdup(op);
    n->n_input = (size_t)n_in;
    n->input = t_pb_alloc(((size_t)n_in + 1) * sizeof *n->input);
    for (int i = 0; i < n_in; i++)
        n->input[i] = t_pb_strdup(in[i]);
    n->n_output = (size_t)n_out;
    n->output = t_pb_alloc(((size_t)n_out + 1) * sizeof *n->output);
    for (int i = 0; i < n_out; i++)
        n->output[i] = t_pb_strdup(out[i]);
    return n;
}

Onnx__AttributeProto *t_pb_attr(const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = t_pb_alloc(sizeof *a);
    *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
    a->name = t_pb_strdup(name);
    a->has_type = 1;
    a->type = type;
    return a;
}

Onnx__AttributeProto *t_pb_attr_int(const char *name, int64_t v)
{
    Onnx__AttributeProto *a = t_pb_attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
    return a;
}

Onnx__AttributeProto *t_pb_attr_float(const char *name, float v)
{
    Onnx__AttributeProto *a = t_pb_attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
    return a;
}

Onnx__StringStringEntryProto *t_pb_kv(const char *k, const char *v)
{
    Onnx__StringStringEntryProto *e = t_pb_alloc(sizeof *e);
    *e = (Onnx__StringStringEntryProto)ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    e->key = t_pb_strdup(k);
    e->value = t_pb_strdup(v);
    return e;
}

Onnx__NodeProto *t_pb_find_node(Onnx__GraphProto *g, const char *first_output)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i]->n_output && !strcmp(g->node[i]->output[0], first_output))
            return g->node[i];
    t_check(false, __FILE__, __LINE__, "no node writes '%s'", first_output);
    abort();
}

Onnx__TensorProto *t_pb_find_init(Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!strcmp(g->initializer[i]->name, name))
            return g->initializer[i];
    t_check(false, __FILE__, __LINE__, "no initializer '%s'", name);
    abort();
}

/* ---------------------------------------------------------------- main */

static bool run(int i)
{
    failed_checks = 0;
    tests[i].fn();
    carve_set_allocator(NULL); /* a test that injects failures may have left early */
    t_pb_reset();
    printf("%s %s\n", failed_checks ? "FAIL" : "PASS", tests[i].name);
    fflush(stdout);
    return failed_checks == 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < n_tests; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    int pass = 0, fail = 0;
    if (argc == 1) {
        for (int i = 0; i < n_tests; i++)
            run(i) ? pass++ : fail++;
    } else {
        for (int a = 1; a < argc; a++) {
            int i = 0;
            while (i < n_tests && strcmp(tests[i].name, argv[a]))
                i++;
            if (i == n_tests) {
                printf("FAIL %s: no such test (see --list)\n", argv[a]);
                fail++;
                continue;
            }
            run(i) ? pass++ : fail++;
        }
    }
    if (pass + fail == 0) {
        printf("no test ran\n");
        return 1;
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}

/* ---------------------------------------------------------------- fixture */

#define TRY(c)          \
    do {                \
        if (!(c))       \
            goto fail;  \
    } while (0)
#define NODE(g, op, dom, name, ins, outs)                                                        \
    carve_graph_add_node(m, g, op, dom, name, sizeof(ins) / sizeof *(ins), ins,                  \
                         sizeof(outs) / sizeof *(outs), outs)

carve_model *t_rich_model(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    if (!m)
        return NULL;
    TRY(carve_model_set_opset(m, "", 21) == CARVE_OK);
    TRY(carve_model_set_opset(m, "com.example", 1) == CARVE_OK);
    TRY(carve_model_set_producer(m, "carve tests", "1") == CARVE_OK);
    TRY(carve_model_set_metadata(m, "purpose", "tests") == CARVE_OK);
    TRY(carve_model_set_doc(m, "the rich test model") == CARVE_OK);

    carve_dim xd[2] = {{-1, "N"}, {4, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, xd);
    carve_value_id cond = carve_graph_add_input(m, 0, "cond", CARVE_BOOL, 0, NULL);
    carve_value_id any = carve_graph_add_input(m, 0, "any", CARVE_FLOAT, -1, NULL);
    TRY(x != CARVE_NONE && cond != CARVE_NONE && any != CARVE_NONE);

    float w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (float)i * 0.25f - 2.0f;
    const uint8_t f16[8] = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c, 0x01, 0x00}; /* 1, -2, inf, tiny */
    const uint8_t bf16[8] = {0x80, 0x3f, 0x00, 0xc0, 0x80, 0x7f, 0xc0, 0x7f}; /* 1, -2, inf, nan */
    const uint8_t i4[3] = {0x21, 0x8f, 0x07};   /* 1, 2, -1, -8, 7: low nibble first */
    const uint8_t u4[2] = {0xf0, 0x03};          /* 0, 15, 3 */
    const uint8_t f8[4] = {0x38, 0xb8, 0x7e, 0x00};
    const uint8_t f8b[2] = {0x3c, 0xfb};
    const uint8_t f4[2] = {0x72, 0x0f};
    const int64_t i64[2] = {INT64_MIN, INT64_MAX};
    const uint8_t b[3] = {1, 0, 1};
    const double d[1] = {3.141592653589793};
    struct {
        const char *name;
        carve_dtype t;
        int rank;
        int64_t dims[2];
        const void *data;
        size_t n;
    } inits[] = {
        {"w", CARVE_FLOAT, 2, {4, 4}, w, sizeof w},
        {"h", CARVE_FLOAT16, 1, {4}, f16, sizeof f16},
        {"bf", CARVE_BFLOAT16, 2, {2, 2}, bf16, sizeof bf16},
        {"q4", CARVE_INT4, 1, {5}, i4, sizeof i4},
        {"u4", CARVE_UINT4, 1, {3}, u4, sizeof u4},
        {"f8", CARVE_FLOAT8E4M3FN, 1, {4}, f8, sizeof f8},
        {"f8b", CARVE_FLOAT8E5M2, 1, {2}, f8b, sizeof f8b},
        {"f4", CARVE_FLOAT4E2M1, 1, {3}, f4, sizeof f4},
        {"i64", CARVE_INT64, 1, {2}, i64, sizeof i64},
        {"b", CARVE_BOOL, 1, {3}, b, sizeof b},
        {"d", CARVE_DOUBLE, 0, {0}, d, sizeof d},
        {"empty", CARVE_FLOAT, 2, {0, 3}, w, 0},
    };
    for (size_t i = 0; i < sizeof inits / sizeof *inits; i++)
        TRY(carve_graph_add_initializer(m, 0, inits[i].name, inits[i].t, inits[i].rank, inits[i].dims,
                                        inits[i].data, inits[i].n) != CARVE_NONE);
    carve_value_id wv = carve_graph_find_value(m, 0, "w");

    carve_node_id n = NODE(0, "MatMul", "", "matmul", ((carve_value_id[]){x, wv}), ((const char *[]){"mm"}));
    TRY(n != CARVE_NONE);
    carve_value_id mm = carve_node_output(m, n, 0);
    n = carve_graph_add_node(m, 0, "Constant", "", NULL, 0, NULL, 1, (const char *[]){"c"});
    TRY(n != CARVE_NONE);
    TRY(carve_node_set_attr_tensor(m, n, "value", CARVE_FLOAT, 1, (int64_t[]){4}, w, 16) == CARVE_OK);
    carve_value_id c = carve_node_output(m, n, 0);
    n = NODE(0, "Add", "", NULL, ((carve_value_id[]){mm, c}), ((const char *[]){"sum"}));
    TRY(n != CARVE_NONE);
    carve_value_id sum = carve_node_output(m, n, 0);

    n = NODE(0, "Attrs", "com.example", "attrs", ((carve_value_id[]){sum, CARVE_NONE}),
             ((const char *[]){"attrs.out", ""}));
    TRY(n != CARVE_NONE);
    carve_value_id ao = carve_node_output(m, n, 0);
    TRY(carve_node_set_attr_float(m, n, "f", 0.5f) == CARVE_OK);
    TRY(carve_node_set_attr_int(m, n, "i", -7) == CARVE_OK);
    TRY(carve_node_set_attr_string(m, n, "s", "hello \"world\"") == CARVE_OK);
    TRY(carve_node_set_attr_tensor(m, n, "t", CARVE_INT4, 1, (int64_t[]){5}, i4, 3) == CARVE_OK);
    TRY(carve_node_set_attr_floats(m, n, "fs", 3, (float[]){1.0f, -0.0f, 1e-30f}) == CARVE_OK);
    TRY(carve_node_set_attr_ints(m, n, "is", 2, (int64_t[]){INT64_MIN, 42}) == CARVE_OK);
    TRY(carve_node_set_attr_strings(m, n, "ss", 2, (const char *[]){"a", ""}) == CARVE_OK);
    TRY(carve_node_set_attr_ints(m, n, "none", 0, NULL) == CARVE_OK);

    /* If: both branches read outer values (sum, attrs.out, x). */
    carve_graph_id then_g = carve_graph_new_subgraph(m, 0, "then");
    carve_graph_id else_g = carve_graph_new_subgraph(m, 0, "else");
    TRY(then_g != CARVE_NONE && else_g != CARVE_NONE);
    n = NODE(then_g, "Identity", "", NULL, ((carve_value_id[]){sum}), ((const char *[]){"out"}));
    TRY(n != CARVE_NONE);
    TRY(carve_graph_add_output(m, then_g, carve_node_output(m, n, 0)) == CARVE_OK);
    n = NODE(else_g, "Mul", "", NULL, ((carve_value_id[]){ao, x}), ((const char *[]){"out"}));
    TRY(n != CARVE_NONE);
    TRY(carve_graph_add_output(m, else_g, carve_node_output(m, n, 0)) == CARVE_OK);
    n = NODE(0, "If", "", "if", ((carve_value_id[]){cond}), ((const char *[]){"branch"}));
    TRY(n != CARVE_NONE);
    TRY(carve_node_set_attr_graph(m, n, "then_branch", then_g) == CARVE_OK);
    TRY(carve_node_set_attr_graph(m, n, "else_branch", else_g) == CARVE_OK);
    carve_value_id branch = carve_node_output(m, n, 0);

    /* GRAPHS: two bodies, each with an input of its own and outer reads. */
    carve_graph_id bodies[2];
    for (int k = 0; k < 2; k++) {
        bodies[k] = carve_graph_new_subgraph(m, 0, k ? "body1" : "body0");
        TRY(bodies[k] != CARVE_NONE);
        carve_value_id in = carve_graph_add_input(m, bodies[k], "in", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
        TRY(in != CARVE_NONE);
        n = NODE(bodies[k], k ? "Sub" : "Add", "", NULL, ((carve_value_id[]){in, sum}),
                 ((const char *[]){"body.out"}));
        TRY(n != CARVE_NONE);
        TRY(carve_graph_add_output(m, bodies[k], carve_node_output(m, n, 0)) == CARVE_OK);
    }
    n = NODE(0, "Multi", "com.example", "multi", ((carve_value_id[]){x, branch}), ((const char *[]){"multi.out"}));
    TRY(n != CARVE_NONE);
    TRY(carve_node_set_attr_graphs(m, n, "bodies", 2, bodies) == CARVE_OK);
    carve_value_id mo = carve_node_output(m, n, 0);
    carve_dim od[2] = {{-1, "N"}, {-1, NULL}};
    TRY(carve_value_set_type(m, mo, CARVE_FLOAT, 2, od) == CARVE_OK);

    TRY(carve_graph_add_output(m, 0, branch) == CARVE_OK);
    TRY(carve_graph_add_output(m, 0, mo) == CARVE_OK);
    TRY(carve_model_verify(m) == CARVE_OK);
    return m;
fail:
    carve_model_free(m);
    return NULL;
}

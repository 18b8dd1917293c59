/*
 * testlib.h: carve's tiny test helper. No framework: a test is a function
 * declared with TEST(name); checks record a failure and go on, REQUIRE_*
 * checks end the test. The runner (testlib.c holds main) runs every test of
 * the program, or those named on the command line:
 *
 *   test_ir                      all tests of tests/test_ir.c
 *   test_ir value_kinds          one test
 *   test_ir --list               the names
 *
 * tests/CMakeLists.txt finds the TEST(name) lines and registers one CTest
 * per test, named <file>.<test> (ir.value_kinds).
 *
 * Besides the checks, a few helpers: temporary folders removed at exit,
 * whole-file read and write, and protobuf-c access to ONNX bytes, to craft
 * models that carve's own builder cannot make (broken ones, unknown fields).
 */
#ifndef CARVE_TESTLIB_H
#define CARVE_TESTLIB_H

#include "carve.h"
#include "onnx.pb-c.h"
#include "testfiles.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*t_fn)(void);
void t_register(const char *name, t_fn fn);

#define TEST(name)                                                                   \
    static void test_##name(void);                                                   \
    __attribute__((constructor)) static void register_##name(void)                   \
    {                                                                                \
        t_register(#name, test_##name);                                              \
    }                                                                                \
    static void test_##name(void)

/* ---------------------------------------------------------------- checks */

/* Each returns whether the check held; a failing one prints where and why
 * and marks the current test failed. */
bool t_check(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool t_check_int(long long a, long long b, const char *ea, const char *eb, const char *file, int line);
bool t_check_str(const char *a, const char *b, const char *ea, const char *eb, const char *file, int line);
bool t_check_contains(const char *hay, const char *needle, const char *ehay, const char *file, int line);
bool t_check_status(carve_status got, carve_status want, carve_ctx *ctx, const char *expr,
                    const char *file, int line);
/* got must be want and the context's message must contain `text`. */
bool t_check_error(carve_status got, carve_status want, const char *text, carve_ctx *ctx,
                   const char *expr, const char *file, int line);

#define CHECK(c) t_check((c), __FILE__, __LINE__, "%s", #c)
#define CHECK_INT(a, b) t_check_int((long long)(a), (long long)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_STR(a, b) t_check_str((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_CONTAINS(hay, needle) t_check_contains((hay), (needle), #hay, __FILE__, __LINE__)
#define CHECK_OK(ctx, expr) t_check_status((expr), CARVE_OK, (ctx), #expr, __FILE__, __LINE__)
/* The call fails with status `code` and a message holding `text`. */
#define CHECK_ERR(ctx, expr, code, text) t_check_error((expr), (code), (text), (ctx), #expr, __FILE__, __LINE__)

#define REQUIRE(c)              do { if (!CHECK(c)) return; } while (0)
#define REQUIRE_INT(a, b)       do { if (!CHECK_INT(a, b)) return; } while (0)
#define REQUIRE_OK(ctx, expr)   do { if (!CHECK_OK(ctx, expr)) return; } while (0)

/* ---------------------------------------------------------------- files */

/* A fresh folder under $TMPDIR (or /tmp), removed with its content at exit. */
const char *t_tmpdir(void);
/* "dir/name" in a buffer that lives until the end of the test. */
const char *t_path(const char *dir, const char *name);
/* t_write_file, t_read_file, t_dir_count: testfiles.h */

/* ---------------------------------------------------------------- models */

/* carve_model_save_memory, failing the test on error (returns NULL). */
void *t_save(carve_model *m, size_t *n);
/* m saved and unpacked with protobuf-c (pool memory, like t_pb_unpack),
 * failing the test on error (returns NULL). */
Onnx__ModelProto *t_save_pb(carve_model *m);
/* carve_model_load_memory without options. */
carve_model *t_load(carve_ctx *ctx, const void *bytes, size_t n);
/* Dump comparison that prints the first differing line. */
bool t_same_dump(const carve_model *a, const carve_model *b, const char *file, int line);
#define CHECK_SAME_DUMP(a, b) t_same_dump((a), (b), __FILE__, __LINE__)
/* save -> load -> the dump is unchanged; returns the reloaded model. */
carve_model *t_round_trip(carve_ctx *ctx, carve_model *m, const char *file, int line);
#define ROUND_TRIP(ctx, m) t_round_trip((ctx), (m), __FILE__, __LINE__)

/* A model that uses most of the IR: inputs with symbolic dims, initializers
 * of many dtypes (float16, bfloat16, int4, uint4, float8, float4...), a
 * Constant, attributes of every kind the builder can set, an If whose
 * branches read outer values, a GRAPHS attribute, two opset domains and
 * metadata. Verified. NULL (message on ctx) when any step fails, so it also
 * serves allocation-failure tests. */
carve_model *t_rich_model(carve_ctx *ctx);

/* ---------------------------------------------------------------- protobuf */

/* Unpacks ONNX bytes with protobuf-c. Everything it allocates, and every
 * t_pb_alloc, lives in one pool freed after the test, so a test may point
 * any field at new memory or at static data. */
Onnx__ModelProto *t_pb_unpack(const void *bytes, size_t n);
/* Packs; the bytes are malloc'd. */
uint8_t *t_pb_pack(const Onnx__ModelProto *mp, size_t *n);
void *t_pb_alloc(size_t n); /* zeroed, from the pool */
char *t_pb_strdup(const char *s);
/* Appends to a repeated field: *arr grows by one (pool memory). */
void t_pb_push(void ***arr, size_t *n, void *item);
#define T_PB_PUSH(arr, n, item) t_pb_push((void ***)&(arr), &(n), (item))
/* New messages from the pool, initialised. */
Onnx__NodeProto *t_pb_node(const char *name, const char *op, int n_in, const char *const *in, int n_out,
                           const char *const *out);
/* A new attribute of that name and type, its value not set. */
Onnx__AttributeProto *t_pb_attr(const char *name, Onnx__AttributeProto__AttributeType type);
Onnx__AttributeProto *t_pb_attr_int(const char *name, int64_t v);
Onnx__AttributeProto *t_pb_attr_float(const char *name, float v);
Onnx__StringStringEntryProto *t_pb_kv(const char *k, const char *v);
/* Finds a node of a graph by output name. */
Onnx__NodeProto *t_pb_find_node(Onnx__GraphProto *g, const char *first_output);
Onnx__TensorProto *t_pb_find_init(Onnx__GraphProto *g, const char *name);

#endif /* CARVE_TESTLIB_H */

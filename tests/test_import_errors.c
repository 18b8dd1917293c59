/* test_import_errors.c: models carve refuses, and the words it refuses them
 * with. Each test breaks one thing in an otherwise good model and asserts on
 * the status and the text of the error. */
#define _DEFAULT_SOURCE
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- fixture */

/* x[2] -> relu: Relu -> r;  add: Add(r, w[2]) -> y;  neg: Neg(y) -> z */
static void *good_model(size_t *n)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{2, NULL}});
    float w[2] = {1.0f, 2.0f};
    carve_value_id wv = carve_graph_add_initializer(m, 0, "w", CARVE_FLOAT, 1, (int64_t[]){2}, w, sizeof w);
    carve_node_id relu = carve_graph_add_node(m, 0, "Relu", "", "relu", 1, &x, 1, (const char *[]){"r"});
    carve_node_id add = carve_graph_add_node(m, 0, "Add", "", "add", 2,
                                             (carve_value_id[]){carve_node_output(m, relu, 0), wv}, 1,
                                             (const char *[]){"y"});
    carve_value_id y = carve_node_output(m, add, 0);
    carve_node_id neg = carve_graph_add_node(m, 0, "Neg", "", "neg", 1, &y, 1, (const char *[]){"z"});
    carve_graph_add_output(m, 0, carve_node_output(m, neg, 0));
    void *bytes = NULL;
    if (carve_model_verify(m) != CARVE_OK || carve_model_save_memory(m, &bytes, n) != CARVE_OK) {
        printf("fixture: %s\n", carve_errmsg(ctx));
        abort();
    }
    carve_model_free(m);
    carve_ctx_free(ctx);
    return bytes;
}

static Onnx__ModelProto *good_proto(void)
{
    size_t n;
    void *bytes = good_model(&n);
    Onnx__ModelProto *mp = t_pb_unpack(bytes, n);
    carve_free(bytes);
    return mp;
}

/* Loads the (altered) proto from memory; returns the status, the model (if
 * any) is freed. */
static carve_status load_proto(carve_ctx *ctx, const Onnx__ModelProto *mp, const char *base_dir)
{
    size_t n;
    uint8_t *bytes = t_pb_pack(mp, &n);
    carve_model *m = NULL;
    carve_load_opts o = {base_dir};
    carve_status s = carve_model_load_memory(ctx, bytes, n, &o, &m);
    CHECK((s == CARVE_OK) == (m != NULL));
    carve_model_free(m);
    free(bytes);
    return s;
}

static carve_status load_bytes(carve_ctx *ctx, const void *bytes, size_t n)
{
    carve_model *m = NULL;
    carve_status s = carve_model_load_memory(ctx, bytes, n, NULL, &m);
    CHECK((s == CARVE_OK) == (m != NULL));
    carve_model_free(m);
    return s;
}

/* ---------------------------------------------------------------- bytes */

TEST(the_fixture_loads)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    CHECK_OK(ctx, load_proto(ctx, mp, NULL));
    carve_ctx_free(ctx);
}

TEST(empty_file)
{
    carve_ctx *ctx = carve_ctx_new();
    CHECK_ERR(ctx, load_bytes(ctx, "", 0), CARVE_ERR_PARSE, "model: empty input, not an ONNX model");
    const char *path = t_path(t_tmpdir(), "empty.onnx");
    t_write_file(path, "", 0);
    carve_model *m = (carve_model *)1;
    CHECK_ERR(ctx, carve_model_load_file(ctx, path, NULL, &m), CARVE_ERR_PARSE, "empty input, not an ONNX model");
    CHECK_CONTAINS(carve_errmsg(ctx), path);
    CHECK(m == NULL);
    carve_ctx_free(ctx);
}

TEST(not_an_onnx_file)
{
    carve_ctx *ctx = carve_ctx_new();
    const char text[] = "#!/bin/sh\necho this is a shell script, not a model\n";
    CHECK_ERR(ctx, load_bytes(ctx, text, sizeof text - 1), CARVE_ERR_PARSE, "not a valid ONNX model: ");
    /* A PNG header: the message says where the bytes went wrong. */
    const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    CHECK_ERR(ctx, load_bytes(ctx, png, sizeof png), CARVE_ERR_PARSE, "not a valid ONNX model");
    CHECK_CONTAINS(carve_errmsg(ctx), "at byte ");
    carve_ctx_free(ctx);
}

TEST(missing_file_gives_the_os_error)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    const char *path = t_path(t_tmpdir(), "absent.onnx");
    CHECK_ERR(ctx, carve_model_load_file(ctx, path, NULL, &m), CARVE_ERR_IO, "No such file or directory");
    CHECK_CONTAINS(carve_errmsg(ctx), path);
    CHECK_ERR(ctx, carve_model_load_file(ctx, t_tmpdir(), NULL, &m), CARVE_ERR_IO, "not a regular file");
    CHECK_ERR(ctx, carve_model_load_file(ctx, NULL, NULL, &m), CARVE_ERR_ARG, "no path");
    carve_ctx_free(ctx);
}

TEST(truncated_file)
{
    carve_ctx *ctx = carve_ctx_new();
    size_t n;
    uint8_t *bytes = good_model(&n);
    /* Cut inside the graph (field 7, the bulk of the file): its declared
     * length runs past the end. */
    CHECK_ERR(ctx, load_bytes(ctx, bytes, n / 2), CARVE_ERR_PARSE, "model: not a valid ONNX model: ");
    CHECK_CONTAINS(carve_errmsg(ctx), "field 7 graph: length ");
    CHECK_CONTAINS(carve_errmsg(ctx), "runs past the end at byte ");
    /* Cut one byte short: the last field's length is cut off. */
    CHECK_ERR(ctx, load_bytes(ctx, bytes, n - 1), CARVE_ERR_PARSE, "not a valid ONNX model: ");
    CHECK_CONTAINS(carve_errmsg(ctx), "at byte ");
    /* Cut in the middle of a varint. */
    const uint8_t half_varint[] = {0x08, 0x80};
    CHECK_ERR(ctx, load_bytes(ctx, half_varint, sizeof half_varint), CARVE_ERR_PARSE, "truncated varint at byte 0");
    carve_free(bytes);
    carve_ctx_free(ctx);
}

TEST(wrong_wire_type)
{
    carve_ctx *ctx = carve_ctx_new();
    /* ir_version (field 1) is a varint; here it comes length-delimited. */
    const uint8_t bad[] = {0x0a, 0x01, 0x00};
    CHECK_ERR(ctx, load_bytes(ctx, bad, sizeof bad), CARVE_ERR_PARSE,
              "field 1 (ir_version) has wire type 2, expected 0 at byte 0");
    /* Deeper: a node's op_type (string) sent as a varint, with the path. */
    const uint8_t deep[] = {0x08, 0x08, 0x3a, 0x04, 0x0a, 0x02, 0x20, 0x01};
    CHECK_ERR(ctx, load_bytes(ctx, deep, sizeof deep), CARVE_ERR_PARSE,
              "graph.node[0]: field 4 (op_type) has wire type 0, expected 2");
    /* Wire types 6 and 7 do not exist. */
    const uint8_t seven[] = {0x0f};
    CHECK_ERR(ctx, load_bytes(ctx, seven, sizeof seven), CARVE_ERR_PARSE, "field 1 has invalid wire type 7");
    carve_ctx_free(ctx);
}

/* Found by the fuzzer: protobuf-c takes a field number 0 when its key is
 * written in two bytes (0x80 0x00), keeps it as an unknown field, and then
 * cannot read back what carve writes for it. It is not protobuf: refused. */
TEST(field_number_zero)
{
    carve_ctx *ctx = carve_ctx_new();
    size_t n;
    uint8_t *good = good_model(&n);
    uint8_t *bad = malloc(n + 3);
    memcpy(bad, good, n);
    memcpy(bad + n, "\x80\x00\x01", 3);
    CHECK_ERR(ctx, load_bytes(ctx, bad, n + 3), CARVE_ERR_PARSE, "not a valid ONNX model: field number 0 at byte ");
    const uint8_t one_byte[] = {0x00, 0x01};
    CHECK_ERR(ctx, load_bytes(ctx, one_byte, sizeof one_byte), CARVE_ERR_PARSE, "field number 0 at byte 0");
    free(bad);
    carve_free(good);
    carve_ctx_free(ctx);
}

/* ---------------------------------------------------------------- tensors */

TEST(negative_dim)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    Onnx__TensorProto *w = t_pb_find_init(mp->graph, "w");
    int64_t dims[1] = {-2};
    w->dims = dims;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "graph 'main': initializer 'w': dim 0 is -2");

    mp = good_proto();
    Onnx__TensorShapeProto__Dimension *d = mp->graph->input[0]->type->tensor_type->shape->dim[0];
    d->dim_value = -3;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "input 'x': dim 0 is -3");
    carve_ctx_free(ctx);
}

TEST(absurd_dims)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    Onnx__TensorProto *w = t_pb_find_init(mp->graph, "w");
    /* 2^21 * 2^21 = 2^42 elements: refused before any allocation. */
    int64_t dims[2] = {(int64_t)1 << 21, (int64_t)1 << 21};
    w->n_dims = 2, w->dims = dims;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "initializer 'w': shape has more than 2^40 elements");
    /* Products that overflow 64 bits are caught too. */
    int64_t huge[3] = {INT64_MAX, INT64_MAX, 4};
    w->n_dims = 3, w->dims = huge;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "shape has more than 2^40 elements");
    /* A zero dim makes an empty tensor whatever the others are: valid. */
    int64_t zero[2] = {0, INT64_MAX};
    w->n_dims = 2, w->dims = zero;
    w->raw_data.len = 0;
    CHECK_OK(ctx, load_proto(ctx, mp, NULL));
    /* Rank above carve's limit. */
    int64_t many[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    w->n_dims = 17, w->dims = many;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_UNSUPPORTED, "rank 17 is above carve's limit of 16");
    carve_ctx_free(ctx);
}

TEST(tensor_bytes_not_matching_shape)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    Onnx__TensorProto *w = t_pb_find_init(mp->graph, "w");
    w->raw_data.len = 3;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "initializer 'w': raw_data has 3 bytes but float32 of its shape needs 8");
    /* The typed field: one float for two elements. */
    static float one[1] = {1.0f};
    w->has_raw_data = 0;
    w->n_float_data = 1, w->float_data = one;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "1 values in float_data but float32 of its shape needs 2");
    /* int4 in int32_data: one packed byte per int32, so [3] needs 2. */
    static int32_t packed[3] = {0x21, 0x03, 0};
    w->data_type = CARVE_INT4, w->n_float_data = 0;
    w->n_int32_data = 3, w->int32_data = packed;
    int64_t three[1] = {3};
    w->dims = three;
    mp->graph->input[0]->type->tensor_type->elem_type = CARVE_FLOAT;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "3 values in int32_data but int4 of its shape needs 2");
    /* An unknown data type. */
    w->data_type = 99;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "data type 99 is not a valid ONNX type");
    carve_ctx_free(ctx);
}

/* ---------------------------------------------------------------- graphs */

TEST(undefined_input)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    t_pb_find_node(mp->graph, "y")->input[0] = "nope";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "node 'add' (Add): input 0 'nope' is not defined");
    /* An unnamed node is called by the name carve would give it. */
    mp = good_proto();
    Onnx__NodeProto *n = t_pb_find_node(mp->graph, "z");
    n->name = NULL;
    n->input[0] = "ghost";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "node Neg_z (Neg): input 0 'ghost' is not defined");
    /* A graph output nobody writes. */
    mp = good_proto();
    mp->graph->output[0]->name = "nothing";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "graph 'main': output 0 'nothing' is not defined");
    carve_ctx_free(ctx);
}

TEST(cycle_names_a_node_on_it)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    /* relu reads y: relu -> add -> relu is a cycle; neg only hangs off it.
     * neg comes first in the file, so the walk starts off the cycle. */
    Onnx__GraphProto *g = mp->graph;
    t_pb_find_node(g, "r")->input[0] = "y";
    Onnx__NodeProto *neg = t_pb_find_node(g, "z");
    for (size_t i = g->n_node - 1; i > 0; i--)
        g->node[i] = g->node[i - 1];
    g->node[0] = neg;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "graph 'main' has a cycle: node '");
    const char *msg = carve_errmsg(ctx);
    CHECK(strstr(msg, "node 'relu' (Relu)") || strstr(msg, "node 'add' (Add)"));
    CHECK(!strstr(msg, "'neg'"));
    /* A node reading its own output. */
    mp = good_proto();
    t_pb_find_node(mp->graph, "z")->input[0] = "z";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "has a cycle: node 'neg' (Neg) depends on its own output");
    carve_ctx_free(ctx);
}

TEST(two_nodes_write_one_value)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    t_pb_find_node(mp->graph, "z")->output[0] = "y";
    mp->graph->output[0]->name = "y";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "node 'neg' (Neg): value 'y' is already defined by another node");
    /* A node writing an initializer or an input. */
    mp = good_proto();
    t_pb_find_node(mp->graph, "z")->output[0] = "w";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "node 'neg' (Neg): value 'w' is already defined by an initializer");
    mp = good_proto();
    t_pb_find_node(mp->graph, "z")->output[0] = "x";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID,
              "node 'neg' (Neg): value 'x' is already defined by a graph input");
    carve_ctx_free(ctx);
}

TEST(duplicate_attribute)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    Onnx__NodeProto *n = t_pb_find_node(mp->graph, "r");
    T_PB_PUSH(n->attribute, n->n_attribute, t_pb_attr_float("alpha", 0.1f));
    CHECK_OK(ctx, load_proto(ctx, mp, NULL));
    T_PB_PUSH(n->attribute, n->n_attribute, t_pb_attr_int("alpha", 2));
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "node 'relu' (Relu): attribute 'alpha' is given twice");
    /* An attribute without a name. */
    mp = good_proto();
    n = t_pb_find_node(mp->graph, "r");
    T_PB_PUSH(n->attribute, n->n_attribute, t_pb_attr_int("", 2));
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "node 'relu' (Relu): an attribute has no name");
    carve_ctx_free(ctx);
}

TEST(model_without_graph_or_op_type)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = good_proto();
    REQUIRE(mp);
    mp->graph = NULL;
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "the model has no graph");
    mp = good_proto();
    t_pb_find_node(mp->graph, "r")->op_type = "";
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_INVALID, "graph 'main': node 0 has no op_type");
    carve_ctx_free(ctx);
}

/* ---------------------------------------------------------------- external data */

/* Makes initializer w of the fixture external: location, offset, length
 * (NULL: leave the key out). */
static Onnx__ModelProto *external(const char *location, const char *offset, const char *length)
{
    Onnx__ModelProto *mp = good_proto();
    Onnx__TensorProto *w = t_pb_find_init(mp->graph, "w");
    w->has_raw_data = 0;
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    T_PB_PUSH(w->external_data, w->n_external_data, t_pb_kv("location", location));
    if (offset)
        T_PB_PUSH(w->external_data, w->n_external_data, t_pb_kv("offset", offset));
    if (length)
        T_PB_PUSH(w->external_data, w->n_external_data, t_pb_kv("length", length));
    return mp;
}

/* Writes the proto as dir/model.onnx and loads it from the file. */
static carve_status load_file_in(carve_ctx *ctx, const char *dir, const Onnx__ModelProto *mp, carve_model **out)
{
    size_t n;
    uint8_t *bytes = t_pb_pack(mp, &n);
    const char *path = t_path(dir, "model.onnx");
    t_write_file(path, bytes, n);
    free(bytes);
    carve_model *m = NULL;
    carve_status s = carve_model_load_file(ctx, path, NULL, &m);
    if (out)
        *out = m;
    else
        carve_model_free(m);
    return s;
}

static const float w_data[2] = {1.0f, 2.0f};

TEST(external_data_absolute_location_refused)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *abs = t_path(dir, "w.bin");
    t_write_file(abs, w_data, sizeof w_data);
    CHECK_ERR(ctx, load_file_in(ctx, dir, external(abs, NULL, NULL), NULL), CARVE_ERR_INVALID,
              "external data location '");
    CHECK_CONTAINS(carve_errmsg(ctx), "graph 'main': initializer 'w': external data location '/");
    CHECK_CONTAINS(carve_errmsg(ctx), "' leaves the model's folder");
    carve_ctx_free(ctx);
}

TEST(external_data_parent_folder_refused)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *sub = t_path(dir, "sub");
    REQUIRE(mkdir(sub, 0755) == 0);
    t_write_file(t_path(dir, "w.bin"), w_data, sizeof w_data);
    const char *bad[] = {"../w.bin", "x/../../w.bin", "..", "a\\..\\w.bin"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_ERR(ctx, load_file_in(ctx, sub, external(bad[i], NULL, NULL), NULL), CARVE_ERR_INVALID,
                  "leaves the model's folder");
        CHECK_CONTAINS(carve_errmsg(ctx), bad[i]);
    }
    /* ".." inside a name is just a name. */
    t_write_file(t_path(sub, "w..bin"), w_data, sizeof w_data);
    CHECK_OK(ctx, load_file_in(ctx, sub, external("w..bin", NULL, NULL), NULL));
    carve_ctx_free(ctx);
}

TEST(external_data_symlink_outside_refused)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir(), *outside = t_tmpdir();
    const char *target = t_path(outside, "secret.bin");
    t_write_file(target, w_data, sizeof w_data);
    REQUIRE(symlink(target, t_path(dir, "link.bin")) == 0);
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("link.bin", NULL, NULL), NULL), CARVE_ERR_INVALID,
              "graph 'main': initializer 'w': external data location 'link.bin' resolves outside the model's folder");
    /* A folder symlink leading out is refused the same way. */
    REQUIRE(symlink(outside, t_path(dir, "out")) == 0);
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("out/secret.bin", NULL, NULL), NULL), CARVE_ERR_INVALID,
              "resolves outside the model's folder");
    /* A symlink that stays inside is fine. */
    t_write_file(t_path(dir, "real.bin"), w_data, sizeof w_data);
    REQUIRE(symlink("real.bin", t_path(dir, "inside.bin")) == 0);
    CHECK_OK(ctx, load_file_in(ctx, dir, external("inside.bin", NULL, NULL), NULL));
    carve_ctx_free(ctx);
}

TEST(external_data_from_memory_needs_base_dir)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    t_write_file(t_path(dir, "w.bin"), w_data, sizeof w_data);
    Onnx__ModelProto *mp = external("w.bin", NULL, NULL);
    CHECK_ERR(ctx, load_proto(ctx, mp, NULL), CARVE_ERR_ARG,
              "graph 'main': initializer 'w' has external data 'w.bin' but the model was loaded from memory without a base "
              "folder (set carve_load_opts.base_dir)");
    CHECK_OK(ctx, load_proto(ctx, mp, dir));
    carve_ctx_free(ctx);
}

/* Is p inside a memory mapping of the file `path` (per /proc/self/maps)? */
static bool mapped_from(const void *p, const char *path)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    uintptr_t a = (uintptr_t)p;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char file[4096] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095[^\n]", &lo, &hi, file) >= 2 && a >= lo && a < hi)
            found = strstr(file, path) != NULL;
    }
    fclose(f);
    return found;
}

TEST(external_data_loaded_memory_mapped)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    /* The data at an offset that is 16-aligned but not page-aligned: mapped
     * in place; at an offset that is not a multiple of 16: an aligned copy. */
    uint8_t file[5000] = {0};
    memcpy(file + 4112, w_data, sizeof w_data);
    memcpy(file + 4099, w_data, sizeof w_data);
    t_write_file(t_path(dir, "weights.bin"), file, sizeof file);
    carve_model *m = NULL;
    REQUIRE_OK(ctx, load_file_in(ctx, dir, external("weights.bin", "4112", "8"), &m));
    carve_value_id w = carve_graph_find_value(m, 0, "w");
    size_t n = 0;
    const float *d = carve_value_data(m, w, &n);
    CHECK_INT(n, 8);
    CHECK(d && d[0] == 1.0f && d[1] == 2.0f);
    CHECK(mapped_from(d, "weights.bin"));
    carve_model *mu = NULL;
    REQUIRE_OK(ctx, load_file_in(ctx, dir, external("weights.bin", "4099", "8"), &mu));
    const float *du = carve_value_data(mu, carve_graph_find_value(mu, 0, "w"), &n);
    CHECK_INT(n, 8);
    CHECK(du && (uintptr_t)du % 16 == 0);
    CHECK(du && du[0] == 1.0f && du[1] == 2.0f);
    CHECK(!mapped_from(du, "weights.bin"));
    carve_model_free(mu);
    /* Without a length, the shape decides; in a subfolder is fine. */
    const char *sub = t_path(dir, "data");
    REQUIRE(mkdir(sub, 0755) == 0);
    t_write_file(t_path(sub, "w.bin"), w_data, sizeof w_data);
    carve_model *m2 = NULL;
    CHECK_OK(ctx, load_file_in(ctx, dir, external("data/w.bin", NULL, NULL), &m2));
    if (m2) {
        d = carve_value_data(m2, carve_graph_find_value(m2, 0, "w"), &n);
        CHECK(n == 8 && d && !memcmp(d, w_data, 8));
        /* Exported, the data comes back inline and equal. */
        carve_model *r = ROUND_TRIP(ctx, m2);
        CHECK(r != NULL);
        carve_model_free(r);
    }
    carve_model_free(m2);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(external_data_length_mismatch)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    t_write_file(t_path(dir, "w.bin"), w_data, sizeof w_data);
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("w.bin", "0", "12"), NULL), CARVE_ERR_INVALID,
              "graph 'main': initializer 'w': external data length is 12 bytes but its shape needs 8");
    /* The file is too short for the data at that offset. */
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("w.bin", "4", NULL), NULL), CARVE_ERR_INVALID,
              "graph 'main': initializer 'w': external data 'w.bin' has 8 bytes, too few for 8 at offset 4");
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("w.bin", "-1", NULL), NULL), CARVE_ERR_INVALID,
              "graph 'main': initializer 'w': external data offset '-1' is not a number");
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("missing.bin", NULL, NULL), NULL), CARVE_ERR_IO,
              "graph 'main': initializer 'w': external data 'missing.bin': No such file or directory");
    CHECK_ERR(ctx, load_file_in(ctx, dir, external("", NULL, NULL), NULL), CARVE_ERR_INVALID,
              "graph 'main': initializer 'w': external data has no location");
    carve_ctx_free(ctx);
}

/* test_export.c: carve IR -> ONNX. A round trip keeps the IR; the bytes are
 * a pure function of the IR; files are written atomically and never over
 * the model they were read from; external data goes to a side file; what
 * carve does not understand is written back verbatim. */
#define _DEFAULT_SOURCE
#include "testlib.h"
#include "count_alloc.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool same_bytes(const char *path, const void *bytes, size_t n)
{
    size_t got = 0;
    void *data = t_read_file(path, &got);
    bool same = data && got == n && !memcmp(data, bytes, n);
    free(data);
    return same;
}

/* No carve temporary (".NAME.carve-tmp.PID.RAND") is left in dir. */
static bool no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool clean = true;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".carve-tmp."))
            clean = t_check(false, __FILE__, __LINE__, "temporary file %s left in %s", e->d_name, dir);
    closedir(d);
    return clean;
}

TEST(round_trip_keeps_the_dump)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    /* ...and again, from the re-imported model. */
    carve_model *r2 = ROUND_TRIP(ctx, r);
    CHECK(r2 != NULL);
    /* A round trip through a file too. */
    const char *path = t_path(t_tmpdir(), "rich.onnx");
    REQUIRE_OK(ctx, carve_model_save_file(m, path, NULL));
    carve_model *f = NULL;
    REQUIRE_OK(ctx, carve_model_load_file(ctx, path, NULL, &f));
    CHECK_SAME_DUMP(m, f);
    carve_model_free(f);
    carve_model_free(r2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(export_is_deterministic)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    size_t n1, n2, n3;
    void *b1 = t_save(m, &n1), *b2 = t_save(m, &n2);
    REQUIRE(b1 && b2);
    CHECK(n1 == n2 && !memcmp(b1, b2, n1));
    /* Two models built the same way, and a re-imported one exported twice. */
    carve_model *m2 = t_rich_model(ctx);
    REQUIRE(m2 != NULL);
    void *b3 = t_save(m2, &n3);
    CHECK(b3 && n3 == n1 && !memcmp(b1, b3, n1));
    carve_model *r = t_load(ctx, b1, n1);
    REQUIRE(r != NULL);
    size_t na, nb;
    void *ba = t_save(r, &na), *bb = t_save(r, &nb);
    CHECK(ba && bb && na == nb && !memcmp(ba, bb, na));
    /* The file holds exactly the bytes save_memory gives. */
    const char *path = t_path(t_tmpdir(), "m.onnx");
    CHECK_OK(ctx, carve_model_save_file(m, path, NULL));
    CHECK(same_bytes(path, b1, n1));
    carve_free(ba);
    carve_free(bb);
    carve_free(b1);
    carve_free(b2);
    carve_free(b3);
    carve_model_free(r);
    carve_model_free(m2);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(save_refuses_to_overwrite_the_source)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    const char *dir = t_tmpdir();
    const char *path = t_path(dir, "in.onnx");
    REQUIRE_OK(ctx, carve_model_save_file(m, path, NULL));
    size_t n;
    void *orig = t_read_file(path, &n);
    carve_model *l = NULL;
    REQUIRE_OK(ctx, carve_model_load_file(ctx, path, NULL, &l));
    CHECK_ERR(ctx, carve_model_save_file(l, path, NULL), CARVE_ERR_ARG, "refusing to overwrite the input model");
    CHECK_CONTAINS(carve_errmsg(ctx), path);
    /* The same file under other names. */
    char *dotted = (char *)t_path(dir, "./in.onnx");
    CHECK_ERR(ctx, carve_model_save_file(l, dotted, NULL), CARVE_ERR_ARG, "refusing to overwrite the input model");
    const char *hard = t_path(dir, "hard.onnx");
    REQUIRE(link(path, hard) == 0);
    CHECK_ERR(ctx, carve_model_save_file(l, hard, NULL), CARVE_ERR_ARG, "refusing to overwrite the input model");
    const char *sym = t_path(dir, "sym.onnx");
    REQUIRE(symlink("in.onnx", sym) == 0);
    CHECK_ERR(ctx, carve_model_save_file(l, sym, NULL), CARVE_ERR_ARG, "refusing to overwrite the input model");
    /* Nor as its external data. */
    carve_save_opts o = {"in.onnx", 16};
    CHECK_ERR(ctx, carve_model_save_file(l, t_path(dir, "out.onnx"), &o), CARVE_ERR_ARG,
              "refusing to overwrite the input model");
    CHECK(same_bytes(path, orig, n));
    /* Another path is fine. */
    CHECK_OK(ctx, carve_model_save_file(l, t_path(dir, "copy.onnx"), NULL));
    CHECK(same_bytes(t_path(dir, "copy.onnx"), orig, n));
    no_temp_files(dir);
    free(orig);
    carve_model_free(l);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(save_replaces_atomically)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    const char *dir = t_tmpdir();
    const char *path = t_path(dir, "out.onnx");
    t_write_file(path, "old content that is longer than nothing", 40);
    mode_t old_mask = umask(022);
    CHECK_OK(ctx, carve_model_save_file(m, path, NULL));
    size_t n;
    void *bytes = t_save(m, &n);
    CHECK(same_bytes(path, bytes, n));
    /* Replaced, not appended to or left half; nothing else in the folder. */
    CHECK_INT(t_dir_count(dir), 1);
    no_temp_files(dir);
    /* Readable like any file the user writes (mkstemp would give 0600). */
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0644);
    umask(old_mask);
    carve_free(bytes);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(save_failure_leaves_nothing_behind)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    const char *dir = t_tmpdir();
    /* A folder that does not exist. */
    const char *nowhere = t_path(dir, "no/such/folder/m.onnx");
    CHECK_ERR(ctx, carve_model_save_file(m, nowhere, NULL), CARVE_ERR_IO, "folder");
    CHECK_CONTAINS(carve_errmsg(ctx), "No such file or directory");
    /* The target is a folder: refused before a temporary is made. */
    const char *sub = t_path(dir, "taken");
    REQUIRE(mkdir(sub, 0755) == 0);
    t_write_file(t_path(sub, "keep"), "x", 1);
    CHECK_ERR(ctx, carve_model_save_file(m, sub, NULL), CARVE_ERR_IO, "is a directory, not a regular file");
    CHECK_INT(t_dir_count(dir), 1);
    CHECK_INT(t_dir_count(sub), 1);
    no_temp_files(dir);
    CHECK_ERR(ctx, carve_model_save_file(m, "", NULL), CARVE_ERR_ARG, "no output path");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(external_data_side_file)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{1000, NULL}});
    float big[1000], big2[300];
    for (int i = 0; i < 1000; i++)
        big[i] = (float)i / 7.0f;
    for (int i = 0; i < 300; i++)
        big2[i] = -(float)i;
    float small[3] = {1, 2, 3};
    carve_value_id b = carve_graph_add_initializer(m, 0, "big", CARVE_FLOAT, 1, (int64_t[]){1000}, big, sizeof big);
    carve_value_id b2 = carve_graph_add_initializer(m, 0, "big2", CARVE_FLOAT, 1, (int64_t[]){300}, big2, sizeof big2);
    carve_value_id s = carve_graph_add_initializer(m, 0, "small", CARVE_FLOAT, 1, (int64_t[]){3}, small, sizeof small);
    carve_node_id n = carve_graph_add_node(m, 0, "Add", "", "add", 2, (carve_value_id[]){x, b}, 1, (const char *[]){"y"});
    REQUIRE(n != CARVE_NONE && b2 != CARVE_NONE && s != CARVE_NONE);
    REQUIRE_OK(ctx, carve_node_set_attr_tensor(m, n, "t", CARVE_FLOAT, 1, (int64_t[]){300}, big2, sizeof big2));
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    REQUIRE_OK(ctx, carve_model_verify(m));

    const char *dir = t_tmpdir();
    const char *path = t_path(dir, "m.onnx"), *side = t_path(dir, "m.weights");
    carve_save_opts o = {"m.weights", 1024};
    REQUIRE_OK(ctx, carve_model_save_file(m, path, &o));
    struct stat ms, ss;
    REQUIRE(stat(path, &ms) == 0 && stat(side, &ss) == 0);
    /* 4000 + 1200 + 1200 bytes (each 64-aligned) in the side file; the
     * 12-byte tensor stays inline; the model file holds no big tensor. */
    CHECK(ss.st_size >= 6400);
    CHECK(ms.st_size < 1024);
    CHECK_INT(t_dir_count(dir), 2);
    no_temp_files(dir);

    /* The model says where each tensor is: 64-byte aligned offsets. */
    size_t len;
    void *bytes = t_read_file(path, &len);
    Onnx__ModelProto *mp = t_pb_unpack(bytes, len);
    free(bytes);
    REQUIRE(mp);
    Onnx__TensorProto *bt = t_pb_find_init(mp->graph, "big");
    CHECK(bt->has_data_location && bt->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL);
    REQUIRE_INT(bt->n_external_data, 3);
    CHECK_STR(bt->external_data[0]->key, "location");
    CHECK_STR(bt->external_data[0]->value, "m.weights");
    CHECK_STR(bt->external_data[1]->key, "offset");
    CHECK_INT(atoll(bt->external_data[1]->value) % 64, 0);
    CHECK_STR(bt->external_data[2]->value, "4000");
    Onnx__TensorProto *st = t_pb_find_init(mp->graph, "small");
    CHECK(st->has_raw_data && !st->has_data_location);

    /* Re-imported: the same data, the same dump. */
    carve_model *r = NULL;
    REQUIRE_OK(ctx, carve_model_load_file(ctx, path, NULL, &r));
    CHECK_SAME_DUMP(m, r);
    size_t nb = 0;
    const void *d = carve_value_data(r, carve_graph_find_value(r, 0, "big"), &nb);
    CHECK(nb == sizeof big && d && !memcmp(d, big, nb));
    d = carve_value_data(r, carve_graph_find_value(r, 0, "big2"), &nb);
    CHECK(nb == sizeof big2 && d && !memcmp(d, big2, nb));
    /* Saved again beside itself with the data inline, the IR is the same. */
    const char *inl = t_path(dir, "inline.onnx");
    REQUIRE_OK(ctx, carve_model_save_file(r, inl, NULL));
    carve_model *r2 = NULL;
    REQUIRE_OK(ctx, carve_model_load_file(ctx, inl, NULL, &r2));
    CHECK_SAME_DUMP(m, r2);
    /* Saving r, whose data is mapped from m.weights, with a new m.weights
     * beside it is refused: m.weights is an input (m.onnx points into it). */
    size_t wn = 0;
    void *wbytes = t_read_file(t_path(dir, "m.weights"), &wn);
    carve_save_opts same = {"m.weights", 0};
    CHECK_ERR(ctx, carve_model_save_file(r, t_path(dir, "again.onnx"), &same), CARVE_ERR_ARG,
              "refusing to overwrite the input model's external data");
    CHECK(same_bytes(t_path(dir, "m.weights"), wbytes, wn));
    free(wbytes);
    same.external_data_name = "again.weights";
    CHECK_OK(ctx, carve_model_save_file(r, t_path(dir, "again.onnx"), &same));
    d = carve_value_data(r, carve_graph_find_value(r, 0, "big"), &nb);
    CHECK(nb == sizeof big && d && !memcmp(d, big, nb));
    carve_model *r3 = NULL;
    CHECK_OK(ctx, carve_model_load_file(ctx, t_path(dir, "again.onnx"), NULL, &r3));
    if (r3)
        CHECK_SAME_DUMP(m, r3);
    carve_model_free(r3);

    carve_save_opts bad = {"sub/w.bin", 0};
    CHECK_ERR(ctx, carve_model_save_file(m, path, &bad), CARVE_ERR_ARG,
              "external data name 'sub/w.bin' must be a plain file name");
    bad.external_data_name = "..";
    CHECK_ERR(ctx, carve_model_save_file(m, path, &bad), CARVE_ERR_ARG, "must be a plain file name");
    bad.external_data_name = "m.onnx";
    CHECK_ERR(ctx, carve_model_save_file(m, path, &bad), CARVE_ERR_ARG,
              "the external data and the model would both be written to this file");
    carve_model_free(r2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Bytes of one unknown field as protobuf-c keeps it (length-delimited:
 * the data starts with the length). */
static ProtobufCMessageUnknownField unknown_len(uint32_t tag, const uint8_t *payload, size_t n)
{
    uint8_t *d = t_pb_alloc(n + 1);
    d[0] = (uint8_t)n; /* n < 128 */
    memcpy(d + 1, payload, n);
    return (ProtobufCMessageUnknownField){tag, PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, n + 1, d};
}

static void add_unknown(ProtobufCMessage *msg, ProtobufCMessageUnknownField f)
{
    ProtobufCMessageUnknownField *u = t_pb_alloc((msg->n_unknown_fields + 1) * sizeof *u);
    if (msg->n_unknown_fields)
        memcpy(u, msg->unknown_fields, msg->n_unknown_fields * sizeof *u);
    u[msg->n_unknown_fields++] = f;
    msg->unknown_fields = u;
}

static bool has_unknown(const ProtobufCMessage *msg, const ProtobufCMessageUnknownField *f)
{
    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
        if (u->tag == f->tag && u->wire_type == f->wire_type && u->len == f->len && !memcmp(u->data, f->data, f->len))
            return true;
    }
    return false;
}

/* The rich test model (*m) and its ONNX message, to edit; NULL on failure. */
static Onnx__ModelProto *rich_proto(carve_ctx *ctx, carve_model **m)
{
    *m = t_rich_model(ctx);
    return *m ? t_save_pb(*m) : NULL;
}


/* Unknown fields are kept in a list that grows by doubling: 20,000 of them
 * on one node cost memory in proportion (found by fuzz/fuzz_lower.c: a
 * 31 KB model of 11,000 unknown fields took 1.9 GB when every field copied
 * the list). */
TEST(many_unknown_fields_load_in_linear_memory)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    Onnx__ModelProto *mp = rich_proto(ctx, &m);
    REQUIRE(mp);
    size_t len;
    enum { N = 20000 };
    static uint8_t one[1] = {1};
    Onnx__NodeProto *np = t_pb_find_node(mp->graph, "sum");
    ProtobufCMessageUnknownField *u = t_pb_alloc(N * sizeof *u);
    for (unsigned i = 0; i < N; i++)
        u[i] = (ProtobufCMessageUnknownField){1000 + i % 100, PROTOBUF_C_WIRE_TYPE_VARINT, 1, one};
    np->base.unknown_fields = u;
    np->base.n_unknown_fields = N;
    uint8_t *crafted = t_pb_pack(mp, &len);
    carve_set_allocator(&t_counting); /* counts the bytes carve allocates while loading */
    t_alloc.bytes = 0;
    carve_model *r = t_load(ctx, crafted, len);
    size_t used = t_alloc.bytes;
    carve_set_allocator(NULL);
    free(crafted);
    REQUIRE(r != NULL);
    char *dump = carve_model_dump(r);
    CHECK_CONTAINS(dump, "raw{20000 fields ");
    carve_free(dump);
    /* 32 bytes a field, doubled, plus the model: far below the 6.4 GB a copy
     * of the list per field would take */
    CHECK(used < (size_t)64 << 20);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(unknown_fields_kept_verbatim)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    Onnx__ModelProto *mp = rich_proto(ctx, &m);
    REQUIRE(mp);
    size_t len;
    /* IR 10's NodeProto.metadata_props (field 9), a StringStringEntryProto
     * {key: "origin", value: "layer1"}: unknown to Debian's onnx.proto. */
    const uint8_t entry[] = {0x0a, 6, 'o', 'r', 'i', 'g', 'i', 'n', 0x12, 6, 'l', 'a', 'y', 'e', 'r', '1'};
    ProtobufCMessageUnknownField meta = unknown_len(9, entry, sizeof entry);
    Onnx__NodeProto *np = t_pb_find_node(mp->graph, "sum");
    add_unknown(&np->base, meta);
    /* And in other messages: a varint on the model, bytes on a tensor, a
     * 64-bit field on a value info, another on a subgraph's node. */
    static uint8_t v150[2] = {0x96, 0x01}, fixed[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ProtobufCMessageUnknownField mvar = {99, PROTOBUF_C_WIRE_TYPE_VARINT, 2, v150};
    add_unknown(&mp->base, mvar);
    ProtobufCMessageUnknownField tbytes = unknown_len(77, (const uint8_t *)"opaque", 6);
    add_unknown(&t_pb_find_init(mp->graph, "w")->base, tbytes);
    ProtobufCMessageUnknownField vfix = {55, PROTOBUF_C_WIRE_TYPE_64BIT, 8, fixed};
    add_unknown(&mp->graph->input[0]->base, vfix);
    Onnx__GraphProto *sub = NULL;
    for (size_t i = 0; i < mp->graph->n_node; i++)
        if (!strcmp(mp->graph->node[i]->op_type, "If"))
            sub = mp->graph->node[i]->attribute[0]->g;
    REQUIRE(sub && sub->n_node == 1);
    add_unknown(&sub->node[0]->base, meta);
    uint8_t *crafted = t_pb_pack(mp, &len);

    carve_model *r = t_load(ctx, crafted, len);
    free(crafted);
    REQUIRE(r != NULL);
    char *dump = carve_model_dump(r);
    CHECK_CONTAINS(dump, "node Add_sum = Add(mm, c) -> (sum: ?) raw{1 fields ");
    carve_free(dump);
    carve_model *r2 = ROUND_TRIP(ctx, r);
    CHECK(r2 != NULL);
    Onnx__ModelProto *back = t_save_pb(r);
    REQUIRE(back);
    CHECK(has_unknown(&t_pb_find_node(back->graph, "sum")->base, &meta));
    CHECK(has_unknown(&back->base, &mvar));
    CHECK(has_unknown(&t_pb_find_init(back->graph, "w")->base, &tbytes));
    CHECK(has_unknown(&back->graph->input[0]->base, &vfix));
    for (size_t i = 0; i < back->graph->n_node; i++)
        if (!strcmp(back->graph->node[i]->op_type, "If"))
            CHECK(has_unknown(&back->graph->node[i]->attribute[0]->g->node[0]->base, &meta));
    /* A model without them does not gain any. */
    CHECK_INT(t_pb_find_node(back->graph, "mm")->base.n_unknown_fields, 0);
    carve_model_free(r2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Functions, training info, sparse initializers and non-tensor types are
 * kept opaque and written back as they came. */
TEST(opaque_messages_kept)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    size_t len;
    Onnx__ModelProto *mp = t_save_pb(m);
    REQUIRE(mp);
    Onnx__FunctionProto *fn = t_pb_alloc(sizeof *fn);
    *fn = (Onnx__FunctionProto)ONNX__FUNCTION_PROTO__INIT;
    fn->name = "MyRelu", fn->domain = "com.example";
    T_PB_PUSH(fn->input, fn->n_input, "X");
    T_PB_PUSH(fn->output, fn->n_output, "Y");
    T_PB_PUSH(fn->node, fn->n_node, t_pb_node(NULL, "Relu", 1, (const char *[]){"X"}, 1, (const char *[]){"Y"}));
    T_PB_PUSH(mp->functions, mp->n_functions, fn);
    /* A sequence-typed graph input. */
    Onnx__TypeProto__Sequence *seq = t_pb_alloc(sizeof *seq);
    *seq = (Onnx__TypeProto__Sequence)ONNX__TYPE_PROTO__SEQUENCE__INIT;
    seq->elem_type = mp->graph->input[0]->type;
    Onnx__TypeProto *tp = t_pb_alloc(sizeof *tp);
    *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = seq;
    Onnx__ValueInfoProto *vi = t_pb_alloc(sizeof *vi);
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    vi->name = "seq", vi->type = tp;
    T_PB_PUSH(mp->graph->input, mp->graph->n_input, vi);
    uint8_t *crafted = t_pb_pack(mp, &len);
    carve_model *r = t_load(ctx, crafted, len);
    free(crafted);
    REQUIRE(r != NULL);
    carve_value_id sv = carve_graph_find_value(r, 0, "seq");
    CHECK_INT(carve_value_type_kind(r, sv), CARVE_TYPE_OTHER);
    carve_model *r2 = ROUND_TRIP(ctx, r);
    CHECK(r2 != NULL);
    Onnx__ModelProto *back = t_save_pb(r);
    REQUIRE(back);
    REQUIRE_INT(back->n_functions, 1);
    CHECK_STR(back->functions[0]->name, "MyRelu");
    CHECK_INT(back->functions[0]->n_node, 1);
    Onnx__ValueInfoProto *bs = back->graph->input[back->graph->n_input - 1];
    CHECK_STR(bs->name, "seq");
    CHECK(bs->type && bs->type->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE);
    carve_model_free(r2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(save_memory_refuses_bad_arguments)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    size_t n;
    CHECK_ERR(ctx, carve_model_save_memory(m, NULL, &n), CARVE_ERR_ARG, "save: no place for the bytes");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Found by the fuzzer: a graph output listed twice, one copy carrying an
 * unknown field. Export writes the value's fields in both places; the
 * re-import must not collect them twice. */
TEST(value_described_twice_keeps_its_fields_once)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    size_t len;
    Onnx__ModelProto *mp = t_save_pb(m);
    REQUIRE(mp && mp->graph->n_output == 2);
    Onnx__ValueInfoProto *again = t_pb_alloc(sizeof *again);
    *again = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    again->name = mp->graph->output[0]->name;
    add_unknown(&again->base, unknown_len(10, (const uint8_t *)"\x08\x01", 2));
    T_PB_PUSH(mp->graph->output, mp->graph->n_output, again);
    /* The same field on a value_info of a node output, twice over. */
    Onnx__ValueInfoProto *vi = t_pb_alloc(sizeof *vi);
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    vi->name = "sum";
    add_unknown(&vi->base, unknown_len(10, (const uint8_t *)"\x08\x01", 2));
    T_PB_PUSH(mp->graph->value_info, mp->graph->n_value_info, vi);
    T_PB_PUSH(mp->graph->value_info, mp->graph->n_value_info, vi);
    uint8_t *crafted = t_pb_pack(mp, &len);
    carve_model *r = t_load(ctx, crafted, len);
    free(crafted);
    REQUIRE(r != NULL);
    REQUIRE_INT(carve_graph_output_count(r, 0), 3);
    char *dump = carve_model_dump(r);
    CHECK_CONTAINS(dump, "output branch: ? raw{1 fields ");
    CHECK_CONTAINS(dump, "(sum: ? raw{1 fields ");
    carve_free(dump);
    carve_model *r2 = ROUND_TRIP(ctx, r);
    CHECK(r2 != NULL);
    carve_model *r3 = r2 ? ROUND_TRIP(ctx, r2) : NULL;
    CHECK(r3 != NULL);
    carve_model_free(r3);
    carve_model_free(r2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

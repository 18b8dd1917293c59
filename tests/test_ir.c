/* test_ir.c: building graphs with the public API; what the IR records and
 * what the verifier accepts or refuses. */
#include "testlib.h"

#include <stdlib.h>
#include <string.h>

#define NODE(m, g, op, dom, name, ins, outs)                                                      \
    carve_graph_add_node(m, g, op, dom, name, sizeof(ins) / sizeof *(ins), ins,                   \
                         sizeof(outs) / sizeof *(outs), outs)

static carve_node_id producer_of(const carve_model *m, const char *value)
{
    carve_value_id v = carve_graph_find_value(m, 0, value);
    return v == CARVE_NONE ? CARVE_NONE : carve_value_producer(m, v);
}

TEST(inputs_record_dtype_and_dims)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_dim d[3] = {{-1, "batch"}, {3, NULL}, {-1, NULL}};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT16, 3, d);
    carve_value_id s = carve_graph_add_input(m, 0, "s", CARVE_INT64, 0, NULL);
    carve_value_id u = carve_graph_add_input(m, 0, "u", CARVE_UINT8, -1, NULL);
    REQUIRE(x != CARVE_NONE && s != CARVE_NONE && u != CARVE_NONE);
    CHECK_INT(carve_graph_input_count(m, 0), 3);
    CHECK_INT(carve_graph_input(m, 0, 1), s);
    CHECK_INT(carve_value_dtype(m, x), CARVE_FLOAT16);
    CHECK_INT(carve_value_rank(m, x), 3);
    CHECK_STR(carve_value_dim(m, x, 0).param, "batch");
    CHECK_INT(carve_value_dim(m, x, 0).value, -1);
    CHECK_INT(carve_value_dim(m, x, 1).value, 3);
    CHECK(carve_value_dim(m, x, 2).param == NULL);
    CHECK_INT(carve_value_dim(m, x, 2).value, -1);
    CHECK_INT(carve_value_dim(m, x, 7).value, -1); /* out of range: unknown */
    CHECK_INT(carve_value_rank(m, s), 0);
    CHECK_INT(carve_value_rank(m, u), -1);
    CHECK_INT(carve_value_type_kind(m, u), CARVE_TYPE_TENSOR);
    CHECK_STR(carve_value_name(m, x), "x");
    CHECK_INT(carve_value_graph(m, x), 0);
    CHECK_INT(carve_value_producer(m, x), CARVE_NONE);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(builder_refuses_bad_arguments)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    CHECK(carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{2, NULL}}) != CARVE_NONE);
    CHECK(carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 0, NULL) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "value 'x' is already defined in graph 'main'");
    CHECK_INT(carve_errcode(ctx), CARVE_ERR_INVALID);
    CHECK(carve_graph_add_input(m, 0, "", CARVE_FLOAT, 0, NULL) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "a value needs a name");
    CHECK(carve_graph_add_input(m, 5, "y", CARVE_FLOAT, 0, NULL) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "no graph 5");
    CHECK(carve_graph_add_input(m, 0, "big", CARVE_FLOAT, CARVE_MAX_RANK + 1, NULL) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "rank 17 is above carve's limit of 16");
    /* 5 int4 elements take 3 bytes, not 2. */
    uint8_t q[3] = {0};
    CHECK(carve_graph_add_initializer(m, 0, "q", CARVE_INT4, 1, (int64_t[]){5}, q, 2) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "2 bytes given for 5 int4 elements (expected 3)");
    CHECK(carve_graph_add_initializer(m, 0, "s", CARVE_STRING, 1, (int64_t[]){1}, q, 1) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "unsupported dtype 8");
    CHECK(carve_graph_add_initializer(m, 0, "n", CARVE_FLOAT, 1, (int64_t[]){-2}, q, 0) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "bad shape");

    carve_value_id x = carve_graph_find_value(m, 0, "x");
    CHECK(NODE(m, 0, "Relu", "", "r", ((carve_value_id[]){x}), ((const char *[]){"y"})) != CARVE_NONE);
    CHECK(NODE(m, 0, "Relu", "", "r", ((carve_value_id[]){x}), ((const char *[]){"y2"})) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "a node named 'r' exists already");
    CHECK(NODE(m, 0, "Relu", "", NULL, ((carve_value_id[]){x}), ((const char *[]){"y"})) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "value 'y' is already defined");
    CHECK(NODE(m, 0, "Split", "", NULL, ((carve_value_id[]){x}), ((const char *[]){"a", "a"})) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "output 'a' given twice");
    CHECK(NODE(m, 0, "Relu", "", NULL, ((carve_value_id[]){999}), ((const char *[]){"z"})) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "input 0 is not a value id");
    CHECK(NODE(m, 0, "", "", NULL, ((carve_value_id[]){x}), ((const char *[]){"z"})) == CARVE_NONE);
    CHECK_CONTAINS(carve_errmsg(ctx), "needs a graph and an op type");
    /* The failed calls left nothing half-made behind. */
    CHECK_INT(carve_graph_node_count(m, 0), 1);
    CHECK_OK(ctx, carve_model_verify(m));
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Every dtype carve stores as raw bytes keeps its bytes, dtype and shape
 * through the builder and through an ONNX round trip. */
TEST(initializers_of_many_dtypes_keep_their_bytes)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    static const struct {
        const char *name;
        carve_dtype t;
        int rank;
        size_t nbytes;
    } want[] = {
        {"w", CARVE_FLOAT, 2, 64},          {"h", CARVE_FLOAT16, 1, 8},     {"bf", CARVE_BFLOAT16, 2, 8},
        {"q4", CARVE_INT4, 1, 3},           {"u4", CARVE_UINT4, 1, 2},      {"f8", CARVE_FLOAT8E4M3FN, 1, 4},
        {"f8b", CARVE_FLOAT8E5M2, 1, 2},    {"f4", CARVE_FLOAT4E2M1, 1, 2}, {"i64", CARVE_INT64, 1, 16},
        {"b", CARVE_BOOL, 1, 3},            {"d", CARVE_DOUBLE, 0, 8},      {"empty", CARVE_FLOAT, 2, 0},
    };
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        carve_value_id a = carve_graph_find_value(m, 0, want[i].name);
        carve_value_id b = carve_graph_find_value(r, 0, want[i].name);
        REQUIRE(a != CARVE_NONE && b != CARVE_NONE);
        size_t na = 99, nb = 99;
        const void *da = carve_value_data(m, a, &na), *db = carve_value_data(r, b, &nb);
        CHECK_INT(na, want[i].nbytes);
        CHECK_INT(nb, want[i].nbytes);
        CHECK(da != NULL && db != NULL && !memcmp(da, db, na));
        CHECK_INT(carve_value_dtype(r, b), want[i].t);
        CHECK_INT(carve_value_rank(r, b), want[i].rank);
        CHECK_INT(carve_value_kind_of(r, b), CARVE_VALUE_CONST);
    }
    /* int4: 5 elements, low nibble first: 1, 2, -1, -8, 7 */
    const uint8_t *q = carve_value_data(r, carve_graph_find_value(r, 0, "q4"), NULL);
    CHECK(q && q[0] == 0x21 && q[1] == 0x8f && q[2] == 0x07);
    CHECK_INT(carve_value_dim(r, carve_graph_find_value(r, 0, "q4"), 0).value, 5);
    CHECK_INT(carve_graph_initializer_count(r, 0), 12);
    CHECK_STR(carve_dtype_name(CARVE_BFLOAT16), "bfloat16");
    CHECK_STR(carve_dtype_name(CARVE_FLOAT8E4M3FN), "float8e4m3fn");
    CHECK_STR(carve_dtype_name((carve_dtype)99), "unknown");
    CHECK_INT(carve_dtype_bits(CARVE_INT4), 4);
    CHECK_INT(carve_dtype_bits(CARVE_BFLOAT16), 16);
    CHECK_INT(carve_dtype_bits(CARVE_STRING), 0);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Attribute kinds the builder sets, read back, kept through a round trip. */
TEST(attributes_of_every_builder_kind)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    carve_node_id n = carve_model_find_node(r, "attrs");
    REQUIRE(n != CARVE_NONE);
    CHECK_STR(carve_node_domain(r, n), "com.example");
    static const struct {
        const char *name;
        carve_attr_kind kind;
    } want[] = {{"f", CARVE_ATTR_FLOAT},   {"i", CARVE_ATTR_INT},       {"s", CARVE_ATTR_STRING},
                {"t", CARVE_ATTR_TENSOR},  {"fs", CARVE_ATTR_FLOATS},   {"is", CARVE_ATTR_INTS},
                {"ss", CARVE_ATTR_STRINGS}, {"none", CARVE_ATTR_INTS}};
    REQUIRE_INT(carve_node_attr_count(r, n), sizeof want / sizeof *want);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        CHECK_STR(carve_node_attr_name(r, n, i), want[i].name);
        CHECK_INT(carve_node_attr_kind(r, n, i), want[i].kind);
    }
    float f = 0;
    int64_t v = 0;
    size_t len = 0;
    CHECK(carve_node_attr_float(r, n, "f", &f) && f == 0.5f);
    CHECK(carve_node_attr_int(r, n, "i", &v) && v == -7);
    CHECK_STR(carve_node_attr_string(r, n, "s", &len), "hello \"world\"");
    CHECK_INT(len, 13);
    CHECK(!carve_node_attr_int(r, n, "f", &v));     /* wrong kind */
    CHECK(!carve_node_attr_float(r, n, "nope", &f)); /* absent */
    CHECK(carve_node_attr_string(r, n, "i", NULL) == NULL);
    /* Setting again replaces, in place. */
    CHECK_OK(ctx, carve_node_set_attr_int(r, n, "i", 9));
    CHECK(carve_node_attr_int(r, n, "i", &v) && v == 9);
    CHECK_INT(carve_node_attr_count(r, n), sizeof want / sizeof *want);
    CHECK_STR(carve_node_attr_name(r, n, 1), "i");

    n = carve_model_find_node(r, "Constant_c");
    REQUIRE(n != CARVE_NONE);
    CHECK_INT(carve_node_attr_kind(r, n, 0), CARVE_ATTR_TENSOR);
    n = carve_model_find_node(r, "if");
    REQUIRE(n != CARVE_NONE);
    CHECK_INT(carve_node_attr_kind(r, n, 0), CARVE_ATTR_GRAPH);
    CHECK_INT(carve_node_attr_kind(r, n, 1), CARVE_ATTR_GRAPH);
    n = carve_model_find_node(r, "multi");
    REQUIRE(n != CARVE_NONE);
    CHECK_INT(carve_node_attr_kind(r, n, 0), CARVE_ATTR_GRAPHS);
    char *dump = carve_model_dump(r);
    CHECK_CONTAINS(dump, "@bodies = graphs(2)");
    CHECK_CONTAINS(dump, "@is = ints[-9223372036854775808,42]");
    CHECK_CONTAINS(dump, "@ss = strings[\"a\",\"\"]");
    CHECK_CONTAINS(dump, "@s = \"hello \\\"world\\\"\"");
    carve_free(dump);
    CHECK_ERR(ctx, carve_node_set_attr_int(r, 999, "x", 1), CARVE_ERR_ARG, "bad node or name");
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* TENSORS, SPARSE_TENSOR(S) and TYPE_PROTO(S) have no setter: they come from
 * files. Crafted with protobuf-c, they import and export unchanged. */
TEST(attributes_of_imported_only_kinds)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{2, NULL}});
    carve_node_id n = NODE(m, 0, "Odd", "com.example", "odd", ((carve_value_id[]){x}), ((const char *[]){"y"}));
    REQUIRE(n != CARVE_NONE);
    REQUIRE_OK(ctx, carve_graph_add_output(m, 0, carve_node_output(m, n, 0)));
    size_t len;
    Onnx__ModelProto *mp = t_save_pb(m);
    REQUIRE(mp);
    Onnx__NodeProto *np = mp->graph->node[0];

    static int64_t dims[1] = {2};
    static float vals[2] = {1.5f, -2.5f};
    Onnx__TensorProto *t = t_pb_alloc(sizeof *t);
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->n_dims = 1, t->dims = dims, t->has_data_type = 1, t->data_type = CARVE_FLOAT;
    t->n_float_data = 2, t->float_data = vals;
    Onnx__AttributeProto *a = t_pb_attr("ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    T_PB_PUSH(a->tensors, a->n_tensors, t);
    T_PB_PUSH(a->tensors, a->n_tensors, t);
    T_PB_PUSH(np->attribute, np->n_attribute, a);

    Onnx__SparseTensorProto *sp = t_pb_alloc(sizeof *sp);
    *sp = (Onnx__SparseTensorProto)ONNX__SPARSE_TENSOR_PROTO__INIT;
    sp->values = t, sp->n_dims = 1, sp->dims = dims;
    a = t_pb_attr("sp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    a->sparse_tensor = sp;
    T_PB_PUSH(np->attribute, np->n_attribute, a);
    a = t_pb_attr("sps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS);
    T_PB_PUSH(a->sparse_tensors, a->n_sparse_tensors, sp);
    T_PB_PUSH(np->attribute, np->n_attribute, a);

    Onnx__TypeProto *tp = mp->graph->input[0]->type; /* float[2] */
    a = t_pb_attr("tp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
    a->tp = tp;
    T_PB_PUSH(np->attribute, np->n_attribute, a);
    a = t_pb_attr("tps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS);
    T_PB_PUSH(a->type_protos, a->n_type_protos, tp);
    T_PB_PUSH(a->type_protos, a->n_type_protos, tp);
    T_PB_PUSH(np->attribute, np->n_attribute, a);

    uint8_t *crafted = t_pb_pack(mp, &len);
    carve_model *r = t_load(ctx, crafted, len);
    free(crafted);
    REQUIRE(r != NULL);
    n = carve_model_find_node(r, "odd");
    REQUIRE_INT(carve_node_attr_count(r, n), 5);
    CHECK_INT(carve_node_attr_kind(r, n, 0), CARVE_ATTR_TENSORS);
    CHECK_INT(carve_node_attr_kind(r, n, 1), CARVE_ATTR_SPARSE_TENSOR);
    CHECK_INT(carve_node_attr_kind(r, n, 2), CARVE_ATTR_SPARSE_TENSORS);
    CHECK_INT(carve_node_attr_kind(r, n, 3), CARVE_ATTR_TYPE_PROTO);
    CHECK_INT(carve_node_attr_kind(r, n, 4), CARVE_ATTR_TYPE_PROTOS);
    char *dump = carve_model_dump(r);
    CHECK_CONTAINS(dump, "@ts = tensors[float32[2] data=");
    carve_free(dump);
    carve_model *r2 = ROUND_TRIP(ctx, r);
    CHECK(r2 != NULL);
    /* Exported again, the attributes are the same messages. */
    Onnx__ModelProto *back = t_save_pb(r2);
    REQUIRE(back);
    Onnx__NodeProto *bn = back->graph->node[0];
    REQUIRE_INT(bn->n_attribute, 5);
    CHECK_INT(bn->attribute[0]->n_tensors, 2);
    CHECK(bn->attribute[0]->tensors[0]->n_float_data == 2 || bn->attribute[0]->tensors[0]->has_raw_data);
    CHECK(bn->attribute[1]->sparse_tensor && bn->attribute[1]->sparse_tensor->n_dims == 1);
    CHECK_INT(bn->attribute[2]->n_sparse_tensors, 1);
    CHECK(bn->attribute[3]->tp && bn->attribute[3]->tp->tensor_type &&
          bn->attribute[3]->tp->tensor_type->elem_type == CARVE_FLOAT);
    CHECK_INT(bn->attribute[4]->n_type_protos, 2);
    carve_model_free(r2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(subgraphs_read_outer_values)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    /* main, then, else, body0, body1 */
    REQUIRE_INT(carve_model_graph_count(r), 5);
    carve_node_id ifn = carve_model_find_node(r, "if");
    REQUIRE(ifn != CARVE_NONE);
    int seen = 0;
    for (carve_graph_id g = 1; g < carve_model_graph_count(r); g++) {
        CHECK_INT(carve_graph_parent(r, g), 0);
        CHECK_INT(carve_node_graph(r, carve_graph_owner(r, g)), 0);
        const char *name = carve_graph_name(r, g);
        if (strcmp(name, "else"))
            continue;
        seen++;
        CHECK_INT(carve_graph_owner(r, g), ifn);
        REQUIRE_INT(carve_graph_node_count(r, g), 1);
        carve_node_id mul = carve_graph_node(r, g, 0);
        CHECK_INT(carve_node_graph(r, mul), g);
        /* Both inputs are defined in the main graph. */
        carve_value_id a = carve_node_input(r, mul, 0), x = carve_node_input(r, mul, 1);
        CHECK_STR(carve_value_name(r, a), "attrs.out");
        CHECK_INT(carve_value_graph(r, a), 0);
        CHECK_INT(carve_value_kind_of(r, a), CARVE_VALUE_NODE);
        CHECK_STR(carve_value_name(r, x), "x");
        CHECK_INT(carve_value_kind_of(r, x), CARVE_VALUE_INPUT);
        /* A subgraph looks names up through its ancestors. */
        CHECK_INT(carve_graph_find_value(r, g, "x"), x);
        CHECK(carve_graph_find_value(r, 0, "out") == CARVE_NONE);
        CHECK(carve_graph_find_value(r, g, "out") != CARVE_NONE);
    }
    CHECK_INT(seen, 1);
    /* Each GRAPHS body has an input of its own, shadowing nothing. */
    carve_node_id multi = carve_model_find_node(r, "multi");
    REQUIRE(multi != CARVE_NONE);
    for (carve_graph_id g = 1; g < carve_model_graph_count(r); g++) {
        if (carve_graph_owner(r, g) != multi)
            continue;
        CHECK_INT(carve_graph_input_count(r, g), 1);
        carve_node_id b = carve_graph_node(r, g, 0);
        CHECK_INT(carve_value_graph(r, carve_node_input(r, b, 0)), g);
        CHECK_STR(carve_value_name(r, carve_node_input(r, b, 1)), "sum");
        CHECK_INT(carve_value_graph(r, carve_node_input(r, b, 1)), 0);
    }
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* A node whose subgraph reads an outer value depends on that value's
 * producer, even when the file lists the node first. */
TEST(subgraph_capture_orders_nodes)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{2, NULL}});
    carve_value_id c = carve_graph_add_input(m, 0, "c", CARVE_BOOL, 0, NULL);
    carve_node_id p = NODE(m, 0, "Neg", "", "producer", ((carve_value_id[]){x}), ((const char *[]){"neg"}));
    REQUIRE(p != CARVE_NONE);
    carve_graph_id t = carve_graph_new_subgraph(m, 0, "t"), e = carve_graph_new_subgraph(m, 0, "e");
    carve_node_id in_t =
        NODE(m, t, "Identity", "", NULL, ((carve_value_id[]){carve_node_output(m, p, 0)}), ((const char *[]){"o"}));
    carve_node_id in_e = NODE(m, e, "Identity", "", NULL, ((carve_value_id[]){x}), ((const char *[]){"o"}));
    REQUIRE(in_t != CARVE_NONE && in_e != CARVE_NONE);
    carve_graph_add_output(m, t, carve_node_output(m, in_t, 0));
    carve_graph_add_output(m, e, carve_node_output(m, in_e, 0));
    carve_node_id ifn = NODE(m, 0, "If", "", "if", ((carve_value_id[]){c}), ((const char *[]){"y"}));
    REQUIRE(ifn != CARVE_NONE);
    REQUIRE_OK(ctx, carve_node_set_attr_graph(m, ifn, "then_branch", t));
    REQUIRE_OK(ctx, carve_node_set_attr_graph(m, ifn, "else_branch", e));
    carve_graph_add_output(m, 0, carve_node_output(m, ifn, 0));
    REQUIRE_OK(ctx, carve_model_verify(m));

    /* Put If first in the file. */
    size_t len;
    Onnx__ModelProto *mp = t_save_pb(m);
    REQUIRE(mp && mp->graph->n_node == 2);
    Onnx__NodeProto *tmp = mp->graph->node[0];
    mp->graph->node[0] = mp->graph->node[1];
    mp->graph->node[1] = tmp;
    CHECK_STR(mp->graph->node[0]->op_type, "If");
    uint8_t *swapped = t_pb_pack(mp, &len);
    carve_model *r = t_load(ctx, swapped, len);
    free(swapped);
    REQUIRE(r != NULL);
    CHECK_STR(carve_node_name(r, carve_graph_node(r, 0, 0)), "producer");
    CHECK_STR(carve_node_name(r, carve_graph_node(r, 0, 1)), "if");
    CHECK_SAME_DUMP(m, r);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(value_kinds)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    CHECK_INT(carve_value_kind_of(m, carve_graph_find_value(m, 0, "x")), CARVE_VALUE_INPUT);
    CHECK_INT(carve_value_kind_of(m, carve_graph_find_value(m, 0, "w")), CARVE_VALUE_CONST);
    CHECK_INT(carve_value_kind_of(m, carve_graph_find_value(m, 0, "c")), CARVE_VALUE_CONST);
    CHECK_INT(carve_value_kind_of(m, carve_graph_find_value(m, 0, "mm")), CARVE_VALUE_NODE);
    CHECK_INT(carve_value_kind_of(m, carve_graph_find_value(m, 0, "sum")), CARVE_VALUE_NODE);
    CHECK_INT(carve_value_kind_of(m, carve_graph_find_value(m, 0, "branch")), CARVE_VALUE_NODE);
    /* A Constant's output has a producer; an initializer has none. */
    CHECK(carve_value_producer(m, carve_graph_find_value(m, 0, "c")) != CARVE_NONE);
    CHECK_INT(carve_value_producer(m, carve_graph_find_value(m, 0, "w")), CARVE_NONE);
    /* Only the default domain's Constant is a constant. */
    carve_node_id n = carve_graph_add_node(m, 0, "Constant", "com.example", NULL, 0, NULL, 1, (const char *[]){"k"});
    REQUIRE(n != CARVE_NONE);
    CHECK_INT(carve_value_kind_of(m, carve_node_output(m, n, 0)), CARVE_VALUE_NODE);

    /* An input that also has an initializer (IR < 4: a default value) is
     * known only at run time: INPUT, not CONST. */
    size_t len;
    Onnx__ModelProto *mp = t_save_pb(m);
    REQUIRE(mp);
    Onnx__ValueInfoProto *vi = t_pb_alloc(sizeof *vi);
    *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    vi->name = "w";
    T_PB_PUSH(mp->graph->input, mp->graph->n_input, vi);
    mp->ir_version = 3;
    uint8_t *crafted = t_pb_pack(mp, &len);
    carve_model *r = t_load(ctx, crafted, len);
    free(crafted);
    REQUIRE(r != NULL);
    carve_value_id w = carve_graph_find_value(r, 0, "w");
    CHECK_INT(carve_value_kind_of(r, w), CARVE_VALUE_INPUT);
    CHECK(carve_value_data(r, w, NULL) != NULL);     /* it keeps its default */
    CHECK_INT(carve_value_dtype(r, w), CARVE_FLOAT); /* and its type */
    CHECK_INT(carve_value_rank(r, w), 2);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* QuantizeLinear / DequantizeLinear (opset 21) with per-axis and blocked
 * quantization: int4 zero points, axis and block_size survive. */
TEST(quantize_dequantize_axis_and_block_size)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    REQUIRE_OK(ctx, carve_model_set_opset(m, "", 21));
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, (carve_dim[]){{2, NULL}, {4, NULL}});
    float scale[4] = {0.5f, 0.25f, 0.5f, 0.25f}; /* [2, 2]: blocks of 2 along axis 1 */
    uint8_t zp[2] = {0x10, 0xf2};                /* int4 [2, 2] */
    carve_value_id s = carve_graph_add_initializer(m, 0, "scale", CARVE_FLOAT, 2, (int64_t[]){2, 2}, scale, 16);
    carve_value_id z = carve_graph_add_initializer(m, 0, "zp", CARVE_INT4, 2, (int64_t[]){2, 2}, zp, 2);
    float pc[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    carve_value_id ps = carve_graph_add_initializer(m, 0, "pc_scale", CARVE_FLOAT, 1, (int64_t[]){4}, pc, 16);
    REQUIRE(x != CARVE_NONE && s != CARVE_NONE && z != CARVE_NONE && ps != CARVE_NONE);
    carve_node_id q = NODE(m, 0, "QuantizeLinear", "", "q", ((carve_value_id[]){x, s, z}), ((const char *[]){"xq"}));
    REQUIRE(q != CARVE_NONE);
    REQUIRE_OK(ctx, carve_node_set_attr_int(m, q, "axis", 1));
    REQUIRE_OK(ctx, carve_node_set_attr_int(m, q, "block_size", 2));
    REQUIRE_OK(ctx, carve_node_set_attr_int(m, q, "output_dtype", CARVE_INT4));
    carve_dim xd[2] = {{2, NULL}, {4, NULL}};
    REQUIRE_OK(ctx, carve_value_set_type(m, carve_node_output(m, q, 0), CARVE_INT4, 2, xd));
    carve_node_id dq = NODE(m, 0, "DequantizeLinear", "", "dq", ((carve_value_id[]){carve_node_output(m, q, 0), s, z}),
                            ((const char *[]){"xdq"}));
    REQUIRE(dq != CARVE_NONE);
    REQUIRE_OK(ctx, carve_node_set_attr_int(m, dq, "axis", -1));
    REQUIRE_OK(ctx, carve_node_set_attr_int(m, dq, "block_size", 2));
    /* Per-channel, no zero point (an omitted optional input). */
    carve_node_id q2 = NODE(m, 0, "QuantizeLinear", "", NULL, ((carve_value_id[]){x, ps, CARVE_NONE}),
                            ((const char *[]){"xq8"}));
    REQUIRE(q2 != CARVE_NONE);
    REQUIRE_OK(ctx, carve_node_set_attr_int(m, q2, "axis", 1));
    carve_graph_add_output(m, 0, carve_node_output(m, dq, 0));
    carve_graph_add_output(m, 0, carve_node_output(m, q2, 0));
    REQUIRE_OK(ctx, carve_model_verify(m));

    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    int64_t v = 0;
    q = carve_model_find_node(r, "q");
    dq = carve_model_find_node(r, "dq");
    q2 = carve_model_find_node(r, "QuantizeLinear_xq8");
    REQUIRE(q != CARVE_NONE && dq != CARVE_NONE && q2 != CARVE_NONE);
    CHECK(carve_node_attr_int(r, q, "axis", &v) && v == 1);
    CHECK(carve_node_attr_int(r, q, "block_size", &v) && v == 2);
    CHECK(carve_node_attr_int(r, q, "output_dtype", &v) && v == CARVE_INT4);
    CHECK(carve_node_attr_int(r, dq, "axis", &v) && v == -1);
    CHECK(carve_node_attr_int(r, dq, "block_size", &v) && v == 2);
    CHECK(carve_node_attr_int(r, q2, "axis", &v) && v == 1);
    CHECK(!carve_node_attr_int(r, q2, "block_size", &v));
    CHECK_INT(carve_node_input_count(r, q2), 3);
    CHECK_INT(carve_node_input(r, q2, 2), CARVE_NONE);
    carve_value_id xq = carve_node_output(r, q, 0);
    CHECK_INT(carve_value_dtype(r, xq), CARVE_INT4);
    CHECK_INT(carve_node_input(r, dq, 0), xq);
    carve_value_id zr = carve_node_input(r, dq, 2);
    CHECK_INT(carve_value_dtype(r, zr), CARVE_INT4);
    CHECK_INT(carve_value_kind_of(r, zr), CARVE_VALUE_CONST);
    size_t nb = 0;
    const uint8_t *zd = carve_value_data(r, zr, &nb);
    CHECK(nb == 2 && zd && zd[0] == 0x10 && zd[1] == 0xf2);
    CHECK_INT(carve_model_opset(r, ""), 21);
    CHECK_INT(carve_model_opset(r, "ai.onnx"), 21);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(model_fields_survive_round_trip)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    carve_model_set_ir_version(m, 10);
    REQUIRE_OK(ctx, carve_model_set_opset(m, "ai.onnx", 22)); /* the default domain, renamed */
    REQUIRE_OK(ctx, carve_model_set_metadata(m, "purpose", "replaced"));
    REQUIRE_OK(ctx, carve_model_set_metadata(m, "author", "carve"));
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    CHECK_INT(carve_model_ir_version(r), 10);
    CHECK_INT(carve_model_opset_count(r), 2);
    CHECK_INT(carve_model_opset(r, ""), 22);
    CHECK_INT(carve_model_opset(r, "com.example"), 1);
    CHECK_INT(carve_model_opset(r, "com.nowhere"), 0);
    REQUIRE_INT(carve_model_metadata_count(r), 2);
    const char *k, *v;
    carve_model_metadata_at(r, 0, &k, &v);
    CHECK_STR(k, "purpose");
    CHECK_STR(v, "replaced");
    carve_model_metadata_at(r, 1, &k, &v);
    CHECK_STR(k, "author");
    char *dump = carve_model_dump(r);
    CHECK_CONTAINS(dump, "model ir_version=10 producer=\"carve tests\" producer_version=\"1\"");
    CHECK_CONTAINS(dump, "doc=\"the rich test model\"");
    CHECK_CONTAINS(dump, "input x: float32[N,4]\n");
    CHECK_CONTAINS(dump, "output multi.out: float32[N,?]\n");
    carve_free(dump);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(verify_refuses_unattached_subgraph)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    REQUIRE(carve_graph_new_subgraph(m, 0, "orphan") != CARVE_NONE);
    CHECK_ERR(ctx, carve_model_verify(m), CARVE_ERR_INVALID, "graph 'orphan' is not attached to any node");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(verify_refuses_value_of_a_sibling_graph)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_value_id c = carve_graph_add_input(m, 0, "c", CARVE_BOOL, 0, NULL);
    carve_graph_id t = carve_graph_new_subgraph(m, 0, "t"), e = carve_graph_new_subgraph(m, 0, "e");
    carve_value_id tin = carve_graph_add_input(m, t, "private", CARVE_FLOAT, 0, NULL);
    REQUIRE(tin != CARVE_NONE);
    carve_node_id a = NODE(m, t, "Identity", "", "a", ((carve_value_id[]){tin}), ((const char *[]){"o"}));
    carve_node_id b = NODE(m, e, "Identity", "", "b", ((carve_value_id[]){tin}), ((const char *[]){"o"}));
    REQUIRE(a != CARVE_NONE && b != CARVE_NONE);
    carve_graph_add_output(m, t, carve_node_output(m, a, 0));
    carve_graph_add_output(m, e, carve_node_output(m, b, 0));
    carve_node_id ifn = NODE(m, 0, "If", "", "if", ((carve_value_id[]){c}), ((const char *[]){"y"}));
    REQUIRE_OK(ctx, carve_node_set_attr_graph(m, ifn, "then_branch", t));
    REQUIRE_OK(ctx, carve_node_set_attr_graph(m, ifn, "else_branch", e));
    CHECK_ERR(ctx, carve_model_verify(m), CARVE_ERR_INVALID,
              "node 'b' (Identity): input 0 'private' is defined in graph 't', out of this node's scope");
    /* A graph can belong to one node only. */
    carve_node_id other = NODE(m, 0, "If", "", "other", ((carve_value_id[]){c}), ((const char *[]){"z"}));
    CHECK_ERR(ctx, carve_node_set_attr_graph(m, other, "then_branch", t), CARVE_ERR_ARG,
              "graph 't' belongs to another node");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(verify_refuses_undefined_graph_output)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_graph_id t = carve_graph_new_subgraph(m, 0, "t");
    carve_value_id inner = carve_graph_add_input(m, t, "inner", CARVE_FLOAT, 0, NULL);
    carve_value_id c = carve_graph_add_input(m, 0, "c", CARVE_BOOL, 0, NULL);
    REQUIRE(inner != CARVE_NONE && c != CARVE_NONE);
    carve_node_id n = NODE(m, 0, "Loopish", "com.example", "l", ((carve_value_id[]){c}), ((const char *[]){"y"}));
    REQUIRE_OK(ctx, carve_node_set_attr_graph(m, n, "body", t));
    /* The main graph cannot output a value private to a subgraph. */
    REQUIRE_OK(ctx, carve_graph_add_output(m, 0, inner));
    CHECK_ERR(ctx, carve_model_verify(m), CARVE_ERR_INVALID, "graph 'main': output 0 'inner' is not defined");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(nodes_listed_in_topological_order)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m != NULL);
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    /* Every node comes after the producers of its inputs. */
    size_t n = carve_graph_node_count(r, 0);
    for (size_t i = 0; i < n; i++) {
        carve_node_id id = carve_graph_node(r, 0, i);
        for (size_t j = 0; j < carve_node_input_count(r, id); j++) {
            carve_value_id v = carve_node_input(r, id, j);
            carve_node_id p = v == CARVE_NONE ? CARVE_NONE : carve_value_producer(r, v);
            if (p == CARVE_NONE)
                continue;
            size_t k = 0;
            while (k < n && carve_graph_node(r, 0, k) != p)
                k++;
            CHECK(k < i);
        }
    }
    CHECK(producer_of(r, "sum") != CARVE_NONE);
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* carve_tensor_create says why a tensor cannot be made; carve_tensor_new
 * returns NULL for the same inputs. */
TEST(tensor_create_says_why)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_tensor *t = (carve_tensor *)1;
    CHECK_INT(carve_tensor_create(ctx, (carve_dtype)99, 0, NULL, &t), CARVE_ERR_ARG);
    CHECK(t == NULL);
    CHECK_STR(carve_errmsg(ctx), "tensor: 99 is not an element type (carve_dtype)");
    CHECK_INT(carve_tensor_create(ctx, CARVE_FLOAT, CARVE_MAX_RANK + 1, (int64_t[17]){0}, &t), CARVE_ERR_ARG);
    CHECK_STR(carve_errmsg(ctx), "tensor: rank 17 is outside 0..16");
    CHECK_INT(carve_tensor_create(ctx, CARVE_FLOAT, 2, NULL, &t), CARVE_ERR_ARG);
    CHECK_STR(carve_errmsg(ctx), "tensor: rank 2 without dims");
    CHECK_INT(carve_tensor_create(ctx, CARVE_FLOAT, 2, (int64_t[]){3, -1}, &t), CARVE_ERR_ARG);
    CHECK_STR(carve_errmsg(ctx), "tensor: dim 1 is -1; dims are 0 or more");
    CHECK(carve_tensor_new(CARVE_FLOAT, 2, (int64_t[]){3, -1}) == NULL);
    CHECK_INT(carve_tensor_create(ctx, CARVE_DOUBLE, 2, (int64_t[]){1 << 20, 1 << 12}, &t), CARVE_ERR_NOMEM);
    CHECK_STR(carve_errmsg(ctx), "tensor: float64 of rank 2 is over 16 GiB, or out of memory");
    CHECK(t == NULL);
    CHECK_OK(ctx, carve_tensor_create(ctx, CARVE_INT32, 1, (int64_t[]){3}, &t));
    CHECK(t != NULL);
    CHECK_INT(carve_tensor_count(t), 3);
    CHECK(carve_tensor_get(t, 2) == 0.0);
    carve_tensor_free(t);
    carve_ctx_free(ctx);
}

/* carve_model_fix_dim fixes every dim of the name, and its errors speak of
 * the model, not of a command-line flag (the CLI adds "--dim N=V"). */
TEST(fix_dim_names_the_model)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, (carve_dim[]){{-1, "N"}, {3, NULL}});
    CHECK(x != CARVE_NONE);
    CHECK_INT(carve_model_fix_dim(m, "N", -1), CARVE_ERR_ARG);
    CHECK_STR(carve_errmsg(ctx), "symbolic dim 'N': -1 is not a size");
    CHECK_INT(carve_model_fix_dim(m, "B", 2), CARVE_ERR_ARG);
    CHECK_STR(carve_errmsg(ctx), "the model has no symbolic dim named 'B'");
    CHECK_OK(ctx, carve_model_fix_dim(m, "N", 4));
    CHECK_INT(carve_model_fix_dim(m, "N", 4), CARVE_ERR_ARG); /* fixed: no longer symbolic */
    carve_model_free(m);
    carve_ctx_free(ctx);
}

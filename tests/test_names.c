/* test_names.c: carve's node names. Skip lists and reports name nodes, so a
 * name must not depend on where the node sits in the file:
 *   - a node keeps the name it has;
 *   - an unnamed node is named "<op>_<first output>";
 *   - nodes sharing a name get "#2", "#3" in order of their first output's
 *     name, after every node that already holds such a name keeps it. */
#include "testlib.h"

#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- model */

static Onnx__ValueInfoProto *vi(const char *name, int elem_type)
{
    Onnx__TypeProto__Tensor *tt = t_pb_alloc(sizeof *tt);
    *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    Onnx__TypeProto *tp = t_pb_alloc(sizeof *tp);
    *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    Onnx__ValueInfoProto *v = t_pb_alloc(sizeof *v);
    *v = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    v->name = t_pb_strdup(name);
    v->type = tp;
    return v;
}

#define IN(...) (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), (const char *[]){__VA_ARGS__}
#define OUT IN
static void add(Onnx__GraphProto *g, Onnx__NodeProto *n) { T_PB_PUSH(g->node, g->n_node, n); }

static Onnx__GraphProto *graph(const char *name)
{
    Onnx__GraphProto *g = t_pb_alloc(sizeof *g);
    *g = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
    g->name = t_pb_strdup(name);
    return g;
}

static Onnx__AttributeProto *graph_attr(const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = t_pb_attr(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = g;
    return a;
}

/* A model with three nodes named "conv", two named "a" beside an explicit
 * "a#2", unnamed nodes, parallel branches and an If whose two branches both
 * hold an unnamed Identity writing "o":
 *
 *   conv: Relu(x)->c3   conv: Neg(x)->a1   conv: Abs(x)->b2
 *   Add(a1, b2)->s      Add(s, c3)->t      Sigmoid(x)->p
 *   If(c)->u  then { Identity(t)->o, Tanh(o)->o2 }  else { Identity(p)->o }
 *   a#2: Mul(t, p)->m   a: Exp(m)->e1      a: Log(m)->e0
 */
static Onnx__ModelProto *named_model(void)
{
    Onnx__ModelProto *mp = t_pb_alloc(sizeof *mp);
    *mp = (Onnx__ModelProto)ONNX__MODEL_PROTO__INIT;
    mp->has_ir_version = 1;
    mp->ir_version = 8;
    Onnx__OperatorSetIdProto *op = t_pb_alloc(sizeof *op);
    *op = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
    op->domain = "";
    op->has_version = 1;
    op->version = 17;
    T_PB_PUSH(mp->opset_import, mp->n_opset_import, op);
    Onnx__GraphProto *g = mp->graph = graph("main");
    T_PB_PUSH(g->input, g->n_input, vi("x", CARVE_FLOAT));
    T_PB_PUSH(g->input, g->n_input, vi("c", CARVE_BOOL));
    add(g, t_pb_node("conv", "Relu", IN("x"), OUT("c3")));
    add(g, t_pb_node("conv", "Neg", IN("x"), OUT("a1")));
    add(g, t_pb_node("conv", "Abs", IN("x"), OUT("b2")));
    add(g, t_pb_node(NULL, "Add", IN("a1", "b2"), OUT("s")));
    add(g, t_pb_node("", "Add", IN("s", "c3"), OUT("t")));
    add(g, t_pb_node(NULL, "Sigmoid", IN("x"), OUT("p")));
    Onnx__GraphProto *then_g = graph("then"), *else_g = graph("else");
    add(then_g, t_pb_node(NULL, "Identity", IN("t"), OUT("o")));
    add(then_g, t_pb_node(NULL, "Tanh", IN("o"), OUT("o2")));
    T_PB_PUSH(then_g->output, then_g->n_output, vi("o2", CARVE_FLOAT));
    add(else_g, t_pb_node(NULL, "Identity", IN("p"), OUT("o")));
    T_PB_PUSH(else_g->output, else_g->n_output, vi("o", CARVE_FLOAT));
    Onnx__NodeProto *ifn = t_pb_node(NULL, "If", IN("c"), OUT("u"));
    T_PB_PUSH(ifn->attribute, ifn->n_attribute, graph_attr("then_branch", then_g));
    T_PB_PUSH(ifn->attribute, ifn->n_attribute, graph_attr("else_branch", else_g));
    add(g, ifn);
    add(g, t_pb_node("a#2", "Mul", IN("t", "p"), OUT("m")));
    add(g, t_pb_node("a", "Exp", IN("m"), OUT("e1")));
    add(g, t_pb_node("a", "Log", IN("m"), OUT("e0")));
    T_PB_PUSH(g->output, g->n_output, vi("u", CARVE_FLOAT));
    T_PB_PUSH(g->output, g->n_output, vi("e0", CARVE_FLOAT));
    T_PB_PUSH(g->output, g->n_output, vi("e1", CARVE_FLOAT));
    return mp;
}

/* The names every file order must give, by the node's first output (and the
 * graph holding it, for the two "o"). */
static const struct {
    const char *graph, *out, *name;
} expected[] = {
    {"main", "a1", "conv"},     {"main", "b2", "conv#2"},     {"main", "c3", "conv#3"},
    {"main", "s", "Add_s"},     {"main", "t", "Add_t"},       {"main", "p", "Sigmoid_p"},
    {"main", "u", "If_u"},      {"main", "m", "a#2"},         {"main", "e0", "a"},
    {"main", "e1", "a#3"},      {"else", "o", "Identity_o"},  {"then", "o", "Identity_o#2"},
    {"then", "o2", "Tanh_o2"},
};
#define N_EXPECTED (sizeof expected / sizeof *expected)

/* Imports mp with the nodes of its main graph (and of the then branch) in
 * the order perm gives (NULL: the file's); returns the model, NULL on
 * error. */
static carve_model *load_permuted(carve_ctx *ctx, Onnx__ModelProto *mp, const size_t *perm)
{
    Onnx__GraphProto *g = mp->graph;
    Onnx__NodeProto **orig = t_pb_alloc(g->n_node * sizeof *orig);
    memcpy(orig, g->node, g->n_node * sizeof *orig);
    for (size_t i = 0; i < g->n_node; i++)
        g->node[i] = orig[perm ? perm[i] : i];
    size_t len;
    uint8_t *bytes = t_pb_pack(mp, &len);
    memcpy(g->node, orig, g->n_node * sizeof *orig);
    carve_model *m = NULL;
    CHECK_OK(ctx, carve_model_load_memory(ctx, bytes, len, NULL, &m));
    free(bytes);
    return m;
}

static void check_expected_names(const carve_model *m, const char *order)
{
    REQUIRE_INT(carve_graph_node_count(m, 0) + 3, N_EXPECTED);
    for (size_t i = 0; i < N_EXPECTED; i++) {
        carve_node_id n = carve_model_find_node(m, expected[i].name);
        if (!t_check(n != CARVE_NONE, __FILE__, __LINE__, "%s order: no node named '%s'", order, expected[i].name))
            continue;
        carve_value_id o = carve_node_output(m, n, 0);
        t_check(!strcmp(carve_value_name(m, o), expected[i].out) &&
                    !strcmp(carve_graph_name(m, carve_node_graph(m, n)), expected[i].graph),
                __FILE__, __LINE__, "%s order: '%s' names the node writing %s/%s, expected %s/%s", order,
                expected[i].name, carve_graph_name(m, carve_node_graph(m, n)), carve_value_name(m, o),
                expected[i].graph, expected[i].out);
    }
}

/* ---------------------------------------------------------------- tests */

TEST(unnamed_node_gets_op_and_first_output)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = named_model();
    /* A first output that is omitted does not count; no output at all
     * leaves the op type alone. */
    add(mp->graph, t_pb_node(NULL, "Split", IN("x"), OUT("", "q2")));
    add(mp->graph, t_pb_node(NULL, "Print", IN("x"), 0, NULL));
    size_t len;
    uint8_t *bytes = t_pb_pack(mp, &len);
    carve_model *m = t_load(ctx, bytes, len);
    free(bytes);
    REQUIRE(m != NULL);
    carve_node_id n = carve_model_find_node(m, "Add_s");
    REQUIRE(n != CARVE_NONE);
    CHECK_STR(carve_node_op(m, n), "Add");
    CHECK_STR(carve_value_name(m, carve_node_output(m, n, 0)), "s");
    CHECK(carve_model_find_node(m, "Add_t") != CARVE_NONE); /* "" is no name either */
    n = carve_model_find_node(m, "Split_q2");
    CHECK(n != CARVE_NONE && carve_node_output(m, n, 0) == CARVE_NONE);
    n = carve_model_find_node(m, "Print");
    CHECK(n != CARVE_NONE && carve_node_output_count(m, n) == 0);

    /* The builder follows the same rule. */
    carve_model *b = carve_model_new(ctx);
    carve_value_id x = carve_graph_add_input(b, 0, "x", CARVE_FLOAT, 0, NULL);
    n = carve_graph_add_node(b, 0, "Relu", "", NULL, 1, &x, 1, (const char *[]){"y"});
    CHECK_STR(carve_node_name(b, n), "Relu_y");
    n = carve_graph_add_node(b, 0, "Relu", "", "", 1, &x, 1, (const char *[]){"z"});
    CHECK_STR(carve_node_name(b, n), "Relu_z");
    carve_model_free(b);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(duplicate_names_numbered_by_first_output_name)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = load_permuted(ctx, named_model(), NULL);
    REQUIRE(m != NULL);
    /* File order c3, a1, b2; names follow a1 < b2 < c3. */
    CHECK_STR(carve_node_name(m, carve_value_producer(m, carve_graph_find_value(m, 0, "a1"))), "conv");
    CHECK_STR(carve_node_name(m, carve_value_producer(m, carve_graph_find_value(m, 0, "b2"))), "conv#2");
    CHECK_STR(carve_node_name(m, carve_value_producer(m, carve_graph_find_value(m, 0, "c3"))), "conv#3");
    check_expected_names(m, "file");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(explicit_hash_suffix_keeps_its_name)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = load_permuted(ctx, named_model(), NULL);
    REQUIRE(m != NULL);
    /* "a#2" was given in the file: it stays; the second "a" skips to #3. */
    carve_node_id n = carve_model_find_node(m, "a#2");
    REQUIRE(n != CARVE_NONE);
    CHECK_STR(carve_node_op(m, n), "Mul");
    CHECK_STR(carve_node_op(m, carve_model_find_node(m, "a")), "Log");
    CHECK_STR(carve_node_op(m, carve_model_find_node(m, "a#3")), "Exp");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

TEST(names_and_dump_independent_of_file_order)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = named_model();
    size_t n = mp->graph->n_node;
    size_t perm[16] = {0};
    REQUIRE(n == 10);
    carve_model *base = load_permuted(ctx, mp, NULL);
    REQUIRE(base != NULL);
    check_expected_names(base, "file");
    char *base_dump = carve_model_dump(base);

    /* Reversed (every edge backwards), another valid order (the parallel
     * Sigmoid and the three "conv" nodes first, in another order), and
     * seeded shuffles. The then branch is reversed too. */
    const char *names[] = {"reversed", "valid", "shuffled 1", "shuffled 2", "shuffled 3", "shuffled 4"};
    uint32_t seed = 7;
    Onnx__GraphProto *then_g = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(mp->graph->node[i]->op_type, "If"))
            then_g = mp->graph->node[i]->attribute[0]->g;
    REQUIRE(then_g && then_g->n_node == 2);
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        if (k == 0) {
            for (size_t i = 0; i < n; i++)
                perm[i] = n - 1 - i;
        } else if (k == 1) {
            const size_t valid[] = {5, 2, 1, 0, 3, 4, 7, 6, 9, 8};
            memcpy(perm, valid, sizeof valid);
        } else {
            for (size_t i = 0; i < n; i++)
                perm[i] = i;
            for (size_t i = n - 1; i > 0; i--) {
                seed = seed * 1103515245u + 12345u;
                size_t j = (seed >> 8) % (i + 1), t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        }
        Onnx__NodeProto *t0 = then_g->node[0];
        then_g->node[0] = then_g->node[1];
        then_g->node[1] = t0;
        carve_model *m = load_permuted(ctx, mp, perm);
        if (!t_check(m != NULL, __FILE__, __LINE__, "%s order does not load", names[k]))
            continue;
        check_expected_names(m, names[k]);
        char *d = carve_model_dump(m);
        if (!t_check(d && !strcmp(d, base_dump), __FILE__, __LINE__, "%s order gives another dump", names[k]))
            CHECK_SAME_DUMP(base, m); /* shows where */
        carve_free(d);
        carve_model_free(m);
    }
    carve_free(base_dump);
    carve_model_free(base);
    carve_ctx_free(ctx);
}

/* Exported names are written into the file and come back unchanged, even
 * "#k" ones and those carve made up. */
TEST(names_survive_round_trip)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = load_permuted(ctx, named_model(), NULL);
    REQUIRE(m != NULL);
    Onnx__ModelProto *mp = t_save_pb(m);
    REQUIRE(mp);
    for (size_t i = 0; i < mp->graph->n_node; i++)
        CHECK(mp->graph->node[i]->name && *mp->graph->node[i]->name);
    carve_model *r = ROUND_TRIP(ctx, m);
    REQUIRE(r != NULL);
    check_expected_names(r, "re-imported");
    carve_model_free(r);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Nodes the builder adds one by one are named as they come: a clash gets
 * the next free "#k". */
TEST(builder_names_clashing_nodes_in_turn)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_value_id c = carve_graph_add_input(m, 0, "c", CARVE_BOOL, 0, NULL);
    carve_graph_id t = carve_graph_new_subgraph(m, 0, "t"), e = carve_graph_new_subgraph(m, 0, "e");
    carve_node_id a = carve_graph_add_node(m, t, "Identity", "", NULL, 1, &c, 1, (const char *[]){"o"});
    carve_node_id b = carve_graph_add_node(m, e, "Identity", "", NULL, 1, &c, 1, (const char *[]){"o"});
    carve_node_id d = carve_graph_add_node(m, 0, "Identity", "", "Identity_o#3", 1, &c, 1, (const char *[]){"z"});
    carve_node_id f = carve_graph_add_node(m, 0, "Identity", "", NULL, 1, &c, 1, (const char *[]){"o"});
    REQUIRE(a != CARVE_NONE && b != CARVE_NONE && d != CARVE_NONE && f != CARVE_NONE);
    CHECK_STR(carve_node_name(m, a), "Identity_o");
    CHECK_STR(carve_node_name(m, b), "Identity_o#2");
    CHECK_STR(carve_node_name(m, d), "Identity_o#3");
    CHECK_STR(carve_node_name(m, f), "Identity_o#4");
    CHECK_INT(carve_model_find_node(m, "Identity_o#2"), b);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

/* Numbers past one digit ("#10", "#12"): twelve nodes of a file named
 * "r"; and value names made unique the same way (cv_value_unique_name: c,
 * then c#2, c#3...). */
TEST(numbered_names_past_nine)
{
    carve_ctx *ctx = carve_ctx_new();
    Onnx__ModelProto *mp = named_model();
    char out[12][8], want[32];
    for (int i = 0; i < 12; i++) {
        snprintf(out[i], sizeof out[i], "r%02d", i);
        add(mp->graph, t_pb_node("r", "Relu", IN("x"), OUT(out[i])));
    }
    size_t len;
    uint8_t *bytes = t_pb_pack(mp, &len);
    carve_model *m = t_load(ctx, bytes, len);
    free(bytes);
    REQUIRE(m != NULL);
    for (int i = 0; i < 12; i++) {
        if (i)
            snprintf(want, sizeof want, "r#%d", i + 1);
        else
            snprintf(want, sizeof want, "r");
        carve_node_id n = carve_value_producer(m, carve_graph_find_value(m, 0, out[i]));
        CHECK_STR(carve_node_name(m, n), want);
        CHECK_INT(carve_model_find_node(m, want), n);
    }
    const char *v2 = cv_value_unique_name(m, 0, "r00");
    REQUIRE(v2 != NULL);
    CHECK_STR(v2, "r00#2");
    REQUIRE(cv_value_new(m, 0, v2) != CARVE_NONE);
    CHECK_STR(cv_value_unique_name(m, 0, "r00"), "r00#3");
    CHECK_STR(cv_value_unique_name(m, 0, "free"), "free");
    carve_model_free(m);
    carve_ctx_free(ctx);
}

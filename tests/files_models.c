/* files_models.c: small models for the file tests (tests/test_files.c and,
 * through `make_files_models`, tests/test_files.sh), built with carve's own
 * API.
 *
 *   make_files_models nested OUT N    If nested N deep (x -> Relu at the bottom)
 *   make_files_models collide OUT     outputs named "a/b" and "a_b"
 *   make_files_models extdata OUT     a 4 KiB initializer in external data w.bin
 */
#include "carve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value of graph g computed from x: Relu(x) at depth 0, else If(c) whose
 * then-branch is one level deeper and whose else-branch is Neg(x). */
static carve_value_id nest(carve_model *m, carve_graph_id g, carve_value_id c, carve_value_id x, int depth)
{
    char name[64];
    if (depth == 0) {
        snprintf(name, sizeof name, "relu_out");
        const char *o[] = {name};
        carve_node_id n = carve_graph_add_node(m, g, "Relu", "", NULL, 1, &x, 1, o);
        return n == CARVE_NONE ? CARVE_NONE : carve_node_output(m, n, 0);
    }
    carve_graph_id t = carve_graph_new_subgraph(m, g, "then");
    carve_graph_id e = carve_graph_new_subgraph(m, g, "else");
    carve_value_id tv = nest(m, t, c, x, depth - 1);
    snprintf(name, sizeof name, "neg_%d", depth);
    const char *on[] = {name};
    carve_node_id ng = carve_graph_add_node(m, e, "Neg", "", NULL, 1, &x, 1, on);
    if (tv == CARVE_NONE || ng == CARVE_NONE || carve_graph_add_output(m, t, tv) ||
        carve_graph_add_output(m, e, carve_node_output(m, ng, 0)))
        return CARVE_NONE;
    snprintf(name, sizeof name, "if_%d", depth);
    const char *oi[] = {name};
    carve_node_id n = carve_graph_add_node(m, g, "If", "", NULL, 1, &c, 1, oi);
    if (n == CARVE_NONE || carve_node_set_attr_graph(m, n, "then_branch", t) ||
        carve_node_set_attr_graph(m, n, "else_branch", e))
        return CARVE_NONE;
    return carve_node_output(m, n, 0);
}

carve_model *files_nested_model(carve_ctx *ctx, int depth)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id c = carve_graph_add_input(m, 0, "c", CARVE_BOOL, 0, NULL);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    carve_value_id y = nest(m, 0, c, x, depth);
    if (y == CARVE_NONE || carve_graph_add_output(m, 0, y)) {
        carve_model_free(m);
        return NULL;
    }
    return m;
}

carve_model *files_collide_model(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    const char *o1[] = {"a/b"}, *o2[] = {"a_b"};
    carve_node_id n1 = carve_graph_add_node(m, 0, "Relu", "", NULL, 1, &x, 1, o1);
    carve_node_id n2 = carve_graph_add_node(m, 0, "Neg", "", NULL, 1, &x, 1, o2);
    if (n1 == CARVE_NONE || n2 == CARVE_NONE || carve_graph_add_output(m, 0, carve_node_output(m, n1, 0)) ||
        carve_graph_add_output(m, 0, carve_node_output(m, n2, 0))) {
        carve_model_free(m);
        return NULL;
    }
    return m;
}

carve_model *files_extdata_model(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{1024, NULL}});
    static float w[1024];
    for (int i = 0; i < 1024; i++)
        w[i] = (float)i;
    carve_value_id wv = carve_graph_add_initializer(m, 0, "w", CARVE_FLOAT, 1, (int64_t[]){1024}, w, sizeof w);
    const char *o[] = {"y"};
    carve_node_id n = carve_graph_add_node(m, 0, "Add", "", NULL, 2, (carve_value_id[]){x, wv}, 1, o);
    if (n == CARVE_NONE || carve_graph_add_output(m, 0, carve_node_output(m, n, 0))) {
        carve_model_free(m);
        return NULL;
    }
    return m;
}

#ifdef FILES_MODELS_MAIN
int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: make_files_models (nested OUT N | collide OUT | extdata OUT)\n");
        return 2;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    carve_save_opts so = {0};
    if (!strcmp(argv[1], "nested") && argc == 4)
        m = files_nested_model(ctx, atoi(argv[3]));
    else if (!strcmp(argv[1], "collide"))
        m = files_collide_model(ctx);
    else if (!strcmp(argv[1], "extdata")) {
        m = files_extdata_model(ctx);
        so.external_data_name = "w.bin";
    }
    int rc = 0;
    if (!m || carve_model_save_file(m, argv[2], &so)) {
        fprintf(stderr, "make_files_models: %s\n", carve_errmsg(ctx));
        rc = 1;
    }
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}
#endif

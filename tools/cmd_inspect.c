/* cmd_inspect.c: `carve inspect MODEL [--nodes] [--json]`. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: carve inspect [--nodes] [--json] MODEL\n\n"
               "Shows a model's inputs and outputs with shapes and types, its opsets, the\n"
               "node count by op type (subgraphs included) and its initializers.\n\n"
               "  --nodes   also list every node: its carve name (the name skip lists use),\n"
               "            op, inputs and outputs\n"
               "  --json    print the same as JSON\n");
}

typedef struct {
    const char *op;
    size_t count;
} op_count;

static int cmp_op(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->op, y->op);
}

typedef struct {
    op_count *ops;
    size_t n_ops;
    size_t nodes, inits, init_bytes;
} stats;

static void count(const carve_model *m, stats *s)
{
    for (carve_graph_id g = 0; g < carve_model_graph_count(m); g++) {
        for (size_t i = 0; i < carve_graph_initializer_count(m, g); i++) {
            size_t nb = 0;
            carve_value_data(m, carve_graph_initializer(m, g, i), &nb);
            s->inits++;
            s->init_bytes += nb;
        }
        for (size_t i = 0; i < carve_graph_node_count(m, g); i++) {
            carve_node_id n = carve_graph_node(m, g, i);
            const char *op = carve_node_op(m, n);
            s->nodes++;
            size_t k = 0;
            while (k < s->n_ops && strcmp(s->ops[k].op, op))
                k++;
            if (k == s->n_ops) {
                s->ops = realloc(s->ops, (s->n_ops + 1) * sizeof *s->ops);
                s->ops[s->n_ops++] = (op_count){op, 0};
            }
            s->ops[k].count++;
        }
    }
    qsort(s->ops, s->n_ops, sizeof *s->ops, cmp_op);
}

static cJSON *value_json(const carve_model *m, carve_value_id v)
{
    char t[512];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", carve_value_name(m, v));
    cJSON_AddStringToObject(o, "type", cli_type_str(m, v, t, sizeof t));
    if (carve_value_type_kind(m, v) == CARVE_TYPE_TENSOR) {
        cJSON_AddStringToObject(o, "dtype", carve_dtype_name(carve_value_dtype(m, v)));
        int r = carve_value_rank(m, v);
        if (r >= 0) {
            cJSON *shape = cJSON_AddArrayToObject(o, "shape");
            for (int i = 0; i < r; i++) {
                carve_dim d = carve_value_dim(m, v, i);
                cJSON_AddItemToArray(shape, d.param ? cJSON_CreateString(d.param)
                                            : d.value >= 0 ? cJSON_CreateNumber((double)d.value)
                                                           : cJSON_CreateNull());
            }
        }
    }
    return o;
}

static cJSON *names_json(const carve_model *m, carve_node_id n, bool inputs)
{
    cJSON *a = cJSON_CreateArray();
    size_t c = inputs ? carve_node_input_count(m, n) : carve_node_output_count(m, n);
    for (size_t i = 0; i < c; i++) {
        carve_value_id v = inputs ? carve_node_input(m, n, i) : carve_node_output(m, n, i);
        cJSON_AddItemToArray(a, cJSON_CreateString(v == CARVE_NONE ? "" : carve_value_name(m, v)));
    }
    return a;
}

static int print_json(const carve_model *m, const char *path, const stats *s, bool nodes)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", path);
    cJSON_AddNumberToObject(root, "ir_version", (double)carve_model_ir_version(m));
    cJSON *ops = cJSON_AddObjectToObject(root, "opsets");
    for (size_t i = 0; i < carve_model_opset_count(m); i++) {
        const char *d;
        int64_t v;
        carve_model_opset_at(m, i, &d, &v);
        cJSON_AddNumberToObject(ops, *d ? d : "ai.onnx", (double)v);
    }
    carve_graph_id g = carve_model_main_graph(m);
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (size_t i = 0; i < carve_graph_input_count(m, g); i++)
        cJSON_AddItemToArray(ins, value_json(m, carve_graph_input(m, g, i)));
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (size_t i = 0; i < carve_graph_output_count(m, g); i++)
        cJSON_AddItemToArray(outs, value_json(m, carve_graph_output(m, g, i)));
    cJSON_AddNumberToObject(root, "node_count", (double)s->nodes);
    cJSON_AddNumberToObject(root, "graph_count", (double)carve_model_graph_count(m));
    cJSON *by_op = cJSON_AddObjectToObject(root, "ops");
    for (size_t i = 0; i < s->n_ops; i++)
        cJSON_AddNumberToObject(by_op, s->ops[i].op, (double)s->ops[i].count);
    cJSON *ini = cJSON_AddObjectToObject(root, "initializers");
    cJSON_AddNumberToObject(ini, "count", (double)s->inits);
    cJSON_AddNumberToObject(ini, "bytes", (double)s->init_bytes);
    if (nodes) {
        cJSON *arr = cJSON_AddArrayToObject(root, "nodes");
        for (carve_graph_id gg = 0; gg < carve_model_graph_count(m); gg++)
            for (size_t i = 0; i < carve_graph_node_count(m, gg); i++) {
                carve_node_id n = carve_graph_node(m, gg, i);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "name", carve_node_name(m, n));
                cJSON_AddStringToObject(o, "op", carve_node_op(m, n));
                if (*carve_node_domain(m, n))
                    cJSON_AddStringToObject(o, "domain", carve_node_domain(m, n));
                cJSON_AddStringToObject(o, "graph", carve_graph_name(m, gg));
                cJSON_AddItemToObject(o, "inputs", names_json(m, n, true));
                cJSON_AddItemToObject(o, "outputs", names_json(m, n, false));
                cJSON_AddItemToArray(arr, o);
            }
    }
    char *txt = cJSON_Print(root);
    int rc = txt && puts(txt) >= 0 ? EXIT_OK : EXIT_MODEL;
    free(txt);
    cJSON_Delete(root);
    return rc;
}

static void print_text(const carve_model *m, const char *path, const stats *s, bool nodes)
{
    char t[512];
    carve_graph_id g = carve_model_main_graph(m);
    printf("model: %s\nir_version: %lld\nopsets:", path, (long long)carve_model_ir_version(m));
    for (size_t i = 0; i < carve_model_opset_count(m); i++) {
        const char *d;
        int64_t v;
        carve_model_opset_at(m, i, &d, &v);
        printf(" %s=%lld", *d ? d : "ai.onnx", (long long)v);
    }
    printf("\ninputs:\n");
    for (size_t i = 0; i < carve_graph_input_count(m, g); i++) {
        carve_value_id v = carve_graph_input(m, g, i);
        printf("  %s: %s\n", carve_value_name(m, v), cli_type_str(m, v, t, sizeof t));
    }
    printf("outputs:\n");
    for (size_t i = 0; i < carve_graph_output_count(m, g); i++) {
        carve_value_id v = carve_graph_output(m, g, i);
        printf("  %s: %s\n", carve_value_name(m, v), cli_type_str(m, v, t, sizeof t));
    }
    printf("initializers: %zu (%zu bytes)\n", s->inits, s->init_bytes);
    printf("nodes: %zu in %zu graph%s\n", s->nodes, carve_model_graph_count(m),
           carve_model_graph_count(m) == 1 ? "" : "s");
    for (size_t i = 0; i < s->n_ops; i++)
        printf("  %-24s %zu\n", s->ops[i].op, s->ops[i].count);
    if (!nodes)
        return;
    printf("node list (carve name: op(inputs) -> outputs):\n");
    for (carve_graph_id gg = 0; gg < carve_model_graph_count(m); gg++)
        for (size_t i = 0; i < carve_graph_node_count(m, gg); i++) {
            carve_node_id n = carve_graph_node(m, gg, i);
            printf("  %s: %s%s%s(", carve_node_name(m, n), carve_node_domain(m, n),
                   *carve_node_domain(m, n) ? "." : "", carve_node_op(m, n));
            for (size_t j = 0; j < carve_node_input_count(m, n); j++) {
                carve_value_id v = carve_node_input(m, n, j);
                printf("%s%s", j ? ", " : "", v == CARVE_NONE ? "" : carve_value_name(m, v));
            }
            printf(") -> ");
            for (size_t j = 0; j < carve_node_output_count(m, n); j++) {
                carve_value_id v = carve_node_output(m, n, j);
                printf("%s%s", j ? ", " : "", v == CARVE_NONE ? "" : carve_value_name(m, v));
            }
            if (gg != g)
                printf("   [in graph '%s']", carve_graph_name(m, gg));
            printf("\n");
        }
}

int cmd_inspect(int argc, char **argv)
{
    bool nodes = false, json = false;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout), EXIT_OK;
        else if (!strcmp(argv[i], "--nodes"))
            nodes = true;
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("inspect", "unknown option '%s'", argv[i]);
        else if (path)
            return cli_usage_error("inspect", "one model at a time ('%s' and '%s')", path, argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return cli_usage_error("inspect", "no model given");
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = cli_load(ctx, path);
    if (!m) {
        carve_ctx_free(ctx);
        return EXIT_MODEL;
    }
    stats s = {0};
    count(m, &s);
    int rc = EXIT_OK;
    if (json)
        rc = print_json(m, path, &s, nodes);
    else
        print_text(m, path, &s, nodes);
    free(s.ops);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

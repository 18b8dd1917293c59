/* check_inspect_json.c: checks the output of `carve inspect --json --nodes`
 * against the model itself, loaded with libcarve:
 *
 *   check_inspect_json MODEL JSON_FILE
 *
 * The JSON must parse; node_count must equal the length of "nodes", the sum
 * of "ops" and the model's node count over all graphs; graph_count, the
 * inputs, outputs and every node's name and op must match the model. Prints
 * what differs and exits 1, or prints a one-line summary and exits 0. */
#include "carve.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define EXPECT(cond, ...)                                         \
    do {                                                          \
        if (!(cond)) {                                            \
            fprintf(stderr, "check_inspect_json: " __VA_ARGS__);  \
            fputc('\n', stderr);                                  \
            failures++;                                           \
        }                                                         \
    } while (0)

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *s = malloc(cap + 1);
    while ((k = fread(s + n, 1, cap - n, f)) > 0)
        if ((n += k) == cap)
            s = realloc(s, (cap *= 2) + 1);
    fclose(f);
    s[n] = 0;
    return s;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void check_values(const carve_model *m, const cJSON *arr, const char *what, bool inputs)
{
    carve_graph_id g = carve_model_main_graph(m);
    size_t n = inputs ? carve_graph_input_count(m, g) : carve_graph_output_count(m, g);
    EXPECT(cJSON_IsArray(arr) && (size_t)cJSON_GetArraySize(arr) == n, "%s: %d in JSON, %zu in the model",
           what, cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1, n);
    if (!cJSON_IsArray(arr))
        return;
    size_t i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
    {
        if (i >= n)
            break;
        carve_value_id id = inputs ? carve_graph_input(m, g, i) : carve_graph_output(m, g, i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
        EXPECT(cJSON_IsString(name) && !strcmp(name->valuestring, carve_value_name(m, id)),
               "%s[%zu]: name differs from '%s'", what, i, carve_value_name(m, id));
        i++;
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: check_inspect_json MODEL JSON_FILE\n");
        return 2;
    }
    char *text = slurp(argv[2]);
    if (!text) {
        perror(argv[2]);
        return 1;
    }
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        fprintf(stderr, "check_inspect_json: %s does not parse as JSON near: %.40s\n", argv[2], at ? at : "?");
        free(text);
        return 1;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    if (carve_model_load_file(ctx, argv[1], NULL, &m) != CARVE_OK) {
        fprintf(stderr, "check_inspect_json: %s\n", carve_errmsg(ctx));
        return 1;
    }
    size_t nodes = 0;
    for (carve_graph_id g = 0; g < carve_model_graph_count(m); g++)
        nodes += carve_graph_node_count(m, g);

    double node_count = num(root, "node_count");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    EXPECT(cJSON_IsArray(arr), "no \"nodes\" array (was --nodes given?)");
    EXPECT(node_count == (double)nodes, "node_count is %.0f, the model has %zu nodes", node_count, nodes);
    if (cJSON_IsArray(arr))
        EXPECT(cJSON_GetArraySize(arr) == (int)nodes, "\"nodes\" lists %d nodes, the model has %zu",
               cJSON_GetArraySize(arr), nodes);
    EXPECT(num(root, "graph_count") == (double)carve_model_graph_count(m), "graph_count is %.0f, not %zu",
           num(root, "graph_count"), carve_model_graph_count(m));
    EXPECT(num(root, "ir_version") == (double)carve_model_ir_version(m), "ir_version differs");

    double op_sum = 0;
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops"), *op;
    cJSON_ArrayForEach(op, ops)
        op_sum += cJSON_IsNumber(op) ? op->valuedouble : 0;
    EXPECT(op_sum == (double)nodes, "the \"ops\" counts add up to %.0f, not %zu", op_sum, nodes);

    /* Every node listed once, by its carve name, with its op. */
    const cJSON *o;
    size_t k = 0;
    cJSON_ArrayForEach(o, arr)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *opj = cJSON_GetObjectItemCaseSensitive(o, "op");
        if (!cJSON_IsString(name) || !cJSON_IsString(opj)) {
            EXPECT(false, "nodes[%zu] has no name or op", k);
            continue;
        }
        carve_node_id id = carve_model_find_node(m, name->valuestring);
        EXPECT(id != CARVE_NONE, "nodes[%zu]: '%s' is not a node of the model", k, name->valuestring);
        if (id != CARVE_NONE)
            EXPECT(!strcmp(carve_node_op(m, id), opj->valuestring), "node '%s': op %s in JSON, %s in the model",
                   name->valuestring, opj->valuestring, carve_node_op(m, id));
        k++;
    }
    check_values(m, cJSON_GetObjectItemCaseSensitive(root, "inputs"), "inputs", true);
    check_values(m, cJSON_GetObjectItemCaseSensitive(root, "outputs"), "outputs", false);

    if (!failures)
        printf("inspect JSON ok: %zu nodes in %zu graphs, %zu inputs, %zu outputs\n", nodes,
               carve_model_graph_count(m), carve_graph_input_count(m, 0), carve_graph_output_count(m, 0));
    carve_model_free(m);
    carve_ctx_free(ctx);
    cJSON_Delete(root);
    free(text);
    return failures ? 1 : 0;
}

/* fuzz_lower.c: libFuzzer target for folding and lowering.
 *
 * Each input is loaded from memory without a base folder, as fuzz_import
 * does. A model that loads and verifies is lowered for htp (with folding) or
 * for gpu (without), the target picked by the input's last byte (bit 0).
 * Its two high bits add the user's choices, taken from the model itself so
 * that they name what is there (the inputs in fuzz/regressions/lower/ end in
 * bytes below 0x40 and are lowered as they always were):
 *   bit 6: --cpu-ops with the op of one main-graph node and --cpu-nodes
 *          with the name of another, picked by the two bytes before the
 *          last;
 *   bit 7: --min-partition-nodes 2 to 5, and two targets in priority
 *          order instead of one: htp+gpu (bit 0 set) or gpu+htp.
 * Lowering
 * may refuse a model, but then with an error message and no report; when it
 * succeeds, the report is JSON-shaped text, the lowered model verifies,
 * exports and re-imports. Crashes, leaks and sanitizer findings are bugs.
 * Built by scripts/fuzz.sh (clang, -DCARVE_FUZZ=ON -DCARVE_SANITIZE=ON),
 * seeded with the libonnx-testdata models. */
#include "carve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_lower: %s: %s\n", what, detail ? detail : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    carve_ctx *ctx = carve_ctx_new();
    if (!ctx)
        fail("carve_ctx_new", "out of memory");
    carve_model *m = NULL;
    if (carve_model_load_memory(ctx, data, size, NULL, &m) != CARVE_OK || carve_model_verify(m) != CARVE_OK) {
        carve_model_free(m);
        carve_ctx_free(ctx);
        return 0;
    }
    uint8_t last = size ? data[size - 1] : 0, b1 = size > 1 ? data[size - 2] : 0, b2 = size > 2 ? data[size - 3] : 0;
    bool htp = last & 1, several = last & 0x80;
    carve_target *t[2] = {NULL, NULL};
    if (carve_target_builtin(ctx, htp ? "htp" : "gpu", &t[0]) != CARVE_OK ||
        (several && carve_target_builtin(ctx, htp ? "gpu" : "htp", &t[1]) != CARVE_OK))
        fail("carve_target_builtin", carve_errmsg(ctx));
    carve_lower_opts opts = {.no_fold = !htp};
    /* copies: lowering changes the model the names live in */
    char op[128], node[128];
    const char *cpu_ops[1] = {op}, *cpu_nodes[1] = {node};
    size_t n_nodes = carve_graph_node_count(m, 0);
    if ((last & 0x40) && n_nodes) {
        snprintf(op, sizeof op, "%s", carve_node_op(m, carve_graph_node(m, 0, b1 % n_nodes)));
        snprintf(node, sizeof node, "%s", carve_node_name(m, carve_graph_node(m, 0, b2 % n_nodes)));
        opts.cpu_ops = cpu_ops, opts.n_cpu_ops = 1;
        opts.cpu_nodes = cpu_nodes, opts.n_cpu_nodes = 1;
    }
    if (several)
        opts.min_partition_nodes = 2 + (b1 & 3);
    carve_report *rep = NULL;
    if (carve_lower_targets(m, (const carve_target *const *)t, several ? 2 : 1, &opts, &rep) != CARVE_OK) {
        if (rep)
            fail("a failed lowering left a report behind", carve_errmsg(ctx));
        if (!*carve_errmsg(ctx))
            fail("a failed lowering left no message", NULL);
    } else {
        const char *json = carve_report_json(rep);
        if (!json || json[0] != '{')
            fail("the report is not a JSON object", json);
        if (carve_model_verify(m) != CARVE_OK)
            fail("the lowered model does not verify", carve_errmsg(ctx));
        void *bytes = NULL;
        size_t n = 0;
        carve_model *r = NULL;
        if (carve_model_save_memory(m, &bytes, &n) != CARVE_OK)
            fail("the lowered model does not export", carve_errmsg(ctx));
        if (carve_model_load_memory(ctx, bytes, n, NULL, &r) != CARVE_OK)
            fail("the lowered model does not re-import", carve_errmsg(ctx));
        if (carve_model_verify(r) != CARVE_OK)
            fail("the re-imported lowered model does not verify", carve_errmsg(ctx));
        carve_model_free(r);
        carve_free(bytes);
    }
    carve_report_free(rep);
    carve_target_free(t[0]);
    carve_target_free(t[1]);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return 0;
}

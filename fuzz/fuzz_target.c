/* fuzz_target.c: libFuzzer target for the target-profile parser
 * (src/partition/target.c), the JSON a user hands carve with --target-file.
 *
 * Each input is parsed as a profile. A refusal must come with a message
 * naming the profile; an accepted profile must hold what the parser
 * promises (a name, known ops, at least one dtype for a delegate target),
 * and must lower a small model without a crash. Crashes, leaks (the
 * parse_rule leak of issue 11) and sanitizer findings are bugs. Seeded with
 * targets/ (*.json) by scripts/fuzz.sh; fuzz/regressions/target/ holds inputs
 * that once broke carve (replayed by CTest: fuzz.target_regressions). */
#include "carve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* src/partition/partition.h: the parser behind carve_target_load_file. */
carve_status cv_target_parse(carve_ctx *ctx, const char *json, size_t len, const char *source, carve_target **out);

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_target: %s: %s\n", what, detail ? detail : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    carve_ctx *ctx = carve_ctx_new();
    if (!ctx)
        fail("carve_ctx_new", "out of memory");
    carve_target *t = NULL;
    carve_status s = cv_target_parse(ctx, (const char *)data, size, "'fuzz.json'", &t);
    if (s != CARVE_OK) {
        if (t)
            fail("a refused profile was returned", carve_errmsg(ctx));
        if (!strstr(carve_errmsg(ctx), "fuzz.json") && s != CARVE_ERR_NOMEM)
            fail("a refusal does not name the profile", carve_errmsg(ctx));
        carve_ctx_free(ctx);
        return 0;
    }
    const char *name = carve_target_name(t);
    if (!name || !*name)
        fail("an accepted profile has no name", NULL);
    /* an accepted delegate profile lowers a small model without a crash */
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 2, (carve_dim[]){{2, NULL}, {3, NULL}});
    const char *o1[] = {"r"}, *o2[] = {"y"};
    carve_node_id r = carve_graph_add_node(m, 0, "Relu", "", NULL, 1, &x, 1, o1);
    carve_value_id rv = carve_node_output(m, r, 0);
    carve_node_id n = carve_graph_add_node(m, 0, "Softmax", "", NULL, 1, &rv, 1, o2);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    carve_report *rep = NULL;
    if (carve_lower(m, t, NULL, &rep) == CARVE_OK) {
        if (!rep || !carve_report_json(rep))
            fail("lowering succeeded without a report", NULL);
        if (carve_model_verify(m) != CARVE_OK)
            fail("the lowered model does not verify", carve_errmsg(ctx));
    } else if (rep) {
        fail("lowering failed but made a report", carve_errmsg(ctx));
    }
    carve_report_free(rep);
    carve_model_free(m);
    carve_target_free(t);
    carve_ctx_free(ctx);
    return 0;
}

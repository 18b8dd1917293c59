/* fuzz_lower.c: libFuzzer target for folding and lowering.
 *
 * Each input is loaded from memory without a base folder, as fuzz_import
 * does. A model that loads and verifies is lowered for htp (with folding) or
 * for gpu (without), the target picked by the input's last byte. Lowering
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
    bool htp = size && (data[size - 1] & 1);
    carve_target *t = NULL;
    if (carve_target_builtin(ctx, htp ? "htp" : "gpu", &t) != CARVE_OK)
        fail("carve_target_builtin", carve_errmsg(ctx));
    carve_lower_opts opts = {.no_fold = !htp};
    carve_report *rep = NULL;
    if (carve_lower(m, t, &opts, &rep) != CARVE_OK) {
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
    carve_target_free(t);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return 0;
}

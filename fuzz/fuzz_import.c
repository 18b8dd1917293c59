/* fuzz_import.c: libFuzzer target for the ONNX importer and exporter.
 *
 * Each input is loaded from memory without a base folder (so external data
 * is refused and nothing outside the input is read). A model that loads must
 * verify, export, re-import to the same IR dump, and export again to the same
 * bytes; any failure of those is a bug and aborts. A refused input must come
 * with an error message. Built by scripts/fuzz.sh (clang, -DCARVE_FUZZ=ON
 * -DCARVE_SANITIZE=ON), which seeds it with the libonnx-testdata models. */
#include "carve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_import: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* Shows the first line where two dumps part. */
static void fail_dump(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    while (i && a[i - 1] != '\n')
        i--;
    fprintf(stderr, "fuzz_import: IR differs after a round trip:\n  first:  %.200s\n  second: %.200s\n", a + i,
            b + i);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    carve_ctx *ctx = carve_ctx_new();
    if (!ctx)
        fail("carve_ctx_new", "out of memory");
    carve_model *a = NULL, *b = NULL;
    if (carve_model_load_memory(ctx, data, size, NULL, &a) != CARVE_OK) {
        if (a)
            fail("failed load left a model behind", carve_errmsg(ctx));
        if (!*carve_errmsg(ctx))
            fail("failed load left no message", NULL);
        carve_ctx_free(ctx);
        return 0;
    }
    if (carve_model_verify(a) != CARVE_OK)
        fail("a loaded model does not verify", carve_errmsg(ctx));
    char *da = carve_model_dump(a);
    if (!da)
        fail("dump", "returned NULL");
    void *bytes = NULL, *bytes2 = NULL;
    size_t n = 0, n2 = 0;
    if (carve_model_save_memory(a, &bytes, &n) != CARVE_OK)
        fail("a loaded model does not export", carve_errmsg(ctx));
    if (carve_model_load_memory(ctx, bytes, n, NULL, &b) != CARVE_OK)
        fail("the exported bytes do not load", carve_errmsg(ctx));
    char *db = carve_model_dump(b);
    if (!db)
        fail("dump of the re-imported model", "returned NULL");
    if (strcmp(da, db))
        fail_dump(da, db);
    if (carve_model_save_memory(b, &bytes2, &n2) != CARVE_OK)
        fail("the re-imported model does not export", carve_errmsg(ctx));
    if (n != n2 || memcmp(bytes, bytes2, n))
        fail("exporting the re-imported model gives other bytes", NULL);
    carve_free(bytes);
    carve_free(bytes2);
    carve_free(da);
    carve_free(db);
    carve_model_free(a);
    carve_model_free(b);
    carve_ctx_free(ctx);
    return 0;
}

/* roundtrip.c: for each model given, checks that import -> verify -> export
 * -> re-import gives the same IR dump, and that exporting twice gives the
 * same bytes. Prints one line per model (failures only with -q) and a closing
 * "N passed, N failed"; fails when given no model at all. */
#define _DEFAULT_SOURCE
#include "carve.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(const char *path, char *why, size_t whysz)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *a = NULL, *b = NULL;
    void *bytes = NULL, *bytes2 = NULL;
    size_t n = 0, n2 = 0;
    char *da = NULL, *db = NULL;
    int ok = 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    carve_load_opts lo = {dirname(dir)};
    if (carve_model_load_file(ctx, path, NULL, &a)) {
        snprintf(why, whysz, "load: %s", carve_errmsg(ctx));
        goto out;
    }
    if (carve_model_verify(a)) {
        snprintf(why, whysz, "verify: %s", carve_errmsg(ctx));
        goto out;
    }
    if (carve_model_save_memory(a, &bytes, &n)) {
        snprintf(why, whysz, "save: %s", carve_errmsg(ctx));
        goto out;
    }
    if (carve_model_load_memory(ctx, bytes, n, &lo, &b)) {
        snprintf(why, whysz, "re-import: %s", carve_errmsg(ctx));
        goto out;
    }
    da = carve_model_dump(a);
    db = carve_model_dump(b);
    if (!da || !db || strcmp(da, db)) {
        size_t i = 0;
        while (da && db && da[i] && da[i] == db[i])
            i++;
        size_t line_start = i;
        while (line_start && da[line_start - 1] != '\n')
            line_start--;
        snprintf(why, whysz, "IR differs after round trip near: %.120s | %.120s", da ? da + line_start : "?",
                 db ? db + line_start : "?");
        goto out;
    }
    if (carve_model_save_memory(b, &bytes2, &n2) || n2 != n || memcmp(bytes, bytes2, n)) {
        snprintf(why, whysz, "second export differs (%zu vs %zu bytes)", n, n2);
        goto out;
    }
    ok = 1;
out:
    carve_free(da);
    carve_free(db);
    carve_free(bytes);
    carve_free(bytes2);
    carve_model_free(a);
    carve_model_free(b);
    carve_ctx_free(ctx);
    return ok;
}

int main(int argc, char **argv)
{
    int pass = 0, fail = 0;
    bool quiet = argc > 1 && !strcmp(argv[1], "-q");
    for (int i = 1 + quiet; i < argc; i++) {
        char why[1024] = "";
        if (check(argv[i], why, sizeof why)) {
            pass++;
            if (!quiet)
                printf("ok   %s\n", argv[i]);
        } else {
            fail++;
            printf("FAIL %s: %s\n", argv[i], why);
        }
    }
    printf("%d passed, %d failed\n", pass, fail);
    if (pass + fail == 0) {
        printf("no model given: nothing was checked\n");
        return 1;
    }
    return fail ? 1 : 0;
}

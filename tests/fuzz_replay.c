/* fuzz_replay.c: runs a fuzz target's LLVMFuzzerTestOneInput (linked in:
 * fuzz/fuzz_import.c or fuzz/fuzz_lower.c) on files, in ordinary builds
 * without libFuzzer, so that CTest replays them in the optimized and the
 * sanitizer builds alike: the inputs fuzzing once broke carve
 * (fuzz/regressions/<target>/) and the libonnx-testdata models. The target
 * aborts on a broken invariant; the sanitizers abort on memory errors.
 *
 *   fuzz_replay [--suffix HEX] [--name NAME | --any] PATH...
 *
 * A folder is walked for files ending in .onnx (with --name, only files
 * called NAME; with --any, every file: profiles, argument vectors). Prints
 * how many inputs ran; no input found is a failure.
 *
 * --suffix appends the bytes HEX to each model before it runs: a field
 * ModelProto does not have (tag and length first), which carve keeps
 * unread, so that the input's last bytes pick fuzz_lower's choices. Each
 * model that loads without the suffix must load with it too (a failure
 * otherwise), so the choices are not silently left untried. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "carve.h"
#include "testfiles.h"

#include <ctype.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *only_name;
static int any_name;
static long ran;
static uint8_t suffix[64];
static size_t n_suffix;

static bool loads(const uint8_t *data, size_t n)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    bool ok = ctx && carve_model_load_memory(ctx, data, n, NULL, &m) == CARVE_OK;
    carve_model_free(m);
    carve_ctx_free(ctx);
    return ok;
}

static int replay(const char *path)
{
    size_t n = 0;
    uint8_t *buf = t_read_file(path, &n);
    if (!buf) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        return 1;
    }
    if (n_suffix) {
        uint8_t *more = realloc(buf, n + n_suffix);
        if (!more) {
            free(buf);
            fprintf(stderr, "fuzz_replay: out of memory\n");
            return 1;
        }
        buf = more;
        bool before = loads(buf, n);
        memcpy(buf + n, suffix, n_suffix);
        n += n_suffix;
        if (before && !loads(buf, n)) {
            free(buf);
            fprintf(stderr, "fuzz_replay: %s loads, but not with the suffix\n", path);
            return 1;
        }
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    ran++;
    return 0;
}

/* HEX -> suffix; false when it is not pairs of hex digits, or too long */
static bool parse_suffix(const char *hex)
{
    size_t len = strlen(hex);
    if (!len || len % 2 || len / 2 > sizeof suffix)
        return false;
    for (size_t i = 0; i < len; i += 2) {
        unsigned v = 0;
        for (size_t k = i; k < i + 2; k++) {
            static const char digits[] = "0123456789abcdef";
            const char *d = strchr(digits, tolower((unsigned char)hex[k]));
            if (!d || !*d)
                return false;
            v = v * 16 + (unsigned)(d - digits);
        }
        suffix[n_suffix++] = (uint8_t)v;
    }
    return true;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (type != FTW_F)
        return 0;
    const char *base = path + ftw->base;
    size_t len = strlen(base);
    if (any_name ? base[0] == '.' : only_name ? strcmp(base, only_name) != 0 : len < 5 || strcmp(base + len - 5, ".onnx") != 0)
        return 0;
    return replay(path);
}

int main(int argc, char **argv)
{
    int i = 1;
    if (argc > 2 && !strcmp(argv[1], "--suffix")) {
        if (!parse_suffix(argv[2])) {
            fprintf(stderr, "fuzz_replay: --suffix '%s' is not 1 to %zu bytes in hex\n", argv[2], sizeof suffix);
            return 2;
        }
        i = 3;
    }
    if (argc > i + 1 && !strcmp(argv[i], "--name")) {
        only_name = argv[i + 1];
        i += 2;
    } else if (argc > i && !strcmp(argv[i], "--any")) {
        any_name = 1;
        i++;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: fuzz_replay [--suffix HEX] [--name NAME | --any] PATH...\n");
        return 2;
    }
    for (; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_replay: %s does not exist\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? nftw(argv[i], visit, 16, FTW_PHYS) != 0 : replay(argv[i]) != 0)
            return 1;
    }
    printf("fuzz_replay: %ld inputs ran without a finding\n", ran);
    return ran > 0 ? 0 : 1;
}

/* fuzz_replay.c: runs a fuzz target's LLVMFuzzerTestOneInput (linked in:
 * fuzz/fuzz_import.c or fuzz/fuzz_lower.c) on files, in ordinary builds
 * without libFuzzer, so that CTest replays them in the optimized and the
 * sanitizer builds alike: the inputs fuzzing once broke carve
 * (fuzz/regressions/<target>/) and the libonnx-testdata models. The target
 * aborts on a broken invariant; the sanitizers abort on memory errors.
 *
 *   fuzz_replay [--name NAME | --any] PATH...
 *
 * A folder is walked for files ending in .onnx (with --name, only files
 * called NAME; with --any, every file: profiles, argument vectors). Prints
 * how many inputs ran; no input found is a failure. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "testfiles.h"

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

static int replay(const char *path)
{
    size_t n = 0;
    uint8_t *buf = t_read_file(path, &n);
    if (!buf) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        return 1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    ran++;
    return 0;
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
    if (argc > 2 && !strcmp(argv[1], "--name")) {
        only_name = argv[2];
        i = 3;
    } else if (argc > 1 && !strcmp(argv[1], "--any")) {
        any_name = 1;
        i = 2;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: fuzz_replay [--name NAME | --any] PATH...\n");
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

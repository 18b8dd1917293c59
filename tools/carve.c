/* carve.c: the command-line tool's entry point and dispatch. */
#define _DEFAULT_SOURCE /* setenv, unsetenv */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
    bool pad_heap; /* the heap grows in large steps (malloc_in_huge_pages) */
} commands[] = {
    {"inspect", cmd_inspect, "show a model's inputs, outputs, opsets, ops and node names", false},
    {"lower", cmd_lower, "lower a model for a target: delegate partitions, CPU fallback, report", true},
    {"check", cmd_check, "lower, run both models on the same inputs and compare the outputs", false},
    {"run", cmd_run, "run a model on carve's reference CPU kernels", false},
    {"targets", cmd_targets, "list the built-in target profiles, their ops and rules", false},
    {"report", cmd_report, "write a lowering report's partition map: one self-contained HTML page", false},
    {"fold", cmd_fold, "fold constants and constant-only subgraphs, write the folded model", false},
    {"qdq", cmd_qdq, "apply an AIMET encodings file to a float model as Q/DQ pairs", false},
};

static void help(FILE *f)
{
    fprintf(f, "usage: carve COMMAND [OPTIONS] MODEL\n\n"
               "carve lowers ONNX models onto an NPU with CPU fallback.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'carve COMMAND --help' for a command's options.\n\n"
               "Options:\n  -h, --help     show this help\n  --version      print carve's version\n\n"
               "Environment:\n"
               "  CARVE_NO_FSYNC=1   do not fsync written files (scratch output; see docs/files.md)\n"
               "  CARVE_NO_REEXEC=1  do not start again with glibc's malloc in huge pages\n"
               "                     (see docs/performance.md)\n\n"
               "Exit status: 0 success, 1 a problem with the model or the request, 2 a usage error.\n");
}

/* glibc's malloc in huge pages, for the whole process: once, before
 * anything is allocated, carve starts itself again with tunables added to
 * GLIBC_TUNABLES (glibc 2.35 and later; glibc reads tunables only when a
 * process starts). Each is added unless the user named it already:
 *  - glibc.malloc.hugetlb=1, every command: malloc's memory is advised to
 *    use transparent huge pages;
 *  - glibc.malloc.top_pad=64 MiB, for the commands marked pad_heap (`lower`
 *    only, the one measured to gain): the heap grows in large
 *    steps, because a huge page needs a whole aligned 2 MiB inside the
 *    heap's mapping, and a heap grown by what each call asks is mostly
 *    4 KiB pages (43k DAG: 4,100 faults with hugetlb alone, about 500 with
 *    the pad);
 *  - glibc.malloc.mmap_max=0, with the pad: setting top_pad also fixes
 *    malloc's mmap threshold at 128 KiB (glibc's malloc.c, do_set_top_pad),
 *    and then every block above it is a fresh mapping, unmapped when freed
 *    (the 850k-node transformer took 1.36x as long); with no mmap, freed
 *    blocks are reused from the heap.
 * A lowering writes tens of MB of new memory, and a 4 KiB page fault cost
 * 9 us on the 2-core VM; `carve run` gains nothing from the pad and its
 * peak grows: docs/performance.md has the figures. Not when transparent
 * huge pages are off, when glibc.malloc.hugetlb is already named (the
 * user's choice, or this second start), when CARVE_NO_REEXEC is set (not
 * empty or 0, as CARVE_NO_FSYNC), or in sanitizer builds (their own
 * malloc). A failed exec changes nothing: carve goes on as it is. */
static void malloc_in_huge_pages(int argc, char **argv)
{
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35) &&                            \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    static const struct {
        const char *name, *value;
        bool pad_only; /* for the commands marked pad_heap */
    } add[] = {
        {"glibc.malloc.hugetlb", "1", false},
        {"glibc.malloc.top_pad", "67108864", true},
        {"glibc.malloc.mmap_max", "0", true},
    };
    const char *t = getenv("GLIBC_TUNABLES"), *no = getenv("CARVE_NO_REEXEC");
    if ((no && *no && strcmp(no, "0")) || (t && strstr(t, add[0].name)))
        return;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char mode[128] = "";
    if (f) {
        if (!fgets(mode, sizeof mode, f))
            mode[0] = 0;
        fclose(f);
    }
    if (!strstr(mode, "[always]") && !strstr(mode, "[madvise]"))
        return;
    bool pad = false;
    for (size_t i = 0; argc > 1 && i < sizeof commands / sizeof *commands; i++)
        pad |= commands[i].pad_heap && !strcmp(argv[1], commands[i].name);
    char v[4096];
    int n = snprintf(v, sizeof v, "%s", t ? t : "");
    for (size_t i = 0; i < sizeof add / sizeof *add && n >= 0 && (size_t)n < sizeof v; i++)
        if ((pad || !add[i].pad_only) && !(t && strstr(t, add[i].name)))
            n += snprintf(v + n, sizeof v - (size_t)n, "%s%s=%s", n ? ":" : "", add[i].name, add[i].value);
    if (n < 0 || (size_t)n >= sizeof v || setenv("GLIBC_TUNABLES", v, 1))
        return;
    execv("/proc/self/exe", argv);
    if (t) /* the exec failed: the environment as it was */
        setenv("GLIBC_TUNABLES", t, 1);
    else
        unsetenv("GLIBC_TUNABLES");
#else
    (void)argc, (void)argv;
#endif
}

/* The second start above runs /proc/self/exe, and Linux names a process
 * after the file it executes: `ps` and `top` would show a lowering as
 * "exe". The name is set back to the command's, argv[0]'s last part (what
 * the kernel gave the first start, unless that was a link named
 * otherwise), at most 15 bytes as the kernel keeps it. */
static void name_after_command(const char *argv0)
{
#ifdef __linux__
    char name[16] = "";
    if (!argv0 || prctl(PR_GET_NAME, name, 0, 0, 0) || strcmp(name, "exe"))
        return;
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    if (*base && strcmp(base, "exe")) {
        snprintf(name, sizeof name, "%s", base);
        prctl(PR_SET_NAME, name, 0, 0, 0);
    }
#else
    (void)argv0;
#endif
}

int main(int argc, char **argv)
{
    malloc_in_huge_pages(argc, argv);
    name_after_command(argv[0]);
    if (argc < 2)
        return help(stderr), EXIT_USAGE;
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help"))
        return help(stdout), EXIT_OK;
    if (!strcmp(c, "--version") || !strcmp(c, "version")) {
        printf("carve %s\n", CARVE_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(c, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "carve: unknown command '%s'\n", c);
    help(stderr);
    return EXIT_USAGE;
}

/* fuzz_cli.c: libFuzzer target for the command line's option parsers
 * (tools/cli_util.c, tools/lower_opts.c): the options `carve lower`,
 * `check` and `run` share.
 *
 * An input is an argument vector, arguments separated by NUL bytes. They are
 * parsed as a command parses its options; a parser either takes an option
 * (and its value) or refuses it with a usage error, never exits, never reads
 * past argv. Every number accepted must be the canonical digits of a value
 * in range (the strict parsing of issue 11: no sign, blank, base prefix or
 * trailing character slips through). The profiles named are loaded only
 * when built in, and no --backend-lib is loaded: the parser must not make
 * the fuzzer read arbitrary files or load arbitrary code.
 * Seeded by scripts/fuzz.sh with fuzz/regressions/cli/; CTest replays that
 * folder (fuzz.cli_regressions). */
#define _POSIX_C_SOURCE 200809L
#include "../tools/lower_opts.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Under libFuzzer the usage errors the parsers print (the expected output)
 * go to /dev/null: at 100,000 runs a second they would be the whole log.
 * Only the stdio stream is swapped (glibc lets stderr be assigned): the
 * sanitizers write their reports to descriptor 2, which stays, and so does
 * fail(). The replay (tests/fuzz_replay.c, which never calls
 * LLVMFuzzerInitialize) prints everything. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FILE *null = fopen("/dev/null", "w");
    if (null)
        stderr = null;
    return 0;
}

static void fail(const char *what, const char *detail)
{
    dprintf(2, "fuzz_cli: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* digits of s are exactly the decimal writing of x (no leading zeros but "0") */
static void canonical(const char *s, unsigned long long x, const char *what)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", x);
    if (strcmp(buf, s) && !(s[0] == '0' && strspn(s, "0") == strlen(s) && x == 0)) {
        /* leading zeros are digits too: "007" is 7 */
        const char *p = s;
        while (*p == '0' && p[1])
            p++;
        if (strcmp(buf, p))
            fail(what, s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    char *argv[66];
    int argc = 0;
    argv[argc++] = "lower";
    for (size_t i = 0; i <= size && argc < 65;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    cli_lower cl = {0};
    cli_inputs ci = {0};
    for (int i = 1; i < argc; i++) {
        int at = i;
        int r = cli_lower_arg(&cl, "lower", argc, argv, &i);
        if (r == 0)
            r = cli_inputs_arg(&ci, "lower", argc, argv, &i);
        if (i < at || i > at + 1 || i >= argc + (r > 0 ? 0 : 1) || (r == 0 && i != at))
            fail("a parser moved past argv", argv[at]);
        /* the number parsers on every argument: accepted means canonical */
        uint64_t u;
        size_t b;
        double d;
        if (cli_parse_u64(argv[at], UINT64_MAX, &u))
            canonical(argv[at], (unsigned long long)u, "cli_parse_u64 took a non-canonical number");
        if (cli_parse_u64(argv[at], 1000, &u) && u > 1000)
            fail("cli_parse_u64 went past its maximum", argv[at]);
        if (cli_parse_bytes(argv[at], &b) && (argv[at][0] < '0' || argv[at][0] > '9'))
            fail("cli_parse_bytes took a non-digit start", argv[at]);
        if (cli_parse_double(argv[at], &d) && !(d == d && d - d == 0))
            fail("cli_parse_double took a non-finite number", argv[at]);
        if (r < 0)
            break;
    }
    for (int k = 0; k < ci.n_dims; k++) {
        uint64_t v;
        if (!cli_parse_u64(ci.dims[k].value, CLI_MAX_DIM, &v))
            fail("--dim kept a value it should have refused", ci.dims[k].value);
    }
    if (cl.opts.min_partition_nodes > 1000000)
        fail("--min-partition-nodes out of range", NULL);
    if (cli_lower_check(&cl, "lower", false) && !cl.n_target_files && cl.backends.n == 0 &&
        (!cl.cpu_profile || !strcmp(cl.cpu_profile, "core") || !strcmp(cl.cpu_profile, "full"))) {
        carve_ctx *ctx = carve_ctx_new();
        cli_lower_setup(&cl, ctx, "lower");
        carve_ctx_free(ctx);
    }
    cli_lower_free(&cl);
    cli_inputs_free(&ci);
    free(buf);
    return 0;
}

/* cli.h: shared pieces of the carve command-line tool. The CLI is the only
 * place that decides exit codes: 0 ok, 1 a problem with the model or the
 * request, 2 a usage error. */
#ifndef CARVE_CLI_H
#define CARVE_CLI_H

#include "carve.h"

#include <stdbool.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_MODEL = 1, EXIT_USAGE = 2 };

/* Each command: argc/argv start at the command name. */
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_lower(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_targets(int argc, char **argv);
int cmd_fold(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* The partition map page (cmd_report.c, docs/map.md) of report JSON `json`,
 * with the value types of `m` when not NULL: malloc'd bytes, *n of them, or
 * NULL (printed why). */
char *cli_map_page(const char *cmd, const char *json, size_t len, const carve_model *m, size_t *n);
int cmd_qdq(int argc, char **argv);

/* Inputs given on the command line: --input NAME=FILE, --dim NAME=VALUE,
 * --random-inputs SEED (run and check share them). */
typedef struct cli_kv {
    char *name;
    const char *value;
} cli_kv;
typedef struct cli_inputs {
    cli_kv ins[64], dims[64];
    int n_ins, n_dims;
    bool have_seed;
    uint64_t seed;
} cli_inputs;
/* Takes argv[*i] (and its value) if it is one of those options: 1 taken,
 * 0 not ours, -1 a usage error (already printed). */
int cli_inputs_arg(cli_inputs *ci, const char *cmd, int argc, char **argv, int *i);
/* in[] (one per main-graph input): files given, then seeded random values for
 * the rest when a seed was given. false: printed why. */
bool cli_inputs_make(carve_ctx *ctx, const carve_model *m, const cli_inputs *ci, const char *cmd, carve_tensor **in);
void cli_inputs_free(cli_inputs *ci);
/* Numbers are parsed strictly: digits only (no sign, blanks, base prefix
 * or trailing characters) and within range; false when s is not one. */
bool cli_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* --threads N: sets carve_set_threads (process-wide). Returns like
 * cli_inputs_arg. */
int cli_threads_arg(const char *cmd, int argc, char **argv, int *i);
extern const char *cli_threads_help;
/* A byte count: digits with an optional k, M or G suffix (powers of 1024). */
bool cli_parse_bytes(const char *s, size_t *out);
/* A finite decimal number (no blanks, hex, inf or nan). */
bool cli_parse_double(const char *s, double *out);
/* The largest --dim: 2^40, carve's limit on a tensor's elements. */
#define CLI_MAX_DIM ((uint64_t)1 << 40)
/* Parses a comma-separated list into a malloc'd array of strings. */
char **cli_split_list(const char *s, size_t *n);

/* --backend-lib PATH (repeatable): backends loaded from shared objects
 * (carve_backend_load) on the command's context before anything else. */
typedef struct cli_backends {
    const char *libs[16];
    int n;
} cli_backends;
/* 1 taken, 0 not ours, -1 a usage error (printed). */
int cli_backends_arg(cli_backends *cb, const char *cmd, int argc, char **argv, int *i);
/* Loads them; false: printed why. */
bool cli_backends_load(carve_ctx *ctx, const cli_backends *cb, const char *cmd);
extern const char *cli_backends_help;

/* Prints "carve CMD: msg" and the hint to use --help; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The library's last error on ctx in the CLI's words: the library names
 * the model and the request (carve_lower_opts.cpu_nodes as "cpu_nodes: "),
 * the CLI its flags ("--cpu-nodes: ") and how to get the missing piece
 * (--backend-lib, --reference, carve inspect --nodes). Valid until the next
 * call. */
const char *cli_errmsg(carve_ctx *ctx);
/* Loads a model or prints why not. */
carve_model *cli_load(carve_ctx *ctx, const char *path);
/* "float32[N,3,224,224]" into buf. */
const char *cli_type_str(const carve_model *m, carve_value_id v, char *buf, size_t n);

#endif

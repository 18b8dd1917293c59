/* cli.h: shared pieces of the carve command-line tool. The CLI is the only
 * place that decides exit codes: 0 ok, 1 a problem with the model or the
 * request, 2 a usage error. */
#ifndef CARVE_CLI_H
#define CARVE_CLI_H

#include "carve.h"

#include <stdio.h>

enum { EXIT_OK = 0, EXIT_MODEL = 1, EXIT_USAGE = 2 };

/* Each command: argc/argv start at the command name. */
int cmd_inspect(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* Prints "carve CMD: msg" and the hint to use --help; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Loads a model or prints why not. */
carve_model *cli_load(carve_ctx *ctx, const char *path);
/* "float32[N,3,224,224]" into buf. */
const char *cli_type_str(const carve_model *m, carve_value_id v, char *buf, size_t n);

#endif

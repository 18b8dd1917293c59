/* lower_opts.h: lowering options shared by `carve lower` and `carve check`. */
#ifndef CARVE_LOWER_OPTS_H
#define CARVE_LOWER_OPTS_H

#include "cli.h"

typedef struct cli_lower {
    const char *target_name, *target_file, *cpu_profile;
    char **cpu_nodes, **cpu_ops;
    size_t n_cpu_nodes, n_cpu_ops;
    carve_lower_opts opts;
    carve_target *target, *cpu;
    cli_backends backends;
} cli_lower;

/* 1 taken, 0 not ours, -1 usage error (printed). */
int cli_lower_arg(cli_lower *cl, const char *cmd, int argc, char **argv, int *i);
/* The usage rules (one of --target and --target-file); false: printed why
 * (a usage error, exit 2). */
bool cli_lower_check(const cli_lower *cl, const char *cmd);
/* Marks the profile files given as inputs no output may overwrite. */
carve_status cli_lower_protect(const cli_lower *cl, carve_outputs *o);
/* Loads the profiles; false: printed why. */
bool cli_lower_setup(cli_lower *cl, carve_ctx *ctx, const char *cmd);
bool cli_fix_dims(carve_ctx *ctx, carve_model *m, const cli_inputs *ci, const char *cmd);
void cli_lower_free(cli_lower *cl);
extern const char *cli_lower_help;

#endif

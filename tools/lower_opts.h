/* lower_opts.h: lowering options shared by `carve lower` and `carve check`. */
#ifndef CARVE_LOWER_OPTS_H
#define CARVE_LOWER_OPTS_H

#include "cli.h"

#define CLI_MAX_TARGETS 8

typedef struct cli_lower {
    /* --target: names, '+' between targets of one lowering (priority
     * order), ',' between lowerings (check only); --target-file (repeatable)
     * joins each priority list after the names */
    const char *target_name, *cpu_profile;
    const char *target_files[CLI_MAX_TARGETS];
    size_t n_target_files;
    char **cpu_nodes, **cpu_ops;
    size_t n_cpu_nodes, n_cpu_ops;
    carve_skip_on *skip_on; /* --skip-on TARGET:NODE[,NODE]; strings owned below */
    char **skip_strs;
    size_t n_skip_on, n_skip_strs;
    carve_lower_opts opts;
    /* the priority list of the lowering at hand (cli_lower_targets) */
    carve_target *targets[CLI_MAX_TARGETS];
    size_t n_targets;
    carve_target *target, *cpu; /* target: targets[0] */
    cli_backends backends;
} cli_lower;

/* 1 taken, 0 not ours, -1 usage error (printed). */
int cli_lower_arg(cli_lower *cl, const char *cmd, int argc, char **argv, int *i);
/* The usage rules (a --target or a --target-file; no ',' in --target
 * unless `lists` (check: several lowerings)); false: printed why (a usage
 * error, exit 2). */
bool cli_lower_check(const cli_lower *cl, const char *cmd, bool lists);
/* Loads the priority list `group` ("htp+gpu", or NULL: no names) followed
 * by the --target-file profiles into cl->targets; false: printed why. */
bool cli_lower_targets(cli_lower *cl, carve_ctx *ctx, const char *cmd, const char *group);
/* A name for messages: "htp+gpu". */
const char *cli_lower_name(const cli_lower *cl, char *buf, size_t size);
/* Marks the profile files given as inputs no output may overwrite. */
carve_status cli_lower_protect(const cli_lower *cl, carve_outputs *o);
/* Loads the profiles; false: printed why. */
bool cli_lower_setup(cli_lower *cl, carve_ctx *ctx, const char *cmd);
bool cli_fix_dims(carve_ctx *ctx, carve_model *m, const cli_inputs *ci, const char *cmd);
void cli_lower_free(cli_lower *cl);
extern const char *cli_lower_help;

#endif

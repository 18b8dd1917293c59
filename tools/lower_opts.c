/* lower_opts.c: the lowering options `carve lower` and `carve check` share. */
#define _POSIX_C_SOURCE 200809L
#include "lower_opts.h"

#include <stdlib.h>
#include <string.h>

/* Given twice, --cpu-nodes and --cpu-ops add up. */
static bool append_list(char ***list, size_t *n, const char *val)
{
    size_t k = 0;
    char **more = cli_split_list(val, &k);
    if (!more)
        return false;
    char **all = realloc(*list, (*n + k + 1) * sizeof *all);
    if (!all) {
        for (size_t j = 0; j < k; j++)
            free(more[j]);
        free(more);
        return false;
    }
    memcpy(all + *n, more, k * sizeof *more);
    *n += k;
    all[*n] = NULL;
    *list = all;
    free(more);
    return true;
}

/* The text of @FILE for --cpu-nodes, newlines made commas: lists of
 * thousands of nodes exceed what one argument may hold. NULL: printed why. */
static char *names_file(const char *cmd, const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, k;
    char chunk[1 << 16];
    bool ok = f != NULL;
    while (ok && (k = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + k + 1 > cap) {
            cap = (len + k + 1) * 2;
            char *nb = realloc(buf, cap);
            ok = nb != NULL;
            if (!ok)
                break;
            buf = nb;
        }
        memcpy(buf + len, chunk, k);
        len += k;
    }
    ok = ok && !ferror(f);
    if (f)
        fclose(f);
    if (ok && !buf)
        ok = (buf = malloc(1)) != NULL;
    if (!ok) {
        cli_usage_error(cmd, "--cpu-nodes: cannot read '%s'", path);
        free(buf);
        return NULL;
    }
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ',';
    buf[len] = 0;
    return buf;
}

int cli_lower_arg(cli_lower *cl, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    bool has_val = *i + 1 < argc;
    const char *val = has_val ? argv[*i + 1] : NULL;
    int b = cli_backends_arg(&cl->backends, cmd, argc, argv, i);
    if (b)
        return b;
#define NEED(what)                                          \
    do {                                                    \
        if (!has_val) {                                     \
            cli_usage_error(cmd, "%s takes %s", a, what);   \
            return -1;                                      \
        }                                                   \
        ++*i;                                               \
    } while (0)
    if (!strcmp(a, "--target")) {
        NEED("a target name (htp, gpu, lpai, cpu, or a loaded backend's; htp+gpu: several in priority order)");
        cl->target_name = val;
    } else if (!strcmp(a, "--target-file")) {
        NEED("a JSON profile");
        if (cl->n_target_files == CLI_MAX_TARGETS) {
            cli_usage_error(cmd, "--target-file: at most %d profiles", CLI_MAX_TARGETS);
            return -1;
        }
        cl->target_files[cl->n_target_files++] = val;
    } else if (!strcmp(a, "--skip-on")) {
        NEED("TARGET:NODE[,NODE...]");
        const char *colon = strchr(val, ':');
        if (!colon || colon == val || !colon[1]) {
            cli_usage_error(cmd, "--skip-on: '%s' is not TARGET:NODE[,NODE...]", val);
            return -1;
        }
        size_t k = 0;
        char **nodes = cli_split_list(colon + 1, &k);
        char *tname = strndup(val, (size_t)(colon - val));
        carve_skip_on *more = realloc(cl->skip_on, (cl->n_skip_on + k + 1) * sizeof *more);
        char **strs = realloc(cl->skip_strs, (cl->n_skip_strs + k + 2) * sizeof *strs);
        if (more)
            cl->skip_on = more;
        if (strs)
            cl->skip_strs = strs;
        if (!nodes || !tname || !more || !strs) {
            free(tname);
            for (size_t j = 0; nodes && j < k; j++)
                free(nodes[j]);
            free(nodes);
            cli_usage_error(cmd, "out of memory");
            return -1;
        }
        cl->skip_strs[cl->n_skip_strs++] = tname;
        for (size_t j = 0; j < k; j++) {
            cl->skip_strs[cl->n_skip_strs++] = nodes[j];
            cl->skip_on[cl->n_skip_on++] = (carve_skip_on){tname, nodes[j]};
        }
        free(nodes);
    } else if (!strcmp(a, "--cpu-profile")) {
        NEED("core, full or a JSON profile");
        cl->cpu_profile = val;
    } else if (!strcmp(a, "--cpu-nodes")) {
        NEED("a comma-separated list of node names or @FILE");
        char *file = val[0] == '@' ? names_file(cmd, val + 1) : NULL;
        if (val[0] == '@' && !file)
            return -1;
        bool ok = append_list(&cl->cpu_nodes, &cl->n_cpu_nodes, file ? file : val);
        free(file);
        if (!ok) {
            cli_usage_error(cmd, "out of memory");
            return -1;
        }
    } else if (!strcmp(a, "--cpu-ops")) {
        NEED("a comma-separated list of op types");
        if (!append_list(&cl->cpu_ops, &cl->n_cpu_ops, val)) {
            cli_usage_error(cmd, "out of memory");
            return -1;
        }
    } else if (!strcmp(a, "--min-partition-nodes")) {
        NEED("a number");
        uint64_t x;
        if (!cli_parse_u64(val, 1000000, &x)) {
            cli_usage_error(cmd, "--min-partition-nodes: '%s' is not a count from 0 to 1000000", val);
            return -1;
        }
        cl->opts.min_partition_nodes = (uint32_t)x;
    } else if (!strcmp(a, "--no-legalize")) {
        NEED("int64, uint8-cast or slice-clamp");
        if (!strcmp(val, "int64"))
            cl->opts.disable_legalize |= CARVE_LEGALIZE_INT64;
        else if (!strcmp(val, "uint8-cast"))
            cl->opts.disable_legalize |= CARVE_LEGALIZE_UINT8_CAST;
        else if (!strcmp(val, "slice-clamp"))
            cl->opts.disable_legalize |= CARVE_LEGALIZE_SLICE_CLAMP;
        else {
            cli_usage_error(cmd, "--no-legalize: '%s' is not int64, uint8-cast or slice-clamp", val);
            return -1;
        }
    } else if (!strcmp(a, "--no-fold")) {
        cl->opts.no_fold = true;
    } else if (!strcmp(a, "--no-recompose")) {
        cl->opts.no_recompose = true;
    } else if (!strcmp(a, "--no-upgrade")) {
        cl->opts.no_upgrade = true;
    } else if (!strcmp(a, "--allow-newer-opset")) {
        cl->opts.allow_newer_opset = true;
    } else if (!strcmp(a, "--fold-max-bytes")) {
        NEED("a size in bytes");
        if (!cli_parse_bytes(val, &cl->opts.fold_max_bytes)) {
            cli_usage_error(cmd, "--fold-max-bytes: '%s' is not a size in bytes", val);
            return -1;
        }
    } else {
        return 0;
    }
#undef NEED
    return 1;
}

bool cli_lower_check(const cli_lower *cl, const char *cmd, bool lists)
{
    if (!cl->target_name && !cl->n_target_files) {
        cli_usage_error(cmd, "give --target NAME or --target-file FILE");
        return false;
    }
    if (cl->target_name && !lists && strchr(cl->target_name, ',')) {
        cli_usage_error(cmd, "--target %s: one lowering takes one priority list: give several targets with '+' "
                             "(htp+gpu: each node on the first that takes it); 'carve check --target htp,gpu' "
                             "checks each target on its own", cl->target_name);
        return false;
    }
    return true;
}

carve_status cli_lower_protect(const cli_lower *cl, carve_outputs *o)
{
    carve_status s = CARVE_OK;
    for (size_t i = 0; i < cl->n_target_files && !s; i++)
        s = carve_outputs_protect(o, cl->target_files[i], "target profile");
    if (!s && cl->cpu_profile && strcmp(cl->cpu_profile, "core") && strcmp(cl->cpu_profile, "full"))
        s = carve_outputs_protect(o, cl->cpu_profile, "CPU profile");
    return s;
}

static void free_targets(cli_lower *cl)
{
    for (size_t i = 0; i < cl->n_targets; i++)
        carve_target_free(cl->targets[i]);
    cl->n_targets = 0;
    cl->target = NULL;
}

bool cli_lower_targets(cli_lower *cl, carve_ctx *ctx, const char *cmd, const char *group)
{
    free_targets(cl);
    size_t k = 0;
    char **names = NULL;
    if (group) {
        /* '+' separates the targets of one priority list */
        char *g = strdup(group);
        for (char *p = g; p && *p; p++)
            if (*p == '+')
                *p = ',';
        names = g ? cli_split_list(g, &k) : NULL;
        free(g);
        if (!names) {
            fprintf(stderr, "carve %s: out of memory\n", cmd);
            return false;
        }
    }
    bool ok = true;
    if (k + cl->n_target_files > CLI_MAX_TARGETS) {
        cli_usage_error(cmd, "at most %d targets in one priority list", CLI_MAX_TARGETS);
        ok = false;
    }
    for (size_t i = 0; ok && i < k + cl->n_target_files; i++) {
        carve_status s = i < k ? carve_target_builtin(ctx, names[i], &cl->targets[cl->n_targets])
                               : carve_target_load_file(ctx, cl->target_files[i - k], &cl->targets[cl->n_targets]);
        if (s) {
            fprintf(stderr, "carve %s: %s\n", cmd, carve_errmsg(ctx));
            ok = false;
        } else {
            cl->n_targets++;
        }
    }
    for (size_t i = 0; i < k; i++)
        free(names[i]);
    free(names);
    if (!ok)
        free_targets(cl);
    cl->target = cl->n_targets ? cl->targets[0] : NULL;
    return ok && cl->n_targets;
}

const char *cli_lower_name(const cli_lower *cl, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < cl->n_targets && n + 1 < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "+" : "", carve_target_name(cl->targets[i]));
    return buf;
}

bool cli_lower_setup(cli_lower *cl, carve_ctx *ctx, const char *cmd)
{
    if (!cli_lower_check(cl, cmd, true))
        return false;
    if (!cli_backends_load(ctx, &cl->backends, cmd))
        return false;
    /* the first priority list (check takes the others in turn) */
    char first[512] = "";
    if (cl->target_name) {
        snprintf(first, sizeof first, "%s", cl->target_name);
        char *comma = strchr(first, ',');
        if (comma)
            *comma = 0;
    }
    if (!cli_lower_targets(cl, ctx, cmd, cl->target_name ? first : NULL))
        return false;
    carve_status s = CARVE_OK;
    if (cl->cpu_profile) {
        if (!strcmp(cl->cpu_profile, "core"))
            s = carve_target_builtin(ctx, "cpu", &cl->cpu);
        else if (!strcmp(cl->cpu_profile, "full"))
            s = carve_target_builtin(ctx, "cpu_full", &cl->cpu);
        else
            s = carve_target_load_file(ctx, cl->cpu_profile, &cl->cpu);
        if (s) {
            fprintf(stderr, "carve %s: %s\n", cmd, carve_errmsg(ctx));
            return false;
        }
        cl->opts.cpu = cl->cpu;
    }
    cl->opts.cpu_nodes = (const char *const *)cl->cpu_nodes;
    cl->opts.n_cpu_nodes = cl->n_cpu_nodes;
    cl->opts.cpu_ops = (const char *const *)cl->cpu_ops;
    cl->opts.n_cpu_ops = cl->n_cpu_ops;
    cl->opts.skip_on = cl->skip_on;
    cl->opts.n_skip_on = cl->n_skip_on;
    return true;
}

bool cli_fix_dims(carve_ctx *ctx, carve_model *m, const cli_inputs *ci, const char *cmd)
{
    for (int k = 0; k < ci->n_dims; k++)
        if (carve_model_fix_dim(m, ci->dims[k].name, strtoll(ci->dims[k].value, NULL, 10))) { /* checked digits */
            fprintf(stderr, "carve %s: --dim %s=%s: %s\n", cmd, ci->dims[k].name, ci->dims[k].value, carve_errmsg(ctx));
            return false;
        }
    return true;
}

void cli_lower_free(cli_lower *cl)
{
    for (size_t i = 0; i < cl->n_cpu_nodes; i++)
        free(cl->cpu_nodes[i]);
    for (size_t i = 0; i < cl->n_cpu_ops; i++)
        free(cl->cpu_ops[i]);
    free(cl->cpu_nodes);
    free(cl->cpu_ops);
    for (size_t i = 0; i < cl->n_skip_strs; i++)
        free(cl->skip_strs[i]);
    free(cl->skip_strs);
    free(cl->skip_on);
    free_targets(cl);
    carve_target_free(cl->cpu);
}

const char *cli_lower_help =
    "  --target NAME           a built-in target: htp, gpu, lpai (cpu: everything on CPU);\n"
    "                          htp+gpu: several in priority order, each node on the first that\n"
    "                          takes it (docs/multi-target.md)\n"
    "  --target-file FILE      a target profile of your own (docs/targets.md); repeatable: the\n"
    "                          profiles follow the --target names in the priority list\n"
    "  --skip-on T:NODE,...    keep these nodes off target T (they may go to the next target)\n"
    "  --backend-lib PATH      load a backend from a shared object (docs/backends.md); a target\n"
    "                          named like it uses it, with the profile it brings (repeatable)\n"
    "  --cpu-profile P         the CPU fallback's ops: core (default), full, or a JSON profile\n"
    "  --cpu-nodes A,B,...     keep these nodes on CPU (names as in the input model;\n"
    "                          'carve inspect --nodes' lists them); their pieces stay on CPU too;\n"
    "                          @FILE reads the names from FILE, one a line (given twice: both)\n"
    "  --cpu-ops OP,OP,...     keep every node of these op types on CPU (given twice: both lists)\n"
    "  --dim NAME=VALUE        fix symbolic dim NAME (NPUs compile for static shapes; 0 to 2^40)\n"
    "  --min-partition-nodes N send partitions of fewer than N nodes to CPU (0 to 1000000)\n"
    "  --no-legalize WHAT      leave out a legalization (int64, uint8-cast, slice-clamp):\n"
    "                          for testing that it matters\n"
    "  --no-upgrade            skip the opset upgrade (docs/upgrade.md), which runs before folding\n"
    "  --no-fold               skip constant folding (docs/folding.md), which runs first\n"
    "  --no-recompose          keep decomposed LayerNormalization, Gelu and HardSwish patterns\n"
    "                          as they are (docs/recompose.md); folding recomposes them otherwise\n"
    "  --fold-max-bytes N      folding keeps an op whose result is over N bytes and over twice\n"
    "                          its constant inputs (default 1048576; k, M, G suffixes)\n"
    "  --allow-newer-opset     lower nodes of an opset newer than carve knows (ONNX 21) with\n"
    "                          the newest behaviour it knows, instead of refusing them\n";

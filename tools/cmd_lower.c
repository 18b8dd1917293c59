/* cmd_lower.c: `carve lower MODEL --target T -o OUT.onnx [--report R.json]`. */
#define _POSIX_C_SOURCE 200809L
#include "lower_opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; l && i < n; i++)
        free(l[i]);
    free(l);
}

/* "check, skip, ..., report": the stages --dump-after takes; for --help
 * (indent > 0) wrapped at 80 columns, lines after the first indented. */
static const char *stage_list(int indent)
{
    static char buf[512];
    size_t n = 0;
    int col = indent;
    for (size_t i = 0; carve_lower_stage_name(i) && n < sizeof buf; i++) {
        const char *s = carve_lower_stage_name(i);
        int len = (int)strlen(s);
        bool wrap = indent && col + len + 2 > 80;
        int k = snprintf(buf + n, sizeof buf - n, "%s%s%*s%s", i ? "," : "", wrap ? "\n" : i ? " " : "",
                         wrap ? indent : 0, "", s);
        n += k > 0 ? (size_t)k : 0;
        col = (wrap ? indent : col) + len + 2;
    }
    return buf;
}

static bool is_stage(const char *name)
{
    for (size_t i = 0; carve_lower_stage_name(i); i++)
        if (!strcmp(name, carve_lower_stage_name(i)))
            return true;
    return !strcmp(name, "all");
}

/* --dump-dir DIR: a folder carve can write in, made when it is missing. */
static bool dump_dir_ready(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0 && (errno != ENOENT || mkdir(dir, 0777) != 0 || stat(dir, &st) != 0)) {
        fprintf(stderr, "carve lower: --dump-dir %s: %s\n", dir, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "carve lower: --dump-dir %s: not a folder\n", dir);
        return false;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "carve lower: --dump-dir %s: cannot write in it: %s\n", dir, strerror(errno));
        return false;
    }
    return true;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: carve lower MODEL (--target T[+T...] | --target-file FILE...) -o OUT.onnx\n"
               "                   [--report REPORT.json] [--html MAP.html] [--export-partitions DIR] [options]\n\n"
               "Lowers MODEL for an accelerator: every node the target can take goes into as\n"
               "few delegate partitions as the graph allows, the target's rules are applied to\n"
               "the real partitions, and every other node stays on CPU (decomposed when the CPU\n"
               "profile lacks it). With several targets (htp+gpu) each node goes to the first that\n"
               "takes it, then the next, then the CPU. Writes the lowered ONNX model, where each partition is an\n"
               "ai.carve Delegate node carrying its subgraph, and says why each node went where.\n\n"
               "  -o, --output FILE        the lowered model ('-': standard output)\n"
               "  --report FILE            the JSON report (docs/report.md; '-': standard output)\n"
               "  --html FILE              the report's partition map, one HTML page (docs/map.md)\n"
               "  --export-partitions DIR  also write each partition as a standalone model, its\n"
               "                           AIMET encodings and DIR/manifest.json (docs/artifacts.md)\n"
               "  --strip-qdq              exported partitions without their Q/DQ pairs (float\n"
               "                           weights; the encodings file says how each was quantized)\n"
               "  --encodings-version V    AIMET encodings version: 1.0.0 (default) or 0.6.1\n"
               "  --external-data NAME     write tensors of 1 KiB and more to NAME beside the output\n"
               "  --threads N              threads of backends (default 1; one setting for the whole\n"
               "                           process, carve_set_threads); folding uses one\n"
               "  --dump-after STAGE,...   for debugging: the model's text dump after each named\n"
               "                           stage, to DIR/NN-STAGE.txt (NN: the stage's place;\n"
               "                           .rN: round N of the fixed point; docs/ARCHITECTURE.md,\n"
               "                           Lowering stages), STAGE one of, in order:\n"
               "                           %s; or all\n"
               "  --dump-dir DIR           where --dump-after writes (made if missing)\n"
               "%s\n"
               "Outputs are written together (docs/files.md): each to a temporary file that is\n"
               "renamed into place once all are written, so a failure replaces none of them.\n"
               "An output that is an input, another output, or an existing non-regular file\n"
               "(a device, FIFO, directory) is refused. A short summary goes to stderr.\n",
            stage_list(27), cli_lower_help);
}

int cmd_lower(int argc, char **argv)
{
    cli_lower cl = {0};
    cli_inputs ci = {0};
    const char *path = NULL, *out = NULL, *report = NULL, *export_dir = NULL, *ext = NULL, *html = NULL;
    const char *dump_dir = NULL;
    char **dump_after = NULL;
    size_t n_dump_after = 0;
    int rc = EXIT_OK;
    carve_export_opts xo = {false, CARVE_AIMET_1_0_0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            goto done;
        }
        int r = cli_lower_arg(&cl, "lower", argc, argv, &i);
        if (r == 0 && !strcmp(a, "--dim"))
            r = cli_inputs_arg(&ci, "lower", argc, argv, &i);
        if (r == 0)
            r = cli_threads_arg("lower", argc, argv, &i);
        if (r < 0) {
            rc = EXIT_USAGE;
            goto done;
        }
        if (r > 0)
            continue;
        bool has_val = i + 1 < argc;
        if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has_val)
            out = argv[++i];
        else if (!strcmp(a, "--report") && has_val)
            report = argv[++i];
        else if (!strcmp(a, "--html") && has_val)
            html = argv[++i];
        else if (!strcmp(a, "--export-partitions") && has_val)
            export_dir = argv[++i];
        else if (!strcmp(a, "--strip-qdq"))
            xo.strip_qdq = true;
        else if (!strcmp(a, "--encodings-version") && has_val) {
            const char *v = argv[++i];
            if (strcmp(v, "1.0.0") && strcmp(v, "0.6.1")) {
                rc = cli_usage_error("lower", "--encodings-version takes 1.0.0 or 0.6.1, not '%s'", v);
                goto done;
            }
            xo.encodings_version = strcmp(v, "0.6.1") ? CARVE_AIMET_1_0_0 : CARVE_AIMET_0_6_1;
        } else if (!strcmp(a, "--external-data") && has_val)
            ext = argv[++i];
        else if (!strcmp(a, "--dump-after") && has_val) {
            free_list(dump_after, n_dump_after);
            if (!(dump_after = cli_split_list(argv[++i], &n_dump_after))) {
                fprintf(stderr, "carve lower: out of memory\n");
                rc = EXIT_MODEL;
                goto done;
            }
            for (size_t k = 0; k < n_dump_after; k++)
                if (!is_stage(dump_after[k])) {
                    rc = cli_usage_error("lower", "--dump-after: lowering has no stage named '%s' (stages: %s; or all)",
                                         dump_after[k], stage_list(0));
                    goto done;
                }
            if (!n_dump_after) {
                rc = cli_usage_error("lower", "--dump-after names no stage (stages: %s; or all)", stage_list(0));
                goto done;
            }
        } else if (!strcmp(a, "--dump-dir") && has_val)
            dump_dir = argv[++i];
        else if (a[0] == '-' && a[1]) {
            rc = cli_usage_error("lower", has_val ? "unknown option '%s'" : "unknown option or missing value: '%s'", a);
            goto done;
        } else if (path) {
            rc = cli_usage_error("lower", "one model at a time ('%s' and '%s')", path, a);
            goto done;
        } else
            path = a;
    }
    if ((xo.strip_qdq || xo.encodings_version != CARVE_AIMET_1_0_0) && !export_dir) {
        rc = cli_usage_error("lower", "--strip-qdq and --encodings-version shape --export-partitions DIR, which is missing");
        goto done;
    }
    if (!dump_after != !dump_dir) {
        rc = cli_usage_error("lower", dump_after ? "--dump-after needs --dump-dir DIR (where the dumps go)"
                                                 : "--dump-dir is given without --dump-after STAGE[,STAGE]");
        goto done;
    }
    if (!path || !out) {
        rc = cli_usage_error("lower", !path ? "no model given" : "no output given (-o OUT.onnx)");
        goto done;
    }
    if (!cli_lower_check(&cl, "lower", false)) {
        rc = EXIT_USAGE;
        goto done;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    carve_report *rep = NULL;
    carve_outputs *o = NULL;
    char *page = NULL;
    size_t page_n = 0;
    bool made_dir = false;
    size_t n_parts = 0;
    rc = EXIT_MODEL;
    if (!cli_lower_setup(&cl, ctx, "lower") || !(m = cli_load(ctx, path)) || !cli_fix_dims(ctx, m, &ci, "lower"))
        goto free_all;
    if (dump_dir && !dump_dir_ready(dump_dir))
        goto free_all;
    cl.opts.dump_after = (const char *const *)dump_after;
    cl.opts.n_dump_after = n_dump_after;
    cl.opts.dump_dir = dump_dir;
    if (carve_lower_targets(m, (const carve_target *const *)cl.targets, cl.n_targets, &cl.opts, &rep) != CARVE_OK) {
        fprintf(stderr, "carve lower: %s\n", cli_errmsg(ctx));
        goto free_all;
    }
    /* every output in one set: written and synced, then renamed, or none */
    o = carve_outputs_new(ctx);
    carve_status s = carve_outputs_protect(o, path, "input model");
    if (!s)
        s = cli_lower_protect(&cl, o);
    if (!s && report)
        s = carve_outputs_add_report(o, rep, report); /* from the report's memory, no copy */
    if (!s && html) {
        const char *j = carve_report_json(rep);
        if (!(page = cli_map_page("lower", j, strlen(j), m, &page_n)))
            goto free_all;
        s = carve_outputs_add_bytes(o, html, "map", page, page_n);
    }
    if (!s && export_dir) {
        struct stat st;
        if (stat(export_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "carve lower: --export-partitions %s: not a folder\n", export_dir);
            goto free_all;
        }
        if (stat(export_dir, &st) != 0) {
            if (mkdir(export_dir, 0777) != 0) {
                fprintf(stderr, "carve lower: %s: %s\n", export_dir, strerror(errno));
                goto free_all;
            }
            made_dir = true;
        }
        s = carve_outputs_add_partitions_opts(o, m, export_dir, &xo, &n_parts);
    }
    /* the report is written (and the map made from it): its memory is the
     * model's to use while it is saved */
    carve_report_drop_json(rep);
    carve_save_opts so = {ext, 0};
    if (!s)
        s = carve_outputs_add_model(o, m, out, &so); /* last: renamed after the others */
    if (!s)
        s = carve_outputs_commit(o);
    if (s) {
        fprintf(stderr, "carve lower: %s\n", carve_errmsg(ctx));
        carve_outputs_free(o); /* removes the temporaries, so the folder is empty again */
        o = NULL;
        if (made_dir)
            rmdir(export_dir);
        goto free_all;
    }
    rc = EXIT_OK;
    if (export_dir)
        fprintf(stderr, "wrote %zu partition model%s to %s/\n", n_parts, n_parts == 1 ? "" : "s", export_dir);
    fputs(carve_report_summary(rep), stderr);
    /* the library says a dim is symbolic; the flag that fixes it is ours */
    if (strstr(carve_report_summary(rep), " dynamic_shape"))
        fputs("hint: --dim NAME=N gives a symbolic dim a value\n", stderr);
    fprintf(stderr, "lowered model: %s\n", strcmp(out, "-") ? out : "standard output");
    if (report)
        fprintf(stderr, "report: %s\n", strcmp(report, "-") ? report : "standard output");
    if (html)
        fprintf(stderr, "map: %s\n", strcmp(html, "-") ? html : "standard output");
free_all:
    carve_outputs_free(o);
    free(page);
    carve_report_free(rep);
    carve_model_free(m);
    carve_ctx_free(ctx);
done:
    free_list(dump_after, n_dump_after);
    cli_lower_free(&cl);
    cli_inputs_free(&ci);
    return rc;
}

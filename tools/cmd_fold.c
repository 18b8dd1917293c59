/* cmd_fold.c: `carve fold MODEL -o OUT [--fold-max-bytes N]`: constant
 * folding alone (what `carve lower` does first), written as an ONNX model. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: carve fold MODEL -o OUT.onnx [--fold-max-bytes N] [--recompose] [--no-upgrade]\n"
               "                  [--external-data NAME]\n\n"
               "Brings MODEL to carve's newest ai.onnx opset (docs/upgrade.md), then folds its\n"
               "constants: initializers, Constant nodes and everything computable from them alone\n"
               "(Shape and Size of static shapes included) become initializers, in If, Loop\n"
               "and Scan bodies too; an If with a constant condition is replaced by\n"
               "the branch it takes. BatchNormalization after Conv or Gemm goes into their\n"
               "weights, MatMul + Add of a constant becomes Gemm, layout ops after a quantized\n"
               "weight's DequantizeLinear are applied to the integer weight. Dead nodes and\n"
               "unused initializers go; equal constants are stored once. Random ops, sequences,\n"
               "dequantized weights, Loop and Scan, and results that would blow the model up\n"
               "stay ops. Nodes that survive keep their names (docs/folding.md).\n\n"
               "  -o, --output FILE        the folded model (never the input file)\n"
               "  --fold-max-bytes N       keep an op whose result is over N bytes and over twice its\n"
               "                           constant inputs (default 1048576; k, M, G suffixes)\n"
               "  --recompose              also make the patterns exporters write for LayerNormalization,\n"
               "                           Gelu and HardSwish those ops again (docs/recompose.md)\n"
               "  --no-upgrade             leave the model at its opset\n"
               "  --external-data NAME     write tensors of 1 KiB and more to NAME beside the output\n\n"
               "A summary goes to stderr.\n");
}

int cmd_fold(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *ext = NULL;
    carve_fold_opts fo = {0};
    bool no_upgrade = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return EXIT_OK;
        }
        if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--fold-max-bytes") && has_val) {
            if (!cli_parse_bytes(argv[++i], &fo.max_bytes))
                return cli_usage_error("fold", "--fold-max-bytes: '%s' is not a size in bytes", argv[i]);
        } else if (!strcmp(a, "--recompose")) {
            fo.recompose = true;
        } else if (!strcmp(a, "--no-upgrade")) {
            no_upgrade = true;
        } else if (!strcmp(a, "--external-data") && has_val) {
            ext = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("fold", has_val ? "unknown option '%s'" : "unknown option or missing value: '%s'",
                                   a);
        } else if (path) {
            return cli_usage_error("fold", "one model at a time ('%s' and '%s')", path, a);
        } else {
            path = a;
        }
    }
    if (!path || !out)
        return cli_usage_error("fold", !path ? "no model given" : "no output given (-o OUT.onnx)");
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    int rc = EXIT_MODEL;
    carve_fold_stats st;
    if (!(m = cli_load(ctx, path)))
        goto done;
    carve_upgrade_stats us;
    if (!no_upgrade && carve_upgrade(m, &us) != CARVE_OK) {
        fprintf(stderr, "carve fold: %s\n", carve_errmsg(ctx));
        goto done;
    }
    if (!no_upgrade && us.refused[0])
        fprintf(stderr, "not upgraded (opset %lld kept): %s\n", (long long)us.opset_before, us.refused);
    else if (!no_upgrade && us.opset_after != us.opset_before)
        fprintf(stderr, "upgraded: opset %lld -> %lld (%u nodes rewritten, %u made)\n", (long long)us.opset_before,
                (long long)us.opset_after, us.nodes_rewritten, us.nodes_added);
    if (carve_fold(m, &fo, &st) != CARVE_OK) {
        fprintf(stderr, "carve fold: %s\n", carve_errmsg(ctx));
        goto done;
    }
    carve_save_opts so = {ext, 0};
    if (carve_model_save_file(m, out, &so) != CARVE_OK) {
        fprintf(stderr, "carve fold: %s\n", carve_errmsg(ctx));
        goto done;
    }
    fprintf(stderr, "folded: %u -> %u nodes (%u folded, %u removed), constants %llu -> %llu bytes "
                    "(%llu added, %llu removed)\n",
            st.nodes_before, st.nodes_after, st.folded, st.removed, (unsigned long long)st.bytes_before,
            (unsigned long long)st.bytes_after, (unsigned long long)st.bytes_added,
            (unsigned long long)st.bytes_removed);
    if (st.if_inlined || st.layout_moved || st.bn_fused || st.gemm_fused || st.inits_deduped)
        fprintf(stderr, "  %u If inlined, %u layout ops moved onto quantized weights, %u BatchNormalization "
                        "fused, %u Gemm from MatMul + Add, %u initializers deduplicated\n",
                st.if_inlined, st.layout_moved, st.bn_fused, st.gemm_fused, st.inits_deduped);
    if (st.recomposed)
        fprintf(stderr, "  %u patterns recomposed into one op each\n", st.recomposed);
    for (int g = 0; g < CARVE_GUARD_COUNT; g++)
        if (st.refused[g])
            fprintf(stderr, "  not folded: %u %s\n", st.refused[g], carve_fold_guard_name((carve_fold_guard)g));
    fprintf(stderr, "folded model: %s\n", out);
    rc = EXIT_OK;
done:
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

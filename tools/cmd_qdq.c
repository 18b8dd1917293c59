/* cmd_qdq.c: `carve qdq MODEL --encodings FILE -o OUT.onnx`: an AIMET
 * encodings file applied to a float model as QuantizeLinear /
 * DequantizeLinear pairs (carve_apply_encodings). */
#include "cli.h"

#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: carve qdq MODEL --encodings FILE -o OUT.onnx\n\n"
               "Applies an AIMET encodings file (version 1.0.0 or 0.6.1) to a float model:\n"
               "param encodings store their initializer quantized and read it through a\n"
               "DequantizeLinear (per tensor, per channel on the axis the weight's reader\n"
               "implies, per block); activation encodings put a QuantizeLinear/DequantizeLinear\n"
               "pair after the tensor. The whole file is checked first: a name the model lacks,\n"
               "a bitwidth no ONNX type holds, an encoding the model's opset cannot express\n"
               "(4/16 bits and per block need opset 21) or a malformed file is an error and\n"
               "nothing is written (docs/artifacts.md).\n\n"
               "  --encodings FILE   the AIMET encodings (JSON)\n"
               "  -o, --output FILE  the quantized model (never the input file)\n");
}

int cmd_qdq(int argc, char **argv)
{
    const char *path = NULL, *enc = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return usage(stdout), EXIT_OK;
        if (!strcmp(a, "--encodings") && has_val)
            enc = argv[++i];
        else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has_val)
            out = argv[++i];
        else if (a[0] == '-' && a[1])
            return cli_usage_error("qdq", has_val ? "unknown option '%s'" : "unknown option or missing value: '%s'", a);
        else if (path)
            return cli_usage_error("qdq", "one model at a time ('%s' and '%s')", path, a);
        else
            path = a;
    }
    if (!path || !enc || !out)
        return cli_usage_error("qdq", !path ? "no model given" : !enc ? "no encodings given (--encodings FILE)"
                                                                       : "no output given (-o OUT.onnx)");
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = cli_load(ctx, path);
    int rc = m ? EXIT_OK : EXIT_MODEL;
    carve_qdq_stats st = {0};
    if (m && carve_apply_encodings_file(m, enc, &st) != CARVE_OK) {
        fprintf(stderr, "carve qdq: %s\n", carve_errmsg(ctx));
        rc = EXIT_MODEL;
    }
    /* the output through a set of one (docs/files.md): never onto the model or the encodings file */
    carve_outputs *o = rc == EXIT_OK ? carve_outputs_new(ctx) : NULL;
    if (o && (carve_outputs_protect(o, enc, "encodings file") != CARVE_OK ||
              carve_outputs_add_model(o, m, out, NULL) != CARVE_OK || carve_outputs_commit(o) != CARVE_OK)) {
        fprintf(stderr, "carve qdq: %s\n", carve_errmsg(ctx));
        rc = EXIT_MODEL;
    }
    carve_outputs_free(o);
    if (rc == EXIT_OK)
        fprintf(stderr, "applied %s: %u activation Q/DQ pairs, %u quantized weights, %u float16 casts, %u already "
                        "quantized\nquantized model: %s\n",
                enc, st.activations, st.params, st.casts, st.skipped, out);
    carve_model_free(m);
    carve_ctx_free(ctx);
    return rc;
}

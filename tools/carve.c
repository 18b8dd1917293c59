/* carve.c: the command-line tool's entry point and dispatch. */
#include "cli.h"

#include <string.h>

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"inspect", cmd_inspect, "show a model's inputs, outputs, opsets, ops and node names"},
    {"lower", cmd_lower, "lower a model for a target: delegate partitions, CPU fallback, report"},
    {"check", cmd_check, "lower, run both models on the same inputs and compare the outputs"},
    {"run", cmd_run, "run a model on carve's reference CPU kernels"},
    {"targets", cmd_targets, "list the built-in target profiles, their ops and rules"},
    {"report", cmd_report, "write a lowering report's partition map: one self-contained HTML page"},
    {"fold", cmd_fold, "fold constants and constant-only subgraphs, write the folded model"},
    {"qdq", cmd_qdq, "apply an AIMET encodings file to a float model as Q/DQ pairs"},
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
               "Exit status: 0 success, 1 a problem with the model or the request, 2 a usage error.\n");
}

int main(int argc, char **argv)
{
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

/* Fixture of tests/lint/op_lists.sh: what op_lists.py must refuse. */
#include <stdbool.h>
#include <string.h>

static bool layout(const char *op)
{
    return !strcmp(op, "Transpose") ||
           !strcmp(op, "Reshape");
}

static const char *const int64_ops[] = {"Shape", "Size", NULL};

/* a declared table is data: not reported */
/* op-list: data */
static const char *const declared[] = {"Relu", "Gelu", NULL};

/* one op, or strings that are not op names: not reported */
static bool one(const char *op, const char *mode)
{
    return !strcmp(op, "Cast") || !strcmp(mode, "constant") || !strcmp(mode, "reflect");
}

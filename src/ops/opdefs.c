/* opdefs.c: the op table expanded into an array, lookups, attribute readers
 * and kernel error reporting. */
#include "ops.h"

#include <string.h>

/* In the table, "d_none" marks an op without decomposition. */
#define d_none NULL
static const cv_op_def table[] = {
#define OP(name, dom, since, imin, imax, omin, omax, flags, shape_in, kernel, infer, decomp) \
    {#name, dom, since, imin, imax, omin, omax, flags, shape_in, kernel, infer, decomp},
#include "optable.def"
#undef OP
};
#undef d_none

size_t cv_op_count(void) { return sizeof table / sizeof *table; }
const cv_op_def *cv_op_at(size_t i) { return &table[i]; }

const cv_op_def *cv_op_find(const char *domain, const char *op, int64_t opset)
{
    if (!domain || !strcmp(domain, "ai.onnx"))
        domain = "";
    const cv_op_def *best = NULL;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const cv_op_def *d = &table[i];
        if (d->since <= opset && !strcmp(d->name, op) && !strcmp(d->domain, domain) &&
            (!best || d->since > best->since))
            best = d;
    }
    return best;
}

const cv_op_def *cv_op_for_node(const carve_model *m, carve_node_id n)
{
    const cv_node *nd = &m->nodes[n];
    int64_t opset = carve_model_opset(m, nd->domain);
    return cv_op_find(nd->domain, nd->op, opset);
}

/* ---------------------------------------------------------------- attributes */

int64_t cv_attr_i(const carve_model *m, carve_node_id n, const char *name, int64_t dflt)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_INT ? a->u.i : dflt;
}

float cv_attr_f(const carve_model *m, carve_node_id n, const char *name, float dflt)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_FLOAT ? a->u.f : dflt;
}

const char *cv_attr_s(const carve_model *m, carve_node_id n, const char *name, const char *dflt)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_STRING ? (const char *)a->u.s.p : dflt;
}

int cv_attr_ints(const carve_model *m, carve_node_id n, const char *name, const int64_t **v)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_INTS)
        return -1;
    *v = a->u.ints;
    return (int)a->n;
}

int cv_attr_floats(const carve_model *m, carve_node_id n, const char *name, const float **v)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_FLOATS)
        return -1;
    *v = a->u.floats;
    return (int)a->n;
}

const cv_tensor *cv_attr_t(const carve_model *m, carve_node_id n, const char *name)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_TENSOR ? a->u.t : NULL;
}

carve_graph_id cv_attr_g(const carve_model *m, carve_node_id n, const char *name)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_GRAPH ? a->u.g : CARVE_NONE;
}

/* ---------------------------------------------------------------- errors */

carve_status cv_kerr(cv_kctx *k, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const cv_node *n = &k->m->nodes[k->node];
    return cv_error(k->m->ctx, CARVE_ERR_INVALID, "node '%s' (%s): %s", n->name, n->op, msg);
}

carve_status cv_knomem(cv_kctx *k)
{
    const cv_node *n = &k->m->nodes[k->node];
    return cv_error(k->m->ctx, CARVE_ERR_NOMEM, "node '%s' (%s): out of memory (or a tensor above 16 GiB)",
                    n->name, n->op);
}

/* k_delegate.c: the ai.carve Delegate node's row of the op table. Its
 * kernel hands the node to the runtime that runs it (cv_runner.delegate:
 * src/runtime/delegate.c compiles the body through its backend and runs
 * it); its inference takes the body's output types. */
#include "ops.h"

carve_status k_delegate(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    if (!k->run || !k->run->delegate)
        return cv_kerr(k, "runs through a backend and needs the runtime (not a constant-folding context)");
    return k->run->delegate(k, in, n_in, out, n_out);
}

carve_status i_delegate(cv_ictx *c)
{
    const cv_node *n = &c->m->nodes[c->node];
    carve_graph_id body = cv_attr_g(c->m, c->node, "body");
    if (body == CARVE_NONE)
        return CARVE_OK;
    for (uint32_t i = 0; i < n->n_out && i < carve_graph_output_count(c->m, body); i++) {
        const cv_type *bt = &c->m->values[carve_graph_output(c->m, body, i)].type;
        if (bt->kind == CARVE_TYPE_TENSOR) {
            carve_status s = cv_infer_set(c, i, bt->dtype, bt->rank, bt->dims);
            if (s)
                return s;
        }
    }
    return CARVE_OK;
}

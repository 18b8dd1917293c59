/* todo_elementwise.c: placeholders for elementwise ops not written yet. Each one is
 * moved into its family file when implemented; this file goes when empty. */
#include "ops.h"

carve_status k_unary(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_clip(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_binary(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_variadic(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_cast(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_castlike(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_where(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status i_cast(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_castlike(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status d_elu(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_celu(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_selu(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_hardsigmoid(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_hardswish(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_gelu(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_prelu(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

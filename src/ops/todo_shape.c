/* todo_shape.c: placeholders for shape ops not written yet. Each one is
 * moved into its family file when implemented; this file goes when empty. */
#include "ops.h"

carve_status k_constant(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_identity(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_reshape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_flatten(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_squeeze(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_unsqueeze(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_transpose(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_concat(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_split(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_slice(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_expand(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_tile(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_pad(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_shape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_size(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_constantofshape(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_range(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_trilu(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_eyelike(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_onehot(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_depthtospace(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_spacetodepth(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_reversesequence(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_dropout(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_gather(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_gatherelements(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_gathernd(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_scatterelements(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_scatternd(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_nonzero(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_unique(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_compress(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status i_constant(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_reshape(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_flatten(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_squeeze(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_unsqueeze(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_transpose(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_concat(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_split(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_slice(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_expand(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_tile(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_pad(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_shape(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_size(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_constantofshape(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_range(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_eyelike(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_onehot(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_depthtospace(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_spacetodepth(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_dropout(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_gather(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_gatherelements(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_gathernd(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_nonzero(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_unique(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_compress(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status d_depthtospace(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

carve_status d_spacetodepth(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

/* todo_misc.c: placeholders for misc ops not written yet. Each one is
 * moved into its family file when implemented; this file goes when empty. */
#include "ops.h"

carve_status k_resize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_roialign(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_gridsample(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_nms(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_stringnormalizer(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_window(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_dft(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_stft(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_melweightmatrix(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status i_resize(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_roialign(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_gridsample(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_nms(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_stringnormalizer(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_window(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_dft(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_stft(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_melweightmatrix(cv_ictx *c) { (void)c; return CARVE_OK; }

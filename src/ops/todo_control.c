/* todo_control.c: placeholders for control ops not written yet. Each one is
 * moved into its family file when implemented; this file goes when empty. */
#include "ops.h"

carve_status k_if(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_loop(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_scan(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_lstm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_gru(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_rnn(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqconstruct(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqempty(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqat(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqinsert(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqerase(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqlength(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_splittoseq(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_concatfromseq(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_seqmap(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_optional(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_optionalhas(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_optionalget(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_random(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_bernoulli(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_multinomial(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status i_if(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_loop(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_scan(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_rnn(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_seqat(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_seqlength(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_concatfromseq(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_optionalhas(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_optionalget(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_random(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_randomlike(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_multinomial(cv_ictx *c) { (void)c; return CARVE_OK; }

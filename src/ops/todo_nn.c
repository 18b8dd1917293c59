/* todo_nn.c: placeholders for nn ops not written yet. Each one is
 * moved into its family file when implemented; this file goes when empty. */
#include "ops.h"

carve_status k_conv(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_convtranspose(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_convinteger(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_qlinearconv(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_matmul(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_matmulinteger(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_qlinearmatmul(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_gemm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_einsum(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_det(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_maxpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_avgpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_lppool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_globalpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_maxunpool(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_quantize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_dequantize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status k_dynquantize(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return cv_error(k->m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s): no kernel yet", k->m->nodes[k->node].name, k->m->nodes[k->node].op);
}

carve_status i_conv(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_convtranspose(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_convinteger(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_qlinearconv(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_matmul(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_matmulinteger(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_qlinearmatmul(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_gemm(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_einsum(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_det(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_pool(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_globalpool(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_maxunpool(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_quantize(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_dequantize(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status i_dynquantize(cv_ictx *c) { (void)c; return CARVE_OK; }

carve_status d_gemm(cv_rw *rw) { (void)rw; return CARVE_ERR_UNSUPPORTED; }

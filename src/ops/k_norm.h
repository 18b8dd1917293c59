/* k_norm.h: what the normalizations' kernels (k_norm.c) and their
 * decompositions (d_norm.c) share. Internal to src/ops/. */
#ifndef CARVE_K_NORM_H
#define CARVE_K_NORM_H

#include "k_reduce.h"

/* The float types the normalizations take. */
static inline bool norm_is_float(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

/* LayerNormalization's Mean and InvStdDev take stash_type (float32 unless
 * set). */
static inline carve_dtype norm_stash_type(const carve_model *m, carve_node_id n)
{
    int64_t t = cv_attr_i(m, n, "stash_type", CARVE_FLOAT);
    return t == CARVE_DOUBLE || t == CARVE_BFLOAT16 || t == CARVE_FLOAT16 ? (carve_dtype)t : CARVE_FLOAT;
}

#endif /* CARVE_K_NORM_H */

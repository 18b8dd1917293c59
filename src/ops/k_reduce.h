/* k_reduce.h: helpers shared by the reduce family's files (k_reduce.c,
 * k_topk.c, k_softmax.c, k_cumsum.c, k_norm.c and their decompositions):
 * float16/bfloat16 staging through float32 (axes and spans are k_shape.h's
 * sh_axis and sh_span), dtype classes, and the decomposition pieces
 * (d_pieces.c) that follow the model's opset (Reduce* axes and
 * Unsqueeze axes moved from attribute to input over the versions). */
#ifndef CARVE_K_REDUCE_H
#define CARVE_K_REDUCE_H

#include "k_shape.h"
#include "ops.h"

/* A float32 copy of a float16/bfloat16/float32 tensor with tight loops
 * (other dtypes go through cv_val_to_f32), and the way back with round to
 * nearest even. NULL on NOMEM. */
cv_val *rd_to_f32(const cv_val *v);
cv_val *rd_from_f32(const cv_val *f, carve_dtype dtype);

/* The float types with the usual arithmetic (float32/64, float16,
 * bfloat16), and the 8- to 64-bit integers. */
static inline bool rd_is_std_float(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

static inline bool rd_is_std_int(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_INT16: case CARVE_INT32: case CARVE_INT64:
    case CARVE_UINT8: case CARVE_UINT16: case CARVE_UINT32: case CARVE_UINT64:
        return true;
    default: return false;
    }
}

/* Sign- or zero-extends any integer/bool tensor into int64 (uint64 keeps its
 * bits). The caller frees the result unless it is v's own data; NULL on
 * NOMEM. */
int64_t *rd_ints_of(const cv_val *v, bool *owned);

/* Decomposition pieces with one output. Any input CARVE_NONE (an earlier
 * piece failed) makes them return CARVE_NONE without adding anything, so a
 * decomposition checks only its last values. out == CARVE_NONE makes a fresh
 * value. */
carve_value_id rd_unary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id out);
carve_value_id rd_binary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id b, carve_value_id out);
/* Reduce* with keepdims=1 over axes, as attribute or input as the opset
 * wants (ReduceSum: input from 13; the others: from 18). */
carve_value_id rd_reduce(cv_rw *rw, const char *op, carve_value_id x, size_t n_axes, const int64_t *axes,
                         carve_value_id out);
/* Unsqueeze (axes attribute before 13, input after). */
carve_value_id rd_unsqueeze(cv_rw *rw, carve_value_id x, size_t n_axes, const int64_t *axes);
carve_value_id rd_reshape(cv_rw *rw, carve_value_id x, carve_value_id shape, carve_value_id out);
carve_value_id rd_cast(cv_rw *rw, carve_value_id x, carve_dtype to, carve_value_id out);
/* Status to return when a value built with the helpers above is CARVE_NONE. */
carve_status rd_failed(cv_rw *rw);
/* Reports an unsupported node in a decomposition. */
#define rd_unsupported(rw, ...) \
    cv_node_err((rw)->m, (rw)->node, CARVE_ERR_UNSUPPORTED, "cannot decompose: ", __VA_ARGS__)

#endif /* CARVE_K_REDUCE_H */

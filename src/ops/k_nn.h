/* k_nn.h: helpers shared by the nn family's kernel files (k_conv*.c,
 * k_pool.c, k_matmul.c, k_einsum.c, k_qlinear.c, k_quant.c, d_nn.c):
 * float32 working copies, exact integer decoding, the quantized store every
 * Q* op ends with, and small dtype and inference helpers (defined in
 * k_quant.c or inline here). Internal to src/ops/. The conv files share
 * k_conv.h, the matrix products k_matmul.h. */
#ifndef CARVE_K_NN_H
#define CARVE_K_NN_H

#include "ops.h"

#include <math.h>

/* A float32 version of v: a new reference to v itself when it is float32
 * already, else a converted copy (float16/bfloat16 widened exactly). NULL on
 * NOMEM. */
cv_val *nn_f32(cv_val *v);
/* Turns the float32 result f into dtype, consuming f (round to nearest even
 * for float16/bfloat16). NULL on NOMEM. */
cv_val *nn_f32_to(cv_val *f, carve_dtype dtype);

/* Every element of v as a double (exact for integers up to 2^53 and for
 * float8/float16), from cv_scratch_alloc: free with cv_scratch_free, never
 * cv_free. NULL on NOMEM. */
double *nn_decode(const cv_val *v);

/* Range of an integer quantized type (int4..int16, uint4..uint16, int32);
 * false for any other type. */
bool nn_qrange(carve_dtype t, int32_t *lo, int32_t *hi);
/* rint(r) (half to even) + zp, saturated to [lo, hi]. NaN gives lo, as
 * onnxruntime's x86-64 vector path does. */
int32_t nn_qround(double r, int32_t zp, int32_t lo, int32_t hi);
/* Stores q[0..y->nelem) (already in y's range) into the integer tensor y;
 * 4-bit types are packed two per byte, low nibble first. */
void nn_qstore(cv_val *y, const int32_t *q);
/* The requantization QLinearConv and QLinearMatMul end with: y[i] =
 * saturate(rint(r[i]) + zp) for integer y, float8(r[i] + zp) (saturating)
 * for float8 y. zp is a one-element tensor of y's dtype or NULL (zero).
 * false on NOMEM. */
bool nn_requant(cv_val *y, const double *r, const cv_val *zp);


/* int8 or uint8: the types of the integer products' operands. */
static inline bool nn_is_q8(carve_dtype t) { return t == CARVE_INT8 || t == CARVE_UINT8; }

/* x is an integer a double holds exactly enough to use as int64 (Gemm's
 * alpha and beta on integer inputs). */
static inline bool nn_is_int_valued(double x) { return x == floor(x) && fabs(x) < 9.0e18; }

/* Inference: input i's type when it is a tensor of known rank, else NULL;
 * its dtype when it is a tensor, else CARVE_UNDEFINED; a known dim. */
static inline const cv_type *nn_tensor_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

static inline carve_dtype nn_dtype_in(cv_ictx *c, uint32_t i)
{
    const cv_type *t = cv_infer_in(c, i);
    return t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
}

static inline carve_dim nn_known(int64_t v) { return (carve_dim){v, NULL}; }

#endif /* CARVE_K_NN_H */

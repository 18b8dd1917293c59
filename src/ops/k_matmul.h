/* k_matmul.h: what the matrix-product files share (k_matmul.c,
 * k_einsum.c, k_qlinear.c): the working representations a product computes
 * in, one GEMM, numpy's batched matmul and its shapes. Internal to
 * src/ops/. */
#ifndef CARVE_K_MATMUL_H
#define CARVE_K_MATMUL_H

#include "k_nn.h"

/* What a product computes in: float32 (float, float16, bfloat16), double,
 * or 64-bit wrapping integers (every integer type). */
typedef enum { W_F32, W_F64, W_INT } wkind;

static inline wkind mm_wkind_of(carve_dtype t)
{
    if (t == CARVE_DOUBLE)
        return W_F64;
    return cv_dtype_is_int(t) ? W_INT : W_F32;
}

static inline size_t mm_wsize(wkind k) { return k == W_F32 ? 4 : 8; }

/* v's elements in the working representation: v's own data when it is
 * native (*owned false), else a converted cv_malloc'd copy. NULL on NOMEM. */
void *mm_load(const cv_val *v, wkind k, bool *owned);
/* Writes working values w into y (of y's dtype). */
void mm_store(cv_val *y, const void *w, wkind k);

/* C = alpha * op(A) op(B) + beta * C on one row-major matrix. W_INT takes
 * alpha 1 and beta 0 or 1 only. false when a size exceeds BLAS's int. */
bool mm_gemm1(wkind k, bool ta, bool tb, size_t M, size_t N, size_t K, double alpha, const void *A, size_t lda,
              const void *B, size_t ldb, double beta, void *C, size_t ldc);
/* numpy matmul over batches: C[b] = A[b] x B[b] for every index b of the
 * broadcast batch shape cb (rank rc); A is [abat (rank ra)..., M, K], B is
 * [bbat (rank rb)..., K, N], C is [cb..., M, N]. */
bool mm_batched(wkind k, const void *A, int ra, const int64_t *abat, const void *B, int rb, const int64_t *bbat,
                int rc, const int64_t *cb, size_t M, size_t N, size_t K, void *C);

/* The shapes of a numpy matmul. */
typedef struct {
    int ra, rb, rc;             /* batch ranks of A, B and the output */
    int64_t cb[CARVE_MAX_RANK]; /* broadcast batch dims */
    size_t M, N, K;
    int orank;
    int64_t odims[CARVE_MAX_RANK];
} mmshape;

/* Shapes of a numpy matmul of a and b (names for messages). */
carve_status mm_shape(cv_kctx *k, const cv_val *a, const cv_val *b, const char *an, const char *bn, mmshape *s);

#endif /* CARVE_K_MATMUL_H */

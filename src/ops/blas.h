/* blas.h: the GEMMs the kernels use, through OpenBLAS loaded on first use.
 *
 * OpenBLAS starts its thread pool when it is loaded, sized by
 * OPENBLAS_NUM_THREADS or the number of cores, and the pool's threads spin
 * in sched_yield for a while after starting and after every threaded call.
 * carve therefore loads it only when a kernel first needs a GEMM (lowering
 * a model without MatMul folding never loads it), with
 * OPENBLAS_NUM_THREADS=1 so that no pool thread starts, and then sets the
 * thread count the caller asked for with openblas_set_num_threads: the
 * runtime asks for carve_get_threads(), constant folding for one. If
 * OpenBLAS cannot be loaded, a plain C GEMM computes the same products
 * (more slowly). cblas.h is used for its enums only. */
#ifndef CARVE_BLAS_H
#define CARVE_BLAS_H

#include <cblas.h>
#include <stdbool.h>

void cv_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
              float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void cv_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K,
              double alpha, const double *A, int lda, const double *B, int ldb, double beta, double *C, int ldc);

/* The thread count of the following GEMMs (process-wide, as OpenBLAS's
 * setting is): the runtime sets carve_get_threads() when a run starts,
 * folding sets 1. Applied to OpenBLAS at the next GEMM. */
void cv_blas_threads(int n);
/* Loads OpenBLAS now (as the first GEMM would), for a caller that times
 * runs and wants the load outside them (`carve run --repeat`). */
void cv_blas_preload(void);
/* Whether OpenBLAS is loaded (tests: lowering without GEMMs never loads
 * it). */
bool cv_blas_loaded(void);

#endif

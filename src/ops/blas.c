/* blas.c: OpenBLAS loaded on first use, with no thread pool (blas.h). */
#define _GNU_SOURCE
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifndef CARVE_OPENBLAS_SONAME
#define CARVE_OPENBLAS_SONAME "libopenblas.so.0"
#endif

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int, float,
                         const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int, double,
                         const double *, int, const double *, int, double, double *, int);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sgemm_fn p_sgemm;
static dgemm_fn p_dgemm;
static void (*p_set_threads)(int);
static _Atomic int want = 1, applied = 1;

/* dlsym's object pointer into a function pointer (POSIX allows it, ISO C
 * has no cast for it). */
static void sym(void *h, const char *name, void *fn, size_t size)
{
    void *p = dlsym(h, name);
    if (p)
        memcpy(fn, &p, size);
}

/* OpenBLAS reads OPENBLAS_NUM_THREADS while it loads: 1 starts no pool
 * thread; the user's value comes back afterwards. */
static void load(void)
{
    const char *old = getenv("OPENBLAS_NUM_THREADS");
    char *saved = old ? strdup(old) : NULL;
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    void *h = dlopen(CARVE_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    if (saved)
        setenv("OPENBLAS_NUM_THREADS", saved, 1);
    else
        unsetenv("OPENBLAS_NUM_THREADS");
    free(saved);
    if (!h)
        return;
    sgemm_fn s = NULL;
    dgemm_fn d = NULL;
    sym(h, "cblas_sgemm", &s, sizeof s);
    sym(h, "cblas_dgemm", &d, sizeof d);
    if (!s || !d)
        return;
    sym(h, "openblas_set_num_threads", &p_set_threads, sizeof p_set_threads);
    p_sgemm = s;
    p_dgemm = d;
}

void cv_blas_threads(int n) { want = n < 1 ? 1 : n; }

bool cv_blas_loaded(void) { return p_sgemm != NULL; }

void cv_blas_preload(void) { pthread_once(&once, load); }

static bool ready(void)
{
    pthread_once(&once, load);
    int w = want;
    if (p_set_threads && atomic_exchange(&applied, w) != w)
        p_set_threads(w);
    return p_sgemm != NULL;
}

/* The fallback: C = alpha op(A) op(B) + beta C, row- or column-major, in
 * the order of a reference BLAS (beta first, then rank-1 updates over k). */
#define REF_GEMM(NAME, T)                                                                                         \
    static void NAME(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N,     \
                     int K, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C, int ldc)            \
    {                                                                                                             \
        bool row = order == CblasRowMajor, at = ta != CblasNoTrans, bt = tb != CblasNoTrans;                     \
        for (int i = 0; i < M; i++)                                                                               \
            for (int j = 0; j < N; j++) {                                                                         \
                T *c = row ? &C[(size_t)i * ldc + j] : &C[(size_t)j * ldc + i];                                   \
                T acc = 0;                                                                                        \
                for (int k = 0; k < K; k++) {                                                                     \
                    /* element (i,k) of op(A) and (k,j) of op(B) */                                               \
                    size_t ai = row != at ? (size_t)i * lda + k : (size_t)k * lda + i;                           \
                    size_t bi = row != bt ? (size_t)k * ldb + j : (size_t)j * ldb + k;                           \
                    acc += A[ai] * B[bi];                                                                         \
                }                                                                                                 \
                *c = alpha * acc + (beta == 0 ? 0 : beta * *c);                                                   \
            }                                                                                                     \
    }
REF_GEMM(ref_sgemm, float)
REF_GEMM(ref_dgemm, double)

/* cv_sgemm and cv_dgemm: OpenBLAS when it loaded, else the reference loop. */
#define DEF_GEMM(NAME, T, BLAS, REF)                                                                           \
    void NAME(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M, int N, int K, \
              T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C, int ldc)                      \
    {                                                                                                         \
        if (ready())                                                                                          \
            BLAS(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                                \
        else                                                                                                  \
            REF(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);                                 \
    }
DEF_GEMM(cv_sgemm, float, p_sgemm, ref_sgemm)
DEF_GEMM(cv_dgemm, double, p_dgemm, ref_dgemm)
#undef DEF_GEMM

/* k_cumsum.c: CumSum (exclusive, reverse) along one axis. */
#include "k_reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width; the row loops here are hot in real models. Without
 * trapping math it may also if-convert the clamps in front of arithmetic
 * (carve never reads floating-point exception flags). */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif

/* ================================================================ CumSum */

#define CUMSUM_IMPL(NAME, T, A, TO_A, FROM_A)                                                    \
    static void NAME(const T *x, T *y, size_t outer, size_t n, size_t inner, bool excl, bool rev, \
                     A *run)                                                                     \
    {                                                                                            \
        for (size_t o = 0; o < outer; o++) {                                                     \
            for (size_t j = 0; j < inner; j++)                                                   \
                run[j] = 0;                                                                      \
            for (size_t s = 0; s < n; s++) {                                                     \
                size_t i = rev ? n - 1 - s : s;                                                  \
                const T *xr = x + (o * n + i) * inner;                                           \
                T *yr = y + (o * n + i) * inner;                                                 \
                if (excl)                                                                        \
                    for (size_t j = 0; j < inner; j++) {                                         \
                        yr[j] = FROM_A(run[j]);                                                  \
                        run[j] += TO_A(xr[j]);                                                   \
                    }                                                                            \
                else                                                                             \
                    for (size_t j = 0; j < inner; j++) {                                         \
                        run[j] += TO_A(xr[j]);                                                   \
                        yr[j] = FROM_A(run[j]);                                                  \
                    }                                                                            \
            }                                                                                    \
        }                                                                                        \
    }

#define TO_D(v) ((double)(v))
#define TO_U(v) ((uint64_t)(v))
#define TO_UI32(v) ((uint64_t)(int64_t)(v))
CUMSUM_IMPL(cumsum_f32, float, double, TO_D, (float))
CUMSUM_IMPL(cumsum_f64, double, double, TO_D, (double))
CUMSUM_IMPL(cumsum_i32, int32_t, uint64_t, TO_UI32, (int32_t)(uint32_t))
CUMSUM_IMPL(cumsum_u32, uint32_t, uint64_t, TO_U, (uint32_t))
CUMSUM_IMPL(cumsum_u64, uint64_t, uint64_t, TO_U, (uint64_t))

carve_status k_cumsum(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0], *av = in[1];
    carve_dtype dt = x->dtype;
    if (x->kind != CV_VAL_TENSOR || !(rd_is_std_float(dt) || dt == CARVE_INT32 || dt == CARVE_INT64 ||
                                      dt == CARVE_UINT32 || dt == CARVE_UINT64))
        return cv_kerr(k, "input 0 'x' has type %s, which CumSum does not take", carve_dtype_name(dt));
    if (av->kind != CV_VAL_TENSOR || (av->dtype != CARVE_INT32 && av->dtype != CARVE_INT64) || av->rank > 1 ||
        av->nelem != 1)
        return cv_kerr(k, "input 1 'axis' must be an int32/int64 scalar (or 1-element tensor)");
    int64_t axis = cv_val_get_i64(av, 0);
    int a = sh_axis(axis, x->rank);
    if (a < 0)
        return cv_kerr(k, "input 1 'axis' is %lld, out of range for input rank %d", (long long)axis, x->rank);
    bool excl = cv_attr_i(k->m, k->node, "exclusive", 0) != 0;
    bool rev = cv_attr_i(k->m, k->node, "reverse", 0) != 0;
    size_t outer = sh_span(x->dims, 0, a), n = (size_t)x->dims[a], inner = sh_span(x->dims, a + 1, x->rank);
    cv_val *y = cv_val_like(x), *xf = NULL, *yf = NULL;
    void *run = cv_malloc(inner * 8 + 8);
    if (!y || !run)
        goto nomem;
    switch (dt) {
    case CARVE_FLOAT: cumsum_f32(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_DOUBLE: cumsum_f64(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_INT32: cumsum_i32(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_UINT32: cumsum_u32(x->data, y->data, outer, n, inner, excl, rev, run); break;
    case CARVE_INT64: case CARVE_UINT64:
        /* int64 through its uint64 bits: wrapping without signed overflow */
        cumsum_u64(x->data, y->data, outer, n, inner, excl, rev, run);
        break;
    default:
        if (!(xf = rd_to_f32(x)) || !(yf = cv_val_like(xf)))
            goto nomem;
        cumsum_f32(xf->data, yf->data, outer, n, inner, excl, rev, run);
        cv_val_unref(y);
        if (!(y = rd_from_f32(yf, dt)))
            goto nomem;
        break;
    }
    cv_val_unref(xf);
    cv_val_unref(yf);
    cv_free(run);
    out[0] = y;
    return CARVE_OK;
nomem:
    cv_val_unref(xf);
    cv_val_unref(yf);
    cv_val_unref(y);
    cv_free(run);
    return cv_knomem(k);
}

/* k_binary.c: the element-wise kernels over several inputs: the binary
 * arithmetic, logic, comparison and bitwise ops with numpy broadcasting
 * (and the `broadcast`/`axis` attributes before opset 7), Pow, PRelu, the
 * variadic Max/Min/Sum/Mean, and Where. Their inference, the unary kernels
 * and Clip are in k_elementwise.c, whose head says how numbers are
 * treated.
 *
 * The hot path is contiguous float32: a broadcast is planned once (dims of
 * size 1 dropped, dims that stay contiguous for every input merged) and the
 * inner loops only see strides 0 or 1, with same-shape and scalar cases as
 * plain loops the compiler vectorizes. */
#include "k_elementwise.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#if defined(__GNUC__) && !defined(__clang__)
/* GCC 12 at -O2 vectorizes only loops whose trip count is a known multiple
 * of the vector width ("very cheap" cost model); the float loops here are
 * the hot path of real models. */
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* ================================================================ broadcasting */

/* A broadcast of up to three inputs to the output shape: size-1 dims
 * dropped, dims merged while every input stays contiguous across them. The
 * innermost stride of every input is then 0 or 1. */
typedef struct {
    int rank, nin;
    int64_t dims[CARVE_MAX_RANK];
    int64_t st[3][CARVE_MAX_RANK];
} bplan;

static void bplan_init(bplan *p, int nin, const cv_val *const *in, int orank, const int64_t *odims)
{
    int64_t st[3][CARVE_MAX_RANK];
    p->nin = nin;
    p->rank = 0;
    for (int k = 0; k < nin; k++)
        cv_bcast_strides(in[k]->rank, in[k]->dims, orank, odims, st[k]);
    for (int d = 0; d < orank; d++) {
        if (odims[d] == 1)
            continue;
        if (p->rank > 0) {
            int r = p->rank - 1;
            bool merge = true;
            for (int k = 0; k < nin; k++)
                merge = merge && p->st[k][r] == st[k][d] * odims[d];
            if (merge) {
                p->dims[r] *= odims[d];
                for (int k = 0; k < nin; k++)
                    p->st[k][r] = st[k][d];
                continue;
            }
        }
        p->dims[p->rank] = odims[d];
        for (int k = 0; k < nin; k++)
            p->st[k][p->rank] = st[k][d];
        p->rank++;
    }
    if (!p->rank) { /* one element */
        p->rank = 1;
        p->dims[0] = 1;
        for (int k = 0; k < nin; k++)
            p->st[k][0] = 0;
    }
}

/* Calls fn once per innermost run: off[k] is input k's element offset,
 * yo the output's, n the run length, s[k] input k's stride (0 or 1). */
typedef void (*brun_fn)(void *ctx, const size_t *off, size_t yo, size_t n, const int *s);

static void bplan_each(const bplan *p, brun_fn fn, void *ctx)
{
    int r = p->rank;
    size_t inner = (size_t)p->dims[r - 1], total = 1;
    for (int d = 0; d < r; d++)
        total *= (size_t)p->dims[d];
    int s[3] = {0, 0, 0};
    for (int k = 0; k < p->nin; k++)
        s[k] = (int)p->st[k][r - 1];
    int64_t idx[CARVE_MAX_RANK] = {0};
    size_t off[3] = {0, 0, 0};
    for (size_t yo = 0; yo < total; yo += inner) {
        fn(ctx, off, yo, inner, s);
        for (int d = r - 2; d >= 0; d--) {
            for (int k = 0; k < p->nin; k++)
                off[k] += (size_t)p->st[k][d];
            if (++idx[d] < p->dims[d])
                break;
            for (int k = 0; k < p->nin; k++)
                off[k] -= (size_t)(p->st[k][d] * p->dims[d]);
            idx[d] = 0;
        }
    }
}

/* The broadcast shape of n tensors, or an error naming them. */
static carve_status bshape(cv_kctx *k, int n, const cv_val *const *in, const uint32_t *idx, int *rank, int64_t *dims)
{
    *rank = in[0]->rank;
    memcpy(dims, in[0]->dims, sizeof(int64_t) * (size_t)in[0]->rank);
    for (int i = 1; i < n; i++) {
        int64_t nd[CARVE_MAX_RANK];
        int nr;
        if (!cv_broadcast_shape(*rank, dims, in[i]->rank, in[i]->dims, &nr, nd)) {
            char a[200], b[200];
            cv_shape_str(a, sizeof a, *rank, dims);
            cv_shape_str(b, sizeof b, in[i]->rank, in[i]->dims);
            return cv_kerr(k, "input %u '%s' of shape %s does not broadcast with shape %s", idx[i],
                           cv_ew_in_name(k, idx[i]), b, a);
        }
        *rank = nr;
        memcpy(dims, nd, sizeof(int64_t) * (size_t)nr);
    }
    return CARVE_OK;
}

/* A new output of dtype in the broadcast shape of n inputs (or an error
 * naming them), left uninitialized: bcast_each's runs cover every element
 * once, so fn must store each (or dtype must start zeroed by itself). */
static carve_status bcast_new(cv_kctx *k, int n, const cv_val *const *in, const uint32_t *idx, carve_dtype dtype,
                              cv_val **y)
{
    int rank;
    int64_t dims[CARVE_MAX_RANK];
    carve_status s = bshape(k, n, in, idx, &rank, dims);
    if (s)
        return s;
    *y = cv_val_new_uninit(dtype, rank, dims);
    return *y ? CARVE_OK : cv_knomem(k);
}

/* Calls fn over the runs of y's broadcast of the n inputs (none when y is
 * empty). */
static void bcast_each(int n, const cv_val *const *in, const cv_val *y, brun_fn fn, void *ctx)
{
    if (!y->nelem)
        return;
    bplan p;
    bplan_init(&p, n, in, y->rank, y->dims);
    bplan_each(&p, fn, ctx);
}

/* ================================================================ binary */

/* The innermost loop over a run, specialised on the input strides so the
 * same-shape and scalar cases are plain vectorizable loops. */
#define EACH(T, Y, E, UI, VI)          \
    for (size_t i = 0; i < n; i++) {   \
        const T u = (UI), v = (VI);    \
        Y[i] = (E);                    \
    }
#define LOOP3(T, Y, E)                           \
    if (sa && sb) {                              \
        EACH(T, Y, E, a[i], b[i])                \
    } else if (sb) {                             \
        const T u0 = a[0];                       \
        EACH(T, Y, E, u0, b[i])                  \
    } else if (sa) {                             \
        const T v0 = b[0];                       \
        EACH(T, Y, E, a[i], v0)                  \
    } else {                                     \
        const T u0 = a[0], v0 = b[0];            \
        EACH(T, Y, E, u0, v0)                    \
    }

/* Float binary ops (u: A's element, v: B's). Max/Min propagate NaN. */
#define FLOAT_BIN_OPS(X)                          \
    X(B_ADD, u + v)                               \
    X(B_SUB, u - v)                               \
    X(B_MUL, u * v)                               \
    X(B_DIV, u / v)                               \
    X(B_POW, pow(u, v))                           \
    X(B_FMOD, fmod(u, v))                         \
    X(B_MAX, (u != u || u >= v) ? u : v)          \
    X(B_MIN, (u != u || u <= v) ? u : v)          \
    X(B_PRELU, u < 0 ? v * u : u)

#define CMP_OPS(X)        \
    X(B_EQ, u == v)       \
    X(B_GT, u > v)        \
    X(B_GE, u >= v)       \
    X(B_LT, u < v)        \
    X(B_LE, u <= v)

#define ARITH_CASE(OP, E) \
    case OP: LOOP3(T, y, (T)(E)) break;
#define CMP_CASE(OP, E) \
    case OP: LOOP3(T, q, (uint8_t)(E)) break;

/* bin_f32, bin_f64 and the integer bin_*: one body per element type TT
 * over its op list OPS; DECLS are the integer types' UT and SIGNED (none
 * for floats). */
#define DEF_BIN(NAME, TT, OPS, DECLS)                                                                      \
    static void NAME(ew_op op, const TT *restrict a, int sa, const TT *restrict b, int sb, void *restrict yv, \
                     size_t n)                                                                              \
    {                                                                                                       \
        typedef TT T;                                                                                       \
        DECLS                                                                                               \
        T *restrict y = yv;                                                                                 \
        uint8_t *restrict q = yv;                                                                           \
        switch (op) {                                                                                       \
            OPS(ARITH_CASE)                                                                                 \
            CMP_OPS(CMP_CASE)                                                                               \
        default: break;                                                                                     \
        }                                                                                                   \
    }

DEF_BIN(bin_f32, float, FLOAT_BIN_OPS, )
DEF_BIN(bin_f64, double, FLOAT_BIN_OPS, )

/* Integer ops: arithmetic through the unsigned type UT (wraps, no signed
 * overflow); divisors are checked for zero beforehand. */
#define INT_BIN_OPS(X)                                                                  \
    X(B_ADD, (UT)u + (UT)v)                                                             \
    X(B_SUB, (UT)u - (UT)v)                                                             \
    X(B_MUL, (UT)u * (UT)v)                                                             \
    X(B_DIV, SIGNED && v == (T)-1 ? 0 - (UT)u : (UT)(u / v))                            \
    X(B_FMOD, SIGNED && v == (T)-1 ? 0 : u % v)                                         \
    X(B_MOD, SIGNED && v == (T)-1 ? 0 : (u % v != 0 && ((u % v < 0) != (v < 0))) ? u % v + v : u % v) \
    X(B_AND, u && v)                                                                    \
    X(B_OR, u || v)                                                                     \
    X(B_XOR, !u != !v)                                                                  \
    X(B_BAND, u & v)                                                                    \
    X(B_BOR, u | v)                                                                     \
    X(B_BXOR, u ^ v)                                                                    \
    X(B_SHL, (uint64_t)v >= sizeof(T) * 8 ? 0 : (uint64_t)u << (uint64_t)v)           \
    X(B_SHR, (uint64_t)v >= sizeof(T) * 8 ? 0 : (uint64_t)u >> (uint64_t)v)           \
    X(B_MAX, u >= v ? u : v)                                                            \
    X(B_MIN, u <= v ? u : v)                                                            \
    X(B_PRELU, u < 0 ? (UT)v * (UT)u : (UT)u)

/* Arithmetic wraps in UT; SIGNED marks the signed types. */
#define INT_DECLS(UTT, SGN) \
    typedef UTT UT;         \
    enum { SIGNED = SGN };
#define DEF_INT_BIN(NAME, TT, UTT, SGN) DEF_BIN(NAME, TT, INT_BIN_OPS, INT_DECLS(UTT, SGN))

#if defined(__GNUC__)
#pragma GCC diagnostic push
/* "comparison is always false" for unsigned types in the shared list */
#pragma GCC diagnostic ignored "-Wtype-limits"
#endif
DEF_INT_BIN(bin_i8, int8_t, uint32_t, 1)
DEF_INT_BIN(bin_u8, uint8_t, uint32_t, 0)
DEF_INT_BIN(bin_i16, int16_t, uint32_t, 1)
DEF_INT_BIN(bin_u16, uint16_t, uint32_t, 0)
DEF_INT_BIN(bin_i32, int32_t, uint32_t, 1)
DEF_INT_BIN(bin_u32, uint32_t, uint32_t, 0)
DEF_INT_BIN(bin_i64, int64_t, uint64_t, 1)
DEF_INT_BIN(bin_u64, uint64_t, uint64_t, 0)
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#undef DEF_INT_BIN
#undef INT_DECLS
#undef DEF_BIN
#undef ARITH_CASE
#undef CMP_CASE

/* One innermost run of a binary op over typed data. */
typedef struct {
    ew_op op;
    carve_dtype t; /* compute dtype (float32 for float16/bfloat16) */
    const void *a, *b;
    void *y;
    size_t ysz; /* output element size */
} bctx;

static void bin_run(void *vc, const size_t *off, size_t yo, size_t n, const int *s)
{
    bctx *c = vc;
    void *y = (char *)c->y + yo * c->ysz;
    int sa = s[0], sb = s[1];
#define RUN(FN, T) FN(c->op, (const T *)c->a + off[0], sa, (const T *)c->b + off[1], sb, y, n)
    switch (c->t) {
    case CARVE_FLOAT: RUN(bin_f32, float); break;
    case CARVE_DOUBLE: RUN(bin_f64, double); break;
    case CARVE_INT8: RUN(bin_i8, int8_t); break;
    case CARVE_UINT8: case CARVE_BOOL: RUN(bin_u8, uint8_t); break;
    case CARVE_INT16: RUN(bin_i16, int16_t); break;
    case CARVE_UINT16: RUN(bin_u16, uint16_t); break;
    case CARVE_INT32: RUN(bin_i32, int32_t); break;
    case CARVE_UINT32: RUN(bin_u32, uint32_t); break;
    case CARVE_INT64: RUN(bin_i64, int64_t); break;
    case CARVE_UINT64: RUN(bin_u64, uint64_t); break;
    case CARVE_STRING: {
        char *const *sa_ = (char *const *)c->a + off[0], *const *sb_ = (char *const *)c->b + off[1];
        uint8_t *q = y;
        for (size_t i = 0; i < n; i++)
            q[i] = !strcmp(sa_[i * (size_t)sa], sb_[i * (size_t)sb]);
        break;
    }
    default: break;
    }
#undef RUN
}

static bool is_cmp(ew_op op) { return op >= B_EQ && op <= B_LE; }

/* y = a op b with broadcasting, same dtype on both sides (float16/bfloat16
 * computed in float32). The shape is broadcast(a, b). */
static carve_status bin_eval(cv_kctx *k, ew_op op, const cv_val *a, const cv_val *b, const uint32_t *idx, cv_val **out)
{
    const cv_val *ab[2] = {a, b};
    bool cmp = is_cmp(op);
    if (ew_is_half(a->dtype)) { /* the shapes are checked on the float32 copies */
        cv_val *fa = ew_half_to_f32(a), *fb = ew_half_to_f32(b), *fy = NULL;
        if (!fa || !fb) {
            cv_val_unref(fa);
            cv_val_unref(fb);
            return cv_knomem(k);
        }
        carve_status s = bin_eval(k, op, fa, fb, idx, &fy);
        cv_val_unref(fa);
        cv_val_unref(fb);
        if (s)
            return s;
        if (cmp) {
            *out = fy;
            return CARVE_OK;
        }
        *out = ew_f32_to_half(fy, a->dtype);
        cv_val_unref(fy);
        return *out ? CARVE_OK : cv_knomem(k);
    }
    /* binary_takes admits only dtypes bin_run has a loop for */
    cv_val *y;
    carve_status s = bcast_new(k, 2, ab, idx, cmp ? CARVE_BOOL : a->dtype, &y);
    if (s)
        return s;
    bctx c = {op, a->dtype, a->data, b->data, y->data, cmp ? 1 : cv_dtype_nbytes(a->dtype, 1)};
    bcast_each(2, ab, y, bin_run, &c);
    *out = y;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- Pow */

/* a * b in int64, false on overflow. */
static bool mul_i64(int64_t a, int64_t b, int64_t *r)
{
    uint64_t ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a, ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    if (ua && ub > UINT64_MAX / ua)
        return false;
    uint64_t p = ua * ub;
    if ((a < 0) != (b < 0)) {
        if (p > (uint64_t)1 << 63)
            return false;
        *r = (int64_t)(0 - p);
    } else {
        if (p > (uint64_t)INT64_MAX)
            return false;
        *r = (int64_t)p;
    }
    return true;
}

/* base^e exactly in int64, false on overflow. */
static bool ipow_exact(int64_t base, uint64_t e, int64_t *r)
{
    int64_t acc = 1, x = base;
    while (e) {
        if ((e & 1) && !mul_i64(acc, x, &acc))
            return false;
        e >>= 1;
        if (e && !mul_i64(x, x, &x))
            return false;
    }
    *r = acc;
    return true;
}

typedef struct {
    const cv_val *a, *b;
    cv_val *y;
} powctx;

/* Pow with mixed or integer types: element by element in double (or exact
 * integers), stored in the base's type. Rare in models, so the generic
 * element access is fine here. */
static void pow_run(void *vc, const size_t *off, size_t yo, size_t n, const int *s)
{
    powctx *c = vc;
    carve_dtype t = c->y->dtype;
    bool ints = cv_dtype_is_int(c->a->dtype) && cv_dtype_is_int(c->b->dtype);
    for (size_t i = 0; i < n; i++) {
        size_t ia = off[0] + i * (size_t)s[0], ib = off[1] + i * (size_t)s[1], iy = yo + i;
        double u = cv_val_get_f64(c->a, ia), v = cv_val_get_f64(c->b, ib);
        double r = pow(u, v);
        if (t == CARVE_INT32 || t == CARVE_INT64) {
            int64_t base = cv_val_get_i64(c->a, ia), e = cv_val_get_i64(c->b, ib), exact;
            bool neg_e = c->b->dtype != CARVE_UINT64 && e < 0;
            if (ints && !neg_e && ipow_exact(base, (uint64_t)e, &exact) &&
                (t == CARVE_INT64 || (exact >= INT32_MIN && exact <= INT32_MAX))) {
                cv_val_set_i64(c->y, iy, exact);
            } else if (t == CARVE_INT32) {
                ((int32_t *)c->y->data)[iy] = cv_x86_i32(r);
            } else {
                ((int64_t *)c->y->data)[iy] = cv_x86_i64(r);
            }
        } else if (t == CARVE_FLOAT16) {
            ((uint16_t *)c->y->data)[iy] = cv_f64_to_f16(r);
        } else if (t == CARVE_BFLOAT16) {
            ((uint16_t *)c->y->data)[iy] = cv_f64_to_bf16(r);
        } else if (t == CARVE_FLOAT) {
            ((float *)c->y->data)[iy] = (float)r;
        } else {
            ((double *)c->y->data)[iy] = r;
        }
    }
}

static carve_status pow_eval(cv_kctx *k, const cv_val *a, const cv_val *b, cv_val **out)
{
    static const uint32_t idx[2] = {0, 1};
    if (!ew_is_fp(a->dtype) && a->dtype != CARVE_INT32 && a->dtype != CARVE_INT64)
        return ew_bad_type(k, 0, a->dtype);
    if (!ew_is_fp(b->dtype) && !ew_is_cint(b->dtype))
        return ew_bad_type(k, 1, b->dtype);
    if (a->dtype == b->dtype && ew_is_fp(a->dtype))
        return bin_eval(k, B_POW, a, b, idx, out);
    const cv_val *ab[2] = {a, b};
    cv_val *y;
    carve_status s = bcast_new(k, 2, ab, idx, a->dtype, &y); /* pow_run stores every element */
    if (s)
        return s;
    powctx c = {a, b, y};
    bcast_each(2, ab, y, pow_run, &c);
    *out = y;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- the binary kernel */

static bool binary_takes(ew_op op, carve_dtype t)
{
    switch (op) {
    case B_AND: case B_OR: case B_XOR: return t == CARVE_BOOL;
    case B_BAND: case B_BOR: case B_BXOR: return ew_is_cint(t);
    case B_SHL: case B_SHR: return ew_is_cint(t) && ew_is_unsigned(t);
    case B_EQ: return ew_is_fp(t) || ew_is_cint(t) || t == CARVE_BOOL || t == CARVE_STRING;
    case B_FMOD: case B_MOD: case B_ADD: case B_SUB: case B_MUL: case B_DIV: case B_MAX: case B_MIN:
    case B_PRELU: case B_GT: case B_GE: case B_LT: case B_LE: case V_SUM: case V_MEAN:
        return ew_is_fp(t) || ew_is_cint(t);
    default: return false;
    }
}

/* Before opset 7, broadcast=1 aligned B with A from `axis` (default: the
 * trailing dims). The view gives B the numpy shape that means the same. */
static carve_status legacy_view(cv_kctx *k, const cv_val *a, cv_val *bview)
{
    if (k->opset >= 7 || !cv_attr_i(k->m, k->node, "broadcast", 0) || bview->nelem == 1) {
        if (k->opset < 7 && bview->nelem == 1)
            bview->rank = 0;
        return CARVE_OK;
    }
    int64_t axis = a->rank - bview->rank;
    carve_node_attr_int(k->m, k->node, "axis", &axis);
    if (axis < 0)
        axis += a->rank;
    bool ok = axis >= 0 && axis + bview->rank <= a->rank;
    for (int i = 0; ok && i < bview->rank; i++)
        ok = bview->dims[i] == a->dims[axis + i] || bview->dims[i] == 1;
    if (!ok) {
        char sa[200], sb[200];
        cv_shape_str(sa, sizeof sa, a->rank, a->dims);
        cv_shape_str(sb, sizeof sb, bview->rank, bview->dims);
        return cv_kerr(k, "input 1 '%s' of shape %s does not match input 0's shape %s from axis %lld", cv_ew_in_name(k, 1),
                       sb, sa, (long long)axis);
    }
    int r = a->rank - (int)axis;
    for (int i = bview->rank; i < r; i++)
        bview->dims[i] = 1;
    bview->rank = r;
    return CARVE_OK;
}

/* A zero in an integer divisor is an error (onnxruntime traps). */
static carve_status check_divisor(cv_kctx *k, const cv_val *b)
{
    int64_t v[EW_CHUNK];
    for (size_t off = 0; off < b->nelem; off += EW_CHUNK) {
        size_t m = b->nelem - off < EW_CHUNK ? b->nelem - off : EW_CHUNK;
        cv_ew_load_ints(b, off, m, v);
        for (size_t i = 0; i < m; i++)
            if (!v[i])
                return cv_kerr(k, "input 1 '%s' element %zu is 0: integer division by zero", cv_ew_in_name(k, 1),
                               off + i);
    }
    return CARVE_OK;
}

carve_status k_binary(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    static const uint32_t idx[2] = {0, 1};
    carve_status s;
    if ((s = ew_need_tensor(k, in[0], 0)) || (s = ew_need_tensor(k, in[1], 1)))
        return s;
    ew_op op = ew_op_of(k);
    if (op < B_ADD || op > B_PRELU)
        return cv_kerr(k, "not an element-wise binary op");
    const cv_val *a = in[0];
    cv_val bv = *in[1];
    if ((s = legacy_view(k, a, &bv)))
        return s;
    if (op == B_POW)
        return pow_eval(k, a, &bv, &out[0]);
    if (op == B_SHL) {
        const char *dir = cv_attr_s(k->m, k->node, "direction", "");
        if (!strcmp(dir, "RIGHT"))
            op = B_SHR;
        else if (strcmp(dir, "LEFT"))
            return cv_kerr(k, "attribute 'direction' is \"%s\", expected \"LEFT\" or \"RIGHT\"", dir);
    }
    if (op == B_MOD && cv_attr_i(k->m, k->node, "fmod", 0))
        op = B_FMOD;
    if (bv.dtype != a->dtype)
        return cv_kerr(k, "input 1 '%s' is %s but input 0 '%s' is %s", cv_ew_in_name(k, 1), carve_dtype_name(bv.dtype),
                       cv_ew_in_name(k, 0), carve_dtype_name(a->dtype));
    if (!binary_takes(op, a->dtype))
        return ew_bad_type(k, 0, a->dtype);
    if (op == B_MOD && ew_is_fp(a->dtype))
        return cv_kerr(k, "attribute 'fmod' must be 1 for %s inputs", carve_dtype_name(a->dtype));
    if ((op == B_DIV || op == B_MOD || op == B_FMOD) && ew_is_cint(a->dtype) && (s = check_divisor(k, &bv)))
        return s;
    if (op == B_PRELU) {
        int rank;
        int64_t dims[CARVE_MAX_RANK];
        const cv_val *ab[2] = {a, &bv};
        if ((s = bshape(k, 2, ab, idx, &rank, dims)))
            return s;
        if (rank != a->rank || memcmp(dims, a->dims, sizeof(int64_t) * (size_t)rank)) {
            char sa[200], sb[200];
            cv_shape_str(sa, sizeof sa, a->rank, a->dims);
            cv_shape_str(sb, sizeof sb, bv.rank, bv.dims);
            return cv_kerr(k, "input 1 '%s' of shape %s does not broadcast to X's shape %s", cv_ew_in_name(k, 1), sb,
                           sa);
        }
    }
    return bin_eval(k, op, a, &bv, idx, &out[0]);
}

/* ================================================================ variadic */

carve_status k_variadic(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    ew_op op = ew_op_of(k);
    carve_status s;
    for (uint32_t i = 0; i < n_in; i++) {
        if (!in[i])
            return cv_kerr(k, "input %u is omitted", i);
        if ((s = ew_need_tensor(k, in[i], i)))
            return s;
        if (in[i]->dtype != in[0]->dtype)
            return cv_kerr(k, "input %u '%s' is %s but input 0 '%s' is %s", i, cv_ew_in_name(k, i),
                           carve_dtype_name(in[i]->dtype), cv_ew_in_name(k, 0), carve_dtype_name(in[0]->dtype));
    }
    carve_dtype t = in[0]->dtype;
    if (!binary_takes(op, t) || ((op == V_SUM || op == V_MEAN) && !ew_is_fp(t)))
        return ew_bad_type(k, 0, t);
    ew_op bop = op == V_SUM || op == V_MEAN ? B_ADD : op;
    if (n_in == 1) {
        out[0] = cv_val_ref(in[0]);
        return CARVE_OK;
    }
    /* float16/bfloat16: accumulate in float32, round once at the end */
    bool half = ew_is_half(t);
    cv_val *acc = half ? ew_half_to_f32(in[0]) : cv_val_ref(in[0]);
    if (!acc)
        return cv_knomem(k);
    for (uint32_t i = 1; i < n_in; i++) {
        cv_val *x = half ? ew_half_to_f32(in[i]) : cv_val_ref(in[i]), *y = NULL;
        uint32_t idx[2] = {0, i};
        s = x ? bin_eval(k, bop, acc, x, idx, &y) : cv_knomem(k);
        cv_val_unref(x);
        cv_val_unref(acc);
        if (s)
            return s;
        acc = y;
    }
    if (op == V_MEAN) {
        double nn = (double)n_in;
        if (acc->dtype == CARVE_DOUBLE)
            for (size_t i = 0; i < acc->nelem; i++)
                ((double *)acc->data)[i] /= nn;
        else
            for (size_t i = 0; i < acc->nelem; i++)
                ((float *)acc->data)[i] /= (float)nn;
    }
    if (half) {
        cv_val *h = ew_f32_to_half(acc, t);
        cv_val_unref(acc);
        if (!h)
            return cv_knomem(k);
        acc = h;
    }
    out[0] = acc;
    return CARVE_OK;
}

/* ================================================================ Where */

typedef struct {
    const cv_val *c, *x, *y;
    cv_val *o;
    size_t esz;
    bool failed;
} wctx;

static void where_run(void *vc, const size_t *off, size_t yo, size_t n, const int *s)
{
    wctx *w = vc;
    const uint8_t *c = (const uint8_t *)w->c->data + off[0];
    size_t sc = (size_t)s[0], sx = (size_t)s[1], sy = (size_t)s[2];
    carve_dtype t = w->o->dtype;
    if (t == CARVE_STRING) {
        char *const *x = (char *const *)w->x->data + off[1], *const *y = (char *const *)w->y->data + off[2];
        char **o = (char **)w->o->data + yo;
        for (size_t i = 0; i < n; i++) {
            const char *src = c[i * sc] ? x[i * sx] : y[i * sy];
            size_t len = strlen(src);
            o[i] = cv_malloc(len + 1);
            if (!o[i]) {
                w->failed = true;
                return;
            }
            memcpy(o[i], src, len + 1);
        }
        return;
    }
    if (t == CARVE_INT4 || t == CARVE_UINT4) {
        for (size_t i = 0; i < n; i++)
            cv_val_set_i64(w->o, yo + i,
                           c[i * sc] ? cv_val_get_i64(w->x, off[1] + i * sx) : cv_val_get_i64(w->y, off[2] + i * sy));
        return;
    }
#define SEL(T)                                                                   \
    do {                                                                         \
        const T *x = (const T *)w->x->data + off[1], *y = (const T *)w->y->data + off[2]; \
        T *o = (T *)w->o->data + yo;                                             \
        for (size_t i = 0; i < n; i++)                                           \
            o[i] = c[i * sc] ? x[i * sx] : y[i * sy];                            \
    } while (0)
    switch (w->esz) {
    case 1: SEL(uint8_t); break;
    case 2: SEL(uint16_t); break;
    case 4: SEL(uint32_t); break;
    case 8: SEL(uint64_t); break;
    default: {
        const char *x = (const char *)w->x->data, *y = (const char *)w->y->data;
        char *o = (char *)w->o->data;
        for (size_t i = 0; i < n; i++)
            memcpy(o + (yo + i) * w->esz,
                   c[i * sc] ? x + (off[1] + i * sx) * w->esz : y + (off[2] + i * sy) * w->esz, w->esz);
        break;
    }
    }
#undef SEL
}

carve_status k_where(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    static const uint32_t idx[3] = {0, 1, 2};
    carve_status s;
    for (uint32_t i = 0; i < 3; i++)
        if ((s = ew_need_tensor(k, in[i], i)))
            return s;
    if (in[0]->dtype != CARVE_BOOL)
        return cv_kerr(k, "input 0 '%s' is %s, expected bool", cv_ew_in_name(k, 0), carve_dtype_name(in[0]->dtype));
    if (in[1]->dtype != in[2]->dtype)
        return cv_kerr(k, "input 2 '%s' is %s but input 1 '%s' is %s", cv_ew_in_name(k, 2),
                       carve_dtype_name(in[2]->dtype), cv_ew_in_name(k, 1), carve_dtype_name(in[1]->dtype));
    const cv_val *cxy[3] = {in[0], in[1], in[2]};
    cv_val *o;
    if ((s = bcast_new(k, 3, cxy, idx, in[1]->dtype, &o))) /* strings and 4-bit stay zeroed */
        return s;
    size_t esz = in[1]->dtype == CARVE_STRING ? sizeof(char *) : cv_dtype_nbytes(in[1]->dtype, 1);
    wctx w = {in[0], in[1], in[2], o, esz, false};
    bcast_each(3, cxy, o, where_run, &w);
    if (w.failed) {
        cv_val_unref(o);
        return cv_knomem(k);
    }
    out[0] = o;
    return CARVE_OK;
}


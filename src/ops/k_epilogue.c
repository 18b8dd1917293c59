/* k_epilogue.c: element-wise steps a Conv, MatMul or Gemm kernel applies
 * to its output tile by tile (the epilogue, ops.h): which nodes can be a
 * step, binding the operands the runtime gives to the output's shape, and
 * running the steps over a run of output elements.
 *
 * Every step's expression is its op's own kernel's expression on float32
 * (k_binary.c's FLOAT_BIN_OPS, k_elementwise.c's UNARY_FLOAT_OPS and
 * CLIP_LOOP), so an element goes through the same float operations fused
 * or not; test_fuse.c compares the two bit for bit. */
#include "ops.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

/* Elements per piece: the registers of a piece stay in L1. */
#define EPI_CHUNK 256

/* op-list: data (the ops an epilogue step computes, mapped to their step) */
static const struct {
    const char *name;
    cv_epi_op op;
    uint32_t n_in; /* inputs read (Clip from opset 11: up to 3) */
} step_ops[] = {
    {"Add", CV_EPI_ADD, 2}, {"Sub", CV_EPI_SUB, 2}, {"Mul", CV_EPI_MUL, 2}, {"Div", CV_EPI_DIV, 2},
    {"Relu", CV_EPI_RELU, 1}, {"LeakyRelu", CV_EPI_LEAKYRELU, 1}, {"HardSigmoid", CV_EPI_HARDSIGMOID, 1},
    {"HardSwish", CV_EPI_HARDSWISH, 1}, {"Sigmoid", CV_EPI_SIGMOID, 1}, {"Clip", CV_EPI_CLIP, 3},
};

bool cv_epi_step_of(const carve_model *m, carve_node_id n, cv_epi_step *st, uint32_t *n_in)
{
    const cv_node *nd = &m->nodes[n];
    if (*nd->domain)
        return false;
    int64_t opset = carve_model_opset(m, nd->domain);
    memset(st, 0, sizeof *st);
    memset(st->in, CV_EPI_NONE, sizeof st->in);
    size_t i = 0;
    while (i < sizeof step_ops / sizeof *step_ops && strcmp(nd->op, step_ops[i].name))
        i++;
    if (i == sizeof step_ops / sizeof *step_ops || nd->n_in < 1)
        return false;
    st->op = (uint8_t)step_ops[i].op;
    *n_in = step_ops[i].n_in;
    switch (step_ops[i].op) {
    case CV_EPI_ADD: case CV_EPI_SUB: case CV_EPI_MUL: case CV_EPI_DIV:
        return opset >= 7 && nd->n_in == 2; /* before 7: the legacy `broadcast` attribute */
    case CV_EPI_LEAKYRELU:
        st->a = cv_attr_f(m, n, "alpha", 0.01f);
        break;
    case CV_EPI_HARDSIGMOID:
        st->a = cv_attr_f(m, n, "alpha", 0.2f);
        st->b = cv_attr_f(m, n, "beta", 0.5f);
        break;
    case CV_EPI_CLIP:
        /* k_clip: the bounds through double, then float */
        st->a = opset < 11 ? (float)(double)cv_attr_f(m, n, "min", -FLT_MAX) : -FLT_MAX;
        st->b = opset < 11 ? (float)(double)cv_attr_f(m, n, "max", FLT_MAX) : FLT_MAX;
        *n_in = opset < 11 ? 1 : nd->n_in;
        return nd->n_in <= (opset < 11 ? 1u : 3u);
    default:
        break;
    }
    return nd->n_in == *n_in;
}

/* e->ext[x] against the output (rank, dims). */
static bool bind_ext(cv_epi_ext *x, int rank, const int64_t *dims, size_t n)
{
    const cv_val *v = x->v;
    if (!v || v->kind != CV_VAL_TENSOR || v->dtype != CARVE_FLOAT || v->rank > rank)
        return false;
    int axis = -1, sh = rank - v->rank;
    for (int i = 0; i < v->rank; i++) {
        int64_t d = v->dims[i], o = dims[sh + i];
        if (d != 1 && d != o)
            return false; /* it would broadcast the output up */
        if (d != 1 && o != 1)
            axis = axis == -1 ? sh + i : -3;
    }
    if (v->nelem == 1) {
        x->axis = -1;
    } else if (v->nelem == n) {
        x->axis = -2; /* the output's own layout: dims of 1 do not move it */
    } else if (axis >= 0) {
        x->axis = axis;
        x->len = (size_t)dims[axis];
        x->inner = 1;
        for (int i = axis + 1; i < rank; i++)
            x->inner *= (size_t)dims[i];
    } else {
        return false;
    }
    return true;
}

/* Is operand r an external one that stays constant along a run (a
 * scalar, or a per-axis vector of an axis with elements after it)? */
static bool ext_const_along(const cv_epi *e, int r)
{
    if (r >= 0 || r == CV_EPI_NONE)
        return false;
    const cv_epi_ext *x = &e->ext[-1 - r];
    return x->axis == -1 || (x->axis >= 0 && x->inner > 1);
}

/* Does no step after t read register r before one writes it? */
static bool dead_after(const cv_epi *e, uint32_t t, int r)
{
    for (uint32_t u = t + 1; u < e->n_steps; u++) {
        const cv_epi_step *s = &e->step[u];
        int n = s->op == CV_EPI_CLIP ? 1 : (int)sizeof s->in;
        for (int j = 0; j < n; j++)
            if (s->in[j] == r)
                return false;
        if (s->dst == r)
            return true;
    }
    return true;
}

/* Register r, read by step t, is dead after it or is what t writes. */
static bool dead_or_kept(const cv_epi *e, uint32_t t, int r)
{
    return e->step[t].dst == r || dead_after(e, t, r);
}

/* Binary step s reads register r and a run-constant external: its other
 * operand into *o (operands commute: a + b and a * b are exact either
 * way). */
static bool reg_and_const(const cv_epi *e, const cv_epi_step *s, cv_epi_op op, int r, int8_t *o)
{
    if (s->op != op)
        return false;
    if (s->in[0] == r && ext_const_along(e, s->in[1]))
        *o = s->in[1];
    else if (s->in[1] == r && ext_const_along(e, s->in[0]) && (op == CV_EPI_ADD || op == CV_EPI_MUL))
        *o = s->in[0];
    else
        return false;
    return true;
}

static void drop_steps(cv_epi *e, uint32_t t, uint32_t n)
{
    memmove(&e->step[t + 1], &e->step[t + 1 + n], (e->n_steps - t - 1 - n) * sizeof *e->step);
    e->n_steps -= n;
}

/* Merges runs of steps into one loop each (CV_EPI_AFFINE...): the same
 * float operations on each element, one pass over the run instead of
 * several. Intermediate registers must be dead after the merged steps. */
static void merge_steps(cv_epi *e)
{
    for (uint32_t t = 0; t + 1 < e->n_steps; t++) {
        cv_epi_step *s = e->step;
        int x = s[t].in[0];
        int8_t sc, sh;
        if (s[t].op == CV_EPI_MUL && s[t].in[0] >= 0 && ext_const_along(e, s[t].in[1]) &&
            reg_and_const(e, &s[t + 1], CV_EPI_ADD, s[t].dst, &sh) && dead_or_kept(e, t + 1, s[t].dst)) {
            sc = s[t].in[1];
        } else if (s[t].op == CV_EPI_MUL && s[t].in[1] >= 0 && ext_const_along(e, s[t].in[0]) &&
                   reg_and_const(e, &s[t + 1], CV_EPI_ADD, s[t].dst, &sh) && dead_or_kept(e, t + 1, s[t].dst)) {
            sc = s[t].in[0], x = s[t].in[1];
        } else {
            continue;
        }
        cv_epi_step m = {CV_EPI_AFFINE, {(int8_t)x, sc, sh, CV_EPI_NONE, CV_EPI_NONE, CV_EPI_NONE, CV_EPI_NONE},
                         s[t + 1].dst, 0, 0};
        s[t] = m;
        drop_steps(e, t, 1);
    }
    for (uint32_t t = 0; t + 3 < e->n_steps; t++) {
        cv_epi_step *s = e->step;
        int8_t c, k;
        int x = s[t].in[0];
        if (!(s[t].op == CV_EPI_ADD && x >= 0 && ext_const_along(e, s[t].in[1])) &&
            !(s[t].op == CV_EPI_ADD && (x = s[t].in[1]) >= 0 && ext_const_along(e, s[t].in[0])))
            continue;
        c = s[t].in[0] == x ? s[t].in[1] : s[t].in[0];
        int q = s[t].dst, q2 = s[t + 1].dst, p = s[t + 2].dst;
        if (q == x || s[t + 1].op != CV_EPI_CLIP || s[t + 1].in[0] != q || (q != q2 && !dead_after(e, t + 1, q)) ||
            s[t + 2].op != CV_EPI_MUL || !((s[t + 2].in[0] == x && s[t + 2].in[1] == q2) ||
                                           (s[t + 2].in[1] == x && s[t + 2].in[0] == q2)) ||
            q2 == x || (q2 != p && !dead_after(e, t + 2, q2)) || !reg_and_const(e, &s[t + 3], CV_EPI_DIV, p, &k) ||
            s[t + 3].in[0] != p || !dead_or_kept(e, t + 3, p))
            continue;
        cv_epi_step m = {CV_EPI_HSWISHD, {(int8_t)x, c, k, CV_EPI_NONE, CV_EPI_NONE, CV_EPI_NONE, CV_EPI_NONE},
                         s[t + 3].dst, s[t + 1].a, s[t + 1].b};
        s[t] = m;
        drop_steps(e, t, 3);
    }
    for (uint32_t t = 0; t + 1 < e->n_steps; t++) {
        cv_epi_step *s = e->step;
        if (s[t].op == CV_EPI_AFFINE && s[t + 1].op == CV_EPI_HSWISHD && s[t + 1].in[0] == s[t].dst &&
            dead_or_kept(e, t + 1, s[t].dst)) {
            cv_epi_step m = {CV_EPI_AFFINE_HSWISHD,
                             {s[t].in[0], s[t].in[1], s[t].in[2], s[t + 1].in[1], s[t + 1].in[2], CV_EPI_NONE,
                              CV_EPI_NONE},
                             s[t + 1].dst, s[t + 1].a, s[t + 1].b};
            s[t] = m;
            drop_steps(e, t, 1);
        }
    }
    for (uint32_t t = 0; t + 1 < e->n_steps; t++) {
        cv_epi_step *s = e->step;
        if (s[t].op == CV_EPI_AFFINE_HSWISHD && s[t + 1].op == CV_EPI_AFFINE && s[t + 1].in[0] == s[t].dst &&
            dead_or_kept(e, t + 1, s[t].dst)) {
            s[t].op = CV_EPI_AFFINE_HSWISHD_AFFINE;
            s[t].in[5] = s[t + 1].in[1];
            s[t].in[6] = s[t + 1].in[2];
            s[t].dst = s[t + 1].dst;
            drop_steps(e, t, 1);
        }
    }
}

bool cv_epi_bind(cv_epi *e, carve_dtype dt, int rank, const int64_t *dims)
{
    if (dt != CARVE_FLOAT || !e->n_steps)
        return false;
    size_t n = cv_nelem(rank, dims);
    bool bound[CV_EPI_EXT] = {false};
    for (uint32_t s = 0; s < e->n_steps; s++) {
        cv_epi_step *st = &e->step[s];
        if (st->op != CV_EPI_CLIP)
            continue;
        for (int j = 1; j < 3; j++) {
            if (st->in[j] == CV_EPI_NONE)
                continue;
            if (st->in[j] >= 0)
                return false; /* a bound computed in the chain */
            const cv_val *v = e->ext[-1 - st->in[j]].v;
            if (!v || v->kind != CV_VAL_TENSOR || v->dtype != CARVE_FLOAT || v->nelem != 1)
                return false;
            /* k_clip: the bound through double, then float */
            float f = (float)(double)((const float *)v->data)[0];
            if (j == 1)
                st->a = f;
            else
                st->b = f;
            bound[-1 - st->in[j]] = true;
            e->ext[-1 - st->in[j]].axis = -1; /* read here, never by a step */
        }
    }
    for (uint32_t x = 0; x < e->n_ext; x++)
        if (!bound[x] && !bind_ext(&e->ext[x], rank, dims, n))
            return false;
    e->bound_n = n;
    merge_steps(e);
    return true;
}

/* ---------------------------------------------------------------- steps */

/* d[i] = E(u, v) for a binary step: u from x (stride sx), v from w (sw). */
#define BIN_LOOP(E)                                                   \
    if (sx && sw) {                                                   \
        for (size_t i = 0; i < n; i++) {                              \
            const float u = x[i], v = w[i];                           \
            d[i] = (E);                                               \
        }                                                             \
    } else if (sx) {                                                  \
        const float v = w[0];                                         \
        for (size_t i = 0; i < n; i++) {                              \
            const float u = x[i];                                     \
            d[i] = (E);                                               \
        }                                                             \
    } else if (sw) {                                                  \
        const float u = x[0];                                         \
        for (size_t i = 0; i < n; i++) {                              \
            const float v = w[i];                                     \
            d[i] = (E);                                               \
        }                                                             \
    } else {                                                          \
        const float u = x[0], v = w[0];                               \
        for (size_t i = 0; i < n; i++)                                \
            d[i] = (E);                                               \
    }

#define UN_LOOP(E)                        \
    for (size_t i = 0; i < n; i++) {      \
        const float v = x[i];             \
        d[i] = (E);                       \
    }

static inline float clamp01f(float t) { return t < 0 ? 0 : t > 1 ? 1 : t; }

/* The expressions of k_binary.c (u + v...), k_elementwise.c's unary list
 * (T float, a and b the step's parameters) and its CLIP_LOOP; the merged
 * steps chain them with each intermediate rounded to float as before. */
/* always inlined: each clone of cv_epi_apply gets its own copy of the loops */
static inline __attribute__((always_inline)) void run_step(const cv_epi_step *s, float *d, const float *const *p,
                                                          const int *st, size_t n)
{
    const float a = s->a, b = s->b, *x = p[0], *w = p[1];
    const int sx = st[0], sw = st[1];
    switch ((cv_epi_op)s->op) {
    case CV_EPI_ADD: BIN_LOOP(u + v) break;
    case CV_EPI_SUB: BIN_LOOP(u - v) break;
    case CV_EPI_MUL: BIN_LOOP(u * v) break;
    case CV_EPI_DIV: BIN_LOOP(u / v) break;
    case CV_EPI_RELU: UN_LOOP(v < 0 ? 0 : v) break;
    case CV_EPI_LEAKYRELU: UN_LOOP(v < 0 ? a * v : v) break;
    case CV_EPI_HARDSIGMOID: UN_LOOP(clamp01f(a * v + b)) break;
    case CV_EPI_HARDSWISH: UN_LOOP(v * clamp01f(v * (float)(1.0 / 6) + (float)0.5)) break;
    case CV_EPI_SIGMOID: UN_LOOP(1 / (1 + expf(-v))) break;
    case CV_EPI_CLIP:
        for (size_t i = 0; i < n; i++) {
            float t_ = x[i] < a ? a : x[i];
            d[i] = t_ > b ? b : t_;
        }
        break;
    case CV_EPI_AFFINE: {
        const float sc = p[1][0], sh = p[2][0];
        UN_LOOP(v * sc + sh)
        break;
    }
    case CV_EPI_HSWISHD: {
        const float c = p[1][0], k = p[2][0];
        for (size_t i = 0; i < n; i++) {
            const float v = x[i], t0 = v + c;
            float t1 = t0 < a ? a : t0;
            t1 = t1 > b ? b : t1;
            d[i] = (v * t1) / k;
        }
        break;
    }
    case CV_EPI_AFFINE_HSWISHD: {
        const float sc = p[1][0], sh = p[2][0], c = p[3][0], k = p[4][0];
        for (size_t i = 0; i < n; i++) {
            const float v = x[i] * sc + sh, t0 = v + c;
            float t1 = t0 < a ? a : t0;
            t1 = t1 > b ? b : t1;
            d[i] = (v * t1) / k;
        }
        break;
    }
    case CV_EPI_AFFINE_HSWISHD_AFFINE: {
        const float sc = p[1][0], sh = p[2][0], c = p[3][0], k = p[4][0], sc2 = p[5][0], sh2 = p[6][0];
        for (size_t i = 0; i < n; i++) {
            const float v = x[i] * sc + sh, t0 = v + c;
            float t1 = t0 < a ? a : t0;
            t1 = t1 > b ? b : t1;
            const float h = (v * t1) / k;
            d[i] = h * sc2 + sh2;
        }
        break;
    }
    }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
/* AVX2 where the CPU has it: twice the lanes, the same IEEE operations
 * (no FMA: float expressions are not contracted in ISO C mode), so the
 * same bits. */
#define EPI_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EPI_CLONES
#endif

EPI_CLONES
void cv_epi_apply(const cv_epi *e, float *y, size_t off, size_t n)
{
    float regs[CV_EPI_REGS - 1][EPI_CHUNK];
    while (n) {
        size_t piece = n < EPI_CHUNK ? n : EPI_CHUNK;
        for (uint32_t x = 0; x < e->n_ext; x++) {
            const cv_epi_ext *q = &e->ext[x];
            if (q->axis < 0)
                continue;
            size_t left = q->inner > 1 ? q->inner - off % q->inner : q->len - off % q->len;
            piece = left < piece ? left : piece;
        }
        for (uint32_t si = 0; si < e->n_steps; si++) {
            const cv_epi_step *s = &e->step[si];
            const float *p[7];
            int st[7];
            for (int j = 0; j < 7; j++) {
                int r = s->in[j];
                st[j] = 1;
                if (r == CV_EPI_NONE || (j > 0 && s->op == CV_EPI_CLIP)) {
                    p[j] = y, st[j] = 0;
                } else if (r >= 0) {
                    p[j] = r ? regs[r - 1] : y;
                } else {
                    const cv_epi_ext *q = &e->ext[-1 - r];
                    const float *v = q->v->data;
                    if (q->axis == -1)
                        p[j] = v, st[j] = 0;
                    else if (q->axis == -2)
                        p[j] = v + off;
                    else if (q->inner > 1)
                        p[j] = v + (off / q->inner) % q->len, st[j] = 0;
                    else
                        p[j] = v + off % q->len;
                }
            }
            run_step(s, s->dst ? regs[s->dst - 1] : y, p, st, piece);
        }
        y += piece, off += piece, n -= piece;
    }
}

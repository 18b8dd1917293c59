/* test_nn.c: the nn family against plain references written here, element
 * by element in double: Conv (groups, depthwise, dilations, strides, pads,
 * auto_pad, 1-D/2-D/3-D, a case big enough to be tiled, float16/double;
 * float32 depthwise bit for bit against the per-tap order),
 * ConvTranspose (output_padding, output_shape, auto_pad, groups), the pools
 * (Indices and storage_order, ceil_mode, count_include_pad, dilations, Lp,
 * global) and MaxUnpool, MatMul (numpy broadcasting, 1-D operands, exact
 * integer wrap-around), Gemm and its decomposition, Einsum (a brute-force
 * sum over every label assignment), Det; inference on symbolic shapes and
 * the error texts of bad inputs. */
#include "opstest.h"
#include "tb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ model building */

static void tb_ints(tb *t, const char *name, int n, const int64_t *v)
{
    carve_node_set_attr_ints(t->m, t->node, name, (size_t)n, v);
}

static cv_val *rnd(carve_dtype dt, int rank, const int64_t *dims, uint32_t seed)
{
    return ot_random(dt, rank, dims, seed, -1, 1);
}

/* The expected values v as a tensor of dtype dt (rounded like a kernel). */
static cv_val *from_doubles(carve_dtype dt, int rank, const int64_t *dims, const double *v)
{
    cv_val *x = cv_val_new(dt, rank, dims);
    for (size_t i = 0; x && i < x->nelem; i++)
        cv_val_set_f64(x, i, v[i]);
    return x;
}

static double *to_doubles(const cv_val *v)
{
    double *d = malloc((v->nelem ? v->nelem : 1) * sizeof *d);
    for (size_t i = 0; i < v->nelem; i++)
        d[i] = cv_val_get_f64(v, i);
    return d;
}

static void check_close(const char *what, const cv_val *got, const cv_val *want, double atol, double rtol)
{
    char why[300] = "";
    OT_CHECK(got && want && ot_close(got, want, atol, rtol, why, sizeof why), "%s: %s", what, got ? why : "no output");
}

static size_t count(int n, const int64_t *d)
{
    size_t c = 1;
    for (int i = 0; i < n; i++)
        c *= (size_t)d[i];
    return c;
}

/* Runs t's node and checks its output against the reference's values yv
 * (shape od, rounded to dt) and inference's output shape against od; frees
 * yv and t. */
static void check_run(tb *t, const char *what, carve_dtype dt, int rank, const int64_t *od, double *yv, double atol,
                      double rtol)
{
    cv_val *want = from_doubles(dt, rank, od, yv), *y = NULL;
    carve_status s = tb_run(t, &y);
    OT_CHECK(s == CARVE_OK, "%s: %s", what, carve_errmsg(t->ctx));
    check_close(what, y, want, atol, rtol);
    /* inference agrees with the kernel */
    OT_CHECK(cv_infer_model(t->m, NULL) == CARVE_OK, "%s: inference: %s", what, carve_errmsg(t->ctx));
    carve_value_id yid = carve_node_output(t->m, t->node, 0);
    bool same = carve_value_rank(t->m, yid) == rank;
    for (int i = 0; same && i < rank; i++)
        same = carve_value_dim(t->m, yid, i).value == od[i];
    OT_CHECK(same, "%s: inferred shape differs from the computed one", what);
    cv_val_unref(y);
    cv_val_unref(want);
    free(yv);
    tb_free(t);
}

/* A Conv or ConvTranspose node of t on seeded random X (xd), W (wd) and,
 * with bias, B (M values), with n strides and dilations and the group; the
 * input values as doubles in v (freed by the caller). */
static void conv_node(tb *t, const char *op, carve_dtype dt, int rank, const int64_t *xd, const int64_t *wd, int64_t M,
                      bool bias, int n, const int64_t *strides, const int64_t *dilations, int64_t group, uint32_t seed,
                      double *v[3])
{
    int64_t bd[1] = {M};
    tb_init(t, 17);
    cv_val *x = rnd(dt, rank, xd, seed), *w = rnd(dt, rank, wd, seed + 1), *b = rnd(dt, 1, bd, seed + 2);
    v[0] = to_doubles(x), v[1] = to_doubles(w), v[2] = to_doubles(b);
    carve_value_id ins[3] = {tb_in(t, "x", x), tb_in(t, "w", w), bias ? tb_in(t, "b", b) : CARVE_NONE};
    if (!bias)
        cv_val_unref(b);
    tb_node(t, op, bias ? 3 : 2, ins, 1);
    tb_ints(t, "strides", n, strides);
    tb_ints(t, "dilations", n, dilations);
    carve_node_set_attr_int(t->m, t->node, "group", group);
}

/* The 'pads' attribute: n begin values, then n end values. */
static void set_pads(tb *t, int n, const int64_t *pb, const int64_t *pe)
{
    int64_t pads[6];
    memcpy(pads, pb, (size_t)n * sizeof *pads);
    memcpy(pads + n, pe, (size_t)n * sizeof *pads);
    tb_ints(t, "pads", 2 * n, pads);
}

static bool shape_is(tb *t, int out, carve_dtype dt, int rank, const carve_dim *want);

/* ================================================================ Conv */

typedef struct {
    int n; /* spatial rank */
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    bool bias;
    const char *autopad; /* NULL: explicit pads */
} conv_case;

/* Output size of the conv along axis i, and the pads auto_pad implies. */
static int64_t conv_out(conv_case *c, int i)
{
    int64_t eff = (c->k[i] - 1) * c->d[i] + 1;
    if (c->autopad && !strcmp(c->autopad, "VALID")) {
        c->pb[i] = c->pe[i] = 0;
    } else if (c->autopad) {
        int64_t out = (c->in[i] + c->s[i] - 1) / c->s[i];
        int64_t total = (out - 1) * c->s[i] + eff - c->in[i];
        total = total < 0 ? 0 : total;
        bool upper = !strcmp(c->autopad, "SAME_UPPER");
        c->pb[i] = upper ? total / 2 : total - total / 2;
        c->pe[i] = total - c->pb[i];
    }
    return (c->in[i] + c->pb[i] + c->pe[i] - eff) / c->s[i] + 1;
}

/* y[n][m][o] = b[m] + sum over c of the group, kernel taps k inside the
 * input: x[n][c][o*s - pb + k*d] * w[m][c - group start][k]. */
static void ref_conv(const conv_case *c, const double *x, const double *w, const double *b, const int64_t *out,
                     double *y)
{
    int n = c->n;
    int64_t Cg = c->C / c->group, Mg = c->M / c->group;
    size_t P = count(n, out), Pin = count(n, c->in), KK = count(n, c->k);
    for (int64_t nn = 0; nn < c->N; nn++)
        for (int64_t m = 0; m < c->M; m++)
            for (size_t p = 0; p < P; p++) {
                int64_t o[3], r = (int64_t)p;
                for (int i = n - 1; i >= 0; i--)
                    o[i] = r % out[i], r /= out[i];
                double acc = c->bias ? b[m] : 0;
                for (int64_t cc = 0; cc < Cg; cc++)
                    for (size_t kk = 0; kk < KK; kk++) {
                        int64_t kc[3], q = (int64_t)kk, off = 0;
                        bool inside = true;
                        for (int i = n - 1; i >= 0; i--)
                            kc[i] = q % c->k[i], q /= c->k[i];
                        for (int i = 0; i < n; i++) {
                            int64_t ic = o[i] * c->s[i] - c->pb[i] + kc[i] * c->d[i];
                            inside = inside && ic >= 0 && ic < c->in[i];
                            off = off * c->in[i] + ic;
                        }
                        if (!inside)
                            continue;
                        int64_t ch = (m / Mg) * Cg + cc;
                        acc += x[(size_t)(nn * c->C + ch) * Pin + (size_t)off] * w[(size_t)(m * Cg + cc) * KK + kk];
                    }
                y[(size_t)(nn * c->M + m) * P + p] = acc;
            }
}

static void check_conv(const char *what, conv_case c, carve_dtype dt, uint32_t seed, double atol, double rtol)
{
    int rank = c.n + 2;
    int64_t xd[5] = {c.N, c.C}, wd[5] = {c.M, c.C / c.group}, od[5] = {c.N, c.M};
    for (int i = 0; i < c.n; i++) {
        xd[2 + i] = c.in[i];
        wd[2 + i] = c.k[i];
    }
    for (int i = 0; i < c.n; i++)
        od[2 + i] = conv_out(&c, i);
    tb t;
    double *v[3];
    conv_node(&t, "Conv", dt, rank, xd, wd, c.M, c.bias, c.n, c.s, c.d, c.group, seed, v);
    tb_ints(&t, "kernel_shape", c.n, c.k);
    if (c.autopad)
        carve_node_set_attr_string(t.m, t.node, "auto_pad", c.autopad);
    else
        set_pads(&t, c.n, c.pb, c.pe);
    double *yv = malloc(count(rank, od) * sizeof *yv);
    ref_conv(&c, v[0], v[1], v[2], od + 2, yv);
    free(v[0]), free(v[1]), free(v[2]);
    check_run(&t, what, dt, rank, od, yv, atol, rtol);
}

static void test_conv(void)
{
    conv_case grouped = {2, 2, 4, 6, 2, {9, 7}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {2, 1}, true, NULL};
    check_conv("conv grouped 2-D", grouped, CARVE_FLOAT, 1, 1e-5, 1e-5);
    check_conv("conv grouped 2-D float16", grouped, CARVE_FLOAT16, 2, 2e-2, 2e-2);
    check_conv("conv grouped 2-D double", grouped, CARVE_DOUBLE, 3, 1e-12, 1e-12);
    check_conv("conv grouped 2-D bfloat16", grouped, CARVE_BFLOAT16, 4, 5e-2, 5e-2);
    conv_case dw = {2, 1, 5, 10, 5, {11, 13}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, NULL};
    check_conv("conv depthwise x2 stride 2", dw, CARVE_FLOAT, 5, 1e-5, 1e-5);
    conv_case dw2 = {2, 2, 6, 6, 6, {9, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 0}, {1, 3}, false, NULL};
    check_conv("conv depthwise dilated", dw2, CARVE_FLOAT, 6, 1e-5, 1e-5);
    conv_case dw3 = {2, 1, 4, 4, 4, {5, 40}, {3, 5}, {1, 3}, {1, 1}, {1, 2}, {1, 2}, true, NULL};
    check_conv("conv depthwise wide stride 3", dw3, CARVE_FLOAT, 7, 1e-5, 1e-5);
    check_conv("conv depthwise double", dw, CARVE_DOUBLE, 8, 1e-12, 1e-12);
    conv_case c1 = {1, 2, 3, 4, 1, {17}, {5}, {3}, {2}, {2}, {1}, true, NULL};
    check_conv("conv 1-D", c1, CARVE_FLOAT, 9, 1e-5, 1e-5);
    conv_case c3 = {3, 1, 2, 3, 1, {5, 6, 4}, {2, 3, 2}, {1, 2, 1}, {1, 1, 1}, {1, 1, 0}, {0, 1, 1}, true, NULL};
    check_conv("conv 3-D", c3, CARVE_FLOAT, 10, 1e-5, 1e-5);
    conv_case pw = {2, 2, 8, 3, 1, {6, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, false, NULL};
    check_conv("conv pointwise", pw, CARVE_FLOAT, 11, 1e-5, 1e-5);
    conv_case pwg = {2, 1, 8, 4, 2, {3, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true, NULL};
    check_conv("conv pointwise grouped", pwg, CARVE_FLOAT, 12, 1e-5, 1e-5);
    conv_case pws = {2, 1, 3, 2, 1, {7, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, true, NULL};
    check_conv("conv 1x1 stride 2", pws, CARVE_FLOAT, 13, 1e-5, 1e-5);
    conv_case big = {2, 1, 128, 3, 1, {130, 130}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, true, NULL};
    check_conv("conv tiled (many column tiles)", big, CARVE_FLOAT, 14, 1e-3, 1e-4);
    const char *modes[3] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int i = 0; i < 3; i++) {
        conv_case ap = {2, 1, 2, 3, 1, {8, 7}, {4, 3}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, true, modes[i]};
        char what[64];
        snprintf(what, sizeof what, "conv auto_pad %s", modes[i]);
        check_conv(what, ap, CARVE_FLOAT, 15 + (uint32_t)i, 1e-5, 1e-5);
    }
    conv_case empty_ch = {2, 1, 2, 2, 1, {0, 5}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, true, NULL};
    check_conv("conv empty spatial axis", empty_ch, CARVE_FLOAT, 19, 1e-5, 1e-5);
}

/* Depthwise float32 Conv is bit for bit the plain per-tap order: each
 * output starts from its bias (or 0) and adds its taps inside the input,
 * kernel rows then columns, one float multiply and one float add each. The
 * kernel keeps a strip of outputs in registers over all taps and treats
 * the ends of a row apart; 300 seeded cases cover kernels 1..7, strides
 * 1..3, dilations, asymmetric pads, rows of 1..45 outputs (strips of 16,
 * of 4, tails, rows narrower than the kernel), channel multipliers 1 and 2,
 * with and without bias. */
static void test_depthwise_exact(void)
{
    uint32_t st = 12345;
#define NEXT(n) ((int64_t)((st = st * 1103515245u + 12345u) >> 16) % (n))
    int bad_cases = 0, ran = 0;
    for (int cs = 0; cs < 300; cs++) {
        int64_t C = 2 + NEXT(3), mult = 1 + NEXT(2), N = 1 + NEXT(2); /* group 1 would be a GEMM */
        int64_t k[2] = {1 + NEXT(7), 1 + NEXT(7)}, s[2] = {1 + NEXT(3), 1 + NEXT(3)};
        int64_t d[2] = {1 + NEXT(2), 1 + NEXT(2)}, pb[2] = {NEXT(4), NEXT(4)}, pe[2] = {NEXT(4), NEXT(4)};
        int64_t in[2] = {1 + NEXT(12), 1 + NEXT(45)};
        if (cs % 3 == 0)
            s[1] = 1 + cs % 2; /* the fused paths: strides 1 and 2 */
        bool bias = NEXT(2) != 0;
        int64_t out[2];
        bool ok = true;
        for (int i = 0; i < 2; i++) {
            int64_t span = in[i] + pb[i] + pe[i] - ((k[i] - 1) * d[i] + 1);
            ok = ok && span >= 0;
            out[i] = span >= 0 ? span / s[i] + 1 : 0;
        }
        bool pointwise = k[0] == 1 && k[1] == 1 && s[0] == 1 && s[1] == 1 && !pb[0] && !pb[1] && !pe[0] && !pe[1];
        if (!ok || pointwise) /* a 1x1 unpadded stride-1 kernel is a GEMM */
            continue;
        ran++;
        int64_t M = C * mult, xd[4] = {N, C, in[0], in[1]}, wd[4] = {M, 1, k[0], k[1]}, bd[1] = {M};
        tb t;
        tb_init(&t, 17);
        cv_val *x = rnd(CARVE_FLOAT, 4, xd, 100 + (uint32_t)cs), *w = rnd(CARVE_FLOAT, 4, wd, 500 + (uint32_t)cs);
        cv_val *b = rnd(CARVE_FLOAT, 1, bd, 900 + (uint32_t)cs);
        const float *xv = x->data, *wv = w->data, *bv = b->data;
        carve_value_id ins[3] = {tb_in(&t, "x", x), tb_in(&t, "w", w), bias ? tb_in(&t, "b", b) : CARVE_NONE};
        tb_node(&t, "Conv", bias ? 3 : 2, ins, 1);
        int64_t pads[4] = {pb[0], pb[1], pe[0], pe[1]};
        tb_ints(&t, "strides", 2, s);
        tb_ints(&t, "dilations", 2, d);
        tb_ints(&t, "pads", 4, pads);
        carve_node_set_attr_int(t.m, t.node, "group", C);
        cv_val *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "depthwise case %d: %s", cs, carve_errmsg(t.ctx));
        size_t diff = 0;
        for (int64_t nn = 0; y && nn < N; nn++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t oh = 0; oh < out[0]; oh++)
                    for (int64_t ow = 0; ow < out[1]; ow++) {
                        float acc = bias ? bv[m] : 0.0f;
                        for (int64_t kh = 0; kh < k[0]; kh++)
                            for (int64_t kw = 0; kw < k[1]; kw++) {
                                int64_t ih = oh * s[0] - pb[0] + kh * d[0], iw = ow * s[1] - pb[1] + kw * d[1];
                                if (ih < 0 || ih >= in[0] || iw < 0 || iw >= in[1])
                                    continue;
                                acc += wv[(m * k[0] + kh) * k[1] + kw] * xv[((nn * C + m / mult) * in[0] + ih) * in[1] + iw];
                            }
                        float got = ((const float *)y->data)[((nn * M + m) * out[0] + oh) * out[1] + ow];
                        diff += memcmp(&acc, &got, sizeof acc) != 0;
                    }
        if (!y || diff)
            bad_cases++;
        OT_CHECK(y && !diff, "depthwise case %d (k %lldx%lld, s %lldx%lld, d %lldx%lld, in %lldx%lld, mult %lld): %zu outputs differ from the per-tap order",
                 cs, (long long)k[0], (long long)k[1], (long long)s[0], (long long)s[1], (long long)d[0], (long long)d[1],
                 (long long)in[0], (long long)in[1], (long long)mult, diff);
        if (!bias)
            cv_val_unref(b);
        cv_val_unref(y);
        tb_free(&t);
    }
#undef NEXT
    OT_CHECK(bad_cases == 0 && ran >= 200, "%d of %d depthwise cases differ", bad_cases, ran);
}

/* ================================================================ ConvTranspose */

typedef struct {
    int n;
    int64_t N, C, M, group;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3], op[3], os[3];
    bool bias, use_os;
    const char *autopad;
} convt_case;

/* Output size along axis i (and pads when output_shape / auto_pad decide). */
static int64_t convt_out(convt_case *c, int i)
{
    int64_t natural = c->s[i] * (c->in[i] - 1) + c->op[i] + (c->k[i] - 1) * c->d[i] + 1;
    int64_t out = c->use_os ? c->os[i] : c->autopad ? c->in[i] * c->s[i] : -1;
    if (out < 0)
        return natural - c->pb[i] - c->pe[i];
    int64_t total = natural - out;
    /* floor division as the spec's Python formula */
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    if (c->autopad && !strcmp(c->autopad, "SAME_UPPER"))
        c->pb[i] = half, c->pe[i] = total - half;
    else
        c->pe[i] = half, c->pb[i] = total - half;
    return out;
}

/* Scatter form: every x[n][c][i] * w[c][m][k] lands on o = i*s - pb + k*d. */
static void ref_convt(const convt_case *c, const double *x, const double *w, const double *b, const int64_t *out,
                      double *y)
{
    int n = c->n;
    int64_t Cg = c->C / c->group, Mg = c->M / c->group;
    size_t P = count(n, out), Pin = count(n, c->in), KK = count(n, c->k);
    for (int64_t nn = 0; nn < c->N; nn++)
        for (int64_t m = 0; m < c->M; m++)
            for (size_t p = 0; p < P; p++)
                y[(size_t)(nn * c->M + m) * P + p] = c->bias ? b[m] : 0;
    for (int64_t nn = 0; nn < c->N; nn++)
        for (int64_t ch = 0; ch < c->C; ch++)
            for (size_t p = 0; p < Pin; p++) {
                int64_t ic[3], r = (int64_t)p;
                for (int i = n - 1; i >= 0; i--)
                    ic[i] = r % c->in[i], r /= c->in[i];
                for (int64_t mm = 0; mm < Mg; mm++)
                    for (size_t kk = 0; kk < KK; kk++) {
                        int64_t kc[3], q = (int64_t)kk, off = 0;
                        bool inside = true;
                        for (int i = n - 1; i >= 0; i--)
                            kc[i] = q % c->k[i], q /= c->k[i];
                        for (int i = 0; i < n; i++) {
                            int64_t oc = ic[i] * c->s[i] - c->pb[i] + kc[i] * c->d[i];
                            inside = inside && oc >= 0 && oc < out[i];
                            off = off * out[i] + oc;
                        }
                        if (!inside)
                            continue;
                        int64_t m = (ch / Cg) * Mg + mm;
                        y[(size_t)(nn * c->M + m) * P + (size_t)off] +=
                            x[(size_t)(nn * c->C + ch) * Pin + p] * w[(size_t)(ch * Mg + mm) * KK + kk];
                    }
            }
}

static void check_convt(const char *what, convt_case c, carve_dtype dt, uint32_t seed, double tol)
{
    int rank = c.n + 2;
    int64_t xd[5] = {c.N, c.C}, wd[5] = {c.C, c.M / c.group}, od[5] = {c.N, c.M};
    for (int i = 0; i < c.n; i++)
        xd[2 + i] = c.in[i], wd[2 + i] = c.k[i];
    convt_case attrs = c; /* the pads given to the node, before output_shape replaces them */
    for (int i = 0; i < c.n; i++)
        od[2 + i] = convt_out(&c, i);
    tb t;
    double *v[3];
    conv_node(&t, "ConvTranspose", dt, rank, xd, wd, c.M, c.bias, c.n, c.s, c.d, c.group, seed, v);
    tb_ints(&t, "output_padding", c.n, c.op);
    if (c.use_os)
        tb_ints(&t, "output_shape", c.n, c.os);
    if (c.autopad)
        carve_node_set_attr_string(t.m, t.node, "auto_pad", c.autopad);
    else if (!c.use_os)
        set_pads(&t, c.n, attrs.pb, attrs.pe);
    double *yv = malloc(count(rank, od) * sizeof *yv);
    ref_convt(&c, v[0], v[1], v[2], od + 2, yv);
    free(v[0]), free(v[1]), free(v[2]);
    check_run(&t, what, dt, rank, od, yv, tol, tol);
}

static void test_convtranspose(void)
{
    convt_case g = {2, 2, 4, 6, 2, {4, 5}, {3, 2}, {3, 2}, {2, 1}, {1, 2}, {0, 1}, {1, 1}, {0, 0}, true, false, NULL};
    check_convt("convtranspose grouped, pads, output_padding, dilations", g, CARVE_FLOAT, 30, 1e-5);
    check_convt("convtranspose float16", g, CARVE_FLOAT16, 31, 3e-2);
    check_convt("convtranspose double", g, CARVE_DOUBLE, 32, 1e-12);
    convt_case os = {2, 1, 2, 3, 1, {3, 3}, {3, 3}, {3, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, {10, 8}, true, true, NULL};
    check_convt("convtranspose output_shape (bigger than natural)", os, CARVE_FLOAT, 33, 1e-5);
    convt_case os2 = {2, 1, 2, 3, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, {8, 7}, false, true, NULL};
    check_convt("convtranspose output_shape (odd total padding)", os2, CARVE_FLOAT, 34, 1e-5);
    convt_case up = {2, 1, 1, 2, 1, {3, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, true, false, "SAME_UPPER"};
    check_convt("convtranspose SAME_UPPER", up, CARVE_FLOAT, 35, 1e-5);
    convt_case lo = up;
    lo.autopad = "SAME_LOWER";
    check_convt("convtranspose SAME_LOWER", lo, CARVE_FLOAT, 36, 1e-5);
    convt_case c1 = {1, 2, 3, 2, 1, {7}, {4}, {3}, {2}, {2}, {1}, {2}, {0}, true, false, NULL};
    check_convt("convtranspose 1-D", c1, CARVE_FLOAT, 37, 1e-5);
    convt_case c3 = {3, 1, 2, 2, 2, {3, 4, 2}, {2, 2, 3}, {2, 1, 2}, {1, 2, 1}, {0, 1, 1}, {1, 0, 0}, {1, 0, 1}, {0}, false, false, NULL};
    check_convt("convtranspose 3-D grouped", c3, CARVE_FLOAT, 38, 1e-5);
    convt_case big = {2, 1, 16, 4, 1, {300, 300}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, true, false, NULL};
    check_convt("convtranspose tiled", big, CARVE_FLOAT, 39, 1e-4);
}

/* ================================================================ pools */

typedef struct {
    int n;
    int64_t N, C, in[3], k[3], s[3], d[3], pb[3], pe[3];
    bool ceil, count_pad, col_major;
    double p;
} pool_case;

static int64_t pool_out(const pool_case *c, int i)
{
    int64_t eff = (c->k[i] - 1) * c->d[i] + 1, span = c->in[i] + c->pb[i] + c->pe[i] - eff;
    int64_t out = (c->ceil ? (span + c->s[i] - 1) / c->s[i] : span / c->s[i]) + 1;
    if (c->ceil && (out - 1) * c->s[i] >= c->in[i] + c->pb[i])
        out--;
    return out;
}

/* kind 0 max, 1 average, 2 Lp: each window read tap by tap. */
static void ref_pool(int kind, const pool_case *c, const double *x, const int64_t *out, double *y, int64_t *ind)
{
    int n = c->n;
    size_t P = count(n, out), Pin = count(n, c->in), KK = count(n, c->k);
    for (size_t pl = 0; pl < (size_t)(c->N * c->C); pl++)
        for (size_t p = 0; p < P; p++) {
            int64_t o[3], r = (int64_t)p;
            for (int i = n - 1; i >= 0; i--)
                o[i] = r % out[i], r /= out[i];
            double best = -INFINITY, acc = 0;
            int64_t bi = 0, valid = 0, padded = 0, bc[3] = {0};
            for (size_t kk = 0; kk < KK; kk++) {
                int64_t kc[3], q = (int64_t)kk, off = 0, ic[3];
                bool inside = true, inpad = true;
                for (int i = n - 1; i >= 0; i--)
                    kc[i] = q % c->k[i], q /= c->k[i];
                for (int i = 0; i < n; i++) {
                    ic[i] = o[i] * c->s[i] - c->pb[i] + kc[i] * c->d[i];
                    inside = inside && ic[i] >= 0 && ic[i] < c->in[i];
                    inpad = inpad && ic[i] >= -c->pb[i] && ic[i] < c->in[i] + c->pe[i];
                    off = off * c->in[i] + ic[i];
                }
                padded += inpad;
                if (!inside)
                    continue;
                valid++;
                double v = x[pl * Pin + (size_t)off];
                if (v > best) {
                    best = v, bi = off;
                    memcpy(bc, ic, sizeof bc);
                }
                acc += kind == 1 ? v : pow(fabs(v), c->p);
            }
            size_t yo = pl * P + p;
            if (kind == 0) {
                y[yo] = best;
                if (c->col_major) {
                    bi = 0;
                    for (int i = n - 1; i >= 0; i--)
                        bi = bi * c->in[i] + bc[i];
                }
                ind[yo] = (int64_t)(pl * Pin) + bi;
            } else {
                y[yo] = kind == 1 ? acc / (double)(c->count_pad ? padded : valid) : pow(acc, 1.0 / c->p);
            }
        }
}

static void check_pool(const char *what, int kind, pool_case c, carve_dtype dt, int64_t opset, uint32_t seed,
                       double tol)
{
    static const char *const ops[3] = {"MaxPool", "AveragePool", "LpPool"};
    int rank = c.n + 2;
    int64_t xd[5] = {c.N, c.C}, od[5] = {c.N, c.C};
    for (int i = 0; i < c.n; i++)
        xd[2 + i] = c.in[i], od[2 + i] = pool_out(&c, i);
    tb t;
    tb_init(&t, opset);
    cv_val *x = dt == CARVE_INT8 || dt == CARVE_UINT8 ? ot_random(dt, rank, xd, seed, 0, 100) : rnd(dt, rank, xd, seed);
    double *xv = to_doubles(x);
    carve_value_id ins[1] = {tb_in(&t, "x", x)};
    tb_node(&t, ops[kind], 1, ins, kind == 0 ? 2 : 1);
    tb_ints(&t, "kernel_shape", c.n, c.k);
    tb_ints(&t, "strides", c.n, c.s);
    tb_ints(&t, "dilations", c.n, c.d);
    int64_t pads[6];
    memcpy(pads, c.pb, (size_t)c.n * sizeof *pads);
    memcpy(pads + c.n, c.pe, (size_t)c.n * sizeof *pads);
    tb_ints(&t, "pads", 2 * c.n, pads);
    carve_node_set_attr_int(t.m, t.node, "ceil_mode", c.ceil);
    if (kind == 0)
        carve_node_set_attr_int(t.m, t.node, "storage_order", c.col_major);
    if (kind == 1)
        carve_node_set_attr_int(t.m, t.node, "count_include_pad", c.count_pad);
    if (kind == 2)
        carve_node_set_attr_int(t.m, t.node, "p", (int64_t)c.p);
    size_t ny = count(rank, od);
    double *yv = malloc(ny * sizeof *yv);
    int64_t *iv = malloc(ny * sizeof *iv);
    ref_pool(kind, &c, xv, od + 2, yv, iv);
    cv_val *want = from_doubles(dt, rank, od, yv), *y[2] = {NULL, NULL};
    carve_status s = tb_run(&t, y);
    OT_CHECK(s == CARVE_OK, "%s: %s", what, carve_errmsg(t.ctx));
    check_close(what, y[0], want, tol, tol);
    if (kind == 0 && y[1]) {
        bool same = y[1]->dtype == CARVE_INT64 && y[1]->nelem == ny;
        for (size_t i = 0; same && i < ny; i++)
            same = ((int64_t *)y[1]->data)[i] == iv[i];
        OT_CHECK(same, "%s: Indices differ", what);
    }
    cv_val_unref(y[0]);
    cv_val_unref(y[1]);
    cv_val_unref(want);
    free(xv), free(yv), free(iv);
    tb_free(&t);
}

static void test_pools(void)
{
    pool_case a = {2, 2, 3, {7, 8}, {3, 2}, {2, 3}, {1, 1}, {1, 0}, {1, 1}, false, false, false, 2};
    check_pool("maxpool pads strides", 0, a, CARVE_FLOAT, 12, 50, 0);
    a.col_major = true;
    check_pool("maxpool storage_order 1", 0, a, CARVE_FLOAT, 12, 51, 0);
    a.col_major = false;
    a.ceil = true;
    check_pool("maxpool ceil_mode", 0, a, CARVE_FLOAT, 12, 52, 0);
    check_pool("averagepool ceil_mode", 1, a, CARVE_FLOAT, 11, 53, 1e-6);
    a.count_pad = true;
    check_pool("averagepool ceil_mode count_include_pad", 1, a, CARVE_FLOAT, 11, 54, 1e-6);
    pool_case dil = {2, 1, 2, {9, 9}, {2, 3}, {1, 2}, {2, 2}, {1, 2}, {2, 1}, true, true, false, 3};
    check_pool("maxpool dilations ceil", 0, dil, CARVE_FLOAT, 12, 55, 0);
    check_pool("averagepool dilations (opset 19)", 1, dil, CARVE_FLOAT, 19, 56, 1e-6);
    check_pool("lppool p=3 dilations (opset 18)", 2, dil, CARVE_FLOAT, 18, 57, 1e-5);
    pool_case p1 = {1, 2, 2, {11}, {3}, {2}, {1}, {1}, {1}, false, false, false, 2};
    check_pool("maxpool 1-D", 0, p1, CARVE_FLOAT, 12, 58, 0);
    check_pool("lppool 1-D p=2", 2, p1, CARVE_FLOAT, 11, 59, 1e-5);
    pool_case p3 = {3, 1, 2, {4, 5, 6}, {2, 2, 3}, {2, 1, 2}, {1, 1, 1}, {0, 1, 1}, {1, 0, 1}, false, false, true, 1};
    check_pool("maxpool 3-D storage_order 1", 0, p3, CARVE_FLOAT, 12, 60, 0);
    check_pool("averagepool 3-D", 1, p3, CARVE_FLOAT, 11, 61, 1e-6);
    check_pool("lppool 3-D p=1", 2, p3, CARVE_FLOAT, 11, 62, 1e-5);
    check_pool("maxpool int8", 0, a, CARVE_INT8, 12, 63, 0);
    check_pool("maxpool uint8", 0, a, CARVE_UINT8, 12, 64, 0);
    check_pool("maxpool float16", 0, a, CARVE_FLOAT16, 12, 65, 0);
    check_pool("averagepool double", 1, a, CARVE_DOUBLE, 11, 66, 1e-12);
}

static void test_global_pools(void)
{
    int64_t xd[4] = {2, 3, 4, 5}, od[4] = {2, 3, 1, 1};
    static const char *const ops[3] = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"};
    for (int kind = 0; kind < 3; kind++)
        for (int f16 = 0; f16 < 2; f16++) {
            tb t;
            tb_init(&t, 17);
            carve_dtype dt = f16 ? CARVE_FLOAT16 : CARVE_FLOAT;
            cv_val *x = rnd(dt, 4, xd, 70 + (uint32_t)kind);
            double *xv = to_doubles(x), yv[6];
            carve_value_id in = tb_in(&t, "x", x);
            tb_node(&t, ops[kind], 1, &in, 1);
            if (kind == 2)
                carve_node_set_attr_int(t.m, t.node, "p", 3);
            for (int pl = 0; pl < 6; pl++) {
                double acc = 0, mx = -INFINITY;
                for (int i = 0; i < 20; i++) {
                    double v = xv[pl * 20 + i];
                    acc += kind == 2 ? pow(fabs(v), 3) : v;
                    mx = v > mx ? v : mx;
                }
                yv[pl] = kind == 0 ? acc / 20 : kind == 1 ? mx : cbrt(acc);
            }
            cv_val *want = from_doubles(dt, 4, od, yv), *y = NULL;
            OT_CHECK(tb_run(&t, &y) == CARVE_OK, "%s: %s", ops[kind], carve_errmsg(t.ctx));
            check_close(ops[kind], y, want, f16 ? 1e-2 : 1e-6, f16 ? 1e-2 : 1e-6);
            cv_val_unref(y);
            cv_val_unref(want);
            free(xv);
            tb_free(&t);
        }
}

/* MaxPool's Indices fed to MaxUnpool put every max back where it was;
 * a bigger output_shape pads at the end (indices keep their coordinates,
 * as onnxruntime and the ONNX test expect). */
static void test_maxunpool(void)
{
    for (int padded = 0; padded < 2; padded++) {
        int64_t xd[4] = {2, 2, 6, 4}, k[2] = {2, 2}, s[2] = {2, 2}, H = padded ? 7 : 6, W = padded ? 5 : 4;
        tb t;
        tb_init(&t, 12);
        cv_val *x = rnd(CARVE_FLOAT, 4, xd, 80);
        carve_value_id in = tb_in(&t, "x", cv_val_ref(x));
        const char *po[2] = {"p", "i"};
        carve_node_id mp = carve_graph_add_node(t.m, 0, "MaxPool", "", "mp", 1, &in, 2, po);
        carve_node_set_attr_ints(t.m, mp, "kernel_shape", 2, k);
        carve_node_set_attr_ints(t.m, mp, "strides", 2, s);
        int64_t osv[4] = {2, 2, H, W}, osd[1] = {4};
        carve_value_id osh = carve_graph_add_initializer(t.m, 0, "os", CARVE_INT64, 1, osd, osv, sizeof osv);
        carve_value_id ui[3] = {carve_node_output(t.m, mp, 0), carve_node_output(t.m, mp, 1), osh};
        tb_node(&t, "MaxUnpool", 3, ui, 1);
        carve_node_set_attr_ints(t.m, t.node, "kernel_shape", 2, k);
        carve_node_set_attr_ints(t.m, t.node, "strides", 2, s);
        double want[2 * 2 * 7 * 5] = {0};
        const float *xv = x->data;
        for (int pl = 0; pl < 4; pl++)
            for (int bh = 0; bh < 3; bh++)
                for (int bw = 0; bw < 2; bw++) {
                    int bi = 0, bj = 0;
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 2; j++)
                            if (xv[pl * 24 + (bh * 2 + i) * 4 + bw * 2 + j] > xv[pl * 24 + (bh * 2 + bi) * 4 + bw * 2 + bj])
                                bi = i, bj = j;
                    int h = bh * 2 + bi, w = bw * 2 + bj;
                    want[(size_t)(pl * H * W + h * W + w)] = xv[pl * 24 + h * 4 + w];
                }
        cv_val *wv = from_doubles(CARVE_FLOAT, 4, osv, want), *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "maxunpool: %s", carve_errmsg(t.ctx));
        check_close(padded ? "maxunpool bigger output_shape" : "maxunpool", y, wv, 0, 0);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "maxunpool inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, (carve_dim[]){{2, NULL}, {2, NULL}, {H, NULL}, {W, NULL}}),
                 "maxunpool inferred shape from the constant output_shape");
        cv_val_unref(y);
        cv_val_unref(wv);
        cv_val_unref(x);
        tb_free(&t);
    }
}

/* ================================================================ MatMul */

/* numpy matmul of a and b element by element, in uint64 (wrap) or double. */
static void ref_matmul(const cv_val *a, const cv_val *b, int *orank, int64_t *od, double *yd, uint64_t *yi)
{
    int ra = a->rank, rb = b->rank;
    int64_t ad[CARVE_MAX_RANK], bd[CARVE_MAX_RANK];
    int pa = ra, pb = rb;
    memcpy(ad, a->dims, (size_t)ra * sizeof *ad);
    memcpy(bd, b->dims, (size_t)rb * sizeof *bd);
    if (ra == 1)
        ad[1] = ad[0], ad[0] = 1, pa = 2;
    if (rb == 1)
        bd[1] = 1, pb = 2;
    int64_t M = ad[pa - 2], K = ad[pa - 1], N = bd[pb - 1];
    int nb = (pa > pb ? pa : pb) - 2;
    int64_t cb[CARVE_MAX_RANK];
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (pa - 2)), ib = i - (nb - (pb - 2));
        int64_t x = ia >= 0 ? ad[ia] : 1, z = ib >= 0 ? bd[ib] : 1;
        cb[i] = x == 1 ? z : x;
    }
    *orank = 0;
    for (int i = 0; i < nb; i++)
        od[(*orank)++] = cb[i];
    if (ra > 1)
        od[(*orank)++] = M;
    if (rb > 1)
        od[(*orank)++] = N;
    size_t NB = count(nb, cb);
    for (size_t bi = 0; bi < NB; bi++) {
        int64_t idx[CARVE_MAX_RANK], r = (int64_t)bi;
        for (int i = nb - 1; i >= 0; i--)
            idx[i] = r % cb[i], r /= cb[i];
        size_t oa = 0, ob = 0;
        for (int i = 0; i < pa - 2; i++) {
            int j = i + nb - (pa - 2);
            oa = oa * (size_t)ad[i] + (size_t)(ad[i] == 1 ? 0 : idx[j]);
        }
        for (int i = 0; i < pb - 2; i++) {
            int j = i + nb - (pb - 2);
            ob = ob * (size_t)bd[i] + (size_t)(bd[i] == 1 ? 0 : idx[j]);
        }
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                uint64_t iacc = 0;
                for (int64_t k = 0; k < K; k++) {
                    size_t ia = oa * (size_t)(M * K) + (size_t)(m * K + k), ib = ob * (size_t)(K * N) + (size_t)(k * N + n);
                    acc += cv_val_get_f64(a, ia) * cv_val_get_f64(b, ib);
                    iacc += (uint64_t)cv_val_get_i64(a, ia) * (uint64_t)cv_val_get_i64(b, ib);
                }
                size_t o = bi * (size_t)(M * N) + (size_t)(m * N + n);
                yd[o] = acc;
                yi[o] = iacc;
            }
    }
}

static void check_matmul(const char *what, carve_dtype dt, int ra, const int64_t *ad, int rb, const int64_t *bd,
                         uint32_t seed, double tol)
{
    tb t;
    tb_init(&t, 13);
    bool isint = !cv_dtype_is_float(dt);
    /* integers large enough that int32/int64 products wrap */
    double lim = dt == CARVE_INT64 || dt == CARVE_UINT64 ? 9e18 : dt == CARVE_INT32 ? 2e9 : 1;
    cv_val *a = ot_random(dt, ra, ad, seed, isint && dt != CARVE_UINT64 && dt != CARVE_UINT32 ? -lim : 0, lim),
           *b = ot_random(dt, rb, bd, seed + 1, isint && dt != CARVE_UINT64 && dt != CARVE_UINT32 ? -lim : 0, lim);
    if (!isint) {
        cv_val_unref(a), cv_val_unref(b);
        a = rnd(dt, ra, ad, seed), b = rnd(dt, rb, bd, seed + 1);
    }
    int orank;
    int64_t od[CARVE_MAX_RANK];
    size_t cap = 4096;
    double *yd = malloc(cap * sizeof *yd);
    uint64_t *yi = malloc(cap * sizeof *yi);
    ref_matmul(a, b, &orank, od, yd, yi);
    cv_val *want = cv_val_new(dt, orank, od);
    for (size_t i = 0; i < want->nelem; i++) {
        if (isint)
            cv_val_set_i64(want, i, (int64_t)yi[i]);
        else
            cv_val_set_f64(want, i, yd[i]);
    }
    carve_value_id ins[2] = {tb_in(&t, "a", a), tb_in(&t, "b", b)};
    tb_node(&t, "MatMul", 2, ins, 1);
    cv_val *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "%s: %s", what, carve_errmsg(t.ctx));
    check_close(what, y, want, tol, tol);
    if (isint && y) {
        bool same = y->nelem == want->nelem;
        for (size_t i = 0; same && i < y->nelem; i++)
            same = cv_val_get_i64(y, i) == cv_val_get_i64(want, i);
        OT_CHECK(same, "%s: integer result not exact", what);
    }
    cv_val_unref(y);
    cv_val_unref(want);
    free(yd), free(yi);
    tb_free(&t);
}

static void test_matmul(void)
{
    int64_t a3[3] = {2, 3, 4}, b2[2] = {4, 5}, v4[1] = {4}, a4[4] = {2, 1, 3, 4}, b3[3] = {5, 4, 2}, a31[3] = {1, 3, 4},
            b35[3] = {2, 4, 5}, z1[2] = {2, 0}, z2[2] = {0, 3};
    check_matmul("matmul [2,3,4]x[4,5] (shared B)", CARVE_FLOAT, 3, a3, 2, b2, 100, 1e-5);
    check_matmul("matmul [4]x[4,5]", CARVE_FLOAT, 1, v4, 2, b2, 101, 1e-5);
    check_matmul("matmul [2,3,4]x[4]", CARVE_FLOAT, 3, a3, 1, v4, 102, 1e-5);
    check_matmul("matmul [4]x[4]", CARVE_FLOAT, 1, v4, 1, v4, 103, 1e-5);
    check_matmul("matmul [2,1,3,4]x[5,4,2] broadcast", CARVE_FLOAT, 4, a4, 3, b3, 104, 1e-5);
    check_matmul("matmul [1,3,4]x[2,4,5] broadcast A", CARVE_FLOAT, 3, a31, 3, b35, 105, 1e-5);
    check_matmul("matmul K=0", CARVE_FLOAT, 2, z1, 2, z2, 106, 0);
    check_matmul("matmul float16", CARVE_FLOAT16, 4, a4, 3, b3, 107, 1e-2);
    check_matmul("matmul bfloat16", CARVE_BFLOAT16, 3, a3, 2, b2, 108, 3e-2);
    check_matmul("matmul double", CARVE_DOUBLE, 4, a4, 3, b3, 109, 1e-12);
    check_matmul("matmul int32 wraps", CARVE_INT32, 4, a4, 3, b3, 110, 0);
    check_matmul("matmul int64 wraps", CARVE_INT64, 3, a3, 1, v4, 111, 0);
    check_matmul("matmul uint32", CARVE_UINT32, 3, a31, 3, b35, 112, 0);
    check_matmul("matmul uint64", CARVE_UINT64, 1, v4, 2, b2, 113, 0);
}

/* ================================================================ Gemm */

static carve_model *gemm_model(carve_ctx *ctx, carve_dtype dt, int64_t M, int64_t K, int64_t N, bool ta, bool tb_,
                               float alpha, float beta, int crank, const int64_t *cd, cv_val **inputs, uint32_t seed)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 13);
    int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb_ ? N : K, tb_ ? K : N};
    carve_dim a2[2] = {{ad[0], NULL}, {ad[1], NULL}}, b2d[2] = {{bd[0], NULL}, {bd[1], NULL}}, c2[2];
    for (int i = 0; i < crank; i++)
        c2[i] = (carve_dim){cd[i], NULL};
    carve_value_id ins[3] = {carve_graph_add_input(m, 0, "A", dt, 2, a2), carve_graph_add_input(m, 0, "B", dt, 2, b2d),
                             crank >= 0 ? carve_graph_add_input(m, 0, "C", dt, crank, c2) : CARVE_NONE};
    inputs[0] = rnd(dt, 2, ad, seed);
    inputs[1] = rnd(dt, 2, bd, seed + 1);
    inputs[2] = crank >= 0 ? rnd(dt, crank, cd, seed + 2) : NULL;
    const char *outs[1] = {"Y"};
    carve_node_id n = carve_graph_add_node(m, 0, "Gemm", "", "gemm", crank >= 0 ? 3 : 2, ins, 1, outs);
    carve_node_set_attr_int(m, n, "transA", ta);
    carve_node_set_attr_int(m, n, "transB", tb_);
    carve_node_set_attr_float(m, n, "alpha", alpha);
    carve_node_set_attr_float(m, n, "beta", beta);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    return m;
}

static void test_gemm(void)
{
    int64_t M = 3, K = 4, N = 5;
    struct {
        int rank;
        int64_t d[2];
    } cs[] = {{-1, {0}}, {0, {0}}, {1, {5}}, {1, {1}}, {2, {1, 5}}, {2, {3, 1}}, {2, {3, 5}}};
    float ab[][2] = {{1, 1}, {0.5f, 0.25f}, {-2, 0}};
    int cases = 0;
    for (int dtf = 0; dtf < 2; dtf++)
        for (size_t ci = 0; ci < sizeof cs / sizeof *cs; ci++)
            for (int tr = 0; tr < 4; tr++)
                for (size_t k = 0; k < sizeof ab / sizeof *ab; k++) {
                    carve_dtype dt = dtf ? CARVE_FLOAT16 : CARVE_FLOAT;
                    bool ta = tr & 1, tbb = (tr & 2) != 0;
                    carve_ctx *ctx = carve_ctx_new();
                    cv_val *in[3];
                    uint32_t seed = (uint32_t)(200 + cases++);
                    carve_model *m = gemm_model(ctx, dt, M, K, N, ta, tbb, ab[k][0], ab[k][1], cs[ci].rank, cs[ci].d, in, seed);
                    /* the reference */
                    double y[15];
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t j = 0; j < N; j++) {
                            double acc = 0;
                            for (int64_t p = 0; p < K; p++)
                                acc += cv_val_get_f64(in[0], (size_t)(ta ? p * M + i : i * K + p)) *
                                       cv_val_get_f64(in[1], (size_t)(tbb ? j * K + p : p * N + j));
                            double c = 0;
                            if (in[2]) {
                                const cv_val *cv = in[2];
                                size_t ciu = cv->rank == 0 ? 0
                                           : cv->rank == 1 ? (size_t)(cv->dims[0] == 1 ? 0 : j)
                                                           : (size_t)((cv->dims[0] == 1 ? 0 : i) * cv->dims[1] + (cv->dims[1] == 1 ? 0 : j));
                                c = cv_val_get_f64(cv, ciu);
                            }
                            y[i * N + j] = ab[k][0] * acc + ab[k][1] * c;
                        }
                    int64_t od[2] = {M, N};
                    cv_val *want = from_doubles(dt, 2, od, y), *got = NULL;
                    char what[96];
                    snprintf(what, sizeof what, "gemm %s C rank %d transA %d transB %d alpha %g beta %g",
                             carve_dtype_name(dt), cs[ci].rank, ta, tbb, ab[k][0], ab[k][1]);
                    OT_CHECK(ot_run(m, in, &got) == CARVE_OK, "%s: %s", what, carve_errmsg(ctx));
                    check_close(what, got, want, dtf ? 2e-2 : 1e-5, dtf ? 2e-2 : 1e-5);
                    cv_val_unref(got);
                    cv_val_unref(want);
                    /* the decomposition on a spread of the cases */
                    if ((tr + (int)k + (int)ci) % 3 == 0 || ci == 0)
                        ot_check_decomposition(m, carve_model_find_node(m, "gemm"), in, dtf ? 2e-2 : 1e-5, dtf ? 2e-2 : 1e-5);
                    for (int i = 0; i < 3; i++)
                        cv_val_unref(in[i]);
                    carve_model_free(m);
                    carve_ctx_free(ctx);
                }
    /* integer Gemm is exact and wraps */
    {
        carve_ctx *ctx = carve_ctx_new();
        carve_model *m = carve_model_new(ctx);
        carve_model_set_opset(m, "", 13);
        carve_dim d22[2] = {{2, NULL}, {2, NULL}};
        carve_value_id ins[3] = {carve_graph_add_input(m, 0, "A", CARVE_INT64, 2, d22),
                                 carve_graph_add_input(m, 0, "B", CARVE_INT64, 2, d22),
                                 carve_graph_add_input(m, 0, "C", CARVE_INT64, 2, d22)};
        const char *outs[1] = {"Y"};
        carve_node_id n = carve_graph_add_node(m, 0, "Gemm", "", "gemm", 3, ins, 1, outs);
        carve_node_set_attr_float(m, n, "beta", 3);
        carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
        int64_t dims[2] = {2, 2}, av[4] = {INT64_MAX, 2, 3, 4}, bv[4] = {2, 0, 1, 1}, cv[4] = {1, 2, 3, 4};
        cv_val *in[3] = {cv_val_new(CARVE_INT64, 2, dims), cv_val_new(CARVE_INT64, 2, dims), cv_val_new(CARVE_INT64, 2, dims)};
        memcpy(in[0]->data, av, sizeof av), memcpy(in[1]->data, bv, sizeof bv), memcpy(in[2]->data, cv, sizeof cv);
        cv_val *y = NULL;
        OT_CHECK(ot_run(m, in, &y) == CARVE_OK, "gemm int64: %s", carve_errmsg(ctx));
        /* row 0: [MAX*2 + 2, 2] wraps to [0, 2]; + 3*C */
        int64_t want[4] = {(int64_t)((uint64_t)INT64_MAX * 2u + 2u + 3u), 2 + 6, 6 + 4 + 9, 4 + 12};
        OT_CHECK(y && !memcmp(y->data, want, sizeof want), "gemm int64: wrong result");
        ot_check_decomposition(m, n, in, 0, 0);
        cv_val_unref(y);
        for (int i = 0; i < 3; i++)
            cv_val_unref(in[i]);
        carve_model_free(m);
        carve_ctx_free(ctx);
    }
}

/* ================================================================ Einsum */

/* Brute force: every assignment of every letter, the product of the
 * operands' elements added to the output element. Letters only. */
static void ref_einsum(const char *eq, int n_in, cv_val **in, int *orank, int64_t *od, double *y)
{
    char terms[8][16], out[16] = "";
    int nt = 0, len = 0;
    bool explicit_out = false;
    for (const char *p = eq; *p; p++) {
        if (*p == ' ')
            continue;
        if (*p == ',' || (*p == '-' && p[1] == '>')) {
            terms[nt][len] = 0;
            nt++, len = 0;
            if (*p == '-') {
                explicit_out = true;
                p++;
                break;
            }
            continue;
        }
        terms[nt][len++] = *p;
    }
    if (!explicit_out)
        terms[nt][len] = 0, nt++;
    else {
        const char *p = strstr(eq, "->") + 2;
        len = 0;
        for (; *p; p++)
            if (*p != ' ')
                out[len++] = *p;
        out[len] = 0;
    }
    (void)n_in;
    int64_t size[128] = {0};
    int cnt[128] = {0};
    for (int t = 0; t < nt; t++)
        for (int i = 0; terms[t][i]; i++) {
            size[(int)terms[t][i]] = in[t]->dims[i] > size[(int)terms[t][i]] ? in[t]->dims[i] : size[(int)terms[t][i]];
            cnt[(int)terms[t][i]]++;
        }
    if (!explicit_out) {
        len = 0;
        for (int ch = 'A'; ch <= 'z'; ch++)
            if (cnt[ch] == 1)
                out[len++] = (char)ch;
        out[len] = 0;
    }
    char labels[64];
    int nl = 0;
    for (int ch = 'A'; ch <= 'z'; ch++)
        if (cnt[ch])
            labels[nl++] = (char)ch;
    *orank = (int)strlen(out);
    for (int i = 0; i < *orank; i++)
        od[i] = size[(int)out[i]];
    size_t ny = count(*orank, od), total = 1;
    for (size_t i = 0; i < ny; i++)
        y[i] = 0;
    for (int i = 0; i < nl; i++)
        total *= (size_t)size[(int)labels[i]];
    int64_t val[128];
    for (size_t a = 0; a < total; a++) {
        size_t r = a;
        for (int i = nl - 1; i >= 0; i--)
            val[(int)labels[i]] = (int64_t)(r % (size_t)size[(int)labels[i]]), r /= (size_t)size[(int)labels[i]];
        double prod = 1;
        for (int t = 0; t < nt; t++) {
            size_t off = 0;
            for (int i = 0; terms[t][i]; i++)
                off = off * (size_t)in[t]->dims[i] + (size_t)(in[t]->dims[i] == 1 ? 0 : val[(int)terms[t][i]]);
            prod *= cv_val_get_f64(in[t], off);
        }
        size_t o = 0;
        for (int i = 0; i < *orank; i++)
            o = o * (size_t)od[i] + (size_t)val[(int)out[i]];
        y[o] += prod;
    }
}

static void check_einsum(const char *eq, carve_dtype dt, int n_in, const int *ranks, const int64_t dims[][4],
                         uint32_t seed, double tol)
{
    tb t;
    tb_init(&t, 12);
    cv_val *in[8];
    carve_value_id ids[8];
    for (int i = 0; i < n_in; i++) {
        char name[8];
        snprintf(name, sizeof name, "x%d", i);
        in[i] = cv_dtype_is_float(dt) ? rnd(dt, ranks[i], dims[i], seed + (uint32_t)i)
                                      : ot_random(dt, ranks[i], dims[i], seed + (uint32_t)i, -5, 5);
        ids[i] = tb_in(&t, name, in[i]);
    }
    tb_node(&t, "Einsum", n_in, ids, 1);
    carve_node_set_attr_string(t.m, t.node, "equation", eq);
    int orank;
    int64_t od[CARVE_MAX_RANK];
    double *yv = malloc(4096 * sizeof *yv);
    ref_einsum(eq, n_in, in, &orank, od, yv);
    char what[80];
    snprintf(what, sizeof what, "einsum '%s' %s", eq, carve_dtype_name(dt));
    check_run(&t, what, dt, orank, od, yv, tol, tol);
}

static void test_einsum(void)
{
    int r22[2] = {2, 2}, r33[2] = {3, 3}, r1[1] = {2}, r11[2] = {1, 1}, r3[3] = {2, 2, 2};
    check_einsum("ij,jk->ik", CARVE_FLOAT, 2, r22, (const int64_t[][4]){{3, 4}, {4, 5}}, 300, 1e-5);
    check_einsum("ij,jk", CARVE_FLOAT, 2, r22, (const int64_t[][4]){{3, 4}, {4, 5}}, 301, 1e-5);
    check_einsum("ba", CARVE_FLOAT, 1, r1, (const int64_t[][4]){{3, 4}}, 302, 0);
    check_einsum("bij,bjk->bik", CARVE_FLOAT, 2, r33, (const int64_t[][4]){{2, 3, 4}, {2, 4, 5}}, 303, 1e-5);
    check_einsum("ii->i", CARVE_FLOAT, 1, r1, (const int64_t[][4]){{4, 4}}, 304, 0);
    check_einsum("ii", CARVE_FLOAT, 1, r1, (const int64_t[][4]){{4, 4}}, 305, 1e-6);
    check_einsum("iji->j", CARVE_FLOAT, 1, (int[]){3}, (const int64_t[][4]){{3, 2, 3}}, 306, 1e-6);
    check_einsum("ij->", CARVE_FLOAT, 1, r1, (const int64_t[][4]){{3, 4}}, 307, 1e-5);
    check_einsum("i,i", CARVE_FLOAT, 2, r11, (const int64_t[][4]){{5}, {5}}, 308, 1e-5);
    check_einsum("i,j->ij", CARVE_FLOAT, 2, r11, (const int64_t[][4]){{3}, {4}}, 309, 1e-6);
    check_einsum("ij,ij->ij", CARVE_FLOAT, 2, r22, (const int64_t[][4]){{3, 4}, {3, 4}}, 310, 1e-6);
    check_einsum("ij,ij->i", CARVE_FLOAT, 2, r22, (const int64_t[][4]){{3, 4}, {1, 4}}, 311, 1e-5);
    check_einsum("ijk,ikl->jl", CARVE_FLOAT, 2, r33, (const int64_t[][4]){{2, 3, 4}, {2, 4, 5}}, 312, 1e-5);
    check_einsum("ij,jk,kl->il", CARVE_FLOAT, 3, r3, (const int64_t[][4]){{2, 3}, {3, 4}, {4, 2}}, 313, 1e-5);
    check_einsum("abc,cd,a->bd", CARVE_FLOAT, 3, (int[]){3, 2, 1}, (const int64_t[][4]){{2, 3, 4}, {4, 2}, {2}}, 314, 1e-5);
    check_einsum("bhqd,bhkd->bhqk", CARVE_FLOAT, 2, (int[]){4, 4}, (const int64_t[][4]){{1, 2, 3, 4}, {1, 2, 5, 4}}, 315, 1e-5);
    check_einsum("ij,jk->ik", CARVE_DOUBLE, 2, r22, (const int64_t[][4]){{3, 4}, {4, 5}}, 316, 1e-12);
    check_einsum("ij,jk->ik", CARVE_FLOAT16, 2, r22, (const int64_t[][4]){{3, 4}, {4, 5}}, 317, 2e-2);
    check_einsum("ij,jk->ki", CARVE_INT32, 2, r22, (const int64_t[][4]){{3, 4}, {4, 5}}, 318, 0);
    check_einsum("ii->", CARVE_INT64, 1, r1, (const int64_t[][4]){{4, 4}}, 319, 0);
    check_einsum("Ab,bA->A", CARVE_FLOAT, 2, r22, (const int64_t[][4]){{3, 2}, {2, 3}}, 320, 1e-5);
    /* ellipsis: against the same contraction with explicit letters, and
     * against MatMul's broadcasting */
    {
        tb t;
        tb_init(&t, 12);
        int64_t ad[4] = {2, 1, 3, 4}, bd[3] = {5, 4, 2};
        cv_val *a = rnd(CARVE_FLOAT, 4, ad, 330), *b = rnd(CARVE_FLOAT, 3, bd, 331);
        int orank;
        int64_t od[CARVE_MAX_RANK];
        double yd[80];
        uint64_t yi[80];
        ref_matmul(a, b, &orank, od, yd, yi);
        carve_value_id ins[2] = {tb_in(&t, "a", a), tb_in(&t, "b", b)};
        tb_node(&t, "Einsum", 2, ins, 1);
        carve_node_set_attr_string(t.m, t.node, "equation", "...ij,...jk->...ik");
        cv_val *want = from_doubles(CARVE_FLOAT, orank, od, yd), *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "einsum ellipsis broadcast: %s", carve_errmsg(t.ctx));
        check_close("einsum '...ij,...jk->...ik' broadcast", y, want, 1e-5, 1e-5);
        cv_val_unref(y);
        cv_val_unref(want);
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        int64_t xd[3] = {3, 5, 5};
        cv_val *x = rnd(CARVE_FLOAT, 3, xd, 332);
        double yv[15];
        for (int b = 0; b < 3; b++)
            for (int i = 0; i < 5; i++)
                yv[b * 5 + i] = cv_val_get_f64(x, (size_t)(b * 25 + i * 6));
        carve_value_id in = tb_in(&t, "x", x);
        tb_node(&t, "Einsum", 1, &in, 1);
        carve_node_set_attr_string(t.m, t.node, "equation", "...ii ->...i");
        int64_t od[2] = {3, 5};
        cv_val *want = from_doubles(CARVE_FLOAT, 2, od, yv), *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "einsum batch diagonal: %s", carve_errmsg(t.ctx));
        check_close("einsum '...ii->...i'", y, want, 0, 0);
        cv_val_unref(y);
        cv_val_unref(want);
        tb_free(&t);
    }
}

/* ================================================================ Det */

static void test_det(void)
{
    struct {
        carve_dtype dt;
        double tol;
    } types[3] = {{CARVE_FLOAT, 1e-4}, {CARVE_DOUBLE, 1e-9}, {CARVE_FLOAT16, 1e-1}};
    for (int ti = 0; ti < 3; ti++) {
        tb t;
        tb_init(&t, 11);
        /* det -84; a permutation (-1); singular (0); the identity */
        double m[4][9] = {{4, 3, 2, 1, 5, 7, 2, 8, 6}, {0, 1, 0, 1, 0, 0, 0, 0, 1}, {1, 2, 3, 2, 4, 6, 1, 1, 1},
                          {1, 0, 0, 0, 1, 0, 0, 0, 1}};
        double want_v[4] = {-84, -1, 0, 1};
        int64_t xd[3] = {4, 3, 3}, od[1] = {4};
        cv_val *x = from_doubles(types[ti].dt, 3, xd, &m[0][0]);
        carve_value_id in = tb_in(&t, "x", x);
        tb_node(&t, "Det", 1, &in, 1);
        cv_val *want = from_doubles(types[ti].dt, 1, od, want_v), *y = NULL;
        OT_CHECK(tb_run(&t, &y) == CARVE_OK, "det: %s", carve_errmsg(t.ctx));
        check_close("det batch", y, want, types[ti].tol, 1e-3);
        cv_val_unref(y);
        cv_val_unref(want);
        tb_free(&t);
    }
    /* a random 6x6 against the permutation expansion of the determinant */
    tb t;
    tb_init(&t, 11);
    int64_t xd[2] = {6, 6};
    cv_val *x = rnd(CARVE_DOUBLE, 2, xd, 340);
    double *a = to_doubles(x), det = 0;
    int p[6] = {0, 1, 2, 3, 4, 5};
    /* Heap's algorithm over all 720 permutations, tracking the sign */
    int c[6] = {0}, sign = 1, i = 0;
    double prod = 1;
    for (int r = 0; r < 6; r++)
        prod *= a[r * 6 + p[r]];
    det += prod;
    while (i < 6) {
        if (c[i] < i) {
            int j = i % 2 == 0 ? 0 : c[i], tmp = p[j];
            p[j] = p[i], p[i] = tmp;
            sign = -sign;
            prod = sign;
            for (int r = 0; r < 6; r++)
                prod *= a[r * 6 + p[r]];
            det += prod;
            c[i]++;
            i = 0;
        } else {
            c[i++] = 0;
        }
    }
    carve_value_id in = tb_in(&t, "x", x);
    tb_node(&t, "Det", 1, &in, 1);
    cv_val *want = from_doubles(CARVE_DOUBLE, 0, NULL, &det), *y = NULL;
    OT_CHECK(tb_run(&t, &y) == CARVE_OK, "det 6x6: %s", carve_errmsg(t.ctx));
    check_close("det 6x6 vs permutation expansion", y, want, 1e-12, 1e-10);
    cv_val_unref(y);
    cv_val_unref(want);
    free(a);
    tb_free(&t);
}

/* ================================================================ inference */

static carve_dim sym(const char *p) { return (carve_dim){-1, p}; }
static carve_dim fix(int64_t v) { return (carve_dim){v, NULL}; }

/* A one-node model over inputs of the given (possibly symbolic) types;
 * runs inference and returns its status. */
static carve_status infer_one(tb *t, const char *op, int n_in, const carve_dtype *dts, const int *ranks,
                              carve_dim dims[][5], int n_out)
{
    carve_value_id ins[8];
    for (int i = 0; i < n_in; i++) {
        char name[8];
        snprintf(name, sizeof name, "i%d", i);
        ins[i] = carve_graph_add_input(t->m, 0, name, dts[i], ranks[i], dims[i]);
    }
    tb_node(t, op, n_in, ins, n_out);
    return CARVE_OK;
}

static bool shape_is(tb *t, int out, carve_dtype dt, int rank, const carve_dim *want)
{
    carve_value_id v = carve_node_output(t->m, t->node, (size_t)out);
    if (carve_value_dtype(t->m, v) != dt || carve_value_rank(t->m, v) != rank)
        return false;
    for (int i = 0; i < rank; i++) {
        carve_dim d = carve_value_dim(t->m, v, i);
        if (d.value != want[i].value || (want[i].param ? !d.param || strcmp(d.param, want[i].param) : d.param != NULL))
            return false;
    }
    return true;
}

static void test_inference(void)
{
    carve_dtype f2[2] = {CARVE_FLOAT, CARVE_FLOAT};
    {
        tb t;
        tb_init(&t, 17);
        carve_dim d[2][5] = {{sym("N"), fix(3), fix(32), fix(31)}, {fix(8), fix(3), fix(3), fix(3)}};
        infer_one(&t, "Conv", 2, f2, (int[]){4, 4}, d, 1);
        tb_ints(&t, "strides", 2, (int64_t[]){2, 2});
        tb_ints(&t, "pads", 4, (int64_t[]){1, 1, 1, 1});
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "conv inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, (carve_dim[]){sym("N"), fix(8), fix(16), fix(16)}), "conv symbolic batch");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 17);
        carve_dim d[2][5] = {{sym("N"), fix(3), sym("H"), fix(31)}, {fix(8), fix(3), fix(3), fix(3)}};
        infer_one(&t, "Conv", 2, f2, (int[]){4, 4}, d, 1);
        carve_node_set_attr_string(t.m, t.node, "auto_pad", "SAME_UPPER");
        tb_ints(&t, "strides", 2, (int64_t[]){2, 2});
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "conv inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, (carve_dim[]){sym("N"), fix(8), fix(-1), fix(16)}), "conv symbolic H");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 17);
        carve_dim d[2][5] = {{sym("N"), fix(4), fix(5), fix(5)}, {fix(4), fix(2), fix(3), fix(3)}};
        infer_one(&t, "ConvTranspose", 2, f2, (int[]){4, 4}, d, 1);
        tb_ints(&t, "strides", 2, (int64_t[]){2, 2});
        tb_ints(&t, "output_padding", 2, (int64_t[]){1, 0});
        carve_node_set_attr_int(t.m, t.node, "group", 2);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "convtranspose inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, (carve_dim[]){sym("N"), fix(4), fix(12), fix(11)}), "convtranspose shape");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        carve_dim d[2][5] = {{sym("B"), sym("S"), fix(64)}, {fix(64), fix(32)}};
        infer_one(&t, "MatMul", 2, f2, (int[]){3, 2}, d, 1);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "matmul inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 3, (carve_dim[]){sym("B"), sym("S"), fix(32)}), "matmul symbolic");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        carve_dim d[2][5] = {{sym("B"), fix(1), fix(3), fix(4)}, {fix(5), fix(4), fix(2)}};
        infer_one(&t, "MatMul", 2, f2, (int[]){4, 3}, d, 1);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "matmul inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, (carve_dim[]){sym("B"), fix(5), fix(3), fix(2)}), "matmul broadcast");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        carve_dim d[2][5] = {{sym("B"), fix(3), fix(4)}, {fix(5)}};
        infer_one(&t, "MatMul", 2, f2, (int[]){3, 1}, d, 1);
        OT_CHECK(cv_infer_model(t.m, NULL) != CARVE_OK && errmsg_has(&t, "node 'n' (MatMul): input 0 has 4 columns but input 1 has 5 rows"),
                 "matmul K mismatch at inference: %s", carve_errmsg(t.ctx));
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        carve_dim d[3][5] = {{fix(4), sym("M")}, {sym("N"), fix(4)}, {fix(1)}};
        infer_one(&t, "Gemm", 3, (carve_dtype[]){CARVE_FLOAT, CARVE_FLOAT, CARVE_FLOAT}, (int[]){2, 2, 1}, d, 1);
        carve_node_set_attr_int(t.m, t.node, "transA", 1);
        carve_node_set_attr_int(t.m, t.node, "transB", 1);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "gemm inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 2, (carve_dim[]){sym("M"), sym("N")}), "gemm symbolic");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        carve_dim d[2][5] = {{sym("B"), fix(3), fix(4)}, {sym("B"), fix(4), fix(5)}};
        infer_one(&t, "Einsum", 2, f2, (int[]){3, 3}, d, 1);
        carve_node_set_attr_string(t.m, t.node, "equation", "bij,bjk->bki");
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "einsum inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 3, (carve_dim[]){sym("B"), fix(5), fix(3)}), "einsum symbolic");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        carve_dim d[1][5] = {{sym("N"), fix(3), sym("H"), fix(10)}};
        infer_one(&t, "MaxPool", 1, f2, (int[]){4}, d, 2);
        tb_ints(&t, "kernel_shape", 2, (int64_t[]){3, 3});
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "maxpool inference: %s", carve_errmsg(t.ctx));
        carve_dim want[4] = {sym("N"), fix(3), fix(-1), fix(8)};
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, want) && shape_is(&t, 1, CARVE_INT64, 4, want), "maxpool symbolic");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        carve_dim d[1][5] = {{sym("N"), sym("C"), fix(7), fix(7)}};
        infer_one(&t, "GlobalAveragePool", 1, f2, (int[]){4}, d, 1);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "globalavgpool inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 4, (carve_dim[]){sym("N"), sym("C"), fix(1), fix(1)}), "global pool symbolic");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        carve_dim d[1][5] = {{sym("B"), fix(3), fix(3)}};
        infer_one(&t, "Det", 1, f2, (int[]){3}, d, 1);
        OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "det inference: %s", carve_errmsg(t.ctx));
        OT_CHECK(shape_is(&t, 0, CARVE_FLOAT, 1, (carve_dim[]){sym("B")}), "det symbolic");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 17);
        carve_dim d[2][5] = {{sym("N"), fix(3), fix(8), fix(8)}, {fix(8), fix(2), fix(3), fix(3)}};
        infer_one(&t, "Conv", 2, f2, (int[]){4, 4}, d, 1);
        OT_CHECK(cv_infer_model(t.m, NULL) != CARVE_OK &&
                     errmsg_has(&t, "node 'n' (Conv): input 1 'W' has 2 input channels per group but input 0 'X' has 3 channels in 1 groups"),
                 "conv channel mismatch at inference: %s", carve_errmsg(t.ctx));
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        carve_dim d[1][5] = {{fix(1), fix(3), fix(2), fix(2)}};
        infer_one(&t, "MaxPool", 1, f2, (int[]){4}, d, 1);
        tb_ints(&t, "kernel_shape", 2, (int64_t[]){3, 3});
        OT_CHECK(cv_infer_model(t.m, NULL) != CARVE_OK && errmsg_has(&t, "larger than the padded input"),
                 "maxpool window too large: %s", carve_errmsg(t.ctx));
        tb_free(&t);
    }
}

/* ================================================================ errors at run time */

static void expect_run_error(tb *t, const char *part, const char *what)
{
    cv_val *y[2] = {NULL, NULL};
    carve_status s = tb_run(t, y);
    OT_CHECK(s != CARVE_OK && errmsg_has(t, part), "%s: expected an error with '%s', got '%s'", what, part,
             carve_errmsg(t->ctx));
    cv_val_unref(y[0]);
    cv_val_unref(y[1]);
}

static void test_errors(void)
{
    {
        tb t;
        tb_init(&t, 17);
        int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {4, 3, 3, 3}, bd[1] = {3};
        carve_value_id ins[3] = {tb_in(&t, "x", rnd(CARVE_FLOAT, 4, xd, 1)), tb_in(&t, "w", rnd(CARVE_FLOAT, 4, wd, 2)),
                                 tb_in(&t, "b", rnd(CARVE_FLOAT, 1, bd, 3))};
        tb_node(&t, "Conv", 3, ins, 1);
        expect_run_error(&t, "node 'n' (Conv): input 2 'B' [3] must be 1-D with 4 elements", "conv bias");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 17);
        int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {4, 3, 3, 3};
        carve_value_id ins[2] = {tb_in(&t, "x", rnd(CARVE_FLOAT, 4, xd, 1)), tb_in(&t, "w", rnd(CARVE_FLOAT, 4, wd, 2))};
        tb_node(&t, "Conv", 2, ins, 1);
        tb_ints(&t, "strides", 1, (int64_t[]){2});
        expect_run_error(&t, "attribute 'strides' has 1 values, expected 2", "conv strides count");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 17);
        int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {4, 3, 3, 3};
        carve_value_id ins[2] = {tb_in(&t, "x", rnd(CARVE_FLOAT, 4, xd, 1)), tb_in(&t, "w", rnd(CARVE_FLOAT, 4, wd, 2))};
        tb_node(&t, "Conv", 2, ins, 1);
        carve_node_set_attr_string(t.m, t.node, "auto_pad", "SAME");
        expect_run_error(&t, "attribute 'auto_pad' is 'SAME'", "conv auto_pad");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        int64_t ad[3] = {2, 3, 4}, bd[3] = {3, 4, 5};
        carve_value_id ins[2] = {tb_in(&t, "a", rnd(CARVE_FLOAT, 3, ad, 1)), tb_in(&t, "b", rnd(CARVE_FLOAT, 3, bd, 2))};
        tb_node(&t, "MatMul", 2, ins, 1);
        expect_run_error(&t, "the batch dims of input 'A' [2,3,4] and input 'B' [3,4,5] do not broadcast", "matmul batch");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 13);
        int64_t ad[2] = {2, 3}, bd[2] = {3, 4}, cd[1] = {3};
        carve_value_id ins[3] = {tb_in(&t, "a", rnd(CARVE_FLOAT, 2, ad, 1)), tb_in(&t, "b", rnd(CARVE_FLOAT, 2, bd, 2)),
                                 tb_in(&t, "c", rnd(CARVE_FLOAT, 1, cd, 3))};
        tb_node(&t, "Gemm", 3, ins, 1);
        expect_run_error(&t, "input 2 'C' [3] does not broadcast to the output [2,4]", "gemm C");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        int64_t ad[2] = {2, 3};
        carve_value_id in = tb_in(&t, "a", rnd(CARVE_FLOAT, 2, ad, 1));
        tb_node(&t, "Einsum", 1, &in, 1);
        carve_node_set_attr_string(t.m, t.node, "equation", "ijk->i");
        expect_run_error(&t, "term 0 has 3 labels but input 0 has rank 2", "einsum rank");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        int64_t ad[2] = {2, 3}, bd[2] = {4, 3};
        carve_value_id ins[2] = {tb_in(&t, "a", rnd(CARVE_FLOAT, 2, ad, 1)), tb_in(&t, "b", rnd(CARVE_FLOAT, 2, bd, 2))};
        tb_node(&t, "Einsum", 2, ins, 1);
        carve_node_set_attr_string(t.m, t.node, "equation", "ij,ij->i");
        expect_run_error(&t, "input 1 dim 0 is 4 but that label has size 2 elsewhere", "einsum sizes");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 11);
        int64_t xd[2] = {2, 3};
        carve_value_id in = tb_in(&t, "x", rnd(CARVE_FLOAT, 2, xd, 1));
        tb_node(&t, "Det", 1, &in, 1);
        expect_run_error(&t, "input 0 'X' [2,3] is not a batch of square matrices", "det square");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 11);
        int64_t xd[4] = {1, 1, 2, 2};
        cv_val *iv = cv_val_new(CARVE_INT64, 4, xd);
        ((int64_t *)iv->data)[3] = 99;
        carve_value_id ins[2] = {tb_in(&t, "x", rnd(CARVE_FLOAT, 4, xd, 1)), tb_in(&t, "i", iv)};
        tb_node(&t, "MaxUnpool", 2, ins, 1);
        tb_ints(&t, "kernel_shape", 2, (int64_t[]){2, 2});
        tb_ints(&t, "strides", 2, (int64_t[]){2, 2});
        expect_run_error(&t, "input 1 'I' element 3 is 99, outside the output", "maxunpool index");
        tb_free(&t);
    }
    {
        tb t;
        tb_init(&t, 12);
        int64_t xd[4] = {1, 1, 4, 4};
        carve_value_id in = tb_in(&t, "x", rnd(CARVE_FLOAT, 4, xd, 1));
        tb_node(&t, "MaxPool", 1, &in, 1);
        expect_run_error(&t, "attribute 'kernel_shape' is missing", "maxpool kernel");
        tb_free(&t);
    }
}

int main(void)
{
    test_conv();
    test_depthwise_exact();
    test_convtranspose();
    test_pools();
    test_global_pools();
    test_maxunpool();
    test_matmul();
    test_gemm();
    test_einsum();
    test_det();
    test_inference();
    test_errors();
    return ot_finish();
}

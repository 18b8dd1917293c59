/* d_elementwise.c: decompositions of the composite element-wise ops (Elu,
 * Celu, Selu, HardSigmoid, HardSwish, Gelu, PRelu) into core ops.
 *
 * Each follows the ONNX function body of the op (the opset 18+ bodies of
 * Elu, Selu, HardSigmoid, PRelu; HardSwish's with HardSigmoid inlined,
 * since HardSigmoid is composite; the context-dependent bodies of Celu,
 * with Elu inlined, and Gelu) and names its pieces after the body's values
 * ("<node>/XLessThanZero"). Constants are made in X's dtype; when X's dtype
 * is not known yet, a float32 constant goes through CastLike as the bodies
 * do. Constant-only subexpressions of the bodies (Sqrt(2), Sqrt(2/pi)) are
 * computed here in double.
 *
 * The pieces must be ops of the model's opset with the meaning used here:
 * Where exists from opset 9, CastLike from 15, the binary ops broadcast
 * numpy-style from 7 (before, B broadcasts to A with `broadcast`=1, which
 * cv_rw_node sets) and Min/Max from 8. Below those, Elu, Selu and PRelu
 * take a Where-free form (max(x,0) and min(x,0) as Relu(x) and
 * -Relu(-x), constants on the right) and HardSigmoid a Clip with its
 * opset-6 attributes; cv_decompose_node_tail checks every piece against
 * the opset and refuses, naming the node, what it cannot express. */
#include "k_elementwise.h"

#include <math.h>
#include <string.h>

static carve_value_id in_of(cv_rw *rw, uint32_t i) { return rw->m->nodes[rw->node].in[i]; }
static carve_value_id out_of(cv_rw *rw) { return rw->m->nodes[rw->node].out[0]; }

/* A scalar constant of X's dtype. */
static carve_value_id konst(cv_rw *rw, const char *piece, double v)
{
    carve_value_id x = in_of(rw, 0);
    const cv_type *t = &rw->m->values[x].type;
    if (t->kind == CARVE_TYPE_TENSOR && t->dtype)
        return cv_rw_scalar_f(rw, piece, t->dtype, v);
    carve_value_id f = cv_rw_scalar_f(rw, piece, CARVE_FLOAT, v);
    if (f == CARVE_NONE)
        return CARVE_NONE;
    carve_value_id ins[2] = {f, x};
    char name[64];
    snprintf(name, sizeof name, "%sCast", piece);
    carve_node_id n = cv_rw_node(rw, "CastLike", name, 2, ins, 1, NULL);
    return n == CARVE_NONE ? CARVE_NONE : rw->m->nodes[n].out[0];
}

/* A piece op(ins...) writing `out` (CARVE_NONE: a fresh value). */
static carve_value_id piece(cv_rw *rw, const char *op, const char *name, uint32_t n_in, carve_value_id a,
                            carve_value_id b, carve_value_id c, carve_value_id out)
{
    carve_value_id ins[3] = {a, b, c};
    return cv_rw_piece(rw, op, name, n_in, ins, out);
}

#define OP1(op, name, a, out) piece(rw, op, name, 1, a, CARVE_NONE, CARVE_NONE, out)
#define OP2(op, name, a, b, out) piece(rw, op, name, 2, a, b, CARVE_NONE, out)
#define OP3(op, name, a, b, c, out) piece(rw, op, name, 3, a, b, c, out)
#define NEW CARVE_NONE

static carve_status done(carve_value_id last) { return last == CARVE_NONE ? CARVE_ERR_NOMEM : CARVE_OK; }

/* Elu's body on x (alpha_v: Alpha's value, or CARVE_NONE for alpha = 1,
 * whose Mul is the identity) writing y. */
static carve_value_id elu_body(cv_rw *rw, carve_value_id x, carve_value_id alpha_v, carve_value_id y)
{
    carve_value_id zero = konst(rw, "Zero", 0), one = konst(rw, "One", 1);
    carve_value_id lt = OP2("Less", "XLessThanZero", x, zero, NEW);
    carve_value_id ex = OP1("Exp", "ExpX", x, NEW);
    carve_value_id em1 = OP2("Sub", "ExpXSubOne", ex, one, NEW);
    if (alpha_v != CARVE_NONE)
        em1 = OP2("Mul", "AlphaMulExpXSubOne", alpha_v, em1, NEW);
    return OP3("Where", "Y", lt, em1, x, y);
}

static int64_t opset_of(cv_rw *rw) { return carve_model_opset(rw->m, ""); }

/* Before opset 9 (no Where): alpha * (Exp(min(x, 0)) - 1) + max(x, 0),
 * min(x, 0) as Neg(Relu(Neg(x))). For x >= 0 the first term is exactly 0,
 * for x < 0 the second; NaN stays NaN. Writes y (scaled by gamma when
 * gamma_v is given: Selu). */
static carve_value_id elu_old(cv_rw *rw, carve_value_id x, carve_value_id alpha_v, carve_value_id gamma_v,
                              carve_value_id y)
{
    carve_value_id one = konst(rw, "One", 1);
    carve_value_id pos = OP1("Relu", "MaxXZero", x, NEW);
    carve_value_id nx = OP1("Neg", "NegX", x, NEW);
    carve_value_id rn = OP1("Relu", "MaxNegXZero", nx, NEW);
    carve_value_id mn = OP1("Neg", "MinXZero", rn, NEW);
    carve_value_id ex = OP1("Exp", "ExpMinXZero", mn, NEW);
    carve_value_id em1 = OP2("Sub", "ExpSubOne", ex, one, NEW);
    carve_value_id neg = OP2("Mul", "AlphaMulExpSubOne", em1, alpha_v, NEW);
    if (gamma_v == CARVE_NONE)
        return OP2("Add", "Y", pos, neg, y);
    carve_value_id sum = OP2("Add", "Sum", pos, neg, NEW);
    return OP2("Mul", "Y", sum, gamma_v, y);
}

carve_status d_elu(cv_rw *rw)
{
    if (opset_of(rw) < 9)
        return done(elu_old(rw, in_of(rw, 0), konst(rw, "Alpha", cv_attr_f(rw->m, rw->node, "alpha", 1.0f)),
                            CARVE_NONE, out_of(rw)));
    carve_value_id alpha = konst(rw, "Alpha", cv_attr_f(rw->m, rw->node, "alpha", 1.0f));
    if (alpha == CARVE_NONE)
        return CARVE_ERR_NOMEM;
    return done(elu_body(rw, in_of(rw, 0), alpha, out_of(rw)));
}

carve_status d_celu(cv_rw *rw)
{
    carve_value_id x = in_of(rw, 0);
    carve_value_id alpha = konst(rw, "alpha", cv_attr_f(rw->m, rw->node, "alpha", 1.0f));
    carve_value_id xa = OP2("Div", "X_alpha", x, alpha, NEW);
    if (xa == CARVE_NONE)
        return CARVE_ERR_NOMEM;
    carve_value_id elu = elu_body(rw, xa, CARVE_NONE, NEW);
    return done(OP2("Mul", "Y", alpha, elu, out_of(rw)));
}

carve_status d_selu(cv_rw *rw)
{
    carve_value_id x = in_of(rw, 0);
    carve_value_id alpha = konst(rw, "Alpha", cv_attr_f(rw->m, rw->node, "alpha", 1.67326319217681884765625f));
    carve_value_id gamma = konst(rw, "Gamma", cv_attr_f(rw->m, rw->node, "gamma", 1.05070102214813232421875f));
    if (opset_of(rw) < 9)
        return done(elu_old(rw, x, alpha, gamma, out_of(rw)));
    carve_value_id zero = konst(rw, "Zero", 0);
    carve_value_id ex = OP1("Exp", "ExpX", x, NEW);
    carve_value_id aex = OP2("Mul", "AlphaMulExpX", alpha, ex, NEW);
    carve_value_id sub = OP2("Sub", "AlphaMulExpXSubAlpha", aex, alpha, NEW);
    carve_value_id neg = OP2("Mul", "Neg", gamma, sub, NEW);
    carve_value_id pos = OP2("Mul", "Pos", gamma, x, NEW);
    carve_value_id lt = OP2("Less", "XLessThanZero", x, zero, NEW);
    return done(OP3("Where", "Y", lt, neg, pos, out_of(rw)));
}

/* HardSigmoid's body: Max(Min(X * alpha + beta, 1), 0). */
static carve_value_id hardsigmoid_body(cv_rw *rw, double alpha_f, double beta_f, carve_value_id y)
{
    carve_value_id x = in_of(rw, 0);
    carve_value_id alpha = konst(rw, "Alpha", alpha_f), beta = konst(rw, "Beta", beta_f);
    carve_value_id zero = konst(rw, "Zero", 0), one = konst(rw, "One", 1);
    carve_value_id ax = OP2("Mul", "AlphaMulX", x, alpha, NEW);
    carve_value_id axb = OP2("Add", "AlphaMulXAddBeta", ax, beta, NEW);
    carve_value_id mn = OP2("Min", "MinOneOrAlphaMulXAddBeta", axb, one, NEW);
    return OP2("Max", y == NEW ? "HS_X" : "Y", mn, zero, y);
}

carve_status d_hardsigmoid(cv_rw *rw)
{
    if (opset_of(rw) < 8) { /* Min/Max broadcast from opset 8: Clip with its opset-6 attributes */
        carve_value_id x = in_of(rw, 0);
        carve_value_id alpha = konst(rw, "Alpha", cv_attr_f(rw->m, rw->node, "alpha", 0.2f));
        carve_value_id beta = konst(rw, "Beta", cv_attr_f(rw->m, rw->node, "beta", 0.5f));
        carve_value_id ax = OP2("Mul", "AlphaMulX", x, alpha, NEW);
        carve_value_id axb = OP2("Add", "AlphaMulXAddBeta", ax, beta, NEW);
        carve_value_id y = out_of(rw);
        carve_node_id c = axb == CARVE_NONE ? CARVE_NONE : cv_rw_node(rw, "Clip", "Y", 1, &axb, 1, &y);
        if (c == CARVE_NONE || carve_node_set_attr_float(rw->m, c, "min", 0.0f) ||
            carve_node_set_attr_float(rw->m, c, "max", 1.0f))
            return CARVE_ERR_NOMEM;
        return CARVE_OK;
    }
    return done(hardsigmoid_body(rw, cv_attr_f(rw->m, rw->node, "alpha", 0.2f),
                                 cv_attr_f(rw->m, rw->node, "beta", 0.5f), out_of(rw)));
}

carve_status d_hardswish(cv_rw *rw)
{
    carve_value_id hs = hardsigmoid_body(rw, 1.0f / 6.0f, 0.5, NEW);
    return done(OP2("Mul", "Y", in_of(rw, 0), hs, out_of(rw)));
}

carve_status d_gelu(cv_rw *rw)
{
    carve_value_id x = in_of(rw, 0);
    const char *ap = cv_attr_s(rw->m, rw->node, "approximate", "none");
    carve_value_id half = konst(rw, "Half", 0.5), one = konst(rw, "One", 1);
    carve_value_id phi;
    if (!strcmp(ap, "tanh")) {
        /* SqrtTwoOverPi = Sqrt(CastLike(float 0.63661977236, X)) */
        carve_value_id k = konst(rw, "SqrtTwoOverPi", sqrt((double)0.63661977236f));
        carve_value_id c0 = konst(rw, "C0", 0.044715), three = konst(rw, "Three", 3);
        carve_value_id cube = OP2("Pow", "XCubed", x, three, NEW);
        carve_value_id c0cube = OP2("Mul", "XCubedC0", c0, cube, NEW);
        carve_value_id sum = OP2("Add", "XC0XCubed", x, c0cube, NEW);
        carve_value_id arg = OP2("Mul", "TanhInput", k, sum, NEW);
        carve_value_id th = OP1("Tanh", "ErfApprox", arg, NEW);
        phi = OP2("Add", "PhiApprox", one, th, NEW);
    } else if (!strcmp(ap, "none")) {
        carve_value_id sqrt2 = konst(rw, "SqrtTwo", sqrt(2.0));
        carve_value_id xs = OP2("Div", "XSqrt", x, sqrt2, NEW);
        carve_value_id erf = OP1("Erf", "ErfXSqrt", xs, NEW);
        phi = OP2("Add", "Phi", one, erf, NEW);
    } else {
        return cv_node_err(rw->m, rw->node, CARVE_ERR_UNSUPPORTED, "",
                           "attribute 'approximate' is \"%s\", expected \"none\" or \"tanh\"", ap);
    }
    carve_value_id hx = OP2("Mul", "MultX", half, x, NEW);
    return done(OP2("Mul", "Y", hx, phi, out_of(rw)));
}

carve_status d_prelu(cv_rw *rw)
{
    carve_value_id x = in_of(rw, 0), slope = in_of(rw, 1);
    if (opset_of(rw) < 9) { /* no Where: max(x, 0) - slope * max(-x, 0), exact on both sides */
        carve_value_id pos = OP1("Relu", "MaxXZero", x, NEW);
        carve_value_id nx = OP1("Neg", "NegX", x, NEW);
        carve_value_id rn = OP1("Relu", "MaxNegXZero", nx, NEW);
        carve_value_id sn = OP2("Mul", "SlopeMulMaxNegXZero", rn, slope, NEW);
        return done(OP2("Sub", "Y", pos, sn, out_of(rw)));
    }
    carve_value_id zero = konst(rw, "Zero", 0);
    carve_value_id lt = OP2("Less", "XLessThanZero", x, zero, NEW);
    carve_value_id sx = OP2("Mul", "SlopeMulX", slope, x, NEW);
    return done(OP3("Where", "Y", lt, sx, x, out_of(rw)));
}

/* recompose.c: subgraphs that exporters write for an op ONNX has are made
 * that op again, when the match is exact:
 *
 *   layer_norm  ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div
 *               (or Mul by Reciprocal), then optionally Mul gamma, Add beta
 *               -> LayerNormalization (axis from the reduced axes)
 *   hard_swish  x * HardSigmoid(x) (alpha 1/6, beta 1/2), or
 *               x * Clip(x + 3, 0, 6) / 6 (or * 1/6)   -> HardSwish
 *   gelu_erf    x * 0.5 * (1 + Erf(x / sqrt 2))         -> Gelu
 *   gelu_tanh   x * 0.5 * (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *                                                       -> Gelu tanh
 *
 * The patterns are declared in one table (`patterns` below): the op each
 * makes, the first opset that has it, and its matcher. A matcher walks
 * back from the pattern's last node; a match needs every intermediate value
 * read only inside the pattern and no graph output, the constants exactly
 * the pattern's (scalars, within one ulp of float32 where an exporter
 * rounds them), one float dtype throughout, and axes that the new op can
 * say. Q/DQ nodes are never members, so a quantized chain (each op in its
 * own QDQ unit) never matches across its Q/DQ boundaries. The new node
 * takes the last node's place and output and is named after it
 * ("<last>/LayerNormalization"); the members are removed into it, which
 * the report shows. Nodes a caller excludes (skip lists) are never
 * members: a pattern with one of them stays as it is. */
#include "passes.h"

#include <math.h>
#include <string.h>

typedef struct rc_match {
    carve_node_id members[16];
    uint32_t n;
    carve_value_id x;         /* the pattern's input */
    carve_value_id in[3];     /* the new node's other inputs (CARVE_NONE: none) */
    int64_t axis;             /* layer_norm */
    float epsilon;            /* layer_norm */
    bool tanh;                /* gelu */
} rc_match;

/* last: the pattern's last node, of kind `kind` (RC_*, below) */
typedef bool (*rc_matcher)(cv_fold *f, carve_node_id last, uint32_t kind, rc_match *mt);

/* op-list: data (the ops a pattern may end in; RC_* are their kinds) */
static const char *const last_ops[] = {"Add", "Mul", "Div"};
enum { RC_ADD = 1, RC_MUL, RC_DIV };
#define RC_ENDS(k) (1u << (k))

typedef struct rc_pattern {
    const char *name;
    const char *op;    /* the op it makes */
    int since;         /* first ai.onnx opset with that op */
    uint32_t ends;     /* RC_ENDS of the kinds its last node may be: no walk starts elsewhere */
    rc_matcher match;
} rc_pattern;

/* ---------------------------------------------------------------- helpers */

/* The live node of the same graph that writes v, or CARVE_NONE. */
static carve_node_id producer(const carve_model *m, carve_value_id v, carve_graph_id g)
{
    if (v == CARVE_NONE)
        return CARVE_NONE;
    carve_node_id p = m->values[v].producer;
    return p != CARVE_NONE && !m->nodes[p].dead && m->nodes[p].graph == g ? p : CARVE_NONE;
}

/* v is read once (by the next member) and is no graph output. */
static bool inner(const cv_fold *f, carve_value_id v)
{
    return v != CARVE_NONE && v < f->n_uses && f->uses[v] == 1 && !f->is_out[v];
}

static bool push(rc_match *mt, carve_node_id n)
{
    if (mt->n >= sizeof mt->members / sizeof mt->members[0])
        return false;
    mt->members[mt->n++] = n;
    return true;
}

/* The producer of v when it is op `op` with v as its only output in use. */
static carve_node_id prod_op(cv_fold *f, carve_value_id v, carve_graph_id g, const char *op)
{
    carve_node_id p = producer(f->m, v, g);
    if (p == CARVE_NONE || !cv_node_is(&f->m->nodes[p], op) || !inner(f, v))
        return CARVE_NONE;
    const cv_node *n = &f->m->nodes[p];
    for (uint32_t j = 1; j < n->n_out; j++)
        if (n->out[j] != CARVE_NONE && (f->uses[n->out[j]] || f->is_out[n->out[j]]))
            return CARVE_NONE;
    return p;
}

static bool float_dtype(carve_dtype t) { return t == CARVE_FLOAT || t == CARVE_FLOAT16 || t == CARVE_DOUBLE || t == CARVE_BFLOAT16; }

static carve_dtype dtype_of(const carve_model *m, carve_value_id v)
{
    const cv_type *t = &m->values[v].type;
    return t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
}

/* A constant with one element (any rank), as a double. */
static bool scalar(const carve_model *m, carve_value_id v, double *x)
{
    const cv_tensor *t = v == CARVE_NONE ? NULL : cv_fold_const(m, v);
    if (!t || t->nelem != 1 || !t->data)
        return false;
    switch (t->dtype) {
    case CARVE_FLOAT: { float a; memcpy(&a, t->data, 4); *x = a; return true; }
    case CARVE_DOUBLE: memcpy(x, t->data, 8); return true;
    case CARVE_FLOAT16: { uint16_t h; memcpy(&h, t->data, 2); *x = cv_f16_to_f32(h); return true; }
    case CARVE_BFLOAT16: { uint16_t h; memcpy(&h, t->data, 2); *x = cv_bf16_to_f32(h); return true; }
    case CARVE_INT32: { int32_t a; memcpy(&a, t->data, 4); *x = a; return true; }
    case CARVE_INT64: { int64_t a; memcpy(&a, t->data, 8); *x = (double)a; return true; }
    default: return false;
    }
}

/* A scalar constant equal to want, up to the rounding of the dtype it is
 * stored in (exporters write 1/sqrt(2) or 1/6 rounded to float32 or f16). */
static bool scalar_is(const carve_model *m, carve_value_id v, double want)
{
    double x;
    if (!scalar(m, v, &x))
        return false;
    double tol = dtype_of(m, v) == CARVE_FLOAT16 || dtype_of(m, v) == CARVE_BFLOAT16 ? 4e-3 : 2e-7;
    return fabs(x - want) <= tol * fabs(want) + 1e-12;
}

/* Of a binary node: the input that is not `this`, with its index. */
static carve_value_id other(const cv_node *n, carve_value_id this)
{
    if (n->n_in != 2)
        return CARVE_NONE;
    return n->in[0] == this ? n->in[1] : n->in[1] == this ? n->in[0] : CARVE_NONE;
}

/* Which input of binary node n is the scalar constant `want`: the other
 * one, or CARVE_NONE. */
static carve_value_id with_scalar(const carve_model *m, const cv_node *n, double want)
{
    if (n->n_in != 2)
        return CARVE_NONE;
    if (scalar_is(m, n->in[1], want))
        return n->in[0];
    if (scalar_is(m, n->in[0], want))
        return n->in[1];
    return CARVE_NONE;
}

/* ReduceMean's axes (attribute before opset 18, input after), normalized
 * to [0, rank); keepdims must be 1. Returns the count, -1 when unknown. */
static int mean_axes(const carve_model *m, carve_node_id id, int rank, int64_t *axes, int cap)
{
    const cv_node *n = &m->nodes[id];
    if (cv_attr_i(m, id, "keepdims", 1) != 1)
        return -1;
    const int64_t *a = NULL;
    int k = cv_attr_ints(m, id, "axes", &a);
    if (k < 0 && n->n_in >= 2 && n->in[1] != CARVE_NONE) {
        const cv_tensor *t = cv_fold_const(m, n->in[1]);
        if (!t || t->dtype != CARVE_INT64 || !t->data)
            return -1;
        k = (int)t->nelem;
        a = t->data;
    }
    if (k <= 0 || k > cap)
        return -1; /* no axes: every axis, which LayerNormalization says as axis 0; keep it simple */
    for (int i = 0; i < k; i++) {
        int64_t x = a[i] < 0 ? a[i] + rank : a[i];
        if (x < 0 || x >= rank)
            return -1;
        axes[i] = x;
    }
    return k;
}

static int rank_of(const carve_model *m, carve_value_id v)
{
    const cv_type *t = &m->values[v].type;
    return t->kind == CARVE_TYPE_TENSOR ? t->rank : -1;
}

/* Does constant c broadcast to the trailing `nr` dims of x's shape without
 * touching the leading ones (a per-feature scale or bias)? */
static bool per_feature(const carve_model *m, carve_value_id c, carve_value_id x, int nr)
{
    const cv_tensor *t = cv_fold_const(m, c);
    int r = rank_of(m, x);
    if (!t || t->dtype != dtype_of(m, x) || r < nr)
        return false;
    for (int i = 0; i < t->rank; i++) {
        int xi = r - t->rank + i;
        if (xi < r - nr) {
            if (t->dims[i] != 1)
                return false;
        } else {
            const carve_dim *d = &m->values[x].type.dims[xi];
            if (t->dims[i] != 1 && (d->param || d->value != t->dims[i]))
                return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- layer_norm */

static bool match_layer_norm(cv_fold *f, carve_node_id last, uint32_t kind, rc_match *mt)
{
    carve_model *m = f->m;
    carve_graph_id g = m->nodes[last].graph;
    carve_node_id add_b = CARVE_NONE, mul_g = CARVE_NONE, norm = last;
    carve_value_id beta = CARVE_NONE, gamma = CARVE_NONE;
    const cv_node *n = &m->nodes[last];
    /* optional affine tail: Add(Mul(norm, gamma), beta) or Mul(norm, gamma) */
    if (kind == RC_ADD && n->n_in == 2) {
        for (int s = 0; s < 2 && add_b == CARVE_NONE; s++)
            if (cv_fold_const(m, n->in[1 - s]) && prod_op(f, n->in[s], g, "Mul") != CARVE_NONE) {
                add_b = last;
                beta = n->in[1 - s];
                mul_g = prod_op(f, n->in[s], g, "Mul");
            }
        if (add_b == CARVE_NONE)
            return false;
    } else if (kind == RC_MUL) {
        mul_g = last;
    }
    if (mul_g != CARVE_NONE) {
        const cv_node *mn = &m->nodes[mul_g];
        norm = CARVE_NONE;
        for (int s = 0; s < 2 && mn->n_in == 2 && norm == CARVE_NONE; s++) {
            carve_node_id p = prod_op(f, mn->in[s], g, "Div");
            if (p == CARVE_NONE)
                p = prod_op(f, mn->in[s], g, "Mul");
            if (p != CARVE_NONE && cv_fold_const(m, mn->in[1 - s])) {
                norm = p;
                gamma = mn->in[1 - s];
            }
        }
        if (norm == CARVE_NONE)
            return false;
    }
    /* norm: Div(d, Sqrt(var + eps)) or Mul(d, Reciprocal(Sqrt(var + eps))) */
    const cv_node *nn = &m->nodes[norm];
    if (nn->n_in != 2)
        return false;
    carve_node_id sqrt_n = CARVE_NONE, recip = CARVE_NONE, sub = CARVE_NONE;
    carve_value_id d = CARVE_NONE;
    if (cv_node_is(nn, "Div")) {
        d = nn->in[0];
        sqrt_n = prod_op(f, nn->in[1], g, "Sqrt");
    } else if (cv_node_is(nn, "Mul")) {
        for (int s = 0; s < 2 && recip == CARVE_NONE; s++) {
            recip = prod_op(f, nn->in[s], g, "Reciprocal");
            d = nn->in[1 - s];
        }
        if (recip != CARVE_NONE)
            sqrt_n = prod_op(f, m->nodes[recip].in[0], g, "Sqrt");
    }
    if (sqrt_n == CARVE_NONE || d == CARVE_NONE)
        return false;
    /* d = Sub(x, mean) is read by the Pow and by norm only */
    sub = producer(m, d, g);
    if (sub == CARVE_NONE || !cv_node_is(&m->nodes[sub], "Sub") || f->uses[d] != 2 || f->is_out[d])
        return false;
    carve_value_id x = m->nodes[sub].in[0];
    carve_node_id mean = prod_op(f, m->nodes[sub].in[1], g, "ReduceMean");
    if (mean == CARVE_NONE || m->nodes[mean].in[0] != x)
        return false;
    carve_node_id add_e = prod_op(f, m->nodes[sqrt_n].in[0], g, "Add");
    if (add_e == CARVE_NONE)
        return false;
    carve_value_id eps_v = CARVE_NONE, var = CARVE_NONE;
    for (int s = 0; s < 2 && eps_v == CARVE_NONE; s++)
        if (cv_fold_const(m, m->nodes[add_e].in[1 - s])) {
            eps_v = m->nodes[add_e].in[1 - s];
            var = m->nodes[add_e].in[s];
        }
    double eps;
    if (eps_v == CARVE_NONE || !scalar(m, eps_v, &eps) || !(eps >= 0) || eps > 1)
        return false; /* epsilon must be a constant */
    carve_node_id mean2 = prod_op(f, var, g, "ReduceMean");
    if (mean2 == CARVE_NONE)
        return false;
    carve_node_id pow_n = prod_op(f, m->nodes[mean2].in[0], g, "Pow");
    if (pow_n == CARVE_NONE || m->nodes[pow_n].in[0] != d || !scalar_is(m, m->nodes[pow_n].in[1], 2.0))
        return false;
    /* one float dtype throughout, shapes known */
    carve_dtype dt = dtype_of(m, x);
    int r = rank_of(m, x);
    if (!float_dtype(dt) || r < 1 || dtype_of(m, m->nodes[last].out[0]) != dt || dtype_of(m, d) != dt ||
        dtype_of(m, var) != dt)
        return false;
    /* both means over the same trailing axes [k, r) */
    int64_t a1[8], a2[8];
    int k1 = mean_axes(m, mean, r, a1, 8), k2 = mean_axes(m, mean2, r, a2, 8);
    if (k1 < 1 || k1 != k2)
        return false;
    bool seen[8] = {0};
    for (int i = 0; i < k1; i++) {
        if (a1[i] < r - k1 || seen[a1[i] - (r - k1)])
            return false;
        seen[a1[i] - (r - k1)] = true;
    }
    for (int i = 0; i < k2; i++) {
        bool in = false;
        for (int j = 0; j < k1; j++)
            in |= a2[i] == a1[j];
        if (!in)
            return false;
    }
    if (rank_of(m, var) != r)
        return false;
    if ((gamma != CARVE_NONE && !per_feature(m, gamma, x, k1)) || (beta != CARVE_NONE && !per_feature(m, beta, x, k1)))
        return false;
    carve_node_id order[] = {mean, sub, pow_n, mean2, add_e, sqrt_n, recip, norm, mul_g, add_b};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (order[i] != CARVE_NONE && !push(mt, order[i]))
            return false;
    mt->x = x;
    mt->in[0] = gamma;
    mt->in[1] = beta;
    mt->axis = r - k1;
    mt->epsilon = (float)eps;
    return true;
}

/* ---------------------------------------------------------------- hard_swish */

/* Clip(v, 0, 6) (bounds as attributes before opset 11, inputs after). */
static bool relu6(const carve_model *m, carve_node_id c)
{
    const cv_node *n = &m->nodes[c];
    if (n->n_in == 1)
        return cv_attr_f(m, c, "min", -INFINITY) == 0.0f && cv_attr_f(m, c, "max", INFINITY) == 6.0f;
    return n->n_in == 3 && scalar_is(m, n->in[1], 0.0) && scalar_is(m, n->in[2], 6.0);
}

static bool match_hard_swish(cv_fold *f, carve_node_id last, uint32_t kind, rc_match *mt)
{
    carve_model *m = f->m;
    carve_graph_id g = m->nodes[last].graph;
    const cv_node *n = &m->nodes[last];
    if (n->n_in != 2 || n->n_out != 1 || n->out[0] == CARVE_NONE)
        return false;
    /* x * HardSigmoid(x) with alpha 1/6, beta 1/2 */
    if (kind == RC_MUL) {
        for (int s = 0; s < 2; s++) {
            carve_node_id hs = prod_op(f, n->in[s], g, "HardSigmoid");
            if (hs == CARVE_NONE || m->nodes[hs].in[0] != n->in[1 - s])
                continue;
            if (fabsf(cv_attr_f(m, hs, "alpha", 0.2f) - 1.0f / 6.0f) > 1e-7f || cv_attr_f(m, hs, "beta", 0.5f) != 0.5f)
                return false;
            mt->x = n->in[1 - s];
            return push(mt, hs) && push(mt, last);
        }
    }
    /* (x * Clip(x + 3, 0, 6)) / 6, or the product times 1/6 */
    carve_value_id prod = CARVE_NONE;
    if (kind == RC_DIV && scalar_is(m, n->in[1], 6.0))
        prod = n->in[0];
    else if (kind == RC_MUL)
        prod = with_scalar(m, n, 1.0 / 6.0);
    carve_node_id mul = prod == CARVE_NONE ? CARVE_NONE : prod_op(f, prod, g, "Mul");
    if (mul == CARVE_NONE)
        return false;
    for (int s = 0; s < 2; s++) {
        carve_node_id clip = prod_op(f, m->nodes[mul].in[s], g, "Clip");
        carve_value_id x = m->nodes[mul].in[1 - s];
        if (clip == CARVE_NONE || !relu6(m, clip))
            continue;
        carve_node_id add = prod_op(f, m->nodes[clip].in[0], g, "Add");
        if (add == CARVE_NONE || with_scalar(m, &m->nodes[add], 3.0) != x)
            continue;
        mt->x = x;
        return push(mt, add) && push(mt, clip) && push(mt, mul) && push(mt, last);
    }
    return false;
}

/* ---------------------------------------------------------------- gelu */

/* The 1 + Erf(x / sqrt 2) (or Tanh form) factor's members, from the Add. */
static bool gelu_core(cv_fold *f, carve_node_id add1, carve_value_id x, rc_match *mt)
{
    carve_model *m = f->m;
    carve_graph_id g = m->nodes[add1].graph;
    carve_value_id t = with_scalar(m, &m->nodes[add1], 1.0);
    carve_node_id erf = prod_op(f, t, g, "Erf");
    if (erf != CARVE_NONE) {
        const cv_node *e = &m->nodes[erf];
        carve_node_id sc = prod_op(f, e->in[0], g, "Div");
        bool ok = sc != CARVE_NONE && m->nodes[sc].in[0] == x && scalar_is(m, m->nodes[sc].in[1], sqrt(2.0));
        if (!ok) {
            sc = prod_op(f, e->in[0], g, "Mul");
            ok = sc != CARVE_NONE && with_scalar(m, &m->nodes[sc], 1.0 / sqrt(2.0)) == x;
        }
        mt->tanh = false;
        return ok && push(mt, sc) && push(mt, erf) && push(mt, add1);
    }
    carve_node_id th = prod_op(f, t, g, "Tanh");
    if (th == CARVE_NONE)
        return false;
    /* Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) */
    carve_node_id s = prod_op(f, m->nodes[th].in[0], g, "Mul");
    carve_value_id inner_v = s == CARVE_NONE ? CARVE_NONE : with_scalar(m, &m->nodes[s], 0.7978845608028654 /* sqrt(2/pi) */);
    carve_node_id add = prod_op(f, inner_v, g, "Add");
    if (add == CARVE_NONE)
        return false;
    carve_value_id cube_part = other(&m->nodes[add], x);
    carve_node_id k = prod_op(f, cube_part, g, "Mul");
    carve_value_id cube = k == CARVE_NONE ? CARVE_NONE : with_scalar(m, &m->nodes[k], 0.044715);
    carve_node_id pw = prod_op(f, cube, g, "Pow");
    if (pw == CARVE_NONE || m->nodes[pw].in[0] != x || !scalar_is(m, m->nodes[pw].in[1], 3.0))
        return false;
    mt->tanh = true;
    return push(mt, pw) && push(mt, k) && push(mt, add) && push(mt, s) && push(mt, th) && push(mt, add1);
}

static bool match_gelu(cv_fold *f, carve_node_id last, uint32_t kind, rc_match *mt)
{
    carve_model *m = f->m;
    carve_graph_id g = m->nodes[last].graph;
    const cv_node *n = &m->nodes[last];
    if (kind != RC_MUL || n->n_in != 2)
        return false;
    /* (x * (1 + erf)) * 0.5 */
    carve_value_id p = with_scalar(m, n, 0.5);
    carve_node_id mul = prod_op(f, p, g, "Mul");
    for (int s = 0; mul != CARVE_NONE && s < 2; s++) {
        carve_node_id add1 = prod_op(f, m->nodes[mul].in[s], g, "Add");
        carve_value_id x = m->nodes[mul].in[1 - s];
        rc_match t = *mt;
        if (add1 != CARVE_NONE && gelu_core(f, add1, x, &t) && push(&t, mul) && push(&t, last)) {
            *mt = t;
            mt->x = x;
            return true;
        }
    }
    /* (x * 0.5) * (1 + erf), in either order */
    for (int s = 0; s < 2; s++) {
        carve_node_id half = prod_op(f, n->in[s], g, "Mul");
        carve_node_id add1 = prod_op(f, n->in[1 - s], g, "Add");
        carve_value_id x = half == CARVE_NONE ? CARVE_NONE : with_scalar(m, &m->nodes[half], 0.5);
        rc_match t = *mt;
        if (x != CARVE_NONE && add1 != CARVE_NONE && f->uses[x] >= 2 && push(&t, half) && gelu_core(f, add1, x, &t) &&
            push(&t, last)) {
            *mt = t;
            mt->x = x;
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------- the table */

/* op-list: data (a declared pattern table) */
static const rc_pattern patterns[] = {
    {"layer_norm", "LayerNormalization", 17, RC_ENDS(RC_ADD) | RC_ENDS(RC_MUL) | RC_ENDS(RC_DIV), match_layer_norm},
    {"hard_swish", "HardSwish", 14, RC_ENDS(RC_MUL) | RC_ENDS(RC_DIV), match_hard_swish},
    {"gelu", "Gelu", 20, RC_ENDS(RC_MUL), match_gelu},
};

/* ---------------------------------------------------------------- driver */

static bool member_ok(const cv_fold *f, const cv_recomp_cfg *rc, const rc_match *mt)
{
    const carve_model *m = f->m;
    carve_dtype dt = dtype_of(m, mt->x);
    if (!float_dtype(dt))
        return false;
    for (uint32_t i = 0; i < mt->n; i++) {
        const cv_node *n = &m->nodes[mt->members[i]];
        if (n->dead || (rc->excluded && rc->excluded(mt->members[i], rc->user)))
            return false;
        for (uint32_t j = 0; j < n->n_out; j++)
            if (n->out[j] != CARVE_NONE && dtype_of(m, n->out[j]) != dt)
                return false;
    }
    return true;
}

static carve_status log_match(cv_recomp_cfg *rc, const rc_pattern *p, carve_node_id made, const rc_match *mt)
{
    cv_recomp_match *mm = cv_realloc(rc->matches, (rc->n_matches + 1) * sizeof *mm);
    if (!mm)
        return CARVE_ERR_NOMEM;
    rc->matches = mm;
    carve_node_id *mem = cv_realloc(rc->members, (rc->n_members + mt->n) * sizeof *mem);
    if (!mem)
        return CARVE_ERR_NOMEM;
    rc->members = mem;
    mm[rc->n_matches++] = (cv_recomp_match){p->name, made, rc->n_members, mt->n};
    memcpy(mem + rc->n_members, mt->members, mt->n * sizeof *mem);
    rc->n_members += mt->n;
    return CARVE_OK;
}

/* A LayerNormalization whose Scale or B is made from the input's shape
 * (absent, or not a constant) needs those dims known: a model whose dims
 * are symbolic keeps its pattern. */
static bool ln_params_known(cv_fold *f, const rc_pattern *p, const rc_match *mt)
{
    const carve_model *m = f->m;
    if (strcmp(p->op, "LayerNormalization"))
        return true;
    int r = rank_of(m, mt->x);
    for (int k = 0; k < 2; k++) {
        carve_value_id c = mt->in[k];
        if (c == CARVE_NONE && k == 1)
            continue;
        const cv_tensor *t = c == CARVE_NONE ? NULL : cv_fold_const(m, c);
        if (t)
            continue;
        for (int i = (int)mt->axis; i < r; i++)
            if (m->values[mt->x].type.dims[i].value <= 0)
                return false;
    }
    return true;
}

/* The new node for match mt of pattern p, in place of `last` (at position
 * `at` of the graph's list, whose dropped nodes stay listed until the
 * flush). */
static carve_status rewrite(cv_fold *f, cv_recomp_cfg *rc, const rc_pattern *p, carve_node_id last, uint32_t at,
                            const rc_match *mt)
{
    carve_model *m = f->m;
    carve_graph_id g = m->nodes[last].graph;
    carve_value_id gamma = mt->in[0], beta = mt->in[1];
    bool ln = !strcmp(p->op, "LayerNormalization");
    if (ln) {
        /* Scale and B as per-feature tensors of the normalized rank */
        int r = rank_of(m, mt->x), nr = r - (int)mt->axis;
        carve_dtype dt = dtype_of(m, mt->x);
        for (int k = 0; k < 2; k++) {
            carve_value_id *c = k ? &beta : &gamma;
            if (*c == CARVE_NONE && k == 1)
                continue;
            const cv_tensor *t = *c == CARVE_NONE ? NULL : cv_fold_const(m, *c);
            if (t && t->rank <= nr)
                continue;
            int64_t dims[8];
            size_t cnt = 1;
            for (int i = 0; i < nr; i++) {
                dims[i] = t ? t->dims[t->rank - nr + i] : m->values[mt->x].type.dims[mt->axis + i].value;
                cnt *= (size_t)dims[i];
            }
            size_t nb = cv_dtype_nbytes(dt, cnt);
            void *buf = t ? NULL : cv_malloc(nb ? nb : 1);
            if (!t && !buf)
                return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory recomposing");
            for (size_t i = 0; !t && i < cnt; i++) {
                if (dt == CARVE_FLOAT) { float one = 1.0f; memcpy((char *)buf + 4 * i, &one, 4); }
                else if (dt == CARVE_DOUBLE) { double one = 1.0; memcpy((char *)buf + 8 * i, &one, 8); }
                else if (dt == CARVE_FLOAT16) { uint16_t one = cv_f32_to_f16(1.0f); memcpy((char *)buf + 2 * i, &one, 2); }
                else { uint16_t one = cv_f32_to_bf16(1.0f); memcpy((char *)buf + 2 * i, &one, 2); }
            }
            char base[256];
            snprintf(base, sizeof base, "%s/%s", m->nodes[last].name, k ? "B" : "Scale");
            *c = cv_fold_new_init(f, g, base, dt, nr, dims, t ? t->data : buf, t ? t->nbytes : nb);
            cv_free(buf);
            if (*c == CARVE_NONE)
                return carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
        }
    }
    uint32_t n_in = ln ? (beta != CARVE_NONE ? 3 : 2) : 1;
    carve_node_id id = cv_node_new(m, g, p->op, "", n_in, 1);
    if (id == CARVE_NONE || !cv_names_derive(m, id, last, p->op) || !cv_fold_grow(f))
        return carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
    cv_node *nn = &m->nodes[id];
    nn->in[0] = mt->x;
    if (ln) {
        nn->in[1] = gamma;
        if (n_in == 3)
            nn->in[2] = beta;
        cv_attr *a = cv_node_attr_add(m, id, "axis", CARVE_ATTR_INT);
        cv_attr *e = a ? cv_node_attr_add(m, id, "epsilon", CARVE_ATTR_FLOAT) : NULL;
        if (!e)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory recomposing");
        m->nodes[id].attr[0].u.i = mt->axis;
        m->nodes[id].attr[1].u.f = mt->epsilon;
    } else if (!strcmp(p->op, "Gelu") && mt->tanh) {
        cv_attr *a = cv_node_attr_add(m, id, "approximate", CARVE_ATTR_STRING);
        if (!a)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory recomposing");
        char *s = cv_arena_strdup(&m->arena, "tanh");
        if (!s)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory recomposing");
        m->nodes[id].attr[0].u.s = (cv_bytes){(const uint8_t *)s, 4};
    }
    f->nodes[id].from = last;
    cv_ids *l = &m->graphs[g].nodes;
    if (at < l->n && l->v[at] == last && l->v[l->n - 1] == id) {
        l->n--;
        l->v[at] = id;
    } else {
        cv_graph_move_tail(m, g, 1, cv_graph_node_pos(m, last));
    }
    cv_fold_rebind_output(f, id, 0, m->nodes[last].out[0]);
    const char *why = cv_arena_printf(&m->arena, "recomposed (%s) into %s '%s'", p->name, p->op, m->nodes[id].name);
    if (!why || log_match(rc, p, id, mt))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory recomposing");
    for (uint32_t i = 0; i < mt->n; i++)
        cv_fold_drop(f, mt->members[i], CV_FATE_REMOVED, id, why);
    f->st.recomposed++;
    return CARVE_OK;
}

typedef struct {
    cv_recomp_cfg *rc;
    bool on[sizeof patterns / sizeof patterns[0]]; /* the model's opset has it and the targets want it */
    cv_fold_ops last; /* last_ops */
} recompose_sweep;

/* last nodes first, so the longest form of a pattern (with its affine
 * tail) is seen before its shorter prefix */
static carve_status recompose_graph(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *arg)
{
    (void)g;
    carve_model *m = f->m;
    recompose_sweep *w = arg;
    carve_status s = CARVE_OK;
    for (uint32_t i = nodes->n; i-- > 0 && !s;) {
        carve_node_id id = nodes->v[i];
        if (m->nodes[id].dead)
            continue;
        uint32_t kind = cv_fold_op_kind(&w->last, f, id);
        for (size_t p = 0; kind && p < sizeof patterns / sizeof patterns[0]; p++) {
            if (!w->on[p] || !(patterns[p].ends & RC_ENDS(kind)))
                continue;
            /* every field but the members (read only up to n): not 100 bytes zeroed per try */
            rc_match mt;
            mt.n = 0;
            mt.x = mt.in[0] = mt.in[1] = mt.in[2] = CARVE_NONE;
            mt.axis = 0;
            mt.epsilon = 0;
            mt.tanh = false;
            if (!patterns[p].match(f, id, kind, &mt) || !member_ok(f, w->rc, &mt) || !ln_params_known(f, &patterns[p], &mt))
                continue;
            s = rewrite(f, w->rc, &patterns[p], id, i, &mt);
            break;
        }
    }
    return s;
}

/* The next graph's patterns see the uses as this graph's rewrites left them
 * (counted again only when it rewrote something). */
static carve_status recount(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *arg)
{
    (void)g, (void)nodes, (void)arg;
    return cv_fold_uses(f);
}

carve_status cv_fold_recompose(cv_fold *f, cv_recomp_cfg *rc)
{
    int64_t opset = carve_model_opset(f->m, "");
    recompose_sweep w = {.rc = rc, .last = CV_FOLD_OPS(last_ops)};
    /* asked once, not per node */
    for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++)
        w.on[p] = opset >= patterns[p].since && (!rc->wants || rc->wants(patterns[p].op, rc->user));
    carve_status s = cv_fold_sweep(f, recompose_graph, recount, &w, "recomposing");
    cv_fold_ops_free(&w.last);
    return s;
}

void cv_recomp_free(cv_recomp_cfg *rc)
{
    cv_free(rc->matches);
    cv_free(rc->members);
    rc->matches = NULL;
    rc->members = NULL;
    rc->n_matches = rc->n_members = 0;
}

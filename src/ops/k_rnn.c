/* k_rnn.c: recurrent layers (LSTM, GRU, RNN).
 *
 * One driver for the three: attributes and input shapes are checked here,
 * the loops live in k_rnn_core.h (instantiated for float and double). Per
 * direction the input projection X*W^T of all time steps is one GEMM, then
 * each step does one GEMM H*R^T for the whole batch (GRU: two, the reset
 * gate sits between them) and the gate arithmetic per batch row. Rows past
 * their sequence_lens length stop updating; their Y entries stay zero. */
#include "ops.h"

#include "blas.h"
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <string.h>

typedef enum { RNN_SIMPLE, RNN_GRU, RNN_LSTM } rnn_kind;

typedef enum {
    ACT_RELU,
    ACT_TANH,
    ACT_SIGMOID,
    ACT_AFFINE,
    ACT_LEAKYRELU,
    ACT_THRESHOLDEDRELU,
    ACT_SCALEDTANH,
    ACT_HARDSIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS
} act_kind;

typedef struct {
    act_kind kind;
    float alpha, beta;
} rnn_act;

typedef struct {
    rnn_kind kind;
    int gates, n_act;      /* per direction: RNN 1/1, GRU 3/2, LSTM 4/3 */
    int64_t seq, batch, input, hidden;
    int ndir, direction;   /* direction: 0 forward, 1 reverse, 2 bidirectional */
    int layout;            /* 1: batch-major X, Y, states (opset 14) */
    float clip;            /* 0: none */
    bool input_forget, lbr;
    rnn_act acts[6];
} rnn_cfg;

#define REAL float
#define NATIVE CARVE_FLOAT
#define SUF f32
#define GEMM cv_sgemm
#define EXP expf
#define TANH tanhf
#define LOG1P log1pf
#include "k_rnn_core.h"

#define REAL double
#define NATIVE CARVE_DOUBLE
#define SUF f64
#define GEMM cv_dgemm
#define EXP exp
#define TANH tanh
#define LOG1P log1p
#include "k_rnn_core.h"

/* Activation names (case-insensitive), which of alpha/beta each consumes
 * from the attribute lists, and the defaults onnxruntime uses when the
 * lists run out. */
static const struct {
    const char *name;
    act_kind kind;
    bool alpha, beta;
    float da, db;
} act_table[] = {
    {"relu", ACT_RELU, false, false, 0, 0},
    {"tanh", ACT_TANH, false, false, 0, 0},
    {"sigmoid", ACT_SIGMOID, false, false, 0, 0},
    {"affine", ACT_AFFINE, true, true, 0, 0},
    {"leakyrelu", ACT_LEAKYRELU, true, false, 0.01f, 0},
    {"thresholdedrelu", ACT_THRESHOLDEDRELU, true, false, 0, 0},
    {"scaledtanh", ACT_SCALEDTANH, true, true, 0, 0},
    {"hardsigmoid", ACT_HARDSIGMOID, true, true, 0.2f, 0.5f},
    {"elu", ACT_ELU, true, false, 1.0f, 0},
    {"softsign", ACT_SOFTSIGN, false, false, 0, 0},
    {"softplus", ACT_SOFTPLUS, false, false, 0, 0},
};

static carve_status parse_acts(cv_kctx *k, rnn_cfg *c)
{
    static const act_kind dflt[3][3] = {{ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
    int want = c->n_act * c->ndir;
    const cv_attr *a = cv_node_attr_find(k->m, k->node, "activations");
    if (!a || a->kind != CARVE_ATTR_STRINGS) {
        for (int i = 0; i < want; i++)
            c->acts[i] = (rnn_act){dflt[c->kind][i % c->n_act], 0, 0};
        return CARVE_OK;
    }
    if ((int)a->n != want && (int)a->n != c->n_act)
        return cv_kerr(k, "attribute 'activations' has %u names, expected %d (%d per direction)", a->n, want,
                       c->n_act);
    const float *alphas = NULL, *betas = NULL;
    int na = cv_attr_floats(k->m, k->node, "activation_alpha", &alphas);
    int nbeta = cv_attr_floats(k->m, k->node, "activation_beta", &betas);
    int ia = 0, ib = 0;
    for (int i = 0; i < want; i++) {
        /* one list for both directions repeats */
        const cv_bytes *s = &a->u.strings[(uint32_t)i % a->n];
        char name[32];
        size_t n = s->n < sizeof name - 1 ? s->n : sizeof name - 1;
        for (size_t q = 0; q < n; q++)
            name[q] = (char)tolower(s->p[q]);
        name[n] = 0;
        size_t j = 0;
        while (j < sizeof act_table / sizeof *act_table && (s->n != strlen(act_table[j].name) ||
                                                            strcmp(name, act_table[j].name)))
            j++;
        if (j == sizeof act_table / sizeof *act_table)
            return cv_kerr(k, "attribute 'activations' value %d '%.*s' is not one of Relu, Tanh, Sigmoid, Affine, "
                              "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                           i, (int)n, (const char *)s->p);
        rnn_act *r = &c->acts[i];
        r->kind = act_table[j].kind;
        r->alpha = act_table[j].da, r->beta = act_table[j].db;
        if (act_table[j].alpha && ia < na)
            r->alpha = alphas[ia++];
        if (act_table[j].beta && ib < nbeta)
            r->beta = betas[ib++];
    }
    return CARVE_OK;
}

/* Checks v has exactly the dims given (NULL v passes). */
static carve_status check_dims(cv_kctx *k, const cv_val *v, uint32_t idx, const char *name, int rank,
                               const int64_t *dims, carve_dtype dt)
{
    if (!v)
        return CARVE_OK;
    bool ok = v->kind == CV_VAL_TENSOR && v->rank == rank;
    for (int i = 0; ok && i < rank; i++)
        ok = v->dims[i] == dims[i];
    if (!ok) {
        char want[256], got[256];
        cv_shape_str(want, sizeof want, rank, dims);
        cv_shape_str(got, sizeof got, v->kind == CV_VAL_TENSOR ? v->rank : 0, v->dims);
        return cv_kerr(k, "input %u '%s' has shape %s, expected %s", idx, name, got, want);
    }
    if (dt != CARVE_UNDEFINED && v->dtype != dt)
        return cv_kerr(k, "input %u '%s' is %s but input 0 'X' is %s", idx, name, carve_dtype_name(v->dtype),
                       carve_dtype_name(dt));
    return CARVE_OK;
}

static carve_status rnn_common(cv_kctx *k, rnn_kind kind, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    rnn_cfg c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.gates = kind == RNN_LSTM ? 4 : kind == RNN_GRU ? 3 : 1;
    c.n_act = kind == RNN_LSTM ? 3 : kind == RNN_GRU ? 2 : 1;
    const cv_val *x = in[0], *w = in[1], *r = in[2];
    if (x->kind != CV_VAL_TENSOR || x->rank != 3)
        return cv_kerr(k, "input 0 'X' must have rank 3");
    carve_dtype dt = x->dtype;
    if (dt != CARVE_FLOAT && dt != CARVE_DOUBLE && dt != CARVE_FLOAT16 && dt != CARVE_BFLOAT16)
        return cv_kerr(k, "input 0 'X' is %s, expected float16, bfloat16, float or double", carve_dtype_name(dt));
    c.layout = (int)cv_attr_i(k->m, k->node, "layout", 0);
    if (c.layout != 0 && c.layout != 1)
        return cv_kerr(k, "attribute 'layout' is %d, expected 0 or 1", c.layout);
    c.seq = x->dims[c.layout ? 1 : 0];
    c.batch = x->dims[c.layout ? 0 : 1];
    c.input = x->dims[2];
    const char *dir = cv_attr_s(k->m, k->node, "direction", "forward");
    if (!strcmp(dir, "forward"))
        c.direction = 0, c.ndir = 1;
    else if (!strcmp(dir, "reverse"))
        c.direction = 1, c.ndir = 1;
    else if (!strcmp(dir, "bidirectional"))
        c.direction = 2, c.ndir = 2;
    else
        return cv_kerr(k, "attribute 'direction' is '%s', expected forward, reverse or bidirectional", dir);
    if (r->kind != CV_VAL_TENSOR || r->rank != 3)
        return cv_kerr(k, "input 2 'R' must have rank 3 ([num_directions, %d*hidden_size, hidden_size])", c.gates);
    int64_t hs;
    c.hidden = carve_node_attr_int(k->m, k->node, "hidden_size", &hs) ? hs : r->dims[2];
    if (c.hidden <= 0)
        return cv_kerr(k, "attribute 'hidden_size' is %lld, expected a positive size", (long long)c.hidden);
    int64_t gh = c.gates * c.hidden;
    int64_t wd[3] = {c.ndir, gh, c.input}, rd[3] = {c.ndir, gh, c.hidden}, bd[2] = {c.ndir, 2 * gh};
    int64_t sd[3] = {c.layout ? c.batch : c.ndir, c.layout ? c.ndir : c.batch, c.hidden};
    int64_t pd[2] = {c.ndir, 3 * c.hidden}, ld[1] = {c.batch};
    carve_status s = check_dims(k, w, 1, "W", 3, wd, dt);
    if (!s)
        s = check_dims(k, r, 2, "R", 3, rd, dt);
    if (!s && n_in > 3)
        s = check_dims(k, in[3], 3, "B", 2, bd, dt);
    if (!s && n_in > 4)
        s = check_dims(k, in[4], 4, "sequence_lens", 1, ld, CARVE_UNDEFINED);
    if (!s && n_in > 5)
        s = check_dims(k, in[5], 5, "initial_h", 3, sd, dt);
    if (!s && n_in > 6)
        s = check_dims(k, in[6], 6, "initial_c", 3, sd, dt);
    if (!s && n_in > 7)
        s = check_dims(k, in[7], 7, "P", 2, pd, dt);
    if (s)
        return s;
    /* BLAS takes int sizes */
    if (c.seq * c.batch > INT_MAX || gh > INT_MAX || c.input > INT_MAX)
        return cv_node_err(k->m, k->node, CARVE_ERR_UNSUPPORTED, "", "sizes above 2^31 are not supported");
    float clip;
    if (carve_node_attr_float(k->m, k->node, "clip", &clip)) {
        if (!(clip > 0))
            return cv_kerr(k, "attribute 'clip' is %g, expected a positive threshold", clip);
        c.clip = clip;
    }
    c.input_forget = kind == RNN_LSTM && cv_attr_i(k->m, k->node, "input_forget", 0) != 0;
    c.lbr = kind == RNN_GRU && cv_attr_i(k->m, k->node, "linear_before_reset", 0) != 0;
    s = parse_acts(k, &c);
    if (s)
        return s;
    int64_t *lens = cv_malloc(((size_t)c.batch + 1) * sizeof *lens);
    if (!lens)
        return cv_knomem(k);
    const cv_val *sl = n_in > 4 ? in[4] : NULL;
    if (sl && !cv_dtype_is_int(sl->dtype)) {
        cv_free(lens);
        return cv_kerr(k, "input 4 'sequence_lens' is %s, expected int32", carve_dtype_name(sl->dtype));
    }
    for (int64_t b = 0; b < c.batch; b++) {
        lens[b] = sl ? cv_val_get_i64(sl, (size_t)b) : c.seq;
        if (lens[b] < 0 || lens[b] > c.seq) {
            cv_free(lens);
            return cv_kerr(k, "input 4 'sequence_lens' value %lld is %lld, outside [0, %lld]", (long long)b,
                           (long long)(sl ? cv_val_get_i64(sl, (size_t)b) : 0), (long long)c.seq);
        }
    }
    s = dt == CARVE_DOUBLE ? rnn_exec_f64(k, &c, in, n_in, out, n_out, lens)
                           : rnn_exec_f32(k, &c, in, n_in, out, n_out, lens);
    cv_free(lens);
    return s;
}

carve_status k_lstm(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    return rnn_common(k, RNN_LSTM, in, n_in, out, n_out);
}

carve_status k_gru(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    return rnn_common(k, RNN_GRU, in, n_in, out, n_out);
}

carve_status k_rnn(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    return rnn_common(k, RNN_SIMPLE, in, n_in, out, n_out);
}

/* Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h and
 * Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]). */
carve_status i_rnn(cv_ictx *c)
{
    const cv_type *x = cv_infer_in(c, 0), *r = cv_infer_in(c, 2);
    carve_dtype dt = x && x->kind == CARVE_TYPE_TENSOR ? x->dtype : CARVE_UNDEFINED;
    int layout = (int)cv_attr_i(c->m, c->node, "layout", 0);
    const char *dir = cv_attr_s(c->m, c->node, "direction", "forward");
    carve_dim nd = {!strcmp(dir, "bidirectional") ? 2 : 1, NULL};
    carve_dim seq = {-1, NULL}, batch = {-1, NULL}, hid = {-1, NULL};
    if (x && x->kind == CARVE_TYPE_TENSOR && x->rank == 3) {
        seq = x->dims[layout ? 1 : 0];
        batch = x->dims[layout ? 0 : 1];
    } else if (x && x->kind == CARVE_TYPE_TENSOR && x->rank >= 0) {
        return cv_ierr(c, "input 0 'X' has rank %d, expected 3", x->rank);
    }
    int64_t hs;
    if (carve_node_attr_int(c->m, c->node, "hidden_size", &hs))
        hid.value = hs;
    else if (r && r->kind == CARVE_TYPE_TENSOR && r->rank == 3)
        hid = r->dims[2];
    carve_dim y[4], st[3];
    if (layout) {
        y[0] = batch, y[1] = seq, y[2] = nd, y[3] = hid;
        st[0] = batch, st[1] = nd, st[2] = hid;
    } else {
        y[0] = seq, y[1] = nd, y[2] = batch, y[3] = hid;
        st[0] = nd, st[1] = batch, st[2] = hid;
    }
    carve_status s = cv_infer_set(c, 0, dt, 4, y);
    if (!s)
        s = cv_infer_set(c, 1, dt, 3, st);
    if (!s)
        s = cv_infer_set(c, 2, dt, 3, st);
    return s;
}

/* k_rnn_core.h: the recurrent loops of k_rnn.c for one element type.
 * k_rnn.c includes it twice, with
 *   REAL    float / double (the compute type)
 *   NATIVE  CARVE_FLOAT / CARVE_DOUBLE (tensors of that dtype are used in place)
 *   SUF     f32 / f64 (suffix of the functions defined here)
 *   GEMM    cv_sgemm / cv_dgemm (blas.h)
 *   EXP, TANH, LOG1P  the math functions of REAL
 * and undefines them at its end. float16 and bfloat16 nodes compute in
 * float32. */

#define FN_(a, b) a##_##b
#define FN2(a, b) FN_(a, b)
#define FN(a) FN2(a, SUF)

static void FN(act_apply)(const rnn_act *a, REAL *x, size_t n, float clip)
{
    if (clip > 0) {
        REAL c = (REAL)clip;
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > c ? c : x[i] < -c ? -c : x[i];
    }
    REAL al = (REAL)a->alpha, be = (REAL)a->beta;
    switch (a->kind) {
    case ACT_RELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > 0 ? x[i] : 0;
        break;
    case ACT_TANH:
        for (size_t i = 0; i < n; i++)
            x[i] = TANH(x[i]);
        break;
    case ACT_SIGMOID:
        for (size_t i = 0; i < n; i++)
            x[i] = 1 / (1 + EXP(-x[i]));
        break;
    case ACT_AFFINE:
        for (size_t i = 0; i < n; i++)
            x[i] = al * x[i] + be;
        break;
    case ACT_LEAKYRELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] >= 0 ? x[i] : al * x[i];
        break;
    case ACT_THRESHOLDEDRELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > al ? x[i] : 0;
        break;
    case ACT_SCALEDTANH:
        for (size_t i = 0; i < n; i++)
            x[i] = al * TANH(be * x[i]);
        break;
    case ACT_HARDSIGMOID:
        for (size_t i = 0; i < n; i++) {
            REAL y = al * x[i] + be;
            x[i] = y < 0 ? 0 : y > 1 ? 1 : y;
        }
        break;
    case ACT_ELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] >= 0 ? x[i] : al * (EXP(x[i]) - 1);
        break;
    case ACT_SOFTSIGN:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] / (1 + (x[i] < 0 ? -x[i] : x[i]));
        break;
    case ACT_SOFTPLUS:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > 20 ? x[i] : LOG1P(EXP(x[i]));
        break;
    }
}

/* v as a REAL array; with swap01 the first two dims are exchanged (batch-
 * major layout to sequence-major). Points into v when nothing changes,
 * else *owned receives the allocation. NULL on NOMEM. */
static const REAL *FN(as_real)(const cv_val *v, bool swap01, REAL **owned)
{
    *owned = NULL;
    if (v->dtype == NATIVE && !swap01)
        return v->data;
    REAL *p = cv_malloc((v->nelem ? v->nelem : 1) * sizeof *p);
    if (!p)
        return NULL;
    size_t a = v->rank > 0 ? (size_t)v->dims[0] : 1, b = v->rank > 1 ? (size_t)v->dims[1] : 1;
    size_t inner = a != 0 && b != 0 ? v->nelem / (a * b) : 0;
    for (size_t i = 0; i < a; i++)
        for (size_t j = 0; j < b; j++) {
            size_t src = (i * b + j) * inner, dst = swap01 ? (j * a + i) * inner : src;
            if (v->dtype == NATIVE)
                memcpy(p + dst, (const REAL *)v->data + src, inner * sizeof *p);
            else
                for (size_t q = 0; q < inner; q++)
                    p[dst + q] = (REAL)cv_val_get_f64(v, src + q);
        }
    *owned = p;
    return p;
}

/* Writes src [n0][n1][n2][h] into dst, as is or (batch_major) as
 * [n2][n0][n1][h], converting to dst's dtype. */
static void FN(store)(const REAL *src, cv_val *dst, size_t n0, size_t n1, size_t n2, size_t h, bool batch_major)
{
    if ((const void *)src == dst->data)
        return;
    for (size_t i = 0; i < n0; i++)
        for (size_t j = 0; j < n1; j++)
            for (size_t b = 0; b < n2; b++) {
                const REAL *s = src + ((i * n1 + j) * n2 + b) * h;
                size_t o = batch_major ? ((b * n0 + i) * n1 + j) * h : ((i * n1 + j) * n2 + b) * h;
                if (dst->dtype == NATIVE)
                    memcpy((REAL *)dst->data + o, s, h * sizeof *s);
                else
                    for (size_t q = 0; q < h; q++)
                        cv_val_set_f64(dst, o + q, s[q]);
            }
}

/* One direction d over the whole sequence. X [seq][batch][in]; W, R, B, P
 * of this direction; h/c hold the initial state and receive the last one;
 * Y [seq][ndir][batch][hid] receives every step (or NULL). */
static void FN(run_dir)(const rnn_cfg *c, int d, bool reverse, const REAL *X, const REAL *W, const REAL *R,
                        const REAL *B, const REAL *P, const int64_t *lens, REAL *h, REAL *cell, REAL *Y, REAL *work)
{
    const int G = c->gates;
    const size_t H = (size_t)c->hidden, GH = (size_t)G * H, nb = (size_t)c->batch, rows = (size_t)c->seq * nb;
    const rnn_act *f = &c->acts[d * c->n_act], *g = f + 1, *hact = f + 2;
    REAL *xw = work, *gates = xw + rows * GH, *tmp = gates + nb * GH, *rh = tmp + nb * H, *bias = rh + nb * H;

    /* biases: Wb + Rb, except GRU's Rbh with linear_before_reset (it goes
     * inside the reset product) */
    for (size_t q = 0; q < GH; q++)
        bias[q] = B ? B[q] + (c->kind == RNN_GRU && c->lbr && q >= 2 * H ? 0 : B[GH + q]) : 0;
    const REAL *rbh = B && c->kind == RNN_GRU && c->lbr ? B + GH + 2 * H : NULL;

    /* the input projection for all steps at once */
    for (size_t r = 0; r < rows; r++)
        memcpy(xw + r * GH, bias, GH * sizeof *bias);
    if (rows && c->input)
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)GH, (int)c->input, 1, X, (int)c->input, W,
             (int)c->input, 1, xw, (int)GH);

    int64_t steps = 0;
    for (size_t b = 0; b < nb; b++)
        steps = lens[b] > steps ? lens[b] : steps;
    const size_t ndir = (size_t)c->ndir;
    for (int64_t s = 0; s < steps; s++) {
        for (size_t b = 0; b < nb; b++) {
            int64_t t = reverse ? lens[b] - 1 - s : s;
            if (s < lens[b])
                memcpy(gates + b * GH, xw + ((size_t)t * nb + b) * GH, GH * sizeof *gates);
            else
                memset(gates + b * GH, 0, GH * sizeof *gates);
        }
        /* recurrent projection (GRU: update and reset gates only) */
        size_t rn = c->kind == RNN_GRU ? 2 * H : GH;
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)rn, (int)H, 1, h, (int)H, R, (int)H, 1, gates,
             (int)GH);
        if (c->kind == RNN_GRU) {
            for (size_t b = 0; b < nb; b++) {
                REAL *gz = gates + b * GH;
                if (s < lens[b])
                    FN(act_apply)(f, gz, 2 * H, c->clip); /* z and r */
                for (size_t q = 0; q < H; q++) /* r (.) H for the non-linear-before-reset form */
                    rh[b * H + q] = s < lens[b] ? gz[H + q] * h[b * H + q] : 0;
            }
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)H, (int)H, 1, c->lbr ? h : rh, (int)H,
                 R + 2 * H * H, (int)H, 0, tmp, (int)H);
        }
        for (size_t b = 0; b < nb; b++) {
            if (s >= lens[b])
                continue;
            size_t t = (size_t)(reverse ? lens[b] - 1 - s : s);
            REAL *gb = gates + b * GH, *hb = h + b * H;
            if (c->kind == RNN_SIMPLE) {
                FN(act_apply)(f, gb, H, c->clip);
                memcpy(hb, gb, H * sizeof *hb);
            } else if (c->kind == RNN_GRU) {
                REAL *z = gb, *r = gb + H, *hh = gb + 2 * H, *tb = tmp + b * H;
                for (size_t q = 0; q < H; q++)
                    hh[q] += c->lbr ? r[q] * (tb[q] + (rbh ? rbh[q] : 0)) : tb[q];
                FN(act_apply)(g, hh, H, c->clip);
                for (size_t q = 0; q < H; q++)
                    hb[q] = (1 - z[q]) * hh[q] + z[q] * hb[q];
            } else {
                /* gate order i, o, f, c; peepholes i, o, f */
                REAL *gi = gb, *go = gb + H, *gf = gb + 2 * H, *gc = gb + 3 * H, *cb = cell + b * H;
                if (P)
                    for (size_t q = 0; q < H; q++) {
                        gi[q] += P[q] * cb[q];
                        gf[q] += P[2 * H + q] * cb[q];
                    }
                FN(act_apply)(f, gi, H, c->clip);
                if (c->input_forget)
                    for (size_t q = 0; q < H; q++)
                        gf[q] = 1 - gi[q];
                else
                    FN(act_apply)(f, gf, H, c->clip);
                FN(act_apply)(g, gc, H, c->clip);
                for (size_t q = 0; q < H; q++)
                    cb[q] = gf[q] * cb[q] + gi[q] * gc[q];
                if (P)
                    for (size_t q = 0; q < H; q++)
                        go[q] += P[H + q] * cb[q];
                FN(act_apply)(f, go, H, c->clip);
                memcpy(hb, cb, H * sizeof *hb);
                FN(act_apply)(hact, hb, H, 0);
                for (size_t q = 0; q < H; q++)
                    hb[q] *= go[q];
            }
            if (Y)
                memcpy(Y + ((t * ndir + (size_t)d) * nb + b) * H, hb, H * sizeof *hb);
        }
    }
    /* a row with no steps ends with a zero state (as onnxruntime) */
    for (size_t b = 0; b < nb; b++)
        if (lens[b] == 0) {
            memset(h + b * H, 0, H * sizeof *h);
            if (cell)
                memset(cell + b * H, 0, H * sizeof *cell);
        }
}

/* Runs a validated node: converts inputs, loops over directions, writes
 * outputs. */
static carve_status FN(rnn_exec)(cv_kctx *k, const rnn_cfg *c, cv_val **in, uint32_t n_in, cv_val **out,
                                 uint32_t n_out, const int64_t *lens)
{
    const size_t H = (size_t)c->hidden, GH = (size_t)c->gates * H, nb = (size_t)c->batch, seq = (size_t)c->seq;
    const size_t ndir = (size_t)c->ndir, state = ndir * nb * H;
    bool lstm = c->kind == RNN_LSTM, bm = c->layout == 1;
    carve_status st = CARVE_OK;
    REAL *own[8] = {0};
    const REAL *X = FN(as_real)(in[0], bm, &own[0]);
    const REAL *W = FN(as_real)(in[1], false, &own[1]);
    const REAL *R = FN(as_real)(in[2], false, &own[2]);
    const REAL *B = n_in > 3 && in[3] ? FN(as_real)(in[3], false, &own[3]) : NULL;
    const REAL *P = lstm && n_in > 7 && in[7] ? FN(as_real)(in[7], false, &own[7]) : NULL;
    /* states: [ndir][batch][hid], initial values copied in */
    REAL *h = cv_malloc((state ? state : 1) * sizeof *h);
    REAL *cell = lstm ? cv_malloc((state ? state : 1) * sizeof *cell) : NULL;
    size_t wsz = seq * nb * GH + nb * GH + 2 * nb * H + GH + 1;
    REAL *work = cv_malloc(wsz * sizeof *work);
    bool fail = !X || !W || !R || (n_in > 3 && in[3] && !B) || (lstm && n_in > 7 && in[7] && !P) || !h ||
                (lstm && !cell) || !work;
    for (int q = 0; q < 2 && !fail; q++) {
        uint32_t idx = q ? 6 : 5;
        REAL *dst = q ? cell : h;
        if (!dst)
            continue;
        if (n_in > idx && in[idx]) {
            REAL *o;
            const REAL *v = FN(as_real)(in[idx], bm, &o);
            if (v)
                memcpy(dst, v, state * sizeof *dst);
            cv_free(o);
            fail = !v;
        } else {
            memset(dst, 0, state * sizeof *dst);
        }
    }
    /* Y in [seq][ndir][batch][hid]: written in place for native layout 0 */
    cv_val *y = NULL, *yh = NULL, *yc = NULL;
    int64_t ydims[4], sdims[3];
    if (bm) {
        ydims[0] = c->batch, ydims[1] = c->seq, ydims[2] = c->ndir, ydims[3] = c->hidden;
        sdims[0] = c->batch, sdims[1] = c->ndir, sdims[2] = c->hidden;
    } else {
        ydims[0] = c->seq, ydims[1] = c->ndir, ydims[2] = c->batch, ydims[3] = c->hidden;
        sdims[0] = c->ndir, sdims[1] = c->batch, sdims[2] = c->hidden;
    }
    carve_dtype dt = in[0]->dtype;
    const cv_node *nd = &k->m->nodes[k->node];
    if (!fail && n_out > 0 && nd->out[0] != CARVE_NONE && !(y = cv_val_new(dt, 4, ydims)))
        fail = true;
    if (!fail && n_out > 1 && nd->out[1] != CARVE_NONE && !(yh = cv_val_new(dt, 3, sdims)))
        fail = true;
    if (!fail && n_out > 2 && lstm && nd->out[2] != CARVE_NONE && !(yc = cv_val_new(dt, 3, sdims)))
        fail = true;
    REAL *ybuf = NULL;
    bool ybuf_owned = false;
    if (!fail && y) {
        if (dt == NATIVE && !bm) {
            ybuf = y->data;
        } else {
            ybuf = cv_malloc((y->nelem ? y->nelem : 1) * sizeof *ybuf);
            if (ybuf)
                memset(ybuf, 0, y->nelem * sizeof *ybuf);
            fail = !ybuf;
            ybuf_owned = true;
        }
    }
    if (fail) {
        st = cv_knomem(k);
        goto done;
    }
    for (size_t d = 0; d < ndir; d++) {
        bool rev = c->direction == 1 || d == 1;
        FN(run_dir)(c, (int)d, rev, X, W + d * GH * (size_t)c->input, R + d * GH * H, B ? B + d * 2 * GH : NULL,
                    P ? P + d * 3 * H : NULL, lens, h + d * nb * H, cell ? cell + d * nb * H : NULL, ybuf, work);
    }
    if (y)
        FN(store)(ybuf, y, seq, ndir, nb, H, bm);
    if (yh)
        FN(store)(h, yh, 1, ndir, nb, H, bm);
    if (yc)
        FN(store)(cell, yc, 1, ndir, nb, H, bm);
    if (n_out > 0)
        out[0] = y, y = NULL;
    if (n_out > 1)
        out[1] = yh, yh = NULL;
    if (n_out > 2)
        out[2] = yc, yc = NULL;
done:
    if (ybuf_owned)
        cv_free(ybuf);
    cv_val_unref(y);
    cv_val_unref(yh);
    cv_val_unref(yc);
    for (int q = 0; q < 8; q++)
        cv_free(own[q]);
    cv_free(h);
    cv_free(cell);
    cv_free(work);
    return st;
}

#undef FN
#undef FN2
#undef FN_
#undef REAL
#undef NATIVE
#undef SUF
#undef GEMM
#undef EXP
#undef TANH
#undef LOG1P

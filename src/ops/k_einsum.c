/* k_einsum.c: Einsum and its inference. The equation is parsed into labels;
 * each operand is normalized (repeated labels take the diagonal, labels no
 * later operand or the output reads are summed out), operands are
 * contracted pairwise with GEMMs in k_matmul.h's working representations,
 * and the result is put in the output's label order. */
#include "k_matmul.h"

#include <string.h>

/* Labels: 'A'..'Z' are 0..25, 'a'..'z' 26..51 (so ids sort like ASCII, as
 * numpy's implicit output does), the dims an ellipsis stands for are 52.. in
 * right-aligned order (broadcast like numpy). */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + CARVE_MAX_RANK)

typedef struct {
    int n;
    int lab[CARVE_MAX_RANK];
} ein_term;

static int ein_letter(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return 26 + ch - 'a';
    return -1;
}

/* Parses equation eq for n_in operands of the given ranks into label lists
 * and the output's. false with a message in err. */
static bool ein_parse(const char *eq, uint32_t n_in, const int *ranks, ein_term *terms, ein_term *outt, char *err,
                      size_t errsz)
{
    char buf[1024];
    size_t n = 0;
    for (const char *p = eq; *p; p++)
        if (*p != ' ' && *p != '\t' && n + 1 < sizeof buf)
            buf[n++] = *p;
    buf[n] = 0;
    char *arrow = strstr(buf, "->");
    if (arrow)
        *arrow = 0;
    /* first pass over the inputs: letters and ellipsis rank */
    int ell[256] = {0}, maxell = 0, count[EIN_LETTERS] = {0};
    bool has_ell[256] = {false};
    char *term = buf;
    for (uint32_t t = 0; t < n_in; t++) {
        char *end = strchr(term, ',');
        if (!end && t + 1 < n_in) {
            snprintf(err, errsz, "equation '%s' has %u operand terms but the node has %u inputs", eq, t + 1, n_in);
            return false;
        }
        if (end)
            *end = 0;
        int letters = 0;
        for (char *p = term; *p; p++) {
            if (*p == '.') {
                if (strncmp(p, "...", 3) || has_ell[t]) {
                    snprintf(err, errsz, "equation '%s': term %u has a stray '.' or a second ellipsis", eq, t);
                    return false;
                }
                has_ell[t] = true;
                p += 2;
            } else if (ein_letter(*p) < 0) {
                snprintf(err, errsz, "equation '%s': '%c' is not a letter", eq, *p);
                return false;
            } else {
                letters++;
                count[ein_letter(*p)]++;
            }
        }
        if (ranks[t] >= 0) {
            if (has_ell[t] ? letters > ranks[t] : letters != ranks[t]) {
                snprintf(err, errsz, "equation '%s': term %u has %d labels but input %u has rank %d", eq, t, letters, t,
                         ranks[t]);
                return false;
            }
            ell[t] = has_ell[t] ? ranks[t] - letters : 0;
            if (ell[t] > maxell)
                maxell = ell[t];
        }
        terms[t].n = letters;
        if (end)
            term = end + 1;
        else
            term += strlen(term);
    }
    if (*term) {
        snprintf(err, errsz, "equation '%s' has more operand terms than the node's %u inputs", eq, n_in);
        return false;
    }
    /* second pass: label ids */
    term = buf;
    for (uint32_t t = 0; t < n_in; t++) {
        int k = 0;
        for (char *p = term; *p; p++) {
            if (*p == '.') {
                for (int e = 0; e < ell[t]; e++)
                    terms[t].lab[k++] = EIN_LETTERS + (maxell - ell[t]) + e;
                p += 2;
            } else {
                terms[t].lab[k++] = ein_letter(*p);
            }
        }
        terms[t].n = k;
        term += strlen(term) + 1;
    }
    outt->n = 0;
    if (arrow) {
        bool seen[EIN_LABELS] = {false}, oell = false;
        for (char *p = arrow + 2; *p; p++) {
            if (*p == '.') {
                if (strncmp(p, "...", 3) || oell) {
                    snprintf(err, errsz, "equation '%s': the output has a stray '.' or a second ellipsis", eq);
                    return false;
                }
                oell = true;
                for (int e = 0; e < maxell; e++)
                    outt->lab[outt->n++] = EIN_LETTERS + e;
                p += 2;
                continue;
            }
            int l = ein_letter(*p);
            if (l < 0 || !count[l] || seen[l]) {
                snprintf(err, errsz, "equation '%s': output label '%c' is %s", eq, *p,
                         l < 0 ? "not a letter" : !count[l] ? "in no input" : "repeated");
                return false;
            }
            if (outt->n >= CARVE_MAX_RANK) {
                snprintf(err, errsz, "equation '%s': the output has more than %d dims", eq, CARVE_MAX_RANK);
                return false;
            }
            seen[l] = true;
            outt->lab[outt->n++] = l;
        }
    } else {
        for (int e = 0; e < maxell; e++)
            outt->lab[outt->n++] = EIN_LETTERS + e;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1) {
                if (outt->n >= CARVE_MAX_RANK) {
                    snprintf(err, errsz, "equation '%s': the output has more than %d dims", eq, CARVE_MAX_RANK);
                    return false;
                }
                outt->lab[outt->n++] = l;
            }
    }
    return true;
}

/* An operand during evaluation: dims per label, contiguous data in the
 * working representation (owned unless it is an input's). */
typedef struct {
    int n;
    int lab[EIN_LABELS];
    int64_t dims[EIN_LABELS];
    void *data;
    bool owned;
} ein_op;

/* Products of sizes saturate here, so allocating them fails cleanly instead
 * of wrapping around. */
#define EIN_HUGE ((size_t)1 << 42)

static size_t ein_mul(size_t a, size_t b)
{
    if (!a || !b)
        return 0;
    return a > EIN_HUGE / b ? EIN_HUGE : a * b;
}

static size_t ein_count(int n, const int64_t *d)
{
    size_t c = 1;
    for (int i = 0; i < n; i++)
        c = ein_mul(c, (size_t)d[i]);
    return c;
}

/* A contiguous tensor of dims[0..n) reading src at sum(idx * strides). */
static void *ein_gather(wkind k, const void *src, int n, const int64_t *dims, const int64_t *strides)
{
    size_t total = ein_count(n, dims), es = mm_wsize(k);
    void *dst = cv_malloc((total ? total : 1) * es);
    if (!dst || !total)
        return dst;
    if (n == 0) {
        memcpy(dst, src, es);
        return dst;
    }
    int64_t idx[EIN_LABELS] = {0};
    size_t o = 0, L = (size_t)dims[n - 1];
    int64_t sl = strides[n - 1];
    while (o < total) {
        int64_t base = 0;
        for (int i = 0; i < n - 1; i++)
            base += idx[i] * strides[i];
        if (es == 4) {
            const uint32_t *s = (const uint32_t *)src + base;
            uint32_t *d = (uint32_t *)dst + o;
            for (size_t t = 0; t < L; t++)
                d[t] = s[(int64_t)t * sl];
        } else {
            const uint64_t *s = (const uint64_t *)src + base;
            uint64_t *d = (uint64_t *)dst + o;
            for (size_t t = 0; t < L; t++)
                d[t] = s[(int64_t)t * sl];
        }
        o += L;
        for (int i = n - 2; i >= 0 && ++idx[i] == dims[i]; i--)
            idx[i] = 0;
    }
    return dst;
}

/* dst[i] = sum over r < R of src[i*R + r], i < n. */
static void ein_sum_tail(wkind k, const void *src, size_t n, size_t R, void *dst)
{
    for (size_t i = 0; i < n; i++) {
        if (k == W_F32) {
            const float *s = (const float *)src + i * R;
            float acc = 0;
            for (size_t r = 0; r < R; r++)
                acc += s[r];
            ((float *)dst)[i] = acc;
        } else if (k == W_F64) {
            const double *s = (const double *)src + i * R;
            double acc = 0;
            for (size_t r = 0; r < R; r++)
                acc += s[r];
            ((double *)dst)[i] = acc;
        } else {
            const uint64_t *s = (const uint64_t *)src + i * R;
            uint64_t acc = 0;
            for (size_t r = 0; r < R; r++)
                acc += s[r];
            ((uint64_t *)dst)[i] = acc;
        }
    }
}

static void ein_set(ein_op *op, void *data, bool owned)
{
    if (op->owned)
        cv_free(op->data);
    op->data = data;
    op->owned = owned;
}

/* Rewrites op so its labels are unique (repeated labels take the diagonal),
 * labels not in `keep` are summed out, and the kept ones come in the order
 * `order` lists them (order: all kept labels, or NULL for first-occurrence
 * order). `size` gives each label's broadcast size: a dim of 1 where size is
 * larger is expanded when `expand` marks the label. */
static bool ein_normalize(wkind k, ein_op *op, const bool *keep, const int *order, int n_order, const int64_t *size,
                          const bool *expand)
{
    int64_t st[EIN_LABELS], s = 1;
    for (int i = op->n - 1; i >= 0; i--)
        st[i] = s, s *= op->dims[i];
    int ul[EIN_LABELS], nu = 0;
    int64_t ud[EIN_LABELS], us[EIN_LABELS];
    bool changed = false;
    for (int i = 0; i < op->n; i++) {
        int j = 0;
        while (j < nu && ul[j] != op->lab[i])
            j++;
        if (j == nu) {
            ul[nu] = op->lab[i], ud[nu] = op->dims[i], us[nu] = st[i], nu++;
        } else {
            us[j] += st[i];
            changed = true;
        }
    }
    /* gather order: kept labels (in `order` when given), then summed ones */
    int gl[EIN_LABELS], ng = 0, nkeep = 0;
    int64_t gd[EIN_LABELS], gs[EIN_LABELS];
    if (order) {
        for (int o = 0; o < n_order; o++)
            for (int j = 0; j < nu; j++)
                if (ul[j] == order[o])
                    gl[ng] = ul[j], gd[ng] = ud[j], gs[ng] = us[j], ng++;
    } else {
        for (int j = 0; j < nu; j++)
            if (keep[ul[j]])
                gl[ng] = ul[j], gd[ng] = ud[j], gs[ng] = us[j], ng++;
    }
    nkeep = ng;
    for (int j = 0; j < nu; j++)
        if (!keep[ul[j]])
            gl[ng] = ul[j], gd[ng] = ud[j], gs[ng] = us[j], ng++;
    for (int i = 0; i < ng; i++) {
        if (i < nkeep && expand && expand[gl[i]] && gd[i] == 1 && size[gl[i]] != 1) {
            gd[i] = size[gl[i]];
            gs[i] = 0;
        }
        if (gl[i] != op->lab[i] || gs[i] != st[i])
            changed = true;
    }
    if (ng != op->n || nkeep < ng)
        changed = true;
    if (!changed)
        return true;
    void *g = ein_gather(k, op->data, ng, gd, gs);
    if (!g)
        return false;
    if (nkeep < ng) {
        size_t n = ein_count(nkeep, gd), R = ein_count(ng - nkeep, gd + nkeep);
        void *r = cv_malloc((n ? n : 1) * mm_wsize(k));
        if (!r) {
            cv_free(g);
            return false;
        }
        ein_sum_tail(k, g, n, R, r);
        cv_free(g);
        g = r;
    }
    ein_set(op, g, true);
    op->n = nkeep;
    memcpy(op->lab, gl, (size_t)nkeep * sizeof *gl);
    memcpy(op->dims, gd, (size_t)nkeep * sizeof *gd);
    return true;
}

static bool ein_has(const ein_op *op, int l)
{
    for (int i = 0; i < op->n; i++)
        if (op->lab[i] == l)
            return true;
    return false;
}

/* a = a (x) b contracted over their shared labels not in `later`. */
static bool ein_contract(wkind k, ein_op *a, ein_op *b, const bool *later, const int64_t *size)
{
    bool keep_a[EIN_LABELS], keep_b[EIN_LABELS], shared[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) {
        shared[l] = ein_has(a, l) && ein_has(b, l);
        keep_a[l] = later[l] || ein_has(b, l);
        keep_b[l] = later[l] || ein_has(a, l);
    }
    /* orders: A [batch, a-only, contracted], B [batch, contracted, b-only] */
    int oa[EIN_LABELS], ob[EIN_LABELS], nba = 0, na = 0, nb = 0, nbatch = 0, nc = 0;
    int batch[EIN_LABELS], contr[EIN_LABELS], aonly[EIN_LABELS], bonly[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) {
        if (shared[l] && later[l])
            batch[nbatch++] = l;
        else if (shared[l])
            contr[nc++] = l;
        else if (ein_has(a, l) && later[l])
            aonly[na++] = l;
        else if (ein_has(b, l) && later[l])
            bonly[nb++] = l;
    }
    for (int i = 0; i < nbatch; i++)
        oa[nba] = batch[i], ob[nba] = batch[i], nba++;
    int ka = nba, kb = nba;
    for (int i = 0; i < na; i++)
        oa[ka++] = aonly[i];
    for (int i = 0; i < nc; i++)
        oa[ka++] = contr[i], ob[kb++] = contr[i];
    for (int i = 0; i < nb; i++)
        ob[kb++] = bonly[i];
    if (!ein_normalize(k, a, keep_a, oa, ka, size, shared) || !ein_normalize(k, b, keep_b, ob, kb, size, shared))
        return false;
    size_t NB = ein_count(nbatch, a->dims), M = ein_count(na, a->dims + nbatch), K = ein_count(nc, a->dims + nbatch + na),
           N = ein_count(nb, b->dims + nbatch + nc), es = mm_wsize(k);
    size_t total = ein_mul(ein_mul(NB, M), N);
    void *c = cv_malloc((total ? total : 1) * es);
    if (!c)
        return false;
    for (size_t i = 0; i < NB; i++)
        if (!mm_gemm1(k, false, false, M, N, K, 1, (const char *)a->data + i * M * K * es, K,
                   (const char *)b->data + i * K * N * es, N, 0, (char *)c + i * M * N * es, N)) {
            cv_free(c);
            return false;
        }
    int64_t dims[EIN_LABELS];
    int lab[EIN_LABELS], n = 0;
    for (int i = 0; i < nbatch + na; i++)
        lab[n] = a->lab[i], dims[n] = a->dims[i], n++;
    for (int i = 0; i < nb; i++)
        lab[n] = b->lab[nbatch + nc + i], dims[n] = b->dims[nbatch + nc + i], n++;
    ein_set(a, c, true);
    a->n = n;
    memcpy(a->lab, lab, (size_t)n * sizeof *lab);
    memcpy(a->dims, dims, (size_t)n * sizeof *dims);
    return true;
}

static bool einsum_type_ok(carve_dtype t)
{
    return cv_dtype_is_int(t) ? t != CARVE_INT4 && t != CARVE_UINT4
                              : t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

carve_status k_einsum(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const char *eq = cv_attr_s(k->m, k->node, "equation", NULL);
    if (!eq)
        return cv_kerr(k, "attribute 'equation' is missing");
    carve_dtype dt = in[0]->dtype;
    for (uint32_t i = 0; i < n_in; i++) {
        if (!in[i])
            return cv_kerr(k, "input %u is omitted", i);
        if (in[i]->dtype != dt)
            return cv_kerr(k, "input %u is %s but input 0 is %s", i, carve_dtype_name(in[i]->dtype), carve_dtype_name(dt));
    }
    if (!einsum_type_ok(dt))
        return cv_kerr(k, "inputs are %s, expected a numeric type", carve_dtype_name(dt));
    int ranks[256] = {0};
    ein_term terms[256], outt;
    for (uint32_t i = 0; i < n_in; i++)
        ranks[i] = in[i]->rank;
    char err[512];
    if (!ein_parse(eq, n_in, ranks, terms, &outt, err, sizeof err))
        return cv_kerr(k, "%s", err);
    /* label sizes (numpy broadcasting of 1s), checked across operands */
    int64_t size[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++)
        size[l] = -1;
    for (uint32_t t = 0; t < n_in; t++)
        for (int i = 0; i < terms[t].n; i++) {
            int l = terms[t].lab[i];
            int64_t d = in[t]->dims[i];
            for (int j = 0; j < i; j++)
                if (terms[t].lab[j] == l && in[t]->dims[j] != d)
                    return cv_kerr(k, "input %u repeats a label on dims %d and %d of different sizes (%lld, %lld)", t, j, i,
                                   (long long)in[t]->dims[j], (long long)d);
            if (size[l] < 0 || size[l] == 1)
                size[l] = d;
            else if (d != 1 && d != size[l])
                return cv_kerr(k, "input %u dim %d is %lld but that label has size %lld elsewhere", t, i, (long long)d,
                               (long long)size[l]);
        }
    wkind wk = mm_wkind_of(dt);
    ein_op *ops = cv_malloc(n_in * sizeof *ops);
    if (!ops)
        return cv_knomem(k);
    carve_status st = CARVE_OK;
    uint32_t loaded = 0;
    for (; loaded < n_in; loaded++) {
        ein_op *o = &ops[loaded];
        o->n = terms[loaded].n;
        memcpy(o->lab, terms[loaded].lab, (size_t)o->n * sizeof *o->lab);
        memcpy(o->dims, in[loaded]->dims, (size_t)o->n * sizeof *o->dims);
        o->data = mm_load(in[loaded], wk, &o->owned);
        if (!o->data) {
            st = cv_knomem(k);
            break;
        }
    }
    bool in_out[EIN_LABELS] = {false};
    for (int i = 0; i < outt.n; i++)
        in_out[outt.lab[i]] = true;
    for (uint32_t t = 0; !st && t < n_in; t++) {
        /* labels still needed after operand t: the output's and later operands' */
        bool later[EIN_LABELS];
        memcpy(later, in_out, sizeof later);
        for (uint32_t u = t + 1; u < n_in; u++)
            for (int i = 0; i < terms[u].n; i++)
                later[terms[u].lab[i]] = true;
        bool ok = t == 0 ? true : ein_contract(wk, &ops[0], &ops[t], later, size);
        if (ok && t == 0) {
            bool keep[EIN_LABELS];
            memcpy(keep, later, sizeof keep);
            for (uint32_t u = 1; u < n_in; u++)
                for (int i = 0; i < terms[u].n; i++)
                    keep[terms[u].lab[i]] = true;
            ok = ein_normalize(wk, &ops[0], keep, NULL, 0, size, NULL);
        }
        if (!ok)
            st = cv_kerr(k, "out of memory, or a product too large for BLAS");
    }
    if (!st && !ein_normalize(wk, &ops[0], in_out, outt.lab, outt.n, size, in_out))
        st = cv_knomem(k);
    cv_val *y = NULL;
    if (!st) {
        int64_t od[CARVE_MAX_RANK];
        for (int i = 0; i < outt.n; i++)
            od[i] = ops[0].dims[i];
        y = cv_val_new_uninit(dt, outt.n, od);
        if (!y)
            st = cv_knomem(k);
        else
            mm_store(y, ops[0].data, wk);
    }
    for (uint32_t i = 0; i < loaded; i++)
        if (ops[i].owned)
            cv_free(ops[i].data);
    cv_free(ops);
    if (!st)
        out[0] = y;
    return st;
}


carve_status i_einsum(cv_ictx *c)
{
    const cv_node *nd = &c->m->nodes[c->node];
    carve_dtype dt = nn_dtype_in(c, 0);
    const char *eq = cv_attr_s(c->m, c->node, "equation", NULL);
    if (!eq)
        return cv_ierr(c, "attribute 'equation' is missing");
    if (nd->n_in > 255)
        return cv_infer_set(c, 0, dt, -1, NULL);
    int ranks[256];
    const cv_type *ts[256];
    ein_term terms[256], outt;
    for (uint32_t i = 0; i < nd->n_in; i++) {
        ts[i] = nn_tensor_in(c, i);
        if (!ts[i])
            return cv_infer_set(c, 0, dt, -1, NULL);
        ranks[i] = ts[i]->rank;
    }
    char err[512];
    if (!ein_parse(eq, nd->n_in, ranks, terms, &outt, err, sizeof err))
        return cv_ierr(c, "%s", err);
    carve_dim size[EIN_LABELS];
    bool set[EIN_LABELS] = {false};
    for (uint32_t t = 0; t < nd->n_in; t++)
        for (int i = 0; i < terms[t].n; i++) {
            int l = terms[t].lab[i];
            carve_dim d = ts[t]->dims[i], *s = &size[l];
            if (!set[l] || s->value == 1)
                *s = d; /* first sighting, or a broadcast 1 gives way */
            else if (d.value == 1)
                continue;
            else if (d.value >= 0 && s->value >= 0 && d.value != s->value)
                return cv_ierr(c, "input %u dim %d is %lld but that label has size %lld elsewhere", t, i,
                               (long long)d.value, (long long)s->value);
            else if (s->value < 0 && d.value >= 0)
                *s = d; /* a known size beats a symbolic one */
            set[l] = true;
        }
    carve_dim od[CARVE_MAX_RANK];
    for (int i = 0; i < outt.n; i++)
        od[i] = size[outt.lab[i]];
    return cv_infer_set(c, 0, dt, outt.n, od);
}

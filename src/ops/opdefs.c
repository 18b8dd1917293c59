/* opdefs.c: the op table expanded into an array, lookups, attribute readers
 * and kernel error reporting. */
#include "ops.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* In the table, "d_none" marks an op without decomposition. */
#define d_none NULL
const cv_op_def cv_op_table[] = {
#define OP(name, dom, since, imin, imax, omin, omax, flags, shape_in, kernel, infer, decomp) \
    {#name, dom, since, imin, imax, omin, omax, flags, shape_in, kernel, infer, decomp},
#include "optable.def"
#undef OP
};
#undef d_none

size_t cv_op_count(void) { return sizeof cv_op_table / sizeof *cv_op_table; }

/* ONNX's type constraints (typecons.def, generated from onnx's schemas by
 * scripts/gen_type_constraints.py), sorted by op then version. */
typedef struct tc_row {
    const char *op;
    int since;
    uint8_t variadic_last, n;
    uint32_t mask[16];
} tc_row;
static const tc_row tc_rows[] = {
#define TC(op, since, var, n, ...) {#op, since, var, n, __VA_ARGS__},
#include "typecons.def"
#undef TC
};

/* The first tc_rows row of an op, by binary search; N_TC when it has none. */
#define N_TC (sizeof tc_rows / sizeof *tc_rows)
static size_t tc_first(const char *op)
{
    size_t lo = 0, hi = N_TC;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(tc_rows[mid].op, op) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < N_TC && !strcmp(tc_rows[lo].op, op) ? lo : N_TC;
}

/* One past the last tc_rows row of the op whose first row is `first`. */
static size_t tc_end(size_t first)
{
    size_t i = first;
    while (i < N_TC && (tc_rows[i].op == tc_rows[first].op || !strcmp(tc_rows[i].op, tc_rows[first].op)))
        i++;
    return i;
}

/* The constraints of rows [first, end) of one op at opset: its newest row
 * not after opset. */
static cv_tcons tc_at(size_t first, size_t end, int64_t opset)
{
    const tc_row *best = NULL;
    for (size_t i = first; i < end; i++)
        if (tc_rows[i].since <= opset)
            best = &tc_rows[i];
    if (!best || !best->n)
        return (cv_tcons){NULL, 0, false};
    return (cv_tcons){best->mask, best->n, best->variadic_last};
}

uint32_t cv_type_constraint(const char *domain, const char *op, int64_t opset, uint32_t input)
{
    if ((domain && *domain && strcmp(domain, "ai.onnx")) || opset > CV_TYPECONS_OPSET)
        return 0; /* newer than the schemas the table was made from: not checked */
    size_t first = tc_first(op);
    return first < N_TC ? cv_tcons_mask(tc_at(first, tc_end(first), opset), input) : 0;
}

/* Per op table row: its op's tc_rows rows [first, end) (made once;
 * inference asks for every node, and a search compares names). */
static uint16_t tc_of_def[sizeof cv_op_table / sizeof *cv_op_table][2];
static pthread_once_t tc_of_def_once = PTHREAD_ONCE_INIT;
static void make_tc_of_def(void)
{
    _Static_assert(N_TC < UINT16_MAX, "typecons.def too large for its index");
    for (size_t i = 0; i < sizeof cv_op_table / sizeof *cv_op_table; i++) {
        size_t first = *cv_op_table[i].domain ? N_TC : tc_first(cv_op_table[i].name);
        tc_of_def[i][0] = (uint16_t)first;
        tc_of_def[i][1] = (uint16_t)(first < N_TC ? tc_end(first) : N_TC);
    }
}

cv_tcons cv_type_constraints_def(const cv_op_def *def, int64_t opset)
{
    if (opset > CV_TYPECONS_OPSET)
        return (cv_tcons){NULL, 0, false};
    pthread_once(&tc_of_def_once, make_tc_of_def);
    const uint16_t *r = tc_of_def[cv_op_row(def)];
    return tc_at(r[0], r[1], opset);
}

int64_t cv_opset_newest(const char *domain)
{
    if (!domain || !*domain || !strcmp(domain, "ai.onnx"))
        return CV_ONNX_OPSET_NEWEST;
    int64_t newest = 0;
    for (size_t i = 0; i < sizeof cv_op_table / sizeof *cv_op_table; i++)
        if (!strcmp(cv_op_table[i].domain, domain) && cv_op_table[i].since > newest)
            newest = cv_op_table[i].since;
    return newest;
}

carve_status cv_check_opsets(carve_model *m)
{
    bool onnx_newer = carve_model_opset(m, "") > CV_ONNX_OPSET_NEWEST;
    for (carve_node_id id = 0; id < m->n_nodes; id++) {
        const cv_node *n = &m->nodes[id];
        if (n->dead || (!*n->domain && !onnx_newer))
            continue; /* most nodes: ai.onnx, checked once */
        int64_t newest = cv_opset_newest(n->domain);
        int64_t have = carve_model_opset(m, n->domain);
        if (newest && have > newest)
            return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                            "unsupported_opset: node '%s' (%s) is in domain %s at opset %lld, newer than carve knows "
                            "(the newest it knows is %lld); allow_newer_opset (--allow-newer-opset) lowers it "
                            "with opset %lld's behaviour",
                            n->name, n->op, *n->domain ? n->domain : "ai.onnx", (long long)have, (long long)newest,
                            (long long)newest);
    }
    return CARVE_OK;
}
const cv_op_def *cv_op_at(size_t i) { return &cv_op_table[i]; }

/* Rows by name, then a hash of (name, domain) -> the first of its rows:
 * made once (the table never changes). A lookup is one hash and one or two
 * string compares (it runs for every node of a model). */
#define N_ROWS (sizeof cv_op_table / sizeof *cv_op_table)
#define N_SLOTS 2048 /* a power of two, over twice the rows */
static uint16_t by_name[N_ROWS];
static uint16_t slot_first[N_SLOTS]; /* first row in by_name + 1, 0 = empty */
static uint8_t slot_rows[N_SLOTS];   /* how many rows the op has */
static pthread_once_t by_name_once = PTHREAD_ONCE_INIT;

static int cmp_rows(const void *a, const void *b)
{
    const cv_op_def *x = &cv_op_table[*(const uint16_t *)a], *y = &cv_op_table[*(const uint16_t *)b];
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->domain, y->domain);
}

static uint32_t hash_op(const char *domain, const char *op)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)op; *p; p++)
        h = (h ^ *p) * 16777619u;
    h = (h ^ 0xff) * 16777619u; /* no name byte: separates name from domain */
    for (const unsigned char *p = (const unsigned char *)domain; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h ^ (h >> 15);
}

static void sort_rows(void)
{
    _Static_assert(N_ROWS < N_SLOTS / 2, "op table too large for its lookup hash");
    for (size_t i = 0; i < N_ROWS; i++)
        by_name[i] = (uint16_t)i;
    qsort(by_name, N_ROWS, sizeof *by_name, cmp_rows);
    for (size_t i = 0; i < N_ROWS; i++) {
        const cv_op_def *d = &cv_op_table[by_name[i]];
        if (i && !cmp_rows(&by_name[i - 1], &by_name[i]))
            continue; /* not the first row of its op */
        size_t k = i + 1;
        while (k < N_ROWS && !cmp_rows(&by_name[i], &by_name[k]))
            k++;
        uint32_t j = hash_op(d->domain, d->name) & (N_SLOTS - 1);
        while (slot_first[j])
            j = (j + 1) & (N_SLOTS - 1);
        slot_first[j] = (uint16_t)(i + 1);
        slot_rows[j] = (uint8_t)(k - i);
    }
}

const cv_op_def *cv_op_find(const char *domain, const char *op, int64_t opset)
{
    if (!domain || !strcmp(domain, "ai.onnx"))
        domain = "";
    pthread_once(&by_name_once, sort_rows);
    size_t lo = 0, hi = 0; /* the op's rows: by_name[lo .. hi) */
    for (uint32_t j = hash_op(domain, op) & (N_SLOTS - 1); slot_first[j]; j = (j + 1) & (N_SLOTS - 1)) {
        const cv_op_def *d = &cv_op_table[by_name[slot_first[j] - 1]];
        if (!strcmp(d->name, op) && !strcmp(d->domain, domain)) {
            lo = slot_first[j] - 1u;
            hi = lo + slot_rows[j];
            break;
        }
    }
    const cv_op_def *best = NULL;
    for (size_t i = lo; i < hi; i++) {
        const cv_op_def *d = &cv_op_table[by_name[i]];
        if (d->since <= opset && (!best || d->since > best->since))
            best = d;
    }
    return best;
}

const cv_op_def *cv_op_for_node_memo(const carve_model *m, carve_node_id n, cv_op_memo *memo)
{
    /* Cached on the node (a cache, not model state: hence the cast); the
     * model's opset_gen moves whenever an opset changes, onnx_opset_gen only
     * when ai.onnx's does (adding ai.carve for the Delegates leaves the
     * ai.onnx nodes' rows standing). */
    cv_node *nd = (cv_node *)&m->nodes[n];
    uint32_t gen = *nd->domain ? m->opset_gen : m->onnx_opset_gen;
    if (nd->def_gen == gen)
        return nd->def;
    const uint32_t n_memo = memo ? sizeof memo->e / sizeof *memo->e : 0;
    for (uint32_t i = 0; i < n_memo; i++) {
        const char *op = memo->e[i].op, *dom = memo->e[i].domain;
        if (op && memo->e[i].gen == gen && (op == nd->op || (op[0] == nd->op[0] && !strcmp(op, nd->op))) &&
            (dom == nd->domain || !strcmp(dom, nd->domain))) {
            memo->e[i].op = nd->op; /* the next nodes of a run share this node's name */
            nd->def = memo->e[i].def;
            nd->def_gen = gen;
            if (i) { /* to the front: asked first next time */
                struct cv_op_memo_entry e = memo->e[i];
                memo->e[i] = memo->e[0];
                memo->e[0] = e;
            }
            return nd->def;
        }
    }
    int64_t opset = carve_model_opset(m, nd->domain);
    nd->def = cv_op_find(nd->domain, nd->op, opset);
    nd->def_gen = gen;
    if (memo) { /* in at the front, the last out */
        memmove(&memo->e[1], &memo->e[0], (n_memo - 1) * sizeof memo->e[0]);
        memo->e[0].op = nd->op;
        memo->e[0].domain = nd->domain;
        memo->e[0].gen = gen;
        memo->e[0].def = nd->def;
    }
    return nd->def;
}

bool cv_op_rows_after(carve_model *m, const cv_op_def *const *before)
{
    const cv_op_def **memo = cv_malloc(N_ROWS * sizeof *memo);
    if (!memo)
        return false;
    bool *done = cv_malloc(N_ROWS * sizeof *done);
    if (!done) {
        cv_free(memo);
        return false;
    }
    memset(done, 0, N_ROWS * sizeof *done);
    bool same = true;
    for (carve_node_id id = 0; id < m->n_nodes; id++) {
        cv_node *nd = &m->nodes[id];
        if (nd->dead)
            continue;
        const cv_op_def *old = before[id];
        if (!old) {
            same = same && !cv_op_for_node(m, id);
            continue;
        }
        size_t k = cv_op_row(old);
        if (!done[k]) { /* the op is named by its row: its new row follows from the old one */
            memo[k] = cv_op_find(old->domain, old->name, carve_model_opset(m, old->domain));
            done[k] = true;
        }
        nd->def = memo[k];
        nd->def_gen = *nd->domain ? m->opset_gen : m->onnx_opset_gen;
        same = same && memo[k] == old;
    }
    cv_free(done);
    cv_free(memo);
    return same;
}

bool cv_node_fits(const carve_model *m, carve_node_id n, const cv_op_def *def, char *why, size_t whysz)
{
    const cv_node *nd = &m->nodes[n];
    if (nd->n_in < def->in_min || (def->in_max != 255 && nd->n_in > def->in_max) || nd->n_out < def->out_min ||
        (def->out_max != 255 && nd->n_out > def->out_max)) {
        snprintf(why, whysz, "node '%s' (%s): has %u inputs and %u outputs, the op takes %u..%u and %u..%u", nd->name,
                 nd->op, nd->n_in, nd->n_out, def->in_min, def->in_max, def->out_min, def->out_max);
        return false;
    }
    for (uint32_t i = 0; !(def->flags & CV_OP_CONTROL) && i < def->in_min; i++)
        if (nd->in[i] == CARVE_NONE) {
            snprintf(why, whysz, "node '%s' (%s): input %u is empty, but the op requires it", nd->name, nd->op, i);
            return false;
        }
    return true;
}

/* ---------------------------------------------------------------- attributes */

int64_t cv_attr_i(const carve_model *m, carve_node_id n, const char *name, int64_t dflt)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_INT ? a->u.i : dflt;
}

float cv_attr_f(const carve_model *m, carve_node_id n, const char *name, float dflt)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_FLOAT ? a->u.f : dflt;
}

const char *cv_attr_s(const carve_model *m, carve_node_id n, const char *name, const char *dflt)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_STRING ? (const char *)a->u.s.p : dflt;
}

int cv_attr_ints(const carve_model *m, carve_node_id n, const char *name, const int64_t **v)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_INTS)
        return -1;
    *v = a->u.ints;
    return (int)a->n;
}

int cv_attr_floats(const carve_model *m, carve_node_id n, const char *name, const float **v)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_FLOATS)
        return -1;
    *v = a->u.floats;
    return (int)a->n;
}

const cv_tensor *cv_attr_t(const carve_model *m, carve_node_id n, const char *name)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_TENSOR ? a->u.t : NULL;
}

carve_graph_id cv_attr_g(const carve_model *m, carve_node_id n, const char *name)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    return a && a->kind == CARVE_ATTR_GRAPH ? a->u.g : CARVE_NONE;
}

/* ---------------------------------------------------------------- errors */

carve_status cv_node_err(const carve_model *m, carve_node_id node, carve_status code, const char *prefix,
                         const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const cv_node *n = &m->nodes[node];
    return cv_error(m->ctx, code, "node '%s' (%s): %s%s", n->name, n->op, prefix, msg);
}

carve_status cv_kout(carve_status s, cv_val *y, cv_val **out)
{
    if (s)
        cv_val_unref(y);
    else
        *out = y;
    return s;
}

carve_status cv_knomem(cv_kctx *k)
{
    const cv_node *n = &k->m->nodes[k->node];
    return cv_error(k->m->ctx, CARVE_ERR_NOMEM, "node '%s' (%s): out of memory (or a tensor above 16 GiB)",
                    n->name, n->op);
}

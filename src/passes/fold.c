/* fold.c: constant folding, and the driver of the folding passes.
 *
 * Seeds are initializers and Constant nodes; every node whose inputs are all
 * known (Shape and Size only need a static shape) is computed with its
 * reference kernel, the op table's, so folding and running agree by
 * construction. A folded output keeps its value id and its name and becomes
 * an initializer of the node's graph: consumers, graph outputs and names are
 * untouched. Subgraphs are folded before the node that holds them, seeing the
 * outer constants; an If whose condition is known is replaced by the branch
 * it takes.
 *
 * Guards keep some all-constant nodes as ops (carve_fold_guard): random ops,
 * non-tensor results, blow-ups (a result above max_bytes and above twice its
 * constant inputs), the DequantizeLinear of a quantized weight (the integer
 * weight and its encoding stay for the target), and control flow as a whole.
 *
 * The rewrites that are folding in disguise live in fold_qdq.c, fuse.c and
 * dce.c; cv_fold_run() spells the pipeline out. The helpers all of them use
 * are in fold_util.c. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES ((size_t)1 << 20)
#define STAND_IN_REFS (1 << 30) /* a stack value kernels only read */

static const char *const guard_names[CARVE_GUARD_COUNT] = {
    "impure", "non_tensor", "blow_up", "quantized_weight", "control_flow",
};

const char *carve_fold_guard_name(carve_fold_guard g)
{
    return (unsigned)g < CARVE_GUARD_COUNT ? guard_names[g] : "unknown";
}

/* ---------------------------------------------------------------- constant folding */

static cv_val *known(cv_fold *f, carve_value_id v)
{
    return v != CARVE_NONE && v < f->n_known ? f->known[v] : NULL;
}

static void set_known(cv_fold *f, carve_value_id v, cv_val *x)
{
    if (v < f->n_known) {
        cv_val_unref(f->known[v]);
        f->known[v] = x;
    } else {
        cv_val_unref(x);
    }
}

static void refuse(cv_fold *f, carve_node_id id, carve_fold_guard g)
{
    if (id < f->cap && f->nodes[id].guard < 0) {
        f->nodes[id].guard = (int8_t)g;
        f->st.refused[g]++;
    }
}

/* A tensor in m's arena with x's dtype and shape that points at x's own
 * bytes (no strings yet when x holds strings); NULL when out of memory. */
static cv_tensor *tensor_over(carve_model *m, const cv_val *x)
{
    cv_tensor *t = cv_arena_alloc(&m->arena, sizeof *t);
    if (!t)
        return NULL;
    t->dtype = x->dtype;
    t->rank = x->rank;
    t->dims = cv_arena_memdup(&m->arena, x->dims, (size_t)x->rank * sizeof *x->dims);
    t->nelem = x->nelem;
    if (x->dtype != CARVE_STRING) {
        t->data = x->data;
        t->nbytes = x->nbytes;
    }
    return m->arena.failed ? NULL : t;
}

/* An initializer tensor holding x's data (shared when x borrows the
 * model's own bytes, else copied into the arena). */
static cv_tensor *tensor_of(carve_model *m, const cv_val *x)
{
    if (x->dtype != CARVE_STRING && !x->borrowed)
        return cv_tensor_new(m, x->dtype, x->rank, x->dims, x->data, x->nbytes);
    cv_tensor *t = tensor_over(m, x);
    if (!t || x->dtype != CARVE_STRING)
        return t;
    t->strs = cv_arena_alloc(&m->arena, (x->nelem ? x->nelem : 1) * sizeof *t->strs);
    for (size_t i = 0; t->strs && i < x->nelem; i++) {
        const char *s = ((char **)x->data)[i];
        t->strs[i].n = strlen(s);
        t->strs[i].p = (const uint8_t *)cv_arena_strdup(&m->arena, s);
    }
    return m->arena.failed ? NULL : t;
}

/* The tensor of a computed value of 4 KiB and more holds the value's own
 * bytes, and the model keeps the value (one more reference, dropped when
 * the model is freed), instead of a copy in the model's arena: the copy was
 * a fifth of lowering silero VAD (6.4 MB computed, most of it read only by
 * nodes folded after it), and the arena, which never frees, kept it as
 * long. Folding's values come from cv_malloc, not a run's pool. */
#define LEND_MIN 4096

static void drop_val(void *x) { cv_val_unref(x); }

static cv_tensor *lend(cv_fold *f, cv_val *x)
{
    carve_model *m = f->m;
    if (x->dtype == CARVE_STRING || x->borrowed || x->nbytes < LEND_MIN)
        return tensor_of(m, x);
    cv_tensor *t = tensor_over(m, x);
    if (!t || !cv_model_keep(m, drop_val, x))
        return NULL;
    cv_val_ref(x);
    return t;
}

/* Value v (the output of a node being folded) becomes an initializer of its
 * graph holding t. */
static carve_status make_init(cv_fold *f, carve_value_id v, cv_tensor *t)
{
    carve_model *m = f->m;
    cv_value *x = &m->values[v];
    t->name = x->name;
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        d[i] = (carve_dim){t->dims[i], NULL};
    carve_status s = carve_value_set_type(m, v, t->dtype, t->rank, d);
    if (s)
        return s;
    x = &m->values[v];
    x->init = t;
    x->producer = CARVE_NONE;
    if (!cv_ids_push(&m->graphs[x->graph].inits, v))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    return CARVE_OK;
}

/* A Constant node becomes an initializer (its bytes move, none are added). */
static carve_status fold_constant(cv_fold *f, carve_node_id id)
{
    carve_model *m = f->m;
    const cv_node *n = &m->nodes[id];
    if (n->n_out != 1 || n->out[0] == CARVE_NONE)
        return CARVE_OK;
    const cv_attr *a = cv_node_attr_find(m, id, "value");
    cv_tensor *t = NULL;
    cv_val *x = NULL;
    if (a && a->kind == CARVE_ATTR_TENSOR && (a->u.t->dtype == CARVE_STRING || a->u.t->data || !a->u.t->nelem)) {
        t = cv_arena_memdup(&m->arena, a->u.t, sizeof *t);
        if (!t)
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        if (!t->data && !t->nelem && t->dtype != CARVE_STRING)
            t->data = "";
        x = cv_val_from_tensor(t);
    } else {
        cv_val *out[1];
        if (cv_fold_kernel(m, id, NULL, 0, out, 1))
            return CARVE_OK; /* sparse or broken: it stays a node */
        x = out[0];
        if (x->kind != CV_VAL_TENSOR || !(t = tensor_of(m, x))) {
            cv_val_unref(x);
            return m->arena.failed ? cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding") : CARVE_OK;
        }
    }
    carve_value_id v = n->out[0];
    carve_status s = make_init(f, v, t);
    if (s) {
        cv_val_unref(x);
        return s;
    }
    set_known(f, v, x); /* the Constant's bytes move: none are added */
    cv_fold_drop(f, id, CV_FATE_FOLDED, CARVE_NONE, NULL);
    return CARVE_OK;
}

static carve_status fold_graph(cv_fold *f, carve_graph_id g);

/* Moves value v into graph g, renamed when g already sees its name. */
static bool move_value(carve_model *m, carve_value_id v, carve_graph_id g)
{
    cv_value *x = &m->values[v];
    if (carve_graph_find_value(m, g, x->name) != CARVE_NONE) {
        if (cv_strmap_get(&m->graphs[x->graph].scope, x->name) == v)
            cv_strmap_del(&m->graphs[x->graph].scope, x->name);
        const char *nm = cv_value_unique_name(m, g, x->name);
        if (!nm)
            return false;
        x->name = nm;
        if (x->init)
            x->init->name = nm;
    }
    return cv_value_move(m, v, g);
}

/* An If whose condition is known: the branch it takes replaces it. The
 * branch's nodes move into the If's graph at its place (keeping their
 * names), its initializers move along, and its outputs become the If's
 * output values (so consumers and graph outputs keep their names). */
static carve_status inline_if_now(cv_fold *f, carve_node_id id, bool cond)
{
    carve_model *m = f->m;
    const char *taken = cond ? "then_branch" : "else_branch";
    carve_graph_id b = cv_attr_g(m, id, taken);
    carve_graph_id g = m->nodes[id].graph;
    if (b == CARVE_NONE || m->graphs[b].inputs.n || m->graphs[b].outputs.n != m->nodes[id].n_out)
        return CARVE_OK;
    carve_graph_id other = cv_attr_g(m, id, cond ? "else_branch" : "then_branch");
    const char *why = cv_arena_printf(&m->arena, "If '%s' has a constant condition (%s): its %s was inlined",
                                      m->nodes[id].name, cond ? "true" : "false", taken);
    const char *why_other = cv_arena_printf(&m->arena, "in the %s of If '%s', which its constant condition never takes",
                                            cond ? "else_branch" : "then_branch", m->nodes[id].name);
    if (!why || !why_other)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    if (other != CARVE_NONE)
        cv_fold_drop_graph(f, other, CARVE_NONE, why_other);
    cv_graph *bg = &m->graphs[b];
    /* initializers and node outputs of the branch become values of g */
    for (uint32_t i = 0; i < bg->inits.n; i++)
        if (!move_value(m, bg->inits.v[i], g) || !cv_ids_push(&m->graphs[g].inits, bg->inits.v[i]))
            return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    bg = &m->graphs[b];
    bg->inits.n = 0;
    cv_ids moved = {0};
    for (uint32_t i = 0; i < bg->nodes.n; i++) {
        carve_node_id nid = bg->nodes.v[i];
        cv_node *n = &m->nodes[nid];
        n->graph = g;
        for (uint32_t j = 0; j < n->n_out; j++)
            if (n->out[j] != CARVE_NONE && !move_value(m, n->out[j], g))
                goto nomem;
        for (uint32_t j = 0; j < n->n_attr; j++) {
            const cv_attr *a = &n->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++)
                m->graphs[a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k]].parent = g;
        }
        if (!cv_ids_push(&moved, nid))
            goto nomem;
    }
    bg = &m->graphs[b];
    bg->nodes.n = 0;
    /* the branch's outputs become the If's outputs */
    uint32_t n_out = m->nodes[id].n_out;
    for (uint32_t i = 0; i < n_out; i++) {
        carve_value_id ifo = m->nodes[id].out[i], bo = m->graphs[b].outputs.v[i];
        if (ifo == CARVE_NONE)
            continue;
        carve_node_id p = m->values[bo].producer;
        bool first = true;
        for (uint32_t k = 0; k < i; k++)
            first = first && m->graphs[b].outputs.v[k] != bo;
        if (p != CARVE_NONE && m->nodes[p].graph == g && !m->nodes[p].dead && first) {
            /* the node that made the branch output makes the If's output */
            cv_fold_rebind_output(f, p, m->values[bo].out_index, ifo);
            for (uint32_t k = 0; k < moved.n; k++) {
                cv_node *n = &m->nodes[moved.v[k]];
                for (uint32_t j = 0; j < n->n_in; j++)
                    if (n->in[j] == bo)
                        n->in[j] = ifo;
                for (uint32_t j = 0; j < n->n_attr; j++) {
                    const cv_attr *a = &n->attr[j];
                    uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
                    for (uint32_t q = 0; q < cnt; q++)
                        cv_fold_replace_reads(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[q], bo, ifo,
                                              true);
                }
            }
            for (uint32_t k = i + 1; k < n_out; k++)
                if (m->graphs[b].outputs.v[k] == bo)
                    m->graphs[b].outputs.v[k] = ifo;
            m->graphs[b].outputs.v[i] = ifo;
            continue;
        }
        if (m->values[bo].init && !m->values[bo].is_input && m->values[bo].graph == g) {
            /* a branch initializer: the If's output holds the same tensor */
            cv_tensor *t = cv_arena_memdup(&m->arena, m->values[bo].init, sizeof *t);
            if (!t || make_init(f, ifo, t))
                goto nomem;
            f->st.bytes_added += cv_fold_tensor_bytes(t);
            cv_val *x = cv_val_from_tensor(t);
            if (x)
                set_known(f, ifo, x);
            continue;
        }
        /* an outer value (or one output twice): an Identity keeps the name */
        carve_node_id idn = cv_node_new(m, g, "Identity", "", 1, 1);
        if (idn == CARVE_NONE || !cv_names_derive(m, idn, id, "Identity") || !cv_fold_grow(f))
            goto nomem;
        m->nodes[idn].in[0] = bo;
        m->graphs[g].nodes.n--; /* placed below, with the branch's nodes */
        cv_fold_rebind_output(f, idn, 0, ifo);
        f->nodes[idn].from = id;
        if (known(f, bo)) {
            cv_val *x = cv_val_ref(known(f, bo));
            set_known(f, ifo, x);
        }
        if (!cv_ids_push(&moved, idn))
            goto nomem;
    }
    /* splice: the If's place holds the moved nodes */
    uint32_t pos = cv_graph_node_pos(m, id);
    cv_ids *list = &m->graphs[g].nodes;
    for (uint32_t k = 0; k < moved.n; k++)
        if (!cv_ids_push(list, moved.v[k]))
            goto nomem;
    cv_fold_drop(f, id, CV_FATE_REMOVED, CARVE_NONE, why);
    /* cv_fold_drop took the If out; the moved nodes sit at the tail */
    if (pos != CARVE_NONE)
        cv_graph_move_tail(m, g, moved.n, pos);
    f->st.if_inlined++;
    cv_ids_free(&moved);
    return CARVE_OK;
nomem:
    cv_ids_free(&moved);
    return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
}

/* Inlining reads and splices the graph's list: the nodes dropped so far
 * leave it first, and it drops the If at once. */
static carve_status inline_if(cv_fold *f, carve_node_id id, bool cond)
{
    cv_fold_flush(f);
    carve_graph_id lazy = f->lazy_g;
    f->lazy_g = CARVE_NONE;
    carve_status s = inline_if_now(f, id, cond);
    f->lazy_g = lazy;
    return s;
}

/* ---------------------------------------------------------------- shapes known in part
 *
 * Shape of a value whose shape is known in part is a tensor holding
 * UNKNOWN_DIM for each dim that is not static. Ops that only move elements
 * (moves_elements) carry such tensors along with their reference kernels;
 * a result with no UNKNOWN_DIM left is a constant like any other, so
 * Shape -> Cast -> Slice -> Concat folds when the dims it picks are static.
 * The marker is negative (no dim is) and fits int32 (shapes are cast to
 * int32 and back). A Reshape whose shape lacks one dim gets -1 there. */
#define UNKNOWN_DIM ((int64_t)-1073741831)

static bool has_unknown(const cv_val *x)
{
    if (x->kind != CV_VAL_TENSOR || (x->dtype != CARVE_INT64 && x->dtype != CARVE_INT32))
        return false;
    for (size_t i = 0; i < x->nelem; i++)
        if (cv_val_get_i64(x, i) == UNKNOWN_DIM)
            return true;
    return false;
}

static cv_val *partial(cv_fold *f, carve_value_id v)
{
    return f->partial && v != CARVE_NONE && v < f->n_known ? f->partial[v] : NULL;
}

/* May input i of node id hold a shape known in part? Its data inputs, for
 * ops that move elements without looking at them. */
static bool moves_elements(const carve_model *m, carve_node_id id, uint32_t i)
{
    const cv_node *n = &m->nodes[id];
    if (cv_node_is(n, "Concat"))
        return true;
    if (i != 0)
        return false;
    if (cv_node_is(n, "Cast")) {
        int64_t to = cv_attr_i(m, id, "to", 0);
        return to == CARVE_INT64 || to == CARVE_INT32;
    }
    const cv_op_def *d = cv_op_for_node(m, id);
    return d && (d->flags & (CV_OP_LAYOUT | CV_OP_NOOP | CV_OP_SELECT));
}

/* A stand-in for a value whose data is unknown but whose shape is known
 * (in part: UNKNOWN_DIM for the other dims), for Shape and Size. */
static bool shape_stand_in(const carve_model *m, carve_value_id v, bool need_all, cv_val *x)
{
    const cv_type *t = &m->values[v].type;
    if (t->kind != CARVE_TYPE_TENSOR || t->rank < 0 || !t->dtype)
        return false;
    memset(x, 0, sizeof *x);
    x->refs = STAND_IN_REFS; /* never freed: it lives on the stack */
    x->kind = CV_VAL_TENSOR;
    x->dtype = t->dtype;
    x->rank = t->rank;
    x->nelem = 1;
    x->borrowed = true;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0 && need_all)
            return false;
        x->dims[i] = t->dims[i].value < 0 ? UNKNOWN_DIM : t->dims[i].value;
        x->nelem *= t->dims[i].value < 0 ? 0 : (size_t)t->dims[i].value;
    }
    return true;
}

/* Reshape to a shape known but for one dim: that dim becomes -1 (the
 * Reshape computes it from the element count), so the shape is constant. */
static carve_status reshape_minus_one(cv_fold *f, carve_node_id id, const cv_val *shape)
{
    carve_model *m = f->m;
    if (shape->dtype != CARVE_INT64 || shape->rank != 1 || shape->nelem > CARVE_MAX_RANK)
        return CARVE_OK;
    bool allowzero = carve_model_opset(m, "") >= 14 && cv_attr_i(m, id, "allowzero", 0);
    int64_t d[CARVE_MAX_RANK];
    uint32_t unknown = 0;
    for (size_t i = 0; i < shape->nelem; i++) {
        d[i] = ((const int64_t *)shape->data)[i];
        if (d[i] == UNKNOWN_DIM) {
            d[i] = -1;
            unknown++;
        } else if (d[i] == -1 || (d[i] == 0 && allowzero)) {
            return CARVE_OK;
        }
    }
    if (unknown != 1)
        return CARVE_OK;
    char name[512];
    snprintf(name, sizeof name, "%s/shape", m->nodes[id].name);
    int64_t n = (int64_t)shape->nelem;
    carve_value_id v = cv_fold_new_init(f, m->nodes[id].graph, name, CARVE_INT64, 1, &n, d, (size_t)n * sizeof *d);
    if (v == CARVE_NONE)
        return carve_errcode(m->ctx) ? carve_errcode(m->ctx) : CARVE_ERR_NOMEM;
    m->nodes[id].in[1] = v; /* the old shape computation is left dead */
    return CARVE_OK;
}

/* Bytes of value v by its inferred type, SIZE_MAX when its shape is not static. */
static size_t static_bytes(const carve_model *m, carve_value_id v)
{
    const cv_type *t = &m->values[v].type;
    if (t->kind != CARVE_TYPE_TENSOR || t->rank < 0 || !t->dtype || t->dtype == CARVE_STRING)
        return SIZE_MAX;
    size_t n;
    int64_t d[CARVE_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0)
            return SIZE_MAX;
        d[i] = t->dims[i].value;
    }
    if (!cv_shape_nelem(t->rank, d, (size_t)1 << 48, &n))
        return SIZE_MAX;
    return cv_dtype_nbytes(t->dtype, n);
}

static bool blows_up(const cv_fold *f, size_t out_bytes, uint64_t in_bytes)
{
    return out_bytes > f->max_bytes && (uint64_t)out_bytes > 2 * in_bytes;
}

/* Computes node id from known inputs and makes its outputs initializers,
 * unless a guard refuses. */
static carve_status compute(cv_fold *f, carve_node_id id, const cv_op_def *def, cv_val **in, uint64_t in_bytes,
                            bool part)
{
    carve_model *m = f->m;
    const cv_node *n = &m->nodes[id];
    if (def->flags & CV_OP_CONTROL) {
        if (cv_node_is(n, "If") && in[0] && in[0]->kind == CV_VAL_TENSOR && in[0]->nelem == 1)
            return inline_if(f, id, cv_val_get_f64(in[0], 0) != 0);
        refuse(f, id, CARVE_GUARD_CONTROL_FLOW);
        return CARVE_OK;
    }
    if (def->flags & CV_OP_IMPURE) {
        refuse(f, id, CARVE_GUARD_IMPURE);
        return CARVE_OK;
    }
    bool nontensor = (def->flags & CV_OP_NONTENSOR) != 0;
    for (uint32_t j = 0; j < n->n_out; j++)
        if (n->out[j] != CARVE_NONE && m->values[n->out[j]].type.kind == CARVE_TYPE_OTHER)
            nontensor = true;
    for (uint32_t i = 0; i < n->n_in; i++)
        if (in[i] && in[i]->kind != CV_VAL_TENSOR)
            nontensor = true;
    if (nontensor) {
        refuse(f, id, CARVE_GUARD_NON_TENSOR);
        return CARVE_OK;
    }
    if (cv_node_is(n, "DequantizeLinear")) {
        refuse(f, id, CARVE_GUARD_QUANT_WEIGHT);
        return CARVE_OK;
    }
    /* the blow-up guard, before computing anything when shapes are static */
    for (uint32_t j = 0; j < n->n_out; j++)
        if (n->out[j] != CARVE_NONE) {
            size_t b = static_bytes(m, n->out[j]);
            if (b != SIZE_MAX && blows_up(f, b, in_bytes)) {
                refuse(f, id, CARVE_GUARD_BLOW_UP);
                return CARVE_OK;
            }
        }
    uint32_t n_out = n->n_out;
    cv_val *small[8], **out = n_out <= 8 ? small : cv_malloc((size_t)n_out * sizeof *out);
    if (!out)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    if (cv_fold_kernel(m, id, in, n->n_in, out, n_out)) {
        if (out != small)
            cv_free(out);
        return CARVE_OK; /* the kernel refuses: the node fails at run time too; leave it */
    }
    carve_status s = CARVE_OK;
    bool ok = true;
    for (uint32_t j = 0; j < n_out && ok; j++) {
        if (m->nodes[id].out[j] == CARVE_NONE)
            continue;
        if (!out[j]) {
            ok = false; /* no value for a listed output: leave the node */
        } else if (out[j]->kind != CV_VAL_TENSOR || out[j]->optional) {
            refuse(f, id, CARVE_GUARD_NON_TENSOR);
            ok = false;
        } else if (blows_up(f, out[j]->nbytes, in_bytes)) {
            refuse(f, id, CARVE_GUARD_BLOW_UP);
            ok = false;
        }
    }
    /* a shape still known only in part is kept for the ops that read it */
    if (ok && part && n_out == 1 && has_unknown(out[0])) {
        if (!f->partial && (f->partial = cv_malloc(((size_t)f->n_known + 1) * sizeof *f->partial)))
            memset(f->partial, 0, ((size_t)f->n_known + 1) * sizeof *f->partial);
        if (!f->partial) {
            s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
            ok = false;
        } else if (m->nodes[id].out[0] < f->n_known) {
            cv_val_unref(f->partial[m->nodes[id].out[0]]);
            f->partial[m->nodes[id].out[0]] = out[0];
            out[0] = NULL;
        }
        ok = false;
    }
    for (uint32_t j = 0; ok && j < n_out && !s; j++) {
        carve_value_id v = m->nodes[id].out[j];
        if (v == CARVE_NONE)
            continue;
        cv_tensor *t = lend(f, out[j]);
        if (!t) {
            s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
            break;
        }
        f->st.bytes_added += cv_fold_tensor_bytes(t);
        s = make_init(f, v, t);
        if (!s) {
            set_known(f, v, out[j]);
            out[j] = NULL;
        }
    }
    if (ok && !s)
        cv_fold_drop(f, id, CV_FATE_FOLDED, CARVE_NONE, NULL);
    for (uint32_t j = 0; j < n_out; j++)
        cv_val_unref(out[j]);
    if (out != small)
        cv_free(out);
    return s;
}

static carve_status fold_node(cv_fold *f, carve_node_id id)
{
    carve_model *m = f->m;
    /* bodies first: they see the outer constants known so far */
    for (uint32_t j = 0; j < m->nodes[id].n_attr; j++) {
        const cv_attr *a = &m->nodes[id].attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++) {
            carve_status s = fold_graph(f, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k]);
            if (s)
                return s;
        }
    }
    const cv_node *n = &m->nodes[id];
    const cv_op_def *def = cv_op_for_node(m, id);
    cv_fold_row_seen(f, id, def);
    if (!def)
        return CARVE_OK; /* an op carve does not know stays as it is */
    if (def->flags & CV_OP_CONST_SOURCE)
        return fold_constant(f, id);
    uint32_t n_in = n->n_in;
    cv_val *small[16], **in = n_in <= 16 ? small : cv_malloc((size_t)n_in * sizeof *in), stand_in;
    if (!in)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    uint64_t in_bytes = 0;
    bool all = true, part = false, shape_only = def->flags & CV_OP_READS_SHAPE;
    for (uint32_t i = 0; i < n_in && all; i++) {
        in[i] = NULL;
        if (n->in[i] == CARVE_NONE)
            continue;
        in[i] = known(f, n->in[i]);
        if (!in[i] && partial(f, n->in[i]) && moves_elements(m, id, i)) {
            in[i] = partial(f, n->in[i]);
            part = true;
        }
        if (!in[i] && i == 0 && shape_only && shape_stand_in(m, n->in[0], cv_node_is(n, "Size"), &stand_in)) {
            in[i] = &stand_in;
            part = true;
        }
        if (!in[i])
            all = false;
        else if (in[i] != &stand_in)
            in_bytes += in[i]->nbytes;
    }
    carve_status s = CARVE_OK;
    if (all)
        s = compute(f, id, def, in, in_bytes, part);
    else if (cv_node_is(n, "Reshape") && n_in == 2 && !known(f, n->in[1]) && partial(f, n->in[1]))
        s = reshape_minus_one(f, id, partial(f, n->in[1]));
    if (in != small)
        cv_free(in);
    return s;
}

static carve_status fold_graph(cv_fold *f, carve_graph_id g)
{
    carve_model *m = f->m;
    cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->inits.n; i++) {
        carve_value_id v = gr->inits.v[i];
        if (!m->values[v].is_input && !known(f, v) && v < f->n_known)
            f->known[v] = cv_val_from_tensor(m->values[v].init); /* NULL (no memory): just not known */
    }
    /* a copy: folding takes nodes out, inlining puts nodes in */
    uint32_t n = gr->nodes.n;
    carve_node_id *ids = cv_malloc(((size_t)n + 1) * sizeof *ids);
    if (!ids)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    if (n)
        memcpy(ids, gr->nodes.v, (size_t)n * sizeof *ids);
    carve_status s = CARVE_OK;
    /* folded nodes leave g's list in one sweep at the end (the enclosing
     * graph's pending ones wait for it) */
    carve_graph_id lazy = f->lazy_g;
    bool dirty = f->lazy_dirty;
    f->lazy_g = g;
    f->lazy_dirty = false;
    for (uint32_t i = 0; i < n && !s; i++)
        if (!m->nodes[ids[i]].dead && m->nodes[ids[i]].graph == g)
            s = fold_node(f, ids[i]);
    cv_fold_flush(f);
    f->lazy_g = lazy;
    f->lazy_dirty = dirty;
    cv_free(ids);
    return s;
}

carve_status cv_fold_constants(cv_fold *f)
{
    carve_model *m = f->m;
    f->n_known = m->n_values;
    f->known = cv_malloc(((size_t)f->n_known + 1) * sizeof *f->known);
    if (!f->known)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
    memset(f->known, 0, ((size_t)f->n_known + 1) * sizeof *f->known);
    f->partial = NULL; /* made by the first shape known in part (few models have one) */
    carve_status s = fold_graph(f, 0);
    for (uint32_t i = 0; i < f->n_known; i++) {
        if (f->known[i]) /* most values are not known: no call for them */
            cv_val_unref(f->known[i]);
        if (f->partial && f->partial[i])
            cv_val_unref(f->partial[i]);
    }
    cv_free(f->known);
    cv_free(f->partial);
    f->known = NULL;
    f->partial = NULL;
    f->n_known = 0;
    return s;
}

/* ---------------------------------------------------------------- the driver */

static void measure(const carve_model *m, uint32_t *nodes, uint64_t *bytes)
{
    cv_ids gs = {0};
    *nodes = 0;
    *bytes = 0;
    if (!cv_fold_graphs(m, &gs)) {
        cv_ids_free(&gs);
        return;
    }
    for (uint32_t k = 0; k < gs.n; k++) {
        const cv_graph *gr = &m->graphs[gs.v[k]];
        *nodes += gr->nodes.n;
        for (uint32_t i = 0; i < gr->inits.n; i++)
            if (!m->values[gr->inits.v[i]].is_input)
                *bytes += cv_fold_tensor_bytes(m->values[gr->inits.v[i]].init);
        for (uint32_t i = 0; i < gr->nodes.n; i++)
            if (cv_op_has(m, gr->nodes.v[i], CV_OP_CONST_SOURCE))
                *bytes += cv_fold_constant_bytes(m, gr->nodes.v[i]);
    }
    cv_ids_free(&gs);
}

carve_status cv_fold_run(carve_model *m, const carve_fold_opts *opts, carve_fold_stats *stats,
                         cv_fold_node **fates)
{
    cv_recomp_cfg all = {0};
    carve_status s = cv_fold_run_ex(m, opts, opts && opts->recompose ? &all : NULL, stats, fates, NULL);
    cv_recomp_free(&all);
    return s;
}

/* Did the passes between two looks at the stats change anything but take
 * out dead nodes? Every rewrite counts itself in the stats (a node folded,
 * removed, fused, inlined, moved, recomposed) or makes nodes or values. */
static bool only_dce(const carve_fold_stats *a, const carve_fold_stats *b)
{
    return a->folded == b->folded && a->removed == b->removed && a->if_inlined == b->if_inlined &&
           a->layout_moved == b->layout_moved && a->bn_fused == b->bn_fused && a->gemm_fused == b->gemm_fused &&
           a->inits_deduped == b->inits_deduped && a->recomposed == b->recomposed && a->bytes_added == b->bytes_added &&
           a->bytes_removed == b->bytes_removed;
}

carve_status cv_fold_run_ex(carve_model *m, const carve_fold_opts *opts, cv_recomp_cfg *rc, carve_fold_stats *stats,
                            cv_fold_node **fates, bool *types_kept)
{
    if (fates)
        *fates = NULL;
    bool inferred = types_kept && *types_kept; /* the caller's inference stands */
    if (types_kept)
        *types_kept = false;
    cv_fold f = {.m = m, .max_bytes = opts && opts->max_bytes ? opts->max_bytes : DEFAULT_MAX_BYTES,
                 .lazy_g = CARVE_NONE};
    carve_status s = CARVE_OK;
    if (!cv_fold_grow(&f)) {
        s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        goto out;
    }
    measure(m, &f.st.nodes_before, &f.st.bytes_before);
    /* The pipeline. Inference first: Shape folds from inferred shapes, and
     * the blow-up guard reads output sizes before computing anything. */
    if (!inferred && (s = cv_infer_model(m, NULL)))
        goto out;
    carve_fold_stats st0 = f.st;
    uint32_t nodes0 = m->n_nodes, values0 = m->n_values, graphs0 = m->n_graphs;
    if ((s = cv_fold_constants(&f)) || (s = cv_fold_noop(&f)) || (s = cv_fold_qdq(&f)) || (s = cv_fold_fuse(&f)) ||
        (rc && (s = cv_fold_recompose(&f, rc))))
        goto out;
    bool kept = only_dce(&st0, &f.st) && m->n_nodes == nodes0 && m->n_values == values0 && m->n_graphs == graphs0;
    st0 = f.st;
    if ((s = cv_fold_dce(&f)) || (s = cv_fold_dedupe(&f)))
        goto out;
    /* what deduplication left unread goes; with nothing deduplicated, the
     * model is as the first cleanup left it */
    if (st0.inits_deduped != f.st.inits_deduped && (s = cv_fold_dce(&f)))
        goto out;
    kept = kept && st0.inits_deduped == f.st.inits_deduped && m->n_nodes == nodes0 && m->n_values == values0;
    if (!cv_fold_grow(&f)) {
        s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory folding");
        goto out;
    }
    /* a model folding neither inferred nor changed but for taking unread
     * nodes and initializers out is as valid as it came (lowering verifies
     * its result anyway) */
    if (!(kept && inferred) && (s = carve_model_verify(m))) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(m->ctx));
        s = cv_error(m->ctx, s, "folding produced an invalid model (a carve bug): %s", msg);
        goto out;
    }
    measure(m, &f.st.nodes_after, &f.st.bytes_after);
    if (stats)
        *stats = f.st;
    if (fates) {
        *fates = f.nodes;
        f.nodes = NULL;
    }
    if (types_kept)
        *types_kept = kept;
out:
    cv_free(f.nodes);
    cv_free(f.uses);
    cv_free(f.is_out);
    return s;
}

carve_status carve_fold(carve_model *m, const carve_fold_opts *opts, carve_fold_stats *stats)
{
    if (!m)
        return CARVE_ERR_ARG;
    if (stats)
        memset(stats, 0, sizeof *stats);
    return cv_fold_run(m, opts, stats, NULL);
}

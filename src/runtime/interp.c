/* interp.c: runs a graph on the reference kernels.
 *
 * Values live in one model-wide env array indexed by value id; a subgraph
 * run (If/Loop/Scan bodies) reads captured outer values from the same env.
 * Each graph has a schedule saying which of its values die after which node,
 * so peak memory follows the graph's live set, not its size. */
#define _POSIX_C_SOURCE 200809L
#include "runtime.h"

#include <locale.h>
#include <pthread.h>
#include <string.h>

/* Kernels that parse or print numbers (Cast to and from strings) use the C
 * library: the outermost run switches the calling thread (uselocale() is
 * per thread) to the "C" locale, whatever the host program set. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

/* The model's pool, freed with the model (carve_model_free). */
static void free_run_pool(void *p)
{
    cv_pool_end(p);
    cv_free(p);
}

/* The innermost interpreter running on this thread: the reference backend
 * runs a Delegate's body in it, as part of the same run. */
static _Thread_local cv_interp *tl_current;

cv_interp *cv_interp_current(void) { return tl_current; }

void carve_model_trim(carve_model *m)
{
    if (m && m->run_pool)
        cv_pool_end(m->run_pool);
}

/* cv_runner.graph for the kernels of control-flow ops (src/ops/ops.h). */
static carve_status run_graph(void *self, carve_graph_id g, cv_val **inputs, cv_val **outputs)
{
    return cv_interp_run(self, g, inputs, outputs);
}

carve_status cv_interp_init(cv_interp *ip, carve_model *m)
{
    memset(ip, 0, sizeof *ip);
    ip->m = m;
    ip->n_values = m->n_values;
    ip->n_graphs = m->n_graphs;
    ip->n_nodes = m->n_nodes;
    ip->env = cv_malloc(((size_t)m->n_values + 1) * sizeof *ip->env);
    ip->sched = cv_malloc(((size_t)m->n_graphs + 1) * sizeof *ip->sched);
    ip->defs = cv_malloc(((size_t)m->n_nodes + 1) * sizeof *ip->defs);
    ip->skip = cv_malloc((size_t)m->n_nodes + 1);
    /* cleared before any failure: cv_interp_free walks them */
    if (ip->env)
        memset(ip->env, 0, ((size_t)m->n_values + 1) * sizeof *ip->env);
    if (ip->sched)
        memset(ip->sched, 0, ((size_t)m->n_graphs + 1) * sizeof *ip->sched);
    if (ip->skip)
        memset(ip->skip, 0, (size_t)m->n_nodes + 1);
    if (!ip->env || !ip->sched || !ip->defs || !ip->skip) {
        cv_interp_free(ip);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
    }
    for (uint32_t i = 0; i < m->n_nodes; i++)
        ip->defs[i] = cv_op_for_node(m, i);
    if (!m->run_pool) {
        cv_pool *p = cv_zalloc(m->ctx, sizeof *p, "preparing to run");
        if (!p) {
            cv_interp_free(ip);
            return CARVE_ERR_NOMEM;
        }
        m->run_pool = p;
        m->run_pool_free = free_run_pool;
    }
    ip->pool = m->run_pool;
    return CARVE_OK;
}

void cv_interp_free(cv_interp *ip)
{
    if (ip->env)
        for (uint32_t i = 0; i < ip->n_values; i++)
            cv_val_unref(ip->env[i]);
    if (ip->sched)
        for (uint32_t g = 0; g < ip->n_graphs; g++) {
            cv_free(ip->sched[g].release_start);
            cv_free(ip->sched[g].release);
            cv_free(ip->sched[g].chain_at);
            for (uint32_t c = 0; c < ip->sched[g].n_chains; c++)
                cv_chain_free(&ip->sched[g].chains[c]);
            cv_free(ip->sched[g].chains);
        }
    cv_free(ip->env);
    cv_free(ip->sched);
    cv_free(ip->defs);
    cv_free(ip->skip);
    memset(ip, 0, sizeof *ip);
}

/* last[v] = position of the last node of graph g that reads v (directly or
 * through a subgraph capture); graph outputs live to the end. */
static carve_status build_sched(cv_interp *ip, carve_graph_id g)
{
    carve_model *m = ip->m;
    cv_graph *gr = &m->graphs[g];
    cv_sched *s = &ip->sched[g];
    uint32_t n = gr->nodes.n;
    cv_ids defined = {0}, captured = {0};
    bool ok = true;
    /* values defined in g: inputs, initializers, node outputs */
    for (uint32_t i = 0; ok && i < gr->inputs.n; i++)
        ok = cv_ids_push(&defined, gr->inputs.v[i]);
    for (uint32_t i = 0; ok && i < gr->inits.n; i++)
        if (!m->values[gr->inits.v[i]].is_input)
            ok = cv_ids_push(&defined, gr->inits.v[i]);
    for (uint32_t i = 0; ok && i < n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; ok && j < nd->n_out; j++)
            if (nd->out[j] != CARVE_NONE)
                ok = cv_ids_push(&defined, nd->out[j]);
    }
    /* last use, tracked in a model-wide scratch keyed by value id */
    uint32_t *last = cv_malloc(((size_t)m->n_values + 1) * sizeof *last);
    if (!ok || !last) {
        cv_free(last);
        cv_ids_free(&defined);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
    }
    for (uint32_t i = 0; i < defined.n; i++)
        last[defined.v[i]] = CARVE_NONE; /* never read: dies at end */
    for (uint32_t i = 0; ok && i < n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < nd->n_in; j++)
            if (nd->in[j] != CARVE_NONE && m->values[nd->in[j]].graph == g)
                last[nd->in[j]] = i;
        for (uint32_t j = 0; ok && j < nd->n_attr; j++) {
            const cv_attr *a = &nd->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; ok && k < cnt; k++) {
                cv_ids caps = {0};
                ok = cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], &caps);
                for (uint32_t q = 0; ok && q < caps.n; q++)
                    if (m->values[caps.v[q]].graph == g) {
                        last[caps.v[q]] = i;
                        ok = cv_ids_push(&captured, caps.v[q]);
                    }
                cv_ids_free(&caps);
            }
        }
    }
    for (uint32_t i = 0; i < gr->outputs.n; i++)
        if (m->values[gr->outputs.v[i]].graph == g)
            last[gr->outputs.v[i]] = CARVE_NONE;
    /* counting sort of (position -> values) */
    s->release_start = cv_malloc(((size_t)n + 2) * sizeof *s->release_start);
    s->release = cv_malloc(((size_t)defined.n + 1) * sizeof *s->release);
    if (!ok || !s->release_start || !s->release) {
        cv_free(last);
        cv_ids_free(&defined);
        cv_ids_free(&captured);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
    }
    memset(s->release_start, 0, ((size_t)n + 2) * sizeof *s->release_start);
    for (uint32_t i = 0; i < defined.n; i++)
        if (last[defined.v[i]] != CARVE_NONE)
            s->release_start[last[defined.v[i]] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        s->release_start[i + 1] += s->release_start[i];
    uint32_t *cursor = cv_malloc(((size_t)n + 1) * sizeof *cursor);
    if (!cursor) {
        cv_free(last);
        cv_ids_free(&defined);
        cv_ids_free(&captured);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
    }
    memcpy(cursor, s->release_start, ((size_t)n + 1) * sizeof *cursor);
    for (uint32_t i = 0; i < defined.n; i++)
        if (last[defined.v[i]] != CARVE_NONE)
            s->release[cursor[last[defined.v[i]]]++] = defined.v[i];
    cv_free(cursor);
    cv_free(last);
    cv_ids_free(&defined);
    carve_status st = cv_fuse_plan(ip, g, &captured);
    cv_ids_free(&captured);
    if (st)
        return st;
    s->built = true;
    return CARVE_OK;
}

static void release_graph(cv_interp *ip, carve_graph_id g)
{
    carve_model *m = ip->m;
    cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->inputs.n; i++) {
        cv_val_unref(ip->env[gr->inputs.v[i]]);
        ip->env[gr->inputs.v[i]] = NULL;
    }
    for (uint32_t i = 0; i < gr->inits.n; i++) {
        cv_val_unref(ip->env[gr->inits.v[i]]);
        ip->env[gr->inits.v[i]] = NULL;
    }
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < nd->n_out; j++)
            if (nd->out[j] != CARVE_NONE) {
                cv_val_unref(ip->env[nd->out[j]]);
                ip->env[nd->out[j]] = NULL;
            }
    }
}

static carve_status check_output(cv_interp *ip, carve_node_id id, uint32_t j, const cv_val *v)
{
    carve_model *m = ip->m;
    const cv_node *nd = &m->nodes[id];
    const cv_value *x = &m->values[nd->out[j]];
    if (v->kind != CV_VAL_TENSOR || x->type.kind != CARVE_TYPE_TENSOR)
        return CARVE_OK;
    if (x->type.dtype != CARVE_UNDEFINED && x->type.dtype != v->dtype)
        return cv_error(m->ctx, CARVE_ERR_INVALID,
                        "node '%s' (%s): output %u '%s' computed as %s but the model declares %s", nd->name,
                        nd->op, j, x->name, carve_dtype_name(v->dtype), carve_dtype_name(x->type.dtype));
    return CARVE_OK;
}

/* The head of chain ch (fuse.c) applies it unless every value is traced
 * or a hook may run nodes its own way; e gets the chain bound to this run's
 * values. */
static bool bind_chain(cv_interp *ip, const cv_chain *ch, cv_epi *e)
{
    if (ip->trace || ip->hook)
        return false;
    *e = ch->proto;
    for (uint32_t i = 0; i < e->n_ext; i++)
        if (!(e->ext[i].v = ch->ext_own[i] ? ch->ext_own[i] : ip->env[ch->ext[i]]))
            return false;
    return true;
}

static carve_status run_node(cv_interp *ip, carve_node_id id, const cv_chain *ch)
{
    carve_model *m = ip->m;
    const cv_node *nd = &m->nodes[id];
    const cv_op_def *def = id < ip->n_nodes ? ip->defs[id] : cv_op_for_node(m, id);
    if (!def)
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "node '%s' (%s%s%s): carve has no kernel for this op at opset %lld",
                        nd->name, *nd->domain ? nd->domain : "", *nd->domain ? "." : "", nd->op,
                        (long long)carve_model_opset(m, nd->domain));
    char why[512];
    if (!cv_node_fits(m, id, def, why, sizeof why))
        return cv_error(m->ctx, CARVE_ERR_INVALID, "%s", why);
    cv_val *small_in[16], *small_out[8];
    cv_val **in = nd->n_in <= 16 ? small_in : cv_malloc(nd->n_in * sizeof *in);
    cv_val **out = nd->n_out <= 8 ? small_out : cv_malloc(nd->n_out * sizeof *out);
    carve_status st = CARVE_OK;
    if (!in || !out) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < nd->n_in; i++) {
        in[i] = nd->in[i] == CARVE_NONE ? NULL : ip->env[nd->in[i]];
        if (nd->in[i] != CARVE_NONE && !in[i]) {
            st = cv_error(m->ctx, CARVE_ERR_INVALID, "node '%s' (%s): input %u '%s' has no value at run time",
                          nd->name, nd->op, i, m->values[nd->in[i]].name);
            goto done;
        }
    }
    memset(out, 0, nd->n_out * sizeof *out);
    cv_runner run = {ip, run_graph, cv_run_delegate, &ip->rng_seed};
    cv_epi epi;
    cv_kctx k = {m, id, carve_model_opset(m, nd->domain), &run, ch && bind_chain(ip, ch, &epi) ? &epi : NULL};
    st = CARVE_ERR_UNSUPPORTED;
    if (ip->hook)
        st = ip->hook(&k, def, in, nd->n_in, out, nd->n_out, ip->hook_user);
    if (st == CARVE_ERR_UNSUPPORTED)
        st = def->kernel(&k, in, nd->n_in, out, nd->n_out);
    if (k.epi && k.epi->applied && st == CARVE_OK && nd->n_out == 1 && out[0]) {
        /* out[0] is the chain's last value: stored under its id, the
         * chain's nodes skipped when their turn comes */
        const cv_node *last = &m->nodes[ch->nodes[ch->n_nodes - 1]];
        st = check_output(ip, ch->nodes[ch->n_nodes - 1], 0, out[0]);
        if (st == CARVE_OK) {
            cv_val_unref(ip->env[last->out[0]]);
            ip->env[last->out[0]] = out[0];
            out[0] = NULL;
            for (uint32_t t = 0; t < ch->n_nodes; t++)
                ip->skip[ch->nodes[t]] = 1;
            ip->fused++;
        }
    }
    for (uint32_t j = 0; j < nd->n_out; j++) {
        if (st == CARVE_OK && nd->out[j] != CARVE_NONE && !out[j] && k.epi && k.epi->applied)
            continue; /* fused: the head's own output is not kept */
        if (st == CARVE_OK && nd->out[j] != CARVE_NONE) {
            if (!out[j])
                st = cv_error(m->ctx, CARVE_ERR_INVALID, "node '%s' (%s): the kernel produced no output %u",
                              nd->name, nd->op, j);
            else
                st = check_output(ip, id, j, out[j]);
            if (st == CARVE_OK) {
                cv_val_unref(ip->env[nd->out[j]]);
                ip->env[nd->out[j]] = out[j];
                if (ip->trace && out[j]->kind == CV_VAL_TENSOR)
                    ip->trace(ip->trace_user, nd->out[j], out[j]);
                continue;
            }
        }
        cv_val_unref(out[j]);
    }
done:
    if (in != small_in)
        cv_free(in);
    if (out != small_out)
        cv_free(out);
    return st;
}

carve_status cv_interp_run(cv_interp *ip, carve_graph_id g, cv_val **inputs, cv_val **outputs)
{
    carve_model *m = ip->m;
    if (m->n_values != ip->n_values || m->n_graphs != ip->n_graphs)
        return cv_error(m->ctx, CARVE_ERR_ARG, "the model changed after the interpreter was prepared");
    if (ip->depth > 64)
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "subgraphs nested more than 64 deep at run time");
    cv_graph *gr = &m->graphs[g];
    if (!ip->sched[g].built) {
        carve_status s = build_sched(ip, g);
        if (s)
            return s;
    }
    /* The outermost run uses the model's buffer pool, kept from its last
     * run: the same tensors land on the same, already touched, pages. Runs
     * nested in it (bodies, Delegates, another interpreter's run) share
     * whichever is current. */
    bool own_pool = !cv_pool_current();
    locale_t old_locale = (locale_t)0;
    if (own_pool) {
        cv_pool_resume(ip->pool);
        pthread_once(&c_locale_once, make_c_locale);
        if (c_locale)
            old_locale = uselocale(c_locale);
    }
    cv_interp *outer = tl_current;
    tl_current = ip;
    ip->depth++;
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < gr->inits.n && !st; i++) {
        carve_value_id v = gr->inits.v[i];
        if (m->values[v].is_input)
            continue;
        cv_val_unref(ip->env[v]);
        ip->env[v] = cv_val_from_tensor(m->values[v].init);
        if (!ip->env[v])
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < gr->inputs.n && !st; i++) {
        carve_value_id v = gr->inputs.v[i];
        cv_val *x = inputs ? inputs[i] : NULL;
        cv_val_unref(ip->env[v]);
        ip->env[v] = NULL;
        if (x)
            ip->env[v] = cv_val_ref(x);
        else if (m->values[v].init)
            ip->env[v] = cv_val_from_tensor(m->values[v].init);
        else
            st = cv_error(m->ctx, CARVE_ERR_ARG, "input '%s' of graph '%s' is missing", m->values[v].name, gr->name);
    }
    const cv_sched *s = &ip->sched[g];
    for (uint32_t i = 0; i < gr->nodes.n && !st; i++) {
        carve_node_id id = gr->nodes.v[i];
        if (ip->skip[id]) /* applied by its chain's head (fuse.c) */
            ip->skip[id] = 0;
        else
            st = run_node(ip, id, s->chain_at[i] ? &s->chains[s->chain_at[i] - 1] : NULL);
        for (uint32_t r = s->release_start[i]; r < s->release_start[i + 1]; r++) {
            cv_val_unref(ip->env[s->release[r]]);
            ip->env[s->release[r]] = NULL;
        }
    }
    for (uint32_t i = 0; i < gr->outputs.n && !st; i++) {
        cv_val *x = ip->env[gr->outputs.v[i]];
        if (!x)
            st = cv_error(m->ctx, CARVE_ERR_INVALID, "output '%s' of graph '%s' has no value",
                          m->values[gr->outputs.v[i]].name, gr->name);
        else
            outputs[i] = cv_val_ref(x);
    }
    /* outputs outlive the pool */
    for (uint32_t i = 0; own_pool && i < gr->outputs.n && !st; i++)
        if (!cv_pool_detach(outputs[i]))
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    if (st)
        for (uint32_t i = 0; i < gr->outputs.n; i++)
            if (outputs[i]) {
                cv_val_unref(outputs[i]);
                outputs[i] = NULL;
            }
    release_graph(ip, g);
    if (own_pool)
        cv_pool_suspend(ip->pool);
    if (old_locale)
        uselocale(old_locale);
    ip->depth--;
    tl_current = outer;
    return st;
}

/* delegate.c: running a Delegate node through its backend. The node records
 * the backend that compiled it (`backend`, `backend_version`; models
 * lowered before backends existed have none and use "reference"). The
 * runtime finds that backend on the model's context, compiles the body
 * once when the Delegate first runs, keeps the handle on the model for the
 * next runs and releases it with the model. The runtime knows backends
 * only through carve_backend.h: the reference simulator is one of them
 * (src/backends/reference.c), so nothing here looks up into the layers
 * that lower models. */
#include "runtime.h"
#include "carve_backend.h"

#include <string.h>

typedef struct dentry {
    const carve_backend *b;
    void *handle;
    const carve_target *profile; /* what it was compiled with */
    bool compiled;
} dentry;

typedef struct dcache {
    dentry *e; /* by node id */
    uint32_t n;
} dcache;

static void dcache_clear(dcache *c)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->e[i].compiled && c->e[i].b->release)
            c->e[i].b->release(c->e[i].b->user, c->e[i].handle);
    memset(c->e, 0, c->n * sizeof *c->e);
}

static void dcache_free(void *p)
{
    dcache *c = p;
    if (!c)
        return;
    dcache_clear(c);
    cv_free(c->e);
    cv_free(c);
}

void carve_model_use_reference(carve_model *m, bool on)
{
    if (m->use_reference != on && m->backend_cache)
        dcache_clear(m->backend_cache);
    m->use_reference = on;
}

static dentry *entry_for(carve_model *m, carve_node_id id)
{
    dcache *c = m->backend_cache;
    if (!c) {
        c = cv_malloc(sizeof *c);
        if (!c)
            return NULL;
        memset(c, 0, sizeof *c);
        m->backend_cache = c;
        m->backend_cache_free = dcache_free;
    }
    if (id >= c->n) {
        uint32_t n = m->n_nodes > id ? m->n_nodes : id + 1;
        dentry *e = cv_realloc(c->e, (size_t)n * sizeof *e);
        if (!e)
            return NULL;
        memset(e + c->n, 0, (size_t)(n - c->n) * sizeof *e);
        c->e = e;
        c->n = n;
    }
    return &c->e[id];
}

static carve_status compile(cv_kctx *k, dentry *e, const char *bname, carve_graph_id body, const char *tname)
{
    carve_model *m = k->m;
    const cv_node *n = &m->nodes[k->node];
    const cv_interp *ip = k->run ? k->run->self : NULL;
    const carve_target *profile = ip ? ip->target : NULL;
    if (e->compiled) {
        if (e->profile == profile && !strcmp(e->b->name, bname))
            return CARVE_OK;
        if (e->b->release)
            e->b->release(e->b->user, e->handle);
        memset(e, 0, sizeof *e);
    }
    const carve_backend *b = cv_ctx_backend(m->ctx, bname);
    if (!b)
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                        "Delegate '%s': its backend '%s' is not registered on this context",
                        n->name, bname);
    char why[512] = "";
    if (b->is_available && !b->is_available(b->user, why, sizeof why))
        return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                        "Delegate '%s': its backend '%s' is not available here: %s", n->name, bname, why);
    carve_backend_partition p = {m, body, cv_attr_s(m, k->node, "encodings", NULL), tname, n->name, profile};
    carve_backend_refusal *r = cv_malloc(sizeof *r);
    if (!r)
        return cv_knomem(k);
    memset(r, 0, sizeof r->message + sizeof r->n_nodes);
    void *h = NULL;
    carve_status s = b->compile(b->user, &p, &h, r);
    if (s == CARVE_ERR_UNSUPPORTED)
        s = cv_error(m->ctx, s, "Delegate '%s': backend '%s' refuses to compile it: %s", n->name, bname,
                     r->message[0] ? r->message : "(no message)");
    else if (s)
        s = cv_error(m->ctx, s, "Delegate '%s': backend '%s' could not compile it: %s", n->name, bname,
                     r->message[0] ? r->message : "(no message)");
    cv_free(r);
    if (s)
        return s;
    *e = (dentry){b, h, profile, true};
    return CARVE_OK;
}

carve_status cv_run_delegate(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    carve_model *m = k->m;
    carve_graph_id body = cv_attr_g(m, k->node, "body");
    const char *tname = cv_attr_s(m, k->node, "target", "");
    if (body == CARVE_NONE)
        return cv_kerr(k, "attribute 'body' (a graph) is missing");
    if (carve_graph_input_count(m, body) != n_in || carve_graph_output_count(m, body) != n_out)
        return cv_kerr(k, "its body has %zu inputs and %zu outputs, the node %u and %u",
                       carve_graph_input_count(m, body), carve_graph_output_count(m, body), n_in, n_out);
    const char *bname = m->use_reference ? "reference" : cv_attr_s(m, k->node, "backend", "reference");
    dentry *e = entry_for(m, k->node);
    if (!e)
        return cv_knomem(k);
    carve_status s = compile(k, e, bname, body, tname);
    if (s)
        return s;
    char msg[1024] = "";
    s = e->b->run(e->b->user, e->handle, (carve_tensor *const *)in, n_in, out, n_out, msg, sizeof msg);
    if (s) {
        for (uint32_t i = 0; i < n_out; i++) {
            cv_val_unref(out[i]);
            out[i] = NULL;
        }
        /* the reference backend's messages are the body's own (they name
         * the body's node) */
        if (!strcmp(bname, "reference"))
            return cv_error(m->ctx, s, "%s", msg[0] ? msg : "the body failed");
        return cv_error(m->ctx, s, "Delegate '%s': backend '%s' failed to run it: %s", m->nodes[k->node].name, bname,
                        msg[0] ? msg : "(no message)");
    }
    for (uint32_t i = 0; i < n_out; i++) {
        const cv_type *bt = &m->values[carve_graph_output(m, body, i)].type;
        if (!out[i])
            return cv_error(m->ctx, CARVE_ERR_INVALID, "Delegate '%s': backend '%s' made no output %u",
                            m->nodes[k->node].name, bname, i);
        if (bt->kind == CARVE_TYPE_TENSOR && bt->dtype && (out[i]->kind != CV_VAL_TENSOR || out[i]->dtype != bt->dtype))
            return cv_error(m->ctx, CARVE_ERR_INVALID, "Delegate '%s': backend '%s' made output %u as %s, the body "
                            "declares %s", m->nodes[k->node].name, bname, i,
                            out[i]->kind == CV_VAL_TENSOR ? carve_dtype_name(out[i]->dtype) : "a non-tensor",
                            carve_dtype_name(bt->dtype));
    }
    return CARVE_OK;
}

/* backend_rule.c: the target's backend in lowering. Per node, after the
 * profile accepted it, the backend's supports_node may refuse it with a
 * reason (merged into the report like carve's own). Per partition, once the
 * Delegates are built and legalized, the backend compiles each body; a
 * refusal is one more rule to the same fixed point as the no-runtime-input
 * rule: the refused nodes (all of the partition's when the refusal names
 * none) go to CPU with reason backend_refused and the library's message,
 * and lowering runs again from the input model (lower.c) until every
 * partition compiles. Lowering-time handles are released at once: a model
 * compiles its Delegates again when it first runs (src/runtime/delegate.c),
 * since lowering may go on changing the model (a caller may lower, save
 * and run elsewhere). */
#include "partition.h"

#include <string.h>

cv_reason cv_backend_verdict(cv_lower *lw, uint32_t ti, carve_node_id n, const char **msg)
{
    const carve_backend *b = lw->bs[ti];
    *msg = NULL;
    if (!b || !b->supports_node)
        return CV_R_NONE;
    char buf[512] = "";
    const char *code = b->supports_node(b->user, lw->m, n, buf, sizeof buf);
    if (!code)
        return CV_R_NONE;
    cv_reason r = cv_reason_of_code(code);
    if (r == CV_R_COUNT || r == CV_R_NONE) {
        *msg = cv_arena_printf(&lw->m->arena, "backend %s: %s: %s", b->name, code, buf[0] ? buf : "(no message)");
        return CV_R_BACKEND_REFUSED;
    }
    *msg = cv_arena_printf(&lw->m->arena, "backend %s: %s", b->name, buf[0] ? buf : "(no message)");
    return r;
}

/* Refusals are kept by "<target>\x1f<node>": a node one target refused
 * may go to the next. */
static const char *refusal_key(char *buf, size_t sz, const char *target, const char *node)
{
    size_t a = strlen(target), b = strlen(node);
    if (a + b + 2 > sz)
        return NULL;
    memcpy(buf, target, a);
    buf[a] = 0x1f;
    memcpy(buf + a + 1, node, b + 1);
    return buf;
}

const char *cv_backend_refused(const cv_lower *lw, uint32_t ti, carve_node_id n)
{
    if (!lw->refused || !lw->refused->n)
        return NULL;
    char buf[1024];
    const char *key = refusal_key(buf, sizeof buf, lw->ts[ti]->name, lw->m->nodes[n].name);
    uint32_t i = key ? cv_strmap_get(&lw->refused->names, key) : CARVE_NONE;
    return i == CARVE_NONE ? NULL : lw->refused->msgs[i];
}

void cv_refused_free(cv_refused *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        cv_free(r->keys[i]);
        cv_free(r->msgs[i]);
    }
    cv_free(r->keys);
    cv_free(r->msgs);
    cv_strmap_free(&r->names);
    memset(r, 0, sizeof *r);
}

/* Records node name as refused with msg; false on NOMEM. *added when new. */
static bool add_refused(cv_refused *r, const char *name, const char *msg, bool *added)
{
    if (cv_strmap_get(&r->names, name) != CARVE_NONE)
        return true;
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 16;
        char **k = cv_realloc(r->keys, cap * sizeof *k);
        if (!k)
            return false;
        r->keys = k;
        char **mm = cv_realloc(r->msgs, cap * sizeof *mm);
        if (!mm)
            return false;
        r->msgs = mm;
        r->cap = cap;
    }
    char *kk = cv_strdup(name), *ms = cv_strdup(msg);
    if (!kk || !ms || !cv_strmap_put(&r->names, kk, r->n)) {
        cv_free(kk);
        cv_free(ms);
        return false;
    }
    r->keys[r->n] = kk;
    r->msgs[r->n] = ms;
    r->n++;
    *added = true;
    return true;
}

carve_status cv_backend_compile_all(cv_lower *lw, bool *more)
{
    carve_model *m = lw->m;
    *more = false;
    carve_backend_refusal *r = cv_malloc(sizeof *r);
    if (!r)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < lw->n_parts && !st; i++) {
        const cv_lpart *lp = &lw->parts[i];
        if (lp->delegate == CARVE_NONE)
            continue;
        const cv_node *dn = &m->nodes[lp->delegate];
        const carve_target *t = lw->ts[lp->target];
        const carve_backend *b = lw->bs[lp->target];
        if (!b || !strcmp(b->name, "reference"))
            continue; /* the simulator compiles everything its profile took */
        carve_backend_partition p = {m, cv_attr_g(m, lp->delegate, "body"), cv_attr_s(m, lp->delegate, "encodings", NULL),
                                     t->name, dn->name, t};
        memset(r, 0, sizeof r->message + sizeof r->n_nodes);
        void *h = NULL;
        carve_status s = b->compile(b->user, &p, &h, r);
        r->message[sizeof r->message - 1] = 0;
        if (s == CARVE_OK) {
            b->release(b->user, h);
            continue;
        }
        if (s != CARVE_ERR_UNSUPPORTED) {
            st = cv_error(m->ctx, s, "Delegate '%s': backend '%s' could not compile it: %s", dn->name, b->name,
                          r->message[0] ? r->message : "(no message)");
            break;
        }
        char msg[700];
        snprintf(msg, sizeof msg, "backend %s refused to compile its partition (%s): %s", b->name, dn->name,
                 r->message[0] ? r->message : "(no message)");
        /* the nodes named that are nodes of this partition (not nodes
         * legalization added): others cannot move on their own */
        bool named = false, added = false;
        size_t nn = r->n_nodes < CARVE_BACKEND_MAX_REFUSED ? r->n_nodes : CARVE_BACKEND_MAX_REFUSED;
        for (size_t k = 0; k < nn; k++) {
            carve_node_id id = r->nodes[k];
            if (id >= m->n_nodes || id >= lw->cap || lw->ln[id].delegate != lp->delegate || lw->ln[id].part == CARVE_NONE)
                continue;
            bool mine = false;
            for (uint32_t q = 0; q < lp->nodes.n && !mine; q++)
                mine = lp->nodes.v[q] == id;
            if (!mine)
                continue;
            named = true;
            char key[1024];
            if (!refusal_key(key, sizeof key, t->name, m->nodes[id].name) ||
                !add_refused(lw->refused, key, msg, &added)) {
                st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
                break;
            }
        }
        for (uint32_t q = 0; !named && !st && q < lp->nodes.n; q++) {
            char key[1024];
            if (!refusal_key(key, sizeof key, t->name, m->nodes[lp->nodes.v[q]].name) ||
                !add_refused(lw->refused, key, msg, &added))
                st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        }
        if (!st && !added)
            st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED,
                          "Delegate '%s': backend '%s' refused it again, naming only nodes it refused before (a "
                          "backend that does not settle): %s", dn->name, b->name, r->message);
        *more = *more || added;
    }
    cv_free(r);
    return st;
}

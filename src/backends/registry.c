/* registry.c: contexts and the backends registered on them. A context
 * comes with the built-in backends ("reference" always, "onednn" when the
 * build has oneDNN); more are registered by the caller or loaded from a
 * shared object that exports CARVE_BACKEND_ENTRY_SYMBOL. One backend struct
 * may be registered on several contexts (a plugin's entry returns the same
 * struct each time): its destroy runs when the last context holding it is
 * freed, before its shared object is closed. */
#define _POSIX_C_SOURCE 200809L
#include "backends.h"

#include "../io/files.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How many contexts hold each backend (process-wide). */
typedef struct holder {
    const carve_backend *b;
    uint32_t count;
} holder;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static holder *g_holders;
static uint32_t g_n_holders, g_cap_holders;

static bool hold(const carve_backend *b)
{
    bool ok = true;
    pthread_mutex_lock(&g_lock);
    uint32_t i = 0;
    while (i < g_n_holders && g_holders[i].b != b)
        i++;
    if (i == g_n_holders) {
        if (g_n_holders == g_cap_holders) {
            uint32_t cap = g_cap_holders ? g_cap_holders * 2 : 8;
            holder *h = cv_realloc(g_holders, cap * sizeof *h);
            if (!h)
                ok = false;
            else {
                g_holders = h;
                g_cap_holders = cap;
            }
        }
        if (ok)
            g_holders[g_n_holders++] = (holder){b, 0};
    }
    if (ok)
        g_holders[i].count++;
    pthread_mutex_unlock(&g_lock);
    return ok;
}

/* Drops one hold; true when it was the last. */
static bool unhold(const carve_backend *b)
{
    bool last = false;
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < g_n_holders; i++)
        if (g_holders[i].b == b) {
            if (--g_holders[i].count == 0) {
                g_holders[i] = g_holders[--g_n_holders];
                last = true;
            }
            break;
        }
    if (!g_n_holders) {
        cv_free(g_holders);
        g_holders = NULL;
        g_cap_holders = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return last;
}

/* Appends b (from shared object dl, or NULL) to ctx's list. */
static carve_status add(carve_ctx *ctx, const carve_backend *b, void *dl)
{
    if (cv_ctx_backend(ctx, b->name))
        return cv_error(ctx, CARVE_ERR_ARG, "a backend named '%s' is already registered", b->name);
    if (ctx->n_backends == ctx->cap_backends) {
        uint32_t cap = ctx->cap_backends ? ctx->cap_backends * 2 : 4;
        const carve_backend **nb = cv_realloc((void *)ctx->backends, cap * sizeof *nb);
        if (!nb)
            return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        ctx->backends = nb;
        void **nd = cv_realloc(ctx->dl, cap * sizeof *nd);
        if (!nd)
            return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        ctx->dl = nd;
        ctx->cap_backends = cap;
    }
    if (!hold(b))
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    ctx->backends[ctx->n_backends] = b;
    ctx->dl[ctx->n_backends] = dl;
    ctx->n_backends++;
    return CARVE_OK;
}

/* What is wrong with b as this carve sees it, or NULL. */
static const char *invalid(const carve_backend *b, char *buf, size_t n)
{
    if (!b)
        return "the entry returned NULL";
    if (b->abi_version != CARVE_BACKEND_ABI_VERSION) {
        snprintf(buf, n, "its ABI version is %u, this carve needs %u (rebuild it against this carve's carve_backend.h)",
                 b->abi_version, CARVE_BACKEND_ABI_VERSION);
        return buf;
    }
    if (b->struct_size < sizeof(carve_backend)) {
        snprintf(buf, n, "its struct_size is %u, smaller than this carve's carve_backend (%zu bytes)", b->struct_size,
                 sizeof(carve_backend));
        return buf;
    }
    if (!b->name || !*b->name)
        return "it has no name";
    if (!b->compile || !b->run || !b->release) {
        snprintf(buf, n, "backend '%s' lacks the %s callback", b->name,
                 !b->compile ? "compile" : !b->run ? "run" : "release");
        return buf;
    }
    return NULL;
}

carve_ctx *carve_ctx_new(void)
{
    carve_ctx *c = cv_malloc(sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    if (add(c, cv_reference_backend(), NULL)) {
        carve_ctx_free(c);
        return NULL;
    }
#ifdef CARVE_HAVE_DNNL
    if (add(c, cv_onednn_backend(), NULL)) {
        carve_ctx_free(c);
        return NULL;
    }
#endif
    return c;
}

void carve_ctx_free(carve_ctx *ctx)
{
    if (!ctx)
        return;
    for (uint32_t i = ctx->n_backends; i-- > 0;) {
        const carve_backend *b = ctx->backends[i];
        if (unhold(b) && b->destroy)
            b->destroy(b->user);
        if (ctx->dl[i])
            dlclose(ctx->dl[i]);
    }
    cv_free((void *)ctx->backends);
    cv_free(ctx->dl);
    cv_free(ctx);
}

carve_status carve_backend_register(carve_ctx *ctx, const carve_backend *b)
{
    char buf[256];
    const char *bad = invalid(b, buf, sizeof buf);
    if (bad)
        return cv_error(ctx, CARVE_ERR_ARG, "carve_backend_register: %s", bad);
    return add(ctx, b, NULL);
}

carve_status carve_backend_load(carve_ctx *ctx, const char *path, const carve_backend **out)
{
    if (out)
        *out = NULL;
    struct stat st;
    if (path && strchr(path, '/') && stat(path, &st) == 0) { /* a missing file: dlopen says so */
        /* a path (not a name for the loader's search): a FIFO or device would
         * block dlopen or be read as a library; refused by its kind */
        int fd;
        uint64_t size;
        carve_status s = cv_input_open(ctx, path, "backend library", 0, &fd, &size);
        if (s)
            return s;
        close(fd);
    }
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        return cv_error(ctx, CARVE_ERR_IO, "backend library %s: cannot be loaded: %s", path, e ? e : "dlopen failed");
    }
    void *sym = dlsym(dl, CARVE_BACKEND_ENTRY_SYMBOL);
    if (!sym) {
        dlclose(dl);
        return cv_error(ctx, CARVE_ERR_INVALID,
                        "backend library %s: no symbol '%s' (a carve backend exports const carve_backend *%s(void))",
                        path, CARVE_BACKEND_ENTRY_SYMBOL, CARVE_BACKEND_ENTRY_SYMBOL);
    }
    const carve_backend *(*entry)(void);
    memcpy(&entry, &sym, sizeof entry); /* POSIX: a symbol's address may be a function's */
    const carve_backend *b = entry();
    char buf[256];
    const char *bad = invalid(b, buf, sizeof buf);
    if (bad) {
        dlclose(dl);
        return cv_error(ctx, CARVE_ERR_INVALID, "backend library %s: %s", path, bad);
    }
    char why[512] = "";
    if (b->is_available && !b->is_available(b->user, why, sizeof why)) {
        /* the message first: b lives in the object */
        cv_error(ctx, CARVE_ERR_UNSUPPORTED, "backend library %s: backend '%s' is not available: %s", path, b->name,
                 why[0] ? why : "(no reason given)");
        dlclose(dl);
        return CARVE_ERR_UNSUPPORTED;
    }
    carve_status s = add(ctx, b, dl);
    if (s) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(ctx));
        dlclose(dl);
        return cv_error(ctx, s, "backend library %s: %s", path, msg);
    }
    if (out)
        *out = b;
    return CARVE_OK;
}

const carve_backend *carve_backend_find(carve_ctx *ctx, const char *name) { return cv_ctx_backend(ctx, name); }
size_t carve_backend_count(carve_ctx *ctx) { return ctx ? ctx->n_backends : 0; }
const carve_backend *carve_backend_at(carve_ctx *ctx, size_t i)
{
    return ctx && i < ctx->n_backends ? ctx->backends[i] : NULL;
}

/* ctx.c: contexts and error messages. */
#include "ir.h"
#include "carve_backend.h"

#include <string.h>

/* carve_ctx_new and carve_ctx_free are in src/backends/registry.c: a
 * context comes with the built-in backends registered. */

const struct carve_backend *cv_ctx_backend(const carve_ctx *ctx, const char *name)
{
    for (uint32_t i = 0; ctx && name && i < ctx->n_backends; i++)
        if (!strcmp(ctx->backends[i]->name, name))
            return ctx->backends[i];
    return NULL;
}

const char *carve_errmsg(const carve_ctx *ctx) { return ctx ? ctx->msg : "no context"; }
carve_status carve_errcode(const carve_ctx *ctx) { return ctx ? ctx->code : CARVE_ERR_ARG; }

const char *carve_status_name(carve_status s)
{
    switch (s) {
    case CARVE_OK: return "ok";
    case CARVE_ERR_IO: return "io error";
    case CARVE_ERR_PARSE: return "parse error";
    case CARVE_ERR_INVALID: return "invalid model";
    case CARVE_ERR_UNSUPPORTED: return "unsupported";
    case CARVE_ERR_NOMEM: return "out of memory";
    case CARVE_ERR_ARG: return "bad argument";
    }
    return "unknown status";
}

carve_status cv_verror(carve_ctx *ctx, carve_status code, const char *fmt, va_list ap)
{
    if (ctx) {
        ctx->code = code;
        vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    }
    return code;
}

carve_status cv_error(carve_ctx *ctx, carve_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cv_verror(ctx, code, fmt, ap);
    va_end(ap);
    return code;
}

/* The thread setting is process-wide (OpenBLAS's is); the runtime applies
 * it to OpenBLAS and backends read it. Atomic so that readers on other
 * threads see a whole value. */
static _Atomic int g_threads = 1;

void carve_set_threads(int n) { g_threads = n < 1 ? 1 : n; }
int carve_get_threads(void) { return g_threads; }

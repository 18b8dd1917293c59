/* bad_plugin.c: plugins that are wrong in one way each, for the loader's
 * errors: BAD_NO_ENTRY exports no entry symbol, BAD_ABI has another ABI
 * version, BAD_UNAVAILABLE says its device is missing. */
#include "carve_backend.h"

#include <stdio.h>

static carve_status c(void *u, const carve_backend_partition *p, void **h, carve_backend_refusal *r)
{
    return CARVE_ERR_UNSUPPORTED;
}
static carve_status r(void *u, void *h, carve_tensor *const *in, size_t ni, carve_tensor **out, size_t no, char *msg,
                      size_t ms)
{
    return CARVE_ERR_UNSUPPORTED;
}
static void rel(void *u, void *h) {}
static bool avail(void *u, char *why, size_t n)
{
    snprintf(why, n, "no demo accelerator found on this machine");
    return false;
}

static const carve_backend bad = {
    .struct_size = sizeof(carve_backend),
#ifdef BAD_ABI
    .abi_version = CARVE_BACKEND_ABI_VERSION + 41,
#else
    .abi_version = CARVE_BACKEND_ABI_VERSION,
#endif
    .name = "bad",
    .version = "0",
#ifdef BAD_UNAVAILABLE
    .is_available = avail,
#endif
    .compile = c,
    .run = r,
    .release = rel,
};

#ifdef BAD_NO_ENTRY
const carve_backend *carve_backend_entry_misspelt(void) { return &bad; }
#else
const carve_backend *carve_backend_entry(void) { return &bad; }
#endif
#ifndef BAD_UNAVAILABLE
void bad_unused(void);
void bad_unused(void) { (void)avail; }
#endif

/* dn_api.c: libdnnl loaded on the backend's first use (dn_api.h says why). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dn_api.h"

#ifndef CARVE_DNNL_SONAME
#define CARVE_DNNL_SONAME "libdnnl.so.2" /* oneDNN 2.x: the API dn.h is written for */
#endif

dn_api dn_fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failed[256];

/* dlsym's object pointer into a function pointer (POSIX allows it, ISO C
 * has no cast for it). */
static bool sym(void *h, const char *name, void *fn, size_t size)
{
    void *p = dlsym(h, name);
    if (p)
        memcpy(fn, &p, size);
    else if (!failed[0])
        snprintf(failed, sizeof failed, "%s has no %s", CARVE_DNNL_SONAME, name);
    return p != NULL;
}

static void load(void)
{
    void *h = dlopen(CARVE_DNNL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(failed, sizeof failed, "cannot load %s: %s", CARVE_DNNL_SONAME, e ? e : "dlopen failed");
        return;
    }
    /* # and ## take the names unexpanded (each is also a macro) */
#define DN_API_SYM(f) sym(h, #f, &dn_fn.p_##f, sizeof dn_fn.p_##f);
    DN_API(DN_API_SYM)
#undef DN_API_SYM
}

bool dn_api_load(char *why, size_t why_size)
{
    pthread_once(&once, load);
    if (failed[0] && why && why_size)
        snprintf(why, why_size, "%s", failed);
    return !failed[0];
}

/* alloc.c: the one allocator hook, the arena, id arrays and text buffers. */
#define _DEFAULT_SOURCE /* madvise */
#include "ir.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *default_alloc(size_t n, void *u) { (void)u; return malloc(n); }
static void *default_realloc(void *p, size_t n, void *u) { (void)u; return realloc(p, n); }
static void default_free(void *p, void *u) { (void)u; free(p); }

static carve_allocator g_alloc = {default_alloc, default_realloc, default_free, NULL};

void carve_set_allocator(const carve_allocator *a)
{
    if (a && a->alloc && a->realloc && a->free)
        g_alloc = *a;
    else
        g_alloc = (carve_allocator){default_alloc, default_realloc, default_free, NULL};
}

void *cv_malloc(size_t n) { return g_alloc.alloc(n ? n : 1, g_alloc.user); }
void *cv_realloc(void *p, size_t n) { return g_alloc.realloc(p, n ? n : 1, g_alloc.user); }
void cv_free(void *p)
{
    if (p)
        g_alloc.free(p, g_alloc.user);
}
void carve_free(void *p) { cv_free(p); }

void cv_advise_huge(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: failing changes nothing */
#else
    (void)p, (void)n;
#endif
}

/* ---------------------------------------------------------------- arena */

struct cv_arena_chunk {
    cv_arena_chunk *next;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

/* Chunks start at 64 KiB and double up to 4 MiB: a small model keeps a
 * small arena, and a big one (a million nodes hold hundreds of MB of names,
 * id lists and types) takes few chunks. (Huge-page advice on the big chunks,
 * as the decoder gives its own, was measured and left out: the page faults
 * of a 43k-node and a 1M-node lowering did not change.) */
#define ARENA_CHUNK (64 * 1024)
#define ARENA_CHUNK_MAX ((size_t)4 << 20)

static cv_arena_chunk *chunk_new(size_t cap)
{
    cv_arena_chunk *c = cv_malloc(sizeof *c + cap);
    if (c)
        c->cap = cap;
    return c;
}

/* A new chunk for n (rounded) bytes, then those bytes: the slow path, kept
 * out of arena_raw so that its fast path saves no registers. */
static __attribute__((noinline)) void *arena_more(cv_arena *a, size_t n)
{
    size_t grow = a->head ? (a->cap < ARENA_CHUNK_MAX ? a->cap * 2 : ARENA_CHUNK_MAX) : ARENA_CHUNK;
    bool alone = n > grow / 4;
    cv_arena_chunk *c = chunk_new(alone ? n : grow);
    if (!c) {
        a->failed = true;
        return NULL;
    }
    if (a->head && alone) {
        /* A big block gets its own chunk behind the current one, so the
         * current chunk's free space is not wasted. */
        c->next = a->head->next;
        a->head->next = c;
        return c->data;
    }
    c->next = a->head;
    a->head = c;
    a->cap = c->cap;
    a->used = n;
    return c->data;
}

/* n bytes, not zeroed (copies overwrite them at once). */
static inline void *arena_raw(cv_arena *a, size_t n)
{
    n = n ? (n + 15) & ~(size_t)15 : 16;
    if (!a->head || a->cap - a->used < n)
        return arena_more(a, n);
    void *p = a->head->data + a->used;
    a->used += n;
    return p;
}

void *cv_arena_alloc(cv_arena *a, size_t n)
{
    void *p = arena_raw(a, n);
    if (p)
        memset(p, 0, n ? (n + 15) & ~(size_t)15 : 16);
    return p;
}

void *cv_arena_fill(cv_arena *a, size_t n, int byte)
{
    void *p = arena_raw(a, n);
    if (p)
        memset(p, byte, n ? (n + 15) & ~(size_t)15 : 16);
    return p;
}

/* The copy, then zeros up to the 16-byte boundary as cv_arena_alloc gives:
 * byte strings (string attributes) are read up to a NUL there. */
void *cv_arena_memdup(cv_arena *a, const void *p, size_t n)
{
    unsigned char *q = arena_raw(a, n);
    if (q) {
        if (n)
            memcpy(q, p, n);
        size_t r = n ? (n + 15) & ~(size_t)15 : 16;
        memset(q + n, 0, r - n);
    }
    return q;
}

char *cv_arena_strndup(cv_arena *a, const char *s, size_t n)
{
    char *q = arena_raw(a, n + 1);
    if (q) {
        if (n)
            memcpy(q, s, n);
        q[n] = 0;
    }
    return q;
}

char *cv_arena_strdup(cv_arena *a, const char *s)
{
    return s ? cv_arena_strndup(a, s, strlen(s)) : NULL;
}

char *cv_arena_printf(cv_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *q = cv_arena_alloc(a, (size_t)n + 1);
    if (!q)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(q, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return q;
}

char *cv_arena_join(cv_arena *a, const char *x, const char *sep, const char *y)
{
    size_t lx = strlen(x), ls = strlen(sep), ly = strlen(y);
    char *q = cv_arena_alloc(a, lx + ls + ly + 1);
    if (q) {
        memcpy(q, x, lx);
        memcpy(q + lx, sep, ls);
        memcpy(q + lx + ls, y, ly + 1);
    }
    return q;
}

char *cv_arena_numbered(cv_arena *a, const char *base, char sep, uint32_t k)
{
    char digits[10];
    size_t nd = 0, lb = strlen(base);
    do
        digits[nd++] = (char)('0' + k % 10);
    while (k /= 10);
    char *q = cv_arena_alloc(a, lb + 1 + nd + 1), *p = q;
    if (q) {
        memcpy(p, base, lb);
        p += lb;
        *p++ = sep;
        while (nd)
            *p++ = digits[--nd];
        *p = 0;
    }
    return q;
}

void cv_arena_free(cv_arena *a)
{
    cv_arena_chunk *c = a->head;
    while (c) {
        cv_arena_chunk *next = c->next;
        cv_free(c);
        c = next;
    }
    memset(a, 0, sizeof *a);
}

/* ---------------------------------------------------------------- ids */

void *cv_zalloc(carve_ctx *ctx, size_t n, const char *doing)
{
    void *p = cv_malloc(n);
    if (!p) {
        cv_error(ctx, CARVE_ERR_NOMEM, "out of memory%s%s", doing ? " " : "", doing ? doing : "");
        return NULL;
    }
    memset(p, 0, n);
    return p;
}

char *cv_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = cv_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void *cv_grow_array(void *v, uint32_t *cap, size_t el, uint32_t first)
{
    uint32_t c = *cap ? *cap * 2 : first;
    void *p = cv_realloc(v, (size_t)c * el);
    if (p)
        *cap = c;
    return p;
}

bool cv_ids_push(cv_ids *a, uint32_t x)
{
    if (a->n == a->cap) {
        uint32_t *v = cv_grow_array(a->v, &a->cap, sizeof *v, 8);
        if (!v)
            return false;
        a->v = v;
    }
    a->v[a->n++] = x;
    return true;
}

bool cv_ids_copy(cv_ids *dst, const cv_ids *src)
{
    dst->n = 0;
    if (dst->cap < src->n) {
        uint32_t *v = cv_realloc(dst->v, (size_t)src->n * sizeof *v);
        if (!v)
            return false;
        dst->v = v;
        dst->cap = src->n;
    }
    if (src->n)
        memcpy(dst->v, src->v, (size_t)src->n * sizeof *dst->v);
    dst->n = src->n;
    return true;
}

void cv_ids_free(cv_ids *a)
{
    cv_free(a->v);
    memset(a, 0, sizeof *a);
}

/* ---------------------------------------------------------------- buf */

bool cv_buf_grow(cv_buf *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = cv_realloc(b->s, cap);
        if (!q) {
            b->failed = true;
            return false;
        }
        b->s = q;
        b->cap = cap;
    }
    return true;
}

void cv_buf_grow_put(cv_buf *b, const char *s, size_t n)
{
    if (!cv_buf_grow(b, n))
        return;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void cv_buf_puts(cv_buf *b, const char *s) { cv_buf_put(b, s, strlen(s)); }

void cv_buf_printf(cv_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        cv_buf_put(b, small, (size_t)n);
        return;
    }
    char *big = cv_malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    cv_buf_put(b, big, (size_t)n);
    cv_free(big);
}

void cv_buf_free(cv_buf *b)
{
    cv_free(b->s);
    memset(b, 0, sizeof *b);
}

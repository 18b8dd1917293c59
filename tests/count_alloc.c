/* count_alloc.c: the counting allocator of count_alloc.h. */
#include "count_alloc.h"

#include <stdint.h>
#include <stdlib.h>

#define MAX_BIG 4096

t_alloc_state t_alloc;
static void *big_blocks[MAX_BIG];
static int n_big; /* entries in big_blocks: most tests make none, and then free need not look */

static bool fail_now(void)
{
    ++t_alloc.count;
    return t_alloc.fail_at && (t_alloc.onward ? t_alloc.count >= t_alloc.fail_at : t_alloc.count == t_alloc.fail_at);
}

static void note_big(void *p, size_t n)
{
    if (!p || n < T_ALLOC_BIG)
        return;
    t_alloc.big++;
    for (int i = 0; i < MAX_BIG; i++)
        if (!big_blocks[i]) {
            big_blocks[i] = p;
            n_big++;
            return;
        }
}

/* By address: after a realloc the old pointer may only be compared as a number. */
static void forget_big(uintptr_t p)
{
    for (int i = 0; p && n_big && i < MAX_BIG; i++)
        if ((uintptr_t)big_blocks[i] == p) {
            big_blocks[i] = NULL;
            n_big--;
        }
}

bool t_alloc_is_big(const void *p)
{
    for (int i = 0; p && n_big && i < MAX_BIG; i++)
        if (big_blocks[i] == p)
            return true;
    return false;
}

static void *a_alloc(size_t n, void *u)
{
    (void)u;
    if (fail_now())
        return NULL;
    t_alloc.bytes += n;
    void *p = malloc(n);
    t_alloc.live += p != NULL;
    note_big(p, n);
    return p;
}

static void *a_realloc(void *p, size_t n, void *u)
{
    (void)u;
    if (fail_now())
        return NULL;
    t_alloc.bytes += n;
    uintptr_t old = (uintptr_t)p;
    void *q = realloc(p, n);
    if (q) {
        t_alloc.live += !old;
        forget_big(old);
        note_big(q, n);
    }
    return q;
}

static void a_free(void *p, void *u)
{
    (void)u;
    t_alloc.live -= p != NULL;
    forget_big((uintptr_t)p);
    free(p);
}

const carve_allocator t_counting = {a_alloc, a_realloc, a_free, NULL};

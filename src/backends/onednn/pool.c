/*
 * pool.c: the buffers of a compiled partition's values, shared by values
 * whose lives do not overlap (docs/onednn.md#memory).
 *
 * While the builder works each new memory gets an allocation of its own
 * (malloc: address space, no pages touched), so views and in-place outputs
 * alias it through its address as before. When the program is complete,
 * every step's memories are mapped back to the buffer holding their
 * address, giving each buffer the first and last step that uses it (the
 * boundary reorders count as a step before the first and one after the
 * last). Buffers are then placed in one arena, largest first, each at the
 * lowest offset where no buffer alive at an overlapping step lies, and
 * every memory is moved there (dnnl_memory_set_data_handle) with its
 * offset inside its buffer kept. Constants (filled at compile time) keep
 * their own buffers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dn.h"

#define POOL_ALIGN 64

void *dn_pool_alloc(dn_builder *b, const dnnl_memory_desc_t *md)
{
    dn_prog *p = b->p;
    if (p->n_bufs == p->cap_bufs) {
        size_t nc = p->cap_bufs ? 2 * p->cap_bufs : 64;
        void *q = realloc(p->bufs, nc * sizeof *p->bufs);
        if (!q)
            return NULL;
        p->bufs = q;
        p->cap_bufs = nc;
    }
    size_t size = dnnl_memory_desc_get_size(md);
    size = (size ? size : 1) + POOL_ALIGN - 1;
    size -= size % POOL_ALIGN;
    char *ptr = aligned_alloc(POOL_ALIGN, size);
    if (!ptr)
        return NULL;
    dn_buf *u = &p->bufs[p->n_bufs++];
    memset(u, 0, sizeof *u);
    u->ptr = ptr;
    u->size = size;
    u->first = u->last = -1;
    p->bufs_total += size;
    return ptr;
}

void dn_pool_free(dn_prog *p)
{
    for (size_t i = 0; i < p->n_bufs; i++)
        free(p->bufs[i].ptr);
    free(p->bufs);
    free(p->arena);
    p->bufs = NULL;
    p->arena = NULL;
    p->n_bufs = 0;
}

/* A buffer's key for sorting (no global state: compiles may run on
 * several threads at once). */
typedef struct key {
    const char *ptr;
    size_t size, idx;
} key;

static int by_ptr(const void *a, const void *b)
{
    const char *x = ((const key *)a)->ptr, *y = ((const key *)b)->ptr;
    return x < y ? -1 : x > y;
}

static int by_size(const void *a, const void *b)
{
    size_t x = ((const key *)a)->size, y = ((const key *)b)->size;
    return x > y ? -1 : x < y; /* largest first */
}

static void keys(const dn_prog *p, key *k, int (*cmp)(const void *, const void *))
{
    for (size_t i = 0; i < p->n_bufs; i++)
        k[i] = (key){p->bufs[i].ptr, p->bufs[i].size, i};
    qsort(k, p->n_bufs, sizeof *k, cmp);
}

/* The buffer holding address h (k sorted by address), or SIZE_MAX. */
static size_t find(const dn_prog *p, const key *k, const char *h)
{
    size_t lo = 0, hi = p->n_bufs;
    while (lo < hi) { /* the first buffer starting after h */
        size_t mid = (lo + hi) / 2;
        if (k[mid].ptr <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return SIZE_MAX;
    return h < k[lo - 1].ptr + k[lo - 1].size ? k[lo - 1].idx : SIZE_MAX;
}

static void use(dn_prog *p, const key *k, dnnl_memory_t m, int t)
{
    void *h = NULL;
    if (!m || dnnl_memory_get_data_handle(m, &h) != dnnl_success || !h)
        return;
    size_t i = find(p, k, h);
    if (i == SIZE_MAX)
        return;
    dn_buf *u = &p->bufs[i];
    if (u->first < 0 || t < u->first)
        u->first = t;
    if (t > u->last)
        u->last = t;
}

bool dn_pool_finish(dn_builder *b)
{
    dn_prog *p = b->p;
    if (!p->n_bufs)
        return true;
    key *order = malloc(p->n_bufs * sizeof *order);
    size_t *placed = malloc(p->n_bufs * sizeof *placed);
    if (!order || !placed) {
        free(order);
        free(placed);
        return false;
    }
    keys(p, order, by_ptr);
    /* time 0: the input reorders; step s at s + 1; the outputs after */
    for (size_t i = 0; i < p->n_in; i++)
        use(p, order, p->in_mem[i], 0);
    for (size_t s = 0; s < p->n_steps; s++)
        for (int a = 0; a < p->steps[s].nargs; a++)
            use(p, order, p->steps[s].args[a].memory, (int)s + 1);
    int end = (int)p->n_steps + 1;
    for (size_t i = 0; i < p->n_out; i++)
        use(p, order, p->out_mem[i], end);
    /* constants filled at compile time keep their buffers */
    for (size_t i = 0; i < b->n_vals; i++) {
        void *h = NULL;
        if (b->vals[i].is_const && b->vals[i].mem && dnnl_memory_get_data_handle(b->vals[i].mem, &h) == dnnl_success) {
            size_t k = find(p, order, h);
            if (k != SIZE_MAX)
                p->bufs[k].keep = true;
        }
    }
    /* place: largest first, lowest offset free over the buffer's life */
    keys(p, order, by_size);
    size_t n_placed = 0, total = 0;
    for (size_t i = 0; i < p->n_bufs; i++) {
        dn_buf *u = &p->bufs[order[i].idx];
        if (u->keep || u->first < 0)
            continue;
        size_t off = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (size_t j = 0; j < n_placed; j++) {
                const dn_buf *v = &p->bufs[placed[j]];
                if (v->last < u->first || u->last < v->first)
                    continue; /* not alive together */
                if (off < v->off + v->size && v->off < off + u->size) {
                    off = v->off + v->size;
                    moved = true;
                }
            }
        }
        u->off = off;
        if (off + u->size > total)
            total = off + u->size;
        placed[n_placed++] = order[i].idx;
    }
    free(placed);
    p->arena_size = total;
    p->arena = total ? aligned_alloc(4096, (total + 4095) / 4096 * 4096) : NULL;
    if (total && !p->arena) {
        free(order);
        return false;
    }
    /* move every memory into the arena */
    keys(p, order, by_ptr);
    bool ok = true;
    for (size_t i = 0; i < p->n_mems && ok; i++) {
        void *h = NULL;
        if (dnnl_memory_get_data_handle(p->mems[i], &h) != dnnl_success || !h)
            continue;
        size_t k = find(p, order, h);
        if (k == SIZE_MAX || p->bufs[k].keep || p->bufs[k].first < 0)
            continue;
        const dn_buf *u = &p->bufs[k];
        ok = dnnl_memory_set_data_handle(p->mems[i], p->arena + u->off + ((char *)h - u->ptr)) == dnnl_success;
    }
    free(order);
    /* the buffers now in the arena are no longer needed; a buffer no step
     * uses keeps its allocation (memories may still point at it) */
    size_t w = 0;
    for (size_t i = 0; i < p->n_bufs; i++) {
        if (!p->bufs[i].keep && p->bufs[i].first >= 0)
            free(p->bufs[i].ptr);
        else
            p->bufs[w++] = p->bufs[i];
    }
    p->n_bufs = w;
    return ok;
}

/* val.c: run-time values (tensors, sequences, optionals), the run's buffer
 * pool, element access and broadcasting. */
#define _DEFAULT_SOURCE /* madvise */
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POOL_POISON(p, n) ((void)(p), (void)(n))
#define POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* No single tensor carve computes may exceed this (16 GiB): a guard against
 * shapes that would exhaust the machine, reported as NOMEM. */
#define MAX_TENSOR_BYTES ((size_t)16 << 30)

size_t cv_nelem(int rank, const int64_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

/* ---------------------------------------------------------------- buffer pool
 *
 * Freeing a large tensor gives its pages back to the kernel (glibc unmaps
 * big blocks and trims its heap), so the next one page-faults on every 4 KiB
 * page it touches: on OCR det 1x3x640x640 about 15,000 faults per run,
 * more time than the arithmetic. A run's pool keeps the memory instead:
 * buffers of POOL_MIN bytes or more (tensor data and kernel scratch) are cut
 * from slabs obtained through cv_malloc, first fit at the lowest address
 * (which keeps the touched part of a slab close to the live set), and
 * coalesced when freed, so a buffer freed by one node serves the next. A
 * slab is aligned to 2 MiB and advised as transparent huge pages: touching
 * fresh slab memory then faults once per 2 MiB, not once per 4 KiB. Slabs
 * reserve address space; only the pages tensors touch become resident.
 * First fit still leaves holes when tensor sizes shift (imgly's decoder:
 * +40% peak memory), so the pool bounds what it keeps: before a buffer
 * touches fresh pages, if the touched pages would exceed the bytes in use
 * by more than an eighth plus 8 MiB, free pages of free extents are given
 * back to the kernel (MADV_DONTNEED), highest addresses first.
 *
 * The pool belongs to the model (made by its first run, freed with it or
 * by carve_model_trim) and is the calling thread's current pool while an
 * outermost run lasts (runs nested in it share it); cv_val_unref and
 * cv_scratch_free give back any buffer that lies in one of its slabs. At
 * the end of the run its outputs' data move out of the pool
 * (cv_pool_detach), so nothing outside the run points into it, and the
 * slabs stay, touched, for the next run: the same requests in the same
 * order get the same addresses, so a repeated run touches no fresh page.
 * Without a current pool (a tensor made by the caller, folding, inference)
 * everything is plain cv_malloc. */

#define POOL_MIN ((size_t)64 << 10)
#define POOL_ALIGN ((size_t)64)       /* every buffer starts on a cache line */
#define POOL_REDZONE ((size_t)64)     /* unused gap after each buffer (ASan sees overruns) */
#define POOL_PAGE ((size_t)2 << 20)   /* slab alignment: the huge page size */
#define POOL_SLAB_MIN ((size_t)64 << 20)
#define POOL_KEEP_MIN ((size_t)8 << 20) /* touched-but-free memory always allowed */

static _Thread_local cv_pool *t_pool;

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Room for one more extent in slab s. */
static bool ext_reserve(cv_pool_slab *s)
{
    if (s->n_ext < s->cap_ext)
        return true;
    cv_pool_ext *e = cv_grow_array(s->ext, &s->cap_ext, sizeof *e, 16);
    if (e)
        s->ext = e;
    return e != NULL;
}

/* Takes `need` bytes from the start of free extent i of slab s. */
static void *ext_take(cv_pool_slab *s, uint32_t i, size_t need)
{
    cv_pool_ext *e = &s->ext[i];
    if (e->len > need) {
        memmove(&s->ext[i + 2], &s->ext[i + 1], (size_t)(s->n_ext - i - 1) * sizeof *e);
        s->ext[i + 1] = (cv_pool_ext){e->off + need, e->len - need, false};
        s->n_ext++;
        e->len = need;
    }
    e->used = true;
    return s->base + e->off;
}

static bool slab_new(cv_pool *p, size_t need)
{
    if (p->n_slab == CV_POOL_SLABS)
        return false;
    /* at least double what the pool holds, so a big model makes few slabs */
    size_t size = round_up(need, POOL_PAGE);
    if (size < POOL_SLAB_MIN)
        size = POOL_SLAB_MIN;
    if (size < p->reserved)
        size = p->reserved;
    if (size > SIZE_MAX - POOL_PAGE)
        return false;
    cv_pool_slab *s = &p->slab[p->n_slab];
    memset(s, 0, sizeof *s);
    s->raw = cv_malloc(size + POOL_PAGE);
    s->dirty = cv_malloc(size / POOL_PAGE);
    if (!s->raw || !s->dirty || !ext_reserve(s)) {
        cv_free(s->raw);
        cv_free(s->dirty);
        cv_free(s->ext);
        memset(s, 0, sizeof *s);
        return false;
    }
    memset(s->dirty, 0, size / POOL_PAGE);
    s->base = (unsigned char *)s->raw + (POOL_PAGE - (uintptr_t)s->raw % POOL_PAGE) % POOL_PAGE;
    s->size = size;
    s->ext[0] = (cv_pool_ext){0, size, false};
    s->n_ext = 1;
    cv_advise_huge(s->base, size);
    POOL_POISON(s->base, size);
    p->n_slab++;
    p->reserved += size;
    p->stats.slabs++;
    return true;
}

/* Gives free pages back to the kernel, from the highest addresses down,
 * until at most `keep` bytes are touched. Only whole pages inside free
 * extents go; without madvise nothing does. */
static void pool_trim(cv_pool *p, size_t keep)
{
#if defined(__linux__) && defined(MADV_DONTNEED)
    for (uint32_t k = p->n_slab; k-- > 0 && p->touched > keep;) {
        cv_pool_slab *s = &p->slab[k];
        for (uint32_t i = s->n_ext; i-- > 0 && p->touched > keep;) {
            const cv_pool_ext *e = &s->ext[i];
            if (e->used)
                continue;
            size_t a = round_up(e->off, POOL_PAGE) / POOL_PAGE, b = (e->off + e->len) / POOL_PAGE;
            for (size_t pg = b; pg-- > a && p->touched > keep;)
                if (s->dirty[pg] && madvise(s->base + pg * POOL_PAGE, POOL_PAGE, MADV_DONTNEED) == 0) {
                    s->dirty[pg] = 0;
                    p->touched -= POOL_PAGE;
                    p->stats.released++;
                }
        }
    }
#else
    (void)p, (void)keep;
#endif
}

/* Counts the pages [off, off + len) of slab s touches as touched, after
 * trimming if they are fresh and would take the touched pages past what the
 * bytes in use justify. */
static void pool_touch(cv_pool *p, cv_pool_slab *s, size_t off, size_t len)
{
    size_t a = off / POOL_PAGE, b = (off + len + POOL_PAGE - 1) / POOL_PAGE, fresh = 0;
    for (size_t pg = a; pg < b; pg++)
        fresh += !s->dirty[pg];
    size_t limit = p->in_use + p->in_use / 8 + POOL_KEEP_MIN;
    if (fresh && p->touched + fresh * POOL_PAGE > limit)
        pool_trim(p, limit > fresh * POOL_PAGE ? limit - fresh * POOL_PAGE : 0);
    for (size_t pg = a; pg < b; pg++)
        if (!s->dirty[pg]) {
            s->dirty[pg] = 1;
            p->touched += POOL_PAGE;
        }
    if (p->touched > p->stats.touched_max)
        p->stats.touched_max = p->touched;
}

/* n bytes from the pool, or NULL (no pool, too small, out of memory): the
 * caller then uses cv_malloc. */
static void *pool_alloc(cv_pool *p, size_t n)
{
    if (!p || n < POOL_MIN || n > SIZE_MAX / 2)
        return NULL;
    size_t need = round_up(n, POOL_ALIGN) + POOL_REDZONE;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t k = 0; k < p->n_slab; k++) {
            cv_pool_slab *s = &p->slab[k];
            for (uint32_t i = 0; i < s->n_ext; i++)
                if (!s->ext[i].used && s->ext[i].len >= need) {
                    if (s->ext[i].len > need && !ext_reserve(s))
                        return NULL;
                    unsigned char *q = ext_take(s, i, need);
                    p->stats.served++;
                    p->in_use += need;
                    if (p->in_use > p->stats.in_use_max)
                        p->stats.in_use_max = p->in_use;
                    pool_touch(p, s, (size_t)(q - s->base), need);
                    POOL_UNPOISON(q, n);
                    return q;
                }
        }
        if (pass || !slab_new(p, need))
            return NULL;
    }
    return NULL;
}

/* The slab of p holding q, or NULL. */
static cv_pool_slab *pool_slab_of(cv_pool *p, const void *q)
{
    for (uint32_t k = 0; p && k < p->n_slab; k++) {
        cv_pool_slab *s = &p->slab[k];
        if ((const unsigned char *)q >= s->base && (const unsigned char *)q < s->base + s->size)
            return s;
    }
    return NULL;
}

/* Gives q back when it came from pool p; false when it did not. */
static bool pool_free(cv_pool *p, void *q)
{
    cv_pool_slab *s = q ? pool_slab_of(p, q) : NULL;
    if (!s)
        return false;
    size_t off = (size_t)((unsigned char *)q - s->base);
    uint32_t lo = 0, hi = s->n_ext;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->ext[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    cv_pool_ext *e = &s->ext[lo];
    if (e->off != off || !e->used)
        abort(); /* not a buffer the pool handed out: memory is corrupt */
    e->used = false;
    p->in_use -= e->len;
    POOL_POISON(q, e->len);
    uint32_t i = lo;
    if (i + 1 < s->n_ext && !s->ext[i + 1].used) {
        e->len += s->ext[i + 1].len;
        memmove(&s->ext[i + 1], &s->ext[i + 2], (size_t)(s->n_ext - i - 2) * sizeof *e);
        s->n_ext--;
    }
    if (i > 0 && !s->ext[i - 1].used) {
        s->ext[i - 1].len += s->ext[i].len;
        memmove(&s->ext[i], &s->ext[i + 1], (size_t)(s->n_ext - i - 1) * sizeof *e);
        s->n_ext--;
    }
    return true;
}

cv_pool *cv_pool_current(void) { return t_pool; }

void cv_pool_begin(cv_pool *p)
{
    memset(p, 0, sizeof *p);
    t_pool = p;
}

void cv_pool_resume(cv_pool *p) { t_pool = p; }

void cv_pool_suspend(cv_pool *p)
{
    if (t_pool == p)
        t_pool = NULL;
}

void cv_pool_end(cv_pool *p)
{
    for (uint32_t k = 0; k < p->n_slab; k++) {
        POOL_UNPOISON(p->slab[k].base, p->slab[k].size);
        cv_free(p->slab[k].raw);
        cv_free(p->slab[k].dirty);
        cv_free(p->slab[k].ext);
    }
    if (t_pool == p)
        t_pool = NULL;
    cv_pool_stats st = p->stats;
    memset(p, 0, sizeof *p);
    p->stats = st;
}

bool cv_pool_detach(cv_val *v)
{
    if (!v)
        return true;
    if (v->kind == CV_VAL_SEQUENCE) {
        for (uint32_t i = 0; i < v->n_items; i++)
            if (!cv_pool_detach(v->items[i]))
                return false;
        return true;
    }
    if (v->kind != CV_VAL_TENSOR || v->borrowed)
        return true;
    /* a view: its owner's bytes (the owner may have been detached already) */
    if (v->base)
        v->data = (char *)v->base->data + v->base_off;
    if (!pool_slab_of(t_pool, v->data))
        return true;
    /* the pool's bytes, copied out; the view drops its owner, the owner
     * gives its bytes back to the pool */
    void *q = cv_malloc(v->nbytes ? v->nbytes : 1);
    if (!q)
        return false;
    memcpy(q, v->data, v->nbytes);
    if (v->base) {
        cv_val_unref(v->base);
        v->base = NULL;
    } else {
        pool_free(t_pool, v->data);
    }
    v->data = q;
    return true;
}

void *cv_scratch_alloc(size_t n)
{
    void *q = pool_alloc(t_pool, n);
    return q ? q : cv_malloc(n);
}

void cv_scratch_free(void *q)
{
    if (!pool_free(t_pool, q))
        cv_free(q);
}

/* ---------------------------------------------------------------- values */

static cv_val *alloc_val(void)
{
    cv_val *v = cv_malloc(sizeof *v);
    if (v) {
        memset(v, 0, sizeof *v);
        v->refs = 1;
    }
    return v;
}

static void set_dims(cv_val *v, int rank, const int64_t *dims)
{
    v->rank = rank;
    if (rank)
        memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
}

/* A tensor's header, with no data yet: its dtype, shape, element count and
 * byte size (the callers have checked rank and counted nelem, nbytes). */
static cv_val *alloc_tensor(carve_dtype dtype, int rank, const int64_t *dims, size_t nelem, size_t nbytes)
{
    cv_val *v = alloc_val();
    if (v) {
        v->dtype = dtype;
        set_dims(v, rank, dims);
        v->nelem = nelem;
        v->nbytes = nbytes;
    }
    return v;
}

/* A tensor whose data is zero-filled when zero is set or when the dtype
 * needs it: strings (NULL pointers until set), 4-bit types (a byte holds
 * two elements, so an odd count leaves half a byte no kernel writes). */
static cv_val *new_tensor(carve_dtype dtype, int rank, const int64_t *dims, bool zero)
{
    size_t n;
    if (rank < 0 || rank > CARVE_MAX_RANK || !cv_shape_nelem(rank, dims, MAX_TENSOR_BYTES, &n))
        return NULL;
    size_t nb = dtype == CARVE_STRING ? n * sizeof(char *) : cv_dtype_nbytes(dtype, n);
    if (nb == SIZE_MAX || nb > MAX_TENSOR_BYTES)
        return NULL;
    cv_val *v = alloc_tensor(dtype, rank, dims, n, nb);
    if (!v)
        return NULL;
    v->data = cv_scratch_alloc(nb ? nb : 1);
    if (!v->data) {
        cv_free(v);
        return NULL;
    }
    if (zero || dtype == CARVE_STRING || dtype == CARVE_INT4 || dtype == CARVE_UINT4)
        memset(v->data, 0, nb ? nb : 1);
#ifdef CARVE_POISON_UNINIT
    /* checking build: an element a kernel leaves unwritten reads as NaN / -1 */
    else
        memset(v->data, 0xff, nb ? nb : 1);
#endif
    return v;
}

cv_val *cv_val_new(carve_dtype dtype, int rank, const int64_t *dims) { return new_tensor(dtype, rank, dims, true); }

cv_val *cv_val_new_uninit(carve_dtype dtype, int rank, const int64_t *dims)
{
    return new_tensor(dtype, rank, dims, false);
}

cv_val *cv_val_like(const cv_val *v) { return cv_val_new(v->dtype, v->rank, v->dims); }
cv_val *cv_val_like_dtype(const cv_val *v, carve_dtype dtype) { return cv_val_new(dtype, v->rank, v->dims); }

cv_val *cv_val_scalar_f32(float x)
{
    cv_val *v = cv_val_new(CARVE_FLOAT, 0, NULL);
    if (v)
        *(float *)v->data = x;
    return v;
}

cv_val *cv_val_scalar_i64(int64_t x)
{
    cv_val *v = cv_val_new(CARVE_INT64, 0, NULL);
    if (v)
        *(int64_t *)v->data = x;
    return v;
}

cv_val *cv_val_from_tensor(const cv_tensor *t)
{
    if (t->dtype == CARVE_STRING) {
        cv_val *v = cv_val_new(CARVE_STRING, t->rank, t->dims);
        if (!v)
            return NULL;
        char **s = v->data;
        for (size_t i = 0; i < t->nelem; i++) {
            s[i] = cv_malloc(t->strs[i].n + 1);
            if (!s[i]) {
                cv_val_unref(v);
                return NULL;
            }
            memcpy(s[i], t->strs[i].p, t->strs[i].n);
            s[i][t->strs[i].n] = 0;
        }
        return v;
    }
    cv_val *v = alloc_tensor(t->dtype, t->rank, t->dims, t->nelem, t->nbytes);
    if (!v)
        return NULL;
    v->data = (void *)t->data;
    v->borrowed = true;
    return v;
}

cv_val *cv_val_clone(const cv_val *v)
{
    if (v->kind == CV_VAL_NONE)
        return cv_val_none();
    if (v->kind == CV_VAL_SEQUENCE) {
        cv_val *s = cv_val_sequence(v->dtype, v->n_items, v->items);
        if (s)
            s->optional = v->optional;
        return s;
    }
    cv_val *c = cv_val_new_uninit(v->dtype, v->rank, v->dims); /* copied whole below */
    if (!c)
        return NULL;
    c->optional = v->optional;
    if (v->dtype == CARVE_STRING) {
        char **src = v->data, **dst = c->data;
        for (size_t i = 0; i < v->nelem; i++) {
            size_t n = strlen(src[i]);
            dst[i] = cv_malloc(n + 1);
            if (!dst[i]) {
                cv_val_unref(c);
                return NULL;
            }
            memcpy(dst[i], src[i], n + 1);
        }
    } else if (v->nbytes) {
        memcpy(c->data, v->data, v->nbytes);
    }
    return c;
}

bool cv_val_copy_elems(cv_val *dst, size_t doff, const cv_val *src, size_t soff, size_t n)
{
    int bits = carve_dtype_bits(src->dtype);
    if (src->dtype == CARVE_STRING) {
        char **s = src->data, **d = dst->data;
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(s[soff + i]);
            cv_free(d[doff + i]);
            d[doff + i] = cv_malloc(len + 1);
            if (!d[doff + i])
                return false;
            memcpy(d[doff + i], s[soff + i], len + 1);
        }
    } else if (bits == 4) {
        const uint8_t *s = src->data;
        uint8_t *d = dst->data;
        for (size_t i = 0; i < n; i++) {
            size_t si = soff + i, di = doff + i;
            uint8_t q = (uint8_t)((s[si / 2] >> ((si & 1) * 4)) & 0xf);
            d[di / 2] = (di & 1) ? (uint8_t)((d[di / 2] & 0x0f) | (q << 4)) : (uint8_t)((d[di / 2] & 0xf0) | q);
        }
    } else if (n) {
        size_t es = (size_t)bits / 8;
        memcpy((uint8_t *)dst->data + doff * es, (const uint8_t *)src->data + soff * es, n * es);
    }
    return true;
}

cv_val *cv_val_view(const cv_val *v, int rank, const int64_t *dims, size_t off)
{
    size_t n;
    if (v->kind != CV_VAL_TENSOR || v->dtype == CARVE_STRING || v->borrowed || carve_dtype_bits(v->dtype) < 8 ||
        rank < 0 || rank > CARVE_MAX_RANK || !cv_shape_nelem(rank, dims, MAX_TENSOR_BYTES, &n))
        return NULL;
    size_t nb = cv_dtype_nbytes(v->dtype, n);
    if (off > v->nbytes || nb > v->nbytes - off)
        return NULL;
    cv_val *c = alloc_tensor(v->dtype, rank, dims, n, nb);
    if (!c)
        return NULL;
    c->optional = v->optional;
    c->data = (char *)v->data + off;
    c->base = cv_val_ref(v->base ? v->base : (cv_val *)v);
    c->base_off = (v->base ? v->base_off : 0) + off;
    return c;
}

cv_val *cv_val_reshaped(const cv_val *v, int rank, const int64_t *dims)
{
    cv_val *c = cv_val_view(v, rank, dims, 0);
    if (c || (v->kind == CV_VAL_TENSOR && v->dtype != CARVE_STRING && !v->borrowed &&
              carve_dtype_bits(v->dtype) >= 8))
        return c; /* a view, or out of memory */
    c = cv_val_clone(v);
    if (c)
        set_dims(c, rank, dims);
    return c;
}

cv_val *cv_val_sequence(carve_dtype elem, uint32_t n, cv_val **items)
{
    cv_val *v = alloc_val();
    if (!v)
        return NULL;
    v->kind = CV_VAL_SEQUENCE;
    v->dtype = elem;
    v->n_items = n;
    v->items = cv_malloc((n ? n : 1) * sizeof *v->items);
    if (!v->items) {
        cv_free(v);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        v->items[i] = cv_val_ref(items[i]);
    return v;
}

cv_val *cv_val_none(void)
{
    cv_val *v = alloc_val();
    if (v) {
        v->kind = CV_VAL_NONE;
        v->optional = true;
    }
    return v;
}

cv_val *cv_val_ref(cv_val *v)
{
    if (v)
        v->refs++;
    return v;
}

void cv_val_unref(cv_val *v)
{
    if (!v || --v->refs > 0)
        return;
    if (v->kind == CV_VAL_SEQUENCE) {
        for (uint32_t i = 0; i < v->n_items; i++)
            cv_val_unref(v->items[i]);
        cv_free(v->items);
    } else if (v->base) {
        cv_val_unref(v->base);
    } else if (!v->borrowed) {
        if (v->dtype == CARVE_STRING && v->data) {
            char **s = v->data;
            for (size_t i = 0; i < v->nelem; i++)
                cv_free(s[i]);
        }
        cv_scratch_free(v->data);
    }
    cv_free(v);
}

/* ---------------------------------------------------------------- dtypes */

bool cv_dtype_is_float(carve_dtype t)
{
    switch (t) {
    case CARVE_FLOAT: case CARVE_DOUBLE: case CARVE_FLOAT16: case CARVE_BFLOAT16:
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return true;
    default: return false;
    }
}

bool cv_dtype_is_signed(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_INT16: case CARVE_INT32: case CARVE_INT64: case CARVE_INT4: return true;
    default: return false;
    }
}

bool cv_dtype_is_int(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_INT16: case CARVE_INT32: case CARVE_INT64: case CARVE_INT4:
    case CARVE_UINT8: case CARVE_UINT16: case CARVE_UINT32: case CARVE_UINT64: case CARVE_UINT4:
        return true;
    default: return false;
    }
}

/* ---------------------------------------------------------------- element access */

static int nibble(const cv_val *v, size_t i)
{
    uint8_t b = ((const uint8_t *)v->data)[i / 2];
    int x = (i & 1) ? b >> 4 : b & 0xf;
    if (v->dtype == CARVE_INT4 && x >= 8)
        x -= 16;
    return x;
}

double cv_val_get_f64(const cv_val *v, size_t i)
{
    const void *d = v->data;
    switch (v->dtype) {
    case CARVE_FLOAT: return ((const float *)d)[i];
    case CARVE_DOUBLE: return ((const double *)d)[i];
    case CARVE_FLOAT16: return cv_f16_to_f32(((const uint16_t *)d)[i]);
    case CARVE_BFLOAT16: return cv_bf16_to_f32(((const uint16_t *)d)[i]);
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return cv_f8_to_f32(((const uint8_t *)d)[i], v->dtype);
    case CARVE_INT8: return ((const int8_t *)d)[i];
    case CARVE_UINT8: case CARVE_BOOL: return ((const uint8_t *)d)[i];
    case CARVE_INT16: return ((const int16_t *)d)[i];
    case CARVE_UINT16: return ((const uint16_t *)d)[i];
    case CARVE_INT32: return ((const int32_t *)d)[i];
    case CARVE_UINT32: return ((const uint32_t *)d)[i];
    case CARVE_INT64: return (double)((const int64_t *)d)[i];
    case CARVE_UINT64: return (double)((const uint64_t *)d)[i];
    case CARVE_INT4: case CARVE_UINT4: return nibble(v, i);
    default: return 0;
    }
}

int64_t cv_val_get_i64(const cv_val *v, size_t i)
{
    const void *d = v->data;
    switch (v->dtype) {
    case CARVE_INT64: return ((const int64_t *)d)[i];
    case CARVE_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case CARVE_INT32: return ((const int32_t *)d)[i];
    case CARVE_UINT32: return ((const uint32_t *)d)[i];
    case CARVE_INT16: return ((const int16_t *)d)[i];
    case CARVE_UINT16: return ((const uint16_t *)d)[i];
    case CARVE_INT8: return ((const int8_t *)d)[i];
    case CARVE_UINT8: case CARVE_BOOL: return ((const uint8_t *)d)[i];
    case CARVE_INT4: case CARVE_UINT4: return nibble(v, i);
    default: {
        double x = cv_val_get_f64(v, i);
        if (!(x == x))
            return INT64_MIN;
        if (x >= 9.2233720368547758e18)
            return INT64_MAX;
        if (x <= -9.2233720368547758e18)
            return INT64_MIN;
        return (int64_t)x;
    }
    }
}

static void set_nibble(cv_val *v, size_t i, int64_t x)
{
    uint8_t *b = &((uint8_t *)v->data)[i / 2];
    uint8_t q = (uint8_t)(x & 0xf);
    *b = (i & 1) ? (uint8_t)((*b & 0x0f) | (q << 4)) : (uint8_t)((*b & 0xf0) | q);
}

void cv_val_set_f64(cv_val *v, size_t i, double x)
{
    void *d = v->data;
    switch (v->dtype) {
    case CARVE_FLOAT: ((float *)d)[i] = (float)x; return;
    case CARVE_DOUBLE: ((double *)d)[i] = x; return;
    case CARVE_FLOAT16: ((uint16_t *)d)[i] = cv_f32_to_f16((float)x); return;
    case CARVE_BFLOAT16: ((uint16_t *)d)[i] = cv_f32_to_bf16((float)x); return;
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        ((uint8_t *)d)[i] = cv_f32_to_f8((float)x, v->dtype, true);
        return;
    case CARVE_BOOL: ((uint8_t *)d)[i] = x != 0; return;
    default: {
        /* Integers: truncate toward zero, NaN/out of range through the
         * int64 path (no UB). */
        int64_t q;
        if (!(x == x))
            q = INT64_MIN;
        else if (x >= 9.2233720368547758e18)
            q = INT64_MAX;
        else if (x <= -9.2233720368547758e18)
            q = INT64_MIN;
        else
            q = (int64_t)x;
        cv_val_set_i64(v, i, q);
        return;
    }
    }
}

void cv_val_set_i64(cv_val *v, size_t i, int64_t x)
{
    void *d = v->data;
    switch (v->dtype) {
    case CARVE_INT64: ((int64_t *)d)[i] = x; return;
    case CARVE_UINT64: ((uint64_t *)d)[i] = (uint64_t)x; return;
    case CARVE_INT32: ((int32_t *)d)[i] = (int32_t)(uint32_t)(uint64_t)x; return;
    case CARVE_UINT32: ((uint32_t *)d)[i] = (uint32_t)(uint64_t)x; return;
    case CARVE_INT16: ((int16_t *)d)[i] = (int16_t)(uint16_t)(uint64_t)x; return;
    case CARVE_UINT16: ((uint16_t *)d)[i] = (uint16_t)(uint64_t)x; return;
    case CARVE_INT8: ((int8_t *)d)[i] = (int8_t)(uint8_t)(uint64_t)x; return;
    case CARVE_UINT8: ((uint8_t *)d)[i] = (uint8_t)(uint64_t)x; return;
    case CARVE_BOOL: ((uint8_t *)d)[i] = x != 0; return;
    case CARVE_INT4: case CARVE_UINT4: set_nibble(v, i, x); return;
    case CARVE_FLOAT: case CARVE_DOUBLE: case CARVE_FLOAT16: case CARVE_BFLOAT16: case CARVE_FLOAT8E4M3FN:
    case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        cv_val_set_f64(v, i, (double)x);
        return;
    default: return; /* strings and types without numbers: nothing to set (set_f64 sends them here) */
    }
}

cv_val *cv_val_to_f32(const cv_val *v)
{
    cv_val *f = cv_val_new_uninit(CARVE_FLOAT, v->rank, v->dims);
    if (!f)
        return NULL;
    float *o = f->data;
    if (v->dtype == CARVE_FLOAT)
        memcpy(o, v->data, v->nbytes);
    else
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = (float)cv_val_get_f64(v, i);
    return f;
}

cv_val *cv_val_from_f32(const cv_val *f, carve_dtype dtype)
{
    cv_val *v = cv_val_new_uninit(dtype, f->rank, f->dims);
    if (!v)
        return NULL;
    const float *x = f->data;
    if (dtype == CARVE_FLOAT)
        memcpy(v->data, x, f->nbytes);
    else
        for (size_t i = 0; i < f->nelem; i++)
            cv_val_set_f64(v, i, x[i]);
    return v;
}

/* ---------------------------------------------------------------- broadcasting */

bool cv_broadcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t a = i < r - ra ? 1 : da[i - (r - ra)];
        int64_t b = i < r - rb ? 1 : db[i - (r - rb)];
        if (a != b && a != 1 && b != 1)
            return false;
        dims[i] = a == 1 ? b : a;
    }
    *rank = r;
    return true;
}

void cv_bcast_strides(int r, const int64_t *d, int orank, const int64_t *odims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = orank - 1; i >= 0; i--) {
        int j = i - (orank - r);
        if (j < 0 || d[j] == 1) {
            strides[i] = 0;
        } else {
            strides[i] = s;
        }
        if (j >= 0)
            s *= d[j];
    }
    (void)odims;
}

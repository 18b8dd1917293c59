/* strmap.c: string -> id hash map (open addressing, linear probing). */
#include "ir.h"

#include <string.h>

uint64_t cv_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t cv_hash_words(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (n + 1));
    for (; n >= 8; n -= 8, s += 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n)
        memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* Names are short (graph values, node names: mostly under 32 bytes) and
 * hashed on every look-up, so the hash reads whole words and the last,
 * partial word with two overlapping loads instead of a copy of a variable
 * length: 10-20 instructions for most names. The slots' order is never
 * visible, so the hash may change freely. */
static inline uint64_t load64(const unsigned char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}
static inline uint64_t load32(const unsigned char *s)
{
    uint32_t w;
    memcpy(&w, s, 4);
    return w;
}

/* A key's tag, as slots store it: its hash's low 24 bits (slot indexes
 * come from those; up to 2^24 slots only from them) and its length (255:
 * 255 or more) above, so a probe compares a key of another length never
 * and one of the same length without a call (same()). */
static inline uint32_t tag_of(const char *key, size_t *len)
{
    const unsigned char *s = (const unsigned char *)key;
    size_t n = strlen(key);
    *len = n;
    uint64_t h = 0x9e3779b97f4a7c15ull * (n + 1), w;
    if (n > 8) {
        const unsigned char *last = s + n - 8;
        for (; s < last; s += 8) {
            h = (h ^ load64(s)) * 0xff51afd7ed558ccdull;
            h ^= h >> 32;
        }
        w = load64(last); /* overlaps the word before: n is in h */
    } else if (n >= 4) {
        w = load32(s) | load32(s + n - 4) << 32;
    } else {
        w = n ? (uint64_t)s[0] | (uint64_t)s[n >> 1] << 8 | (uint64_t)s[n - 1] << 16 : 0;
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    return ((uint32_t)(h ^ (h >> 32)) & 0xffffff) | (uint32_t)(n < 255 ? n : 255) << 24;
}

/* Are a and b, both of length n (their tags match), the same? */
static inline bool same(const char *a, const char *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    if (n >= 255)
        return strcmp(a, b) == 0;
    if (n > 16)
        return memcmp(x, y, n) == 0;
    if (n >= 8)
        return load64(x) == load64(y) && load64(x + n - 8) == load64(y + n - 8);
    if (n >= 4)
        return load32(x) == load32(y) && load32(x + n - 4) == load32(y + n - 4);
    return !n || (x[0] == y[0] && x[n >> 1] == y[n >> 1] && x[n - 1] == y[n - 1]);
}

/* A slot holds its key, the key's hash and the value together: a probe
 * reads one cache line, compares hashes before strings, and growing and
 * deleting never hash a key again. At most three quarters of the slots are
 * used: a look-up probes 1.5 slots on average (callgrind, 43k-node DAG). */
static bool rehash(cv_strmap *m, uint32_t cap)
{
    cv_strslot *slots = cv_malloc((size_t)cap * sizeof *slots);
    if (!slots)
        return false;
    memset(slots, 0, (size_t)cap * sizeof *slots);
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        uint32_t j = m->slots[i].hash & (cap - 1);
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    cv_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

static bool grow(cv_strmap *m) { return rehash(m, m->cap ? m->cap * 2 : 16); }

bool cv_strmap_reserve(cv_strmap *m, uint32_t n)
{
    uint32_t cap = m->cap ? m->cap : 16;
    while ((uint64_t)n * 4 > (uint64_t)cap * 3) {
        if (cap > UINT32_MAX / 2)
            return false;
        cap *= 2;
    }
    return cap == m->cap || rehash(m, cap);
}

bool cv_strmap_add(cv_strmap *m, const char *key, uint32_t val, uint32_t *old)
{
    if ((m->n + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    size_t n;
    uint32_t h = tag_of(key, &n), j = h & (m->cap - 1);
    while (m->slots[j].key) {
        if (m->slots[j].hash == h && (m->slots[j].key == key || same(m->slots[j].key, key, n))) {
            *old = m->slots[j].val;
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (cv_strslot){key, h, val};
    m->n++;
    *old = CARVE_NONE;
    return true;
}

bool cv_strmap_put(cv_strmap *m, const char *key, uint32_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    size_t n;
    uint32_t h = tag_of(key, &n), j = h & (m->cap - 1);
    while (m->slots[j].key) {
        if (m->slots[j].hash == h && same(m->slots[j].key, key, n)) {
            m->slots[j].val = val;
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (cv_strslot){key, h, val};
    m->n++;
    return true;
}

void cv_strmap_prefetch(const cv_strmap *m, const char *key)
{
    if (!m->cap)
        return;
    size_t n;
    __builtin_prefetch(&m->slots[tag_of(key, &n) & (m->cap - 1)]);
}

/* The slot of key, or CARVE_NONE. */
static inline uint32_t find(const cv_strmap *m, const char *key)
{
    if (!m->cap)
        return CARVE_NONE;
    size_t n;
    uint32_t h = tag_of(key, &n), j = h & (m->cap - 1);
    while (m->slots[j].key) {
        if (m->slots[j].hash == h && (m->slots[j].key == key || same(m->slots[j].key, key, n)))
            return j;
        j = (j + 1) & (m->cap - 1);
    }
    return CARVE_NONE;
}

uint32_t cv_strmap_get(const cv_strmap *m, const char *key)
{
    uint32_t j = find(m, key);
    return j == CARVE_NONE ? CARVE_NONE : m->slots[j].val;
}

void cv_strmap_free(cv_strmap *m)
{
    cv_free(m->slots);
    memset(m, 0, sizeof *m);
}

void cv_strmap_del(cv_strmap *m, const char *key) { cv_strmap_del_if(m, key, CARVE_NONE); }

void cv_strmap_del_if(cv_strmap *m, const char *key, uint32_t val)
{
    uint32_t j = find(m, key);
    if (j == CARVE_NONE || (val != CARVE_NONE && m->slots[j].val != val))
        return;
    uint32_t mask = m->cap - 1;
    /* backward-shift deletion keeps every probe chain unbroken */
    m->slots[j].key = NULL;
    m->n--;
    for (uint32_t k = (j + 1) & mask; m->slots[k].key; k = (k + 1) & mask) {
        uint32_t home = m->slots[k].hash & mask;
        /* move k back to j if its home is not cyclically within (j, k] */
        bool stays = j < k ? (home > j && home <= k) : (home > j || home <= k);
        if (!stays) {
            m->slots[j] = m->slots[k];
            m->slots[k].key = NULL;
            j = k;
        }
    }
}

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

/* The slots' order is never visible, so the hash may change freely. */
static uint32_t hash_str(const char *s) { return (uint32_t)cv_hash_words(s, strlen(s), 0); }

/* A slot holds its key, the key's hash and the value together: a probe
 * reads one cache line, compares hashes before strings, and growing and
 * deleting never hash a key again. At most half the slots are used, so a
 * lookup of a name that is not there (every new name is one) stops soon. */
static bool grow(cv_strmap *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 16;
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

bool cv_strmap_put(cv_strmap *m, const char *key, uint32_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    uint32_t h = hash_str(key), j = h & (m->cap - 1);
    while (m->slots[j].key) {
        if (m->slots[j].hash == h && strcmp(m->slots[j].key, key) == 0) {
            m->slots[j].val = val;
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (cv_strslot){key, h, val};
    m->n++;
    return true;
}

/* The slot of key, or CARVE_NONE. */
static uint32_t find(const cv_strmap *m, const char *key)
{
    if (!m->cap)
        return CARVE_NONE;
    uint32_t h = hash_str(key), j = h & (m->cap - 1);
    while (m->slots[j].key) {
        if (m->slots[j].hash == h && (m->slots[j].key == key || strcmp(m->slots[j].key, key) == 0))
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

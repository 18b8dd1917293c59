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

static uint64_t hash_str(const char *s) { return cv_hash_bytes(s, strlen(s), 0); }

static bool grow(cv_strmap *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 16;
    const char **keys = cv_malloc((size_t)cap * sizeof *keys);
    uint32_t *vals = cv_malloc((size_t)cap * sizeof *vals);
    if (!keys || !vals) {
        cv_free(keys);
        cv_free(vals);
        return false;
    }
    memset(keys, 0, (size_t)cap * sizeof *keys);
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        uint32_t j = (uint32_t)hash_str(m->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    cv_free(m->keys);
    cv_free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

bool cv_strmap_put(cv_strmap *m, const char *key, uint32_t val)
{
    if ((m->n + 1) * 4 > m->cap * 3 && !grow(m))
        return false;
    uint32_t j = (uint32_t)hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0) {
            m->vals[j] = val;
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = val;
    m->n++;
    return true;
}

uint32_t cv_strmap_get(const cv_strmap *m, const char *key)
{
    if (!m->cap)
        return CARVE_NONE;
    uint32_t j = (uint32_t)hash_str(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (strcmp(m->keys[j], key) == 0)
            return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return CARVE_NONE;
}

void cv_strmap_free(cv_strmap *m)
{
    cv_free(m->keys);
    cv_free(m->vals);
    memset(m, 0, sizeof *m);
}

void cv_strmap_del(cv_strmap *m, const char *key)
{
    if (!m->cap)
        return;
    uint32_t mask = m->cap - 1, j = (uint32_t)hash_str(key) & mask;
    while (m->keys[j] && strcmp(m->keys[j], key))
        j = (j + 1) & mask;
    if (!m->keys[j])
        return;
    /* backward-shift deletion keeps every probe chain unbroken */
    m->keys[j] = NULL;
    m->n--;
    for (uint32_t k = (j + 1) & mask; m->keys[k]; k = (k + 1) & mask) {
        uint32_t home = (uint32_t)hash_str(m->keys[k]) & mask;
        /* move k back to j if its home is not cyclically within (j, k] */
        bool stays = j < k ? (home > j && home <= k) : (home > j || home <= k);
        if (!stays) {
            m->keys[j] = m->keys[k];
            m->vals[j] = m->vals[k];
            m->keys[k] = NULL;
            j = k;
        }
    }
}

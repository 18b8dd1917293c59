/* test_strmap.c: the string -> id map every name look-up goes through
 * (src/ir/strmap.c), against a plain list searched one key at a time:
 * put, get, add, del, del_if and reserve on keys of every length the hash
 * reads differently (empty, 1-3 bytes, 4-8, 9 and more). */
#include "testlib.h"

#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 3000

/* The reference: keys[i] maps to vals[i] while live[i]. */
typedef struct {
    char *keys[NKEYS];
    uint32_t vals[NKEYS];
    bool live[NKEYS];
} ref;

static uint32_t ref_get(const ref *r, const char *k)
{
    for (int i = 0; i < NKEYS; i++)
        if (r->live[i] && !strcmp(r->keys[i], k))
            return r->vals[i];
    return CARVE_NONE;
}

/* A key of length i % 41, from i and a pattern that shares prefixes and
 * suffixes between keys (what graph value names do). */
static char *make_key(int i)
{
    size_t len = (size_t)(i % 41);
    char *s = malloc(len + 1);
    char digits[16];
    int nd = snprintf(digits, sizeof digits, "%d", i);
    for (size_t j = 0; j < len; j++)
        s[j] = (char)('a' + (j % 7));
    for (int j = 0; j < nd && (size_t)j < len; j++) /* the number at the end: names differ in their tail */
        s[len - 1 - (size_t)j] = digits[nd - 1 - j];
    s[len] = 0;
    return s;
}

static void check_all(const cv_strmap *m, const ref *r, const char *when)
{
    int bad = 0;
    uint32_t n = 0;
    for (int i = 0; i < NKEYS; i++) {
        if (r->live[i])
            n++;
        if (cv_strmap_get(m, r->keys[i]) != ref_get(r, r->keys[i]))
            bad++;
    }
    if (bad)
        fprintf(stderr, "%s: %d keys look up wrong\n", when, bad);
    CHECK_INT(bad, 0);
    CHECK_INT(m->n, n);
}

TEST(matches_a_plain_list)
{
    ref *r = calloc(1, sizeof *r);
    cv_strmap m = {0};
    for (int i = 0; i < NKEYS; i++)
        r->keys[i] = make_key(i);
    /* keys of one length that share a key's text are one key: put replaces */
    for (int i = 0; i < NKEYS; i++) {
        uint32_t v = (uint32_t)i * 7u + 1u;
        REQUIRE(cv_strmap_put(&m, r->keys[i], v));
        uint32_t was = ref_get(r, r->keys[i]);
        for (int j = 0; j < i && was != CARVE_NONE; j++)
            if (r->live[j] && !strcmp(r->keys[j], r->keys[i]))
                r->vals[j] = v;
        if (was == CARVE_NONE) {
            r->live[i] = true;
            r->vals[i] = v;
        }
    }
    check_all(&m, r, "after put");
    /* add never replaces, and says what is there */
    for (int i = 0; i < NKEYS; i += 3) {
        uint32_t old = 12345;
        REQUIRE(cv_strmap_add(&m, r->keys[i], 999999u, &old));
        CHECK_INT(old, ref_get(r, r->keys[i]));
    }
    check_all(&m, r, "after add of present keys");
    /* del_if deletes only while the key maps to the value given */
    for (int i = 0; i < NKEYS; i += 2) {
        if (!r->live[i])
            continue;
        cv_strmap_del_if(&m, r->keys[i], r->vals[i] + 1); /* wrong value: stays */
        if (i % 4 == 0) {
            cv_strmap_del_if(&m, r->keys[i], r->vals[i]);
        } else {
            char *copy = cv_strdup(r->keys[i]); /* del finds keys by text, not by pointer */
            cv_strmap_del(&m, copy);
            cv_free(copy);
        }
        r->live[i] = false;
    }
    check_all(&m, r, "after deleting half");
    /* add puts what is absent */
    for (int i = 0; i < NKEYS; i += 2) {
        if (ref_get(r, r->keys[i]) != CARVE_NONE)
            continue;
        uint32_t old = 12345;
        REQUIRE(cv_strmap_add(&m, r->keys[i], (uint32_t)i, &old));
        CHECK_INT(old, CARVE_NONE);
        r->live[i] = true;
        r->vals[i] = (uint32_t)i;
    }
    check_all(&m, r, "after adding them back");
    /* reserve keeps every key and makes room: no growing up to its count */
    REQUIRE(cv_strmap_reserve(&m, 4 * NKEYS));
    uint32_t cap = m.cap;
    CHECK((uint64_t)cap * 3 >= (uint64_t)4 * NKEYS * 4);
    check_all(&m, r, "after reserve");
    CHECK(cv_strmap_get(&m, "not a key of the map") == CARVE_NONE);
    cv_strmap_free(&m);
    CHECK(cv_strmap_get(&m, "a") == CARVE_NONE);
    for (int i = 0; i < NKEYS; i++)
        free(r->keys[i]);
    free(r);
}

/* The hash reads every byte of a name, whatever its length: two names that
 * differ in one byte anywhere hash apart (else such names would pile up in
 * one probe chain). */
static uint32_t slot_hash(const cv_strmap *m, const char *key)
{
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && !strcmp(m->slots[i].key, key))
            return m->slots[i].hash;
    return 0;
}

TEST(hash_reads_every_byte)
{
    char a[48], b[48];
    int same = 0;
    for (size_t len = 1; len <= 40; len++) {
        memset(a, 'a', len);
        a[len] = 0;
        for (size_t p = 0; p < len; p++) {
            memcpy(b, a, len + 1);
            b[p] = 'b';
            cv_strmap m = {0};
            REQUIRE(cv_strmap_put(&m, a, 1) && cv_strmap_put(&m, b, 2));
            if (slot_hash(&m, a) == slot_hash(&m, b)) {
                fprintf(stderr, "length %zu: byte %zu does not change the hash\n", len, p);
                same++;
            }
            CHECK_INT(cv_strmap_get(&m, a), 1);
            CHECK_INT(cv_strmap_get(&m, b), 2);
            cv_strmap_free(&m);
        }
    }
    CHECK_INT(same, 0);
}

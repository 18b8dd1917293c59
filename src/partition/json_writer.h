/* json_writer.h: the streaming JSON writer of the lowering report
 * (report.c): strings escaped, names written once and copied after, keys
 * pre-made, numbers without printf and in the "C" locale. Here: the
 * writer's state and what the hot path needs inline (a name, a key, a
 * bracket, without a call); json_writer.c: the rest (escaping, the
 * reason memo, run-time keys, numbers). */
#ifndef CARVE_JSON_WRITER_H
#define CARVE_JSON_WRITER_H

#include "../ir/ir.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The writer's state. Streaming: the report of a 100,000-node model is
 * built in a few milliseconds (a tree of cJSON objects took 30x longer). */
typedef struct {
    cv_buf b;
    bool first; /* no comma before the next member */
    /* the last reason message written, and where its JSON is in b: most
     * nodes on CPU share their message with the one before */
    const char *memo;
    size_t memo_at, memo_n;
    /* where each name already written is in b, as offset << 24 | length of
     * its quoted JSON: nodes' names at [0, n_nodes), then values' (a name
     * is written a few times over: as a node's output, then as inputs, in
     * the partitions' lists); 0 while not written yet */
    uint64_t *at;
    uint32_t n_nodes, n_values;
    /* the same for strings met by pointer (ops, graph names, codes):
     * direct-mapped on the address */
    struct {
        const char *s;
        uint64_t at;
    } seen[64];
} cv_jw;

/* json_writer.c: a string of len bytes, quoted and escaped. */
void cv_jstr_n(cv_jw *w, const char *s, size_t len);
/* jconst's miss: s written, and kept in slot h of w->seen. */
void cv_jconst_new(cv_jw *w, const char *s, size_t h);
/* jstr of a reason message: the same text as the last one is copied from
 * where it was written. */
void cv_jstr_memo(cv_jw *w, const char *s);
/* A key known only at run time (a reason code, a guard name: nothing to
 * escape), with the comma before it and the colon after. */
void cv_jkey(cv_jw *w, const char *k);
/* A whole number in decimal (minus: negative, a its magnitude), without
 * printf. */
void cv_jint(cv_jw *w, uint64_t a, bool minus);
/* A number as "%.6g" prints it in the "C" locale, whatever the host
 * program set (a decimal comma would break the JSON). */
void cv_jnum(cv_jw *w, double v);

/* Whether the eight bytes at s hold one JSON must escape: bytes below
 * 0x20, '"' and '\\' found with word arithmetic. */
static inline bool word_escape(uint64_t x)
{
    const uint64_t lo = 0x0101010101010101ull, hi = 0x8080808080808080ull;
    uint64_t q = x ^ (lo * '"'), b = x ^ (lo * '\\');
    return (((x - lo * 0x20) & ~x & hi) | ((q - lo) & ~q & hi) | ((b - lo) & ~b & hi)) != 0;
}

/* The eight bytes at p, those from n on counted as 'a' (n < 8). */
static inline uint64_t word_head(const char *p, size_t n)
{
    /* two shifts: n = 0 keeps none (a shift by 64 is undefined) */
    uint64_t x, keep = ~(uint64_t)0 >> 1 >> (63 - 8 * n);
    memcpy(&x, p, 8);
    return (x & keep) | (0x6161616161616161ull & ~keep);
}

/* A string of up to 16 bytes that needs no escaping (nearly every name),
 * without a call: copied, then the copy checked in two words (the
 * buffer's bytes may be read past the end, the string's may not). False:
 * not such a string, nothing written. */
static inline __attribute__((always_inline)) bool jstr_short(cv_jw *w, const char *s, size_t len)
{
    size_t k = w->b.n;
    if (len > 16 || k + len + 19 > w->b.cap)
        return false;
    char *o = w->b.s + k;
    cv_copy_small(o + 1, s, len);
    uint64_t x0, x1 = 0x6161616161616161ull;
    if (len < 8) {
        x0 = word_head(o + 1, len);
    } else {
        memcpy(&x0, o + 1, 8);
        if (len < 16)
            x1 = word_head(o + 9, len - 8);
        else
            memcpy(&x1, o + 9, 8);
    }
    if (word_escape(x0) || word_escape(x1))
        return false;
    o[0] = '"';
    o[len + 1] = '"';
    o[len + 2] = 0;
    w->b.n = k + len + 2;
    return true;
}

/* s, quoted and escaped. */
static inline __attribute__((always_inline)) void jstr(cv_jw *w, const char *s)
{
    size_t len = strlen(s);
    if (!jstr_short(w, s, len))
        cv_jstr_n(w, s, len);
}

/* A string written before, at `at` (offset << 24 | length): copied from
 * there, already quoted and escaped. */
static inline void jcopy(cv_jw *w, uint64_t at)
{
    size_t off = (size_t)(at >> 24), n = (size_t)(at & 0xffffff), k = w->b.n;
    if (k + n + 17 > w->b.cap && !cv_buf_grow(&w->b, n + 16))
        return;
    char *s = w->b.s;
    if (n <= 16 && off + 16 <= k)
        memcpy(s + k, s + off, 16); /* one move: the bytes after it are overwritten next */
    else
        memcpy(s + k, s + off, n);
    s[k + n] = 0;
    w->b.n = k + n;
}

/* jstr, noting where the string went in *at (unless it is too long). */
static inline __attribute__((always_inline)) void jstr_at(cv_jw *w, const char *s, uint64_t *at)
{
    size_t from = w->b.n;
    jstr(w, s);
    size_t n = w->b.n - from;
    if (!w->b.failed && n < ((size_t)1 << 24))
        *at = (uint64_t)from << 24 | n;
}

/* A node's name, a value's name (CARVE_NONE: ""), a string seen by its
 * address: copied from where it was first written. */
static inline void jnode(cv_jw *w, const carve_model *m, carve_node_id id)
{
    if (id < w->n_nodes && w->at[id])
        jcopy(w, w->at[id]);
    else if (id < w->n_nodes)
        jstr_at(w, m->nodes[id].name, &w->at[id]);
    else
        jstr(w, m->nodes[id].name);
}
static inline void jvalue(cv_jw *w, const carve_model *m, carve_value_id v)
{
    uint64_t *at = v < w->n_values ? &w->at[(size_t)w->n_nodes + v] : NULL;
    if (v == CARVE_NONE)
        cv_jstr_n(w, "", 0);
    else if (at && *at)
        jcopy(w, *at);
    else if (at)
        jstr_at(w, m->values[v].name, at);
    else
        jstr(w, m->values[v].name);
}
static inline __attribute__((always_inline)) void jconst(cv_jw *w, const char *s)
{
    size_t h = (size_t)(((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ull) >> 58); /* Fibonacci hashing: 64 slots */
    if (w->seen[h].s == s)
        jcopy(w, w->seen[h].at);
    else
        cv_jconst_new(w, s, h);
}

static inline void jsep(cv_jw *w)
{
    if (!w->first)
        cv_buf_put(&w->b, ",", 1);
    w->first = false;
}
/* A key with its quotes, colon and the comma before it, pre-made: `,"k":`
 * (n bytes; the comma is left out after an opening bracket). Keys are
 * carve's own names: nothing in them needs escaping. */
static inline __attribute__((always_inline)) void jkey_n(cv_jw *w, const char *k, size_t n)
{
    if (!cv_buf_reserve(&w->b, n))
        return;
    size_t f = w->first;
    memcpy(w->b.s + w->b.n, k + f, n); /* n bytes whatever f: one move (k has its NUL after them) */
    w->b.n += n - f;
    w->b.s[w->b.n] = 0;
    w->first = false;
}
#define JKEY(w, k) jkey_n((w), ",\"" k "\":", sizeof(k) + 3)
#define JKEY_OPEN(w, k, c) (jkey_n((w), ",\"" k "\":" c, sizeof(k) + 4), (w)->first = true)
static inline void jopen(cv_jw *w, char c)
{
    cv_buf_put(&w->b, &c, 1);
    w->first = true;
}
static inline void jclose(cv_jw *w, char c)
{
    cv_buf_put(&w->b, &c, 1);
    w->first = false;
}
/* Members with literal keys. */
#define jkv_str(w, k, v) (JKEY(w, k), jstr((w), (v)))
#define jkv_num(w, k, v) (JKEY(w, k), cv_jnum((w), (v)))

/* A count as cv_jnum writes it (a million and more in "%.6g"). */
static inline void jcount(cv_jw *w, uint32_t x)
{
    if (x < 1000000)
        cv_jint(w, x, false);
    else
        cv_jnum(w, x);
}

#endif

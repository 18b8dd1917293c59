/* json_writer.c: the streaming JSON writer's calls that are not inline
 * (json_writer.h has the writer's state and its inline hot path): strings
 * that need escaping, the reason memo, run-time keys, numbers in the "C"
 * locale. Used by the lowering report (report.c). */
#define _POSIX_C_SOURCE 200809L
#include "json_writer.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>

void cv_jstr_n(cv_jw *w, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    /* Names almost never need escaping: the string is copied, then the
     * copy checked eight bytes a step (as jstr_short does). */
    if (!cv_buf_reserve(&w->b, len + 10))
        return;
    char *o = w->b.s + w->b.n;
    o[0] = '"';
    cv_copy_small(o + 1, s, len);
    bool esc = false;
    for (size_t i = 0; i < len && !esc; i += 8) {
        uint64_t x;
        memcpy(&x, o + 1 + i, 8);
        if (len - i < 8)
            x = word_head(o + 1 + i, len - i);
        esc = word_escape(x);
    }
    if (!esc) {
        o[len + 1] = '"';
        o[len + 2] = 0;
        w->b.n += len + 2;
        return;
    }
    if (!cv_buf_reserve(&w->b, 6 * len + 2)) /* room for the worst case: one pass, no checks */
        return;
    o = w->b.s + w->b.n;
    *o++ = '"';
    const unsigned char *p = (const unsigned char *)s, *end = p + len, *run = p;
    for (; p < end; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\') /* not '"', '\\' nor a control: as it is */
            continue;
        memcpy(o, run, (size_t)(p - run)); /* a run that needs no escaping, in one copy */
        o += p - run;
        run = p + 1;
        if (*p == '"' || *p == '\\') {
            *o++ = '\\';
            *o++ = (char)*p;
        } else {
            memcpy(o, "\\u00", 4);
            o[4] = hex[*p >> 4];
            o[5] = hex[*p & 15];
            o += 6;
        }
    }
    memcpy(o, run, (size_t)(p - run));
    o += p - run;
    *o++ = '"';
    *o = 0;
    w->b.n = (size_t)(o - w->b.s);
}

void cv_jconst_new(cv_jw *w, const char *s, size_t h)
{
    uint64_t at = 0;
    jstr_at(w, s, &at);
    w->seen[h].s = at ? s : NULL;
    w->seen[h].at = at;
}

void cv_jstr_memo(cv_jw *w, const char *s)
{
    if (w->memo && w->memo_n && !strcmp(s, w->memo) && cv_buf_reserve(&w->b, w->memo_n)) {
        memcpy(w->b.s + w->b.n, w->b.s + w->memo_at, w->memo_n);
        w->b.n += w->memo_n;
        w->b.s[w->b.n] = 0;
        return;
    }
    size_t at = w->b.n;
    jstr(w, s);
    w->memo = s;
    w->memo_at = at;
    w->memo_n = w->b.n - at;
}

void cv_jkey(cv_jw *w, const char *k)
{
    jsep(w);
    jstr(w, k);
    cv_buf_put(&w->b, ":", 1);
}

/* Numbers in the "C" locale whatever the host program set (a decimal comma
 * would break the JSON): uselocale() changes the calling thread only. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

void cv_jint(cv_jw *w, uint64_t a, bool minus)
{
    static const char two[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
    if (!cv_buf_reserve(&w->b, 24))
        return;
    char *o = w->b.s + w->b.n;
    if (minus)
        *o++ = '-';
    if (a < 100) { /* levels, partition indices: most numbers here */
        o[0] = two[2 * a + (a < 10)], o[1] = two[2 * a + 1], o[1 + (a >= 10)] = 0;
        w->b.n = (size_t)(o + 1 + (a >= 10) - w->b.s);
        return;
    }
    size_t nd = 3; /* digits: written back to front, straight into the buffer */
    for (uint64_t t = 1000; nd < 20 && a >= t; t *= 10)
        nd++;
    char *p = o + nd;
    for (; a >= 100; a /= 100) {
        p -= 2;
        memcpy(p, two + 2 * (a % 100), 2);
    }
    if (a >= 10)
        memcpy(p - 2, two + 2 * a, 2);
    else
        p[-1] = (char)('0' + a);
    o[nd] = 0;
    w->b.n = (size_t)(o + nd - w->b.s);
}

void cv_jnum(cv_jw *w, double v)
{
    /* whole numbers under a million (counts, levels, indices: nearly every
     * number here) print as "%.6g" prints them, without printf */
    if (v > -1e6 && v < 1e6 && v == (double)(int32_t)v && (v != 0 || !signbit(v))) {
        int32_t x = (int32_t)v;
        cv_jint(w, x < 0 ? (uint32_t)0 - (uint32_t)x : (uint32_t)x, x < 0);
        return;
    }
    pthread_once(&c_locale_once, make_c_locale);
    locale_t old = c_locale ? uselocale(c_locale) : (locale_t)0;
    cv_buf_printf(&w->b, "%.6g", v);
    if (old)
        uselocale(old);
}

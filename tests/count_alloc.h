/* count_alloc.h: the tests' counting allocator, installed with
 * carve_set_allocator(&t_counting). It counts allocations and live blocks,
 * can fail the k-th allocation (or every one from the k-th on), sums the
 * bytes asked for, and keeps the blocks of at least T_ALLOC_BIG bytes so a
 * test can ask whether a pointer starts one. Used by test_alloc_fail.c,
 * test_export.c and ops/test_runtime.c; plain C, no test runner. */
#ifndef CARVE_TEST_COUNT_ALLOC_H
#define CARVE_TEST_COUNT_ALLOC_H

#include "carve.h"

#include <stdbool.h>
#include <stddef.h>

#define T_ALLOC_BIG ((size_t)512 << 10)

typedef struct t_alloc_state {
    long count;   /* allocations (and reallocations) since the test reset it */
    long fail_at; /* that allocation fails; 0: none fails */
    bool onward;  /* fail every allocation from fail_at on, not just that one */
    long live;    /* blocks allocated and not freed */
    long big;     /* allocations of T_ALLOC_BIG bytes or more since reset */
    size_t bytes; /* bytes asked for by allocations and reallocations */
} t_alloc_state;

/* The counters; tests set and read them directly. */
extern t_alloc_state t_alloc;
extern const carve_allocator t_counting;

/* p is the start of a live block of T_ALLOC_BIG bytes or more. */
bool t_alloc_is_big(const void *p);

#endif

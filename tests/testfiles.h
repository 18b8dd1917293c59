/* testfiles.h: whole-file helpers of the test programs, apart from
 * testlib.c (which holds the runner's main) so that programs with a main of
 * their own (tests/fuzz_replay.c) link them too. Plain C and libc. */
#ifndef CARVE_TESTFILES_H
#define CARVE_TESTFILES_H

#include <stddef.h>

/* Writes n bytes to path; aborts (naming the path) when it cannot. */
void t_write_file(const char *path, const void *data, size_t n);
/* Whole file, malloc'd (NUL-terminated beyond *n); NULL if unreadable or
 * out of memory. */
void *t_read_file(const char *path, size_t *n);
/* Number of entries in a folder (without . and ..), -1 if unreadable. */
int t_dir_count(const char *dir);

#endif

/* files.h: how carve reads and writes files (docs/files.md). The bottom
 * layer beside src/ir/: it uses only the context's error (ir/ctx.c).
 *
 * Inputs: opened without blocking, refused unless a regular file, mapped.
 * Outputs: a set (carve_outputs, public) of files a command writes; each is
 * written to a temporary `.NAME.carve-tmp.PID.RAND` in its folder and all
 * are renamed into place only when every one was written and synced. */
#ifndef CARVE_IO_FILES_H
#define CARVE_IO_FILES_H

#include "carve.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* "a FIFO", "a directory", "a character device", ... for messages. */
const char *cv_file_kind(mode_t mode);

/* A read-only input, mapped (or empty). */
typedef struct cv_input {
    const uint8_t *data;
    size_t size;
    void *map;
    size_t map_len;
} cv_input;

/* Opens path (O_NONBLOCK, so a FIFO never blocks; cleared after the check),
 * refuses anything that is not a regular file with a message naming the
 * path and what it is, and refuses files over max_bytes (0: no limit)
 * before reading a byte. `what` starts messages ("target profile"); NULL
 * for none. On success *fd_out is an open descriptor (caller closes). */
carve_status cv_input_open(carve_ctx *ctx, const char *path, const char *what, uint64_t max_bytes, int *fd_out,
                           uint64_t *size_out);
/* cv_input_open + mmap of the whole file. */
carve_status cv_input_map(carve_ctx *ctx, const char *path, const char *what, uint64_t max_bytes, cv_input *in);
void cv_input_unmap(cv_input *in);
/* Maps every page of in at once, for a reader about to read every byte:
 * one call instead of a fault per few pages. */
void cv_input_populate(const cv_input *in);

/* Internal side of carve_outputs (the public calls are in carve.h). */
typedef struct carve_outputs carve_outputs;
/* A new output: checks path (see carve_outputs_add_bytes) and opens its
 * temporary; the returned stream is the caller's to write, never to close.
 * `what` names it in messages ("report", "external data"). NULL: error set. */
FILE *cv_outputs_open(carve_outputs *o, const char *path, const char *what);
carve_ctx *cv_outputs_ctx(const carve_outputs *o);
/* An output could not be completed: the set will not commit. */
void cv_outputs_fail(carve_outputs *o);
/* What is written so far of the output opened last (stream f) starts going
 * to the disk now, while the command computes the rest or the next output,
 * so the fsync of the commit finds it there (errors are the commit's to
 * report). Called when an output is complete, and every few megabytes of a
 * big one. */
void cv_outputs_written(carve_outputs *o, FILE *f);

#endif

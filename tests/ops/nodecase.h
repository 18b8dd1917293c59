/* nodecase.h: what the programs that run ONNX backend node cases share
 * (tests/ops/nodetest.c on the reference kernels, tests/partition/nodesweep.c
 * on every lowered target): the known-failures lists, reading a case's
 * tensors as its model declares them, and comparing values with a tolerance. */
#ifndef CARVE_TESTS_NODECASE_H
#define CARVE_TESTS_NODECASE_H

#include "runtime/runtime.h"

#include <stdbool.h>
#include <stddef.h>

/* Reads a known-failures file (one case name a line; '#' lines and blank
 * lines skipped; the name ends at the first blank); exits 2 naming prog
 * when it cannot read it. May be called several times. */
void nc_known_load(const char *prog, const char *file);
/* name (a case folder's name, or a path ending in one) is listed. */
bool nc_known_has(const char *name);
void nc_known_free(void);

/* Reads path into *out as value v of m declares it (bfloat16 data that
 * ONNX 1.12 stores as uint16 taken as bfloat16). false with the message in
 * why when it cannot. */
bool nc_read_value(carve_ctx *ctx, const carve_model *m, carve_value_id v, const char *path, cv_val **out, char *why,
                   size_t whysz);
/* The main graph's inputs of test set folder sd (input_K.pb; a missing one
 * is an optional input left out) into in[]. */
bool nc_read_inputs(carve_ctx *ctx, const carve_model *m, const char *sd, cv_val **in, char *why, size_t whysz);

/* The tolerance for elements of dtype dt: |got - want| <= atol + rtol * |want|. */
typedef void nc_tol_fn(const void *arg, carve_dtype dt, double *atol, double *rtol);

/* got against want: kind, dtype, shape, then elements (strings and integers
 * exact; floats and complex parts within the tolerance, NaN equal to NaN,
 * infinities equal to themselves). false with the first difference in why. */
bool nc_same(const cv_val *got, const cv_val *want, nc_tol_fn *tol, const void *arg, char *why, size_t whysz);

#endif

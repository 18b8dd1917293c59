/* opstest.h: helpers shared by the op tests in tests/ops/test_*.c. */
#ifndef CARVE_OPSTEST_H
#define CARVE_OPSTEST_H

#include "passes/passes.h"

/* Records a check; prints the failure with file:line. */
#define OT_CHECK(cond, ...) ot_check((cond), __FILE__, __LINE__, __VA_ARGS__)
void ot_check(bool ok, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A tensor of seeded uniform random values in [lo, hi) (ints rounded). */
cv_val *ot_random(carve_dtype dtype, int rank, const int64_t *dims, uint32_t seed, double lo, double hi);
/* |a-b| <= atol + rtol*|b| elementwise, same dtype and shape. */
bool ot_close(const cv_val *a, const cv_val *b, double atol, double rtol, char *why, size_t whysz);
/* Runs the main graph; outputs[] receive references. */
carve_status ot_run(carve_model *m, cv_val **inputs, cv_val **outputs);
/* Number of nodes of op type op in graph g (its own, not its subgraphs'). */
uint32_t ot_count_op(const carve_model *m, carve_graph_id g, const char *op);
/* A copy of m through ONNX bytes (as a user's file would arrive), on m's
 * context; NULL (the message on the context) when saving or loading fails. */
carve_model *ot_clone(carve_model *m);
/* got[i] against want[i] for i < n, each within atol/rtol; a difference is
 * reported as "<what>: output <i> <how>: <why>". */
void ot_check_outputs(cv_val **got, cv_val **want, uint32_t n, double atol, double rtol, const char *what,
                      const char *how);
/* The decomposition check every composite op gets: runs the model, replaces
 * node n by its decomposition, checks the model still verifies, that every
 * piece is named "<node>/..." and is a core op, that values keep known
 * types after inference, runs again and compares all outputs. */
void ot_check_decomposition(carve_model *m, carve_node_id n, cv_val **inputs, double atol, double rtol);
/* Prints "N passed, N failed" and returns the exit code. */
int ot_finish(void);

#endif

/*
 * dntest.h: the oneDNN backend's test harness. A test builds a small model
 * with carve.h's graph API (inputs filled from a seed, constants too),
 * then either runs the backend's callbacks on it directly (supports_node on
 * each node, compile with the main graph as the partition body, run) and
 * compares with carve_model_run's reference results under a tolerance
 * (docs/onednn.md#tolerances), or checks a refusal's code and message.
 */
#ifndef CARVE_TESTS_DNTEST_H
#define CARVE_TESTS_DNTEST_H

#include "carve.h"
#include "carve_backend.h"
#include "testlib.h"

const carve_backend *cv_onednn_backend(void);

typedef struct dt {
    carve_ctx *ctx;
    carve_model *m;
    carve_graph_id g;
    carve_tensor *in[16];
    int n_in;
    unsigned seed;
    int n_names;
} dt;

/* Tolerance: |got - want| <= atol + rtol * |want|. */
typedef struct dt_tol {
    double atol, rtol;
} dt_tol;

/* A list of value ids for dt_node: IDS(a, b, c). */
#define IDS(...) ((const carve_value_id[]){__VA_ARGS__})
#define DT_TOL_ELT ((dt_tol){1e-5, 1e-5})  /* element-wise, pooling, layout */
#define DT_TOL_ACC ((dt_tol){1e-4, 1e-4})  /* accumulating ops: conv, matmul, norms, softmax */

void dt_init(dt *t, int64_t opset, unsigned seed);
void dt_free(dt *t);
/* A runtime input of dims, uniform in [lo, hi). */
carve_value_id dt_input(dt *t, const char *name, int rank, const int64_t *dims, float lo, float hi);
/* A constant float32 initializer uniform in [lo, hi). */
carve_value_id dt_const(dt *t, const char *name, int rank, const int64_t *dims, float lo, float hi);
carve_value_id dt_const_data(dt *t, const char *name, carve_dtype dtype, int rank, const int64_t *dims,
                             const void *data, size_t nbytes);
carve_value_id dt_const_i64(dt *t, const char *name, size_t n, const int64_t *v);
carve_value_id dt_const_f32(dt *t, const char *name, size_t n, const float *v);
/* A node with n_out outputs; returns the node, outputs via carve_node_output. */
carve_node_id dt_node(dt *t, const char *op, size_t n_in, const carve_value_id *ins, size_t n_out);
carve_value_id dt_op1(dt *t, const char *op, carve_value_id x);
carve_value_id dt_op2(dt *t, const char *op, carve_value_id a, carve_value_id b);
void dt_output(dt *t, carve_value_id v);
/* Infers types and shapes (must succeed). */
bool dt_finish(dt *t);

/* A runtime integer input (uint8 / int8) of dims, uniform in [lo, hi], or
 * (extreme) only lo and hi. */
carve_value_id dt_input_int(dt *t, const char *name, carve_dtype dtype, int rank, const int64_t *dims, int lo, int hi,
                            bool extreme);
/* Every node supported, compiled and run through oneDNN: want gets the
 * reference's outputs, got oneDNN's (the caller frees both, set or not). */
/* Compiles t's graph as one partition named NAME through the oneDNN backend:
 * its status; *h the handle (NULL when refused, the caller releases it), *ref
 * a new refusal the caller frees. */
carve_status dt_compile(dt *t, const char *name, void **h, carve_backend_refusal **ref);
bool dt_run(dt *t, carve_tensor **want, carve_tensor **got, const char *file, int line);
/* Every node supported, compiled and run through oneDNN; outputs match the
 * reference. */
bool dt_check_run(dt *t, dt_tol tol, const char *file, int line);
#define DT_RUN(t, tol) dt_check_run((t), (tol), __FILE__, __LINE__)
/* supports_node on node n refuses with code and a message holding text. */
bool dt_check_refused(dt *t, carve_node_id n, const char *code, const char *text, const char *file, int line);
#define DT_REFUSED(t, n, code, text) dt_check_refused((t), (n), (code), (text), __FILE__, __LINE__)

/* A Resize of x (4-D) by s on the two spatial axes (scales input), with
 * mode and, when not NULL, coordinate_transformation_mode and nearest_mode. */
carve_node_id dt_resize(dt *t, carve_value_id x, const char *mode, const char *ct, const char *nm, float s);

#endif

/* k_shape.h: helpers shared by the shape family's files (k_shape.c,
 * k_reshape.c, k_generate.c, k_layout.c, k_pad.c, k_index.c, d_layout.c):
 * element sizes for the byte-moving kernels, the 4-bit and string rules,
 * the strided copy engine, integer-list inputs and inference on symbolic
 * dims. */
#ifndef CARVE_K_SHAPE_H
#define CARVE_K_SHAPE_H

#include "ops.h"

/* ---------------------------------------------------------------- kernels */

/* Bytes per element for kernels that move elements without looking at
 * them. Strings move as pointers (the output then takes copies with
 * sh_dup_strings); 4-bit types give 0: they go through sh_unpacked. */
size_t sh_esize(carve_dtype t);
bool sh_is4(carve_dtype t);
/* Runs fn with every 4-bit input unpacked to one byte per element (int4 to
 * int8 sign-extended, uint4 and float4 to uint8) and packs back every output
 * of the carrier dtype. Kernels call it first thing when an input is 4-bit. */
carve_status sh_unpacked(cv_kctx *k, cv_kernel_fn fn, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out);
bool sh_any4(cv_val **in, uint32_t n_in);
/* A string tensor whose slots were filled with pointers borrowed from the
 * inputs (or NULL for "") gets copies of its own, allocated with cv_malloc.
 * On NOMEM every slot not yet copied is set to NULL (so cv_val_unref frees
 * only owned strings) and false is returned. */
bool sh_dup_strings(cv_val *v);
/* A kernel's last step: *out = v, a string tensor first given its own
 * copies (sh_dup_strings); on NOMEM v is freed and the error reported. */
carve_status sh_finish(cv_kctx *k, cv_val *v, cv_val **out);
/* Strings read as "" when NULL; used by kernels comparing strings. */
const char *sh_str(const cv_val *v, size_t i);

/* Copies into dst, dense in row-major order of dims, the elements
 * src[sum i_k * st_k] (strides in elements; 0 broadcasts, negative walks
 * backwards). Unit dims are dropped, mergeable dims merged; contiguous runs
 * are memcpy'd, broadcast blocks replicated, transposes done in tiles. */
void sh_copy_nd(void *dst, const void *src, int rank, const int64_t *dims, const int64_t *st, size_t es);
/* Fills n elements of es bytes with the element at one. */
void sh_fill(void *dst, const void *one, size_t n, size_t es);
/* Row-major strides (elements) of dims. */
void sh_strides(int rank, const int64_t *dims, int64_t *st);
/* A new output of x's dtype, filled by sh_copy_nd from x's data viewed with
 * the given strides (elements) starting at element `base`. */
carve_status sh_strided_out(cv_kctx *k, const cv_val *x, int rank, const int64_t *dims, const int64_t *st,
                            size_t base, cv_val **out);
/* DepthToSpace/SpaceToDepth's 6-D view, shared by the kernels (k_layout.c)
 * and the decompositions (d_layout.c): whether the mode is DCR (*ok false
 * when it is neither DCR nor CRD), and the permutation of the view. */
bool sh_space_dcr(const carve_model *m, carve_node_id n, int64_t opset, bool *ok);
const int *sh_space_perm(bool to_space, bool dcr);

/* axis in [-rank, rank) mapped to [0, rank); -1 when out of range. */
int sh_axis(int64_t axis, int rank);
/* Attribute 'axis' (default dflt) mapped to [0, rank), or -1 with the
 * reason in why ("axis 5 is out of range for <of> 3"), so a kernel and its
 * inference say the same. */
int sh_axis_attr(const carve_model *m, carve_node_id n, int64_t dflt, int rank, const char *of, char *why,
                 size_t whysz);
/* Product of dims[from, to). */
size_t sh_span(const int64_t *dims, int from, int to);
/* "[2,3,4]" into buf. */
const char *sh_dims_str(char *buf, size_t sz, int rank, const int64_t *dims);
/* Reads an integer tensor of rank 0 or 1 (a shape, axes, pads...) into
 * v[0..*n). `what` names it in errors ("input 1 'shape'"). */
carve_status sh_ints(cv_kctx *k, const cv_val *t, const char *what, int64_t *v, size_t max, size_t *n);
/* Scalar (or one-element) integer input as int64. */
carve_status sh_scalar_i64(cv_kctx *k, const cv_val *t, const char *what, int64_t *v);
/* Normalizes axes in place to [0, rank), rejecting out-of-range and repeated
 * ones. */
carve_status sh_axes(cv_kctx *k, int64_t *axes, size_t n, int rank, const char *what);

/* ---------------------------------------------------------------- inference */

/* Input i's type when it is a tensor, else NULL. */
const cv_type *sh_tin(cv_ictx *c, uint32_t i);
/* "node 'NAME' (OP): <message>" as CARVE_ERR_INVALID. */
/* Known integer values of input i (rank 0 or 1, at most max): false when
 * unknown. */
bool sh_const_ints(cv_ictx *c, uint32_t i, int64_t *v, size_t max, size_t *n);
/* Length of a 1-D input from its type (-1 when unknown). */
int64_t sh_len1(cv_ictx *c, uint32_t i);
static inline carve_dim sh_dk(int64_t v) { return (carve_dim){v, NULL}; }
static inline carve_dim sh_du(void) { return (carve_dim){-1, NULL}; }
/* The same size at run time: equal known values or equal params. */
bool sh_dim_same(carve_dim a, carve_dim b);
/* Product of dims: known when all are; a param times ones keeps it. */
carve_dim sh_dim_prod(const carve_dim *d, int from, int to);
/* Unknown output types for outputs [0, n) (dtype may be CARVE_UNDEFINED). */
carve_status sh_iunknown(cv_ictx *c, uint32_t n, carve_dtype dtype);
/* dtype of input i or CARVE_UNDEFINED. */
carve_dtype sh_idtype(cv_ictx *c, uint32_t i);

#endif /* CARVE_K_SHAPE_H */

/*
 * ops.h: the op library. One table (optable.def) is the source of truth for
 * every op type carve knows: arity, flags (core, composite, pure, data-
 * dependent shape), which inputs decide the output shape by value, the
 * reference kernel, type and shape inference, and the decomposition of
 * composite ops. Kernels live in one file per family (k_*.c), runtime values
 * in src/ops/val.c.
 */
#ifndef CARVE_OPS_H
#define CARVE_OPS_H

#include "../ir/ir.h"

/* ================================================================ values (src/ops/val.c) */

typedef enum cv_val_kind {
    CV_VAL_TENSOR = 0,
    CV_VAL_SEQUENCE, /* items[0..n_items) are tensors of dtype `dtype` */
    CV_VAL_NONE      /* an empty optional */
} cv_val_kind;

/* A value at run time. Reference counted: kernels never modify their inputs;
 * a kernel may return an input as an output with cv_val_ref(). */
typedef struct carve_tensor {
    int refs;
    cv_val_kind kind;
    carve_dtype dtype;
    int rank;
    int64_t dims[CARVE_MAX_RANK];
    size_t nelem;
    size_t nbytes;
    void *data;      /* CARVE_STRING: char *[nelem], each string malloc'd */
    bool borrowed;   /* data belongs to an initializer or a mapping */
    bool optional;   /* wrapped in an optional (Optional op outputs) */
    uint32_t n_items;
    struct carve_tensor **items;
    struct carve_tensor *base; /* a view (cv_val_view): data is base's, held by a reference */
    size_t base_off;           /* a view's first byte in base's data */
} carve_tensor;
typedef carve_tensor cv_val; /* the public carve_tensor is this struct */

/* A zero-filled tensor; NULL on NOMEM or when dims are negative/too large. */
cv_val *cv_val_new(carve_dtype dtype, int rank, const int64_t *dims);
/* The same without the zero fill (strings and 4-bit types are still
 * zeroed), for kernels that write every element of the output. */
cv_val *cv_val_new_uninit(carve_dtype dtype, int rank, const int64_t *dims);
/* Kernel scratch memory, not zeroed: from the run's buffer pool when there
 * is one (src/ops/val.c), else cv_malloc. Free with cv_scratch_free. */
void *cv_scratch_alloc(size_t n);
void cv_scratch_free(void *p);
/* Same shape and dtype as v (zero-filled). */
cv_val *cv_val_like(const cv_val *v);
cv_val *cv_val_like_dtype(const cv_val *v, carve_dtype dtype);
cv_val *cv_val_scalar_f32(float x);
cv_val *cv_val_scalar_i64(int64_t x);
/* Wraps an initializer's data without copying. */
cv_val *cv_val_from_tensor(const cv_tensor *t);
cv_val *cv_val_clone(const cv_val *v);
/* Copies n elements of src from soff to dst at doff (same dtype): strings
 * duplicated, 4-bit types moved nibble by nibble. false on NOMEM. */
bool cv_val_copy_elems(cv_val *dst, size_t doff, const cv_val *src, size_t soff, size_t n);
cv_val *cv_val_sequence(carve_dtype elem, uint32_t n, cv_val **items); /* takes refs of items */
cv_val *cv_val_none(void);
cv_val *cv_val_ref(cv_val *v);
void cv_val_unref(cv_val *v);
/* Same shape, data as v (shares nothing); dims replaced (Reshape & co). */
cv_val *cv_val_reshaped(const cv_val *v, int rank, const int64_t *dims);
/* A view of v's bytes from byte off as a tensor of (rank, dims), holding a
 * reference to their owner; NULL when v cannot be viewed (strings, 4-bit
 * types, initializer bytes: callers copy) or on NOMEM. */
cv_val *cv_val_view(const cv_val *v, int rank, const int64_t *dims, size_t off);

/* Element access through double / int64: slow, for shape-like tensors and
 * generic fallbacks only. float16, bfloat16, float8 and 4-bit types are
 * decoded. */
double cv_val_get_f64(const cv_val *v, size_t i);
int64_t cv_val_get_i64(const cv_val *v, size_t i);
void cv_val_set_f64(cv_val *v, size_t i, double x);
void cv_val_set_i64(cv_val *v, size_t i, int64_t x);
/* A float32 copy of any numeric tensor (for kernels that compute in f32). */
cv_val *cv_val_to_f32(const cv_val *v);
/* Converts a float32 tensor to dtype (round to nearest even for f16/bf16). */
cv_val *cv_val_from_f32(const cv_val *f, carve_dtype dtype);
bool cv_dtype_is_float(carve_dtype t);   /* f16, bf16, f32, f64, f8 */
bool cv_dtype_is_int(carve_dtype t);     /* signed and unsigned ints, 4-bit too */
bool cv_dtype_is_signed(carve_dtype t);

/* float16 / bfloat16 / float8 conversions (src/ops/half.c). */
float cv_f16_to_f32(uint16_t h);
uint16_t cv_f32_to_f16(float f);
float cv_bf16_to_f32(uint16_t h);
uint16_t cv_f32_to_bf16(float f);
float cv_f8_to_f32(uint8_t x, carve_dtype t);
uint8_t cv_f32_to_f8(float f, carve_dtype t, bool saturate);
/* From double, rounded once (no double rounding through float32). */
uint16_t cv_f64_to_f16(double x);
uint16_t cv_f64_to_bf16(double x);
uint8_t cv_f64_to_f8(double x, carve_dtype t, bool saturate);
/* The code of x in float16/bfloat16/float8 type t; *tie tells whether x lay
 * exactly between two codes (Cast's string parsing needs to know). */
uint32_t cv_small_encode(double x, carve_dtype t, bool saturate, bool *tie);

/* Broadcasting (numpy rules). Fails when shapes do not broadcast. */
bool cv_broadcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims);
/* For output element index i, the index into an input of rank r / dims d
 * broadcast to (orank, odims). Precompute strides with cv_bcast_strides(). */
void cv_bcast_strides(int r, const int64_t *d, int orank, const int64_t *odims, int64_t *strides);
size_t cv_nelem(int rank, const int64_t *dims);

/* ================================================================ kernels */

typedef struct cv_kctx cv_kctx;
typedef struct cv_runner cv_runner;

typedef struct cv_epi cv_epi;

typedef struct cv_kctx {
    carve_model *m;
    carve_node_id node;
    int64_t opset;           /* version of the node's domain */
    const cv_runner *run;    /* the runtime running the node; NULL when a pass evaluates it (constant folding) */
    cv_epi *epi;             /* element-wise steps to apply to output 0 as it is made, or NULL (epilogue, below) */
} cv_kctx;

/* What the runtime that runs a node lends its kernel, as functions: the
 * op library stands below the runtime and never calls into it by name.
 * src/runtime/interp.c fills it. */
struct cv_runner {
    void *self;
    /* Runs body g: inputs[i] binds its i-th input, outputs[i] (NULLs)
     * receive references (control-flow kernels). */
    carve_status (*graph)(void *self, carve_graph_id g, cv_val **inputs, cv_val **outputs);
    /* Runs a Delegate node through the backend that compiled it
     * (src/runtime/delegate.c). */
    carve_status (*delegate)(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out);
    uint64_t *rng_seed; /* random ops without a seed: the run's, advanced per node */
};

/* in[i] is NULL for an omitted optional input. The kernel sets out[i] for
 * every output it produces (out[i] may stay NULL for an omitted optional
 * output). Inputs are never modified. */
typedef carve_status (*cv_kernel_fn)(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out);

/* The one shape of a per-node error: "node 'N' (Op): <prefix><fmt>" with
 * status code on the model's context; cv_kerr, cv_ierr and the
 * decompositions' errors (rd_unsupported) are it. */
carve_status cv_node_err(const carve_model *m, carve_node_id node, carve_status code, const char *prefix,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A kernel's error: "node 'NAME' (OP): <fmt>", CARVE_ERR_INVALID. */
#define cv_kerr(k, ...) cv_node_err((k)->m, (k)->node, CARVE_ERR_INVALID, "", __VA_ARGS__)
carve_status cv_knomem(cv_kctx *k);
/* "[2,3,4]" into buf, cut short when it does not fit; returns buf (kutil.c). */
const char *cv_shape_str(char *buf, size_t n, int rank, const int64_t *dims);
/* A kernel's last step: s == CARVE_OK sets *out = y, anything else frees y;
 * returns s. */
carve_status cv_kout(carve_status s, cv_val *y, cv_val **out);

/* Attribute readers with defaults. */
int64_t cv_attr_i(const carve_model *m, carve_node_id n, const char *name, int64_t dflt);
float cv_attr_f(const carve_model *m, carve_node_id n, const char *name, float dflt);
/* NUL-terminated copy is not made: returns the arena string (strings set by
 * ONNX have no NULs in practice; len via carve_node_attr_string). */
const char *cv_attr_s(const carve_model *m, carve_node_id n, const char *name, const char *dflt);
/* Count of an INTS/FLOATS/STRINGS attribute, -1 when absent. */
int cv_attr_ints(const carve_model *m, carve_node_id n, const char *name, const int64_t **v);
int cv_attr_floats(const carve_model *m, carve_node_id n, const char *name, const float **v);
const cv_tensor *cv_attr_t(const carve_model *m, carve_node_id n, const char *name);
carve_graph_id cv_attr_g(const carve_model *m, carve_node_id n, const char *name);

/* ================================================================ epilogue (k_epilogue.c)
 *
 * A chain of element-wise float32 ops the runtime asks a Conv, MatMul or
 * Gemm kernel to apply to its output while each tile is still in cache,
 * instead of one pass over memory per op (docs/performance.md, "Runtime").
 * Each step computes exactly what the op's own kernel computes, element by
 * element, in the same order: the fused output is bit-identical. A step
 * reads registers (earlier values of the chain; register 0 is the output
 * tile itself) and external operands (tensors the runtime binds: scalars,
 * per-axis vectors, same-shape tensors). A kernel that cannot apply it
 * (another dtype, a broadcast that is none of those) leaves `applied`
 * false and the runtime runs the ops one by one. */

enum { CV_EPI_MAX = 12, CV_EPI_REGS = 4, CV_EPI_EXT = 2 * CV_EPI_MAX };
typedef enum {
    CV_EPI_ADD, CV_EPI_SUB, CV_EPI_MUL, CV_EPI_DIV,
    CV_EPI_RELU, CV_EPI_LEAKYRELU, CV_EPI_CLIP, CV_EPI_HARDSIGMOID, CV_EPI_HARDSWISH, CV_EPI_SIGMOID,
    /* merged by cv_epi_bind (several steps in one loop, same floats); in[1..] constant along a run:
     * AFFINE x * in1 + in2; HSWISHD (x * clip(x + in1, a, b)) / in2, the HardSwish spelled out;
     * AFFINE_HSWISHD HSWISHD (with in3, in4) of AFFINE; ..._AFFINE then AFFINE (in5, in6) of that */
    CV_EPI_AFFINE, CV_EPI_HSWISHD, CV_EPI_AFFINE_HSWISHD, CV_EPI_AFFINE_HSWISHD_AFFINE
} cv_epi_op;

/* An operand: a register (>= 0), external operand -1 - e, or CV_EPI_NONE. */
#define CV_EPI_NONE INT8_MIN
typedef struct cv_epi_step {
    uint8_t op;          /* cv_epi_op */
    int8_t in[7];        /* binary: in[0] op in[1]; unary: in[0]; Clip: in[1], in[2] its bounds (or NONE) */
    int8_t dst;          /* register written */
    float a, b;          /* LeakyRelu/HardSigmoid alpha (beta); Clip's bounds once bound */
} cv_epi_step;

typedef struct cv_epi_ext {
    const cv_val *v;     /* bound by the runtime */
    int axis;            /* by cv_epi_bind: -1 scalar, -2 same shape, else the one axis it varies along */
    size_t inner, len;   /* that axis: elements after it in the output, its length */
} cv_epi_ext;

struct cv_epi {
    uint32_t n_steps, n_ext;
    cv_epi_step step[CV_EPI_MAX];
    cv_epi_ext ext[CV_EPI_EXT];
    size_t bound_n;      /* output elements, by cv_epi_bind */
    bool applied;        /* set by the kernel that applied it */
};

/* Fills *st with node n's op as an epilogue step (params from its
 * attributes; operands left to the caller) and tells which of its inputs
 * it reads (*n_in). false: not an op an epilogue computes. */
bool cv_epi_step_of(const carve_model *m, carve_node_id n, cv_epi_step *st, uint32_t *n_in);
/* Checks the bound operands against the output's float32 shape and
 * classifies them; false: the kernel must not apply e. */
bool cv_epi_bind(cv_epi *e, carve_dtype dt, int rank, const int64_t *dims);
/* Applies e's steps to y[0..n), elements off..off+n of the output. */
void cv_epi_apply(const cv_epi *e, float *y, size_t off, size_t n);

/* ================================================================ inference */

typedef struct cv_ictx {
    carve_model *m;
    carve_node_id node;
    int64_t opset;
    /* Known value of input i (an initializer, a Constant, or folded), or
     * NULL. Lets Reshape/Expand/Slice... infer exact shapes. */
    const cv_val *(*const_input)(struct cv_ictx *c, uint32_t i);
    void *user;
} cv_ictx;
/* Shape inference's error, like cv_kerr: "node 'N' (Op): <fmt>",
 * CARVE_ERR_INVALID. */
#define cv_ierr(c, ...) cv_node_err((c)->m, (c)->node, CARVE_ERR_INVALID, "", __VA_ARGS__)

/* Sets output i's type. Errors if a known type contradicts it. */
carve_status cv_infer_set(cv_ictx *c, uint32_t i, carve_dtype dtype, int rank, const carve_dim *dims);
/* Input i's type (NULL when the input is omitted). */
static inline const cv_type *cv_infer_in(cv_ictx *c, uint32_t i)
{
    const cv_node *n = &c->m->nodes[c->node];
    if (i >= n->n_in || n->in[i] == CARVE_NONE)
        return NULL;
    return &c->m->values[n->in[i]].type;
}
typedef carve_status (*cv_infer_fn)(cv_ictx *c);
/* Output `out` gets input `in`'s shape, with dtype (or in's dtype when
 * CARVE_UNDEFINED). */
carve_status cv_infer_like(cv_ictx *c, uint32_t out, uint32_t in, carve_dtype dtype);
/* Makes output dims d of rank *rank (x's rank on entry) from input 0's
 * type x, or fails with the op's error. */
typedef carve_status (*cv_dims_fn)(cv_ictx *c, const cv_type *x, int *rank, carve_dim *d);
/* Output 0 of an op whose output has input 0's dtype and dims made from
 * input 0's by dims (Slice, Tile, Pad, Det, DFT, ...): unknown rank in,
 * unknown rank out, without asking dims. */
carve_status cv_infer_dims(cv_ictx *c, cv_dims_fn dims);

/* ================================================================ decomposition */

/* A rewriter replacing one node by pieces inserted at its place. Pieces are
 * named "<node>/<piece>" (unique with #2...), the last piece writes the
 * original outputs, so consumers and graph outputs are untouched. */
typedef struct cv_rw {
    carve_model *m;
    carve_node_id node;
    carve_graph_id graph;
    cv_ids pieces;
} cv_rw;
/* A new piece; outs[i] == CARVE_NONE makes a fresh value "<node>/<piece>:i". */
carve_node_id cv_rw_node(cv_rw *rw, const char *op, const char *piece, uint32_t n_in,
                         const carve_value_id *ins, uint32_t n_out, const carve_value_id *outs);
/* A piece with one output (out == CARVE_NONE: a fresh value), returning that
 * value; any input CARVE_NONE (an earlier piece failed) returns CARVE_NONE
 * without adding a node, so a decomposition checks only its last values. */
carve_value_id cv_rw_piece(cv_rw *rw, const char *op, const char *piece, uint32_t n_in, const carve_value_id *ins,
                           carve_value_id out);
carve_value_id cv_rw_const(cv_rw *rw, const char *piece, carve_dtype dtype, int rank, const int64_t *dims,
                           const void *data, size_t nbytes);
carve_value_id cv_rw_scalar_f(cv_rw *rw, const char *piece, carve_dtype dtype, double x);
carve_value_id cv_rw_ints(cv_rw *rw, const char *piece, size_t n, const int64_t *v);
typedef carve_status (*cv_decomp_fn)(cv_rw *rw);
/* Decomposes node n with its op's decomposition: the pieces replace it in
 * place and n is removed. CARVE_ERR_UNSUPPORTED when the op has none. */
carve_status cv_decompose_node(carve_model *m, carve_node_id n);
/* For many nodes at once (O(N) in all): decomposes n, appending its pieces
 * at the end of the graph's list and leaving n listed but dead; then
 * cv_graph_splice() puts each dead node's pieces in its place. n_pieces[k]
 * is the piece count of the k-th dead node of the first n_orig entries. */
carve_status cv_decompose_node_tail(carve_model *m, carve_node_id n, uint32_t *n_pieces);
carve_status cv_graph_splice(carve_model *m, carve_graph_id g, uint32_t n_orig, const uint32_t *n_pieces);

/* ================================================================ the table */

enum {
    CV_OP_CORE = 1 << 0,      /* the default CPU fallback runtime has it */
    CV_OP_COMPOSITE = 1 << 1, /* has a decomposition into core ops */
    CV_OP_IMPURE = 1 << 2,    /* random: never folded, never deduplicated */
    CV_OP_DATADEP = 1 << 3,   /* output shape always depends on input values */
    CV_OP_CONTROL = 1 << 4,   /* has subgraphs (If, Loop, Scan) */
    CV_OP_NONTENSOR = 1 << 5, /* reads or writes sequences/optionals */
    CV_OP_QUANT = 1 << 6,     /* quantization op (QuantizeLinear & co) */
    /* Properties the passes ask about (never a list of op names in C code):
     * tests/lint/op_lists.sh fails on such lists outside this table. */
    CV_OP_LAYOUT = 1 << 7,       /* output 0 is input 0's elements, values untouched, in a new shape or order */
    CV_OP_NOOP = 1 << 8,         /* output 0 is input 0 (Identity) */
    CV_OP_SELECT = 1 << 9,       /* output 0 picks elements of input 0, values untouched (Slice, Gather) */
    CV_OP_MAKES_INT64 = 1 << 10, /* its int64 outputs are int64 whatever its inputs (Shape, ArgMax ...) */
    CV_OP_CONST_SOURCE = 1 << 11, /* output 0 is a constant from its attributes (Constant) */
    CV_OP_READS_SHAPE = 1 << 12,  /* reads only input 0's shape, never its values (Shape, Size) */
    CV_OP_AXIS_SLICES = 1 << 13,  /* each slice along its `axis` attribute is computed on its own (Softmax-13):
                                   * Transposes that move that axis last and back keep its values */
    CV_OP_FIXED_RANGE = 1 << 14,  /* output 0 lies in a fixed range whatever the input (Sigmoid, Tanh): an NPU
                                   * may compute it quantized at a fixed encoding */
    CV_OP_EPI_HEAD = 1 << 15      /* its kernel applies an element-wise chain to output 0 as it makes it
                                   * (the epilogue, below; src/runtime/fuse.c) */
};

typedef struct cv_op_def {
    const char *name;
    const char *domain;
    int since;                 /* first opset version this row covers */
    uint8_t in_min, in_max, out_min, out_max;
    uint32_t flags;
    uint32_t shape_inputs;     /* bit i: input i's values decide output shapes */
    cv_kernel_fn kernel;
    cv_infer_fn infer;
    cv_decomp_fn decompose;
} cv_op_def;

/* The row for (domain, op) at `opset`: the row with the largest since <=
 * opset. NULL when carve does not know the op at that version. */
const cv_op_def *cv_op_find(const char *domain, const char *op, int64_t opset);
/* The rows found last, by op and domain name: a walk over many nodes of
 * few ops finds most rows without a search. Zeroed before the walk. */
typedef struct cv_op_memo {
    struct cv_op_memo_entry {
        const char *op, *domain;
        uint32_t gen; /* the opset generation the row was found at */
        const cv_op_def *def;
    } e[4]; /* the last asked first */
} cv_op_memo;
/* The row for a node of a model (its domain's opset), with memo (NULL:
 * none) when the node's cached row is stale. */
const cv_op_def *cv_op_for_node_memo(const carve_model *m, carve_node_id n, cv_op_memo *memo);
/* The row for a node of a model: cached on the node (the stages ask for
 * every node many times), found again when an opset moved. */
static inline const cv_op_def *cv_op_for_node(const carve_model *m, carve_node_id n)
{
    const cv_node *nd = &m->nodes[n];
    if (nd->def_gen == (*nd->domain ? m->opset_gen : m->onnx_opset_gen))
        return nd->def;
    return cv_op_for_node_memo(m, n, NULL);
}
/* After an opset change: every live node's row again, from `before` (its
 * row before the change, by node id; NULL entries are looked up afresh),
 * one search per distinct row. Returns whether every row stayed the same;
 * false when out of memory too (the rows are then looked up on demand). */
bool cv_op_rows_after(carve_model *m, const cv_op_def *const *before);
/* Has node n's row (cv_op_for_node) all of `flags`? false for an op carve
 * does not know. */
static inline bool cv_op_has(const carve_model *m, carve_node_id n, uint32_t flags)
{
    const cv_op_def *d = cv_op_for_node(m, n);
    return d && (d->flags & flags) == flags;
}
/* Does node n fit its row: input and output counts in range, and (but for
 * control-flow ops, whose Loop takes "" for M) every input below in_min
 * given? When not, why says how, naming the node (why may be NULL with
 * whysz 0). Kernels may assume it. */
bool cv_node_fits(const carve_model *m, carve_node_id n, const cv_op_def *def, char *why, size_t whysz);
size_t cv_op_count(void);
/* ONNX's type constraint on input `input` of op (domain "" or "ai.onnx")
 * at `opset`: a mask with bit d set when carve_dtype d is allowed, 0 when
 * not checked (another domain, an opset newer than the schemas of
 * typecons.def, a sequence or optional input). */
uint32_t cv_type_constraint(const char *domain, const char *op, int64_t opset, uint32_t input);
/* All of them for a node whose op table row is def (its op, its domain):
 * input i's mask is cv_tcons_mask(tc, i). */
typedef struct cv_tcons {
    const uint32_t *mask; /* by input; NULL: nothing checked */
    uint8_t n;            /* inputs with a mask */
    bool variadic_last;   /* inputs from n on take the last mask */
} cv_tcons;
cv_tcons cv_type_constraints_def(const cv_op_def *def, int64_t opset);
static inline uint32_t cv_tcons_mask(cv_tcons tc, uint32_t input)
{
    if (!tc.n)
        return 0;
    return input < tc.n ? tc.mask[input] : tc.variadic_last ? tc.mask[tc.n - 1] : 0;
}
/* The newest opset of the ONNX domain carve knows: ONNX 1.16's op set 21,
 * the newest with rows in the table (GroupNormalization-21, blocked and
 * 4-bit QuantizeLinear/DequantizeLinear-21); opset 22 and later change ops
 * carve has not followed. */
#define CV_ONNX_OPSET_NEWEST 21
/* The newest opset of `domain` carve knows: CV_ONNX_OPSET_NEWEST for
 * "" / "ai.onnx", the newest row's for a domain with rows (ai.carve 1),
 * 0 for a domain carve has no ops of (not checked). */
int64_t cv_opset_newest(const char *domain);
/* Refuses (CARVE_ERR_UNSUPPORTED, "unsupported_opset: node ...") the first
 * live node whose domain is at an opset newer than carve knows; domains no
 * node uses are not checked. */
carve_status cv_check_opsets(carve_model *m);
/* The op table (optable.def expanded, opdefs.c): cv_op_count() rows. */
extern const cv_op_def cv_op_table[];
const cv_op_def *cv_op_at(size_t i);
/* Row d's index in the table, for arrays kept per row. */
static inline size_t cv_op_row(const cv_op_def *d) { return (size_t)(d - cv_op_table); }

/* Declarations of every kernel, inference and decomposition function. */
#define OP(name, dom, since, imin, imax, omin, omax, flags, shape_in, kernel, infer, decomp) \
    carve_status kernel(cv_kctx *, cv_val **, uint32_t, cv_val **, uint32_t);                \
    carve_status infer(cv_ictx *);
#include "optable.def"
#undef OP
#define OP(name, dom, since, imin, imax, omin, omax, flags, shape_in, kernel, infer, decomp) \
    carve_status decomp(cv_rw *);
#include "optable.def"
#undef OP

/* ================================================================ val.c: the run's buffer pool */

typedef struct cv_pool_ext {
    size_t off, len; /* in the slab; len includes the alignment and the red zone */
    bool used;
} cv_pool_ext;

typedef struct cv_pool_slab {
    void *raw;            /* from cv_malloc */
    unsigned char *base;  /* raw aligned up to 2 MiB */
    size_t size;          /* usable bytes from base */
    cv_pool_ext *ext;     /* extents by offset, covering [0, size) */
    uint32_t n_ext, cap_ext;
    uint8_t *dirty;       /* per 2 MiB page: touched and not given back */
} cv_pool_slab;

typedef struct cv_pool_stats {
    size_t slabs;       /* slabs made */
    size_t served;      /* buffers handed out */
    size_t in_use_max;  /* most bytes handed out at once */
    size_t touched_max; /* most bytes of touched pages at once */
    size_t released;    /* pages given back to the kernel */
} cv_pool_stats;

#define CV_POOL_SLABS 16
typedef struct cv_pool {
    cv_pool_slab slab[CV_POOL_SLABS];
    uint32_t n_slab;
    size_t reserved, in_use, touched;
    cv_pool_stats stats;
} cv_pool;

/* Makes p (emptied) the calling thread's current pool: cv_val_new and
 * cv_scratch_alloc take buffers of 64 KiB or more from it. */
void cv_pool_begin(cv_pool *p);
/* Makes p the calling thread's current pool with the slabs it kept (p
 * zeroed before its first use), and stops it being current, keeping its
 * slabs and touched pages for the next run. */
void cv_pool_resume(cv_pool *p);
void cv_pool_suspend(cv_pool *p);
/* Frees p's slabs and stops it being current (p->stats survive). No value
 * may point into it any more: detach what outlives the run first. */
void cv_pool_end(cv_pool *p);
/* The calling thread's current pool, or NULL. */
cv_pool *cv_pool_current(void);
/* Moves v's data (a sequence's items' data) out of the current pool into
 * its own cv_malloc block; false on NOMEM (what moved stays moved; v stays
 * valid either way). */
bool cv_pool_detach(cv_val *v);

#endif /* CARVE_OPS_H */

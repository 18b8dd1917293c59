/*
 * dn.h: the oneDNN backend's internals (docs/onednn.md).
 *
 * One builder walks a partition body node by node. In check mode (the
 * backend's supports_node) it sees one node with plain layouts and only
 * creates oneDNN primitive descriptors: whether oneDNN can build the node
 * with its real shapes and types is the answer. In compile mode it creates
 * the primitives and memories of the whole body: inside the partition every
 * value keeps the layout its producer chose (blocked formats picked by
 * oneDNN through format_tag any), reorders are added only where a consumer
 * wants another layout, and at the partition's boundary (inputs in, outputs
 * out). Constants are reordered once, at compile time.
 *
 * Written against oneDNN 2.6's C API (dnnl.h): op descriptors
 * (dnnl_*_desc_init) + dnnl_primitive_desc_create, attributes with
 * dnnl_post_ops; oneDNN 3.x replaced all of these.
 */
#ifndef CARVE_DN_H
#define CARVE_DN_H

#include <oneapi/dnnl/dnnl.h>
#include <stdbool.h>
#include <stdio.h>

#include "carve.h"
#include "carve_backend.h"
#include "dn_api.h" /* every dnnl_ call through a table: libdnnl loaded on first use */

#define DN_MAX_ARGS 24

/* One value of the body as the builder sees it. */
typedef struct dn_val {
    carve_value_id id;
    int rank;              /* the ONNX rank (0 for scalars) */
    int nd;                /* oneDNN ndims: rank, or 1 for a scalar */
    dnnl_dims_t dims;      /* logical dims, row-major order */
    dnnl_memory_desc_t md; /* the layout the value lives in */
    dnnl_memory_t mem;     /* compile mode only */
    bool is_const;
    bool is_view; /* its buffer is another value's (a reshape): never written in place */
    /* One cached copy in another layout (most values are read in at most
     * two: their producer's and a plain one). */
    dnnl_memory_desc_t alt_md;
    dnnl_memory_t alt_mem;
} dn_val;

/* A step on the host between primitives (the CPU stream runs them in
 * order): a DynamicQuantizeLinear's range, a gather of input channels. ctx
 * is malloc'd and owned by the program. */
typedef void (*dn_host_fn)(void *ctx);

typedef struct dn_step {
    dnnl_primitive_t prim; /* NULL: host */
    dn_host_fn host;
    void *ctx;
    int nargs;
    dnnl_exec_arg_t args[DN_MAX_ARGS];
} dn_step;

/* A buffer of the pool (pool.c): one value's memory and its aliases. */
typedef struct dn_buf {
    char *ptr; /* its own allocation while compiling */
    size_t size, off;
    int first, last; /* the steps using it (-1: none yet) */
    bool keep;       /* written at compile time (a constant): never shared */
} dn_buf;

/* A compiled partition (the backend's handle). */
typedef struct dn_prog {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dn_step *steps;
    size_t n_steps, cap_steps;
    dnnl_memory_t *mems; /* every memory the program owns */
    size_t n_mems, cap_mems;
    dnnl_primitive_t *prims; /* every primitive (steps and boundary reorders) */
    size_t n_prims, cap_prims;
    /* Boundary: user memories bound to the carve tensors at run time. */
    size_t n_in, n_out;
    dnnl_memory_t *in_user, *in_mem;  /* user (plain) -> internal */
    dnnl_primitive_t *in_reorder;     /* NULL: the input is read by nobody */
    dnnl_memory_t *out_user, *out_mem;
    dnnl_primitive_t *out_reorder;
    carve_dtype *in_dt, *out_dt; /* float32, or uint8 / int8 at QDQ units */
    /* The values' buffers: allocated one by one while compiling, then
     * packed into one arena by liveness (pool.c). */
    dn_buf *bufs;
    size_t n_bufs, cap_bufs;
    char *arena;
    size_t arena_size, bufs_total;
    int *out_rank;
    int64_t (*out_dims)[CARVE_MAX_RANK];
} dn_prog;

typedef struct dn_builder {
    const carve_model *m;
    carve_graph_id g;       /* the body (check mode: the node's graph) */
    bool check;             /* only primitive descriptors, no memories */
    dnnl_engine_t eng;
    dn_prog *p;             /* compile mode */
    dn_val *vals;
    size_t n_vals, cap_vals;
    carve_node_id *nodes;   /* the body's nodes in order (compile mode) */
    size_t n_nodes, cur;    /* cur: index of the node being built */
    bool *done;             /* nodes already built as part of a fusion */
    /* The first failure: reason code and message. */
    const char *reason;
    char msg[512];
    carve_node_id fail_node;
    bool fatal;             /* an error (allocation...), not a refusal */
    int no_pool;            /* > 0: new memories hold constants (filled now) */
} dn_builder;

/* Reason codes (docs/report.md; the library's own refusals are
 * onednn_unsupported with the dnnl_status in the message). */
#define DN_R_OP "unsupported_op"
#define DN_R_ATTR "unsupported_attribute"
#define DN_R_DTYPE "unsupported_dtype"
#define DN_R_SHAPE "dynamic_shape"
#define DN_R_INPUT "unsupported_input"
#define DN_R_LIB "onednn_unsupported"

/* ---- build.c: the builder */
bool dn_fail(dn_builder *b, const char *reason, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
bool dn_dnnl_fail(dn_builder *b, dnnl_status_t st, const char *what);
/* The value read by input i of node n (NULL with a failure set when absent
 * or not float32 unless allow is set). */
dn_val *dn_in(dn_builder *b, carve_node_id n, size_t i);
dn_val *dn_in_any(dn_builder *b, carve_node_id n, size_t i); /* any dtype, no memory */
bool dn_has_in(const dn_builder *b, carve_node_id n, size_t i);
/* Defines output i of n in layout md (allocates it in compile mode). */
dn_val *dn_out(dn_builder *b, carve_node_id n, size_t i, const dnnl_memory_desc_t *md);
/* Defines value v in layout md (NULL: plain). */
dn_val *dn_def(dn_builder *b, carve_value_id v, const dnnl_memory_desc_t *md);
/* Whether reader reads v and is its last reader: v is no body output and
 * every other node reading it is built already (none a reshape, whose
 * output shares v's buffer): v's buffer may then be written in place. */
bool dn_last_reader(const dn_builder *b, carve_value_id v, carve_node_id reader);
/* Defines v in layout md in src's buffer when reader is its last reader and
 * src is neither a constant nor a view (oneDNN's eltwise and binary work
 * in place); else in a buffer of its own. */
dn_val *dn_def_inplace(dn_builder *b, carve_value_id v, dn_val *src, carve_node_id reader,
                       const dnnl_memory_desc_t *md);
/* Defines v plain and returns a memory over its buffer seen with dims
 * nd/dims (same element count), md gets that view's layout. */
dnnl_memory_t dn_def_as(dn_builder *b, carve_value_id v, int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md);
/* Defines output i of n as a plain view of v with its own dims. */
dn_val *dn_out_view(dn_builder *b, carve_node_id n, size_t i, dn_val *v);
/* v's memory in layout md (a reorder when it lives in another one). */
dnnl_memory_t dn_as(dn_builder *b, dn_val *v, const dnnl_memory_desc_t *md);
/* v's memory in the plain row-major layout of its dims. */
dnnl_memory_t dn_plain(dn_builder *b, dn_val *v);
/* A plain row-major view of v's buffer with other dims (same element count). */
dnnl_memory_t dn_view(dn_builder *b, dn_val *v, int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md_out);
void dn_plain_md(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims);
void dn_plain_md_dt(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims, dnnl_data_type_t dt);
/* oneDNN's type of a carve dtype: u8, s8, s32, else f32. */
dnnl_data_type_t dn_dt(carve_dtype t);
void dn_any_md(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims);
/* Creates a primitive descriptor; a failure becomes an onednn_unsupported
 * refusal naming what. */
bool dn_pd(dn_builder *b, const void *op_desc, const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd,
           const char *what);
/* Adds a step running pd's primitive with args (destroys pd). In check
 * mode only destroys pd. */
bool dn_step_add(dn_builder *b, dnnl_primitive_desc_t pd, int nargs, const dnnl_exec_arg_t *args);
/* Adds a host step reading and writing the n memories mems (check mode:
 * frees ctx). */
bool dn_step_host(dn_builder *b, dn_host_fn fn, void *ctx, int n, const dnnl_memory_t *mems);

/* ---- pool.c: buffers shared by values whose lives do not overlap */
/* A buffer of the pool for a new memory of md (NULL: out of memory). */
void *dn_pool_alloc(dn_builder *b, const dnnl_memory_desc_t *md);
/* After the whole program is built: each buffer's first and last step,
 * offsets in one arena, every memory moved there; the compile-time
 * buffers freed. */
bool dn_pool_finish(dn_builder *b);
void dn_pool_free(dn_prog *p);
/* The end of an op with one source: the primitive descriptor of op_desc
 * (st: its init's status, what names it in a refusal), yv defined in the
 * destination layout oneDNN picks, the step SRC src -> DST yv plus n_extra
 * more arguments. Check mode: the descriptor only. */
bool dn_step_unary(dn_builder *b, dnnl_status_t st, const void *op_desc, const char *what, dnnl_memory_t src,
                   carve_value_id yv, int n_extra, const dnnl_exec_arg_t *extra);
/* yv (layout ymd) copied by a reorder from x's plain buffer seen through
 * view (strides of a transpose, a slice's sub-memory). */
bool dn_view_reorder(dn_builder *b, dn_val *x, const dnnl_memory_desc_t *view, carve_value_id yv,
                     const dnnl_memory_desc_t *ymd, const char *what);
/* Whether oneDNN picked its reference implementation (a slow loop): ops
 * on a blocked layout then retry on the plain one. */
bool dn_pd_is_ref(const_dnnl_primitive_desc_t pd);
bool dn_md_is_plain(const dnnl_memory_desc_t *md);
const dnnl_memory_desc_t *dn_pd_md(dnnl_primitive_desc_t pd, dnnl_query_t q);
/* A new memory the program owns (md; DNNL_MEMORY_ALLOCATE or a handle). */
dnnl_memory_t dn_mem_new(dn_builder *b, const dnnl_memory_desc_t *md, void *handle);
/* A constant memory made from host data (copied, md's size). */
dnnl_memory_t dn_const_mem(dn_builder *b, const dnnl_memory_desc_t *md, const void *data);
/* Constant inputs read at compile time. */
const void *dn_const_data(dn_builder *b, carve_node_id n, size_t i, carve_dtype *dt, size_t *count);
bool dn_const_ints(dn_builder *b, carve_node_id n, size_t i, int64_t *out, size_t max, size_t *count);
bool dn_const_floats(dn_builder *b, carve_node_id n, size_t i, float *out, size_t max, size_t *count);
/* The one node of the body reading value v, when there is exactly one and
 * v is no body output (for fusions); CARVE_NONE otherwise. */
carve_node_id dn_sole_consumer(const dn_builder *b, carve_value_id v);
/* Whether v is already available (defined before the current node). */
bool dn_available(const dn_builder *b, carve_value_id v);
dn_val *dn_find(const dn_builder *b, carve_value_id v);
void dn_mark_done(dn_builder *b, carve_node_id n);
int64_t dn_attr_i(const dn_builder *b, carve_node_id n, const char *name, int64_t dflt);
float dn_attr_f(const dn_builder *b, carve_node_id n, const char *name, float dflt);
/* A string attribute copied into buf (dflt when absent). */
const char *dn_attr_s(const dn_builder *b, carve_node_id n, const char *name, const char *dflt, char *buf,
                      size_t size);
/* An ints attribute: count, or -1 when absent. */
int dn_attr_ints(const dn_builder *b, carve_node_id n, const char *name, int64_t *out, int max);
bool dn_attr_has(const dn_builder *b, carve_node_id n, const char *name);
/* A window op's strides, dilations (oneDNN's: holes, ONNX's - 1), pads /
 * auto_pad over k spatial dims (defaults 1, 0, 0); *same is 'U' or 'L' for
 * SAME_UPPER / SAME_LOWER (the caller computes those pads), else 0. */
bool dn_read_window(dn_builder *b, carve_node_id n, int k, dnnl_dim_t *strides, dnnl_dim_t *dil, dnnl_dim_t *pl,
                    dnnl_dim_t *pr, int *same);
size_t dn_count(const dn_val *v);

/* ---- op families: each builds (or checks) one node, maybe fusing its
 * sole consumers. false: refused (b->reason) or an error (b->fatal). */
typedef bool (*dn_op_fn)(dn_builder *b, carve_node_id n);
bool dn_op_conv(dn_builder *b, carve_node_id n);
bool dn_op_convtranspose(dn_builder *b, carve_node_id n);
bool dn_op_matmul(dn_builder *b, carve_node_id n);
bool dn_op_gemm(dn_builder *b, carve_node_id n);
bool dn_op_eltwise(dn_builder *b, carve_node_id n);
bool dn_op_binary(dn_builder *b, carve_node_id n);
bool dn_op_prelu(dn_builder *b, carve_node_id n);
bool dn_op_pool(dn_builder *b, carve_node_id n);
bool dn_op_batchnorm(dn_builder *b, carve_node_id n);
bool dn_op_softmax(dn_builder *b, carve_node_id n);
bool dn_op_layernorm(dn_builder *b, carve_node_id n);
bool dn_op_resize(dn_builder *b, carve_node_id n);
bool dn_op_reduce(dn_builder *b, carve_node_id n);
bool dn_op_concat(dn_builder *b, carve_node_id n);
bool dn_op_transpose(dn_builder *b, carve_node_id n);
bool dn_op_reshape(dn_builder *b, carve_node_id n);
bool dn_op_slice(dn_builder *b, carve_node_id n);

/* Eltwise mapping shared by dn_op_eltwise and the post-op fusions: up to
 * two oneDNN eltwise algorithms for an ONNX activation node (HardSigmoid is
 * linear then clip). Returns the count, 0 when n is no mapped activation
 * (with a refusal set when it is one whose attributes differ). */
typedef struct dn_elt {
    dnnl_alg_kind_t alg;
    float alpha, beta;
    int data_in; /* the input holding the data (1 for "c - x" ...) */
} dn_elt;
int dn_eltwise_map(dn_builder *b, carve_node_id n, dn_elt out[2], bool set_reason);
/* Binary ops: the oneDNN algorithm of an ONNX binary op, or 0. */
dnnl_alg_kind_t dn_binary_alg(const char *op);
/* Post-op fusion after a Conv/ConvTranspose/MatMul/Gemm whose output is
 * dst: appends eltwise and binary post-ops of the following sole consumers
 * to po (up to max), returning the nodes fused, their binary operands and
 * the value that ends the chain. */
typedef struct dn_fusion {
    size_t n;                 /* nodes fused */
    carve_node_id nodes[8];
    carve_node_id also[8][3]; /* more nodes an entry stands for (a HardSwish pattern) */
    int n_also[8];
    int kind[8];              /* 0 eltwise (n_elt entries), 1 binary, 2 sum */
    dn_elt elt[8][2];
    int n_elt[8];
    dnnl_alg_kind_t bin_alg[8];
    dn_val *bin_src[8];
    carve_value_id first;     /* the fused primitive's own output */
    carve_value_id last;      /* the value the whole chain defines */
    int nd;                   /* the primitive's destination dims */
    dnnl_dims_t dims;
    /* The destination layout the primitive picks without post-ops:
     * full-size binary operands are read in it. */
    bool has_pref;
    dnnl_memory_desc_t pref;
} dn_fusion;
void dn_fusion_plan(dn_builder *b, carve_value_id dst, int nd, const dnnl_dims_t dims, bool allow_sum, dn_fusion *f);
/* Defines the value ending the first k fused nodes in layout md (the
 * primitive's destination); with a sum post-op among them the destination
 * first holds the summed operand: in place when nothing else reads it,
 * else a copy made by a reorder step. */
dnnl_memory_t dn_fusion_def(dn_builder *b, const dn_fusion *f, size_t k, const dnnl_memory_desc_t *md);
/* x -> Add(x, 3) -> Clip(0, 6) -> Mul(x, .) -> Div(., 6) (or Mul by
 * 1/6), the HardSwish exporters write before opset 14: its four nodes
 * (nodes[0] the Add) and the value it ends in; x read by nothing else. */
bool dn_match_hardswish(dn_builder *b, carve_value_id x, carve_node_id nodes[4], carve_value_id *end);
/* Attributes with the first k fused post-ops; args for their binary
 * operands are appended to args at *nargs. */
bool dn_fusion_attr(dn_builder *b, const dn_fusion *f, size_t k, dnnl_primitive_attr_t *attr,
                    dnnl_exec_arg_t *args, int *nargs);
/* Marks the first k fused nodes done; returns the value ending the chain. */
carve_value_id dn_fusion_commit(dn_builder *b, const dn_fusion *f, size_t k);
/* Tries pd creation with k = f->n .. 0 post-ops (op_desc fixed). */
bool dn_pd_fused(dn_builder *b, const void *op_desc, dn_fusion *f, size_t *k, dnnl_primitive_desc_t *pd,
                 dnnl_exec_arg_t *args, int *nargs, const char *what);

/* ---- ops_conv.c: shared with the int8 units (ops_qdq.c) */
typedef struct dn_spatial {
    int k; /* spatial rank */
    dnnl_dims_t strides, dil, pl, pr, kernel;
} dn_spatial;
/* Strides, dilations, pads / auto_pad of a Conv or ConvTranspose with input
 * x, kernel dims s->kernel[0..s->k) and output y. */
bool dn_read_spatial(dn_builder *b, carve_node_id n, const dn_val *x, const dn_val *y, bool transpose,
                     dn_spatial *s);
/* The weights w as a plain view of type dt (grouped: [G, OC/G, IC/G, k...];
 * ConvTranspose's [IC, OC/G, k...] seen so too). */
void dn_weights_view(const dn_val *w, int64_t g, bool transpose, int k, dnnl_data_type_t dt,
                     dnnl_memory_desc_t *md, int *nd, dnnl_dims_t dims);
/* A matmul operand seen as nd dims [.., M, K] / [.., K, N] through strides. */
typedef struct dn_mm_operand {
    dn_val *v;
    int nd;
    dnnl_dims_t dims, strides;
} dn_mm_operand;
void dn_mm_view(dn_mm_operand *o, dn_val *v, int nd, bool vec_row, bool trans);
/* The operand's buffer seen through view, in layout want. */
dnnl_memory_t dn_mm_mem(dn_builder *b, dn_mm_operand *o, const dnnl_memory_desc_t *view,
                        const dnnl_memory_desc_t *want);

/* ---- ops_qdq.c: int8 QDQ node units (docs/onednn.md#int8) */
/* DequantizeLinear: a constant's is dequantized at compile time; a
 * runtime tensor's only inside a Conv/MatMul unit, which builds it. */
bool dn_op_dequantize(dn_builder *b, carve_node_id n);
/* QuantizeLinear: only as the end of a Conv/MatMul unit. */
bool dn_op_quantize(dn_builder *b, carve_node_id n);
/* The int8 unit around a Conv or MatMul: its nodes, the int8 source and
 * constant weights, and what the primitive's attributes need. */
typedef struct dn_q8 {
    carve_node_id dq_x, dq_w, dq_b, q; /* dq_b, q: CARVE_NONE when absent */
    dn_val *x, *w;                     /* the quantized source, the int8 weights */
    dnnl_data_type_t xdt, ydt;         /* ydt f32 without a QuantizeLinear */
    carve_value_id y;                  /* the value the primitive defines */
    size_t n_oc, n_scales;             /* output channels; 1 or n_oc output scales */
    float *oscale;                     /* s_x * s_w[c] / s_y */
    float *bias;                       /* n_oc values in accumulator units, or NULL */
    int32_t zp_x, zp_y;
} dn_q8;
/* Conv / MatMul n as an int8 unit: 1 it is one (u filled, dn_q8_free it),
 * 0 not one (the float path applies), -1 refused or an error. */
int dn_q8_plan(dn_builder *b, carve_node_id n, bool matmul, dn_q8 *u);
void dn_q8_free(dn_q8 *u);
/* The attributes: output scales (per channel with oc_mask), zero points. */
bool dn_q8_attr(dn_builder *b, const dn_q8 *u, int oc_mask, dnnl_primitive_attr_t *attr);
/* The int8 primitive descriptor of op_desc with those attributes. */
bool dn_q8_pd(dn_builder *b, const dn_q8 *u, int oc_mask, const void *op_desc, const char *what,
              dnnl_primitive_desc_t *pd);
/* The weights' constant memory (plain int8), compile mode. */
bool dn_q8_weights(dn_builder *b, dn_q8 *u);
/* Marks the unit's other nodes built and defines u->y in layout md. */
dnnl_memory_t dn_q8_def(dn_builder *b, dn_q8 *u, const dnnl_memory_desc_t *md);
/* Whether oneDNN's ISA has VNNI (exact u8 x s8 sums). */
bool dn_isa_vnni(void);
/* The binary primitive of a quantization of x (xmd) by per-tensor or
 * per-axis parameters (pmd) to ymd. quant: saturate(rint(x / scale) + zp),
 * the scale the primitive's second source, the zero point its binary add
 * post-op's; else (x - zp) * scale, the zero point the second source, the
 * scale the binary mul post-op's. op names the node's op in errors. */
bool dn_qdq_pd(dn_builder *b, const char *op, const dnnl_memory_desc_t *xmd, const dnnl_memory_desc_t *pmd,
               const dnnl_memory_desc_t *ymd, bool quant, dnnl_primitive_desc_t *pd);

/* ---- ops_dynq.c: dynamically quantized models (docs/onednn.md#dynamic-int8) */
bool dn_op_dynquant(dn_builder *b, carve_node_id n);
bool dn_op_convinteger(dn_builder *b, carve_node_id n);
bool dn_op_matmulinteger(dn_builder *b, carve_node_id n);
bool dn_op_cast(dn_builder *b, carve_node_id n);

/* ---- backend.c */
const carve_backend *cv_onednn_backend(void);
dn_op_fn dn_op_find(const char *op);
/* Checks the node's tensors (float32, static non-empty shapes). */
bool dn_check_tensors(dn_builder *b, carve_node_id n);
/* Every input and output of n has a known rank oneDNN takes and fixed
 * dims. data_f32: input and output 0 (the data) are float32 and not empty,
 * the other inputs (shapes, axes, scales, an empty roi) are the op's; else
 * (ops_dynq.c's integer ops, which check their own dtypes) every tensor is
 * not empty. */
bool dn_check_shapes(dn_builder *b, carve_node_id n, bool data_f32);

#endif /* CARVE_DN_H */

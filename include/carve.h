/*
 * carve.h: public API of libcarve, a compiler that lowers ONNX models onto an
 * NPU with CPU fallback.
 *
 * Handles are opaque. Nodes, values and graphs are addressed by integer ids
 * (carve_node_id, carve_value_id, carve_graph_id) that stay valid while the
 * model grows. Every failing call returns a carve_status and leaves a message
 * on the context, read with carve_errmsg(). The library never calls exit().
 */
#ifndef CARVE_H
#define CARVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CARVE_VERSION "0.2.0"

/* ---------------------------------------------------------------- status */

typedef enum carve_status {
    CARVE_OK = 0,
    CARVE_ERR_IO,          /* a file could not be read or written */
    CARVE_ERR_PARSE,       /* the bytes are not a well-formed ONNX model */
    CARVE_ERR_INVALID,     /* the model is well-formed but breaks a rule */
    CARVE_ERR_UNSUPPORTED, /* valid, but carve does not handle it */
    CARVE_ERR_NOMEM,       /* an allocation failed or a limit was hit */
    CARVE_ERR_ARG          /* the caller passed a bad argument */
} carve_status;

/* A context owns the last error message (and the backends registered on
 * it); the allocator (carve_set_allocator) and the thread count
 * (carve_set_threads) are process-wide, not per context. One context per
 * thread.
 *
 * Threads: libcarve may be used from several threads at once when each
 * thread has its own context and its own models, targets, reports and
 * tensors (tests/test_threads.c runs 8 threads loading, lowering, reporting,
 * saving and running different models under ThreadSanitizer). A context and
 * everything made on it belong to one thread at a time; nothing is shared
 * between contexts but read-only tables (the op table, the built-in target
 * profiles) and these process-wide settings, which must not change while
 * another thread uses carve: carve_set_allocator() (one hook for the whole
 * process) and carve_set_threads(). Error texts use strerror(), per thread
 * on glibc 2.32 and later. Reports and runs (Cast to and from strings)
 * format and parse numbers in the "C" locale whatever the host program set
 * (uselocale(), per thread, for the call's duration). OpenBLAS (MatMul,
 * Gemm, Conv, the RNNs) takes concurrent calls; its own thread count
 * follows OPENBLAS_NUM_THREADS (the thread tests run with 1). */
typedef struct carve_ctx carve_ctx;

/* A new context with the built-in backends registered; NULL when out of
 * memory. Free it with carve_ctx_free after every model, target and tensor
 * made on it. */
carve_ctx *carve_ctx_new(void);
/* Frees ctx and unloads the backend plugins loaded on it. NULL is a no-op. */
void carve_ctx_free(carve_ctx *ctx);
/* Text of the last error on ctx ("" when none). Valid until the next call
 * that fails on the same context. */
const char *carve_errmsg(const carve_ctx *ctx);
/* Status of the last failing call on ctx. */
carve_status carve_errcode(const carve_ctx *ctx);
/* A static text for s ("ok", "invalid model", ...); never NULL. */
const char *carve_status_name(carve_status s);

/* Every allocation of libcarve goes through these hooks, in every context
 * and thread: the setting is process-wide (a copy of *a is kept). Passing
 * NULL, or a struct with a NULL hook, restores malloc/realloc/free. Meant for tests that
 * inject failures and for embedders with their own heap; set it before
 * creating any context, and never while another thread uses carve. */
typedef struct carve_allocator {
    void *(*alloc)(size_t size, void *user);
    void *(*realloc)(void *ptr, size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} carve_allocator;
/* Installs the hooks above (see there: process-wide). */
void carve_set_allocator(const carve_allocator *a);

/* Threads that carve's kernels and backends may use (OpenBLAS, a backend's
 * OpenMP runtime). Process-wide, as OpenBLAS's own setting is: set it before
 * lowering or running, never while another thread runs a model. n < 1 means
 * 1. The default is 1: carve starts no thread unless asked. */
void carve_set_threads(int n);
/* The current setting of carve_set_threads (1 by default). */
int carve_get_threads(void);

/* ---------------------------------------------------------------- types */

/* Element types; the numbers are ONNX's TensorProto.DataType. */
typedef enum carve_dtype {
    CARVE_UNDEFINED = 0,
    CARVE_FLOAT = 1,
    CARVE_UINT8 = 2,
    CARVE_INT8 = 3,
    CARVE_UINT16 = 4,
    CARVE_INT16 = 5,
    CARVE_INT32 = 6,
    CARVE_INT64 = 7,
    CARVE_STRING = 8,
    CARVE_BOOL = 9,
    CARVE_FLOAT16 = 10,
    CARVE_DOUBLE = 11,
    CARVE_UINT32 = 12,
    CARVE_UINT64 = 13,
    CARVE_COMPLEX64 = 14,
    CARVE_COMPLEX128 = 15,
    CARVE_BFLOAT16 = 16,
    CARVE_FLOAT8E4M3FN = 17,
    CARVE_FLOAT8E4M3FNUZ = 18,
    CARVE_FLOAT8E5M2 = 19,
    CARVE_FLOAT8E5M2FNUZ = 20,
    CARVE_UINT4 = 21,
    CARVE_INT4 = 22,
    CARVE_FLOAT4E2M1 = 23,
    CARVE_DTYPE_COUNT
} carve_dtype;

/* "float32", "int4", ...; "dtype(N)" style names are never returned: an
 * unknown number gives "unknown". */
const char *carve_dtype_name(carve_dtype t);
/* Bits per element (4 for int4/uint4/float4, 0 for string/undefined). */
int carve_dtype_bits(carve_dtype t);

#define CARVE_MAX_RANK 16

/* One dimension: a known size (value >= 0, param NULL), a symbolic one
 * (param set, value -1) or an unknown one (value -1, param NULL). */
typedef struct carve_dim {
    int64_t value;
    const char *param;
} carve_dim;

/* What a value holds. Tensors are modelled (dtype and shape); other ONNX
 * types (sequence, map, optional, sparse tensor) are kept opaque. */
typedef enum carve_type_kind {
    CARVE_TYPE_UNKNOWN = 0, /* no type information */
    CARVE_TYPE_TENSOR,
    CARVE_TYPE_OTHER
} carve_type_kind;

typedef uint32_t carve_node_id;
typedef uint32_t carve_value_id;
typedef uint32_t carve_graph_id;
#define CARVE_NONE UINT32_MAX /* an omitted optional input, or "no such id" */

/* ---------------------------------------------------------------- model */

typedef struct carve_model carve_model;
/* A target profile (JSON, see docs/targets.md): the ops an accelerator
 * supports and its rules; or a CPU profile for the fallback side. */
typedef struct carve_target carve_target;

typedef struct carve_load_opts {
    /* Folder that external-data locations are relative to. Required for
     * carve_model_load_memory() when the model has external data; for
     * carve_model_load_file() it defaults to the model's folder. */
    const char *base_dir;
} carve_load_opts;

/* Loads an ONNX model: nodes are sorted topologically (stably), node names
 * made unique, external data memory-mapped. The file (and each external
 * data file) must be a regular file: a FIFO, device, socket or folder is
 * refused by its kind without blocking; the model is mapped, not read whole,
 * and refused over protobuf's 2 GiB (docs/files.md). *out is NULL on
 * failure. */
carve_status carve_model_load_file(carve_ctx *ctx, const char *path,
                                   const carve_load_opts *opts, carve_model **out);
/* carve_model_load_file from bytes in memory (copied: the caller may free
 * them after the call; external data is read from opts->base_dir, refused
 * without it). *out is NULL on failure, with the message on ctx. */
carve_status carve_model_load_memory(carve_ctx *ctx, const void *data, size_t size,
                                     const carve_load_opts *opts, carve_model **out);

typedef struct carve_save_opts {
    /* When set, tensors of at least external_min_bytes bytes are written to
     * this file (a plain name, placed beside the model) instead of inline. */
    const char *external_data_name;
    size_t external_min_bytes; /* 0 means 1024 */
} carve_save_opts;

/* Serializes to ONNX. Identical models give identical bytes. *out is
 * allocated with the carve allocator; release it with carve_free(). */
carve_status carve_model_save_memory(carve_model *m, void **out, size_t *size);
/* Writes safely (docs/files.md): temporary files beside the outputs, renamed
 * when the model and its external data are both written; refuses a path that
 * is not a regular file, the file the model was loaded from and its external
 * data files, and a model whose bytes carve could not read back (nesting
 * deeper than the reader's limit). "-" is standard output. */
carve_status carve_model_save_file(carve_model *m, const char *path,
                                   const carve_save_opts *opts);
/* Frees what libcarve allocated for the caller (dumps, saved bytes). NULL
 * is a no-op. */
void carve_free(void *p);

/* An empty model (ir_version 8 unless changed) with an empty main graph. */
carve_model *carve_model_new(carve_ctx *ctx);
/* Frees m with everything it owns (its strings, graphs, ids are gone);
 * NULL is a no-op. */
void carve_model_free(carve_model *m);
/* The context m was made on; its errors go there. */
carve_ctx *carve_model_ctx(const carve_model *m);

/* The ONNX ir_version written on save. */
int64_t carve_model_ir_version(const carve_model *m);
/* Sets the ir_version written on save (not checked). */
void carve_model_set_ir_version(carve_model *m, int64_t v);
/* Sets (or adds) the opset of a domain ("" is the default ONNX domain).
 * CARVE_ERR_NOMEM. */
carve_status carve_model_set_opset(carve_model *m, const char *domain, int64_t version);
/* Opset version of a domain, 0 when not imported. */
int64_t carve_model_opset(const carve_model *m, const char *domain);
/* The imported opsets, in import order: count, then domain and version of
 * the i-th (i < count; the strings are owned by m). */
size_t carve_model_opset_count(const carve_model *m);
/* The i-th imported opset: its domain (owned by m) and version. */
void carve_model_opset_at(const carve_model *m, size_t i, const char **domain, int64_t *version);
/* Sets producer_name and producer_version (copied). CARVE_ERR_NOMEM. */
carve_status carve_model_set_producer(carve_model *m, const char *name, const char *version);
/* Fixes symbolic dim `name` to `value` in every value of the model (graph
 * inputs, outputs and value_info, subgraphs too). CARVE_ERR_ARG, the model
 * unchanged, when value is negative ("symbolic dim 'N': -1 is not a size")
 * or no value has a dim of that name ("the model has no symbolic dim named
 * 'N'"). */
carve_status carve_model_fix_dim(carve_model *m, const char *name, int64_t value);
/* metadata_props: sets key to value (copied; an existing key is replaced),
 * CARVE_ERR_NOMEM; count, and the i-th pair (i < count; strings owned by m). */
carve_status carve_model_set_metadata(carve_model *m, const char *key, const char *value);
/* Number of metadata_props pairs. */
size_t carve_model_metadata_count(const carve_model *m);
/* The i-th metadata_props pair (key and value owned by m). */
void carve_model_metadata_at(const carve_model *m, size_t i, const char **key, const char **value);
/* Sets the model's doc_string (copied). CARVE_ERR_NOMEM. */
carve_status carve_model_set_doc(carve_model *m, const char *doc);

/* The main graph; subgraphs hang off node attributes. */
carve_graph_id carve_model_main_graph(const carve_model *m);

/* Checks the rules every pass relies on; the first problem is reported with
 * the node's name, op and the field: CARVE_ERR_INVALID (CARVE_ERR_NOMEM when
 * memory runs out). m is not changed. */
carve_status carve_model_verify(carve_model *m);

/* A readable, deterministic text form of the whole model (golden tests read
 * it). Returned string is allocated; release with carve_free(). */
char *carve_model_dump(const carve_model *m);

/* ---------------------------------------------------------------- graphs */

/* Number of graphs: the main graph (id 0) and every subgraph; ids run
 * from 0 to count - 1. */
size_t carve_model_graph_count(const carve_model *m);
/* CARVE_NONE for the main graph. */
carve_graph_id carve_graph_parent(const carve_model *m, carve_graph_id g);
/* The node whose attribute holds g; CARVE_NONE for the main graph. */
carve_node_id carve_graph_owner(const carve_model *m, carve_graph_id g);
/* g's name, owned by m. */
const char *carve_graph_name(const carve_model *m, carve_graph_id g);
/* Inputs, outputs and initializers of g: the count, then the i-th
 * (i < count; ids and indices are not checked: take them from the counts). */
size_t carve_graph_input_count(const carve_model *m, carve_graph_id g);
/* The i-th input of g. */
carve_value_id carve_graph_input(const carve_model *m, carve_graph_id g, size_t i);
/* Number of outputs of g. */
size_t carve_graph_output_count(const carve_model *m, carve_graph_id g);
/* The i-th output of g. */
carve_value_id carve_graph_output(const carve_model *m, carve_graph_id g, size_t i);
/* Number of initializers of g. */
size_t carve_graph_initializer_count(const carve_model *m, carve_graph_id g);
/* The i-th initializer of g. */
carve_value_id carve_graph_initializer(const carve_model *m, carve_graph_id g, size_t i);
/* Nodes in topological order. */
size_t carve_graph_node_count(const carve_model *m, carve_graph_id g);
/* The i-th node of g in topological order. */
carve_node_id carve_graph_node(const carve_model *m, carve_graph_id g, size_t i);

/* Creates an empty graph meant to become a GRAPH attribute of a node of
 * `parent`; its nodes may read values of `parent` and its ancestors. */
carve_graph_id carve_graph_new_subgraph(carve_model *m, carve_graph_id parent, const char *name);

/* Adds a graph input. dims may be NULL when rank < 0 (rank unknown). */
carve_value_id carve_graph_add_input(carve_model *m, carve_graph_id g, const char *name,
                                     carve_dtype dtype, int rank, const carve_dim *dims);
/* Adds an initializer; data holds the raw little-endian bytes (int4/uint4
 * packed two per byte, low nibble first); nbytes must match the shape. For
 * CARVE_STRING use carve_graph_add_string_initializer(). */
carve_value_id carve_graph_add_initializer(carve_model *m, carve_graph_id g, const char *name,
                                           carve_dtype dtype, int rank, const int64_t *dims,
                                           const void *data, size_t nbytes);
/* Lists value v as an output of g. CARVE_ERR_ARG for a bad graph or value,
 * CARVE_ERR_NOMEM. */
carve_status carve_graph_add_output(carve_model *m, carve_graph_id g, carve_value_id v);

/* Adds a node whose outputs are new values named out_names[i] (NULL or ""
 * for an omitted optional output). name may be NULL: the node is then named
 * from its op type and first output. inputs may hold CARVE_NONE for omitted
 * optional inputs. Returns CARVE_NONE on error (message on the context). */
carve_node_id carve_graph_add_node(carve_model *m, carve_graph_id g, const char *op_type,
                                   const char *domain, const char *name,
                                   size_t n_in, const carve_value_id *inputs,
                                   size_t n_out, const char *const *out_names);

/* ---------------------------------------------------------------- nodes */

/* n's name (unique in the model), owned by m. */
const char *carve_node_name(const carve_model *m, carve_node_id n);
/* n's op type and domain ("" for ONNX), owned by m. */
const char *carve_node_op(const carve_model *m, carve_node_id n);
/* n's domain, "" for ONNX, owned by m. */
const char *carve_node_domain(const carve_model *m, carve_node_id n);
/* The graph n belongs to. */
carve_graph_id carve_node_graph(const carve_model *m, carve_node_id n);
/* Inputs and outputs of n: the count, then the i-th (i < count, not
 * checked); an omitted optional one is CARVE_NONE. */
size_t carve_node_input_count(const carve_model *m, carve_node_id n);
/* The i-th input of n, CARVE_NONE when omitted. */
carve_value_id carve_node_input(const carve_model *m, carve_node_id n, size_t i);
/* Number of outputs of n. */
size_t carve_node_output_count(const carve_model *m, carve_node_id n);
/* The i-th output of n, CARVE_NONE when omitted. */
carve_value_id carve_node_output(const carve_model *m, carve_node_id n, size_t i);
/* Looks a node up by its carve name (model-wide); CARVE_NONE if absent. */
carve_node_id carve_model_find_node(const carve_model *m, const char *name);

/* Attribute kinds; the numbers are ONNX's AttributeProto.AttributeType. */
typedef enum carve_attr_kind {
    CARVE_ATTR_UNDEFINED = 0,
    CARVE_ATTR_FLOAT = 1,
    CARVE_ATTR_INT = 2,
    CARVE_ATTR_STRING = 3,
    CARVE_ATTR_TENSOR = 4,
    CARVE_ATTR_GRAPH = 5,
    CARVE_ATTR_FLOATS = 6,
    CARVE_ATTR_INTS = 7,
    CARVE_ATTR_STRINGS = 8,
    CARVE_ATTR_TENSORS = 9,
    CARVE_ATTR_GRAPHS = 10,
    CARVE_ATTR_SPARSE_TENSOR = 11,
    CARVE_ATTR_SPARSE_TENSORS = 12,
    CARVE_ATTR_TYPE_PROTO = 13,
    CARVE_ATTR_TYPE_PROTOS = 14
} carve_attr_kind;

/* Setters replace an attribute of the same name; values and strings are
 * copied into the model. CARVE_ERR_ARG for a bad node or an empty name,
 * CARVE_ERR_NOMEM. */
carve_status carve_node_set_attr_int(carve_model *m, carve_node_id n, const char *name, int64_t v);
/* A FLOAT attribute. */
carve_status carve_node_set_attr_float(carve_model *m, carve_node_id n, const char *name, float v);
/* A STRING attribute from the NUL-terminated s. */
carve_status carve_node_set_attr_string(carve_model *m, carve_node_id n, const char *name,
                                        const char *s);
/* An INTS attribute of count values. */
carve_status carve_node_set_attr_ints(carve_model *m, carve_node_id n, const char *name,
                                      size_t count, const int64_t *v);
/* A FLOATS attribute of count values. */
carve_status carve_node_set_attr_floats(carve_model *m, carve_node_id n, const char *name,
                                        size_t count, const float *v);
/* A STRINGS attribute of count NUL-terminated strings. */
carve_status carve_node_set_attr_strings(carve_model *m, carve_node_id n, const char *name,
                                         size_t count, const char *const *v);
/* A tensor attribute (Constant's `value`, ConstantOfShape's `value`...). */
carve_status carve_node_set_attr_tensor(carve_model *m, carve_node_id n, const char *name,
                                        carve_dtype dtype, int rank, const int64_t *dims,
                                        const void *data, size_t nbytes);
/* Hands graph g (made by carve_graph_new_subgraph on this node's graph) to
 * the node as a GRAPH attribute; GRAPHS takes several. */
carve_status carve_node_set_attr_graph(carve_model *m, carve_node_id n, const char *name,
                                       carve_graph_id g);
/* A GRAPHS attribute of count subgraphs, each handed over as with
 * carve_node_set_attr_graph; CARVE_ERR_ARG, nothing set, when one cannot be. */
carve_status carve_node_set_attr_graphs(carve_model *m, carve_node_id n, const char *name,
                                        size_t count, const carve_graph_id *gs);

/* Reads an attribute; false when absent or of another kind. */
bool carve_node_attr_int(const carve_model *m, carve_node_id n, const char *name, int64_t *v);
/* A FLOAT attribute into *v; false when absent or of another kind. */
bool carve_node_attr_float(const carve_model *m, carve_node_id n, const char *name, float *v);
/* The string attribute (bytes, may hold NUL); *len receives its length. */
const char *carve_node_attr_string(const carve_model *m, carve_node_id n, const char *name,
                                   size_t *len);
/* n's attributes in order: the count, then the name (owned by m) and kind
 * of the i-th (i < count, not checked). */
size_t carve_node_attr_count(const carve_model *m, carve_node_id n);
/* The name of n's i-th attribute, owned by m. */
const char *carve_node_attr_name(const carve_model *m, carve_node_id n, size_t i);
/* The kind of n's i-th attribute. */
carve_attr_kind carve_node_attr_kind(const carve_model *m, carve_node_id n, size_t i);

/* ---------------------------------------------------------------- values */

/* Where a value comes from. Later passes depend on this distinction. */
typedef enum carve_value_kind {
    CARVE_VALUE_INPUT = 1, /* a graph input: only known at run time */
    CARVE_VALUE_CONST,     /* an initializer or a Constant node's output */
    CARVE_VALUE_NODE,      /* the output of any other node */
    CARVE_VALUE_UNDEFINED  /* nothing defines it (the verifier rejects it) */
} carve_value_kind;

/* v's name (owned by m), what defines it, and the graph it lives in. Value
 * ids are not checked: take them from the graph and node accessors. */
const char *carve_value_name(const carve_model *m, carve_value_id v);
/* What defines v: a graph input, a constant, a node, or nothing. */
carve_value_kind carve_value_kind_of(const carve_model *m, carve_value_id v);
/* The graph v lives in. */
carve_graph_id carve_value_graph(const carve_model *m, carve_value_id v);
/* The node producing v, CARVE_NONE for inputs and initializers. */
carve_node_id carve_value_producer(const carve_model *m, carve_value_id v);
/* v's type: kind (tensor, sequence...) and element type (CARVE_UNDEFINED
 * when unknown). */
carve_type_kind carve_value_type_kind(const carve_model *m, carve_value_id v);
/* v's element type, CARVE_UNDEFINED when unknown. */
carve_dtype carve_value_dtype(const carve_model *m, carve_value_id v);
/* Rank, or -1 when the shape is unknown. */
int carve_value_rank(const carve_model *m, carve_value_id v);
/* Dim `axis` of v (param names a symbolic dim, owned by m), or {-1, NULL}
 * when unknown or axis is out of range. */
carve_dim carve_value_dim(const carve_model *m, carve_value_id v, int axis);
/* Sets a value's type (e.g. of a node output, for value_info); dims are
 * copied. CARVE_ERR_ARG for a bad value, dtype or rank, CARVE_ERR_NOMEM. */
carve_status carve_value_set_type(carve_model *m, carve_value_id v, carve_dtype dtype, int rank,
                                  const carve_dim *dims);
/* Looks a value up by name in graph g and, failing that, its ancestors. */
carve_value_id carve_graph_find_value(const carve_model *m, carve_graph_id g, const char *name);
/* Initializer data (raw bytes) of a value, NULL when not an initializer;
 * 16-byte aligned (external data at an offset that is not a multiple of 16
 * is copied when the model loads, other external data is memory-mapped). */
const void *carve_value_data(const carve_model *m, carve_value_id v, size_t *nbytes);

/* ---------------------------------------------------------------- running */

/* A tensor at run time (reference counted inside; release with
 * carve_tensor_free). */
typedef struct carve_tensor carve_tensor;

/* A zero-filled tensor, owned by the caller (carve_tensor_free). NULL, with
 * no message, when dtype is not a carve_dtype, rank is outside
 * 0..CARVE_MAX_RANK, a dim is negative, the tensor is over 16 GiB or memory
 * runs out: carve_tensor_create says which. */
carve_tensor *carve_tensor_new(carve_dtype dtype, int rank, const int64_t *dims);
/* carve_tensor_new that reports why it fails: CARVE_ERR_ARG with a message
 * on ctx naming the dtype, rank or dim, CARVE_ERR_NOMEM for a tensor over
 * 16 GiB or when memory runs out; *out is NULL then. */
carve_status carve_tensor_create(carve_ctx *ctx, carve_dtype dtype, int rank, const int64_t *dims,
                                 carve_tensor **out);
/* Releases the caller's reference; NULL is a no-op. */
void carve_tensor_free(carve_tensor *t);
/* Element type, rank and dims (t's own array, rank entries). */
carve_dtype carve_tensor_dtype(const carve_tensor *t);
/* t's rank. */
int carve_tensor_rank(const carve_tensor *t);
/* t's dims: its own array of rank entries, valid while t lives. */
const int64_t *carve_tensor_dims(const carve_tensor *t);
/* Raw little-endian element bytes (not for CARVE_STRING). */
void *carve_tensor_data(carve_tensor *t, size_t *nbytes);
/* Number of elements (the product of the dims). */
size_t carve_tensor_count(const carve_tensor *t);
/* Element i as a double (any numeric dtype, float16/bfloat16/float8/int4
 * decoded), and the reverse (rounded to nearest even, ints truncated). */
double carve_tensor_get(const carve_tensor *t, size_t i);
/* Sets element i (i < count) from a double (for any numeric dtype). */
void carve_tensor_set(carve_tensor *t, size_t i, double x);
/* Reads a .npy file or an ONNX TensorProto (.pb) into *out, the caller's
 * (carve_tensor_free); on error *out is NULL and the message names the file. */
carve_status carve_tensor_read(carve_ctx *ctx, const char *path, carve_tensor **out);
/* Writes .npy when the path ends in .npy, else a TensorProto, safely as
 * carve_model_save_file() does. */
carve_status carve_tensor_write(carve_ctx *ctx, const carve_tensor *t, const char *path);

/* Runs the model on carve's reference kernels. inputs[i] binds the main
 * graph's i-th input (NULL: its initializer default; an error if it has
 * none). Inputs are checked against the declared dtypes and shapes, and
 * symbolic dims must bind consistently. outputs[i] receives the i-th
 * output (release each with carve_tensor_free). The model keeps the
 * buffers of its run's large tensors (about the run's peak working set)
 * for its next run, which then touches no fresh memory; carve_model_trim
 * gives them back, carve_model_free frees them. Runs of one model must not
 * overlap (a model, like its context, belongs to one thread at a time). */
carve_status carve_model_run(carve_model *m, carve_tensor *const *inputs, carve_tensor **outputs);
/* Told of each tensor a run computes: v is the node output's value id (in
 * whichever graph: If/Loop/Scan bodies and Delegate bodies included, a
 * Loop body's values once per iteration), t valid only during the call. */
typedef void (*carve_value_fn)(void *user, carve_value_id v, const carve_tensor *t);
/* carve_model_run_target (t may be NULL) calling fn (may be NULL) with
 * every tensor a node computes, in the order computed. */
carve_status carve_model_run_traced(carve_model *m, const carve_target *t, carve_tensor *const *inputs,
                                    carve_tensor **outputs, carve_value_fn fn, void *user);
/* Gives back the buffers carve_model_run keeps between runs. */
void carve_model_trim(carve_model *m);
/* The same, with Delegate bodies of target t run under t's simulator (for
 * built-in targets a Delegate finds its profile by name anyway). */
carve_status carve_model_run_target(carve_model *m, const carve_target *t, carve_tensor *const *inputs,
                                    carve_tensor **outputs);

/* ---------------------------------------------------------------- targets */

/* A profile shipped with carve: "htp", "gpu", "lpai", "cpu" (or one a
 * backend registered on ctx brings). *out is the caller's
 * (carve_target_free); CARVE_ERR_ARG, *out NULL, for an unknown name (the
 * message lists the built-in ones). */
carve_status carve_target_builtin(carve_ctx *ctx, const char *name, carve_target **out);
/* A target profile from a JSON file (docs/targets.md); errors name the file
 * and field. *out is NULL on failure; free it with carve_target_free. */
carve_status carve_target_load_file(carve_ctx *ctx, const char *path, carve_target **out);
/* NULL is a no-op. */
void carve_target_free(carve_target *t);
/* The profile's "name", owned by t. */
const char *carve_target_name(const carve_target *t);

/* ---------------------------------------------------------------- folding */

/* Why folding left an op that reads only constants as an op. The names
 * (carve_fold_guard_name) are part of the report's format. */
typedef enum carve_fold_guard {
    CARVE_GUARD_IMPURE = 0,   /* "impure": random ops, anything the op table marks impure */
    CARVE_GUARD_NON_TENSOR,   /* "non_tensor": results that are sequences or optionals */
    CARVE_GUARD_BLOW_UP,      /* "blow_up": output > 2x its constant inputs' bytes and > max_bytes */
    CARVE_GUARD_QUANT_WEIGHT, /* "quantized_weight": DequantizeLinear of a quantized weight */
    CARVE_GUARD_CONTROL_FLOW, /* "control_flow": Loop, Scan, an If whose condition is not constant */
    CARVE_GUARD_COUNT
} carve_fold_guard;

/* A static name for guard g ("impure", "blow_up", ...; "unknown" out of
 * range). */
const char *carve_fold_guard_name(carve_fold_guard g);

typedef struct carve_fold_opts {
    /* The blow-up guard: a result of more than max_bytes bytes that is also
     * more than twice the bytes of its constant inputs stays an op. 0 means
     * 1 MiB (1048576). The factor two is fixed. */
    size_t max_bytes;
    /* Recompose the patterns exporters write for LayerNormalization, Gelu
     * and HardSwish into those ops (docs/recompose.md), where the model's
     * opset has them. carve_lower decides this itself per target
     * (carve_lower_opts.no_recompose). */
    bool recompose;
} carve_fold_opts;

/* What carve_fold did. Node counts are over all graphs (subgraphs
 * included). Constant bytes are those of initializers and Constant nodes:
 * bytes_before + bytes_added - bytes_removed == bytes_after. */
typedef struct carve_fold_stats {
    uint32_t nodes_before, nodes_after;
    uint32_t folded;        /* nodes computed at compile time (Constant nodes included):
                             * their outputs are initializers now */
    uint32_t removed;       /* nodes gone otherwise: dead, no-ops, fused, an If with a
                             * constant condition and its untaken branch, layout ops
                             * moved onto quantized weights */
    uint32_t if_inlined;    /* Ifs replaced by the branch their constant condition takes */
    uint32_t layout_moved;  /* layout ops after a weight's DequantizeLinear applied to the
                             * integer weight instead */
    uint32_t bn_fused;      /* BatchNormalizations folded into a Conv or Gemm */
    uint32_t gemm_fused;    /* MatMul + Add pairs made one Gemm */
    uint32_t inits_removed; /* initializers nothing reads any more */
    uint32_t inits_deduped; /* initializers equal to another one, now read from it */
    uint64_t bytes_before, bytes_after, bytes_added, bytes_removed;
    uint32_t refused[CARVE_GUARD_COUNT]; /* nodes each guard kept from folding */
    uint32_t recomposed;    /* patterns recomposed into one op (their nodes count as removed) */
} carve_fold_stats;

/* Folds m in place: initializers, Constant nodes and everything computable
 * from them alone (Shape and Size of statically known shapes included)
 * become initializers, computed with carve's reference kernels, in If, Loop
 * and Scan bodies too; an If with a constant condition is replaced by the
 * branch it takes; a shape known but for one dim makes a Reshape's shape a
 * constant with -1. Ops that compute nothing (Identity, a Cast to the same
 * type, a Mul by ones...) go. BatchNormalization after a Conv or Gemm with
 * constant float weights is folded into them, MatMul + Add of a constant
 * bias becomes Gemm, layout ops after a quantized weight's DequantizeLinear
 * are applied to the integer weight; dead nodes and unused initializers go
 * and equal initializers are stored once. Random ops, sequences, the
 * DequantizeLinear of a quantized weight, Loop and Scan, and results over
 * max_bytes that more than double their inputs are never folded
 * (docs/folding.md). Nodes that survive keep their names; graph outputs keep
 * their names. opts may be NULL (defaults); stats may be NULL. The model
 * verifies afterwards; on error it should be discarded. */
carve_status carve_fold(carve_model *m, const carve_fold_opts *opts, carve_fold_stats *stats);

/* ---------------------------------------------------------------- opset upgrade */

typedef struct carve_upgrade_stats {
    int64_t opset_before, opset_after; /* the model's ai.onnx opset */
    uint32_t nodes_rewritten;          /* nodes whose attributes, inputs or op changed */
    uint32_t nodes_added;              /* nodes made (Flatten, Shape, Reshape around old Softmax) */
    char refused[512];                 /* why the model was left at its opset ("" when it was not) */
} carve_upgrade_stats;

/* Brings m's ai.onnx nodes, subgraphs included, to the newest ai.onnx
 * opset carve knows, rewriting the ops whose form changed (old Softmax,
 * Upsample, attributes that became inputs...: docs/upgrade.md) so that
 * results stay the same. Nodes keep their names; nodes made are named
 * "<node>/<piece>". All or nothing: when some node has no faithful rewrite
 * the model is left unchanged and stats->refused names it (the call still
 * returns CARVE_OK). A model at that opset or newer is left as it is. */
carve_status carve_upgrade(carve_model *m, carve_upgrade_stats *stats);

/* ---------------------------------------------------------------- lowering */

/* One entry of carve_lower_opts.skip_on. */
typedef struct carve_skip_on {
    const char *target;
    const char *node;
} carve_skip_on;

/* The legalizations of carve_lower_opts.disable_legalize. */
enum {
    CARVE_LEGALIZE_INT64 = 1u << 0,      /* int64 tensors of a partition computed in int32 */
    CARVE_LEGALIZE_UINT8_CAST = 1u << 1, /* a Cast from uint8 to float through int32 */
    CARVE_LEGALIZE_SLICE_CLAMP = 1u << 2 /* int64 Slice bounds outside int32 clamped (else they wrap) */
};

typedef struct carve_lower_opts {
    /* The CPU fallback profile: which ops the CPU runtime has. NULL: the
     * core set (carve's built-in "cpu" profile). */
    const carve_target *cpu;
    /* Skip lists: node names as in the input model, op types. */
    const char *const *cpu_nodes;
    size_t n_cpu_nodes;
    const char *const *cpu_ops;
    size_t n_cpu_ops;
    /* Partitions with fewer nodes go to CPU (0 or 1: no limit). */
    uint32_t min_partition_nodes;
    /* Legalizations to leave out, CARVE_LEGALIZE_* or'ed (tests prove each
     * one matters). */
    uint32_t disable_legalize;
    /* Skip constant folding (carve_fold), which otherwise runs first. */
    bool no_fold;
    /* carve_fold_opts.max_bytes for that folding (0: 1 MiB). */
    size_t fold_max_bytes;
    /* Leave decomposed patterns as they are. Otherwise folding recomposes
     * them into the ops the target lists (LayerNormalization, Gelu,
     * HardSwish; docs/recompose.md); never a node named in cpu_nodes. */
    bool no_recompose;
    /* Per-target skip lists: node `node` (as in the input model) is not
     * placed on target `target` (it may go to the next target). */
    const struct carve_skip_on *skip_on;
    size_t n_skip_on;
    /* Skip the opset upgrade (carve_upgrade), which otherwise runs first. */
    bool no_upgrade;
    /* Lower nodes whose domain is at an opset newer than carve knows (ONNX
     * opset 21, ai.carve 1) with the newest behaviour carve knows, instead
     * of refusing them ("unsupported_opset: node ..."). Only domains that
     * nodes use are checked. */
    bool allow_newer_opset;
    /* Debugging: after each stage named here (carve_lower_stage_name; "all"
     * names every stage), the model's text dump (carve_model_dump; in the
     * rounds' stages followed by where each node stands) is written to
     * dump_dir/NN-STAGE.txt: NN the stage's place in the pipeline (01..),
     * ".rN" before ".txt" for the stages run once per round (round N), and
     * ".cK" for the K-th lowering when a backend's refusals start it again
     * (K > 1). dump_dir must be a folder carve can write in; each file is
     * written whole or not at all (carve_write_file). An unknown name, or
     * names without dump_dir, is CARVE_ERR_ARG before anything is done;
     * the message names the stage and lists the valid ones. */
    const char *const *dump_after;
    size_t n_dump_after;
    const char *dump_dir;
} carve_lower_opts;

/* The name of lowering stage i in pipeline order ("check", "skip", ...,
 * "report"), NULL past the last: the names carve_lower_opts.dump_after
 * takes (docs/ARCHITECTURE.md, "Lowering stages"). */
const char *carve_lower_stage_name(size_t i);

/* What lowering did: where each node of the input model went and why. */
typedef struct carve_report carve_report;

/* Lowers m in place for target t: constant folding (carve_fold, unless
 * opts->no_fold), capability checks, minimal valid
 * partitioning, the target's rules applied to the real partitions to a fixed
 * point (kept-whole ops delegated whole or decomposed on CPU), each partition
 * replaced by an ai.carve Delegate node carrying its legalized body. The
 * model verifies afterwards; on error it is left unchanged only up to the
 * failing round, so callers should discard it. *report may be NULL. */
carve_status carve_lower(carve_model *m, const carve_target *t, const carve_lower_opts *opts, carve_report **report);
/* Lowers m for several targets in priority order (1 to 8): each node goes
 * to the first target that takes it, then the next, then the CPU; each
 * target's rules hold for its own partitions, to one joint fixed point
 * (docs/targets.md, "Several targets"). A CPU profile cannot be listed.
 * carve_lower(m, t, ...) is carve_lower_targets(m, &t, 1, ...). */
carve_status carve_lower_targets(carve_model *m, const carve_target *const *targets, size_t n_targets,
                                 const carve_lower_opts *opts, carve_report **report);
/* The report as JSON (docs/report.md); valid while the report lives. */
const char *carve_report_json(carve_report *r);
/* A few lines for humans: nodes delegated, partitions, rounds, reasons. */
const char *carve_report_summary(carve_report *r);
/* Frees the JSON text once it has been written (carve_outputs_add_report
 * has its bytes; a 1M-node model's report is about 170 MB, memory the
 * model's saving can then use again). carve_report_json then returns
 * NULL and carve_outputs_add_report refuses the report; the summary
 * stays. NULL, or a second call, is a no-op. */
void carve_report_drop_json(carve_report *r);
/* Frees r and its JSON and summary texts; NULL is a no-op. */
void carve_report_free(carve_report *r);

/* Writes each Delegate body of a lowered model as a standalone ONNX model
 * DIR/<delegate name>.onnx (all or none, docs/files.md) (the form a vendor's converter takes): the body's
 * inputs and outputs, the outer constants it reads as initializers, the
 * Delegate's target and encodings as metadata_props "carve.target" and
 * "carve.encodings". *count gets the number of files written. */
carve_status carve_export_partitions(carve_model *m, const char *dir, size_t *count);

/* ---------------------------------------------------------------- artifacts (docs/artifacts.md) */

/* AIMET encodings file versions: 1.0.0 (lists with enc_type PER_TENSOR,
 * PER_CHANNEL, PER_BLOCK) and the older 0.6.1 (maps, no per-block). */
typedef enum carve_aimet_version {
    CARVE_AIMET_1_0_0 = 0,
    CARVE_AIMET_0_6_1
} carve_aimet_version;

typedef struct carve_export_opts {
    /* Partitions without their QuantizeLinear/DequantizeLinear pairs
     * (weights dequantized to float), the encodings file saying how each
     * float tensor was quantized. false: partitions keep their Q/DQ nodes. */
    bool strip_qdq;
    carve_aimet_version encodings_version;
} carve_export_opts;

/* carve_export_partitions with options (NULL: defaults): each Delegate body
 * as a standalone model DIR/<delegate>.onnx at the lowest IR version its
 * opset and dtypes need, with no ai.carve op; DIR/<delegate>.encodings (AIMET
 * format) for a body with Q/DQ nodes; DIR/manifest.json listing the
 * partitions in execution order, their inputs and outputs, and the CPU
 * nodes between them. All or none (docs/files.md). */
carve_status carve_export_partitions_opts(carve_model *m, const char *dir, const carve_export_opts *opts,
                                          size_t *count);

/* The AIMET encodings of the QuantizeLinear/DequantizeLinear nodes of m's
 * main graph with constant scales and zero points: an activation encoding
 * for the float input X of each QuantizeLinear (and the output of a
 * DequantizeLinear of a quantized runtime value no QuantizeLinear of the
 * graph makes: a quantized input), a param encoding for the output of each
 * DequantizeLinear of a constant. *json (release with carve_free) is
 * NULL when there is none. Per-block encodings in version 0.6.1 are an
 * error. */
carve_status carve_aimet_encodings(carve_model *m, carve_aimet_version v, char **json);
/* The same, and removes the pairs from m's main graph: for X -> Q -> DQ ->
 * X', readers of X' read X (an Identity keeps a graph output's name); a
 * constant's DequantizeLinear becomes a float initializer named as its
 * output when quantizing it again gives back the same integers (else it
 * stays, as int32 biases above 2^24 do). Pairs that would change what the
 * graph computes when applied again (a requantization, a graph output, X
 * read by other ops) stay; *kept (may be NULL) counts the Q/DQ nodes left. */
carve_status carve_strip_qdq(carve_model *m, carve_aimet_version v, char **json, uint32_t *kept);

typedef struct carve_qdq_stats {
    uint32_t activations; /* Q/DQ pairs inserted */
    uint32_t params;      /* weights stored quantized, read through a DequantizeLinear */
    uint32_t casts;       /* float16 round trips (dtype FLOAT, 16 bits) */
    uint32_t skipped;     /* encodings of tensors the graph already quantizes */
} carve_qdq_stats;

/* Applies an AIMET encodings file (1.0.0 or 0.6.1) to m's main graph as
 * QuantizeLinear/DequantizeLinear: a param encoding of an initializer
 * quantizes it (per tensor, per channel on the axis the weight's reader
 * implies, per block), an activation encoding puts a Q/DQ pair after the
 * tensor. Checks the whole file before changing m: a name m lacks, a
 * bitwidth no ONNX type holds, an encoding the model's opset cannot
 * express, or a malformed file is an error naming the entry and field, and
 * m is unchanged. stats may be NULL. */
carve_status carve_apply_encodings(carve_model *m, const char *json, size_t len, carve_qdq_stats *stats);
/* The same, reading the file at path (refused unless a regular file;
 * docs/files.md); errors start with the path. */
carve_status carve_apply_encodings_file(carve_model *m, const char *path, carve_qdq_stats *stats);

/* ---------------------------------------------------------------- files */

/* The files one command writes, written together (docs/files.md). Each
 * output goes to a temporary `.NAME.carve-tmp.PID.RAND` in its folder;
 * carve_outputs_commit() flushes and syncs every temporary and only then
 * renames them into place, in the order they were added, so when any output
 * fails no old file is replaced. An output is refused (and the set fails)
 * when its path exists and is not a regular file (a device, FIFO, socket or
 * directory, also through a symlink), when it is a protected input, or when
 * another output of the set is the same file (by device and inode, through
 * symlinks and hard links; by folder and name for files not there yet).
 * "-" is standard output, written after the renames. Adding the first
 * output of a folder removes stale temporaries there whose PID is dead.
 * Freeing a set that was not committed removes its temporaries.
 * `what` names an output in messages ("report"; NULL: "file"). */
typedef struct carve_outputs carve_outputs;
/* An empty set on ctx (errors go there); NULL when out of memory. */
carve_outputs *carve_outputs_new(carve_ctx *ctx);
/* path is an input of the command (`what`: "input model"): no output may be it. */
carve_status carve_outputs_protect(carve_outputs *o, const char *path, const char *what);
/* Adds a file of n bytes (written to its temporary now). */
carve_status carve_outputs_add_bytes(carve_outputs *o, const char *path, const char *what, const void *data,
                                     size_t n);
/* The model as carve_model_save_file() writes it (its source file and its
 * external data files are protected); the external data file is added
 * before the model, so it is renamed first. */
carve_status carve_outputs_add_model(carve_outputs *o, carve_model *m, const char *path, const carve_save_opts *opts);
/* carve_tensor_write() into the set. */
carve_status carve_outputs_add_tensor(carve_outputs *o, const carve_tensor *t, const char *path);
/* carve_export_partitions() into the set (dir must exist). */
carve_status carve_outputs_add_partitions(carve_outputs *o, carve_model *m, const char *dir, size_t *count);
/* carve_export_partitions_opts() into the set (opts may be NULL). */
carve_status carve_outputs_add_partitions_opts(carve_outputs *o, carve_model *m, const char *dir,
                                               const struct carve_export_opts *opts, size_t *count);
/* The report's JSON and a newline (what `carve lower --report` writes),
 * written from the report's own memory: no copy of a large report. */
carve_status carve_outputs_add_report(carve_outputs *o, carve_report *r, const char *path);
/* Syncs and renames every output into place, or none: see above. An
 * error names the output and path. */
carve_status carve_outputs_commit(carve_outputs *o);
/* Frees o, removing the temporaries of a set not committed. NULL is a no-op. */
void carve_outputs_free(carve_outputs *o);
/* One file written safely (a set of one). */
carve_status carve_write_file(carve_ctx *ctx, const char *path, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* CARVE_H */

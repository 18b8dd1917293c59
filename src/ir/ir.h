/*
 * ir.h: carve's internal IR. One section per file of src/ir/.
 *
 * A model owns three growing arrays: graphs, nodes and values. Everything
 * refers to everything else by index into those arrays (ids), so growing an
 * array never leaves a dangling pointer. Strings, tensors and small fixed
 * arrays live in the model's arena and die with it.
 */
#ifndef CARVE_IR_H
#define CARVE_IR_H

#include "carve.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ================================================================ alloc.c */

void *cv_malloc(size_t n);
void *cv_realloc(void *p, size_t n);
void cv_free(void *p);
/* Advises the kernel to back the whole 2 MiB pages inside [p, p + n) with
 * huge pages (Linux transparent huge pages; elsewhere nothing): for big
 * blocks about to be written whole, one fault per 2 MiB instead of 512. */
void cv_advise_huge(void *p, size_t n);
/* A zeroed cv_malloc'd block of n bytes (the caller cv_frees it); NULL when
 * out of memory, with CARVE_ERR_NOMEM "out of memory" and then ` doing`
 * (when not NULL: "creating a model") on ctx. */
void *cv_zalloc(carve_ctx *ctx, size_t n, const char *doing);
/* A cv_malloc'd copy of s (the caller cv_frees it); NULL when out of memory. */
char *cv_strdup(const char *s);
/* Room for one more element in array v of *cap elements of el bytes:
 * returns the (possibly moved) array with *cap doubled (first when 0), or
 * NULL when out of memory, v and *cap then untouched. */
void *cv_grow_array(void *v, uint32_t *cap, size_t el, uint32_t first);

/* Arena: bump allocation in chunks, freed whole. */
typedef struct cv_arena_chunk cv_arena_chunk;
typedef struct cv_arena {
    cv_arena_chunk *head;
    size_t used, cap; /* in head */
    bool failed;      /* an allocation failed: the owner must report NOMEM */
} cv_arena;

void *cv_arena_alloc(cv_arena *a, size_t n);  /* zeroed, 16-byte aligned */
void *cv_arena_fill(cv_arena *a, size_t n, int byte); /* every byte `byte` (to 16), aligned */
char *cv_arena_strdup(cv_arena *a, const char *s);
char *cv_arena_strndup(cv_arena *a, const char *s, size_t n);
void *cv_arena_memdup(cv_arena *a, const void *p, size_t n);
char *cv_arena_printf(cv_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a + sep + b, without printf's cost (names are made on hot paths). */
char *cv_arena_join(cv_arena *a, const char *x, const char *sep, const char *y);
/* base + sep + k in decimal ("x#2", "x:1"), the same way. */
char *cv_arena_numbered(cv_arena *a, const char *base, char sep, uint32_t k);
void cv_arena_free(cv_arena *a);

/* Growable array of uint32_t ids. */
typedef struct cv_ids {
    uint32_t *v;
    uint32_t n, cap;
} cv_ids;
bool cv_ids_push(cv_ids *a, uint32_t x);
/* *dst becomes a copy of src's ids (a snapshot of a list a pass changes);
 * false when out of memory. */
bool cv_ids_copy(cv_ids *dst, const cv_ids *src);
void cv_ids_free(cv_ids *a);

/* Growable byte buffer (text dumps, JSON). */
typedef struct cv_buf {
    char *s;
    size_t n, cap;
    bool failed;
} cv_buf;
void cv_buf_grow_put(cv_buf *b, const char *s, size_t n);
/* Room for n more bytes and the NUL at b->s + b->n; false (b->failed set)
 * when out of memory. */
bool cv_buf_grow(cv_buf *b, size_t n);
static inline bool cv_buf_reserve(cv_buf *b, size_t n)
{
    return (!b->failed && b->n + n + 1 <= b->cap) || cv_buf_grow(b, n);
}
static inline void cv_buf_put(cv_buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 <= b->cap) { /* the common case, inline */
        memcpy(b->s + b->n, s, n);
        b->n += n;
        b->s[b->n] = 0;
        return;
    }
    cv_buf_grow_put(b, s, n);
}
/* n bytes from s to d, n small (names), without a call: overlapping
 * moves; nothing past d + n is written. */
static inline void cv_copy_small(void *d, const void *s, size_t n)
{
    unsigned char *o = d;
    const unsigned char *i = s;
    if (n > 16) {
        memcpy(o, i, n);
    } else if (n >= 8) {
        memcpy(o, i, 8);
        memcpy(o + n - 8, i + n - 8, 8);
    } else if (n >= 4) {
        memcpy(o, i, 4);
        memcpy(o + n - 4, i + n - 4, 4);
    } else if (n) {
        o[0] = i[0];
        o[n / 2] = i[n / 2];
        o[n - 1] = i[n - 1];
    }
}
void cv_buf_puts(cv_buf *b, const char *s);
void cv_buf_printf(cv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cv_buf_free(cv_buf *b);

/* ================================================================ strmap.c */

/* Open-addressing map from string to uint32_t. Keys are not copied. */
typedef struct cv_strslot {
    const char *key; /* NULL: empty */
    uint32_t hash, val;
} cv_strslot;
typedef struct cv_strmap {
    cv_strslot *slots;
    uint32_t cap, n;
} cv_strmap;
uint64_t cv_hash_bytes(const void *p, size_t n, uint64_t seed);
/* Eight bytes a step, for hash tables and grouping (names are hashed on
 * every lookup, weights whole): never stored or shown, so it may change;
 * cv_hash_bytes is the stable one. seed chains calls. */
uint64_t cv_hash_words(const void *p, size_t n, uint64_t seed);
bool cv_strmap_put(cv_strmap *m, const char *key, uint32_t val); /* replaces */
uint32_t cv_strmap_get(const cv_strmap *m, const char *key);      /* CARVE_NONE if absent */
/* Adds key -> val unless key is there: *old is then its value (the map
 * unchanged), else CARVE_NONE. One look-up where get then put hash twice.
 * false when out of memory. */
bool cv_strmap_add(cv_strmap *m, const char *key, uint32_t val, uint32_t *old);
/* Room for n keys in all without growing (a loader knows its counts). */
bool cv_strmap_reserve(cv_strmap *m, uint32_t n);
/* Starts loading the slot a look-up or add of key would read first, for a
 * loop over many keys that does that a few keys later: a map bigger than
 * the caches (a 1M-name scope is 32 MB) costs a memory miss per key. */
void cv_strmap_prefetch(const cv_strmap *m, const char *key);
/* How many keys ahead such a loop prefetches. */
enum { CV_STRMAP_AHEAD = 8 };
void cv_strmap_del(cv_strmap *m, const char *key);
/* Deletes key only while it maps to val (one lookup, not get then del). */
void cv_strmap_del_if(cv_strmap *m, const char *key, uint32_t val);
void cv_strmap_free(cv_strmap *m);

/* ================================================================ ctx.c */

struct carve_backend;
struct carve_ctx {
    carve_status code;
    char msg[1024];
    /* The backend registry (src/backends/registry.c fills it): built-in
     * backends first, then registered or loaded ones; dl[i] is the shared
     * object backends[i] came from, or NULL. */
    const struct carve_backend **backends;
    void **dl;
    uint32_t n_backends, cap_backends;
};
/* The backend registered on ctx under name, or NULL (a lookup for the
 * layers below src/backends: the runtime and lowering). */
const struct carve_backend *cv_ctx_backend(const carve_ctx *ctx, const char *name);
/* Records an error on ctx and returns its status. */
carve_status cv_error(carve_ctx *ctx, carve_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
carve_status cv_verror(carve_ctx *ctx, carve_status code, const char *fmt, va_list ap);

/* ================================================================ tensor.c */

typedef struct cv_bytes {
    const uint8_t *p;
    size_t n;
} cv_bytes;

/* Fields of a protobuf message that Debian's onnx.proto does not know (IR 10
 * metadata_props, node overloads...) or that carve keeps opaque (functions,
 * sparse initializers): kept as raw wire fields, written back verbatim. */
/* As protobuf-c keeps unknown fields: for length-delimited fields (wire type
 * 2) `data` starts with the varint length. */
typedef struct cv_rawfield {
    uint32_t tag;
    uint8_t wire_type;
    size_t len;
    const uint8_t *data;
} cv_rawfield;
typedef struct cv_raw {
    uint32_t n, cap; /* cap: room in f (the importer grows it by doubling) */
    cv_rawfield *f;
} cv_raw;

typedef struct cv_tensor {
    const char *name;
    const char *doc;
    carve_dtype dtype;
    int rank;
    int64_t *dims;
    size_t nelem;
    const void *data; /* raw little-endian bytes (arena or mmap), NULL for strings */
    size_t nbytes;
    cv_bytes *strs; /* CARVE_STRING: nelem strings */
    cv_raw raw;
} cv_tensor;

/* Bytes a dense tensor of nelem elements takes; SIZE_MAX when undefined. */
size_t cv_dtype_nbytes(carve_dtype t, size_t nelem);
bool cv_dtype_valid(int t);
/* Element count of dims, false on a negative dim or overflow past limit. */
bool cv_shape_nelem(int rank, const int64_t *dims, size_t limit, size_t *out);
/* FNV-1a of the data, for dumps and comparisons. */
uint64_t cv_tensor_hash(const cv_tensor *t);

/* ================================================================ model.c */

typedef struct cv_type {
    carve_type_kind kind;
    carve_dtype dtype; /* tensors */
    int rank;          /* -1: unknown */
    carve_dim *dims;
    cv_bytes opaque;   /* CARVE_TYPE_OTHER: serialized TypeProto */
    const char *denotation;
} cv_type;

typedef struct cv_attr {
    const char *name;
    carve_attr_kind kind;
    const char *doc;
    const char *ref_attr_name;
    uint32_t n; /* element count of list kinds */
    union {
        float f;
        int64_t i;
        cv_bytes s;
        cv_tensor *t;
        carve_graph_id g;
        float *floats;
        int64_t *ints;
        cv_bytes *strings;
        cv_tensor **tensors;
        carve_graph_id *graphs;
        cv_bytes *opaque; /* sparse tensors, type protos: serialized, n of them */
    } u;
    cv_raw raw;
} cv_attr;

typedef struct cv_node {
    const char *name;
    const char *op;     /* op and domain never change after creation (make a new node) */
    const char *domain; /* "" for ai.onnx */
    const char *doc;
    carve_graph_id graph;
    uint32_t n_in, n_out, n_attr;
    carve_value_id *in;
    carve_value_id *out;
    cv_attr *attr;
    cv_raw raw;
    bool named_by_carve; /* the input had no name: carve made one up */
    bool dead;           /* removed from its graph by a pass; its name stays taken */
    uint32_t def_gen;    /* cv_op_for_node's cache: valid when == model's opset_gen */
    const void *def;
} cv_node;

/* Is n the ONNX (default domain) op `op`? First bytes compared first: the
 * passes ask this of every node many times. For a property shared by
 * several ops ask the op table's flags (cv_op_has) instead. */
static inline bool cv_node_is(const cv_node *n, const char *op)
{
    return !*n->domain && n->op[0] == op[0] && !strcmp(n->op, op);
}

/* Is n an ONNX Constant? The IR sits below the op table (src/ops), so it
 * names the op here, once; the layers above ask the table's
 * CV_OP_CONST_SOURCE column (cv_op_has). */
static inline bool cv_node_is_constant(const cv_node *n)
{
    return cv_node_is(n, "Constant");
}

typedef struct cv_value {
    const char *name;
    carve_graph_id graph;
    carve_node_id producer; /* CARVE_NONE for inputs and initializers */
    uint32_t out_index;
    bool is_input;          /* a graph input (may also have a default) */
    cv_tensor *init;        /* initializer data, or NULL */
    cv_type type;
    const char *doc;
    cv_raw raw;             /* unknown fields of its ValueInfoProto */
} cv_value;

typedef struct cv_graph {
    const char *name;
    const char *doc;
    carve_graph_id parent;  /* CARVE_NONE for the main graph */
    carve_node_id owner;    /* node whose attribute holds it */
    cv_ids inputs, outputs, inits, nodes;
    cv_strmap scope;        /* value names defined in this graph */
    cv_raw raw;
} cv_graph;

typedef struct cv_kv {
    const char *key, *value;
} cv_kv;

typedef struct cv_mapping {
    void *addr;
    size_t len;
} cv_mapping;

struct carve_model {
    carve_ctx *ctx;
    cv_arena arena;
    int64_t ir_version;
    const char *producer_name, *producer_version, *domain, *doc;
    int64_t model_version;
    bool has_model_version;
    uint32_t n_opsets, n_meta;
    const char **opset_domain;
    int64_t *opset_version;
    cv_kv *meta;
    cv_raw raw;        /* unknown fields, functions, training info */
    cv_graph *graphs;
    cv_node *nodes;
    cv_value *values;
    uint32_t n_graphs, n_nodes, n_values;
    uint32_t cap_graphs, cap_nodes, cap_values;
    cv_strmap node_names; /* carve name -> node id, model-wide */
    cv_mapping *maps;     /* memory-mapped external data */
    uint32_t n_maps;
    void **owned;         /* cv_malloc'd blocks tensors point into (big decoded raw_data) */
    uint32_t n_owned;
    struct cv_kept {      /* objects tensors point into, dropped with the model (cv_model_keep) */
        void (*drop)(void *);
        void *p;
    } *kept;
    uint32_t n_kept, cap_kept;
    const char *source_path; /* file it was loaded from, or NULL */
    char **ext_files;        /* external data files it read (real paths, malloc'd): inputs a save must not overwrite */
    uint32_t n_ext_files;
    uint32_t opset_gen;      /* bumped when an opset changes: per-node op caches */
    uint32_t onnx_opset_gen; /* opset_gen when the ai.onnx opset last changed (caches of ai.onnx nodes) */
    int64_t onnx_opset;      /* carve_model_opset(m, ""), kept by carve_model_set_opset */
    uint32_t *scratch;       /* node-indexed scratch for passes (cv_model_scratch) */
    uint32_t scratch_cap;
    /* The runtime's buffer pool, kept between runs (src/ops/val.c);
     * freed through run_pool_free. */
    void *run_pool;
    void (*run_pool_free)(void *);
    /* The Delegates' compiled handles, kept between runs
     * (src/runtime/delegate.c); freed through backend_cache_free. */
    void *backend_cache;
    void (*backend_cache_free)(void *);
    bool use_reference;      /* carve_model_use_reference */
};

/* Exchanges the contents of a and b (both of one context), each keeping
 * its source path: a model restored in place from a copy. */
bool cv_model_swap(carve_model *a, carve_model *b);

/* A node-id-indexed uint32 scratch array of the model (contents undefined),
 * reused by passes that run per graph so they cost O(graph), not O(model). */
uint32_t *cv_model_scratch(carve_model *m);

/* Low-level constructors used by import and by passes. They report NOMEM on
 * the model's context and return CARVE_NONE on failure. */
carve_graph_id cv_graph_new(carve_model *m, carve_graph_id parent, const char *name);
/* A value defined in graph g; the name must be unique in g's scope. */
carve_value_id cv_value_new(carve_model *m, carve_graph_id g, const char *name);
/* m keeps p until it is freed, then calls drop(p): for tensor bytes that
 * live in an object of a higher layer (a computed value). false: no memory
 * (p not kept, drop not called). */
bool cv_model_keep(carve_model *m, void (*drop)(void *), void *p);
carve_node_id cv_node_new(carve_model *m, carve_graph_id g, const char *op, const char *domain,
                          uint32_t n_in, uint32_t n_out);
/* As cv_value_new and cv_node_new for a loader whose strings live as long
 * as m already: kept, not copied. cv_value_define defines nothing when g's
 * scope has the name (CARVE_NONE, *old its value; else *old is CARVE_NONE). */
carve_value_id cv_value_define(carve_model *m, carve_graph_id g, const char *name, carve_value_id *old);
carve_node_id cv_node_new_kept(carve_model *m, carve_graph_id g, const char *op, const char *domain,
                               uint32_t n_in, uint32_t n_out);
/* Room for `nodes` more nodes and `values` more values in m, and `names`
 * more names in graph g's scope, without growing (a loader knows its
 * counts: no copies of the growing arrays). false: no memory (NOMEM). */
bool cv_model_reserve(carve_model *m, carve_graph_id g, uint32_t nodes, uint32_t values, uint32_t names);
cv_attr *cv_node_attr_add(carve_model *m, carve_node_id n, const char *name, carve_attr_kind k);
const cv_attr *cv_node_attr_find(const carve_model *m, carve_node_id n, const char *name);
bool cv_model_nomem(carve_model *m); /* true (and error set) if the arena failed */
/* Is graph `outer` equal to `inner` or one of its ancestors? */
bool cv_graph_encloses(const carve_model *m, carve_graph_id outer, carve_graph_id inner);
/* Removes node n from its graph's node list (it stays in m->nodes, dead, so
 * ids and names never shift). Its outputs lose their producer. */
void cv_node_remove(carve_model *m, carve_node_id n);
/* The same, but n stays listed (dead) until cv_graph_drop_dead(): passes
 * that remove many nodes of one graph take them out in one O(N) sweep, not
 * one search and shift each. */
void cv_node_remove_later(carve_model *m, carve_node_id n);
void cv_graph_drop_dead(carve_model *m, carve_graph_id g);
/* Moves the last `count` nodes of graph g to position `at` of its list. */
void cv_graph_move_tail(carve_model *m, carve_graph_id g, uint32_t count, uint32_t at);
/* Moves value v (defined in its graph) into graph g's scope. */
bool cv_value_move(carve_model *m, carve_value_id v, carve_graph_id g);
/* Position of node n in its graph's list, CARVE_NONE if not listed. */
uint32_t cv_graph_node_pos(const carve_model *m, carve_node_id n);
/* A value name not yet used in graph g's scope: base, base#2, ... */
const char *cv_value_unique_name(carve_model *m, carve_graph_id g, const char *base);
/* Dense tensor in the arena from raw bytes (copied). */
cv_tensor *cv_tensor_new(carve_model *m, carve_dtype dtype, int rank, const int64_t *dims,
                         const void *data, size_t nbytes);

/* ================================================================ names.c */

/* Gives every node of the model a unique, stable name. Nodes keep the name
 * they have; unnamed nodes are named "<op>_<first output>"; collisions get
 * "#2", "#3" in order of first output name. Independent of node order. */
carve_status cv_names_assign(carve_model *m);
/* Names one unnamed node by the same rule (builders adding nodes one by one). */
const char *cv_names_give(carve_model *m, carve_node_id n);
/* Names node n, which a pass creates from node `from`: "<from>/<piece>", made
 * unique with "#2"... Returns the name (in the arena), NULL on NOMEM. */
const char *cv_names_derive(carve_model *m, carve_node_id n, carve_node_id from, const char *piece);

/* ================================================================ topo.c */

/* Stable topological order of graph g's nodes (file order wherever the
 * dependencies allow). On a cycle, fails naming a node on it. */
carve_status cv_topo_sort(carve_model *m, carve_graph_id g);
/* The nodes of graph g, in a topological order that does not depend on the
 * order of its node list: among ready nodes, the smallest name first. Node
 * names do not depend on file order (names.c), so neither does this order.
 * Writes the graph's node count of ids to out; does not change the model and
 * sets no error: returns CARVE_ERR_NOMEM, or CARVE_ERR_INVALID on a cycle. */
carve_status cv_topo_canonical(const carve_model *m, carve_graph_id g, carve_node_id *out);
/* Values defined outside graph g that g or its subgraphs read (captures),
 * appended to out without duplicates. */
bool cv_graph_captures(const carve_model *m, carve_graph_id g, cv_ids *out);

/* ================================================================ verify.c */
/* carve_model_verify() is public. */

/* ================================================================ dump.c */
/* carve_model_dump() is public. */

#endif /* CARVE_IR_H */

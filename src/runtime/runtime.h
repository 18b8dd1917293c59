/* runtime.h: the reference interpreter. One section per file. */
#ifndef CARVE_RUNTIME_H
#define CARVE_RUNTIME_H

#include "../ops/ops.h"

/* ================================================================ interp.c */

/* A Conv/MatMul/Gemm node and the element-wise nodes after it that its
 * kernel applies as an epilogue (fuse.c). */
typedef struct cv_chain {
    carve_node_id head;
    uint32_t n_nodes;
    carve_node_id nodes[CV_EPI_MAX];  /* skipped when the head applied them */
    carve_value_id final;             /* the last node's output: what the head's output becomes */
    cv_epi proto;                     /* steps; ext[i].v bound from ext[] at run time */
    carve_value_id ext[CV_EPI_EXT];
    cv_val *ext_own[CV_EPI_EXT];      /* a Constant node's tensor after the head, wrapped; else NULL */
} cv_chain;

/* Per-graph schedule: which values die after each node, and the fusion
 * plan. Built lazily. */
typedef struct cv_sched {
    bool built;
    uint32_t *release_start; /* per node position, into release[] */
    uint32_t *release;       /* value ids */
    uint32_t *chain_at;      /* per node position: 1 + index into chains[] of the chain it heads, or 0 */
    cv_chain *chains;
    uint32_t n_chains;
} cv_sched;

/* A hook that may run a node instead of its reference kernel (target
 * simulators). Returns CARVE_ERR_UNSUPPORTED to fall through. */
typedef carve_status (*cv_node_hook)(cv_kctx *k, const cv_op_def *def, cv_val **in, uint32_t n_in,
                                     cv_val **out, uint32_t n_out, void *user);

typedef struct cv_interp {
    carve_model *m;
    cv_val **env;         /* by value id, model-wide */
    cv_sched *sched;      /* by graph id */
    const cv_op_def **defs; /* by node id */
    uint32_t n_values, n_graphs, n_nodes;
    cv_node_hook hook;
    void *hook_user;
    uint64_t rng_seed;    /* random ops: seed when the node has none */
    const carve_target *target;  /* the profile the run is for (carve_model_run_target), or NULL:
                                  * handed to the backends that compile the Delegates */
    int depth;
    cv_pool *pool;               /* tensor buffers of the outermost run: the model's, kept between runs */
    carve_value_fn trace;        /* told of every tensor a node computes (carve_model_run_traced) */
    void *trace_user;
    uint8_t *skip;               /* by node id: a chain node its head already applied (fuse.c) */
    uint32_t fused;              /* chains applied by their heads so far (tests, docs/performance.md) */
} cv_interp;

carve_status cv_interp_init(cv_interp *ip, carve_model *m);
void cv_interp_free(cv_interp *ip);
/* Runs graph g. inputs[i] binds the graph's i-th input (NULL: use the
 * initializer default, an error if there is none); outputs[i] receive a
 * reference each. Subgraph runs read outer values from the same env. */
carve_status cv_interp_run(cv_interp *ip, carve_graph_id g, cv_val **inputs, cv_val **outputs);
/* The innermost interpreter running on the calling thread, or NULL. */
cv_interp *cv_interp_current(void);

/* ================================================================ fuse.c */

/* Builds graph g's fusion plan into ip->sched[g] (chain_at, chains);
 * captured: g's values that its nodes' subgraphs read (build_sched). */
carve_status cv_fuse_plan(cv_interp *ip, carve_graph_id g, const cv_ids *captured);
/* Frees what a chain owns (its Constants' wrappers). */
void cv_chain_free(cv_chain *ch);

/* ================================================================ delegate.c */

/* Runs Delegate node k->node through the backend that compiled it (the
 * node's `backend` attribute; "reference" when the model asks for the
 * reference kernels): compiled on its first run, kept on the model.
 * cv_runner.delegate, which the op library's Delegate kernel calls. */
carve_status cv_run_delegate(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out);

/* ================================================================ tensor_io.c */

typedef enum cv_pb_kind { CV_PB_TENSOR, CV_PB_SEQUENCE, CV_PB_OPTIONAL } cv_pb_kind;
/* Reads a value from ONNX TensorProto bytes (.pb), or a SequenceProto /
 * OptionalProto of tensors. *name receives the proto's name (malloc'd) or
 * NULL. */
carve_status cv_val_read_pb(carve_ctx *ctx, const void *data, size_t n, cv_pb_kind kind, cv_val **out, char **name);
/* What a graph input of type t expects in a .pb file. */
cv_pb_kind cv_pb_kind_of(const cv_type *t);
/* Reads .npy or .pb (by the file's magic). */
carve_status cv_val_read_file(carve_ctx *ctx, const char *path, cv_pb_kind kind, cv_val **out);
/* Writes .npy (numpy dtypes) or .pb by the path's extension. */
carve_status cv_val_write_file(carve_ctx *ctx, const cv_val *v, const char *path);

#endif

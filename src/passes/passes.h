/* passes.h: graph passes. One section per file. */
#ifndef CARVE_PASSES_H
#define CARVE_PASSES_H

#include "../runtime/runtime.h"

/* ================================================================ infer.c */

typedef struct cv_infer_opts {
    /* Largest tensor (elements) inference computes by running a kernel on
     * constant inputs, to learn shapes that depend on values. */
    size_t max_const_elems;
} cv_infer_opts;

/* Type and shape inference over the whole model, subgraphs included.
 * Symbolic dims stay symbolic; a contradiction is an error naming the node. */
carve_status cv_infer_model(carve_model *m, const cv_infer_opts *opts);

/* ================================================================ fold.c */

/* carve_fold() is public; lowering calls cv_fold_run() to learn what became
 * of each node. fold.c has the driver, the shared state and the constant
 * folding itself (values, guards, If with a constant condition); the
 * helpers every fold file uses are in fold_util.c; the rewrites that are
 * folding in disguise have a file each (below). */

typedef enum cv_fate {
    CV_FATE_KEPT = 0, /* still a node (or made by folding: see `from`) */
    CV_FATE_FOLDED,   /* computed at compile time: its outputs are initializers */
    CV_FATE_REMOVED   /* gone otherwise: dead, fused, inlined; `why` says which */
} cv_fate;

typedef struct cv_fold_node { /* one per node id: fields ordered for 24 bytes, not 32 */
    const char *why;      /* REMOVED: for the report (model arena) */
    cv_fate fate;
    carve_node_id into;   /* REMOVED into another node (fused, merged), or CARVE_NONE */
    carve_node_id from;   /* a node folding made: the node it was made from, or CARVE_NONE */
    int8_t guard;         /* the carve_fold_guard that kept it an op (counted once), or -1 */
    uint16_t row;         /* the passes' cache of its op-table row (cv_fold_op_kind): row + 1, 0 not looked
                           * up yet, CV_FOLD_NO_ROW none (another domain, an op carve has no row for) */
} cv_fold_node;

typedef struct cv_fold {
    carve_model *m;
    size_t max_bytes;
    carve_fold_stats st;
    cv_fold_node *nodes;  /* by node id, grown with m->n_nodes */
    uint32_t cap;
    cv_val **known;       /* by value id: compile-time values (fold.c) */
    cv_val **partial;     /* by value id: shape tensors known but for some dims (fold.c) */
    uint32_t n_known;
    uint32_t *uses;       /* by value id: node inputs, subgraph captures, graph outputs */
    uint8_t *is_out;      /* by value id: an output of some graph */
    uint32_t n_uses;
    /* Nodes cv_fold_drop takes out of graph lazy_g stay listed, dead, until
     * cv_fold_flush (constant folding drops nodes one by one: taking each
     * out of the list at once would cost O(N) apiece). CARVE_NONE: off. */
    carve_graph_id lazy_g;
    bool lazy_dirty;
    /* The stats and sizes when uses were last counted: a sweep that starts
     * with them unchanged (the passes before it rewrote nothing) keeps the
     * counts (every rewrite counts itself in st or makes nodes or values). */
    bool uses_valid;
    carve_fold_stats uses_st;
    uint32_t uses_nodes, uses_values;
} cv_fold;

/* Recomposition (recompose.c) during folding: which ops to make, which
 * nodes never to take, and, afterwards, what was made. */
typedef struct cv_recomp_match {
    const char *pattern;      /* the pattern's name (static) */
    carve_node_id node;       /* the node made */
    uint32_t first, n;        /* its members: members[first .. first + n) */
} cv_recomp_match;

typedef struct cv_recomp_cfg {
    /* Make op `op`? NULL: every pattern's op. */
    bool (*wants)(const char *op, void *user);
    /* Never take node n into a pattern (skip lists). NULL: none. */
    bool (*excluded)(carve_node_id n, void *user);
    void *user;
    /* Filled by the pass (cv_malloc'd; cv_recomp_free). */
    cv_recomp_match *matches;
    uint32_t n_matches;
    carve_node_id *members;
    uint32_t n_members;
} cv_recomp_cfg;

/* cv_fold_run with recomposition (rc may be NULL: none). *types_kept (may
 * be NULL), in: the model's types are inferred already and still stand
 * (folding does not infer first); out: folding only took out dead nodes and
 * initializers after that inference, so every type still stands (lowering
 * infers again only if not). */
carve_status cv_fold_run_ex(carve_model *m, const carve_fold_opts *opts, cv_recomp_cfg *rc, carve_fold_stats *stats,
                            cv_fold_node **fates, bool *types_kept);

/* Runs every folding pass. *fates (may be NULL) receives the fate of each
 * node id, m->n_nodes of them afterwards (cv_malloc'd; the caller frees). */
carve_status cv_fold_run(carve_model *m, const carve_fold_opts *opts, carve_fold_stats *stats,
                         cv_fold_node **fates);

/* Constant folding of every live graph, subgraphs first. */
carve_status cv_fold_constants(cv_fold *f);

/* ================================================================ fold_util.c */

/* The helpers every fold file shares (fold.c, noop.c, fold_qdq.c, fuse.c,
 * dce.c, recompose.c). */

/* Grows f->nodes to m->n_nodes entries (new ones KEPT). false on NOMEM. */
bool cv_fold_grow(cv_fold *f);
/* Live graphs (reachable from the main graph through live nodes), parents
 * before children. */
bool cv_fold_graphs(const carve_model *m, cv_ids *out);
/* Recounts f->uses and f->is_out over the live graphs. */
carve_status cv_fold_count_uses(cv_fold *f);
/* Recounts them unless the counts still stand: nothing was rewritten since
 * they were counted (the stats and the node and value counts unchanged). */
carve_status cv_fold_uses(cv_fold *f);
/* The counts stand as they are now: a pass that kept them exact through its
 * own rewrites says so, and the next sweep does not recount. */
void cv_fold_uses_stand(cv_fold *f);
/* Bytes a Constant node holds, a tensor holds (strings count 0), as
 * carve_fold_stats counts them. */
uint64_t cv_fold_constant_bytes(const carve_model *m, carve_node_id id);
uint64_t cv_fold_tensor_bytes(const cv_tensor *t);
/* Every node of graph g and its subgraphs leaves, REMOVED with `why`; the
 * graphs' initializers go with them. */
void cv_fold_drop_graph(cv_fold *f, carve_graph_id g, carve_node_id into, const char *why);
/* The start of a sweep: cv_fold_uses, then the live graphs into *gs
 * (the caller frees it, also on error). */
carve_status cv_fold_sweep_start(cv_fold *f, cv_ids *gs);
/* A visitor of one live graph g; nodes is a snapshot of g's node list
 * (dropped nodes stay listed, dead, until the sweep flushes them). */
typedef carve_status (*cv_fold_visit_fn)(cv_fold *f, carve_graph_id g, const cv_ids *nodes, void *arg);
/* One sweep over the live graphs, parents first (cv_fold_sweep_start): for
 * each, `visit` on a snapshot of its nodes with f->lazy_g set to it, then
 * cv_fold_flush, then `after` (may be NULL; called after an error too). The
 * first error stops the sweep and is returned; nomem ends the out-of-memory
 * message ("folding"). */
carve_status cv_fold_sweep(cv_fold *f, cv_fold_visit_fn visit, cv_fold_visit_fn after, void *arg,
                           const char *nomem);
/* Takes node n out of its graph with every node of its subgraphs, and
 * records its fate; the subgraphs' nodes are REMOVED with the same why. */
void cv_fold_drop(cv_fold *f, carve_node_id n, cv_fate fate, carve_node_id into, const char *why);
/* Takes the dead nodes left listed in f->lazy_g out of its list. */
void cv_fold_flush(cv_fold *f);
/* A new initializer of graph g named base (made unique in g's scope),
 * counted as added bytes. CARVE_NONE on error (set on the context). */
carve_value_id cv_fold_new_init(cv_fold *f, carve_graph_id g, const char *base, carve_dtype dtype, int rank,
                                const int64_t *dims, const void *data, size_t nbytes);
/* Makes node n write value v as its output j (v's old producer loses it);
 * the value n wrote there before is orphaned (out of its graph's scope). */
void cv_fold_rebind_output(cv_fold *f, carve_node_id n, uint32_t j, carve_value_id v);
/* The initializer data of v when v is a compile-time constant of the model
 * (an initializer that is not a graph input), else NULL. Inline: the passes
 * ask it of most nodes' inputs. */
static inline const cv_tensor *cv_fold_const(const carve_model *m, carve_value_id v)
{
    if (v == CARVE_NONE)
        return NULL;
    const cv_value *x = &m->values[v];
    return x->init && !x->is_input ? x->init : NULL;
}
/* The few ops a pass dispatches on, named in its own table (declared data,
 * at most 254): each op-table row is matched against the names once, then
 * a node's kind is one look-up by its row (cached on the node), not a
 * string compare per node and name. */
typedef struct cv_fold_ops {
    const char *const *names; /* kind k (1 .. n) is the op names[k - 1] */
    uint32_t n;
    uint8_t *by_row;          /* by op-table row: 0 not matched yet, else kind + 1 (made on first use) */
} cv_fold_ops;
/* The kinds of a pass's table of names (an array). */
#define CV_FOLD_OPS(list) ((cv_fold_ops){.names = (list), .n = sizeof(list) / sizeof *(list)})
#define CV_FOLD_NO_ROW UINT16_MAX
uint32_t cv_fold_op_kind_slow(cv_fold_ops *k, cv_fold *f, carve_node_id n);
/* Node n's kind: k when it is the ONNX (default domain) op names[k - 1]
 * (cv_node_is), 0 when none of them. Inline: a sweep asks it of every node,
 * and the node's row is cached in f->nodes for the whole fold (a node's op
 * and the model's opsets do not change while folding). */
static inline uint32_t cv_fold_op_kind(cv_fold_ops *k, cv_fold *f, carve_node_id n)
{
    uint16_t row = n < f->cap ? f->nodes[n].row : 0;
    uint8_t r = row && row != CV_FOLD_NO_ROW && k->by_row ? k->by_row[row - 1] : 0;
    return r ? r - 1u : cv_fold_op_kind_slow(k, f, n);
}
void cv_fold_ops_free(cv_fold_ops *k);
/* A pass that looked up node n's row d (cv_op_for_node) leaves it in the
 * cache for the passes after it. Inline: constant folding does it for
 * every node. */
static inline void cv_fold_row_seen(cv_fold *f, carve_node_id n, const cv_op_def *d)
{
    if (n >= f->cap)
        return;
    f->nodes[n].row = d && !*f->m->nodes[n].domain ? (uint16_t)(cv_op_row(d) + 1) : CV_FOLD_NO_ROW;
}
/* Replaces reads of `from` by `to` in the nodes of graph g and its
 * subgraphs (and in those subgraphs' outputs when `outputs`). */
void cv_fold_replace_reads(carve_model *m, carve_graph_id g, carve_value_id from, carve_value_id to, bool outputs);
/* Many replacements in one walk: rep maps a value id (< n_rep) to the value
 * read instead, CARVE_NONE for itself; node inputs of g and its subgraphs
 * only. A pass that removes many values rewrites each graph once, not once
 * per value. cv_fold_resolve follows rep from v. */
void cv_fold_replace_reads_map(carve_model *m, carve_graph_id g, const carve_value_id *rep, uint32_t n_rep);
carve_value_id cv_fold_resolve(const carve_value_id *rep, uint32_t n_rep, carve_value_id v);
/* Sets input i of node n, growing its input list when i is past its end. */
bool cv_fold_set_input(carve_model *m, carve_node_id n, uint32_t i, carve_value_id v);
/* Runs node n's reference kernel on in[] (no interpreter: not for control
 * ops). A failing kernel leaves no error on the context. */
carve_status cv_fold_kernel(carve_model *m, carve_node_id n, cv_val **in, uint32_t n_in, cv_val **out,
                            uint32_t n_out);

/* ================================================================ noop.c */

/* Removes ops that compute nothing: Identity, Dropout in inference, Cast to
 * the type its input has, Mul/Div by ones and Add/Sub of zeros that leave
 * the shape, Slice over the whole range, Transpose by the identity, Reshape
 * to the static shape its input has. Readers read the input instead; when
 * the output is a graph output, the input's producer writes it instead (or
 * the op stays). */
carve_status cv_fold_noop(cv_fold *f);

/* ================================================================ fold_qdq.c */

/* Transpose, Reshape, Squeeze, Unsqueeze and Flatten after the
 * DequantizeLinear of a constant quantized weight are applied to the integer
 * weight (and to blocked scales and zero points), and the DequantizeLinear's
 * axis follows, so the weight keeps its per-tensor, per-axis or blocked
 * encoding. Refused (left alone) when the quantization axis has no image
 * through the op. */
carve_status cv_fold_qdq(cv_fold *f);

/* ================================================================ fuse.c */

/* BatchNormalization (inference) after a Conv or Gemm with constant float
 * weights folded into the weights and bias; MatMul + Add of a constant bias
 * made one Gemm where the shapes allow (2-D operands, bias broadcastable
 * one way to the product). */
carve_status cv_fold_fuse(cv_fold *f);

/* ================================================================ dce.c */

/* Removes nodes nothing reads (repeatedly), then initializers nothing reads. */
carve_status cv_fold_dce(cv_fold *f);
/* Makes every initializer equal (dtype, shape, bytes) to one visible from it
 * read that one instead; graph outputs keep their own. */
carve_status cv_fold_dedupe(cv_fold *f);

/* ================================================================ recompose.c */

/* Patterns exporters write for LayerNormalization, HardSwish and Gelu made
 * that op again, where the model's opset has it and rc->wants it; exact
 * matches only (docs/recompose.md). Counts f->st.recomposed; logs in rc. */
carve_status cv_fold_recompose(cv_fold *f, cv_recomp_cfg *rc);
void cv_recomp_free(cv_recomp_cfg *rc);

/* ================================================================ upgrade.c */

/* carve_upgrade() is public; lowering calls cv_upgrade_run() to learn which
 * node each node it made comes from: *origin (may be NULL) gets, by node
 * id, that node or CARVE_NONE (cv_malloc'd, indexed below the model's node
 * count at return or shorter; the caller frees). *types_kept (may be
 * NULL): the types it inferred before upgrading still stand (no node was
 * rewritten and every node's op row is the same at the new opset, or the
 * upgrade was refused), so folding need not infer again. */
carve_status cv_upgrade_run(carve_model *m, carve_upgrade_stats *stats, carve_node_id **origin, bool *types_kept);
/* The newest ai.onnx opset of the op table (the opset models are brought to). */
int64_t cv_upgrade_newest(void);
/* Does nothing read value v (no node input, no graph output)? */
bool cv_upgrade_value_unread(const carve_model *m, carve_value_id v);

#endif

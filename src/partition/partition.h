/* partition.h: targets, capability checks, partitioning and lowering. One
 * section per file of src/partition/. */
#ifndef CARVE_PARTITION_H
#define CARVE_PARTITION_H

#include "../passes/passes.h"
#include "carve_backend.h"

/* ================================================================ target.c */

typedef struct cv_attr_rule {
    char *name;
    uint32_t n;
    bool is_str;
    int64_t *ints;
    double *nums;         /* the same values as numbers: FLOAT attributes */
    char **strs;
} cv_attr_rule;

/* One constraint row of an op: applies to opsets [since, until]. */
typedef struct cv_op_rule {
    int since, until;     /* until 0: open-ended */
    char *last_axis;      /* this attribute must name the last axis */
    int max_outputs;      /* 0: any */
    int max_rank;         /* 0: the target's */
    int min_rank;         /* 0: any (checked on input 0) */
    int min_inputs;       /* 0: any */
    bool last_axis_transpose; /* last_axis: another axis is taken through Transposes (legalize) */
    uint32_t dtype_mask;  /* 0: the target's; bit per carve_dtype */
    uint32_t n_attrs;
    cv_attr_rule *attrs;  /* allowed values per attribute (an INTS one: every element) */
    int max_inputs;       /* 0: any */
    uint32_t const_inputs; /* bit i: input i, when given, must be a compile-time constant */
    bool float_only;      /* refused inside a QDQ node unit (quantized) */
    uint32_t checks;      /* CV_CHECK_* bits: rules with code of their own */
} cv_op_rule;

/* Op-specific rules a profile names in "checks" (capability.c). */
enum {
    CV_CHECK_GEMM_C = 1 << 0,           /* "gemm_c": C absent, [N] or [M, N] */
    CV_CHECK_GROUPS_DIVIDE = 1 << 1,    /* "groups_divide_channels" */
    CV_CHECK_RESIZE_QNN = 1 << 2,       /* "resize_qnn": rank >= 3, spatial dims only, no floor + pytorch_half_pixel */
    CV_CHECK_EINSUM_MATMUL = 1 << 3,    /* "einsum_matmul": a (batched) MatMul equation */
    CV_CHECK_RESHAPE_ZERO = 1 << 4,     /* "reshape_allowzero": no 0 in the shape with allowzero */
    CV_CHECK_PER_TENSOR = 1 << 5,       /* "per_tensor_outside_unit": per-axis Q/DQ only in a unit */
    CV_CHECK_FIXED_ENC16 = 1 << 6,      /* "fixed_16bit_encoding": Sigmoid/Tanh uint16 output encodings */
    CV_CHECK_COUNT = 7
};
/* The profile name of check bit i (CV_CHECK_* == 1 << i), NULL past the end. */
const char *cv_check_name(int i);

typedef struct cv_target_op {
    char *op;
    uint32_t n_rules;
    cv_op_rule *rules;
} cv_target_op;

typedef enum { CV_CPU_CORE, CV_CPU_FULL } cv_cpu_base;

struct carve_target {
    char *name, *description, *source;
    char *backend;                 /* "backend": the backend's name, or NULL (carve_target_backend) */
    uint64_t hash;                 /* FNV-1a of the profile's bytes */
    uint32_t dtype_mask;
    bool int64_as_int32;           /* "int64": "as_int32" (else refused) */
    int max_rank;
    bool datadep_ok, static_shapes, refuses_const, control_whole;
    bool qdq_units;                /* places QDQ node units whole (units.c) */
    uint32_t n_keep, n_ops;
    char **keep_whole;
    cv_target_op *ops;             /* sorted by op name */
    bool lg_int64, lg_clamp_slice, lg_u8cast;        /* legalizations */
    bool lg_softmax_transpose;  /* a last_axis_transpose row's op on another axis: Transposes around it */
    bool lg_requant16;          /* 16-bit Sigmoid/Tanh computed at the fixed encoding, then requantized */
    bool sim_u8cast, sim_i32wrap, sim_refuse_int64;  /* simulator semantics */
    /* a CPU profile instead of a delegate target */
    bool is_cpu;
    cv_cpu_base cpu_base;
    uint32_t n_cpu_add, n_cpu_remove;
    char **cpu_add, **cpu_remove;
};

/* Parses a profile; errors name the file and the field. */
carve_status cv_target_parse(carve_ctx *ctx, const char *json, size_t len, const char *source, carve_target **out);
const cv_target_op *cv_target_find_op(const carve_target *t, const char *op);
bool cv_target_keeps_whole(const carve_target *t, const char *op);
/* Does the CPU profile have an op (by the op table's flags and the
 * profile's additions/removals)? */
bool cv_cpu_has(const carve_target *cpu, const cv_op_def *def, const char *op);
/* The built-in profiles' JSON (generated from targets/ at build time). */
const char *cv_builtin_target_json(const char *name);
extern const char *const cv_builtin_target_names[];

/* ================================================================ levels.c */

/* A graph reduced to what partitioning needs. Nodes are numbered in a
 * topological order; constants (initializers, Constant nodes) are not nodes
 * here. */
typedef struct cv_dag {
    uint32_t n;
    const uint32_t *pred_start; /* preds of i: pred[pred_start[i] .. pred_start[i+1]) */
    const uint32_t *pred;
    const uint8_t *supported;   /* may be delegated */
    const uint8_t *reads_runtime; /* reads a graph input, a runtime outer value, or makes runtime values (random) */
} cv_dag;

/* Minimal valid partitioning of the supported nodes (ASAP levels, O(N+E)):
 * part[i] = partition index (ordered by level) of a supported node, CARVE_NONE
 * for others. Supported nodes that read only constants move to the level of
 * their consumers when one is taken, so their outputs do not cross
 * partitions. Returns the partition count, or CARVE_NONE on NOMEM. */
uint32_t cv_partition_levels(const cv_dag *d, uint32_t *part);

/* ================================================================ units.c */

/* QDQ node units of graph g: unit_of[i] for the node at position i of g's
 * node list, units numbered by their first node; *n_units == node count when
 * no unit has more than one node. */
carve_status cv_qdq_units(const carve_model *m, carve_graph_id g, uint32_t *unit_of, uint32_t *n_units);
/* Which inputs and outputs (bits) of a node are inner values of its QDQ
 * unit, or a QuantizeLinear/DequantizeLinear's scale: floats that stand for
 * the unit's quantized values, so their dtype is not the target's concern. */
typedef struct cv_unit_inner_mask {
    uint64_t in, out;
    carve_node_id out_q; /* the first QuantizeLinear of the graph reading output 0, or CARVE_NONE */
} cv_unit_inner_mask;
/* inner[i] for the node at position i of g (pos: node id -> position);
 * edges between nodes of one unit are inner when `units` (any unit has more
 * than one node). */
void cv_unit_inner(const carve_model *m, carve_graph_id g, const uint32_t *pos, const uint32_t *unit_of, bool units,
                   cv_unit_inner_mask *inner);
/* cv_partition_levels on d with each unit contracted to one node (a unit is
 * supported when all its nodes are; callers make them agree). */
uint32_t cv_partition_units(const cv_dag *d, const uint32_t *unit_of, uint32_t n_units, uint32_t *part);

/* ================================================================ priority.c */

/* Several targets in priority order: take[t][i] says whether target t may
 * take node i (d->supported is not read). Target t's partitions are the
 * levels of the nodes it takes and no earlier target placed, on the graph
 * with the earlier partitions contracted, and with t's units contracted
 * (unit_of[t][i] < n_units; unit_of or unit_of[t] NULL: none; a unit is
 * taken when all its nodes are). part[i] gets the partition (numbered
 * target by target), tgt[i] its target, CARVE_NONE for both on CPU.
 * Returns the partition count, CARVE_NONE on NOMEM. */
uint32_t cv_partition_priority(const cv_dag *d, const uint32_t *const *unit_of, uint32_t n_units,
                               uint32_t n_targets, const uint8_t *const *take, uint32_t *part, uint32_t *tgt);

/* ================================================================ capability.c */

/* Why a node is not delegated. The string codes are part of the report's
 * format (docs/report.md). */
typedef enum cv_reason {
    CV_R_NONE = 0,           /* supported (delegated if its partition is) */
    CV_R_CONSTANT,           /* a Constant node: a value, referenced from the outer scope */
    CV_R_SKIPPED_BY_USER,    /* cpu_nodes / cpu_ops */
    CV_R_CUSTOM_DOMAIN,      /* an op of a non-ONNX domain that carve can run */
    CV_R_UNSUPPORTED_OP,
    CV_R_OPSET,              /* the target has the op, not at this opset */
    CV_R_DTYPE,
    CV_R_UNKNOWN_TYPE,
    CV_R_RANK,
    CV_R_DYNAMIC_SHAPE,
    CV_R_ATTRIBUTE,
    CV_R_DATA_DEPENDENT,
    CV_R_CONTROL_FLOW,
    CV_R_INT64_RANGE,
    CV_R_DEQUANTIZED,        /* a piece of an op that reads a dequantized value */
    CV_R_NODE_UNIT,          /* another node of its QDQ node unit goes to CPU */
    CV_R_NO_RUNTIME_INPUT,   /* its partition reads no runtime value */
    CV_R_SMALL_PARTITION,    /* min_partition_nodes */
    CV_R_BACKEND_REFUSED,    /* the backend refused it (supports_node with a code carve does not know, or compile) */
    CV_R_NOT_CONSTANT,       /* an input the target compiles in is computed at run time */
    CV_R_INPUT_COUNT,        /* more inputs than the target takes */
    CV_R_QUANTIZED,          /* the target takes the op in float only */
    CV_R_ENCODING,           /* a quantized output's encoding is not the one the target fixes */
    CV_R_COUNT
} cv_reason;

const char *cv_reason_code(cv_reason r);
/* The reason of a code string (the report's codes), or CV_R_COUNT. */
cv_reason cv_reason_of_code(const char *code);

/* Decides whether the target can take node n as it is; on refusal returns
 * the reason and writes a message naming the field. Knows nothing of
 * partitions (that refusal comes later). `inner` (may be NULL) names the
 * inputs and outputs whose dtype is not checked (inner values of a QDQ node
 * unit, see units.c). */
/* The op-specific rules of a profile row's "checks" (CV_CHECK_* bits), in
 * rules.c: the first refusal with its message. */
/* The profile row that applies to node n (its op at the model's opset), or NULL. */
const cv_op_rule *cv_target_rule(const carve_model *m, carve_node_id n, const carve_target *t);
cv_reason cv_check_rules(const carve_model *m, carve_node_id n, const carve_target *t, uint32_t checks,
                         const cv_unit_inner_mask *inner, char *msg, size_t msgsz);
cv_reason cv_capable(const carve_model *m, carve_node_id n, const carve_target *t, const cv_unit_inner_mask *inner,
                     char *msg, size_t msgsz);
/* cv_capable with the target's row for the node's op already looked up
 * (`to`: cv_target_find_op(t, op), NULL when the target lacks it). */
cv_reason cv_capable_op(const carve_model *m, carve_node_id n, const carve_target *t, const cv_target_op *to,
                        const cv_unit_inner_mask *inner, char *msg, size_t msgsz);
/* Is value v a compile-time constant (initializer not overridable by an
 * input, or a Constant node's output)? */
bool cv_value_is_const(const carve_model *m, carve_value_id v);
/* The tensor of a constant value (initializer or Constant node), else NULL. */
const cv_tensor *cv_const_tensor(const carve_model *m, carve_value_id v);

/* ================================================================ lower.c: the driver */

/* Where a node stands during and after lowering (by node id). */
typedef struct cv_lnode {
    cv_reason reason;       /* why not delegated (CV_R_NONE if delegated) */
    const char *msg;        /* the reason's message (model arena) */
    uint32_t part;          /* partition index in its graph, CARVE_NONE on CPU */
    carve_node_id origin;   /* the input model's node it comes from */
    cv_reason sticky;       /* skip list / dequantized: holds across rounds */
    bool decomposed;
    uint8_t target;         /* with part: the index of its target in cv_lower.ts */
    uint8_t skip_on;        /* bit per target index: skip_on names it for that target */
    carve_node_id delegate; /* the Delegate node holding it, after lowering */
} cv_lnode;

/* A target's verdict on a node (cv_lower.tr). */
typedef struct cv_treason {
    cv_reason reason;
    const char *msg;        /* model arena */
} cv_treason;

/* Targets one lowering places nodes on, in priority order. */
#define CV_MAX_TARGETS 8

typedef struct cv_lpart {
    carve_graph_id graph;
    uint32_t index;
    carve_node_id delegate;
    carve_graph_id body;           /* the Delegate's body graph */
    cv_ids nodes, inputs, outputs; /* nodes in order; boundary values (outer ids) */
    cv_ids encoded;                /* body values its `encodings` attribute describes */
    uint32_t target;               /* index in cv_lower.ts */
} cv_lpart;

/* Nodes the backend refused to compile (backend_rule.c), by name: they
 * survive the model's restore from its snapshot between compile rounds. */
typedef struct cv_refused {
    cv_strmap names;  /* name -> index into msgs */
    char **keys, **msgs;
    uint32_t n, cap;
} cv_refused;

typedef struct cv_lower {
    carve_model *m;
    /* The targets in priority order with their backends; t and b are the
     * first of them. */
    const carve_target *t, *cpu;
    const carve_backend *b;
    const carve_target *ts[CV_MAX_TARGETS];
    const carve_backend *bs[CV_MAX_TARGETS];
    uint32_t n_t;
    cv_treason *tr;          /* by node id * n_t + target index: each target's verdict, last round */
    cv_refused *refused;
    uint32_t compile_rounds; /* lowerings the backend's compile saw (1: no refusal) */
    const carve_lower_opts *o;
    cv_lnode *ln;
    uint32_t cap, n_orig;
    uint32_t rounds;
    cv_lpart *parts;
    uint32_t n_parts;
    double ms_infer, ms_partition, ms_decompose, ms_delegate, ms_total;
    uint32_t n_decomposed;
    /* constant folding before the first round (unless --no-fold) */
    bool folded;
    bool types_fresh;       /* the last inference (upgrade's, folding's) still stands: the next one is skipped */
    carve_fold_stats fold;
    cv_fold_node *fates;    /* by node id: what folding did, n_fates of them */
    uint32_t n_fates;
    double ms_fold;
    cv_recomp_cfg recomp;   /* what recomposition made, during folding */
    /* carve_lower_opts cpu_ops: op name -> its first place in the list
     * (stage_skip), and that place's message, made at the op's first node */
    cv_strmap cpu_ops;
    const char **cpu_op_msg;
    /* per target, by op table row (cv_op_at index): its cv_target_find_op
     * for that op, looked up once per lowering (cv_verdict) */
    const cv_target_op **op_rows[CV_MAX_TARGETS];
    struct cv_report_io *io; /* the input nodes' graphs, values and levels (report.c) */
    uint32_t dump_mask;      /* bit per cv_stage: dump the model after it (stage_dump.c) */
} cv_lower;

/* A monotonic clock in milliseconds (the report's time_ms). */
double cv_now_ms(void);
/* Grows lw->ln and lw->tr to the model's node count (new nodes: on CPU,
 * their own origin); false on NOMEM. */
bool cv_lower_grow(cv_lower *lw);

/* ================================================================ stage_dump.c */

/* The stages of carve_lower, in the order the driver runs them
 * (docs/ARCHITECTURE.md, "Lowering stages"). infer, partition and
 * decompose run once per round of the fixed point. */
#define CV_STAGES(X)                                                                                                  \
    X(CHECK, "check")                                                                                                 \
    X(SKIP, "skip")                                                                                                   \
    X(UPGRADE, "upgrade")                                                                                             \
    X(FOLD, "fold")                                                                                                   \
    X(INFER, "infer")                                                                                                 \
    X(PARTITION, "partition")                                                                                         \
    X(DECOMPOSE, "decompose")                                                                                         \
    X(DELEGATES, "delegates")                                                                                         \
    X(LEGALIZE, "legalize")                                                                                           \
    X(ENCODINGS, "encodings")                                                                                         \
    X(VERIFY, "verify")                                                                                               \
    X(COMPILE, "compile")                                                                                             \
    X(REPORT, "report")
#define CV_STAGE_ENUM(id, name) CV_STAGE_##id,
typedef enum { CV_STAGES(CV_STAGE_ENUM) CV_STAGE_COUNT } cv_stage;
#undef CV_STAGE_ENUM

/* The stages opts asks dumps after (bits by cv_stage) in *mask, after
 * checking the names and that opts->dump_dir is a folder carve can write
 * in; errors name the option and list the stages. */
carve_status cv_dump_plan(carve_ctx *ctx, const carve_lower_opts *opts, uint32_t *mask);
/* Writes the model's text dump to dump_dir/NN-STAGE[.rROUND][.cCOMPILE].txt
 * when lw->dump_mask asks for stage s (round: the fixed point's round for
 * the stages inside it, else 0). */
carve_status cv_dump_after(cv_lower *lw, cv_stage s, uint32_t round);

/* ================================================================ stage_*.c: the stages */

/* check: the CPU profile is one, every kept-whole op of the targets can end
 * on CPU, the model's opsets are known (unless opts allow newer). */
carve_status cv_stage_check(carve_model *m, const carve_target *const *ts, uint32_t n_t, const carve_target *cpu,
                            const carve_lower_opts *opts);
/* skip: the skip lists' marks (cpu_nodes, cpu_ops, skip_on) on the nodes. */
carve_status cv_stage_skip(cv_lower *lw);
/* The message of a node of op `op` kept on CPU by cpu_ops ("op X is in the
 * list of ops kept on CPU", one string per op), or NULL when the list does
 * not name op (or its message could not be made: the arena's NOMEM). */
const char *cv_cpu_op_kept(cv_lower *lw, const char *op);
/* upgrade: the opset upgrade (src/passes/upgrade.c); nodes it makes share
 * their node's origin and marks. */
carve_status cv_stage_upgrade(cv_lower *lw);
/* fold: constant folding and recomposition (src/passes/fold.c,
 * recompose.c); lw->fates says what became of each node. */
carve_status cv_stage_fold(cv_lower *lw);
/* partition (one round): in every graph each node's verdicts
 * (stage_capability.c), QDQ node units, partitions in priority order and
 * the target rules, to the point where every partition stands. */
carve_status cv_stage_partition(cv_lower *lw);
/* decompose (one round): ops on CPU that the CPU profile lacks become their
 * pieces; *changed when any did. */
carve_status cv_stage_decompose(cv_lower *lw, bool *changed);
/* delegates: each partition becomes a Delegate node (delegate.c); nodes of
 * bodies taken whole follow their control-flow node. */
carve_status cv_stage_delegates(cv_lower *lw);
/* legalize: each Delegate body gets its target's legalizations (legalize.c). */
carve_status cv_stage_legalize(cv_lower *lw);
/* encodings: each Delegate gets its `encodings` attribute (encodings.c). */
carve_status cv_stage_encodings(carve_model *m, cv_lpart *parts, uint32_t n_parts);
/* verify: the IR version the lowered model needs, then carve_model_verify
 * (a failure is a carve bug and says so). */
carve_status cv_stage_verify(carve_model *m);

/* ================================================================ stage_capability.c */

/* Target ti's verdict on node id: skip lists, an earlier compile refusal,
 * the profile (capability.c, control flow taken whole), the backend. *msg:
 * the reason's message (model arena). inner: id's QDQ-unit inner values
 * (NULL: none). */
cv_reason cv_verdict(cv_lower *lw, uint32_t ti, carve_node_id id, const cv_unit_inner_mask *inner, const char **msg);
/* Is graph g the body of a control-flow node a target takes whole (or
 * inside one)? Such bodies are not partitioned or decomposed on their own. */
bool cv_taken_whole(const cv_lower *lw, carve_graph_id g);

/* ================================================================ backend_rule.c */

/* The backend's verdict on node n, which the profile accepted: CV_R_NONE,
 * or a reason with its message (model arena) in *msg. */
cv_reason cv_backend_verdict(cv_lower *lw, uint32_t ti, carve_node_id n, const char **msg);
/* The refusal target ti's backend made of node n in an earlier compile
 * round, or NULL. */
const char *cv_backend_refused(const cv_lower *lw, uint32_t ti, carve_node_id n);
/* Compiles every Delegate of the lowered model with the backend and
 * releases the handles. Refused nodes (all of a partition's when the
 * refusal names none) are added to lw->refused; *more tells whether any
 * was. Errors (not refusals) name the Delegate and the backend. */
carve_status cv_backend_compile_all(cv_lower *lw, bool *more);
void cv_refused_free(cv_refused *r);

/* ================================================================ delegate.c */

/* Replaces the partitions of graph g (lnode.part) by Delegate nodes whose
 * bodies hold the partitions' nodes; appends to lw->parts. */
carve_status cv_build_delegates(cv_lower *lw, carve_graph_id g);

/* ================================================================ encodings.c */

/* Sets the Delegate's `encodings` attribute (a JSON string) from the QDQ
 * nodes in its body: every quantized value's dtype, scale, zero point, axis
 * and block size, and how each requantization runs; lists them in
 * lp->encoded. No attribute when the body has no QDQ node. */
carve_status cv_delegate_encodings(carve_model *m, cv_lpart *lp, carve_graph_id body);

/* ================================================================ aimet.c */

/* One AIMET encoding (docs/artifacts.md): AIMET's grid x = (q_unsigned +
 * offset) * scale. Names, scales and offsets are cv_malloc'd. */
typedef enum { CV_ENC_TENSOR, CV_ENC_CHANNEL, CV_ENC_BLOCK } cv_enc_kind;
typedef struct cv_enc {
    char *name;
    bool param, is_float, sym;
    int bw;
    cv_enc_kind kind;
    uint32_t n;       /* scales (and offsets); blocked: the scale tensor, row-major */
    double *scale;    /* float32 values */
    int64_t *offset;
    int64_t block;
    int axis;         /* the Q/DQ node's axis (not in the file) */
} cv_enc;
typedef struct cv_enc_list {
    cv_enc *v;
    uint32_t n, cap;
} cv_enc_list;
typedef enum { CV_ENC_OK, CV_ENC_SKIP, CV_ENC_NOMEM } cv_enc_status;

void cv_enc_list_free(cv_enc_list *l);
const cv_enc *cv_enc_find(const cv_enc_list *l, const char *name);
/* Bits of an integer Q/DQ type (4, 8, 16, 32), 0 for others. */
int cv_enc_int_bits(carve_dtype t);
/* Appends the encoding of Q/DQ node id under `name`; CV_ENC_SKIP when its
 * scale or zero point is not constant or its type has no AIMET grid. */
cv_enc_status cv_enc_from_node(carve_model *m, carve_node_id id, const char *name, bool param, cv_enc_list *l);
/* The file's text (cv_malloc'd); per-block in 0.6.1 is an error. */
carve_status cv_enc_write(carve_ctx *ctx, const cv_enc_list *l, carve_aimet_version v, char **out);
/* Parses version 1.0.0 or 0.x; errors name the section, entry and field. */
carve_status cv_enc_parse(carve_ctx *ctx, const char *json, size_t len, cv_enc_list *l);

/* ================================================================ qdq_strip.c */

/* The encodings of m's main graph, and (strip) the float graph without the
 * Q/DQ pairs that can come back bit-exactly (carve_strip_qdq). */
carve_status cv_qdq_encodings(carve_model *m, bool strip, cv_enc_list *l, uint32_t *kept);
/* Scale index of element idx of a tensor of shape dims quantized on `axis`
 * (blocks of `block` along it; 0: per axis) with nscale scales. */
size_t cv_enc_scale_index(int rank, const int64_t *dims, int64_t axis, int64_t block, size_t nscale, size_t idx);

/* ================================================================ legalize.c */

/* Ops whose outputs are int64 by definition (Shape, ArgMax, TopK indices,
 * ...): their int64 stays, cast right after them (and HTP's simulator lets
 * them make int64). */
bool cv_op_makes_int64(const carve_model *m, carve_node_id n);
/* Applies the target's legalizations to a Delegate body. */
carve_status cv_legalize_body(cv_lower *lw, const carve_target *t, carve_node_id delegate, carve_graph_id body);
/* legalize_htp.c: Softmax/LogSoftmax on another axis than the last wrapped
 * in Transposes (legalize.softmax_axis_via_transpose); 16-bit Sigmoid/Tanh
 * given the fixed output encoding, then requantized to the model's
 * (legalize.requantize_fixed_16bit). */
carve_status cv_legalize_softmax_axis(cv_lower *lw, const carve_target *t, carve_graph_id body);
carve_status cv_legalize_requant16(cv_lower *lw, const carve_target *t, carve_graph_id body);
/* The fixed encoding HTP gives a 16-bit Sigmoid/Tanh output of zero-point
 * dtype zt (uint16 or int16): false for other ops or dtypes. */
bool cv_fixed_enc16(const char *op, carve_dtype zt, double *scale, int64_t *zero_point);
/* The QuantizeLinear of graph g that reads v (its input 0), or CARVE_NONE. */
carve_node_id cv_quantize_reading(const carve_model *m, carve_graph_id g, carve_value_id v);

/* ================================================================ report.c */

struct carve_report {
    char *json;
    size_t json_n; /* its length */
    char *summary;
};
carve_status cv_report_build(cv_lower *lw, carve_report **out);
/* Records what the report says of each input node before lowering changes
 * it: its graph, its input and output values, its level (longest path from
 * its graph's inputs). Freed by cv_report_io_free. */
carve_status cv_report_io_take(cv_lower *lw);
void cv_report_io_free(cv_lower *lw);

#endif /* CARVE_PARTITION_H */

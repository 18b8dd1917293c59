/*
 * backend.c: the oneDNN backend's carve_backend (include/carve_backend.h):
 * the op table, supports_node (the builder in check mode on one node),
 * compile (the builder on the whole body, plus the boundary reorders), run
 * and release. docs/onednn.md describes the mapping and its refusals.
 */
#include <oneapi/dnnl/dnnl_debug.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dn.h"

/* op-list: data: this backend's own mapping of ONNX ops to oneDNN primitives (what a plugin declares) */
static const struct {
    const char *op;
    dn_op_fn fn;
} op_table[] = {
    {"Conv", dn_op_conv},
    {"ConvTranspose", dn_op_convtranspose},
    {"MatMul", dn_op_matmul},
    {"Gemm", dn_op_gemm},
    {"Relu", dn_op_eltwise},
    {"LeakyRelu", dn_op_eltwise},
    {"Elu", dn_op_eltwise},
    {"Sigmoid", dn_op_eltwise},
    {"Tanh", dn_op_eltwise},
    {"HardSigmoid", dn_op_eltwise},
    {"HardSwish", dn_op_eltwise},
    {"Clip", dn_op_eltwise},
    {"Abs", dn_op_eltwise},
    {"Sqrt", dn_op_eltwise},
    {"Exp", dn_op_eltwise},
    {"Log", dn_op_eltwise},
    {"Neg", dn_op_eltwise},
    {"Gelu", dn_op_eltwise},
    {"Add", dn_op_binary},
    {"Sub", dn_op_binary},
    {"Mul", dn_op_binary},
    {"Div", dn_op_binary},
    {"Max", dn_op_binary},
    {"Min", dn_op_binary},
    {"PRelu", dn_op_prelu},
    {"MaxPool", dn_op_pool},
    {"AveragePool", dn_op_pool},
    {"GlobalAveragePool", dn_op_pool},
    {"GlobalMaxPool", dn_op_pool},
    {"BatchNormalization", dn_op_batchnorm},
    {"Softmax", dn_op_softmax},
    {"LogSoftmax", dn_op_softmax},
    {"LayerNormalization", dn_op_layernorm},
    {"Resize", dn_op_resize},
    {"ReduceMean", dn_op_reduce},
    {"ReduceSum", dn_op_reduce},
    {"ReduceMax", dn_op_reduce},
    {"ReduceMin", dn_op_reduce},
    {"Concat", dn_op_concat},
    {"Transpose", dn_op_transpose},
    {"Reshape", dn_op_reshape},
    {"Flatten", dn_op_reshape},
    {"Squeeze", dn_op_reshape},
    {"Unsqueeze", dn_op_reshape},
    {"Identity", dn_op_reshape},
    {"Slice", dn_op_slice},
    {"Pow", dn_op_eltwise},
    {"DequantizeLinear", dn_op_dequantize},
    {"QuantizeLinear", dn_op_quantize},
    {"DynamicQuantizeLinear", dn_op_dynquant},
    {"ConvInteger", dn_op_convinteger},
    {"MatMulInteger", dn_op_matmulinteger},
    {"Cast", dn_op_cast},
};

dn_op_fn dn_op_find(const char *op)
{
    for (size_t i = 0; i < sizeof op_table / sizeof *op_table; i++)
        if (!strcmp(op_table[i].op, op))
            return op_table[i].fn;
    return NULL;
}

/* ------------------------------------------------------------ shared state */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t g_eng;
static dnnl_status_t g_eng_status;
/* the headers' version until the library is loaded (then its own): the
 * backend is registered in every context, the library loaded on first use */
#define DN_STR_(x) #x
#define DN_STR(x) DN_STR_(x)
static char g_version[64] = "oneDNN " DN_STR(DNNL_VERSION_MAJOR) "." DN_STR(DNNL_VERSION_MINOR) "." DN_STR(
    DNNL_VERSION_PATCH);
static char g_why[300]; /* why there is no engine, when libdnnl did not load */

static void init_once(void)
{
    if (!dn_api_load(g_why, sizeof g_why)) {
        g_eng_status = dnnl_runtime_error;
        return;
    }
    g_eng_status = dnnl_engine_create(&g_eng, dnnl_cpu, 0);
    const dnnl_version_t *v = dnnl_version();
    snprintf(g_version, sizeof g_version, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
}

static dnnl_engine_t engine(void)
{
    pthread_once(&g_once, init_once);
    return g_eng_status == dnnl_success ? g_eng : NULL;
}

static void set_threads(void) { omp_set_num_threads(carve_get_threads()); }

/* ------------------------------------------------------------ supports_node */

bool dn_check_shapes(dn_builder *b, carve_node_id n, bool data_f32)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t cnt = pass ? carve_node_output_count(b->m, n) : carve_node_input_count(b->m, n);
        for (size_t i = 0; i < cnt; i++) {
            carve_value_id v = pass ? carve_node_output(b->m, n, i) : carve_node_input(b->m, n, i);
            if (v == CARVE_NONE)
                continue;
            const char *role = pass ? "output" : "input";
            int r = carve_value_rank(b->m, v);
            if (r < 0)
                return dn_fail(b, DN_R_SHAPE, "%s %zu '%s' has an unknown shape", role, i, carve_value_name(b->m, v));
            if (r > DNNL_MAX_NDIMS)
                return dn_fail(b, DN_R_INPUT, "%s %zu '%s' has rank %d; oneDNN takes at most %d", role, i,
                               carve_value_name(b->m, v), r, DNNL_MAX_NDIMS);
            /* Data tensors are float32 and not empty; other inputs
             * (shapes, axes, scales, an empty roi, bounds) are the op's. */
            bool data = i == 0 || !data_f32;
            for (int d = 0; d < r; d++) {
                carve_dim dim = carve_value_dim(b->m, v, d);
                if (dim.value < 0)
                    return dn_fail(b, DN_R_SHAPE, "%s %zu '%s' dim %d is %s%s; fix it with --dim", role, i,
                                   carve_value_name(b->m, v), d, dim.param ? "symbolic: " : "unknown",
                                   dim.param ? dim.param : "");
                if (dim.value == 0 && data)
                    return dn_fail(b, DN_R_INPUT, "%s %zu '%s' is empty (dim %d is 0)", role, i,
                                   carve_value_name(b->m, v), d);
            }
            if (data_f32 && data && carve_value_dtype(b->m, v) != CARVE_FLOAT)
                return dn_fail(b, DN_R_DTYPE, "%s %zu '%s' is %s; the onednn backend takes float32", role, i,
                               carve_value_name(b->m, v), carve_dtype_name(carve_value_dtype(b->m, v)));
        }
    }
    return true;
}

bool dn_check_tensors(dn_builder *b, carve_node_id n)
{
    dn_op_fn fn = dn_op_find(carve_node_op(b->m, n));
    if (fn == dn_op_dequantize || fn == dn_op_quantize || fn == dn_op_dynquant || fn == dn_op_convinteger ||
        fn == dn_op_matmulinteger || fn == dn_op_cast)
        return true; /* ops_qdq.c and ops_dynq.c check their own */
    return dn_check_shapes(b, n, true);
}

static const char *int8_reason(char *msg, size_t size, const char *op)
{
    if (!dn_isa_vnni())
        snprintf(msg, size,
                 "%s: int8 Conv/MatMul refused on this CPU (oneDNN ISA without VNNI: its u8 x s8 kernels "
                 "saturate 16-bit intermediate sums, so results would not be exact)",
                 op);
    else
        snprintf(msg, size, "%s: the onednn backend takes int8 as QDQ node units (DequantizeLinear -> Conv/MatMul "
                            "-> QuantizeLinear), not as this op", op);
    return DN_R_DTYPE;
}

static const char *supports_node(void *user, const carve_model *m, carve_node_id n, char *msg, size_t msg_size)
{
    (void)user;
    const char *op = carve_node_op(m, n);
    if (*carve_node_domain(m, n)) {
        snprintf(msg, msg_size, "op %s of domain '%s'", op, carve_node_domain(m, n));
        return DN_R_OP;
    }
    /* op-list: data: this backend's own mapping of ONNX ops to oneDNN primitives (what a plugin declares) */
    static const char *const int8_ops[] = {"QLinearConv", "QLinearMatMul"};
    for (size_t i = 0; i < sizeof int8_ops / sizeof *int8_ops; i++)
        if (!strcmp(op, int8_ops[i]))
            return int8_reason(msg, msg_size, op);
    dn_op_fn fn = dn_op_find(op);
    if (!fn) {
        snprintf(msg, msg_size, "the onednn backend has no mapping for %s", op);
        return DN_R_OP;
    }
    dnnl_engine_t eng = engine();
    if (!eng) {
        snprintf(msg, msg_size, "oneDNN has no CPU engine");
        return DN_R_LIB;
    }
    dn_val vals[64];
    dn_builder b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.g = carve_node_graph(m, n);
    b.check = true;
    b.eng = eng;
    b.vals = vals;
    b.cap_vals = sizeof vals / sizeof *vals;
    b.nodes = &n;
    b.n_nodes = 1;
    bool ok = dn_check_tensors(&b, n) && fn(&b, n);
    if (ok)
        return NULL;
    if (!b.reason) {
        snprintf(msg, msg_size, "the onednn backend refused %s", op);
        return DN_R_LIB;
    }
    snprintf(msg, msg_size, "%s", b.msg);
    return b.reason;
}

/* ------------------------------------------------------------ compile */

static void prog_free(dn_prog *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_prims; i++)
        dnnl_primitive_destroy(p->prims[i]);
    for (size_t i = 0; i < p->n_mems; i++)
        dnnl_memory_destroy(p->mems[i]);
    if (p->stream)
        dnnl_stream_destroy(p->stream);
    for (size_t i = 0; i < p->n_steps; i++)
        free(p->steps[i].ctx);
    dn_pool_free(p);
    free(p->steps);
    free(p->prims);
    free(p->mems);
    free(p->in_user);
    free(p->in_mem);
    free(p->in_reorder);
    free(p->out_user);
    free(p->out_mem);
    free(p->out_reorder);
    free(p->out_rank);
    free(p->out_dims);
    free(p->in_dt);
    free(p->out_dt);
    free(p);
}

static bool push_prim(dn_builder *b, dnnl_primitive_t prim)
{
    dn_prog *p = b->p;
    if (p->n_prims == p->cap_prims) {
        size_t nc = p->cap_prims ? 2 * p->cap_prims : 16;
        void *q = realloc(p->prims, nc * sizeof *p->prims);
        if (!q)
            return false;
        p->prims = q;
        p->cap_prims = nc;
    }
    p->prims[p->n_prims++] = prim;
    return true;
}

/* A reorder between a user (plain) memory and an internal one. */
static dnnl_primitive_t boundary_reorder(dn_builder *b, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst)
{
    dnnl_primitive_desc_t pd;
    if (dnnl_reorder_primitive_desc_create(&pd, src, b->eng, dst, b->eng, NULL) != dnnl_success)
        return NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_status_t st = dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return NULL;
    if (!push_prim(b, prim)) {
        dnnl_primitive_destroy(prim);
        return NULL;
    }
    return prim;
}

static carve_status refuse(dn_builder *b, carve_backend_refusal *r)
{
    const char *name = b->fail_node != CARVE_NONE ? carve_node_name(b->m, b->fail_node) : "";
    const char *op = b->fail_node != CARVE_NONE ? carve_node_op(b->m, b->fail_node) : "";
    snprintf(r->message, sizeof r->message, "oneDNN: node '%.120s' (%.40s): %.40s: %.300s", name, op,
             b->reason ? b->reason : DN_R_LIB, b->msg);
    r->n_nodes = 0;
    if (b->fail_node != CARVE_NONE && !b->fatal) {
        r->nodes[0] = b->fail_node;
        r->n_nodes = 1;
    }
    return b->fatal ? CARVE_ERR_NOMEM : CARVE_ERR_UNSUPPORTED;
}

static carve_status compile(void *user, const carve_backend_partition *part, void **handle,
                            carve_backend_refusal *refusal)
{
    (void)user;
    *handle = NULL;
    memset(refusal, 0, sizeof *refusal);
    const carve_model *m = part->model;
    carve_graph_id g = part->body;
    dnnl_engine_t eng = engine();
    if (!eng) {
        snprintf(refusal->message, sizeof refusal->message, "oneDNN has no CPU engine");
        return CARVE_ERR_UNSUPPORTED;
    }
    set_threads();
    dn_builder b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.g = g;
    b.eng = eng;
    b.fail_node = CARVE_NONE;
    b.n_nodes = carve_graph_node_count(m, g);
    size_t n_in = carve_graph_input_count(m, g), n_out = carve_graph_output_count(m, g);
    size_t cap = n_in + 1;
    for (size_t i = 0; i < b.n_nodes; i++) {
        carve_node_id n = carve_graph_node(m, g, i);
        cap += carve_node_input_count(m, n) + carve_node_output_count(m, n);
    }
    dn_prog *p = calloc(1, sizeof *p);
    b.p = p;
    b.vals = calloc(cap, sizeof *b.vals);
    b.cap_vals = cap;
    b.nodes = calloc(b.n_nodes + 1, sizeof *b.nodes);
    b.done = calloc(b.n_nodes + 1, sizeof *b.done);
    carve_status rc = CARVE_OK;
    if (p) {
        p->n_in = n_in, p->n_out = n_out;
        p->in_user = calloc(n_in + 1, sizeof(dnnl_memory_t));
        p->in_mem = calloc(n_in + 1, sizeof(dnnl_memory_t));
        p->in_reorder = calloc(n_in + 1, sizeof(dnnl_primitive_t));
        p->out_user = calloc(n_out + 1, sizeof(dnnl_memory_t));
        p->out_mem = calloc(n_out + 1, sizeof(dnnl_memory_t));
        p->out_reorder = calloc(n_out + 1, sizeof(dnnl_primitive_t));
        p->out_rank = calloc(n_out + 1, sizeof(int));
        p->out_dims = calloc(n_out + 1, sizeof *p->out_dims);
        p->in_dt = calloc(n_in + 1, sizeof *p->in_dt);
        p->out_dt = calloc(n_out + 1, sizeof *p->out_dt);
    }
    if (!p || !b.vals || !b.nodes || !b.done || !p->in_user || !p->in_mem || !p->in_reorder || !p->out_user ||
        !p->out_mem || !p->out_reorder || !p->out_rank || !p->out_dims || !p->in_dt || !p->out_dt ||
        dnnl_stream_create(&p->stream, eng, dnnl_stream_default_flags) != dnnl_success) {
        snprintf(refusal->message, sizeof refusal->message, "out of memory compiling partition '%s'", part->name);
        rc = CARVE_ERR_NOMEM;
        goto out;
    }
    p->eng = eng;
    for (size_t i = 0; i < b.n_nodes; i++)
        b.nodes[i] = carve_graph_node(m, g, i);
    b.cur = b.n_nodes; /* failures at the boundary name no node */
    /* Boundary in: user memory (plain, bound at run time) -> internal. */
    for (size_t i = 0; i < n_in; i++) {
        carve_value_id v = carve_graph_input(m, g, i);
        carve_dtype dt = carve_value_dtype(m, v);
        if (dt != CARVE_FLOAT && dt != CARVE_UINT8 && dt != CARVE_INT8 && dt != CARVE_INT32) {
            snprintf(b.msg, sizeof b.msg,
                     "partition input '%s' is %s; the onednn backend takes float32, uint8, int8 and int32",
                     carve_value_name(m, v), carve_dtype_name(dt));
            b.reason = DN_R_DTYPE;
            rc = refuse(&b, refusal);
            goto out;
        }
        dn_val *x = dn_def(&b, v, NULL);
        if (!x || !(p->in_user[i] = dn_mem_new(&b, &x->md, DNNL_MEMORY_NONE)) ||
            !(p->in_reorder[i] = boundary_reorder(&b, &x->md, &x->md))) {
            b.fatal = true;
            dn_fail(&b, DN_R_LIB, "cannot bind partition input '%s'", carve_value_name(m, v));
            rc = refuse(&b, refusal);
            goto out;
        }
        p->in_mem[i] = x->mem;
        p->in_dt[i] = dt;
    }
    for (b.cur = 0; b.cur < b.n_nodes; b.cur++) {
        if (b.done[b.cur])
            continue;
        carve_node_id n = b.nodes[b.cur];
        const char *op = carve_node_op(m, n);
        dn_op_fn fn = *carve_node_domain(m, n) ? NULL : dn_op_find(op);
        if (!fn) {
            dn_fail(&b, DN_R_OP, "the onednn backend has no mapping for %s", op);
            rc = refuse(&b, refusal);
            goto out;
        }
        if (!dn_check_tensors(&b, n) || !fn(&b, n)) {
            rc = refuse(&b, refusal);
            goto out;
        }
    }
    b.cur = b.n_nodes;
    /* Boundary out: internal layout -> the plain user memory. */
    for (size_t i = 0; i < n_out; i++) {
        carve_value_id v = carve_graph_output(m, g, i);
        dn_val *x = dn_find(&b, v);
        dnnl_memory_desc_t md;
        if (!x) {
            b.fatal = true;
            dn_fail(&b, DN_R_LIB, "partition output '%s' is computed by no node the backend built",
                    carve_value_name(m, v));
            rc = refuse(&b, refusal);
            goto out;
        }
        dn_plain_md_dt(&md, x->nd, x->dims, x->md.data_type);
        p->out_dt[i] = x->md.data_type == dnnl_u8   ? CARVE_UINT8
                       : x->md.data_type == dnnl_s8 ? CARVE_INT8
                       : x->md.data_type == dnnl_s32 ? CARVE_INT32
                                                     : CARVE_FLOAT;
        if (x->md.data_type != dnnl_f32 && x->md.data_type != dnnl_u8 && x->md.data_type != dnnl_s8 &&
            x->md.data_type != dnnl_s32) {
            b.fatal = true;
            dn_fail(&b, DN_R_LIB, "partition output '%s' has an unexpected oneDNN data type", carve_value_name(m, v));
            rc = refuse(&b, refusal);
            goto out;
        }
        p->out_rank[i] = x->rank;
        for (int d = 0; d < x->rank; d++)
            p->out_dims[i][d] = x->dims[d];
        p->out_mem[i] = x->mem;
        if (!(p->out_user[i] = dn_mem_new(&b, &md, DNNL_MEMORY_NONE)) ||
            !(p->out_reorder[i] = boundary_reorder(&b, &x->md, &md))) {
            b.fatal = true;
            dn_fail(&b, DN_R_LIB, "cannot bind partition output '%s'", carve_value_name(m, v));
            rc = refuse(&b, refusal);
            goto out;
        }
    }
    if (!dn_pool_finish(&b)) {
        b.fatal = true;
        dn_fail(&b, DN_R_LIB, "out of memory placing the partition's buffers");
        rc = refuse(&b, refusal);
        goto out;
    }
    *handle = p;
    p = NULL;
out:
    if (rc != CARVE_OK && rc != CARVE_ERR_UNSUPPORTED && !refusal->message[0])
        snprintf(refusal->message, sizeof refusal->message, "%s", b.msg);
    prog_free(p);
    free(b.vals);
    free(b.nodes);
    free(b.done);
    return rc;
}

/* ------------------------------------------------------------ run */

static carve_status run(void *user, void *handle, carve_tensor *const *inputs, size_t n_inputs,
                        carve_tensor **outputs, size_t n_outputs, char *msg, size_t msg_size)
{
    (void)user;
    dn_prog *p = handle;
    for (size_t i = 0; i < n_outputs; i++)
        outputs[i] = NULL;
    if (n_inputs != p->n_in || n_outputs != p->n_out) {
        snprintf(msg, msg_size, "oneDNN partition takes %zu inputs and %zu outputs, got %zu and %zu", p->n_in,
                 p->n_out, n_inputs, n_outputs);
        return CARVE_ERR_ARG;
    }
    set_threads();
    dnnl_status_t st = dnnl_success;
    for (size_t i = 0; i < p->n_in && st == dnnl_success; i++) {
        const dnnl_memory_desc_t *md = NULL;
        dnnl_memory_get_memory_desc(p->in_user[i], &md);
        size_t nbytes = 0;
        void *data = inputs[i] ? carve_tensor_data(inputs[i], &nbytes) : NULL;
        if (!inputs[i] || carve_tensor_dtype(inputs[i]) != p->in_dt[i] || nbytes != dnnl_memory_desc_get_size(md)) {
            snprintf(msg, msg_size, "oneDNN partition input %zu: expected %s of %zu bytes", i,
                     carve_dtype_name(p->in_dt[i]), dnnl_memory_desc_get_size(md));
            return CARVE_ERR_ARG;
        }
        dnnl_memory_set_data_handle(p->in_user[i], data);
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_SRC, p->in_user[i]}, {DNNL_ARG_DST, p->in_mem[i]}};
        st = dnnl_primitive_execute(p->in_reorder[i], p->stream, 2, a);
    }
    for (size_t s = 0; s < p->n_steps && st == dnnl_success; s++) {
        if (p->steps[s].host) /* the CPU stream has run every step before it */
            p->steps[s].host(p->steps[s].ctx);
        else
            st = dnnl_primitive_execute(p->steps[s].prim, p->stream, p->steps[s].nargs, p->steps[s].args);
    }
    for (size_t i = 0; i < p->n_out && st == dnnl_success; i++) {
        outputs[i] = carve_tensor_new(p->out_dt[i], p->out_rank[i], p->out_dims[i]);
        if (!outputs[i]) {
            snprintf(msg, msg_size, "out of memory for oneDNN partition output %zu", i);
            for (size_t k = 0; k < i; k++) {
                carve_tensor_free(outputs[k]);
                outputs[k] = NULL;
            }
            return CARVE_ERR_NOMEM;
        }
        dnnl_memory_set_data_handle(p->out_user[i], carve_tensor_data(outputs[i], NULL));
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_SRC, p->out_mem[i]}, {DNNL_ARG_DST, p->out_user[i]}};
        st = dnnl_primitive_execute(p->out_reorder[i], p->stream, 2, a);
    }
    if (st == dnnl_success)
        st = dnnl_stream_wait(p->stream);
    if (st != dnnl_success) {
        snprintf(msg, msg_size, "oneDNN execution failed: %s", dnnl_status2str(st));
        for (size_t k = 0; k < p->n_out; k++) {
            carve_tensor_free(outputs[k]);
            outputs[k] = NULL;
        }
        return CARVE_ERR_INVALID;
    }
    return CARVE_OK;
}

static void release(void *user, void *handle)
{
    (void)user;
    prog_free(handle);
}

static bool is_available(void *user, char *why, size_t why_size)
{
    (void)user;
    if (engine())
        return true;
    snprintf(why, why_size, "%s", g_why[0] ? g_why : "oneDNN could not create a CPU engine");
    return false;
}

static carve_backend g_backend = {
    .struct_size = sizeof(carve_backend),
    .abi_version = CARVE_BACKEND_ABI_VERSION,
    .name = "onednn",
    .version = g_version,
    .profile_json = NULL,
    .profile_name = "onednn",
    .user = NULL,
    .is_available = is_available,
    .supports_node = supports_node,
    .compile = compile,
    .run = run,
    .release = release,
    .destroy = NULL,
};

const carve_backend *cv_onednn_backend(void) { return &g_backend; }

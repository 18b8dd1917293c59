/* reference.c: the "reference" backend: a Delegate's body runs on carve's
 * reference kernels under its target's simulator, which applies the
 * target's semantics where they differ from ONNX's (the profile's
 * "simulator" block):
 *  - uint8_to_float_cast_nonzero_is_one: a direct Cast uint8 -> float maps
 *    every non-zero input to 1 (what HTP's cast does; legalization avoids it);
 *  - refuse_int64: the target has no int64: an int64 tensor may only enter a
 *    Cast or leave an op that makes int64 by definition (Shape, ArgMax...)
 *    for a Cast right after it, which is what int64 legalization emits; int64
 *    constants that are static shape parameters are read at compile time;
 *  - int32_wraps: int32 arithmetic wraps (the reference kernels wrap too).
 * compile remembers the body and the simulator flags of the target's
 * profile (the caller's, or the built-in one of that name; a target carve
 * does not know runs with plain ONNX semantics); run runs the body inside
 * the interpreter that runs the model, so it is part of the same run. */
#include "backends.h"

#include <string.h>

typedef struct ref_handle {
    carve_model *m;
    carve_graph_id body;
    bool simulate; /* the target is known: its simulator applies */
    bool u8cast, refuse_int64;
    char target[64];
} ref_handle;

static carve_status sim_hook(cv_kctx *k, const cv_op_def *def, cv_val **in, uint32_t n_in, cv_val **out,
                             uint32_t n_out, void *user)
{
    const ref_handle *h = user;
    const cv_node *n = &k->m->nodes[k->node];
    bool cast = !strcmp(n->op, "Cast");
    if (h->refuse_int64 && !cast)
        for (uint32_t i = 0; i < n_in; i++)
            /* static shape parameters (Reshape's shape, Resize's sizes...) are
             * read at compile time, not computed on the target */
            if (in[i] && in[i]->kind == CV_VAL_TENSOR && in[i]->dtype == CARVE_INT64 &&
                !(i < 32 && ((def->shape_inputs >> i) & 1) && cv_value_is_const(k->m, n->in[i])))
                return cv_kerr(k, "%s simulator: input %u '%s' is int64, which %s does not have", h->target, i,
                               k->m->values[n->in[i]].name, h->target);
    if (cast && h->u8cast && in[0]->dtype == CARVE_UINT8) {
        int64_t to = cv_attr_i(k->m, k->node, "to", 0);
        if (to == CARVE_FLOAT || to == CARVE_FLOAT16) {
            cv_val *y = cv_val_like_dtype(in[0], (carve_dtype)to);
            if (!y)
                return cv_knomem(k);
            const uint8_t *x = in[0]->data;
            for (size_t i = 0; i < y->nelem; i++)
                cv_val_set_f64(y, i, x[i] ? 1.0 : 0.0);
            out[0] = y;
            return CARVE_OK;
        }
    }
    carve_status s = def->kernel(k, in, n_in, out, n_out);
    if (!s && h->refuse_int64 && !cast && !(def->flags & CV_OP_MAKES_INT64))
        for (uint32_t i = 0; i < n_out; i++)
            if (out[i] && out[i]->kind == CV_VAL_TENSOR && out[i]->dtype == CARVE_INT64)
                return cv_kerr(k, "%s simulator: output %u is int64, which %s does not have", h->target, i,
                               h->target);
    return s;
}

static carve_status ref_compile(void *user, const carve_backend_partition *p, void **handle,
                                carve_backend_refusal *refusal)
{
    ref_handle *h = cv_malloc(sizeof *h);
    if (!h) {
        snprintf(refusal->message, sizeof refusal->message, "out of memory");
        return CARVE_ERR_NOMEM;
    }
    memset(h, 0, sizeof *h);
    h->m = (carve_model *)p->model;
    h->body = p->body;
    snprintf(h->target, sizeof h->target, "%s", p->target ? p->target : "");
    const carve_target *t = p->profile && p->target && !strcmp(p->profile->name, p->target) ? p->profile : NULL;
    carve_target *own = NULL;
    if (!t && p->target && cv_builtin_target_json(p->target)) {
        if (carve_target_builtin(h->m->ctx, p->target, &own)) {
            snprintf(refusal->message, sizeof refusal->message, "%s", carve_errmsg(h->m->ctx));
            cv_free(h);
            return CARVE_ERR_INVALID;
        }
        t = own;
    }
    if (t) {
        h->simulate = true;
        h->u8cast = t->sim_u8cast;
        h->refuse_int64 = t->sim_refuse_int64;
    }
    carve_target_free(own);
    *handle = h;
    return CARVE_OK;
}

/* Outside a run of its model (a caller of the API): a run of its own, with
 * the outer constants the body reads bound first. */
static carve_status run_alone(ref_handle *h, cv_val **in, cv_val **out)
{
    carve_model *m = h->m;
    cv_interp ip;
    carve_status s = cv_interp_init(&ip, m);
    if (s)
        return s;
    cv_ids caps = {0};
    if (!cv_graph_captures(m, h->body, &caps))
        s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < caps.n && !s; i++) {
        const cv_tensor *c = cv_const_tensor(m, caps.v[i]);
        if (!c)
            s = cv_error(m->ctx, CARVE_ERR_ARG, "the body reads '%s' from outside, which is not a constant",
                         m->values[caps.v[i]].name);
        else if (!(ip.env[caps.v[i]] = cv_val_from_tensor(c)))
            s = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    cv_ids_free(&caps);
    if (!s) {
        ip.hook = h->simulate ? sim_hook : NULL;
        ip.hook_user = h;
        s = cv_interp_run(&ip, h->body, in, out);
    }
    cv_interp_free(&ip);
    return s;
}

static carve_status ref_run(void *user, void *handle, carve_tensor *const *inputs, size_t n_inputs,
                            carve_tensor **outputs, size_t n_outputs, char *msg, size_t msg_size)
{
    ref_handle *h = handle;
    carve_model *m = h->m;
    if (n_inputs != carve_graph_input_count(m, h->body) || n_outputs != carve_graph_output_count(m, h->body)) {
        snprintf(msg, msg_size, "the body has %zu inputs and %zu outputs, the call %zu and %zu",
                 carve_graph_input_count(m, h->body), carve_graph_output_count(m, h->body), n_inputs, n_outputs);
        return CARVE_ERR_ARG;
    }
    for (size_t i = 0; i < n_outputs; i++)
        outputs[i] = NULL;
    cv_interp *ip = cv_interp_current();
    carve_status s;
    if (ip && ip->m == m) {
        cv_node_hook saved = ip->hook;
        void *saved_user = ip->hook_user;
        if (h->simulate) { /* else the body runs with plain ONNX semantics */
            ip->hook = sim_hook;
            ip->hook_user = h;
        }
        s = cv_interp_run(ip, h->body, (cv_val **)inputs, outputs);
        ip->hook = saved;
        ip->hook_user = saved_user;
    } else {
        s = run_alone(h, (cv_val **)inputs, outputs);
    }
    if (s)
        snprintf(msg, msg_size, "%s", carve_errmsg(m->ctx));
    return s;
}

static void ref_release(void *user, void *handle) { cv_free(handle); }

static const carve_backend reference = {
    .struct_size = sizeof(carve_backend),
    .abi_version = CARVE_BACKEND_ABI_VERSION,
    .name = "reference",
    .version = "carve " CARVE_VERSION,
    .compile = ref_compile,
    .run = ref_run,
    .release = ref_release,
};

const carve_backend *cv_reference_backend(void) { return &reference; }

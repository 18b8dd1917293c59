/* run_delegate.c: running a Delegate node: its body runs on the reference
 * kernels under the target's simulator, which applies the target's
 * semantics where they differ from ONNX's:
 *  - uint8_to_float_cast_nonzero_is_one: a direct Cast uint8 -> float maps
 *    every non-zero input to 1 (what HTP's cast does; legalization avoids it);
 *  - refuse_int64: the target has no int64: an int64 tensor may only enter a
 *    Cast or leave an op that makes int64 by definition (Shape, ArgMax...)
 *    for a Cast right after it, which is what int64 legalization emits; int64
 *    constants that are static shape parameters are read at compile time;
 *  - int32_wraps: int32 arithmetic wraps (the reference kernels wrap too). */
#include "partition.h"

#include <string.h>

static carve_status sim_hook(cv_kctx *k, const cv_op_def *def, cv_val **in, uint32_t n_in, cv_val **out,
                             uint32_t n_out, void *user)
{
    const carve_target *t = user;
    const cv_node *n = &k->m->nodes[k->node];
    bool cast = !strcmp(n->op, "Cast");
    if (t->sim_refuse_int64 && !cast)
        for (uint32_t i = 0; i < n_in; i++)
            /* static shape parameters (Reshape's shape, Resize's sizes...) are
             * read at compile time, not computed on the target */
            if (in[i] && in[i]->kind == CV_VAL_TENSOR && in[i]->dtype == CARVE_INT64 &&
                !(i < 32 && ((def->shape_inputs >> i) & 1) && cv_value_is_const(k->m, n->in[i])))
                return cv_kerr(k, "%s simulator: input %u '%s' is int64, which %s does not have", t->name, i,
                               k->m->values[n->in[i]].name, t->name);
    if (cast && t->sim_u8cast && in[0]->dtype == CARVE_UINT8) {
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
    if (!s && t->sim_refuse_int64 && !cast && !cv_op_makes_int64(n->op))
        for (uint32_t i = 0; i < n_out; i++)
            if (out[i] && out[i]->kind == CV_VAL_TENSOR && out[i]->dtype == CARVE_INT64)
                return cv_kerr(k, "%s simulator: output %u is int64, which %s does not have", t->name, i, t->name);
    return s;
}

carve_status k_delegate(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_interp *ip = k->interp;
    if (!ip)
        return cv_kerr(k, "a Delegate runs only inside the interpreter");
    carve_graph_id body = cv_attr_g(k->m, k->node, "body");
    const char *tname = cv_attr_s(k->m, k->node, "target", "");
    if (body == CARVE_NONE)
        return cv_kerr(k, "attribute 'body' (a graph) is missing");
    if (carve_graph_input_count(k->m, body) != n_in || carve_graph_output_count(k->m, body) != n_out)
        return cv_kerr(k, "its body has %zu inputs and %zu outputs, the node %u and %u",
                       carve_graph_input_count(k->m, body), carve_graph_output_count(k->m, body), n_in, n_out);
    const carve_target *t = ip->target && !strcmp(ip->target->name, tname) ? ip->target : NULL;
    if (!t && ip->builtin && !strcmp(ip->builtin->name, tname))
        t = ip->builtin;
    if (!t && cv_builtin_target_json(tname)) {
        carve_target_free(ip->builtin);
        ip->builtin = NULL;
        if (carve_target_builtin(k->m->ctx, tname, &ip->builtin))
            return CARVE_ERR_INVALID;
        t = ip->builtin;
    }
    /* an unknown target: the body runs with plain ONNX semantics */
    cv_node_hook saved = ip->hook;
    void *saved_user = ip->hook_user;
    if (t) {
        ip->hook = sim_hook;
        ip->hook_user = (void *)t;
    }
    carve_status s = cv_interp_run(ip, body, in, out);
    ip->hook = saved;
    ip->hook_user = saved_user;
    return s;
}

carve_status i_delegate(cv_ictx *c)
{
    const cv_node *n = &c->m->nodes[c->node];
    carve_graph_id body = cv_attr_g(c->m, c->node, "body");
    if (body == CARVE_NONE)
        return CARVE_OK;
    for (uint32_t i = 0; i < n->n_out && i < carve_graph_output_count(c->m, body); i++) {
        const cv_type *bt = &c->m->values[carve_graph_output(c->m, body, i)].type;
        if (bt->kind == CARVE_TYPE_TENSOR) {
            carve_status s = cv_infer_set(c, i, bt->dtype, bt->rank, bt->dims);
            if (s)
                return s;
        }
    }
    return CARVE_OK;
}

/* capability.c: can a target take a node as it is, and if not, why. Every
 * refusal has a reason code and a message that names the input, dtype,
 * attribute or dim at fault. */
#include "partition.h"

#include <string.h>

static const char *const codes[CV_R_COUNT] = {
    [CV_R_NONE] = "supported",
    [CV_R_CONSTANT] = "constant",
    [CV_R_SKIPPED_BY_USER] = "skipped_by_user",
    [CV_R_CUSTOM_DOMAIN] = "custom_domain",
    [CV_R_UNSUPPORTED_OP] = "unsupported_op",
    [CV_R_OPSET] = "unsupported_opset",
    [CV_R_DTYPE] = "unsupported_dtype",
    [CV_R_UNKNOWN_TYPE] = "unknown_type",
    [CV_R_RANK] = "rank",
    [CV_R_DYNAMIC_SHAPE] = "dynamic_shape",
    [CV_R_ATTRIBUTE] = "attribute",
    [CV_R_DATA_DEPENDENT] = "data_dependent_shape",
    [CV_R_CONTROL_FLOW] = "control_flow",
    [CV_R_INT64_RANGE] = "int64_range",
    [CV_R_DEQUANTIZED] = "dequantized_input",
    [CV_R_NODE_UNIT] = "node_unit",
    [CV_R_NO_RUNTIME_INPUT] = "no_runtime_input",
    [CV_R_SMALL_PARTITION] = "small_partition",
    [CV_R_BACKEND_REFUSED] = "backend_refused",
    [CV_R_NOT_CONSTANT] = "not_constant",
    [CV_R_INPUT_COUNT] = "input_count",
    [CV_R_QUANTIZED] = "quantized",
    [CV_R_ENCODING] = "fixed_encoding",
};

const char *cv_reason_code(cv_reason r) { return r < CV_R_COUNT ? codes[r] : "?"; }

cv_reason cv_reason_of_code(const char *code)
{
    for (int r = 1; code && r < CV_R_COUNT; r++)
        if (!strcmp(codes[r], code))
            return (cv_reason)r;
    return CV_R_COUNT;
}

bool cv_value_is_const(const carve_model *m, carve_value_id v)
{
    const cv_value *x = &m->values[v];
    if (x->init)
        return !x->is_input;
    return x->producer != CARVE_NONE && cv_op_has(m, x->producer, CV_OP_CONST_SOURCE);
}

static const cv_op_rule *rule_for(const cv_target_op *to, int64_t opset);

const cv_op_rule *cv_target_rule(const carve_model *m, carve_node_id n, const carve_target *t)
{
    const cv_target_op *to = cv_target_find_op(t, m->nodes[n].op);
    return to ? rule_for(to, carve_model_opset(m, m->nodes[n].domain)) : NULL;
}

static const cv_op_rule *rule_for(const cv_target_op *to, int64_t opset)
{
    for (uint32_t i = 0; i < to->n_rules; i++) {
        const cv_op_rule *r = &to->rules[i];
        if (opset >= r->since && (!r->until || opset <= r->until))
            return r;
    }
    return NULL;
}

const cv_tensor *cv_const_tensor(const carve_model *m, carve_value_id v)
{
    const cv_value *x = &m->values[v];
    if (x->init && !x->is_input)
        return x->init;
    if (x->producer != CARVE_NONE && cv_op_has(m, x->producer, CV_OP_CONST_SOURCE)) {
        const cv_attr *a = cv_node_attr_find(m, x->producer, "value");
        if (a && a->kind == CARVE_ATTR_TENSOR)
            return a->u.t;
    }
    return NULL;
}

static bool int64_in_range(const cv_tensor *t)
{
    const int64_t *p = t->data;
    for (size_t i = 0; i < t->nelem; i++) {
        int64_t x;
        memcpy(&x, p + i, sizeof x);
        if (x < INT32_MIN || x > INT32_MAX)
            return false;
    }
    return true;
}

/* check_value's common pass (a tensor of a dtype the rule takes, of a
 * known rank within the limit, static when the target asks) without its
 * call: anything else goes to check_value for the verdict and message. */
static inline bool value_fits(const cv_type *ty, uint32_t mask, bool inner, int max_rank, bool static_shapes)
{
    if (ty->kind != CARVE_TYPE_TENSOR || ty->dtype == CARVE_UNDEFINED || !(inner || ((mask >> ty->dtype) & 1)) ||
        ty->rank < 0 || ty->rank > max_rank)
        return false;
    for (int d = 0; static_shapes && d < ty->rank; d++)
        if (ty->dims[d].value < 0)
            return false;
    return true;
}

static cv_reason check_value(const carve_model *m, carve_value_id v, const char *role, uint32_t idx,
                             const carve_target *t, uint32_t mask, bool inner, int max_rank, char *msg, size_t msgsz)
{
    const cv_value *x = &m->values[v];
    const cv_type *ty = &x->type;
    if (ty->kind != CARVE_TYPE_TENSOR || ty->dtype == CARVE_UNDEFINED) {
        snprintf(msg, msgsz, "%s %u '%s' has no known tensor type", role, idx, x->name);
        return ty->kind == CARVE_TYPE_OTHER ? CV_R_DTYPE : CV_R_UNKNOWN_TYPE;
    }
    bool ok = inner || ((mask >> ty->dtype) & 1);
    if (!ok && ty->dtype == CARVE_INT64 && t->int64_as_int32 && ((mask >> CARVE_INT32) & 1))
        ok = true; /* legalized to int32 inside the body */
    if (!ok) {
        snprintf(msg, msgsz, "%s %u '%s' is %s, which %s does not take", role, idx, x->name,
                 carve_dtype_name(ty->dtype), t->name);
        return CV_R_DTYPE;
    }
    if (ty->rank < 0 && max_rank < CARVE_MAX_RANK) {
        /* a rank limit cannot be met by a value whose rank nothing fixes
         * (e.g. the output of an If whose branches differ in rank) */
        snprintf(msg, msgsz, "%s %u '%s' has an unknown rank; %s takes rank at most %d", role, idx, x->name, t->name,
                 max_rank);
        return CV_R_RANK;
    }
    if (ty->rank >= 0 && ty->rank > max_rank) {
        snprintf(msg, msgsz, "%s %u '%s' has rank %d, %s takes at most %d", role, idx, x->name, ty->rank, t->name,
                 max_rank);
        return CV_R_RANK;
    }
    if (t->static_shapes) {
        if (ty->rank < 0) {
            snprintf(msg, msgsz, "%s %u '%s' has an unknown shape; %s needs static shapes", role, idx, x->name,
                     t->name);
            return CV_R_DYNAMIC_SHAPE;
        }
        for (int d = 0; d < ty->rank; d++)
            if (ty->dims[d].value < 0) {
                if (ty->dims[d].param)
                    snprintf(msg, msgsz, "%s %u '%s' dim %d is symbolic (%s); %s needs static shapes: give %s a value",
                             role, idx, x->name, d, ty->dims[d].param, t->name, ty->dims[d].param);
                else
                    snprintf(msg, msgsz, "%s %u '%s' dim %d is unknown; %s needs static shapes", role, idx, x->name,
                             d, t->name);
                return CV_R_DYNAMIC_SHAPE;
            }
    }
    return CV_R_NONE;
}

cv_reason cv_capable(const carve_model *m, carve_node_id id, const carve_target *t, const cv_unit_inner_mask *inner,
                     char *msg, size_t msgsz)
{
    return cv_capable_op(m, id, t, cv_target_find_op(t, m->nodes[id].op), inner, msg, msgsz);
}

cv_reason cv_capable_op(const carve_model *m, carve_node_id id, const carve_target *t, const cv_target_op *to,
                        const cv_unit_inner_mask *inner, char *msg, size_t msgsz)
{
    const cv_node *n = &m->nodes[id];
    msg[0] = 0;
    const cv_op_def *def = cv_op_for_node(m, id);
    if (def && (def->flags & CV_OP_CONST_SOURCE) == CV_OP_CONST_SOURCE) {
        snprintf(msg, msgsz, "a Constant node: partitions read its value from the outer scope");
        return CV_R_CONSTANT;
    }
    if (*n->domain) {
        snprintf(msg, msgsz, "op of domain '%s'", n->domain);
        return CV_R_CUSTOM_DOMAIN;
    }
    if (t->is_cpu) {
        snprintf(msg, msgsz, "the target is the CPU");
        return CV_R_UNSUPPORTED_OP;
    }
    if (def && (def->flags & CV_OP_CONTROL) && !t->control_whole) {
        snprintf(msg, msgsz, "control flow stays on CPU (%s does not take it whole); its bodies are lowered on "
                             "their own", t->name);
        return CV_R_CONTROL_FLOW;
    }
    if (!to) {
        snprintf(msg, msgsz, "%s does not support %s", t->name, n->op);
        return CV_R_UNSUPPORTED_OP;
    }
    int64_t opset = carve_model_opset(m, n->domain);
    const cv_op_rule *r = rule_for(to, opset);
    if (!r) {
        snprintf(msg, msgsz, "%s supports %s, but not at opset %lld", t->name, n->op, (long long)opset);
        return CV_R_OPSET;
    }
    if (def && !t->datadep_ok) {
        if (def->flags & CV_OP_DATADEP) {
            snprintf(msg, msgsz, "%s's output shape depends on input values", n->op);
            return CV_R_DATA_DEPENDENT;
        }
        for (uint32_t i = 0; def->shape_inputs && i < n->n_in && i < 32; i++)
            if ((def->shape_inputs >> i) & 1 && n->in[i] != CARVE_NONE && !cv_value_is_const(m, n->in[i])) {
                snprintf(msg, msgsz, "input %u '%s' decides the output shape and is not a constant", i,
                         m->values[n->in[i]].name);
                return CV_R_DATA_DEPENDENT;
            }
    }
    uint32_t mask = r->dtype_mask ? r->dtype_mask : t->dtype_mask;
    int max_rank = r->max_rank ? r->max_rank : t->max_rank;
    /* the unit's inputs and outputs, and the shape-deciding inputs, as bits
     * by slot (slots from 64 on: none) */
    uint64_t unit_in = inner ? inner->in : 0, unit_out = inner ? inner->out : 0;
    uint32_t shape_in = def ? def->shape_inputs : 0;
    bool any_int64 = false; /* an int64 input: the int64 range check below */
    for (uint32_t i = 0; i < n->n_in; i++) {
        if (n->in[i] == CARVE_NONE)
            continue;
        const cv_type *ty = &m->values[n->in[i]].type;
        any_int64 |= ty->dtype == CARVE_INT64;
        bool in_unit = i < 64 && ((unit_in >> i) & 1);
        /* a constant that decides shapes (axes, pads, sizes: attributes
         * before their opset made them inputs) is a compile-time parameter
         * of the op, not a tensor the target holds: any dtype will do */
        if (i < 32 && ((shape_in >> i) & 1) && cv_value_is_const(m, n->in[i]))
            in_unit = true;
        if (value_fits(ty, mask, in_unit, max_rank, t->static_shapes))
            continue;
        cv_reason why = check_value(m, n->in[i], "input", i, t, mask, in_unit, max_rank, msg, msgsz);
        if (why)
            return why;
    }
    uint32_t n_outs = 0;
    for (uint32_t i = 0; i < n->n_out; i++) {
        if (n->out[i] == CARVE_NONE)
            continue;
        n_outs++;
        bool in_unit = i < 64 && ((unit_out >> i) & 1);
        if (value_fits(&m->values[n->out[i]].type, mask, in_unit, max_rank, t->static_shapes))
            continue;
        cv_reason why = check_value(m, n->out[i], "output", i, t, mask, in_unit, max_rank, msg, msgsz);
        if (why)
            return why;
    }
    if (r->max_outputs && n_outs > (uint32_t)r->max_outputs) {
        snprintf(msg, msgsz, "%s takes %s with at most %d output%s, this one has %u", t->name, n->op, r->max_outputs,
                 r->max_outputs == 1 ? "" : "s", n_outs);
        return CV_R_ATTRIBUTE;
    }
    for (uint32_t a = 0; a < r->n_attrs; a++) {
        const cv_attr_rule *ar = &r->attrs[a];
        const cv_attr *na = cv_node_attr_find(m, id, ar->name);
        if (!na)
            continue; /* the default is assumed allowed */
        bool ok = false;
        if (na->kind == CARVE_ATTR_INTS && !ar->is_str) {
            ok = true;
            for (uint32_t e = 0; e < na->n && ok; e++) {
                bool in = false;
                for (uint32_t k = 0; k < ar->n && !in; k++)
                    in = na->u.ints[e] == ar->ints[k];
                ok = in;
            }
        }
        for (uint32_t k = 0; k < ar->n && !ok; k++)
            ok = ar->is_str ? na->kind == CARVE_ATTR_STRING && na->u.s.n == strlen(ar->strs[k]) &&
                                  !memcmp(na->u.s.p, ar->strs[k], na->u.s.n)
                            : (na->kind == CARVE_ATTR_INT && na->u.i == ar->ints[k]) ||
                                  (na->kind == CARVE_ATTR_FLOAT && (double)na->u.f == ar->nums[k]);
        if (!ok) {
            char allowed[160] = "";
            for (uint32_t k = 0; k < ar->n; k++) {
                size_t l = strlen(allowed);
                if (ar->is_str)
                    snprintf(allowed + l, sizeof allowed - l, "%s%s", k ? ", " : "", ar->strs[k]);
                else
                    snprintf(allowed + l, sizeof allowed - l, "%s%g", k ? ", " : "", ar->nums[k]);
            }
            if (na->kind == CARVE_ATTR_STRING)
                snprintf(msg, msgsz, "attribute %s = '%.*s' is not supported by %s (allowed: %s)", ar->name,
                         (int)na->u.s.n, (const char *)na->u.s.p, t->name, allowed);
            else if (na->kind == CARVE_ATTR_FLOAT)
                snprintf(msg, msgsz, "attribute %s = %g is not supported by %s (allowed: %s)", ar->name,
                         (double)na->u.f, t->name, allowed);
            else if (na->kind == CARVE_ATTR_INTS)
                snprintf(msg, msgsz, "attribute %s has a value %s does not support (allowed: %s%s)", ar->name,
                         t->name, ar->n == 1 ? "only " : "", allowed);
            else
                snprintf(msg, msgsz, "attribute %s = %lld is not supported by %s (allowed: %s)", ar->name,
                         (long long)(na->kind == CARVE_ATTR_INT ? na->u.i : 0), t->name, allowed);
            return CV_R_ATTRIBUTE;
        }
    }
    uint32_t n_given = 0;
    for (uint32_t i = 0; (r->min_inputs || r->max_inputs) && i < n->n_in; i++)
        n_given += n->in[i] != CARVE_NONE;
    if (r->min_inputs && n_given < (uint32_t)r->min_inputs) {
        snprintf(msg, msgsz, "%s takes %s with at least %d inputs, this one has %u", t->name, n->op, r->min_inputs,
                 n_given);
        return CV_R_INPUT_COUNT;
    }
    if (r->min_rank && n->n_in && n->in[0] != CARVE_NONE) {
        int rank = m->values[n->in[0]].type.rank;
        if (rank >= 0 && rank < r->min_rank) {
            snprintf(msg, msgsz, "input 0 '%s' has rank %d, %s takes %s from rank %d", m->values[n->in[0]].name,
                     rank, t->name, n->op, r->min_rank);
            return CV_R_RANK;
        }
    }
    if (r->max_inputs && n_given > (uint32_t)r->max_inputs) {
        snprintf(msg, msgsz, "%s takes %s with at most %d inputs, this one has %u", t->name, n->op, r->max_inputs,
                 n_given);
        return CV_R_INPUT_COUNT;
    }
    for (uint32_t i = 0; r->const_inputs && i < n->n_in && i < 32; i++)
        if ((r->const_inputs >> i) & 1 && n->in[i] != CARVE_NONE && !cv_value_is_const(m, n->in[i])) {
            snprintf(msg, msgsz, "input %u '%s' of %s must be a constant for %s (it is compiled in)", i,
                     m->values[n->in[i]].name, n->op, t->name);
            return CV_R_NOT_CONSTANT;
        }
    if (r->float_only && inner && ((inner->in | inner->out) & 1)) { /* its data value is quantized */
        snprintf(msg, msgsz, "%s takes %s in float only, not quantized (in a QDQ node unit)", t->name, n->op);
        return CV_R_QUANTIZED;
    }
    if (r->checks) {
        cv_reason why = cv_check_rules(m, id, t, r->checks, inner, msg, msgsz);
        if (why)
            return why;
    }
    if (r->last_axis && n->n_in && n->in[0] != CARVE_NONE) {
        int rank = m->values[n->in[0]].type.rank;
        int64_t axis = cv_attr_i(m, id, r->last_axis, -1);
        bool via_transpose = r->last_axis_transpose && t->lg_softmax_transpose && rank > 0 && axis >= -rank &&
                             axis < rank;
        if (rank < 0 || (axis != -1 && axis != rank - 1 && !via_transpose)) {
            snprintf(msg, msgsz, "%s takes %s only over the last axis (%s = %lld, rank %d)", t->name, n->op,
                     r->last_axis, (long long)axis, rank);
            return CV_R_ATTRIBUTE;
        }
    }
    if (t->lg_int64 && any_int64) {
        for (uint32_t i = 0; i < n->n_in; i++) {
            if (n->in[i] == CARVE_NONE || m->values[n->in[i]].type.dtype != CARVE_INT64)
                continue;
            const cv_tensor *ct = cv_const_tensor(m, n->in[i]);
            if (!ct || int64_in_range(ct))
                continue;
            if ((i == 1 || i == 2) && t->lg_clamp_slice && cv_node_is(n, "Slice"))
                continue; /* clamped: the meaning of Slice bounds allows it */
            snprintf(msg, msgsz, "input %u '%s' holds int64 values outside the int32 range", i,
                     m->values[n->in[i]].name);
            return CV_R_INT64_RANGE;
        }
    }
    return CV_R_NONE;
}

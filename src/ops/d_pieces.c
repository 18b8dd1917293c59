/* d_pieces.c: the pieces decompositions are built from (k_reduce.h): one
 * node each, following the model's opset (Reduce* axes and Unsqueeze axes
 * moved from attribute to input over the versions), and the errors a
 * decomposition reports. */
#include "k_reduce.h"

#include <string.h>

static carve_value_id piece(cv_rw *rw, const char *op, uint32_t n_in, const carve_value_id *ins,
                            carve_value_id out, carve_node_id *node)
{
    for (uint32_t i = 0; i < n_in; i++)
        if (ins[i] == CARVE_NONE)
            return CARVE_NONE;
    carve_node_id id = cv_rw_node(rw, op, op, n_in, ins, 1, &out);
    if (id == CARVE_NONE)
        return CARVE_NONE;
    if (node)
        *node = id;
    return rw->m->nodes[id].out[0];
}

carve_value_id rd_unary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id out)
{
    return piece(rw, op, 1, &a, out, NULL);
}

carve_value_id rd_binary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id b, carve_value_id out)
{
    carve_value_id ins[2] = {a, b};
    return piece(rw, op, 2, ins, out, NULL);
}

carve_value_id rd_reduce(cv_rw *rw, const char *op, carve_value_id x, size_t n_axes, const int64_t *axes,
                         carve_value_id out)
{
    int64_t opset = carve_model_opset(rw->m, "");
    bool as_input = opset >= (strcmp(op, "ReduceSum") ? 18 : 13);
    carve_node_id id = CARVE_NONE;
    carve_value_id r;
    if (as_input) {
        carve_value_id ins[2] = {x, cv_rw_ints(rw, "axes", n_axes, axes)};
        r = piece(rw, op, 2, ins, out, &id);
    } else {
        r = piece(rw, op, 1, &x, out, &id);
        if (r != CARVE_NONE && carve_node_set_attr_ints(rw->m, id, "axes", n_axes, axes))
            return CARVE_NONE;
    }
    if (r != CARVE_NONE && carve_node_set_attr_int(rw->m, id, "keepdims", 1))
        return CARVE_NONE;
    return r;
}

carve_value_id rd_unsqueeze(cv_rw *rw, carve_value_id x, size_t n_axes, const int64_t *axes)
{
    if (carve_model_opset(rw->m, "") >= 13) {
        carve_value_id ins[2] = {x, cv_rw_ints(rw, "axes", n_axes, axes)};
        return piece(rw, "Unsqueeze", 2, ins, CARVE_NONE, NULL);
    }
    carve_node_id id = CARVE_NONE;
    carve_value_id r = piece(rw, "Unsqueeze", 1, &x, CARVE_NONE, &id);
    if (r != CARVE_NONE && carve_node_set_attr_ints(rw->m, id, "axes", n_axes, axes))
        return CARVE_NONE;
    return r;
}

carve_value_id rd_reshape(cv_rw *rw, carve_value_id x, carve_value_id shape, carve_value_id out)
{
    carve_value_id ins[2] = {x, shape};
    return piece(rw, "Reshape", 2, ins, out, NULL);
}

carve_value_id rd_cast(cv_rw *rw, carve_value_id x, carve_dtype to, carve_value_id out)
{
    carve_node_id id = CARVE_NONE;
    carve_value_id r = piece(rw, "Cast", 1, &x, out, &id);
    if (r != CARVE_NONE && carve_node_set_attr_int(rw->m, id, "to", to))
        return CARVE_NONE;
    return r;
}

carve_status rd_failed(cv_rw *rw)
{
    const cv_node *n = &rw->m->nodes[rw->node];
    return cv_error(rw->m->ctx, CARVE_ERR_NOMEM, "node '%s' (%s): out of memory decomposing", n->name, n->op);
}

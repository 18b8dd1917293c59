/* d_pieces.c: the pieces decompositions are built from (k_reduce.h): one
 * node each, following the model's opset (Reduce* axes and Unsqueeze axes
 * moved from attribute to input over the versions), and the errors a
 * decomposition reports. */
#include "k_reduce.h"

#include <string.h>

carve_value_id rd_unary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id out)
{
    return cv_rw_piece(rw, op, op, 1, &a, out);
}

carve_value_id rd_binary(cv_rw *rw, const char *op, carve_value_id a, carve_value_id b, carve_value_id out)
{
    carve_value_id ins[2] = {a, b};
    return cv_rw_piece(rw, op, op, 2, ins, out);
}

carve_value_id rd_reduce(cv_rw *rw, const char *op, carve_value_id x, size_t n_axes, const int64_t *axes,
                         carve_value_id out)
{
    int64_t opset = carve_model_opset(rw->m, "");
    bool as_input = opset >= (strcmp(op, "ReduceSum") ? 18 : 13);
    carve_value_id ins[2] = {x, as_input ? cv_rw_ints(rw, "axes", n_axes, axes) : CARVE_NONE};
    carve_value_id r = cv_rw_piece(rw, op, op, as_input ? 2 : 1, ins, out);
    if (r == CARVE_NONE)
        return CARVE_NONE;
    carve_node_id id = rw->m->values[r].producer;
    if (!as_input && carve_node_set_attr_ints(rw->m, id, "axes", n_axes, axes))
        return CARVE_NONE;
    if (carve_node_set_attr_int(rw->m, id, "keepdims", 1))
        return CARVE_NONE;
    return r;
}

carve_value_id rd_unsqueeze(cv_rw *rw, carve_value_id x, size_t n_axes, const int64_t *axes)
{
    bool as_input = carve_model_opset(rw->m, "") >= 13;
    carve_value_id ins[2] = {x, as_input ? cv_rw_ints(rw, "axes", n_axes, axes) : CARVE_NONE};
    carve_value_id r = cv_rw_piece(rw, "Unsqueeze", "Unsqueeze", as_input ? 2 : 1, ins, CARVE_NONE);
    if (r != CARVE_NONE && !as_input &&
        carve_node_set_attr_ints(rw->m, rw->m->values[r].producer, "axes", n_axes, axes))
        return CARVE_NONE;
    return r;
}

carve_value_id rd_reshape(cv_rw *rw, carve_value_id x, carve_value_id shape, carve_value_id out)
{
    carve_value_id ins[2] = {x, shape};
    return cv_rw_piece(rw, "Reshape", "Reshape", 2, ins, out);
}

carve_value_id rd_cast(cv_rw *rw, carve_value_id x, carve_dtype to, carve_value_id out)
{
    carve_value_id r = cv_rw_piece(rw, "Cast", "Cast", 1, &x, out);
    if (r != CARVE_NONE && carve_node_set_attr_int(rw->m, rw->m->values[r].producer, "to", to))
        return CARVE_NONE;
    return r;
}

carve_status rd_failed(cv_rw *rw)
{
    return cv_node_err(rw->m, rw->node, CARVE_ERR_NOMEM, "", "out of memory decomposing");
}

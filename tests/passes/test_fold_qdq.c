/* test_fold_qdq.c: layout ops after a quantized weight's DequantizeLinear
 * (src/passes/fold_qdq.c). The chain w_int8 -> DequantizeLinear -> Transpose
 * -> MatMul becomes w_int8' -> DequantizeLinear' -> MatMul with per-axis
 * (the axis moves with the transpose) and blocked (block_size, opset 21)
 * encodings; Reshape, Squeeze, Unsqueeze and Flatten move too where the
 * quantization axis survives them, and are refused where it does not. The
 * outputs are exactly the same before and after. */
#include "foldtest.h"

static carve_ctx *ctx;

typedef struct {
    const char *what;
    int64_t opset;
    carve_dtype wt;   /* weight dtype (int8, uint8, int4) */
    int wr;
    int64_t wd[4];
    int64_t axis;     /* quantization axis; -1: per tensor */
    int64_t block;    /* 0: not blocked */
    const char *op;   /* the layout op */
    int np;
    int64_t p[4];     /* perm (Transpose), shape (Reshape), axes (Squeeze/Unsqueeze), axis (Flatten) */
    bool moved;       /* expected: the op goes onto the weight */
    int64_t new_axis;
    int64_t new_wd[4];
} qcase;

/* The scale (and zero point) shape of a case. */
static int scale_shape(const qcase *c, int64_t *sd)
{
    if (c->axis < 0)
        return 0;
    if (!c->block) {
        sd[0] = c->wd[c->axis];
        return 1;
    }
    for (int i = 0; i < c->wr; i++)
        sd[i] = i == c->axis ? (c->wd[i] + c->block - 1) / c->block : c->wd[i];
    return c->wr;
}

/* w -> DequantizeLinear -> op -> graph output "y" (and, after a 2-D
 * Transpose, MatMul(x, y) -> "z" with x a runtime input). */
static void run_case(const qcase *c)
{
    carve_model *m = ft_model(ctx, c->opset);
    int64_t sd[4];
    int sr = scale_shape(c, sd);
    carve_value_id w = ft_weight(m, 0, "w_q", c->wt, c->wr, c->wd, 1, c->wt == CARVE_UINT8 ? 0 : -8, 8);
    carve_value_id s = ft_weight(m, 0, "scale", CARVE_FLOAT, sr, sd, 2, 0.01, 0.1);
    carve_value_id z = ft_weight(m, 0, "zero_point", c->wt, sr, sd, 3, c->wt == CARVE_UINT8 ? 0 : -3, 3);
    carve_value_id din[3] = {w, s, z};
    carve_node_id dq = ft_node(m, 0, "DequantizeLinear", "dq", 3, din, "w_deq");
    if (c->axis >= 0)
        carve_node_set_attr_int(m, dq, "axis", c->axis);
    if (c->block)
        carve_node_set_attr_int(m, dq, "block_size", c->block);
    carve_value_id lin[2] = {carve_node_output(m, dq, 0), CARVE_NONE};
    size_t nl = 1;
    carve_node_id l;
    if (!strcmp(c->op, "Transpose")) {
        l = ft_node(m, 0, c->op, "layout", 1, lin, "y");
        carve_node_set_attr_ints(m, l, "perm", (size_t)c->np, c->p);
    } else if (!strcmp(c->op, "Flatten")) {
        l = ft_node(m, 0, c->op, "layout", 1, lin, "y");
        carve_node_set_attr_int(m, l, "axis", c->p[0]);
    } else {
        lin[1] = ft_ints(m, 0, "layout_arg", c->np, c->p);
        nl = 2;
        l = ft_node(m, 0, c->op, "layout", nl, lin, "y");
    }
    carve_value_id y = carve_node_output(m, l, 0);
    carve_graph_add_output(m, 0, y);
    cv_val *inputs[1] = {NULL};
    if (!strcmp(c->op, "Transpose") && c->wr == 2) { /* ... -> MatMul(x, y) */
        int64_t xd[2] = {3, c->wd[c->p[0]]};
        carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, xd);
        carve_value_id min[2] = {x, y};
        carve_graph_add_output(m, 0, ft_op(m, 0, "MatMul", "matmul", 2, min, "z"));
        inputs[0] = ot_random(CARVE_FLOAT, 2, xd, 4, -1, 1);
    }
    carve_fold_stats st;
    ft_fold_check(m, inputs[0] ? inputs : NULL, NULL, 0, 0, &st, c->what);
    OT_CHECK(ft_alive(m, "dq"), "%s: the DequantizeLinear stays", c->what);
    OT_CHECK(ft_alive(m, "layout") == !c->moved, "%s: the %s is %s", c->what, c->op, c->moved ? "moved" : "left alone");
    OT_CHECK(st.refused[CARVE_GUARD_QUANT_WEIGHT] == 1, "%s: the DequantizeLinear is refused once", c->what);
    dq = carve_model_find_node(m, "dq");
    carve_value_id wq = carve_node_input(m, dq, 0);
    OT_CHECK(carve_value_dtype(m, wq) == c->wt, "%s: the weight stays %s", c->what, carve_dtype_name(c->wt));
    if (c->moved) {
        OT_CHECK(st.layout_moved == 1, "%s: one layout op moved, got %u", c->what, st.layout_moved);
        OT_CHECK(carve_node_output(m, dq, 0) == y, "%s: the DequantizeLinear writes the op's output", c->what);
        bool dims = true;
        for (int i = 0; i < 4 && c->new_wd[i]; i++)
            dims = dims && carve_value_rank(m, wq) > i && carve_value_dim(m, wq, i).value == c->new_wd[i];
        OT_CHECK(dims, "%s: the integer weight has the op's output shape", c->what);
        int64_t ax = -100;
        bool has = carve_node_attr_int(m, dq, "axis", &ax);
        if (c->axis >= 0)
            OT_CHECK(has && ax == c->new_axis, "%s: axis %lld, expected %lld", c->what, (long long)ax,
                     (long long)c->new_axis);
        int64_t bs = 0;
        carve_node_attr_int(m, dq, "block_size", &bs);
        OT_CHECK(bs == c->block, "%s: block_size %lld stays", c->what, (long long)bs);
        if (c->block) {
            carve_value_id sv = carve_node_input(m, dq, 1), zv = carve_node_input(m, dq, 2);
            OT_CHECK(carve_value_rank(m, sv) == carve_value_rank(m, wq) &&
                         carve_value_dim(m, sv, (int)c->new_axis).value == (c->wd[c->axis] + c->block - 1) / c->block,
                     "%s: the blocked scale moved with the weight", c->what);
            OT_CHECK(carve_value_rank(m, zv) == carve_value_rank(m, wq), "%s: so did the zero point", c->what);
        }
    }
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

static const qcase cases[] = {
    /* the chain of the issue: per-axis, the axis follows the transpose */
    {"per-axis int8 Transpose", 17, CARVE_INT8, 2, {6, 8}, 0, 0, "Transpose", 2, {1, 0}, true, 1, {8, 6}},
    {"per-axis uint8 Transpose", 13, CARVE_UINT8, 2, {6, 8}, 1, 0, "Transpose", 2, {1, 0}, true, 0, {8, 6}},
    {"per-axis rank 3 Transpose", 17, CARVE_INT8, 3, {2, 3, 4}, 2, 0, "Transpose", 3, {2, 0, 1}, true, 0, {4, 2, 3}},
    /* blocked (opset 21): scale and zero point move along */
    {"blocked int8 Transpose", 21, CARVE_INT8, 2, {6, 8}, 1, 4, "Transpose", 2, {1, 0}, true, 0, {8, 6}},
    {"blocked int4 Transpose", 21, CARVE_INT4, 2, {6, 8}, 1, 4, "Transpose", 2, {1, 0}, true, 0, {8, 6}},
    {"blocked int8 Transpose, ragged block", 21, CARVE_INT8, 2, {6, 10}, 1, 4, "Transpose", 2, {1, 0}, true, 0, {10, 6}},
    {"blocked Unsqueeze", 21, CARVE_INT8, 2, {6, 8}, 1, 4, "Unsqueeze", 1, {0}, true, 2, {1, 6, 8}},
    {"blocked Reshape keeping the axis", 21, CARVE_INT8, 2, {6, 8}, 0, 2, "Reshape", 3, {6, 2, 4}, true, 0, {6, 2, 4}},
    {"blocked Reshape splitting the axis", 21, CARVE_INT8, 2, {6, 8}, 1, 4, "Reshape", 3, {6, 2, 4}, false, 0, {0}},
    /* per tensor: any layout op moves */
    {"per-tensor Reshape", 17, CARVE_INT8, 2, {6, 8}, -1, 0, "Reshape", 2, {4, 12}, true, 0, {4, 12}},
    {"per-tensor Flatten", 17, CARVE_INT8, 3, {2, 3, 4}, -1, 0, "Flatten", 1, {2}, true, 0, {6, 4}},
    /* per axis through reshapes */
    {"per-axis Reshape keeping the axis", 17, CARVE_INT8, 2, {6, 8}, 0, 0, "Reshape", 3, {6, 2, 4}, true, 0, {6, 2, 4}},
    {"per-axis Reshape splitting the axis", 17, CARVE_INT8, 2, {6, 8}, 0, 0, "Reshape", 2, {3, 16}, false, 0, {0}},
    {"per-axis Reshape with -1", 17, CARVE_INT8, 3, {6, 2, 4}, 0, 0, "Reshape", 2, {6, -1}, true, 0, {6, 8}},
    {"per-axis Unsqueeze", 17, CARVE_INT8, 2, {6, 8}, 0, 0, "Unsqueeze", 1, {0}, true, 1, {1, 6, 8}},
    {"per-axis Squeeze", 17, CARVE_INT8, 3, {1, 6, 8}, 1, 0, "Squeeze", 1, {0}, true, 0, {6, 8}},
    {"per-axis Flatten keeping the axis", 17, CARVE_INT8, 3, {6, 2, 4}, 0, 0, "Flatten", 1, {1}, true, 0, {6, 8}},
    {"per-axis Flatten merging the axis", 17, CARVE_INT8, 3, {6, 2, 4}, 1, 0, "Flatten", 1, {1}, false, 0, {0}},
};

/* Layout ops in a row all go onto the weight: [6,8] axis 0 -> Reshape
 * [6,2,4] -> Transpose [2,4,6] (axis 2) -> Reshape [8,6] (axis 1). */
static void chain(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t wd[2] = {6, 8}, sd[1] = {6}, shape[3] = {6, 2, 4}, xd[2] = {3, 6};
    carve_value_id din[3] = {ft_weight(m, 0, "w", CARVE_INT8, 2, wd, 1, -100, 100),
                             ft_weight(m, 0, "s", CARVE_FLOAT, 1, sd, 2, 0.01, 0.1),
                             ft_weight(m, 0, "z", CARVE_INT8, 1, sd, 3, -3, 3)};
    carve_node_id dq = ft_node(m, 0, "DequantizeLinear", "dq", 3, din, "wd");
    carve_node_set_attr_int(m, dq, "axis", 0);
    carve_value_id rin[2] = {carve_node_output(m, dq, 0), ft_ints(m, 0, "shape", 3, shape)};
    carve_value_id r = ft_op(m, 0, "Reshape", "reshape", 2, rin, "r");
    carve_node_id t = ft_node(m, 0, "Transpose", "transpose", 1, &r, "t");
    int64_t perm[3] = {1, 2, 0};
    carve_node_set_attr_ints(m, t, "perm", 3, perm);
    int64_t fl[2] = {8, 6};
    carve_value_id r2in[2] = {carve_node_output(m, t, 0), ft_ints(m, 0, "shape2", 2, fl)};
    carve_value_id w2 = ft_op(m, 0, "Reshape", "reshape2", 2, r2in, "w2");
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, (int64_t[]){3, 8});
    carve_value_id min[2] = {x, w2};
    carve_graph_add_output(m, 0, ft_op(m, 0, "MatMul", "matmul", 2, min, "y"));
    (void)xd;
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, (int64_t[]){3, 8}, 5, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "chain");
    OT_CHECK(!ft_alive(m, "reshape") && !ft_alive(m, "transpose") && !ft_alive(m, "reshape2"),
             "Reshape, Transpose and Reshape all go onto the weight");
    int64_t ax = -1;
    carve_node_attr_int(m, carve_model_find_node(m, "dq"), "axis", &ax);
    OT_CHECK(ax == 1 && st.layout_moved == 3, "axis 0 -> 0 -> 2 -> 1 (got %lld), 3 moved (got %u)", (long long)ax,
             st.layout_moved);
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

/* A DequantizeLinear read twice: moving the op would store the weight
 * twice, so it stays as it is. */
static void shared(void)
{
    carve_model *m = ft_model(ctx, 17);
    int64_t wd[2] = {4, 4};
    float s = 0.1f;
    carve_value_id din[2] = {ft_weight(m, 0, "w", CARVE_INT8, 2, wd, 1, -100, 100),
                             carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &s, sizeof s)};
    carve_value_id d = ft_op(m, 0, "DequantizeLinear", "dq", 2, din, "wd");
    carve_node_id t = ft_node(m, 0, "Transpose", "transpose", 1, &d, "t");
    carve_value_id x = ft_input(m, 0, "x", CARVE_FLOAT, 2, wd);
    carve_value_id a[2] = {x, carve_node_output(m, t, 0)}, b[2] = {x, d};
    carve_value_id p = ft_op(m, 0, "MatMul", "mm1", 2, a, "p");
    carve_value_id q = ft_op(m, 0, "MatMul", "mm2", 2, b, "q");
    carve_value_id c[2] = {p, q};
    carve_graph_add_output(m, 0, ft_op(m, 0, "Add", "add", 2, c, "y"));
    cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, wd, 5, -1, 1)};
    carve_fold_stats st;
    ft_fold_check(m, inputs, NULL, 0, 0, &st, "shared");
    OT_CHECK(ft_alive(m, "transpose") && st.layout_moved == 0, "a DequantizeLinear read twice keeps its Transpose");
    cv_val_unref(inputs[0]);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(&cases[i]);
    chain();
    shared();
    carve_ctx_free(ctx);
    return ot_finish();
}

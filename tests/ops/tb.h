/* tb.h: the one-node model builder of the kernel tests (test_nn.c,
 * test_reduce.c, test_quant.c, test_norm.c, test_misc.c, test_elementwise.c): a model with graph inputs fed
 * at run time, one node "n" whose outputs ("y", "y1", ...) are the graph's
 * outputs, and its run. */
#ifndef CARVE_TESTS_OPS_TB_H
#define CARVE_TESTS_OPS_TB_H

#include "opstest.h"

#include <string.h>

typedef struct {
    carve_ctx *ctx;
    carve_model *m;
    cv_val *run_in[10];
    int n_run_in;
    carve_node_id node;
} tb;

static inline void tb_init(tb *t, int64_t opset)
{
    memset(t, 0, sizeof *t);
    t->ctx = carve_ctx_new();
    t->m = carve_model_new(t->ctx);
    if (opset >= 21)
        carve_model_set_ir_version(t->m, 10); /* what opset 21 needs */
    carve_model_set_opset(t->m, "", opset);
}

static inline void tb_free(tb *t)
{
    for (int i = 0; i < t->n_run_in; i++)
        cv_val_unref(t->run_in[i]);
    carve_model_free(t->m);
    carve_ctx_free(t->ctx);
}

/* A graph input fed with v at run time (takes v's reference); sym names
 * dim 0 symbolically when set. */
static inline carve_value_id tb_in_sym(tb *t, const char *name, cv_val *v, const char *sym)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < v->rank; i++)
        d[i] = (carve_dim){v->dims[i], NULL};
    if (sym && v->rank)
        d[0] = (carve_dim){-1, sym};
    t->run_in[t->n_run_in++] = v;
    return carve_graph_add_input(t->m, 0, name, v->dtype, v->rank, d);
}

static inline carve_value_id tb_in(tb *t, const char *name, cv_val *v) { return tb_in_sym(t, name, v, NULL); }

/* The node under test, named name, n_out (at most 5) outputs, all graph
 * outputs. */
static inline carve_node_id tb_node_named(tb *t, const char *op, const char *name, int n_in,
                                          const carve_value_id *ins, int n_out)
{
    const char *outs[5] = {"y", "y1", "y2", "y3", "y4"};
    t->node = carve_graph_add_node(t->m, 0, op, "", name, (size_t)n_in, ins, (size_t)n_out, outs);
    for (int i = 0; i < n_out; i++)
        carve_graph_add_output(t->m, 0, carve_node_output(t->m, t->node, (size_t)i));
    return t->node;
}

/* The node under test, "n". */
static inline carve_node_id tb_node(tb *t, const char *op, int n_in, const carve_value_id *ins, int n_out)
{
    return tb_node_named(t, op, "n", n_in, ins, n_out);
}

/* An initializer with v's data (v is released). */
static inline carve_value_id tb_const(tb *t, const char *name, cv_val *v)
{
    carve_value_id id = carve_graph_add_initializer(t->m, 0, name, v->dtype, v->rank, v->dims, v->data, v->nbytes);
    cv_val_unref(v);
    return id;
}

/* Output i of the node under test. */
static inline carve_value_id tb_out(tb *t, int i) { return carve_node_output(t->m, t->node, (size_t)i); }

/* y[] receives one value per graph output (cleared first). */
static inline carve_status tb_run(tb *t, cv_val **y)
{
    for (size_t i = 0; i < carve_graph_output_count(t->m, 0); i++)
        y[i] = NULL;
    return ot_run(t->m, t->run_in, y);
}

static inline bool errmsg_has(tb *t, const char *s) { return strstr(carve_errmsg(t->ctx), s) != NULL; }

#endif

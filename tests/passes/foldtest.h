/* foldtest.h: helpers for the folding tests: building small models with the
 * public builder API, folding them, and checking that the outputs did not
 * change and the model still verifies, exports and re-imports. */
#ifndef CARVE_FOLDTEST_H
#define CARVE_FOLDTEST_H

#include "opstest.h"

#include <stdlib.h>
#include <string.h>

static inline carve_model *ft_model(carve_ctx *ctx, int64_t opset)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", opset);
    return m;
}

/* An input of graph g; a dim < 0 becomes the symbolic dim "N". */
static inline carve_value_id ft_input(carve_model *m, carve_graph_id g, const char *name, carve_dtype dt, int rank,
                                      const int64_t *dims)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = dims[i] < 0 ? (carve_dim){-1, "N"} : (carve_dim){dims[i], NULL};
    return carve_graph_add_input(m, g, name, dt, rank, d);
}

/* An initializer of seeded values in [lo, hi). */
static inline carve_value_id ft_weight(carve_model *m, carve_graph_id g, const char *name, carve_dtype dt, int rank,
                                       const int64_t *dims, uint32_t seed, double lo, double hi)
{
    cv_val *v = ot_random(dt, rank, dims, seed, lo, hi);
    carve_value_id id = carve_graph_add_initializer(m, g, name, dt, rank, dims, v->data, v->nbytes);
    cv_val_unref(v);
    return id;
}

static inline carve_value_id ft_ints(carve_model *m, carve_graph_id g, const char *name, int64_t n, const int64_t *v)
{
    return carve_graph_add_initializer(m, g, name, CARVE_INT64, 1, &n, v, (size_t)n * sizeof *v);
}

static inline carve_value_id ft_scalar_i64(carve_model *m, carve_graph_id g, const char *name, int64_t v)
{
    return carve_graph_add_initializer(m, g, name, CARVE_INT64, 0, NULL, &v, sizeof v);
}

/* A one-output node of graph g; returns the node (its output is value 0). */
static inline carve_node_id ft_node(carve_model *m, carve_graph_id g, const char *op, const char *name, size_t n_in,
                                    const carve_value_id *in, const char *out)
{
    const char *outs[1] = {out};
    carve_node_id n = carve_graph_add_node(m, g, op, "", name, n_in, in, 1, outs);
    OT_CHECK(n != CARVE_NONE, "add %s '%s': %s", op, name, carve_errmsg(carve_model_ctx(m)));
    return n;
}

static inline carve_value_id ft_op(carve_model *m, carve_graph_id g, const char *op, const char *name, size_t n_in,
                                   const carve_value_id *in, const char *out)
{
    carve_node_id n = ft_node(m, g, op, name, n_in, in, out);
    return n == CARVE_NONE ? CARVE_NONE : carve_node_output(m, n, 0);
}

/* A Constant node holding a tensor. */
static inline carve_value_id ft_constant(carve_model *m, carve_graph_id g, const char *name, carve_dtype dt,
                                         int rank, const int64_t *dims, const void *data, size_t nbytes,
                                         const char *out)
{
    carve_node_id n = ft_node(m, g, "Constant", name, 0, NULL, out);
    carve_node_set_attr_tensor(m, n, "value", dt, rank, dims, data, nbytes);
    return carve_node_output(m, n, 0);
}

/* Live nodes of op `op` in every graph (dead subgraphs excluded). */
static inline uint32_t ft_count(const carve_model *m, const char *op)
{
    cv_ids gs = {0};
    uint32_t n = 0;
    cv_fold_graphs(m, &gs);
    for (uint32_t k = 0; k < gs.n; k++) {
        const cv_graph *gr = &m->graphs[gs.v[k]];
        for (uint32_t i = 0; i < gr->nodes.n; i++)
            if (!op || !strcmp(m->nodes[gr->nodes.v[i]].op, op))
                n++;
    }
    cv_ids_free(&gs);
    return n;
}

/* Is node `name` still a live node of the model? */
static inline bool ft_alive(const carve_model *m, const char *name)
{
    carve_node_id n = carve_model_find_node(m, name);
    return n != CARVE_NONE && !m->nodes[n].dead;
}

/* Value `name` of the main graph, CARVE_NONE if absent. */
static inline carve_value_id ft_value(const carve_model *m, const char *name)
{
    return carve_graph_find_value(m, 0, name);
}

static inline bool ft_is_init(const carve_model *m, const char *name)
{
    carve_value_id v = ft_value(m, name);
    return v != CARVE_NONE && cv_fold_const(m, v);
}

/* Folds m and checks: the model verifies, constant bytes add up, the
 * outputs on `inputs` are what they were (within atol/rtol), and the folded
 * model exports, re-imports and gives the same outputs again. */
static inline carve_status ft_fold_check(carve_model *m, cv_val **inputs, const carve_fold_opts *o, double atol,
                                         double rtol, carve_fold_stats *st, const char *what)
{
    carve_ctx *ctx = carve_model_ctx(m);
    uint32_t n_out = (uint32_t)carve_graph_output_count(m, 0);
    cv_val **before = calloc(n_out + 1, sizeof *before), **after = calloc(n_out + 1, sizeof *after),
           **again = calloc(n_out + 1, sizeof *again);
    carve_fold_stats local;
    if (!st)
        st = &local;
    carve_status s = ot_run(m, inputs, before);
    OT_CHECK(s == CARVE_OK, "%s: run before folding: %s", what, carve_errmsg(ctx));
    s = carve_fold(m, o, st);
    OT_CHECK(s == CARVE_OK, "%s: fold: %s", what, carve_errmsg(ctx));
    if (s)
        goto out;
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "%s: verifies after folding: %s", what, carve_errmsg(ctx));
    OT_CHECK(st->bytes_before + st->bytes_added - st->bytes_removed == st->bytes_after,
             "%s: constant bytes add up: %llu + %llu - %llu != %llu", what, (unsigned long long)st->bytes_before,
             (unsigned long long)st->bytes_added, (unsigned long long)st->bytes_removed,
             (unsigned long long)st->bytes_after);
    OT_CHECK(st->nodes_after == ft_count(m, NULL), "%s: nodes_after %u is the live node count %u", what,
             st->nodes_after, ft_count(m, NULL));
    s = ot_run(m, inputs, after);
    OT_CHECK(s == CARVE_OK, "%s: run after folding: %s", what, carve_errmsg(ctx));
    if (!s)
        ot_check_outputs(after, before, n_out, atol, rtol, what, "changed by folding");
    carve_model *re = ot_clone(m);
    OT_CHECK(re != NULL, "%s: folded model exports and re-imports: %s", what, carve_errmsg(ctx));
    if (re) {
        s = ot_run(re, inputs, again);
        OT_CHECK(s == CARVE_OK, "%s: run after re-import: %s", what, carve_errmsg(ctx));
        if (!s)
            ot_check_outputs(again, before, n_out, atol, rtol, what, "after re-import");
        carve_model_free(re);
    }
out:
    for (uint32_t i = 0; i < n_out; i++) {
        cv_val_unref(before[i]);
        cv_val_unref(after[i]);
        cv_val_unref(again[i]);
    }
    free(before);
    free(after);
    free(again);
    return s;
}

#endif

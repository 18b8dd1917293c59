/* test_delegate_names.c: the names of a Delegate body's boundary values.
 * They are "<delegate>/<outer name>"; when a value visible from the body
 * already has that name, "#2" is added; names longer than any fixed buffer
 * are kept whole. The lowered model verifies and survives a round trip. */
#define _POSIX_C_SOURCE 200809L
#include "lowertest.h"

static carve_ctx *ctx;

static carve_node_id find_delegate(const carve_model *m)
{
    for (uint32_t i = 0; i < m->graphs[0].nodes.n; i++)
        if (!strcmp(m->nodes[m->graphs[0].nodes.v[i]].op, "Delegate"))
            return m->graphs[0].nodes.v[i];
    return CARVE_NONE;
}

static void boundary_names(void)
{
    char long_in[401], want[420];
    memset(long_in, 'L', 400);
    long_in[400] = 0;
    carve_model *m = lt_model(ctx, 17);
    carve_value_id in[2];
    in[0] = carve_graph_add_input(m, 0, long_in, CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    in[1] = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    /* a value of the outer graph already named as x's body copy would be */
    carve_value_id taken = lt_op(m, "Relu", "r0", 1, &in[1], "Delegate_0/x");
    carve_value_id a[2] = {in[0], taken};
    carve_value_id s = lt_op(m, "Add", "add", 2, a, "s");
    carve_value_id b[2] = {s, in[1]};
    carve_graph_add_output(m, 0, lt_op(m, "Mul", "mul", 2, b, "y"));
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    OT_CHECK(carve_lower(m, t, NULL, NULL) == CARVE_OK, "lowers: %s", carve_errmsg(ctx));
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "the lowered model verifies: %s", carve_errmsg(ctx));
    carve_node_id d = find_delegate(m);
    OT_CHECK(d != CARVE_NONE && !strcmp(m->nodes[d].name, "Delegate_0"), "one Delegate_0");
    if (d != CARVE_NONE) {
        const cv_attr *body = NULL;
        for (uint32_t j = 0; j < m->nodes[d].n_attr; j++)
            if (!strcmp(m->nodes[d].attr[j].name, "body"))
                body = &m->nodes[d].attr[j];
        OT_CHECK(body != NULL, "the Delegate has a body");
        const cv_graph *g = body ? &m->graphs[body->u.g] : NULL;
        bool got_long = false, got_x2 = false, got_y = false;
        snprintf(want, sizeof want, "Delegate_0/%s", long_in);
        for (uint32_t i = 0; g && i < g->inputs.n; i++) {
            const char *nm = m->values[g->inputs.v[i]].name;
            got_long |= !strcmp(nm, want);
            got_x2 |= !strcmp(nm, "Delegate_0/x#2");
        }
        for (uint32_t i = 0; g && i < g->outputs.n; i++)
            got_y |= !strcmp(m->values[g->outputs.v[i]].name, "Delegate_0/y");
        OT_CHECK(got_long, "the 400-byte input's body copy is named whole");
        OT_CHECK(got_x2, "x's body copy is Delegate_0/x#2: Delegate_0/x is taken");
        OT_CHECK(got_y, "the output's body copy is Delegate_0/y");
    }
    carve_model *again = ot_clone(m);
    OT_CHECK(again != NULL, "the lowered model round-trips: %s", carve_errmsg(ctx));
    carve_model_free(again);
    carve_target_free(t);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    boundary_names();
    carve_ctx_free(ctx);
    return ot_finish();
}

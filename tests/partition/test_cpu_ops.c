/* test_cpu_ops.c: carve_lower_opts.cpu_ops (`--cpu-ops`), marked by
 * src/partition/stage_skip.c with one look-up per node:
 *  - every node of a listed op stays on CPU, reason skipped_by_user, with
 *    the message naming its op; nodes of other ops are delegated;
 *  - an op listed twice is one entry (the same placements and messages);
 *  - an op carve knows that no node has is no error; one it does not know
 *    is accepted when a node of the model has it (a custom op: marked),
 *    refused (CARVE_ERR_ARG, naming the first such) when nothing has it;
 *  - op names match whole: "Tan" does not keep Tanh. */
#include "lowertest.h"

/* in -> Relu r0 -> Tanh t0 -> Sigmoid s0 -> Relu r1 -> Tanh t1 -> out */
static carve_model *chain(carve_ctx *ctx)
{
    carve_model *m = lt_model(ctx, 17);
    carve_value_id v = lt_input(m, "in", 2, (const int64_t[]){2, 8});
    const char *ops[] = {"Relu", "Tanh", "Sigmoid", "Relu", "Tanh"};
    const char *names[] = {"r0", "t0", "s0", "r1", "t1"};
    for (int i = 0; i < 5; i++)
        v = lt_op(m, ops[i], names[i], 1, &v, names[i]);
    carve_graph_add_output(m, 0, v);
    return m;
}

/* Lowers the chain for htp with these cpu_ops; the status, and the parsed
 * report when it lowered (the caller cJSON_Deletes it). */
static carve_status lower(carve_ctx *ctx, const char **ops, size_t n, cJSON **report)
{
    carve_model *m = chain(ctx);
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    carve_lower_opts o = {.cpu_ops = ops, .n_cpu_ops = n};
    carve_report *rep = NULL;
    carve_status s = carve_lower(m, t, &o, &rep);
    *report = s == CARVE_OK ? cJSON_Parse(carve_report_json(rep)) : NULL;
    carve_report_free(rep);
    carve_target_free(t);
    carve_model_free(m);
    return s;
}

/* t0, s0, t1 on CPU by the user's list; r0, r1 delegated */
static void check_kept(const cJSON *r, const char *how)
{
    char buf[16];
    const char *kept[] = {"t0", "s0", "t1"}, *kept_op[] = {"Tanh", "Sigmoid", "Tanh"};
    for (int i = 0; i < 3; i++) {
        OT_CHECK(!strcmp(lt_place(r, kept[i], buf), "cpu"), "%s: %s on CPU, got %s", how, kept[i],
                 lt_place(r, kept[i], buf));
        OT_CHECK(!strcmp(lt_reason(r, kept[i]), "skipped_by_user"), "%s: %s's reason skipped_by_user, got '%s'", how,
                 kept[i], lt_reason(r, kept[i]));
        char want[64];
        snprintf(want, sizeof want, "op %s is in the list of ops kept on CPU", kept_op[i]);
        OT_CHECK(!strcmp(lt_message(r, kept[i]), want), "%s: %s's message '%s', expected '%s'", how, kept[i],
                 lt_message(r, kept[i]), want);
    }
    for (int i = 0; i < 2; i++) {
        const char *n = i ? "r1" : "r0";
        const char *p = lt_place(r, n, buf);
        OT_CHECK(strcmp(p, "cpu") && strcmp(p, "absent"), "%s: %s delegated, got %s", how, n, p);
    }
}

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    cJSON *r = NULL;

    const char *two[] = {"Tanh", "Sigmoid"};
    OT_CHECK(lower(ctx, two, 2, &r) == CARVE_OK, "Tanh,Sigmoid lowers: %s", carve_errmsg(ctx));
    if (r)
        check_kept(r, "Tanh,Sigmoid");
    cJSON_Delete(r);

    const char *twice[] = {"Tanh", "Sigmoid", "Tanh", "Erf"};
    OT_CHECK(lower(ctx, twice, 4, &r) == CARVE_OK, "Tanh,Sigmoid,Tanh,Erf lowers (Erf is known, no node has it): %s",
             carve_errmsg(ctx));
    if (r)
        check_kept(r, "Tanh listed twice");
    cJSON_Delete(r);

    const char *part[] = {"Tan"}; /* an ONNX op of its own */
    OT_CHECK(lower(ctx, part, 1, &r) == CARVE_OK, "Tan lowers: %s", carve_errmsg(ctx));
    char buf[16];
    OT_CHECK(r && strcmp(lt_place(r, "t0", buf), "cpu") && strcmp(lt_reason(r, "t0"), "skipped_by_user"),
             "'Tan' does not keep Tanh on CPU: t0 is %s", r ? lt_place(r, "t0", buf) : "no report");
    cJSON_Delete(r);

    const char *typo[] = {"Tanh", "Rellu", "Sigmod"};
    OT_CHECK(lower(ctx, typo, 3, &r) == CARVE_ERR_ARG && strstr(carve_errmsg(ctx), "cpu_ops: 'Rellu' is not an op "
                                                                                   "carve knows, and no node of the "
                                                                                   "model is one"),
             "the first unknown name is the one refused: %s", carve_errmsg(ctx));
    cJSON_Delete(r);

    /* a custom op carve does not know, named by the model's own node */
    carve_model *m = chain(ctx);
    carve_value_id in = carve_graph_input(m, 0, 0);
    const char *outs[] = {"c0"};
    carve_node_id c = carve_graph_add_node(m, 0, "MyOp", "com.example", "c0", 1, &in, 1, outs);
    carve_graph_add_output(m, 0, carve_node_output(m, c, 0));
    carve_model_set_opset(m, "com.example", 1);
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    const char *custom[] = {"MyOp"};
    carve_lower_opts o = {.cpu_ops = custom, .n_cpu_ops = 1};
    carve_report *rep = NULL;
    /* the name is accepted and the node marked; the CPU has no kernel for
     * it, so the lowering then fails on that, not on the list */
    OT_CHECK(carve_lower(m, t, &o, &rep) == CARVE_ERR_UNSUPPORTED &&
                 strstr(carve_errmsg(ctx), "node 'c0' (com.example.MyOp) cannot be lowered") &&
                 strstr(carve_errmsg(ctx), "skipped_by_user: op MyOp is in the list of ops kept on CPU"),
             "a custom op a node has is accepted and its node marked: %s", carve_errmsg(ctx));
    carve_report_free(rep);
    carve_target_free(t);
    carve_model_free(m);

    carve_ctx_free(ctx);
    return ot_finish();
}

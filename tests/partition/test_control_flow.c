/* test_control_flow.c: partitioning and the kept-whole rules inside If and
 * Loop bodies. A body's ops form their own Delegate nodes inside the body; a
 * kept-whole op in a body that ends on CPU is decomposed there; values
 * captured from outer scopes are runtime values unless they are constants;
 * the If/Loop node itself stays on CPU (reason control_flow). */
#include "lowertest.h"

static carve_ctx *ctx;
static char pb[16];
static const carve_lower_opts no_fold = {.no_fold = true};

static carve_value_id op_in(carve_model *m, carve_graph_id g, const char *op, const char *name, size_t n,
                            const carve_value_id *in, const char *out)
{
    const char *outs[1] = {out};
    carve_node_id id = carve_graph_add_node(m, g, op, "", name, n, in, 1, outs);
    return carve_node_output(m, id, 0);
}

/* The report's partition p: the name of the graph it was cut from. */
static const char *part_graph(const cJSON *r, const char *node)
{
    const cJSON *e = lt_node(r, node);
    const cJSON *p = e ? cJSON_GetObjectItem(e, "placement") : NULL;
    if (!cJSON_IsNumber(p))
        return "";
    const cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "partitions"), p->valueint);
    const cJSON *g = part ? cJSON_GetObjectItem(part, "graph") : NULL;
    return cJSON_IsString(g) ? g->valuestring : "";
}

/* y = If(sum(x) > 0) then Sinh(x) + Cosh(Gemm(A, B, C)) else Softmax(x);
 * z = Loop 3 times: v = Tanh(v + w), from v = x. */
static carve_model *model(void)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {4, 4};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id A = lt_weight(m, "A", 2, xd, 1), B = lt_weight(m, "B", 2, xd, 2), C = lt_weight(m, "C", 2, xd, 3);
    carve_value_id w = lt_weight(m, "w", 2, xd, 4);
    carve_value_id red = lt_op(m, "ReduceSum", "rsum", 1, &x, "rs");
    carve_node_set_attr_int(m, carve_model_find_node(m, "rsum"), "keepdims", 0);
    carve_value_id zero = carve_graph_add_initializer(m, 0, "zero", CARVE_FLOAT, 0, NULL, &(float){0}, 4);
    carve_value_id gin[2] = {red, zero};
    carve_value_id cond = lt_op(m, "Greater", "gt", 2, gin, "cond");
    const char *o1[1] = {"y"};
    carve_node_id iff = carve_graph_add_node(m, 0, "If", "", "if", 1, &cond, 1, o1);
    carve_graph_id th = carve_graph_new_subgraph(m, 0, "then");
    carve_value_id abc[3] = {A, B, C};
    carve_value_id g = op_in(m, th, "Gemm", "then_gemm", 3, abc, "tg"); /* constants only */
    carve_value_id gc = op_in(m, th, "Cosh", "then_cosh", 1, &g, "tgc"); /* htp has no Cosh */
    carve_value_id sx = op_in(m, th, "Sinh", "then_sinh", 1, &x, "tsx"); /* CPU, reads the captured runtime x */
    carve_value_id ad[2] = {sx, gc};
    carve_graph_add_output(m, th, op_in(m, th, "Add", "then_add", 2, ad, "ty"));
    carve_graph_id el = carve_graph_new_subgraph(m, 0, "else");
    carve_graph_add_output(m, el, op_in(m, el, "Softmax", "else_softmax", 1, &x, "ey"));
    carve_node_set_attr_graph(m, iff, "then_branch", th);
    carve_node_set_attr_graph(m, iff, "else_branch", el);
    carve_graph_add_output(m, 0, carve_node_output(m, iff, 0));
    /* Loop */
    int64_t three = 3;
    bool t = true;
    carve_value_id M = carve_graph_add_initializer(m, 0, "M", CARVE_INT64, 0, NULL, &three, 8);
    carve_value_id T = carve_graph_add_initializer(m, 0, "T", CARVE_BOOL, 0, NULL, &t, 1);
    carve_value_id lin[3] = {M, T, x};
    const char *o2[1] = {"z"};
    carve_node_id loop = carve_graph_add_node(m, 0, "Loop", "", "loop", 3, lin, 1, o2);
    carve_graph_id body = carve_graph_new_subgraph(m, 0, "body");
    carve_graph_add_input(m, body, "i", CARVE_INT64, 0, NULL);
    carve_value_id bc = carve_graph_add_input(m, body, "c", CARVE_BOOL, 0, NULL);
    carve_dim vd[2] = {{4, NULL}, {4, NULL}};
    carve_value_id v = carve_graph_add_input(m, body, "v", CARVE_FLOAT, 2, vd);
    carve_value_id vw[2] = {v, w};
    carve_value_id s = op_in(m, body, "Add", "body_add", 2, vw, "bs");
    carve_value_id co = op_in(m, body, "Identity", "body_cond", 1, &bc, "bc_out");
    carve_graph_add_output(m, body, co);
    carve_graph_add_output(m, body, op_in(m, body, "Tanh", "body_tanh", 1, &s, "bv"));
    carve_node_set_attr_graph(m, loop, "body", body);
    carve_graph_add_output(m, 0, carve_node_output(m, loop, 0));
    return m;
}

static void bodies_on(const char *target)
{
    carve_model *m = model();
    int64_t xd[2] = {4, 4};
    for (int k = 0; k < 2; k++) { /* both branches of the If */
        cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 21 + (uint32_t)k, k ? 0.1 : -1, k ? 1 : -0.1)};
        cJSON *r = NULL;
        OT_CHECK(lt_lower_run(m, target, &no_fold, in, 1e-5, 1e-4, &r) == LT_EQUAL,
                 "%s, %s branch: lowered equals original", target, k ? "then" : "else");
        cv_val_unref(in[0]);
        if (!r)
            continue;
        if (k == 0) {
            OT_CHECK(!strcmp(lt_place(r, "if", pb), "cpu") && !strcmp(lt_reason(r, "if"), "control_flow"),
                     "%s: the If stays on CPU (control_flow), got %s %s", target, lt_place(r, "if", pb),
                     lt_reason(r, "if"));
            OT_CHECK(!strcmp(lt_reason(r, "loop"), "control_flow"), "%s: the Loop stays on CPU", target);
            OT_CHECK(!strcmp(part_graph(r, "then_add"), "then"),
                     "%s: the Add after Sinh(captured x) is delegated inside the then body (graph '%s')", target,
                     part_graph(r, "then_add"));
            OT_CHECK(!strcmp(part_graph(r, "body_tanh"), "body") && !strcmp(part_graph(r, "body_add"), "body"),
                     "%s: the Loop body's ops form a Delegate inside the body", target);
            OT_CHECK(!strcmp(lt_place(r, "then_cosh", pb), "cpu"), "%s: Cosh on CPU", target);
            if (!strcmp(target, "htp")) {
                /* its C is [M, N], which htp's Gemm does not take; its pieces read constants only */
                const cJSON *pieces = cJSON_GetObjectItem(lt_node(r, "then_gemm"), "decomposed");
                const cJSON *p0 = cJSON_GetArrayItem(pieces, 0), *why = p0 ? cJSON_GetObjectItem(p0, "reason") : NULL;
                const char *code = why ? cJSON_GetObjectItem(why, "code")->valuestring : "";
                OT_CHECK(!strcmp(lt_place(r, "then_gemm", pb), "decomposed") && !strcmp(code, "no_runtime_input"),
                         "htp: the Gemm on captured constants only is decomposed in the body (%s, pieces %s)",
                         lt_place(r, "then_gemm", pb), code);
                OT_CHECK(!strcmp(part_graph(r, "else_softmax"), "else"),
                         "htp: Softmax (kept whole) on the captured x is delegated whole in the else body");
            } else {
                OT_CHECK(!strcmp(part_graph(r, "then_gemm"), "then"),
                         "%s: the Gemm on constants is delegated (no refusal on this target)", target);
            }
        }
        cJSON_Delete(r);
    }
    carve_model_free(m);
}

/* A profile that takes control flow whole: the If goes to the target with
 * its bodies only when it can take every node in them; else it stays on CPU
 * (control_flow, naming the body node) and its bodies are lowered on their
 * own. With int64 only through int32 (int64_as_int32), a control-flow node
 * with an int64 value, the Loop's trip count M, stays on CPU: legalization
 * does not reach nested bodies. */
static void control_flow_whole(bool with_cosh, bool int64_as_int32)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"schema_version\": 1, \"name\": \"cfw\", \"dtypes\": [\"float32\", \"bool\"%s],%s"
             " \"control_flow_whole\": true, \"data_dependent_shapes\": true, \"ops\": {\"If\": {}, \"Loop\": {}, \"ReduceSum\": {}, \"Greater\": {},"
             " \"Gemm\": {}, \"Add\": {}, \"Sinh\": {}, \"Softmax\": {}, \"Tanh\": {}, \"Identity\": {}%s}}",
             int64_as_int32 ? ", \"int32\"" : ", \"int64\"",
             int64_as_int32 ? " \"int64\": \"as_int32\", \"legalize\": {\"int64_to_int32\": true}," : "",
             with_cosh ? ", \"Cosh\": {}" : "");
    carve_target *t = NULL;
    OT_CHECK(cv_target_parse(ctx, json, strlen(json), "cfw.json", &t) == CARVE_OK, "profile parses: %s",
             carve_errmsg(ctx));
    if (!t)
        return;
    carve_model *m = model();
    int64_t xd[2] = {4, 4};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 23, 0.1, 1)};
    cJSON *r = NULL;
    lt_target_override = t;
    OT_CHECK(lt_lower_run(m, "cfw", &no_fold, in, 1e-5, 1e-4, &r) == LT_EQUAL,
             "control flow whole (cosh %d, int64 as int32 %d): equal", with_cosh, int64_as_int32);
    lt_target_override = NULL;
    if (r) {
        if (with_cosh) {
            OT_CHECK(strcmp(lt_place(r, "if", pb), "cpu") && !strcmp(lt_place(r, "then_cosh", pb), lt_place(r, "if", pb)) &&
                         !strcmp(lt_place(r, "else_softmax", pb), lt_place(r, "if", pb)),
                     "the If goes to the target whole, its bodies with it (if %s, then_cosh %s)", lt_place(r, "if", pb),
                     lt_place(r, "then_cosh", pb));
        } else {
            const cJSON *e = lt_node(r, "if");
            const char *msg = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "reason"), "message")->valuestring;
            OT_CHECK(!strcmp(lt_reason(r, "if"), "control_flow") && strstr(msg, "'then_cosh' (Cosh)"),
                     "the If stays on CPU, naming the body node the target cannot take: %s", msg);
            OT_CHECK(!strcmp(part_graph(r, "else_softmax"), "else"), "its bodies are lowered on their own");
        }
        if (int64_as_int32) {
            const cJSON *e = lt_node(r, "loop");
            const cJSON *why = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "reason"), "message");
            const char *msg = cJSON_IsString(why) ? why->valuestring : "";
            OT_CHECK(!strcmp(lt_reason(r, "loop"), "control_flow") && strstr(msg, "int64 value 'M'") &&
                         strstr(msg, "not this node"),
                     "int64 as int32: the Loop (int64 trip count) stays on CPU, naming M: %s", msg);
            OT_CHECK(!strcmp(part_graph(r, "body_tanh"), "body"), "int64 as int32: the Loop body is lowered on its own");
        } else {
            OT_CHECK(strcmp(lt_place(r, "loop", pb), "cpu") && !strcmp(lt_place(r, "body_tanh", pb), lt_place(r, "loop", pb)),
                     "native int64: the Loop goes to the target whole (loop %s, body_tanh %s)", lt_place(r, "loop", pb),
                     lt_place(r, "body_tanh", pb));
        }
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
    carve_target_free(t);
}

int main(void)
{
    ctx = carve_ctx_new();
    bodies_on("htp");
    bodies_on("gpu");
    control_flow_whole(true, false);
    control_flow_whole(false, false);
    control_flow_whole(true, true);
    carve_ctx_free(ctx);
    return ot_finish();
}

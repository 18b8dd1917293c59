/* lowertest.h: small helpers for lowering tests: building models, lowering
 * them, reading placements from the report, running both models. */
#ifndef CARVE_LOWERTEST_H
#define CARVE_LOWERTEST_H

#include "opstest.h"
#include "partition/partition.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* A float32 input of the given shape. */
static inline carve_value_id lt_input(carve_model *m, const char *name, int rank, const int64_t *dims)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = (carve_dim){dims[i], NULL};
    return carve_graph_add_input(m, 0, name, CARVE_FLOAT, rank, d);
}

/* A float32 initializer of seeded values in [-1, 1). */
static inline carve_value_id lt_weight(carve_model *m, const char *name, int rank, const int64_t *dims, uint32_t seed)
{
    cv_val *v = ot_random(CARVE_FLOAT, rank, dims, seed, -1, 1);
    carve_value_id id = carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, rank, dims, v->data, v->nbytes);
    cv_val_unref(v);
    return id;
}

/* One-output node; returns its output value. */
static inline carve_value_id lt_op(carve_model *m, const char *op, const char *name, size_t n_in,
                                   const carve_value_id *in, const char *out)
{
    const char *outs[1] = {out};
    carve_node_id n = carve_graph_add_node(m, 0, op, "", name, n_in, in, 1, outs);
    return n == CARVE_NONE ? CARVE_NONE : carve_node_output(m, n, 0);
}

static inline carve_model *lt_model(carve_ctx *ctx, int64_t opset)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", opset);
    return m;
}

/* The report's entry for a node of the input model (NULL if absent). */
static inline const cJSON *lt_node(const cJSON *report, const char *name)
{
    const cJSON *nodes = cJSON_GetObjectItem(report, "nodes"), *e;
    cJSON_ArrayForEach(e, nodes)
    {
        if (!strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name))
            return e;
    }
    return NULL;
}

/* "cpu", "decomposed", or the partition index as text. */
static inline const char *lt_place(const cJSON *report, const char *name, char *buf)
{
    const cJSON *e = lt_node(report, name);
    if (!e)
        return "absent";
    const cJSON *p = cJSON_GetObjectItem(e, "placement");
    if (cJSON_IsString(p))
        return p->valuestring;
    snprintf(buf, 16, "%d", p->valueint);
    return buf;
}

static inline const char *lt_reason(const cJSON *report, const char *name)
{
    const cJSON *e = lt_node(report, name);
    const cJSON *r = e ? cJSON_GetObjectItem(e, "reason") : NULL;
    return r ? cJSON_GetObjectItem(r, "code")->valuestring : "";
}

/* The node's reason message ("" when it has none). */
static inline const char *lt_message(const cJSON *report, const char *name)
{
    const cJSON *e = lt_node(report, name);
    const cJSON *why = e ? cJSON_GetObjectItem(e, "reason") : NULL;
    const cJSON *msg = why ? cJSON_GetObjectItem(why, "message") : NULL;
    return cJSON_IsString(msg) ? msg->valuestring : "";
}

typedef enum { LT_EQUAL, LT_DIFFER, LT_RUN_FAILED, LT_LOWER_FAILED } lt_result;

/* When set, lt_lower_run hands the lowered model over here (the caller
 * frees it) instead of freeing it. */
static carve_model **lt_keep_lowered;
/* When set, lt_lower_run lowers for this profile (a user's, parsed by the
 * test) instead of the built-in one named by `target`. */
static carve_target *lt_target_override;

/* Lowers a copy (through ONNX bytes, as a user's file would arrive), checks
 * the lowered model verifies, re-imports and has only core ops on CPU, runs
 * both and compares within atol/rtol. *report gets the parsed report
 * (cJSON_Delete it) when lowering worked. */
static inline lt_result lt_lower_run(carve_model *orig, const char *target, const carve_lower_opts *opts,
                                     cv_val **inputs, double atol, double rtol, cJSON **report)
{
    lt_result res = LT_EQUAL;
    carve_ctx *ctx = carve_model_ctx(orig);
    if (getenv("LT_SAVE")) {
        static int k;
        char path[64];
        snprintf(path, sizeof path, "/tmp/lt_%d.onnx", k++);
        carve_model_save_file(orig, path, NULL);
    }
    carve_model *low = ot_clone(orig);
    OT_CHECK(low != NULL, "save and reload: %s", carve_errmsg(ctx));
    if (!low)
        return LT_LOWER_FAILED;
    carve_status s;
    carve_target *t = NULL;
    if (lt_target_override)
        t = lt_target_override;
    else
        carve_target_builtin(ctx, target, &t);
    carve_report *rep = NULL;
    s = carve_lower(low, t, opts, &rep);
    if (s)
        res = LT_LOWER_FAILED;
    if (!s) {
        if (report)
            *report = cJSON_Parse(carve_report_json(rep));
        if (getenv("LT_DUMP"))
            fprintf(stderr, "%s\n", carve_report_json(rep));
        OT_CHECK(carve_model_verify(low) == CARVE_OK, "lowered model verifies: %s", carve_errmsg(ctx));
        /* the lowered model survives a round trip through ONNX */
        carve_model *again = ot_clone(low);
        OT_CHECK(again != NULL, "lowered model re-imports: %s", carve_errmsg(ctx));
        carve_model_free(again);
        /* no op on CPU that the core CPU profile lacks */
        for (uint32_t g = 0; g < low->n_graphs; g++) {
            const cv_graph *gr = &low->graphs[g];
            bool in_body = false;
            for (carve_graph_id p = g; p != CARVE_NONE && !in_body; p = low->graphs[p].parent)
                in_body = low->graphs[p].owner != CARVE_NONE && !strcmp(low->nodes[low->graphs[p].owner].op, "Delegate");
            for (uint32_t i = 0; i < gr->nodes.n && !in_body; i++) {
                const cv_node *nd = &low->nodes[gr->nodes.v[i]];
                const cv_op_def *d = cv_op_for_node(low, gr->nodes.v[i]);
                OT_CHECK(d && (d->flags & CV_OP_CORE), "%s: node '%s' (%s) on CPU is not a core op", target, nd->name,
                         nd->op);
            }
        }
        uint32_t n_out = (uint32_t)carve_graph_output_count(orig, 0);
        cv_val *a[8] = {0}, *b[8] = {0};
        carve_status s1 = carve_model_run(orig, inputs, a);
        OT_CHECK(s1 == CARVE_OK, "%s: the original runs: %s", target, carve_errmsg(ctx));
        carve_status s2 = carve_model_run_target(low, t, inputs, b);
        if (s1 || s2)
            res = LT_RUN_FAILED;
        for (uint32_t i = 0; i < n_out && !s1 && !s2; i++) {
            char why[256] = "";
            if (!ot_close(b[i], a[i], atol, rtol, why, sizeof why)) {
                res = LT_DIFFER;
                if (getenv("LT_DUMP"))
                    fprintf(stderr, "%s: output %u differs: %s\n", target, i, why);
            }
        }
        for (uint32_t i = 0; i < 8; i++) {
            cv_val_unref(a[i]);
            cv_val_unref(b[i]);
        }
    }
    carve_report_free(rep);
    if (t != lt_target_override)
        carve_target_free(t);
    if (lt_keep_lowered && !s)
        *lt_keep_lowered = low;
    else
        carve_model_free(low);
    return res;
}

#endif

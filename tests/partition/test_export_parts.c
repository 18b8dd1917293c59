/* test_export_parts.c: carve_export_partitions writes each Delegate body as
 * a standalone model that runs on its own and gives what the Delegate gives,
 * speaks the outer value names, holds the weights it reads, and carries the
 * Delegate's target and encodings as metadata. */
#define _DEFAULT_SOURCE
#include "lowertest.h"

#include <stdlib.h>
#include <unistd.h>

static carve_ctx *ctx;

static const char *meta(const carve_model *m, const char *key)
{
    for (size_t i = 0; i < carve_model_metadata_count(m); i++) {
        const char *k, *v;
        carve_model_metadata_at(m, i, &k, &v);
        if (!strcmp(k, key))
            return v;
    }
    return NULL;
}

/* x -> Q -> DQ -> MatMul(DQ(w)) -> Q -> DQ -> Cosh (CPU) -> Relu: two Delegates
 * on htp (QDQ MatMul unit, Relu) around the CPU Cosh. */
static void export_qdq(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {2, 8}, wd[2] = {8, 4};
    carve_value_id x = lt_input(m, "x", 2, xd);
    float sc = 0.02f;
    uint8_t z = 128;
    int8_t w[32];
    for (int i = 0; i < 32; i++)
        w[i] = (int8_t)(i * 9 - 140);
    carve_value_id s = carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &sc, 4);
    carve_value_id zp = carve_graph_add_initializer(m, 0, "z", CARVE_UINT8, 0, NULL, &z, 1);
    carve_value_id wq = carve_graph_add_initializer(m, 0, "w_q", CARVE_INT8, 2, wd, w, sizeof w);
    carve_value_id in3[3] = {x, s, zp};
    carve_value_id xq = lt_op(m, "QuantizeLinear", "q_x", 3, in3, "x_q");
    in3[0] = xq;
    carve_value_id xdq = lt_op(m, "DequantizeLinear", "dq_x", 3, in3, "x_dq");
    carve_value_id wi[2] = {wq, s};
    carve_value_id wdq = lt_op(m, "DequantizeLinear", "dq_w", 2, wi, "w_dq");
    carve_value_id mi[2] = {xdq, wdq};
    carve_value_id y = lt_op(m, "MatMul", "matmul", 2, mi, "y");
    in3[0] = y;
    carve_value_id yq = lt_op(m, "QuantizeLinear", "q_y", 3, in3, "y_q");
    in3[0] = yq;
    carve_value_id ydq = lt_op(m, "DequantizeLinear", "dq_y", 3, in3, "y_dq");
    carve_value_id c = lt_op(m, "Cosh", "cosh", 1, &ydq, "c");
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "relu", 1, &c, "out"));
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    OT_CHECK(carve_lower(m, t, NULL, NULL) == CARVE_OK, "lowers: %s", carve_errmsg(ctx));
    char dir[] = "/tmp/carve_export_XXXXXX";
    OT_CHECK(mkdtemp(dir) != NULL, "temp dir");
    size_t n = 0;
    OT_CHECK(carve_export_partitions(m, dir, &n) == CARVE_OK, "exports: %s", carve_errmsg(ctx));
    OT_CHECK(n == 2, "two partitions exported, got %zu", n);
    char path[256];
    snprintf(path, sizeof path, "%s/Delegate_0.onnx", dir);
    carve_model *p = NULL;
    OT_CHECK(carve_model_load_file(ctx, path, NULL, &p) == CARVE_OK, "Delegate_0.onnx loads: %s", carve_errmsg(ctx));
    if (p) {
        OT_CHECK(carve_graph_input_count(p, 0) == 1 && !strcmp(carve_value_name(p, carve_graph_input(p, 0, 0)), "x"),
                 "the partition reads x by its model name");
        OT_CHECK(carve_graph_output_count(p, 0) == 1 &&
                     !strcmp(carve_value_name(p, carve_graph_output(p, 0, 0)), "y_q"),
                 "and writes y_q by its model name (dq_y is in the CPU Cosh's unit: the uint8 tensor crosses)");
        OT_CHECK(carve_model_find_node(p, "matmul") != CARVE_NONE && carve_model_find_node(p, "dq_w") != CARVE_NONE,
                 "the unit's nodes keep their names");
        bool has_w = false;
        for (size_t i = 0; i < carve_graph_initializer_count(p, 0); i++)
            has_w = has_w || !strcmp(carve_value_name(p, carve_graph_initializer(p, 0, i)), "w_q");
        OT_CHECK(has_w, "the int8 weight is an initializer of the partition");
        OT_CHECK(meta(p, "carve.target") && !strcmp(meta(p, "carve.target"), "htp"), "metadata carve.target = htp");
        cJSON *e = meta(p, "carve.encodings") ? cJSON_Parse(meta(p, "carve.encodings")) : NULL;
        OT_CHECK(e && cJSON_GetObjectItem(e, "w_q") && cJSON_GetObjectItem(e, "x_q"),
                 "metadata carve.encodings describes w_q and x_q");
        cJSON_Delete(e);
        /* the standalone partition computes what the original's y_q is */
        cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 31, -1, 1)};
        cv_val *got[1] = {0};
        OT_CHECK(carve_model_run(p, in, got) == CARVE_OK, "the partition runs: %s", carve_errmsg(ctx));
        carve_model *ref = lt_model(ctx, 13); /* x -> QDQ -> MatMul -> Q, built again unlowered */
        carve_value_id rx = lt_input(ref, "x", 2, xd);
        carve_value_id rs = carve_graph_add_initializer(ref, 0, "s", CARVE_FLOAT, 0, NULL, &sc, 4);
        carve_value_id rz = carve_graph_add_initializer(ref, 0, "z", CARVE_UINT8, 0, NULL, &z, 1);
        carve_value_id rw = carve_graph_add_initializer(ref, 0, "w_q", CARVE_INT8, 2, wd, w, sizeof w);
        carve_value_id a[3] = {rx, rs, rz};
        a[0] = lt_op(ref, "QuantizeLinear", "q_x", 3, a, "x_q");
        a[0] = lt_op(ref, "DequantizeLinear", "dq_x", 3, a, "x_dq");
        carve_value_id b[2] = {rw, rs};
        carve_value_id mm[2] = {a[0], lt_op(ref, "DequantizeLinear", "dq_w", 2, b, "w_dq")};
        a[0] = lt_op(ref, "MatMul", "matmul", 2, mm, "y");
        carve_graph_add_output(ref, 0, lt_op(ref, "QuantizeLinear", "q_y", 3, a, "y_q"));
        cv_val *want[1] = {0};
        OT_CHECK(carve_model_run(ref, in, want) == CARVE_OK, "the reference runs");
        char why[256] = "";
        OT_CHECK(got[0] && want[0] && ot_close(got[0], want[0], 0, 0, why, sizeof why),
                 "the exported partition gives the unlowered values exactly: %s", why);
        cv_val_unref(in[0]);
        cv_val_unref(got[0]);
        cv_val_unref(want[0]);
        carve_model_free(ref);
        carve_model_free(p);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/Delegate_1.onnx", dir);
    OT_CHECK(access(path, F_OK) == 0, "Delegate_1.onnx (the Relu) is written");
    unlink(path);
    rmdir(dir);
    /* a folder that does not exist: an error naming the file */
    OT_CHECK(carve_export_partitions(m, "/nonexistent/carve", &n) != CARVE_OK &&
                 strstr(carve_errmsg(ctx), "/nonexistent/carve/Delegate_0.onnx"),
             "a missing folder is an error naming the path: %s", carve_errmsg(ctx));
    carve_target_free(t);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    export_qdq();
    carve_ctx_free(ctx);
    return ot_finish();
}

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

static cJSON *read_json(const char *dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    return n ? cJSON_Parse(buf) : NULL;
}

/* ONNX's release table: the IR version that came with each opset. */
static int min_ir_for(int opset)
{
    return opset <= 14 ? 7 : opset <= 18 ? 8 : opset <= 20 ? 9 : opset <= 22 ? 10 : 11;
}

static int qdq_nodes(const carve_model *p)
{
    int c = 0;
    for (size_t i = 0; i < carve_graph_node_count(p, 0); i++) {
        const char *op = carve_node_op(p, carve_graph_node(p, 0, i));
        c += !strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear");
    }
    return c;
}

/* DIR/manifest.json and DIR/Delegate_0.encodings, kept and stripped. */
static void manifest_and_encodings(carve_model *m, const char *dir)
{
    cJSON *man = read_json(dir, "manifest.json");
    const cJSON *parts = cJSON_GetObjectItem(man, "partitions"), *sched = cJSON_GetObjectItem(man, "schedule");
    OT_CHECK(cJSON_GetArraySize(parts) == 2, "the manifest lists both partitions");
    const cJSON *p0 = cJSON_GetArrayItem(parts, 0);
    OT_CHECK(p0 && !strcmp(cJSON_GetObjectItem(p0, "file")->valuestring, "Delegate_0.onnx") &&
                 !strcmp(cJSON_GetObjectItem(p0, "target")->valuestring, "htp") &&
                 !strcmp(cJSON_GetObjectItem(p0, "encodings")->valuestring, "Delegate_0.encodings") &&
                 cJSON_GetObjectItem(p0, "ir_version")->valueint == min_ir_for(cJSON_GetObjectItem(p0, "opset")->valueint),
             "Delegate_0: file, target, encodings file, the lowest IR its opset needs (opset %d, IR %d)",
             cJSON_GetObjectItem(p0, "opset")->valueint, cJSON_GetObjectItem(p0, "ir_version")->valueint);
    const cJSON *in0 = cJSON_GetArrayItem(cJSON_GetObjectItem(p0, "inputs"), 0);
    const cJSON *out0 = cJSON_GetArrayItem(cJSON_GetObjectItem(p0, "outputs"), 0);
    OT_CHECK(in0 && !strcmp(cJSON_GetObjectItem(in0, "value")->valuestring, "x") &&
                 !strcmp(cJSON_GetObjectItem(in0, "dtype")->valuestring, "float32") &&
                 cJSON_GetArraySize(cJSON_GetObjectItem(in0, "shape")) == 2,
             "its input maps to the model's x, float32[2,8]");
    OT_CHECK(out0 && !strcmp(cJSON_GetObjectItem(out0, "value")->valuestring, "y_q") &&
                 !strcmp(cJSON_GetObjectItem(out0, "model_dtype")->valuestring, "uint8"),
             "its output maps to the model's y_q, uint8");
    OT_CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(parts, 1), "encodings")), "the Relu has no encodings");
    const cJSON *s1 = cJSON_GetArrayItem(sched, 1);
    OT_CHECK(cJSON_GetArraySize(sched) == 3 && cJSON_GetObjectItem(cJSON_GetArrayItem(sched, 0), "partition") &&
                 cJSON_GetObjectItem(s1, "cpu") && cJSON_GetArraySize(cJSON_GetObjectItem(s1, "cpu")) == 2 &&
                 cJSON_GetObjectItem(cJSON_GetArrayItem(sched, 2), "partition"),
             "schedule: Delegate_0, the CPU nodes dq_y and cosh, Delegate_1");
    cJSON_Delete(man);
    cJSON *enc = read_json(dir, "Delegate_0.encodings");
    const cJSON *acts = cJSON_GetObjectItem(enc, "activation_encodings"), *params = cJSON_GetObjectItem(enc, "param_encodings");
    const cJSON *a0 = cJSON_GetArrayItem(acts, 0), *w0 = cJSON_GetArrayItem(params, 0);
    OT_CHECK(enc && !strcmp(cJSON_GetObjectItem(enc, "version")->valuestring, "1.0.0") && cJSON_GetArraySize(acts) == 2 &&
                 !strcmp(cJSON_GetObjectItem(a0, "name")->valuestring, "x") && w0 &&
                 !strcmp(cJSON_GetObjectItem(w0, "name")->valuestring, "w_dq"),
             "Delegate_0.encodings (1.0.0): activations x and y, the param w_dq");
    cJSON_Delete(enc);
    char path[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/Delegate_0.encodings", dir);
    unlink(path);
    /* stripped: the float MatMul, x's pair and the weight's DQ gone; y_q
     * (a quantized boundary) keeps its QuantizeLinear */
    carve_export_opts o = {true, CARVE_AIMET_0_6_1};
    size_t n = 0;
    OT_CHECK(carve_export_partitions_opts(m, dir, &o, &n) == CARVE_OK && n == 2, "exports stripped: %s",
             carve_errmsg(carve_model_ctx(m)));
    snprintf(path, sizeof path, "%s/Delegate_0.onnx", dir);
    carve_model *p = NULL;
    OT_CHECK(carve_model_load_file(carve_model_ctx(m), path, NULL, &p) == CARVE_OK, "the stripped partition loads");
    if (p) {
        OT_CHECK(qdq_nodes(p) == 1 && !strcmp(carve_node_op(p, carve_value_producer(p, carve_graph_output(p, 0, 0))),
                                              "QuantizeLinear"),
                 "one Q/DQ node left: the QuantizeLinear writing the uint8 output (%d)", qdq_nodes(p));
        carve_value_id w = carve_graph_find_value(p, 0, "w_dq");
        OT_CHECK(w != CARVE_NONE && carve_value_kind_of(p, w) == CARVE_VALUE_CONST && carve_value_dtype(p, w) == CARVE_FLOAT,
                 "w_dq is a float initializer");
        carve_node_id mm = carve_model_find_node(p, "matmul");
        OT_CHECK(mm != CARVE_NONE && !strcmp(carve_value_name(p, carve_node_input(p, mm, 0)), "x"),
                 "the MatMul reads x itself");
        carve_model_free(p);
    }
    man = read_json(dir, "manifest.json");
    p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(man, "partitions"), 0);
    OT_CHECK(p0 && !strcmp(cJSON_GetObjectItem(p0, "qdq")->valuestring, "stripped") &&
                 cJSON_GetObjectItem(p0, "qdq_nodes_left")->valueint == 1 &&
                 !strcmp(cJSON_GetObjectItem(man, "encodings_version")->valuestring, "0.6.1"),
             "manifest: stripped, 1 Q/DQ node left, encodings 0.6.1");
    cJSON_Delete(man);
    enc = read_json(dir, "Delegate_0.encodings");
    const cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(enc, "activation_encodings"), "x");
    OT_CHECK(cJSON_IsArray(x) && !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(x, 0), "is_symmetric")->valuestring, "True") &&
                 cJSON_GetObjectItem(cJSON_GetArrayItem(x, 0), "offset")->valueint == -128,
             "0.6.1: x is uint8 zero point 128, AIMET offset -128, symmetric");
    cJSON_Delete(enc);
    static const char *const files[] = {"Delegate_0.onnx", "Delegate_1.onnx", "Delegate_0.encodings", "manifest.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
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
    manifest_and_encodings(m, dir);
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

/* test_aimet.c: AIMET encodings. Golden encodings of a small hand-built QDQ
 * model, field by field in both versions (the signed-offset convention
 * included); the round trip strip -> encodings -> carve_apply_encodings on
 * random QDQ models of every granularity (per tensor, per channel, per
 * block, int4, 16-bit activations, int32 biases, one above 2^24) gives
 * outputs bit-identical to the original's; and every refusal names its
 * entry and leaves the model as it was. */
#include "lowertest.h"

#include <math.h>

static carve_ctx *ctx;


static carve_value_id init(carve_model *m, const char *name, carve_dtype t, int rank, const int64_t *dims,
                           const void *data)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return carve_graph_add_initializer(m, 0, name, t, rank, dims, data, (carve_dtype_bits(t) * n + 7) / 8);
}

static int count_qdq(const carve_model *m)
{
    int c = 0;
    for (size_t i = 0; i < carve_graph_node_count(m, 0); i++) {
        const char *op = carve_node_op(m, carve_graph_node(m, 0, i));
        c += !strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear");
    }
    return c;
}

static const cJSON *entry(const cJSON *list, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, list)
    {
        const cJSON *n = cJSON_GetObjectItem(e, "name");
        if (n && !strcmp(n->valuestring, name))
            return e;
    }
    return NULL;
}

static double num_at(const cJSON *o, const char *k, int i)
{
    const cJSON *a = cJSON_GetObjectItem(o, k);
    const cJSON *x = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, i) : a;
    return x ? x->valuedouble : NAN;
}

/* x -> Q(0.02, uint8 128) -> DQ -> MatMul(DQ(w int8 per channel axis 1)) -> y
 * -> Q(0.05, int8 -3) -> DQ -> out */
static carve_model *golden_model(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {2, 4}, wd[2] = {4, 3}, cd[1] = {3};
    carve_value_id x = lt_input(m, "x", 2, xd);
    float sx = 0.02f, sy = 0.05f, sw[3] = {0.01f, 0.02f, 0.03f};
    uint8_t zx = 128;
    int8_t zy = -3, zw[3] = {0, 0, 0}, w[12];
    for (int i = 0; i < 12; i++)
        w[i] = (int8_t)(i * 21 - 120);
    carve_value_id s1 = init(m, "sx", CARVE_FLOAT, 0, NULL, &sx), z1 = init(m, "zx", CARVE_UINT8, 0, NULL, &zx);
    carve_value_id s2 = init(m, "sy", CARVE_FLOAT, 0, NULL, &sy), z2 = init(m, "zy", CARVE_INT8, 0, NULL, &zy);
    carve_value_id sW = init(m, "sw", CARVE_FLOAT, 1, cd, sw), zW = init(m, "zw", CARVE_INT8, 1, cd, zw);
    carve_value_id wq = init(m, "w_q", CARVE_INT8, 2, wd, w);
    carve_value_id xq = lt_op(m, "QuantizeLinear", "q_x", 3, (carve_value_id[]){x, s1, z1}, "x_q");
    carve_value_id xdq = lt_op(m, "DequantizeLinear", "dq_x", 3, (carve_value_id[]){xq, s1, z1}, "x_dq");
    carve_value_id wdq = lt_op(m, "DequantizeLinear", "dq_w", 3, (carve_value_id[]){wq, sW, zW}, "w");
    carve_node_set_attr_int(m, carve_value_producer(m, wdq), "axis", 1);
    carve_value_id y = lt_op(m, "MatMul", "mm", 2, (carve_value_id[]){xdq, wdq}, "y");
    carve_value_id yq = lt_op(m, "QuantizeLinear", "q_y", 3, (carve_value_id[]){y, s2, z2}, "y_q");
    carve_graph_add_output(m, 0, lt_op(m, "DequantizeLinear", "dq_y", 3, (carve_value_id[]){yq, s2, z2}, "out"));
    return m;
}

static void golden(void)
{
    carve_model *m = golden_model();
    char *j1 = NULL, *j0 = NULL;
    OT_CHECK(carve_aimet_encodings(m, CARVE_AIMET_1_0_0, &j1) == CARVE_OK && j1, "1.0.0: %s", carve_errmsg(ctx));
    OT_CHECK(carve_aimet_encodings(m, CARVE_AIMET_0_6_1, &j0) == CARVE_OK && j0, "0.6.1: %s", carve_errmsg(ctx));
    cJSON *a = cJSON_Parse(j1 ? j1 : ""), *b = cJSON_Parse(j0 ? j0 : "");
    OT_CHECK(a && !strcmp(cJSON_GetObjectItem(a, "version")->valuestring, "1.0.0"), "version 1.0.0");
    const cJSON *acts = cJSON_GetObjectItem(a, "activation_encodings"), *params = cJSON_GetObjectItem(a, "param_encodings");
    OT_CHECK(cJSON_GetArraySize(acts) == 2 && cJSON_GetArraySize(params) == 1, "two activations, one param");
    const cJSON *ex = entry(acts, "x"), *ey = entry(acts, "y"), *ew = entry(params, "w");
    OT_CHECK(ex && ey && ew, "named x, y (the float tensors before Q) and w (the weight's DQ output)");
    if (ex && ey && ew) {
        OT_CHECK(!strcmp(cJSON_GetObjectItem(ex, "dtype")->valuestring, "INT") &&
                     !strcmp(cJSON_GetObjectItem(ex, "enc_type")->valuestring, "PER_TENSOR") &&
                     num_at(ex, "bw", 0) == 8 && cJSON_IsTrue(cJSON_GetObjectItem(ex, "is_sym")),
                 "x: INT, PER_TENSOR, 8 bits, symmetric (uint8 128 is AIMET's offset -128)");
        OT_CHECK(num_at(ex, "scale", 0) == (double)0.02f && num_at(ex, "offset", 0) == -128,
                 "x: uint8 zero point 128 -> offset -128, scale the float32 0.02 exactly");
        OT_CHECK(num_at(ey, "offset", 0) == -125 && cJSON_IsFalse(cJSON_GetObjectItem(ey, "is_sym")),
                 "y: int8 zero point -3 -> offset -(-3 + 128) = -125, asymmetric");
        OT_CHECK(!strcmp(cJSON_GetObjectItem(ew, "enc_type")->valuestring, "PER_CHANNEL") &&
                     cJSON_GetArraySize(cJSON_GetObjectItem(ew, "scale")) == 3 && num_at(ew, "scale", 2) == (double)0.03f &&
                     num_at(ew, "offset", 0) == -128 && num_at(ew, "offset", 2) == -128 &&
                     cJSON_IsTrue(cJSON_GetObjectItem(ew, "is_sym")),
                 "w: PER_CHANNEL, 3 scales, int8 zero point 0 -> offset -128, symmetric");
        OT_CHECK(!cJSON_GetObjectItem(ew, "block_size"), "no block_size but for PER_BLOCK");
    }
    const cJSON *b_acts = b ? cJSON_GetObjectItem(b, "activation_encodings") : NULL;
    const cJSON *by = b_acts ? cJSON_GetObjectItem(b_acts, "y") : NULL;
    const cJSON *bw = b ? cJSON_GetObjectItem(cJSON_GetObjectItem(b, "param_encodings"), "w") : NULL;
    OT_CHECK(b && !strcmp(cJSON_GetObjectItem(b, "version")->valuestring, "0.6.1") && cJSON_IsArray(by) &&
                 cJSON_GetArraySize(by) == 1 && cJSON_GetArraySize(bw) == 3,
             "0.6.1: maps of name to lists, one entry per channel");
    if (cJSON_GetArraySize(by) == 1) {
        const cJSON *e = cJSON_GetArrayItem(by, 0);
        double s = (double)0.05f;
        OT_CHECK(num_at(e, "bitwidth", 0) == 8 && !strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, "int") &&
                     !strcmp(cJSON_GetObjectItem(e, "is_symmetric")->valuestring, "False") && num_at(e, "offset", 0) == -125,
                 "0.6.1 y: bitwidth 8, dtype int, is_symmetric \"False\", offset -125");
        OT_CHECK(fabs(num_at(e, "min", 0) - s * -125) < 1e-12 && fabs(num_at(e, "max", 0) - s * 130) < 1e-12,
                 "0.6.1 y: min = scale*offset, max = scale*(offset + 255): %g %g", num_at(e, "min", 0), num_at(e, "max", 0));
        OT_CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(bw, 1), "is_symmetric")->valuestring, "True"),
                 "0.6.1 w: is_symmetric \"True\"");
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* strip: no Q/DQ left, x keeps its name, out written by an Identity of y */
    carve_model *s = ot_clone(m);
    char *js = NULL;
    uint32_t kept = 99;
    OT_CHECK(s && carve_strip_qdq(s, CARVE_AIMET_1_0_0, &js, &kept) == CARVE_OK, "strips: %s", carve_errmsg(ctx));
    OT_CHECK(kept == 0 && count_qdq(s) == 0, "no Q/DQ left (kept %u, %d in the graph)", kept, count_qdq(s));
    OT_CHECK(js && j1 && !strcmp(js, j1), "the stripped model's encodings are the QDQ model's");
    carve_value_id wv = carve_graph_find_value(s, 0, "w");
    OT_CHECK(wv != CARVE_NONE && carve_value_kind_of(s, wv) == CARVE_VALUE_CONST && carve_value_dtype(s, wv) == CARVE_FLOAT,
             "w is a float initializer");
    carve_value_id ov = carve_graph_output(s, 0, 0);
    OT_CHECK(!strcmp(carve_value_name(s, ov), "out") && !strcmp(carve_node_op(s, carve_value_producer(s, ov)), "Identity"),
             "the graph output keeps its name (an Identity of y)");
    /* and back: bit-identical */
    OT_CHECK(carve_apply_encodings(s, js, strlen(js), NULL) == CARVE_OK, "applies: %s", carve_errmsg(ctx));
    int64_t xd[2] = {2, 4};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 5, -3, 3)}, *want[1] = {0}, *got[1] = {0};
    char why[256] = "";
    OT_CHECK(carve_model_run(m, in, want) == CARVE_OK && carve_model_run(s, in, got) == CARVE_OK &&
                 ot_close(got[0], want[0], 0, 0, why, sizeof why),
             "strip + apply gives the original's output bit for bit: %s", why);
    cv_val_unref(in[0]), cv_val_unref(want[0]), cv_val_unref(got[0]);
    carve_free(j1), carve_free(j0), carve_free(js);
    carve_model_free(s);
    carve_model_free(m);
}

static uint64_t rs = 99;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rs >> 33) % n);
}

/* Three layers h -> QDQ -> MatMul(DQ(W_k)) + DQ(bias) -> Relu, W of kind k
 * (0 per tensor, 1 per channel, 2 per block, 3 int4 per block, 4 uint8 per
 * channel with zero points), activations uint8 or (a16) uint16. */
static carve_model *random_model(uint32_t seed, bool a16)
{
    carve_model *m = lt_model(ctx, 21);
    int64_t xd[2] = {4, 8}, wd[2] = {8, 8}, cd[1] = {8}, bd[2] = {2, 8};
    carve_value_id h = lt_input(m, "x", 2, xd);
    float sa = a16 ? 0.0002f : 0.03f;
    uint16_t z16 = 32768 - (uint16_t)rnd(100);
    uint8_t z8 = (uint8_t)(120 + rnd(16));
    carve_value_id s = init(m, "sa", CARVE_FLOAT, 0, NULL, &sa);
    carve_value_id z = a16 ? init(m, "za", CARVE_UINT16, 0, NULL, &z16) : init(m, "za", CARVE_UINT8, 0, NULL, &z8);
    char nm[64], on[64];
    for (int l = 0; l < 3; l++) {
        snprintf(on, sizeof on, "h%d_q", l), snprintf(nm, sizeof nm, "q%d", l);
        carve_value_id q = lt_op(m, "QuantizeLinear", nm, 3, (carve_value_id[]){h, s, z}, on);
        snprintf(on, sizeof on, "h%d_dq", l), snprintf(nm, sizeof nm, "dq%d", l);
        carve_value_id dq = lt_op(m, "DequantizeLinear", nm, 3, (carve_value_id[]){q, s, z}, on);
        int kind = (int)((seed + (uint32_t)l) % 5);
        int8_t w8[64];
        uint8_t w4[32], wu[64], zu[8];
        float ws[16];
        for (int i = 0; i < 16; i++)
            ws[i] = 0.002f + 0.0005f * (float)rnd(20);
        for (int i = 0; i < 64; i++)
            w8[i] = (int8_t)((int)rnd(255) - 127), wu[i] = (uint8_t)rnd(256);
        for (int i = 0; i < 32; i++)
            w4[i] = (uint8_t)rnd(256);
        for (int i = 0; i < 8; i++)
            zu[i] = (uint8_t)(100 + rnd(50));
        snprintf(nm, sizeof nm, "w%d_q", l);
        carve_value_id wq, sw, zw = CARVE_NONE;
        char sn[32], zn[32];
        snprintf(sn, sizeof sn, "w%d_s", l), snprintf(zn, sizeof zn, "w%d_z", l);
        if (kind == 0) {
            wq = init(m, nm, CARVE_INT8, 2, wd, w8), sw = init(m, sn, CARVE_FLOAT, 0, NULL, ws);
        } else if (kind == 1) {
            wq = init(m, nm, CARVE_INT8, 2, wd, w8), sw = init(m, sn, CARVE_FLOAT, 1, cd, ws);
        } else if (kind == 4) {
            wq = init(m, nm, CARVE_UINT8, 2, wd, wu), sw = init(m, sn, CARVE_FLOAT, 1, cd, ws);
            zw = init(m, zn, CARVE_UINT8, 1, cd, zu);
        } else {
            wq = kind == 2 ? init(m, nm, CARVE_INT8, 2, wd, w8) : init(m, nm, CARVE_INT4, 2, wd, w4);
            sw = init(m, sn, CARVE_FLOAT, 2, bd, ws);
        }
        snprintf(on, sizeof on, "w%d", l), snprintf(nm, sizeof nm, "dqw%d", l);
        carve_value_id wdq = lt_op(m, "DequantizeLinear", nm, zw == CARVE_NONE ? 2 : 3, (carve_value_id[]){wq, sw, zw}, on);
        carve_node_id dn = carve_value_producer(m, wdq);
        if (kind == 1 || kind == 4)
            carve_node_set_attr_int(m, dn, "axis", 1);
        if (kind == 2 || kind == 3) {
            carve_node_set_attr_int(m, dn, "axis", 0);
            carve_node_set_attr_int(m, dn, "block_size", 4);
        }
        snprintf(on, sizeof on, "mm%d", l);
        carve_value_id y = lt_op(m, "MatMul", on, 2, (carve_value_id[]){dq, wdq}, on);
        /* an int32 bias; layer 1's holds 2^25 + 1, which float cannot */
        int32_t b[8];
        float bs[8];
        for (int i = 0; i < 8; i++)
            b[i] = (int32_t)rnd(20000) - 10000, bs[i] = 1e-5f * (float)(1 + rnd(9));
        if (l == 1)
            b[3] = (1 << 25) + 1, bs[3] = 1e-9f;
        snprintf(nm, sizeof nm, "b%d_q", l), snprintf(sn, sizeof sn, "b%d_s", l);
        carve_value_id bq = init(m, nm, CARVE_INT32, 1, cd, b), bsv = init(m, sn, CARVE_FLOAT, 1, cd, bs);
        snprintf(on, sizeof on, "b%d", l), snprintf(nm, sizeof nm, "dqb%d", l);
        carve_value_id bdq = lt_op(m, "DequantizeLinear", nm, 2, (carve_value_id[]){bq, bsv}, on);
        carve_node_set_attr_int(m, carve_value_producer(m, bdq), "axis", 0);
        snprintf(on, sizeof on, "add%d", l);
        y = lt_op(m, "Add", on, 2, (carve_value_id[]){y, bdq}, on);
        snprintf(on, sizeof on, "relu%d", l);
        h = lt_op(m, "Relu", on, 1, &y, on);
    }
    carve_value_id q = lt_op(m, "QuantizeLinear", "q_out", 3, (carve_value_id[]){h, s, z}, "out_q");
    carve_graph_add_output(m, 0, lt_op(m, "DequantizeLinear", "dq_out", 3, (carve_value_id[]){q, s, z}, "out"));
    return m;
}

static void round_trips(void)
{
    int n_ok = 0;
    for (uint32_t seed = 0; seed < 10; seed++) {
        bool a16 = seed % 2;
        carve_model *m = random_model(seed, a16);
        OT_CHECK(carve_model_verify(m) == CARVE_OK, "seed %u builds: %s", seed, carve_errmsg(ctx));
        carve_model *s = ot_clone(m);
        char *js = NULL;
        uint32_t kept = 0;
        OT_CHECK(s && carve_strip_qdq(s, CARVE_AIMET_1_0_0, &js, &kept) == CARVE_OK && js, "seed %u strips: %s", seed,
                 carve_errmsg(ctx));
        OT_CHECK(kept == 1 && count_qdq(s) == 1, "seed %u: only the bias above 2^24 keeps its DequantizeLinear (%u kept)",
                 seed, kept);
        cJSON *j = cJSON_Parse(js ? js : "");
        const cJSON *p = cJSON_GetObjectItem(j, "param_encodings");
        int blocks = 0, int4 = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, p)
        {
            blocks += !strcmp(cJSON_GetObjectItem(e, "enc_type")->valuestring, "PER_BLOCK");
            int4 += cJSON_GetObjectItem(e, "bw")->valueint == 4;
        }
        const cJSON *a0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "activation_encodings"), 0);
        OT_CHECK(a0 && cJSON_GetObjectItem(a0, "bw")->valueint == (a16 ? 16 : 8), "seed %u: %d-bit activations", seed,
                 a16 ? 16 : 8);
        int want_blocks = 0, want_int4 = 0;
        for (uint32_t l = 0; l < 3; l++)
            want_blocks += (seed + l) % 5 == 2 || (seed + l) % 5 == 3, want_int4 += (seed + l) % 5 == 3;
        OT_CHECK(blocks == want_blocks && int4 == want_int4, "seed %u: %d per-block encodings (%d expected), %d 4-bit (%d)",
                 seed, blocks, want_blocks, int4, want_int4);
        cJSON_Delete(j);
        /* 0.6.1 refuses the per-block ones, and leaves the model alone */
        carve_model *t = ot_clone(m);
        char *j0 = NULL;
        if (want_blocks)
            OT_CHECK(carve_strip_qdq(t, CARVE_AIMET_0_6_1, &j0, NULL) != CARVE_OK &&
                         strstr(carve_errmsg(ctx), "0.6.1 cannot express") && count_qdq(t) == count_qdq(m),
                     "seed %u: per block in 0.6.1 is refused before anything changes: %s", seed, carve_errmsg(ctx));
        else
            OT_CHECK(carve_strip_qdq(t, CARVE_AIMET_0_6_1, &j0, NULL) == CARVE_OK && j0, "seed %u: 0.6.1 without blocks: %s",
                     seed, carve_errmsg(ctx));
        carve_free(j0);
        carve_model_free(t);
        /* apply to the stripped float model */
        OT_CHECK(carve_apply_encodings(s, js, js ? strlen(js) : 0, NULL) == CARVE_OK, "seed %u applies: %s", seed,
                 carve_errmsg(ctx));
        int64_t xd[2] = {4, 8};
        cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, seed + 1, -2, 2)}, *want[1] = {0}, *got[1] = {0};
        char why[256] = "";
        bool same = carve_model_run(m, in, want) == CARVE_OK && carve_model_run(s, in, got) == CARVE_OK &&
                    ot_close(got[0], want[0], 0, 0, why, sizeof why);
        OT_CHECK(same, "seed %u (%s activations): strip -> encodings -> apply is bit-identical: %s", seed,
                 a16 ? "16-bit" : "8-bit", why);
        n_ok += same;
        cv_val_unref(in[0]), cv_val_unref(want[0]), cv_val_unref(got[0]);
        carve_free(js);
        carve_model_free(s);
        carve_model_free(m);
    }
    printf("round trip bit-identical on %d of 10 random QDQ models\n", n_ok);
}

static void refuse(carve_model *m, const char *json, const char *want, const char *what)
{
    int before = count_qdq(m);
    size_t nodes = carve_graph_node_count(m, 0);
    OT_CHECK(carve_apply_encodings(m, json, strlen(json), NULL) != CARVE_OK && strstr(carve_errmsg(ctx), want) &&
                 count_qdq(m) == before && carve_graph_node_count(m, 0) == nodes,
             "%s: refused with '%s', model unchanged: %s", what, want, carve_errmsg(ctx));
}

static void refusals(void)
{
    carve_model *m = golden_model();
    char *js = NULL;
    carve_strip_qdq(m, CARVE_AIMET_1_0_0, &js, NULL);
    carve_free(js);
    refuse(m, "{\"version\": \"1.0.0\", \"activation_encodings\": [{\"name\": \"nope\", \"dtype\": \"INT\", "
              "\"enc_type\": \"PER_TENSOR\", \"bw\": 8, \"is_sym\": false, \"scale\": [0.1], \"offset\": [0]}]}",
           "'nope' (activation encoding): the model's main graph has no value of this name", "a name the model lacks");
    refuse(m, "{\"version\": \"1.0.0\", \"activation_encodings\": [{\"name\": \"x\", \"dtype\": \"INT\", "
              "\"enc_type\": \"PER_TENSOR\", \"bw\": 12, \"is_sym\": false, \"scale\": [0.1], \"offset\": [0]}]}",
           "ONNX has no 12-bit integer type", "a bitwidth ONNX cannot hold");
    refuse(m, "{\"version\": \"1.0.0\", \"activation_encodings\": [{\"name\": \"x\", \"dtype\": \"INT\", ",
           "not valid JSON", "a truncated file");
    refuse(m, "{\"version\": \"0.6.1\", \"activation_encodings\": {\"x\": [{\"bitwidth\": 8, \"offset\": 0}]}}",
           "field 'scale' missing", "a 0.6.1 entry without scale");

    refuse(m, "{\"version\": \"1.0.0\", \"param_encodings\": [{\"name\": \"w\", \"dtype\": \"INT\", "
              "\"enc_type\": \"PER_CHANNEL\", \"bw\": 8, \"is_sym\": true, \"scale\": [0.1, 0.1], \"offset\": [-128, -128]}]}",
           "2 scales fit no axis", "a scale list no axis has");
    refuse(m, "{\"version\": \"2.0.0\", \"encodings\": []}", "version 2.0.0 is not one carve reads", "version 2.0.0");
    /* 0.6.1 applies too: per tensor and per channel */
    const char *ok = "{\"version\": \"0.6.1\", \"activation_encodings\": {\"x\": [{\"bitwidth\": 8, \"dtype\": \"int\", "
                     "\"is_symmetric\": \"False\", \"max\": 2.54, \"min\": -2.56, \"offset\": -128, \"scale\": 0.02}]},"
                     " \"param_encodings\": {\"w\": [{\"bitwidth\": 8, \"is_symmetric\": \"True\", \"offset\": -128, "
                     "\"scale\": 0.01}, {\"bitwidth\": 8, \"is_symmetric\": \"True\", \"offset\": -128, \"scale\": 0.02}, "
                     "{\"bitwidth\": 8, \"is_symmetric\": \"True\", \"offset\": -128, \"scale\": 0.03}]}}";
    carve_qdq_stats st = {0};
    OT_CHECK(carve_apply_encodings(m, ok, strlen(ok), &st) == CARVE_OK && st.activations == 1 && st.params == 1,
             "a 0.6.1 file applies (%u activations, %u params): %s", st.activations, st.params, carve_errmsg(ctx));
    carve_model_free(m);
    /* 16 bits on an opset-13 model: carve's upgrade raises the opset first */
    m = golden_model();
    carve_strip_qdq(m, CARVE_AIMET_1_0_0, &js, NULL);
    carve_free(js);
    const char *b16 = "{\"version\": \"0.6.1\", \"activation_encodings\": {\"x\": [{\"bitwidth\": 16, \"dtype\": \"int\", "
                      "\"is_symmetric\": \"False\", \"offset\": -32768, \"scale\": 0.001}]}}";
    memset(&st, 0, sizeof st);
    OT_CHECK(carve_apply_encodings(m, b16, strlen(b16), &st) == CARVE_OK && st.activations == 1 &&
                 carve_model_opset(m, "") >= 21,
             "16 bits on an opset-13 model: upgraded to opset %lld and applied: %s", (long long)carve_model_opset(m, ""),
             carve_errmsg(ctx));
    carve_model_free(m);
}

/* dtype FLOAT: 16 bits is a float16 round trip, 32 bits nothing; a file
 * applied to the graph that already holds its Q/DQ changes nothing. */
static void float_and_idempotent(void)
{
    carve_model *m = golden_model();
    char *js = NULL;
    OT_CHECK(carve_aimet_encodings(m, CARVE_AIMET_1_0_0, &js) == CARVE_OK && js, "encodings");
    size_t nodes = carve_graph_node_count(m, 0);
    carve_qdq_stats st = {0};
    OT_CHECK(js && carve_apply_encodings(m, js, strlen(js), &st) == CARVE_OK && st.skipped == 3 && !st.activations &&
                 !st.params && carve_graph_node_count(m, 0) == nodes,
             "applied to the QDQ model itself: all 3 already quantized, nothing added (%u skipped)", st.skipped);
    carve_free(js);
    carve_strip_qdq(m, CARVE_AIMET_1_0_0, &js, NULL);
    carve_free(js);
    carve_model *f = ot_clone(m);
    const char *fl = "{\"version\": \"1.0.0\", \"activation_encodings\": [{\"name\": \"y\", \"dtype\": \"FLOAT\", "
                     "\"enc_type\": \"PER_TENSOR\", \"bw\": 16}, {\"name\": \"x\", \"dtype\": \"FLOAT\", \"bw\": 32}]}";
    memset(&st, 0, sizeof st);
    OT_CHECK(f && carve_apply_encodings(f, fl, strlen(fl), &st) == CARVE_OK && st.casts == 1 && st.skipped == 1,
             "FLOAT 16 -> a float16 round trip, FLOAT 32 -> nothing (%u casts, %u skipped): %s", st.casts, st.skipped,
             carve_errmsg(ctx));
    int64_t xd[2] = {2, 4};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 8, -3, 3)}, *a[1] = {0}, *b[1] = {0};
    bool ok = f && carve_model_run(m, in, a) == CARVE_OK && carve_model_run(f, in, b) == CARVE_OK;
    int64_t od[2] = {2, 3};
    carve_tensor *h = carve_tensor_new(CARVE_FLOAT16, 2, od);
    for (size_t i = 0; ok && i < 6; i++) {
        carve_tensor_set(h, i, carve_tensor_get(a[0], i));
        ok = carve_tensor_get(b[0], i) == carve_tensor_get(h, i);
    }
    OT_CHECK(ok, "the output is y rounded to float16");
    carve_tensor_free(h);
    cv_val_unref(in[0]), cv_val_unref(a[0]), cv_val_unref(b[0]);
    carve_model_free(f);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    golden();
    round_trips();
    refusals();
    float_and_idempotent();
    carve_ctx_free(ctx);
    return ot_finish();
}

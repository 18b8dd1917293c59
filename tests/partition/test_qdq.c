/* test_qdq.c: quantized (QDQ) models on htp (and lpai, gpu): node units
 * placed whole, the Delegate's `encodings` attribute (per-tensor, per-axis,
 * blocked, runtime scales, requantization as Cast or Convert), kept-whole
 * ops on dequantized values decomposed in float on CPU, a bfloat16 cast
 * inside a quantized graph. Every model is also run before and after
 * lowering (the target's simulator) and must give the same outputs. */
#include "lowertest.h"

#include <math.h>

static carve_ctx *ctx;
static char pb[16];
static const carve_lower_opts no_fold = {.no_fold = true};

static carve_value_id scalar_f(carve_model *m, const char *name, float v)
{
    return carve_graph_add_initializer(m, 0, name, CARVE_FLOAT, 0, NULL, &v, sizeof v);
}

static carve_value_id scalar_q(carve_model *m, const char *name, carve_dtype t, int32_t v)
{
    if (t == CARVE_INT16 || t == CARVE_UINT16) {
        uint16_t x = (uint16_t)v;
        return carve_graph_add_initializer(m, 0, name, t, 0, NULL, &x, sizeof x);
    }
    uint8_t x = (uint8_t)v;
    return carve_graph_add_initializer(m, 0, name, t, 0, NULL, &x, sizeof x);
}

/* QuantizeLinear / DequantizeLinear with constant parameters. */
static carve_value_id qnode(carve_model *m, const char *op, const char *name, carve_value_id x, carve_value_id s,
                            carve_value_id zp, const char *out)
{
    carve_value_id in[3] = {x, s, zp};
    return lt_op(m, op, name, zp == CARVE_NONE ? 2 : 3, in, out);
}

/* Q then DQ of activation x with uint8 scale s, zero point 128. */
static carve_value_id qdq(carve_model *m, const char *tag, carve_value_id x, float s)
{
    char n1[64], n2[64], o1[64], o2[64], sn[64], zn[64];
    snprintf(n1, sizeof n1, "q_%s", tag), snprintf(n2, sizeof n2, "dq_%s", tag);
    snprintf(o1, sizeof o1, "%s_q", tag), snprintf(o2, sizeof o2, "%s_dq", tag);
    snprintf(sn, sizeof sn, "%s_scale", tag), snprintf(zn, sizeof zn, "%s_zp", tag);
    carve_value_id sv = scalar_f(m, sn, s), zv = scalar_q(m, zn, CARVE_UINT8, 128);
    carve_value_id q = qnode(m, "QuantizeLinear", n1, x, sv, zv, o1);
    return qnode(m, "DequantizeLinear", n2, q, sv, zv, o2);
}

/* The Delegate's encodings as parsed JSON (from the report), by partition. */
static const cJSON *encodings_of(const cJSON *report, int part)
{
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(report, "partitions"), part);
    return p ? cJSON_GetObjectItem(p, "encodings") : NULL;
}

/* The first encoding whose key ends with `suffix` (body boundary values are
 * named "<delegate>/<name>"). */
static const cJSON *enc_find(const cJSON *enc, const char *suffix)
{
    const cJSON *e;
    size_t ls = strlen(suffix);
    cJSON_ArrayForEach(e, enc)
    {
        size_t l = strlen(e->string);
        if (l >= ls && !strcmp(e->string + l - ls, suffix) && (l == ls || e->string[l - ls - 1] == '/'))
            return e;
    }
    return NULL;
}

static const char *jstr_of(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItem(o, k) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Integer member k of o, -1 when absent. */
static int jint_of(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItem(o, k) : NULL;
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

/* x -> QDQ -> Conv(DQ(int8 weight), DQ(int32 bias)) -> QDQ -> Relu -> QDQ.
 * per_axis: the weight has one scale per output channel (axis 0). */
static carve_model *conv_model(bool per_axis)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[4] = {1, 3, 6, 6}, wd[4] = {4, 3, 3, 3}, cd[1] = {4};
    carve_value_id x = lt_input(m, "x", 4, xd);
    carve_value_id xa = qdq(m, "x", x, 0.02f);
    int8_t w[108];
    for (int i = 0; i < 108; i++)
        w[i] = (int8_t)((i * 37) % 255 - 127);
    carve_value_id wq = carve_graph_add_initializer(m, 0, "w_q", CARVE_INT8, 4, wd, w, sizeof w);
    float ws[4] = {0.004f, 0.005f, 0.006f, 0.007f};
    carve_value_id wsv = per_axis ? carve_graph_add_initializer(m, 0, "w_scale", CARVE_FLOAT, 1, cd, ws, sizeof ws)
                                  : scalar_f(m, "w_scale", ws[0]);
    carve_value_id wdq = qnode(m, "DequantizeLinear", "dq_w", wq, wsv, CARVE_NONE, "w_dq");
    if (per_axis)
        carve_node_set_attr_int(m, carve_model_find_node(m, "dq_w"), "axis", 0);
    int32_t b[4] = {100, -200, 300, -400};
    carve_value_id bq = carve_graph_add_initializer(m, 0, "b_q", CARVE_INT32, 1, cd, b, sizeof b);
    carve_value_id bdq = qnode(m, "DequantizeLinear", "dq_b", bq, scalar_f(m, "b_scale", 0.02f * 0.004f), CARVE_NONE,
                               "b_dq");
    carve_value_id cin[3] = {xa, wdq, bdq};
    carve_value_id c = lt_op(m, "Conv", "conv", 3, cin, "c");
    carve_value_id ca = qdq(m, "c", c, 0.05f);
    carve_value_id r = lt_op(m, "Relu", "relu", 1, &ca, "r");
    carve_graph_add_output(m, 0, qdq(m, "r", r, 0.05f));
    return m;
}

static void conv_units(bool per_axis)
{
    carve_model *m = conv_model(per_axis);
    int64_t xd[4] = {1, 3, 6, 6};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 4, xd, 3, -2, 2)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 1e-5, 0, &r) == LT_EQUAL, "QDQ conv (per_axis %d): lowered equals original",
             per_axis);
    if (r) {
        OT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r, "partitions")) == 1, "QDQ conv: one partition, got %d",
                 cJSON_GetArraySize(cJSON_GetObjectItem(r, "partitions")));
        static const char *all[] = {"q_x", "dq_x", "dq_w", "dq_b", "conv", "q_c", "dq_c", "relu", "q_r", "dq_r"};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            OT_CHECK(!strcmp(lt_place(r, all[i], pb), "0"), "QDQ conv: %s delegated, got %s", all[i],
                     lt_place(r, all[i], pb));
        const cJSON *enc = encodings_of(r, 0);
        OT_CHECK(enc != NULL, "the Delegate carries encodings");
        const cJSON *w = enc_find(enc, "w_q");
        OT_CHECK(!strcmp(jstr_of(w, "dtype"), "int8"), "w_q: int8, got '%s'", jstr_of(w, "dtype"));
        OT_CHECK(!strcmp(jstr_of(w, "granularity"), per_axis ? "per_axis" : "per_tensor"), "w_q granularity: %s",
                 jstr_of(w, "granularity"));
        const cJSON *ws = w ? cJSON_GetObjectItem(w, "scale") : NULL;
        if (per_axis) {
            OT_CHECK(cJSON_GetArraySize(ws) == 4 && fabs(cJSON_GetArrayItem(ws, 3)->valuedouble - 0.007) < 1e-9,
                     "w_q: 4 scales, the last 0.007");
            OT_CHECK(cJSON_GetObjectItem(w, "axis") && cJSON_GetObjectItem(w, "axis")->valueint == 0, "w_q: axis 0");
        } else {
            OT_CHECK(cJSON_IsNumber(ws) && fabs(ws->valuedouble - 0.004) < 1e-9, "w_q: scale 0.004");
            OT_CHECK(!cJSON_GetObjectItem(w, "axis"), "w_q: a per-tensor encoding has no axis");
        }
        const cJSON *xq = enc_find(enc, "x_q");
        OT_CHECK(!strcmp(jstr_of(xq, "dtype"), "uint8") && cJSON_GetObjectItem(xq, "zero_point") &&
                     cJSON_GetObjectItem(xq, "zero_point")->valueint == 128,
                 "x_q: uint8 with zero point 128");
        OT_CHECK(!strcmp(jstr_of(enc_find(enc, "b_q"), "dtype"), "int32"), "b_q: int32 bias encoding");
        OT_CHECK(enc_find(enc, "c_q") && enc_find(enc, "r_q"), "activations c_q and r_q are encoded");
        OT_CHECK(jint_of(w, "bits") == 8, "w_q (int8 over [-127, 127]): 8 bits, got %d", jint_of(w, "bits"));
        OT_CHECK(jint_of(xq, "bits") == 8, "x_q (a uint8 activation): 8 bits, got %d", jint_of(xq, "bits"));
        OT_CHECK(jint_of(enc_find(enc, "b_q"), "bits") == 32, "b_q: 32 bits");
        cJSON_Delete(r);
    }
    /* the same model with the Conv on CPU: its whole unit goes with it */
    const char *skip[1] = {"conv"};
    carve_lower_opts o = {.cpu_nodes = skip, .n_cpu_nodes = 1};
    r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", &o, in, 1e-5, 0, &r) == LT_EQUAL, "QDQ conv on CPU: lowered equals original");
    if (r) {
        static const char *unit[] = {"dq_x", "dq_w", "dq_b", "q_c"};
        for (size_t i = 0; i < sizeof unit / sizeof *unit; i++) {
            OT_CHECK(!strcmp(lt_place(r, unit[i], pb), "cpu"), "%s follows the Conv to CPU, got %s", unit[i],
                     lt_place(r, unit[i], pb));
            OT_CHECK(!strcmp(lt_reason(r, unit[i]), "node_unit"), "%s: reason node_unit, got %s", unit[i],
                     lt_reason(r, unit[i]));
        }
        OT_CHECK(!strcmp(lt_reason(r, "conv"), "skipped_by_user"), "conv: skipped_by_user");
        /* the Relu's unit (dq_c, relu, q_r) stays whole in a partition */
        OT_CHECK(strcmp(lt_place(r, "relu", pb), "cpu") && !strcmp(lt_place(r, "dq_c", pb), lt_place(r, "relu", pb)) &&
                     !strcmp(lt_place(r, "q_r", pb), lt_place(r, "relu", pb)),
                 "the Relu's unit is delegated together (dq_c %s, relu %s)", lt_place(r, "dq_c", pb),
                 lt_place(r, "relu", pb));
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* Add(DQ(a_q), DQ(b_q)) where b_q comes later than a_q, behind a CPU op
 * that reads a delegated Relu. Partitioning by levels alone would put dq_a
 * with q_a (level 0) and the Add with dq_b (level 1): a unit split across
 * partitions. */
static void unit_not_split(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {2, 8};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id s = scalar_f(m, "s", 0.03f), z = scalar_q(m, "z", CARVE_UINT8, 128);
    carve_value_id aq = qnode(m, "QuantizeLinear", "q_a", x, s, z, "a_q");
    carve_value_id rx = lt_op(m, "Relu", "relu", 1, &x, "rx");
    carve_value_id cz = lt_op(m, "Cosh", "cosh", 1, &rx, "cz"); /* htp has no Cosh */
    carve_value_id bq = qnode(m, "QuantizeLinear", "q_b", cz, s, z, "b_q");
    carve_value_id ad = qnode(m, "DequantizeLinear", "dq_a", aq, s, z, "a_dq");
    carve_value_id bd = qnode(m, "DequantizeLinear", "dq_b", bq, s, z, "b_dq");
    carve_value_id in2[2] = {ad, bd};
    carve_value_id sum = lt_op(m, "Add", "add", 2, in2, "sum");
    carve_value_id yq = qnode(m, "QuantizeLinear", "q_y", sum, s, z, "y_q");
    carve_graph_add_output(m, 0, qnode(m, "DequantizeLinear", "dq_y", yq, s, z, "y"));
    /* a second reader of a_q outside the unit keeps q_a's partition alive */
    carve_graph_add_output(m, 0, qnode(m, "DequantizeLinear", "dq_a2", aq, s, z, "a2"));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 5, -1, 1)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 1e-5, 0, &r) == LT_EQUAL, "unit behind a CPU op: lowered equals original");
    if (r) {
        char p1[16], p2[16];
        const char *pa = lt_place(r, "dq_a", p1), *pd = lt_place(r, "add", p2);
        OT_CHECK(strcmp(pd, "cpu") && !strcmp(pa, pd), "dq_a is placed with the Add (dq_a %s, add %s)", pa, pd);
        OT_CHECK(!strcmp(lt_place(r, "dq_b", pb), pd) && !strcmp(lt_place(r, "q_y", pb), pd),
                 "dq_b and q_y are placed with the Add");
        OT_CHECK(strcmp(lt_place(r, "q_a", pb), pd), "q_a (its own unit, level 0) is in another partition");
        OT_CHECK(!strcmp(lt_place(r, "cosh", pb), "cpu"), "Cosh on CPU");
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* y = MatMul(x, DQ(w)) with a blocked 4-bit weight (opset 21): w [K=32, N=4]
 * quantized in blocks of 16 along K; stored as int4 (packed) or as int8
 * holding [-8, 7]. */
static void blocked_weight(bool packed)
{
    carve_model *m = lt_model(ctx, 21);
    enum { K = 32, N = 4, B = 16 };
    int64_t xd[2] = {3, K}, wd[2] = {K, N}, sd[2] = {K / B, N};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id xa = qdq(m, "x", x, 0.02f);
    int8_t w[K * N];
    uint8_t wp[K * N / 2] = {0};
    for (int i = 0; i < K * N; i++) {
        w[i] = (int8_t)((i * 7) % 16 - 8);
        wp[i / 2] |= (uint8_t)(((uint8_t)w[i] & 0xF) << (4 * (i % 2)));
    }
    carve_value_id wq = packed ? carve_graph_add_initializer(m, 0, "w_q", CARVE_INT4, 2, wd, wp, sizeof wp)
                               : carve_graph_add_initializer(m, 0, "w_q", CARVE_INT8, 2, wd, w, sizeof w);
    float ws[K / B * N];
    for (int i = 0; i < K / B * N; i++)
        ws[i] = 0.01f * (float)(i + 1);
    carve_value_id wsv = carve_graph_add_initializer(m, 0, "w_scale", CARVE_FLOAT, 2, sd, ws, sizeof ws);
    carve_value_id wdq = qnode(m, "DequantizeLinear", "dq_w", wq, wsv, CARVE_NONE, "w_dq");
    carve_node_id dn = carve_model_find_node(m, "dq_w");
    carve_node_set_attr_int(m, dn, "axis", 0);
    carve_node_set_attr_int(m, dn, "block_size", B);
    carve_value_id in2[2] = {xa, wdq};
    carve_value_id y = lt_op(m, "MatMul", "matmul", 2, in2, "y");
    carve_graph_add_output(m, 0, qdq(m, "y", y, 0.05f));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 9, -1, 1)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 1e-5, 0, &r) == LT_EQUAL, "blocked %s weight: lowered equals original",
             packed ? "int4" : "int8");
    if (r) {
        OT_CHECK(!strcmp(lt_place(r, "matmul", pb), "0") && !strcmp(lt_place(r, "dq_w", pb), "0"),
                 "blocked weight: MatMul and its DQ delegated together");
        const cJSON *we = enc_find(encodings_of(r, 0), "w_q");
        OT_CHECK(!strcmp(jstr_of(we, "dtype"), packed ? "int4" : "int8"), "w_q dtype %s", jstr_of(we, "dtype"));
        OT_CHECK(!strcmp(jstr_of(we, "granularity"), "blocked"), "w_q granularity blocked, got '%s'",
                 jstr_of(we, "granularity"));
        OT_CHECK(we && cJSON_GetObjectItem(we, "block_size") &&
                     cJSON_GetObjectItem(we, "block_size")->valueint == B &&
                     cJSON_GetObjectItem(we, "axis")->valueint == 0,
                 "w_q: block_size 16 on axis 0");
        OT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(we, "scale")) == K / B * N, "w_q: %d block scales",
                 K / B * N);
        OT_CHECK(jint_of(we, "bits") == 4, "w_q (%s holding [-8, 7]): 4 bits, got %d", packed ? "int4" : "int8",
                 jint_of(we, "bits"));
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* A kept-whole Gemm on constant quantized weights only, behind a CPU op:
 * its unit reads no runtime value, so HTP refuses it; it is decomposed in
 * float on CPU, its pieces stay on CPU (no encoding for them), and the
 * DequantizeLinear of its weight stays next to the int8 weight. */
static void kept_whole_on_dequantized(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {4, 4}, ad[2] = {4, 8}, bd[2] = {8, 4};
    carve_value_id x = lt_input(m, "x", 2, xd);
    int8_t a[32], b[32];
    for (int i = 0; i < 32; i++)
        a[i] = (int8_t)(i * 5 - 80), b[i] = (int8_t)(100 - i * 7);
    carve_value_id aq = carve_graph_add_initializer(m, 0, "a_q", CARVE_INT8, 2, ad, a, sizeof a);
    carve_value_id bq = carve_graph_add_initializer(m, 0, "b_q", CARVE_INT8, 2, bd, b, sizeof b);
    carve_value_id s = scalar_f(m, "s", 0.01f);
    carve_value_id adq = qnode(m, "DequantizeLinear", "dq_a", aq, s, CARVE_NONE, "a_dq");
    carve_value_id bdq = qnode(m, "DequantizeLinear", "dq_bw", bq, s, CARVE_NONE, "b_dq");
    carve_value_id gin[2] = {adq, bdq};
    carve_value_id g = lt_op(m, "Gemm", "gemm", 2, gin, "g");
    carve_value_id gc = lt_op(m, "Cosh", "cosh", 1, &g, "gc"); /* CPU */
    carve_value_id ga = qdq(m, "gc", gc, 0.05f);
    carve_value_id xs = lt_op(m, "Sinh", "sinh", 1, &x, "xs"); /* CPU: nothing delegated reads x first */
    carve_value_id xa = qdq(m, "x", xs, 0.02f);
    carve_value_id in2[2] = {xa, ga};
    carve_value_id sum = lt_op(m, "Add", "add", 2, in2, "sum");
    carve_graph_add_output(m, 0, qdq(m, "y", sum, 0.05f));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 11, -1, 1)};
    cJSON *r = NULL;
    carve_model *low = NULL;
    lt_keep_lowered = &low;
    OT_CHECK(lt_lower_run(m, "htp", &no_fold, in, 1e-5, 0, &r) == LT_EQUAL,
             "kept-whole Gemm on dequantized constants: lowered equals original");
    lt_keep_lowered = NULL;
    if (r) {
        OT_CHECK(!strcmp(lt_place(r, "gemm", pb), "decomposed"), "the Gemm is decomposed, got %s",
                 lt_place(r, "gemm", pb));
        OT_CHECK(!strcmp(lt_reason(r, "gemm"), "no_runtime_input"), "because its unit reads no runtime value: %s",
                 lt_reason(r, "gemm"));
        const cJSON *pieces = cJSON_GetObjectItem(lt_node(r, "gemm"), "decomposed"), *p;
        OT_CHECK(cJSON_GetArraySize(pieces) >= 1, "the Gemm has pieces");
        cJSON_ArrayForEach(p, pieces)
        {
            OT_CHECK(!strcmp(jstr_of(p, "placement"), "cpu"), "piece %s stays on CPU", jstr_of(p, "name"));
        }
        OT_CHECK(!strcmp(lt_place(r, "dq_bw", pb), "cpu"), "the weight's DequantizeLinear is on CPU with the pieces");
        OT_CHECK(strcmp(lt_place(r, "add", pb), "cpu"), "the Add reading x is delegated");
        cJSON_Delete(r);
    }
    if (low) {
        carve_node_id dq = carve_model_find_node(low, "dq_bw");
        OT_CHECK(dq != CARVE_NONE && !strcmp(low->nodes[dq].op, "DequantizeLinear") && low->nodes[dq].graph == 0,
                 "dq_bw is still a DequantizeLinear in the main graph");
        OT_CHECK(dq != CARVE_NONE && low->values[low->nodes[dq].in[0]].type.dtype == CARVE_INT8,
                 "dq_bw still reads the int8 weight");
        carve_model_free(low);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* A bfloat16 cast inside a quantized graph: HTP has no bfloat16, so the
 * cast's unit (the DequantizeLinear before it) goes to CPU; the units
 * around it stay delegated. */
static void bf16_in_quantized(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {2, 8};
    carve_value_id x = lt_input(m, "x", 2, xd);
    carve_value_id xa = qdq(m, "x", x, 0.02f);
    carve_node_id c1 = carve_graph_add_node(m, 0, "Cast", "", "to_bf16", 1, &xa, 1, (const char *[]){"xb"});
    carve_node_set_attr_int(m, c1, "to", CARVE_BFLOAT16);
    carve_value_id xb = carve_node_output(m, c1, 0);
    carve_node_id c2 = carve_graph_add_node(m, 0, "Cast", "", "to_f32", 1, &xb, 1, (const char *[]){"xf"});
    carve_node_set_attr_int(m, c2, "to", CARVE_FLOAT);
    carve_value_id xf = carve_node_output(m, c2, 0);
    carve_value_id fa = qdq(m, "f", xf, 0.02f);
    carve_value_id r = lt_op(m, "Relu", "relu", 1, &fa, "r");
    carve_graph_add_output(m, 0, qdq(m, "r", r, 0.02f));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 13, -2, 2)};
    cJSON *rep = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 1e-5, 0, &rep) == LT_EQUAL, "bf16 in a quantized graph: equal");
    if (rep) {
        OT_CHECK(!strcmp(lt_reason(rep, "to_bf16"), "unsupported_dtype"), "to_bf16: unsupported_dtype, got %s",
                 lt_reason(rep, "to_bf16"));
        OT_CHECK(!strcmp(lt_reason(rep, "dq_x"), "node_unit"), "dq_x goes with the bf16 cast: node_unit, got %s",
                 lt_reason(rep, "dq_x"));
        OT_CHECK(!strcmp(lt_reason(rep, "to_f32"), "unsupported_dtype") && !strcmp(lt_reason(rep, "q_f"), "node_unit"),
                 "to_f32 reads bfloat16 (CPU) and q_f goes with it (%s, %s)", lt_reason(rep, "to_f32"),
                 lt_reason(rep, "q_f"));
        OT_CHECK(strcmp(lt_place(rep, "q_x", pb), "cpu"), "q_x reads the input: delegated");
        OT_CHECK(strcmp(lt_place(rep, "relu", pb), "cpu") && !strcmp(lt_place(rep, "dq_f", pb), lt_place(rep, "relu", pb)),
                 "the Relu unit is delegated whole");
        cJSON_Delete(rep);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* x -> Q(from) -> DQ -> Q(to) -> DQ: a requantization between two encodings,
 * kept as that pair in the body; `encodings` says Cast or Convert. */
static void requant(carve_dtype from, int32_t zf, float sf, carve_dtype to, int32_t zt, float st, const char *want)
{
    carve_model *m = lt_model(ctx, 21); /* 16-bit QuantizeLinear needs opset 21 */
    int64_t xd[1] = {16};
    carve_value_id x = lt_input(m, "x", 1, xd);
    carve_value_id s1 = scalar_f(m, "s1", sf), z1 = scalar_q(m, "z1", from, zf);
    carve_value_id s2 = scalar_f(m, "s2", st), z2 = scalar_q(m, "z2", to, zt);
    carve_value_id a = qnode(m, "QuantizeLinear", "q1", x, s1, z1, "a");
    carve_value_id b = qnode(m, "DequantizeLinear", "dq1", a, s1, z1, "b");
    carve_value_id c = qnode(m, "QuantizeLinear", "q2", b, s2, z2, "c");
    carve_graph_add_output(m, 0, qnode(m, "DequantizeLinear", "dq2", c, s2, z2, "y"));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 1, xd, 17, -3, 3)};
    cJSON *r = NULL;
    carve_model *low = NULL;
    lt_keep_lowered = &low;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 0, 0, &r) == LT_EQUAL, "requantization %s->%s: exactly equal",
             carve_dtype_name(from), carve_dtype_name(to));
    lt_keep_lowered = NULL;
    if (r) {
        const cJSON *e = enc_find(encodings_of(r, 0), "c");
        const cJSON *rq = e ? cJSON_GetObjectItem(e, "requantize") : NULL;
        OT_CHECK(!strcmp(jstr_of(rq, "as"), want), "requantization %s zp %d -> %s zp %d (scales %g, %g) runs as %s, got '%s'",
                 carve_dtype_name(from), zf, carve_dtype_name(to), zt, sf, st, want, jstr_of(rq, "as"));
        OT_CHECK(!strcmp(jstr_of(rq, "from"), "a"), "the requantization reads a, got '%s'", jstr_of(rq, "from"));
        cJSON_Delete(r);
    }
    if (low) {
        carve_node_id d1 = carve_model_find_node(low, "dq1"), q2 = carve_model_find_node(low, "q2");
        OT_CHECK(d1 != CARVE_NONE && q2 != CARVE_NONE && low->nodes[d1].graph == low->nodes[q2].graph &&
                     low->nodes[d1].graph != 0 && !strcmp(low->nodes[d1].op, "DequantizeLinear") &&
                     !strcmp(low->nodes[q2].op, "QuantizeLinear") && low->nodes[q2].in[0] == low->nodes[d1].out[0],
                 "the DequantizeLinear -> QuantizeLinear pair stays as it is, inside the Delegate body");
        carve_model_free(low);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* A scale that is a runtime value (DynamicQuantizeLinear, as in imgly's
 * small model): DynamicQuantizeLinear stays on CPU, the DQ reading its
 * outputs is delegated with its unit and its encoding names the values. */
static void runtime_scale(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {2, 8};
    carve_value_id x = lt_input(m, "x", 2, xd);
    const char *outs[3] = {"xq", "xs", "xz"};
    carve_node_id dyn = carve_graph_add_node(m, 0, "DynamicQuantizeLinear", "", "dyn", 1, &x, 3, outs);
    carve_value_id dq = qnode(m, "DequantizeLinear", "dq_x", carve_node_output(m, dyn, 0), carve_node_output(m, dyn, 1),
                              carve_node_output(m, dyn, 2), "xd");
    carve_value_id r = lt_op(m, "Relu", "relu", 1, &dq, "r");
    carve_graph_add_output(m, 0, qdq(m, "r", r, 0.02f));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 19, -1, 1)};
    cJSON *rep = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 1e-6, 0, &rep) == LT_EQUAL, "runtime scale: lowered equals original");
    if (rep) {
        OT_CHECK(!strcmp(lt_reason(rep, "dyn"), "unsupported_op"), "DynamicQuantizeLinear on CPU: %s",
                 lt_reason(rep, "dyn"));
        OT_CHECK(!strcmp(lt_place(rep, "dq_x", pb), "0") && !strcmp(lt_place(rep, "relu", pb), "0"),
                 "dq_x and relu delegated together");
        const cJSON *e = enc_find(encodings_of(rep, 0), "xq");
        const cJSON *sc = e ? cJSON_GetObjectItem(e, "scale") : NULL;
        OT_CHECK(cJSON_IsObject(sc) && strstr(jstr_of(sc, "value"), "xs"), "the runtime scale is named: '%s'",
                 jstr_of(sc, "value"));
        cJSON_Delete(rep);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* Without node units (gpu takes float ops only), Q/DQ nodes go to CPU on
 * their own and no Delegate carries encodings. */
static void gpu_has_no_units(void)
{
    carve_model *m = conv_model(false);
    int64_t xd[4] = {1, 3, 6, 6};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 4, xd, 3, -2, 2)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "gpu", NULL, in, 1e-5, 0, &r) == LT_EQUAL, "QDQ conv on gpu: equal");
    if (r) {
        OT_CHECK(!strcmp(lt_place(r, "q_x", pb), "cpu") && !strcmp(lt_place(r, "dq_w", pb), "cpu"),
                 "gpu: Q/DQ on CPU (%s)", lt_reason(r, "q_x"));
        OT_CHECK(strcmp(lt_place(r, "conv", pb), "cpu"), "gpu: the float Conv is delegated");
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItem(r, "partitions"))
        {
            OT_CHECK(!cJSON_GetObjectItem(p, "encodings"), "gpu: no encodings");
        }
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* A QuantizeLinear whose scale is computed from another output of its
 * producer (Split): joining it to the Split's unit would make the contracted
 * graph cyclic (Split -> ReduceMax -> Q), so it stays a unit of its own. */
static void runtime_scale_from_sibling(void)
{
    carve_model *m = lt_model(ctx, 13);
    int64_t xd[2] = {2, 8};
    carve_value_id x = lt_input(m, "x", 2, xd);
    const char *outs[2] = {"a", "b"};
    carve_node_id sp = carve_graph_add_node(m, 0, "Split", "", "split", 1, &x, 2, outs);
    carve_value_id a = carve_node_output(m, sp, 0), b = carve_node_output(m, sp, 1);
    carve_value_id ab = lt_op(m, "Abs", "abs", 1, &b, "ab");
    carve_value_id mx = lt_op(m, "ReduceMax", "rmax", 1, &ab, "mx");
    carve_node_set_attr_int(m, carve_model_find_node(m, "rmax"), "keepdims", 0);
    carve_value_id e[2] = {mx, scalar_f(m, "eps", 0.01f)};
    carve_value_id sc = lt_op(m, "Add", "sc_add", 2, e, "sc");
    carve_value_id z = scalar_q(m, "z", CARVE_UINT8, 128);
    carve_value_id aq = qnode(m, "QuantizeLinear", "q_a", a, sc, z, "a_q");
    carve_graph_add_output(m, 0, qnode(m, "DequantizeLinear", "dq_a", aq, sc, z, "y"));
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 2, xd, 41, -1, 1)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "htp", NULL, in, 1e-6, 0, &r) == LT_EQUAL, "runtime scale from a sibling output: equal");
    if (r) {
        OT_CHECK(strcmp(lt_place(r, "q_a", pb), "cpu") && strcmp(lt_place(r, "split", pb), "cpu"),
                 "split and q_a delegated (%s, %s)", lt_place(r, "split", pb), lt_place(r, "q_a", pb));
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* lpai takes integers only: inside a QDQ unit the float values stand for
 * quantized ones, so the Conv and Relu units are delegated; the first
 * QuantizeLinear reads the float input and stays on CPU. Without units the
 * float Conv would be refused. */
static void lpai_takes_units(void)
{
    carve_model *m = conv_model(true);
    int64_t xd[4] = {1, 3, 6, 6};
    cv_val *in[1] = {ot_random(CARVE_FLOAT, 4, xd, 3, -2, 2)};
    cJSON *r = NULL;
    OT_CHECK(lt_lower_run(m, "lpai", NULL, in, 1e-5, 0, &r) == LT_EQUAL, "QDQ conv on lpai: equal");
    if (r) {
        OT_CHECK(!strcmp(lt_place(r, "q_x", pb), "cpu") && !strcmp(lt_reason(r, "q_x"), "unsupported_dtype"),
                 "lpai: q_x reads float32 x: unsupported_dtype, got %s", lt_reason(r, "q_x"));
        static const char *unit[] = {"dq_x", "dq_w", "dq_b", "conv", "q_c", "dq_c", "relu", "q_r"};
        for (size_t i = 0; i < sizeof unit / sizeof *unit; i++)
            OT_CHECK(!strcmp(lt_place(r, unit[i], pb), "0"), "lpai: %s delegated, got %s (%s)", unit[i],
                     lt_place(r, unit[i], pb), lt_reason(r, unit[i]));
        OT_CHECK(!strcmp(lt_reason(r, "dq_r"), "unsupported_dtype"), "lpai: dq_r makes the float output: %s",
                 lt_reason(r, "dq_r"));
        cJSON_Delete(r);
    }
    cv_val_unref(in[0]);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    conv_units(false);
    conv_units(true);
    unit_not_split();
    blocked_weight(true);
    blocked_weight(false);
    kept_whole_on_dequantized();
    bf16_in_quantized();
    requant(CARVE_INT8, -3, 0.05f, CARVE_UINT8, 125, 0.05f, "Cast");
    requant(CARVE_UINT8, 200, 0.05f, CARVE_INT8, 72, 0.05f, "Cast");
    requant(CARVE_INT16, 0, 0.001f, CARVE_UINT16, 32768, 0.001f, "Cast");
    requant(CARVE_INT8, -3, 0.05f, CARVE_UINT8, 125, 0.06f, "Convert");   /* other scale */
    requant(CARVE_INT8, 0, 0.05f, CARVE_UINT8, 127, 0.05f, "Convert");    /* 127 apart */
    requant(CARVE_UINT8, 100, 0.05f, CARVE_UINT8, 100, 0.07f, "Convert"); /* same signedness */
    requant(CARVE_INT8, 0, 0.05f, CARVE_INT16, 0, 0.05f, "Convert");      /* other width */
    runtime_scale();
    gpu_has_no_units();
    lpai_takes_units();
    runtime_scale_from_sibling();
    carve_ctx_free(ctx);
    return ot_finish();
}

/* test_decompose_golden.c: every decomposition of the op table, byte for
 * byte. Each case is a one-node model (inputs of fixed or symbolic shape,
 * the node's attributes, constant weights), inferred and decomposed; the
 * model's text dump after the decomposition, or the refusal's text, must
 * equal tests/golden/decompose/<case>.txt. The other op tests check what
 * the pieces compute; this one pins the pieces themselves (ops, names,
 * attributes, order), so a refactoring of the decompositions or of the
 * piece builders (d_*.c, rewrite.c) is seen to change nothing.
 *
 * CARVE_UPDATE_GOLDENS=1 rewrites the goldens (then review the diff). */
#include "opstest.h"
#include "testfiles.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GOLDEN_DIR
#error "GOLDEN_DIR (tests/golden/decompose) must be defined by the build"
#endif

/* One input: its dims as text, "1,8,4,4" or "N,C,H,W" (names are symbols). */
typedef struct {
    const char *name;
    carve_dtype dtype;
    const char *dims;
    bool constant; /* an initializer of ones (weights, scales) */
} din;

typedef struct {
    const char *name; /* the golden's file name */
    const char *op;
    int64_t opset;
    din in[5];
    const char *ints[3][2];    /* int attributes: name, value */
    const char *floats[2][2];  /* float attributes */
    const char *strings[1][2]; /* string attributes */
} dcase;

#define F CARVE_FLOAT
#define H CARVE_FLOAT16

static const dcase cases[] = {
    {"depthtospace_dcr_static", "DepthToSpace", 13, {{"x", F, "1,8,4,4", 0}}, {{"blocksize", "2"}}, {{0}}, {{0}}},
    {"depthtospace_crd_dynamic", "DepthToSpace", 13, {{"x", F, "N,C,H,W", 0}}, {{"blocksize", "2"}}, {{0}},
     {{"mode", "CRD"}}},
    {"depthtospace_dcr_batch", "DepthToSpace", 11, {{"x", H, "N,8,2,3", 0}}, {{"blocksize", "2"}}, {{0}}, {{0}}},
    {"spacetodepth_static", "SpaceToDepth", 9, {{"x", F, "2,3,4,6", 0}}, {{"blocksize", "2"}}, {{0}}, {{0}}},
    {"spacetodepth_dynamic", "SpaceToDepth", 13, {{"x", F, "N,C,H,W", 0}}, {{"blocksize", "2"}}, {{0}}, {{0}}},
    {"spacetodepth_opset4", "SpaceToDepth", 4, {{"x", F, "1,2,4,4", 0}}, {{"blocksize", "2"}}, {{0}}, {{0}}},
    {"softmax_11", "Softmax", 11, {{"x", F, "2,3,5", 0}}, {{"axis", "1"}}, {{0}}, {{0}}},
    {"softmax_13", "Softmax", 13, {{"x", F, "N,3,5", 0}}, {{0}}, {{0}}, {{0}}},
    {"softmax_18", "Softmax", 18, {{"x", H, "2,3,5", 0}}, {{"axis", "0"}}, {{0}}, {{0}}},
    {"logsoftmax_13", "LogSoftmax", 13, {{"x", F, "N,5", 0}}, {{0}}, {{0}}, {{0}}},
    {"elu_6", "Elu", 6, {{"x", F, "2,3", 0}}, {{0}}, {{"alpha", "0.5"}}, {{0}}},
    {"elu_18", "Elu", 18, {{"x", F, "N,3", 0}}, {{0}}, {{0}}, {{0}}},
    {"celu_12", "Celu", 12, {{"x", F, "2,3", 0}}, {{0}}, {{"alpha", "2"}}, {{0}}},
    {"selu_6", "Selu", 6, {{"x", F, "2,3", 0}}, {{0}}, {{0}}, {{0}}},
    {"selu_18", "Selu", 18, {{"x", H, "2,3", 0}}, {{0}}, {{0}}, {{0}}},
    {"hardsigmoid_6", "HardSigmoid", 6, {{"x", F, "2,3", 0}}, {{0}}, {{0}}, {{0}}},
    {"hardsigmoid_18", "HardSigmoid", 18, {{"x", F, "2,3", 0}}, {{0}}, {{"alpha", "0.25"}}, {{0}}},
    {"hardswish_14", "HardSwish", 14, {{"x", F, "N,3", 0}}, {{0}}, {{0}}, {{0}}},
    {"gelu_20", "Gelu", 20, {{"x", F, "2,3", 0}}, {{0}}, {{0}}, {{0}}},
    {"gelu_20_tanh", "Gelu", 20, {{"x", F, "2,3", 0}}, {{0}}, {{0}}, {{"approximate", "tanh"}}},
    {"prelu_9", "PRelu", 9, {{"x", F, "2,3", 0}, {"slope", F, "3", 1}}, {{0}}, {{0}}, {{0}}},
    {"prelu_16", "PRelu", 16, {{"x", F, "N,3", 0}, {"slope", F, "3", 1}}, {{0}}, {{0}}, {{0}}},
    {"gemm_13", "Gemm", 13, {{"a", F, "3,4", 0}, {"b", F, "5,4", 1}, {"c", F, "5", 1}}, {{"transB", "1"}},
     {{"alpha", "0.5"}, {"beta", "2"}}, {{0}}},
    {"gemm_11_transa", "Gemm", 11, {{"a", F, "4,3", 0}, {"b", F, "4,5", 0}}, {{"transA", "1"}}, {{0}}, {{0}}},
    {"batchnorm_15", "BatchNormalization", 15,
     {{"x", F, "N,3,4,4", 0}, {"scale", F, "3", 1}, {"bias", F, "3", 1}, {"mean", F, "3", 1}, {"var", F, "3", 1}},
     {{0}}, {{"epsilon", "0.001"}}, {{0}}},
    {"instancenorm_6", "InstanceNormalization", 6, {{"x", F, "N,4,5,5", 0}, {"s", F, "4", 1}, {"b", F, "4", 1}},
     {{0}}, {{0}}, {{0}}},
    {"instancenorm_13", "InstanceNormalization", 13, {{"x", H, "2,4,5", 0}, {"s", H, "4", 1}, {"b", H, "4", 1}},
     {{0}}, {{0}}, {{0}}},
    {"layernorm_17", "LayerNormalization", 17, {{"x", F, "N,3,5", 0}, {"s", F, "5", 1}, {"b", F, "5", 1}},
     {{"axis", "-1"}}, {{0}}, {{0}}},
    {"layernorm_17_h", "LayerNormalization", 17, {{"x", H, "N,3,5", 0}, {"s", H, "3,5", 1}}, {{"axis", "1"}},
     {{0}}, {{0}}},
    {"groupnorm_18", "GroupNormalization", 18, {{"x", F, "N,4,5,5", 0}, {"s", F, "2", 1}, {"b", F, "2", 1}},
     {{"num_groups", "2"}}, {{0}}, {{0}}},
    {"mvn_9", "MeanVarianceNormalization", 9, {{"x", F, "N,3,4,4", 0}}, {{0}}, {{0}}, {{0}}},
    {"mvn_13", "MeanVarianceNormalization", 13, {{"x", F, "2,3,4", 0}}, {{"axes", "0"}}, {{0}}, {{0}}},
};

/* "1,8,N" into dims (symbols for names). Returns the rank. */
static int parse_dims(const char *s, carve_dim *d, int64_t *num, char names[][8])
{
    int r = 0;
    while (*s && r < CARVE_MAX_RANK) {
        size_t len = strcspn(s, ",");
        if (*s >= '0' && *s <= '9') {
            num[r] = strtoll(s, NULL, 10);
            d[r] = (carve_dim){num[r], NULL};
        } else {
            snprintf(names[r], 8, "%.*s", (int)len, s);
            num[r] = 2;
            d[r] = (carve_dim){-1, names[r]};
        }
        r++;
        s += len + (s[len] == ',');
    }
    return r;
}

/* The case's model, inferred and decomposed: its dump, or "error: <text>". */
static char *decompose_text(const dcase *c)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", c->opset);
    carve_value_id ins[5];
    size_t n_in = 0;
    for (; n_in < 5 && c->in[n_in].name; n_in++) {
        const din *d = &c->in[n_in];
        carve_dim dims[CARVE_MAX_RANK];
        int64_t num[CARVE_MAX_RANK];
        char names[CARVE_MAX_RANK][8];
        int r = parse_dims(d->dims, dims, num, names);
        if (d->constant) {
            size_t ne = 1, es = d->dtype == CARVE_FLOAT16 ? 2 : 4;
            for (int i = 0; i < r; i++)
                ne *= (size_t)num[i];
            uint8_t buf[256] = {0};
            for (size_t i = 0; i < ne; i++)
                if (es == 4)
                    memcpy(buf + i * 4, &(float){1.0f}, 4);
                else
                    memcpy(buf + i * 2, &(uint16_t){0x3c00}, 2);
            ins[n_in] = carve_graph_add_initializer(m, 0, d->name, d->dtype, r, num, buf, ne * es);
        } else {
            ins[n_in] = carve_graph_add_input(m, 0, d->name, d->dtype, r, dims);
        }
    }
    const char *outs[1] = {"y"};
    carve_node_id n = carve_graph_add_node(m, 0, c->op, "", "n", n_in, ins, 1, outs);
    carve_graph_add_output(m, 0, carve_node_output(m, n, 0));
    for (int i = 0; i < 3 && c->ints[i][0]; i++) {
        if (!strcmp(c->ints[i][0], "axes")) {
            int64_t v = strtoll(c->ints[i][1], NULL, 10);
            carve_node_set_attr_ints(m, n, "axes", 1, &v);
        } else {
            carve_node_set_attr_int(m, n, c->ints[i][0], strtoll(c->ints[i][1], NULL, 10));
        }
    }
    for (int i = 0; i < 2 && c->floats[i][0]; i++)
        carve_node_set_attr_float(m, n, c->floats[i][0], strtof(c->floats[i][1], NULL));
    if (c->strings[0][0])
        carve_node_set_attr_string(m, n, c->strings[0][0], c->strings[0][1]);
    char *text = NULL;
    carve_status s = cv_infer_model(m, NULL);
    if (!s)
        s = cv_decompose_node(m, n);
    if (s) {
        const char *e = carve_errmsg(ctx);
        text = malloc(strlen(e) + 9);
        if (text)
            sprintf(text, "error: %s\n", e);
    } else {
        char *d = carve_model_dump(m);
        size_t len = d ? strlen(d) + 1 : 0;
        text = d ? malloc(len) : NULL;
        if (text)
            memcpy(text, d, len);
        carve_free(d);
    }
    carve_model_free(m);
    carve_ctx_free(ctx);
    return text;
}

/* Every case's decomposition equals its golden. */
static void test_goldens(bool update)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const dcase *c = &cases[i];
        char path[512];
        snprintf(path, sizeof path, "%s/%s.txt", GOLDEN_DIR, c->name);
        char *got = decompose_text(c);
        OT_CHECK(got != NULL, "%s: no text", c->name);
        if (!got)
            continue;
        if (update) {
            FILE *f = fopen(path, "wb");
            OT_CHECK(f && fputs(got, f) >= 0, "%s: cannot write %s", c->name, path);
            if (f)
                fclose(f);
        } else {
            char *want = t_read_file(path, NULL);
            OT_CHECK(want != NULL, "%s: no golden %s (CARVE_UPDATE_GOLDENS=1 writes it)", c->name, path);
            if (want && strcmp(got, want)) {
                size_t k = 0;
                while (got[k] && got[k] == want[k])
                    k++;
                OT_CHECK(false, "%s: decomposition differs from %s at byte %zu:\n--- got from there:\n%.300s\n"
                                "--- golden from there:\n%.300s", c->name, path, k, got + k, want + k);
            }
            free(want);
        }
        free(got);
    }
}

/* The test can fail: a case whose golden is another case's does not match. */
static void test_detects_a_change(void)
{
    char *a = decompose_text(&cases[0]), *b = decompose_text(&cases[1]);
    OT_CHECK(a && b && strcmp(a, b), "two different decompositions gave the same text");
    free(a);
    free(b);
}

int main(void)
{
    const char *u = getenv("CARVE_UPDATE_GOLDENS");
    test_goldens(u && !strcmp(u, "1"));
    test_detects_a_change();
    return ot_finish();
}

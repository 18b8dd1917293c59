/* test_random_qdq.c: QDQ node units on random quantized models. Seeded
 * random DAGs of ops (Relu, Tanh, Sinh that htp lacks, Softmax and Gemm that
 * it keeps whole, Add, Mul) whose inputs are often DequantizeLinear outputs
 * (of activations or of int8 weights) and whose outputs are often
 * quantized (8-bit activations in half the models, 16-bit in the other
 * half), some quantized values read by several consumers. For each, on
 * htp with and without folding: the lowered model computes what the
 * original computes, and no unit is split: a DequantizeLinear whose only
 * reader is an op sits where that op sits, a QuantizeLinear that is the
 * only reader of an op's output sits where the op sits (on CPU with it when
 * the op was decomposed). Membership is computed here from the rule, not
 * with carve's code. */
#include "lowertest.h"

static uint64_t rs = 4242;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rs >> 33) % n);
}

/* Activations are quantized to uint8, or to uint16 when a16. */
static carve_model *random_qdq_model(carve_ctx *ctx, uint32_t n_nodes, uint32_t seed, bool a16)
{
    carve_model *m = lt_model(ctx, a16 ? 21 : 17); /* 16-bit QuantizeLinear since opset 21 */
    int64_t xd[2] = {4, 8}, wd[2] = {8, 8};
    carve_value_id pool[96];
    bool quantized[96] = {0};
    uint32_t np = 0;
    carve_value_id s = carve_graph_add_initializer(m, 0, "s", CARVE_FLOAT, 0, NULL, &(float){a16 ? 0.0002f : 0.03f}, 4);
    carve_value_id z = a16 ? carve_graph_add_initializer(m, 0, "z", CARVE_UINT16, 0, NULL, &(uint16_t){32768}, 2)
                           : carve_graph_add_initializer(m, 0, "z", CARVE_UINT8, 0, NULL, &(uint8_t){128}, 1);
    carve_value_id ws = carve_graph_add_initializer(m, 0, "ws", CARVE_FLOAT, 0, NULL, &(float){0.01f}, 4);
    int8_t w[64];
    for (int i = 0; i < 64; i++)
        w[i] = (int8_t)((int)((seed * 31u + (uint32_t)i * 17u) % 200u) - 100);
    carve_value_id wq = carve_graph_add_initializer(m, 0, "w_q", CARVE_INT8, 2, wd, w, sizeof w);
    pool[np++] = lt_input(m, "x", 2, xd);
    static const char *unary[] = {"Relu", "Tanh", "Sinh", "Softmax", "Sigmoid"};
    uint32_t k = 0;
    char nm[32], out[32];
    /* a DequantizeLinear of v (an activation's Q output or the weight) */
    #define DQ(v, sc, zp)                                                                                          \
        (snprintf(nm, sizeof nm, "dq%u", k), snprintf(out, sizeof out, "d%u", k++),                                \
         lt_op(m, "DequantizeLinear", nm, (zp) == CARVE_NONE ? 2 : 3, (carve_value_id[]){v, sc, zp}, out))
    for (uint32_t i = 0; i < n_nodes && np < 90; i++) {
        uint32_t ia = rnd(np), ib = rnd(np);
        carve_value_id a = pool[ia], b = pool[ib];
        /* quantized pool values are read through their own DQ */
        if (quantized[ia])
            a = DQ(a, s, z);
        if (quantized[ib])
            b = DQ(b, s, z);
        uint32_t pick = rnd(10);
        snprintf(nm, sizeof nm, "op%u", i), snprintf(out, sizeof out, "y%u", i);
        carve_value_id y;
        if (pick < 4) {
            y = lt_op(m, unary[rnd(5)], nm, 1, &a, out);
        } else if (pick < 7) {
            y = lt_op(m, pick == 4 ? "Add" : "Mul", nm, 2, (carve_value_id[]){a, b}, out);
        } else {
            char gn[32];
            snprintf(gn, sizeof gn, "%s", nm);
            carve_value_id wdq = DQ(wq, ws, CARVE_NONE);
            y = lt_op(m, "Gemm", gn, 2, (carve_value_id[]){a, wdq}, (snprintf(out, sizeof out, "y%u", i), out));
        }
        if (rnd(3)) { /* quantize the output; later readers dequantize it */
            snprintf(nm, sizeof nm, "q%u", i), snprintf(out, sizeof out, "yq%u", i);
            y = lt_op(m, "QuantizeLinear", nm, 3, (carve_value_id[]){y, s, z}, out);
            quantized[np] = true;
        }
        pool[np++] = y;
    }
    #undef DQ
    for (uint32_t i = np > 3 ? np - 3 : 1; i < np; i++) {
        carve_value_id v = pool[i];
        if (quantized[i]) {
            snprintf(nm, sizeof nm, "dq_out%u", i), snprintf(out, sizeof out, "out%u", i);
            v = lt_op(m, "DequantizeLinear", nm, 3, (carve_value_id[]){v, s, z}, out);
        }
        carve_graph_add_output(m, 0, v);
    }
    return m;
}

/* The report's placement of a node, "cpu" for decomposed ones (their
 * pieces stay on CPU here: they read dequantized values). */
static const char *where(const cJSON *r, const char *name, char *buf)
{
    const char *p = lt_place(r, name, buf);
    return !strcmp(p, "decomposed") ? "cpu" : p;
}

/* Checks that no unit of m (the input model) is split in report r. */
static void units_whole(const carve_model *m, const cJSON *r, uint32_t t, int fold)
{
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; i < g->nodes.n; i++) {
        const cv_node *n = &m->nodes[g->nodes.v[i]];
        bool dq = !strcmp(n->op, "DequantizeLinear"), q = !strcmp(n->op, "QuantizeLinear");
        if (!dq && !q)
            continue;
        /* the partner: a DQ's only reader, a Q's producer whose only reader it is */
        carve_value_id v = dq ? n->out[0] : n->in[0];
        uint32_t readers = 0;
        carve_node_id reader = CARVE_NONE;
        for (uint32_t j = 0; j < g->nodes.n; j++) {
            const cv_node *o = &m->nodes[g->nodes.v[j]];
            for (uint32_t x = 0; x < o->n_in; x++)
                if (o->in[x] == v)
                    readers++, reader = g->nodes.v[j];
        }
        for (uint32_t x = 0; x < g->outputs.n; x++)
            readers += g->outputs.v[x] == v;
        carve_node_id partner = CARVE_NONE;
        if (dq && readers == 1 && reader != CARVE_NONE && strcmp(m->nodes[reader].op, "DequantizeLinear"))
            partner = reader;
        if (q && readers == 1 && m->values[v].producer != CARVE_NONE &&
            strcmp(m->nodes[m->values[v].producer].op, "QuantizeLinear") &&
            strcmp(m->nodes[m->values[v].producer].op, "DequantizeLinear"))
            partner = m->values[v].producer;
        if (partner == CARVE_NONE)
            continue;
        char b1[16], b2[16];
        const char *pn = where(r, n->name, b1), *pp = where(r, m->nodes[partner].name, b2);
        if (!strcmp(pn, "folded") || !strcmp(pp, "folded") || !strcmp(pn, "removed") || !strcmp(pp, "removed"))
            continue;
        OT_CHECK(!strcmp(pn, pp), "model %u (fold %d): %s '%s' sits at %s, its unit's '%s' (%s) at %s", t, fold, n->op,
                 n->name, pn, m->nodes[partner].name, m->nodes[partner].op, pp);
    }
}

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    int64_t xd[2] = {4, 8};
    uint32_t models = 0, delegated_units = 0, enc16 = 0;
    for (uint32_t t = 0; t < 40; t++) {
        bool a16 = t % 2;
        carve_model *m = random_qdq_model(ctx, 4 + rnd(16), 300 + t, a16);
        cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, t, -1, 1)};
        for (int fold = 0; fold < 2; fold++) {
            carve_lower_opts o = {.no_fold = !fold};
            cJSON *r = NULL;
            lt_result res = lt_lower_run(m, "htp", &o, inputs, 1e-5, 0, &r);
            OT_CHECK(res == LT_EQUAL, "random QDQ model %u (fold %d): lowered model differs or fails (%d)", t, fold,
                     res);
            if (r) {
                units_whole(m, r, t, fold);
                const cJSON *p;
                cJSON_ArrayForEach(p, cJSON_GetObjectItem(r, "partitions"))
                {
                    const cJSON *enc = cJSON_GetObjectItem(p, "encodings"), *e;
                    delegated_units += enc != NULL;
                    cJSON_ArrayForEach(e, enc)
                    {
                        if (!strcmp(e->string, "w_q") || strstr(e->string, "/w_q"))
                            continue; /* the int8 weight */
                        const cJSON *dt = cJSON_GetObjectItem(e, "dtype"), *bits = cJSON_GetObjectItem(e, "bits");
                        bool ok = cJSON_IsString(dt) && !strcmp(dt->valuestring, a16 ? "uint16" : "uint8") &&
                                  cJSON_IsNumber(bits) && bits->valueint == (a16 ? 16 : 8);
                        OT_CHECK(ok, "model %u (fold %d): activation '%s' encoded as %s with %d bits", t, fold,
                                 e->string, cJSON_IsString(dt) ? dt->valuestring : "?",
                                 cJSON_IsNumber(bits) ? bits->valueint : -1);
                        enc16 += a16 && ok;
                    }
                }
                cJSON_Delete(r);
            }
        }
        cv_val_unref(inputs[0]);
        carve_model_free(m);
        models++;
    }
    OT_CHECK(models == 40 && delegated_units >= 40, "ran %u random QDQ models, %u Delegates with encodings", models,
             delegated_units);
    OT_CHECK(enc16 >= 20, "16-bit activations encoded in the uint16 models: %u", enc16);
    carve_ctx_free(ctx);
    return ot_finish();
}

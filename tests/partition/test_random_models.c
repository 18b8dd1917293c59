/* test_random_models.c: lowering properties on random models: seeded random
 * DAGs of element-wise ops, Gemms on constant weights, LayerNormalization,
 * Softmax, HardSwish and ops htp lacks (Sinh), some branches on constants
 * only. For each, on htp and gpu, with and without folding: the lowered
 * model verifies and re-imports, no op left on CPU is missing from the core
 * CPU profile, and it computes what the original computes. */
#include "lowertest.h"

static uint64_t rs = 99;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rs >> 33) % n);
}

static carve_model *random_model(carve_ctx *ctx, uint32_t n_nodes, uint32_t seed)
{
    carve_model *m = lt_model(ctx, 17);
    int64_t xd[2] = {4, 8}, wd[2] = {8, 8}, bd[1] = {8};
    carve_value_id vals[64];
    uint32_t nv = 0;
    vals[nv++] = lt_input(m, "x", 2, xd);
    vals[nv++] = lt_weight(m, "c0", 2, xd, seed); /* a constant branch starts here */
    carve_value_id W = lt_weight(m, "W", 2, wd, seed + 1), B = lt_weight(m, "B", 1, bd, seed + 2);
    carve_value_id G = lt_weight(m, "G", 1, bd, seed + 3);
    static const char *unary[] = {"Relu", "Tanh", "Sinh", "Softmax", "HardSwish", "Sigmoid"};
    for (uint32_t k = 0; k < n_nodes && nv < 64; k++) {
        char out[16];
        snprintf(out, sizeof out, "v%u", k);
        carve_value_id a = vals[rnd(nv)], b = vals[rnd(nv)];
        uint32_t pick = rnd(10);
        carve_value_id y;
        if (pick < 4) {
            y = lt_op(m, unary[rnd(6)], NULL, 1, &a, out);
        } else if (pick < 7) {
            y = lt_op(m, pick == 4 ? "Add" : pick == 5 ? "Mul" : "Sub", NULL, 2, (carve_value_id[]){a, b}, out);
        } else if (pick < 9) {
            y = lt_op(m, "Gemm", NULL, 3, (carve_value_id[]){a, W, B}, out);
        } else {
            y = lt_op(m, "LayerNormalization", NULL, 3, (carve_value_id[]){a, G, B}, out);
        }
        vals[nv++] = y;
    }
    /* the last values are outputs (at least one) */
    for (uint32_t k = nv > 3 ? nv - 3 : 0; k < nv; k++)
        if (carve_value_producer(m, vals[k]) != CARVE_NONE)
            carve_graph_add_output(m, 0, vals[k]);
    return m;
}

int main(void)
{
    carve_ctx *ctx = carve_ctx_new();
    int64_t xd[2] = {4, 8};
    uint32_t models = 0;
    for (uint32_t t = 0; t < 40; t++) {
        carve_model *m = random_model(ctx, 6 + rnd(20), 100 + t);
        if (carve_graph_output_count(m, 0) == 0) {
            carve_model_free(m);
            continue;
        }
        cv_val *inputs[1] = {ot_random(CARVE_FLOAT, 2, xd, t, -1, 1)};
        for (int fold = 0; fold < 2; fold++)
            for (int target = 0; target < 2; target++) {
                carve_lower_opts o = {.no_fold = !fold};
                const char *tn = target ? "gpu" : "htp";
                lt_result r = lt_lower_run(m, tn, &o, inputs, 1e-4, 1e-3, NULL);
                OT_CHECK(r == LT_EQUAL, "random model %u on %s (fold %d): lowered model differs or fails (%d)", t, tn,
                         fold, r);
            }
        cv_val_unref(inputs[0]);
        carve_model_free(m);
        models++;
    }
    OT_CHECK(models >= 30, "ran %u random models", models);
    carve_ctx_free(ctx);
    return ot_finish();
}

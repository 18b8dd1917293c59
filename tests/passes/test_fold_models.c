/* test_fold_models.c: every real model fetched by scripts/fetch-models.sh
 * gives the same outputs before and after folding, on seeded inputs (and
 * after the folded model's trip through ONNX bytes). A missing cache fails:
 * run scripts/fetch-models.sh.
 *   test_fold_models            every model but the heavy ones
 *   test_fold_models WORD...    the models whose path holds a WORD (heavy ones
 *                               too: CTest runs the two background-removal
 *                               models so, in builds with CARVE_HEAVY_TESTS) */
#include "foldtest.h"

#include <unistd.h>

#ifndef CARVE_MODEL_CACHE
#define CARVE_MODEL_CACHE ""
#endif

/* A model and its inputs: "name:d0,d1,..." fixes the dims of a float input
 * the model leaves open; "name=v" is an int64 scalar (silero's sample rate). */
typedef struct {
    const char *path;
    bool heavy;
    const char *in[4];
} rmodel;

#define OCR "ocr-models-1.4.2/package/assets/"
#define SILERO "silero-vad-1.0.3/package/weights/"
#define OWW "openwakeword-0.1.1/package/models/"
#define IMGLY "background-removal-1.4.5/models/"

static const rmodel models[] = {
    {OCR "ch_PP-OCRv4_det_infer.onnx", false, {"x:1,3,64,64"}},
    {OCR "ch_PP-OCRv4_rec_infer.onnx", false, {"x:1,3,48,64"}},
    {OCR "ch_ppocr_mobile_v2.0_cls_infer.onnx", false, {"x:1,3,48,96"}},
    {SILERO "silero_vad.onnx", false, {"input:1,512", "state:2,1,128", "sr=16000"}},
    {SILERO "silero_vad.onnx", false, {"input:1,256", "state:2,1,128", "sr=8000"}},
    {SILERO "silero_vad_16k_op15.onnx", false, {"input:1,512", "state:2,1,128", "sr=16000"}},
    {SILERO "silero_vad_half.onnx", false, {"input:1,512", "state:2,1,128"}},
    {SILERO "silero_vad_op18_ifless.onnx", false, {"input:1,512", "state:2,1,128", "sr=16000"}},
    {OWW "alexa_v0.1.onnx", false, {NULL}},
    {OWW "embedding_model.onnx", false, {"input_1:1,76,32,1"}},
    {OWW "hey_jarvis_v0.1.onnx", false, {NULL}},
    {OWW "hey_mycroft_v0.1.onnx", false, {NULL}},
    {OWW "hey_rhasspy_v0.1.onnx", false, {NULL}},
    {OWW "melspectrogram.onnx", false, {"input:1,1280"}},
    {OWW "silero_vad.onnx", false, {"input:1,512", "h:2,1,64", "c:2,1,64", "sr=16000"}},
    {OWW "timer_v0.1.onnx", false, {NULL}},
    {OWW "weather_v0.1.onnx", false, {NULL}},
    {IMGLY "small.onnx", true, {NULL}},
    {IMGLY "medium.onnx", true, {NULL}},
};

/* The value of main-graph input v for model r, NULL when it cannot be made. */
static cv_val *make_input(const carve_model *m, carve_value_id v, const rmodel *r, uint32_t seed)
{
    const char *name = carve_value_name(m, v);
    size_t len = strlen(name);
    int rank = carve_value_rank(m, v);
    int64_t dims[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = carve_value_dim(m, v, i).value;
    for (int k = 0; k < 4 && r->in[k]; k++) {
        const char *s = r->in[k];
        if (strncmp(s, name, len) || (s[len] != ':' && s[len] != '='))
            continue;
        if (s[len] == '=') {
            cv_val *x = cv_val_scalar_i64(strtoll(s + len + 1, NULL, 10));
            return x;
        }
        rank = 0;
        for (const char *p = s + len + 1; *p && rank < CARVE_MAX_RANK; rank++) {
            char *e;
            dims[rank] = strtoll(p, &e, 10);
            p = *e ? e + 1 : e;
        }
    }
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return NULL;
    carve_dtype dt = carve_value_dtype(m, v);
    return rank < 0 ? NULL : ot_random(dt, rank, dims, seed, -1, 1);
}

static void check_model(const rmodel *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", CARVE_MODEL_CACHE, r->path);
    if (access(path, R_OK)) {
        OT_CHECK(false, "%s is missing: run scripts/fetch-models.sh (it fills $CARVE_MODEL_CACHE, default "
                        "$HOME/.cache/carve-models; configure with -DCARVE_MODEL_CACHE=... if yours is elsewhere)",
                 path);
        return;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    if (carve_model_load_file(ctx, path, NULL, &m) != CARVE_OK) {
        OT_CHECK(false, "%s: load: %s", r->path, carve_errmsg(ctx));
        carve_ctx_free(ctx);
        return;
    }
    size_t n_in = carve_graph_input_count(m, 0);
    cv_val **in = calloc(n_in + 1, sizeof *in);
    bool ok = true;
    for (size_t i = 0; i < n_in; i++) {
        in[i] = make_input(m, carve_graph_input(m, 0, i), r, 7 + (uint32_t)i);
        OT_CHECK(in[i] != NULL, "%s: no value for input '%s'", r->path, carve_value_name(m, carve_graph_input(m, 0, i)));
        ok = ok && in[i];
    }
    carve_fold_stats st;
    if (ok && !ft_fold_check(m, in, NULL, 1e-4, 1e-3, &st, r->path)) {
        printf("ok   %s (%s): %u -> %u nodes, %u folded, %u removed; %u If inlined, %u BatchNormalization and %u "
               "Gemm fused; refused:",
               r->path, r->in[0] ? r->in[0] : "", st.nodes_before, st.nodes_after, st.folded, st.removed,
               st.if_inlined, st.bn_fused, st.gemm_fused);
        for (int g = 0; g < CARVE_GUARD_COUNT; g++)
            if (st.refused[g])
                printf(" %u %s", st.refused[g], carve_fold_guard_name((carve_fold_guard)g));
        printf("\n");
        OT_CHECK(st.nodes_after <= st.nodes_before, "%s: folding never adds nodes", r->path);
    }
    for (size_t i = 0; i < n_in; i++)
        cv_val_unref(in[i]);
    free(in);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        bool only = argc < 2;
        for (int k = 1; k < argc; k++)
            only = only || strstr(models[i].path, argv[k]);
        if (only && (!models[i].heavy || argc > 1))
            check_model(&models[i]);
    }
    return ot_finish();
}

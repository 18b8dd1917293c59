/* dntest.c: see dntest.h. */
#include "dntest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

static float urand(unsigned *s, float lo, float hi)
{
    *s = *s * 1103515245u + 12345u;
    return lo + (hi - lo) * (float)((*s >> 8) & 0xffffff) / (float)0x1000000;
}

void dt_init(dt *t, int64_t opset, unsigned seed)
{
    memset(t, 0, sizeof *t);
    t->ctx = carve_ctx_new();
    t->m = carve_model_new(t->ctx);
    carve_model_set_opset(t->m, "", opset);
    t->g = carve_model_main_graph(t->m);
    t->seed = seed;
}

void dt_free(dt *t)
{
    for (int i = 0; i < t->n_in; i++)
        carve_tensor_free(t->in[i]);
    carve_model_free(t->m);
    carve_ctx_free(t->ctx);
}

carve_value_id dt_input(dt *t, const char *name, int rank, const int64_t *dims, float lo, float hi)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = (carve_dim){dims[i], NULL};
    carve_tensor *x = carve_tensor_new(CARVE_FLOAT, rank, dims);
    float *p = carve_tensor_data(x, NULL);
    for (size_t i = 0; i < carve_tensor_count(x); i++)
        p[i] = urand(&t->seed, lo, hi);
    t->in[t->n_in++] = x;
    return carve_graph_add_input(t->m, t->g, name, CARVE_FLOAT, rank, d);
}

carve_value_id dt_const_data(dt *t, const char *name, carve_dtype dtype, int rank, const int64_t *dims,
                             const void *data, size_t nbytes)
{
    char auto_name[32];
    if (!name) {
        snprintf(auto_name, sizeof auto_name, "c%d", t->n_names++);
        name = auto_name;
    }
    return carve_graph_add_initializer(t->m, t->g, name, dtype, rank, dims, data, nbytes);
}

carve_value_id dt_const(dt *t, const char *name, int rank, const int64_t *dims, float lo, float hi)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = urand(&t->seed, lo, hi);
    carve_value_id v = dt_const_data(t, name, CARVE_FLOAT, rank, dims, p, n * sizeof *p);
    free(p);
    return v;
}

carve_value_id dt_const_i64(dt *t, const char *name, size_t n, const int64_t *v)
{
    int64_t d = (int64_t)n;
    return dt_const_data(t, name, CARVE_INT64, 1, &d, v, n * 8);
}

carve_value_id dt_const_f32(dt *t, const char *name, size_t n, const float *v)
{
    int64_t d = (int64_t)n;
    return dt_const_data(t, name, CARVE_FLOAT, 1, &d, v, n * 4);
}

carve_node_id dt_node(dt *t, const char *op, size_t n_in, const carve_value_id *ins, size_t n_out)
{
    char names[4][32];
    const char *outs[4];
    for (size_t i = 0; i < n_out && i < 4; i++) {
        snprintf(names[i], sizeof names[i], "v%d", t->n_names++);
        outs[i] = names[i];
    }
    return carve_graph_add_node(t->m, t->g, op, "", NULL, n_in, ins, n_out, outs);
}

carve_value_id dt_op1(dt *t, const char *op, carve_value_id x)
{
    return carve_node_output(t->m, dt_node(t, op, 1, &x, 1), 0);
}

carve_value_id dt_op2(dt *t, const char *op, carve_value_id a, carve_value_id b)
{
    carve_value_id in[2] = {a, b};
    return carve_node_output(t->m, dt_node(t, op, 2, in, 1), 0);
}

void dt_output(dt *t, carve_value_id v) { carve_graph_add_output(t->m, t->g, v); }

bool dt_finish(dt *t)
{
    carve_status s = cv_infer_model(t->m, NULL);
    return t_check(s == CARVE_OK, __FILE__, __LINE__, "inference: %s", carve_errmsg(t->ctx));
}

carve_value_id dt_input_int(dt *t, const char *name, carve_dtype dtype, int rank, const int64_t *dims, int lo, int hi,
                            bool extreme)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = (carve_dim){dims[i], NULL};
    carve_tensor *x = carve_tensor_new(dtype, rank, dims);
    for (size_t i = 0; i < carve_tensor_count(x); i++) {
        float u = urand(&t->seed, 0, 1);
        int v = extreme ? (u < 0.5f ? lo : hi) : lo + (int)(u * (float)(hi - lo + 1));
        carve_tensor_set(x, i, v > hi ? hi : v);
    }
    t->in[t->n_in++] = x;
    return carve_graph_add_input(t->m, t->g, name, dtype, rank, d);
}

bool dt_check_run(dt *t, dt_tol tol, const char *file, int line)
{
    carve_tensor *want[32] = {0}, *got[32] = {0};
    size_t n_out = carve_graph_output_count(t->m, t->g);
    bool ok = dt_run(t, want, got, file, line);
    for (size_t o = 0; ok && o < n_out; o++) {
        ok = t_check(carve_tensor_rank(got[o]) == carve_tensor_rank(want[o]) &&
                         carve_tensor_count(got[o]) == carve_tensor_count(want[o]),
                     file, line, "output %zu: rank/count differ", o);
        for (int d = 0; ok && d < carve_tensor_rank(got[o]); d++)
            ok = t_check(carve_tensor_dims(got[o])[d] == carve_tensor_dims(want[o])[d], file, line,
                         "output %zu dim %d: %lld vs %lld", o, d, (long long)carve_tensor_dims(got[o])[d],
                         (long long)carve_tensor_dims(want[o])[d]);
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; ok && i < carve_tensor_count(got[o]); i++) {
            double a = carve_tensor_get(got[o], i), w = carve_tensor_get(want[o], i);
            double excess = fabs(a - w) - (tol.atol + tol.rtol * fabs(w));
            if (isnan(a) != isnan(w) || excess > worst) {
                worst = isnan(a) != isnan(w) ? INFINITY : excess;
                at = i;
            }
        }
        if (ok && worst > 0)
            ok = t_check(false, file, line, "output %zu element %zu: onednn %.8g, reference %.8g (atol %g rtol %g)",
                         o, at, carve_tensor_get(got[o], at), carve_tensor_get(want[o], at), tol.atol, tol.rtol);
    }
    for (size_t o = 0; o < n_out; o++) {
        carve_tensor_free(want[o]);
        carve_tensor_free(got[o]);
    }
    return ok;
}

carve_status dt_compile(dt *t, const char *name, void **h, carve_backend_refusal **ref)
{
    const carve_backend *be = cv_onednn_backend();
    carve_backend_partition p = {t->m, t->g, NULL, "onednn", name, NULL};
    *h = NULL;
    *ref = calloc(1, sizeof **ref);
    return *ref ? be->compile(be->user, &p, h, *ref) : CARVE_ERR_NOMEM;
}

bool dt_run(dt *t, carve_tensor **want, carve_tensor **got, const char *file, int line)
{
    const carve_backend *be = cv_onednn_backend();
    char msg[512];
    bool ok = true;
    for (size_t i = 0; i < carve_graph_node_count(t->m, t->g); i++) {
        carve_node_id n = carve_graph_node(t->m, t->g, i);
        const char *why = be->supports_node(be->user, t->m, n, msg, sizeof msg);
        ok &= t_check(why == NULL, file, line, "node %s (%s) refused: %s: %s", carve_node_name(t->m, n),
                      carve_node_op(t->m, n), why ? why : "", why ? msg : "");
    }
    if (!ok)
        return false;
    size_t n_out = carve_graph_output_count(t->m, t->g);
    if (!t_check(n_out <= 32, file, line, "at most 32 outputs"))
        return false;
    if (!t_check(carve_model_run(t->m, t->in, want) == CARVE_OK, file, line, "reference run: %s",
                 carve_errmsg(t->ctx)))
        return false;
    void *h;
    carve_backend_refusal *r;
    carve_status s = dt_compile(t, "test", &h, &r);
    ok = t_check(s == CARVE_OK, file, line, "compile: %s: %s", carve_status_name(s), r ? r->message : "");
    free(r);
    if (ok) {
        s = be->run(be->user, h, t->in, (size_t)t->n_in, got, n_out, msg, sizeof msg);
        ok = t_check(s == CARVE_OK, file, line, "run: %s", msg);
    }
    if (h)
        be->release(be->user, h);
    return ok;
}

bool dt_check_refused(dt *t, carve_node_id n, const char *code, const char *text, const char *file, int line)
{
    const carve_backend *be = cv_onednn_backend();
    char msg[512] = "";
    const char *why = be->supports_node(be->user, t->m, n, msg, sizeof msg);
    if (!t_check(why != NULL, file, line, "node %s (%s) was accepted, expected %s", carve_node_name(t->m, n),
                 carve_node_op(t->m, n), code))
        return false;
    bool ok = t_check(!strcmp(why, code), file, line, "reason %s, expected %s (%s)", why, code, msg);
    return ok && t_check(strstr(msg, text) != NULL, file, line, "message '%s' lacks '%s'", msg, text);
}

carve_node_id dt_resize(dt *t, carve_value_id x, const char *mode, const char *ct, const char *nm, float s)
{
    float sc[4] = {1, 1, s, s};
    carve_value_id scales = dt_const_f32(t, NULL, 4, sc);
    carve_node_id n = dt_node(t, "Resize", 3, IDS(x, CARVE_NONE, scales), 1);
    carve_node_set_attr_string(t->m, n, "mode", mode);
    if (ct)
        carve_node_set_attr_string(t->m, n, "coordinate_transformation_mode", ct);
    if (nm)
        carve_node_set_attr_string(t->m, n, "nearest_mode", nm);
    return n;
}

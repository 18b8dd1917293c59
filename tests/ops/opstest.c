/* opstest.c: helpers shared by the op tests. */
#include "opstest.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static int passed, failed;

void ot_check(bool ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stdout, "FAIL %s:%d: ", file, line);
    vfprintf(stdout, fmt, ap);
    fprintf(stdout, "\n");
    va_end(ap);
}

int ot_finish(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

cv_val *ot_random(carve_dtype dtype, int rank, const int64_t *dims, uint32_t seed, double lo, double hi)
{
    cv_val *v = cv_val_new(dtype, rank, dims);
    uint64_t s = seed * 2654435761u + 1;
    for (size_t i = 0; v && i < v->nelem; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;
        double x = lo + (hi - lo) * u;
        if (cv_dtype_is_float(dtype))
            cv_val_set_f64(v, i, x);
        else
            cv_val_set_i64(v, i, (int64_t)floor(x));
    }
    return v;
}

bool ot_close(const cv_val *a, const cv_val *b, double atol, double rtol, char *why, size_t whysz)
{
    if (a->dtype != b->dtype || a->rank != b->rank) {
        snprintf(why, whysz, "dtype/rank %s/%d vs %s/%d", carve_dtype_name(a->dtype), a->rank,
                 carve_dtype_name(b->dtype), b->rank);
        return false;
    }
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) {
            snprintf(why, whysz, "dim %d: %lld vs %lld", i, (long long)a->dims[i], (long long)b->dims[i]);
            return false;
        }
    for (size_t i = 0; i < a->nelem; i++) {
        double x = cv_val_get_f64(a, i), y = cv_val_get_f64(b, i);
        if (isnan(x) && isnan(y))
            continue;
        if (!(fabs(x - y) <= atol + rtol * fabs(y))) {
            snprintf(why, whysz, "element %zu: %.9g vs %.9g", i, x, y);
            return false;
        }
    }
    return true;
}

uint32_t ot_count_op(const carve_model *m, carve_graph_id g, const char *op)
{
    uint32_t k = 0;
    for (size_t i = 0; i < carve_graph_node_count(m, g); i++)
        k += !strcmp(carve_node_op(m, carve_graph_node(m, g, i)), op);
    return k;
}

carve_model *ot_clone(carve_model *m)
{
    void *bytes = NULL;
    size_t n = 0;
    carve_model *c = NULL;
    if (carve_model_save_memory(m, &bytes, &n) == CARVE_OK)
        carve_model_load_memory(carve_model_ctx(m), bytes, n, NULL, &c);
    carve_free(bytes);
    return c;
}

void ot_check_outputs(cv_val **got, cv_val **want, uint32_t n, double atol, double rtol, const char *what,
                      const char *how)
{
    for (uint32_t i = 0; i < n; i++) {
        char why[300] = "";
        OT_CHECK(got[i] && want[i] && ot_close(got[i], want[i], atol, rtol, why, sizeof why), "%s: output %u %s: %s",
                 what, i, how, why);
    }
}

carve_status ot_run(carve_model *m, cv_val **inputs, cv_val **outputs)
{
    cv_interp ip;
    carve_status s = cv_interp_init(&ip, m);
    if (!s)
        s = cv_interp_run(&ip, 0, inputs, outputs);
    cv_interp_free(&ip);
    return s;
}

void ot_check_decomposition(carve_model *m, carve_node_id n, cv_val **inputs, double atol, double rtol)
{
    carve_ctx *ctx = carve_model_ctx(m);
    const char *name = carve_node_name(m, n);
    const char *op = carve_node_op(m, n);
    uint32_t n_out = (uint32_t)carve_graph_output_count(m, 0);
    cv_val *before[8] = {0}, *after[8] = {0};
    carve_status s = cv_infer_model(m, NULL);
    OT_CHECK(s == CARVE_OK, "%s: inference before: %s", op, carve_errmsg(ctx));
    s = ot_run(m, inputs, before);
    OT_CHECK(s == CARVE_OK, "%s: run before decomposition: %s", op, carve_errmsg(ctx));
    uint32_t nodes_before = (uint32_t)carve_graph_node_count(m, 0);
    size_t total_before = m->n_nodes;
    s = cv_decompose_node(m, n);
    OT_CHECK(s == CARVE_OK, "%s: decompose: %s", op, carve_errmsg(ctx));
    if (s)
        goto out;
    s = carve_model_verify(m);
    OT_CHECK(s == CARVE_OK, "%s: verify after decomposition: %s", op, carve_errmsg(ctx));
    OT_CHECK(carve_graph_node_count(m, 0) >= nodes_before, "%s: decomposition left fewer nodes", op);
    size_t prefix = strlen(name);
    for (size_t i = total_before; i < m->n_nodes; i++) {
        if (m->nodes[i].dead)
            continue;
        OT_CHECK(!strncmp(m->nodes[i].name, name, prefix) && m->nodes[i].name[prefix] == '/',
                 "%s: piece '%s' is not named from '%s'", op, m->nodes[i].name, name);
        const cv_op_def *d = cv_op_for_node(m, (carve_node_id)i);
        OT_CHECK(d && (d->flags & CV_OP_CORE), "%s: piece '%s' is %s, not a core op at opset %lld", op,
                 m->nodes[i].name, m->nodes[i].op, (long long)carve_model_opset(m, ""));
        int64_t b = 0;
        OT_CHECK(carve_model_opset(m, "") >= 7 || m->nodes[i].n_in != 2 || !strcmp(m->nodes[i].op, "MatMul") ||
                     (carve_node_attr_int(m, (carve_node_id)i, "broadcast", &b) && b == 1),
                 "%s: binary piece '%s' (%s) before opset 7 without broadcast=1", op, m->nodes[i].name,
                 m->nodes[i].op);
    }
    s = cv_infer_model(m, NULL);
    OT_CHECK(s == CARVE_OK, "%s: inference after: %s", op, carve_errmsg(ctx));
    for (size_t i = total_before; i < m->n_nodes; i++) {
        if (m->nodes[i].dead)
            continue;
        for (uint32_t j = 0; j < m->nodes[i].n_out; j++) {
            carve_value_id v = m->nodes[i].out[j];
            OT_CHECK(v == CARVE_NONE || (m->values[v].type.kind == CARVE_TYPE_TENSOR && m->values[v].type.dtype &&
                                         m->values[v].type.rank >= 0),
                     "%s: piece '%s' output %u has no known type and rank", op, m->nodes[i].name, j);
        }
    }
    s = ot_run(m, inputs, after);
    OT_CHECK(s == CARVE_OK, "%s: run after decomposition: %s", op, carve_errmsg(ctx));
    if (!s)
        ot_check_outputs(after, before, n_out, atol, rtol, op, "differs after decomposition");
out:
    for (uint32_t i = 0; i < 8; i++) {
        cv_val_unref(before[i]);
        cv_val_unref(after[i]);
    }
}

/* run.c: the public run API: tensors and carve_model_run with input checks
 * (dtype, rank, static dims, consistent binding of symbolic dims). */
#include "runtime.h"
#include "../ops/blas.h"

#include <string.h>

carve_tensor *carve_tensor_new(carve_dtype dtype, int rank, const int64_t *dims)
{
    return cv_dtype_valid(dtype) ? cv_val_new(dtype, rank, dims) : NULL;
}

carve_status carve_tensor_create(carve_ctx *ctx, carve_dtype dtype, int rank, const int64_t *dims, carve_tensor **out)
{
    *out = NULL;
    if (!cv_dtype_valid(dtype))
        return cv_error(ctx, CARVE_ERR_ARG, "tensor: %d is not an element type (carve_dtype)", (int)dtype);
    if (rank < 0 || rank > CARVE_MAX_RANK)
        return cv_error(ctx, CARVE_ERR_ARG, "tensor: rank %d is outside 0..%d", rank, CARVE_MAX_RANK);
    if (rank > 0 && !dims)
        return cv_error(ctx, CARVE_ERR_ARG, "tensor: rank %d without dims", rank);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return cv_error(ctx, CARVE_ERR_ARG, "tensor: dim %d is %lld; dims are 0 or more", i, (long long)dims[i]);
    *out = cv_val_new(dtype, rank, dims);
    if (!*out)
        return cv_error(ctx, CARVE_ERR_NOMEM, "tensor: %s of rank %d is over 16 GiB, or out of memory",
                        carve_dtype_name(dtype), rank);
    return CARVE_OK;
}
void carve_tensor_free(carve_tensor *t) { cv_val_unref(t); }
carve_dtype carve_tensor_dtype(const carve_tensor *t) { return t->dtype; }
int carve_tensor_rank(const carve_tensor *t) { return t->rank; }
const int64_t *carve_tensor_dims(const carve_tensor *t) { return t->dims; }

void *carve_tensor_data(carve_tensor *t, size_t *nbytes)
{
    if (nbytes)
        *nbytes = t->nbytes;
    return t->dtype == CARVE_STRING ? NULL : t->data;
}

size_t carve_tensor_count(const carve_tensor *t) { return t->nelem; }
double carve_tensor_get(const carve_tensor *t, size_t i) { return cv_val_get_f64(t, i); }
void carve_tensor_set(carve_tensor *t, size_t i, double x) { cv_val_set_f64(t, i, x); }

carve_status carve_tensor_read(carve_ctx *ctx, const char *path, carve_tensor **out)
{
    return cv_val_read_file(ctx, path, CV_PB_TENSOR, out);
}

carve_status carve_tensor_write(carve_ctx *ctx, const carve_tensor *t, const char *path)
{
    return cv_val_write_file(ctx, t, path);
}

typedef struct {
    const char *param;
    int64_t value;
    const char *by; /* input that bound it */
} binding;

static carve_status check_input(carve_model *m, carve_value_id v, const cv_val *x, binding *b, uint32_t *nb)
{
    const cv_value *val = &m->values[v];
    const cv_type *t = &val->type;
    if (t->kind != CARVE_TYPE_TENSOR)
        return CARVE_OK;
    if (x->kind != CV_VAL_TENSOR)
        return cv_error(m->ctx, CARVE_ERR_ARG, "input '%s': expected a tensor", val->name);
    if (t->dtype && t->dtype != x->dtype)
        return cv_error(m->ctx, CARVE_ERR_ARG, "input '%s': got %s, the model expects %s", val->name,
                        carve_dtype_name(x->dtype), carve_dtype_name(t->dtype));
    if (t->rank < 0)
        return CARVE_OK;
    if (t->rank != x->rank)
        return cv_error(m->ctx, CARVE_ERR_ARG, "input '%s': got rank %d, the model expects rank %d", val->name,
                        x->rank, t->rank);
    for (int i = 0; i < t->rank; i++) {
        const carve_dim *d = &t->dims[i];
        if (d->value >= 0 && d->value != x->dims[i])
            return cv_error(m->ctx, CARVE_ERR_ARG, "input '%s': dim %d is %lld, the model expects %lld", val->name,
                            i, (long long)x->dims[i], (long long)d->value);
        if (!d->param)
            continue;
        uint32_t k = 0;
        while (k < *nb && strcmp(b[k].param, d->param))
            k++;
        if (k < *nb) {
            if (b[k].value != x->dims[i])
                return cv_error(m->ctx, CARVE_ERR_ARG,
                                "input '%s': dim %d (%s) is %lld but input '%s' bound %s to %lld", val->name, i,
                                d->param, (long long)x->dims[i], b[k].by, d->param, (long long)b[k].value);
        } else if (*nb < 64) {
            b[(*nb)++] = (binding){d->param, x->dims[i], val->name};
        }
    }
    return CARVE_OK;
}

carve_status carve_model_run(carve_model *m, carve_tensor *const *inputs, carve_tensor **outputs)
{
    return carve_model_run_target(m, NULL, inputs, outputs);
}

carve_status carve_model_run_target(carve_model *m, const carve_target *t, carve_tensor *const *inputs,
                                    carve_tensor **outputs)
{
    return carve_model_run_traced(m, t, inputs, outputs, NULL, NULL);
}

carve_status carve_model_run_traced(carve_model *m, const carve_target *t, carve_tensor *const *inputs,
                                    carve_tensor **outputs, carve_value_fn fn, void *user)
{
    cv_graph *g = &m->graphs[0];
    binding b[64];
    uint32_t nb = 0;
    for (uint32_t i = 0; i < g->outputs.n; i++)
        outputs[i] = NULL;
    for (uint32_t i = 0; i < g->inputs.n; i++) {
        carve_value_id v = g->inputs.v[i];
        if (!inputs || !inputs[i]) {
            if (!m->values[v].init)
                return cv_error(m->ctx, CARVE_ERR_ARG, "input '%s' is missing", m->values[v].name);
            continue;
        }
        carve_status s = check_input(m, v, inputs[i], b, &nb);
        if (s)
            return s;
    }
    cv_interp ip;
    carve_status s = cv_interp_init(&ip, m);
    if (s)
        return s;
    ip.target = t;
    cv_blas_threads(carve_get_threads()); /* the runtime's thread count (blas.h) */
    ip.trace = fn;
    ip.trace_user = user;
    s = cv_interp_run(&ip, 0, (cv_val **)inputs, outputs);
    cv_interp_free(&ip);
    return s;
}

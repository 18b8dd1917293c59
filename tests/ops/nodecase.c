/* nodecase.c: the helpers of nodecase.h. */
#define _DEFAULT_SOURCE
#include "nodecase.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char **known;
static size_t n_known;

void nc_known_load(const char *prog, const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read %s\n", prog, file);
        exit(2);
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        line[strcspn(line, " \t\n")] = 0;
        char **k = realloc(known, (n_known + 1) * sizeof *known);
        char *copy = strdup(line);
        if (!k || !copy) {
            fprintf(stderr, "%s: out of memory reading %s\n", prog, file);
            exit(2);
        }
        known = k;
        known[n_known++] = copy;
    }
    fclose(f);
}

bool nc_known_has(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base && base[1] ? base + 1 : name;
    for (size_t i = 0; i < n_known; i++)
        if (!strcmp(known[i], base))
            return true;
    return false;
}

void nc_known_free(void)
{
    for (size_t i = 0; i < n_known; i++)
        free(known[i]);
    free(known);
    known = NULL;
    n_known = 0;
}

bool nc_read_value(carve_ctx *ctx, const carve_model *m, carve_value_id v, const char *path, cv_val **out, char *why,
                   size_t whysz)
{
    const cv_value *decl = &m->values[v];
    if (cv_val_read_file(ctx, path, cv_pb_kind_of(&decl->type), out)) {
        snprintf(why, whysz, "%s", carve_errmsg(ctx));
        return false;
    }
    cv_val *x = *out;
    if (x && x->kind == CV_VAL_TENSOR && x->dtype == CARVE_UINT16 && decl->type.kind == CARVE_TYPE_TENSOR &&
        decl->type.dtype == CARVE_BFLOAT16)
        x->dtype = CARVE_BFLOAT16;
    return true;
}

bool nc_read_inputs(carve_ctx *ctx, const carve_model *m, const char *sd, cv_val **in, char *why, size_t whysz)
{
    const cv_graph *g = &m->graphs[0];
    for (uint32_t i = 0; i < g->inputs.n; i++) {
        char path[8400];
        struct stat st;
        snprintf(path, sizeof path, "%s/input_%u.pb", sd, i);
        if (stat(path, &st) != 0)
            continue; /* optional input left out */
        if (!nc_read_value(ctx, m, g->inputs.v[i], path, &in[i], why, whysz))
            return false;
    }
    return true;
}

static bool close_enough(double a, double b, double atol, double rtol)
{
    return (isnan(a) && isnan(b)) || (isinf(b) && a == b) || fabs(a - b) <= atol + rtol * fabs(b);
}

static void dims_text(const cv_val *v, char *s, size_t n)
{
    size_t k = 0;
    s[0] = 0;
    for (int i = 0; i < v->rank && k < n; i++)
        k += (size_t)snprintf(s + k, n - k, "%lld,", (long long)v->dims[i]);
}

bool nc_same(const cv_val *got, const cv_val *want, nc_tol_fn *tol, const void *arg, char *why, size_t whysz)
{
    if (!got || !want) {
        snprintf(why, whysz, "%s", got ? "unexpected output" : "missing output");
        return !got && !want;
    }
    if (got->kind != want->kind) {
        snprintf(why, whysz, "kind %d, expected %d", got->kind, want->kind);
        return false;
    }
    if (want->kind == CV_VAL_NONE)
        return true;
    if (want->kind == CV_VAL_SEQUENCE) {
        if (got->n_items != want->n_items) {
            snprintf(why, whysz, "sequence of %u, expected %u", got->n_items, want->n_items);
            return false;
        }
        for (uint32_t i = 0; i < want->n_items; i++)
            if (!nc_same(got->items[i], want->items[i], tol, arg, why, whysz))
                return false;
        return true;
    }
    if (got->dtype != want->dtype) {
        snprintf(why, whysz, "dtype %s, expected %s", carve_dtype_name(got->dtype), carve_dtype_name(want->dtype));
        return false;
    }
    bool shape_ok = got->rank == want->rank;
    for (int i = 0; shape_ok && i < want->rank; i++)
        shape_ok = got->dims[i] == want->dims[i];
    if (!shape_ok) {
        char a[256], b[256];
        dims_text(got, a, sizeof a);
        dims_text(want, b, sizeof b);
        snprintf(why, whysz, "shape [%s], expected [%s]", a, b);
        return false;
    }
    if (want->dtype == CARVE_STRING) {
        for (size_t i = 0; i < want->nelem; i++)
            if (strcmp(((char **)got->data)[i], ((char **)want->data)[i])) {
                snprintf(why, whysz, "element %zu is '%s', expected '%s'", i, ((char **)got->data)[i],
                         ((char **)want->data)[i]);
                return false;
            }
        return true;
    }
    double atol, rtol;
    tol(arg, want->dtype, &atol, &rtol);
    if (want->dtype == CARVE_COMPLEX64 || want->dtype == CARVE_COMPLEX128) {
        bool c64 = want->dtype == CARVE_COMPLEX64;
        for (size_t i = 0; i < want->nelem * 2; i++) { /* as float or double pairs */
            double a = c64 ? ((float *)got->data)[i] : ((double *)got->data)[i];
            double b = c64 ? ((float *)want->data)[i] : ((double *)want->data)[i];
            if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
                snprintf(why, whysz, "element %zu: %.9g, expected %.9g", i / 2, a, b);
                return false;
            }
        }
        return true;
    }
    bool fl = cv_dtype_is_float(want->dtype);
    for (size_t i = 0; i < want->nelem; i++) {
        if (fl) {
            double a = cv_val_get_f64(got, i), b = cv_val_get_f64(want, i);
            if (!close_enough(a, b, atol, rtol)) {
                snprintf(why, whysz, "element %zu: %.9g, expected %.9g (atol %g rtol %g)", i, a, b, atol, rtol);
                return false;
            }
        } else if (cv_val_get_i64(got, i) != cv_val_get_i64(want, i)) {
            snprintf(why, whysz, "element %zu: %lld, expected %lld", i, (long long)cv_val_get_i64(got, i),
                     (long long)cv_val_get_i64(want, i));
            return false;
        }
    }
    return true;
}

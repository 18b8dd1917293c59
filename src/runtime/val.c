/* val.c: run-time values (tensors, sequences, optionals), element access and
 * broadcasting. */
#include "../ops/ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* No single tensor carve computes may exceed this (16 GiB): a guard against
 * shapes that would exhaust the machine, reported as NOMEM. */
#define MAX_TENSOR_BYTES ((size_t)16 << 30)

size_t cv_nelem(int rank, const int64_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

static cv_val *alloc_val(void)
{
    cv_val *v = cv_malloc(sizeof *v);
    if (v) {
        memset(v, 0, sizeof *v);
        v->refs = 1;
    }
    return v;
}

cv_val *cv_val_new(carve_dtype dtype, int rank, const int64_t *dims)
{
    size_t n;
    if (rank < 0 || rank > CARVE_MAX_RANK || !cv_shape_nelem(rank, dims, MAX_TENSOR_BYTES, &n))
        return NULL;
    size_t nb = dtype == CARVE_STRING ? n * sizeof(char *) : cv_dtype_nbytes(dtype, n);
    if (nb == SIZE_MAX || nb > MAX_TENSOR_BYTES)
        return NULL;
    cv_val *v = alloc_val();
    if (!v)
        return NULL;
    v->dtype = dtype;
    v->rank = rank;
    if (rank)
        memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    v->nelem = n;
    v->nbytes = nb;
    v->data = cv_malloc(nb ? nb : 1);
    if (!v->data) {
        cv_free(v);
        return NULL;
    }
    memset(v->data, 0, nb ? nb : 1);
    return v;
}

cv_val *cv_val_like(const cv_val *v) { return cv_val_new(v->dtype, v->rank, v->dims); }
cv_val *cv_val_like_dtype(const cv_val *v, carve_dtype dtype) { return cv_val_new(dtype, v->rank, v->dims); }

cv_val *cv_val_scalar_f32(float x)
{
    cv_val *v = cv_val_new(CARVE_FLOAT, 0, NULL);
    if (v)
        *(float *)v->data = x;
    return v;
}

cv_val *cv_val_scalar_i64(int64_t x)
{
    cv_val *v = cv_val_new(CARVE_INT64, 0, NULL);
    if (v)
        *(int64_t *)v->data = x;
    return v;
}

cv_val *cv_val_from_tensor(const cv_tensor *t)
{
    if (t->dtype == CARVE_STRING) {
        cv_val *v = cv_val_new(CARVE_STRING, t->rank, t->dims);
        if (!v)
            return NULL;
        char **s = v->data;
        for (size_t i = 0; i < t->nelem; i++) {
            s[i] = cv_malloc(t->strs[i].n + 1);
            if (!s[i]) {
                cv_val_unref(v);
                return NULL;
            }
            memcpy(s[i], t->strs[i].p, t->strs[i].n);
            s[i][t->strs[i].n] = 0;
        }
        return v;
    }
    cv_val *v = alloc_val();
    if (!v)
        return NULL;
    v->dtype = t->dtype;
    v->rank = t->rank;
    if (t->rank)
        memcpy(v->dims, t->dims, (size_t)t->rank * sizeof *t->dims);
    v->nelem = t->nelem;
    v->nbytes = t->nbytes;
    v->data = (void *)t->data;
    v->borrowed = true;
    return v;
}

cv_val *cv_val_clone(const cv_val *v)
{
    if (v->kind == CV_VAL_NONE)
        return cv_val_none();
    if (v->kind == CV_VAL_SEQUENCE) {
        cv_val *s = cv_val_sequence(v->dtype, v->n_items, v->items);
        if (s)
            s->optional = v->optional;
        return s;
    }
    cv_val *c = cv_val_new(v->dtype, v->rank, v->dims);
    if (!c)
        return NULL;
    c->optional = v->optional;
    if (v->dtype == CARVE_STRING) {
        char **src = v->data, **dst = c->data;
        for (size_t i = 0; i < v->nelem; i++) {
            size_t n = strlen(src[i]);
            dst[i] = cv_malloc(n + 1);
            if (!dst[i]) {
                cv_val_unref(c);
                return NULL;
            }
            memcpy(dst[i], src[i], n + 1);
        }
    } else if (v->nbytes) {
        memcpy(c->data, v->data, v->nbytes);
    }
    return c;
}

cv_val *cv_val_reshaped(const cv_val *v, int rank, const int64_t *dims)
{
    cv_val *c = cv_val_clone(v);
    if (!c)
        return NULL;
    c->rank = rank;
    if (rank)
        memcpy(c->dims, dims, (size_t)rank * sizeof *dims);
    return c;
}

cv_val *cv_val_sequence(carve_dtype elem, uint32_t n, cv_val **items)
{
    cv_val *v = alloc_val();
    if (!v)
        return NULL;
    v->kind = CV_VAL_SEQUENCE;
    v->dtype = elem;
    v->n_items = n;
    v->items = cv_malloc((n ? n : 1) * sizeof *v->items);
    if (!v->items) {
        cv_free(v);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        v->items[i] = cv_val_ref(items[i]);
    return v;
}

cv_val *cv_val_none(void)
{
    cv_val *v = alloc_val();
    if (v) {
        v->kind = CV_VAL_NONE;
        v->optional = true;
    }
    return v;
}

cv_val *cv_val_ref(cv_val *v)
{
    if (v)
        v->refs++;
    return v;
}

void cv_val_unref(cv_val *v)
{
    if (!v || --v->refs > 0)
        return;
    if (v->kind == CV_VAL_SEQUENCE) {
        for (uint32_t i = 0; i < v->n_items; i++)
            cv_val_unref(v->items[i]);
        cv_free(v->items);
    } else if (!v->borrowed) {
        if (v->dtype == CARVE_STRING && v->data) {
            char **s = v->data;
            for (size_t i = 0; i < v->nelem; i++)
                cv_free(s[i]);
        }
        cv_free(v->data);
    }
    cv_free(v);
}

/* ---------------------------------------------------------------- dtypes */

bool cv_dtype_is_float(carve_dtype t)
{
    switch (t) {
    case CARVE_FLOAT: case CARVE_DOUBLE: case CARVE_FLOAT16: case CARVE_BFLOAT16:
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return true;
    default: return false;
    }
}

bool cv_dtype_is_signed(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_INT16: case CARVE_INT32: case CARVE_INT64: case CARVE_INT4: return true;
    default: return false;
    }
}

bool cv_dtype_is_int(carve_dtype t)
{
    switch (t) {
    case CARVE_INT8: case CARVE_INT16: case CARVE_INT32: case CARVE_INT64: case CARVE_INT4:
    case CARVE_UINT8: case CARVE_UINT16: case CARVE_UINT32: case CARVE_UINT64: case CARVE_UINT4:
        return true;
    default: return false;
    }
}

/* ---------------------------------------------------------------- element access */

static int nibble(const cv_val *v, size_t i)
{
    uint8_t b = ((const uint8_t *)v->data)[i / 2];
    int x = (i & 1) ? b >> 4 : b & 0xf;
    if (v->dtype == CARVE_INT4 && x >= 8)
        x -= 16;
    return x;
}

double cv_val_get_f64(const cv_val *v, size_t i)
{
    const void *d = v->data;
    switch (v->dtype) {
    case CARVE_FLOAT: return ((const float *)d)[i];
    case CARVE_DOUBLE: return ((const double *)d)[i];
    case CARVE_FLOAT16: return cv_f16_to_f32(((const uint16_t *)d)[i]);
    case CARVE_BFLOAT16: return cv_bf16_to_f32(((const uint16_t *)d)[i]);
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        return cv_f8_to_f32(((const uint8_t *)d)[i], v->dtype);
    case CARVE_INT8: return ((const int8_t *)d)[i];
    case CARVE_UINT8: case CARVE_BOOL: return ((const uint8_t *)d)[i];
    case CARVE_INT16: return ((const int16_t *)d)[i];
    case CARVE_UINT16: return ((const uint16_t *)d)[i];
    case CARVE_INT32: return ((const int32_t *)d)[i];
    case CARVE_UINT32: return ((const uint32_t *)d)[i];
    case CARVE_INT64: return (double)((const int64_t *)d)[i];
    case CARVE_UINT64: return (double)((const uint64_t *)d)[i];
    case CARVE_INT4: case CARVE_UINT4: return nibble(v, i);
    default: return 0;
    }
}

int64_t cv_val_get_i64(const cv_val *v, size_t i)
{
    const void *d = v->data;
    switch (v->dtype) {
    case CARVE_INT64: return ((const int64_t *)d)[i];
    case CARVE_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case CARVE_INT32: return ((const int32_t *)d)[i];
    case CARVE_UINT32: return ((const uint32_t *)d)[i];
    case CARVE_INT16: return ((const int16_t *)d)[i];
    case CARVE_UINT16: return ((const uint16_t *)d)[i];
    case CARVE_INT8: return ((const int8_t *)d)[i];
    case CARVE_UINT8: case CARVE_BOOL: return ((const uint8_t *)d)[i];
    case CARVE_INT4: case CARVE_UINT4: return nibble(v, i);
    default: {
        double x = cv_val_get_f64(v, i);
        if (!(x == x))
            return INT64_MIN;
        if (x >= 9.2233720368547758e18)
            return INT64_MAX;
        if (x <= -9.2233720368547758e18)
            return INT64_MIN;
        return (int64_t)x;
    }
    }
}

static void set_nibble(cv_val *v, size_t i, int64_t x)
{
    uint8_t *b = &((uint8_t *)v->data)[i / 2];
    uint8_t q = (uint8_t)(x & 0xf);
    *b = (i & 1) ? (uint8_t)((*b & 0x0f) | (q << 4)) : (uint8_t)((*b & 0xf0) | q);
}

void cv_val_set_f64(cv_val *v, size_t i, double x)
{
    void *d = v->data;
    switch (v->dtype) {
    case CARVE_FLOAT: ((float *)d)[i] = (float)x; return;
    case CARVE_DOUBLE: ((double *)d)[i] = x; return;
    case CARVE_FLOAT16: ((uint16_t *)d)[i] = cv_f32_to_f16((float)x); return;
    case CARVE_BFLOAT16: ((uint16_t *)d)[i] = cv_f32_to_bf16((float)x); return;
    case CARVE_FLOAT8E4M3FN: case CARVE_FLOAT8E4M3FNUZ: case CARVE_FLOAT8E5M2: case CARVE_FLOAT8E5M2FNUZ:
        ((uint8_t *)d)[i] = cv_f32_to_f8((float)x, v->dtype, true);
        return;
    case CARVE_BOOL: ((uint8_t *)d)[i] = x != 0; return;
    default: {
        /* Integers: truncate toward zero, NaN/out of range through the
         * int64 path (no UB). */
        int64_t q;
        if (!(x == x))
            q = INT64_MIN;
        else if (x >= 9.2233720368547758e18)
            q = INT64_MAX;
        else if (x <= -9.2233720368547758e18)
            q = INT64_MIN;
        else
            q = (int64_t)x;
        cv_val_set_i64(v, i, q);
        return;
    }
    }
}

void cv_val_set_i64(cv_val *v, size_t i, int64_t x)
{
    void *d = v->data;
    switch (v->dtype) {
    case CARVE_INT64: ((int64_t *)d)[i] = x; return;
    case CARVE_UINT64: ((uint64_t *)d)[i] = (uint64_t)x; return;
    case CARVE_INT32: ((int32_t *)d)[i] = (int32_t)(uint32_t)(uint64_t)x; return;
    case CARVE_UINT32: ((uint32_t *)d)[i] = (uint32_t)(uint64_t)x; return;
    case CARVE_INT16: ((int16_t *)d)[i] = (int16_t)(uint16_t)(uint64_t)x; return;
    case CARVE_UINT16: ((uint16_t *)d)[i] = (uint16_t)(uint64_t)x; return;
    case CARVE_INT8: ((int8_t *)d)[i] = (int8_t)(uint8_t)(uint64_t)x; return;
    case CARVE_UINT8: ((uint8_t *)d)[i] = (uint8_t)(uint64_t)x; return;
    case CARVE_BOOL: ((uint8_t *)d)[i] = x != 0; return;
    case CARVE_INT4: case CARVE_UINT4: set_nibble(v, i, x); return;
    default: cv_val_set_f64(v, i, (double)x); return;
    }
}

cv_val *cv_val_to_f32(const cv_val *v)
{
    cv_val *f = cv_val_new(CARVE_FLOAT, v->rank, v->dims);
    if (!f)
        return NULL;
    float *o = f->data;
    if (v->dtype == CARVE_FLOAT)
        memcpy(o, v->data, v->nbytes);
    else
        for (size_t i = 0; i < v->nelem; i++)
            o[i] = (float)cv_val_get_f64(v, i);
    return f;
}

cv_val *cv_val_from_f32(const cv_val *f, carve_dtype dtype)
{
    cv_val *v = cv_val_new(dtype, f->rank, f->dims);
    if (!v)
        return NULL;
    const float *x = f->data;
    if (dtype == CARVE_FLOAT)
        memcpy(v->data, x, f->nbytes);
    else
        for (size_t i = 0; i < f->nelem; i++)
            cv_val_set_f64(v, i, x[i]);
    return v;
}

/* ---------------------------------------------------------------- broadcasting */

bool cv_broadcast_shape(int ra, const int64_t *da, int rb, const int64_t *db, int *rank, int64_t *dims)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t a = i < r - ra ? 1 : da[i - (r - ra)];
        int64_t b = i < r - rb ? 1 : db[i - (r - rb)];
        if (a != b && a != 1 && b != 1)
            return false;
        dims[i] = a == 1 ? b : a;
    }
    *rank = r;
    return true;
}

void cv_bcast_strides(int r, const int64_t *d, int orank, const int64_t *odims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = orank - 1; i >= 0; i--) {
        int j = i - (orank - r);
        if (j < 0 || d[j] == 1) {
            strides[i] = 0;
        } else {
            strides[i] = s;
        }
        if (j >= 0)
            s *= d[j];
    }
    (void)odims;
}

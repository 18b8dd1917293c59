/* tensor.c: element types, shapes and tensor data. */
#include "ir.h"

#include <string.h>

static const struct {
    const char *name;
    int bits;
} dtypes[CARVE_DTYPE_COUNT] = {
    [CARVE_UNDEFINED] = {"undefined", 0},   [CARVE_FLOAT] = {"float32", 32},
    [CARVE_UINT8] = {"uint8", 8},           [CARVE_INT8] = {"int8", 8},
    [CARVE_UINT16] = {"uint16", 16},        [CARVE_INT16] = {"int16", 16},
    [CARVE_INT32] = {"int32", 32},          [CARVE_INT64] = {"int64", 64},
    [CARVE_STRING] = {"string", 0},         [CARVE_BOOL] = {"bool", 8},
    [CARVE_FLOAT16] = {"float16", 16},      [CARVE_DOUBLE] = {"float64", 64},
    [CARVE_UINT32] = {"uint32", 32},        [CARVE_UINT64] = {"uint64", 64},
    [CARVE_COMPLEX64] = {"complex64", 64},  [CARVE_COMPLEX128] = {"complex128", 128},
    [CARVE_BFLOAT16] = {"bfloat16", 16},    [CARVE_FLOAT8E4M3FN] = {"float8e4m3fn", 8},
    [CARVE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 8}, [CARVE_FLOAT8E5M2] = {"float8e5m2", 8},
    [CARVE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 8}, [CARVE_UINT4] = {"uint4", 4},
    [CARVE_INT4] = {"int4", 4},             [CARVE_FLOAT4E2M1] = {"float4e2m1", 4},
};

bool cv_dtype_valid(int t) { return t > 0 && t < CARVE_DTYPE_COUNT; }

const char *carve_dtype_name(carve_dtype t)
{
    return (int)t >= 0 && t < CARVE_DTYPE_COUNT ? dtypes[t].name : "unknown";
}

int carve_dtype_bits(carve_dtype t)
{
    return (int)t >= 0 && t < CARVE_DTYPE_COUNT ? dtypes[t].bits : 0;
}

size_t cv_dtype_nbytes(carve_dtype t, size_t nelem)
{
    int bits = carve_dtype_bits(t);
    if (bits == 0)
        return SIZE_MAX;
    if (bits == 4)
        return nelem / 2 + (nelem & 1);
    if (nelem > SIZE_MAX / (size_t)(bits / 8))
        return SIZE_MAX;
    return nelem * (size_t)(bits / 8);
}

bool cv_shape_nelem(int rank, const int64_t *dims, size_t limit, size_t *out)
{
    size_t n = 1;
    bool zero = false;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return false;
        if (dims[i] == 0)
            zero = true;
        else if (!zero && (uint64_t)dims[i] > limit / n)
            return false;
        else if (!zero)
            n *= (size_t)dims[i];
    }
    *out = zero ? 0 : n;
    return true;
}

uint64_t cv_tensor_hash(const cv_tensor *t)
{
    if (t->dtype == CARVE_STRING) {
        uint64_t h = 0;
        for (size_t i = 0; i < t->nelem; i++)
            h = cv_hash_bytes(t->strs[i].p, t->strs[i].n, h + i);
        return h;
    }
    return cv_hash_bytes(t->data, t->nbytes, 0);
}

cv_tensor *cv_tensor_new(carve_model *m, carve_dtype dtype, int rank, const int64_t *dims,
                         const void *data, size_t nbytes)
{
    size_t nelem;
    if (!cv_dtype_valid(dtype) || dtype == CARVE_STRING) {
        cv_error(m->ctx, CARVE_ERR_ARG, "tensor: unsupported dtype %d for raw data", (int)dtype);
        return NULL;
    }
    if (rank < 0 || rank > CARVE_MAX_RANK || !cv_shape_nelem(rank, dims, (size_t)1 << 48, &nelem)) {
        cv_error(m->ctx, CARVE_ERR_ARG, "tensor: bad shape (rank %d)", rank);
        return NULL;
    }
    size_t want = cv_dtype_nbytes(dtype, nelem);
    if (want != nbytes) {
        cv_error(m->ctx, CARVE_ERR_ARG, "tensor: %zu bytes given for %zu %s elements (expected %zu)",
                 nbytes, nelem, carve_dtype_name(dtype), want);
        return NULL;
    }
    cv_tensor *t = cv_arena_alloc(&m->arena, sizeof *t);
    if (!t)
        return NULL;
    t->dtype = dtype;
    t->rank = rank;
    t->dims = cv_arena_memdup(&m->arena, dims, (size_t)rank * sizeof *dims);
    t->nelem = nelem;
    t->nbytes = nbytes;
    t->data = cv_arena_memdup(&m->arena, data, nbytes);
    return t;
}

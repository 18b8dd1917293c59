/* tensor_io.c: run-time values from and to files: ONNX TensorProto (.pb,
 * also SequenceProto/OptionalProto of tensors as the ONNX test data uses)
 * and numpy .npy. */
#define _DEFAULT_SOURCE
#include "runtime.h"
#include "../onnx/onnx_io.h"
#include "../io/files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static carve_status val_from_proto(carve_ctx *ctx, const Onnx__TensorProto *tp, const char *what, cv_val **out)
{
    carve_model *scratch = carve_model_new(ctx);
    if (!scratch)
        return CARVE_ERR_NOMEM;
    cv_tensor *t = NULL;
    carve_status s = cv_onnx_tensor(scratch, tp, what, NULL, &t);
    if (!s) {
        cv_val *b = cv_val_from_tensor(t);
        *out = b ? cv_val_clone(b) : NULL; /* own the data: the arena dies */
        cv_val_unref(b);
        if (!*out)
            s = cv_error(ctx, CARVE_ERR_NOMEM, "%s: out of memory", what);
    }
    carve_model_free(scratch);
    return s;
}

/* SequenceProto and OptionalProto live in onnx-data.proto, which Debian's
 * libonnx-dev does not ship: their few fields are read by hand. Both have
 * name = 1, elem_type = 2; tensors are field 3 (repeated in a sequence). */
cv_pb_kind cv_pb_kind_of(const cv_type *t)
{
    if (t->kind != CARVE_TYPE_OTHER || !t->opaque.n)
        return CV_PB_TENSOR;
    /* The first field of the serialized TypeProto says which type it is:
     * sequence_type = 4, optional_type = 9. */
    uint32_t field = t->opaque.p[0] >> 3;
    return field == 4 ? CV_PB_SEQUENCE : field == 9 ? CV_PB_OPTIONAL : CV_PB_TENSOR;
}

carve_status cv_val_read_pb(carve_ctx *ctx, const void *data, size_t n, cv_pb_kind kind, cv_val **out, char **name)
{
    *out = NULL;
    if (name)
        *name = NULL;
    if (kind == CV_PB_TENSOR) {
        Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&cv_pb_allocator, n, data);
        if (!tp) {
            char why[600];
            if (cv_wire_check(data, n, &onnx__tensor_proto__descriptor, why, sizeof why))
                snprintf(why, sizeof why, "protobuf decoding failed");
            return cv_error(ctx, CARVE_ERR_PARSE, "not a TensorProto: %s", why);
        }
        if (name && tp->name && *tp->name) {
            *name = cv_malloc(strlen(tp->name) + 1);
            if (*name)
                strcpy(*name, tp->name);
        }
        carve_status s = val_from_proto(ctx, tp, tp->name && *tp->name ? tp->name : "tensor", out);
        onnx__tensor_proto__free_unpacked(tp, &cv_pb_allocator);
        return s;
    }
    const uint8_t *p = data, *end = p + n;
    cv_val *items[1024];
    uint32_t count = 0;
    bool optional = false, is_seq = true;
    int64_t elem_type = 0;
    carve_status s = CARVE_OK;
    while (p < end && !s) {
        uint64_t key = 0, len = 0;
        int shift = 0;
        while (p < end && shift < 64) {
            key |= (uint64_t)(*p & 0x7f) << shift;
            shift += 7;
            if (!(*p++ & 0x80))
                break;
        }
        int wt = (int)(key & 7);
        uint32_t field = (uint32_t)(key >> 3);
        if (wt == 0) {
            uint64_t v = 0;
            shift = 0;
            while (p < end && shift < 64) {
                v |= (uint64_t)(*p & 0x7f) << shift;
                shift += 7;
                if (!(*p++ & 0x80))
                    break;
            }
            if (field == 2)
                elem_type = (int64_t)v;
            continue;
        }
        if (wt != 2)
            return cv_error(ctx, CARVE_ERR_PARSE, "sequence/optional proto: unexpected wire type %d", wt);
        shift = 0;
        while (p < end && shift < 64) {
            len |= (uint64_t)(*p & 0x7f) << shift;
            shift += 7;
            if (!(*p++ & 0x80))
                break;
        }
        if (len > (uint64_t)(end - p))
            return cv_error(ctx, CARVE_ERR_PARSE, "sequence/optional proto: truncated");
        if (field == 3 && count < 1024) {
            Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&cv_pb_allocator, len, p);
            if (!tp)
                s = cv_error(ctx, CARVE_ERR_PARSE, "sequence item %u is not a TensorProto", count);
            else {
                s = val_from_proto(ctx, tp, "sequence item", &items[count]);
                if (!s)
                    count++;
                onnx__tensor_proto__free_unpacked(tp, &cv_pb_allocator);
            }
        } else if (field == 5 && kind == CV_PB_OPTIONAL) {
            /* OptionalProto.sequence_value: an optional holding a sequence */
            optional = true;
            cv_val *inner = NULL;
            s = cv_val_read_pb(ctx, p, len, CV_PB_SEQUENCE, &inner, NULL);
            if (!s) {
                inner->optional = true;
                *out = inner;
                return CARVE_OK;
            }
        }
        p += len;
    }
    if (s) {
        for (uint32_t i = 0; i < count; i++)
            cv_val_unref(items[i]);
        return s;
    }
    (void)is_seq;
    (void)elem_type;
    if (kind == CV_PB_OPTIONAL) {
        /* OptionalProto.tensor_value (3), or nothing: an empty optional */
        if (count == 0) {
            *out = cv_val_none();
        } else {
            *out = items[0];
            (*out)->optional = true;
            for (uint32_t i = 1; i < count; i++)
                cv_val_unref(items[i]);
            return CARVE_OK;
        }
        return *out ? CARVE_OK : cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    carve_dtype dt = count ? items[0]->dtype : CARVE_FLOAT;
    *out = cv_val_sequence(dt, count, items);
    for (uint32_t i = 0; i < count; i++)
        cv_val_unref(items[i]);
    if (!*out)
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    (*out)->optional = optional;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- npy */

static const struct {
    const char *descr;
    carve_dtype t;
} npy_types[] = {
    {"<f4", CARVE_FLOAT}, {"<f8", CARVE_DOUBLE}, {"<f2", CARVE_FLOAT16}, {"<i8", CARVE_INT64},
    {"<i4", CARVE_INT32}, {"<i2", CARVE_INT16}, {"|i1", CARVE_INT8}, {"|u1", CARVE_UINT8},
    {"<u2", CARVE_UINT16}, {"<u4", CARVE_UINT32}, {"<u8", CARVE_UINT64}, {"|b1", CARVE_BOOL},
    {"<c8", CARVE_COMPLEX64}, {"<c16", CARVE_COMPLEX128},
};

static carve_status read_npy(carve_ctx *ctx, const char *path, const uint8_t *d, size_t n, cv_val **out)
{
    if (n < 10 || memcmp(d, "\x93NUMPY", 6))
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: not a .npy file", path);
    size_t hl, off;
    if (d[6] == 1) {
        hl = d[8] | (size_t)d[9] << 8;
        off = 10;
    } else {
        if (n < 12)
            return cv_error(ctx, CARVE_ERR_PARSE, "%s: truncated .npy header", path);
        hl = d[8] | (size_t)d[9] << 8 | (size_t)d[10] << 16 | (size_t)d[11] << 24;
        off = 12;
    }
    if (hl > n - off || hl > 65536)
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: truncated .npy header", path);
    char hdr[65537];
    memcpy(hdr, d + off, hl);
    hdr[hl] = 0;
    const char *ds = strstr(hdr, "'descr':"), *fo = strstr(hdr, "'fortran_order':"), *sh = strstr(hdr, "'shape':");
    if (!ds || !fo || !sh)
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: .npy header lacks descr, fortran_order or shape", path);
    ds = strchr(ds + 8, '\'');
    if (!ds)
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: bad .npy descr", path);
    carve_dtype t = CARVE_UNDEFINED;
    for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++) {
        size_t l = strlen(npy_types[i].descr);
        if (!strncmp(ds + 1, npy_types[i].descr, l) && ds[1 + l] == '\'')
            t = npy_types[i].t;
    }
    if (!t)
        return cv_error(ctx, CARVE_ERR_UNSUPPORTED, "%s: .npy dtype %.8s is not supported (little-endian numeric only)",
                        path, ds + 1);
    if (strstr(fo, "True") && strstr(fo, "True") < sh)
        return cv_error(ctx, CARVE_ERR_UNSUPPORTED, "%s: Fortran-ordered .npy arrays are not supported", path);
    const char *q = strchr(sh, '(');
    int64_t dims[CARVE_MAX_RANK];
    int rank = 0;
    if (!q)
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: bad .npy shape", path);
    q++;
    while (*q && *q != ')') {
        while (*q == ' ' || *q == ',')
            q++;
        if (*q == ')')
            break;
        char *e;
        errno = 0;
        long long x = strtoll(q, &e, 10);
        if (e == q || errno || x < 0 || rank == CARVE_MAX_RANK)
            return cv_error(ctx, CARVE_ERR_PARSE, "%s: bad .npy shape", path);
        dims[rank++] = x;
        q = e;
    }
    cv_val *v = cv_val_new(t, rank, dims);
    if (!v)
        return cv_error(ctx, CARVE_ERR_NOMEM, "%s: tensor too large", path);
    if (n - off - hl != v->nbytes) {
        cv_val_unref(v);
        return cv_error(ctx, CARVE_ERR_PARSE, "%s: %zu data bytes for a %s tensor of %zu elements", path,
                        n - off - hl, carve_dtype_name(t), v->nelem);
    }
    memcpy(v->data, d + off + hl, v->nbytes);
    *out = v;
    return CARVE_OK;
}

static carve_status write_npy(carve_ctx *ctx, const cv_val *v, FILE *f, const char *path)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
        if (npy_types[i].t == v->dtype)
            descr = npy_types[i].descr;
    if (!descr)
        return cv_error(ctx, CARVE_ERR_UNSUPPORTED, "%s: numpy has no %s; write a .pb file instead", path,
                        carve_dtype_name(v->dtype));
    char shape[CARVE_MAX_RANK * 24 + 8] = "";
    size_t k = 0;
    for (int i = 0; i < v->rank; i++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%lld,%s", (long long)v->dims[i],
                              i + 1 < v->rank ? " " : "");
    if (v->rank > 1)
        shape[k - 1] = 0; /* "(2, 3)" not "(2, 3,)" */
    char hdr[512];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    int total = 10 + hl + 1;
    int pad = (64 - total % 64) % 64;
    uint16_t len = (uint16_t)(hl + pad + 1);
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(len & 0xff), (uint8_t)(len >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)hl, f) == (size_t)hl;
    for (int i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(v->data, 1, v->nbytes, f) == v->nbytes;
    return ok ? CARVE_OK : cv_error(ctx, CARVE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

carve_status cv_val_read_file(carve_ctx *ctx, const char *path, cv_pb_kind kind, cv_val **out)
{
    *out = NULL;
    cv_input in;
    carve_status s = cv_input_map(ctx, path, NULL, 0, &in);
    if (s)
        return s;
    const uint8_t *buf = in.data;
    size_t got = in.size;
    if (got >= 6 && !memcmp(buf, "\x93NUMPY", 6))
        s = read_npy(ctx, path, buf, got, out);
    else {
        s = cv_val_read_pb(ctx, buf, got, kind, out, NULL);
        if (s) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", carve_errmsg(ctx));
            s = cv_error(ctx, s, "%s: %s", path, msg);
        }
    }
    cv_input_unmap(&in);
    return s;
}

carve_status carve_outputs_add_tensor(carve_outputs *o, const carve_tensor *v, const char *path)
{
    if (!o)
        return CARVE_ERR_NOMEM;
    carve_ctx *ctx = cv_outputs_ctx(o);
    if (v->kind != CV_VAL_TENSOR)
        return cv_error(ctx, CARVE_ERR_UNSUPPORTED, "%s: only tensors can be written to files", path);
    FILE *f = cv_outputs_open(o, path, "tensor");
    if (!f)
        return carve_errcode(ctx);
    carve_status s;
    if (ends_with(path, ".npy")) {
        s = write_npy(ctx, v, f, path);
    } else {
        Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
        tp.n_dims = (size_t)v->rank;
        tp.dims = (int64_t *)v->dims;
        tp.has_data_type = 1;
        tp.data_type = (int32_t)v->dtype;
        if (v->dtype == CARVE_STRING) {
            tp.n_string_data = v->nelem;
            tp.string_data = cv_malloc((v->nelem + 1) * sizeof *tp.string_data);
            for (size_t i = 0; tp.string_data && i < v->nelem; i++)
                tp.string_data[i] = (ProtobufCBinaryData){strlen(((char **)v->data)[i]), (uint8_t *)((char **)v->data)[i]};
        } else {
            tp.has_raw_data = 1;
            tp.raw_data = (ProtobufCBinaryData){v->nbytes, v->data};
        }
        size_t n = onnx__tensor_proto__get_packed_size(&tp);
        uint8_t *buf = cv_malloc(n + 1);
        if (!buf) {
            s = cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        } else {
            onnx__tensor_proto__pack(&tp, buf);
            s = fwrite(buf, 1, n, f) == n ? CARVE_OK : cv_error(ctx, CARVE_ERR_IO, "%s: write failed", path);
        }
        cv_free(buf);
        cv_free(tp.string_data);
    }
    if (s)
        cv_outputs_fail(o);
    return s;
}

carve_status cv_val_write_file(carve_ctx *ctx, const cv_val *v, const char *path)
{
    carve_outputs *o = carve_outputs_new(ctx);
    carve_status s = carve_outputs_add_tensor(o, v, path);
    if (!s)
        s = carve_outputs_commit(o);
    carve_outputs_free(o);
    return s;
}

/* decode.c: a decoder of its own for the ONNX messages models are made of,
 * filling the structs protobuf-c's generated code defines, so import.c reads
 * them as before.
 *
 * protobuf-c's unpack is driven by descriptors (a field look-up per field,
 * a struct of scanned members per field, a second walk to parse them), and
 * it ran after the wire walk (wire.c), which read every byte once more: on
 * a 43,000-node graph the two were 108 M of 796 M instructions. Here each
 * message is read twice at the level of its fields (once to count repeated
 * fields, once to fill them) by code written for that message.
 *
 * It declines (returns NULL) whatever is not the plain case, and the caller
 * then takes the old path (wire walk, then protobuf-c), which says what is
 * wrong or decodes what is rare: bytes that are not well formed, a field
 * number 0, wire types 3, 4, 6, 7, a known field with another wire type
 * than its own, messages nested deeper than the wire walk allows, a
 * singular message or a oneof given twice (protobuf-c merges those),
 * and the messages it does not read itself (training info, functions,
 * sparse tensors, segments, quantization annotations, types other than
 * tensors). So what it returns is what protobuf-c would have returned:
 * decode.matches_protobuf_c (tests/test_decode.c) packs both and compares
 * the bytes on every model of libonnx-testdata and the real models, and
 * decode.damaged_bytes_declined_or_equal on damaged copies.
 *
 * Field numbers: onnx.proto (Debian's libonnx-dev, the file protoc-c
 * generates onnx.pb-c.h from); the wire format: protobuf's encoding guide
 * (varints, keys of field number << 3 | wire type, packed repeated
 * scalars). */
#include "onnx_io.h"

#include <string.h>

typedef struct dec {
    ProtobufCAllocator a;
} dec;

/* One field: its number, wire type, and where its value is (for wire type
 * 2 the payload after the length; for the others the value's bytes). */
typedef struct fld {
    uint32_t id;
    int wt;
    const uint8_t *at; /* after the key: unknown fields keep from here */
    const uint8_t *v;
    size_t n;   /* payload bytes (2), value bytes (0: the varint's, 1: 8, 5: 4) */
    uint64_t x; /* wire type 0: the value */
} fld;

static void *take(dec *d, size_t n) { return d->a.alloc(d->a.allocator_data, n ? n : 1); }

/* A varint of at most `max` bytes; false when longer or cut. */
static bool varint(const uint8_t **p, const uint8_t *end, int max, uint64_t *out)
{
    uint64_t r = 0;
    const uint8_t *q = *p;
    for (int i = 0; i < max && q < end; i++) {
        uint8_t b = *q++;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *p = q;
            *out = r;
            return true;
        }
    }
    return false;
}

/* The next field of [*p, end); false: the bytes are not the plain case. */
static bool next(const uint8_t **p, const uint8_t *end, fld *f)
{
    uint64_t key;
    if (!varint(p, end, 5, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return false;
    f->id = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    f->at = *p;
    f->v = *p;
    switch (f->wt) {
    case 0:
        if (!varint(p, end, 10, &f->x))
            return false;
        f->n = (size_t)(*p - f->v);
        return true;
    case 1:
    case 5:
        f->n = f->wt == 1 ? 8 : 4;
        if ((size_t)(end - *p) < f->n)
            return false;
        *p += f->n;
        return true;
    case 2: {
        uint64_t len;
        if (!varint(p, end, 5, &len) || len > (uint64_t)(end - *p))
            return false;
        f->v = *p;
        f->n = (size_t)len;
        *p += len;
        return true;
    }
    default: return false;
    }
}

/* ---------------------------------------------------------------- values */

static char *str(dec *d, const fld *f)
{
    char *s = take(d, f->n + 1);
    if (s) {
        memcpy(s, f->v, f->n);
        s[f->n] = 0;
    }
    return s;
}

/* protobuf-c leaves data NULL for an empty value */
static bool bytes(dec *d, const fld *f, ProtobufCBinaryData *b)
{
    b->len = f->n;
    b->data = NULL;
    if (f->n && !(b->data = take(d, f->n)))
        return false;
    if (f->n)
        memcpy(b->data, f->v, f->n);
    return true;
}

static bool unknown(dec *d, ProtobufCMessage *m, const fld *f, const uint8_t *after)
{
    ProtobufCMessageUnknownField *u = &m->unknown_fields[m->n_unknown_fields++];
    u->tag = f->id;
    u->wire_type = (ProtobufCWireType)f->wt;
    u->len = (size_t)(after - f->at); /* a length prefix included, as protobuf-c keeps it */
    u->data = take(d, u->len);
    if (!u->data)
        return false;
    memcpy(u->data, f->at, u->len);
    return true;
}

/* Elements in a repeated scalar field given packed (wire type 2) or one by
 * one; `wt` is the wire type of one element (0, 1 or 5). */
static bool count_scalars(const fld *f, int wt, size_t *n)
{
    if (f->wt == wt) {
        (*n)++;
        return true;
    }
    if (f->wt != 2)
        return false;
    if (wt != 0) {
        size_t unit = wt == 1 ? 8 : 4;
        if (f->n % unit)
            return false;
        *n += f->n / unit;
        return true;
    }
    const uint8_t *q = f->v, *e = f->v + f->n;
    uint64_t x;
    while (q < e) {
        if (!varint(&q, e, 10, &x))
            return false;
        (*n)++;
    }
    return true;
}

/* Fills from *at: kind 'l' int64/uint64 (varint), 'i' int32 (varint, low
 * 32 bits), 'f' float (4 bytes), 'd' double (8 bytes). */
static void fill_scalars(const fld *f, char kind, void *arr, size_t *at)
{
    if (f->wt != 2) { /* one element */
        if (kind == 'f' || kind == 'd')
            memcpy((uint8_t *)arr + *at * (kind == 'f' ? 4 : 8), f->v, kind == 'f' ? 4 : 8);
        else if (kind == 'i')
            ((int32_t *)arr)[*at] = (int32_t)(uint32_t)f->x;
        else
            ((uint64_t *)arr)[*at] = f->x;
        (*at)++;
        return;
    }
    if (kind == 'f' || kind == 'd') {
        if (f->n)
            memcpy((uint8_t *)arr + *at * (kind == 'f' ? 4 : 8), f->v, f->n);
        *at += f->n / (kind == 'f' ? 4 : 8);
        return;
    }
    const uint8_t *q = f->v, *e = f->v + f->n;
    uint64_t x;
    while (q < e && varint(&q, e, 10, &x)) {
        if (kind == 'i')
            ((int32_t *)arr)[*at] = (int32_t)(uint32_t)x;
        else
            ((uint64_t *)arr)[*at] = x;
        (*at)++;
    }
}

/* Room for counted arrays: NULL stays NULL when the count is 0. */
#define ARRAY(d, ptr, n)                                                                                               \
    do {                                                                                                               \
        if ((n) && !((ptr) = take((d), (n) * sizeof *(ptr))))                                                          \
            return NULL;                                                                                               \
    } while (0)

/* ---------------------------------------------------------------- pass one */

/* How pass one takes a field number; a number a message's table leaves out
 * is unknown (kept as protobuf-c keeps it). */
enum { UNKNOWN = 0, FIELD, PACKED, DECLINE };

typedef struct rule {
    uint8_t how;  /* UNKNOWN, FIELD, PACKED, DECLINE (protobuf-c reads it) */
    uint8_t wt;   /* FIELD: its wire type; PACKED: the wire type of one element */
    uint8_t slot; /* the counter it adds to (SINK: none) */
    uint8_t once; /* a singular message or a oneof: a second one declines */
} rule;

#define NRULES 32 /* field numbers 1 to 31: every known field of onnx.proto's messages read here */

/* Counters: SINK for known fields nobody counts, UNK for unknown fields,
 * C1... for a message's repeated fields (named in each message). */
enum { SINK, UNK, C1, C2, C3, C4, C5, C6, C7, C8, C9, NSLOTS };

/* Pass one over a message's fields: checks each known field's wire type and
 * counts into n; false: not the plain case. */
static bool scan(const uint8_t *p, const uint8_t *end, const rule *rules, size_t *n)
{
    fld f;
    while (p < end) {
        if (!next(&p, end, &f))
            return false;
        rule r = f.id < NRULES ? rules[f.id] : (rule){0};
        switch (r.how) {
        case UNKNOWN: n[UNK]++; break;
        case FIELD:
            if (f.wt != r.wt || (r.once && n[r.slot]))
                return false;
            n[r.slot]++;
            break;
        case PACKED:
            if (!count_scalars(&f, r.wt, &n[r.slot]))
                return false;
            break;
        default: return false;
        }
    }
    return true;
}

/* A message's struct set to `init` (its defaults), after pass one over
 * [p, end) counted its fields into n, with room for its unknown fields.
 * NULL: nested deeper than the wire walk allows, declined, or no memory.
 * Every protobuf-c message starts with its ProtobufCMessage. */
static inline void *begin(dec *d, const void *init, size_t size, int depth, const uint8_t *p, const uint8_t *end,
                          const rule *rules, size_t *n)
{
    if (depth > CV_WIRE_MAX_DEPTH)
        return NULL;
    ProtobufCMessage *m = take(d, size);
    if (!m)
        return NULL;
    memcpy(m, init, size);
    if (!scan(p, end, rules, n))
        return NULL;
    ARRAY(d, m->unknown_fields, n[UNK]);
    return m;
}

/* ---------------------------------------------------------------- messages */

static Onnx__TensorProto *tensor(dec *d, const uint8_t *p, size_t len, int depth);
static Onnx__GraphProto *graph(dec *d, const uint8_t *p, size_t len, int depth);

static Onnx__StringStringEntryProto *entry(dec *d, const uint8_t *p, size_t len, int depth)
{
    static const rule rules[NRULES] = {[1] = {FIELD, 2}, [2] = {FIELD, 2}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__StringStringEntryProto *m = begin(d, &(Onnx__StringStringEntryProto)ONNX__STRING_STRING_ENTRY_PROTO__INIT,
                                            sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            if (!(m->key = str(d, &f)))
                return NULL;
        } else if (f.id == 2) {
            if (!(m->value = str(d, &f)))
                return NULL;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__OperatorSetIdProto *opset(dec *d, const uint8_t *p, size_t len, int depth)
{
    static const rule rules[NRULES] = {[1] = {FIELD, 2}, [2] = {FIELD, 0}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__OperatorSetIdProto *m =
        begin(d, &(Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            if (!(m->domain = str(d, &f)))
                return NULL;
        } else if (f.id == 2) {
            m->has_version = 1;
            m->version = (int64_t)f.x;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__TensorShapeProto__Dimension *dimension(dec *d, const uint8_t *p, size_t len, int depth)
{
    enum { VALUE = C1 }; /* the oneof value: dim_value or dim_param */
    static const rule rules[NRULES] = {[1] = {FIELD, 0, VALUE, 1}, [2] = {FIELD, 2, VALUE, 1}, [3] = {FIELD, 2}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__TensorShapeProto__Dimension *m =
        begin(d, &(Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, sizeof *m, depth, p,
              end, rules, n);
    if (!m)
        return NULL;
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            m->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            m->dim_value = (int64_t)f.x;
        } else if (f.id == 2) {
            m->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            if (!(m->dim_param = str(d, &f)))
                return NULL;
        } else if (f.id == 3) {
            if (!(m->denotation = str(d, &f)))
                return NULL;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__TensorShapeProto *shape(dec *d, const uint8_t *p, size_t len, int depth)
{
    enum { DIM = C1 };
    static const rule rules[NRULES] = {[1] = {FIELD, 2, DIM}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__TensorShapeProto *m =
        begin(d, &(Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    ARRAY(d, m->dim, n[DIM]);
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            if (!(m->dim[m->n_dim++] = dimension(d, f.v, f.n, depth + 1)))
                return NULL;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__TypeProto__Tensor *tensor_type(dec *d, const uint8_t *p, size_t len, int depth)
{
    static const rule rules[NRULES] = {[1] = {FIELD, 0}, [2] = {FIELD, 2, C1, 1}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__TypeProto__Tensor *m =
        begin(d, &(Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            m->has_elem_type = 1;
            m->elem_type = (int32_t)(uint32_t)f.x;
        } else if (f.id == 2) {
            if (!(m->shape = shape(d, f.v, f.n, depth + 1)))
                return NULL;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__TypeProto *type(dec *d, const uint8_t *p, size_t len, int depth)
{
    /* 4, 5, 8, 9: other kinds of type, which protobuf-c reads */
    static const rule rules[NRULES] = {
        [1] = {FIELD, 2, C1, 1}, [4] = {DECLINE}, [5] = {DECLINE}, [6] = {FIELD, 2}, [8] = {DECLINE}, [9] = {DECLINE}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__TypeProto *m = begin(d, &(Onnx__TypeProto)ONNX__TYPE_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            m->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
            if (!(m->tensor_type = tensor_type(d, f.v, f.n, depth + 1)))
                return NULL;
        } else if (f.id == 6) {
            if (!(m->denotation = str(d, &f)))
                return NULL;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__ValueInfoProto *value_info(dec *d, const uint8_t *p, size_t len, int depth)
{
    static const rule rules[NRULES] = {[1] = {FIELD, 2}, [2] = {FIELD, 2, C1, 1}, [3] = {FIELD, 2}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__ValueInfoProto *m =
        begin(d, &(Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (f.id == 1) {
            if (!(m->name = str(d, &f)))
                return NULL;
        } else if (f.id == 2) {
            if (!(m->type = type(d, f.v, f.n, depth + 1)))
                return NULL;
        } else if (f.id == 3) {
            if (!(m->doc_string = str(d, &f)))
                return NULL;
        } else if (!unknown(d, &m->base, &f, q))
            return NULL;
    }
    return m;
}

static Onnx__TensorProto *tensor(dec *d, const uint8_t *p, size_t len, int depth)
{
    enum { DIMS = C1, FLOATS, INT32S, STRINGS, INT64S, DOUBLES, UINT64S, EXTERNAL };
    static const rule rules[NRULES] = {[1] = {PACKED, 0, DIMS},
                                       [2] = {FIELD, 0},
                                       [3] = {DECLINE}, /* segments: protobuf-c reads them */
                                       [4] = {PACKED, 5, FLOATS},
                                       [5] = {PACKED, 0, INT32S},
                                       [6] = {FIELD, 2, STRINGS},
                                       [7] = {PACKED, 0, INT64S},
                                       [8] = {FIELD, 2},
                                       [9] = {FIELD, 2},
                                       [10] = {PACKED, 1, DOUBLES},
                                       [11] = {PACKED, 0, UINT64S},
                                       [12] = {FIELD, 2},
                                       [13] = {FIELD, 2, EXTERNAL},
                                       [14] = {FIELD, 0}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__TensorProto *m = begin(d, &(Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    ARRAY(d, m->dims, n[DIMS]);
    ARRAY(d, m->float_data, n[FLOATS]);
    ARRAY(d, m->int32_data, n[INT32S]);
    ARRAY(d, m->string_data, n[STRINGS]);
    ARRAY(d, m->int64_data, n[INT64S]);
    ARRAY(d, m->double_data, n[DOUBLES]);
    ARRAY(d, m->uint64_data, n[UINT64S]);
    ARRAY(d, m->external_data, n[EXTERNAL]);
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        switch (f.id) {
        case 1: fill_scalars(&f, 'l', m->dims, &m->n_dims); break;
        case 2:
            m->has_data_type = 1;
            m->data_type = (int32_t)(uint32_t)f.x;
            break;
        case 4: fill_scalars(&f, 'f', m->float_data, &m->n_float_data); break;
        case 5: fill_scalars(&f, 'i', m->int32_data, &m->n_int32_data); break;
        case 6:
            if (!bytes(d, &f, &m->string_data[m->n_string_data++]))
                return NULL;
            break;
        case 7: fill_scalars(&f, 'l', m->int64_data, &m->n_int64_data); break;
        case 8:
            if (!(m->name = str(d, &f)))
                return NULL;
            break;
        case 9:
            m->has_raw_data = 1;
            if (!bytes(d, &f, &m->raw_data))
                return NULL;
            break;
        case 10: fill_scalars(&f, 'd', m->double_data, &m->n_double_data); break;
        case 11: fill_scalars(&f, 'l', m->uint64_data, &m->n_uint64_data); break;
        case 12:
            if (!(m->doc_string = str(d, &f)))
                return NULL;
            break;
        case 13:
            if (!(m->external_data[m->n_external_data++] = entry(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 14:
            m->has_data_location = 1;
            m->data_location = (Onnx__TensorProto__DataLocation)(int32_t)(uint32_t)f.x;
            break;
        default:
            if (!unknown(d, &m->base, &f, q))
                return NULL;
        }
    }
    return m;
}

static Onnx__AttributeProto *attribute(dec *d, const uint8_t *p, size_t len, int depth)
{
    enum { T = C1, G, FLOATS, INTS, STRINGS, TENSORS, GRAPHS };
    /* 14, 15, 22, 23: types and sparse tensors, which protobuf-c reads */
    static const rule rules[NRULES] = {[1] = {FIELD, 2},           [2] = {FIELD, 5},          [3] = {FIELD, 0},
                                       [4] = {FIELD, 2},           [5] = {FIELD, 2, T, 1},    [6] = {FIELD, 2, G, 1},
                                       [7] = {PACKED, 5, FLOATS},  [8] = {PACKED, 0, INTS},   [9] = {FIELD, 2, STRINGS},
                                       [10] = {FIELD, 2, TENSORS}, [11] = {FIELD, 2, GRAPHS}, [13] = {FIELD, 2},
                                       [14] = {DECLINE},           [15] = {DECLINE},          [20] = {FIELD, 0},
                                       [21] = {FIELD, 2},          [22] = {DECLINE},          [23] = {DECLINE}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__AttributeProto *m =
        begin(d, &(Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    ARRAY(d, m->floats, n[FLOATS]);
    ARRAY(d, m->ints, n[INTS]);
    ARRAY(d, m->strings, n[STRINGS]);
    ARRAY(d, m->tensors, n[TENSORS]);
    ARRAY(d, m->graphs, n[GRAPHS]);
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        switch (f.id) {
        case 1:
            if (!(m->name = str(d, &f)))
                return NULL;
            break;
        case 2:
            m->has_f = 1;
            memcpy(&m->f, f.v, 4);
            break;
        case 3:
            m->has_i = 1;
            m->i = (int64_t)f.x;
            break;
        case 4:
            m->has_s = 1;
            if (!bytes(d, &f, &m->s))
                return NULL;
            break;
        case 5:
            if (!(m->t = tensor(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 6:
            if (!(m->g = graph(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 7: fill_scalars(&f, 'f', m->floats, &m->n_floats); break;
        case 8: fill_scalars(&f, 'l', m->ints, &m->n_ints); break;
        case 9:
            if (!bytes(d, &f, &m->strings[m->n_strings++]))
                return NULL;
            break;
        case 10:
            if (!(m->tensors[m->n_tensors++] = tensor(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 11:
            if (!(m->graphs[m->n_graphs++] = graph(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 13:
            if (!(m->doc_string = str(d, &f)))
                return NULL;
            break;
        case 20:
            m->has_type = 1;
            m->type = (Onnx__AttributeProto__AttributeType)(int32_t)(uint32_t)f.x;
            break;
        case 21:
            if (!(m->ref_attr_name = str(d, &f)))
                return NULL;
            break;
        default:
            if (!unknown(d, &m->base, &f, q))
                return NULL;
        }
    }
    return m;
}

static Onnx__NodeProto *node(dec *d, const uint8_t *p, size_t len, int depth)
{
    enum { INPUTS = C1, OUTPUTS, ATTRIBUTES };
    static const rule rules[NRULES] = {
        [1] = {FIELD, 2, INPUTS},     [2] = {FIELD, 2, OUTPUTS}, [3] = {FIELD, 2}, [4] = {FIELD, 2},
        [5] = {FIELD, 2, ATTRIBUTES}, [6] = {FIELD, 2},          [7] = {FIELD, 2}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__NodeProto *m = begin(d, &(Onnx__NodeProto)ONNX__NODE_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    ARRAY(d, m->input, n[INPUTS]);
    ARRAY(d, m->output, n[OUTPUTS]);
    ARRAY(d, m->attribute, n[ATTRIBUTES]);
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        char *s = NULL;
        if (f.id >= 1 && f.id <= 7 && f.id != 5 && !(s = str(d, &f)))
            return NULL;
        switch (f.id) {
        case 1: m->input[m->n_input++] = s; break;
        case 2: m->output[m->n_output++] = s; break;
        case 3: m->name = s; break;
        case 4: m->op_type = s; break;
        case 5:
            if (!(m->attribute[m->n_attribute++] = attribute(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 6: m->doc_string = s; break;
        case 7: m->domain = s; break;
        default:
            if (!unknown(d, &m->base, &f, q))
                return NULL;
        }
    }
    return m;
}

static Onnx__GraphProto *graph(dec *d, const uint8_t *p, size_t len, int depth)
{
    enum { NODES = C1, INITIALIZERS, INPUTS, OUTPUTS, VALUE_INFOS };
    /* 14, 15: annotations, sparse initializers, which protobuf-c reads */
    static const rule rules[NRULES] = {
        [1] = {FIELD, 2, NODES},   [2] = {FIELD, 2},           [5] = {FIELD, 2, INITIALIZERS}, [10] = {FIELD, 2},
        [11] = {FIELD, 2, INPUTS}, [12] = {FIELD, 2, OUTPUTS}, [13] = {FIELD, 2, VALUE_INFOS}, [14] = {DECLINE},
        [15] = {DECLINE}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__GraphProto *m = begin(d, &(Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT, sizeof *m, depth, p, end, rules, n);
    if (!m)
        return NULL;
    ARRAY(d, m->node, n[NODES]);
    ARRAY(d, m->initializer, n[INITIALIZERS]);
    ARRAY(d, m->input, n[INPUTS]);
    ARRAY(d, m->output, n[OUTPUTS]);
    ARRAY(d, m->value_info, n[VALUE_INFOS]);
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        switch (f.id) {
        case 1:
            if (!(m->node[m->n_node++] = node(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 2:
            if (!(m->name = str(d, &f)))
                return NULL;
            break;
        case 5:
            if (!(m->initializer[m->n_initializer++] = tensor(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 10:
            if (!(m->doc_string = str(d, &f)))
                return NULL;
            break;
        case 11:
            if (!(m->input[m->n_input++] = value_info(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 12:
            if (!(m->output[m->n_output++] = value_info(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        case 13:
            if (!(m->value_info[m->n_value_info++] = value_info(d, f.v, f.n, depth + 1)))
                return NULL;
            break;
        default:
            if (!unknown(d, &m->base, &f, q))
                return NULL;
        }
    }
    return m;
}

static Onnx__ModelProto *model(dec *d, const uint8_t *p, size_t len)
{
    enum { GRAPH = C1, OPSETS, METADATA };
    /* 20, 25: training info, functions, which protobuf-c reads */
    static const rule rules[NRULES] = {
        [1] = {FIELD, 0},           [2] = {FIELD, 2},         [3] = {FIELD, 2},
        [4] = {FIELD, 2},           [5] = {FIELD, 0},         [6] = {FIELD, 2},
        [7] = {FIELD, 2, GRAPH, 1}, [8] = {FIELD, 2, OPSETS}, [14] = {FIELD, 2, METADATA},
        [20] = {DECLINE},           [25] = {DECLINE}};
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0};
    Onnx__ModelProto *m = begin(d, &(Onnx__ModelProto)ONNX__MODEL_PROTO__INIT, sizeof *m, 0, p, end, rules, n);
    if (!m)
        return NULL;
    ARRAY(d, m->opset_import, n[OPSETS]);
    ARRAY(d, m->metadata_props, n[METADATA]);
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        char *s = NULL;
        if ((f.id == 2 || f.id == 3 || f.id == 4 || f.id == 6) && !(s = str(d, &f)))
            return NULL;
        switch (f.id) {
        case 1:
            m->has_ir_version = 1;
            m->ir_version = (int64_t)f.x;
            break;
        case 2: m->producer_name = s; break;
        case 3: m->producer_version = s; break;
        case 4: m->domain = s; break;
        case 5:
            m->has_model_version = 1;
            m->model_version = (int64_t)f.x;
            break;
        case 6: m->doc_string = s; break;
        case 7:
            if (!(m->graph = graph(d, f.v, f.n, 1)))
                return NULL;
            break;
        case 8:
            if (!(m->opset_import[m->n_opset_import++] = opset(d, f.v, f.n, 1)))
                return NULL;
            break;
        case 14:
            if (!(m->metadata_props[m->n_metadata_props++] = entry(d, f.v, f.n, 1)))
                return NULL;
            break;
        default:
            if (!unknown(d, &m->base, &f, q))
                return NULL;
        }
    }
    return m;
}

Onnx__ModelProto *cv_decode_model(const uint8_t *p, size_t n, cv_pb_bump *bump)
{
    /* a model of some size: its first chunk already on huge pages */
    if (n >= (4u << 20) && bump->grow < (2u << 20))
        bump->grow = 2u << 20;
    dec d = {cv_pb_bump_allocator(bump)};
    return model(&d, p, n);
}

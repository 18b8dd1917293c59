/* decode.c: a decoder of its own for the ONNX messages models are made of,
 * filling the structs protobuf-c's generated code defines, so import.c reads
 * them as before.
 *
 * protobuf-c's unpack is driven by descriptors (a field look-up per field,
 * a struct of scanned members per field, a second walk to parse them), and
 * it ran after the wire walk (wire.c), which read every byte once more: on
 * a 43,000-node graph the two were 108 M of 796 M instructions. Here each
 * message is read twice at the level of its fields by one routine,
 * message(): pass one checks each field against the message's table of
 * rules (indexed by field number: its wire type, the counter of a
 * repeated field) and counts, pass two hands each known field to the
 * filler written for that message.
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

#include <stddef.h>
#include <string.h>

typedef struct dec {
    ProtobufCAllocator a;
    ProtobufCAllocator names; /* where string blocks come from */
    char *sp, *se;            /* what is left of the block strings are packed into */
    const uint8_t *end;       /* of the bytes decoded */
    const char *op;           /* the last node's op_type, which the next one shares when equal */
    size_t op_n;
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

/* A varint whose first byte ends it (field keys up to 15, lengths under
 * 128: nearly every key and name) without the loop; the rest by varint(). */
static inline bool varint_fast(const uint8_t **p, const uint8_t *end, int max, uint64_t *out)
{
    if (*p < end && **p < 0x80) {
        *out = *(*p)++;
        return true;
    }
    return varint(p, end, max, out);
}

/* The next field of [*p, end); false: the bytes are not the plain case.
 * Inlined in both passes: it runs twice per field of the whole model. */
static inline __attribute__((always_inline)) bool next(const uint8_t **p, const uint8_t *end, fld *f)
{
    /* the common field first (a name, a node): a one-byte key of wire type
     * 2, field number 1 to 15, and a one-byte length */
    const uint8_t *q = *p;
    if (end - q >= 2 && (q[0] & 0x87) == 2 && q[0] >= 8 && q[1] < 0x80 && q[1] <= end - q - 2) {
        f->id = q[0] >> 3;
        f->wt = 2;
        f->at = q + 1;
        f->v = q + 2;
        f->n = q[1];
        *p = q + 2 + q[1];
        return true;
    }
    uint64_t key;
    if (!varint_fast(p, end, 5, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return false;
    f->id = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    f->at = *p;
    f->v = *p;
    switch (f->wt) {
    case 2: {
        uint64_t len;
        if (!varint_fast(p, end, 5, &len) || len > (uint64_t)(end - *p))
            return false;
        f->v = *p;
        f->n = (size_t)len;
        *p += len;
        return true;
    }
    case 0:
        if (!varint_fast(p, end, 10, &f->x))
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
    default: return false;
    }
}

/* ---------------------------------------------------------------- values */

/* Strings (a model's names: four or five a node) are packed end to end in
 * blocks of their own, unaligned, without a call through the allocator
 * each: 14.4 M -> 8.5 M instructions on a 43,000-node graph. */
#define STR_BLOCK 65536
static inline __attribute__((always_inline)) char *str(dec *d, const fld *f)
{
    size_t n = f->n + 1;
    if ((size_t)(d->se - d->sp) < n) {
        size_t b = n > STR_BLOCK / 4 ? n : STR_BLOCK;
        char *blk = d->names.alloc(d->names.allocator_data, b);
        if (!blk)
            return NULL;
        if (b == n) { /* a long string alone: the block's rest stays in use */
            memcpy(blk, f->v, f->n);
            blk[f->n] = 0;
            return blk;
        }
        d->sp = blk;
        d->se = blk + b;
    }
    char *s = d->sp;
    d->sp += n;
    /* a short name (nearly all) by one 16-byte copy, its tail overwritten
     * by the next string, instead of a call */
    if (f->n < 16 && d->se - s >= 16 && d->end - f->v >= 16)
        memcpy(s, f->v, 16);
    else
        memcpy(s, f->v, f->n);
    s[f->n] = 0;
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

static bool unknown(dec *d, ProtobufCMessage *m, const fld *f)
{
    const uint8_t *after = f->v + f->n;
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

/* ---------------------------------------------------------------- the two passes */

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
enum { SINK, UNK, C1, C2, C3, C4, C5, C6, C7, C8, NSLOTS };

/* A repeated field's array: the slot that counts it, where its pointer is
 * in its message, the size of one element (0: the end of a list). */
typedef struct room {
    int slot;
    size_t at, size;
} room;

/* One message: its struct's size and defaults, its fields' rules (pass
 * one), the arrays of its repeated fields by slot, and what fills one of
 * its known fields (pass two; false: declined or no memory). */
typedef struct msgdef {
    size_t size;
    const void *init;
    rule rules[NRULES];
    room rooms[NSLOTS]; /* the arrays, in the order they are taken */
    bool (*fill)(dec *d, void *m, const fld *f, int depth);
} msgdef;

/* Fields pass one keeps for pass two, which then reads no key again: most
 * messages (a node: its inputs, outputs, name and op) have no more. */
#define KEPT 10

/* Pass one over a message's fields: checks each known field's wire type,
 * counts into n, keeps the first KEPT fields in kept and counts all in
 * *nf; false: not the plain case. */
static inline __attribute__((always_inline)) bool scan(const uint8_t *p, const uint8_t *end, const rule *rules,
                                                       size_t *n, fld *kept, size_t *nf)
{
    fld spare, *f = kept;
    size_t k = 0;
    while (p < end) {
        if (k == KEPT)
            f = &spare;
        if (!next(&p, end, f))
            return false;
        k++;
        rule r = f->id < NRULES ? rules[f->id] : (rule){0};
        switch (r.how) {
        case UNKNOWN: n[UNK]++; break;
        case FIELD:
            if (f->wt != r.wt || (r.once && n[r.slot]))
                return false;
            n[r.slot]++;
            break;
        case PACKED:
            if (!count_scalars(f, r.wt, &n[r.slot]))
                return false;
            break;
        default: return false;
        }
        if (f != &spare)
            f++;
    }
    *nf = k;
    return true;
}

static inline __attribute__((always_inline)) bool field(dec *d, const msgdef *def, ProtobufCMessage *m, const fld *f,
                                                        int depth)
{
    bool known = f->id < NRULES && def->rules[f->id].how != UNKNOWN;
    return known ? def->fill(d, m, f, depth) : unknown(d, m, f);
}

/* A message decoded from [p, p + len): pass one, its struct set to its
 * defaults with room for its unknown fields and repeated fields after it
 * (one allocation), pass two. NULL: nested deeper than the wire walk
 * allows, declined, or no memory. Every protobuf-c message starts with its
 * ProtobufCMessage. */
static inline __attribute__((always_inline)) void *message_as(dec *d, const msgdef *def, const uint8_t *p, size_t len,
                                                              int depth)
{
    if (depth > CV_WIRE_MAX_DEPTH)
        return NULL;
    const uint8_t *end = p + len;
    size_t n[NSLOTS] = {0}, nf;
    fld kept[KEPT];
    if (!scan(p, end, def->rules, n, kept, &nf))
        return NULL;
    /* arrays of pointers, 8-byte and 4-byte scalars: 8-byte steps keep
     * each aligned */
    size_t total = def->size + n[UNK] * sizeof(ProtobufCMessageUnknownField);
    for (const room *r = def->rooms; r->size; r++)
        total += (n[r->slot] * r->size + 7) & ~(size_t)7;
    char *blk = take(d, total);
    if (!blk)
        return NULL;
    ProtobufCMessage *m = (ProtobufCMessage *)blk;
    memcpy(m, def->init, def->size);
    blk += def->size;
    if (n[UNK]) {
        m->unknown_fields = (ProtobufCMessageUnknownField *)blk;
        blk += n[UNK] * sizeof(ProtobufCMessageUnknownField);
    }
    for (const room *r = def->rooms; r->size; r++) {
        if (n[r->slot]) {
            memcpy((char *)m + r->at, &blk, sizeof blk);
            blk += (n[r->slot] * r->size + 7) & ~(size_t)7;
        }
    }
    if (nf <= KEPT) {
        for (size_t i = 0; i < nf; i++)
            if (!field(d, def, m, &kept[i], depth))
                return NULL;
        return m;
    }
    fld f;
    for (const uint8_t *q = p; q < end;) {
        next(&q, end, &f);
        if (!field(d, def, m, &f, depth))
            return NULL;
    }
    return m;
}

static void *message(dec *d, const msgdef *def, const uint8_t *p, size_t len, int depth)
{
    return message_as(d, def, p, len, depth);
}

#define ROOM(slot, type, member)                                                                                       \
    {                                                                                                                  \
        (slot), offsetof(type, member), sizeof *((type *)0)->member                                                    \
    }

/* ---------------------------------------------------------------- messages */

static const msgdef tensor_def, graph_def;

static bool entry_field(dec *d, void *msg, const fld *f, int depth)
{
    (void)depth;
    Onnx__StringStringEntryProto *m = msg;
    if (f->id == 1)
        return (m->key = str(d, f)) != NULL;
    return (m->value = str(d, f)) != NULL; /* 2 */
}

static const Onnx__StringStringEntryProto entry_init = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
static const msgdef entry_def = {
    sizeof entry_init, &entry_init, {[1] = {FIELD, 2}, [2] = {FIELD, 2}}, {{0}}, entry_field};

static bool opset_field(dec *d, void *msg, const fld *f, int depth)
{
    (void)depth;
    Onnx__OperatorSetIdProto *m = msg;
    if (f->id == 1)
        return (m->domain = str(d, f)) != NULL;
    m->has_version = 1; /* 2 */
    m->version = (int64_t)f->x;
    return true;
}

static const Onnx__OperatorSetIdProto opset_init = ONNX__OPERATOR_SET_ID_PROTO__INIT;
static const msgdef opset_def = {
    sizeof opset_init, &opset_init, {[1] = {FIELD, 2}, [2] = {FIELD, 0}}, {{0}}, opset_field};

static bool dimension_field(dec *d, void *msg, const fld *f, int depth)
{
    (void)depth;
    Onnx__TensorShapeProto__Dimension *m = msg;
    switch (f->id) {
    case 1:
        m->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        m->dim_value = (int64_t)f->x;
        return true;
    case 2:
        m->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        return (m->dim_param = str(d, f)) != NULL;
    default: return (m->denotation = str(d, f)) != NULL; /* 3 */
    }
}

/* fields 1 and 2 are the oneof value (dim_value, dim_param): slot C1, once */
static const Onnx__TensorShapeProto__Dimension dimension_init = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
static const msgdef dimension_def = {sizeof dimension_init,
                                     &dimension_init,
                                     {[1] = {FIELD, 0, C1, 1}, [2] = {FIELD, 2, C1, 1}, [3] = {FIELD, 2}},
                                     {{0}},
                                     dimension_field};

static bool shape_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__TensorShapeProto *m = msg;
    return (m->dim[m->n_dim++] = message(d, &dimension_def, f->v, f->n, depth + 1)) != NULL; /* 1 */
}

static const Onnx__TensorShapeProto shape_init = ONNX__TENSOR_SHAPE_PROTO__INIT;
static const msgdef shape_def = {
    sizeof shape_init, &shape_init, {[1] = {FIELD, 2, C1}}, {ROOM(C1, Onnx__TensorShapeProto, dim)}, shape_field};

static bool tensor_type_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__TypeProto__Tensor *m = msg;
    if (f->id == 1) {
        m->has_elem_type = 1;
        m->elem_type = (int32_t)(uint32_t)f->x;
        return true;
    }
    return (m->shape = message(d, &shape_def, f->v, f->n, depth + 1)) != NULL; /* 2 */
}

static const Onnx__TypeProto__Tensor tensor_type_init = ONNX__TYPE_PROTO__TENSOR__INIT;
static const msgdef tensor_type_def = {
    sizeof tensor_type_init, &tensor_type_init, {[1] = {FIELD, 0}, [2] = {FIELD, 2, C1, 1}}, {{0}}, tensor_type_field};

static bool type_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__TypeProto *m = msg;
    if (f->id == 1) {
        m->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        return (m->tensor_type = message(d, &tensor_type_def, f->v, f->n, depth + 1)) != NULL;
    }
    return (m->denotation = str(d, f)) != NULL; /* 6 */
}

/* 4, 5, 8, 9: other kinds of type, which protobuf-c reads */
static const Onnx__TypeProto type_init = ONNX__TYPE_PROTO__INIT;
static const msgdef type_def = {
    sizeof type_init,
    &type_init,
    {[1] = {FIELD, 2, C1, 1}, [4] = {DECLINE}, [5] = {DECLINE}, [6] = {FIELD, 2}, [8] = {DECLINE}, [9] = {DECLINE}},
    {{0}},
    type_field};

static bool value_info_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__ValueInfoProto *m = msg;
    switch (f->id) {
    case 1: return (m->name = str(d, f)) != NULL;
    case 2: return (m->type = message(d, &type_def, f->v, f->n, depth + 1)) != NULL;
    default: return (m->doc_string = str(d, f)) != NULL; /* 3 */
    }
}

static const Onnx__ValueInfoProto value_info_init = ONNX__VALUE_INFO_PROTO__INIT;
static const msgdef value_info_def = {sizeof value_info_init,
                                      &value_info_init,
                                      {[1] = {FIELD, 2}, [2] = {FIELD, 2, C1, 1}, [3] = {FIELD, 2}},
                                      {{0}},
                                      value_info_field};

static bool tensor_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__TensorProto *m = msg;
    switch (f->id) {
    case 1: fill_scalars(f, 'l', m->dims, &m->n_dims); return true;
    case 2:
        m->has_data_type = 1;
        m->data_type = (int32_t)(uint32_t)f->x;
        return true;
    case 4: fill_scalars(f, 'f', m->float_data, &m->n_float_data); return true;
    case 5: fill_scalars(f, 'i', m->int32_data, &m->n_int32_data); return true;
    case 6: return bytes(d, f, &m->string_data[m->n_string_data++]);
    case 7: fill_scalars(f, 'l', m->int64_data, &m->n_int64_data); return true;
    case 8: return (m->name = str(d, f)) != NULL;
    case 9: m->has_raw_data = 1; return bytes(d, f, &m->raw_data);
    case 10: fill_scalars(f, 'd', m->double_data, &m->n_double_data); return true;
    case 11: fill_scalars(f, 'l', m->uint64_data, &m->n_uint64_data); return true;
    case 12: return (m->doc_string = str(d, f)) != NULL;
    case 13: return (m->external_data[m->n_external_data++] = message(d, &entry_def, f->v, f->n, depth + 1)) != NULL;
    default: /* 14 */
        m->has_data_location = 1;
        m->data_location = (Onnx__TensorProto__DataLocation)(int32_t)(uint32_t)f->x;
        return true;
    }
}

/* 3: segments, which protobuf-c reads */
static const Onnx__TensorProto tensor_init = ONNX__TENSOR_PROTO__INIT;
static const msgdef tensor_def = {sizeof tensor_init,
                                  &tensor_init,
                                  {[1] = {PACKED, 0, C1},
                                   [2] = {FIELD, 0},
                                   [3] = {DECLINE},
                                   [4] = {PACKED, 5, C2},
                                   [5] = {PACKED, 0, C3},
                                   [6] = {FIELD, 2, C4},
                                   [7] = {PACKED, 0, C5},
                                   [8] = {FIELD, 2},
                                   [9] = {FIELD, 2},
                                   [10] = {PACKED, 1, C6},
                                   [11] = {PACKED, 0, C7},
                                   [12] = {FIELD, 2},
                                   [13] = {FIELD, 2, C8},
                                   [14] = {FIELD, 0}},
                                  {ROOM(C1, Onnx__TensorProto, dims), ROOM(C2, Onnx__TensorProto, float_data),
                                   ROOM(C3, Onnx__TensorProto, int32_data), ROOM(C4, Onnx__TensorProto, string_data),
                                   ROOM(C5, Onnx__TensorProto, int64_data), ROOM(C6, Onnx__TensorProto, double_data),
                                   ROOM(C7, Onnx__TensorProto, uint64_data),
                                   ROOM(C8, Onnx__TensorProto, external_data)},
                                  tensor_field};

static bool attribute_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__AttributeProto *m = msg;
    switch (f->id) {
    case 1: return (m->name = str(d, f)) != NULL;
    case 2:
        m->has_f = 1;
        memcpy(&m->f, f->v, 4);
        return true;
    case 3:
        m->has_i = 1;
        m->i = (int64_t)f->x;
        return true;
    case 4: m->has_s = 1; return bytes(d, f, &m->s);
    case 5: return (m->t = message(d, &tensor_def, f->v, f->n, depth + 1)) != NULL;
    case 6: return (m->g = message(d, &graph_def, f->v, f->n, depth + 1)) != NULL;
    case 7: fill_scalars(f, 'f', m->floats, &m->n_floats); return true;
    case 8: fill_scalars(f, 'l', m->ints, &m->n_ints); return true;
    case 9: return bytes(d, f, &m->strings[m->n_strings++]);
    case 10: return (m->tensors[m->n_tensors++] = message(d, &tensor_def, f->v, f->n, depth + 1)) != NULL;
    case 11: return (m->graphs[m->n_graphs++] = message(d, &graph_def, f->v, f->n, depth + 1)) != NULL;
    case 13: return (m->doc_string = str(d, f)) != NULL;
    case 20:
        m->has_type = 1;
        m->type = (Onnx__AttributeProto__AttributeType)(int32_t)(uint32_t)f->x;
        return true;
    default: return (m->ref_attr_name = str(d, f)) != NULL; /* 21 */
    }
}

/* 14, 15, 22, 23: types and sparse tensors, which protobuf-c reads */
static const Onnx__AttributeProto attribute_init = ONNX__ATTRIBUTE_PROTO__INIT;
static const msgdef attribute_def = {sizeof attribute_init,
                                     &attribute_init,
                                     {[1] = {FIELD, 2},
                                      [2] = {FIELD, 5},
                                      [3] = {FIELD, 0},
                                      [4] = {FIELD, 2},
                                      [5] = {FIELD, 2, C1, 1},
                                      [6] = {FIELD, 2, C2, 1},
                                      [7] = {PACKED, 5, C3},
                                      [8] = {PACKED, 0, C4},
                                      [9] = {FIELD, 2, C5},
                                      [10] = {FIELD, 2, C6},
                                      [11] = {FIELD, 2, C7},
                                      [13] = {FIELD, 2},
                                      [14] = {DECLINE},
                                      [15] = {DECLINE},
                                      [20] = {FIELD, 0},
                                      [21] = {FIELD, 2},
                                      [22] = {DECLINE},
                                      [23] = {DECLINE}},
                                     {ROOM(C3, Onnx__AttributeProto, floats), ROOM(C4, Onnx__AttributeProto, ints),
                                      ROOM(C5, Onnx__AttributeProto, strings), ROOM(C6, Onnx__AttributeProto, tensors),
                                      ROOM(C7, Onnx__AttributeProto, graphs)},
                                     attribute_field};

static inline __attribute__((always_inline)) bool node_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__NodeProto *m = msg;
    if (f->id == 5)
        return (m->attribute[m->n_attribute++] = message(d, &attribute_def, f->v, f->n, depth + 1)) != NULL;
    /* runs of one op (most of a big graph) share its string: fewer bytes,
     * and the IR compares ops of neighbours by pointer */
    if (f->id == 4 && d->op && f->n == d->op_n && !memcmp(d->op, f->v, f->n)) {
        m->op_type = (char *)d->op;
        return true;
    }
    char *s = str(d, f); /* 1 to 7 but 5 are strings */
    switch (f->id) {
    case 1: m->input[m->n_input++] = s; break;
    case 2: m->output[m->n_output++] = s; break;
    case 3: m->name = s; break;
    case 4:
        m->op_type = s;
        d->op = s;
        d->op_n = f->n;
        break;
    case 6: m->doc_string = s; break;
    default: m->domain = s; /* 7 */
    }
    return s != NULL;
}

static const Onnx__NodeProto node_init = ONNX__NODE_PROTO__INIT;
static const msgdef node_def = {
    sizeof node_init,
    &node_init,
    {[1] = {FIELD, 2, C1},
     [2] = {FIELD, 2, C2},
     [3] = {FIELD, 2},
     [4] = {FIELD, 2},
     [5] = {FIELD, 2, C3},
     [6] = {FIELD, 2},
     [7] = {FIELD, 2}},
    {ROOM(C1, Onnx__NodeProto, input), ROOM(C2, Onnx__NodeProto, output), ROOM(C3, Onnx__NodeProto, attribute)},
    node_field};

/* Nodes, nearly all of a big model's messages: message() made for node_def
 * alone, its rules, arrays and filler known to the compiler. */
static void *node_message(dec *d, const uint8_t *p, size_t len, int depth)
{
    return message_as(d, &node_def, p, len, depth);
}

static bool graph_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__GraphProto *m = msg;
    const uint8_t *v = f->v;
    switch (f->id) {
    case 1: return (m->node[m->n_node++] = node_message(d, v, f->n, depth + 1)) != NULL;
    case 2: return (m->name = str(d, f)) != NULL;
    case 5: return (m->initializer[m->n_initializer++] = message(d, &tensor_def, v, f->n, depth + 1)) != NULL;
    case 10: return (m->doc_string = str(d, f)) != NULL;
    case 11: return (m->input[m->n_input++] = message(d, &value_info_def, v, f->n, depth + 1)) != NULL;
    case 12: return (m->output[m->n_output++] = message(d, &value_info_def, v, f->n, depth + 1)) != NULL;
    default: return (m->value_info[m->n_value_info++] = message(d, &value_info_def, v, f->n, depth + 1)) != NULL;
    }
}

/* 14, 15: annotations, sparse initializers, which protobuf-c reads */
static const Onnx__GraphProto graph_init = ONNX__GRAPH_PROTO__INIT;
static const msgdef graph_def = {sizeof graph_init,
                                 &graph_init,
                                 {[1] = {FIELD, 2, C1},
                                  [2] = {FIELD, 2},
                                  [5] = {FIELD, 2, C2},
                                  [10] = {FIELD, 2},
                                  [11] = {FIELD, 2, C3},
                                  [12] = {FIELD, 2, C4},
                                  [13] = {FIELD, 2, C5},
                                  [14] = {DECLINE},
                                  [15] = {DECLINE}},
                                 {ROOM(C1, Onnx__GraphProto, node), ROOM(C2, Onnx__GraphProto, initializer),
                                  ROOM(C3, Onnx__GraphProto, input), ROOM(C4, Onnx__GraphProto, output),
                                  ROOM(C5, Onnx__GraphProto, value_info)},
                                 graph_field};

static bool model_field(dec *d, void *msg, const fld *f, int depth)
{
    Onnx__ModelProto *m = msg;
    switch (f->id) {
    case 1:
        m->has_ir_version = 1;
        m->ir_version = (int64_t)f->x;
        return true;
    case 2: return (m->producer_name = str(d, f)) != NULL;
    case 3: return (m->producer_version = str(d, f)) != NULL;
    case 4: return (m->domain = str(d, f)) != NULL;
    case 5:
        m->has_model_version = 1;
        m->model_version = (int64_t)f->x;
        return true;
    case 6: return (m->doc_string = str(d, f)) != NULL;
    case 7: return (m->graph = message(d, &graph_def, f->v, f->n, depth + 1)) != NULL;
    case 8: return (m->opset_import[m->n_opset_import++] = message(d, &opset_def, f->v, f->n, depth + 1)) != NULL;
    default: /* 14 */
        return (m->metadata_props[m->n_metadata_props++] = message(d, &entry_def, f->v, f->n, depth + 1)) != NULL;
    }
}

/* 20, 25: training info, functions, which protobuf-c reads */
static const Onnx__ModelProto model_init = ONNX__MODEL_PROTO__INIT;
static const msgdef model_def = {sizeof model_init,
                                 &model_init,
                                 {[1] = {FIELD, 0},
                                  [2] = {FIELD, 2},
                                  [3] = {FIELD, 2},
                                  [4] = {FIELD, 2},
                                  [5] = {FIELD, 0},
                                  [6] = {FIELD, 2},
                                  [7] = {FIELD, 2, C1, 1},
                                  [8] = {FIELD, 2, C2},
                                  [14] = {FIELD, 2, C3},
                                  [20] = {DECLINE},
                                  [25] = {DECLINE}},
                                 {ROOM(C2, Onnx__ModelProto, opset_import), ROOM(C3, Onnx__ModelProto, metadata_props)},
                                 model_field};

Onnx__ModelProto *cv_decode_model(const uint8_t *p, size_t n, cv_pb_bump *bump, const ProtobufCAllocator *names)
{
    /* a model of some size: its first chunk already on huge pages */
    if (n >= (4u << 20) && bump->grow < (2u << 20))
        bump->grow = 2u << 20;
    dec d = {cv_pb_bump_allocator(bump), cv_pb_bump_allocator(bump), NULL, NULL, p + n, NULL, 0};
    if (names)
        d.names = *names;
    return message(&d, &model_def, p, n, 0);
}

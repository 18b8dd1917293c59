/* wire.c: a protobuf wire-format walker that explains why bytes are not a
 * valid message. protobuf-c only says "failed"; users need "where". */
#include "onnx_io.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* allocator_data, when set, points to a bool that records a failed
 * allocation: protobuf-c reports it only as a failed unpack. */
static void *pb_alloc(void *u, size_t n)
{
    void *p = cv_malloc(n);
    if (!p && u)
        *(bool *)u = true;
    return p;
}
static void pb_free(void *u, void *p) { (void)u; cv_free(p); }
ProtobufCAllocator cv_pb_allocator = {pb_alloc, pb_free, NULL};

/* A bump allocator for decoding a whole model: protobuf-c allocates every
 * message and array on its own, and freeing them walks the tree again; here
 * they come from chunks that are dropped together.
 *
 * Nearly all of a big model's decoded bytes are tensor data copied out of
 * the file, written once and kept by the model: page faults on that fresh
 * memory were a third of OCR rec's CPU time. Chunks grow (1 MiB doubling to
 * 16 MiB), and memory of 2 MiB and more starts on a 2 MiB boundary and is
 * advised to be backed by huge pages (transparent huge pages, when the
 * system allows them for advised memory): a 10.8 MB copy then takes about
 * 300 faults instead of 2,900, 2-3 ms of CPU instead of 7-9 (a microbench
 * of the same copy on this machine). Advice only: without it nothing but
 * the speed changes. */
typedef struct pb_chunk {
    struct pb_chunk *next;
    void *block; /* the cv_malloc'd block holding this header and data */
    size_t cap, used;
    size_t pinned; /* bytes of tensor data that would rather stay here than be copied */
    bool alone; /* one big block (2 MiB and more): a tensor's raw_data can keep it */
    max_align_t data[];
} pb_chunk;

#define HUGE_PAGE ((size_t)2 << 20)

static pb_chunk *chunk_new(size_t cap)
{
    bool huge = cap >= HUGE_PAGE;
    void *block = cv_malloc(sizeof(pb_chunk) + cap + (huge ? HUGE_PAGE : 0));
    if (!block)
        return NULL;
    pb_chunk *c = block;
    if (huge) {
        /* the header just below a 2 MiB boundary, the data from it */
        uintptr_t at = ((uintptr_t)block + sizeof(pb_chunk) + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        c = (pb_chunk *)(at - sizeof(pb_chunk));
        cv_advise_huge(c->data, cap);
    }
    c->block = block;
    c->cap = cap;
    c->used = 0;
    c->pinned = 0;
    c->alone = false;
    return c;
}

static void *bump_alloc(void *u, size_t n)
{
    cv_pb_bump *b = u;
    n = (n + 15) & ~(size_t)15;
    pb_chunk *c = b->head;
    if (!c || c->cap - c->used < n) {
        /* a block of its own (which a tensor can keep) only from 2 MiB:
         * smaller ones share the growing chunks' huge pages */
        bool alone = n >= HUGE_PAGE;
        if (!alone && b->grow < (1u << 20))
            b->grow = 1u << 20;
        pb_chunk *nc = chunk_new(alone ? n : b->grow > n ? b->grow : n);
        if (!nc) {
            b->failed = true;
            return NULL;
        }
        if (!alone && b->grow < (16u << 20))
            b->grow *= 2;
        nc->alone = alone;
        if (c && nc->alone) { /* a big block behind the current chunk */
            nc->next = c->next;
            c->next = nc;
            nc->used = n;
            return nc->data;
        }
        nc->next = c;
        b->head = c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static void bump_free(void *u, void *p) { (void)u, (void)p; }

ProtobufCAllocator cv_pb_bump_allocator(cv_pb_bump *b)
{
    return (ProtobufCAllocator){bump_alloc, bump_free, b};
}

void *cv_pb_bump_detach(cv_pb_bump *b, const void *data)
{
    for (pb_chunk **pp = &b->head; *pp; pp = &(*pp)->next) {
        pb_chunk *c = *pp;
        if (c->alone && (const void *)c->data == data) {
            *pp = c->next;
            return c->block;
        }
    }
    return NULL;
}

static pb_chunk *chunk_of(cv_pb_bump *b, const void *p, pb_chunk ***link)
{
    for (pb_chunk **pp = &b->head; *pp; pp = &(*pp)->next) {
        const char *d = (const char *)(*pp)->data;
        if ((const char *)p >= d && (const char *)p < d + (*pp)->used) {
            if (link)
                *link = pp;
            return *pp;
        }
    }
    return NULL;
}

bool cv_pb_bump_pin(cv_pb_bump *b, const void *data, size_t n)
{
    pb_chunk *c = chunk_of(b, data, NULL);
    if (c)
        c->pinned += n;
    return c != NULL;
}

bool cv_pb_bump_keeps(cv_pb_bump *b, const void *data)
{
    /* kept when tensor data fills a quarter of it: less, and the copy is
     * cheaper than the memory the rest of the chunk would hold */
    const pb_chunk *c = chunk_of(b, data, NULL);
    return c && c->pinned >= c->used / 4;
}

void *cv_pb_bump_take(cv_pb_bump *b, const void *data)
{
    pb_chunk **link = NULL, *c = chunk_of(b, data, &link);
    if (!c)
        return NULL;
    *link = c->next;
    return c->block;
}

void cv_pb_bump_free(cv_pb_bump *b)
{
    for (pb_chunk *c = b->head, *next; c; c = next) {
        next = c->next;
        cv_free(c->block);
    }
    b->head = NULL;
}

/* The path to the message being walked ("graph.node[3]") is written out
 * only when there is an error: one frame per nesting level meanwhile. */
typedef struct {
    const uint8_t *base;
    char *msg;
    size_t msgsz;
    struct {
        const char *name;
        unsigned idx;
        bool repeated;
    } frame[CV_WIRE_MAX_DEPTH + 2];
} walker;

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

size_t cv_varint_put(uint8_t *out, uint64_t v)
{
    size_t k = 0;
    do {
        out[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            out[k] |= 0x80;
        k++;
    } while (v);
    return k;
}

static bool bad(walker *w, int depth, const uint8_t *at, const char *what)
{
    char path[512] = "";
    for (int i = 0; i < depth; i++) {
        size_t keep = strlen(path);
        if (w->frame[i].repeated)
            snprintf(path + keep, sizeof path - keep, "%s%s[%u]", keep ? "." : "", w->frame[i].name,
                     w->frame[i].idx);
        else
            snprintf(path + keep, sizeof path - keep, "%s%s", keep ? "." : "", w->frame[i].name);
    }
    snprintf(w->msg, w->msgsz, "%s%s%s at byte %zu", path[0] ? path : "", path[0] ? ": " : "", what,
             (size_t)(at - w->base));
    return false;
}

static int expected_wire(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
    }
}

static bool walk(walker *w, const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                 int depth)
{
    if (depth > CV_WIRE_MAX_DEPTH)
        return bad(w, depth, p, "messages nested more than " CV_STR(CV_WIRE_MAX_DEPTH) " deep");
    unsigned counts[64] = {0}; /* repeated index per field slot, for the path */
    while (p < end) {
        const uint8_t *field_start = p;
        uint64_t key;
        if (!varint(&p, end, &key))
            return bad(w, depth, field_start, "truncated field key");
        uint32_t id = (uint32_t)(key >> 3);
        int wt = (int)(key & 7);
        if (id == 0)
            return bad(w, depth, field_start, "field number 0");
        const ProtobufCFieldDescriptor *f = d ? protobuf_c_message_descriptor_get_field(d, id) : NULL;
        uint64_t len = 0, tmp;
        const uint8_t *payload = p;
        switch (wt) {
        case 0:
            if (!varint(&p, end, &tmp))
                return bad(w, depth, field_start, "truncated varint");
            break;
        case 1:
            if (end - p < 8)
                return bad(w, depth, field_start, "truncated 64-bit field");
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return bad(w, depth, field_start, "truncated 32-bit field");
            p += 4;
            break;
        case 2:
            if (!varint(&p, end, &len))
                return bad(w, depth, field_start, "truncated length");
            if (len > (uint64_t)(end - p)) {
                char t[160];
                snprintf(t, sizeof t, "field %u%s%s: length %llu runs past the end", id, f ? " " : "",
                         f ? f->name : "", (unsigned long long)len);
                return bad(w, depth, field_start, t);
            }
            payload = p;
            p += len;
            break;
        default: {
            char t[96];
            snprintf(t, sizeof t, "field %u has invalid wire type %d", id, wt);
            return bad(w, depth, field_start, t);
        }
        }
        if (!f)
            continue; /* unknown field: kept verbatim, any wire type is fine */
        int want = expected_wire(f);
        bool packed_ok = f->label == PROTOBUF_C_LABEL_REPEATED && wt == 2 && want != 2;
        if (wt != want && !packed_ok) {
            char t[160];
            snprintf(t, sizeof t, "field %u (%s) has wire type %d, expected %d", id, f->name, wt, want);
            return bad(w, depth, field_start, t);
        }
        if (f->type == PROTOBUF_C_TYPE_MESSAGE && wt == 2) {
            w->frame[depth].name = f->name;
            w->frame[depth].idx = counts[(f - d->fields) & 63]++;
            w->frame[depth].repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
            if (!walk(w, payload, payload + len, f->descriptor, depth + 1))
                return false;
        } else if (packed_ok) {
            const uint8_t *q = payload, *qe = payload + len;
            int unit = want == 5 ? 4 : want == 1 ? 8 : 0;
            if (unit && len % (uint64_t)unit)
                return bad(w, depth, field_start, "packed field length is not a whole number of elements");
            while (!unit && q < qe)
                if (!varint(&q, qe, &tmp))
                    return bad(w, depth, q, "truncated varint in packed field");
        }
    }
    return true;
}

bool cv_wire_check(const uint8_t *p, size_t n, const ProtobufCMessageDescriptor *d, char *msg,
                   size_t msgsz)
{
    walker w = {.base = p, .msg = msg, .msgsz = msgsz};
    return walk(&w, p, p + n, d, 0);
}

/* onnx_io.h: ONNX import and export internals. One section per file. */
#ifndef CARVE_ONNX_IO_H
#define CARVE_ONNX_IO_H

#include "../ir/ir.h"
#include "onnx.pb-c.h"

/* ================================================================ wire.c */

/* The deepest message nesting carve reads, and so writes (export.c checks
 * what it packs with cv_wire_check before writing a byte): protobuf's
 * default recursion limit of 100, which ONNX's own tools read models with,
 * plus 3 levels (Delegate node, attribute, body graph) for each of the at
 * most 33 graph levels such a model can have, which lowering may wrap in a
 * Delegate: 100 + 99, rounded to 200 (docs/files.md). */
#define CV_WIRE_MAX_DEPTH 200
#define CV_STR_(x) #x
#define CV_STR(x) CV_STR_(x)

/* Walks protobuf bytes against a message descriptor and describes the first
 * malformation ("graph.node[3].attribute[0]: length 900 runs past the end at
 * byte 812"). Returns false with the text in msg when the bytes are bad. */
bool cv_wire_check(const uint8_t *p, size_t n, const ProtobufCMessageDescriptor *d, char *msg,
                   size_t msgsz);

/* Writes v as a protobuf varint (at most 10 bytes); returns its length. */
size_t cv_varint_put(uint8_t *out, uint64_t v);

/* protobuf-c allocator on top of carve's allocator hook. A copy whose
 * allocator_data points to a bool sets it when an allocation fails. */
extern ProtobufCAllocator cv_pb_allocator;
/* A bump allocator for one decode: nothing is freed until cv_pb_bump_free,
 * so free_unpacked is never needed. failed records an allocation that
 * failed (protobuf-c reports it only as a failed unpack). */
typedef struct cv_pb_bump {
    struct pb_chunk *head;
    size_t grow; /* size of the next chunk */
    bool failed;
} cv_pb_bump;
ProtobufCAllocator cv_pb_bump_allocator(cv_pb_bump *b);
void cv_pb_bump_free(cv_pb_bump *b);
/* When `data` is a big block of its own (2 MiB and more), takes it out of b
 * and returns the cv_malloc'd block that holds it (the caller frees that,
 * and data stays valid till then); NULL otherwise. */
void *cv_pb_bump_detach(cv_pb_bump *b, const void *data);
/* Tensor data of n bytes at `data` in b that would rather stay where it was
 * decoded than be copied: counted for its chunk. false: not in b. */
bool cv_pb_bump_pin(cv_pb_bump *b, const void *data, size_t n);
/* Is the chunk holding pinned data at `data` worth keeping whole (tensor
 * data fills enough of it)? When not, the data must be copied out. */
bool cv_pb_bump_keeps(cv_pb_bump *b, const void *data);
/* Takes the chunk holding `data` out of b and returns its cv_malloc'd block
 * (the caller frees it; data stays valid till then); NULL when no chunk of
 * b holds it (taken already). */
void *cv_pb_bump_take(cv_pb_bump *b, const void *data);

/* ================================================================ decode.c */

/* The model in bytes [p, p + n) decoded into protobuf-c's structs, from
 * bump, exactly as onnx__model_proto__unpack would; NULL when the bytes are
 * not the plain case it reads (then the wire walk and protobuf-c take
 * over, and say what is wrong) or an allocation failed (bump->failed, or
 * one from `names`, which the caller's allocator records). Strings go into
 * blocks from `names` when given (blocks that outlive bump: a loader keeps
 * the strings instead of copying them), else from bump. */
Onnx__ModelProto *cv_decode_model(const uint8_t *p, size_t n, cv_pb_bump *bump, const ProtobufCAllocator *names);

/* ================================================================ extdata.c */

/* Maps `length` bytes at `offset` of file `location` (relative to base_dir)
 * into memory. Refuses locations that leave base_dir. `what` names the
 * tensor in messages ("graph 'main': initializer 'w'"). */
carve_status cv_extdata_map(carve_model *m, const char *base_dir, const char *location,
                            uint64_t offset, uint64_t length, bool has_length, size_t want,
                            const char *what, const void **out);

/* ================================================================ import.c */
/* carve_model_load_file() / carve_model_load_memory() are public. */

/* Converts one TensorProto into a tensor in m's arena (external data is
 * resolved against base_dir). `what` names it in errors. */
carve_status cv_onnx_tensor(carve_model *m, const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                            cv_tensor **out);

/* ================================================================ encode.c */

/* The model's ONNX bytes (without external data), written back to front:
 * they are (*buf)[*start .. *start + *size), *buf from cv_malloc. *walk
 * (when walk is not NULL) says whether the reader's wire walk could refuse
 * them: messages nested near its depth limit, or bytes kept verbatim from a
 * read model (unknown fields, opaque types); every other byte is
 * well-formed by construction (tests: perf.encoder_matches_protobuf_c). */
carve_status cv_encode_model(const carve_model *m, void **buf, size_t *start, size_t *size, bool *walk);
/* The same bytes as parts to write one after the other: the encoder's
 * buffer, cut where tensor data of blob_min bytes or more goes, which is
 * left in the tensors' own memory (valid while the model is). */
typedef struct cv_pb_part {
    const void *p;
    size_t n;
    size_t at; /* the encoder's own use */
} cv_pb_part;
typedef struct cv_pb_out {
    uint8_t *buf; /* cv_malloc'd, with parts */
    cv_pb_part *parts;
    size_t n_parts, size; /* size: the bytes of all parts */
} cv_pb_out;
carve_status cv_encode_parts(const carve_model *m, size_t blob_min, cv_pb_out *out, bool *walk);
void cv_pb_out_free(cv_pb_out *e);

/* ================================================================ export.c */
/* carve_model_save_file() / carve_model_save_memory() are public. */

/* carve_outputs_add_model() with `what` naming the file in messages
 * ("partition 'Delegate_0'"); a failure fails the set. */
carve_status cv_save_model(carve_outputs *o, carve_model *m, const char *path, const carve_save_opts *opts,
                           const char *what);
/* The same bytes as carve_model_save_memory, made by protobuf-c from message
 * structs: the reference tests compare cv_encode_model with. */
carve_status cv_export_reference(carve_model *m, void **out, size_t *size);

#endif /* CARVE_ONNX_IO_H */

/* test_decode.c: carve's own decoder of ONNX bytes (src/onnx/decode.c)
 * gives what protobuf-c gives, or declines.
 *
 * "What protobuf-c gives" is checked by packing both decodings with
 * protobuf-c and comparing the bytes (every field, has_ flag, unknown field
 * and repeated element is in them). Declining is always allowed (the loader
 * then takes protobuf-c's path); accepting bytes that protobuf-c or the wire
 * walk refuse is not: random damage to real models checks that. */
#define _GNU_SOURCE
#include "testlib.h"

#include "onnx/onnx_io.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1: decoded and equal; 0: declined; -1: different (a failure). `slow_ok`
 * says whether the wire walk and protobuf-c accept the bytes. */
static int compare(const uint8_t *p, size_t n, bool *slow_ok)
{
    cv_pb_bump fast = {0}, slow = {0};
    Onnx__ModelProto *a = cv_decode_model(p, n, &fast, NULL);
    char why[700];
    Onnx__ModelProto *b = NULL;
    if (cv_wire_check(p, n, &onnx__model_proto__descriptor, why, sizeof why)) {
        ProtobufCAllocator pa = cv_pb_bump_allocator(&slow);
        b = onnx__model_proto__unpack(&pa, n, p);
    }
    *slow_ok = b != NULL;
    int r = a ? -1 : 0;
    if (a && b) {
        size_t na = protobuf_c_message_get_packed_size(&a->base), nb = protobuf_c_message_get_packed_size(&b->base);
        uint8_t *pa = malloc(na + 1), *pb = malloc(nb + 1);
        if (pa && pb && na == nb) {
            protobuf_c_message_pack(&a->base, pa);
            protobuf_c_message_pack(&b->base, pb);
            r = memcmp(pa, pb, na) ? -1 : 1;
        }
        free(pa);
        free(pb);
    }
    cv_pb_bump_free(&fast);
    cv_pb_bump_free(&slow);
    return r;
}

static int n_files, n_same, n_declined, n_differ;

static void one(const char *path)
{
    size_t n = 0;
    uint8_t *p = t_read_file(path, &n);
    if (!p)
        return;
    bool slow_ok;
    int r = compare(p, n, &slow_ok);
    n_files++;
    if (r > 0)
        n_same++;
    else if (r == 0)
        n_declined++;
    else {
        n_differ++;
        printf("  differs from protobuf-c: %s\n", path);
    }
    free(p);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t len = strlen(path);
    if (type == FTW_F && len > 5 && !strcmp(path + len - 5, ".onnx"))
        one(path);
    return 0;
}

TEST(matches_protobuf_c)
{
    CHECK(nftw(CARVE_TESTDATA_DIR, visit, 16, FTW_PHYS) == 0);
    /* the real models, when fetched (scripts/fetch-models.sh) */
    const char *cache = getenv("CARVE_MODEL_CACHE");
    char dir[4096];
    if (!cache || !*cache) {
        snprintf(dir, sizeof dir, "%s/.cache/carve-models", getenv("HOME") ? getenv("HOME") : ".");
        cache = dir;
    }
    static const char *const real[] = {
        "ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx",
        "ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx",
        "ocr-models-1.4.2/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "silero-vad-1.0.3/package/weights/silero_vad.onnx",
    };
    for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", cache, real[i]);
        if (access(path, R_OK) == 0)
            one(path);
    }
    printf("%d models: %d decoded as protobuf-c does, %d declined (protobuf-c's path), %d differ\n", n_files,
           n_same, n_declined, n_differ);
    CHECK(n_files > 500);
    CHECK_INT(n_differ, 0);
    CHECK(n_same > n_files * 9 / 10); /* declining is the exception */
}

/* The rich model (every kind of attribute, subgraphs, unknown fields kept
 * from a read model) and test models, damaged at random: whatever the
 * decoder accepts, protobuf-c (after the wire walk) accepts too, equal. */
TEST(damaged_bytes_declined_or_equal)
{
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = t_rich_model(ctx);
    REQUIRE(m);
    void *buf = NULL;
    size_t n = 0;
    REQUIRE_OK(ctx, carve_model_save_memory(m, &buf, &n));
    carve_model_free(m);
    uint8_t *copy = malloc(n + 16);
    REQUIRE(copy);
    uint64_t rs = 42;
    int accepted = 0, equal = 0, cases = 0;
    for (int k = 0; k < 4000; k++) {
        memcpy(copy, buf, n);
        size_t len = n;
        rs = rs * 6364136223846793005ull + 1442695040888963407ull;
        size_t at = (size_t)(rs >> 33) % n;
        switch (k % 5) {
        case 0: copy[at] ^= (uint8_t)(1u << ((rs >> 20) & 7)); break; /* a bit */
        case 1: copy[at] = 0x80; break;                                /* a varint that goes on */
        case 2: copy[at] = 0xff; break;
        case 3: len = at; break;                                       /* cut short */
        case 4: copy[at] = (uint8_t)(rs >> 40); break;                 /* any byte */
        }
        bool slow_ok;
        int r = compare(copy, len, &slow_ok);
        cases++;
        if (r != 0)
            accepted++;
        if (r > 0)
            equal++;
        if (r < 0)
            printf("  case %d (kind %d at byte %zu): %s\n", k, k % 5, at,
                   slow_ok ? "differs from protobuf-c" : "accepted what protobuf-c or the wire walk refuse");
        CHECK(r >= 0);
    }
    printf("%d damaged copies: %d decoded (all as protobuf-c does), %d declined\n", cases, accepted,
           cases - accepted);
    CHECK(accepted > 100 && equal == accepted);
    carve_free(buf);
    free(copy);
    carve_ctx_free(ctx);
}

/* What the decoder declines still loads, through protobuf-c: a model with
 * a sequence type and training info (fields it leaves to protobuf-c) loads
 * and saves as before; a broken model is still named by the wire walk. */
TEST(declined_models_load_through_protobuf_c)
{
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
    Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    Onnx__OperatorSetIdProto *ops[1] = {&op};
    Onnx__TypeProto seq = ONNX__TYPE_PROTO__INIT, elem = ONNX__TYPE_PROTO__INIT;
    Onnx__TypeProto__Sequence sq = ONNX__TYPE_PROTO__SEQUENCE__INIT;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    Onnx__ValueInfoProto in = ONNX__VALUE_INFO_PROTO__INIT, out = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__ValueInfoProto *ins[1] = {&in}, *outs[1] = {&out};
    Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT;
    Onnx__NodeProto *nodes[1] = {&nd};
    char *nin[1] = {"s"}, *nout[1] = {"t"};
    mp.has_ir_version = 1, mp.ir_version = 8;
    op.domain = "", op.has_version = 1, op.version = 17;
    mp.n_opset_import = 1, mp.opset_import = ops;
    tt.has_elem_type = 1, tt.elem_type = 1;
    elem.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, elem.tensor_type = &tt;
    sq.elem_type = &elem;
    seq.value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE, seq.sequence_type = &sq;
    in.name = "s", in.type = &seq;
    out.name = "t", out.type = &seq;
    nd.op_type = "Identity", nd.n_input = 1, nd.input = nin, nd.n_output = 1, nd.output = nout;
    gp.name = "g", gp.n_node = 1, gp.node = nodes, gp.n_input = 1, gp.input = ins, gp.n_output = 1, gp.output = outs;
    mp.graph = &gp;
    size_t n = protobuf_c_message_get_packed_size(&mp.base);
    uint8_t *p = malloc(n);
    REQUIRE(p);
    protobuf_c_message_pack(&mp.base, p);
    bool slow_ok;
    CHECK_INT(compare(p, n, &slow_ok), 0); /* declined */
    CHECK(slow_ok);
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    REQUIRE_OK(ctx, carve_model_load_memory(ctx, p, n, NULL, &m));
    void *back = NULL, *again = NULL;
    size_t nb = 0, na = 0;
    CHECK_OK(ctx, carve_model_save_memory(m, &back, &nb));
    carve_model_free(m);
    m = NULL;
    /* the sequence type went through: saved, it loads and saves the same */
    CHECK(compare(back, nb, &slow_ok) == 0 && slow_ok);
    REQUIRE_OK(ctx, carve_model_load_memory(ctx, back, nb, NULL, &m));
    CHECK_OK(ctx, carve_model_save_memory(m, &again, &na));
    CHECK(na == nb && !memcmp(again, back, nb));
    CHECK(nb > 40 && memmem(back, nb, "Identity", 8) != NULL);
    carve_free(back);
    carve_free(again);
    carve_model_free(m);
    /* cut short: the wire walk's words, as before */
    CHECK_ERR(ctx, carve_model_load_memory(ctx, p, n - 3, NULL, &m), CARVE_ERR_PARSE,
              "not a valid ONNX model: field 8 opset_import: length 4 runs past the end at byte");
    free(p);
    carve_ctx_free(ctx);
}

/* ort_cases.c: writes small single-op models for the ops Debian's test data
 * (ONNX 1.12, opset 17) has no cases for, so tests/ort_ops.sh can compare
 * carve with onnxruntime on them: Gelu (opset 20, both approximations),
 * GroupNormalization (18 and 21), blocked DequantizeLinear / QuantizeLinear
 * (opset 21, block_size), int4/uint4 weights (opset 21), float8 weights
 * (opset 19); and bilinear Resize, which has node cases but must also round
 * as onnxruntime does (names ending in _exact: compared bit for bit).
 *
 *   ort_cases OUT_DIR      (one OUT_DIR/<case>.onnx per case) */
#include "opstest.h"

#include <stdlib.h>

static carve_ctx *ctx;
static const char *dir;
static int written;

static carve_model *model(int64_t opset)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", opset);
    return m;
}

static carve_value_id input(carve_model *m, const char *name, int rank, const int64_t *d)
{
    carve_dim dims[8];
    for (int i = 0; i < rank; i++)
        dims[i] = (carve_dim){d[i], NULL};
    return carve_graph_add_input(m, 0, name, CARVE_FLOAT, rank, dims);
}

static carve_value_id weight(carve_model *m, const char *name, carve_dtype t, int rank, const int64_t *d,
                             uint32_t seed, double lo, double hi)
{
    cv_val *v = ot_random(t, rank, d, seed, lo, hi);
    carve_value_id id = carve_graph_add_initializer(m, 0, name, t, rank, d, v->data, v->nbytes);
    cv_val_unref(v);
    return id;
}

static carve_node_id node(carve_model *m, const char *op, size_t n_in, const carve_value_id *in, const char *out)
{
    const char *outs[1] = {out};
    return carve_graph_add_node(m, 0, op, "", NULL, n_in, in, 1, outs);
}

static void save(carve_model *m, const char *name, carve_node_id last)
{
    carve_graph_add_output(m, 0, carve_node_output(m, last, 0));
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    if (carve_model_verify(m) || carve_model_save_file(m, path, NULL)) {
        fprintf(stderr, "ort_cases: %s: %s\n", name, carve_errmsg(ctx));
        exit(1);
    }
    written++;
    carve_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ort_cases OUT_DIR\n");
        return 2;
    }
    dir = argv[1];
    ctx = carve_ctx_new();
    int64_t x3[3] = {2, 5, 16}, x4[4] = {2, 6, 5, 5}, c6[1] = {6}, c3[1] = {3};
    for (int tanh = 0; tanh < 2; tanh++) {
        carve_model *m = model(20);
        carve_value_id x = input(m, "x", 3, x3);
        carve_node_id n = node(m, "Gelu", 1, &x, "y");
        if (tanh)
            carve_node_set_attr_string(m, n, "approximate", "tanh");
        save(m, tanh ? "gelu_tanh" : "gelu", n);
    }
    {
        carve_model *m = model(18);
        carve_value_id x = input(m, "x", 4, x4);
        carve_value_id in[3] = {x, weight(m, "scale", CARVE_FLOAT, 1, c3, 1, 0.5, 1.5),
                                weight(m, "bias", CARVE_FLOAT, 1, c3, 2, -0.5, 0.5)};
        carve_node_id n = node(m, "GroupNormalization", 3, in, "y");
        carve_node_set_attr_int(m, n, "num_groups", 3);
        save(m, "groupnorm_18", n);
    }
    {
        carve_model *m = model(21);
        carve_value_id x = input(m, "x", 4, x4);
        carve_value_id in[3] = {x, weight(m, "scale", CARVE_FLOAT, 1, c6, 1, 0.5, 1.5),
                                weight(m, "bias", CARVE_FLOAT, 1, c6, 2, -0.5, 0.5)};
        carve_node_id n = node(m, "GroupNormalization", 3, in, "y");
        carve_node_set_attr_int(m, n, "num_groups", 2);
        save(m, "groupnorm_21", n);
    }
    /* y = x @ DequantizeLinear(w) with blocked scales along axis 0 (K) */
    struct {
        const char *name;
        carve_dtype t;
        int64_t opset, block;
    } wq[] = {{"dq_int8_blocked", CARVE_INT8, 21, 4},  {"dq_int4_blocked", CARVE_INT4, 21, 4},
              {"dq_uint4_blocked", CARVE_UINT4, 21, 8}, {"dq_int4_per_axis", CARVE_INT4, 21, 0},
              {"dq_float8e4m3fn", CARVE_FLOAT8E4M3FN, 19, 0}, {"dq_float8e5m2", CARVE_FLOAT8E5M2, 19, 0}};
    for (size_t i = 0; i < sizeof wq / sizeof *wq; i++) {
        carve_model *m = model(wq[i].opset);
        int64_t xd[2] = {3, 16}, wd[2] = {16, 8};
        carve_value_id x = input(m, "x", 2, xd);
        bool f8 = wq[i].t == CARVE_FLOAT8E4M3FN || wq[i].t == CARVE_FLOAT8E5M2;
        bool sgn = wq[i].t != CARVE_UINT4;
        carve_value_id w = weight(m, "w", wq[i].t, 2, wd, 3 + (uint32_t)i, f8 ? -4 : sgn ? -8 : 0, f8 ? 4 : sgn ? 8 : 16);
        carve_value_id s, z = CARVE_NONE;
        if (wq[i].block) {
            int64_t sd[2] = {16 / wq[i].block, 8};
            s = weight(m, "w_scale", CARVE_FLOAT, 2, sd, 9, 0.01, 0.1);
            z = weight(m, "w_zero", wq[i].t, 2, sd, 10, sgn ? -2 : 0, sgn ? 2 : 4);
        } else if (!f8) {
            int64_t sd[1] = {8};
            s = weight(m, "w_scale", CARVE_FLOAT, 1, sd, 9, 0.01, 0.1);
        } else {
            s = weight(m, "w_scale", CARVE_FLOAT, 0, NULL, 9, 0.01, 0.1);
        }
        carve_value_id dq_in[3] = {w, s, z};
        carve_node_id dq = node(m, "DequantizeLinear", z == CARVE_NONE ? 2 : 3, dq_in, "w_f");
        if (wq[i].block) {
            carve_node_set_attr_int(m, dq, "axis", 0);
            carve_node_set_attr_int(m, dq, "block_size", wq[i].block);
        } else if (!f8) {
            carve_node_set_attr_int(m, dq, "axis", 1);
        }
        carve_value_id mm[2] = {x, carve_node_output(m, dq, 0)};
        save(m, wq[i].name, node(m, "MatMul", 2, mm, "y"));
    }
    /* QuantizeLinear with blocked scales, then back: int8 and int4 */
    for (int four = 0; four < 2; four++) {
        carve_model *m = model(21);
        int64_t xd[2] = {4, 16}, sd[2] = {4, 4};
        carve_value_id x = input(m, "x", 2, xd);
        carve_value_id s = weight(m, "scale", CARVE_FLOAT, 2, sd, 5, 0.05, 0.2);
        carve_dtype t = four ? CARVE_INT4 : CARVE_INT8;
        carve_value_id z = weight(m, "zero", t, 2, sd, 6, -2, 2);
        carve_value_id q_in[3] = {x, s, z};
        carve_node_id q = node(m, "QuantizeLinear", 3, q_in, "q");
        carve_node_set_attr_int(m, q, "axis", 1);
        carve_node_set_attr_int(m, q, "block_size", 4);
        carve_value_id d_in[3] = {carve_node_output(m, q, 0), s, z};
        carve_node_id d = node(m, "DequantizeLinear", 3, d_in, "y");
        carve_node_set_attr_int(m, d, "axis", 1);
        carve_node_set_attr_int(m, d, "block_size", 4);
        save(m, four ? "qdq_int4_blocked" : "qdq_int8_blocked", d);
    }
    /* Resize linear over two adjacent axes (NCHW, NHWC, 2-D): a quantized
     * model downstream turns a last-bit difference into a different value,
     * so carve rounds as onnxruntime does (k_resize.c). */
    struct {
        const char *name, *ct;
        int64_t opset;
        int rank;
        int64_t in[4], sizes[4]; /* sizes[0] == 0: scales */
        float scales[4];
    } rz[] = {
        {"resize_linear_half_pixel_exact", "half_pixel", 13, 4, {1, 3, 7, 9}, {1, 3, 17, 5}, {0}},
        {"resize_linear_nhwc_exact", "half_pixel", 13, 4, {1, 6, 5, 3}, {1, 11, 13, 3}, {0}},
        {"resize_linear_2d_exact", "half_pixel", 13, 2, {5, 8}, {12, 19}, {0}},
        {"resize_linear_align_corners_exact", "align_corners", 13, 4, {2, 2, 5, 8}, {2, 2, 9, 3}, {0}},
        {"resize_linear_pytorch_half_pixel_exact", "pytorch_half_pixel", 13, 4, {1, 4, 9, 6}, {1, 4, 4, 11}, {0}},
        {"resize_linear_asymmetric_scales_exact", "asymmetric", 13, 4, {1, 2, 6, 5}, {0}, {1, 1, 2.5f, 1.5f}},
        {"resize_linear_symmetric_exact", "half_pixel_symmetric", 19, 4, {1, 2, 6, 7}, {0}, {1, 1, 1.7f, 0.6f}},
    };
    for (size_t i = 0; i < sizeof rz / sizeof *rz; i++) {
        carve_model *m = model(rz[i].opset);
        int64_t n = rz[i].rank;
        carve_value_id in[4] = {input(m, "x", rz[i].rank, rz[i].in), CARVE_NONE, CARVE_NONE, CARVE_NONE};
        if (rz[i].sizes[0])
            in[3] = carve_graph_add_initializer(m, 0, "sizes", CARVE_INT64, 1, &n, rz[i].sizes,
                                                (size_t)n * sizeof(int64_t));
        else
            in[2] = carve_graph_add_initializer(m, 0, "scales", CARVE_FLOAT, 1, &n, rz[i].scales,
                                                (size_t)n * sizeof(float));
        carve_node_id r = node(m, "Resize", rz[i].sizes[0] ? 4 : 3, in, "y");
        carve_node_set_attr_string(m, r, "mode", "linear");
        carve_node_set_attr_string(m, r, "coordinate_transformation_mode", rz[i].ct);
        save(m, rz[i].name, r);
    }
    carve_ctx_free(ctx);
    printf("wrote %d models to %s\n", written, dir);
    return 0;
}

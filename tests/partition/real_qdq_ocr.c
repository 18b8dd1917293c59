/* real_qdq_ocr.c: a real float model quantized the way exporters write
 * static QDQ models (onnxruntime's quantize_static, QDQ format), then
 * lowered for htp.
 *
 * PP-OCRv4 det (ch_PP-OCRv4_det_infer.onnx) with its dims fixed to
 * 1 x 3 x 64 x 64 and folded as `carve fold` does (BatchNormalization into
 * Conv weights) is calibrated on two seeded synthetic pages (min/max of
 * every float activation) and quantized:
 *   - every float activation (the graph input, every node output) gets
 *     QuantizeLinear -> DequantizeLinear, uint8 asymmetric, scale
 *     (max - min) / 255 over a range holding 0, zero point rounded; the
 *     graph output is the last DequantizeLinear's output, under its name;
 *   - Conv weights: int8 symmetric per output channel (axis 0; ConvTranspose
 *     weights per output channel too, which is axis 1, as onnxruntime does),
 *     zero point 0; Conv biases: int32, scale input_scale * weight_scale[c],
 *     zero point 0, axis 0;
 *   - other constant float inputs (the per-channel Mul/Add constants, Clip
 *     bounds, Resize scales, BatchNormalization parameters) stay float.
 * Then:
 *   a. the quantized model verifies, runs, and differs from the float model
 *      (the quantization is real) while staying close to it;
 *   b. lowered for htp (folding on, and no_fold) it verifies and runs
 *      bit for bit as the unlowered quantized model does;
 *   c. no QDQ node unit is split between partitions, or a partition and CPU;
 *   d. everything is delegated, in one partition, as for the float model;
 *   e. the Delegate's `encodings` describe exactly the quantized values
 *      inserted: weights int8 per_axis, activations uint8 per_tensor,
 *      biases int32, with the scales and zero points written.
 * With one Conv kept on CPU by the user, its whole unit follows it (reason
 * node_unit); with the profile's qdq_node_units off, the same model splits
 * units, which check c must see (a control of the check).
 *
 * The inputs are synthetic text pages (tests/ocr_page.h): on random noise
 * the model finds no text and its output is ~1e-8 everywhere, so a
 * float/quantized comparison would say nothing.
 *
 *   real_qdq_ocr MODEL_CACHE      (QDQ_SAVE=FILE also writes the quantized model) */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "lowertest.h"
#include "ocr_page.h"

#include <math.h>
#include <time.h>

#define H OCR_PAGE_SIDE
#define W OCR_PAGE_SIDE
#define N_CALIB 2   /* calibration pages: seeds 1..N_CALIB */
#define EVAL_SEED 3 /* the page the models are compared on */
#define SKIPPED_CONV "p2o.Conv.2"

static carve_ctx *ctx;
static const int64_t in_dims[4] = {1, 3, H, W};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A copy through ONNX bytes. */
static carve_model *clone(carve_model *m)
{
    carve_model *c = ot_clone(m);
    OT_CHECK(c != NULL, "the model survives a round trip through ONNX bytes: %s", carve_errmsg(ctx));
    return c;
}

/* Page seed (tests/ocr_page.c) as the model's input. */
static cv_val *page(uint32_t seed)
{
    cv_val *v = cv_val_new(CARVE_FLOAT, 4, in_dims);
    ocr_page(seed, (float *)v->data);
    return v;
}

/* ---------------------------------------------------------------- calibration */

typedef struct range {
    float lo, hi;
    bool seen;
} range;

/* Runs a copy of fm with every node output added as a graph output on the
 * calibration pages; r[v] (v a value of fm) gets the min and max of every
 * float activation (the graph input and node outputs). */
static bool calibrate(carve_model *fm, range *r)
{
    carve_model *c = clone(fm);
    if (!c)
        return false;
    size_t n_out0 = carve_graph_output_count(c, 0), n_nodes = carve_graph_node_count(c, 0);
    for (size_t i = 0; i < n_nodes; i++) {
        carve_node_id n = carve_graph_node(c, 0, i);
        for (size_t k = 0; k < carve_node_output_count(c, n); k++) {
            carve_value_id v = carve_node_output(c, n, k);
            bool is_out = false;
            for (size_t j = 0; j < n_out0; j++)
                is_out = is_out || carve_graph_output(c, 0, j) == v;
            if (v != CARVE_NONE && !is_out)
                OT_CHECK(carve_graph_add_output(c, 0, v) == CARVE_OK, "calibration: '%s' becomes an output: %s",
                         carve_value_name(c, v), carve_errmsg(ctx));
        }
    }
    size_t n_out = carve_graph_output_count(c, 0);
    carve_tensor **outs = calloc(n_out, sizeof *outs);
    bool ok = true;
    for (uint32_t seed = 1; seed <= N_CALIB && ok; seed++) {
        carve_tensor *in[1] = {page(seed)};
        carve_status s = carve_model_run(c, in, outs);
        OT_CHECK(s == CARVE_OK, "calibration run on page %u: %s", seed, carve_errmsg(ctx));
        ok = s == CARVE_OK;
        for (size_t j = 0; ok && j <= n_out; j++) { /* the outputs, then the graph input */
            carve_tensor *t = j < n_out ? outs[j] : in[0];
            carve_value_id cv = j < n_out ? carve_graph_output(c, 0, j) : carve_graph_input(c, 0, 0);
            carve_value_id v = carve_graph_find_value(fm, 0, carve_value_name(c, cv));
            if (v == CARVE_NONE || carve_tensor_dtype(t) != CARVE_FLOAT)
                continue;
            size_t nb;
            const float *d = carve_tensor_data(t, &nb);
            for (size_t e = 0; e < carve_tensor_count(t); e++) {
                if (!r[v].seen || d[e] < r[v].lo)
                    r[v].lo = d[e];
                if (!r[v].seen || d[e] > r[v].hi)
                    r[v].hi = d[e];
                r[v].seen = true;
            }
        }
        for (size_t j = 0; j < n_out; j++) {
            carve_tensor_free(outs[j]);
            outs[j] = NULL;
        }
        carve_tensor_free(in[0]);
    }
    free(outs);
    carve_model_free(c);
    return ok;
}

/* ---------------------------------------------------------------- quantization */

typedef enum { Q_ACT, Q_WEIGHT, Q_BIAS } qkind;

/* A quantized value the quantizer inserted (a QuantizeLinear's output, an
 * integer initializer), for the checks on `encodings`. */
typedef struct qinfo {
    char name[320];
    qkind kind;
    int channels; /* weights, biases: one scale per index of axis */
    int axis;
    float scale; /* activations */
    uint8_t zp;
    int seen; /* times `encodings` describes it */
} qinfo;

typedef struct quant {
    carve_model *src, *dst;
    const range *r;
    carve_value_id *map;  /* src value -> the dst value its readers read */
    float *scale;         /* src activation -> its scale (0: not quantized) */
    carve_value_id *wmap; /* src weight -> its DequantizeLinear's output */
    float **wscale;       /* src weight -> its per-channel scales */
    qinfo *q;
    size_t n_q, cap_q;
    int n_qnodes, n_dqnodes, n_act, n_weight, n_bias;
} quant;

static qinfo *note(quant *qz, const char *name, qkind k, int channels, int axis)
{
    if (qz->n_q == qz->cap_q) {
        qz->cap_q = qz->cap_q ? 2 * qz->cap_q : 512;
        qz->q = realloc(qz->q, qz->cap_q * sizeof *qz->q);
    }
    qinfo *e = &qz->q[qz->n_q++];
    *e = (qinfo){.kind = k, .channels = channels, .axis = axis};
    snprintf(e->name, sizeof e->name, "%s", name);
    return e;
}

static carve_value_id node1(carve_model *m, const char *op, const char *name, size_t n_in, const carve_value_id *in,
                            const char *out)
{
    carve_node_id n = carve_graph_add_node(m, 0, op, "", name, n_in, in, 1, (const char *[]){out});
    OT_CHECK(n != CARVE_NONE, "add %s '%s': %s", op, name, carve_errmsg(ctx));
    return n == CARVE_NONE ? CARVE_NONE : carve_node_output(m, n, 0);
}

/* x (the dst value standing for src activation v) -> Q -> DQ, uint8
 * asymmetric over v's calibrated range widened to hold 0. Nodes are named
 * "<v>_q", "<v>_dq"; the DQ's output out_name (NULL: "<v>_DequantizeLinear_
 * Output"). Returns the DQ's output. */
static carve_value_id quantize_act(quant *qz, carve_value_id v, carve_value_id x, const char *out_name)
{
    const char *name = carve_value_name(qz->src, v);
    double lo = fmin(qz->r[v].lo, 0), hi = fmax(qz->r[v].hi, 0);
    float s = (float)((hi - lo) / 255);
    if (!(s > 0))
        s = 1; /* an activation that is always 0, as onnxruntime does */
    double z = nearbyint(-lo / s);
    uint8_t zp = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
    char sn[300], zn[300], qn[300], dn[300], qo[300], dqo[300];
    snprintf(sn, sizeof sn, "%s_scale", name), snprintf(zn, sizeof zn, "%s_zero_point", name);
    snprintf(qn, sizeof qn, "%s_q", name), snprintf(dn, sizeof dn, "%s_dq", name);
    snprintf(qo, sizeof qo, "%s_QuantizeLinear_Output", name);
    snprintf(dqo, sizeof dqo, "%s_DequantizeLinear_Output", name);
    carve_value_id sv = carve_graph_add_initializer(qz->dst, 0, sn, CARVE_FLOAT, 0, NULL, &s, sizeof s);
    carve_value_id zv = carve_graph_add_initializer(qz->dst, 0, zn, CARVE_UINT8, 0, NULL, &zp, sizeof zp);
    carve_value_id q = node1(qz->dst, "QuantizeLinear", qn, 3, (carve_value_id[]){x, sv, zv}, qo);
    carve_value_id d =
        node1(qz->dst, "DequantizeLinear", dn, 3, (carve_value_id[]){q, sv, zv}, out_name ? out_name : dqo);
    qz->scale[v] = s;
    qz->n_qnodes++, qz->n_dqnodes++, qz->n_act++;
    qinfo *e = note(qz, qo, Q_ACT, 1, -1);
    e->scale = s, e->zp = zp;
    return d;
}

/* Conv / ConvTranspose weight w: int8 symmetric per index of `axis` (the
 * output channels; range [-127, 127]), zero point 0, + DequantizeLinear. */
static carve_value_id quantize_weight(quant *qz, carve_value_id w, int axis)
{
    if (qz->wmap[w] != CARVE_NONE)
        return qz->wmap[w];
    const carve_model *m = qz->src;
    const char *name = carve_value_name(m, w);
    int rank = carve_value_rank(m, w);
    int64_t d[CARVE_MAX_RANK], inner = 1;
    size_t count = 1, nb;
    for (int i = 0; i < rank; i++)
        d[i] = carve_value_dim(m, w, i).value, count *= (size_t)d[i];
    for (int i = axis + 1; i < rank; i++)
        inner *= d[i];
    const float *f = carve_value_data(m, w, &nb);
    int64_t c = d[axis];
    float *s = calloc((size_t)c, sizeof *s);
    int8_t *q = malloc(count), *zp = calloc((size_t)c, 1);
    for (size_t e = 0; e < count; e++) {
        size_t ch = (size_t)((int64_t)e / inner % c);
        s[ch] = fmaxf(s[ch], fabsf(f[e]));
    }
    for (int64_t ch = 0; ch < c; ch++)
        s[ch] = s[ch] > 0 ? s[ch] / 127.0f : 1.0f;
    for (size_t e = 0; e < count; e++) {
        double x = nearbyint(f[e] / s[(int64_t)e / inner % c]);
        q[e] = (int8_t)(x < -127 ? -127 : x > 127 ? 127 : x);
    }
    char qn[300], sn[300], zn[300], dn[300], dqo[300];
    snprintf(qn, sizeof qn, "%s_quantized", name), snprintf(sn, sizeof sn, "%s_scale", name);
    snprintf(zn, sizeof zn, "%s_zero_point", name), snprintf(dn, sizeof dn, "%s_dq", name);
    snprintf(dqo, sizeof dqo, "%s_DequantizeLinear_Output", name);
    carve_value_id qv = carve_graph_add_initializer(qz->dst, 0, qn, CARVE_INT8, rank, d, q, count);
    carve_value_id sv = carve_graph_add_initializer(qz->dst, 0, sn, CARVE_FLOAT, 1, &c, s, (size_t)c * sizeof *s);
    carve_value_id zv = carve_graph_add_initializer(qz->dst, 0, zn, CARVE_INT8, 1, &c, zp, (size_t)c);
    carve_value_id out = node1(qz->dst, "DequantizeLinear", dn, 3, (carve_value_id[]){qv, sv, zv}, dqo);
    if (out != CARVE_NONE)
        carve_node_set_attr_int(qz->dst, carve_value_producer(qz->dst, out), "axis", axis);
    free(q);
    free(zp);
    qz->wmap[w] = out;
    qz->wscale[w] = s;
    qz->n_dqnodes++, qz->n_weight++;
    note(qz, qn, Q_WEIGHT, (int)c, axis);
    return out;
}

/* Conv bias b: int32, scale x_scale * w_scale[c], zero point 0, axis 0.
 * A bias read by a second Conv gets its own copy, named after that Conv. */
static carve_value_id quantize_bias(quant *qz, carve_value_id b, float x_scale, const float *w_scale, const char *conv)
{
    const carve_model *m = qz->src;
    const char *name = carve_value_name(m, b);
    int64_t c = carve_value_dim(m, b, 0).value;
    size_t nb;
    const float *f = carve_value_data(m, b, &nb);
    float *s = malloc((size_t)c * sizeof *s);
    int32_t *q = malloc((size_t)c * sizeof *q), *zp = calloc((size_t)c, sizeof *zp);
    for (int64_t ch = 0; ch < c; ch++) {
        s[ch] = x_scale * w_scale[ch];
        double x = nearbyint(f[ch] / s[ch]);
        q[ch] = (int32_t)(x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : x);
    }
    char base[256], qn[320], sn[320], zn[320], dn[320], dqo[320];
    if (qz->map[b] == CARVE_NONE)
        snprintf(base, sizeof base, "%s", name);
    else
        snprintf(base, sizeof base, "%s_%s", name, conv);
    snprintf(qn, sizeof qn, "%s_quantized", base), snprintf(sn, sizeof sn, "%s_quantized_scale", base);
    snprintf(zn, sizeof zn, "%s_quantized_zero_point", base), snprintf(dn, sizeof dn, "%s_dq", base);
    snprintf(dqo, sizeof dqo, "%s_DequantizeLinear_Output", base);
    carve_value_id qv = carve_graph_add_initializer(qz->dst, 0, qn, CARVE_INT32, 1, &c, q, (size_t)c * sizeof *q);
    carve_value_id sv = carve_graph_add_initializer(qz->dst, 0, sn, CARVE_FLOAT, 1, &c, s, (size_t)c * sizeof *s);
    carve_value_id zv = carve_graph_add_initializer(qz->dst, 0, zn, CARVE_INT32, 1, &c, zp, (size_t)c * sizeof *zp);
    carve_value_id out = node1(qz->dst, "DequantizeLinear", dn, 3, (carve_value_id[]){qv, sv, zv}, dqo);
    if (out != CARVE_NONE)
        carve_node_set_attr_int(qz->dst, carve_value_producer(qz->dst, out), "axis", 0);
    free(s);
    free(q);
    free(zp);
    qz->map[b] = out; /* taken: a second reader gets its own */
    qz->n_dqnodes++, qz->n_bias++;
    note(qz, qn, Q_BIAS, (int)c, 0);
    return out;
}

/* A float constant read as it is (not a weight or bias). */
static carve_value_id copy_init(quant *qz, carve_value_id v)
{
    if (qz->map[v] != CARVE_NONE)
        return qz->map[v];
    const carve_model *m = qz->src;
    int rank = carve_value_rank(m, v);
    int64_t d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = carve_value_dim(m, v, i).value;
    size_t nb;
    const void *data = carve_value_data(m, v, &nb);
    qz->map[v] =
        carve_graph_add_initializer(qz->dst, 0, carve_value_name(m, v), carve_value_dtype(m, v), rank, d, data, nb);
    OT_CHECK(data && qz->map[v] != CARVE_NONE, "copy initializer '%s': %s", carve_value_name(m, v), carve_errmsg(ctx));
    return qz->map[v];
}

/* Copies the attributes of src node n to dst node o (the public API reads
 * only scalar attributes, so lists are read from the IR). */
static void copy_attrs(quant *qz, carve_node_id n, carve_node_id o)
{
    const cv_node *x = &qz->src->nodes[n];
    for (uint32_t j = 0; j < x->n_attr; j++) {
        const cv_attr *a = &x->attr[j];
        carve_status s = CARVE_ERR_UNSUPPORTED;
        char buf[256];
        switch (a->kind) {
        case CARVE_ATTR_INT: s = carve_node_set_attr_int(qz->dst, o, a->name, a->u.i); break;
        case CARVE_ATTR_FLOAT: s = carve_node_set_attr_float(qz->dst, o, a->name, a->u.f); break;
        case CARVE_ATTR_INTS: s = carve_node_set_attr_ints(qz->dst, o, a->name, a->n, a->u.ints); break;
        case CARVE_ATTR_FLOATS: s = carve_node_set_attr_floats(qz->dst, o, a->name, a->n, a->u.floats); break;
        case CARVE_ATTR_STRING:
            snprintf(buf, sizeof buf, "%.*s", (int)a->u.s.n, (const char *)a->u.s.p);
            s = carve_node_set_attr_string(qz->dst, o, a->name, buf);
            break;
        default: break;
        }
        OT_CHECK(s == CARVE_OK, "copy attribute %s (kind %d) of '%s'", a->name, (int)a->kind, x->name);
    }
}

/* The QDQ model of qz->src: the same nodes under the same names, in the
 * same order, each float output followed by its Q -> DQ. */
static carve_model *quantize(quant *qz)
{
    carve_model *fm = qz->src, *m = carve_model_new(ctx);
    qz->dst = m;
    carve_model_set_ir_version(m, carve_model_ir_version(fm));
    int64_t opset = carve_model_opset(fm, "");
    carve_model_set_opset(m, "", opset < 13 ? 13 : opset); /* per-axis DequantizeLinear */
    carve_model_set_producer(m, "carve tests/partition/real_qdq_ocr.c", "1");
    uint32_t nv = fm->n_values;
    qz->map = malloc(nv * sizeof *qz->map);
    qz->wmap = malloc(nv * sizeof *qz->wmap);
    qz->scale = calloc(nv, sizeof *qz->scale);
    qz->wscale = calloc(nv, sizeof *qz->wscale);
    for (uint32_t v = 0; v < nv; v++)
        qz->map[v] = qz->wmap[v] = CARVE_NONE;
    carve_value_id x = carve_graph_input(fm, 0, 0), out = carve_graph_output(fm, 0, 0);
    carve_dim xd[4];
    for (int i = 0; i < 4; i++)
        xd[i] = carve_value_dim(fm, x, i);
    carve_value_id nx = carve_graph_add_input(m, 0, carve_value_name(fm, x), CARVE_FLOAT, 4, xd);
    OT_CHECK(qz->r[x].seen, "the graph input is calibrated");
    qz->map[x] = quantize_act(qz, x, nx, NULL);
    for (size_t i = 0; i < carve_graph_node_count(fm, 0); i++) {
        carve_node_id n = carve_graph_node(fm, 0, i);
        const char *op = carve_node_op(fm, n), *nname = carve_node_name(fm, n);
        bool conv = !strcmp(op, "Conv"), convt = !strcmp(op, "ConvTranspose");
        size_t n_in = carve_node_input_count(fm, n), n_out = carve_node_output_count(fm, n);
        OT_CHECK(n_in <= 8 && n_out == 1, "'%s': %zu inputs, %zu outputs", nname, n_in, n_out);
        if (n_in > 8 || n_out != 1)
            break;
        carve_value_id in[8];
        for (size_t k = 0; k < n_in; k++) {
            carve_value_id v = carve_node_input(fm, n, k);
            bool is_const = v != CARVE_NONE && carve_value_kind_of(fm, v) == CARVE_VALUE_CONST;
            bool float_const = is_const && carve_value_dtype(fm, v) == CARVE_FLOAT;
            if (v == CARVE_NONE) {
                in[k] = CARVE_NONE;
            } else if ((conv || convt) && k == 1 && float_const) {
                in[k] = quantize_weight(qz, v, conv ? 0 : 1);
            } else if ((conv || convt) && k == 2 && float_const) {
                carve_value_id xv = carve_node_input(fm, n, 0), wv = carve_node_input(fm, n, 1);
                OT_CHECK(qz->scale[xv] > 0 && qz->wscale[wv], "'%s' reads a quantized input and weight", nname);
                if (!(qz->scale[xv] > 0 && qz->wscale[wv]))
                    return m;
                in[k] = quantize_bias(qz, v, qz->scale[xv], qz->wscale[wv], nname);
            } else if (is_const) {
                in[k] = copy_init(qz, v);
            } else {
                in[k] = qz->map[v];
            }
        }
        carve_value_id v = carve_node_output(fm, n, 0);
        bool quantized = qz->r[v].seen; /* a float activation */
        char rn[300];
        const char *names[1] = {carve_value_name(fm, v)};
        if (v == out && quantized) { /* the output's name goes to its DequantizeLinear, as onnxruntime does */
            snprintf(rn, sizeof rn, "%s_QuantizeLinear_Input", names[0]);
            names[0] = rn;
        }
        carve_node_id o = carve_graph_add_node(m, 0, op, carve_node_domain(fm, n), nname, n_in, in, 1, names);
        OT_CHECK(o != CARVE_NONE, "copy '%s': %s", nname, carve_errmsg(ctx));
        if (o == CARVE_NONE)
            return m;
        copy_attrs(qz, n, o);
        carve_value_id ov = carve_node_output(m, o, 0);
        qz->map[v] = quantized ? quantize_act(qz, v, ov, v == out ? carve_value_name(fm, v) : NULL) : ov;
    }
    carve_value_id mo = qz->map[out];
    carve_dim od[CARVE_MAX_RANK];
    int orank = carve_value_rank(fm, out);
    for (int i = 0; i < orank; i++)
        od[i] = carve_value_dim(fm, out, i);
    carve_value_set_type(m, mo, CARVE_FLOAT, orank, od);
    OT_CHECK(carve_graph_add_output(m, 0, mo) == CARVE_OK, "graph output: %s", carve_errmsg(ctx));
    return m;
}

/* ---------------------------------------------------------------- checks on the report */

static bool is_qdq(const carve_model *m, carve_node_id n)
{
    const char *op = carve_node_op(m, n);
    return !strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear");
}

/* Check c. For every op X of qm (not a Q/DQ): each DequantizeLinear whose
 * output X alone reads, and the QuantizeLinear that alone reads X's output,
 * is placed where X is (the same partition, or both on CPU). Returns the
 * number of members placed apart from their op; OT_CHECKs each when
 * `strict`. *n_units gets the ops with at least one member, *n_members the
 * members. */
static int check_units(carve_model *qm, const cJSON *rep, bool strict, const char *label, int *n_units, int *n_members)
{
    uint32_t nv = qm->n_values;
    uint32_t *uses = calloc(nv, sizeof *uses);
    carve_node_id *reader = malloc(nv * sizeof *reader);
    size_t nn = carve_graph_node_count(qm, 0);
    for (size_t i = 0; i < nn; i++) {
        carve_node_id n = carve_graph_node(qm, 0, i);
        for (size_t k = 0; k < carve_node_input_count(qm, n); k++) {
            carve_value_id v = carve_node_input(qm, n, k);
            if (v != CARVE_NONE)
                uses[v]++, reader[v] = n;
        }
    }
    for (size_t k = 0; k < carve_graph_output_count(qm, 0); k++)
        uses[carve_graph_output(qm, 0, k)] += 2; /* a graph output is never inside a unit */
    int split = 0;
    *n_units = *n_members = 0;
    for (size_t i = 0; i < nn; i++) {
        carve_node_id x = carve_graph_node(qm, 0, i);
        if (is_qdq(qm, x))
            continue;
        char px[16], pm[16];
        const char *xp = lt_place(rep, carve_node_name(qm, x), px);
        int members = 0;
        carve_node_id mem[10];
        for (size_t k = 0; k < carve_node_input_count(qm, x); k++) {
            carve_value_id v = carve_node_input(qm, x, k);
            carve_node_id p = v != CARVE_NONE ? carve_value_producer(qm, v) : CARVE_NONE;
            if (p != CARVE_NONE && !strcmp(carve_node_op(qm, p), "DequantizeLinear") && uses[v] == 1 && members < 10)
                mem[members++] = p;
        }
        carve_value_id o = carve_node_output(qm, x, 0);
        if (uses[o] == 1 && !strcmp(carve_node_op(qm, reader[o]), "QuantizeLinear") && members < 10)
            mem[members++] = reader[o];
        *n_units += members > 0;
        *n_members += members;
        for (int k = 0; k < members; k++) {
            const char *mp = lt_place(rep, carve_node_name(qm, mem[k]), pm);
            bool same = !strcmp(mp, xp) && strcmp(xp, "absent");
            split += !same;
            if (strict)
                OT_CHECK(same, "%s: unit of '%s' (%s) is whole: its %s '%s' is placed with it (%s), got %s", label,
                         carve_node_name(qm, x), carve_node_op(qm, x), carve_node_op(qm, mem[k]),
                         carve_node_name(qm, mem[k]), xp, mp);
        }
    }
    free(uses);
    free(reader);
    return split;
}

typedef struct placement {
    int delegated, cpu, other, partitions;
} placement;

static placement count_placement(const cJSON *rep)
{
    placement p = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(rep, "nodes"))
    {
        const cJSON *pl = cJSON_GetObjectItem(e, "placement");
        if (cJSON_IsNumber(pl))
            p.delegated++;
        else if (cJSON_IsString(pl) && !strcmp(pl->valuestring, "cpu"))
            p.cpu++;
        else
            p.other++;
    }
    p.partitions = cJSON_GetArraySize(cJSON_GetObjectItem(rep, "partitions"));
    return p;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItem(o, k) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int jint(const cJSON *o, const char *k)
{
    const cJSON *v = o ? cJSON_GetObjectItem(o, k) : NULL;
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

/* An array of n numbers all equal to 0 (zero points), or the number 0. */
static bool all_zero(const cJSON *z, int n)
{
    if (cJSON_IsNumber(z))
        return z->valuedouble == 0;
    if (!cJSON_IsArray(z) || cJSON_GetArraySize(z) != n)
        return false;
    const cJSON *e;
    cJSON_ArrayForEach(e, z)
    {
        if (!cJSON_IsNumber(e) || e->valuedouble != 0)
            return false;
    }
    return true;
}

static qinfo *find_q(quant *qz, const char *name)
{
    for (size_t i = 0; i < qz->n_q; i++)
        if (!strcmp(qz->q[i].name, name))
            return &qz->q[i];
    return NULL;
}

/* Check e: every entry of every partition's `encodings` is a value the
 * quantizer inserted, described as it was written; every inserted value is
 * described once. Returns the number of entries. */
static int check_encodings(quant *qz, const cJSON *rep, const char *label)
{
    for (size_t i = 0; i < qz->n_q; i++)
        qz->q[i].seen = 0;
    int n = 0, bad = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(rep, "partitions"))
    {
        const cJSON *enc = cJSON_GetObjectItem(p, "encodings"), *e;
        OT_CHECK(cJSON_IsObject(enc), "%s: partition %d carries encodings", label, jint(p, "index"));
        cJSON_ArrayForEach(e, enc)
        {
            n++;
            const char *key = e->string, *slash = strrchr(key, '/');
            /* body boundary values are "<delegate>/<name>" */
            if (slash && !strncmp(key, jstr(p, "delegate"), (size_t)(slash - key)))
                key = slash + 1;
            qinfo *q = find_q(qz, key);
            OT_CHECK(q != NULL, "%s: encoding '%s' is a value the quantizer inserted", label, e->string);
            if (!q)
                continue;
            q->seen++;
            const cJSON *sc = cJSON_GetObjectItem(e, "scale"), *zp = cJSON_GetObjectItem(e, "zero_point");
            bool ok;
            if (q->kind == Q_ACT) {
                ok = !strcmp(jstr(e, "dtype"), "uint8") && !strcmp(jstr(e, "granularity"), "per_tensor") &&
                     jint(e, "bits") == 8 && !cJSON_GetObjectItem(e, "axis") && cJSON_IsNumber(sc) &&
                     fabs(sc->valuedouble - q->scale) <= 1e-6 * q->scale && cJSON_IsNumber(zp) && zp->valueint == q->zp;
                OT_CHECK(ok,
                         "%s: activation '%s': uint8 per_tensor, 8 bits, scale %g, zero point %d; got %s %s bits %d "
                         "scale %g zero point %d",
                         label, key, q->scale, q->zp, jstr(e, "dtype"), jstr(e, "granularity"), jint(e, "bits"),
                         cJSON_IsNumber(sc) ? sc->valuedouble : -1.0, cJSON_IsNumber(zp) ? zp->valueint : -1);
            } else {
                bool w = q->kind == Q_WEIGHT;
                ok = !strcmp(jstr(e, "dtype"), w ? "int8" : "int32") && !strcmp(jstr(e, "granularity"), "per_axis") &&
                     jint(e, "axis") == q->axis && cJSON_GetArraySize(sc) == q->channels && all_zero(zp, q->channels) &&
                     jint(e, "bits") == (w ? 8 : 32);
                OT_CHECK(ok,
                         "%s: %s '%s': %s per_axis axis %d, %d scales, zero points 0, %d bits; got %s %s axis %d, "
                         "%d scales, bits %d",
                         label, w ? "weight" : "bias", key, w ? "int8" : "int32", q->axis, q->channels, w ? 8 : 32,
                         jstr(e, "dtype"), jstr(e, "granularity"), jint(e, "axis"), cJSON_GetArraySize(sc),
                         jint(e, "bits"));
            }
            bad += !ok;
        }
    }
    int missing = 0;
    const qinfo *first = NULL;
    for (size_t i = 0; i < qz->n_q; i++)
        if (qz->q[i].seen != 1 && !missing++)
            first = &qz->q[i];
    OT_CHECK(missing == 0,
             "%s: every inserted quantized value is described exactly once (%d are not, e.g. '%s', %d times)", label,
             missing, first ? first->name : "", first ? first->seen : 0);
    return n;
}

/* Checks b to e for one lowering of qm for htp. */
static void lower_quantized(quant *qz, carve_model *qm, const carve_lower_opts *opts, const char *label, cv_val **in,
                            size_t n_float_nodes, const cJSON *float_rep)
{
    cJSON *rep = NULL;
    double t = now_s();
    lt_result lr = lt_lower_run(qm, "htp", opts, in, 0, 0, &rep);
    /* the Delegate body runs the reference kernels the unlowered model runs */
    OT_CHECK(lr == LT_EQUAL,
             "%s: the lowered quantized model verifies, re-imports and gives the unlowered one's output "
             "bit for bit (result %d)",
             label, (int)lr);
    if (!rep)
        return;
    int n_units, n_members;
    int split = check_units(qm, rep, true, label, &n_units, &n_members);
    size_t nn = carve_graph_node_count(qm, 0);
    OT_CHECK(n_units == (int)n_float_nodes, "%s: every op of the float model is in a QDQ unit (%d units, %zu ops)",
             label, n_units, n_float_nodes);
    placement pl = count_placement(rep);
    OT_CHECK(pl.partitions == 1 && pl.delegated == (int)nn && pl.cpu == 0 && pl.other == 0,
             "%s: all %zu nodes delegated in 1 partition, as the float model's %zu; got %d partitions, %d delegated, "
             "%d on CPU, %d otherwise",
             label, nn, n_float_nodes, pl.partitions, pl.delegated, pl.cpu, pl.other);
    /* every node the float model delegates is delegated in the quantized one */
    const cJSON *e;
    int lost = 0;
    const char *first = "";
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(float_rep, "nodes"))
    {
        const char *name = jstr(e, "name");
        if (cJSON_IsNumber(cJSON_GetObjectItem(e, "placement")) &&
            !cJSON_IsNumber(cJSON_GetObjectItem(lt_node(rep, name), "placement")) && !lost++)
            first = name;
    }
    char b1[16];
    OT_CHECK(lost == 0,
             "%s: every node the float model delegates is delegated quantized (%d are not, e.g. '%s': %s %s)", label,
             lost, first, lost ? lt_place(rep, first, b1) : "", lost ? lt_reason(rep, first) : "");
    int n_enc = check_encodings(qz, rep, label);
    OT_CHECK(n_enc == (int)qz->n_q, "%s: %d encodings for the %zu quantized values inserted", label, n_enc, qz->n_q);
    printf("%-8s: %d partition(s), %d of %zu nodes delegated, %d on CPU; %d QDQ units (%d Q/DQ members), %d split; "
           "%d encodings (%.2f s)\n",
           label, pl.partitions, pl.delegated, nn, pl.cpu, n_units, n_members, split, n_enc, now_s() - t);
    cJSON_Delete(rep);
}

/* One Conv kept on CPU by the user: its unit follows it (reason node_unit)
 * and no unit is split. With the profile's qdq_node_units off, the Q/DQ
 * nodes around it stay delegated: units split, which check_units sees. */
static void skipped_conv(carve_model *qm, cv_val **in)
{
    const char *skip[1] = {SKIPPED_CONV};
    carve_lower_opts o = {.cpu_nodes = skip, .n_cpu_nodes = 1};
    cJSON *rep = NULL;
    OT_CHECK(lt_lower_run(qm, "htp", &o, in, 0, 0, &rep) == LT_EQUAL,
             "%s on CPU: the lowered model gives the unlowered one's output bit for bit", SKIPPED_CONV);
    if (rep) {
        int n_units, n_members;
        int split = check_units(qm, rep, true, SKIPPED_CONV " on CPU", &n_units, &n_members);
        carve_node_id c = carve_model_find_node(qm, SKIPPED_CONV);
        int on_cpu = 0;
        char b[16];
        OT_CHECK(c != CARVE_NONE, "the quantized model has '%s'", SKIPPED_CONV);
        for (size_t k = 0; c != CARVE_NONE && k < carve_node_input_count(qm, c); k++) {
            carve_node_id dq = carve_value_producer(qm, carve_node_input(qm, c, k));
            const char *name = carve_node_name(qm, dq);
            OT_CHECK(!strcmp(lt_place(rep, name, b), "cpu") && !strcmp(lt_reason(rep, name), "node_unit"),
                     "%s follows %s to CPU: reason node_unit, got %s %s", name, SKIPPED_CONV, lt_place(rep, name, b),
                     lt_reason(rep, name));
            on_cpu++;
        }
        OT_CHECK(!strcmp(lt_reason(rep, SKIPPED_CONV), "skipped_by_user"), "%s: skipped_by_user, got %s", SKIPPED_CONV,
                 lt_reason(rep, SKIPPED_CONV));
        placement pl = count_placement(rep);
        OT_CHECK(pl.cpu == on_cpu + 2 && pl.partitions == 2,
                 "%s on CPU: its unit (%d DQ, the Conv, its Q) on CPU, 2 partitions; got %d on CPU, %d partitions",
                 SKIPPED_CONV, on_cpu, pl.cpu, pl.partitions);
        printf("skip    : %s on CPU: %d partitions, %d delegated, %d on CPU, %d split units\n", SKIPPED_CONV,
               pl.partitions, pl.delegated, pl.cpu, split);
        cJSON_Delete(rep);
    }
    /* control: the same without node units */
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    if (!t)
        return;
    t->qdq_units = false;
    lt_target_override = t;
    rep = NULL;
    OT_CHECK(lt_lower_run(qm, "htp", &o, in, 0, 0, &rep) == LT_EQUAL, "no units: lowered equals unlowered");
    lt_target_override = NULL;
    if (rep) {
        int n_units, n_members;
        int split = check_units(qm, rep, false, "no units", &n_units, &n_members);
        OT_CHECK(split > 0,
                 "control: without qdq_node_units the unit of %s is split, and check c sees it (%d members "
                 "placed apart)",
                 SKIPPED_CONV, split);
        printf("control : qdq_node_units off, %s on CPU: %d unit members placed apart from their op\n", SKIPPED_CONV,
               split);
        cJSON_Delete(rep);
    }
    carve_target_free(t);
}

/* ---------------------------------------------------------------- main */

static double max_diff(const carve_tensor *a, const carve_tensor *b)
{
    if (!a || !b || carve_tensor_count(a) != carve_tensor_count(b))
        return INFINITY;
    double d = 0;
    for (size_t i = 0; i < carve_tensor_count(a); i++)
        d = fmax(d, fabs(carve_tensor_get(a, i) - carve_tensor_get(b, i)));
    return d;
}

/* Check a: the quantized output against the float one on the same page. */
static void compare_outputs(const carve_tensor *f, const carve_tensor *q)
{
    size_t n = carve_tensor_count(f);
    OT_CHECK(n == (size_t)H * W && carve_tensor_count(q) == n, "both outputs are 1 x 1 x %d x %d", H, W);
    if (n != (size_t)H * W || carve_tensor_count(q) != n)
        return;
    double sum = 0, fmx = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    size_t text = 0, agree = 0;
    for (size_t i = 0; i < n; i++) {
        double a = carve_tensor_get(f, i), b = carve_tensor_get(q, i);
        sum += fabs(a - b), fmx = fmax(fmx, a);
        sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b;
        text += a > 0.3, agree += a > 0.3 && b > 0.3; /* 0.3: PP-OCR's det_db_thresh */
    }
    double mean = sum / (double)n, mx = max_diff(f, q), dn = (double)n;
    double corr = (sab - sa * sb / dn) / sqrt((saa - sa * sa / dn) * (sbb - sb * sb / dn));
    printf("float vs quantized on page %d: max abs diff %.4g, mean abs diff %.4g, correlation %.3f; "
           "float finds %zu text pixels (max probability %.3f), quantized %zu of them\n",
           EVAL_SEED, mx, mean, corr, text, fmx, agree);
    OT_CHECK(fmx > 0.9 && text >= 50, "the float model finds text on the page (max probability %g, %zu pixels > 0.3)",
             fmx, text);
    OT_CHECK(mx > 1e-3, "the quantization is real: the outputs differ (max abs diff %g)", mx);
    /* Min/max uint8 quantization of every one of 329 activations (the
     * hardswish pieces, the squeeze-excite gates) is lossy: a few pixels
     * flip from text to background, so the max abs diff is ~1. Measured on
     * pages 1..12: mean abs diff 0.014-0.057, correlation 0.57-0.93, 29-93%
     * of the text pixels found. onnxruntime runs this quantized model to
     * carve's values (1e-3), so the loss is the quantization's. */
    OT_CHECK(mean < 0.1, "the quantized probability map is close to the float one: mean abs diff %g < 0.1", mean);
    OT_CHECK(corr > 0.5, "the quantized probability map follows the float one: correlation %g > 0.5", corr);
}

/* The AIMET round trip: strip the Q/DQ pairs (encodings file), apply the
 * file to the float graph again, in both versions: the outputs are the
 * quantized model's bit for bit. */
static void aimet_round_trip(carve_model *qm, cv_val **in)
{
    carve_tensor *want[1] = {0};
    OT_CHECK(carve_model_run(qm, in, want) == CARVE_OK, "the quantized model runs");
    for (int v = 0; v < 2 && want[0]; v++) {
        carve_aimet_version ver = v ? CARVE_AIMET_0_6_1 : CARVE_AIMET_1_0_0;
        carve_model *s = clone(qm);
        char *js = NULL;
        uint32_t kept = 0;
        OT_CHECK(s && carve_strip_qdq(s, ver, &js, &kept) == CARVE_OK && js, "strip (%s): %s", v ? "0.6.1" : "1.0.0",
                 carve_errmsg(ctx));
        size_t nq = 0;
        for (size_t i = 0; s && i < carve_graph_node_count(s, 0); i++) {
            const char *op = carve_node_op(s, carve_graph_node(s, 0, i));
            nq += !strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear");
        }
        carve_qdq_stats st = {0};
        OT_CHECK(js && carve_apply_encodings(s, js, strlen(js), &st) == CARVE_OK, "apply: %s", carve_errmsg(ctx));
        carve_tensor *got[1] = {0};
        char why[256] = "";
        bool same = s && carve_model_run(s, in, got) == CARVE_OK && ot_close(got[0], want[0], 0, 0, why, sizeof why);
        OT_CHECK(same, "AIMET %s round trip is bit-identical: %s", v ? "0.6.1" : "1.0.0", why);
        printf("AIMET %s round trip: %u Q/DQ nodes left after stripping (%zu in the graph), %u activation pairs and "
               "%u weights applied again, output %s\n",
               v ? "0.6.1" : "1.0.0", kept, nq, st.activations, st.params, same ? "bit-identical" : "DIFFERENT");
        carve_tensor_free(got[0]);
        carve_free(js);
        carve_model_free(s);
    }
    carve_tensor_free(want[0]);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: real_qdq_ocr MODEL_CACHE\n");
        return 2;
    }
    double t0 = now_s();
    ctx = carve_ctx_new();
    char path[4096];
    snprintf(path, sizeof path, "%s/ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx", argv[1]);
    carve_model *fm = NULL;
    OT_CHECK(carve_model_load_file(ctx, path, NULL, &fm) == CARVE_OK, "load %s: %s", path, carve_errmsg(ctx));
    if (!fm) {
        carve_ctx_free(ctx);
        return ot_finish();
    }
    /* what `carve run --dim p2o.DynamicDimension.0=1 ...` does */
    static const char *const dim_names[3] = {"p2o.DynamicDimension.0", "p2o.DynamicDimension.1",
                                             "p2o.DynamicDimension.2"};
    for (int i = 0; i < 3; i++)
        OT_CHECK(carve_model_fix_dim(fm, dim_names[i], in_dims[i ? i + 1 : 0]) == CARVE_OK, "fix %s: %s", dim_names[i],
                 carve_errmsg(ctx));
    carve_fold_stats fst = {0};
    OT_CHECK(carve_fold(fm, NULL, &fst) == CARVE_OK, "fold: %s", carve_errmsg(ctx));
    OT_CHECK(fst.bn_fused == 2, "folding fuses 2 BatchNormalizations into Convs, got %u", fst.bn_fused);
    size_t n_float = carve_graph_node_count(fm, 0);
    printf("float model: %u nodes, %zu after folding (%u BatchNormalization fused)\n", fst.nodes_before, n_float,
           fst.bn_fused);

    cv_val *in[1] = {page(EVAL_SEED)};
    /* the float model on htp, for comparison */
    cJSON *frep = NULL;
    /* at its opset (11): upgraded to 21, recomposition would make its HardSwish
     * patterns one op, which rounds differently and leaves fewer nodes to compare */
    static const carve_lower_opts keep_opset = {.no_upgrade = true};
    OT_CHECK(lt_lower_run(fm, "htp", &keep_opset, in, 0, 0, &frep) == LT_EQUAL,
             "the float model lowers and runs the same");
    placement fpl = frep ? count_placement(frep) : (placement){0};
    OT_CHECK(fpl.partitions == 1 && fpl.delegated == (int)n_float, "float: all %zu nodes in 1 partition (got %d, %d)",
             n_float, fpl.delegated, fpl.partitions);

    range *r = calloc(fm->n_values, sizeof *r);
    quant qz = {.src = fm, .r = r};
    carve_model *qm = calibrate(fm, r) ? quantize(&qz) : NULL;
    if (qm && frep) {
        size_t n_conv = 0, n_bias = 0, nq = carve_graph_node_count(qm, 0);
        for (size_t i = 0; i < n_float; i++) {
            carve_node_id n = carve_graph_node(fm, 0, i);
            bool c = !strcmp(carve_node_op(fm, n), "Conv") || !strcmp(carve_node_op(fm, n), "ConvTranspose");
            n_conv += c, n_bias += c && carve_node_input_count(fm, n) > 2;
        }
        printf("quantized: %zu nodes = %zu + %d QuantizeLinear + %d DequantizeLinear; %d activations, %d weights, "
               "%d biases quantized\n",
               nq, n_float, qz.n_qnodes, qz.n_dqnodes, qz.n_act, qz.n_weight, qz.n_bias);
        OT_CHECK(qz.n_act == (int)n_float + 1,
                 "every float activation quantized: the input and %zu node outputs, got %d", n_float, qz.n_act);
        OT_CHECK(qz.n_weight == (int)n_conv && qz.n_bias == (int)n_bias,
                 "%zu weights and %zu biases quantized, got %d, %d", n_conv, n_bias, qz.n_weight, qz.n_bias);
        OT_CHECK(nq == n_float + (size_t)qz.n_qnodes + (size_t)qz.n_dqnodes, "node count adds up");
        carve_value_id qo = carve_graph_output(qm, 0, 0);
        OT_CHECK(!strcmp(carve_value_name(qm, qo), carve_value_name(fm, carve_graph_output(fm, 0, 0))) &&
                     !strcmp(carve_node_op(qm, carve_value_producer(qm, qo)), "DequantizeLinear"),
                 "the graph output keeps its name '%s' and is the last DequantizeLinear's output",
                 carve_value_name(qm, qo));
        OT_CHECK(carve_model_verify(qm) == CARVE_OK, "the quantized model verifies: %s", carve_errmsg(ctx));
        if (getenv("QDQ_SAVE"))
            carve_model_save_file(qm, getenv("QDQ_SAVE"), NULL);

        carve_tensor *fo[1] = {0}, *qo_t[1] = {0};
        OT_CHECK(carve_model_run(fm, in, fo) == CARVE_OK, "the float model runs: %s", carve_errmsg(ctx));
        OT_CHECK(carve_model_run(qm, in, qo_t) == CARVE_OK, "the quantized model runs: %s", carve_errmsg(ctx));
        if (fo[0] && qo_t[0])
            compare_outputs(fo[0], qo_t[0]);
        carve_tensor_free(fo[0]);
        carve_tensor_free(qo_t[0]);

        aimet_round_trip(qm, in);
        lower_quantized(&qz, qm, NULL, "fold", in, n_float, frep);
        carve_lower_opts nf = {.no_fold = true};
        lower_quantized(&qz, qm, &nf, "no_fold", in, n_float, frep);
        skipped_conv(qm, in);
    }
    cJSON_Delete(frep);
    cv_val_unref(in[0]);
    if (qz.wscale)
        for (uint32_t v = 0; v < fm->n_values; v++)
            free(qz.wscale[v]);
    free(qz.wscale), free(qz.map), free(qz.wmap), free(qz.scale), free(qz.q), free(r);
    carve_model_free(qm);
    carve_model_free(fm);
    carve_ctx_free(ctx);
    printf("time %.2f s\n", now_s() - t0);
    return ot_finish();
}

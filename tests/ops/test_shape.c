/* test_shape.c: the shape family. The DepthToSpace / SpaceToDepth
 * decompositions (static, symbolic-batch and fully dynamic shapes; float32,
 * float16, int8), inference on symbolic shapes for every op with a shape
 * rule, error texts of bad inputs, the forms of older and newer opsets
 * (attributes that became inputs, allowzero, num_outputs, Pad axes and wrap,
 * reductions of the scatters), 4-bit and string data through the byte
 * kernels, the tiled transpose against a literal loop, Range at the int64
 * limits, and Dropout's training mode. */
#include "opstest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ model building */

typedef struct {
    carve_ctx *ctx;
    carve_model *m;
    cv_val *feed[8];
    int n_feed;
    carve_node_id node;
} tm;

static void tm_init(tm *t, int64_t opset)
{
    memset(t, 0, sizeof *t);
    t->ctx = carve_ctx_new();
    t->m = carve_model_new(t->ctx);
    carve_model_set_opset(t->m, "", opset);
}

static void tm_free(tm *t)
{
    for (int i = 0; i < t->n_feed; i++)
        cv_val_unref(t->feed[i]);
    carve_model_free(t->m);
    carve_ctx_free(t->ctx);
}

/* A graph input fed with v at run time (takes v's reference). */
static carve_value_id tm_in(tm *t, const char *name, cv_val *v)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < v->rank; i++)
        d[i] = (carve_dim){v->dims[i], NULL};
    t->feed[t->n_feed++] = v;
    return carve_graph_add_input(t->m, 0, name, v->dtype, v->rank, d);
}

/* "N,3,?" -> dims: numbers known, "?" unknown, other words params. "*" is
 * an unknown rank. */
static int parse_dims(const char *s, carve_dim *d, char names[][16])
{
    if (!strcmp(s, "*"))
        return -1;
    int r = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        char tok[16] = {0};
        memcpy(tok, s, n < 15 ? n : 15);
        if (tok[0] >= '0' && tok[0] <= '9')
            d[r] = (carve_dim){atoll(tok), NULL};
        else if (!strcmp(tok, "?"))
            d[r] = (carve_dim){-1, NULL};
        else {
            memcpy(names[r], tok, sizeof tok);
            d[r] = (carve_dim){-1, names[r]};
        }
        r++;
        s += n;
        if (*s == ',')
            s++;
    }
    return r;
}

/* A graph input of a symbolic shape ("N,3,4"); fed with v at run time when
 * v is not NULL. */
static carve_value_id tm_sym(tm *t, const char *name, carve_dtype dt, const char *dims, cv_val *v)
{
    carve_dim d[CARVE_MAX_RANK];
    char names[CARVE_MAX_RANK][16];
    int r = parse_dims(dims, d, names);
    if (v)
        t->feed[t->n_feed++] = v;
    return carve_graph_add_input(t->m, 0, name, dt, r, r >= 0 ? d : NULL);
}

/* An initializer with v's data (v is released). */
static carve_value_id tm_const(tm *t, const char *name, cv_val *v)
{
    carve_value_id id = carve_graph_add_initializer(t->m, 0, name, v->dtype, v->rank, v->dims, v->data, v->nbytes);
    cv_val_unref(v);
    return id;
}

static carve_value_id tm_ints(tm *t, const char *name, size_t n, const int64_t *v)
{
    int64_t d = (int64_t)n;
    return carve_graph_add_initializer(t->m, 0, name, CARVE_INT64, 1, &d, v, n * sizeof *v);
}

static carve_node_id tm_node(tm *t, const char *op, int n_in, const carve_value_id *ins, int n_out)
{
    const char *outs[8] = {"y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7"};
    t->node = carve_graph_add_node(t->m, 0, op, "", "n", (size_t)n_in, ins, (size_t)n_out, outs);
    for (int i = 0; i < n_out; i++)
        carve_graph_add_output(t->m, 0, carve_node_output(t->m, t->node, (size_t)i));
    return t->node;
}

/* y needs room for every output of the node; it is cleared first (a
 * failing run releases what it finds there). */
static carve_status tm_run(tm *t, cv_val **y)
{
    for (size_t i = 0; i < carve_graph_output_count(t->m, 0); i++)
        y[i] = NULL;
    return ot_run(t->m, t->feed, y);
}

static bool errmsg_has(tm *t, const char *s) { return strstr(carve_errmsg(t->ctx), s) != NULL; }

/* The inferred type of output i as "float32 N,12,?" ("*" for unknown rank). */
static const char *type_str(tm *t, int i, char *buf, size_t sz)
{
    carve_value_id v = carve_node_output(t->m, t->node, (size_t)i);
    int r = carve_value_rank(t->m, v);
    size_t k = (size_t)snprintf(buf, sz, "%s ", carve_dtype_name(carve_value_dtype(t->m, v)));
    if (r < 0) {
        snprintf(buf + k, sz - k, "*");
        return buf;
    }
    for (int d = 0; d < r && k < sz; d++) {
        carve_dim x = carve_value_dim(t->m, v, d);
        if (x.value >= 0)
            k += (size_t)snprintf(buf + k, sz - k, "%s%lld", d ? "," : "", (long long)x.value);
        else
            k += (size_t)snprintf(buf + k, sz - k, "%s%s", d ? "," : "", x.param ? x.param : "?");
    }
    return buf;
}

#define CHECK_TYPE(t, i, want)                                                                               \
    do {                                                                                                     \
        char b_[256];                                                                                        \
        const char *g_ = type_str((t), (i), b_, sizeof b_);                                                  \
        OT_CHECK(!strcmp(g_, (want)), "inferred output %d is '%s', expected '%s'", (i), g_, (want));          \
    } while (0)

static cv_val *iota(carve_dtype dt, int rank, const int64_t *dims)
{
    cv_val *v = cv_val_new(dt, rank, dims);
    for (size_t i = 0; v && i < v->nelem; i++)
        cv_val_set_f64(v, i, (double)(i % 100));
    return v;
}

static cv_val *vals_i64(int rank, const int64_t *dims, const int64_t *x)
{
    cv_val *v = cv_val_new(CARVE_INT64, rank, dims);
    if (v->nbytes)
        memcpy(v->data, x, v->nbytes);
    return v;
}

static cv_val *vec_i64(int64_t n, const int64_t *x) { return vals_i64(1, &n, x); }

static cv_val *strings(int rank, const int64_t *dims, const char *const *s)
{
    cv_val *v = cv_val_new(CARVE_STRING, rank, dims);
    for (size_t i = 0; i < v->nelem; i++) {
        size_t n = strlen(s[i]);
        ((char **)v->data)[i] = cv_malloc(n + 1);
        memcpy(((char **)v->data)[i], s[i], n + 1);
    }
    return v;
}

static const char *str_at(const cv_val *v, size_t i)
{
    const char *s = ((char *const *)v->data)[i];
    return s ? s : "(null)";
}

static bool same_dims(const cv_val *v, int rank, const int64_t *dims)
{
    if (!v || v->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (v->dims[i] != dims[i])
            return false;
    return true;
}

static bool values_i64(const cv_val *v, size_t n, const int64_t *want)
{
    if (!v || v->nelem != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (cv_val_get_i64(v, i) != want[i])
            return false;
    return true;
}

static void unref_all(cv_val **v, int n)
{
    for (int i = 0; i < n; i++)
        cv_val_unref(v[i]);
}

/* ================================================================ decompositions */

/* DepthToSpace / SpaceToDepth: the input is declared with `decl` ("" for
 * its static shape) so that the decomposition takes the static, the
 * symbolic-batch or the dynamic path. */
static void check_space(const char *op, int64_t opset, carve_dtype dt, const int64_t *dims, int64_t b,
                        const char *mode, const char *decl, uint32_t seed)
{
    tm t;
    tm_init(&t, opset);
    cv_val *x = ot_random(dt, 4, dims, seed, -4, 4);
    carve_value_id in = *decl ? tm_sym(&t, "x", dt, decl, x) : tm_in(&t, "x", x);
    carve_node_id n = tm_node(&t, op, 1, &in, 1);
    carve_node_set_attr_int(t.m, n, "blocksize", b);
    if (mode)
        carve_node_set_attr_string(t.m, n, "mode", mode);
    double tol = dt == CARVE_FLOAT16 ? 1e-3 : 0;
    size_t before = t.m->n_nodes;
    ot_check_decomposition(t.m, n, t.feed, tol, tol);
    OT_CHECK(t.m->n_nodes > before, "%s: no pieces were added", op);
    /* the static path is exactly Reshape, Transpose, Reshape */
    if (!*decl)
        OT_CHECK(carve_graph_node_count(t.m, 0) == 3, "%s static: %zu pieces, expected 3", op,
                 carve_graph_node_count(t.m, 0));
    tm_free(&t);
}

static void test_decompositions(void)
{
    static const int64_t d2s_shapes[][4] = {{1, 8, 2, 3}, {2, 12, 3, 1}, {1, 4, 1, 1}, {3, 18, 2, 2}};
    static const int64_t d2s_b[] = {2, 2, 2, 3};
    static const carve_dtype dts[] = {CARVE_FLOAT, CARVE_FLOAT16, CARVE_INT8};
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 3; d++) {
            check_space("DepthToSpace", 13, dts[d], d2s_shapes[s], d2s_b[s], "DCR", "", (uint32_t)(s * 7 + d));
            check_space("DepthToSpace", 13, dts[d], d2s_shapes[s], d2s_b[s], "CRD", "", (uint32_t)(s * 7 + d + 1));
        }
    static const int64_t s2d_shapes[][4] = {{1, 2, 4, 6}, {2, 3, 6, 3}, {1, 1, 2, 2}, {2, 1, 9, 6}};
    static const int64_t s2d_b[] = {2, 3, 2, 3};
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 3; d++)
            check_space("SpaceToDepth", 13, dts[d], s2d_shapes[s], s2d_b[s], NULL, "", (uint32_t)(s * 5 + d));
    /* blocksize 1, opset 1 DepthToSpace (DCR only) at opset 9 */
    static const int64_t one[4] = {2, 3, 2, 2};
    check_space("DepthToSpace", 9, CARVE_FLOAT, one, 1, NULL, "", 3);
    check_space("SpaceToDepth", 9, CARVE_FLOAT, one, 1, NULL, "", 4);
    /* symbolic batch: constant shapes with 0 for N */
    static const int64_t dn[4] = {3, 8, 2, 2};
    check_space("DepthToSpace", 13, CARVE_FLOAT, dn, 2, "DCR", "N,8,2,2", 5);
    check_space("DepthToSpace", 13, CARVE_FLOAT16, dn, 2, "CRD", "N,8,2,2", 6);
    static const int64_t sn[4] = {3, 2, 4, 4};
    check_space("SpaceToDepth", 13, CARVE_INT8, sn, 2, NULL, "N,2,4,4", 7);
    /* dynamic height/width: shapes computed with Shape/Gather/Concat */
    check_space("DepthToSpace", 13, CARVE_FLOAT, dn, 2, "DCR", "N,8,H,W", 8);
    check_space("DepthToSpace", 13, CARVE_FLOAT16, dn, 2, "CRD", "N,C,H,W", 9);
    check_space("DepthToSpace", 11, CARVE_INT8, d2s_shapes[3], 3, "CRD", "N,C,H,W", 10);
    check_space("SpaceToDepth", 13, CARVE_FLOAT, sn, 2, NULL, "N,C,H,W", 11);
    check_space("SpaceToDepth", 13, CARVE_FLOAT16, s2d_shapes[1], 3, NULL, "?,?,?,?", 12);

    /* below opset 5 Reshape has no shape input: refused, the node stays */
    tm t;
    tm_init(&t, 4);
    carve_value_id in = tm_in(&t, "x", iota(CARVE_FLOAT, 4, one));
    carve_node_id n = tm_node(&t, "DepthToSpace", 1, &in, 1);
    carve_node_set_attr_int(t.m, n, "blocksize", 1);
    size_t count = carve_graph_node_count(t.m, 0);
    OT_CHECK(cv_decompose_node(t.m, n) == CARVE_ERR_UNSUPPORTED && errmsg_has(&t, "opset 5"),
             "DepthToSpace at opset 4: %s", carve_errmsg(t.ctx));
    OT_CHECK(carve_graph_node_count(t.m, 0) == count && carve_model_verify(t.m) == CARVE_OK,
             "refused decomposition changed the graph");
    tm_free(&t);
}

/* ================================================================ inference on symbolic shapes */

typedef struct {
    const char *op;
    int64_t opset;
    const char *in0;        /* symbolic shape of input 0 (float32) */
    int n_const;            /* constant int64 inputs after it */
    int64_t c[3][6];
    int c_len[3];
    const char *attr;       /* "name=v,v" int(s) attribute or NULL */
    int n_out;
    const char *want[3];
} icase;

static void set_attr(carve_model *m, carve_node_id n, const char *spec)
{
    char name[32];
    const char *eq = strchr(spec, '=');
    size_t l = (size_t)(eq - spec);
    memcpy(name, spec, l);
    name[l] = 0;
    int64_t v[8];
    size_t k = 0;
    bool list = eq[1] == '[';
    const char *p = eq + 1 + list;
    while (*p && *p != ']' && k < 8) {
        v[k++] = strtoll(p, (char **)&p, 10);
        if (*p == ',')
            p++;
    }
    if (list)
        carve_node_set_attr_ints(m, n, name, k, v);
    else
        carve_node_set_attr_int(m, n, name, v[0]);
}

static void run_icase(const icase *ic)
{
    tm t;
    tm_init(&t, ic->opset);
    carve_value_id ins[4];
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, ic->in0, NULL);
    for (int i = 0; i < ic->n_const; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "c%d", i);
        ins[1 + i] = ic->c_len[i] < 0 ? CARVE_NONE : tm_ints(&t, nm, (size_t)ic->c_len[i], ic->c[i]);
    }
    carve_node_id n = tm_node(&t, ic->op, 1 + ic->n_const, ins, ic->n_out);
    if (ic->attr) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", ic->attr);
        for (char *s = strtok(buf, ";"); s; s = strtok(NULL, ";"))
            set_attr(t.m, n, s);
    }
    carve_status s = cv_infer_model(t.m, NULL);
    OT_CHECK(s == CARVE_OK, "%s on %s: inference failed: %s", ic->op, ic->in0, carve_errmsg(t.ctx));
    for (int i = 0; i < ic->n_out; i++) {
        char b[256];
        const char *g = type_str(&t, i, b, sizeof b);
        OT_CHECK(!strcmp(g, ic->want[i]), "%s on %s: output %d inferred '%s', expected '%s'", ic->op, ic->in0, i, g,
                 ic->want[i]);
    }
    tm_free(&t);
}

#define BIG INT64_MAX

static void test_infer_symbolic(void)
{
    static const icase cases[] = {
        {"Reshape", 13, "N,3,4", 1, {{0, -1}}, {2}, NULL, 1, {"float32 N,12"}},
        {"Reshape", 13, "N,12", 1, {{0, 3, -1}}, {3}, NULL, 1, {"float32 N,3,4"}},
        {"Reshape", 13, "2,3,T", 1, {{6, -1}}, {2}, NULL, 1, {"float32 6,T"}},
        {"Reshape", 13, "B,T,8", 1, {{-1, 8}}, {2}, NULL, 1, {"float32 ?,8"}},
        {"Reshape", 13, "B,T,8", 1, {{0, 0, 2, 4}}, {4}, NULL, 1, {"float32 B,T,2,4"}},
        {"Reshape", 13, "B,T,8", 1, {{0, 0, 2, -1}}, {4}, NULL, 1, {"float32 B,T,2,4"}},
        {"Reshape", 14, "B,0,8", 1, {{0, 2, 4}}, {3}, "allowzero=1", 1, {"float32 0,2,4"}},
        {"Reshape", 13, "*", 1, {{0, -1}}, {2}, NULL, 1, {"float32 ?,?"}},
        {"Flatten", 13, "N,3,4", 0, {{0}}, {0}, "axis=1", 1, {"float32 N,12"}},
        {"Flatten", 13, "N,3,4", 0, {{0}}, {0}, "axis=2", 1, {"float32 ?,4"}},
        {"Flatten", 13, "N,3,4", 0, {{0}}, {0}, "axis=0", 1, {"float32 1,?"}},
        {"Flatten", 13, "1,N,1", 0, {{0}}, {0}, "axis=-1", 1, {"float32 N,1"}},
        {"Squeeze", 13, "N,1,T,1", 1, {{1, -1}}, {2}, NULL, 1, {"float32 N,T"}},
        {"Squeeze", 11, "N,1,T", 0, {{0}}, {0}, "axes=[1]", 1, {"float32 N,T"}},
        {"Squeeze", 13, "N,1,T", 0, {{0}}, {0}, NULL, 1, {"float32 *"}},
        {"Squeeze", 13, "2,1,3", 0, {{0}}, {0}, NULL, 1, {"float32 2,3"}},
        {"Unsqueeze", 13, "N,T", 1, {{0, -1}}, {2}, NULL, 1, {"float32 1,N,T,1"}},
        {"Unsqueeze", 11, "N,T", 0, {{0}}, {0}, "axes=[1]", 1, {"float32 N,1,T"}},
        {"Transpose", 13, "N,C,H,W", 0, {{0}}, {0}, "perm=[0,2,3,1]", 1, {"float32 N,H,W,C"}},
        {"Transpose", 13, "N,C,5", 0, {{0}}, {0}, NULL, 1, {"float32 5,C,N"}},
        {"Slice", 13, "N,T,80", 3, {{1}, {BIG}, {1}}, {1, 1, 1}, NULL, 1, {"float32 N,?,80"}},
        {"Slice", 13, "N,T,80", 3, {{0}, {BIG}, {1}}, {1, 1, 1}, NULL, 1, {"float32 N,T,80"}},
        {"Slice", 13, "N,T,80", 3, {{0}, {40}, {-1}}, {1, 1, 1}, NULL, 1, {"float32 N,T,40"}},
        {"Slice", 13, "N,T,80", 3, {{-1, 10}, {INT64_MIN, 0}, {1, 2}}, {2, 2, 2}, NULL, 1, {"float32 N,?,0"}},
        {"Slice", 10, "N,6", 2, {{1}, {-1}}, {1, 1}, NULL, 1, {"float32 ?,6"}},
        {"Slice", 9, "N,10", 0, {{0}}, {0}, "starts=[2];ends=[9];axes=[1]", 1, {"float32 N,7"}},
        {"Expand", 13, "N,1,4", 1, {{1, 3, 1}}, {3}, NULL, 1, {"float32 N,3,4"}},
        {"Expand", 13, "N,4", 1, {{2, 1, 1}}, {3}, NULL, 1, {"float32 2,N,4"}},
        {"Tile", 13, "N,3", 1, {{1, 2}}, {2}, NULL, 1, {"float32 N,6"}},
        {"Tile", 13, "N,3", 1, {{2, 1}}, {2}, NULL, 1, {"float32 ?,3"}},
        {"Pad", 13, "N,3", 1, {{0, 1, 0, 2}}, {4}, NULL, 1, {"float32 N,6"}},
        {"Pad", 13, "N,3", 1, {{1, 1, 0, 2}}, {4}, NULL, 1, {"float32 ?,6"}},
        {"Pad", 18, "N,3,T", 3, {{2, 3}, {0}, {1}}, {2, -1, 1}, NULL, 1, {"float32 N,8,T"}},
        {"Pad", 18, "N,3,5", 3, {{2, 3}, {0}, {-1}}, {2, -1, 1}, NULL, 1, {"float32 N,3,10"}},
        {"Pad", 2, "N,3", 0, {{0}}, {0}, "pads=[0,1,0,1]", 1, {"float32 N,5"}},
        {"Split", 13, "N,6", 1, {{2, 4}}, {2}, "axis=1", 2, {"float32 N,2", "float32 N,4"}},
        {"Split", 13, "N,6", 0, {{0}}, {0}, "axis=1", 3, {"float32 N,2", "float32 N,2", "float32 N,2"}},
        {"Split", 18, "7,N", 0, {{0}}, {0}, "num_outputs=3", 3, {"float32 3,N", "float32 3,N", "float32 1,N"}},
        {"Split", 11, "T,4", 0, {{0}}, {0}, "split=[1,3];axis=-1", 2, {"float32 T,1", "float32 T,3"}},
        {"Split", 13, "T,4", 0, {{0}}, {0}, NULL, 2, {"float32 ?,4", "float32 ?,4"}},
        {"Shape", 13, "N,3,T", 0, {{0}}, {0}, NULL, 1, {"int64 3"}},
        {"Shape", 15, "N,3,T", 0, {{0}}, {0}, "start=1", 1, {"int64 2"}},
        {"Shape", 15, "N,3,T", 0, {{0}}, {0}, "start=-1;end=-5", 1, {"int64 0"}},
        {"Size", 13, "N,3", 0, {{0}}, {0}, NULL, 1, {"int64 "}},
        {"DepthToSpace", 13, "N,8,H,4", 0, {{0}}, {0}, "blocksize=2", 1, {"float32 N,2,?,8"}},
        {"SpaceToDepth", 13, "N,C,4,W", 0, {{0}}, {0}, "blocksize=2", 1, {"float32 N,?,2,?"}},
        {"EyeLike", 13, "N,M", 0, {{0}}, {0}, "dtype=7", 1, {"int64 N,M"}},
        {"Dropout", 13, "N,3", 0, {{0}}, {0}, NULL, 2, {"float32 N,3", "bool N,3"}},
        {"Dropout", 7, "N,3", 0, {{0}}, {0}, NULL, 2, {"float32 N,3", "float32 N,3"}},
        {"Trilu", 14, "B,N,N", 0, {{0}}, {0}, NULL, 1, {"float32 B,N,N"}},
        {"NonZero", 13, "2,N", 0, {{0}}, {0}, NULL, 1, {"int64 2,?"}},
        {"Unique", 11, "N,3", 0, {{0}}, {0}, "axis=0", 3, {"float32 ?,3", "int64 ?", "int64 N"}},
        {"Unique", 11, "N,3", 0, {{0}}, {0}, NULL, 3, {"float32 ?", "int64 ?", "int64 ?"}},
        {"Unique", 11, "2,3", 0, {{0}}, {0}, NULL, 3, {"float32 ?", "int64 ?", "int64 6"}},
        {"Identity", 13, "N,?,3", 0, {{0}}, {0}, NULL, 1, {"float32 N,?,3"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_icase(&cases[i]);
}

/* Ops with more than one data input. */
static void test_infer_multi(void)
{
    tm t;
    /* Concat adds known dims, keeps equal params, drops different ones */
    tm_init(&t, 13);
    carve_value_id ins[3] = {tm_sym(&t, "a", CARVE_FLOAT, "N,3,T", NULL), tm_sym(&t, "b", CARVE_FLOAT, "N,5,T", NULL),
                             tm_sym(&t, "c", CARVE_FLOAT, "?,2,U", NULL)};
    carve_node_set_attr_int(t.m, tm_node(&t, "Concat", 3, ins, 1), "axis", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Concat inference: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 N,10,?");
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "a", CARVE_FLOAT, "N,3", NULL);
    ins[1] = tm_sym(&t, "b", CARVE_FLOAT, "M,3", NULL);
    carve_node_set_attr_int(t.m, tm_node(&t, "Concat", 2, ins, 1), "axis", 0);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Concat inference: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 ?,3");
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "a", CARVE_FLOAT, "N,3", NULL);
    ins[1] = tm_sym(&t, "b", CARVE_FLOAT, "2,4", NULL);
    carve_node_set_attr_int(t.m, tm_node(&t, "Concat", 2, ins, 1), "axis", 0);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_ERR_INVALID && errmsg_has(&t, "node 'n' (Concat)") &&
                 errmsg_has(&t, "size 4 on axis 1"),
             "Concat contradiction: %s", carve_errmsg(t.ctx));
    tm_free(&t);

    /* Gather: data dims around the index dims */
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "emb", CARVE_FLOAT, "V,D", NULL);
    ins[1] = tm_sym(&t, "ids", CARVE_INT64, "B,T", NULL);
    tm_node(&t, "Gather", 2, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Gather inference: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 B,T,D");
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, "N,C,H", NULL);
    int64_t idx[2] = {1, 0};
    ins[1] = tm_ints(&t, "i", 2, idx);
    carve_node_set_attr_int(t.m, tm_node(&t, "Gather", 2, ins, 1), "axis", -1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Gather inference: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 N,C,2");
    tm_free(&t);
    /* GatherElements: the indices' shape; GatherND */
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, "N,C", NULL);
    ins[1] = tm_sym(&t, "i", CARVE_INT64, "N,K", NULL);
    carve_node_set_attr_int(t.m, tm_node(&t, "GatherElements", 2, ins, 1), "axis", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "GatherElements: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 N,K");
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, "B,H,W,C", NULL);
    ins[1] = tm_sym(&t, "i", CARVE_INT64, "B,K,2", NULL);
    carve_node_set_attr_int(t.m, tm_node(&t, "GatherND", 2, ins, 1), "batch_dims", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "GatherND: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 B,K,C");
    tm_free(&t);
    /* OneHot with a constant depth; ScatterND keeps the data's type */
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "i", CARVE_INT64, "N,T", NULL);
    int64_t depth = 5;
    int64_t one = 1;
    ins[1] = carve_graph_add_initializer(t.m, 0, "d", CARVE_INT64, 0, NULL, &depth, 8);
    ins[2] = tm_sym(&t, "v", CARVE_FLOAT16, "2", NULL);
    carve_node_set_attr_int(t.m, tm_node(&t, "OneHot", 3, ins, 1), "axis", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "OneHot: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float16 N,5,T");
    tm_free(&t);
    /* Range: constant operands give the count, others only the rank */
    tm_init(&t, 13);
    int64_t r0 = 2, r1 = 11, r2 = 3;
    ins[0] = carve_graph_add_initializer(t.m, 0, "s", CARVE_INT64, 0, NULL, &r0, 8);
    ins[1] = carve_graph_add_initializer(t.m, 0, "l", CARVE_INT64, 0, NULL, &r1, 8);
    ins[2] = carve_graph_add_initializer(t.m, 0, "d", CARVE_INT64, 0, NULL, &r2, 8);
    tm_node(&t, "Range", 3, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Range: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "int64 3");
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "s", CARVE_FLOAT, "", NULL);
    ins[1] = tm_sym(&t, "l", CARVE_FLOAT, "", NULL);
    ins[2] = tm_sym(&t, "d", CARVE_FLOAT, "", NULL);
    tm_node(&t, "Range", 3, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Range: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 ?");
    tm_free(&t);
    /* ConstantOfShape: dtype from the value attribute */
    tm_init(&t, 13);
    int64_t shp[2] = {2, 7};
    ins[0] = tm_ints(&t, "s", 2, shp);
    carve_node_id n = tm_node(&t, "ConstantOfShape", 1, ins, 1);
    carve_node_set_attr_tensor(t.m, n, "value", CARVE_INT64, 1, &one, &one, 8);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "ConstantOfShape: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "int64 2,7");
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "s", CARVE_INT64, "3", NULL);
    tm_node(&t, "ConstantOfShape", 1, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "ConstantOfShape: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 ?,?,?");
    tm_free(&t);
    /* Compress with a constant condition counts its trues */
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, "N,4", NULL);
    uint8_t cond[4] = {1, 0, 1, 1};
    int64_t four = 4;
    ins[1] = carve_graph_add_initializer(t.m, 0, "c", CARVE_BOOL, 1, &four, cond, 4);
    carve_node_set_attr_int(t.m, tm_node(&t, "Compress", 2, ins, 1), "axis", 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Compress: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 N,3");
    tm_free(&t);
    /* Reshape with a shape computed from Shape -> Gather -> Concat of a
     * constant: the pass runs those kernels and the Reshape gets exact dims */
    tm_init(&t, 13);
    carve_value_id x = tm_const(&t, "x", iota(CARVE_FLOAT, 3, (const int64_t[]){2, 3, 4}));
    carve_value_id sh =
        carve_node_output(t.m, carve_graph_add_node(t.m, 0, "Shape", "", "s", 1, &x, 1, (const char *[]){"sh"}), 0);
    int64_t g0[1] = {0};
    carve_value_id gin[2] = {sh, tm_ints(&t, "g0", 1, g0)};
    carve_value_id nn =
        carve_node_output(t.m, carve_graph_add_node(t.m, 0, "Gather", "", "g", 2, gin, 1, (const char *[]){"nn"}), 0);
    int64_t m1[1] = {-1};
    carve_value_id cin[2] = {nn, tm_ints(&t, "m1", 1, m1)};
    carve_node_id cn = carve_graph_add_node(t.m, 0, "Concat", "", "c", 2, cin, 1, (const char *[]){"shape"});
    carve_node_set_attr_int(t.m, cn, "axis", 0);
    carve_value_id rin[2] = {x, carve_node_output(t.m, cn, 0)};
    tm_node(&t, "Reshape", 2, rin, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_OK, "Shape chain: %s", carve_errmsg(t.ctx));
    CHECK_TYPE(&t, 0, "float32 2,12");
    tm_free(&t);
}

/* ================================================================ error texts */

static void test_errors(void)
{
    tm t;
    cv_val *y[4] = {0};
    /* Reshape to another element count names both shapes */
    static const int64_t d23[2] = {2, 3}, s42[2] = {4, 2};
    tm_init(&t, 13);
    carve_value_id ins[3] = {tm_in(&t, "x", iota(CARVE_FLOAT, 2, d23)), tm_in(&t, "s", vec_i64(2, s42))};
    tm_node(&t, "Reshape", 2, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID &&
                 errmsg_has(&t, "node 'n' (Reshape): cannot reshape input of shape [2,3] (6 elements) to shape [4,2]"),
             "Reshape error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    /* ... and at compile time when the shape is constant */
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, "2,3", NULL);
    ins[1] = tm_ints(&t, "s", 2, s42);
    tm_node(&t, "Reshape", 2, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_ERR_INVALID &&
                 errmsg_has(&t, "cannot reshape input of shape [2,3] to shape [4,2]"),
             "Reshape inference error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    /* Gather: the index and the bound */
    static const int64_t d5[1] = {5}, idx[3] = {0, 7, -1}, d3[1] = {3};
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, 1, d5));
    ins[1] = tm_in(&t, "i", vals_i64(1, d3, idx));
    tm_node(&t, "Gather", 2, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID &&
                 errmsg_has(&t, "indices[1] = 7 is out of range for axis 0 of size 5 (allowed [-5, 4])"),
             "Gather error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    static const int64_t idx2[3] = {0, -6, 1};
    tm_init(&t, 13);
    ins[0] = tm_sym(&t, "x", CARVE_FLOAT, "5,N", NULL);
    ins[1] = tm_const(&t, "i", vals_i64(1, d3, idx2));
    tm_node(&t, "Gather", 2, ins, 1);
    OT_CHECK(cv_infer_model(t.m, NULL) == CARVE_ERR_INVALID && errmsg_has(&t, "indices[1] = -6 is out of range"),
             "Gather inference error: %s", carve_errmsg(t.ctx));
    tm_free(&t);

    /* one-node error cases: (op, opset, data dims, int input, attribute, text) */
    static const struct {
        const char *op;
        int64_t opset;
        int rank;
        int64_t dims[4];
        int n_ints;
        int64_t ints[6];
        const char *attr, *want;
    } ec[] = {
        {"Squeeze", 13, 3, {2, 1, 3}, 1, {0}, NULL, "axis 0 has size 2; only size-1 axes can be squeezed"},
        {"Squeeze", 13, 2, {2, 1}, 1, {2}, NULL, "axis 2 is out of range for rank 2"},
        {"Unsqueeze", 13, 2, {2, 3}, 2, {1, 1}, NULL, "axis 1 is given twice"},
        {"Transpose", 13, 3, {2, 3, 4}, 0, {0}, "perm=[0,0,1]", "'perm' is not a permutation"},
        {"Transpose", 13, 3, {2, 3, 4}, 0, {0}, "perm=[1,0]", "'perm' has 2 values but the input has rank 3"},
        {"Expand", 13, 2, {2, 3}, 2, {4, 3}, NULL, "input of shape [2,3] does not broadcast to [4,3]"},
        {"Tile", 13, 2, {2, 3}, 1, {2}, NULL, "'repeats' has 1 values but the input has rank 2"},
        {"Tile", 13, 2, {2, 3}, 2, {2, -1}, NULL, "repeat count -1 on axis 1 is negative"},
        {"Pad", 13, 2, {2, 3}, 3, {1, 1, 1}, NULL, "pads has 3 values; it needs 2 per input axis (4)"},
        {"Pad", 13, 2, {2, 3}, 4, {0, -4, 0, 0}, NULL, "leave no valid shape"},
        {"Pad", 13, 2, {2, 3}, 4, {0, 1, 0, 0}, "mode=x", "mode 'x' is not one of constant, reflect, edge, wrap"},
        {"Split", 13, 2, {2, 6}, 2, {2, 3}, "axis=1",
         "'split' sizes do not add up to 6, the size of axis 1 (they add up to 5)"},
        {"Split", 13, 2, {2, 6}, 2, {-1, 7}, "axis=1", "'split' size 0 is negative (-1)"},
        {"Split", 13, 2, {2, 6}, 3, {2, 2, 2}, "axis=1", "'split' has 3 sizes but the node has 2 outputs"},
        {"Split", 13, 2, {2, 5}, 0, {0}, "axis=1", "axis 1 of size 5 does not split into 2 equal parts"},
        {"Flatten", 13, 2, {2, 3}, 0, {0}, "axis=3", "axis 3 is out of range for rank 2"},
        {"DepthToSpace", 13, 4, {1, 6, 2, 2}, 0, {0}, "blocksize=2", "channels (6) are not a multiple of blocksize^2"},
        {"SpaceToDepth", 13, 3, {1, 6, 2}, 0, {0}, "blocksize=2", "must have rank 4"},
        {"Concat", 13, 2, {2, 3}, 0, {0}, "axis=2", "axis 2 is out of range for rank 2"},
        {"Trilu", 14, 1, {3}, 0, {0}, NULL, "must have rank >= 2"},
        {"EyeLike", 13, 3, {2, 2, 2}, 0, {0}, NULL, "must have rank 2"},
        {"Slice", 13, 2, {4, 4}, 3, {0, 4, 0}, NULL, "'steps' value 0 is 0"},
    };
    for (size_t i = 0; i < sizeof ec / sizeof *ec; i++) {
        tm_init(&t, ec[i].opset);
        ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, ec[i].rank, ec[i].dims));
        int n_in = 1;
        if (!strcmp(ec[i].op, "Slice")) {
            /* starts, ends, axes... from the list: one axis, step last */
            ins[1] = tm_in(&t, "s", vec_i64(1, &ec[i].ints[0]));
            ins[2] = tm_in(&t, "e", vec_i64(1, &ec[i].ints[1]));
            static const int64_t ax0[1] = {0};
            carve_value_id more[2] = {tm_in(&t, "a", vec_i64(1, ax0)), tm_in(&t, "st", vec_i64(1, &ec[i].ints[2]))};
            carve_value_id all[5] = {ins[0], ins[1], ins[2], more[0], more[1]};
            tm_node(&t, "Slice", 5, all, 1);
        } else {
            if (ec[i].n_ints) {
                ins[1] = tm_in(&t, "v", vec_i64(ec[i].n_ints, ec[i].ints));
                n_in = 2;
            }
            carve_node_id n = tm_node(&t, ec[i].op, n_in, ins, !strcmp(ec[i].op, "Split") ? 2 : 1);
            if (ec[i].attr && !strncmp(ec[i].attr, "mode=", 5))
                carve_node_set_attr_string(t.m, n, "mode", ec[i].attr + 5);
            else if (ec[i].attr)
                set_attr(t.m, n, ec[i].attr);
        }
        carve_status s = tm_run(&t, y);
        char want[300];
        snprintf(want, sizeof want, "node 'n' (%s): ", ec[i].op);
        OT_CHECK(s == CARVE_ERR_INVALID && errmsg_has(&t, want) && errmsg_has(&t, ec[i].want),
                 "%s error case %zu: '%s' (expected '%s')", ec[i].op, i, carve_errmsg(t.ctx), ec[i].want);
        unref_all(y, 4);
        memset(y, 0, sizeof y);
        tm_free(&t);
    }

    /* Range: delta 0, and a count beyond memory */
    static const struct {
        int64_t s, l, d;
        const char *want;
    } rc[] = {{0, 10, 0, "delta is 0"}, {INT64_MIN, INT64_MAX, 1, "more than carve computes in one tensor"}};
    for (size_t i = 0; i < 2; i++) {
        tm_init(&t, 13);
        int64_t sv = rc[i].s, lv = rc[i].l, dv = rc[i].d;
        carve_value_id r[3] = {tm_in(&t, "s", vals_i64(0, NULL, &sv)), tm_in(&t, "l", vals_i64(0, NULL, &lv)),
                               tm_in(&t, "d", vals_i64(0, NULL, &dv))};
        tm_node(&t, "Range", 3, r, 1);
        OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, rc[i].want), "Range error: %s",
                 carve_errmsg(t.ctx));
        tm_free(&t);
    }
    /* GatherElements / ScatterND / GatherND bounds */
    static const int64_t d22[2] = {2, 2}, gi[4] = {0, 1, 2, 0};
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, 2, d22));
    ins[1] = tm_in(&t, "i", vals_i64(2, d22, gi));
    tm_node(&t, "GatherElements", 2, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "indices[2] = 2 is out of range for axis 0 of size 2"),
             "GatherElements error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    static const int64_t d12[2] = {1, 2}, si[2] = {1, 5}, d1[1] = {1};
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, 2, d22));
    ins[1] = tm_in(&t, "i", vals_i64(2, d12, si));
    ins[2] = tm_in(&t, "u", iota(CARVE_FLOAT, 1, d1));
    tm_node(&t, "ScatterND", 3, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "indices[1] = 5 is out of range for axis 1 of size 2"),
             "ScatterND error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    /* ScatterElements: max needs opset 18; strings have no reductions */
    tm_init(&t, 16);
    ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, 2, d22));
    ins[1] = tm_in(&t, "i", vals_i64(2, d12, (const int64_t[]){0, 1}));
    ins[2] = tm_in(&t, "u", iota(CARVE_FLOAT, 2, d12));
    carve_node_set_attr_string(t.m, tm_node(&t, "ScatterElements", 3, ins, 1), "reduction", "max");
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "reduction 'max' needs opset 18"),
             "ScatterElements max at 16: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    /* Constant: sparse_value is refused clearly; two values are an error */
    tm_init(&t, 13);
    carve_node_id n = tm_node(&t, "Constant", 0, NULL, 1);
    cv_node_attr_add(t.m, n, "sparse_value", CARVE_ATTR_SPARSE_TENSOR);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_UNSUPPORTED && errmsg_has(&t, "sparse_value is not supported"),
             "Constant sparse: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    tm_init(&t, 13);
    n = tm_node(&t, "Constant", 0, NULL, 1);
    carve_node_set_attr_int(t.m, n, "value_int", 3);
    carve_node_set_attr_float(t.m, n, "value_float", 3);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "needs exactly one of the attributes"),
             "Constant two values: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    /* OneHot depth, ReverseSequence lengths, Compress condition */
    tm_init(&t, 13);
    int64_t zero = 0;
    float offon[2] = {0, 1};
    int64_t two = 2;
    cv_val *vals = cv_val_new(CARVE_FLOAT, 1, &two);
    memcpy(vals->data, offon, sizeof offon);
    carve_value_id oh[3] = {tm_in(&t, "i", vals_i64(1, d3, idx)), tm_in(&t, "d", vals_i64(0, NULL, &zero)),
                            tm_in(&t, "v", vals)};
    tm_node(&t, "OneHot", 3, oh, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "input 1 'depth' is 0; it must be at least 1"),
             "OneHot error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
    tm_init(&t, 13);
    static const int64_t lens[2] = {1, 4};
    ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, 2, (const int64_t[]){3, 2}));
    ins[1] = tm_in(&t, "l", vec_i64(2, lens));
    tm_node(&t, "ReverseSequence", 2, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_ERR_INVALID && errmsg_has(&t, "'sequence_lens'[1] is 4, outside [0, 3]"),
             "ReverseSequence error: %s", carve_errmsg(t.ctx));
    tm_free(&t);
}

/* ================================================================ opset forms */

/* Runs a one-node model whose data input is iota(float32, dims); returns
 * the first output (caller unrefs) or NULL. */
typedef void (*node_setup)(tm *t, carve_node_id n);

static cv_val *run1(int64_t opset, const char *op, int rank, const int64_t *dims, int n_extra, cv_val **extra,
                    bool extra_const, const char *attrs, int n_out, cv_val **outs)
{
    tm t;
    tm_init(&t, opset);
    carve_value_id ins[6];
    ins[0] = tm_in(&t, "x", iota(CARVE_FLOAT, rank, dims));
    for (int i = 0; i < n_extra; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "e%d", i);
        if (!extra[i])
            ins[1 + i] = CARVE_NONE;
        else
            ins[1 + i] = extra_const ? tm_const(&t, nm, extra[i]) : tm_in(&t, nm, extra[i]);
    }
    carve_node_id n = tm_node(&t, op, 1 + n_extra, ins, n_out);
    if (attrs) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", attrs);
        for (char *s = strtok(buf, ";"); s; s = strtok(NULL, ";")) {
            if (!strncmp(s, "mode=", 5) || !strncmp(s, "reduction=", 10)) {
                char *eq = strchr(s, '=');
                *eq = 0;
                carve_node_set_attr_string(t.m, n, s, eq + 1);
            } else {
                set_attr(t.m, n, s);
            }
        }
    }
    cv_val *y[8] = {0};
    carve_status s = tm_run(&t, y);
    OT_CHECK(s == CARVE_OK, "%s at opset %lld: %s", op, (long long)opset, carve_errmsg(t.ctx));
    for (int i = 1; i < n_out; i++)
        outs[i - 1] = y[i];
    tm_free(&t);
    return y[0];
}

static void test_opset_forms(void)
{
    static const int64_t d234[3] = {2, 3, 4}, d23[2] = {2, 3}, d6[1] = {6}, d7[1] = {7};
    cv_val *o[4] = {0}, *y;

    /* Reshape-1 shape attribute; Reshape-14 allowzero */
    y = run1(1, "Reshape", 3, d234, 0, NULL, false, "shape=[4,-1]", 1, o);
    OT_CHECK(same_dims(y, 2, (const int64_t[]){4, 6}), "Reshape-1 attribute shape");
    cv_val_unref(y);
    static const int64_t d03[2] = {0, 3};
    cv_val *s = vec_i64(2, (const int64_t[]){3, 0});
    tm t;
    tm_init(&t, 14);
    carve_value_id ins[4] = {tm_in(&t, "x", cv_val_new(CARVE_FLOAT, 2, d03)), tm_in(&t, "s", s)};
    carve_node_set_attr_int(t.m, tm_node(&t, "Reshape", 2, ins, 1), "allowzero", 1);
    cv_val *r[1] = {0};
    OT_CHECK(tm_run(&t, r) == CARVE_OK && same_dims(r[0], 2, (const int64_t[]){3, 0}), "Reshape allowzero: %s",
             carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
    /* without allowzero the 0 copies the input dim: [3,0] means [3,3] */
    cv_val *e0[1] = {vec_i64(2, (const int64_t[]){3, 0})};
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "x", cv_val_new(CARVE_FLOAT, 2, d03));
    ins[1] = tm_in(&t, "s", e0[0]);
    tm_node(&t, "Reshape", 2, ins, 1);
    OT_CHECK(tm_run(&t, r) == CARVE_ERR_INVALID && errmsg_has(&t, "to shape [3,0]: 9 elements"),
             "Reshape 0-copy: %s", carve_errmsg(t.ctx));
    tm_free(&t);

    /* Squeeze/Unsqueeze: attribute forms */
    static const int64_t d1213[4] = {1, 2, 1, 3};
    y = run1(11, "Squeeze", 4, d1213, 0, NULL, false, "axes=[0,-2]", 1, o);
    OT_CHECK(same_dims(y, 2, d23), "Squeeze-11 axes attribute");
    cv_val_unref(y);
    y = run1(13, "Squeeze", 4, d1213, 0, NULL, false, NULL, 1, o);
    OT_CHECK(same_dims(y, 2, d23), "Squeeze-13 without axes");
    cv_val_unref(y);
    /* a repeated Squeeze axis counts once (as onnxruntime) */
    y = run1(11, "Squeeze", 4, d1213, 0, NULL, false, "axes=[0,0,2]", 1, o);
    OT_CHECK(same_dims(y, 2, d23), "Squeeze with a repeated axis");
    cv_val_unref(y);
    /* Compress ignores condition entries past the axis (as onnxruntime) */
    cv_val *cc[1] = {cv_val_new(CARVE_BOOL, 1, (const int64_t[]){5})};
    memcpy(cc[0]->data, (const uint8_t[]){0, 1, 1, 1, 1}, 5);
    y = run1(11, "Compress", 2, d23, 1, cc, false, "axis=1", 1, o);
    OT_CHECK(same_dims(y, 2, (const int64_t[]){2, 2}) && values_i64(y, 4, (const int64_t[]){1, 2, 4, 5}),
             "Compress with a long condition");
    cv_val_unref(y);
    y = run1(1, "Unsqueeze", 2, d23, 0, NULL, false, "axes=[0,3]", 1, o);
    OT_CHECK(same_dims(y, 4, (const int64_t[]){1, 2, 3, 1}), "Unsqueeze-1 axes attribute");
    cv_val_unref(y);

    /* Concat-1 defaults to axis 1 */
    tm_init(&t, 1);
    ins[0] = tm_in(&t, "a", iota(CARVE_FLOAT, 2, d23));
    ins[1] = tm_in(&t, "b", iota(CARVE_FLOAT, 2, d23));
    tm_node(&t, "Concat", 2, ins, 1);
    OT_CHECK(tm_run(&t, r) == CARVE_OK && same_dims(r[0], 2, (const int64_t[]){2, 6}), "Concat-1 default axis: %s",
             carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);

    /* Split: attribute (11), input (13), num_outputs with a short last chunk (18) */
    y = run1(11, "Split", 1, d6, 0, NULL, false, "split=[1,5]", 2, o);
    OT_CHECK(same_dims(y, 1, (const int64_t[]){1}) && same_dims(o[0], 1, (const int64_t[]){5}), "Split-11 attribute");
    cv_val_unref(y);
    cv_val_unref(o[0]);
    cv_val *sp[1] = {vec_i64(2, (const int64_t[]){4, 2})};
    y = run1(13, "Split", 1, d6, 1, sp, true, NULL, 2, o);
    OT_CHECK(same_dims(y, 1, (const int64_t[]){4}) && values_i64(o[0], 2, (const int64_t[]){4, 5}), "Split-13 input");
    cv_val_unref(y);
    cv_val_unref(o[0]);
    y = run1(18, "Split", 1, d7, 0, NULL, false, "num_outputs=3", 3, o);
    OT_CHECK(values_i64(y, 3, (const int64_t[]){0, 1, 2}) && values_i64(o[0], 3, (const int64_t[]){3, 4, 5}) &&
                 values_i64(o[1], 1, (const int64_t[]){6}),
             "Split-18 num_outputs");
    cv_val_unref(y);
    unref_all(o, 2);

    /* Slice-1 attributes, with clamped ends */
    y = run1(1, "Slice", 2, d23, 0, NULL, false, "starts=[1,-2];ends=[1000,100];axes=[0,1]", 1, o);
    OT_CHECK(same_dims(y, 2, (const int64_t[]){1, 2}) && values_i64(y, 2, (const int64_t[]){4, 5}), "Slice-1");
    cv_val_unref(y);
    /* Slice-13 backwards with INT64 limits: the whole axis reversed */
    cv_val *sl[4] = {vec_i64(1, (const int64_t[]){-1}), vec_i64(1, (const int64_t[]){INT64_MIN}),
                     vec_i64(1, (const int64_t[]){1}), vec_i64(1, (const int64_t[]){-1})};
    y = run1(13, "Slice", 2, d23, 4, sl, false, NULL, 1, o);
    OT_CHECK(values_i64(y, 6, (const int64_t[]){2, 1, 0, 5, 4, 3}), "Slice reversed");
    cv_val_unref(y);
    cv_val *sl2[4] = {vec_i64(1, (const int64_t[]){INT64_MAX}), vec_i64(1, (const int64_t[]){INT64_MIN}),
                      vec_i64(1, (const int64_t[]){-1}), vec_i64(1, (const int64_t[]){INT64_MIN})};
    y = run1(13, "Slice", 2, d23, 4, sl2, false, NULL, 1, o);
    OT_CHECK(same_dims(y, 2, (const int64_t[]){2, 1}) && values_i64(y, 2, (const int64_t[]){2, 5}),
             "Slice step INT64_MIN");
    cv_val_unref(y);

    /* Pad: attribute with a value (2), axes input (18), wrap (19) */
    y = run1(2, "Pad", 1, (const int64_t[]){3}, 0, NULL, false, "pads=[1,2]", 1, o);
    OT_CHECK(values_i64(y, 6, (const int64_t[]){0, 0, 1, 2, 0, 0}), "Pad-2 attribute");
    cv_val_unref(y);
    cv_val *pa[3] = {vec_i64(2, (const int64_t[]){1, 1}), NULL, vec_i64(1, (const int64_t[]){-1})};
    y = run1(18, "Pad", 2, d23, 3, pa, true, "mode=edge", 1, o);
    OT_CHECK(same_dims(y, 2, (const int64_t[]){2, 5}) &&
                 values_i64(y, 10, (const int64_t[]){0, 0, 1, 2, 2, 3, 3, 4, 5, 5}),
             "Pad-18 axes");
    cv_val_unref(y);
    cv_val *pw[1] = {vec_i64(2, (const int64_t[]){2, 4})};
    y = run1(19, "Pad", 1, (const int64_t[]){3}, 1, pw, false, "mode=wrap", 1, o);
    OT_CHECK(values_i64(y, 9, (const int64_t[]){1, 2, 0, 1, 2, 0, 1, 2, 0}), "Pad-19 wrap beyond the size");
    cv_val_unref(y);
    cv_val *pr[1] = {vec_i64(2, (const int64_t[]){4, 4})};
    y = run1(13, "Pad", 1, (const int64_t[]){3}, 1, pr, false, "mode=reflect", 1, o);
    OT_CHECK(values_i64(y, 11, (const int64_t[]){0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2}), "Pad reflect beyond the size");
    cv_val_unref(y);

    /* Tile-1: tiles and axis inputs */
    cv_val *tl[2] = {vals_i64(0, NULL, (const int64_t[]){2}), vals_i64(0, NULL, (const int64_t[]){1})};
    y = run1(1, "Tile", 2, d23, 2, tl, false, NULL, 1, o);
    OT_CHECK(same_dims(y, 2, (const int64_t[]){2, 6}) &&
                 values_i64(y, 12, (const int64_t[]){0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}),
             "Tile-1");
    cv_val_unref(y);

    /* Shape start/end (15), clamped */
    y = run1(15, "Shape", 3, d234, 0, NULL, false, "start=-2;end=100", 1, o);
    OT_CHECK(values_i64(y, 2, (const int64_t[]){3, 4}), "Shape-15 start/end");
    cv_val_unref(y);
    y = run1(13, "Shape", 3, d234, 0, NULL, false, "start=1", 1, o);
    OT_CHECK(values_i64(y, 3, (const int64_t[]){2, 3, 4}), "Shape-13 ignores start");
    cv_val_unref(y);

    /* Dropout-7: a float mask of ones; Dropout-13 inference ignores the ratio */
    y = run1(7, "Dropout", 2, d23, 0, NULL, false, NULL, 2, o);
    OT_CHECK(y && o[0] && o[0]->dtype == CARVE_FLOAT && cv_val_get_f64(o[0], 5) == 1 && cv_val_get_f64(y, 5) == 5,
             "Dropout-7");
    cv_val_unref(y);
    cv_val_unref(o[0]);
    cv_val *dr[1] = {cv_val_scalar_f32(0.9f)};
    y = run1(13, "Dropout", 2, d23, 1, dr, false, NULL, 2, o);
    OT_CHECK(y && o[0] && o[0]->dtype == CARVE_BOOL && cv_val_get_i64(o[0], 3) == 1 && cv_val_get_f64(y, 3) == 3,
             "Dropout-13 inference mode");
    cv_val_unref(y);
    cv_val_unref(o[0]);

    /* Constant's value forms */
    static const struct {
        const char *attr;
        carve_dtype dt;
        int rank;
    } cf[] = {{"value_int=7", CARVE_INT64, 0}, {"value_ints=[1,2,3]", CARVE_INT64, 1}};
    for (int i = 0; i < 2; i++) {
        tm_init(&t, 13);
        set_attr(t.m, tm_node(&t, "Constant", 0, NULL, 1), cf[i].attr);
        OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->dtype == cf[i].dt && r[0]->rank == cf[i].rank,
                 "Constant %s: %s", cf[i].attr, carve_errmsg(t.ctx));
        cv_val_unref(r[0]);
        tm_free(&t);
    }
    tm_init(&t, 13);
    carve_node_id n = tm_node(&t, "Constant", 0, NULL, 1);
    carve_node_set_attr_strings(t.m, n, "value_strings", 2, (const char *const[]){"ab", ""});
    OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->dtype == CARVE_STRING && r[0]->nelem == 2 &&
                 !strcmp(str_at(r[0], 0), "ab") && !strcmp(str_at(r[0], 1), ""),
             "Constant value_strings: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
    tm_init(&t, 13);
    n = tm_node(&t, "Constant", 0, NULL, 1);
    carve_node_set_attr_floats(t.m, n, "value_floats", 2, (const float[]){1.5f, -2});
    OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->dtype == CARVE_FLOAT && cv_val_get_f64(r[0], 1) == -2,
             "Constant value_floats: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);

    /* ScatterElements reductions: add (16), max/min (18) with duplicates */
    static const struct {
        int64_t opset;
        const char *red;
        int64_t want[4];
    } sc[] = {{16, "add", {10, 1, 2, 3}}, {16, "mul", {0, 1, 2, 3}}, {18, "max", {6, 1, 2, 3}}, {18, "min", {0, 1, 2, 3}},
              {13, "none", {6, 1, 2, 3}}};
    for (size_t i = 0; i < sizeof sc / sizeof *sc; i++) {
        cv_val *se[2] = {vec_i64(3, (const int64_t[]){0, 0, -4}), NULL};
        int64_t three = 3;
        se[1] = cv_val_new(CARVE_FLOAT, 1, &three);
        cv_val_set_f64(se[1], 0, 4);
        cv_val_set_f64(se[1], 1, 0);
        cv_val_set_f64(se[1], 2, 6);
        char attr[32];
        snprintf(attr, sizeof attr, "reduction=%s", sc[i].red);
        y = run1(sc[i].opset, "ScatterElements", 1, (const int64_t[]){4}, 2, se, false,
                 sc[i].opset >= 16 ? attr : NULL, 1, o);
        OT_CHECK(values_i64(y, 4, sc[i].want), "ScatterElements reduction %s", sc[i].red);
        cv_val_unref(y);
    }

    /* Unique: all four outputs, unsorted */
    cv_val *uq = vec_i64(6, (const int64_t[]){2, 1, 1, 3, 4, 3});
    tm_init(&t, 11);
    ins[0] = tm_in(&t, "x", uq);
    carve_node_set_attr_int(t.m, tm_node(&t, "Unique", 1, ins, 4), "sorted", 0);
    cv_val *u[4] = {0};
    OT_CHECK(tm_run(&t, u) == CARVE_OK, "Unique: %s", carve_errmsg(t.ctx));
    OT_CHECK(values_i64(u[0], 4, (const int64_t[]){2, 1, 3, 4}) && values_i64(u[1], 4, (const int64_t[]){0, 1, 3, 4}) &&
                 values_i64(u[2], 6, (const int64_t[]){0, 1, 1, 2, 3, 2}) &&
                 values_i64(u[3], 4, (const int64_t[]){1, 2, 2, 1}),
             "Unique unsorted outputs");
    unref_all(u, 4);
    tm_free(&t);
}

/* ================================================================ dtypes through the byte kernels */

static void test_dtypes(void)
{
    tm t;
    cv_val *r[2] = {0};
    /* int4: Transpose, Slice, Concat, Gather keep values (sign included) */
    static const int64_t d23[2] = {2, 3};
    cv_val *q = cv_val_new(CARVE_INT4, 2, d23);
    static const int64_t q4[6] = {-8, -1, 0, 1, 5, 7};
    for (int i = 0; i < 6; i++)
        cv_val_set_i64(q, (size_t)i, q4[i]);
    tm_init(&t, 21);
    carve_value_id x = tm_in(&t, "x", q);
    carve_node_set_attr_ints(t.m, tm_node(&t, "Transpose", 1, &x, 1), "perm", 2, (const int64_t[]){1, 0});
    OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->dtype == CARVE_INT4 &&
                 values_i64(r[0], 6, (const int64_t[]){-8, 1, -1, 5, 0, 7}),
             "int4 Transpose: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
    cv_val *u = cv_val_new(CARVE_UINT4, 1, (const int64_t[]){3});
    for (int i = 0; i < 3; i++)
        cv_val_set_i64(u, (size_t)i, 13 + i);
    cv_val *u2 = cv_val_clone(u);
    tm_init(&t, 21);
    carve_value_id ins[2] = {tm_in(&t, "a", u), tm_in(&t, "b", u2)};
    carve_node_set_attr_int(t.m, tm_node(&t, "Concat", 2, ins, 1), "axis", 0);
    OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->dtype == CARVE_UINT4 && r[0]->nbytes == 3 &&
                 values_i64(r[0], 6, (const int64_t[]){13, 14, 15, 13, 14, 15}),
             "uint4 Concat: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
    q = cv_val_new(CARVE_INT4, 2, d23);
    for (int i = 0; i < 6; i++)
        cv_val_set_i64(q, (size_t)i, q4[i]);
    tm_init(&t, 21);
    ins[0] = tm_in(&t, "x", q);
    ins[1] = tm_in(&t, "i", vec_i64(2, (const int64_t[]){-1, 0}));
    carve_node_set_attr_int(t.m, tm_node(&t, "Gather", 2, ins, 1), "axis", 1);
    OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->dtype == CARVE_INT4 &&
                 values_i64(r[0], 4, (const int64_t[]){0, -8, 7, 1}),
             "int4 Gather: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);

    /* strings: Transpose, Pad (constant and edge), Gather, Tile own their copies */
    static const char *const sv[6] = {"a", "bb", "", "ccc", "d", "ee"};
    tm_init(&t, 13);
    x = tm_in(&t, "x", strings(2, d23, sv));
    tm_node(&t, "Transpose", 1, &x, 1);
    OT_CHECK(tm_run(&t, r) == CARVE_OK && !strcmp(str_at(r[0], 1), "ccc") && !strcmp(str_at(r[0], 4), "") &&
                 ((char **)r[0]->data)[0] != ((char **)t.feed[0]->data)[0],
             "string Transpose: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "x", strings(2, d23, sv));
    ins[1] = tm_in(&t, "p", vec_i64(4, (const int64_t[]){0, 1, 0, 0}));
    tm_node(&t, "Pad", 2, ins, 1);
    OT_CHECK(tm_run(&t, r) == CARVE_OK && same_dims(r[0], 2, (const int64_t[]){2, 4}) &&
                 !strcmp(str_at(r[0], 0), "") && !strcmp(str_at(r[0], 5), "ccc"),
             "string Pad: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "x", strings(2, d23, sv));
    ins[1] = tm_in(&t, "r", vec_i64(2, (const int64_t[]){2, 1}));
    tm_node(&t, "Tile", 2, ins, 1);
    OT_CHECK(tm_run(&t, r) == CARVE_OK && r[0]->nelem == 12 && !strcmp(str_at(r[0], 7), "bb"),
             "string Tile: %s", carve_errmsg(t.ctx));
    cv_val_unref(r[0]);
    tm_free(&t);
}

/* ================================================================ fast paths against literal loops */

static void test_fast_paths(void)
{
    /* Transpose NCHW -> NHWC (the tiled path) and a 5-D permutation, float32
     * and float16, against index arithmetic written out here */
    static const int64_t shapes[][5] = {{2, 37, 19, 23, 1}, {3, 4, 33, 65, 1}, {2, 3, 4, 5, 6}};
    static const int64_t perms[][5] = {{0, 2, 3, 1, 4}, {0, 3, 1, 2, 4}, {4, 2, 0, 3, 1}};
    static const carve_dtype dts[2] = {CARVE_FLOAT, CARVE_FLOAT16};
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 2; d++) {
            tm t;
            tm_init(&t, 13);
            cv_val *x = ot_random(dts[d], 5, shapes[c], (uint32_t)c, -1, 1);
            carve_value_id in = tm_in(&t, "x", x);
            carve_node_set_attr_ints(t.m, tm_node(&t, "Transpose", 1, &in, 1), "perm", 5, perms[c]);
            cv_val *y[1] = {0};
            OT_CHECK(tm_run(&t, y) == CARVE_OK, "Transpose: %s", carve_errmsg(t.ctx));
            int64_t st[5], od[5], ctr[5] = {0};
            for (int i = 4, s = 1; i >= 0; i--) {
                st[i] = s;
                s *= (int)shapes[c][i];
            }
            for (int i = 0; i < 5; i++)
                od[i] = shapes[c][perms[c][i]];
            bool ok = y[0] && y[0]->nelem == x->nelem;
            for (size_t i = 0; ok && i < y[0]->nelem; i++) {
                size_t src = 0;
                for (int a = 0; a < 5; a++)
                    src += (size_t)(ctr[a] * st[perms[c][a]]);
                ok = cv_val_get_f64(y[0], i) == cv_val_get_f64(x, src);
                for (int a = 4; a >= 0; a--) {
                    if (++ctr[a] < od[a])
                        break;
                    ctr[a] = 0;
                }
            }
            OT_CHECK(ok, "Transpose case %d dtype %s differs from the literal loop", c, carve_dtype_name(dts[d]));
            cv_val_unref(y[0]);
            tm_free(&t);
        }
    /* Expand of a scalar and of a column, Slice with a negative step over a
     * broadcast-free 3-D tensor */
    tm t;
    tm_init(&t, 13);
    carve_value_id ins[2] = {tm_in(&t, "x", iota(CARVE_FLOAT, 2, (const int64_t[]){3, 1})),
                             tm_in(&t, "s", vec_i64(3, (const int64_t[]){2, 1, 5}))};
    tm_node(&t, "Expand", 2, ins, 1);
    cv_val *y[1] = {0};
    OT_CHECK(tm_run(&t, y) == CARVE_OK && same_dims(y[0], 3, (const int64_t[]){2, 3, 5}), "Expand: %s",
             carve_errmsg(t.ctx));
    bool ok = y[0] != NULL;
    for (size_t i = 0; ok && i < 30; i++)
        ok = cv_val_get_f64(y[0], i) == (double)((i / 5) % 3);
    OT_CHECK(ok, "Expand column values");
    cv_val_unref(y[0]);
    tm_free(&t);
}

/* ================================================================ Range, Dropout training */

static void test_range_dropout(void)
{
    /* int64 at its limits: no overflow, count 3 */
    tm t;
    tm_init(&t, 13);
    int64_t s = INT64_MIN, l = INT64_MAX, d = INT64_MAX;
    carve_value_id ins[3] = {tm_in(&t, "s", vals_i64(0, NULL, &s)), tm_in(&t, "l", vals_i64(0, NULL, &l)),
                             tm_in(&t, "d", vals_i64(0, NULL, &d))};
    tm_node(&t, "Range", 3, ins, 1);
    cv_val *y[2] = {0};
    OT_CHECK(tm_run(&t, y) == CARVE_OK && values_i64(y[0], 3, (const int64_t[]){INT64_MIN, -1, INT64_MAX - 1}),
             "Range at int64 limits: %s", carve_errmsg(t.ctx));
    cv_val_unref(y[0]);
    tm_free(&t);
    /* float with a negative delta; an empty range */
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "s", cv_val_scalar_f32(1));
    ins[1] = tm_in(&t, "l", cv_val_scalar_f32(-1));
    ins[2] = tm_in(&t, "d", cv_val_scalar_f32(-0.5f));
    tm_node(&t, "Range", 3, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_OK && y[0]->nelem == 4 && cv_val_get_f64(y[0], 3) == -0.5, "Range float: %s",
             carve_errmsg(t.ctx));
    cv_val_unref(y[0]);
    tm_free(&t);
    tm_init(&t, 13);
    ins[0] = tm_in(&t, "s", cv_val_scalar_f32(1));
    ins[1] = tm_in(&t, "l", cv_val_scalar_f32(-1));
    ins[2] = tm_in(&t, "d", cv_val_scalar_f32(0.5f));
    tm_node(&t, "Range", 3, ins, 1);
    OT_CHECK(tm_run(&t, y) == CARVE_OK && y[0]->nelem == 0, "Range empty: %s", carve_errmsg(t.ctx));
    cv_val_unref(y[0]);
    tm_free(&t);

    /* Dropout training mode with a seed: deterministic, kept values scaled
     * by 1/(1-ratio), mask matching */
    static const int64_t dims[2] = {64, 64};
    cv_val *first = NULL;
    for (int run = 0; run < 2; run++) {
        tm_init(&t, 13);
        uint8_t yes = 1;
        cv_val *tr = cv_val_new(CARVE_BOOL, 0, NULL);
        memcpy(tr->data, &yes, 1);
        carve_value_id in[3] = {tm_in(&t, "x", ot_random(CARVE_FLOAT, 2, dims, 5, 1, 2)),
                                tm_in(&t, "r", cv_val_scalar_f32(0.25f)), tm_in(&t, "t", tr)};
        carve_node_set_attr_int(t.m, tm_node(&t, "Dropout", 3, in, 2), "seed", 42);
        OT_CHECK(tm_run(&t, y) == CARVE_OK, "Dropout training: %s", carve_errmsg(t.ctx));
        size_t kept = 0;
        bool ok = y[0] && y[1] && y[1]->dtype == CARVE_BOOL;
        for (size_t i = 0; ok && i < y[0]->nelem; i++) {
            bool m = ((uint8_t *)y[1]->data)[i] != 0;
            double xv = cv_val_get_f64(t.feed[0], i), yv = cv_val_get_f64(y[0], i);
            ok = m ? fabs(yv - xv / 0.75) < 1e-5 : yv == 0;
            kept += m;
        }
        OT_CHECK(ok, "Dropout training values and mask disagree");
        OT_CHECK(kept > 2900 && kept < 3250, "Dropout kept %zu of 4096 at ratio 0.25", kept);
        if (run == 0) {
            first = y[1];
            y[1] = NULL;
        } else {
            OT_CHECK(first && !memcmp(first->data, y[1]->data, first->nbytes), "Dropout with a seed is not repeatable");
        }
        unref_all(y, 2);
        memset(y, 0, sizeof y);
        tm_free(&t);
    }
    cv_val_unref(first);
}

int main(void)
{
    test_decompositions();
    test_infer_symbolic();
    test_infer_multi();
    test_errors();
    test_opset_forms();
    test_dtypes();
    test_fast_paths();
    test_range_dropout();
    return ot_finish();
}

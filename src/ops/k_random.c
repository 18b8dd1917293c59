/* k_random.c: random ops (RandomNormal, RandomUniform, their Like forms,
 * Bernoulli, Multinomial) and Dropout (its training mask, numpy's stream).
 *
 * The generator is counter-based: element i of a node's output is drawn from
 * output i of a SplitMix64 stream (Steele, Lea & Flood, OOPSLA 2014), whose
 * state is a 64-bit key. The key comes from the bits of the node's float
 * `seed` attribute, so a seeded node gives the same tensor on every run and
 * every machine; without a seed it comes from the interpreter's rng_seed,
 * which advances once per node run, so a whole run is reproducible from that
 * one number. Uniforms take the top 53 bits; normals use Box-Muller on pairs
 * of draws. carve does not reproduce numpy's or onnxruntime's streams: tests
 * of these ops compare shapes, dtypes and statistics, not values. */
#include "k_shape.h"

#include <math.h>
#include <string.h>

#define GOLDEN 0x9e3779b97f4a7c15ull

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Output i of the SplitMix64 stream with state `key`. */
static uint64_t draw(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * GOLDEN); }

/* Uniform in [0, 1). */
static double unit(uint64_t x) { return (double)(x >> 11) * 0x1p-53; }

/* The node's key: from its seed attribute, else from the run's seed. */
static uint64_t node_key(cv_kctx *k)
{
    float seed;
    if (carve_node_attr_float(k->m, k->node, "seed", &seed)) {
        uint32_t bits;
        memcpy(&bits, &seed, sizeof bits);
        return mix64(0x6361727665ull << 24 ^ bits); /* "carve" salt: seed 0 is not key 0 */
    }
    if (!k->run || !k->run->rng_seed)
        return mix64(GOLDEN);
    uint64_t s = *k->run->rng_seed;
    *k->run->rng_seed = mix64(s + GOLDEN);
    return mix64(s ^ 0x5851f42d4c957f2dull);
}

static bool is_real(carve_dtype t)
{
    return t == CARVE_FLOAT || t == CARVE_DOUBLE || t == CARVE_FLOAT16 || t == CARVE_BFLOAT16;
}

/* ---------------------------------------------------------------- normal / uniform */

/* float and double results stay below high; float16/bfloat16 ones round to
 * nearest and may reach it. */
static void fill_uniform(cv_val *o, uint64_t key, double low, double high)
{
    double span = high - low;
    if (o->dtype == CARVE_FLOAT) {
        float *p = o->data, hi = (float)high;
        for (size_t i = 0; i < o->nelem; i++) {
            float x = (float)(low + span * unit(draw(key, i)));
            p[i] = x >= hi && hi > (float)low ? nextafterf(hi, (float)low) : x; /* keep [low, high) */
        }
    } else if (o->dtype == CARVE_DOUBLE) {
        double *p = o->data;
        for (size_t i = 0; i < o->nelem; i++) {
            double x = low + span * unit(draw(key, i));
            p[i] = x >= high && high > low ? nextafter(high, low) : x;
        }
    } else {
        for (size_t i = 0; i < o->nelem; i++)
            cv_val_set_f64(o, i, low + span * unit(draw(key, i)));
    }
}

static void fill_normal(cv_val *o, uint64_t key, double mean, double scale)
{
    const double two_pi = 6.283185307179586476925;
    for (size_t i = 0; i < o->nelem; i += 2) {
        /* u1 in (0, 1] keeps the log finite */
        double u1 = ((double)(draw(key, i) >> 11) + 1.0) * 0x1p-53, u2 = unit(draw(key, i + 1));
        double r = sqrt(-2.0 * log(u1));
        double z[2] = {r * cos(two_pi * u2), r * sin(two_pi * u2)};
        for (size_t j = 0; j < 2 && i + j < o->nelem; j++) {
            double x = mean + scale * z[j];
            if (o->dtype == CARVE_FLOAT)
                ((float *)o->data)[i + j] = (float)x;
            else if (o->dtype == CARVE_DOUBLE)
                ((double *)o->data)[i + j] = x;
            else
                cv_val_set_f64(o, i + j, x);
        }
    }
}

carve_status k_random(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_out;
    const char *op = k->m->nodes[k->node].op;
    bool like = n_in > 0;
    bool normal = !strncmp(op, "RandomNormal", 12);
    int64_t dflt = like ? (int64_t)in[0]->dtype : CARVE_FLOAT;
    int64_t dt = cv_attr_i(k->m, k->node, "dtype", dflt);
    if (dt < 0 || dt >= CARVE_DTYPE_COUNT || !is_real((carve_dtype)dt)) {
        if (like && !cv_node_attr_find(k->m, k->node, "dtype"))
            return cv_kerr(k, "input 0 is %s and attribute 'dtype' is not set: the output must be a float type",
                           carve_dtype_name(in[0]->dtype));
        return cv_kerr(k, "attribute 'dtype' is %lld (%s), expected float16, bfloat16, float or double",
                       (long long)dt, dt >= 0 && dt < CARVE_DTYPE_COUNT ? carve_dtype_name((carve_dtype)dt) : "unknown");
    }
    cv_val *o;
    if (like) {
        if (in[0]->kind != CV_VAL_TENSOR)
            return cv_kerr(k, "input 0 'input' is not a tensor");
        o = cv_val_new((carve_dtype)dt, in[0]->rank, in[0]->dims);
    } else {
        const int64_t *shape;
        int r = cv_attr_ints(k->m, k->node, "shape", &shape);
        if (r < 0)
            return cv_kerr(k, "attribute 'shape' is required");
        if (r > CARVE_MAX_RANK)
            return cv_kerr(k, "attribute 'shape' has %d dims, carve allows %d", r, CARVE_MAX_RANK);
        for (int i = 0; i < r; i++)
            if (shape[i] < 0)
                return cv_kerr(k, "attribute 'shape' dim %d is %lld", i, (long long)shape[i]);
        o = cv_val_new((carve_dtype)dt, r, shape);
    }
    if (!o)
        return cv_knomem(k);
    uint64_t key = node_key(k);
    if (normal)
        fill_normal(o, key, cv_attr_f(k->m, k->node, "mean", 0.0f), cv_attr_f(k->m, k->node, "scale", 1.0f));
    else
        fill_uniform(o, key, cv_attr_f(k->m, k->node, "low", 0.0f), cv_attr_f(k->m, k->node, "high", 1.0f));
    out[0] = o;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- Bernoulli */

carve_status k_bernoulli(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !is_real(x->dtype))
        return cv_kerr(k, "input 0 'input' is %s, expected float16, float or double probabilities",
                       carve_dtype_name(x->dtype));
    int64_t dt = cv_attr_i(k->m, k->node, "dtype", x->dtype);
    if (dt < 0 || dt >= CARVE_DTYPE_COUNT ||
        !(is_real((carve_dtype)dt) || dt == CARVE_BOOL ||
          (cv_dtype_is_int((carve_dtype)dt) && carve_dtype_bits((carve_dtype)dt) >= 8)))
        return cv_kerr(k, "attribute 'dtype' is %lld, expected a float, integer or bool type", (long long)dt);
    cv_val *o = cv_val_new((carve_dtype)dt, x->rank, x->dims);
    if (!o)
        return cv_knomem(k);
    uint64_t key = node_key(k);
    /* 1 with probability p: u < p for u uniform in [0, 1) (NaN gives 0) */
    for (size_t i = 0; i < o->nelem; i++) {
        double p = x->dtype == CARVE_FLOAT ? ((const float *)x->data)[i]
                   : x->dtype == CARVE_DOUBLE ? ((const double *)x->data)[i]
                                              : cv_val_get_f64(x, i);
        bool one = unit(draw(key, i)) < p;
        if (o->dtype == CARVE_FLOAT)
            ((float *)o->data)[i] = one;
        else if (o->dtype == CARVE_DOUBLE)
            ((double *)o->data)[i] = one;
        else
            cv_val_set_i64(o, i, one);
    }
    out[0] = o;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- Multinomial */

carve_status k_multinomial(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (x->kind != CV_VAL_TENSOR || !is_real(x->dtype))
        return cv_kerr(k, "input 0 'input' is %s, expected float16, float or double log-probabilities",
                       carve_dtype_name(x->dtype));
    if (x->rank != 2)
        return cv_kerr(k, "input 0 'input' has rank %d, expected 2 ([batch_size, class_size])", x->rank);
    int64_t dt = cv_attr_i(k->m, k->node, "dtype", CARVE_INT32);
    if (dt != CARVE_INT32 && dt != CARVE_INT64)
        return cv_kerr(k, "attribute 'dtype' is %lld, expected int32 (6) or int64 (7)", (long long)dt);
    int64_t ss = cv_attr_i(k->m, k->node, "sample_size", 1);
    if (ss < 0)
        return cv_kerr(k, "attribute 'sample_size' is %lld", (long long)ss);
    int64_t batch = x->dims[0], classes = x->dims[1];
    if (classes == 0 && batch > 0 && ss > 0)
        return cv_kerr(k, "input 0 'input' has no classes to sample from");
    int64_t dims[2] = {batch, ss};
    cv_val *o = cv_val_new((carve_dtype)dt, 2, dims);
    double *cum = cv_malloc(((size_t)classes + 1) * sizeof *cum);
    if (!o || !cum) {
        cv_val_unref(o);
        cv_free(cum);
        return cv_knomem(k);
    }
    uint64_t key = node_key(k);
    for (int64_t b = 0; b < batch; b++) {
        size_t row = (size_t)b * (size_t)classes;
        double mx = -INFINITY;
        for (int64_t c = 0; c < classes; c++) {
            double v = cv_val_get_f64(x, row + (size_t)c);
            if (v > mx)
                mx = v;
        }
        /* weights exp(x - max); +inf classes share all the mass equally */
        double total = 0;
        for (int64_t c = 0; c < classes; c++) {
            double v = cv_val_get_f64(x, row + (size_t)c);
            total += isinf(mx) && mx > 0 ? (v == mx) : exp(v - mx);
            cum[c] = total;
        }
        if (!(total > 0) || !isfinite(total)) {
            cv_val_unref(o);
            cv_free(cum);
            return cv_kerr(k, "input 0 row %lld has no finite log-probability to sample from (NaN or all -inf)",
                           (long long)b);
        }
        for (int64_t s = 0; s < ss; s++) {
            size_t i = (size_t)b * (size_t)ss + (size_t)s;
            double u = unit(draw(key, i)) * total;
            int64_t lo = 0, hi = classes - 1; /* first c with cum[c] > u */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cum[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            while (lo > 0 && cum[lo] == cum[lo - 1]) /* never land on a zero-weight class */
                lo--;
            cv_val_set_i64(o, i, lo);
        }
    }
    cv_free(cum);
    out[0] = o;
    return CARVE_OK;
}

/* ---------------------------------------------------------------- inference */

carve_status i_random(cv_ictx *c)
{
    carve_dtype dt = (carve_dtype)cv_attr_i(c->m, c->node, "dtype", CARVE_FLOAT);
    if (!is_real(dt))
        dt = CARVE_UNDEFINED;
    const int64_t *shape;
    int r = cv_attr_ints(c->m, c->node, "shape", &shape);
    if (r < 0 || r > CARVE_MAX_RANK)
        return cv_infer_set(c, 0, dt, -1, NULL);
    carve_dim dims[CARVE_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = (carve_dim){shape[i] >= 0 ? shape[i] : -1, NULL};
    return cv_infer_set(c, 0, dt, r, dims);
}

carve_status i_randomlike(cv_ictx *c)
{
    const cv_type *t = cv_infer_in(c, 0);
    int64_t dflt = t && t->kind == CARVE_TYPE_TENSOR ? (int64_t)t->dtype : CARVE_UNDEFINED;
    int64_t dt = cv_attr_i(c->m, c->node, "dtype", dflt);
    if (dt < 0 || dt >= CARVE_DTYPE_COUNT)
        dt = CARVE_UNDEFINED;
    return cv_infer_like(c, 0, 0, (carve_dtype)dt);
}

carve_status i_multinomial(cv_ictx *c)
{
    int64_t dt = cv_attr_i(c->m, c->node, "dtype", CARVE_INT32);
    int64_t ss = cv_attr_i(c->m, c->node, "sample_size", 1);
    carve_dtype d = dt == CARVE_INT64 ? CARVE_INT64 : CARVE_INT32;
    const cv_type *t = cv_infer_in(c, 0);
    carve_dim dims[2] = {{-1, NULL}, {ss >= 0 ? ss : -1, NULL}};
    if (t && t->kind == CARVE_TYPE_TENSOR && t->rank == 2)
        dims[0] = t->dims[0];
    return cv_infer_set(c, 0, d, 2, dims);
}

/* ================================================================ Dropout */

/* numpy's legacy generator (MT19937, np.random.seed + uniform): the ONNX
 * reference draws the training mask with it, so a seeded Dropout gives the
 * reference's mask bit for bit. */
typedef struct mt19937 {
    uint32_t s[624];
    int i;
} mt19937;

static void mt_seed(mt19937 *m, uint32_t seed)
{
    m->s[0] = seed;
    for (int i = 1; i < 624; i++)
        m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
    m->i = 624;
}

static uint32_t mt_next(mt19937 *m)
{
    if (m->i >= 624) {
        for (int i = 0; i < 624; i++) {
            uint32_t y = (m->s[i] & 0x80000000u) | (m->s[(i + 1) % 624] & 0x7fffffffu);
            m->s[i] = m->s[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1) ? 0x9908b0dfu : 0);
        }
        m->i = 0;
    }
    uint32_t y = m->s[m->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static double mt_uniform(mt19937 *m)
{
    uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

carve_status k_dropout(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    cv_val *x = in[0];
    if (!cv_dtype_is_float(x->dtype))
        return cv_kerr(k, "input 0 'data' must be floating point, not %s", carve_dtype_name(x->dtype));
    bool training = false;
    double ratio = 0.5;
    if (k->opset >= 12) {
        if (n_in > 2 && in[2]) {
            if (in[2]->nelem != 1 || in[2]->dtype != CARVE_BOOL)
                return cv_kerr(k, "input 2 'training_mode' must be one boolean");
            training = ((const uint8_t *)in[2]->data)[0] != 0;
        }
        if (n_in > 1 && in[1]) {
            if (in[1]->nelem != 1 || !cv_dtype_is_float(in[1]->dtype))
                return cv_kerr(k, "input 1 'ratio' must be one floating-point value");
            ratio = cv_val_get_f64(in[1], 0);
        }
    }
    /* Before opset 12 there is no training input: carve runs models for
     * inference, where Dropout is the identity. */
    carve_dtype mask_t = k->opset >= 10 ? CARVE_BOOL : x->dtype;
    if (!training || ratio == 0) {
        out[0] = cv_val_ref(x);
        if (n_out > 1) {
            out[1] = cv_val_like_dtype(x, mask_t);
            if (!out[1])
                return cv_knomem(k);
            if (mask_t == CARVE_BOOL)
                memset(out[1]->data, 1, out[1]->nbytes);
            else
                for (size_t i = 0; i < x->nelem; i++)
                    cv_val_set_f64(out[1], i, 1.0);
        }
        return CARVE_OK;
    }
    if (!(ratio >= 0 && ratio < 1))
        return cv_kerr(k, "input 1 'ratio' is %g; it must be in [0, 1)", ratio);
    const cv_attr *sa = cv_node_attr_find(k->m, k->node, "seed");
    uint64_t seed;
    if (sa && sa->kind == CARVE_ATTR_INT)
        seed = (uint64_t)sa->u.i;
    else if (k->run && k->run->rng_seed) {
        seed = *k->run->rng_seed; /* the run's seed advances per random node, as k_random.c */
        *k->run->rng_seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    }
    else
        return cv_kerr(k, "training mode without a 'seed' is random: not computed at compile time");
    mt19937 *mt = cv_malloc(sizeof *mt);
    cv_val *y = cv_val_like(x), *mask = n_out > 1 ? cv_val_like_dtype(x, mask_t) : NULL;
    if (!mt || !y || (n_out > 1 && !mask)) {
        cv_free(mt);
        cv_val_unref(y);
        cv_val_unref(mask);
        return cv_knomem(k);
    }
    mt_seed(mt, (uint32_t)seed);
    /* the reference scales in the data's precision */
    float scale32 = (float)(1.0 / (1.0 - (float)ratio));
    double scale = x->dtype == CARVE_DOUBLE ? 1.0 / (1.0 - ratio) : scale32;
    for (size_t i = 0; i < x->nelem; i++) {
        bool keep = mt_uniform(mt) >= ratio;
        if (x->dtype == CARVE_FLOAT)
            ((float *)y->data)[i] = keep ? ((const float *)x->data)[i] * scale32 : 0.0f;
        else
            cv_val_set_f64(y, i, keep ? cv_val_get_f64(x, i) * scale : 0.0);
        if (mask)
            cv_val_set_i64(mask, i, keep);
    }
    cv_free(mt);
    out[0] = y;
    if (n_out > 1)
        out[1] = mask;
    else
        cv_val_unref(mask);
    return CARVE_OK;
}

carve_status i_dropout(cv_ictx *c)
{
    carve_status s = cv_infer_like(c, 0, 0, CARVE_UNDEFINED);
    if (s)
        return s;
    carve_dtype mask_t = c->opset >= 10 ? CARVE_BOOL : sh_idtype(c, 0);
    return cv_infer_like(c, 1, 0, mask_t);
}

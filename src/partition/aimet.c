/* aimet.c: AIMET encodings, the quantization overrides Qualcomm's converter
 * takes beside a float model (docs/artifacts.md cites the format's
 * sources). One in-memory form (cv_enc), made from a Q/DQ node, written as
 * version 1.0.0 or 0.6.1, parsed from either.
 *
 * AIMET's grid is x = (q_unsigned + offset) * scale whatever the ONNX type:
 * an unsigned b-bit zero point z gives offset -z, a signed one
 * -(z + 2^(b-1)) (the signed grid shifted up by half its range), so
 * min = scale * offset and max = scale * (offset + 2^b - 1). Symmetric
 * means offset -2^(b-1) (a signed type with zero point 0). */
#include "partition.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cv_enc_list_free(cv_enc_list *l)
{
    for (uint32_t i = 0; i < l->n; i++) {
        cv_free(l->v[i].name);
        cv_free(l->v[i].scale);
        cv_free(l->v[i].offset);
    }
    cv_free(l->v);
    memset(l, 0, sizeof *l);
}

const cv_enc *cv_enc_find(const cv_enc_list *l, const char *name)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return &l->v[i];
    return NULL;
}

/* A new zeroed entry with room for n scales and offsets, named name. */
static cv_enc *enc_push(cv_enc_list *l, const char *name, uint32_t n)
{
    if (l->n == l->cap) {
        cv_enc *v = cv_grow_array(l->v, &l->cap, sizeof *v, 16);
        if (!v)
            return NULL;
        l->v = v;
    }
    cv_enc *e = &l->v[l->n];
    memset(e, 0, sizeof *e);
    e->name = cv_strdup(name);
    e->scale = cv_malloc((n ? n : 1) * sizeof *e->scale);
    e->offset = cv_malloc((n ? n : 1) * sizeof *e->offset);
    if (!e->name || !e->scale || !e->offset) {
        cv_free(e->name);
        cv_free(e->scale);
        cv_free(e->offset);
        return NULL;
    }
    e->n = n;
    l->n++;
    return e;
}

int cv_enc_int_bits(carve_dtype t)
{
    switch (t) {
    case CARVE_INT4: case CARVE_UINT4: return 4;
    case CARVE_INT8: case CARVE_UINT8: return 8;
    case CARVE_INT16: case CARVE_UINT16: return 16;
    case CARVE_INT32: return 32;
    default: return 0;
    }
}

cv_enc_status cv_enc_from_node(carve_model *m, carve_node_id id, const char *name, bool param, cv_enc_list *l)
{
    const cv_node *n = &m->nodes[id];
    bool dq = !strcmp(n->op, "DequantizeLinear");
    carve_value_id s = n->n_in > 1 ? n->in[1] : CARVE_NONE, zp = n->n_in > 2 ? n->in[2] : CARVE_NONE;
    const cv_tensor *st = s != CARVE_NONE ? cv_const_tensor(m, s) : NULL;
    const cv_tensor *zt = zp != CARVE_NONE ? cv_const_tensor(m, zp) : NULL;
    if (!st || (zp != CARVE_NONE && !zt))
        return CV_ENC_SKIP; /* a runtime scale or zero point: no file can say it */
    carve_dtype qt = dq ? m->values[n->in[0]].type.dtype
                        : zt ? zt->dtype : (carve_dtype)cv_attr_i(m, id, "output_dtype", CARVE_UINT8);
    int bw = cv_enc_int_bits(qt);
    if (!bw)
        return CV_ENC_SKIP; /* float8: AIMET has no such grid */
    int64_t block = cv_attr_i(m, id, "block_size", 0);
    if (zt && zt->nelem != st->nelem)
        return CV_ENC_SKIP;
    cv_enc *e = enc_push(l, name, (uint32_t)st->nelem);
    if (!e)
        return CV_ENC_NOMEM;
    e->param = param;
    e->bw = bw;
    e->kind = block > 0 ? CV_ENC_BLOCK : st->rank == 0 ? CV_ENC_TENSOR : CV_ENC_CHANNEL;
    e->block = block;
    e->axis = (int)cv_attr_i(m, id, "axis", 1);
    cv_val *sv = cv_val_from_tensor(st), *zv = zt ? cv_val_from_tensor(zt) : NULL;
    if (!sv || (zt && !zv)) {
        cv_val_unref(sv);
        cv_val_unref(zv);
        return CV_ENC_NOMEM;
    }
    int64_t half = (int64_t)1 << (bw - 1);
    bool is_signed = cv_dtype_is_signed(qt);
    e->sym = true;
    for (uint32_t i = 0; i < e->n; i++) {
        e->scale[i] = (double)(float)cv_val_get_f64(sv, i);
        int64_t z = zv ? cv_val_get_i64(zv, i) : 0;
        e->offset[i] = is_signed ? -(z + half) : -z;
        e->sym = e->sym && e->offset[i] == -half;
    }
    cv_val_unref(sv);
    cv_val_unref(zv);
    return CV_ENC_OK;
}

/* ---------------------------------------------------------------- writing */

static bool add(cJSON *o, const char *k, cJSON *v)
{
    if (v && cJSON_AddItemToObject(o, k, v))
        return true;
    cJSON_Delete(v);
    return false;
}

static bool push(cJSON *a, cJSON *v)
{
    if (v && cJSON_AddItemToArray(a, v))
        return true;
    cJSON_Delete(v);
    return false;
}

static const char *kind_name(cv_enc_kind k)
{
    return k == CV_ENC_TENSOR ? "PER_TENSOR" : k == CV_ENC_CHANNEL ? "PER_CHANNEL" : "PER_BLOCK";
}

/* Version 1.0.0: {name, dtype, enc_type, bw, is_sym, scale[], offset[], block_size}. */
static cJSON *entry_v1(const cv_enc *e)
{
    cJSON *o = cJSON_CreateObject(), *sc = cJSON_CreateArray(), *of = cJSON_CreateArray();
    bool ok = o && sc && of;
    for (uint32_t i = 0; ok && i < e->n && !e->is_float; i++)
        ok = push(sc, cJSON_CreateNumber(e->scale[i])) && push(of, cJSON_CreateNumber((double)e->offset[i]));
    ok = ok && add(o, "name", cJSON_CreateString(e->name)) &&
         add(o, "dtype", cJSON_CreateString(e->is_float ? "FLOAT" : "INT")) &&
         add(o, "enc_type", cJSON_CreateString(kind_name(e->kind))) && add(o, "bw", cJSON_CreateNumber(e->bw));
    if (ok && !e->is_float) {
        ok = add(o, "is_sym", cJSON_CreateBool(e->sym)) && add(o, "scale", sc) && add(o, "offset", of);
        sc = of = NULL;
        if (ok && e->kind == CV_ENC_BLOCK)
            ok = add(o, "block_size", cJSON_CreateNumber((double)e->block));
    }
    cJSON_Delete(sc);
    cJSON_Delete(of);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Version 0.6.1: a list of {bitwidth, dtype, is_symmetric, max, min, offset,
 * scale}, one per channel. */
static cJSON *entry_v061(const cv_enc *e)
{
    cJSON *a = cJSON_CreateArray();
    bool ok = a != NULL;
    double levels = ldexp(1.0, e->bw) - 1;
    for (uint32_t i = 0; ok && i < (e->is_float ? 1 : e->n); i++) {
        cJSON *o = cJSON_CreateObject();
        ok = o && push(a, o) && add(o, "bitwidth", cJSON_CreateNumber(e->bw)) &&
             add(o, "dtype", cJSON_CreateString(e->is_float ? "float" : "int"));
        if (ok && !e->is_float)
            ok = add(o, "is_symmetric", cJSON_CreateString(e->sym ? "True" : "False")) &&
                 add(o, "max", cJSON_CreateNumber(e->scale[i] * ((double)e->offset[i] + levels))) &&
                 add(o, "min", cJSON_CreateNumber(e->scale[i] * (double)e->offset[i])) &&
                 add(o, "offset", cJSON_CreateNumber((double)e->offset[i])) &&
                 add(o, "scale", cJSON_CreateNumber(e->scale[i]));
    }
    if (!ok) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}

carve_status cv_enc_write(carve_ctx *ctx, const cv_enc_list *l, carve_aimet_version v, char **out)
{
    *out = NULL;
    for (uint32_t i = 0; v == CARVE_AIMET_0_6_1 && i < l->n; i++)
        if (l->v[i].kind == CV_ENC_BLOCK)
            return cv_error(ctx, CARVE_ERR_UNSUPPORTED,
                            "encodings: '%s' is quantized per block (block size %lld), which AIMET encodings version "
                            "0.6.1 cannot express: write version 1.0.0",
                            l->v[i].name, (long long)l->v[i].block);
    cJSON *root = cJSON_CreateObject();
    bool v1 = v == CARVE_AIMET_1_0_0;
    cJSON *acts = v1 ? cJSON_CreateArray() : cJSON_CreateObject();
    cJSON *params = v1 ? cJSON_CreateArray() : cJSON_CreateObject();
    bool ok = root && add(root, "version", cJSON_CreateString(v1 ? "1.0.0" : "0.6.1")) &&
              add(root, "activation_encodings", acts) && add(root, "param_encodings", params);
    if (!ok)
        acts = params = NULL;
    for (uint32_t i = 0; ok && i < l->n; i++) {
        const cv_enc *e = &l->v[i];
        cJSON *to = e->param ? params : acts;
        ok = v1 ? push(to, entry_v1(e)) : add(to, e->name, entry_v061(e));
    }
    char *s = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!s)
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory writing encodings");
    size_t n = strlen(s);
    *out = cv_malloc(n + 2);
    if (*out) {
        memcpy(*out, s, n);
        memcpy(*out + n, "\n", 2);
    }
    cJSON_free(s);
    return *out ? CARVE_OK : cv_error(ctx, CARVE_ERR_NOMEM, "out of memory writing encodings");
}

/* ---------------------------------------------------------------- parsing */

typedef struct {
    carve_ctx *ctx;
    const char *where; /* "activation_encodings", "param_encodings" */
    const char *name;
} pctx;

static carve_status bad(pctx *p, const char *fmt, const char *field)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, field);
    return cv_error(p->ctx, CARVE_ERR_INVALID, "encodings file: %s '%s': %s", p->where, p->name, msg);
}

static bool integral(const cJSON *j, double lo, double hi)
{
    return cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble) && j->valuedouble >= lo &&
           j->valuedouble <= hi;
}

/* The common checks of one parsed entry. */
static carve_status check_entry(pctx *p, cv_enc *e)
{
    if (e->is_float) {
        if (e->bw != 16 && e->bw != 32)
            return bad(p, "%s 16 or 32 expected for dtype FLOAT (float16, float32)", "bitwidth:");
        return CARVE_OK;
    }
    if (e->bw != 4 && e->bw != 8 && e->bw != 16 && e->bw != 32) {
        char f[64];
        snprintf(f, sizeof f, "bitwidth %d: ONNX has no %d-bit integer type (4, 8, 16, 32)", e->bw, e->bw);
        return bad(p, "%s", f);
    }
    double lo = -ldexp(1.0, e->bw), hi = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        if (!(e->scale[i] > 0) || !isfinite(e->scale[i]) || (float)e->scale[i] <= 0 || isinf((float)e->scale[i]))
            return bad(p, "%s must be a positive finite float32", "scale");
        if ((double)e->offset[i] < lo || (double)e->offset[i] > hi)
            return bad(p, "%s lies outside the grid: expected -2^bw .. 0", "offset");
    }
    return CARVE_OK;
}

static cv_enc *new_entry(pctx *p, cv_enc_list *l, uint32_t n, bool param)
{
    cv_enc *e = enc_push(l, p->name, n);
    if (e)
        e->param = param;
    else
        cv_error(p->ctx, CARVE_ERR_NOMEM, "out of memory reading encodings");
    return e;
}

/* A float encoding (no scales): only its bit width. */
static carve_status float_entry(pctx *p, cv_enc_list *l, bool param, int bw)
{
    cv_enc *e = new_entry(p, l, 0, param);
    if (!e)
        return CARVE_ERR_NOMEM;
    e->is_float = true;
    e->bw = bw;
    return check_entry(p, e);
}

static carve_status parse_v1(pctx *p, const cJSON *o, bool param, cv_enc_list *l)
{
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsObject(o) || !cJSON_IsString(nm))
        return bad(p, "%s: an object with a string 'name' expected", "entry");
    p->name = nm->valuestring;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype"), *et = cJSON_GetObjectItemCaseSensitive(o, "enc_type");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(o, "bw"), *sym = cJSON_GetObjectItemCaseSensitive(o, "is_sym");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "scale"), *of = cJSON_GetObjectItemCaseSensitive(o, "offset");
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(o, "block_size");
    if (!cJSON_IsString(dt) || (strcmp(dt->valuestring, "INT") && strcmp(dt->valuestring, "FLOAT")))
        return bad(p, "field '%s' must be \"INT\" or \"FLOAT\"", "dtype");
    if (!integral(bw, 1, 64))
        return bad(p, "field '%s' must be an integer", "bw");
    bool is_float = !strcmp(dt->valuestring, "FLOAT");
    if (is_float) {
        return float_entry(p, l, param, (int)bw->valuedouble);
    }
    if (!cJSON_IsString(et))
        return bad(p, "field '%s' missing (PER_TENSOR, PER_CHANNEL or PER_BLOCK)", "enc_type");
    cv_enc_kind k = !strcmp(et->valuestring, "PER_TENSOR")    ? CV_ENC_TENSOR
                    : !strcmp(et->valuestring, "PER_CHANNEL") ? CV_ENC_CHANNEL
                    : !strcmp(et->valuestring, "PER_BLOCK")   ? CV_ENC_BLOCK
                                                              : (cv_enc_kind)-1;
    if ((int)k < 0)
        return bad(p, "field '%s' must be PER_TENSOR, PER_CHANNEL or PER_BLOCK", "enc_type");
    if (!cJSON_IsBool(sym))
        return bad(p, "field '%s' must be true or false", "is_sym");
    int n = cJSON_GetArraySize(sc);
    if (!cJSON_IsArray(sc) || n < 1)
        return bad(p, "field '%s' must be a non-empty list", "scale");
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != n)
        return bad(p, "field '%s' must be a list as long as 'scale'", "offset");
    if (k == CV_ENC_TENSOR && n != 1)
        return bad(p, "%s: PER_TENSOR takes one scale", "scale");
    if (k == CV_ENC_BLOCK && !integral(bs, 1, 1e9))
        return bad(p, "field '%s' must be a positive integer for PER_BLOCK", "block_size");
    cv_enc *e = new_entry(p, l, (uint32_t)n, param);
    if (!e)
        return CARVE_ERR_NOMEM;
    e->kind = k;
    e->bw = (int)bw->valuedouble;
    e->sym = cJSON_IsTrue(sym);
    e->block = k == CV_ENC_BLOCK ? (int64_t)bs->valuedouble : 0;
    for (int i = 0; i < n; i++) {
        const cJSON *s = cJSON_GetArrayItem(sc, i), *f = cJSON_GetArrayItem(of, i);
        if (!cJSON_IsNumber(s))
            return bad(p, "field '%s' holds a non-number", "scale");
        if (!integral(f, -ldexp(1.0, 40), ldexp(1.0, 40)))
            return bad(p, "field '%s' holds a non-integer", "offset");
        e->scale[i] = s->valuedouble;
        e->offset[i] = (int64_t)f->valuedouble;
    }
    return check_entry(p, e);
}

static carve_status parse_v061(pctx *p, const cJSON *a, bool param, cv_enc_list *l)
{
    int n = cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || n < 1)
        return bad(p, "%s: a non-empty list of encodings expected", "value");
    const cJSON *first = cJSON_GetArrayItem(a, 0);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(first, "dtype");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(first, "bitwidth");
    if (!integral(bw, 1, 64))
        return bad(p, "field '%s' must be an integer", "bitwidth");
    if (dt && (!cJSON_IsString(dt) || (strcmp(dt->valuestring, "int") && strcmp(dt->valuestring, "float"))))
        return bad(p, "field '%s' must be \"int\" or \"float\"", "dtype");
    if (dt && !strcmp(dt->valuestring, "float")) {
        return float_entry(p, l, param, (int)bw->valuedouble);
    }
    cv_enc *e = new_entry(p, l, (uint32_t)n, param);
    if (!e)
        return CARVE_ERR_NOMEM;
    e->kind = n > 1 ? CV_ENC_CHANNEL : CV_ENC_TENSOR;
    e->bw = (int)bw->valuedouble;
    e->sym = true;
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(a, i);
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "scale"), *f = cJSON_GetObjectItemCaseSensitive(o, "offset");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "bitwidth"), *sy = cJSON_GetObjectItemCaseSensitive(o, "is_symmetric");
        if (!cJSON_IsObject(o))
            return bad(p, "%s: every channel's encoding must be an object", "value");
        if (!cJSON_IsNumber(s))
            return bad(p, "field '%s' missing or not a number", "scale");
        if (!integral(f, -ldexp(1.0, 40), ldexp(1.0, 40)))
            return bad(p, "field '%s' missing or not an integer", "offset");
        if (!integral(b, 1, 64) || (int)b->valuedouble != e->bw)
            return bad(p, "field '%s' differs between channels", "bitwidth");
        if (sy && (!cJSON_IsString(sy) || (strcmp(sy->valuestring, "True") && strcmp(sy->valuestring, "False"))))
            return bad(p, "field '%s' must be \"True\" or \"False\"", "is_symmetric");
        e->scale[i] = s->valuedouble;
        e->offset[i] = (int64_t)f->valuedouble;
        e->sym = e->sym && sy && !strcmp(sy->valuestring, "True");
    }
    return check_entry(p, e);
}

carve_status cv_enc_parse(carve_ctx *ctx, const char *json, size_t len, cv_enc_list *l)
{
    memset(l, 0, sizeof *l);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return cv_error(ctx, CARVE_ERR_PARSE, "encodings file: not valid JSON (near byte %zu)", at);
    }
    carve_status st = CARVE_OK;
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    bool v1;
    if (!cJSON_IsObject(root)) {
        st = cv_error(ctx, CARVE_ERR_INVALID, "encodings file: the top level must be an object");
        goto out;
    }
    if (cJSON_IsString(ver) && !strcmp(ver->valuestring, "1.0.0"))
        v1 = true;
    else if (!ver || (cJSON_IsString(ver) && (!strncmp(ver->valuestring, "0.", 2))))
        v1 = false;
    else {
        st = cv_error(ctx, CARVE_ERR_UNSUPPORTED,
                      "encodings file: version %s is not one carve reads (1.0.0, or 0.6.1 and older 0.x maps)",
                      cJSON_IsString(ver) ? ver->valuestring : "(not a string)");
        goto out;
    }
    static const char *const keys[2] = {"activation_encodings", "param_encodings"};
    bool any = false;
    for (int k = 0; k < 2 && !st; k++) {
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(root, keys[k]);
        if (!sec)
            continue;
        any = true;
        pctx p = {ctx, keys[k], ""};
        if (v1 ? !cJSON_IsArray(sec) : !cJSON_IsObject(sec)) {
            st = cv_error(ctx, CARVE_ERR_INVALID, "encodings file: '%s' must be %s in version %s", keys[k],
                          v1 ? "a list" : "an object (name -> list)", v1 ? "1.0.0" : "0.x");
            break;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, sec)
        {
            p.name = v1 ? "" : it->string;
            st = v1 ? parse_v1(&p, it, k == 1, l) : parse_v061(&p, it, k == 1, l);
            if (st)
                break;
        }
    }
    if (!st && !any)
        st = cv_error(ctx, CARVE_ERR_INVALID, "encodings file: neither 'activation_encodings' nor 'param_encodings'");
    for (uint32_t i = 0; !st && i < l->n; i++)
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(l->v[i].name, l->v[j].name)) {
                st = cv_error(ctx, CARVE_ERR_INVALID, "encodings file: '%s' is encoded twice", l->v[i].name);
                break;
            }
out:
    cJSON_Delete(root);
    if (st)
        cv_enc_list_free(l);
    return st;
}

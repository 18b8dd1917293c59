/* target.c: target profiles. A target is data: a JSON file with a
 * schema_version, the ops it supports (per opset range, with constraints),
 * the composite ops it wants kept whole, whether it refuses partitions that
 * read no runtime value, its legalization rules and simulator semantics. A
 * bad profile gets an error naming the file and the field. */
#include "partition.h"

#include "../io/files.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_VERSION 1

typedef struct {
    carve_ctx *ctx;
    const char *src;
    carve_status st;
} pctx;

static bool perr(pctx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool perr(pctx *p, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->st = cv_error(p->ctx, CARVE_ERR_INVALID, "target profile %s: %s", p->src, msg);
    return false;
}

static carve_dtype dtype_by_name(const char *s)
{
    for (int t = 1; t < CARVE_DTYPE_COUNT; t++)
        if (!strcmp(carve_dtype_name((carve_dtype)t), s))
            return (carve_dtype)t;
    return CARVE_UNDEFINED;
}

static const char *known_top[] = {"schema_version", "name", "description", "dtypes", "int64", "max_rank",
                                  "data_dependent_shapes", "static_shapes", "refuses_constant_partitions",
                                  "control_flow_whole", "qdq_node_units", "keep_whole", "legalize", "simulator", "ops",
                                  "cpu_profile", "cpu_add", "cpu_remove", "backend", NULL};

static bool check_keys(pctx *p, const cJSON *obj, const char *const *known, const char *where)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool ok = false;
        for (int i = 0; known[i] && !ok; i++)
            ok = !strcmp(c->string, known[i]);
        if (!ok)
            return perr(p, "%s%s%s: unknown field", where, *where ? "." : "", c->string);
    }
    return true;
}

static bool get_bool(pctx *p, const cJSON *obj, const char *key, bool dflt, bool *out, const char *where)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        *out = dflt;
        return true;
    }
    if (!cJSON_IsBool(x))
        return perr(p, "%s%s%s: expected true or false", where, *where ? "." : "", key);
    *out = cJSON_IsTrue(x);
    return true;
}

static bool get_int(pctx *p, const cJSON *obj, const char *key, int dflt, int lo, int hi, int *out, const char *where)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        *out = dflt;
        return true;
    }
    /* range first: casting a double beyond int is undefined */
    if (!cJSON_IsNumber(x) || !(x->valuedouble >= lo && x->valuedouble <= hi) ||
        x->valuedouble != (double)(int)x->valuedouble)
        return perr(p, "%s%s%s: expected an integer from %d to %d", where, *where ? "." : "", key, lo, hi);
    *out = (int)x->valuedouble;
    return true;
}

static bool get_dtypes(pctx *p, const cJSON *arr, uint32_t *mask, const char *where)
{
    if (!cJSON_IsArray(arr))
        return perr(p, "%s: expected a list of dtype names", where);
    *mask = 0;
    if (!arr->child)
        return perr(p, "%s: empty list (name at least one dtype)", where);
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        carve_dtype t = cJSON_IsString(c) ? dtype_by_name(c->valuestring) : CARVE_UNDEFINED;
        if (!t)
            return perr(p, "%s[%d]: '%s' is not a dtype name (float32, float16, int8, ...)", where, i,
                        cJSON_IsString(c) ? c->valuestring : "?");
        *mask |= 1u << t;
    }
    return true;
}

static bool known_op(const char *op)
{
    return cv_op_find("", op, 1000) || cv_op_find("ai.carve", op, 1000);
}

static bool get_names(pctx *p, const cJSON *arr, char ***out, uint32_t *n, const char *where)
{
    *out = NULL;
    *n = 0;
    if (!arr)
        return true;
    if (!cJSON_IsArray(arr))
        return perr(p, "%s: expected a list of op names", where);
    int cnt = cJSON_GetArraySize(arr);
    *out = cv_malloc(((size_t)cnt + 1) * sizeof **out);
    if (!*out)
        return perr(p, "out of memory");
    int i = 0;
    for (const cJSON *c = arr->child; c; c = c->next, i++) {
        if (!cJSON_IsString(c))
            return perr(p, "%s[%d]: expected an op name", where, i);
        if (!known_op(c->valuestring))
            return perr(p, "%s[%d]: carve does not know op '%s'", where, i, c->valuestring);
        (*out)[(*n)++] = cv_strdup(c->valuestring);
    }
    return true;
}

static const char *rule_keys[] = {"since", "until", "last_axis", "max_outputs", "max_rank", "dtypes", "attrs",
                                  "max_inputs", "const_inputs", "float_only", "checks", "min_rank", "min_inputs",
                                  "last_axis_transpose", NULL};

static const char *const check_names[CV_CHECK_COUNT + 1] = {"gemm_c", "groups_divide_channels", "resize_qnn", "einsum_matmul",
                                          "reshape_allowzero", "per_tensor_outside_unit", "fixed_16bit_encoding",
                                          NULL};

const char *cv_check_name(int i) { return i >= 0 && i < CV_CHECK_COUNT ? check_names[i] : NULL; }

static bool parse_rule(pctx *p, const cJSON *r, cv_op_rule *rule, const char *where)
    __attribute__((nonnull));
static bool parse_rule(pctx *p, const cJSON *r, cv_op_rule *rule, const char *where)
{
    if (!cJSON_IsObject(r))
        return perr(p, "%s: expected an object of constraints", where);
    if (!check_keys(p, r, rule_keys, where))
        return false;
    memset(rule, 0, sizeof *rule);
    if (!get_int(p, r, "since", 1, 1, 1000, &rule->since, where) ||
        !get_int(p, r, "until", 0, 0, 1000, &rule->until, where) ||
        !get_int(p, r, "max_outputs", 0, 0, 255, &rule->max_outputs, where) ||
        !get_int(p, r, "max_rank", 0, 0, CARVE_MAX_RANK, &rule->max_rank, where) ||
        !get_int(p, r, "max_inputs", 0, 0, 255, &rule->max_inputs, where) ||
        !get_int(p, r, "min_inputs", 0, 0, 255, &rule->min_inputs, where) ||
        !get_int(p, r, "min_rank", 0, 0, CARVE_MAX_RANK, &rule->min_rank, where) ||
        !get_bool(p, r, "last_axis_transpose", false, &rule->last_axis_transpose, where) ||
        !get_bool(p, r, "float_only", false, &rule->float_only, where))
        return false;
    const cJSON *ci = cJSON_GetObjectItemCaseSensitive(r, "const_inputs");
    if (ci) {
        if (!cJSON_IsArray(ci))
            return perr(p, "%s.const_inputs: expected a list of input indices", where);
        int i = 0;
        for (const cJSON *c = ci->child; c; c = c->next, i++) {
            /* range first: converting 1e83 to int is undefined (fuzz_target) */
            if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0 && c->valuedouble <= 31) ||
                c->valuedouble != (double)(int)c->valuedouble)
                return perr(p, "%s.const_inputs[%d]: expected an input index from 0 to 31", where, i);
            rule->const_inputs |= 1u << c->valueint;
        }
    }
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(r, "checks");
    if (ck) {
        if (!cJSON_IsArray(ck))
            return perr(p, "%s.checks: expected a list of check names", where);
        int i = 0;
        for (const cJSON *c = ck->child; c; c = c->next, i++) {
            int k = 0;
            while (check_names[k] && !(cJSON_IsString(c) && !strcmp(check_names[k], c->valuestring)))
                k++;
            if (!check_names[k])
                return perr(p, "%s.checks[%d]: '%s' is not a check (gemm_c, groups_divide_channels, "
                               "resize_qnn, einsum_matmul, reshape_allowzero, per_tensor_outside_unit, "
                               "fixed_16bit_encoding)",
                            where, i, cJSON_IsString(c) ? c->valuestring : "?");
            rule->checks |= 1u << k;
        }
    }
    if (rule->until && rule->until < rule->since)
        return perr(p, "%s.until: %d is before since %d", where, rule->until, rule->since);
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(r, "last_axis");
    if (la) {
        if (!cJSON_IsString(la))
            return perr(p, "%s.last_axis: expected an attribute name", where);
        rule->last_axis = cv_strdup(la->valuestring);
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(r, "dtypes");
    char w[400];
    snprintf(w, sizeof w, "%s.dtypes", where);
    if (dt && !get_dtypes(p, dt, &rule->dtype_mask, w))
        return false;
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(r, "attrs");
    if (at) {
        if (!cJSON_IsObject(at))
            return perr(p, "%s.attrs: expected an object of attribute -> allowed values", where);
        int cnt = cJSON_GetArraySize(at);
        rule->attrs = cv_malloc(((size_t)cnt + 1) * sizeof *rule->attrs);
        if (!rule->attrs)
            return perr(p, "out of memory");
        for (const cJSON *a = at->child; a; a = a->next) {
            cv_attr_rule *ar = &rule->attrs[rule->n_attrs++];
            memset(ar, 0, sizeof *ar);
            ar->name = cv_strdup(a->string);
            if (!cJSON_IsArray(a) || !a->child)
                return perr(p, "%s.attrs.%s: expected a non-empty list of allowed values", where, a->string);
            ar->is_str = cJSON_IsString(a->child);
            int k = cJSON_GetArraySize(a);
            ar->ints = cv_malloc(((size_t)k + 1) * sizeof *ar->ints);
            ar->nums = cv_malloc(((size_t)k + 1) * sizeof *ar->nums);
            ar->strs = cv_malloc(((size_t)k + 1) * sizeof *ar->strs);
            if (!ar->ints || !ar->strs || !ar->nums)
                return perr(p, "out of memory");
            int i = 0;
            for (const cJSON *v = a->child; v; v = v->next, i++) {
                if (ar->is_str ? !cJSON_IsString(v) : !cJSON_IsNumber(v))
                    return perr(p, "%s.attrs.%s[%d]: all values must be %s", where, a->string, i,
                                ar->is_str ? "strings" : "integers");
                if (!ar->is_str && !(v->valuedouble >= -9007199254740992.0 && v->valuedouble <= 9007199254740992.0 &&
                                     v->valuedouble == (double)(int64_t)v->valuedouble))
                    return perr(p, "%s.attrs.%s[%d]: expected an integer of at most 2^53", where, a->string, i);
                if (ar->is_str) {
                    ar->strs[ar->n++] = cv_strdup(v->valuestring);
                } else {
                    ar->nums[ar->n] = v->valuedouble;
                    ar->ints[ar->n++] = (int64_t)v->valuedouble;
                }
            }
        }
    }
    return true;
}

static int cmp_ops(const void *a, const void *b)
{
    return strcmp(((const cv_target_op *)a)->op, ((const cv_target_op *)b)->op);
}

static bool parse(pctx *p, const cJSON *root, carve_target *t)
{
    if (!cJSON_IsObject(root))
        return perr(p, "expected a JSON object");
    if (!check_keys(p, root, known_top, ""))
        return false;
    int sv = 0;
    const cJSON *svj = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (!svj)
        return perr(p, "schema_version: missing");
    if (!get_int(p, root, "schema_version", 0, 0, 1000, &sv, ""))
        return false;
    if (sv != SCHEMA_VERSION)
        return perr(p, "schema_version: %d is not supported (this carve reads version %d)", sv, SCHEMA_VERSION);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (!cJSON_IsString(name) || !*name->valuestring)
        return perr(p, "name: expected a non-empty string");
    t->name = cv_strdup(name->valuestring);
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(root, "description");
    t->description = cv_strdup(cJSON_IsString(desc) ? desc->valuestring : "");
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(root, "backend");
    if (be) {
        if (!cJSON_IsString(be) || !*be->valuestring)
            return perr(p, "backend: expected a non-empty string (a backend's name, e.g. \"reference\")");
        t->backend = cv_strdup(be->valuestring);
    }
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(root, "cpu_profile");
    if (cpu) {
        if (!cJSON_IsString(cpu) || (strcmp(cpu->valuestring, "core") && strcmp(cpu->valuestring, "full")))
            return perr(p, "cpu_profile: expected \"core\" or \"full\"");
        t->is_cpu = true;
        t->cpu_base = !strcmp(cpu->valuestring, "full") ? CV_CPU_FULL : CV_CPU_CORE;
        return get_names(p, cJSON_GetObjectItemCaseSensitive(root, "cpu_add"), &t->cpu_add, &t->n_cpu_add, "cpu_add") &&
               get_names(p, cJSON_GetObjectItemCaseSensitive(root, "cpu_remove"), &t->cpu_remove, &t->n_cpu_remove,
                         "cpu_remove");
    }
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(root, "dtypes");
    if (!dts)
        return perr(p, "dtypes: missing");
    if (!get_dtypes(p, dts, &t->dtype_mask, "dtypes"))
        return false;
    const cJSON *i64 = cJSON_GetObjectItemCaseSensitive(root, "int64");
    if (i64 && (!cJSON_IsString(i64) || (strcmp(i64->valuestring, "as_int32") && strcmp(i64->valuestring, "refuse"))))
        return perr(p, "int64: expected \"as_int32\" or \"refuse\"");
    t->int64_as_int32 = i64 && !strcmp(i64->valuestring, "as_int32");
    if (!get_int(p, root, "max_rank", CARVE_MAX_RANK, 0, CARVE_MAX_RANK, &t->max_rank, "") ||
        !get_bool(p, root, "data_dependent_shapes", false, &t->datadep_ok, "") ||
        !get_bool(p, root, "static_shapes", false, &t->static_shapes, "") ||
        !get_bool(p, root, "refuses_constant_partitions", false, &t->refuses_const, "") ||
        !get_bool(p, root, "control_flow_whole", false, &t->control_whole, "") ||
        !get_bool(p, root, "qdq_node_units", false, &t->qdq_units, "") ||
        !get_names(p, cJSON_GetObjectItemCaseSensitive(root, "keep_whole"), &t->keep_whole, &t->n_keep, "keep_whole"))
        return false;
    const cJSON *lg = cJSON_GetObjectItemCaseSensitive(root, "legalize");
    static const char *lg_keys[] = {"int64_to_int32", "clamp_int64_slice_bounds", "uint8_cast_via_int32",
                                    "softmax_axis_via_transpose", "requantize_fixed_16bit", NULL};
    if (lg && (!cJSON_IsObject(lg) || !check_keys(p, lg, lg_keys, "legalize")))
        return p->st ? false : perr(p, "legalize: expected an object");
    if (!get_bool(p, lg, "int64_to_int32", false, &t->lg_int64, "legalize") ||
        !get_bool(p, lg, "clamp_int64_slice_bounds", false, &t->lg_clamp_slice, "legalize") ||
        !get_bool(p, lg, "uint8_cast_via_int32", false, &t->lg_u8cast, "legalize") ||
        !get_bool(p, lg, "softmax_axis_via_transpose", false, &t->lg_softmax_transpose, "legalize") ||
        !get_bool(p, lg, "requantize_fixed_16bit", false, &t->lg_requant16, "legalize"))
        return false;
    if (t->lg_int64 && !t->int64_as_int32)
        return perr(p, "legalize.int64_to_int32: needs \"int64\": \"as_int32\"");
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(root, "simulator");
    static const char *sim_keys[] = {"uint8_to_float_cast_nonzero_is_one", "int32_wraps", "refuse_int64", NULL};
    if (sim && (!cJSON_IsObject(sim) || !check_keys(p, sim, sim_keys, "simulator")))
        return p->st ? false : perr(p, "simulator: expected an object");
    if (!get_bool(p, sim, "uint8_to_float_cast_nonzero_is_one", false, &t->sim_u8cast, "simulator") ||
        !get_bool(p, sim, "int32_wraps", false, &t->sim_i32wrap, "simulator") ||
        !get_bool(p, sim, "refuse_int64", false, &t->sim_refuse_int64, "simulator"))
        return false;
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops");
    if (!cJSON_IsObject(ops))
        return perr(p, "ops: expected an object of op name -> constraints");
    int cnt = cJSON_GetArraySize(ops);
    t->ops = cv_malloc(((size_t)cnt + 1) * sizeof *t->ops);
    if (!t->ops)
        return perr(p, "out of memory");
    for (const cJSON *o = ops->child; o; o = o->next) {
        cv_target_op *to = &t->ops[t->n_ops++];
        memset(to, 0, sizeof *to);
        to->op = cv_strdup(o->string);
        int nr = cJSON_IsArray(o) ? cJSON_GetArraySize(o) : 1;
        if (nr == 0)
            return perr(p, "ops.%s: empty list of constraint rows", o->string);
        if (!known_op(o->string))
            return perr(p, "ops.%s: carve does not know this op", o->string);
        to->rules = cv_malloc((size_t)nr * sizeof *to->rules);
        if (!to->rules)
            return perr(p, "out of memory");
        /* counted before parsing, so a rule that fails half-way is freed */
        memset(to->rules, 0, (size_t)nr * sizeof *to->rules);
        for (int i = 0; i < nr; i++) {
            char w[300];
            if (cJSON_IsArray(o))
                snprintf(w, sizeof w, "ops.%s[%d]", o->string, i);
            else
                snprintf(w, sizeof w, "ops.%s", o->string);
            to->n_rules = (uint32_t)i + 1;
            if (!parse_rule(p, cJSON_IsArray(o) ? cJSON_GetArrayItem(o, i) : o, &to->rules[i], w))
                return false;
        }
    }
    qsort(t->ops, t->n_ops, sizeof *t->ops, cmp_ops);
    for (uint32_t i = 1; i < t->n_ops; i++)
        if (!strcmp(t->ops[i].op, t->ops[i - 1].op))
            return perr(p, "ops.%s: listed twice", t->ops[i].op);
    for (uint32_t i = 0; i < t->n_keep; i++) {
        if (!cv_target_find_op(t, t->keep_whole[i]))
            return perr(p, "keep_whole[%u]: '%s' is not in ops", i, t->keep_whole[i]);
        const cv_op_def *d = cv_op_find("", t->keep_whole[i], 1000);
        if (!d)
            return perr(p, "keep_whole[%u]: carve does not know op '%s'", i, t->keep_whole[i]);
    }
    return true;
}

void carve_target_free(carve_target *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        for (uint32_t r = 0; r < t->ops[i].n_rules; r++) {
            cv_op_rule *rule = &t->ops[i].rules[r];
            for (uint32_t a = 0; a < rule->n_attrs; a++) {
                for (uint32_t k = 0; rule->attrs[a].is_str && k < rule->attrs[a].n; k++)
                    cv_free(rule->attrs[a].strs[k]);
                cv_free(rule->attrs[a].name);
                cv_free(rule->attrs[a].ints);
                cv_free(rule->attrs[a].nums);
                cv_free(rule->attrs[a].strs);
            }
            cv_free(rule->attrs);
            cv_free(rule->last_axis);
        }
        cv_free(t->ops[i].rules);
        cv_free(t->ops[i].op);
    }
    for (uint32_t i = 0; i < t->n_keep; i++)
        cv_free(t->keep_whole[i]);
    for (uint32_t i = 0; i < t->n_cpu_add; i++)
        cv_free(t->cpu_add[i]);
    for (uint32_t i = 0; i < t->n_cpu_remove; i++)
        cv_free(t->cpu_remove[i]);
    cv_free(t->cpu_add);
    cv_free(t->cpu_remove);
    cv_free(t->keep_whole);
    cv_free(t->ops);
    cv_free(t->name);
    cv_free(t->description);
    cv_free(t->backend);
    cv_free(t->source);
    cv_free(t);
}

/* Line and column (from 1) of byte off. */
static void line_col(const char *s, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (s[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

/* What cJSON lets through and JSON forbids, or a profile must not hold:
 * NUL bytes and raw control characters, and "\u0000" in a string (cJSON
 * would cut the string there). Names the last key seen before it. */
static bool scan_raw(pctx *p, const char *s, size_t n)
{
    bool in_str = false;
    size_t key_at = 0, key_len = 0, str_at = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *bad = NULL;
        if (c == 0)
            bad = "a NUL byte";
        else if (in_str && c < 0x20)
            bad = "a raw control character inside a string";
        else if (in_str && c == '\\' && i + 1 < n) {
            if (s[i + 1] == 'u' && i + 5 < n && !memcmp(s + i + 2, "0000", 4))
                bad = "a NUL character (\\u0000) inside a string";
            i++;
        } else if (c == '"') {
            if (in_str) {
                size_t j = i + 1;
                while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r'))
                    j++;
                if (j < n && s[j] == ':') {
                    key_at = str_at;
                    key_len = i - str_at;
                }
            }
            in_str = !in_str;
            str_at = i + 1;
        }
        if (bad) {
            size_t line, col;
            line_col(s, i, &line, &col);
            if (key_len)
                return perr(p, "%s at line %zu column %zu (after key \"%.*s\")", bad, line, col,
                            (int)(key_len > 60 ? 60 : key_len), s + key_at);
            return perr(p, "%s at line %zu column %zu", bad, line, col);
        }
    }
    return true;
}

/* A key given twice in one object: cJSON keeps both and lookups see the
 * first, so the second would be silently ignored. */
/* Where a value sits ("ops.Conv.max_rank", "rules[2]"), one frame per
 * level: written out only for an error (formatting it for every value was
 * a third of parsing a built-in profile, which every lowering does). */
typedef struct kframe {
    const struct kframe *up;
    const char *key; /* NULL: an array element */
    int idx;
} kframe;

static void kpath(const kframe *f, char *buf, size_t cap)
{
    if (!f) {
        buf[0] = 0;
        return;
    }
    kpath(f->up, buf, cap);
    size_t keep = strlen(buf);
    if (f->key)
        snprintf(buf + keep, cap - keep, "%s%s", keep ? "." : "", f->key);
    else
        snprintf(buf + keep, cap - keep, "[%d]", f->idx);
}

static bool no_duplicate_keys(pctx *p, const cJSON *x, const kframe *at, int depth)
{
    char path[512];
    if (depth > 64) {
        kpath(at, path, sizeof path);
        return perr(p, "%s: nested more than 64 deep", *path ? path : "(top)");
    }
    bool obj = cJSON_IsObject(x);
    int idx = 0;
    for (const cJSON *c = x ? x->child : NULL; c; c = c->next, idx++) {
        if (obj)
            for (const cJSON *d = x->child; d != c; d = d->next)
                if (!strcmp(d->string, c->string)) {
                    kpath(at, path, sizeof path);
                    return perr(p, "%s%s%s: key given twice", path, *path ? "." : "", c->string);
                }
        kframe f = {at, obj ? c->string : NULL, idx};
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && !no_duplicate_keys(p, c, &f, depth + 1))
            return false;
    }
    return true;
}

carve_status cv_target_parse(carve_ctx *ctx, const char *json, size_t len, const char *source, carve_target **out)
{
    *out = NULL;
    pctx p = {ctx, source, CARVE_OK};
    if (!scan_raw(&p, json, len))
        return p.st;
    const char *end = NULL;
    /* cJSON's parser writes a process-wide error position: one parse at a
     * time, so contexts on several threads can load profiles */
    static pthread_mutex_t json_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&json_lock);
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    pthread_mutex_unlock(&json_lock);
    if (!root) {
        size_t off = end ? (size_t)(end - json) : 0, line, col;
        line_col(json, off, &line, &col);
        return cv_error(ctx, CARVE_ERR_INVALID, "target profile %s: not valid JSON (at byte %zu, line %zu column %zu)",
                        source, off, line, col);
    }
    size_t at = (size_t)(end - json);
    while (at < len && (json[at] == ' ' || json[at] == '\t' || json[at] == '\n' || json[at] == '\r'))
        at++;
    if (at < len) {
        size_t line, col;
        line_col(json, at, &line, &col);
        cJSON_Delete(root);
        return cv_error(ctx, CARVE_ERR_INVALID,
                        "target profile %s: trailing data after the JSON value (at byte %zu, line %zu column %zu)",
                        source, at, line, col);
    }
    if (!no_duplicate_keys(&p, root, NULL, 0)) {
        cJSON_Delete(root);
        return p.st;
    }
    carve_target *t = cv_zalloc(ctx, sizeof *t, NULL);
    if (!t) {
        cJSON_Delete(root);
        return CARVE_ERR_NOMEM;
    }
    bool ok = parse(&p, root, t);
    cJSON_Delete(root);
    if (!ok) {
        carve_target_free(t);
        return p.st ? p.st : cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    t->source = cv_strdup(source);
    t->hash = cv_hash_bytes(json, len, 0);
    *out = t;
    return CARVE_OK;
}

const cv_target_op *cv_target_find_op(const carve_target *t, const char *op)
{
    size_t lo = 0, hi = t->n_ops;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        /* first bytes first (strcmp's order): this runs for every node */
        int c = (unsigned char)t->ops[mid].op[0] - (unsigned char)op[0];
        if (!c)
            c = strcmp(t->ops[mid].op, op);
        if (!c)
            return &t->ops[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool cv_target_keeps_whole(const carve_target *t, const char *op)
{
    for (uint32_t i = 0; i < t->n_keep; i++)
        if (!strcmp(t->keep_whole[i], op))
            return true;
    return false;
}

bool cv_cpu_has(const carve_target *cpu, const cv_op_def *def, const char *op)
{
    if (!def)
        return false;
    for (uint32_t i = 0; cpu && i < cpu->n_cpu_remove; i++)
        if (!strcmp(cpu->cpu_remove[i], op))
            return false;
    for (uint32_t i = 0; cpu && i < cpu->n_cpu_add; i++)
        if (!strcmp(cpu->cpu_add[i], op))
            return true;
    if (cpu && cpu->cpu_base == CV_CPU_FULL)
        return true;
    return (def->flags & CV_OP_CORE) != 0;
}

/* A target named like a backend registered on ctx that brings its profile
 * (profile_json, or profile_name naming a built-in one): that profile,
 * bound to that backend. */
static carve_status backend_target(carve_ctx *ctx, const carve_backend *b, carve_target **out)
{
    char src[160];
    const char *json = b->profile_json;
    if (json) {
        snprintf(src, sizeof src, "'%s' (from backend %s)", b->name, b->name);
    } else {
        const char *pn = b->profile_name;
        json = cv_builtin_target_json(pn);
        if (!json)
            return cv_error(ctx, CARVE_ERR_ARG, "backend %s names profile '%s', which is not built in", b->name, pn);
        snprintf(src, sizeof src, "'%s' (built in, for backend %s)", pn, b->name);
    }
    carve_status s = cv_target_parse(ctx, json, strlen(json), src, out);
    if (s)
        return s;
    cv_free((*out)->backend);
    (*out)->backend = cv_strdup(b->name);
    if (!(*out)->backend) {
        carve_target_free(*out);
        *out = NULL;
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    return CARVE_OK;
}

const char *carve_target_backend(carve_ctx *ctx, const carve_target *t)
{
    if (t->backend)
        return t->backend;
    return cv_ctx_backend(ctx, t->name) ? t->name : "reference";
}

carve_status carve_target_builtin(carve_ctx *ctx, const char *name, carve_target **out)
{
    const carve_backend *b = cv_ctx_backend(ctx, name);
    if (b && (b->profile_json || b->profile_name))
        return backend_target(ctx, b, out);
    const char *json = cv_builtin_target_json(name);
    if (!json) {
        char list[256] = "";
        for (int i = 0; cv_builtin_target_names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", cv_builtin_target_names[i]);
        *out = NULL;
        return cv_error(ctx, CARVE_ERR_ARG, "no built-in target '%s' (built in: %s)", name, list);
    }
    char src[128];
    snprintf(src, sizeof src, "'%s' (built in)", name);
    return cv_target_parse(ctx, json, strlen(json), src, out);
}

carve_status carve_target_load_file(carve_ctx *ctx, const char *path, carve_target **out)
{
    *out = NULL;
    cv_input in;
    carve_status s = cv_input_map(ctx, path, "target profile", 64u << 20, &in);
    if (s)
        return s;
    char src[1024];
    snprintf(src, sizeof src, "'%s'", path);
    s = cv_target_parse(ctx, (const char *)in.data, in.size, src, out);
    cv_input_unmap(&in);
    return s;
}

const char *carve_target_name(const carve_target *t) { return t->name; }

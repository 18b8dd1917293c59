/* k_string.c: StringNormalizer (opset 10).
 *
 * Case mapping and case-insensitive stopword matching are ASCII only (the C
 * locale's toupper/tolower on A-Z/a-z, which en_US agrees with on ASCII):
 * other bytes, UTF-8 sequences included, pass unchanged whatever the
 * 'locale' attribute says. onnxruntime maps through the named locale's wide
 * characters instead, so non-ASCII letters (é, ß) may differ. */
#include "ops.h"

#include <string.h>

static char up(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }
static char low(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static bool eq_nocase(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (low(a[i]) != low(b[i]))
            return false;
    return true;
}

carve_status k_stringnormalizer(cv_kctx *k, cv_val **in, uint32_t n_in, cv_val **out, uint32_t n_out)
{
    (void)n_in, (void)n_out;
    const cv_val *x = in[0];
    if (x->dtype != CARVE_STRING)
        return cv_kerr(k, "input 0 'X' is %s, expected string", carve_dtype_name(x->dtype));
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
        return cv_kerr(k, "input 0 'X' must have shape [C] or [1, C]");
    const char *act = cv_attr_s(k->m, k->node, "case_change_action", "NONE");
    int action; /* 0 none, 1 lower, 2 upper */
    if (!strcmp(act, "NONE"))
        action = 0;
    else if (!strcmp(act, "LOWER"))
        action = 1;
    else if (!strcmp(act, "UPPER"))
        action = 2;
    else
        return cv_kerr(k, "attribute 'case_change_action' is '%s', expected LOWER, UPPER or NONE", act);
    bool sensitive = cv_attr_i(k->m, k->node, "is_case_sensitive", 0) != 0;
    /* stopwords: a STRINGS attribute, read through the node's attribute list */
    const cv_attr *sw = cv_node_attr_find(k->m, k->node, "stopwords");
    uint32_t nsw = sw && sw->kind == CARVE_ATTR_STRINGS ? sw->n : 0;
    char **src = x->data;
    bool *keep = cv_malloc(x->nelem + 1);
    if (!keep)
        return cv_knomem(k);
    size_t kept = 0;
    for (size_t i = 0; i < x->nelem; i++) {
        size_t len = strlen(src[i]);
        keep[i] = true;
        for (uint32_t s = 0; s < nsw && keep[i]; s++) {
            const cv_bytes *w = &sw->u.strings[s];
            if (w->n == len && (sensitive ? !memcmp(w->p, src[i], len) : eq_nocase((const char *)w->p, src[i], len)))
                keep[i] = false;
        }
        kept += keep[i];
    }
    /* all removed: one empty string, [1] or [1, 1] */
    int64_t od[2];
    if (x->rank == 1)
        od[0] = kept ? (int64_t)kept : 1;
    else
        od[0] = 1, od[1] = kept ? (int64_t)kept : 1;
    cv_val *y = cv_val_new(CARVE_STRING, x->rank, od);
    if (!y) {
        cv_free(keep);
        return cv_knomem(k);
    }
    char **dst = y->data;
    size_t o = 0;
    for (size_t i = 0; i < x->nelem; i++) {
        if (!keep[i])
            continue;
        size_t len = strlen(src[i]);
        char *s = cv_malloc(len + 1);
        if (!s) {
            cv_free(keep);
            cv_val_unref(y);
            return cv_knomem(k);
        }
        for (size_t j = 0; j < len; j++)
            s[j] = action == 1 ? low(src[i][j]) : action == 2 ? up(src[i][j]) : src[i][j];
        s[len] = 0;
        dst[o++] = s;
    }
    cv_free(keep);
    if (!kept) {
        dst[0] = cv_malloc(1);
        if (!dst[0]) {
            cv_val_unref(y);
            return cv_knomem(k);
        }
        dst[0][0] = 0;
    }
    out[0] = y;
    return CARVE_OK;
}

carve_status i_stringnormalizer(cv_ictx *c)
{
    const cv_type *t = cv_infer_in(c, 0);
    if (!t || t->kind != CARVE_TYPE_TENSOR || t->rank < 0)
        return cv_infer_set(c, 0, CARVE_STRING, -1, NULL);
    if (t->dtype && t->dtype != CARVE_STRING)
        return cv_ierr(c, "input 0 'X' is %s, expected string", carve_dtype_name(t->dtype));
    if (t->rank != 1 && !(t->rank == 2 && (t->dims[0].value == 1 || t->dims[0].value < 0)))
        return cv_ierr(c, "input 0 'X' must have shape [C] or [1, C]");
    /* the count left depends on the values; without stopwords it is C */
    const cv_attr *sw = cv_node_attr_find(c->m, c->node, "stopwords");
    bool none = !sw || sw->kind != CARVE_ATTR_STRINGS || sw->n == 0;
    carve_dim d[2];
    if (t->rank == 1)
        d[0] = none ? t->dims[0] : (carve_dim){-1, NULL};
    else
        d[0] = (carve_dim){1, NULL}, d[1] = none ? t->dims[1] : (carve_dim){-1, NULL};
    return cv_infer_set(c, 0, CARVE_STRING, t->rank, d);
}

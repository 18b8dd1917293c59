/* cmd_report.c: `carve report REPORT.json [--model MODEL.onnx] -o map.html`,
 * and the page writer `carve lower --html` shares: one self-contained HTML
 * file (docs/map.md) made of the page template of src/report (embedded at
 * build time), the report's JSON and, with a model, its values' types. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "passes/passes.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char cv_map_html[], cv_map_css[], cv_map_js[];

/* JSON text inside <script>: every '<' becomes \u003c, so neither "</script"
 * nor "<!--" can appear. In valid JSON a '<' is always inside a string,
 * where the escape means the same character. */
static bool put_script_json(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const char *lt = memchr(s + i, '<', n - i);
        size_t run = lt ? (size_t)(lt - (s + i)) : n - i;
        if (run && fwrite(s + i, 1, run, f) != run)
            return false;
        i += run;
        if (lt) {
            if (fputs("\\u003c", f) < 0)
                return false;
            i++;
        }
    }
    return true;
}

static void put_jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<')
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_type(FILE *f, const carve_model *m, carve_value_id v, bool *first)
{
    char t[512];
    if (v == CARVE_NONE || carve_value_type_kind(m, v) == CARVE_TYPE_UNKNOWN)
        return;
    fputs(*first ? "\n" : ",\n", f);
    *first = false;
    put_jstr(f, carve_value_name(m, v));
    fputc(':', f);
    put_jstr(f, cli_type_str(m, v, t, sizeof t));
}

/* {"values": {name: "float32[1,3,224,224]", ...}}: every graph's inputs,
 * initializers and node outputs (each value once). */
static void put_model_types(FILE *f, const carve_model *m)
{
    bool first = true;
    fputs("{\"values\":{", f);
    for (size_t g = 0; g < carve_model_graph_count(m); g++) {
        carve_graph_id gi = (carve_graph_id)g;
        for (size_t i = 0; i < carve_graph_input_count(m, gi); i++)
            put_type(f, m, carve_graph_input(m, gi, i), &first);
        for (size_t i = 0; i < carve_graph_initializer_count(m, gi); i++)
            put_type(f, m, carve_graph_initializer(m, gi, i), &first);
        for (size_t i = 0; i < carve_graph_node_count(m, gi); i++) {
            carve_node_id n = carve_graph_node(m, gi, i);
            for (size_t k = 0; k < carve_node_output_count(m, n); k++)
                put_type(f, m, carve_node_output(m, n, k), &first);
        }
    }
    fputs("}}", f);
}

char *cli_map_page(const char *cmd, const char *json, size_t len, const carve_model *m, size_t *n)
{
    const char *html = (const char *)cv_map_html;
    static const char *const marks[] = {"/*@CARVE_CSS@*/", "@CARVE_REPORT@", "@CARVE_MODEL@", "/*@CARVE_JS@*/"};
    const char *at[4];
    for (int k = 0; k < 4; k++)
        if (!(at[k] = strstr(html, marks[k])) || (k && at[k] < at[k - 1])) {
            fprintf(stderr, "carve %s: the page template lacks %s (a carve bug)\n", cmd, marks[k]);
            return NULL;
        }
    char *page = NULL;
    FILE *f = open_memstream(&page, n);
    if (!f) {
        fprintf(stderr, "carve %s: out of memory\n", cmd);
        return NULL;
    }
    const char *p = html;
    bool ok = true;
    for (int k = 0; k < 4 && ok; k++) {
        ok = fwrite(p, 1, (size_t)(at[k] - p), f) == (size_t)(at[k] - p);
        p = at[k] + strlen(marks[k]);
        if (k == 0)
            ok = ok && fputs((const char *)cv_map_css, f) >= 0;
        else if (k == 1)
            ok = ok && put_script_json(f, json, len);
        else if (k == 2) {
            if (m)
                put_model_types(f, m);
            else
                fputs("{}", f);
        } else
            ok = ok && fputs((const char *)cv_map_js, f) >= 0;
    }
    ok = ok && fputs(p, f) >= 0 && !ferror(f);
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        fprintf(stderr, "carve %s: out of memory making the page\n", cmd);
        free(page);
        return NULL;
    }
    return page;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: carve report REPORT.json [--model MODEL.onnx] -o MAP.html\n\n"
               "Writes the partition map of a lowering report (carve lower --report): one\n"
               "self-contained HTML page, no network needed, that shows the summary, the graph\n"
               "with its partitions and CPU nodes, a searchable node table and the partitions\n"
               "(docs/map.md). With --model (the original or the lowered model), the values'\n"
               "types and shapes are shown too.\n\n"
               "  -o, --output FILE   the page (never the report or the model)\n"
               "  --model FILE        the model, for the values' dtypes and shapes\n");
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n - 1, f);
        n += r;
        if (n + 1 < cap)
            break;
        char *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!b || bad) {
        free(b);
        if (!errno)
            errno = EIO;
        return NULL;
    }
    b[n] = 0;
    *len = n;
    return b;
}

int cmd_report(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *model = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return EXIT_OK;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has_val)
            out = argv[++i];
        else if (!strcmp(a, "--model") && has_val)
            model = argv[++i];
        else if (a[0] == '-' && a[1])
            return cli_usage_error("report", has_val ? "unknown option '%s'" : "unknown option or missing value: '%s'", a);
        else if (path)
            return cli_usage_error("report", "one report at a time ('%s' and '%s')", path, a);
        else
            path = a;
    }
    if (!path || !out)
        return cli_usage_error("report", !path ? "no report given" : "no output given (-o MAP.html)");
    size_t len = 0;
    errno = 0;
    char *json = read_all(path, &len);
    if (!json) {
        fprintf(stderr, "carve report: %s: %s\n", path, strerror(errno));
        return EXIT_MODEL;
    }
    /* a carve report: a JSON object with a "nodes" array */
    cJSON *j = cJSON_ParseWithLength(json, len);
    const char *why = !j ? "not valid JSON" : !cJSON_IsObject(j) ? "not a JSON object"
                                            : !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "nodes"))
                                                ? "no \"nodes\" array (not a carve lowering report)"
                                                : NULL;
    cJSON_Delete(j);
    if (why) {
        fprintf(stderr, "carve report: %s: %s\n", path, why);
        free(json);
        return EXIT_MODEL;
    }
    carve_ctx *ctx = carve_ctx_new();
    carve_model *m = NULL;
    carve_outputs *o = NULL;
    char *page = NULL;
    size_t n = 0;
    int rc = EXIT_MODEL;
    if (model) {
        if (!(m = cli_load(ctx, model)))
            goto done;
        /* the types of every value, as far as inference can tell; a model
         * it cannot infer still shows the types it was saved with */
        if (cv_infer_model(m, NULL) != CARVE_OK)
            fprintf(stderr, "carve report: %s: types as saved (%s)\n", model, carve_errmsg(ctx));
    }
    if (!(page = cli_map_page("report", json, len, m, &n)))
        goto done;
    /* written to a temporary beside it and renamed (docs/files.md); never
     * onto the report or the model */
    o = carve_outputs_new(ctx);
    carve_status s = carve_outputs_protect(o, path, "report");
    if (!s && model)
        s = carve_outputs_protect(o, model, "model");
    if (!s)
        s = carve_outputs_add_bytes(o, out, "map", page, n);
    if (!s)
        s = carve_outputs_commit(o);
    if (s) {
        fprintf(stderr, "carve report: %s\n", carve_errmsg(ctx));
        goto done;
    }
    rc = EXIT_OK;
    fprintf(stderr, "map: %s\n", strcmp(out, "-") ? out : "standard output");
done:
    carve_outputs_free(o);
    free(page);
    carve_model_free(m);
    carve_ctx_free(ctx);
    free(json);
    return rc;
}

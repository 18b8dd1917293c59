/* test_report_json.c: the report's JSON strings. Node and value names
 * holding bytes JSON must escape ('"', '\\', controls), long names, names
 * whose escape falls in the word-at-a-time part or the tail of the check,
 * and UTF-8, come back from a JSON parser exactly as given, in the nodes
 * list and in the partitions' boundaries; the raw text holds no control
 * byte but the newlines between entries, and the escapes are JSON's.
 * carve_outputs_add_report writes the JSON and a newline, or refuses a
 * path that is not a file, naming it and leaving nothing behind;
 * carve_report_drop_json frees the JSON and keeps the summary, and a
 * dropped report is refused. */
#define _POSIX_C_SOURCE 200809L
#include "lowertest.h"

#include <sys/stat.h>
#include <unistd.h>

static carve_ctx *ctx;

static char *repeat(char c, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    char *s = malloc(n + t + 1);
    memset(s, c, n);
    memcpy(s + n, tail, t + 1);
    return s;
}

static bool has_string(const cJSON *arr, const char *s)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (cJSON_IsString(e) && !strcmp(e->valuestring, s))
            return true;
    }
    return false;
}

static void names_round_trip(void)
{
    /* value names, each the output of one Relu (delegated) or Tanh (on CPU,
     * so the values around it cross a partition's boundary) */
    char *names[] = {
        strdup("q\"uote"),
        strdup("back\\slash"),
        strdup("ctl\x01\x1f\t\n"),
        strdup("caf\xc3\xa9"),
        strdup("twelve_bytes\"x"),           /* escape in the second 8-byte word */
        repeat('a', 61, ""),                  /* 61, 62 and 63 bytes: around the short path's end */
        repeat('b', 62, ""),
        repeat('c', 63, ""),
        repeat('d', 70, "\"end"),             /* escape past the short path */
        repeat('e', 200, "\\"),               /* escape as the last byte of a long name */
        repeat('f', 300, ""),
    };
    enum { N = sizeof names / sizeof *names };
    carve_model *m = lt_model(ctx, 17);
    carve_value_id v = carve_graph_add_input(m, 0, "in\"put", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    char node[400];
    for (int i = 0; i < N; i++) {
        snprintf(node, sizeof node, "n%d/%s", i, names[i]);
        v = lt_op(m, i % 3 == 2 ? "Tanh" : "Relu", node, 1, &v, names[i]);
    }
    carve_graph_add_output(m, 0, v);
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    const char *cpu_ops[] = {"Tanh"};
    carve_lower_opts o = {0};
    o.cpu_ops = cpu_ops;
    o.n_cpu_ops = 1;
    carve_report *rep = NULL;
    OT_CHECK(carve_lower(m, t, &o, &rep) == CARVE_OK, "lowers: %s", carve_errmsg(ctx));
    const char *json = rep ? carve_report_json(rep) : "";
    for (const unsigned char *p = (const unsigned char *)json; *p; p++)
        if (*p < 0x20 && *p != '\n') {
            OT_CHECK(false, "raw control byte 0x%02x at offset %zu of the report", *p, (size_t)(p - (const unsigned char *)json));
            break;
        }
    OT_CHECK(strstr(json, "\"ctl\\u0001\\u001f\\u0009\\u000a\"") != NULL, "controls escaped as \\u00XX");
    OT_CHECK(strstr(json, "\"q\\\"uote\"") != NULL && strstr(json, "\"back\\\\slash\"") != NULL,
             "quote and backslash escaped with a backslash");
    cJSON *r = cJSON_Parse(json);
    OT_CHECK(r != NULL, "the report parses");
    int on_cpu = 0;
    for (int i = 0; r && i < N; i++) {
        snprintf(node, sizeof node, "n%d/%s", i, names[i]);
        const cJSON *e = lt_node(r, node);
        OT_CHECK(e != NULL, "node %d's name comes back", i);
        if (!e)
            continue;
        OT_CHECK(has_string(cJSON_GetObjectItem(e, "outputs"), names[i]), "value %d's name comes back", i);
        on_cpu += cJSON_IsString(cJSON_GetObjectItem(e, "placement"));
    }
    OT_CHECK(on_cpu == N / 3, "%d nodes on CPU, expected %d", on_cpu, N / 3);
    /* a boundary value of a partition: the one a Tanh reads */
    const cJSON *parts = r ? cJSON_GetObjectItem(r, "partitions") : NULL, *p;
    bool found = false;
    cJSON_ArrayForEach(p, parts)
    {
        found |= has_string(cJSON_GetObjectItem(p, "outputs"), names[4]);
    }
    OT_CHECK(found, "a partition's output named with an escape comes back");
    OT_CHECK(has_string(cJSON_GetObjectItem(lt_node(r, "n0/q\"uote"), "inputs"), "in\"put"),
             "the graph input's name comes back");
    cJSON_Delete(r);
    carve_report_free(rep);
    carve_target_free(t);
    carve_model_free(m);
    for (int i = 0; i < N; i++)
        free(names[i]);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

static void report_written_to_a_set(void)
{
    carve_model *m = lt_model(ctx, 17);
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_FLOAT, 1, (carve_dim[]){{4, NULL}});
    carve_graph_add_output(m, 0, lt_op(m, "Relu", "r", 1, &x, "y"));
    carve_target *t = NULL;
    carve_target_builtin(ctx, "htp", &t);
    carve_report *rep = NULL;
    OT_CHECK(carve_lower(m, t, NULL, &rep) == CARVE_OK, "lowers: %s", carve_errmsg(ctx));
    char dir[] = "/tmp/carve_report_json.XXXXXX", path[64];
    OT_CHECK(mkdtemp(dir) != NULL, "a scratch folder");
    snprintf(path, sizeof path, "%s/r.json", dir);
    carve_outputs *o = carve_outputs_new(ctx);
    OT_CHECK(carve_outputs_add_report(o, rep, path) == CARVE_OK && carve_outputs_commit(o) == CARVE_OK,
             "report written: %s", carve_errmsg(ctx));
    carve_outputs_free(o);
    size_t n = 0;
    char *got = slurp(path, &n);
    const char *want = carve_report_json(rep);
    OT_CHECK(got && n == strlen(want) + 1 && !memcmp(got, want, n - 1) && got[n - 1] == '\n',
             "the file is the JSON and a newline (%zu bytes)", n);
    free(got);
    /* a folder is refused, named, and nothing is left in it */
    o = carve_outputs_new(ctx);
    carve_status s = carve_outputs_add_report(o, rep, dir);
    OT_CHECK(s == CARVE_ERR_IO && strstr(carve_errmsg(ctx), dir) && strstr(carve_errmsg(ctx), "refusing to write the report"),
             "a folder refused: %d %s", s, carve_errmsg(ctx));
    OT_CHECK(carve_outputs_add_report(o, NULL, path) != CARVE_OK, "no report refused");
    carve_outputs_free(o);
    /* the JSON dropped once written: gone, the summary kept, the report
     * refused by a set with a message saying why, no file made */
    char *summary = strdup(carve_report_summary(rep));
    carve_report_drop_json(rep);
    carve_report_drop_json(rep); /* a second call: a no-op */
    carve_report_drop_json(NULL);
    OT_CHECK(carve_report_json(rep) == NULL, "the JSON is gone once dropped");
    OT_CHECK(!strcmp(carve_report_summary(rep), summary), "the summary stays: %s", carve_report_summary(rep));
    free(summary);
    char path2[80];
    snprintf(path2, sizeof path2, "%s/r2.json", dir);
    o = carve_outputs_new(ctx);
    s = carve_outputs_add_report(o, rep, path2);
    OT_CHECK(s == CARVE_ERR_ARG && strstr(carve_errmsg(ctx), path2) && strstr(carve_errmsg(ctx), "dropped"),
             "a dropped report refused, named: %d %s", s, carve_errmsg(ctx));
    OT_CHECK(carve_outputs_commit(o) != CARVE_OK, "the set does not commit");
    carve_outputs_free(o);
    OT_CHECK(access(path2, F_OK) != 0, "no file made for the dropped report");
    unlink(path);
    OT_CHECK(rmdir(dir) == 0, "nothing left behind in %s", dir);
    carve_report_free(rep);
    carve_target_free(t);
    carve_model_free(m);
}

int main(void)
{
    ctx = carve_ctx_new();
    names_round_trip();
    report_written_to_a_set();
    carve_ctx_free(ctx);
    return ot_finish();
}

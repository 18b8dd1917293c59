/* test_dump_after.c: carve_lower_opts.dump_after / dump_dir (the stages of
 * lowering, docs/ARCHITECTURE.md "Lowering stages"). The dump after a
 * stage is the model's text dump at that point: after "check" it is the
 * input model's, after "compile" the lowered model's; legalization shows
 * between "delegates" and "legalize"; the rounds' stages carry their round.
 * Bad requests (an unknown stage, no folder, a folder that is a file) fail
 * before anything is done, leave the model as it was, and write nothing. */
#define _DEFAULT_SOURCE
#include "lowertest.h"
#include "testfiles.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static carve_ctx *ctx;
static carve_target *htp, *lpai;

/* int64 y = x + x on a runtime input: htp takes it through int32, so
 * legalization changes the Delegate's body. */
static carve_model *int64_model(void)
{
    carve_model *m = lt_model(ctx, 17);
    carve_dim d = {4, NULL};
    carve_value_id x = carve_graph_add_input(m, 0, "x", CARVE_INT64, 1, &d);
    carve_value_id in[2] = {x, x};
    carve_graph_add_output(m, 0, lt_op(m, "Add", "add", 2, in, "y"));
    return m;
}

/* x -> Relu -> Gelu: lpai lacks Gelu, the CPU profile too, so it is
 * decomposed and a second round places its pieces. */
static carve_model *decompose_model(void)
{
    carve_model *m = lt_model(ctx, 20);
    int64_t dims[2] = {2, 8};
    carve_value_id x = lt_input(m, "x", 2, dims);
    carve_value_id r = lt_op(m, "Relu", "relu", 1, &x, "r");
    carve_graph_add_output(m, 0, lt_op(m, "Gelu", "gelu", 1, &r, "y"));
    return m;
}

static char *read_text(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return t_read_file(path, NULL);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void remove_all(const char *dir)
{
    DIR *d = opendir(dir);
    char path[512];
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

static void stage_names(void)
{
    const char *want[] = {"check", "skip", "upgrade", "fold", "infer", "partition", "decompose",
                          "delegates", "legalize", "encodings", "verify", "compile", "report"};
    size_t n = sizeof want / sizeof *want;
    for (size_t i = 0; i < n; i++)
        OT_CHECK(carve_lower_stage_name(i) && !strcmp(carve_lower_stage_name(i), want[i]), "stage %zu is %s, got %s",
                 i, want[i], carve_lower_stage_name(i) ? carve_lower_stage_name(i) : "NULL");
    OT_CHECK(carve_lower_stage_name(n) == NULL, "no stage past report");
}

/* The dumps after check and compile are the input and lowered models'; the
 * legalize dump shows the int32 Casts the delegates dump lacks. */
static void dumps_are_the_model(void)
{
    char dir[] = "/tmp/carve_dump_XXXXXX";
    OT_CHECK(mkdtemp(dir) != NULL, "temp dir");
    carve_model *m = int64_model();
    char *before = carve_model_dump(m);
    const char *stages[] = {"check", "fold", "delegates", "legalize", "compile"};
    carve_lower_opts o = {.dump_after = stages, .n_dump_after = 5, .dump_dir = dir};
    OT_CHECK(carve_lower(m, htp, &o, NULL) == CARVE_OK, "lowers: %s", carve_errmsg(ctx));
    char *after = carve_model_dump(m);
    char *check = read_text(dir, "01-check.txt"), *fold = read_text(dir, "04-fold.txt");
    char *del = read_text(dir, "08-delegates.txt"), *leg = read_text(dir, "09-legalize.txt");
    char *comp = read_text(dir, "12-compile.txt");
    OT_CHECK(count_files(dir) == 5, "one file per stage asked, got %d", count_files(dir));
    OT_CHECK(check && before && !strcmp(check, before), "the dump after check is the input model's");
    OT_CHECK(comp && after && !strcmp(comp, after), "the dump after compile is the lowered model's");
    OT_CHECK(fold && !strstr(fold, "Delegate"), "no Delegate after fold");
    OT_CHECK(del && strstr(del, "ai.carve") && strstr(del, "Delegate"), "a Delegate after delegates");
    OT_CHECK(del && leg && strcmp(del, leg) != 0, "legalization changes the body");
    OT_CHECK(del && !strstr(del, "Cast") && leg && strstr(leg, "Cast"), "the legalize dump has the int32 Casts");
    free(before);
    free(after);
    free(check);
    free(fold);
    free(del);
    free(leg);
    free(comp);
    carve_model_free(m);
    remove_all(dir);
}

/* infer, partition and decompose run once per round: one file each per
 * round, and the partition dump says where each node stands. */
static void rounds_have_their_number(void)
{
    char dir[] = "/tmp/carve_dump_XXXXXX";
    OT_CHECK(mkdtemp(dir) != NULL, "temp dir");
    carve_model *m = decompose_model();
    const char *stages[] = {"all"};
    carve_lower_opts o = {.dump_after = stages, .n_dump_after = 1, .dump_dir = dir};
    carve_report *rep = NULL;
    OT_CHECK(carve_lower(m, lpai, &o, &rep) == CARVE_OK, "lowers: %s", carve_errmsg(ctx));
    OT_CHECK(rep && strstr(carve_report_summary(rep), "2 rounds"), "two rounds: %s",
             rep ? carve_report_summary(rep) : "");
    const char *names[] = {"01-check.txt", "05-infer.r1.txt", "05-infer.r2.txt", "06-partition.r1.txt",
                           "06-partition.r2.txt", "07-decompose.r1.txt", "07-decompose.r2.txt", "13-report.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char *s = read_text(dir, names[i]);
        OT_CHECK(s && !strncmp(s, "model ir_version=", 17), "%s is a model dump", names[i]);
        free(s);
    }
    OT_CHECK(count_files(dir) == 16, "13 stages, 3 of them twice: %d files", count_files(dir));
    char *p1 = read_text(dir, "06-partition.r1.txt"), *d1 = read_text(dir, "07-decompose.r1.txt");
    OT_CHECK(p1 && strstr(p1, "placement round 1\n") && strstr(p1, "'gelu' (Gelu): cpu unsupported_op: "),
             "the partition dump places gelu on CPU");
    OT_CHECK(p1 && d1 && strstr(p1, "= Gelu(") && !strstr(d1, "= Gelu("), "decompose took Gelu apart");
    free(p1);
    free(d1);
    carve_report_free(rep);
    carve_model_free(m);
    remove_all(dir);
}

static void bad_request(const char *what, const carve_lower_opts *o, carve_status want, const char *const *texts)
{
    carve_model *m = int64_model();
    char *before = carve_model_dump(m);
    carve_status s = carve_lower(m, htp, o, NULL);
    OT_CHECK(s == want, "%s: status %s, got %s", what, carve_status_name(want), carve_status_name(s));
    for (size_t i = 0; texts[i]; i++)
        OT_CHECK(strstr(carve_errmsg(ctx), texts[i]) != NULL, "%s: message has '%s': %s", what, texts[i],
                 carve_errmsg(ctx));
    char *after = carve_model_dump(m);
    OT_CHECK(before && after && !strcmp(before, after), "%s: the model is as it was", what);
    free(before);
    free(after);
    carve_model_free(m);
}

static void bad_requests(void)
{
    char dir[] = "/tmp/carve_dump_XXXXXX";
    OT_CHECK(mkdtemp(dir) != NULL, "temp dir");
    const char *bogus[] = {"fold", "folding"};
    carve_lower_opts o = {.dump_after = bogus, .n_dump_after = 2, .dump_dir = dir};
    bad_request("unknown stage", &o, CARVE_ERR_ARG,
                (const char *[]){"no stage named 'folding'", "stages: check, skip, upgrade, fold, infer", NULL});
    OT_CHECK(count_files(dir) == 0, "nothing written for an unknown stage");
    o = (carve_lower_opts){.dump_after = bogus, .n_dump_after = 1};
    bad_request("no folder", &o, CARVE_ERR_ARG, (const char *[]){"no dump_dir", NULL});
    o = (carve_lower_opts){.dump_dir = dir};
    bad_request("no stage", &o, CARVE_ERR_ARG, (const char *[]){"names no stage", NULL});
    o = (carve_lower_opts){.n_dump_after = 1, .dump_dir = dir};
    bad_request("a count without names", &o, CARVE_ERR_ARG, (const char *[]){"dump_after is NULL", NULL});
    char file[600];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    OT_CHECK(f && fputs("keep me\n", f) >= 0, "a plain file");
    if (f)
        fclose(f);
    o = (carve_lower_opts){.dump_after = bogus, .n_dump_after = 1, .dump_dir = file};
    bad_request("a file as folder", &o, CARVE_ERR_IO, (const char *[]){"is not a folder", "plain", NULL});
    char sub[700];
    snprintf(sub, sizeof sub, "%s/missing/deeper", dir);
    o.dump_dir = sub;
    bad_request("a missing folder", &o, CARVE_ERR_IO, (const char *[]){"missing/deeper", NULL});
    char *kept = read_text(dir, "plain");
    OT_CHECK(kept && !strcmp(kept, "keep me\n") && count_files(dir) == 1, "the file is untouched, nothing added");
    free(kept);
    remove_all(dir);
}

int main(void)
{
    ctx = carve_ctx_new();
    OT_CHECK(carve_target_builtin(ctx, "htp", &htp) == CARVE_OK && carve_target_builtin(ctx, "lpai", &lpai) == CARVE_OK,
             "built-in targets");
    stage_names();
    dumps_are_the_model();
    rounds_have_their_number();
    bad_requests();
    carve_target_free(htp);
    carve_target_free(lpai);
    carve_ctx_free(ctx);
    return ot_finish();
}

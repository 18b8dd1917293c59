/* test_files.c: the file rules of src/io/files.c (docs/files.md) through
 * the public API: carve_outputs sets, inputs that are not regular files,
 * large inputs mapped, models carve could not read back. */
#define _GNU_SOURCE
#include "testlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

carve_model *files_nested_model(carve_ctx *ctx, int depth);

/* Carve temporaries (".NAME.carve-tmp.PID.RAND") in dir. */
static int temps_in(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".carve-tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static bool has_bytes(const char *path, const char *want)
{
    size_t n = 0;
    char *got = t_read_file(path, &n);
    bool same = got && n == strlen(want) && !memcmp(got, want, n);
    free(got);
    return same;
}

static mode_t kind_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

TEST(outputs_all_or_nothing)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *a = t_path(dir, "a.txt"), *b = t_path(dir, "b.txt"), *fifo = t_path(dir, "fifo");
    t_write_file(a, "old a", 5);
    t_write_file(b, "old b", 5);
    REQUIRE(mkfifo(fifo, 0644) == 0);
    /* the second output is refused: the first is not written either */
    carve_outputs *o = carve_outputs_new(ctx);
    CHECK_OK(ctx, carve_outputs_add_bytes(o, a, "first", "new a", 5));
    CHECK_INT(temps_in(dir), 1);
    CHECK_ERR(ctx, carve_outputs_add_bytes(o, fifo, "second", "x", 1), CARVE_ERR_IO,
              "is a FIFO, not a regular file: refusing to write the second there");
    CHECK_CONTAINS(carve_errmsg(ctx), fifo);
    CHECK_ERR(ctx, carve_outputs_commit(o), CARVE_ERR_IO, "FIFO");
    carve_outputs_free(o);
    CHECK(has_bytes(a, "old a"));
    CHECK_INT(kind_of(fifo), S_IFIFO);
    CHECK_INT(temps_in(dir), 0);
    /* both good: both replaced */
    o = carve_outputs_new(ctx);
    CHECK_OK(ctx, carve_outputs_add_bytes(o, a, NULL, "new a", 5));
    CHECK_OK(ctx, carve_outputs_add_bytes(o, b, NULL, "new b", 5));
    CHECK(has_bytes(a, "old a")); /* nothing moves before the commit */
    CHECK_OK(ctx, carve_outputs_commit(o));
    carve_outputs_free(o);
    CHECK(has_bytes(a, "new a"));
    CHECK(has_bytes(b, "new b"));
    CHECK_INT(temps_in(dir), 0);
    carve_ctx_free(ctx);
}

TEST(outputs_write_failure_replaces_nothing)
{
    /* the second output cannot be written (over the file size limit): the
     * commit fails before any rename, the first old file stays */
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *a = t_path(dir, "a.txt"), *b = t_path(dir, "b.txt");
    t_write_file(a, "old a", 5);
    t_write_file(b, "old b", 5);
    static char big[1 << 16];
    memset(big, 'x', sizeof big);
    struct rlimit keep, lim;
    getrlimit(RLIMIT_FSIZE, &keep);
    lim = keep;
    lim.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    carve_outputs *o = carve_outputs_new(ctx);
    CHECK_OK(ctx, carve_outputs_add_bytes(o, a, "small", "new a", 5));
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    carve_status s = carve_outputs_add_bytes(o, b, "big", big, sizeof big);
    if (!s)
        s = carve_outputs_commit(o);
    setrlimit(RLIMIT_FSIZE, &keep);
    CHECK(s == CARVE_ERR_IO);
    CHECK_CONTAINS(carve_errmsg(ctx), b);
    carve_outputs_free(o);
    CHECK(has_bytes(a, "old a"));
    CHECK(has_bytes(b, "old b"));
    CHECK_INT(temps_in(dir), 0);
    carve_ctx_free(ctx);
}

TEST(outputs_refuse_what_is_not_a_regular_file)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *sub = t_path(dir, "sub"), *fifo = t_path(dir, "fifo"), *link = t_path(dir, "link");
    const char *sock = t_path(dir, "sock"), *dev = t_path(dir, "null");
    REQUIRE(mkdir(sub, 0755) == 0);
    REQUIRE(mkfifo(fifo, 0644) == 0);
    REQUIRE(symlink("fifo", link) == 0);
    CHECK_ERR(ctx, carve_write_file(ctx, sub, "x", 1), CARVE_ERR_IO, "is a directory, not a regular file");
    CHECK_ERR(ctx, carve_write_file(ctx, fifo, "x", 1), CARVE_ERR_IO, "is a FIFO, not a regular file");
    CHECK_ERR(ctx, carve_write_file(ctx, link, "x", 1), CARVE_ERR_IO, "is a FIFO, not a regular file");
    CHECK_ERR(ctx, carve_write_file(ctx, "/dev/null", "x", 1), CARVE_ERR_IO, "/dev/null: is a character device");
    CHECK_INT(kind_of("/dev/null"), S_IFCHR);
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) { /* root: a copy of /dev/null as the victim */
        CHECK_ERR(ctx, carve_write_file(ctx, dev, "x", 1), CARVE_ERR_IO, "is a character device, not a regular file");
        CHECK_INT(kind_of(dev), S_IFCHR);
    }
    /* a socket, bound so the path exists */
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    REQUIRE(sfd >= 0 && bind(sfd, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK_ERR(ctx, carve_write_file(ctx, sock, "x", 1), CARVE_ERR_IO, "is a socket, not a regular file");
    CHECK_INT(kind_of(sock), S_IFSOCK);
    close(sfd);
    CHECK_INT(kind_of(sub), S_IFDIR);
    CHECK_INT(kind_of(fifo), S_IFIFO);
    CHECK_INT(kind_of(link), S_IFLNK);
    CHECK_INT(temps_in(dir), 0);
    CHECK_ERR(ctx, carve_write_file(ctx, t_path(dir, "no/such/x"), "x", 1), CARVE_ERR_IO, "No such file");
    carve_ctx_free(ctx);
}

TEST(outputs_refuse_inputs_and_each_other)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *in = t_path(dir, "in.onnx"), *hard = t_path(dir, "hard"), *sym = t_path(dir, "sym");
    t_write_file(in, "input", 5);
    REQUIRE(link(in, hard) == 0);
    REQUIRE(symlink("in.onnx", sym) == 0);
    const char *names[] = {in, hard, sym, t_path(dir, "./in.onnx")};
    for (int i = 0; i < 4; i++) {
        carve_outputs *o = carve_outputs_new(ctx);
        CHECK_OK(ctx, carve_outputs_protect(o, in, "input model"));
        CHECK_ERR(ctx, carve_outputs_add_bytes(o, names[i], "report", "x", 1), CARVE_ERR_ARG,
                  "refusing to overwrite the input model");
        CHECK_CONTAINS(carve_errmsg(ctx), "with the report");
        carve_outputs_free(o);
    }
    CHECK(has_bytes(in, "input"));
    CHECK_INT(kind_of(sym), S_IFLNK);
    /* two outputs, one file: existing (through a link) or not there yet */
    const char *out = t_path(dir, "out"), *outlink = t_path(dir, "outlink");
    t_write_file(out, "old", 3);
    REQUIRE(symlink("out", outlink) == 0);
    carve_outputs *o = carve_outputs_new(ctx);
    CHECK_OK(ctx, carve_outputs_add_bytes(o, out, "model", "m", 1));
    CHECK_ERR(ctx, carve_outputs_add_bytes(o, outlink, "report", "r", 1), CARVE_ERR_ARG,
              "the model and the report would both be written to this file");
    carve_outputs_free(o);
    o = carve_outputs_new(ctx);
    CHECK_OK(ctx, carve_outputs_add_bytes(o, t_path(dir, "new"), "model", "m", 1));
    CHECK_ERR(ctx, carve_outputs_add_bytes(o, t_path(dir, "./new"), "report", "r", 1), CARVE_ERR_ARG,
              "would both be written");
    CHECK_ERR(ctx, carve_outputs_commit(o), CARVE_ERR_ARG, "would both be written");
    carve_outputs_free(o);
    CHECK(has_bytes(out, "old"));
    CHECK_INT(kind_of(t_path(dir, "new")), 0);
    CHECK_INT(temps_in(dir), 0);
    carve_ctx_free(ctx);
}

TEST(stale_temporaries_of_dead_writers_go)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char n1[128], n2[128], n3[128], n4[128];
    snprintf(n1, sizeof n1, ".m.onnx.carve-tmp.%d.0badcafe", (int)dead);      /* a killed writer's */
    snprintf(n2, sizeof n2, ".m.onnx.carve-tmp.%d.0badcafe", (int)getppid()); /* a live one's */
    snprintf(n3, sizeof n3, ".m.onnx.carve-tmp.%d.zz", (int)dead);            /* not our pattern */
    snprintf(n4, sizeof n4, "m.onnx.carve-tmp.%d.0badcafe", (int)dead);       /* not hidden: not ours */
    const char *ns[] = {n1, n2, n3, n4};
    for (int i = 0; i < 4; i++)
        t_write_file(t_path(dir, ns[i]), "partial", 7);
    CHECK_OK(ctx, carve_write_file(ctx, t_path(dir, "other.json"), "{}", 2));
    CHECK_INT(kind_of(t_path(dir, n1)), 0);
    CHECK_INT(kind_of(t_path(dir, n2)), S_IFREG);
    CHECK_INT(kind_of(t_path(dir, n3)), S_IFREG);
    CHECK_INT(kind_of(t_path(dir, n4)), S_IFREG);
    CHECK(has_bytes(t_path(dir, "other.json"), "{}"));
    carve_ctx_free(ctx);
}

TEST(temporary_name_and_mode)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    carve_outputs *o = carve_outputs_new(ctx);
    CHECK_OK(ctx, carve_outputs_add_bytes(o, t_path(dir, "r.json"), NULL, "{}", 2));
    DIR *d = opendir(dir);
    struct dirent *e;
    char want[64];
    snprintf(want, sizeof want, ".r.json.carve-tmp.%d.", (int)getpid());
    bool seen = false;
    while (d && (e = readdir(d)))
        seen |= !strncmp(e->d_name, want, strlen(want)) && strlen(e->d_name) == strlen(want) + 8;
    closedir(d);
    CHECK(seen);
    CHECK_OK(ctx, carve_outputs_commit(o));
    carve_outputs_free(o);
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    REQUIRE(stat(t_path(dir, "r.json"), &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0666 & ~mask);
    /* a file replaced keeps its permissions */
    REQUIRE(chmod(t_path(dir, "r.json"), 0600) == 0);
    CHECK_OK(ctx, carve_write_file(ctx, t_path(dir, "r.json"), "[]", 2));
    REQUIRE(stat(t_path(dir, "r.json"), &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    CHECK(has_bytes(t_path(dir, "r.json"), "[]"));
    carve_ctx_free(ctx);
}

TEST(inputs_must_be_regular_files)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *fifo = t_path(dir, "fifo");
    REQUIRE(mkfifo(fifo, 0644) == 0);
    carve_model *m = NULL;
    carve_tensor *t = NULL;
    carve_target *tg = NULL;
    time_t t0 = time(NULL);
    CHECK_ERR(ctx, carve_model_load_file(ctx, fifo, NULL, &m), CARVE_ERR_IO, "not a regular file (it is a FIFO)");
    CHECK_ERR(ctx, carve_tensor_read(ctx, fifo, &t), CARVE_ERR_IO, "not a regular file (it is a FIFO)");
    CHECK_ERR(ctx, carve_target_load_file(ctx, fifo, &tg), CARVE_ERR_IO, "target profile ");
    CHECK_CONTAINS(carve_errmsg(ctx), "not a regular file (it is a FIFO)");
    CHECK_ERR(ctx, carve_tensor_read(ctx, dir, &t), CARVE_ERR_IO, "not a regular file (it is a directory)");
    CHECK_ERR(ctx, carve_target_load_file(ctx, dir, &tg), CARVE_ERR_IO, "not a regular file (it is a directory)");
    CHECK_ERR(ctx, carve_model_load_file(ctx, "/dev/zero", NULL, &m), CARVE_ERR_IO,
              "not a regular file (it is a character device)");
    CHECK(time(NULL) - t0 < 5); /* nothing blocked */
    CHECK_INT(kind_of(fifo), S_IFIFO);
    carve_ctx_free(ctx);
}

TEST(large_inputs_are_mapped_not_read)
{
    /* 3 GiB, sparse: refused before a page is read (getrusage shows no
     * growth), where carve used to read the whole file first */
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    const char *big = t_path(dir, "big.onnx");
    int fd = open(big, O_CREAT | O_WRONLY, 0644);
    REQUIRE(fd >= 0);
    int ok = ftruncate(fd, (off_t)3 << 30);
    close(fd);
    REQUIRE(ok == 0);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    carve_model *m = NULL;
    carve_target *tg = NULL;
    CHECK_ERR(ctx, carve_model_load_file(ctx, big, NULL, &m), CARVE_ERR_UNSUPPORTED,
              "3221225472 bytes, above protobuf's 2 GiB limit");
    CHECK_ERR(ctx, carve_target_load_file(ctx, big, &tg), CARVE_ERR_INVALID,
              "3221225472 bytes, more than the 67108864 this file may have");
    getrusage(RUSAGE_SELF, &r1);
    CHECK(r1.ru_maxrss - r0.ru_maxrss < 64 * 1024); /* KiB */
    carve_ctx_free(ctx);
}

TEST(never_writes_a_model_it_cannot_read)
{
    carve_ctx *ctx = carve_ctx_new();
    const char *dir = t_tmpdir();
    /* 19 nested Ifs (the case) save and load back */
    carve_model *m = files_nested_model(ctx, 19);
    REQUIRE(m != NULL);
    const char *p19 = t_path(dir, "n19.onnx");
    CHECK_OK(ctx, carve_model_save_file(m, p19, NULL));
    carve_model *back = NULL;
    CHECK_OK(ctx, carve_model_load_file(ctx, p19, NULL, &back));
    carve_model_free(back);
    carve_model_free(m);
    /* 70 levels nest messages deeper than the reader's 200: refused, no file */
    m = files_nested_model(ctx, 70);
    REQUIRE(m != NULL);
    const char *p70 = t_path(dir, "n70.onnx");
    t_write_file(p70, "old", 3);
    CHECK_ERR(ctx, carve_model_save_file(m, p70, NULL), CARVE_ERR_UNSUPPORTED,
              "refusing to write a model carve could not read back");
    CHECK_CONTAINS(carve_errmsg(ctx), "messages nested more than 200 deep");
    CHECK(has_bytes(p70, "old"));
    CHECK_INT(temps_in(dir), 0);
    carve_model_free(m);
    carve_ctx_free(ctx);
}

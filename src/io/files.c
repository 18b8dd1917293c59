/* files.c: the one way carve reads and writes files (docs/files.md).
 *
 * Outputs: every file of a command goes into one carve_outputs set. Adding
 * an output checks its path (not an existing non-regular file, not an input
 * of the command, not another output of the set: compared by device and
 * inode, through symlinks and hard links, and for files that do not exist
 * yet by their folder's device and inode plus the name), then opens a
 * temporary `.NAME.carve-tmp.PID.RAND` beside it. Commit flushes and syncs
 * every temporary, and only then renames them into place in the order they
 * were added; any failure before the first rename removes every temporary
 * and leaves every old file as it was. Adding the first output of a folder
 * removes the stale temporaries of dead carve processes there. */
#define _GNU_SOURCE
#include "files.h"

#include "../ir/ir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TMP_TAG ".carve-tmp."

const char *cv_file_kind(mode_t mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a regular file";
}

/* ---------------------------------------------------------------- inputs */

static const char *pre(const char *what) { return what ? what : ""; }
static const char *sep(const char *what) { return what ? " " : ""; }

carve_status cv_input_open(carve_ctx *ctx, const char *path, const char *what, uint64_t max_bytes, int *fd_out,
                           uint64_t *size_out)
{
    *fd_out = -1;
    struct stat st;
    /* stat first: a device is refused without being opened (opening one can
     * have effects); fstat after open closes the race */
    if (stat(path, &st) != 0)
        return cv_error(ctx, CARVE_ERR_IO, "%s%s%s: %s", pre(what), sep(what), path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cv_error(ctx, CARVE_ERR_IO, "%s%s%s: not a regular file (it is %s)", pre(what), sep(what), path,
                        cv_file_kind(st.st_mode));
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return cv_error(ctx, CARVE_ERR_IO, "%s%s%s: %s", pre(what), sep(what), path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cv_error(ctx, CARVE_ERR_IO, "%s%s%s: not a regular file (it is %s)", pre(what), sep(what), path,
                        cv_file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (max_bytes && (uint64_t)st.st_size > max_bytes) {
        close(fd);
        return cv_error(ctx, CARVE_ERR_INVALID, "%s%s%s: %lld bytes, more than the %llu this file may have", pre(what),
                        sep(what), path, (long long)st.st_size, (unsigned long long)max_bytes);
    }
    *fd_out = fd;
    *size_out = (uint64_t)st.st_size;
    return CARVE_OK;
}

carve_status cv_input_map(carve_ctx *ctx, const char *path, const char *what, uint64_t max_bytes, cv_input *in)
{
    memset(in, 0, sizeof *in);
    int fd = -1;
    uint64_t size = 0;
    carve_status s = cv_input_open(ctx, path, what, max_bytes, &fd, &size);
    if (s)
        return s;
    if (size > SIZE_MAX) {
        close(fd);
        return cv_error(ctx, CARVE_ERR_INVALID, "%s%s%s: too large to map", pre(what), sep(what), path);
    }
    if (size) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            close(fd);
            return cv_error(ctx, CARVE_ERR_IO, "%s%s%s: cannot map: %s", pre(what), sep(what), path, strerror(err));
        }
        in->map = p;
        in->map_len = (size_t)size;
        in->data = p;
    } else {
        in->data = (const uint8_t *)"";
    }
    in->size = (size_t)size;
    close(fd);
    return CARVE_OK;
}

void cv_input_populate(const cv_input *in)
{
#ifdef MADV_POPULATE_READ
    if (in->map)
        (void)madvise(in->map, in->map_len, MADV_POPULATE_READ); /* advice: failing changes nothing */
#else
    (void)in;
#endif
}

void cv_input_unmap(cv_input *in)
{
    if (in->map)
        munmap(in->map, in->map_len);
    memset(in, 0, sizeof *in);
}

/* ---------------------------------------------------------------- outputs */

typedef struct out_file {
    char *path; /* as given */
    char *tmp;  /* the temporary beside it; NULL for stdout */
    char *what; /* "report", "input model", ... */
    FILE *f;
    bool is_input, is_stdout, exists;
    mode_t mode; /* of the file it replaces, kept */
    dev_t dev, pdev; /* the file's (exists) and its folder's */
    ino_t ino, pino;
    char *base; /* the name inside the folder */
} out_file;

struct carve_outputs {
    carve_ctx *ctx;
    out_file *v;
    size_t n, cap;
    bool failed, committed;
};

carve_ctx *cv_outputs_ctx(const carve_outputs *o) { return o->ctx; }
void cv_outputs_fail(carve_outputs *o)
{
    if (o)
        o->failed = true;
}

carve_outputs *carve_outputs_new(carve_ctx *ctx)
{
    carve_outputs *o = cv_zalloc(ctx, sizeof *o, NULL);
    if (o)
        o->ctx = ctx;
    return o;
}

/* dir and base of path without touching it ("a/b/" has base "b"). */
static void split(const char *path, char *dir, size_t dn, const char **base)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t k = n;
    while (k && path[k - 1] != '/')
        k--;
    *base = path + k;
    if (k == 0)
        snprintf(dir, dn, ".");
    else if (k == 1)
        snprintf(dir, dn, "/");
    else
        snprintf(dir, dn, "%.*s", (int)(k - 1), path);
}

static bool same(const out_file *a, const out_file *b)
{
    if (a->is_stdout || b->is_stdout)
        return a->is_stdout && b->is_stdout;
    if (a->exists && b->exists)
        return a->dev == b->dev && a->ino == b->ino;
    if (!a->exists && !b->exists)
        return a->pdev == b->pdev && a->pino == b->pino && !strcmp(a->base, b->base);
    return false;
}

/* Fills identity fields; refuses what can never be written. */
static carve_status identify(carve_outputs *o, out_file *f, const char *path, bool for_output)
{
    carve_ctx *ctx = o->ctx;
    if (!strcmp(path, "-")) {
        f->is_stdout = true;
        return CARVE_OK;
    }
    char dir[PATH_MAX];
    const char *base;
    split(path, dir, sizeof dir, &base);
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return cv_error(ctx, CARVE_ERR_ARG, "%s: not a file name", path);
    f->base = cv_strdup(base);
    if (!f->base)
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    struct stat st;
    if (stat(path, &st) == 0) {
        f->exists = true;
        f->mode = st.st_mode & 07777;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        if (for_output && !S_ISREG(st.st_mode))
            return cv_error(ctx, CARVE_ERR_IO, "%s: is %s, not a regular file: refusing to write the %s there", path,
                            cv_file_kind(st.st_mode), f->what ? f->what : "file");
    } else if (errno != ENOENT) {
        return cv_error(ctx, CARVE_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (stat(dir, &st) != 0)
        return cv_error(ctx, CARVE_ERR_IO, "%s: folder '%s': %s", path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cv_error(ctx, CARVE_ERR_IO, "%s: '%s' is %s, not a folder", path, dir, cv_file_kind(st.st_mode));
    f->pdev = st.st_dev;
    f->pino = st.st_ino;
    return CARVE_OK;
}

static out_file *push(carve_outputs *o)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 8;
        out_file *v = cv_realloc(o->v, cap * sizeof *v);
        if (!v)
            return NULL;
        o->v = v;
        o->cap = cap;
    }
    out_file *f = &o->v[o->n];
    memset(f, 0, sizeof *f);
    return f;
}

static void drop(out_file *f)
{
    if (f->f)
        fclose(f->f);
    if (f->tmp)
        unlink(f->tmp);
    cv_free(f->tmp);
    cv_free(f->path);
    cv_free(f->base);
    cv_free(f->what);
    memset(f, 0, sizeof *f);
}

carve_status carve_outputs_protect(carve_outputs *o, const char *path, const char *what)
{
    if (!o)
        return CARVE_ERR_NOMEM;
    if (!path || !strcmp(path, "-"))
        return CARVE_OK;
    out_file *f = push(o);
    if (!f)
        return o->failed = true, cv_error(o->ctx, CARVE_ERR_NOMEM, "out of memory");
    f->is_input = true;
    f->what = cv_strdup(what ? what : "input");
    f->path = cv_strdup(path);
    carve_status s =
        f->path && f->what ? identify(o, f, path, false) : cv_error(o->ctx, CARVE_ERR_NOMEM, "out of memory");
    if (s || !f->exists) { /* an input that is not there protects nothing */
        drop(f);
        if (s)
            o->failed = true;
        return s;
    }
    o->n++;
    return CARVE_OK;
}

/* Removes `.NAME.carve-tmp.PID.RAND` files of dead processes in dir. */
static void sweep(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *t = e->d_name[0] == '.' ? strstr(e->d_name, TMP_TAG) : NULL;
        for (const char *u = t; u; u = strstr(u + 1, TMP_TAG))
            t = u; /* the last tag: NAME may hold one itself */
        if (!t)
            continue;
        char *end;
        errno = 0;
        long long pid = strtoll(t + strlen(TMP_TAG), &end, 10);
        if (errno || pid <= 0 || pid > INT_MAX || *end != '.' || !end[1] || (pid_t)pid == getpid())
            continue;
        for (const char *h = end + 1; *h; h++)
            if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
                goto next;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or someone else's we cannot signal: not ours to judge */
        char p[PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p && lstat(p, &st) == 0 &&
            S_ISREG(st.st_mode))
            unlink(p);
    next:;
    }
    closedir(d);
}

static uint64_t rnd(void)
{
    static _Atomic uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (++counter * 0x9e3779b97f4a7c15ull) ^
                 (uint64_t)(uintptr_t)&ts;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

FILE *cv_outputs_open(carve_outputs *o, const char *path, const char *what)
{
    if (!o)
        return NULL;
    carve_ctx *ctx = o->ctx;
    if (o->committed) {
        cv_error(ctx, CARVE_ERR_ARG, "%s: the set of outputs was already written", path ? path : "");
        return NULL;
    }
    if (!path || !*path) {
        o->failed = true;
        cv_error(ctx, CARVE_ERR_ARG, "no path given for the %s", what ? what : "file");
        return NULL;
    }
    out_file *f = push(o);
    if (!f) {
        o->failed = true;
        cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->what = cv_strdup(what ? what : "file");
    f->path = cv_strdup(path);
    carve_status s = f->path && f->what ? identify(o, f, path, true) : cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !s && i < o->n; i++) {
        if (!same(&o->v[i], f))
            continue;
        if (o->v[i].is_input)
            s = cv_error(ctx, CARVE_ERR_ARG, "%s: refusing to overwrite the %s '%s' with the %s (the same file)", path,
                         o->v[i].what, o->v[i].path, f->what);
        else
            s = cv_error(ctx, CARVE_ERR_ARG, "%s: the %s and the %s would both be written to this file%s%s%s", path,
                         o->v[i].what, f->what, strcmp(o->v[i].path, path) ? " (also named '" : "",
                         strcmp(o->v[i].path, path) ? o->v[i].path : "", strcmp(o->v[i].path, path) ? "')" : "");
    }
    if (!s && f->is_stdout) {
        f->f = tmpfile();
        if (!f->f)
            s = cv_error(ctx, CARVE_ERR_IO, "cannot make a temporary file for standard output: %s", strerror(errno));
    } else if (!s) {
        char dir[PATH_MAX];
        const char *base;
        split(path, dir, sizeof dir, &base);
        bool first_here = true;
        for (size_t i = 0; i < o->n && first_here; i++)
            first_here = o->v[i].is_input || o->v[i].is_stdout || o->v[i].pdev != f->pdev || o->v[i].pino != f->pino;
        if (first_here)
            sweep(dir);
        char tmp[PATH_MAX + 64];
        int fd = -1;
        for (int tries = 0; fd < 0 && tries < 100; tries++) {
            /* the name part is cut so the whole stays under NAME_MAX */
            if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%.200s" TMP_TAG "%ld.%08llx", dir, base, (long)getpid(),
                                 (unsigned long long)(rnd() & 0xffffffffu)) >= sizeof tmp) {
                errno = ENAMETOOLONG;
                break;
            }
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
            if (fd < 0 && errno != EEXIST)
                break;
        }
        if (fd >= 0 && f->exists)
            fchmod(fd, f->mode & 0777); /* a replaced file keeps its permissions */
        if (fd < 0)
            s = cv_error(ctx, CARVE_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        else if (!(f->tmp = cv_strdup(tmp)) || !(f->f = fdopen(fd, "wb"))) {
            if (!f->f)
                close(fd);
            if (f->tmp)
                unlink(f->tmp);
            else
                unlink(tmp);
            s = cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        }
    }
    if (s) {
        drop(f);
        o->failed = true;
        return NULL;
    }
    o->n++;
    return f->f;
}

static bool sync_files(void);

void cv_outputs_written(carve_outputs *o, FILE *f)
{
#ifdef SYNC_FILE_RANGE_WRITE
    const out_file *last = o && o->n ? &o->v[o->n - 1] : NULL;
    if (last && last->f == f && !last->is_stdout && fflush(f) == 0 && sync_files())
        (void)sync_file_range(fileno(f), 0, 0, SYNC_FILE_RANGE_WRITE);
#else
    (void)o;
    (void)f;
#endif
}

carve_status carve_outputs_add_bytes(carve_outputs *o, const char *path, const char *what, const void *data, size_t n)
{
    if (!o)
        return CARVE_ERR_NOMEM;
    FILE *f = cv_outputs_open(o, path, what);
    if (!f)
        return carve_errcode(o->ctx);
    if (n && fwrite(data, 1, n, f) != n) {
        o->failed = true;
        return cv_error(o->ctx, CARVE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    cv_outputs_written(o, f);
    return CARVE_OK;
}

/* fsync of every temporary before the renames: measured in docs/files.md. */
static bool sync_files(void)
{
    const char *e = getenv("CARVE_NO_FSYNC");
    return !(e && *e && strcmp(e, "0"));
}

carve_status carve_outputs_commit(carve_outputs *o)
{
    if (!o)
        return CARVE_ERR_NOMEM;
    carve_ctx *ctx = o->ctx;
    if (o->committed)
        return cv_error(ctx, CARVE_ERR_ARG, "the set of outputs was already written");
    if (o->failed)
        return carve_errcode(ctx) ? carve_errcode(ctx)
                                  : cv_error(ctx, CARVE_ERR_IO, "an output failed: nothing was written");
    bool do_sync = sync_files();
    /* 1. every temporary complete and on disk; the writes of all of them
     * are started before the first fsync waits, so a model and its report
     * go to the disk together rather than one after the other */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < o->n; i++) {
            out_file *f = &o->v[i];
            if (f->is_input || f->is_stdout)
                continue;
            int err = 0;
            if (pass == 0) {
                if (fflush(f->f) != 0 || ferror(f->f))
                    err = errno ? errno : EIO;
#ifdef SYNC_FILE_RANGE_WRITE
                else if (do_sync)
                    (void)sync_file_range(fileno(f->f), 0, 0, SYNC_FILE_RANGE_WRITE); /* a start: fsync checks */
#endif
                if (!err)
                    continue;
            } else if (do_sync && fsync(fileno(f->f)) != 0) {
                err = errno;
            }
            if (fclose(f->f) != 0 && !err)
                err = errno;
            f->f = NULL;
            if (err) {
                o->failed = true;
                return cv_error(ctx, CARVE_ERR_IO, "%s: write failed: %s (no output was replaced)", f->path,
                                strerror(err));
            }
        }
    /* 2. the renames, in the order the outputs were added */
    for (size_t i = 0; i < o->n; i++) {
        out_file *f = &o->v[i];
        if (f->is_input || f->is_stdout)
            continue;
        if (rename(f->tmp, f->path) != 0) {
            int err = errno;
            o->failed = true;
            return cv_error(ctx, CARVE_ERR_IO, "%s: cannot rename the temporary into place: %s%s", f->path,
                            strerror(err), i ? " (outputs added before it were already replaced)" : "");
        }
        cv_free(f->tmp);
        f->tmp = NULL;
    }
    /* 3. standard output last: the files are in place when a reader sees it */
    for (size_t i = 0; i < o->n; i++) {
        out_file *f = &o->v[i];
        if (!f->is_stdout)
            continue;
        rewind(f->f);
        char buf[65536];
        size_t k;
        bool ok = !ferror(f->f);
        while (ok && (k = fread(buf, 1, sizeof buf, f->f)) > 0)
            ok = fwrite(buf, 1, k, stdout) == k;
        ok = ok && fflush(stdout) == 0;
        if (!ok) {
            o->failed = true;
            return cv_error(ctx, CARVE_ERR_IO, "standard output: write failed: %s", strerror(errno));
        }
    }
    o->committed = true;
    return CARVE_OK;
}

void carve_outputs_free(carve_outputs *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++)
        drop(&o->v[i]);
    cv_free(o->v);
    cv_free(o);
}

carve_status carve_write_file(carve_ctx *ctx, const char *path, const void *data, size_t n)
{
    carve_outputs *o = carve_outputs_new(ctx);
    carve_status s = o ? carve_outputs_add_bytes(o, path, NULL, data, n) : CARVE_ERR_NOMEM;
    if (!s)
        s = carve_outputs_commit(o);
    carve_outputs_free(o);
    return s;
}

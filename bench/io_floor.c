/* io_floor.c: the least a lowering of a model can cost in I/O, whatever it
 * computes: map the model, write the same number of bytes to a temporary in
 * the output's folder, fsync it and rename it over the output, as carve's
 * writer does (docs/files.md). Prints the median wall time of RUNS runs
 * (after one warm-up), each in a fresh process, for three ways:
 *   copy-free   the bytes written straight from the mapping (no decoder
 *               could do less)
 *   one copy    copied once into fresh memory first (a decoder that owns
 *               its tensor data: what carve does)
 *   no fsync    one copy, no fsync (what CARVE_NO_FSYNC=1 skips)
 *
 *   io_floor MODEL OUT [RUNS]
 *
 * Beside onnxruntime's session creation (bench/lower_vs_ort.sh), it says
 * whether "carve lower at most 0.5x onnxruntime" is possible at all for a
 * model: onnxruntime writes nothing. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One run, in this process: 0 on success. */
static int once(const char *model, const char *out, int mode)
{
    int fd = open(model, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0)
        return 1;
    size_t n = (size_t)st.st_size;
    const unsigned char *src = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (src == MAP_FAILED)
        return 1;
    unsigned char *copy = NULL;
    if (mode > 0) {
        copy = malloc(n);
        if (!copy)
            return 1;
        memcpy(copy, src, n);
    }
    const unsigned char *from = copy ? copy : src;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.io_floor.tmp", out);
    int o = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0)
        return 1;
    for (size_t k = 0; k < n;) {
        ssize_t w = write(o, from + k, n - k);
        if (w <= 0)
            return 1;
        k += (size_t)w;
    }
    if (mode < 2 && fsync(o) != 0)
        return 1;
    close(o);
    return rename(tmp, out) != 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: io_floor MODEL OUT [RUNS]\n");
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 5;
    if (runs < 1 || runs > 100)
        runs = 5;
    static const char *const names[] = {"copy-free", "one copy", "no fsync"};
    for (int mode = 0; mode < 3; mode++) {
        double t[100];
        for (int r = -1; r < runs; r++) {
            double t0 = now_ms();
            pid_t pid = fork();
            if (pid == 0)
                _exit(once(argv[1], argv[2], mode));
            int status = 1;
            if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
                fprintf(stderr, "io_floor: a run failed (%s -> %s)\n", argv[1], argv[2]);
                return 1;
            }
            if (r >= 0)
                t[r] = now_ms() - t0;
        }
        qsort(t, (size_t)runs, sizeof *t, cmp);
        printf("%-10s median %7.1f ms (best %.1f, worst %.1f)\n", names[mode], t[(runs - 1) / 2], t[0],
               t[runs - 1]);
    }
    unlink(argv[2]);
    return 0;
}

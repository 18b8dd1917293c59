/* extdata.c: external tensor data, memory-mapped, confined to the model's
 * folder. A location is refused when it is absolute, climbs with "..", or
 * resolves (through symlinks) to a file outside the base folder. */
#define _DEFAULT_SOURCE
#include "onnx_io.h"

#include "../io/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static bool climbs(const char *loc)
{
    const char *p = loc;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return strchr(loc, '\\') != NULL; /* Windows separators: refuse, not guess */
}

carve_status cv_extdata_map(carve_model *m, const char *base_dir, const char *location,
                            uint64_t offset, uint64_t length, bool has_length, size_t want,
                            const char *what, const void **out)
{
    carve_ctx *ctx = m->ctx;
    if (!base_dir)
        return cv_error(ctx, CARVE_ERR_ARG,
                        "%s has external data '%s' but the model was loaded from memory "
                        "without a base folder (set carve_load_opts.base_dir)",
                        what, location ? location : "");
    if (!location || !*location)
        return cv_error(ctx, CARVE_ERR_INVALID, "%s: external data has no location", what);
    if (location[0] == '/' || climbs(location))
        return cv_error(ctx, CARVE_ERR_INVALID,
                        "%s: external data location '%s' leaves the model's folder", what,
                        location);
    char base_real[PATH_MAX], file_real[PATH_MAX], joined[PATH_MAX];
    if (!realpath(base_dir, base_real))
        return cv_error(ctx, CARVE_ERR_IO, "%s: base folder '%s': %s", what, base_dir,
                        strerror(errno));
    if ((size_t)snprintf(joined, sizeof joined, "%s/%s", base_real, location) >= sizeof joined)
        return cv_error(ctx, CARVE_ERR_INVALID, "%s: external data path is too long", what);
    if (!realpath(joined, file_real))
        return cv_error(ctx, CARVE_ERR_IO, "%s: external data '%s': %s", what, location,
                        strerror(errno));
    size_t bl = strlen(base_real);
    if (strncmp(file_real, base_real, bl) != 0 || (file_real[bl] != '/' && bl != 1))
        return cv_error(ctx, CARVE_ERR_INVALID,
                        "%s: external data location '%s' resolves outside the model's folder",
                        what, location);
    if (has_length && length != want)
        return cv_error(ctx, CARVE_ERR_INVALID,
                        "%s: external data length is %llu bytes but its shape needs %zu", what,
                        (unsigned long long)length, want);
    /* a FIFO or device never blocks nor is read: refused by its kind */
    int fd;
    uint64_t fsize;
    carve_status s = cv_input_open(ctx, file_real, NULL, 0, &fd, &fsize);
    if (s) {
        char why[600];
        snprintf(why, sizeof why, "%s", carve_errmsg(ctx));
        const char *w = strstr(why, ": ");
        return cv_error(ctx, s, "%s: external data '%s'%s", what, location, w ? w : ": cannot open");
    }
    struct stat st = {.st_size = (off_t)fsize};
    bool known = false;
    for (uint32_t i = 0; i < m->n_ext_files && !known; i++)
        known = !strcmp(m->ext_files[i], file_real);
    if (!known) {
        char **v = cv_realloc(m->ext_files, (m->n_ext_files + 1) * sizeof *v);
        char *p = v ? cv_malloc(strlen(file_real) + 1) : NULL;
        if (v)
            m->ext_files = v;
        if (!p) {
            close(fd);
            return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        }
        strcpy(p, file_real);
        m->ext_files[m->n_ext_files++] = p;
    }
    if (offset > (uint64_t)st.st_size || want > (uint64_t)st.st_size - offset) {
        close(fd);
        return cv_error(ctx, CARVE_ERR_INVALID,
                        "%s: external data '%s' has %lld bytes, too few for %zu at offset %llu",
                        what, location, (long long)st.st_size, want, (unsigned long long)offset);
    }
    if (want == 0) {
        close(fd);
        *out = "";
        return CARVE_OK;
    }
    long page = sysconf(_SC_PAGESIZE);
    uint64_t aligned = offset - offset % (uint64_t)page;
    size_t len = (size_t)(offset - aligned) + want;
    void *addr = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, (off_t)aligned);
    close(fd);
    if (addr == MAP_FAILED)
        return cv_error(ctx, CARVE_ERR_IO, "%s: cannot map external data '%s': %s", what,
                        location, strerror(errno));
    const uint8_t *data = (const uint8_t *)addr + (offset - aligned);
    if ((uintptr_t)data % 16) {
        /* an offset that is not a multiple of 16: kernels read elements in
         * place, so they get an aligned copy instead of the mapping */
        void *copy = cv_arena_memdup(&m->arena, data, want);
        munmap(addr, len);
        if (!copy)
            return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
        *out = copy;
        return CARVE_OK;
    }
    cv_mapping *maps = cv_realloc(m->maps, (m->n_maps + 1) * sizeof *maps);
    if (!maps) {
        munmap(addr, len);
        return cv_error(ctx, CARVE_ERR_NOMEM, "out of memory");
    }
    m->maps = maps;
    m->maps[m->n_maps++] = (cv_mapping){addr, len};
    *out = data;
    return CARVE_OK;
}

/* stage_dump.c: the names of lowering's stages, and the model's text dump
 * after the stages carve_lower_opts.dump_after names (`carve lower
 * --dump-after STAGE[,STAGE] --dump-dir DIR`), for debugging a stage. */
#define _POSIX_C_SOURCE 200809L
#include "partition.h"

#include "../io/files.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CV_STAGE_NAME(id, name) name,
static const char *const stage_names[CV_STAGE_COUNT] = {CV_STAGES(CV_STAGE_NAME)};
#undef CV_STAGE_NAME

const char *carve_lower_stage_name(size_t i) { return i < CV_STAGE_COUNT ? stage_names[i] : NULL; }

static void list_stages(char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < CV_STAGE_COUNT && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", stage_names[i]);
}

carve_status cv_dump_plan(carve_ctx *ctx, const carve_lower_opts *opts, uint32_t *mask)
{
    *mask = 0;
    if (!opts || (!opts->n_dump_after && !opts->dump_dir))
        return CARVE_OK;
    char all[256];
    list_stages(all, sizeof all);
    if (opts->n_dump_after && !opts->dump_after)
        return cv_error(ctx, CARVE_ERR_ARG, "dump_after is NULL but n_dump_after is %zu", opts->n_dump_after);
    for (size_t i = 0; i < opts->n_dump_after; i++) {
        const char *name = opts->dump_after[i];
        int s = 0;
        while (s < CV_STAGE_COUNT && !(name && !strcmp(name, stage_names[s])))
            s++;
        if (name && !strcmp(name, "all"))
            *mask |= (1u << CV_STAGE_COUNT) - 1;
        else if (s < CV_STAGE_COUNT)
            *mask |= 1u << s;
        else
            return cv_error(ctx, CARVE_ERR_ARG, "dump_after: lowering has no stage named '%s' (stages: %s; or all)",
                            name ? name : "(null)", all);
    }
    if (!*mask)
        return cv_error(ctx, CARVE_ERR_ARG, "dump_dir '%s' is given but dump_after names no stage (stages: %s; or all)",
                        opts->dump_dir, all);
    if (!opts->dump_dir || !*opts->dump_dir)
        return cv_error(ctx, CARVE_ERR_ARG, "dump_after names stages but no dump_dir says where to write the dumps");
    struct stat st;
    if (stat(opts->dump_dir, &st) != 0)
        return cv_error(ctx, CARVE_ERR_IO, "dump_dir '%s': %s", opts->dump_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cv_error(ctx, CARVE_ERR_IO, "dump_dir '%s' is not a folder (it is %s)", opts->dump_dir,
                        cv_file_kind(st.st_mode));
    if (access(opts->dump_dir, W_OK | X_OK) != 0)
        return cv_error(ctx, CARVE_ERR_IO, "dump_dir '%s': carve cannot write in it: %s", opts->dump_dir,
                        strerror(errno));
    return CARVE_OK;
}

/* After partitioning: where each node of each graph stands this round. */
static void put_placement(cv_buf *b, const cv_lower *lw, uint32_t round)
{
    const carve_model *m = lw->m;
    cv_buf_printf(b, "placement round %u\n", round);
    for (carve_graph_id g = 0; g < m->n_graphs; g++) {
        const cv_graph *gr = &m->graphs[g];
        for (uint32_t i = 0; i < gr->nodes.n; i++) {
            carve_node_id id = gr->nodes.v[i];
            if (id >= lw->cap)
                continue;
            const cv_lnode *l = &lw->ln[id];
            cv_buf_printf(b, "  '%s' (%s): ", m->nodes[id].name, m->nodes[id].op);
            if (l->part != CARVE_NONE)
                cv_buf_printf(b, "%s partition %u of graph '%s'\n", lw->ts[l->target]->name, l->part, gr->name);
            else if (l->reason == CV_R_NONE)
                cv_buf_puts(b, "cpu (with its control-flow node)\n");
            else
                cv_buf_printf(b, "cpu %s: %s\n", cv_reason_code(l->reason), l->msg ? l->msg : "");
        }
    }
}

carve_status cv_dump_after(cv_lower *lw, cv_stage s, uint32_t round)
{
    if (!(lw->dump_mask & (1u << s)))
        return CARVE_OK;
    carve_model *m = lw->m;
    char rtag[16] = "", ctag[16] = "";
    if (round)
        snprintf(rtag, sizeof rtag, ".r%u", round);
    if (lw->compile_rounds > 1)
        snprintf(ctag, sizeof ctag, ".c%u", lw->compile_rounds);
    const char *path =
        cv_arena_printf(&m->arena, "%s/%02d-%s%s%s.txt", lw->o->dump_dir, (int)s + 1, stage_names[s], rtag, ctag);
    char *text = carve_model_dump(m);
    cv_buf b = {0};
    if (text)
        cv_buf_puts(&b, text);
    carve_free(text);
    if (s == CV_STAGE_PARTITION)
        put_placement(&b, lw, round);
    if (!path || !text || b.failed) {
        cv_buf_free(&b);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory dumping the model after stage %s", stage_names[s]);
    }
    carve_status st = carve_write_file(m->ctx, path, b.s, b.n);
    cv_buf_free(&b);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(m->ctx));
        return cv_error(m->ctx, st, "dump after stage %s: %s", stage_names[s], msg);
    }
    return CARVE_OK;
}

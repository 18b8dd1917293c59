/* lower.c: the lowering driver. lower_once() is the pipeline, one call
 * per stage (docs/ARCHITECTURE.md, "Lowering stages"; each stage in its own
 * stage_*.c); the rounds of its fixed point are the loop in the middle:
 *   infer      dtypes and shapes (src/passes/infer.c);
 *   partition  each node's verdicts, QDQ units, partitions in priority
 *              order and the target rules until every partition stands;
 *   decompose  ops left on CPU that the CPU profile lacks become pieces,
 *              which the next round places.
 * carve_lower_targets() runs lower_once until the backends compile every
 * partition: a refusal restores the input model and lowers it again with
 * the refused nodes moved on (the compile fixed point). */
#define _POSIX_C_SOURCE 200809L
#include "partition.h"

#include <string.h>
#include <time.h>

#define MAX_ROUNDS 64

double cv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool cv_lower_grow(cv_lower *lw)
{
    uint32_t n = lw->m->n_nodes;
    if (n <= lw->cap)
        return true;
    /* the first size fits the model with room for some pieces: every entry
     * up to cap is written, and fresh pages are not free */
    uint32_t cap = lw->cap ? lw->cap : n + n / 8 + 64;
    while (cap < n)
        cap *= 2;
    cv_lnode *ln = cv_realloc(lw->ln, cap * sizeof *ln);
    if (!ln)
        return false;
    lw->ln = ln;
    cv_treason *tr = cv_realloc(lw->tr, (size_t)cap * lw->n_t * sizeof *tr);
    if (!tr)
        return false;
    lw->tr = tr;
    for (size_t i = (size_t)lw->cap * lw->n_t; i < (size_t)cap * lw->n_t; i++)
        tr[i] = (cv_treason){CV_R_NONE, NULL};
    memset(ln + lw->cap, 0, (cap - lw->cap) * sizeof *ln);
    for (uint32_t i = lw->cap; i < cap; i++) {
        ln[i].part = CARVE_NONE;
        ln[i].origin = i;
        ln[i].delegate = CARVE_NONE;
    }
    lw->ln = ln;
    lw->cap = cap;
    return true;
}

/* Frees what one lowering holds (not the model). */
static void lower_free(cv_lower *lw)
{
    for (uint32_t i = 0; i < lw->n_parts; i++) {
        cv_ids_free(&lw->parts[i].nodes);
        cv_ids_free(&lw->parts[i].inputs);
        cv_ids_free(&lw->parts[i].outputs);
        cv_ids_free(&lw->parts[i].encoded);
    }
    cv_free(lw->parts);
    cv_free(lw->ln);
    cv_free(lw->tr);
    cv_free(lw->fates);
    for (uint32_t i = 0; i < CV_MAX_TARGETS; i++)
        cv_free((void *)lw->op_rows[i]);
    cv_recomp_free(&lw->recomp);
    cv_strmap_free(&lw->cpu_ops);
    cv_free(lw->cpu_op_msg);
    cv_report_io_free(lw);
}

/* One lowering of m, compile round `round`: the stages in order. *again:
 * the backend refused nodes that `refused` now lists; the model must be
 * restored and lowered again. */
static carve_status lower_once(carve_model *m, const carve_target *const *ts, const carve_backend *const *bs,
                               uint32_t nt, const carve_lower_opts *opts, uint32_t dump_mask, cv_refused *refused,
                               uint32_t round, carve_report **report, bool *again)
{
    double t0 = cv_now_ms();
    carve_target *own_cpu = NULL;
    cv_lower lw = {.m = m, .t = ts[0], .o = opts, .n_orig = m->n_nodes, .b = bs[0], .refused = refused,
                   .compile_rounds = round, .n_t = nt, .dump_mask = dump_mask};
    for (uint32_t i = 0; i < nt; i++) {
        lw.ts[i] = ts[i];
        lw.bs[i] = bs[i];
    }
    lw.cpu = opts && opts->cpu ? opts->cpu : NULL;
    if (!lw.cpu) {
        carve_status s = carve_target_builtin(m->ctx, "cpu", &own_cpu);
        if (s)
            return s;
        lw.cpu = own_cpu;
    }
    carve_status st = CARVE_OK;
#define STAGE(s, call) ((st = (call)) || (st = cv_dump_after(&lw, CV_STAGE_##s, 0)))
#define ROUND_DUMP(s) (st = cv_dump_after(&lw, CV_STAGE_##s, lw.rounds))
    if (STAGE(CHECK, cv_stage_check(m, ts, nt, lw.cpu, opts)))
        goto out;
    if (!cv_lower_grow(&lw)) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (STAGE(SKIP, cv_stage_skip(&lw)))
        goto out;
    /* the report's record of the input nodes, before anything changes them */
    if (report && (st = cv_report_io_take(&lw)))
        goto out;
    if (STAGE(UPGRADE, opts && opts->no_upgrade ? CARVE_OK : cv_stage_upgrade(&lw)))
        goto out;
    if (STAGE(FOLD, opts && opts->no_fold ? CARVE_OK : cv_stage_fold(&lw)))
        goto out;
    for (bool changed = true; changed;) { /* the rounds, until nothing changes */
        if (++lw.rounds > MAX_ROUNDS) {
            st = cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "lowering did not settle after %d rounds", MAX_ROUNDS);
            goto out;
        }
        changed = false;
        double a = cv_now_ms();
        st = lw.rounds == 1 && lw.types_fresh ? CARVE_OK : cv_infer_model(m, NULL);
        lw.ms_infer += cv_now_ms() - a;
        if (st || ROUND_DUMP(INFER))
            goto out;
        a = cv_now_ms();
        st = cv_stage_partition(&lw);
        lw.ms_partition += cv_now_ms() - a;
        if (st || ROUND_DUMP(PARTITION))
            goto out;
        a = cv_now_ms();
        st = cv_stage_decompose(&lw, &changed);
        lw.ms_decompose += cv_now_ms() - a;
        if (st || ROUND_DUMP(DECOMPOSE))
            goto out;
    }
    double d0 = cv_now_ms();
    if (STAGE(DELEGATES, cv_stage_delegates(&lw)) || STAGE(LEGALIZE, cv_stage_legalize(&lw)) ||
        STAGE(ENCODINGS, cv_stage_encodings(m, lw.parts, lw.n_parts)) || STAGE(VERIFY, cv_stage_verify(m)))
        goto out;
    /* the backends compile each partition; a refusal is one more rule, and
     * the caller lowers again */
    if (lw.n_parts && ((st = cv_backend_compile_all(&lw, again)) || *again))
        goto out;
    if ((st = cv_dump_after(&lw, CV_STAGE_COMPILE, 0)))
        goto out;
    lw.ms_delegate = cv_now_ms() - d0;
    lw.ms_total = cv_now_ms() - t0;
    if (report && (st = cv_report_build(&lw, report)))
        goto out;
    st = cv_dump_after(&lw, CV_STAGE_REPORT, 0);
#undef STAGE
#undef ROUND_DUMP
out:
    lower_free(&lw);
    carve_target_free(own_cpu);
    return st;
}

carve_status carve_lower(carve_model *m, const carve_target *t, const carve_lower_opts *opts, carve_report **report)
{
    return carve_lower_targets(m, &t, 1, opts, report);
}

carve_status carve_lower_targets(carve_model *m, const carve_target *const *ts, size_t n_targets,
                                 const carve_lower_opts *opts, carve_report **report)
{
    if (report)
        *report = NULL;
    if (!m || !ts || n_targets == 0 || n_targets > CV_MAX_TARGETS)
        return m ? cv_error(m->ctx, CARVE_ERR_ARG, "lowering takes 1 to %d targets, not %zu", CV_MAX_TARGETS,
                            n_targets)
                 : CARVE_ERR_ARG;
    const carve_backend *bs[CV_MAX_TARGETS] = {0};
    bool compiles = false;
    for (size_t i = 0; i < n_targets; i++) {
        const carve_target *t = ts[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(ts[j]->name, t->name))
                return cv_error(m->ctx, CARVE_ERR_ARG, "target %s is named twice in the priority list", t->name);
        if (t->is_cpu) {
            if (n_targets > 1)
                return cv_error(m->ctx, CARVE_ERR_ARG,
                                "target %s is a CPU profile: the CPU comes last by itself, it is not a target to list",
                                t->name);
            continue;
        }
        const char *bname = carve_target_backend(m->ctx, t);
        const carve_backend *b = cv_ctx_backend(m->ctx, bname);
        if (!b)
            return cv_error(m->ctx, CARVE_ERR_ARG,
                            "target %s: its backend '%s' is not registered on this context", t->name, bname);
        char why[512] = "";
        if (b->is_available && !b->is_available(b->user, why, sizeof why))
            return cv_error(m->ctx, CARVE_ERR_UNSUPPORTED, "target %s: backend '%s' is not available here: %s",
                            t->name, b->name, why[0] ? why : "(no reason given)");
        bs[i] = b;
        compiles = compiles || strcmp(b->name, "reference");
    }
    uint32_t dump_mask = 0;
    carve_status st = cv_dump_plan(m->ctx, opts, &dump_mask);
    if (st)
        return st;
    /* A backend that compiles may refuse partitions: lowering then starts
     * again from the input model, kept as bytes (exact: saving and loading
     * a model gives the same model), with the refused nodes moved on. */
    void *snap = NULL;
    size_t snap_n = 0;
    if (compiles && (st = carve_model_save_memory(m, &snap, &snap_n)))
        return st;
    cv_refused refused = {0};
    for (uint32_t round = 1;; round++) {
        bool again = false;
        st = lower_once(m, ts, bs, (uint32_t)n_targets, opts, dump_mask, &refused, round, report, &again);
        if (st || !again)
            break;
        carve_model *fresh = NULL;
        if ((st = carve_model_load_memory(m->ctx, snap, snap_n, NULL, &fresh)))
            break;
        if (!cv_model_swap(m, fresh)) {
            carve_model_free(fresh);
            st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
            break;
        }
        carve_model_free(fresh);
    }
    carve_free(snap);
    cv_refused_free(&refused);
    return st;
}

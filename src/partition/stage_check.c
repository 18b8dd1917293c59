/* stage_check.c: the first stage of lowering: what must hold before the
 * model is touched. The CPU profile is one; every op a target keeps whole
 * can end on CPU (run there or be decomposed); the model's opsets are ones
 * carve knows (unless the caller allows newer ones). */
#include "partition.h"

carve_status cv_stage_check(carve_model *m, const carve_target *const *ts, uint32_t n_t, const carve_target *cpu,
                            const carve_lower_opts *opts)
{
    if (!cpu->is_cpu)
        return cv_error(m->ctx, CARVE_ERR_ARG, "the CPU profile %s is a delegate target, not a cpu_profile",
                        cpu->source);
    /* carve refuses a profile whose kept-whole op can neither run on the CPU
     * nor be decomposed: such an op would have no way to end on CPU. */
    for (uint32_t ti = 0; ti < n_t; ti++) {
        const carve_target *t = ts[ti];
        for (uint32_t i = 0; i < t->n_keep; i++) {
            const cv_op_def *d = cv_op_find("", t->keep_whole[i], 1000);
            if (!cv_cpu_has(cpu, d, t->keep_whole[i]) && !(d && d->decompose))
                return cv_error(m->ctx, CARVE_ERR_INVALID,
                                "target %s: kept-whole op %s is neither in the CPU profile nor composite", t->source,
                                t->keep_whole[i]);
        }
    }
    if (!(opts && opts->allow_newer_opset))
        return cv_check_opsets(m);
    return CARVE_OK;
}

/* stage_verify.c: the verify stage. The lowered model gets the IR version
 * it needs, then must verify (src/ir/verify.c): a failure here is a carve
 * bug, and the message says so. */
#include "partition.h"

#include <stdio.h>

carve_status cv_stage_verify(carve_model *m)
{
    /* before IR 4 every initializer had to be a graph input too: folding and
     * decompositions add initializers that are not, so the model moves to
     * IR 4, which differs from 3 in nothing else */
    if (m->ir_version < 4)
        for (carve_value_id v = 0; v < m->n_values; v++)
            if (m->values[v].init && !m->values[v].is_input) {
                m->ir_version = 4;
                break;
            }
    carve_status st = carve_model_verify(m);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", carve_errmsg(m->ctx));
        st = cv_error(m->ctx, st, "lowering produced an invalid model (a carve bug): %s", msg);
    }
    return st;
}

/* stage_legalize.c: the legalize stage. Each Delegate body gets the
 * legalizations its target's profile asks for (legalize.c: int64 computed
 * in int32, uint8 casts through int32, Slice bounds clamped;
 * legalize_htp.c: Softmax on another axis through Transposes, 16-bit
 * Sigmoid/Tanh at their fixed encoding), unless the caller disabled them. */
#include "partition.h"

carve_status cv_stage_legalize(cv_lower *lw)
{
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < lw->n_parts && !st; i++) {
        const cv_lpart *lp = &lw->parts[i];
        st = cv_legalize_body(lw, lw->ts[lp->target], lp->delegate, lp->body);
    }
    return st;
}

/* stage_encodings.c: the encodings stage. Each Delegate whose body has QDQ
 * nodes gets its `encodings` attribute: every quantized value's dtype,
 * scale, zero point, axis and block size, and how each requantization runs
 * (encodings.c, docs/artifacts.md). It runs after legalization, so it
 * describes the body as the target gets it. */
#include "partition.h"

carve_status cv_stage_encodings(carve_model *m, cv_lpart *parts, uint32_t n_parts)
{
    carve_status st = CARVE_OK;
    for (uint32_t i = 0; i < n_parts && !st; i++)
        st = cv_delegate_encodings(m, &parts[i], parts[i].body);
    return st;
}

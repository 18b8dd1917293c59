/* passes.h: graph passes. One section per file. */
#ifndef CARVE_PASSES_H
#define CARVE_PASSES_H

#include "../runtime/runtime.h"

/* ================================================================ infer.c */

typedef struct cv_infer_opts {
    /* Largest tensor (elements) inference computes by running a kernel on
     * constant inputs, to learn shapes that depend on values. */
    size_t max_const_elems;
} cv_infer_opts;

/* Type and shape inference over the whole model, subgraphs included.
 * Symbolic dims stay symbolic; a contradiction is an error naming the node. */
carve_status cv_infer_model(carve_model *m, const cv_infer_opts *opts);

#endif

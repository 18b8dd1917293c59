/* backends.h: the backends built into carve and the registry that holds
 * them per context. One section per file of src/backends/.
 *
 * Layers: src/backends sits on top of the library (it runs bodies with the
 * runtime and reads target profiles); the runtime and lowering reach a
 * backend only through carve_backend.h and the context's list
 * (cv_ctx_backend, src/ir/ctx.c). */
#ifndef CARVE_BACKENDS_H
#define CARVE_BACKENDS_H

#include "../partition/partition.h"
#include "../runtime/runtime.h"
#include "carve_backend.h"

/* ================================================================ reference.c */

/* The reference simulator: a Delegate's body on carve's reference kernels
 * under its target's simulator semantics. Never refuses a partition. */
const carve_backend *cv_reference_backend(void);

/* ================================================================ onednn (src/backends/onednn/) */

#ifdef CARVE_HAVE_DNNL
const carve_backend *cv_onednn_backend(void);
#endif

#endif

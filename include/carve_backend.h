/*
 * carve_backend.h: the interface accelerator libraries and vendor SDKs
 * implement to take partitions from carve.
 *
 * A target is a profile (the JSON rules of targets/, docs/targets.md:
 * dtypes, ranks, kept-whole ops, legalizations, the no-runtime-input rule
 * ...) plus a backend that answers capability per node, compiles the
 * partitions it accepts and runs them. The built-in targets htp, gpu and
 * lpai use the reference simulator ("reference") as their backend;
 * "onednn" is a real one (oneDNN). A backend is either built in or loaded from a shared object
 * (carve_backend_load) that exports CARVE_BACKEND_ENTRY_SYMBOL.
 *
 * Life cycle, as in ExecuTorch's backend interface and onnxruntime's
 * execution-provider API (docs/backends.md maps each callback):
 *   supports_node   per node, during lowering: supported, or a reason
 *   compile         per partition, once: its legalized body -> a handle,
 *                   or a refusal that lowering turns into one more rule
 *   run             per handle, many times: input tensors -> output tensors
 *   release         per handle, when the model that holds it is freed
 *   destroy         once, when the last context that registered it is freed
 *                   (plugins: before the shared object is closed)
 *
 * Threads: carve calls a backend from whichever thread lowers or runs a
 * model. Several threads may use different models (one context each) at the
 * same time, so every callback must be safe to call concurrently on
 * different handles; one handle is never used by two threads at once.
 * Thread counts inside a backend follow carve_set_threads().
 */
#ifndef CARVE_BACKEND_H
#define CARVE_BACKEND_H

#include "carve.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the layout or meaning of carve_backend changes. A loader
 * refuses a backend whose abi_version differs, or whose struct_size is
 * smaller than the carve_backend it was built against. */
#define CARVE_BACKEND_ABI_VERSION 1u

/* The one symbol a plugin exports:
 *   const carve_backend *carve_backend_entry(void);
 * It returns a struct that lives until the plugin is unloaded. */
#define CARVE_BACKEND_ENTRY_SYMBOL "carve_backend_entry"

/* Largest number of nodes one compile refusal can name. */
#define CARVE_BACKEND_MAX_REFUSED 256u

/* What a backend sees of one partition at compile time. The model is read
 * with carve.h's accessors (carve_graph_node, carve_node_op,
 * carve_node_attr_*, carve_value_dtype, carve_value_data ...); it and the
 * strings below are valid only during the compile call. */
typedef struct carve_backend_partition {
    const carve_model *model;
    /* The partition's body: its inputs are runtime values, its outputs what
     * the rest of the model reads; constants it reads are initializers of
     * the body or of an enclosing graph (carve_value_data works on both).
     * It is legalized as the target's profile says, shapes fixed. */
    carve_graph_id body;
    /* The Delegate's encodings as JSON (the `encodings` of docs/report.md:
     * dtype, scale, zero point, axis, block size of every quantized value),
     * or NULL for a float partition. */
    const char *encodings_json;
    /* The target's name and the Delegate node's name (for messages). */
    const char *target;
    const char *name;
    /* The profile the caller lowers or runs with, or NULL (a model run
     * without one). At run time it may be another target's (a model may
     * hold Delegates of several): compare carve_target_name() with target;
     * a backend that needs the profile otherwise loads the built-in one
     * named target (carve_target_builtin). */
    const carve_target *profile;
} carve_backend_partition;

/* How a backend refuses a partition it cannot build. message is the
 * library's own text; nodes (ids of nodes of the body, at most
 * CARVE_BACKEND_MAX_REFUSED) name the nodes it cannot take. With n_nodes
 * == 0 the whole partition is refused. Lowering moves the refused nodes to
 * the next target or the CPU (reason backend_refused, with message),
 * recomputes the partitions and compiles again, to a fixed point. */
typedef struct carve_backend_refusal {
    char message[512];
    size_t n_nodes;
    carve_node_id nodes[CARVE_BACKEND_MAX_REFUSED];
} carve_backend_refusal;

typedef struct carve_backend {
    /* sizeof(carve_backend) as the backend was built, and
     * CARVE_BACKEND_ABI_VERSION; checked before any call. */
    uint32_t struct_size;
    uint32_t abi_version;
    /* The backend's name (a target of that name uses it unless its profile
     * names another backend) and a free-form version, e.g. "oneDNN 2.6.3",
     * recorded on every Delegate it compiles (`backend`, `backend_version`). */
    const char *name;
    const char *version;
    /* The target profile (JSON, the format of docs/targets.md) this backend
     * comes with, or NULL: then a built-in profile named profile_name (or,
     * when that is NULL too, the one named like the backend) is used. */
    const char *profile_json;
    const char *profile_name;
    /* Passed back as the first argument of every callback. */
    void *user;

    /* Optional. Whether the library or device can be used on this machine;
     * false with a message in why when not. NULL: always available. */
    bool (*is_available)(void *user, char *why, size_t why_size);

    /* Per node of the model being lowered, after carve's profile accepted
     * it (types and shapes are inferred; shapes are static). Returns NULL
     * when the backend takes the node, else a reason code (a static string;
     * the codes of docs/report.md, e.g. "unsupported_op",
     * "unsupported_attribute", "unsupported_dtype", "dynamic_shape") with a
     * message in msg naming the attribute, input or type. NULL callback:
     * every node the profile accepts. */
    const char *(*supports_node)(void *user, const carve_model *m, carve_node_id n, char *msg, size_t msg_size);

    /* Compiles one partition into *handle. Returns CARVE_OK; or
     * CARVE_ERR_UNSUPPORTED with *refusal filled (a refusal, not an error:
     * lowering goes on without those nodes); any other status is an error
     * with refusal->message as its text. */
    carve_status (*compile)(void *user, const carve_backend_partition *p, void **handle,
                            carve_backend_refusal *refusal);

    /* Runs a compiled partition. inputs[i] binds the body's i-th input;
     * the backend creates outputs[i] (carve_tensor_new) with the dtype and
     * shape of the body's i-th output; carve frees them. On failure returns
     * a status other than CARVE_OK with a message in msg. */
    carve_status (*run)(void *user, void *handle, carve_tensor *const *inputs, size_t n_inputs,
                        carve_tensor **outputs, size_t n_outputs, char *msg, size_t msg_size);

    /* Frees a handle compile made. */
    void (*release)(void *user, void *handle);

    /* Optional: frees the backend's own state. */
    void (*destroy)(void *user);
} carve_backend;

/* Makes backend b available to targets loaded and models run on ctx. b
 * must outlive ctx. A name already registered on ctx is an error
 * (CARVE_ERR_ARG). Built-in backends are registered on every context. */
carve_status carve_backend_register(carve_ctx *ctx, const carve_backend *b);

/* Loads a backend from the shared object at path: looks up
 * CARVE_BACKEND_ENTRY_SYMBOL, checks struct_size and abi_version, and
 * registers it on ctx. Errors name the file and what is wrong (cannot be
 * opened, missing symbol, wrong ABI version, is_available's message). The
 * object stays loaded until ctx is freed. *out (may be NULL) gets the
 * backend. */
carve_status carve_backend_load(carve_ctx *ctx, const char *path, const carve_backend **out);

/* The backend registered on ctx under name, or NULL. */
const carve_backend *carve_backend_find(carve_ctx *ctx, const char *name);

/* Number of backends registered on ctx and the i-th of them (built-in ones
 * first), for listing. */
size_t carve_backend_count(carve_ctx *ctx);
/* The i-th backend registered on ctx (owned by ctx), NULL when i >= count. */
const carve_backend *carve_backend_at(carve_ctx *ctx, size_t i);

/* The backend name target t's profile gives (its "backend" field), or,
 * when it gives none, the name of a backend registered on ctx under t's
 * own name, else "reference". */
const char *carve_target_backend(carve_ctx *ctx, const carve_target *t);

/* With on, every Delegate of m runs on the reference kernels (the
 * "reference" backend under its target's simulator) whatever backend it
 * records: `carve run --reference`. Handles compiled before are released. */
void carve_model_use_reference(carve_model *m, bool on);

#ifdef __cplusplus
}
#endif
#endif /* CARVE_BACKEND_H */

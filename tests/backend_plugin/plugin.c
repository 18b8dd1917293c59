/* plugin.c: "demo", a small backend built as a shared object, the way an
 * accelerator library plugs into carve (docs/backends.md walks through it).
 * It computes Relu, Add, Mul, Sub and Neg on float32 with its own code:
 *  - supports_node refuses broadcasting (inputs of different shapes, a
 *    code carve does not know: "no_broadcast") and unknown dims
 *    ("dynamic_shape", one of the report's codes);
 *  - compile refuses a partition holding Neg, naming the Neg nodes, and a
 *    partition holding Sub without naming any node (the whole partition),
 *    to exercise lowering's compile-refusal rule;
 *  - compile turns the body into a list of steps over slots, run executes
 *    them.
 * Its profile comes embedded (profile_json). It reads the model through
 * carve.h only; carve's symbols come from the program that loads it. */
#include "carve_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counters a test reads through demo_stats (dlsym). */
static int n_compiled, n_released, n_runs;
int demo_stats(int which) { return which == 0 ? n_compiled : which == 1 ? n_released : n_runs; }

enum { OP_RELU, OP_ADD, OP_MUL, OP_SUB, OP_NEG };

typedef struct step {
    int op;
    int a, b, y; /* slots; b < 0 for unary ops */
} step;

typedef struct program {
    size_t n_slots, n_steps, n_in, n_out, n_elem;
    int *in_slot, *out_slot;
    step *steps;
    float **consts; /* per slot: constant data (owned copy) or NULL */
    int rank;
    int64_t dims[8];
} program;

static int op_code(const char *op)
{
    static const char *const names[] = {"Relu", "Add", "Mul", "Sub", "Neg"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(op, names[i]))
            return i;
    return -1;
}

static size_t elems(const carve_model *m, carve_value_id v, bool *known)
{
    int r = carve_value_rank(m, v);
    size_t n = 1;
    *known = r >= 0;
    for (int d = 0; d < r; d++) {
        carve_dim dim = carve_value_dim(m, v, d);
        if (dim.value < 0)
            *known = false;
        else
            n *= (size_t)dim.value;
    }
    return n;
}

static const char *demo_supports(void *user, const carve_model *m, carve_node_id n, char *msg, size_t msg_size)
{
    bool known = true;
    size_t first = 0;
    for (size_t i = 0; i < carve_node_input_count(m, n); i++) {
        carve_value_id v = carve_node_input(m, n, i);
        bool k;
        size_t e = elems(m, v, &k);
        if (!k) {
            snprintf(msg, msg_size, "input %zu '%s' has a dim that is not fixed", i, carve_value_name(m, v));
            return "dynamic_shape";
        }
        if (i == 0)
            first = e;
        else if (e != first && known) {
            snprintf(msg, msg_size, "inputs 0 and %zu differ in shape (%zu and %zu elements): demo does not broadcast",
                     i, first, e);
            return "no_broadcast";
        }
    }
    return NULL;
}

static void free_program(program *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->consts && i < p->n_slots; i++)
        free(p->consts[i]);
    free(p->consts);
    free(p->in_slot);
    free(p->out_slot);
    free(p->steps);
    free(p);
}

/* The slot of value v, numbering values by id (small bodies). */
static int slot_of(program *p, carve_value_id v) { return (int)v; }

static carve_status demo_compile(void *user, const carve_backend_partition *part, void **handle,
                                 carve_backend_refusal *refusal)
{
    const carve_model *m = part->model;
    carve_graph_id g = part->body;
    size_t nn = carve_graph_node_count(m, g);
    /* refusals first: a partition with Neg (naming them) or Sub (naming none) */
    refusal->n_nodes = 0;
    bool sub = false;
    for (size_t i = 0; i < nn; i++) {
        carve_node_id n = carve_graph_node(m, g, i);
        const char *op = carve_node_op(m, n);
        if (!strcmp(op, "Neg") && refusal->n_nodes < CARVE_BACKEND_MAX_REFUSED)
            refusal->nodes[refusal->n_nodes++] = n;
        sub = sub || !strcmp(op, "Sub");
        if (op_code(op) < 0) {
            snprintf(refusal->message, sizeof refusal->message, "demo has no %s (node '%s')", op,
                     carve_node_name(m, n));
            return CARVE_ERR_INVALID; /* the profile never gives it one */
        }
    }
    if (refusal->n_nodes) {
        snprintf(refusal->message, sizeof refusal->message, "demo's Neg kernel cannot be compiled (%zu node%s)",
                 refusal->n_nodes, refusal->n_nodes == 1 ? "" : "s");
        return CARVE_ERR_UNSUPPORTED;
    }
    if (sub) {
        snprintf(refusal->message, sizeof refusal->message, "demo compiles no partition holding Sub");
        return CARVE_ERR_UNSUPPORTED;
    }
    program *p = calloc(1, sizeof *p);
    if (!p)
        return CARVE_ERR_NOMEM;
    p->n_slots = 0;
    /* slots are value ids: size them by the largest id in the body */
    for (size_t i = 0; i < nn; i++) {
        carve_node_id n = carve_graph_node(m, g, i);
        for (size_t k = 0; k < carve_node_input_count(m, n); k++)
            if ((size_t)carve_node_input(m, n, k) + 1 > p->n_slots)
                p->n_slots = (size_t)carve_node_input(m, n, k) + 1;
        if ((size_t)carve_node_output(m, n, 0) + 1 > p->n_slots)
            p->n_slots = (size_t)carve_node_output(m, n, 0) + 1;
    }
    p->n_in = carve_graph_input_count(m, g);
    p->n_out = carve_graph_output_count(m, g);
    p->in_slot = calloc(p->n_in + 1, sizeof *p->in_slot);
    p->out_slot = calloc(p->n_out + 1, sizeof *p->out_slot);
    p->steps = calloc(nn + 1, sizeof *p->steps);
    p->consts = calloc(p->n_slots + 1, sizeof *p->consts);
    if (!p->in_slot || !p->out_slot || !p->steps || !p->consts) {
        free_program(p);
        return CARVE_ERR_NOMEM;
    }
    carve_value_id first = p->n_in ? carve_graph_input(m, g, 0) : carve_graph_output(m, g, 0);
    bool known;
    p->n_elem = elems(m, first, &known);
    p->rank = carve_value_rank(m, first);
    for (int d = 0; d < p->rank && d < 8; d++)
        p->dims[d] = carve_value_dim(m, first, d).value;
    for (size_t i = 0; i < p->n_in; i++)
        p->in_slot[i] = slot_of(p, carve_graph_input(m, g, i));
    for (size_t i = 0; i < p->n_out; i++)
        p->out_slot[i] = slot_of(p, carve_graph_output(m, g, i));
    for (size_t i = 0; i < nn; i++) {
        carve_node_id n = carve_graph_node(m, g, i);
        step *s = &p->steps[p->n_steps++];
        s->op = op_code(carve_node_op(m, n));
        s->a = slot_of(p, carve_node_input(m, n, 0));
        s->b = carve_node_input_count(m, n) > 1 ? slot_of(p, carve_node_input(m, n, 1)) : -1;
        s->y = slot_of(p, carve_node_output(m, n, 0));
        /* constants (initializers of the body or of an enclosing graph) */
        for (size_t k = 0; k < carve_node_input_count(m, n); k++) {
            carve_value_id v = carve_node_input(m, n, k);
            size_t nb = 0;
            const void *data = carve_value_data(m, v, &nb);
            if (data && !p->consts[v]) {
                if (carve_value_dtype(m, v) != CARVE_FLOAT || nb != p->n_elem * sizeof(float)) {
                    snprintf(refusal->message, sizeof refusal->message, "constant '%s' is not float32 of %zu elements",
                             carve_value_name(m, v), p->n_elem);
                    free_program(p);
                    return CARVE_ERR_INVALID;
                }
                p->consts[v] = malloc(nb);
                if (!p->consts[v]) {
                    free_program(p);
                    return CARVE_ERR_NOMEM;
                }
                memcpy(p->consts[v], data, nb);
            }
        }
    }
    n_compiled++;
    *handle = p;
    return CARVE_OK;
}

static carve_status demo_run(void *user, void *handle, carve_tensor *const *inputs, size_t n_inputs,
                             carve_tensor **outputs, size_t n_outputs, char *msg, size_t msg_size)
{
    program *p = handle;
    if (n_inputs != p->n_in || n_outputs != p->n_out) {
        snprintf(msg, msg_size, "called with %zu inputs and %zu outputs, compiled for %zu and %zu", n_inputs,
                 n_outputs, p->n_in, p->n_out);
        return CARVE_ERR_ARG;
    }
    float **slot = calloc(p->n_slots + 1, sizeof *slot);
    float *work = calloc((p->n_steps + 1) * (p->n_elem + 1), sizeof *work);
    if (!slot || !work) {
        free(slot);
        free(work);
        snprintf(msg, msg_size, "out of memory");
        return CARVE_ERR_NOMEM;
    }
    for (size_t i = 0; i < p->n_slots; i++)
        slot[i] = p->consts[i];
    for (size_t i = 0; i < p->n_in; i++) {
        if (carve_tensor_dtype(inputs[i]) != CARVE_FLOAT || carve_tensor_count(inputs[i]) != p->n_elem) {
            snprintf(msg, msg_size, "input %zu is not float32 of %zu elements", i, p->n_elem);
            free(slot);
            free(work);
            return CARVE_ERR_ARG;
        }
        slot[p->in_slot[i]] = carve_tensor_data(inputs[i], NULL);
    }
    for (size_t k = 0; k < p->n_steps; k++) {
        const step *s = &p->steps[k];
        float *y = work + k * (p->n_elem + 1), *a = slot[s->a], *b = s->b >= 0 ? slot[s->b] : NULL;
        for (size_t i = 0; i < p->n_elem; i++)
            switch (s->op) {
            case OP_RELU: y[i] = a[i] > 0 ? a[i] : 0; break;
            case OP_ADD: y[i] = a[i] + b[i]; break;
            case OP_MUL: y[i] = a[i] * b[i]; break;
            case OP_SUB: y[i] = a[i] - b[i]; break;
            default: y[i] = -a[i]; break;
            }
        slot[s->y] = y;
    }
    for (size_t i = 0; i < p->n_out; i++) {
        outputs[i] = carve_tensor_new(CARVE_FLOAT, p->rank, p->dims);
        if (!outputs[i]) {
            snprintf(msg, msg_size, "out of memory");
            free(slot);
            free(work);
            return CARVE_ERR_NOMEM;
        }
        memcpy(carve_tensor_data(outputs[i], NULL), slot[p->out_slot[i]], p->n_elem * sizeof(float));
    }
    free(slot);
    free(work);
    n_runs++;
    return CARVE_OK;
}

static void demo_release(void *user, void *handle)
{
    n_released++;
    free_program(handle);
}

static const char profile[] =
    "{\"schema_version\": 1, \"name\": \"demo\", \"description\": \"the demo plugin of tests/backend_plugin\","
    " \"dtypes\": [\"float32\"], \"int64\": \"refuse\", \"max_rank\": 4, \"static_shapes\": true,"
    " \"ops\": {\"Relu\": {}, \"Add\": {}, \"Mul\": {}, \"Sub\": {}, \"Neg\": {}}}";

static const carve_backend demo = {
    .struct_size = sizeof(carve_backend),
    .abi_version = CARVE_BACKEND_ABI_VERSION,
    .name = "demo",
    .version = "demo 1.0",
    .profile_json = profile,
    .supports_node = demo_supports,
    .compile = demo_compile,
    .run = demo_run,
    .release = demo_release,
};

const carve_backend *carve_backend_entry(void) { return &demo; }

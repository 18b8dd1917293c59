/* model.c: the model, its graphs, nodes and values; the public builder and
 * accessor API. */
#include "ir.h"

#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- lifecycle */

carve_model *carve_model_new(carve_ctx *ctx)
{
    carve_model *m = cv_zalloc(ctx, sizeof *m, "creating a model");
    if (!m)
        return NULL;
    m->ctx = ctx;
    m->ir_version = 8;
    m->opset_gen = 1;
    m->onnx_opset_gen = 1;
    if (cv_graph_new(m, CARVE_NONE, "main") == CARVE_NONE) {
        carve_model_free(m);
        return NULL;
    }
    return m;
}

bool cv_model_keep(carve_model *m, void (*drop)(void *), void *p)
{
    if (m->n_kept == m->cap_kept) {
        uint32_t cap = m->cap_kept ? 2 * m->cap_kept : 16;
        struct cv_kept *k = cv_realloc(m->kept, (size_t)cap * sizeof *k);
        if (!k)
            return false;
        m->kept = k;
        m->cap_kept = cap;
    }
    m->kept[m->n_kept++] = (struct cv_kept){drop, p};
    return true;
}

void carve_model_free(carve_model *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n_graphs; i++) {
        cv_graph *g = &m->graphs[i];
        cv_ids_free(&g->inputs);
        cv_ids_free(&g->outputs);
        cv_ids_free(&g->inits);
        cv_ids_free(&g->nodes);
        cv_strmap_free(&g->scope);
    }
    for (uint32_t i = 0; i < m->n_maps; i++)
        munmap(m->maps[i].addr, m->maps[i].len);
    cv_free(m->maps);
    for (uint32_t i = 0; i < m->n_ext_files; i++)
        cv_free(m->ext_files[i]);
    cv_free(m->ext_files);
    for (uint32_t i = 0; i < m->n_owned; i++)
        cv_free(m->owned[i]);
    cv_free(m->owned);
    for (uint32_t i = 0; i < m->n_kept; i++)
        m->kept[i].drop(m->kept[i].p);
    cv_free(m->kept);
    cv_free(m->scratch);
    if (m->backend_cache_free)
        m->backend_cache_free(m->backend_cache);
    if (m->run_pool_free)
        m->run_pool_free(m->run_pool);
    cv_free(m->graphs);
    cv_free(m->nodes);
    cv_free(m->values);
    cv_strmap_free(&m->node_names);
    cv_arena_free(&m->arena);
    cv_free(m);
}

carve_ctx *carve_model_ctx(const carve_model *m) { return m->ctx; }

bool cv_model_swap(carve_model *a, carve_model *b)
{
    const char *pa = a->source_path, *pb = b->source_path;
    const char *na = pa ? cv_arena_strdup(&b->arena, pa) : NULL;
    const char *nb = pb ? cv_arena_strdup(&a->arena, pb) : NULL;
    if ((pa && !na) || (pb && !nb))
        return false;
    carve_model tmp = *a;
    *a = *b;
    *b = tmp;
    a->source_path = na;
    b->source_path = nb;
    return true;
}

bool cv_model_nomem(carve_model *m)
{
    if (!m->arena.failed)
        return false;
    cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    return true;
}

static bool grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n < *cap)
        return true;
    void *p = cv_grow_array(*arr, cap, elem, 16);
    if (p)
        *arr = p;
    return p != NULL;
}

/* An array of *cap elements made room for `more` past n, at once. */
static bool reserve(void **arr, uint32_t *cap, uint32_t n, uint32_t more, size_t elem)
{
    if ((uint64_t)n + more <= *cap)
        return true;
    if ((uint64_t)n + more > UINT32_MAX)
        return false;
    uint32_t c = n + more;
    void *p = cv_realloc(*arr, (size_t)c * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

bool cv_model_reserve(carve_model *m, carve_graph_id g, uint32_t nodes, uint32_t values, uint32_t names)
{
    bool ok = reserve((void **)&m->nodes, &m->cap_nodes, m->n_nodes, nodes, sizeof *m->nodes) &&
              reserve((void **)&m->values, &m->cap_values, m->n_values, values, sizeof *m->values) &&
              cv_strmap_reserve(&m->graphs[g].scope, m->graphs[g].scope.n + names);
    if (ok && nodes && m->graphs[g].nodes.cap < m->graphs[g].nodes.n + nodes) {
        cv_ids *ids = &m->graphs[g].nodes;
        uint32_t *v = cv_realloc(ids->v, ((size_t)ids->n + nodes) * sizeof *v);
        ok = v != NULL;
        if (ok) {
            ids->v = v;
            ids->cap = ids->n + nodes;
        }
    }
    if (!ok)
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory making room for %u nodes", nodes);
    return ok;
}

carve_graph_id cv_graph_new(carve_model *m, carve_graph_id parent, const char *name)
{
    if (!grow((void **)&m->graphs, &m->cap_graphs, m->n_graphs, sizeof *m->graphs)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory adding a graph");
        return CARVE_NONE;
    }
    cv_graph *g = &m->graphs[m->n_graphs];
    memset(g, 0, sizeof *g);
    g->name = cv_arena_strdup(&m->arena, name ? name : "");
    g->parent = parent;
    g->owner = CARVE_NONE;
    if (cv_model_nomem(m))
        return CARVE_NONE;
    return m->n_graphs++;
}

/* A value named `name` in graph g, the name copied into the arena when
 * `copy`, else kept as given. With old: defined only when g's scope lacks
 * the name (else CARVE_NONE, *old its holder), one look-up for both; without:
 * the scope's entry is replaced. */
static carve_value_id value_add(carve_model *m, carve_graph_id g, const char *name, bool copy, carve_value_id *old)
{
    if (old)
        *old = CARVE_NONE;
    if (!grow((void **)&m->values, &m->cap_values, m->n_values, sizeof *m->values)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory adding a value");
        return CARVE_NONE;
    }
    carve_value_id id = m->n_values;
    if (copy)
        name = cv_arena_strdup(&m->arena, name);
    if (cv_model_nomem(m))
        return CARVE_NONE;
    cv_strmap *scope = &m->graphs[g].scope;
    if (!(old ? cv_strmap_add(scope, name, id, old) : cv_strmap_put(scope, name, id))) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory adding a value");
        return CARVE_NONE;
    }
    if (old && *old != CARVE_NONE)
        return CARVE_NONE;
    m->values[id] = (cv_value){.name = name, .graph = g, .producer = CARVE_NONE, .type.rank = -1};
    m->n_values++;
    return id;
}

carve_value_id cv_value_new(carve_model *m, carve_graph_id g, const char *name)
{
    return value_add(m, g, name, true, NULL);
}

carve_value_id cv_value_define(carve_model *m, carve_graph_id g, const char *name, carve_value_id *old)
{
    return value_add(m, g, name, false, old);
}

/* A node; op and domain copied into the arena when `copy`, else kept. */
static carve_node_id node_add(carve_model *m, carve_graph_id g, const char *op, const char *domain, uint32_t n_in,
                              uint32_t n_out, bool copy)
{
    if (!grow((void **)&m->nodes, &m->cap_nodes, m->n_nodes, sizeof *m->nodes) ||
        !cv_ids_push(&m->graphs[g].nodes, m->n_nodes)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory adding a node");
        return CARVE_NONE;
    }
    cv_node *n = &m->nodes[m->n_nodes];
    /* Op and domain never change, so nodes may share them: the previous
     * node's op when it is the same (runs of one op are common; the decoder
     * gives a run one string), the default domain as a constant. */
    const char *prev = m->n_nodes ? m->nodes[m->n_nodes - 1].op : NULL;
    op = op && prev && (prev == op || (prev[0] == op[0] && !strcmp(prev, op))) ? prev
       : copy                                                                  ? cv_arena_strdup(&m->arena, op)
                                                                               : op;
    /* inputs and outputs in one block, all CARVE_NONE, the inputs padded to
     * 16 bytes as an arena block of their own was */
    size_t in_cap = ((size_t)(n_in ? n_in : 1) + 3) & ~(size_t)3;
    carve_value_id *ids = cv_arena_fill(&m->arena, (in_cap + (n_out ? n_out : 1)) * sizeof *ids, 0xff);
    /* stored whole: no zeroing first */
    *n = (cv_node){.op = op,
                   .domain = !domain || !*domain ? "" : copy ? cv_arena_strdup(&m->arena, domain) : domain,
                   .graph = g,
                   .n_in = n_in,
                   .n_out = n_out,
                   .in = ids,
                   .out = ids ? ids + in_cap : NULL};
    if (cv_model_nomem(m)) {
        m->graphs[g].nodes.n--;
        return CARVE_NONE;
    }
    return m->n_nodes++;
}

carve_node_id cv_node_new(carve_model *m, carve_graph_id g, const char *op, const char *domain, uint32_t n_in,
                          uint32_t n_out)
{
    return node_add(m, g, op, domain, n_in, n_out, true);
}

carve_node_id cv_node_new_kept(carve_model *m, carve_graph_id g, const char *op, const char *domain, uint32_t n_in,
                               uint32_t n_out)
{
    return node_add(m, g, op, domain, n_in, n_out, false);
}

bool cv_graph_encloses(const carve_model *m, carve_graph_id outer, carve_graph_id inner)
{
    for (carve_graph_id g = inner; g != CARVE_NONE; g = m->graphs[g].parent)
        if (g == outer)
            return true;
    return false;
}

/* ---------------------------------------------------------------- model fields */

int64_t carve_model_ir_version(const carve_model *m) { return m->ir_version; }
void carve_model_set_ir_version(carve_model *m, int64_t v) { m->ir_version = v; }

carve_status carve_model_set_opset(carve_model *m, const char *domain, int64_t version)
{
    if (!domain)
        domain = "";
    if (!strcmp(domain, "ai.onnx"))
        domain = "";
    m->opset_gen++;
    if (!*domain) {
        m->onnx_opset = version;
        m->onnx_opset_gen = m->opset_gen;
    }
    for (uint32_t i = 0; i < m->n_opsets; i++)
        if (!strcmp(m->opset_domain[i], domain)) {
            m->opset_version[i] = version;
            return CARVE_OK;
        }
    const char **d = cv_arena_alloc(&m->arena, (m->n_opsets + 1) * sizeof *d);
    int64_t *v = cv_arena_alloc(&m->arena, (m->n_opsets + 1) * sizeof *v);
    const char *dup = cv_arena_strdup(&m->arena, domain);
    if (cv_model_nomem(m))
        return CARVE_ERR_NOMEM;
    if (m->n_opsets) {
        memcpy(d, m->opset_domain, m->n_opsets * sizeof *d);
        memcpy(v, m->opset_version, m->n_opsets * sizeof *v);
    }
    d[m->n_opsets] = dup;
    v[m->n_opsets] = version;
    m->opset_domain = d;
    m->opset_version = v;
    m->n_opsets++;
    return CARVE_OK;
}

int64_t carve_model_opset(const carve_model *m, const char *domain)
{
    /* ai.onnx, the domain of nearly every node, is kept at hand: this runs
     * for every node in several passes */
    if (!domain || !*domain || (*domain == 'a' && !strcmp(domain, "ai.onnx")))
        return m->onnx_opset;
    for (uint32_t i = 0; i < m->n_opsets; i++)
        if (m->opset_domain[i][0] == domain[0] && (!domain[0] || !strcmp(m->opset_domain[i], domain)))
            return m->opset_version[i];
    return 0;
}

size_t carve_model_opset_count(const carve_model *m) { return m->n_opsets; }

void carve_model_opset_at(const carve_model *m, size_t i, const char **domain, int64_t *version)
{
    *domain = m->opset_domain[i];
    *version = m->opset_version[i];
}

carve_status carve_model_set_producer(carve_model *m, const char *name, const char *version)
{
    m->producer_name = cv_arena_strdup(&m->arena, name);
    m->producer_version = cv_arena_strdup(&m->arena, version);
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

carve_status carve_model_set_doc(carve_model *m, const char *doc)
{
    m->doc = cv_arena_strdup(&m->arena, doc);
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

carve_status carve_model_set_metadata(carve_model *m, const char *key, const char *value)
{
    for (uint32_t i = 0; i < m->n_meta; i++)
        if (!strcmp(m->meta[i].key, key)) {
            m->meta[i].value = cv_arena_strdup(&m->arena, value);
            return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
        }
    cv_kv *kv = cv_arena_alloc(&m->arena, (m->n_meta + 1) * sizeof *kv);
    if (cv_model_nomem(m))
        return CARVE_ERR_NOMEM;
    if (m->n_meta)
        memcpy(kv, m->meta, m->n_meta * sizeof *kv);
    kv[m->n_meta].key = cv_arena_strdup(&m->arena, key);
    kv[m->n_meta].value = cv_arena_strdup(&m->arena, value);
    m->meta = kv;
    m->n_meta++;
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

size_t carve_model_metadata_count(const carve_model *m) { return m->n_meta; }

void carve_model_metadata_at(const carve_model *m, size_t i, const char **key, const char **value)
{
    *key = m->meta[i].key;
    *value = m->meta[i].value;
}

carve_graph_id carve_model_main_graph(const carve_model *m) { (void)m; return 0; }

/* ---------------------------------------------------------------- graphs */

size_t carve_model_graph_count(const carve_model *m) { return m->n_graphs; }
carve_graph_id carve_graph_parent(const carve_model *m, carve_graph_id g) { return m->graphs[g].parent; }
carve_node_id carve_graph_owner(const carve_model *m, carve_graph_id g) { return m->graphs[g].owner; }
const char *carve_graph_name(const carve_model *m, carve_graph_id g) { return m->graphs[g].name; }
size_t carve_graph_input_count(const carve_model *m, carve_graph_id g) { return m->graphs[g].inputs.n; }
carve_value_id carve_graph_input(const carve_model *m, carve_graph_id g, size_t i) { return m->graphs[g].inputs.v[i]; }
size_t carve_graph_output_count(const carve_model *m, carve_graph_id g) { return m->graphs[g].outputs.n; }
carve_value_id carve_graph_output(const carve_model *m, carve_graph_id g, size_t i) { return m->graphs[g].outputs.v[i]; }
size_t carve_graph_initializer_count(const carve_model *m, carve_graph_id g) { return m->graphs[g].inits.n; }
carve_value_id carve_graph_initializer(const carve_model *m, carve_graph_id g, size_t i) { return m->graphs[g].inits.v[i]; }
size_t carve_graph_node_count(const carve_model *m, carve_graph_id g) { return m->graphs[g].nodes.n; }
carve_node_id carve_graph_node(const carve_model *m, carve_graph_id g, size_t i) { return m->graphs[g].nodes.v[i]; }

carve_graph_id carve_graph_new_subgraph(carve_model *m, carve_graph_id parent, const char *name)
{
    if (parent >= m->n_graphs) {
        cv_error(m->ctx, CARVE_ERR_ARG, "new subgraph: no graph %u", parent);
        return CARVE_NONE;
    }
    return cv_graph_new(m, parent, name);
}

static bool check_name(carve_model *m, carve_graph_id g, const char *name, const char *what)
{
    if (g >= m->n_graphs) {
        cv_error(m->ctx, CARVE_ERR_ARG, "%s: no graph %u", what, g);
        return false;
    }
    if (!name || !*name) {
        cv_error(m->ctx, CARVE_ERR_ARG, "%s: a value needs a name", what);
        return false;
    }
    if (cv_strmap_get(&m->graphs[g].scope, name) != CARVE_NONE) {
        cv_error(m->ctx, CARVE_ERR_INVALID, "%s: value '%s' is already defined in graph '%s'",
                 what, name, m->graphs[g].name);
        return false;
    }
    return true;
}

static carve_status set_type(carve_model *m, cv_type *t, carve_dtype dtype, int rank,
                             const carve_dim *dims)
{
    if (rank > CARVE_MAX_RANK)
        return cv_error(m->ctx, CARVE_ERR_ARG, "rank %d is above carve's limit of %d", rank,
                        CARVE_MAX_RANK);
    if ((int)dtype < 0 || dtype >= CARVE_DTYPE_COUNT)
        return cv_error(m->ctx, CARVE_ERR_ARG, "unknown dtype %d", (int)dtype);
    t->kind = CARVE_TYPE_TENSOR;
    t->dtype = dtype;
    t->rank = rank < 0 ? -1 : rank;
    t->dims = NULL;
    if (rank > 0) {
        t->dims = cv_arena_alloc(&m->arena, (size_t)rank * sizeof *t->dims);
        if (cv_model_nomem(m))
            return CARVE_ERR_NOMEM;
        for (int i = 0; i < rank; i++) {
            t->dims[i].value = dims ? dims[i].value : -1;
            t->dims[i].param = dims && dims[i].param ? cv_arena_strdup(&m->arena, dims[i].param) : NULL;
            if (t->dims[i].param)
                t->dims[i].value = -1;
            else if (t->dims[i].value < -1)
                return cv_error(m->ctx, CARVE_ERR_ARG, "dim %d is %lld", i, (long long)t->dims[i].value);
        }
    }
    return cv_model_nomem(m) ? CARVE_ERR_NOMEM : CARVE_OK;
}

carve_value_id carve_graph_add_input(carve_model *m, carve_graph_id g, const char *name,
                                     carve_dtype dtype, int rank, const carve_dim *dims)
{
    if (!check_name(m, g, name, "add input"))
        return CARVE_NONE;
    carve_value_id v = cv_value_new(m, g, name);
    if (v == CARVE_NONE)
        return CARVE_NONE;
    if (set_type(m, &m->values[v].type, dtype, rank, dims) != CARVE_OK)
        return CARVE_NONE;
    m->values[v].is_input = true;
    if (!cv_ids_push(&m->graphs[g].inputs, v)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        return CARVE_NONE;
    }
    return v;
}

carve_value_id carve_graph_add_initializer(carve_model *m, carve_graph_id g, const char *name,
                                           carve_dtype dtype, int rank, const int64_t *dims,
                                           const void *data, size_t nbytes)
{
    if (!check_name(m, g, name, "add initializer"))
        return CARVE_NONE;
    cv_tensor *t = cv_tensor_new(m, dtype, rank, dims, data, nbytes);
    if (!t)
        return CARVE_NONE;
    carve_value_id v = cv_value_new(m, g, name);
    if (v == CARVE_NONE)
        return CARVE_NONE;
    t->name = m->values[v].name;
    m->values[v].init = t;
    carve_dim dd[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dd[i] = (carve_dim){dims[i], NULL};
    if (set_type(m, &m->values[v].type, dtype, rank, dd) != CARVE_OK)
        return CARVE_NONE;
    if (!cv_ids_push(&m->graphs[g].inits, v)) {
        cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
        return CARVE_NONE;
    }
    return v;
}

carve_status carve_graph_add_output(carve_model *m, carve_graph_id g, carve_value_id v)
{
    if (g >= m->n_graphs || v >= m->n_values)
        return cv_error(m->ctx, CARVE_ERR_ARG, "add output: no such graph or value");
    if (!cv_ids_push(&m->graphs[g].outputs, v))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    return CARVE_OK;
}

carve_node_id carve_graph_add_node(carve_model *m, carve_graph_id g, const char *op_type,
                                   const char *domain, const char *name,
                                   size_t n_in, const carve_value_id *inputs,
                                   size_t n_out, const char *const *out_names)
{
    if (g >= m->n_graphs || !op_type || !*op_type) {
        cv_error(m->ctx, CARVE_ERR_ARG, "add node: needs a graph and an op type");
        return CARVE_NONE;
    }
    if (n_in > UINT32_MAX / 2 || n_out > UINT32_MAX / 2) {
        cv_error(m->ctx, CARVE_ERR_ARG, "add node: too many inputs or outputs");
        return CARVE_NONE;
    }
    for (size_t i = 0; i < n_in; i++)
        if (inputs[i] != CARVE_NONE && inputs[i] >= m->n_values) {
            cv_error(m->ctx, CARVE_ERR_ARG, "add node %s: input %zu is not a value id", op_type, i);
            return CARVE_NONE;
        }
    for (size_t i = 0; i < n_out; i++) {
        const char *o = out_names ? out_names[i] : NULL;
        if (o && *o && !check_name(m, g, o, "add node"))
            return CARVE_NONE;
        for (size_t j = 0; j < i; j++)
            if (o && *o && out_names[j] && !strcmp(o, out_names[j])) {
                cv_error(m->ctx, CARVE_ERR_INVALID, "add node %s: output '%s' given twice", op_type, o);
                return CARVE_NONE;
            }
    }
    if (name && *name && cv_strmap_get(&m->node_names, name) != CARVE_NONE) {
        cv_error(m->ctx, CARVE_ERR_INVALID, "add node: a node named '%s' exists already", name);
        return CARVE_NONE;
    }
    carve_node_id id = cv_node_new(m, g, op_type, domain, (uint32_t)n_in, (uint32_t)n_out);
    if (id == CARVE_NONE)
        return CARVE_NONE;
    for (size_t i = 0; i < n_in; i++)
        m->nodes[id].in[i] = inputs[i];
    for (size_t i = 0; i < n_out; i++) {
        const char *o = out_names ? out_names[i] : NULL;
        if (!o || !*o)
            continue;
        carve_value_id v = cv_value_new(m, g, o);
        if (v == CARVE_NONE)
            return CARVE_NONE;
        m->values[v].producer = id;
        m->values[v].out_index = (uint32_t)i;
        m->nodes[id].out[i] = v;
    }
    if (name && *name) {
        m->nodes[id].name = cv_arena_strdup(&m->arena, name);
        if (cv_model_nomem(m) || !cv_strmap_put(&m->node_names, m->nodes[id].name, id)) {
            cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
            return CARVE_NONE;
        }
    } else if (!cv_names_give(m, id)) {
        return CARVE_NONE;
    }
    return id;
}

/* ---------------------------------------------------------------- nodes */

const char *carve_node_name(const carve_model *m, carve_node_id n) { return m->nodes[n].name; }
const char *carve_node_op(const carve_model *m, carve_node_id n) { return m->nodes[n].op; }
const char *carve_node_domain(const carve_model *m, carve_node_id n) { return m->nodes[n].domain; }
carve_graph_id carve_node_graph(const carve_model *m, carve_node_id n) { return m->nodes[n].graph; }
size_t carve_node_input_count(const carve_model *m, carve_node_id n) { return m->nodes[n].n_in; }
carve_value_id carve_node_input(const carve_model *m, carve_node_id n, size_t i) { return m->nodes[n].in[i]; }
size_t carve_node_output_count(const carve_model *m, carve_node_id n) { return m->nodes[n].n_out; }
carve_value_id carve_node_output(const carve_model *m, carve_node_id n, size_t i) { return m->nodes[n].out[i]; }

carve_node_id carve_model_find_node(const carve_model *m, const char *name)
{
    return cv_strmap_get(&m->node_names, name);
}

const cv_attr *cv_node_attr_find(const carve_model *m, carve_node_id n, const char *name)
{
    const cv_node *nd = &m->nodes[n];
    for (uint32_t i = 0; i < nd->n_attr; i++)
        if (!strcmp(nd->attr[i].name, name))
            return &nd->attr[i];
    return NULL;
}

cv_attr *cv_node_attr_add(carve_model *m, carve_node_id n, const char *name, carve_attr_kind k)
{
    cv_node *nd = &m->nodes[n];
    cv_attr *a = (cv_attr *)cv_node_attr_find(m, n, name);
    if (!a) {
        cv_attr *arr = cv_arena_alloc(&m->arena, (nd->n_attr + 1) * sizeof *arr);
        if (!arr)
            return NULL;
        if (nd->n_attr)
            memcpy(arr, nd->attr, nd->n_attr * sizeof *arr);
        nd->attr = arr;
        a = &arr[nd->n_attr++];
        a->name = cv_arena_strdup(&m->arena, name);
    } else {
        const char *keep = a->name;
        memset(a, 0, sizeof *a);
        a->name = keep;
    }
    a->kind = k;
    return a;
}

/* Sets attribute name of node n to kind k with v's value (its u and n, already
 * in the arena): every setter below ends here. */
static carve_status attr_put(carve_model *m, carve_node_id n, const char *name, carve_attr_kind k, cv_attr v)
{
    if (n >= m->n_nodes || !name || !*name)
        return cv_error(m->ctx, CARVE_ERR_ARG, "set attribute: bad node or name");
    cv_attr *a = cv_node_attr_add(m, n, name, k);
    if (!a || cv_model_nomem(m))
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory");
    a->n = v.n;
    a->u = v.u;
    return CARVE_OK;
}

carve_status carve_node_set_attr_int(carve_model *m, carve_node_id n, const char *name, int64_t v)
{
    return attr_put(m, n, name, CARVE_ATTR_INT, (cv_attr){.u.i = v});
}

carve_status carve_node_set_attr_float(carve_model *m, carve_node_id n, const char *name, float v)
{
    return attr_put(m, n, name, CARVE_ATTR_FLOAT, (cv_attr){.u.f = v});
}

static cv_bytes arena_bytes(carve_model *m, const char *s)
{
    return (cv_bytes){.n = strlen(s), .p = (const uint8_t *)cv_arena_strdup(&m->arena, s)};
}

carve_status carve_node_set_attr_string(carve_model *m, carve_node_id n, const char *name,
                                        const char *s)
{
    return attr_put(m, n, name, CARVE_ATTR_STRING, (cv_attr){.u.s = arena_bytes(m, s)});
}

carve_status carve_node_set_attr_ints(carve_model *m, carve_node_id n, const char *name,
                                      size_t count, const int64_t *v)
{
    return attr_put(m, n, name, CARVE_ATTR_INTS,
                    (cv_attr){.n = (uint32_t)count, .u.ints = cv_arena_memdup(&m->arena, v, count * sizeof *v)});
}

carve_status carve_node_set_attr_floats(carve_model *m, carve_node_id n, const char *name,
                                        size_t count, const float *v)
{
    return attr_put(m, n, name, CARVE_ATTR_FLOATS,
                    (cv_attr){.n = (uint32_t)count, .u.floats = cv_arena_memdup(&m->arena, v, count * sizeof *v)});
}

carve_status carve_node_set_attr_strings(carve_model *m, carve_node_id n, const char *name,
                                         size_t count, const char *const *v)
{
    cv_bytes *strs = cv_arena_alloc(&m->arena, (count ? count : 1) * sizeof *strs);
    for (size_t i = 0; strs && i < count; i++)
        strs[i] = arena_bytes(m, v[i]);
    return attr_put(m, n, name, CARVE_ATTR_STRINGS, (cv_attr){.n = (uint32_t)count, .u.strings = strs});
}

carve_status carve_node_set_attr_tensor(carve_model *m, carve_node_id n, const char *name,
                                        carve_dtype dtype, int rank, const int64_t *dims,
                                        const void *data, size_t nbytes)
{
    cv_tensor *t = cv_tensor_new(m, dtype, rank, dims, data, nbytes);
    if (!t)
        return carve_errcode(m->ctx);
    return attr_put(m, n, name, CARVE_ATTR_TENSOR, (cv_attr){.u.t = t});
}

/* Node n takes the count subgraphs gs as its own (each made in n's graph,
 * owned by no other node). */
static carve_status adopt_graphs(carve_model *m, carve_node_id n, size_t count, const carve_graph_id *gs)
{
    if (n >= m->n_nodes)
        return cv_error(m->ctx, CARVE_ERR_ARG, "set graph attribute: no node %u", n);
    for (size_t i = 0; i < count; i++) {
        carve_graph_id g = gs[i];
        if (g >= m->n_graphs || g == 0)
            return cv_error(m->ctx, CARVE_ERR_ARG, "set graph attribute: no subgraph %u", g);
        if (m->graphs[g].parent != m->nodes[n].graph)
            return cv_error(m->ctx, CARVE_ERR_ARG,
                            "set graph attribute: graph '%s' was not made as a subgraph of node '%s''s graph",
                            m->graphs[g].name, m->nodes[n].name);
        if (m->graphs[g].owner != CARVE_NONE && m->graphs[g].owner != n)
            return cv_error(m->ctx, CARVE_ERR_ARG, "set graph attribute: graph '%s' belongs to another node",
                            m->graphs[g].name);
        m->graphs[g].owner = n;
    }
    return CARVE_OK;
}

carve_status carve_node_set_attr_graph(carve_model *m, carve_node_id n, const char *name,
                                       carve_graph_id g)
{
    carve_status s = adopt_graphs(m, n, 1, &g);
    return s ? s : attr_put(m, n, name, CARVE_ATTR_GRAPH, (cv_attr){.u.g = g});
}

carve_status carve_node_set_attr_graphs(carve_model *m, carve_node_id n, const char *name,
                                        size_t count, const carve_graph_id *gs)
{
    carve_status s = adopt_graphs(m, n, count, gs);
    if (s)
        return s;
    carve_graph_id *copy = cv_arena_memdup(&m->arena, gs, count * sizeof *gs);
    return attr_put(m, n, name, CARVE_ATTR_GRAPHS, (cv_attr){.n = (uint32_t)count, .u.graphs = copy});
}

bool carve_node_attr_int(const carve_model *m, carve_node_id n, const char *name, int64_t *v)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_INT)
        return false;
    *v = a->u.i;
    return true;
}

bool carve_node_attr_float(const carve_model *m, carve_node_id n, const char *name, float *v)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_FLOAT)
        return false;
    *v = a->u.f;
    return true;
}

const char *carve_node_attr_string(const carve_model *m, carve_node_id n, const char *name,
                                   size_t *len)
{
    const cv_attr *a = cv_node_attr_find(m, n, name);
    if (!a || a->kind != CARVE_ATTR_STRING)
        return NULL;
    if (len)
        *len = a->u.s.n;
    return (const char *)a->u.s.p;
}

size_t carve_node_attr_count(const carve_model *m, carve_node_id n) { return m->nodes[n].n_attr; }
const char *carve_node_attr_name(const carve_model *m, carve_node_id n, size_t i) { return m->nodes[n].attr[i].name; }
carve_attr_kind carve_node_attr_kind(const carve_model *m, carve_node_id n, size_t i) { return m->nodes[n].attr[i].kind; }

/* ---------------------------------------------------------------- values */

const char *carve_value_name(const carve_model *m, carve_value_id v) { return m->values[v].name; }
carve_graph_id carve_value_graph(const carve_model *m, carve_value_id v) { return m->values[v].graph; }
carve_node_id carve_value_producer(const carve_model *m, carve_value_id v) { return m->values[v].producer; }
carve_type_kind carve_value_type_kind(const carve_model *m, carve_value_id v) { return m->values[v].type.kind; }
carve_dtype carve_value_dtype(const carve_model *m, carve_value_id v) { return m->values[v].type.dtype; }
int carve_value_rank(const carve_model *m, carve_value_id v) { return m->values[v].type.rank; }

carve_dim carve_value_dim(const carve_model *m, carve_value_id v, int axis)
{
    const cv_type *t = &m->values[v].type;
    if (axis < 0 || axis >= t->rank)
        return (carve_dim){-1, NULL};
    return t->dims[axis];
}

carve_value_kind carve_value_kind_of(const carve_model *m, carve_value_id v)
{
    const cv_value *x = &m->values[v];
    if (x->is_input)
        return CARVE_VALUE_INPUT;
    if (x->init)
        return CARVE_VALUE_CONST;
    if (x->producer == CARVE_NONE)
        return CARVE_VALUE_UNDEFINED;
    const cv_node *p = &m->nodes[x->producer];
    if (cv_node_is_constant(p))
        return CARVE_VALUE_CONST;
    return CARVE_VALUE_NODE;
}

carve_status carve_value_set_type(carve_model *m, carve_value_id v, carve_dtype dtype, int rank,
                                  const carve_dim *dims)
{
    if (v >= m->n_values)
        return cv_error(m->ctx, CARVE_ERR_ARG, "set type: no value %u", v);
    return set_type(m, &m->values[v].type, dtype, rank, dims);
}

carve_value_id carve_graph_find_value(const carve_model *m, carve_graph_id g, const char *name)
{
    for (; g != CARVE_NONE; g = m->graphs[g].parent) {
        carve_value_id v = cv_strmap_get(&m->graphs[g].scope, name);
        if (v != CARVE_NONE)
            return v;
    }
    return CARVE_NONE;
}

const void *carve_value_data(const carve_model *m, carve_value_id v, size_t *nbytes)
{
    const cv_tensor *t = m->values[v].init;
    if (!t || t->dtype == CARVE_STRING)
        return NULL;
    if (nbytes)
        *nbytes = t->nbytes;
    return t->data;
}

/* ---------------------------------------------------------------- rewriting */

uint32_t cv_graph_node_pos(const carve_model *m, carve_node_id n)
{
    const cv_graph *g = &m->graphs[m->nodes[n].graph];
    for (uint32_t i = 0; i < g->nodes.n; i++)
        if (g->nodes.v[i] == n)
            return i;
    return CARVE_NONE;
}

void cv_node_remove(carve_model *m, carve_node_id n)
{
    cv_node *nd = &m->nodes[n];
    cv_graph *g = &m->graphs[nd->graph];
    /* the last node first: whole graphs are dropped from their end */
    uint32_t pos = g->nodes.n && g->nodes.v[g->nodes.n - 1] == n ? g->nodes.n - 1 : cv_graph_node_pos(m, n);
    if (pos != CARVE_NONE) {
        memmove(&g->nodes.v[pos], &g->nodes.v[pos + 1], (g->nodes.n - pos - 1) * sizeof *g->nodes.v);
        g->nodes.n--;
    }
    cv_node_remove_later(m, n);
}

void cv_node_remove_later(carve_model *m, carve_node_id n)
{
    cv_node *nd = &m->nodes[n];
    for (uint32_t i = 0; i < nd->n_out; i++)
        if (nd->out[i] != CARVE_NONE && m->values[nd->out[i]].producer == n)
            m->values[nd->out[i]].producer = CARVE_NONE;
    nd->dead = true;
}

void cv_graph_drop_dead(carve_model *m, carve_graph_id g)
{
    cv_ids *l = &m->graphs[g].nodes;
    uint32_t w = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (!m->nodes[l->v[i]].dead)
            l->v[w++] = l->v[i];
    l->n = w;
}

void cv_graph_move_tail(carve_model *m, carve_graph_id g, uint32_t count, uint32_t at)
{
    cv_ids *l = &m->graphs[g].nodes;
    if (count == 0 || at >= l->n - count)
        return;
    uint32_t tmp_small[64];
    uint32_t *tmp = count <= 64 ? tmp_small : cv_malloc(count * sizeof *tmp);
    if (!tmp)
        return;
    memcpy(tmp, &l->v[l->n - count], count * sizeof *tmp);
    memmove(&l->v[at + count], &l->v[at], (l->n - count - at) * sizeof *l->v);
    memcpy(&l->v[at], tmp, count * sizeof *tmp);
    if (tmp != tmp_small)
        cv_free(tmp);
}

const char *cv_value_unique_name(carve_model *m, carve_graph_id g, const char *base)
{
    const char *name = base;
    for (uint32_t k = 2; carve_graph_find_value(m, g, name) != CARVE_NONE; k++)
        name = cv_arena_numbered(&m->arena, base, '#', k);
    return name == base ? cv_arena_strdup(&m->arena, base) : name;
}

bool cv_value_move(carve_model *m, carve_value_id v, carve_graph_id g)
{
    cv_value *x = &m->values[v];
    cv_strmap_del_if(&m->graphs[x->graph].scope, x->name, v);
    x->graph = g;
    return cv_strmap_put(&m->graphs[g].scope, x->name, v);
}

uint32_t *cv_model_scratch(carve_model *m)
{
    if (m->scratch_cap < m->n_nodes + 1) {
        uint32_t cap = m->n_nodes + 1 + m->n_nodes / 2;
        uint32_t *p = cv_realloc(m->scratch, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        m->scratch = p;
        m->scratch_cap = cap;
    }
    return m->scratch;
}

carve_status carve_model_fix_dim(carve_model *m, const char *name, int64_t value)
{
    if (value < 0)
        return cv_error(m->ctx, CARVE_ERR_ARG, "symbolic dim '%s': %lld is not a size", name, (long long)value);
    bool found = false;
    for (uint32_t i = 0; i < m->n_values; i++) {
        cv_type *t = &m->values[i].type;
        for (int d = 0; t->kind == CARVE_TYPE_TENSOR && d < t->rank; d++)
            if (t->dims[d].param && !strcmp(t->dims[d].param, name)) {
                t->dims[d] = (carve_dim){value, NULL};
                found = true;
            }
    }
    if (!found)
        return cv_error(m->ctx, CARVE_ERR_ARG, "the model has no symbolic dim named '%s'", name);
    return CARVE_OK;
}

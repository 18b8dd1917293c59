/* dump.c: a deterministic text form of the IR, for tests and golden files.
 *
 * Nodes are listed in a topological order that does not depend on the order
 * of a graph's node list (cv_topo_canonical), so one model read from files
 * that list its nodes in different orders dumps the same. A graph that cannot
 * be ordered (a cycle, in a model not verified) is listed as it stands. */
#include "ir.h"

#include <string.h>

static void put_str(cv_buf *b, const uint8_t *s, size_t n)
{
    cv_buf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\')
            cv_buf_printf(b, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            cv_buf_printf(b, "\\x%02x", c);
        else
            cv_buf_put(b, (const char *)&c, 1);
    }
    cv_buf_puts(b, "\"");
}

static void put_cstr(cv_buf *b, const char *s) { put_str(b, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0); }

static void indent(cv_buf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        cv_buf_puts(b, "  ");
}

static void put_raw(cv_buf *b, const cv_raw *r)
{
    if (!r->n)
        return;
    uint64_t h = 0;
    for (uint32_t i = 0; i < r->n; i++)
        h = cv_hash_bytes(r->f[i].data, r->f[i].len, h ^ ((uint64_t)r->f[i].tag << 8 | r->f[i].wire_type));
    cv_buf_printf(b, " raw{%u fields %016llx}", r->n, (unsigned long long)h);
}

static void put_type(cv_buf *b, const cv_type *t)
{
    if (t->kind == CARVE_TYPE_UNKNOWN) {
        cv_buf_puts(b, "?");
        return;
    }
    if (t->kind == CARVE_TYPE_OTHER) {
        cv_buf_printf(b, "opaque<%016llx>", (unsigned long long)cv_hash_bytes(t->opaque.p, t->opaque.n, 0));
        return;
    }
    cv_buf_puts(b, carve_dtype_name(t->dtype));
    if (t->rank < 0) {
        cv_buf_puts(b, "[*]");
    } else {
        cv_buf_puts(b, "[");
        for (int i = 0; i < t->rank; i++) {
            if (i)
                cv_buf_puts(b, ",");
            if (t->dims[i].param)
                cv_buf_puts(b, t->dims[i].param);
            else if (t->dims[i].value >= 0)
                cv_buf_printf(b, "%lld", (long long)t->dims[i].value);
            else
                cv_buf_puts(b, "?");
        }
        cv_buf_puts(b, "]");
    }
    if (t->denotation)
        cv_buf_printf(b, " denotation=%s", t->denotation);
}

static void put_tensor(cv_buf *b, const cv_tensor *t)
{
    cv_buf_printf(b, "%s[", carve_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++)
        cv_buf_printf(b, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    cv_buf_printf(b, "] data=%016llx", (unsigned long long)cv_tensor_hash(t));
    if (t->name && *t->name)
        cv_buf_printf(b, " name=%s", t->name);
    if (t->doc && *t->doc) {
        cv_buf_puts(b, " doc=");
        put_cstr(b, t->doc);
    }
    put_raw(b, &t->raw);
}

static void put_value_ref(cv_buf *b, const carve_model *m, carve_value_id v)
{
    if (v == CARVE_NONE)
        cv_buf_puts(b, "<none>");
    else
        cv_buf_puts(b, m->values[v].name);
}

static void put_value_decl(cv_buf *b, const carve_model *m, carve_value_id v)
{
    const cv_value *x = &m->values[v];
    cv_buf_printf(b, "%s: ", x->name);
    put_type(b, &x->type);
    if (x->doc && *x->doc) {
        cv_buf_puts(b, " doc=");
        put_cstr(b, x->doc);
    }
    put_raw(b, &x->raw);
}

static void dump_graph(cv_buf *b, const carve_model *m, carve_graph_id g, int depth);

static void dump_attr(cv_buf *b, const carve_model *m, const cv_attr *a, int depth)
{
    indent(b, depth);
    cv_buf_printf(b, "@%s = ", a->name);
    switch (a->kind) {
    case CARVE_ATTR_FLOAT: cv_buf_printf(b, "%.9g", (double)a->u.f); break;
    case CARVE_ATTR_INT: cv_buf_printf(b, "%lld", (long long)a->u.i); break;
    case CARVE_ATTR_STRING: put_str(b, a->u.s.p, a->u.s.n); break;
    case CARVE_ATTR_TENSOR: put_tensor(b, a->u.t); break;
    case CARVE_ATTR_FLOATS:
        cv_buf_puts(b, "floats[");
        for (uint32_t i = 0; i < a->n; i++)
            cv_buf_printf(b, "%s%.9g", i ? "," : "", (double)a->u.floats[i]);
        cv_buf_puts(b, "]");
        break;
    case CARVE_ATTR_INTS:
        cv_buf_puts(b, "ints[");
        for (uint32_t i = 0; i < a->n; i++)
            cv_buf_printf(b, "%s%lld", i ? "," : "", (long long)a->u.ints[i]);
        cv_buf_puts(b, "]");
        break;
    case CARVE_ATTR_STRINGS:
        cv_buf_puts(b, "strings[");
        for (uint32_t i = 0; i < a->n; i++) {
            if (i)
                cv_buf_puts(b, ",");
            put_str(b, a->u.strings[i].p, a->u.strings[i].n);
        }
        cv_buf_puts(b, "]");
        break;
    case CARVE_ATTR_TENSORS:
        cv_buf_puts(b, "tensors[");
        for (uint32_t i = 0; i < a->n; i++) {
            if (i)
                cv_buf_puts(b, ", ");
            put_tensor(b, a->u.tensors[i]);
        }
        cv_buf_puts(b, "]");
        break;
    case CARVE_ATTR_GRAPH:
        cv_buf_puts(b, "graph\n");
        dump_graph(b, m, a->u.g, depth + 1);
        return;
    case CARVE_ATTR_GRAPHS:
        cv_buf_printf(b, "graphs(%u)\n", a->n);
        for (uint32_t i = 0; i < a->n; i++)
            dump_graph(b, m, a->u.graphs[i], depth + 1);
        return;
    case CARVE_ATTR_SPARSE_TENSOR:
    case CARVE_ATTR_SPARSE_TENSORS:
    case CARVE_ATTR_TYPE_PROTO:
    case CARVE_ATTR_TYPE_PROTOS:
        cv_buf_printf(b, "opaque kind %d [", (int)a->kind);
        for (uint32_t i = 0; i < a->n; i++)
            cv_buf_printf(b, "%s%016llx", i ? "," : "",
                          (unsigned long long)cv_hash_bytes(a->u.opaque[i].p, a->u.opaque[i].n, 0));
        cv_buf_puts(b, "]");
        break;
    case CARVE_ATTR_UNDEFINED: cv_buf_puts(b, "undefined"); break;
    }
    if (a->ref_attr_name)
        cv_buf_printf(b, " ref=%s", a->ref_attr_name);
    if (a->doc && *a->doc) {
        cv_buf_puts(b, " doc=");
        put_cstr(b, a->doc);
    }
    put_raw(b, &a->raw);
    cv_buf_puts(b, "\n");
}

static void dump_graph(cv_buf *b, const carve_model *m, carve_graph_id g, int depth)
{
    const cv_graph *gr = &m->graphs[g];
    indent(b, depth);
    cv_buf_puts(b, "graph ");
    put_cstr(b, gr->name);
    if (gr->doc && *gr->doc) {
        cv_buf_puts(b, " doc=");
        put_cstr(b, gr->doc);
    }
    put_raw(b, &gr->raw);
    cv_buf_puts(b, " {\n");
    for (uint32_t i = 0; i < gr->inputs.n; i++) {
        indent(b, depth + 1);
        cv_buf_puts(b, "input ");
        put_value_decl(b, m, gr->inputs.v[i]);
        cv_buf_puts(b, "\n");
    }
    for (uint32_t i = 0; i < gr->inits.n; i++) {
        const cv_value *v = &m->values[gr->inits.v[i]];
        indent(b, depth + 1);
        cv_buf_printf(b, "init %s = ", v->name);
        put_tensor(b, v->init);
        cv_buf_puts(b, "\n");
    }
    carve_node_id *order = cv_malloc(((size_t)gr->nodes.n + 1) * sizeof *order);
    if (!order) {
        b->failed = true;
        return;
    }
    carve_status st = cv_topo_canonical(m, g, order);
    if (st == CARVE_ERR_NOMEM) {
        cv_free(order);
        b->failed = true;
        return;
    }
    if (st != CARVE_OK && gr->nodes.n)
        memcpy(order, gr->nodes.v, gr->nodes.n * sizeof *order);
    for (uint32_t i = 0; i < gr->nodes.n && !b->failed; i++) {
        const cv_node *n = &m->nodes[order[i]];
        indent(b, depth + 1);
        cv_buf_printf(b, "node %s = %s%s%s(", n->name, *n->domain ? n->domain : "", *n->domain ? "." : "",
                      n->op);
        for (uint32_t j = 0; j < n->n_in; j++) {
            if (j)
                cv_buf_puts(b, ", ");
            put_value_ref(b, m, n->in[j]);
        }
        cv_buf_puts(b, ") -> (");
        for (uint32_t j = 0; j < n->n_out; j++) {
            if (j)
                cv_buf_puts(b, ", ");
            if (n->out[j] == CARVE_NONE)
                cv_buf_puts(b, "<none>");
            else
                put_value_decl(b, m, n->out[j]);
        }
        cv_buf_puts(b, ")");
        if (n->doc && *n->doc) {
            cv_buf_puts(b, " doc=");
            put_cstr(b, n->doc);
        }
        put_raw(b, &n->raw);
        cv_buf_puts(b, "\n");
        for (uint32_t j = 0; j < n->n_attr; j++)
            dump_attr(b, m, &n->attr[j], depth + 2);
    }
    cv_free(order);
    for (uint32_t i = 0; i < gr->outputs.n; i++) {
        indent(b, depth + 1);
        cv_buf_puts(b, "output ");
        put_value_decl(b, m, gr->outputs.v[i]);
        cv_buf_puts(b, "\n");
    }
    indent(b, depth);
    cv_buf_puts(b, "}\n");
}

char *carve_model_dump(const carve_model *m)
{
    cv_buf b = {0};
    cv_buf_printf(&b, "model ir_version=%lld", (long long)m->ir_version);
    if (m->producer_name) {
        cv_buf_puts(&b, " producer=");
        put_cstr(&b, m->producer_name);
    }
    if (m->producer_version) {
        cv_buf_puts(&b, " producer_version=");
        put_cstr(&b, m->producer_version);
    }
    if (m->domain) {
        cv_buf_puts(&b, " domain=");
        put_cstr(&b, m->domain);
    }
    if (m->has_model_version)
        cv_buf_printf(&b, " model_version=%lld", (long long)m->model_version);
    if (m->doc && *m->doc) {
        cv_buf_puts(&b, " doc=");
        put_cstr(&b, m->doc);
    }
    put_raw(&b, &m->raw);
    cv_buf_puts(&b, "\n");
    for (uint32_t i = 0; i < m->n_opsets; i++) {
        cv_buf_puts(&b, "opset ");
        put_cstr(&b, m->opset_domain[i]);
        cv_buf_printf(&b, " %lld\n", (long long)m->opset_version[i]);
    }
    for (uint32_t i = 0; i < m->n_meta; i++) {
        cv_buf_puts(&b, "meta ");
        put_cstr(&b, m->meta[i].key);
        cv_buf_puts(&b, " = ");
        put_cstr(&b, m->meta[i].value);
        cv_buf_puts(&b, "\n");
    }
    dump_graph(&b, m, 0, 0);
    if (b.failed) {
        cv_buf_free(&b);
        return NULL;
    }
    return b.s;
}

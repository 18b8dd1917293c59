/*
 * build.c: the builder the op families share: values and their layouts,
 * reorders, primitive descriptors and steps, constant inputs, attributes.
 */
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dn.h"

bool dn_fail(dn_builder *b, const char *reason, const char *fmt, ...)
{
    if (b->reason)
        return false; /* keep the first */
    b->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof b->msg, fmt, ap);
    va_end(ap);
    if (b->cur < b->n_nodes)
        b->fail_node = b->nodes[b->cur];
    return false;
}

bool dn_dnnl_fail(dn_builder *b, dnnl_status_t st, const char *what)
{
    if (st == dnnl_out_of_memory)
        b->fatal = true;
    return dn_fail(b, DN_R_LIB, "oneDNN cannot create %s for these shapes and types (%s)", what,
                   dnnl_status2str(st));
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q)
        return false;
    *p = q;
    *cap = nc;
    return true;
}

static bool nomem(dn_builder *b)
{
    b->fatal = true;
    return dn_fail(b, DN_R_LIB, "out of memory while building the oneDNN program");
}

dnnl_data_type_t dn_dt(carve_dtype t)
{
    switch (t) {
    case CARVE_UINT8: return dnnl_u8;
    case CARVE_INT8: return dnnl_s8;
    case CARVE_INT32: return dnnl_s32;
    default: return dnnl_f32;
    }
}

void dn_plain_md(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims) { dn_plain_md_dt(md, nd, dims, dnnl_f32); }

void dn_plain_md_dt(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims, dnnl_data_type_t dt)
{
    dnnl_dims_t st;
    dnnl_dim_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d] > 0 ? dims[d] : 1;
    }
    dnnl_memory_desc_init_by_strides(md, nd, dims, dt, st);
}

void dn_any_md(dnnl_memory_desc_t *md, int nd, const dnnl_dims_t dims)
{
    dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, dnnl_format_tag_any);
}

size_t dn_count(const dn_val *v)
{
    size_t c = 1;
    for (int d = 0; d < v->nd; d++)
        c *= (size_t)v->dims[d];
    return c;
}

dn_val *dn_find(const dn_builder *b, carve_value_id v)
{
    for (size_t i = b->n_vals; i-- > 0;)
        if (b->vals[i].id == v)
            return &b->vals[i];
    return NULL;
}

/* A new entry for value v with its type's dims and a plain layout. */
static dn_val *val_new(dn_builder *b, carve_value_id v)
{
    /* Entries are addressed by pointer while a node is built: never move
     * them. The table is sized for the whole body up front (backend.c);
     * check mode sizes it per node. */
    if (b->n_vals == b->cap_vals) {
        nomem(b);
        return NULL;
    }
    dn_val *x = &b->vals[b->n_vals++];
    memset(x, 0, sizeof *x);
    x->id = v;
    int r = carve_value_rank(b->m, v);
    x->rank = r < 0 ? 0 : r;
    x->nd = x->rank ? x->rank : 1;
    x->dims[0] = 1;
    for (int d = 0; d < x->rank; d++)
        x->dims[d] = carve_value_dim(b->m, v, d).value;
    dn_plain_md_dt(&x->md, x->nd, x->dims, dn_dt(carve_value_dtype(b->m, v)));
    return x;
}

dnnl_memory_t dn_mem_new(dn_builder *b, const dnnl_memory_desc_t *md, void *handle)
{
    if (b->check)
        return NULL;
    dn_prog *p = b->p;
    if (!grow((void **)&p->mems, &p->cap_mems, p->n_mems + 1, sizeof *p->mems)) {
        nomem(b);
        return NULL;
    }
    if (handle == DNNL_MEMORY_ALLOCATE && !b->no_pool && !(handle = dn_pool_alloc(b, md))) {
        nomem(b);
        return NULL;
    }
    dnnl_memory_t mem = NULL;
    dnnl_status_t st = dnnl_memory_create(&mem, md, b->eng, handle);
    if (st != dnnl_success) {
        dn_dnnl_fail(b, st, "a memory");
        return NULL;
    }
    p->mems[p->n_mems++] = mem;
    return mem;
}

dnnl_memory_t dn_const_mem(dn_builder *b, const dnnl_memory_desc_t *md, const void *data)
{
    b->no_pool++;
    dnnl_memory_t mem = dn_mem_new(b, md, DNNL_MEMORY_ALLOCATE);
    b->no_pool--;
    if (!mem)
        return NULL;
    void *h = NULL;
    dnnl_memory_get_data_handle(mem, &h);
    memcpy(h, data, dnnl_memory_desc_get_size(md));
    return mem;
}

bool dn_has_in(const dn_builder *b, carve_node_id n, size_t i)
{
    return i < carve_node_input_count(b->m, n) && carve_node_input(b->m, n, i) != CARVE_NONE;
}

dn_val *dn_in_any(dn_builder *b, carve_node_id n, size_t i)
{
    if (!dn_has_in(b, n, i)) {
        dn_fail(b, DN_R_INPUT, "input %zu is missing", i);
        return NULL;
    }
    carve_value_id v = carve_node_input(b->m, n, i);
    dn_val *x = dn_find(b, v);
    if (x)
        return x;
    x = val_new(b, v);
    if (!x)
        return NULL;
    x->is_const = carve_value_data(b->m, v, NULL) != NULL;
    return x;
}

dn_val *dn_in(dn_builder *b, carve_node_id n, size_t i)
{
    if (!dn_has_in(b, n, i)) {
        dn_fail(b, DN_R_INPUT, "input %zu is missing", i);
        return NULL;
    }
    carve_value_id v = carve_node_input(b->m, n, i);
    if (carve_value_dtype(b->m, v) != CARVE_FLOAT) {
        dn_fail(b, DN_R_DTYPE, "input %zu '%s' is %s; the onednn backend takes float32 here", i,
                carve_value_name(b->m, v), carve_dtype_name(carve_value_dtype(b->m, v)));
        return NULL;
    }
    dn_val *x = dn_find(b, v);
    if (x)
        return x;
    size_t nbytes = 0;
    const void *data = carve_value_data(b->m, v, &nbytes);
    if (!b->check && !data) {
        dn_fail(b, DN_R_INPUT, "input %zu '%s' is neither computed in the partition nor a constant", i,
                carve_value_name(b->m, v));
        b->fatal = true;
        return NULL;
    }
    x = val_new(b, v);
    if (!x)
        return NULL;
    x->is_const = data != NULL;
    if (!b->check) {
        if (nbytes != dn_count(x) * sizeof(float)) {
            b->fatal = true;
            dn_fail(b, DN_R_INPUT, "constant '%s' holds %zu bytes, its shape needs %zu", carve_value_name(b->m, v),
                    nbytes, dn_count(x) * sizeof(float));
            return NULL;
        }
        x->mem = dn_const_mem(b, &x->md, data);
        if (!x->mem)
            return NULL;
    }
    return x;
}

dn_val *dn_out(dn_builder *b, carve_node_id n, size_t i, const dnnl_memory_desc_t *md)
{
    return dn_def(b, carve_node_output(b->m, n, i), md);
}

dnnl_memory_t dn_def_as(dn_builder *b, carve_value_id v, int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md)
{
    dn_val *x = dn_def(b, v, NULL);
    dn_plain_md(md, nd, dims);
    if (!x || b->check)
        return NULL;
    if (dnnl_memory_desc_equal(md, &x->md))
        return x->mem;
    void *h = NULL;
    dnnl_memory_get_data_handle(x->mem, &h);
    return dn_mem_new(b, md, h);
}

dn_val *dn_def(dn_builder *b, carve_value_id v, const dnnl_memory_desc_t *md)
{
    dn_val *x = val_new(b, v);
    if (!x)
        return NULL;
    if (md)
        x->md = *md;
    if (!b->check) {
        x->mem = dn_mem_new(b, &x->md, DNNL_MEMORY_ALLOCATE);
        if (!x->mem)
            return NULL;
    }
    return x;
}

dnnl_memory_t dn_view(dn_builder *b, dn_val *v, int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md_out)
{
    dn_plain_md(md_out, nd, dims);
    if (b->check)
        return NULL;
    dnnl_memory_t src = dn_plain(b, v);
    if (!src)
        return NULL;
    void *h = NULL;
    dnnl_memory_get_data_handle(src, &h);
    return dn_mem_new(b, md_out, h);
}

dn_val *dn_out_view(dn_builder *b, carve_node_id n, size_t i, dn_val *v)
{
    carve_value_id ov = carve_node_output(b->m, n, i);
    dn_val *x = val_new(b, ov);
    if (!x)
        return NULL;
    if (dn_count(x) != dn_count(v)) {
        b->fatal = true;
        dn_fail(b, DN_R_INPUT, "output '%s' has %zu elements, its input %zu", carve_value_name(b->m, ov),
                dn_count(x), dn_count(v));
        return NULL;
    }
    x->is_const = v->is_const;
    x->is_view = true;
    if (!b->check) {
        dnnl_memory_desc_t md;
        x->mem = dn_view(b, v, x->nd, x->dims, &md);
        if (!x->mem)
            return NULL;
        x->md = md;
    }
    return x;
}

static bool run_now(dn_builder *b, dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args)
{
    dnnl_status_t st = dnnl_primitive_execute(prim, b->p->stream, nargs, args);
    if (st == dnnl_success)
        st = dnnl_stream_wait(b->p->stream);
    if (st != dnnl_success) {
        b->fatal = true;
        return dn_dnnl_fail(b, st, "a constant reorder");
    }
    return true;
}

dnnl_memory_t dn_as(dn_builder *b, dn_val *v, const dnnl_memory_desc_t *md)
{
    if (b->check)
        return NULL;
    if (dnnl_memory_desc_equal(md, &v->md))
        return v->mem;
    if (v->alt_mem && dnnl_memory_desc_equal(md, &v->alt_md))
        return v->alt_mem;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, &v->md, b->eng, md, b->eng, NULL);
    if (st != dnnl_success) {
        dn_dnnl_fail(b, st, "a reorder");
        return NULL;
    }
    b->no_pool += v->is_const; /* a constant's copy is filled now */
    dnnl_memory_t dst = dn_mem_new(b, md, DNNL_MEMORY_ALLOCATE);
    b->no_pool -= v->is_const;
    if (!dst) {
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, v->mem}, {DNNL_ARG_DST, dst}};
    if (v->is_const) {
        dnnl_primitive_t prim = NULL;
        st = dnnl_primitive_create(&prim, pd);
        dnnl_primitive_desc_destroy(pd);
        if (st != dnnl_success) {
            dn_dnnl_fail(b, st, "a reorder");
            return NULL;
        }
        bool ok = run_now(b, prim, 2, args);
        dnnl_primitive_destroy(prim);
        if (!ok)
            return NULL;
    } else if (!dn_step_add(b, pd, 2, args)) {
        return NULL;
    }
    v->alt_md = *md;
    v->alt_mem = dst;
    return dst;
}

dnnl_memory_t dn_plain(dn_builder *b, dn_val *v)
{
    dnnl_memory_desc_t md;
    dn_plain_md_dt(&md, v->nd, v->dims, v->md.data_type);
    return dn_as(b, v, &md);
}

const dnnl_memory_desc_t *dn_pd_md(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
    return dnnl_primitive_desc_query_md(pd, q, 0);
}

bool dn_pd(dn_builder *b, const void *op_desc, const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd,
           const char *what)
{
    *pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(pd, op_desc, attr, b->eng, NULL);
    if (st != dnnl_success) {
        *pd = NULL;
        return dn_dnnl_fail(b, st, what);
    }
    return true;
}

bool dn_step_add(dn_builder *b, dnnl_primitive_desc_t pd, int nargs, const dnnl_exec_arg_t *args)
{
    if (b->check) {
        dnnl_primitive_desc_destroy(pd);
        return true;
    }
    dn_prog *p = b->p;
    if (!grow((void **)&p->steps, &p->cap_steps, p->n_steps + 1, sizeof *p->steps) ||
        !grow((void **)&p->prims, &p->cap_prims, p->n_prims + 1, sizeof *p->prims)) {
        dnnl_primitive_desc_destroy(pd);
        return nomem(b);
    }
    dnnl_primitive_t prim = NULL;
    dnnl_status_t st = dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, "a primitive");
    p->prims[p->n_prims++] = prim;
    dn_step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->prim = prim;
    s->nargs = nargs;
    memcpy(s->args, args, (size_t)nargs * sizeof *args);
    return true;
}

bool dn_step_host(dn_builder *b, dn_host_fn fn, void *ctx, int n, const dnnl_memory_t *mems)
{
    if (b->check) {
        free(ctx);
        return true;
    }
    dn_prog *p = b->p;
    if (!grow((void **)&p->steps, &p->cap_steps, p->n_steps + 1, sizeof *p->steps)) {
        free(ctx);
        return nomem(b);
    }
    dn_step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->host = fn;
    s->ctx = ctx;
    for (int i = 0; i < n && i < DN_MAX_ARGS; i++) /* for the pool's liveness */
        s->args[s->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, mems[i]};
    return true;
}

const void *dn_const_data(dn_builder *b, carve_node_id n, size_t i, carve_dtype *dt, size_t *count)
{
    if (!dn_has_in(b, n, i))
        return NULL;
    carve_value_id v = carve_node_input(b->m, n, i);
    size_t nbytes = 0;
    const void *d = carve_value_data(b->m, v, &nbytes);
    if (!d)
        return NULL;
    *dt = carve_value_dtype(b->m, v);
    int bits = carve_dtype_bits(*dt);
    *count = bits >= 8 ? nbytes / (size_t)(bits / 8) : 0;
    return d;
}

bool dn_const_ints(dn_builder *b, carve_node_id n, size_t i, int64_t *out, size_t max, size_t *count)
{
    carve_dtype dt;
    size_t c = 0;
    const void *d = dn_const_data(b, n, i, &dt, &c);
    if (!d || (dt != CARVE_INT64 && dt != CARVE_INT32) || c > max)
        return false;
    for (size_t k = 0; k < c; k++) {
        if (dt == CARVE_INT64)
            memcpy(&out[k], (const char *)d + 8 * k, 8);
        else {
            int32_t x;
            memcpy(&x, (const char *)d + 4 * k, 4);
            out[k] = x;
        }
    }
    *count = c;
    return true;
}

bool dn_const_floats(dn_builder *b, carve_node_id n, size_t i, float *out, size_t max, size_t *count)
{
    carve_dtype dt;
    size_t c = 0;
    const void *d = dn_const_data(b, n, i, &dt, &c);
    if (!d || dt != CARVE_FLOAT || c > max)
        return false;
    memcpy(out, d, c * sizeof(float));
    *count = c;
    return true;
}

carve_node_id dn_sole_consumer(const dn_builder *b, carve_value_id v)
{
    if (b->check)
        return CARVE_NONE;
    for (size_t i = 0; i < carve_graph_output_count(b->m, b->g); i++)
        if (carve_graph_output(b->m, b->g, i) == v)
            return CARVE_NONE;
    carve_node_id found = CARVE_NONE;
    size_t uses = 0;
    for (size_t k = 0; k < b->n_nodes; k++) {
        carve_node_id n = b->nodes[k];
        for (size_t i = 0; i < carve_node_input_count(b->m, n); i++)
            if (carve_node_input(b->m, n, i) == v) {
                uses++;
                found = n;
            }
    }
    return uses == 1 ? found : CARVE_NONE;
}

bool dn_available(const dn_builder *b, carve_value_id v)
{
    return dn_find(b, v) != NULL || carve_value_data(b->m, v, NULL) != NULL;
}

void dn_mark_done(dn_builder *b, carve_node_id n)
{
    for (size_t k = 0; k < b->n_nodes; k++)
        if (b->nodes[k] == n)
            b->done[k] = true;
}

int64_t dn_attr_i(const dn_builder *b, carve_node_id n, const char *name, int64_t dflt)
{
    int64_t v;
    return carve_node_attr_int(b->m, n, name, &v) ? v : dflt;
}

float dn_attr_f(const dn_builder *b, carve_node_id n, const char *name, float dflt)
{
    float v;
    return carve_node_attr_float(b->m, n, name, &v) ? v : dflt;
}

const char *dn_attr_s(const dn_builder *b, carve_node_id n, const char *name, const char *dflt, char *buf,
                      size_t size)
{
    size_t len = 0;
    const char *s = carve_node_attr_string(b->m, n, name, &len);
    if (!s)
        s = dflt, len = strlen(dflt);
    if (len >= size)
        len = size - 1;
    memcpy(buf, s, len);
    buf[len] = 0;
    return buf;
}

bool dn_attr_has(const dn_builder *b, carve_node_id n, const char *name)
{
    for (size_t i = 0; i < carve_node_attr_count(b->m, n); i++)
        if (!strcmp(carve_node_attr_name(b->m, n, i), name))
            return true;
    return false;
}

bool dn_pd_is_ref(const_dnnl_primitive_desc_t pd)
{
    const char *s = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) == dnnl_success && s &&
           !strncmp(s, "ref", 3);
}

bool dn_md_is_plain(const dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t p;
    dn_plain_md(&p, md->ndims, md->dims);
    return dnnl_memory_desc_equal(&p, md) != 0;
}

bool dn_last_reader(const dn_builder *b, carve_value_id v, carve_node_id reader)
{
    if (b->check || reader == CARVE_NONE)
        return false;
    for (size_t i = 0; i < carve_graph_output_count(b->m, b->g); i++)
        if (carve_graph_output(b->m, b->g, i) == v)
            return false;
    bool reads = false;
    for (size_t k = 0; k < b->n_nodes; k++) {
        carve_node_id n = b->nodes[k];
        size_t uses = 0;
        for (size_t i = 0; i < carve_node_input_count(b->m, n); i++)
            uses += carve_node_input(b->m, n, i) == v;
        if (!uses)
            continue;
        if (n == reader) {
            reads = true;
            continue;
        }
        /* another reader: built already, and no view (a reshape's output
         * shares v's buffer and may be read later) */
        if ((k >= b->cur && !b->done[k]) || dn_op_find(carve_node_op(b->m, n)) == dn_op_reshape)
            return false;
    }
    return reads;
}

dn_val *dn_def_inplace(dn_builder *b, carve_value_id v, dn_val *src, carve_node_id reader,
                       const dnnl_memory_desc_t *md)
{
    if (b->check || !src || src->is_const || src->is_view || !src->mem || !dnnl_memory_desc_equal(md, &src->md) ||
        !dn_last_reader(b, src->id, reader))
        return dn_def(b, v, md);
    dn_val *y = dn_def(b, v, NULL);
    if (!y)
        return NULL;
    y->md = *md;
    y->mem = src->mem; /* src is dead after this node: its buffer becomes the output's */
    return y;
}

bool dn_step_unary(dn_builder *b, dnnl_status_t st, const void *op_desc, const char *what, dnnl_memory_t src,
                   carve_value_id yv, int n_extra, const dnnl_exec_arg_t *extra)
{
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, what);
    dnnl_primitive_desc_t pd;
    if (!dn_pd(b, op_desc, NULL, &pd, what))
        return false;
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dn_val *y = src ? dn_def(b, yv, dn_pd_md(pd, dnnl_query_dst_md)) : NULL;
    if (!y || n_extra > DN_MAX_ARGS - 2) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[DN_MAX_ARGS] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, y->mem}};
    if (n_extra)
        memcpy(args + 2, extra, (size_t)n_extra * sizeof *args);
    return dn_step_add(b, pd, 2 + n_extra, args);
}

bool dn_view_reorder(dn_builder *b, dn_val *x, const dnnl_memory_desc_t *view, carve_value_id yv,
                     const dnnl_memory_desc_t *ymd, const char *what)
{
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, view, b->eng, ymd, b->eng, NULL);
    if (st != dnnl_success)
        return dn_dnnl_fail(b, st, what);
    if (b->check)
        return dn_step_add(b, pd, 0, NULL);
    dnnl_memory_t base = dn_plain(b, x);
    void *h = NULL;
    if (base)
        dnnl_memory_get_data_handle(base, &h);
    dnnl_memory_t xm = base ? dn_mem_new(b, view, h) : NULL;
    dn_val *y = xm ? dn_def(b, yv, ymd) : NULL;
    if (!y) {
        dnnl_primitive_desc_destroy(pd);
        return false;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, y->mem}};
    return dn_step_add(b, pd, 2, args);
}

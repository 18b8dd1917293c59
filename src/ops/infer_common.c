/* infer_common.c: inference shared by many ops (same type, broadcasting,
 * non-tensor), and the two calls every inference function makes: read an
 * input's type, set an output's. Op-specific inference lives beside the
 * op's kernel; the pass that walks the model is src/passes/infer.c. */
#include "ops.h"

#include <string.h>

/* The same dims, dim by dim (a symbolic dim by its name's pointer). */
static bool same_dims(const carve_dim *a, const carve_dim *b, int rank)
{
    for (int d = 0; d < rank; d++)
        if (a[d].value != b[d].value || a[d].param != b[d].param)
            return false;
    return true;
}

carve_status cv_infer_set(cv_ictx *c, uint32_t i, carve_dtype dtype, int rank, const carve_dim *dims)
{
    carve_model *m = c->m;
    const cv_node *n = &m->nodes[c->node];
    if (i >= n->n_out || n->out[i] == CARVE_NONE)
        return CARVE_OK;
    cv_value *v = &m->values[n->out[i]];
    cv_type *t = &v->type;
    if (t->kind == CARVE_TYPE_OTHER)
        return CARVE_OK;
    if (t->kind != CARVE_TYPE_TENSOR && rank >= 0 && dims)
        return carve_value_set_type(m, n->out[i], dtype, rank, dims); /* nothing declared: nothing to merge */
    if (t->kind == CARVE_TYPE_TENSOR && dtype && t->dtype == dtype && rank >= 0 && t->rank == rank && dims &&
        same_dims(t->dims, dims, rank))
        return CARVE_OK; /* what it has already (each pass infers again): nothing to check or merge */
    if (t->kind == CARVE_TYPE_TENSOR) {
        if (t->dtype && dtype && t->dtype != dtype)
            return cv_ierr(c, "output %u '%s' is %s by inference but the model declares %s", i, v->name,
                           carve_dtype_name(dtype), carve_dtype_name(t->dtype));
        if (t->rank >= 0 && rank >= 0 && t->rank != rank)
            return cv_ierr(c, "output %u '%s' has rank %d by inference but the model declares rank %d", i, v->name,
                           rank, t->rank);
        for (int d = 0; t->rank >= 0 && rank >= 0 && dims && d < rank; d++)
            if (t->dims[d].value >= 0 && dims[d].value >= 0 && t->dims[d].value != dims[d].value)
                return cv_ierr(c, "output %u '%s' dim %d is %lld by inference but the model declares %lld", i, v->name,
                               d, (long long)dims[d].value, (long long)t->dims[d].value);
    }
    /* Merge: what inference knows wins, declared names fill its gaps. */
    carve_dim merged[CARVE_MAX_RANK];
    int r = rank >= 0 ? rank : t->kind == CARVE_TYPE_TENSOR ? t->rank : -1;
    for (int d = 0; d < r && r <= CARVE_MAX_RANK; d++) {
        carve_dim x = rank >= 0 && dims ? dims[d] : (carve_dim){-1, NULL};
        if (x.value < 0 && !x.param && t->kind == CARVE_TYPE_TENSOR && t->rank == r)
            x = t->dims[d];
        merged[d] = x;
    }
    carve_dtype dt = dtype ? dtype : t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED;
    if (t->kind == CARVE_TYPE_TENSOR && t->dtype == dt && t->rank == r) {
        /* nothing new (each lowering round infers again): keep it as is */
        bool same = true;
        for (int d = 0; d < r && same; d++)
            same = t->dims[d].value == merged[d].value &&
                   (t->dims[d].param == merged[d].param ||
                    (t->dims[d].param && merged[d].param && !strcmp(t->dims[d].param, merged[d].param)));
        if (same)
            return CARVE_OK;
    }
    return carve_value_set_type(m, n->out[i], dt, r, merged);
}

carve_status cv_infer_like(cv_ictx *c, uint32_t out, uint32_t in, carve_dtype dtype)
{
    const cv_type *t = cv_infer_in(c, in);
    if (!t || t->kind != CARVE_TYPE_TENSOR)
        return cv_infer_set(c, out, dtype, -1, NULL);
    return cv_infer_set(c, out, dtype ? dtype : t->dtype, t->rank, t->dims);
}

carve_status i_same(cv_ictx *c) { return cv_infer_like(c, 0, 0, CARVE_UNDEFINED); }
carve_status i_same_bool(cv_ictx *c) { return cv_infer_like(c, 0, 0, CARVE_BOOL); }
carve_status i_nontensor(cv_ictx *c) { (void)c; return CARVE_OK; }

/* Broadcasts inputs [first, first+count) symbolically. */
static carve_status bcast(cv_ictx *c, uint32_t first, uint32_t count, carve_dtype dtype)
{
    const cv_node *n = &c->m->nodes[c->node];
    if (count == 2 && first + 2 <= n->n_in) {
        /* two inputs of one shape (an elementwise graph's usual case): the
         * loop below would give that shape, dim by dim */
        const cv_type *a = cv_infer_in(c, first), *b = cv_infer_in(c, first + 1);
        if (a && b && a->kind == CARVE_TYPE_TENSOR && b->kind == CARVE_TYPE_TENSOR && a->rank >= 0 &&
            a->rank == b->rank && same_dims(a->dims, b->dims, a->rank)) {
            bool plain = true; /* known dims, or symbolic ones with a name */
            for (int d = 0; d < a->rank && plain; d++)
                plain = a->dims[d].value >= 0 || a->dims[d].param;
            if (plain)
                return cv_infer_set(c, 0, dtype, a->rank, a->dims);
        }
    }
    int rank = 0;
    carve_dim dims[CARVE_MAX_RANK];
    for (uint32_t i = first; i < first + count && i < n->n_in; i++) {
        const cv_type *t = cv_infer_in(c, i);
        if (!t || t->kind != CARVE_TYPE_TENSOR || t->rank < 0)
            return cv_infer_set(c, 0, dtype, -1, NULL);
        int r = t->rank > rank ? t->rank : rank;
        carve_dim nd[CARVE_MAX_RANK];
        for (int d = 0; d < r; d++) {
            carve_dim a = d < r - rank ? (carve_dim){1, NULL} : dims[d - (r - rank)];
            carve_dim b = d < r - t->rank ? (carve_dim){1, NULL} : t->dims[d - (r - t->rank)];
            if (a.value == 1)
                nd[d] = b;
            else if (b.value == 1)
                nd[d] = a;
            else if (a.value >= 0 && b.value >= 0) {
                if (a.value != b.value)
                    return cv_ierr(c, "input shapes do not broadcast (dim %lld against %lld)", (long long)a.value,
                                   (long long)b.value);
                nd[d] = a;
            } else if (a.value >= 0)
                nd[d] = a;
            else if (b.value >= 0)
                nd[d] = b;
            else if (a.param && b.param && !strcmp(a.param, b.param))
                nd[d] = a;
            else
                nd[d] = (carve_dim){-1, NULL};
        }
        memcpy(dims, nd, (size_t)r * sizeof *nd);
        rank = r;
    }
    return cv_infer_set(c, 0, dtype, rank, dims);
}

carve_status i_bcast(cv_ictx *c)
{
    const cv_type *t = cv_infer_in(c, 0);
    return bcast(c, 0, c->m->nodes[c->node].n_in, t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED);
}

carve_status i_bcast_bool(cv_ictx *c) { return bcast(c, 0, c->m->nodes[c->node].n_in, CARVE_BOOL); }

carve_status i_where(cv_ictx *c)
{
    const cv_type *t = cv_infer_in(c, 1);
    return bcast(c, 0, 3, t && t->kind == CARVE_TYPE_TENSOR ? t->dtype : CARVE_UNDEFINED);
}

carve_status cv_infer_dims(cv_ictx *c, cv_dims_fn dims)
{
    const cv_type *x = cv_infer_in(c, 0);
    if (!x || x->kind != CARVE_TYPE_TENSOR || x->rank < 0)
        return cv_infer_set(c, 0, x && x->kind == CARVE_TYPE_TENSOR ? x->dtype : CARVE_UNDEFINED, -1, NULL);
    int rank = x->rank;
    carve_dim d[CARVE_MAX_RANK];
    carve_status s = dims(c, x, &rank, d);
    return s ? s : cv_infer_set(c, 0, x->dtype, rank, d);
}

/* d_layout.c: decompositions of the composite layout ops, DepthToSpace and
 * SpaceToDepth, into Reshape + Transpose + Reshape (the 6-D views of
 * k_layout.c's kernels, k_shape.h). */
#include "k_shape.h"

#include <string.h>

static carve_value_id p_reshape(cv_rw *rw, carve_value_id x, carve_value_id shape, carve_value_id out)
{
    carve_value_id ins[2] = {x, shape};
    return cv_rw_piece(rw, "Reshape", "reshape", 2, ins, out);
}

static carve_value_id p_gather(cv_rw *rw, carve_value_id sh, size_t n, const int64_t *idx)
{
    carve_value_id ins[2] = {sh, cv_rw_ints(rw, "idx", n, idx)};
    return cv_rw_piece(rw, "Gather", "gather", 2, ins, CARVE_NONE);
}

static carve_value_id p_concat(cv_rw *rw, uint32_t n, const carve_value_id *ins)
{
    carve_value_id v = cv_rw_piece(rw, "Concat", "concat", n, ins, CARVE_NONE);
    if (v != CARVE_NONE && carve_node_set_attr_int(rw->m, rw->m->values[v].producer, "axis", 0))
        return CARVE_NONE;
    return v;
}

static carve_value_id p_shape(cv_rw *rw, carve_value_id x)
{
    return cv_rw_piece(rw, "Shape", "shape_of", 1, &x, CARVE_NONE);
}

static carve_value_id p_transpose(cv_rw *rw, carve_value_id x, const int *perm)
{
    carve_value_id v = cv_rw_piece(rw, "Transpose", "transpose", 1, &x, CARVE_NONE);
    int64_t p[6];
    for (int i = 0; i < 6; i++)
        p[i] = perm[i];
    if (v != CARVE_NONE && carve_node_set_attr_ints(rw->m, rw->m->values[v].producer, "perm", 6, p))
        return CARVE_NONE;
    return v;
}

static carve_status rw_fail(cv_rw *rw)
{
    carve_status s = carve_errcode(rw->m->ctx);
    return s ? s : cv_error(rw->m->ctx, CARVE_ERR_NOMEM, "out of memory decomposing node '%s'",
                            rw->m->nodes[rw->node].name);
}

static carve_status rw_refuse(cv_rw *rw, carve_status code, const char *why)
{
    return cv_node_err(rw->m, rw->node, code, "cannot decompose: ", "%s", why);
}

/* v reshaped into y as [its dims at a[0..na)], -1, [its dims at b[0..nb)]]:
 * the dims between merged into one, without arithmetic on the shape. */
static carve_value_id merge_mid(cv_rw *rw, carve_value_id v, size_t na, const int64_t *a, size_t nb,
                                const int64_t *b, carve_value_id y)
{
    static const int64_t neg[1] = {-1};
    carve_value_id sh = p_shape(rw, v);
    carve_value_id fin[3] = {p_gather(rw, sh, na, a), cv_rw_ints(rw, "dims", 1, neg), p_gather(rw, sh, nb, b)};
    return p_reshape(rw, v, p_concat(rw, 3, fin), y);
}

/* Reshape + Transpose + Reshape. Static shapes (the batch may be symbolic:
 * Reshape's 0 copies it) use constant shapes; otherwise the shapes are
 * computed with Shape/Gather/Concat, splitting and merging dims with -1 and
 * 0 so that no arithmetic op is needed. */
static carve_status space_decompose(cv_rw *rw, bool to_space)
{
    carve_model *m = rw->m;
    carve_node_id nid = rw->node;
    carve_value_id x = m->nodes[nid].in[0], y = m->nodes[nid].out[0];
    int64_t opset = carve_model_opset(m, "");
    int64_t b = cv_attr_i(m, nid, "blocksize", 0);
    if (b < 1 || b > INT32_MAX)
        return rw_refuse(rw, CARVE_ERR_INVALID, "attribute 'blocksize' must be at least 1");
    bool ok = true, dcr = to_space ? sh_space_dcr(m, nid, opset, &ok) : false;
    if (!ok)
        return rw_refuse(rw, CARVE_ERR_INVALID, "mode is not DCR or CRD");
    if (opset < 5)
        return rw_refuse(rw, CARVE_ERR_UNSUPPORTED, "Reshape takes its shape as an input only from opset 5");
    const cv_type *t = &m->values[x].type;
    if (t->kind == CARVE_TYPE_TENSOR && t->rank >= 0 && t->rank != 4)
        return rw_refuse(rw, CARVE_ERR_INVALID, "the input must have rank 4");
    bool stat = t->kind == CARVE_TYPE_TENSOR && t->rank == 4 && t->dims[1].value >= 0 && t->dims[2].value >= 0 &&
                t->dims[3].value >= 0;
    const int *perm = sh_space_perm(to_space, dcr);
    carve_value_id r6, tr;
    if (stat) {
        int64_t N = t->dims[0].value >= 0 ? t->dims[0].value : 0, C = t->dims[1].value, H = t->dims[2].value,
                W = t->dims[3].value, s1[6], s2[4];
        if (to_space) {
            if (C % (b * b))
                return rw_refuse(rw, CARVE_ERR_INVALID, "channels are not a multiple of blocksize^2");
            int64_t c2 = C / (b * b), a[6] = {N, b, b, c2, H, W}, q[6] = {N, c2, b, b, H, W}, f[4] = {N, c2, H * b, W * b};
            memcpy(s1, dcr ? a : q, sizeof s1);
            memcpy(s2, f, sizeof s2);
        } else {
            if (H % b || W % b)
                return rw_refuse(rw, CARVE_ERR_INVALID, "height and width must be multiples of blocksize");
            int64_t a[6] = {N, C, H / b, b, W / b, b}, f[4] = {N, C * b * b, H / b, W / b};
            memcpy(s1, a, sizeof s1);
            memcpy(s2, f, sizeof s2);
        }
        r6 = p_reshape(rw, x, cv_rw_ints(rw, "shape", 6, s1), CARVE_NONE);
        tr = p_transpose(rw, r6, perm);
        if (p_reshape(rw, tr, cv_rw_ints(rw, "shape", 4, s2), y) == CARVE_NONE)
            return rw_fail(rw);
        return CARVE_OK;
    }
    static const int64_t i0[1] = {0}, i01[2] = {0, 1}, i3[1] = {3}, i4[1] = {4}, i23[2] = {2, 3}, i45[2] = {4, 5};
    carve_value_id sh = p_shape(rw, x);
    if (to_space) {
        /* [N, C, H, W] -> [N, b, b, -1, H, W] (DCR) or [N, -1, b, b, H, W] (CRD) */
        int64_t mid_dcr[3] = {b, b, -1}, mid_crd[3] = {-1, b, b};
        carve_value_id parts[3] = {p_gather(rw, sh, 1, i0), cv_rw_ints(rw, "dims", 3, dcr ? mid_dcr : mid_crd),
                                   p_gather(rw, sh, 2, i23)};
        r6 = p_reshape(rw, x, p_concat(rw, 3, parts), CARVE_NONE);
        tr = p_transpose(rw, r6, perm); /* [N, C', H, b, W, b] */
        /* merge (W, b) with a -1, then (H, b) with a -1 beside the known W*b */
        static const int64_t m5[5] = {0, 0, 0, 0, -1};
        carve_value_id r5 = p_reshape(rw, tr, cv_rw_ints(rw, "shape", 5, m5), CARVE_NONE);
        return merge_mid(rw, r5, 2, i01, 1, i4, y) == CARVE_NONE ? rw_fail(rw) : CARVE_OK;
    }
    /* [N, C, H, W] -> [N, C, -1, b, W] -> [N, C, H', b, -1, b] */
    int64_t mid[2] = {-1, b};
    carve_value_id parts[3] = {p_gather(rw, sh, 2, i01), cv_rw_ints(rw, "dims", 2, mid), p_gather(rw, sh, 1, i3)};
    carve_value_id r5 = p_reshape(rw, x, p_concat(rw, 3, parts), CARVE_NONE);
    int64_t m6[6] = {0, 0, 0, 0, -1, b};
    r6 = p_reshape(rw, r5, cv_rw_ints(rw, "shape", 6, m6), CARVE_NONE);
    tr = p_transpose(rw, r6, perm); /* [N, b, b, C, H', W'] */
    return merge_mid(rw, tr, 1, i0, 2, i45, y) == CARVE_NONE ? rw_fail(rw) : CARVE_OK;
}

carve_status d_depthtospace(cv_rw *rw) { return space_decompose(rw, true); }
carve_status d_spacetodepth(cv_rw *rw) { return space_decompose(rw, false); }

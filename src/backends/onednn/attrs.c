/*
 * attrs.c: the list attributes carve.h has no getter for (strides, pads,
 * perm, axes...), read from carve's own node (the backend is built in),
 * and the window attributes Conv, ConvTranspose and pooling share.
 */
#include <string.h>

#include "dn.h"
#include "ir/ir.h"

int dn_attr_ints(const dn_builder *b, carve_node_id n, const char *name, int64_t *out, int max)
{
    const cv_attr *a = cv_node_attr_find(b->m, n, name);
    if (!a || a->kind != CARVE_ATTR_INTS)
        return -1;
    int c = (int)a->n;
    for (int i = 0; i < c && i < max; i++)
        out[i] = a->u.ints[i];
    return c > max ? max + 1 : c;
}

bool dn_read_window(dn_builder *b, carve_node_id n, int k, dnnl_dim_t *strides, dnnl_dim_t *dil, dnnl_dim_t *pl,
                    dnnl_dim_t *pr, int *same)
{
    int64_t v[16];
    int c;
    *same = 0;
    for (int d = 0; d < k; d++)
        strides[d] = 1, dil[d] = 0, pl[d] = 0, pr[d] = 0;
    if ((c = dn_attr_ints(b, n, "strides", v, 16)) >= 0) {
        if (c != k)
            return dn_fail(b, DN_R_ATTR, "attribute strides has %d values, the input has %d spatial dims", c, k);
        for (int d = 0; d < k; d++)
            strides[d] = v[d];
    }
    if ((c = dn_attr_ints(b, n, "dilations", v, 16)) >= 0) {
        if (c != k)
            return dn_fail(b, DN_R_ATTR, "attribute dilations has %d values, the input has %d spatial dims", c, k);
        for (int d = 0; d < k; d++) {
            if (v[d] < 1)
                return dn_fail(b, DN_R_ATTR, "attribute dilations holds %lld; allowed: >= 1", (long long)v[d]);
            dil[d] = v[d] - 1; /* oneDNN counts the holes */
        }
    }
    char ap[32];
    dn_attr_s(b, n, "auto_pad", "NOTSET", ap, sizeof ap);
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        *same = ap[5] == 'U' ? 'U' : 'L';
    } else if (!strcmp(ap, "NOTSET")) {
        if ((c = dn_attr_ints(b, n, "pads", v, 16)) >= 0) {
            if (c != 2 * k)
                return dn_fail(b, DN_R_ATTR, "attribute pads has %d values, expected %d", c, 2 * k);
            for (int d = 0; d < k; d++)
                pl[d] = v[d], pr[d] = v[k + d];
        }
    } else if (strcmp(ap, "VALID")) {
        return dn_fail(b, DN_R_ATTR, "attribute auto_pad is '%s'; allowed: NOTSET, VALID, SAME_UPPER, SAME_LOWER", ap);
    }
    return true;
}

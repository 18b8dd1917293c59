/*
 * attrs.c: the list attributes carve.h has no getter for (strides, pads,
 * perm, axes...), read from carve's own node (the backend is built in).
 */
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

/* units.c: QDQ node units, for targets with "qdq_node_units" (htp, lpai).
 *
 * A quantized model as exporters write it surrounds each op with
 * DequantizeLinear nodes on its inputs and a QuantizeLinear on its output.
 * A backend compiles such a group as one quantized op, so the group, the
 * node unit, is placed as one: all of it in one partition or all of it on
 * CPU, never split across a partition boundary.
 *
 * Membership (QNN's rule): a DequantizeLinear joins the unit of its
 * consumer when that consumer is its only use (not a graph output, not read
 * by a subgraph); a QuantizeLinear with a constant scale and zero point
 * joins the unit of its producer when it is the only use of that output. A
 * DequantizeLinear straight into a QuantizeLinear (a requantization) is a
 * unit of two. A DequantizeLinear's consumer that is itself a
 * DequantizeLinear, or a QuantizeLinear's producer that is a
 * QuantizeLinear, starts a unit of its own.
 *
 * Partitioning then runs on the graph with every unit contracted to one node.
 * That graph has no cycle: a DequantizeLinear member has no use outside its
 * unit, and a path that leaves a unit can only come back into a member's
 * inputs: into a DequantizeLinear's or the op's, that is a cycle of the
 * original graph; into a QuantizeLinear's data input, impossible (it is the
 * op's output); into its scale or zero point, excluded by their being
 * constants. */
#include "partition.h"

#include <stdlib.h>
#include <string.h>

static uint32_t find(uint32_t *up, uint32_t x)
{
    while (up[x] != x) {
        up[x] = up[up[x]];
        x = up[x];
    }
    return x;
}

static void join(uint32_t *up, uint32_t a, uint32_t b)
{
    a = find(up, a);
    b = find(up, b);
    if (a != b)
        up[a > b ? a : b] = a < b ? a : b; /* the earlier node represents the unit */
}

carve_status cv_qdq_units(const carve_model *m, carve_graph_id g, uint32_t *unit_of, uint32_t *n_units)
{
    const cv_graph *gr = &m->graphs[g];
    uint32_t n = gr->nodes.n;
    for (uint32_t i = 0; i < n; i++)
        unit_of[i] = i;
    *n_units = n;
    bool any = false;
    for (uint32_t i = 0; i < n && !any; i++) {
        const cv_node *x = &m->nodes[gr->nodes.v[i]];
        bool dq = cv_node_is(x, "DequantizeLinear"), q = cv_node_is(x, "QuantizeLinear");
        any = dq || q;
    }
    if (!any)
        return CARVE_OK;
    /* uses per value of this graph: node inputs, subgraph captures, outputs;
     * user = the position of the last node reading it */
    size_t cap = (size_t)(m->n_values > n ? m->n_values : n) + 1;
    uint32_t *uses = cv_malloc(cap * sizeof *uses);
    uint32_t *user = cv_malloc(cap * sizeof *user);
    cv_ids reads = {0};
    carve_status st = CARVE_OK;
    if (!uses || !user)
        goto nomem;
    memset(uses, 0, cap * sizeof *uses);
    for (uint32_t i = 0; i < n; i++) {
        carve_node_id id = gr->nodes.v[i];
        const cv_node *x = &m->nodes[id];
        reads.n = 0;
        for (uint32_t k = 0; k < x->n_in; k++)
            if (x->in[k] != CARVE_NONE && !cv_ids_push(&reads, x->in[k]))
                goto nomem;
        uint32_t direct = reads.n;
        for (uint32_t j = 0; j < x->n_attr; j++) {
            const cv_attr *a = &x->attr[j];
            uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
            for (uint32_t k = 0; k < cnt; k++)
                if (!cv_graph_captures(m, a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k], &reads))
                    goto nomem;
        }
        for (uint32_t k = 0; k < reads.n; k++) {
            uses[reads.v[k]] += k < direct ? 1 : 2; /* a value a body captures is never inner */
            user[reads.v[k]] = i;
        }
    }
    for (uint32_t k = 0; k < gr->outputs.n; k++)
        uses[gr->outputs.v[k]] += 2; /* a graph output is never a unit's inner value */
    for (uint32_t i = 0; i < n; i++) {
        const cv_node *x = &m->nodes[gr->nodes.v[i]];
        bool dq = cv_node_is(x, "DequantizeLinear"), q = cv_node_is(x, "QuantizeLinear");
        if (dq && x->n_out && x->out[0] != CARVE_NONE && uses[x->out[0]] == 1 &&
            !cv_node_is(&m->nodes[gr->nodes.v[user[x->out[0]]]], "DequantizeLinear"))
            join(unit_of, i, user[x->out[0]]);
        if (q || dq)
            continue;
        for (uint32_t k = 0; k < x->n_out; k++) {
            carve_value_id v = x->out[k];
            if (v == CARVE_NONE || uses[v] != 1)
                continue;
            const cv_node *q_node = &m->nodes[gr->nodes.v[user[v]]];
            bool ok = cv_node_is(q_node, "QuantizeLinear") && q_node->n_in && q_node->in[0] == v;
            /* a runtime scale or zero point could be made from another
             * output of x: joining would close a cycle */
            for (uint32_t p = 1; ok && p < q_node->n_in; p++)
                ok = q_node->in[p] == CARVE_NONE || cv_value_is_const(m, q_node->in[p]);
            if (ok)
                join(unit_of, i, user[v]);
        }
    }
    /* number the units by their first node (a root is its unit's first
     * node, so it is numbered before its members; `uses` is free again) */
    uint32_t nu = 0;
    for (uint32_t i = 0; i < n; i++)
        unit_of[i] = find(unit_of, i);
    for (uint32_t i = 0; i < n; i++)
        uses[i] = unit_of[i] == i ? nu++ : uses[unit_of[i]];
    memcpy(unit_of, uses, (size_t)n * sizeof *unit_of);
    *n_units = nu;
    goto done;
nomem:
    st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory finding QDQ node units");
done:
    cv_free(uses);
    cv_free(user);
    cv_ids_free(&reads);
    return st;
}

void cv_unit_inner(const carve_model *m, carve_graph_id g, const uint32_t *pos, const uint32_t *unit_of, bool units,
                   cv_unit_inner_mask *inner)
{
    const cv_graph *gr = &m->graphs[g];
    for (uint32_t i = 0; i < gr->nodes.n; i++)
        inner[i] = (cv_unit_inner_mask){0, 0, CARVE_NONE};
    for (uint32_t i = 0; i < gr->nodes.n; i++) {
        const cv_node *x = &m->nodes[gr->nodes.v[i]];
        bool q = cv_node_is(x, "QuantizeLinear");
        if (q || cv_node_is(x, "DequantizeLinear"))
            inner[i].in |= 2; /* the scale: a parameter of the encoding */
        /* out_q: what rules.c's fixed_enc16 would otherwise find by scanning
         * the graph for every Sigmoid and Tanh */
        carve_value_id q_in = q && x->n_in >= 2 ? x->in[0] : CARVE_NONE;
        carve_node_id qp = q_in != CARVE_NONE ? m->values[q_in].producer : CARVE_NONE;
        if (qp != CARVE_NONE && m->nodes[qp].graph == g && m->values[q_in].out_index == 0 &&
            inner[pos[qp]].out_q == CARVE_NONE)
            inner[pos[qp]].out_q = gr->nodes.v[i];
        for (uint32_t k = 0; units && k < x->n_in && k < 64; k++) {
            carve_value_id v = x->in[k];
            carve_node_id p = v != CARVE_NONE ? m->values[v].producer : CARVE_NONE;
            if (p == CARVE_NONE || m->nodes[p].graph != g || unit_of[pos[p]] != unit_of[i])
                continue;
            inner[i].in |= (uint64_t)1 << k;
            if (m->values[v].out_index < 64)
                inner[pos[p]].out |= (uint64_t)1 << m->values[v].out_index;
        }
    }
}

uint32_t cv_partition_units(const cv_dag *d, const uint32_t *unit_of, uint32_t nu, uint32_t *part)
{
    if (nu == d->n)
        return cv_partition_levels(d, part);
    uint32_t n = d->n, n_edges = d->pred_start[n];
    /* unit edges (duplicates are harmless), successors for Kahn's order */
    uint32_t *indeg = cv_malloc(((size_t)nu + 1) * sizeof *indeg);
    uint32_t *succ_start = cv_malloc(((size_t)nu + 2) * sizeof *succ_start);
    uint32_t *succ = cv_malloc(((size_t)n_edges + 1) * sizeof *succ);
    uint32_t *order = cv_malloc(((size_t)nu + 1) * sizeof *order); /* topological position -> unit */
    uint32_t *rank = cv_malloc(((size_t)nu + 1) * sizeof *rank);   /* unit -> position */
    uint32_t *member_start = cv_malloc(((size_t)nu + 2) * sizeof *member_start);
    uint32_t *members = cv_malloc(((size_t)n + 1) * sizeof *members);
    uint32_t *pstart = cv_malloc(((size_t)nu + 1) * sizeof *pstart);
    uint32_t *pred = cv_malloc(((size_t)n_edges + 1) * sizeof *pred);
    uint8_t *sup = cv_malloc((size_t)nu + 1), *rr = cv_malloc((size_t)nu + 1);
    uint32_t *upart = cv_malloc(((size_t)nu + 1) * sizeof *upart);
    uint32_t count = CARVE_NONE;
    if (!indeg || !succ_start || !succ || !order || !rank || !member_start || !members || !pstart || !pred ||
        !sup || !rr || !upart)
        goto done;
    memset(indeg, 0, ((size_t)nu + 1) * sizeof *indeg);
    memset(succ_start, 0, ((size_t)nu + 2) * sizeof *succ_start);
    memset(member_start, 0, ((size_t)nu + 2) * sizeof *member_start);
    for (uint32_t i = 0; i < n; i++) {
        member_start[unit_of[i] + 2]++;
        for (uint32_t k = d->pred_start[i]; k < d->pred_start[i + 1]; k++)
            if (unit_of[d->pred[k]] != unit_of[i]) {
                succ_start[unit_of[d->pred[k]] + 2]++;
                indeg[unit_of[i]]++;
            }
    }
    for (uint32_t u = 0; u < nu; u++) {
        succ_start[u + 2] += succ_start[u + 1];
        member_start[u + 2] += member_start[u + 1];
    }
    for (uint32_t i = 0; i < n; i++) {
        members[member_start[unit_of[i] + 1]++] = i;
        for (uint32_t k = d->pred_start[i]; k < d->pred_start[i + 1]; k++)
            if (unit_of[d->pred[k]] != unit_of[i])
                succ[succ_start[unit_of[d->pred[k]] + 1]++] = unit_of[i];
    }
    /* Kahn's order (any topological order gives the same levels) */
    uint32_t head = 0, tail = 0;
    for (uint32_t u = 0; u < nu; u++)
        if (!indeg[u])
            order[tail++] = u;
    while (head < tail) {
        uint32_t u = order[head++];
        for (uint32_t k = succ_start[u]; k < succ_start[u + 1]; k++)
            if (!--indeg[succ[k]])
                order[tail++] = succ[k];
    }
    if (tail != nu)
        abort(); /* a contracted unit made a cycle: the membership rule is broken */
    for (uint32_t t = 0; t < nu; t++)
        rank[order[t]] = t;
    /* the contracted graph in that order */
    uint32_t e = 0;
    for (uint32_t t = 0; t < nu; t++) {
        uint32_t u = order[t];
        pstart[t] = e;
        sup[t] = 1;
        rr[t] = 0;
        for (uint32_t j = member_start[u]; j < member_start[u + 1]; j++) {
            uint32_t i = members[j];
            sup[t] = sup[t] && d->supported[i];
            rr[t] = rr[t] || d->reads_runtime[i];
            for (uint32_t k = d->pred_start[i]; k < d->pred_start[i + 1]; k++)
                if (unit_of[d->pred[k]] != u)
                    pred[e++] = rank[unit_of[d->pred[k]]];
        }
    }
    pstart[nu] = e;
    cv_dag cd = {nu, pstart, pred, sup, rr};
    count = cv_partition_levels(&cd, upart);
    if (count != CARVE_NONE)
        for (uint32_t i = 0; i < n; i++)
            part[i] = upart[rank[unit_of[i]]];
done:
    cv_free(indeg);
    cv_free(succ_start);
    cv_free(succ);
    cv_free(order);
    cv_free(rank);
    cv_free(member_start);
    cv_free(members);
    cv_free(pstart);
    cv_free(pred);
    cv_free(sup);
    cv_free(rr);
    cv_free(upart);
    return count;
}

/* priority.c: partitioning for several targets in priority order.
 *
 * Target 0 is partitioned first, by levels (levels.c) over the nodes it
 * takes, with QDQ node units contracted (units.c). Then target 1, over the
 * nodes it takes that target 0 did not, on the graph with each of target
 * 0's partitions contracted to one node it cannot take; and so on. Every
 * node goes to the first target that takes it. Each step contracts convex
 * groups whose quotient is acyclic and then cuts levels, so the quotient of
 * all partitions of all targets and the CPU nodes stays acyclic; and each
 * target gets the fewest partitions any valid partitioning of its nodes
 * has, given the partitions of the targets before it. The total is not
 * minimal over all placements: a target earlier in the list never gives up
 * a node, or moves a partition, to save a later one a partition
 * (docs/targets.md, "Several targets"). O(T (N + E)). */
#include "partition.h"

#include <string.h>

uint32_t cv_partition_priority(const cv_dag *d, const uint32_t *const *unit_of, uint32_t n_units,
                               uint32_t n_targets, const uint8_t *const *take, uint32_t *part, uint32_t *tgt)
{
    uint32_t n = d->n;
    uint8_t *sup = cv_malloc((size_t)n + 1);
    uint32_t *uof = cv_malloc(((size_t)n + 1) * sizeof *uof);
    if (n_units < n)
        n_units = n; /* keys below n_units: units, or node positions for a target without units */
    uint32_t *dense = cv_malloc(((size_t)n_units + n + 1) * sizeof *dense);
    uint32_t *tpart = cv_malloc(((size_t)n + 1) * sizeof *tpart);
    uint32_t total = CARVE_NONE;
    if (!sup || !uof || !dense || !tpart)
        goto done;
    for (uint32_t i = 0; i < n; i++) {
        part[i] = CARVE_NONE;
        tgt[i] = CARVE_NONE;
    }
    total = 0;
    for (uint32_t t = 0; t < n_targets; t++) {
        /* units: each partition placed so far is one, the rest as given;
         * numbered densely in node order (a unit with no member left would
         * otherwise count as a partition) */
        uint32_t nu = 0;
        for (uint32_t k = 0; k < n_units + total; k++)
            dense[k] = CARVE_NONE;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t key = part[i] != CARVE_NONE ? n_units + part[i] : unit_of && unit_of[t] ? unit_of[t][i] : i;
            if (dense[key] == CARVE_NONE)
                dense[key] = nu++;
            uof[i] = dense[key];
            sup[i] = part[i] == CARVE_NONE && take[t][i];
        }
        cv_dag td = {n, d->pred_start, d->pred, sup, d->reads_runtime};
        uint32_t cnt = cv_partition_units(&td, uof, nu, tpart);
        if (cnt == CARVE_NONE) {
            total = CARVE_NONE;
            goto done;
        }
        for (uint32_t i = 0; i < n; i++)
            if (sup[i] && tpart[i] != CARVE_NONE) {
                part[i] = total + tpart[i];
                tgt[i] = t;
            }
        total += cnt;
    }
done:
    cv_free(sup);
    cv_free(uof);
    cv_free(dense);
    cv_free(tpart);
    return total;
}

/* levels.c: minimal valid partitioning for one target in O(N+E).
 *
 * In topological order, a supported node's level is the largest over its
 * predecessors of (the predecessor's level if it is supported, else that
 * level + 1); a CPU node's level is the largest of its predecessors' (-1 with
 * none). Partitions are the sets of supported nodes of equal level. Along any
 * path levels never decrease and rise by one after a CPU node, so contracting
 * each partition leaves no cycle; and the count equals the largest number of
 * supported runs on any path, which no valid partitioning can beat. Levels
 * depend on the graph only, not on the order of nodes in the file. */
#include "partition.h"

#include <string.h>

uint32_t cv_partition_levels(const cv_dag *d, uint32_t *part)
{
    uint32_t n = d->n;
    int32_t *level = cv_malloc(((size_t)n + 1) * sizeof *level);
    uint8_t *const_only = cv_malloc((size_t)n + 1);
    uint32_t *succ_start = NULL, *succ = NULL;
    uint32_t n_edges = d->pred_start[n];
    int32_t *remap = NULL;
    uint8_t *taken = NULL;
    uint32_t count = CARVE_NONE;
    if (!level || !const_only)
        goto done;
    int32_t max_level = -1;
    bool any_const_only = false;
    for (uint32_t i = 0; i < n; i++) {
        int32_t l = d->supported[i] ? 0 : -1;
        bool co = d->supported[i] && !d->reads_runtime[i];
        for (uint32_t k = d->pred_start[i]; k < d->pred_start[i + 1]; k++) {
            uint32_t p = d->pred[k];
            int32_t pl = d->supported[i] && !d->supported[p] ? level[p] + 1 : level[p];
            if (pl > l)
                l = pl;
            co = co && const_only[p];
        }
        level[i] = l;
        const_only[i] = co;
        any_const_only = any_const_only || co;
        if (l > max_level)
            max_level = l;
    }
    /* successors, for the consumers of constant-only nodes (when there are
     * any) */
    if (any_const_only) {
        succ_start = cv_malloc(((size_t)n + 2) * sizeof *succ_start);
        succ = cv_malloc(((size_t)n_edges + 1) * sizeof *succ);
        if (!succ_start || !succ)
            goto done;
        memset(succ_start, 0, ((size_t)n + 2) * sizeof *succ_start);
        for (uint32_t k = 0; k < n_edges; k++)
            succ_start[d->pred[k] + 2]++;
        for (uint32_t i = 0; i < n; i++)
            succ_start[i + 2] += succ_start[i + 1];
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = d->pred_start[i]; k < d->pred_start[i + 1]; k++)
                succ[succ_start[d->pred[k] + 1]++] = i;
    }
    /* levels taken by nodes that read runtime values */
    taken = cv_malloc((size_t)max_level + 2);
    remap = cv_malloc(((size_t)max_level + 2) * sizeof *remap);
    if (!taken || !remap)
        goto done;
    memset(taken, 0, (size_t)max_level + 2);
    for (uint32_t i = 0; i < n; i++)
        if (d->supported[i] && !const_only[i])
            taken[level[i]] = 1;
    /* constant-only nodes join their nearest consumer's level when a real
     * partition is there (reverse order: consumers are settled first) */
    for (uint32_t i = n; any_const_only && i-- > 0;) {
        if (!const_only[i])
            continue;
        int32_t best = INT32_MAX;
        for (uint32_t k = succ_start[i]; k < succ_start[i + 1]; k++)
            if (level[succ[k]] < best)
                best = level[succ[k]];
        if (best != INT32_MAX && best > level[i] && taken[best])
            level[i] = best;
    }
    /* number the occupied levels in order */
    memset(taken, 0, (size_t)max_level + 2);
    for (uint32_t i = 0; i < n; i++)
        if (d->supported[i])
            taken[level[i]] = 1;
    count = 0;
    for (int32_t l = 0; l <= max_level; l++)
        remap[l] = taken[l] ? (int32_t)count++ : -1;
    for (uint32_t i = 0; i < n; i++)
        part[i] = d->supported[i] ? (uint32_t)remap[level[i]] : CARVE_NONE;
done:
    cv_free(level);
    cv_free(const_only);
    cv_free(succ_start);
    cv_free(succ);
    cv_free(taken);
    cv_free(remap);
    return count;
}

/* test_priority.c: partitioning for several targets in priority order
 * (src/partition/priority.c) against a brute force that shares no code with
 * it, on random DAGs of up to 10 nodes and 2 or 3 targets:
 *  - valid: contracting every partition of every target (CPU nodes alone)
 *    leaves no cycle;
 *  - every node is on the first target that takes it;
 *  - each target has the fewest partitions any valid partitioning of its
 *    nodes has, given the partitions of the targets before it (what the
 *    levels method promises; the total over all targets is not claimed
 *    minimal, and an example shows why);
 *  - one target gives what cv_partition_levels gives. */
#include "opstest.h"
#include "partition/partition.h"

#include <string.h>

#define MAXN 12

typedef struct {
    uint32_t n, nt;
    uint8_t adj[MAXN][MAXN]; /* a -> b, a < b */
    uint8_t take[3][MAXN];
} pgraph;

static uint64_t rs = 7;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rs >> 33) % n);
}

static uint32_t run(const pgraph *g, uint32_t *part, uint32_t *tgt)
{
    uint32_t start[MAXN + 1], preds[MAXN * MAXN], np = 0;
    uint8_t rr[MAXN];
    for (uint32_t b = 0; b < g->n; b++) {
        start[b] = np;
        for (uint32_t a = 0; a < b; a++)
            if (g->adj[a][b])
                preds[np++] = a;
        rr[b] = 1;
    }
    start[g->n] = np;
    cv_dag d = {g->n, start, preds, NULL, rr};
    const uint8_t *take[3] = {g->take[0], g->take[1], g->take[2]};
    return cv_partition_priority(&d, NULL, g->n, g->nt, take, part, tgt);
}

static bool acyclic(const pgraph *g, const uint32_t *group, uint32_t ng)
{
    uint8_t q[2 * MAXN][2 * MAXN] = {{0}}, gone[2 * MAXN] = {0};
    for (uint32_t a = 0; a < g->n; a++)
        for (uint32_t b = 0; b < g->n; b++)
            if (g->adj[a][b] && group[a] != group[b])
                q[group[a]][group[b]] = 1;
    for (uint32_t r = 0; r < ng; r++) {
        int pick = -1;
        for (uint32_t x = 0; x < ng && pick < 0; x++) {
            bool in = false;
            for (uint32_t y = 0; y < ng && !in && !gone[x]; y++)
                in = !gone[y] && q[y][x];
            if (!gone[x] && !in)
                pick = (int)x;
        }
        if (pick < 0)
            return false;
        gone[pick] = 1;
    }
    return true;
}

/* Brute force for target t: fixed groups for the nodes of earlier targets
 * (their partitions), every set partition of target t's nodes, singletons
 * for the rest; the fewest blocks whose contraction is acyclic. */
static uint32_t best;
static void brute(const pgraph *g, const uint32_t *fixed, uint32_t n_fixed, const uint32_t *mine, uint32_t nm,
                  uint32_t k, uint32_t *rgs, uint32_t used)
{
    if (used >= best)
        return;
    if (k == nm) {
        uint32_t group[MAXN], next = n_fixed + used;
        for (uint32_t i = 0; i < g->n; i++)
            group[i] = fixed[i];
        for (uint32_t i = 0; i < nm; i++)
            group[mine[i]] = n_fixed + rgs[i];
        for (uint32_t i = 0; i < g->n; i++)
            if (group[i] == CARVE_NONE)
                group[i] = next++;
        if (acyclic(g, group, next))
            best = used;
        return;
    }
    for (uint32_t b = 0; b <= used && b < best; b++) {
        rgs[k] = b;
        brute(g, fixed, n_fixed, mine, nm, k + 1, rgs, b == used ? used + 1 : used);
    }
}

int main(void)
{
    uint32_t checked = 0;
    for (uint32_t trial = 0; trial < 400; trial++) {
        pgraph g;
        memset(&g, 0, sizeof g);
        g.n = 3 + rnd(8);
        g.nt = 2 + rnd(2);
        uint32_t ep = 15 + rnd(50);
        for (uint32_t b = 0; b < g.n; b++) {
            for (uint32_t a = 0; a < b; a++)
                g.adj[a][b] = rnd(100) < ep;
            for (uint32_t t = 0; t < g.nt; t++)
                g.take[t][b] = rnd(100) < 45;
        }
        uint32_t part[MAXN], tgt[MAXN];
        uint32_t cnt = run(&g, part, tgt);
        /* valid, and each node on its first target */
        uint32_t group[MAXN], next = cnt;
        bool first_ok = true;
        for (uint32_t i = 0; i < g.n; i++) {
            uint32_t first = CARVE_NONE;
            for (uint32_t t = 0; t < g.nt && first == CARVE_NONE; t++)
                if (g.take[t][i])
                    first = t;
            first_ok = first_ok && tgt[i] == first && (first == CARVE_NONE) == (part[i] == CARVE_NONE);
            group[i] = part[i] != CARVE_NONE ? part[i] : next++;
        }
        OT_CHECK(first_ok, "trial %u: every node on the first target that takes it", trial);
        OT_CHECK(acyclic(&g, group, next), "trial %u: the quotient of all partitions is acyclic", trial);
        /* per target: as few partitions as possible given the earlier ones */
        uint32_t fixed[MAXN], n_fixed = 0;
        for (uint32_t i = 0; i < g.n; i++)
            fixed[i] = CARVE_NONE;
        for (uint32_t t = 0; t < g.nt; t++) {
            uint32_t mine[MAXN], nm = 0, rgs[MAXN], have = 0, lo = CARVE_NONE, hi = 0;
            for (uint32_t i = 0; i < g.n; i++)
                if (tgt[i] == t) {
                    mine[nm++] = i;
                    lo = part[i] < lo ? part[i] : lo;
                    hi = part[i] > hi ? part[i] : hi;
                }
            if (nm)
                have = hi - lo + 1;
            best = nm ? nm + 1 : 0;
            if (nm)
                brute(&g, fixed, n_fixed, mine, nm, 0, rgs, 0);
            OT_CHECK(have == best, "trial %u target %u: %u partitions, brute force finds %u", trial, t, have, best);
            for (uint32_t i = 0; i < nm; i++)
                fixed[mine[i]] = part[mine[i]];
            n_fixed = cnt;
        }
        checked++;
    }
    OT_CHECK(checked == 400, "400 random graphs checked");

    /* one target: what cv_partition_levels gives */
    for (uint32_t trial = 0; trial < 100; trial++) {
        pgraph g;
        memset(&g, 0, sizeof g);
        g.n = 4 + rnd(8);
        g.nt = 1;
        for (uint32_t b = 0; b < g.n; b++) {
            for (uint32_t a = 0; a < b; a++)
                g.adj[a][b] = rnd(100) < 30;
            g.take[0][b] = rnd(100) < 60;
        }
        uint32_t part[MAXN], tgt[MAXN], lpart[MAXN];
        uint32_t cnt = run(&g, part, tgt);
        uint32_t start[MAXN + 1], preds[MAXN * MAXN], np = 0;
        uint8_t rr[MAXN];
        for (uint32_t b = 0; b < g.n; b++) {
            start[b] = np;
            for (uint32_t a = 0; a < b; a++)
                if (g.adj[a][b])
                    preds[np++] = a;
            rr[b] = 1;
        }
        start[g.n] = np;
        cv_dag d = {g.n, start, preds, g.take[0], rr};
        uint32_t lcnt = cv_partition_levels(&d, lpart);
        bool same = lcnt == cnt;
        for (uint32_t i = 0; i < g.n && same; i++)
            same = lpart[i] == part[i];
        OT_CHECK(same, "one-target trial %u: the same partitions as cv_partition_levels", trial);
    }

    /* The total is not minimal over all placements: a -> b -> c with htp
     * taking a and c, gpu taking a, b and c. Priority puts a and c on htp
     * (two partitions, b between them on gpu: 3 in all), where all on gpu
     * would be 1. Priority order is the user's choice, not a cost model. */
    pgraph e;
    memset(&e, 0, sizeof e);
    e.n = 3;
    e.nt = 2;
    e.adj[0][1] = e.adj[1][2] = 1;
    e.take[0][0] = e.take[0][2] = 1;
    e.take[1][0] = e.take[1][1] = e.take[1][2] = 1;
    uint32_t part[MAXN], tgt[MAXN];
    uint32_t cnt = run(&e, part, tgt);
    OT_CHECK(cnt == 3 && tgt[0] == 0 && tgt[1] == 1 && tgt[2] == 0, "a-b-c: htp, gpu, htp in 3 partitions (got %u)",
             cnt);
    return ot_finish();
}

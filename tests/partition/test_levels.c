/* test_levels.c: the partitioner against a brute force that shares no code
 * with it, and its properties on random DAGs:
 *  - every partitioning is valid: contracting each partition to one node
 *    leaves no cycle (which also makes each partition convex);
 *  - it uses the fewest partitions: equal to a brute force over all set
 *    partitions of the supported nodes (graphs of up to 10 nodes), and to the
 *    largest number of supported runs on a path;
 *  - it does not depend on node order: the same graph numbered in another
 *    topological order gets the same partitions. */
#include "opstest.h"
#include "partition/partition.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint32_t n;
    uint8_t adj[64][64]; /* adj[a][b]: edge a -> b, a < b */
    uint8_t sup[64], rr[64];
} rgraph;

static uint64_t rs = 42;
static uint32_t rnd(uint32_t n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rs >> 33) % n);
}

static void random_graph(rgraph *g, uint32_t n, uint32_t edge_pct, uint32_t sup_pct, uint32_t rr_pct)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t a = 0; a < b; a++)
            g->adj[a][b] = rnd(100) < edge_pct;
        g->sup[b] = rnd(100) < sup_pct;
        g->rr[b] = rnd(100) < rr_pct;
    }
}

/* Runs cv_partition_levels on g under the numbering perm (perm[i] = old id
 * of new node i, a topological order); part_old receives results by old id. */
static uint32_t run_levels(const rgraph *g, const uint32_t *perm, uint32_t *part_old)
{
    uint32_t inv[64], start[65], preds[64 * 64], np = 0;
    uint8_t sup[64], rr[64];
    for (uint32_t i = 0; i < g->n; i++)
        inv[perm[i]] = i;
    for (uint32_t i = 0; i < g->n; i++) {
        start[i] = np;
        uint32_t b = perm[i];
        for (uint32_t a = 0; a < g->n; a++)
            if (g->adj[a][b])
                preds[np++] = inv[a];
        sup[i] = g->sup[b];
        rr[i] = g->rr[b];
    }
    start[g->n] = np;
    cv_dag d = {g->n, start, preds, sup, rr};
    uint32_t part[64];
    uint32_t count = cv_partition_levels(&d, part);
    for (uint32_t i = 0; i < g->n; i++)
        part_old[perm[i]] = part[i];
    return count;
}

/* Contract (group[v] = block id, CPU nodes their own block) and test for a
 * cycle by repeated removal of blocks with no incoming edge. */
static bool quotient_acyclic(const rgraph *g, const uint32_t *group, uint32_t n_groups)
{
    static uint8_t qadj[128][128];
    memset(qadj, 0, sizeof qadj);
    for (uint32_t a = 0; a < g->n; a++)
        for (uint32_t b = 0; b < g->n; b++)
            if (g->adj[a][b] && group[a] != group[b])
                qadj[group[a]][group[b]] = 1;
    uint8_t removed[128] = {0};
    for (uint32_t round = 0; round < n_groups; round++) {
        int pick = -1;
        for (uint32_t x = 0; x < n_groups && pick < 0; x++) {
            if (removed[x])
                continue;
            bool has_in = false;
            for (uint32_t y = 0; y < n_groups && !has_in; y++)
                has_in = !removed[y] && qadj[y][x];
            if (!has_in)
                pick = (int)x;
        }
        if (pick < 0)
            return false;
        removed[pick] = 1;
    }
    return true;
}

static bool valid(const rgraph *g, const uint32_t *part, uint32_t count)
{
    uint32_t group[64];
    uint32_t next = count;
    for (uint32_t i = 0; i < g->n; i++) {
        if (g->sup[i] && part[i] == CARVE_NONE)
            return false; /* every supported node is placed */
        if (!g->sup[i] && part[i] != CARVE_NONE)
            return false;
        group[i] = g->sup[i] ? part[i] : next++;
    }
    return quotient_acyclic(g, group, next);
}

/* Brute force: the fewest blocks over every set partition of the supported
 * nodes (restricted growth strings) whose contraction is acyclic. */
static uint32_t best;
static void brute(const rgraph *g, const uint32_t *supn, uint32_t ns, uint32_t k, uint32_t *rgs, uint32_t used)
{
    if (used >= best)
        return;
    if (k == ns) {
        uint32_t group[64];
        uint32_t next = used;
        for (uint32_t i = 0; i < g->n; i++)
            group[i] = CARVE_NONE;
        for (uint32_t i = 0; i < ns; i++)
            group[supn[i]] = rgs[i];
        for (uint32_t i = 0; i < g->n; i++)
            if (group[i] == CARVE_NONE)
                group[i] = next++;
        if (quotient_acyclic(g, group, next))
            best = used;
        return;
    }
    for (uint32_t b = 0; b <= used && b < best; b++) {
        rgs[k] = b;
        brute(g, supn, ns, k + 1, rgs, b == used ? used + 1 : used);
    }
}

/* The largest number of maximal supported runs on any path (DP over a
 * topological order): runs[v] for paths ending at v. */
static uint32_t max_runs(const rgraph *g)
{
    uint32_t runs[64], best_all = 0;
    for (uint32_t v = 0; v < g->n; v++) {
        uint32_t r = g->sup[v] ? 1 : 0;
        for (uint32_t u = 0; u < v; u++) {
            if (!g->adj[u][v])
                continue;
            uint32_t x = runs[u] + (g->sup[v] && !g->sup[u] ? 1 : 0);
            if (g->sup[v] && g->sup[u])
                x = runs[u];
            if (x > r)
                r = x;
        }
        runs[v] = r;
        if (r > best_all)
            best_all = r;
    }
    return best_all;
}

static void random_topo_perm(const rgraph *g, uint32_t *perm)
{
    uint32_t indeg[64] = {0}, ready[64], nr = 0, k = 0;
    for (uint32_t b = 0; b < g->n; b++)
        for (uint32_t a = 0; a < g->n; a++)
            indeg[b] += g->adj[a][b];
    for (uint32_t v = 0; v < g->n; v++)
        if (!indeg[v])
            ready[nr++] = v;
    while (nr) {
        uint32_t pick = rnd(nr), v = ready[pick];
        ready[pick] = ready[--nr];
        perm[k++] = v;
        for (uint32_t w = 0; w < g->n; w++)
            if (g->adj[v][w] && --indeg[w] == 0)
                ready[nr++] = w;
    }
}

int main(void)
{
    /* The cycle a convexity-only partitioner builds: s1,s2 = Relu(x);
     * u1 = Tanh(s1), u2 = Tanh(s2) on CPU; t1 = s1 + u2; t2 = s2 + u1.
     * {s1,t1} and {s2,t2} are each convex but form a cycle. */
    rgraph c = {.n = 6};
    enum { S1, S2, U1, U2, T1, T2 };
    c.adj[S1][U1] = c.adj[S2][U2] = c.adj[S1][T1] = c.adj[U2][T1] = c.adj[S2][T2] = c.adj[U1][T2] = 1;
    c.sup[S1] = c.sup[S2] = c.sup[T1] = c.sup[T2] = 1;
    memset(c.rr, 1, sizeof c.rr);
    uint32_t id[64], part[64];
    for (uint32_t i = 0; i < 64; i++)
        id[i] = i;
    uint32_t cnt = run_levels(&c, id, part);
    OT_CHECK(valid(&c, part, cnt), "the Relu/Tanh example gives a valid partitioning");
    OT_CHECK(cnt == 2 && part[S1] == part[S2] && part[T1] == part[T2] && part[S1] != part[T1],
             "Relu/Tanh example: partitions {s1,s2} and {t1,t2}, got %u partitions", cnt);
    uint32_t bad_group[6] = {0, 1, 2, 3, 0, 1}; /* {s1,t1}, {s2,t2}, u1, u2 */
    OT_CHECK(!quotient_acyclic(&c, bad_group, 4), "the convex pair {s1,t1},{s2,t2} is recognised as a cycle");

    /* brute force on small random graphs */
    uint32_t graphs = 0;
    for (uint32_t trial = 0; trial < 300; trial++) {
        rgraph g;
        uint32_t n = 3 + rnd(8); /* 3..10 nodes */
        random_graph(&g, n, 15 + rnd(50), 40 + rnd(50), 100);
        uint32_t supn[64], ns = 0, rgs[64];
        for (uint32_t i = 0; i < n; i++)
            if (g.sup[i])
                supn[ns++] = i;
        cnt = run_levels(&g, id, part);
        OT_CHECK(valid(&g, part, cnt), "trial %u: valid partitioning", trial);
        best = ns + 1;
        if (ns == 0)
            best = 0;
        else
            brute(&g, supn, ns, 0, rgs, 0);
        OT_CHECK(cnt == best, "trial %u (%u nodes, %u supported): %u partitions, brute force finds %u", trial, n, ns,
                 cnt, best);
        OT_CHECK(cnt == max_runs(&g), "trial %u: %u partitions, path bound %u", trial, cnt, max_runs(&g));
        graphs++;
    }
    OT_CHECK(graphs == 300, "ran 300 brute-force graphs");

    /* larger graphs: validity, the path bound, order independence; with
     * constant-only nodes (rr = 0) too */
    for (uint32_t trial = 0; trial < 200; trial++) {
        rgraph g;
        uint32_t n = 20 + rnd(44);
        random_graph(&g, n, 2 + rnd(20), 30 + rnd(60), trial % 2 ? 100 : 70);
        cnt = run_levels(&g, id, part);
        OT_CHECK(valid(&g, part, cnt), "large trial %u: valid", trial);
        if (trial % 2)
            OT_CHECK(cnt == max_runs(&g), "large trial %u: %u partitions, path bound %u", trial, cnt, max_runs(&g));
        else
            OT_CHECK(cnt <= max_runs(&g), "large trial %u: constant-only moves never add partitions", trial);
        uint32_t perm[64], part2[64];
        random_topo_perm(&g, perm);
        uint32_t cnt2 = run_levels(&g, perm, part2);
        bool same = cnt2 == cnt;
        for (uint32_t i = 0; i < n && same; i++)
            same = part[i] == part2[i];
        OT_CHECK(same, "large trial %u: another node order gives the same partitions", trial);
    }

    /* a constant-only supported node joins its consumer's partition */
    rgraph k = {.n = 4};
    /* 0: Relu(x) (runtime), 1: Mul(c, c) const-only, 2: Tanh on CPU(0), 3: Add(2, 1) */
    k.adj[0][2] = k.adj[2][3] = k.adj[1][3] = 1;
    k.sup[0] = k.sup[1] = k.sup[3] = 1;
    k.rr[0] = 1;
    cnt = run_levels(&k, id, part);
    OT_CHECK(cnt == 2 && part[1] == part[3] && part[0] != part[3],
             "a constant-only node rides with its consumer (parts %u %u %u)", part[0], part[1], part[3]);
    return ot_finish();
}

/* test_runtime.c: the run's buffer pool (src/ops/val.c). Buffers are cut
 * first fit from slabs, aligned, never overlapping, coalesced when freed;
 * pages of holes first fit cannot use go back to the kernel; a run reuses
 * the buffers of tensors that died and the model keeps its pool for the
 * next run (counted through the allocator hook: a chain of 24 ops on a
 * 1 MiB tensor makes 1 big allocation, the output, not 24; after
 * carve_model_trim, 2: the slab again and the output); outputs outlive the run in
 * blocks of their own (plain outputs, an output another node reads, an
 * input passed through, a sequence, an If branch's result); every injected
 * allocation failure during a run fails cleanly or falls back, and then
 * the result is bit-identical. */
#include "opstest.h"
#include "runtime/runtime.h"
#include "count_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- allocator */


/* ---------------------------------------------------------------- builders */

static carve_value_id input(carve_model *m, const char *name, int rank, const int64_t *dims)
{
    carve_dim d[CARVE_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = (carve_dim){dims[i], NULL};
    return carve_graph_add_input(m, 0, name, CARVE_FLOAT, rank, d);
}

static carve_value_id op1(carve_model *m, carve_graph_id g, const char *op, const char *name, size_t n_in,
                          const carve_value_id *in)
{
    const char *outs[1] = {name};
    carve_node_id n = carve_graph_add_node(m, g, op, "", name, n_in, in, 1, outs);
    OT_CHECK(n != CARVE_NONE, "add %s: %s", name, carve_errmsg(carve_model_ctx(m)));
    return carve_node_output(m, n, 0);
}

/* [1,16,128,128] float32: 1 MiB. */
static const int64_t MIB_DIMS[4] = {1, 16, 128, 128};

static cv_val *ramp(int rank, const int64_t *dims)
{
    cv_val *x = cv_val_new(CARVE_FLOAT, rank, dims);
    for (size_t i = 0; x && i < x->nelem; i++)
        ((float *)x->data)[i] = (float)((int)(i % 1001) - 500) / 64.0f;
    return x;
}

/* ---------------------------------------------------------------- the pool itself */

static void test_pool_cuts_and_coalesces(void)
{
    cv_pool p;
    cv_pool_begin(&p);
    OT_CHECK(cv_pool_current() == &p, "cv_pool_begin makes the pool current");
    static const size_t sizes[] = {100000, (size_t)1 << 20, 3000000, 65536, 5 << 20, 70001, 200000, 9 << 20};
    enum { N = sizeof sizes / sizeof *sizes };
    unsigned char *b[N];
    for (int i = 0; i < N; i++) {
        b[i] = cv_scratch_alloc(sizes[i]);
        OT_CHECK(b[i] != NULL, "buffer %d allocated", i);
        OT_CHECK((uintptr_t)b[i] % 64 == 0, "buffer %d is 64-byte aligned", i);
        memset(b[i], i + 1, sizes[i]);
    }
    OT_CHECK(p.stats.served == N && p.n_slab == 1, "%d buffers from %u slab (served %zu)", N, p.n_slab,
             p.stats.served);
    /* no two buffers overlap: each still holds its own byte */
    for (int i = 0; i < N; i++) {
        size_t bad = 0;
        for (size_t j = 0; j < sizes[i]; j++)
            bad += b[i][j] != (unsigned char)(i + 1);
        OT_CHECK(bad == 0, "buffer %d: %zu bytes overwritten by another buffer", i, bad);
    }
    /* first fit: a freed buffer's place serves the next request that fits */
    unsigned char *second = b[1];
    cv_scratch_free(b[1]);
    b[1] = cv_scratch_alloc(sizes[1] - 4096);
    OT_CHECK(b[1] == second, "a freed 1 MiB buffer is reused for 1 MiB - 4 KiB");
    /* small requests bypass the pool */
    size_t served = p.stats.served;
    void *small = cv_scratch_alloc(1000);
    OT_CHECK(small && p.stats.served == served, "a 1000-byte buffer does not come from the pool");
    cv_scratch_free(small);
    /* freeing everything, in an order that needs merges on both sides,
     * leaves one free extent per slab */
    static const int order[N] = {3, 1, 2, 0, 7, 5, 6, 4};
    for (int i = 0; i < N; i++)
        cv_scratch_free(b[order[i]]);
    OT_CHECK(p.in_use == 0, "nothing in use after freeing all (%zu bytes)", p.in_use);
    for (uint32_t k = 0; k < p.n_slab; k++)
        OT_CHECK(p.slab[k].n_ext == 1 && !p.slab[k].ext[0].used, "slab %u coalesced into %u extents", k,
                 p.slab[k].n_ext);
    /* a buffer bigger than a slab gets a slab of its own */
    void *huge = cv_scratch_alloc((size_t)100 << 20);
    OT_CHECK(huge && p.n_slab == 2, "a 100 MiB buffer makes a second slab (%u)", p.n_slab);
    cv_scratch_free(huge);
    cv_pool_end(&p);
    OT_CHECK(cv_pool_current() == NULL && p.n_slab == 0, "cv_pool_end frees the slabs and clears the pool");
}

/* A hole first fit cannot use (30 MiB free, 40 MiB wanted) does not stay
 * resident: when the new buffer touches fresh pages, free pages go back to
 * the kernel so touched pages stay within in-use + 1/8 + 8 MiB. */
static void test_pool_gives_back_holes(void)
{
    cv_pool p;
    cv_pool_begin(&p);
    const size_t mib = (size_t)1 << 20;
    unsigned char *a = cv_scratch_alloc(30 * mib), *b = cv_scratch_alloc(30 * mib);
    OT_CHECK(a && b, "two 30 MiB buffers");
    memset(a, 1, 30 * mib);
    memset(b, 2, 30 * mib);
    cv_scratch_free(a);
    OT_CHECK(p.stats.released == 0, "nothing is given back while nothing new is touched");
    unsigned char *c = cv_scratch_alloc(40 * mib);
    OT_CHECK(c && p.n_slab == 2, "40 MiB does not fit the 30 MiB hole: a second slab");
    memset(c, 3, 40 * mib);
    size_t limit = p.in_use + p.in_use / 8 + 8 * mib + 2 * mib; /* + one page of rounding */
    OT_CHECK(p.stats.released > 0 && p.touched <= limit,
             "the hole's pages go back: %zu released, %zu MiB touched for %zu MiB in use", p.stats.released,
             p.touched / mib, p.in_use / mib);
    size_t bad = 0;
    for (size_t i = 0; i < 30 * mib; i += 4096)
        bad += b[i] != 2;
    OT_CHECK(bad == 0, "a buffer in use keeps its data (%zu pages changed)", bad);
    /* a given-back page serves a later buffer like any other */
    unsigned char *d = cv_scratch_alloc(20 * mib);
    OT_CHECK(d == a, "the hole is reused first fit");
    memset(d, 4, 20 * mib);
    cv_scratch_free(b);
    cv_scratch_free(c);
    cv_scratch_free(d);
    cv_pool_end(&p);
}

/* ---------------------------------------------------------------- runs */

/* x -> Neg x24 -> y: every tensor 1 MiB, one alive at a time. */
static carve_model *chain_model(carve_ctx *ctx, int n)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id v = input(m, "x", 4, MIB_DIMS);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "neg%d", i);
        v = op1(m, 0, "Neg", name, 1, &v);
    }
    carve_graph_add_output(m, 0, v);
    return m;
}

static void test_run_reuses_buffers(carve_ctx *ctx)
{
    carve_model *m = chain_model(ctx, 24);
    cv_val *in[1] = {ramp(4, MIB_DIMS)}, *out[1] = {0};
    OT_CHECK(carve_model_run(m, in, out) == CARVE_OK, "warm-up run: %s", carve_errmsg(ctx));
    cv_val_unref(out[0]);
    out[0] = NULL;
    long live0 = t_alloc.live;
    t_alloc.big = 0;
    OT_CHECK(carve_model_run(m, in, out) == CARVE_OK, "chain run: %s", carve_errmsg(ctx));
    /* without the pool: one 1 MiB block per node (24); with it, kept from
     * the warm-up run: only the output's own block */
    OT_CHECK(t_alloc.big == 1, "24 nodes on 1 MiB tensors made %ld big allocations, expected 1 (the output)", t_alloc.big);
    OT_CHECK(out[0] && !memcmp(out[0]->data, in[0]->data, in[0]->nbytes), "24 negations give x back");
    OT_CHECK(out[0] && t_alloc_is_big(out[0]->data), "the output has a block of its own");
    cv_val_unref(out[0]);
    out[0] = NULL;
    OT_CHECK(t_alloc.live == live0, "the run leaves %ld blocks behind", t_alloc.live - live0);
    /* carve_model_trim gives the kept slab back; the next run makes it again */
    carve_model_trim(m);
    OT_CHECK(t_alloc.live < live0, "carve_model_trim frees the pool's blocks (%ld before, %ld after)", live0, t_alloc.live);
    t_alloc.big = 0;
    OT_CHECK(carve_model_run(m, in, out) == CARVE_OK, "chain run after trim: %s", carve_errmsg(ctx));
    OT_CHECK(t_alloc.big == 2, "after trim: %ld big allocations, expected 2 (a slab, the output)", t_alloc.big);
    cv_val_unref(out[0]);
    cv_val_unref(in[0]);
    carve_model_free(m);
}

/* Outputs: y = Neg(x) (also read by Relu), r = Relu(y), an input passed
 * through Identity, a sequence of y and r, and an If branch's result. */
static void test_outputs_outlive_run(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    carve_value_id x = input(m, "x", 4, MIB_DIMS);
    carve_value_id c = carve_graph_add_input(m, 0, "cond", CARVE_BOOL, 0, NULL);
    carve_value_id y = op1(m, 0, "Neg", "y", 1, &x);
    carve_value_id r = op1(m, 0, "Relu", "r", 1, &y);
    carve_value_id id = op1(m, 0, "Identity", "id", 1, &x);
    carve_value_id yr[2] = {y, r};
    carve_value_id seq = op1(m, 0, "SequenceConstruct", "seq", 2, yr);
    carve_graph_id tg = carve_graph_new_subgraph(m, 0, "then");
    carve_graph_id eg = carve_graph_new_subgraph(m, 0, "else");
    carve_value_id xx[2] = {x, x};
    carve_graph_add_output(m, tg, op1(m, tg, "Add", "then_add", 2, xx));
    carve_graph_add_output(m, eg, op1(m, eg, "Mul", "else_mul", 2, xx));
    const char *if_out[1] = {"branch"};
    carve_node_id n = carve_graph_add_node(m, 0, "If", "", "if", 1, &c, 1, if_out);
    carve_node_set_attr_graph(m, n, "then_branch", tg);
    carve_node_set_attr_graph(m, n, "else_branch", eg);
    carve_value_id outs[5] = {y, r, id, seq, carve_node_output(m, n, 0)};
    for (int i = 0; i < 5; i++)
        carve_graph_add_output(m, 0, outs[i]);
    OT_CHECK(carve_model_verify(m) == CARVE_OK, "outputs model verifies: %s", carve_errmsg(ctx));
    cv_val *in[2] = {ramp(4, MIB_DIMS), cv_val_new(CARVE_BOOL, 0, NULL)}, *out[5] = {0};
    *(uint8_t *)in[1]->data = 1;
    long live0 = t_alloc.live;
    OT_CHECK(carve_model_run(m, in, out) == CARVE_OK, "outputs run: %s", carve_errmsg(ctx));
    const float *xs = in[0]->data;
    size_t n_el = in[0]->nelem, bad[5] = {0};
    for (int i = 0; i < 5; i++)
        if (!out[i])
            bad[i] = 1;
    for (size_t i = 0; !bad[0] && !bad[1] && i < n_el; i++) {
        bad[0] += ((float *)out[0]->data)[i] != -xs[i];
        bad[1] += ((float *)out[1]->data)[i] != (-xs[i] < 0 ? 0 : -xs[i]);
    }
    for (size_t i = 0; !bad[4] && i < n_el; i++)
        bad[4] += ((float *)out[4]->data)[i] != xs[i] + xs[i];
    OT_CHECK(!bad[0] && !bad[1] && !bad[4], "output values: y %zu, r %zu, if %zu wrong", bad[0], bad[1], bad[4]);
    /* each output's data is a block of its own (or the caller's input) */
    OT_CHECK(out[0] && t_alloc_is_big(out[0]->data), "y, also read by a node, has its own block");
    OT_CHECK(out[1] && t_alloc_is_big(out[1]->data), "r has its own block");
    OT_CHECK(out[2] && out[2]->data == in[0]->data, "Identity passes the caller's input through");
    OT_CHECK(out[3] && out[3]->kind == CV_VAL_SEQUENCE && out[3]->n_items == 2 &&
                 t_alloc_is_big(out[3]->items[0]->data) && t_alloc_is_big(out[3]->items[1]->data),
             "the sequence's items have blocks of their own");
    OT_CHECK(out[4] && t_alloc_is_big(out[4]->data), "the If branch's result has its own block");
    for (int i = 0; i < 5; i++)
        cv_val_unref(out[i]);
    carve_model_trim(m);
    OT_CHECK(t_alloc.live == live0 + 1, "the run leaves %ld blocks behind once trimmed, expected 1 (the model's empty pool)",
             t_alloc.live - live0);
    cv_val_unref(in[0]);
    cv_val_unref(in[1]);
    carve_model_free(m);
}

/* Conv (pool-sized output and im2col columns) -> Relu -> Neg -> Add. */
static carve_model *conv_model(carve_ctx *ctx)
{
    carve_model *m = carve_model_new(ctx);
    carve_model_set_opset(m, "", 17);
    int64_t xd[4] = {1, 4, 64, 64}, wd[4] = {8, 4, 3, 3}, bd[1] = {8};
    float w[8 * 4 * 9], b[8];
    for (int i = 0; i < 8 * 4 * 9; i++)
        w[i] = (float)((i * 7) % 11 - 5) / 8.0f;
    for (int i = 0; i < 8; i++)
        b[i] = (float)i / 4.0f;
    carve_value_id in[3] = {input(m, "x", 4, xd),
                            carve_graph_add_initializer(m, 0, "w", CARVE_FLOAT, 4, wd, w, sizeof w),
                            carve_graph_add_initializer(m, 0, "b", CARVE_FLOAT, 1, bd, b, sizeof b)};
    const char *co[1] = {"conv"};
    carve_node_id cn = carve_graph_add_node(m, 0, "Conv", "", "conv", 3, in, 1, co);
    int64_t pads[4] = {1, 1, 1, 1};
    carve_node_set_attr_ints(m, cn, "pads", 4, pads);
    carve_value_id v = carve_node_output(m, cn, 0);
    carve_value_id relu = op1(m, 0, "Relu", "relu", 1, &v);
    carve_value_id neg = op1(m, 0, "Neg", "neg", 1, &relu);
    carve_value_id sum[2] = {neg, v};
    carve_graph_add_output(m, 0, op1(m, 0, "Add", "add", 2, sum));
    return m;
}

static void test_run_alloc_failures(carve_ctx *ctx)
{
    carve_model *m = conv_model(ctx);
    int64_t xd[4] = {1, 4, 64, 64};
    cv_val *in[1] = {ramp(4, xd)}, *want[1] = {0}, *out[1] = {0};
    /* each run starts trimmed, so it makes its slab again: the failures
     * reach the pool's own allocations too */
    OT_CHECK(carve_model_run(m, in, want) == CARVE_OK, "conv run: %s", carve_errmsg(ctx));
    carve_model_trim(m);
    t_alloc.count = 0;
    long live0 = t_alloc.live;
    OT_CHECK(carve_model_run(m, in, out) == CARVE_OK, "conv run again: %s", carve_errmsg(ctx));
    long n = t_alloc.count;
    OT_CHECK(out[0] && want[0] && !memcmp(out[0]->data, want[0]->data, want[0]->nbytes), "runs agree");
    cv_val_unref(out[0]);
    out[0] = NULL;
    carve_model_trim(m);
    OT_CHECK(t_alloc.live == live0, "the run leaves %ld blocks behind", t_alloc.live - live0);
    long failed = 0, fell_back = 0;
    for (long run = 0; run < 2 * n; run++) {
        long k = run % n + 1;
        t_alloc.onward = run >= n;
        t_alloc.count = 0, t_alloc.fail_at = k;
        live0 = t_alloc.live;
        carve_status s = carve_model_run(m, in, out);
        t_alloc.fail_at = 0, t_alloc.onward = false;
        if (s == CARVE_OK) {
            fell_back++;
            OT_CHECK(out[0] && !memcmp(out[0]->data, want[0]->data, want[0]->nbytes),
                     "allocation %ld%s failing: the fallback gives a different result", k, run >= n ? " and on" : "");
        } else {
            failed++;
            OT_CHECK(s == CARVE_ERR_NOMEM && strstr(carve_errmsg(ctx), "out of memory") && !out[0],
                     "allocation %ld%s of %ld failing: got %s \"%s\"", k, run >= n ? " and on" : "", n,
                     carve_status_name(s), carve_errmsg(ctx));
        }
        cv_val_unref(out[0]);
        out[0] = NULL;
        carve_model_trim(m);
        OT_CHECK(t_alloc.live == live0, "allocation %ld%s failing: %ld blocks leak", k, run >= n ? " and on" : "",
                 t_alloc.live - live0);
    }
    printf("  conv run: %ld allocations; %ld clean failures, %ld fallbacks with the same result\n", n, failed,
           fell_back);
    OT_CHECK(failed > 0 && fell_back > 0, "both clean failures (%ld) and fallbacks (%ld)", failed, fell_back);
    cv_val_unref(want[0]);
    cv_val_unref(in[0]);
    carve_model_free(m);
}

int main(void)
{
    carve_set_allocator(&t_counting);
    carve_ctx *ctx = carve_ctx_new();
    test_pool_cuts_and_coalesces();
    test_pool_gives_back_holes();
    test_run_reuses_buffers(ctx);
    test_outputs_outlive_run(ctx);
    test_run_alloc_failures(ctx);
    carve_ctx_free(ctx);
    OT_CHECK(t_alloc.live == 0, "%ld blocks still allocated at the end", t_alloc.live);
    carve_set_allocator(NULL);
    return ot_finish();
}

/* report.c: the lowering report (JSON, docs/report.md) and its human
 * summary: what the report says. One entry per node of the input model
 * (where it went, why, what it was decomposed into, its graph, level and
 * values), the partitions, graphs, counts, folding and recompositions,
 * and the carve_report_* calls. The JSON itself is written by the
 * streaming writer of json_writer.h / json_writer.c. */
#define _POSIX_C_SOURCE 200809L
#include "partition.h"

#include "../io/files.h"
#include "json_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_SCHEMA 2

/* Partitions are numbered model-wide in the report: index_of[delegate]. */
static void placement(cv_jw *w, const cv_lower *lw, const uint32_t *index_of, carve_node_id id)
{
    const cv_lnode *l = &lw->ln[id];
    JKEY(w, "placement");
    if (l->part != CARVE_NONE && l->delegate != CARVE_NONE)
        cv_jint(w, index_of[l->delegate], false);
    else
        jconst(w, "cpu");
}

static void reason(cv_jw *w, const cv_lnode *l)
{
    JKEY(w, "reason");
    jopen(w, '{');
    JKEY(w, "code");
    jconst(w, cv_reason_code(l->reason));
    JKEY(w, "message");
    cv_jstr_memo(w, l->msg ? l->msg : "");
    jclose(w, '}');
}

/* With several targets: the target a delegated node is on, and every
 * target before it (all of them for a node on CPU) with its reason. */
static void targets_of(cv_jw *w, const cv_lower *lw, carve_node_id id)
{
    if (lw->n_t < 2)
        return;
    const cv_lnode *l = &lw->ln[id];
    uint32_t upto = l->part != CARVE_NONE ? l->target : lw->n_t;
    if (l->part != CARVE_NONE) {
        JKEY(w, "target");
        jconst(w, lw->ts[l->target]->name);
    }
    if (!upto)
        return;
    JKEY(w, "refused_by");
    jopen(w, '[');
    for (uint32_t ti = 0; ti < upto; ti++) {
        const cv_treason *r = &lw->tr[(size_t)id * lw->n_t + ti];
        jsep(w);
        jopen(w, '{');
        JKEY(w, "target");
        jconst(w, lw->ts[ti]->name);
        JKEY(w, "code");
        jconst(w, cv_reason_code(r->reason));
        JKEY(w, "message");
        cv_jstr_memo(w, r->msg ? r->msg : "");
        jclose(w, '}');
    }
    jclose(w, ']');
}

/* One target's entry of "target" / "targets". */
static void target_obj(cv_jw *w, const cv_lower *lw, uint32_t ti)
{
    char hash[32];
    jopen(w, '{');
    jkv_str(w, "name", lw->ts[ti]->name);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)lw->ts[ti]->hash);
    jkv_str(w, "profile_hash", hash);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)lw->cpu->hash);
    jkv_str(w, "cpu_profile_hash", hash);
    if (lw->bs[ti]) {
        jkv_str(w, "backend", lw->bs[ti]->name);
        jkv_str(w, "backend_version", lw->bs[ti]->version ? lw->bs[ti]->version : "");
    }
    jclose(w, '}');
}

/* The live nodes made from input node id (decomposition and folding). */
static void pieces(cv_jw *w, const cv_lower *lw, const uint32_t *index_of, const uint32_t *piece_start,
                   const uint32_t *pieces_of, carve_node_id id, uint32_t *delegated, uint32_t *on_cpu)
{
    const carve_model *m = lw->m;
    jopen(w, '[');
    for (uint32_t q = piece_start[id]; q < piece_start[id + 1]; q++) {
        carve_node_id p = pieces_of[q];
        jsep(w);
        jopen(w, '{');
        JKEY(w, "name");
        jnode(w, m, p);
        JKEY(w, "op");
        jconst(w, m->nodes[p].op);
        placement(w, lw, index_of, p);
        targets_of(w, lw, p);
        if (lw->ln[p].part == CARVE_NONE) {
            reason(w, &lw->ln[p]);
            (*on_cpu)++;
        } else {
            (*delegated)++;
        }
        jclose(w, '}');
    }
    jclose(w, ']');
}

/* The "folding" section: what carve_fold did before partitioning. */
static void folding(cv_jw *w, const cv_lower *lw)
{
    const carve_fold_stats *f = &lw->fold;
    JKEY(w, "folding");
    jopen(w, '{');
    JKEY(w, "enabled");
    cv_buf_puts(&w->b, lw->folded ? "true" : "false");
    if (lw->folded) {
        jkv_num(w, "nodes_before", f->nodes_before);
        jkv_num(w, "nodes_after", f->nodes_after);
        jkv_num(w, "nodes_folded", f->folded);
        jkv_num(w, "nodes_removed", f->removed);
        jkv_num(w, "bytes_before", (double)f->bytes_before);
        jkv_num(w, "bytes_after", (double)f->bytes_after);
        jkv_num(w, "bytes_added", (double)f->bytes_added);
        jkv_num(w, "bytes_removed", (double)f->bytes_removed);
        JKEY(w, "refused");
        jopen(w, '{');
        for (int g = 0; g < CARVE_GUARD_COUNT; g++) {
            cv_jkey(w, carve_fold_guard_name((carve_fold_guard)g));
            cv_jnum(w, f->refused[g]);
        }
        jclose(w, '}');
        jkv_num(w, "if_inlined", f->if_inlined);
        jkv_num(w, "layout_moved", f->layout_moved);
        jkv_num(w, "batchnorm_fused", f->bn_fused);
        jkv_num(w, "gemm_fused", f->gemm_fused);
        jkv_num(w, "initializers_removed", f->inits_removed);
        jkv_num(w, "initializers_deduplicated", f->inits_deduped);
        jkv_num(w, "recomposed", f->recomposed);
    }
    jclose(w, '}');
}

/* The "recomposed" section: each pattern recomposition matched, the nodes
 * it took and the node it made (whose placement the nodes list gives under
 * the last member's replaced_by). */
static void recomposed(cv_jw *w, const cv_lower *lw)
{
    const carve_model *m = lw->m;
    const cv_recomp_cfg *rc = &lw->recomp;
    JKEY(w, "recomposed");
    jopen(w, '[');
    for (uint32_t i = 0; i < rc->n_matches; i++) {
        const cv_recomp_match *mt = &rc->matches[i];
        cv_buf_put(&w->b, "\n", 1);
        jsep(w);
        jopen(w, '{');
        JKEY(w, "pattern");
        jconst(w, mt->pattern);
        JKEY(w, "node");
        jnode(w, m, mt->node);
        JKEY(w, "op");
        jconst(w, m->nodes[mt->node].op);
        JKEY(w, "nodes");
        jopen(w, '[');
        for (uint32_t k = 0; k < mt->n; k++) {
            jsep(w);
            jnode(w, m, rc->members[mt->first + k]);
        }
        jclose(w, ']');
        jclose(w, '}');
    }
    jclose(w, ']');
}

static size_t value_bytes(const carve_model *m, carve_value_id v, bool *known)
{
    const cv_type *t = &m->values[v].type;
    if (t->kind != CARVE_TYPE_TENSOR || t->rank < 0 || !t->dtype) {
        *known = false;
        return 0;
    }
    size_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0) {
            *known = false;
            return 0;
        }
        n *= (size_t)t->dims[i].value;
    }
    size_t b = cv_dtype_nbytes(t->dtype, n);
    return b == SIZE_MAX ? 0 : b;
}

/* ---- what the HTML map needs (schema 2): each input node's graph, level,
 * values and subgraphs, taken before lowering rewires the nodes. */
struct cv_report_io {
    uint32_t n, n_graphs, n_values; /* the model's counts when taken */
    uint32_t *start;     /* values of node i: ids[start[i] .. start[i] + n_in[i]) are inputs, then outputs */
    uint32_t *n_in;
    uint32_t *level;
    carve_graph_id *graph;
    carve_value_id *ids;
};

void cv_report_io_free(cv_lower *lw)
{
    struct cv_report_io *io = lw->io;
    if (!io)
        return;
    cv_free(io->start);
    cv_free(io->n_in);
    cv_free(io->level);
    cv_free(io->graph);
    cv_free(io->ids);
    cv_free(io);
    lw->io = NULL;
}

carve_status cv_report_io_take(cv_lower *lw)
{
    const carve_model *m = lw->m;
    uint32_t n = lw->n_orig;
    struct cv_report_io *io = cv_malloc(sizeof *io);
    if (!io)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing the report");
    *io = (struct cv_report_io){.n = n, .n_graphs = m->n_graphs, .n_values = m->n_values};
    lw->io = io;
    io->start = cv_malloc(((size_t)n + 1) * sizeof *io->start);
    io->n_in = cv_malloc(((size_t)n + 1) * sizeof *io->n_in);
    io->level = cv_malloc(((size_t)n + 1) * sizeof *io->level);
    io->graph = cv_malloc(((size_t)n + 1) * sizeof *io->graph);
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += (size_t)m->nodes[i].n_in + m->nodes[i].n_out;
    io->ids = cv_malloc((total + 1) * sizeof *io->ids);
    if (!io->start || !io->n_in || !io->level || !io->graph || !io->ids || total >= UINT32_MAX) {
        cv_report_io_free(lw);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing the report");
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const cv_node *nd = &m->nodes[i];
        io->start[i] = k;
        io->n_in[i] = nd->n_in;
        io->level[i] = 0;
        io->graph[i] = nd->graph;
        for (uint32_t q = 0; q < nd->n_in; q++)
            io->ids[k++] = nd->in[q];
        for (uint32_t q = 0; q < nd->n_out; q++)
            io->ids[k++] = nd->out[q];
    }
    io->start[n] = k;
    /* levels in each graph's (topological) node order: 1 + the largest
     * level of a producer in the same graph, 0 without one */
    for (carve_graph_id g = 0; g < m->n_graphs; g++) {
        const cv_graph *gr = &m->graphs[g];
        for (uint32_t j = 0; j < gr->nodes.n; j++) {
            carve_node_id id = gr->nodes.v[j];
            if (id >= n)
                continue;
            uint32_t l = 0;
            for (uint32_t q = io->start[id], e = q + io->n_in[id]; q < e; q++) {
                carve_value_id v = io->ids[q];
                carve_node_id p = v == CARVE_NONE ? CARVE_NONE : m->values[v].producer;
                if (p < n && io->graph[p] == g && io->level[p] + 1 > l)
                    l = io->level[p] + 1;
            }
            io->level[id] = l;
        }
    }
    return CARVE_OK;
}

/* A list of value names after its key and `[` (JKEY_OPEN): names written
 * before copied with their comma, the write position in a local. */
static void value_names(cv_jw *w, const carve_model *m, const carve_value_id *v, uint32_t n)
{
    char *s = w->b.s;
    size_t k = w->b.n, cap = w->b.cap;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t at = v[i] < w->n_values ? w->at[(size_t)w->n_nodes + v[i]] : 0;
        size_t off = (size_t)(at >> 24), len = (size_t)(at & 0xffffff);
        if (!at || len > 16 || off + 17 > k || k + len + 20 > cap) { /* the general way */
            w->b.n = k;
            if (i)
                cv_buf_put(&w->b, ",", 1);
            jvalue(w, m, v[i]);
            s = w->b.s, k = w->b.n, cap = w->b.cap;
            continue;
        }
        s[k] = ',';
        k += i != 0;
        memcpy(s + k, s + off, 16); /* one move, no overlap; the bytes after it are overwritten next */
        k += len;
    }
    s[k] = ']';
    s[k + 1] = 0;
    w->b.n = k + 1;
    w->first = false;
}

/* "graph", "level", "inputs", "outputs" and "subgraphs" of input node id. */
static void node_io(cv_jw *w, const cv_lower *lw, carve_node_id id)
{
    const carve_model *m = lw->m;
    const struct cv_report_io *io = lw->io;
    const cv_node *n = &m->nodes[id];
    if (!io || id >= io->n)
        return;
    JKEY(w, "graph");
    jconst(w, m->graphs[io->graph[id]].name);
    JKEY(w, "level");
    jcount(w, io->level[id]);
    const carve_value_id *v = io->ids + io->start[id];
    JKEY_OPEN(w, "inputs", "[");
    value_names(w, m, v, io->n_in[id]);
    JKEY_OPEN(w, "outputs", "[");
    value_names(w, m, v + io->n_in[id], io->start[id + 1] - io->start[id] - io->n_in[id]);
    bool any = false;
    for (uint32_t j = 0; j < n->n_attr; j++) {
        const cv_attr *a = &n->attr[j];
        uint32_t cnt = a->kind == CARVE_ATTR_GRAPH ? 1 : a->kind == CARVE_ATTR_GRAPHS ? a->n : 0;
        for (uint32_t k = 0; k < cnt; k++) {
            carve_graph_id g = a->kind == CARVE_ATTR_GRAPH ? a->u.g : a->u.graphs[k];
            if (g >= io->n_graphs)
                continue;
            if (!any) {
                JKEY(w, "subgraphs");
                jopen(w, '[');
                any = true;
            }
            jsep(w);
            jopen(w, '{');
            jkv_str(w, "attribute", a->name);
            JKEY(w, "graph");
            jconst(w, m->graphs[g].name);
            jclose(w, '}');
        }
    }
    if (any)
        jclose(w, ']');
}

/* "graphs": the input model's graphs, each subgraph with the node and
 * attribute holding it. */
static void graphs(cv_jw *w, const cv_lower *lw)
{
    const carve_model *m = lw->m;
    uint32_t ng = lw->io ? lw->io->n_graphs : 1;
    JKEY(w, "graphs");
    jopen(w, '[');
    for (carve_graph_id g = 0; g < ng && g < m->n_graphs; g++) {
        const cv_graph *gr = &m->graphs[g];
        jsep(w);
        jopen(w, '{');
        jkv_str(w, "name", gr->name);
        if (gr->parent != CARVE_NONE && gr->owner != CARVE_NONE) {
            jkv_str(w, "parent", m->graphs[gr->parent].name);
            jkv_str(w, "node", m->nodes[gr->owner].name);
        }
        jclose(w, '}');
    }
    jclose(w, ']');
}

/* "counts": the summary's figures (the human summary says the same). */
static void counts(cv_jw *w, const cv_lower *lw, uint32_t delegated, uint32_t on_cpu, uint32_t decomposed,
                   uint32_t folded, const uint32_t *reasons)
{
    JKEY(w, "counts");
    jopen(w, '{');
    jkv_num(w, "nodes", lw->n_orig);
    jkv_num(w, "delegated", delegated);
    jkv_num(w, "cpu", on_cpu);
    jkv_num(w, "decomposed", decomposed);
    jkv_num(w, "folded", folded);
    jkv_num(w, "partitions", lw->n_parts);
    JKEY(w, "cpu_reasons");
    jopen(w, '{');
    for (int c = 1; c < CV_R_COUNT; c++)
        if (reasons[c]) {
            cv_jkey(w, cv_reason_code((cv_reason)c));
            cv_jnum(w, reasons[c]);
        }
    jclose(w, '}');
    jclose(w, '}');
}

carve_status cv_report_build(cv_lower *lw, carve_report **out)
{
    carve_model *m = lw->m;
    uint32_t *index_of = cv_malloc(((size_t)m->n_nodes + 1) * sizeof *index_of);
    /* pieces by origin: pieces_of[piece_start[o] .. piece_start[o+1]) */
    uint32_t *piece_start = cv_malloc(((size_t)lw->n_orig + 2) * sizeof *piece_start);
    uint32_t *pieces_of = cv_malloc(((size_t)m->n_nodes + 1) * sizeof *pieces_of);
    carve_report *r = cv_malloc(sizeof *r);
    char *sum = cv_malloc(4096);
    /* names cached: the input model's nodes and values (what lowering
     * made lies mostly inside Delegate bodies, which the report never
     * names) */
    cv_jw w = {.first = true, .n_nodes = lw->n_orig, .n_values = lw->io ? lw->io->n_values : m->n_values};
    size_t n_at = (size_t)w.n_nodes + w.n_values + 1;
    w.at = cv_malloc(n_at * sizeof *w.at);
    if (!index_of || !piece_start || !pieces_of || !r || !sum || !w.at)
        goto nomem;
    memset(w.at, 0, n_at * sizeof *w.at);
    /* the buffer at its final size at once (growing it by doubling touches
     * and copies twice the memory): about 100 bytes a node and 12 a value
     * it names; the pages reserved but not written are never touched */
    size_t n_names = 0;
    for (uint32_t i = 0; lw->io && i < lw->io->n; i++)
        n_names += lw->io->start[i + 1] - lw->io->start[i];
    for (uint32_t i = 0; i < lw->n_parts; i++)
        n_names += (size_t)lw->parts[i].nodes.n + lw->parts[i].inputs.n + lw->parts[i].outputs.n;
    cv_buf_reserve(&w.b, (size_t)lw->n_orig * 128 + n_names * 16 + (size_t)lw->n_parts * 256 + 4096);
    for (uint32_t i = 0; i < lw->n_parts; i++)
        index_of[lw->parts[i].delegate] = i;
    memset(piece_start, 0, ((size_t)lw->n_orig + 2) * sizeof *piece_start);
    /* live pieces only (a piece decomposed again shows its own pieces) */
#define IS_PIECE(p) (!m->nodes[p].dead && (p) < lw->cap && lw->ln[p].origin < lw->n_orig && lw->ln[p].origin != (p))
    for (carve_node_id p = lw->n_orig; p < m->n_nodes; p++)
        if (IS_PIECE(p))
            piece_start[lw->ln[p].origin + 2]++;
    for (uint32_t o = 0; o < lw->n_orig; o++)
        piece_start[o + 2] += piece_start[o + 1];
    for (carve_node_id p = lw->n_orig; p < m->n_nodes; p++)
        if (IS_PIECE(p))
            pieces_of[piece_start[lw->ln[p].origin + 1]++] = p;
#undef IS_PIECE
    jopen(&w, '{');
    jkv_num(&w, "schema_version", REPORT_SCHEMA);
    jkv_str(&w, "carve_version", CARVE_VERSION);
    /* "target": the first (the only one, usually); "targets": all of them
     * in priority order */
    JKEY(&w, "target");
    target_obj(&w, lw, 0);
    JKEY(&w, "targets");
    jopen(&w, '[');
    for (uint32_t ti = 0; ti < lw->n_t; ti++) {
        jsep(&w);
        target_obj(&w, lw, ti);
    }
    jclose(&w, ']');
    uint32_t delegated = 0, on_cpu = 0, decomposed = 0, folded = 0;
    uint32_t reasons[CV_R_COUNT] = {0};
    JKEY(&w, "nodes");
    jopen(&w, '[');
    for (carve_node_id id = 0; id < lw->n_orig; id++) {
        const cv_node *n = &m->nodes[id];
        const cv_lnode *l = &lw->ln[id];
        cv_buf_put(&w.b, id ? "\n,{" : "\n{", id ? 3 : 2);
        w.first = true;
        JKEY(&w, "name");
        jnode(&w, m, id);
        JKEY(&w, "op");
        jconst(&w, n->op);
        if (*n->domain) {
            JKEY(&w, "domain");
            jconst(&w, n->domain);
        }
        const cv_fold_node *fn = lw->folded && id < lw->n_fates ? &lw->fates[id] : NULL;
        if (fn && fn->fate != CV_FATE_KEPT) {
            folded++;
            JKEY(&w, "placement");
            jconst(&w, fn->fate == CV_FATE_FOLDED ? "folded" : "removed");
            if (fn->why) {
                JKEY(&w, "why");
                jconst(&w, fn->why);
            }
            if (fn->into != CARVE_NONE) {
                JKEY(&w, "into");
                jnode(&w, m, fn->into);
            }
            if (piece_start[id] < piece_start[id + 1]) {
                JKEY(&w, "replaced_by");
                pieces(&w, lw, index_of, piece_start, pieces_of, id, &delegated, &on_cpu);
            }
        } else if (l->decomposed) {
            decomposed++;
            jkv_str(&w, "placement", "decomposed");
            reason(&w, l);
            JKEY(&w, "decomposed");
            pieces(&w, lw, index_of, piece_start, pieces_of, id, &delegated, &on_cpu);
        } else {
            placement(&w, lw, index_of, id);
            targets_of(&w, lw, id);
            if (l->part == CARVE_NONE) {
                reason(&w, l);
                on_cpu++;
                reasons[l->reason]++;
            } else {
                delegated++;
            }
        }
        node_io(&w, lw, id); /* last: placement stays right after op */
        jclose(&w, '}');
    }
    jclose(&w, ']');
    JKEY(&w, "partitions");
    jopen(&w, '[');
    for (uint32_t i = 0; i < lw->n_parts; i++) {
        const cv_lpart *p = &lw->parts[i];
        cv_buf_put(&w.b, "\n", 1);
        jsep(&w);
        jopen(&w, '{');
        JKEY(&w, "index");
        jcount(&w, i);
        JKEY(&w, "target");
        jconst(&w, lw->ts[p->target]->name);
        JKEY(&w, "delegate");
        jnode(&w, m, p->delegate);
        JKEY(&w, "graph");
        jconst(&w, m->graphs[p->graph].name);
        JKEY(&w, "nodes");
        jopen(&w, '[');
        for (uint32_t k = 0; k < p->nodes.n; k++) {
            jsep(&w);
            jnode(&w, m, p->nodes.v[k]);
        }
        jclose(&w, ']');
        bool known = true;
        size_t bytes = 0;
        JKEY(&w, "inputs");
        jopen(&w, '[');
        for (uint32_t k = 0; k < p->inputs.n; k++) {
            jsep(&w);
            jvalue(&w, m, p->inputs.v[k]);
            bytes += value_bytes(m, p->inputs.v[k], &known);
        }
        jclose(&w, ']');
        JKEY(&w, "outputs");
        jopen(&w, '[');
        for (uint32_t k = 0; k < p->outputs.n; k++) {
            jsep(&w);
            jvalue(&w, m, p->outputs.v[k]);
            bytes += value_bytes(m, p->outputs.v[k], &known);
        }
        jclose(&w, ']');
        JKEY(&w, "boundary_bytes");
        if (known)
            cv_jint(&w, bytes, false);
        else
            cv_buf_puts(&w.b, "null");
        /* the Delegate's `encodings` attribute as it is (JSON already) */
        const char *enc = p->encoded.n ? cv_attr_s(m, p->delegate, "encodings", NULL) : NULL;
        if (enc) {
            JKEY(&w, "encodings");
            cv_buf_puts(&w.b, enc);
        }
        jclose(&w, '}');
    }
    jclose(&w, ']');
    cv_buf_put(&w.b, "\n", 1);
    graphs(&w, lw);
    counts(&w, lw, delegated, on_cpu, decomposed, folded, reasons);
    folding(&w, lw);
    recomposed(&w, lw);
    jkv_num(&w, "rounds", lw->rounds);
    jkv_num(&w, "compile_rounds", lw->compile_rounds);
    JKEY(&w, "time_ms");
    jopen(&w, '{');
    jkv_num(&w, "folding", lw->ms_fold);
    jkv_num(&w, "inference", lw->ms_infer);
    jkv_num(&w, "partitioning", lw->ms_partition);
    jkv_num(&w, "decomposition", lw->ms_decompose);
    jkv_num(&w, "delegates", lw->ms_delegate);
    jkv_num(&w, "total", lw->ms_total);
    jclose(&w, '}');
    jclose(&w, '}');
    if (w.b.failed)
        goto nomem;
    char names[512];
    size_t nk = 0;
    for (uint32_t ti = 0; ti < lw->n_t && nk < sizeof names - 1; ti++)
        nk += (size_t)snprintf(names + nk, sizeof names - nk, "%s%s", ti ? "+" : "", lw->ts[ti]->name);
    size_t k = (size_t)snprintf(sum, 4096,
                                "target %s: %u of %u nodes delegated in %u partition%s, %u on CPU, %u decomposed, %u round%s\n",
                                names, delegated, delegated + on_cpu, lw->n_parts, lw->n_parts == 1 ? "" : "s",
                                on_cpu, decomposed, lw->rounds, lw->rounds == 1 ? "" : "s");
    for (uint32_t ti = 0; lw->n_t > 1 && ti < lw->n_t && k < 4000; ti++) {
        uint32_t np = 0, nn = 0;
        for (uint32_t i = 0; i < lw->n_parts; i++)
            if (lw->parts[i].target == ti) {
                np++;
                nn += lw->parts[i].nodes.n;
            }
        k += (size_t)snprintf(sum + k, 4096 - k, "  %s: %u node%s in %u partition%s\n", lw->ts[ti]->name, nn,
                              nn == 1 ? "" : "s", np, np == 1 ? "" : "s");
    }
    if (lw->folded) {
        const carve_fold_stats *f = &lw->fold;
        k += (size_t)snprintf(sum + k, 4096 - k,
                              "folding: %u -> %u nodes (%u folded, %u removed; %u input nodes taken), "
                              "%llu bytes added, %llu removed\n",
                              f->nodes_before, f->nodes_after, f->folded, f->removed, folded,
                              (unsigned long long)f->bytes_added, (unsigned long long)f->bytes_removed);
        if (f->recomposed && k < 4000)
            k += (size_t)snprintf(sum + k, 4096 - k, "recomposed: %u pattern%s into one op each\n", f->recomposed,
                                  f->recomposed == 1 ? "" : "s");
        for (int g = 0; g < CARVE_GUARD_COUNT && k < 4000; g++)
            if (f->refused[g])
                k += (size_t)snprintf(sum + k, 4096 - k, "  not folded: %u %s\n", f->refused[g],
                                      carve_fold_guard_name((carve_fold_guard)g));
    }
    uint32_t n_enc = 0, n_enc_parts = 0;
    for (uint32_t i = 0; i < lw->n_parts; i++) {
        n_enc += lw->parts[i].encoded.n;
        n_enc_parts += lw->parts[i].encoded.n > 0;
    }
    if (n_enc && k < 4000)
        k += (size_t)snprintf(sum + k, 4096 - k, "encodings: %u quantized values in %u Delegate%s\n", n_enc,
                              n_enc_parts, n_enc_parts == 1 ? "" : "s");
    if (lw->compile_rounds > 1 && k < 4000)
        k += (size_t)snprintf(sum + k, 4096 - k, "backend %s refused partitions: lowered %u times\n",
                              lw->n_t > 1 ? "(several)" : lw->b ? lw->b->name : "?", lw->compile_rounds);
    for (int c = 1; c < CV_R_COUNT && k < 4000; c++)
        if (reasons[c])
            k += (size_t)snprintf(sum + k, 4096 - k, "  cpu: %u %s\n", reasons[c], cv_reason_code((cv_reason)c));
    cv_free(w.at);
    r->summary = sum;
    r->json = w.b.s;
    r->json_n = w.b.n;
    cv_free(index_of);
    cv_free(piece_start);
    cv_free(pieces_of);
    *out = r;
    return CARVE_OK;
nomem:
    cv_free(w.at);
    cv_free(index_of);
    cv_free(piece_start);
    cv_free(pieces_of);
    cv_free(r);
    cv_free(sum);
    cv_buf_free(&w.b);
    return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing the report");
}

const char *carve_report_json(carve_report *r) { return r->json; }

carve_status carve_outputs_add_report(carve_outputs *o, carve_report *r, const char *path)
{
    if (!o)
        return CARVE_ERR_NOMEM;
    carve_ctx *ctx = cv_outputs_ctx(o);
    if (!r || !r->json) {
        cv_outputs_fail(o);
        return cv_error(ctx, CARVE_ERR_ARG, "%s: %s", path ? path : "",
                        r ? "the report's JSON was dropped (carve_report_drop_json)" : "no report to write");
    }
    FILE *f = cv_outputs_open(o, path, "report");
    if (!f)
        return carve_errcode(ctx);
    if (fwrite(r->json, 1, r->json_n, f) != r->json_n || fputc('\n', f) == EOF) {
        cv_outputs_fail(o);
        return cv_error(ctx, CARVE_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    cv_outputs_written(o, f);
    return CARVE_OK;
}
const char *carve_report_summary(carve_report *r) { return r->summary; }

void carve_report_drop_json(carve_report *r)
{
    if (!r)
        return;
    cv_free(r->json);
    r->json = NULL;
    r->json_n = 0;
}

void carve_report_free(carve_report *r)
{
    if (!r)
        return;
    cv_free(r->json);
    cv_free(r->summary);
    cv_free(r);
}

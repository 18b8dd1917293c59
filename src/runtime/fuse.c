/* fuse.c: the run-time fusion plan of a graph: which Conv, MatMul and Gemm
 * nodes apply the element-wise chain that follows them (bias Add, Mul,
 * Relu, Clip, HardSigmoid, HardSwish, Sigmoid-Mul, a residual Add...) to
 * their output while it is made, instead of each op making one more pass
 * over memory (docs/performance.md, "Runtime").
 *
 * It is a plan of the interpreter, not a change to the model: the chain's
 * nodes stay in the graph and run one by one whenever the head did not
 * apply the chain (another dtype, a broadcast the epilogue does not take, a
 * trace of every value, a target simulator's hook). A value inside a chain
 * is never stored, so it must have no reader outside the chain, not be an
 * output of its graph and not be captured by a subgraph; the chain's last
 * value is stored as usual. Steps compute the ops' own float expressions in
 * the same order (src/ops/k_epilogue.c): results are bit-identical. */
#include "runtime.h"

#include <string.h>

/* A node after the head that reads none of the chain's values for this many
 * positions ends the search. */
#define CHAIN_GAP 16

static bool head_op(const cv_interp *ip, carve_node_id id)
{
    const cv_node *nd = &ip->m->nodes[id];
    const cv_op_def *def = id < ip->n_nodes ? ip->defs[id] : NULL;
    return nd->n_out >= 1 && nd->out[0] != CARVE_NONE && def && (def->flags & CV_OP_EPI_HEAD);
}

static bool float_or_unknown(const carve_model *m, carve_value_id v)
{
    const cv_type *t = &m->values[v].type;
    return t->kind == CARVE_TYPE_TENSOR ? t->dtype == CARVE_UNDEFINED || t->dtype == CARVE_FLOAT
                                        : t->kind == CARVE_TYPE_UNKNOWN;
}

/* Working state of one chain while it grows. */
typedef struct {
    uint32_t n;                          /* chain nodes after the head */
    carve_node_id node[CV_EPI_MAX];
    carve_value_id val[CV_EPI_MAX + 1];  /* val[0] the head's output, val[t + 1] node t's */
    cv_epi_step step[CV_EPI_MAX];        /* in[] as value slots: >= 0 index into val, else -1 - ext */
    carve_value_id ext[CV_EPI_EXT];
    const cv_tensor *ext_t[CV_EPI_EXT]; /* a Constant node's tensor, or NULL */
    uint32_t n_ext;
} grow;

static int val_index(const grow *c, uint32_t nv, carve_value_id v)
{
    for (uint32_t j = 0; j < nv; j++)
        if (c->val[j] == v)
            return (int)j;
    return -1;
}

/* Can node id join c as step c->n? Its other operands must exist when
 * the head runs: made before position head_pos, the graph's inputs and
 * initializers, outer values, or a Constant's tensor. */
static bool try_add(const carve_model *m, carve_node_id id, grow *c, const uint32_t *defpos, uint32_t head_pos,
                    carve_graph_id g)
{
    const cv_node *nd = &m->nodes[id];
    cv_epi_step st;
    uint32_t n_in;
    if (c->n >= CV_EPI_MAX || nd->n_out != 1 || nd->out[0] == CARVE_NONE || !float_or_unknown(m, nd->out[0]) ||
        !cv_epi_step_of(m, id, &st, &n_in))
        return false;
    bool reads_chain = false;
    uint32_t n_ext = c->n_ext;
    for (uint32_t s = 0; s < nd->n_in && s < 3; s++) {
        carve_value_id x = nd->in[s];
        if (x == CARVE_NONE) {
            if (st.op != CV_EPI_CLIP || s == 0)
                return false;
            st.in[s] = CV_EPI_NONE;
            continue;
        }
        int j = val_index(c, c->n + 1, x);
        if (j >= 0) {
            if (st.op == CV_EPI_CLIP && s > 0)
                return false; /* a bound the chain computes */
            st.in[s] = (int8_t)j;
            reads_chain = true;
            continue;
        }
        const cv_value *xv = &m->values[x];
        bool avail = xv->graph != g || defpos[x] == CARVE_NONE - 1 || defpos[x] < head_pos;
        /* a Constant after the head: its tensor, bound by the plan */
        const cv_tensor *t = NULL;
        if (!avail && xv->producer != CARVE_NONE && cv_node_is_constant(&m->nodes[xv->producer]))
            avail = (t = cv_attr_t(m, xv->producer, "value")) != NULL;
        if (!avail || n_ext >= CV_EPI_EXT)
            return false;
        c->ext_t[n_ext] = t;
        c->ext[n_ext] = x;
        st.in[s] = (int8_t)(-1 - (int)n_ext++);
    }
    if (!reads_chain)
        return false;
    c->n_ext = n_ext;
    c->step[c->n] = st;
    c->node[c->n] = id;
    c->val[++c->n] = nd->out[0];
    return true;
}

/* Turns the first L steps of c into ch (registers allocated); false when
 * they are not a valid chain or need too many registers. */
static bool finish(const carve_model *m, const grow *c, uint32_t L, const uint32_t *uses, cv_chain *ch)
{
    /* every value but the last is read only inside the first L steps */
    for (uint32_t j = 0; j < L; j++) {
        uint32_t inside = 0;
        for (uint32_t t = 0; t < L; t++) {
            const cv_node *nd = &m->nodes[c->node[t]];
            for (uint32_t s = 0; s < nd->n_in; s++)
                inside += nd->in[s] == c->val[j];
        }
        if (inside != uses[c->val[j]])
            return false;
    }
    /* registers: register 0 is the output tile; a value's register is free
     * after the step that reads it last (steps are element-wise, so a step
     * may write the register it reads) */
    int last[CV_EPI_MAX + 1], reg[CV_EPI_MAX + 1];
    for (uint32_t j = 0; j <= L; j++)
        last[j] = (int)j - 1; /* unread: dies where it is made */
    for (uint32_t t = 0; t < L; t++)
        for (int s = 0; s < 3; s++)
            if (c->step[t].in[s] >= 0 && c->step[t].in[s] != CV_EPI_NONE)
                last[c->step[t].in[s]] = (int)t;
    bool busy[CV_EPI_REGS] = {true};
    reg[0] = 0;
    memset(ch, 0, sizeof *ch);
    for (uint32_t t = 0; t < L; t++) {
        cv_epi_step st = c->step[t];
        for (int s = 0; s < 3; s++)
            if (st.in[s] >= 0 && st.in[s] != CV_EPI_NONE)
                st.in[s] = (int8_t)reg[st.in[s]];
        for (uint32_t j = 0; j <= t; j++)
            if (last[j] == (int)t)
                busy[reg[j]] = false;
        int d = 0;
        if (t + 1 < L)
            while (d < CV_EPI_REGS && busy[d])
                d++;
        if (d == CV_EPI_REGS)
            return false;
        busy[d] = true;
        reg[t + 1] = d;
        st.dst = (int8_t)d;
        ch->proto.step[t] = st;
        if (last[t + 1] == (int)t) /* made and never read: free again */
            busy[d] = t + 1 == L;
    }
    ch->proto.n_steps = L;
    ch->proto.n_ext = c->n_ext;
    memcpy(ch->ext, c->ext, c->n_ext * sizeof *c->ext);
    for (uint32_t x = 0; x < c->n_ext; x++)
        if (c->ext_t[x] && !(ch->ext_own[x] = cv_val_from_tensor(c->ext_t[x]))) {
            cv_chain_free(ch);
            return false;
        }
    ch->n_nodes = L;
    memcpy(ch->nodes, c->node, L * sizeof *c->node);
    ch->final = c->val[L];
    return true;
}

void cv_chain_free(cv_chain *ch)
{
    for (uint32_t x = 0; x < CV_EPI_EXT; x++)
        cv_val_unref(ch->ext_own[x]);
    memset(ch->ext_own, 0, sizeof ch->ext_own);
}

carve_status cv_fuse_plan(cv_interp *ip, carve_graph_id g, const cv_ids *captured)
{
    carve_model *m = ip->m;
    cv_graph *gr = &m->graphs[g];
    cv_sched *s = &ip->sched[g];
    uint32_t n = gr->nodes.n;
    s->chain_at = cv_malloc(((size_t)n + 1) * sizeof *s->chain_at);
    if (!s->chain_at)
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
    memset(s->chain_at, 0, ((size_t)n + 1) * sizeof *s->chain_at);
    bool has_head = false;
    for (uint32_t i = 0; i < n && !has_head; i++)
        has_head = head_op(ip, gr->nodes.v[i]);
    if (!has_head)
        return CARVE_OK;
    uint32_t *uses = cv_malloc(((size_t)m->n_values + 1) * sizeof *uses);
    uint32_t *defpos = cv_malloc(((size_t)m->n_values + 1) * sizeof *defpos);
    bool *taken = cv_malloc((size_t)n + 1);
    carve_status st = CARVE_OK;
    if (!uses || !defpos || !taken) {
        st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
        goto done;
    }
    memset(taken, 0, (size_t)n + 1);
    /* uses: readers in g (each input slot), captures, graph outputs;
     * defpos: the position making a value, CARVE_NONE - 1 for the graph's
     * inputs and initializers, CARVE_NONE for none */
    for (uint32_t i = 0; i < n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < nd->n_in; j++)
            if (nd->in[j] != CARVE_NONE)
                uses[nd->in[j]] = 0, defpos[nd->in[j]] = CARVE_NONE;
    }
    for (uint32_t i = 0; i < n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < nd->n_out; j++)
            if (nd->out[j] != CARVE_NONE)
                uses[nd->out[j]] = 0, defpos[nd->out[j]] = i;
    }
    for (uint32_t i = 0; i < gr->inputs.n; i++)
        defpos[gr->inputs.v[i]] = CARVE_NONE - 1;
    for (uint32_t i = 0; i < gr->inits.n; i++)
        defpos[gr->inits.v[i]] = CARVE_NONE - 1;
    for (uint32_t i = 0; i < n; i++) {
        const cv_node *nd = &m->nodes[gr->nodes.v[i]];
        for (uint32_t j = 0; j < nd->n_in; j++)
            if (nd->in[j] != CARVE_NONE)
                uses[nd->in[j]]++;
    }
    for (uint32_t i = 0; i < captured->n; i++)
        uses[captured->v[i]] = CARVE_NONE; /* never inside a chain */
    for (uint32_t i = 0; i < gr->outputs.n; i++)
        uses[gr->outputs.v[i]] = CARVE_NONE;
    for (uint32_t i = 0; i < n; i++) {
        carve_node_id hid = gr->nodes.v[i];
        const cv_node *hd = &m->nodes[hid];
        if (taken[i] || !head_op(ip, hid) || !float_or_unknown(m, hd->out[0]))
            continue;
        grow c;
        c.n = 0, c.n_ext = 0;
        c.val[0] = hd->out[0];
        uint32_t pos[CV_EPI_MAX];
        for (uint32_t p = i + 1, gap = 0; p < n && gap < CHAIN_GAP && c.n < CV_EPI_MAX; p++) {
            const cv_node *nd = &m->nodes[gr->nodes.v[p]];
            bool reads = false;
            for (uint32_t j = 0; j < nd->n_in && !reads; j++)
                reads = nd->in[j] != CARVE_NONE && val_index(&c, c.n + 1, nd->in[j]) >= 0;
            if (!reads) {
                gap++;
                continue;
            }
            if (taken[p] || !try_add(m, gr->nodes.v[p], &c, defpos, i, g))
                break;
            pos[c.n - 1] = p;
            gap = 0;
        }
        for (uint32_t L = c.n; L > 0; L--) {
            cv_chain ch;
            if (!finish(m, &c, L, uses, &ch))
                continue;
            cv_chain *grown = cv_realloc(s->chains, ((size_t)s->n_chains + 1) * sizeof *grown);
            if (!grown) {
                cv_chain_free(&ch);
                st = cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory preparing to run");
                goto done;
            }
            s->chains = grown;
            ch.head = hid;
            s->chains[s->n_chains++] = ch;
            s->chain_at[i] = s->n_chains;
            for (uint32_t t = 0; t < L; t++)
                taken[pos[t]] = true;
            break;
        }
    }
done:
    cv_free(uses);
    cv_free(defpos);
    cv_free(taken);
    return st;
}

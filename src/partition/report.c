/* report.c: the lowering report (JSON, docs/report.md) and its human
 * summary. One entry per node of the input model: where it went, why, and
 * what it was decomposed into. */
#include "partition.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_SCHEMA 1

static cJSON *placement(const cv_lower *lw, carve_node_id id)
{
    const cv_lnode *l = &lw->ln[id];
    if (l->part != CARVE_NONE) {
        /* partitions are numbered model-wide in the report */
        for (uint32_t i = 0; i < lw->n_parts; i++)
            if (lw->parts[i].delegate == l->delegate)
                return cJSON_CreateNumber(i);
    }
    return cJSON_CreateString("cpu");
}

static cJSON *reason(const cv_lnode *l)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "code", cv_reason_code(l->reason));
    cJSON_AddStringToObject(r, "message", l->msg ? l->msg : "");
    return r;
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

carve_status cv_report_build(cv_lower *lw, carve_report **out)
{
    carve_model *m = lw->m;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schema_version", REPORT_SCHEMA);
    cJSON_AddStringToObject(root, "carve_version", CARVE_VERSION);
    cJSON *tj = cJSON_AddObjectToObject(root, "target");
    cJSON_AddStringToObject(tj, "name", lw->t->name);
    char hash[32];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)lw->t->hash);
    cJSON_AddStringToObject(tj, "profile_hash", hash);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)lw->cpu->hash);
    cJSON_AddStringToObject(tj, "cpu_profile_hash", hash);
    /* pieces by origin */
    cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
    uint32_t delegated = 0, on_cpu = 0, decomposed = 0;
    uint32_t reasons[CV_R_COUNT] = {0};
    for (carve_node_id id = 0; id < lw->n_orig; id++) {
        const cv_node *n = &m->nodes[id];
        const cv_lnode *l = &lw->ln[id];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", n->name);
        cJSON_AddStringToObject(e, "op", n->op);
        if (*n->domain)
            cJSON_AddStringToObject(e, "domain", n->domain);
        if (l->decomposed) {
            decomposed++;
            cJSON_AddStringToObject(e, "placement", "decomposed");
            cJSON_AddItemToObject(e, "reason", reason(l));
            cJSON *pieces = cJSON_AddArrayToObject(e, "decomposed");
            for (carve_node_id p = lw->n_orig; p < m->n_nodes; p++) {
                /* live pieces only (a piece decomposed again shows its own) */
                if (m->nodes[p].dead || p >= lw->cap || lw->ln[p].origin != id || !strcmp(m->nodes[p].op, "Delegate"))
                    continue;
                cJSON *pe = cJSON_CreateObject();
                cJSON_AddStringToObject(pe, "name", m->nodes[p].name);
                cJSON_AddStringToObject(pe, "op", m->nodes[p].op);
                cJSON_AddItemToObject(pe, "placement", placement(lw, p));
                if (lw->ln[p].part == CARVE_NONE)
                    cJSON_AddItemToObject(pe, "reason", reason(&lw->ln[p]));
                cJSON_AddItemToArray(pieces, pe);
                if (lw->ln[p].part == CARVE_NONE)
                    on_cpu++;
                else
                    delegated++;
            }
        } else {
            cJSON_AddItemToObject(e, "placement", placement(lw, id));
            if (l->part == CARVE_NONE) {
                cJSON_AddItemToObject(e, "reason", reason(l));
                on_cpu++;
                reasons[l->reason]++;
            } else {
                delegated++;
            }
        }
        cJSON_AddItemToArray(nodes, e);
    }
    cJSON *parts = cJSON_AddArrayToObject(root, "partitions");
    for (uint32_t i = 0; i < lw->n_parts; i++) {
        const cv_lpart *p = &lw->parts[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "target", lw->t->name);
        cJSON_AddStringToObject(e, "delegate", m->nodes[p->delegate].name);
        cJSON_AddStringToObject(e, "graph", m->graphs[p->graph].name);
        cJSON *pn = cJSON_AddArrayToObject(e, "nodes");
        for (uint32_t k = 0; k < p->nodes.n; k++)
            cJSON_AddItemToArray(pn, cJSON_CreateString(m->nodes[p->nodes.v[k]].name));
        bool known = true;
        size_t bytes = 0;
        cJSON *pi = cJSON_AddArrayToObject(e, "inputs");
        for (uint32_t k = 0; k < p->inputs.n; k++) {
            cJSON_AddItemToArray(pi, cJSON_CreateString(m->values[p->inputs.v[k]].name));
            bytes += value_bytes(m, p->inputs.v[k], &known);
        }
        cJSON *po = cJSON_AddArrayToObject(e, "outputs");
        for (uint32_t k = 0; k < p->outputs.n; k++) {
            cJSON_AddItemToArray(po, cJSON_CreateString(m->values[p->outputs.v[k]].name));
            bytes += value_bytes(m, p->outputs.v[k], &known);
        }
        if (known)
            cJSON_AddNumberToObject(e, "boundary_bytes", (double)bytes);
        else
            cJSON_AddNullToObject(e, "boundary_bytes");
        cJSON_AddItemToArray(parts, e);
    }
    cJSON_AddNumberToObject(root, "rounds", lw->rounds);
    cJSON *tm = cJSON_AddObjectToObject(root, "time_ms");
    cJSON_AddNumberToObject(tm, "inference", lw->ms_infer);
    cJSON_AddNumberToObject(tm, "partitioning", lw->ms_partition);
    cJSON_AddNumberToObject(tm, "decomposition", lw->ms_decompose);
    cJSON_AddNumberToObject(tm, "delegates", lw->ms_delegate);
    cJSON_AddNumberToObject(tm, "total", lw->ms_total);
    carve_report *r = cv_malloc(sizeof *r);
    char *json = cJSON_Print(root);
    cJSON_Delete(root);
    char *sum = cv_malloc(4096);
    if (!r || !json || !sum) {
        cv_free(r);
        free(json);
        cv_free(sum);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing the report");
    }
    size_t k = (size_t)snprintf(sum, 4096,
                                "target %s: %u of %u nodes delegated in %u partition%s, %u on CPU, %u decomposed, %u round%s\n",
                                lw->t->name, delegated, delegated + on_cpu, lw->n_parts, lw->n_parts == 1 ? "" : "s",
                                on_cpu, decomposed, lw->rounds, lw->rounds == 1 ? "" : "s");
    for (int c = 1; c < CV_R_COUNT && k < 4000; c++)
        if (reasons[c])
            k += (size_t)snprintf(sum + k, 4096 - k, "  cpu: %u %s\n", reasons[c], cv_reason_code((cv_reason)c));
    r->summary = sum;
    /* cJSON allocates with malloc; keep one allocator per pointer */
    r->json = cv_malloc(strlen(json) + 1);
    if (!r->json) {
        free(json);
        cv_free(sum);
        cv_free(r);
        return cv_error(m->ctx, CARVE_ERR_NOMEM, "out of memory writing the report");
    }
    strcpy(r->json, json);
    free(json);
    *out = r;
    return CARVE_OK;
}

const char *carve_report_json(carve_report *r) { return r->json; }
const char *carve_report_summary(carve_report *r) { return r->summary; }

void carve_report_free(carve_report *r)
{
    if (!r)
        return;
    cv_free(r->json);
    cv_free(r->summary);
    cv_free(r);
}

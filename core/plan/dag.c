#include "dag.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static gm_status_t build_rows(uint32_t node_count, uint32_t edge_count, const uint32_t *key,
                              const uint32_t *value, uint32_t **start_out, uint32_t **list_out) {
    uint32_t *start = calloc((size_t)node_count + 1, sizeof *start);
    uint32_t *cursor = malloc(((size_t)node_count + 1) * sizeof *cursor);
    uint32_t *list = malloc(((size_t)edge_count + 1) * sizeof *list);
    if (!start || !cursor || !list) {
        free(start);
        free(cursor);
        free(list);
        return GM_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t e = 0; e < edge_count; e++)
        start[key[e] + 1]++;
    for (uint32_t v = 0; v < node_count; v++)
        start[v + 1] += start[v];
    memcpy(cursor, start, (size_t)node_count * sizeof *cursor);
    /* Each row keeps the input's edge order, so results never depend on hashing or sorting. */
    for (uint32_t e = 0; e < edge_count; e++)
        list[cursor[key[e]]++] = value[e];
    free(cursor);
    *start_out = start;
    *list_out = list;
    return GM_OK;
}

gm_status_t gm_dag_build(gm_dag_t *dag, uint32_t node_count, uint32_t edge_count,
                         const uint32_t *edge_from, const uint32_t *edge_to) {
    memset(dag, 0, sizeof *dag);
    for (uint32_t e = 0; e < edge_count; e++)
        if (edge_from[e] >= node_count || edge_to[e] >= node_count)
            return GM_ERR_INVALID_VALUE;
    dag->node_count = node_count;
    dag->edge_count = edge_count;
    gm_status_t st =
        build_rows(node_count, edge_count, edge_from, edge_to, &dag->succ_start, &dag->succ);
    if (st == GM_OK)
        st = build_rows(node_count, edge_count, edge_to, edge_from, &dag->pred_start, &dag->pred);
    if (st != GM_OK) {
        gm_dag_free(dag);
        return st;
    }
    dag->order = malloc(((size_t)node_count + 1) * sizeof *dag->order);
    dag->rank = malloc(((size_t)node_count + 1) * sizeof *dag->rank);
    uint32_t *indeg = malloc(((size_t)node_count + 1) * sizeof *indeg);
    if (!dag->order || !dag->rank || !indeg) {
        free(indeg);
        gm_dag_free(dag);
        return GM_ERR_OUT_OF_MEMORY;
    }
    /* Kahn's algorithm; `order` doubles as the FIFO queue. */
    uint32_t head = 0, tail = 0;
    for (uint32_t v = 0; v < node_count; v++) {
        indeg[v] = dag->pred_start[v + 1] - dag->pred_start[v];
        if (indeg[v] == 0)
            dag->order[tail++] = v;
    }
    while (head < tail) {
        uint32_t v = dag->order[head++];
        for (uint32_t k = dag->succ_start[v]; k < dag->succ_start[v + 1]; k++)
            if (--indeg[dag->succ[k]] == 0)
                dag->order[tail++] = dag->succ[k];
    }
    free(indeg);
    if (tail != node_count) {
        gm_dag_free(dag);
        return GM_ERR_INVALID_VALUE;
    }
    for (uint32_t r = 0; r < node_count; r++)
        dag->rank[dag->order[r]] = r;
    return GM_OK;
}

void gm_dag_free(gm_dag_t *dag) {
    gm_free_each(
        (void *[]){dag->succ_start, dag->succ, dag->pred_start, dag->pred, dag->order, dag->rank},
        6);
    memset(dag, 0, sizeof *dag);
}

#include "dag.h"

#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "plan.h"

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
    free(dag->succ_start);
    free(dag->succ);
    free(dag->pred_start);
    free(dag->pred);
    free(dag->order);
    free(dag->rank);
    memset(dag, 0, sizeof *dag);
}

/* A stack of equally sized bit rows, recycled as nodes finish. */
typedef struct row_pool {
    size_t words;
    uint64_t **free_rows;
    uint32_t free_count;
    uint64_t **all_rows;
    uint32_t all_count;
} row_pool_t;

static uint64_t *pool_get(row_pool_t *pool) {
    uint64_t *row;
    if (pool->free_count > 0) {
        row = pool->free_rows[--pool->free_count];
    } else {
        row = malloc(pool->words * sizeof *row);
        if (!row)
            return NULL;
        pool->all_rows[pool->all_count++] = row;
    }
    memset(row, 0, pool->words * sizeof *row);
    return row;
}

static void pool_put(row_pool_t *pool, uint64_t *row) {
    pool->free_rows[pool->free_count++] = row;
}

/* Allocations grouped by the node holding their alloc (or free) point. */
static gm_status_t group_by_node(uint32_t node_count, uint32_t n, const uint32_t *node_of,
                                 uint32_t **start_out, uint32_t **list_out) {
    uint32_t *start = calloc((size_t)node_count + 2, sizeof *start);
    uint32_t *list = malloc(((size_t)n + 1) * sizeof *list);
    if (!start || !list) {
        free(start);
        free(list);
        return GM_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < n; i++)
        if (node_of[i] != GM_NO_NODE)
            start[node_of[i] + 2]++;
    for (uint32_t v = 0; v < node_count; v++)
        start[v + 2] += start[v + 1];
    for (uint32_t i = 0; i < n; i++)
        if (node_of[i] != GM_NO_NODE)
            list[start[node_of[i] + 1]++] = i;
    *start_out = start;
    *list_out = list;
    return GM_OK;
}

gm_status_t gm_dag_free_before_alloc(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                                     const uint32_t *free_node, bool *proper, uint64_t *before) {
    uint32_t nodes = dag->node_count;
    for (uint32_t i = 0; i < n; i++) {
        proper[i] = false;
        if (alloc_node[i] >= nodes || (free_node[i] != GM_NO_NODE && free_node[i] >= nodes))
            return GM_ERR_INVALID_VALUE;
    }
    if (n == 0)
        return GM_OK;
    size_t words = gm_bits_words(n);
    /* Each live row: bits [0, n) = allocations whose alloc reaches the node, bits [64*words, +n) =
     * proper allocations whose free reaches it. */
    row_pool_t pool = {.words = 2 * words};
    uint32_t *alloc_start = NULL, *alloc_list = NULL, *free_start = NULL, *free_list = NULL;
    uint64_t **row_of = calloc(nodes, sizeof *row_of);
    uint32_t *unread = malloc((size_t)nodes * sizeof *unread);
    pool.free_rows = malloc((size_t)nodes * sizeof *pool.free_rows);
    pool.all_rows = malloc((size_t)nodes * sizeof *pool.all_rows);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!row_of || !unread || !pool.free_rows || !pool.all_rows)
        goto out;
    if ((st = group_by_node(nodes, n, alloc_node, &alloc_start, &alloc_list)) != GM_OK)
        goto out;
    if ((st = group_by_node(nodes, n, free_node, &free_start, &free_list)) != GM_OK)
        goto out;
    st = GM_ERR_OUT_OF_MEMORY;
    for (uint32_t v = 0; v < nodes; v++)
        unread[v] = dag->succ_start[v + 1] - dag->succ_start[v];

    for (uint32_t r = 0; r < nodes; r++) {
        uint32_t v = dag->order[r];
        uint32_t p0 = dag->pred_start[v], p1 = dag->pred_start[v + 1];
        /* Take over the row of a predecessor that nobody else will read (chains cost nothing). */
        uint32_t stolen = GM_NO_NODE;
        for (uint32_t k = p0; k < p1 && stolen == GM_NO_NODE; k++)
            if (unread[dag->pred[k]] == 1)
                stolen = dag->pred[k];
        uint64_t *row;
        if (stolen != GM_NO_NODE) {
            row = row_of[stolen];
            row_of[stolen] = NULL;
            unread[stolen] = 0;
        } else if (!(row = pool_get(&pool))) {
            goto out;
        }
        for (uint32_t k = p0; k < p1; k++) {
            uint32_t u = dag->pred[k];
            if (u == stolen)
                continue;
            gm_bits_or(row, row_of[u], pool.words);
            if (--unread[u] == 0) {
                pool_put(&pool, row_of[u]);
                row_of[u] = NULL;
            }
        }
        uint64_t *freed = row + words;
        for (uint32_t k = free_start[v]; k < free_start[v + 1]; k++) {
            uint32_t i = free_list[k];
            proper[i] = gm_bits_test(row, i);
            if (proper[i])
                gm_bits_set(freed, i);
        }
        for (uint32_t k = alloc_start[v]; k < alloc_start[v + 1]; k++)
            memcpy(before + (size_t)alloc_list[k] * words, freed, words * sizeof *freed);
        for (uint32_t k = alloc_start[v]; k < alloc_start[v + 1]; k++)
            gm_bits_set(row, alloc_list[k]);
        if (unread[v] == 0)
            pool_put(&pool, row);
        else
            row_of[v] = row;
    }
    st = GM_OK;
out:
    for (uint32_t k = 0; k < pool.all_count; k++)
        free(pool.all_rows[k]);
    free(pool.all_rows);
    free(pool.free_rows);
    free(row_of);
    free(unread);
    free(alloc_start);
    free(alloc_list);
    free(free_start);
    free(free_list);
    return st;
}

/* Reachability between allocations: one pass over the DAG per direction. Each node gets a bit row
 * over allocations, built from the rows of its already visited neighbours; a row lives only until
 * the last neighbour that needs it has read it, so memory follows the graph's width. */
#include "dag.h"

#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "plan.h"

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

/* One pass: forward visits nodes in topological order and builds a node's row from its
 * predecessors' rows, backward the reverse, from its successors'. */
typedef struct walk {
    const gm_dag_t *dag;
    bool forward;
    row_pool_t pool;
    uint64_t **row_of;  /* per visited node whose row is still to be read */
    uint32_t *unread;   /* per node: neighbours that have not read its row yet */
    uint32_t *at_alloc; /* allocations by alloc node: at_alloc_start[v] .. [v + 1] */
    uint32_t *at_alloc_start;
    uint32_t *at_free; /* allocations by free node */
    uint32_t *at_free_start;
} walk_t;

static void walk_free(walk_t *w) {
    for (uint32_t k = 0; k < w->pool.all_count; k++)
        free(w->pool.all_rows[k]);
    free(w->pool.all_rows);
    free(w->pool.free_rows);
    free(w->row_of);
    free(w->unread);
    free(w->at_alloc);
    free(w->at_alloc_start);
    free(w->at_free);
    free(w->at_free_start);
}

static gm_status_t walk_init(walk_t *w, const gm_dag_t *dag, bool forward, size_t words, uint32_t n,
                             const uint32_t *alloc_node, const uint32_t *free_node) {
    uint32_t nodes = dag->node_count;
    *w = (walk_t){.dag = dag, .forward = forward, .pool = {.words = words}};
    w->row_of = calloc((size_t)nodes + 1, sizeof *w->row_of);
    w->unread = malloc(((size_t)nodes + 1) * sizeof *w->unread);
    w->pool.free_rows = malloc(((size_t)nodes + 1) * sizeof *w->pool.free_rows);
    w->pool.all_rows = malloc(((size_t)nodes + 1) * sizeof *w->pool.all_rows);
    if (!w->row_of || !w->unread || !w->pool.free_rows || !w->pool.all_rows)
        return GM_ERR_OUT_OF_MEMORY;
    gm_status_t st = group_by_node(nodes, n, alloc_node, &w->at_alloc_start, &w->at_alloc);
    if (st == GM_OK)
        st = group_by_node(nodes, n, free_node, &w->at_free_start, &w->at_free);
    /* A node's row is read by the neighbours visited after it. */
    const uint32_t *readers = forward ? dag->succ_start : dag->pred_start;
    for (uint32_t v = 0; v < nodes; v++)
        w->unread[v] = readers[v + 1] - readers[v];
    return st;
}

/* The row of node v: the union of its visited neighbours' rows, taking over the row of one that
 * nobody else will read (along a chain nothing is copied). NULL when memory runs out. */
static uint64_t *walk_row(walk_t *w, uint32_t v) {
    const uint32_t *start = w->forward ? w->dag->pred_start : w->dag->succ_start;
    const uint32_t *list = w->forward ? w->dag->pred : w->dag->succ;
    uint32_t stolen = GM_NO_NODE;
    for (uint32_t k = start[v]; k < start[v + 1] && stolen == GM_NO_NODE; k++)
        if (w->unread[list[k]] == 1)
            stolen = list[k];
    uint64_t *row;
    if (stolen != GM_NO_NODE) {
        row = w->row_of[stolen];
        w->row_of[stolen] = NULL;
        w->unread[stolen] = 0;
    } else if (!(row = pool_get(&w->pool))) {
        return NULL;
    }
    for (uint32_t k = start[v]; k < start[v + 1]; k++) {
        uint32_t u = list[k];
        if (u == stolen)
            continue;
        gm_bits_or(row, w->row_of[u], w->pool.words);
        if (--w->unread[u] == 0) {
            pool_put(&w->pool, w->row_of[u]);
            w->row_of[u] = NULL;
        }
    }
    return row;
}

/* Keeps v's row for the neighbours still to read it, or recycles it. */
static void walk_done(walk_t *w, uint32_t v, uint64_t *row) {
    if (w->unread[v] == 0)
        pool_put(&w->pool, row);
    else
        w->row_of[v] = row;
}

static gm_status_t check_nodes(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                               const uint32_t *free_node) {
    for (uint32_t i = 0; i < n; i++)
        if (alloc_node[i] >= dag->node_count ||
            (free_node[i] != GM_NO_NODE && free_node[i] >= dag->node_count))
            return GM_ERR_INVALID_VALUE;
    return GM_OK;
}

gm_status_t gm_dag_free_before_alloc(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                                     const uint32_t *free_node, bool *proper, uint64_t *before) {
    for (uint32_t i = 0; i < n; i++)
        proper[i] = false;
    gm_status_t st = check_nodes(dag, n, alloc_node, free_node);
    if (st != GM_OK || n == 0)
        return st;
    size_t words = gm_bits_words(n);
    /* Each row: bits [0, n) = allocations whose alloc reaches the node, bits [64*words, +n) =
     * proper allocations whose free reaches it. */
    walk_t w;
    if ((st = walk_init(&w, dag, true, 2 * words, n, alloc_node, free_node)) != GM_OK)
        goto out;
    for (uint32_t r = 0; r < dag->node_count; r++) {
        uint32_t v = dag->order[r];
        uint64_t *row = walk_row(&w, v);
        if (!row) {
            st = GM_ERR_OUT_OF_MEMORY;
            goto out;
        }
        uint64_t *freed = row + words;
        for (uint32_t k = w.at_free_start[v]; k < w.at_free_start[v + 1]; k++) {
            uint32_t i = w.at_free[k];
            proper[i] = gm_bits_test(row, i);
            if (proper[i])
                gm_bits_set(freed, i);
        }
        for (uint32_t k = w.at_alloc_start[v]; k < w.at_alloc_start[v + 1]; k++)
            memcpy(before + (size_t)w.at_alloc[k] * words, freed, words * sizeof *freed);
        for (uint32_t k = w.at_alloc_start[v]; k < w.at_alloc_start[v + 1]; k++)
            gm_bits_set(row, w.at_alloc[k]);
        walk_done(&w, v, row);
    }
out:
    walk_free(&w);
    return st;
}

gm_status_t gm_dag_alloc_after_free(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                                    const uint32_t *free_node, const bool *proper,
                                    gm_dag_row_visit_t visit, void *ctx) {
    gm_status_t st = check_nodes(dag, n, alloc_node, free_node);
    if (st != GM_OK || n == 0)
        return st;
    size_t words = gm_bits_words(n);
    /* Each row: the allocations whose alloc node the node reaches. */
    walk_t w;
    if ((st = walk_init(&w, dag, false, words, n, alloc_node, free_node)) != GM_OK)
        goto out;
    /* An allocation that never properly ends precedes nothing: an empty row. */
    uint64_t *empty = pool_get(&w.pool);
    if (!empty) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    for (uint32_t i = 0; i < n && st == GM_OK; i++)
        if (!proper[i])
            st = visit(ctx, i, empty);
    pool_put(&w.pool, empty);
    for (uint32_t r = dag->node_count; r-- > 0 && st == GM_OK;) {
        uint32_t v = dag->order[r];
        uint64_t *row = walk_row(&w, v);
        if (!row) {
            st = GM_ERR_OUT_OF_MEMORY;
            goto out;
        }
        /* A node reaches itself: allocations made at v follow a free at v. */
        for (uint32_t k = w.at_alloc_start[v]; k < w.at_alloc_start[v + 1]; k++)
            gm_bits_set(row, w.at_alloc[k]);
        for (uint32_t k = w.at_free_start[v]; k < w.at_free_start[v + 1] && st == GM_OK; k++)
            if (proper[w.at_free[k]])
                st = visit(ctx, w.at_free[k], row);
        walk_done(&w, v, row);
    }
out:
    walk_free(&w);
    return st;
}

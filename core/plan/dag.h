/* The graph as a DAG: adjacency in compressed rows, a topological order, and the reachability the
 * planner needs, between free nodes and alloc nodes only, as bit rows over allocations. */
#ifndef GRAPHMEM_DAG_H
#define GRAPHMEM_DAG_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct gm_dag {
    uint32_t node_count;
    uint32_t edge_count;
    uint32_t *succ_start; /* node_count + 1 offsets into succ */
    uint32_t *succ;
    uint32_t *pred_start; /* node_count + 1 offsets into pred */
    uint32_t *pred;
    uint32_t *order; /* nodes in a topological order */
    uint32_t *rank;  /* rank[node] = its position in `order` */
} gm_dag_t;

/* GM_ERR_INVALID_VALUE for an endpoint out of range or a cycle (self-loops included). Parallel
 * edges are allowed. */
gm_status_t gm_dag_build(gm_dag_t *dag, uint32_t node_count, uint32_t edge_count,
                         const uint32_t *edge_from, const uint32_t *edge_to);
void gm_dag_free(gm_dag_t *dag);

/* For allocations 0..n-1 (alloc_node[i], free_node[i], GM_NO_NODE when not freed):
 * - proper[i] = free_node[i] is strictly reachable from alloc_node[i];
 * - row j of `before` (n bits, gm_bits_words(n) words per row, caller-allocated, any content) has
 *   bit i set when allocation i is proper and free_node[i] reaches alloc_node[j] (a node reaches
 *   itself). That is the "i ends before j starts" relation, read as the ancestors of j's alloc.
 * One forward pass in topological order (dag_reach.c). */
gm_status_t gm_dag_free_before_alloc(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                                     const uint32_t *free_node, bool *proper, uint64_t *before);

/* The same relation read from the other side, i.e. the transpose of `before`, handed out row by
 * row and never stored whole: calls visit(ctx, i, row) once for every allocation i, where `row`
 * (n bits, valid during the call only) has bit j set when i is proper and free_node[i] reaches
 * alloc_node[j]. `proper` comes from gm_dag_free_before_alloc. One backward pass, about as cheap
 * as the forward one; a visit that fails stops it and its status is returned. */
typedef gm_status_t (*gm_dag_row_visit_t)(void *ctx, uint32_t alloc, const uint64_t *row);
gm_status_t gm_dag_alloc_after_free(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                                    const uint32_t *free_node, const bool *proper,
                                    gm_dag_row_visit_t visit, void *ctx);

#endif

/* The exact lower bound of a graph's footprint: the largest total size of allocations that can be
 * live together in some legal execution. */
#ifndef GRAPHMEM_LOWERBOUND_H
#define GRAPHMEM_LOWERBOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "dag.h"
#include "status.h"

/* max over down-closed node sets I of sum(size[i] : alloc_node[i] in I and not (proper[i] and
 * free_node[i] in I)). An allocation that is not proper counts as live from its alloc to the end.
 * `proper` and `before` are the output of gm_dag_free_before_alloc for the same allocations; the
 * DAG only orders the work (alloc nodes in topological order), the result does not depend on it.
 * Solved as a maximum-weight antichain of the "ends before" order, i.e. one maximum flow on the
 * bipartite graph that `before` already is (see lowerbound.c). */
gm_status_t gm_lower_bound(const gm_dag_t *dag, uint32_t n, const uint64_t *size,
                           const uint32_t *alloc_node, const bool *proper, const uint64_t *before,
                           uint64_t *bound_out);

#endif

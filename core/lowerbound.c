#include "lowerbound.h"

#include <stdlib.h>

#include "maxflow.h"

/* Weights +size at an alloc node and -size at a proper free node. A down-closed set I (every
 * ancestor of a member is a member) containing a proper free contains its alloc, so its weight is
 * exactly the bytes allocated in I and not yet freed. Maximum-weight closure (Picard): source ->
 * positive nodes, negative nodes -> sink, an uncuttable arc from each node to each predecessor;
 * the best closure weighs (sum of positive weights) - (min cut). */
gm_status_t gm_lower_bound(const gm_dag_t *dag, uint32_t n, const uint64_t *size,
                           const uint32_t *alloc_node, const uint32_t *free_node,
                           const bool *proper, uint64_t *bound_out) {
    uint32_t nodes = dag->node_count;
    int64_t *weight = calloc((size_t)nodes + 1, sizeof *weight);
    if (!weight)
        return GM_ERR_OUT_OF_MEMORY;
    bool any_free = false;
    for (uint32_t i = 0; i < n; i++) {
        if (alloc_node[i] >= nodes || size[i] > (uint64_t)INT64_MAX / 4 / (n + 1u)) {
            free(weight);
            return GM_ERR_INVALID_VALUE;
        }
        weight[alloc_node[i]] += (int64_t)size[i];
        if (proper[i]) {
            weight[free_node[i]] -= (int64_t)size[i];
            any_free = true;
        }
    }
    int64_t positive = 0;
    for (uint32_t v = 0; v < nodes; v++)
        if (weight[v] > 0)
            positive += weight[v];
    if (!any_free) {
        free(weight);
        *bound_out = (uint64_t)positive;
        return GM_OK;
    }
    uint32_t source = nodes, sink = nodes + 1;
    gm_flow_t *flow = gm_flow_create(nodes + 2, dag->edge_count + 2 * n);
    gm_status_t st = flow ? GM_OK : GM_ERR_OUT_OF_MEMORY;
    for (uint32_t v = 0; v < nodes && st == GM_OK; v++) {
        if (weight[v] > 0)
            st = gm_flow_add_edge(flow, source, v, weight[v]);
        else if (weight[v] < 0)
            st = gm_flow_add_edge(flow, v, sink, -weight[v]);
        for (uint32_t k = dag->pred_start[v]; k < dag->pred_start[v + 1] && st == GM_OK; k++)
            st = gm_flow_add_edge(flow, v, dag->pred[k], GM_FLOW_INF);
    }
    int64_t cut = 0;
    if (st == GM_OK)
        st = gm_flow_max(flow, source, sink, &cut);
    gm_flow_destroy(flow);
    free(weight);
    if (st == GM_OK)
        *bound_out = (uint64_t)(positive - cut);
    return st;
}

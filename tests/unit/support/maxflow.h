/* Maximum s-t flow value (highest-label push-relabel with global relabelling). Capacities are
 * non-negative 64-bit integers; GM_FLOW_INF stands for "never cut". The planner's lower bound used
 * it on the node-level network until the bipartite solver in core/plan/lowerbound.c replaced it;
 * the tests keep it as an independent oracle for that bound on graphs too large for brute force. */
#ifndef GRAPHMEM_MAXFLOW_H
#define GRAPHMEM_MAXFLOW_H

#include <stdint.h>

#include "status.h"

#define GM_FLOW_INF (INT64_MAX / 4)

typedef struct gm_flow gm_flow_t;

gm_flow_t *gm_flow_create(uint32_t node_count, uint32_t edge_hint);
void gm_flow_destroy(gm_flow_t *flow);
gm_status_t gm_flow_add_edge(gm_flow_t *flow, uint32_t from, uint32_t to, int64_t capacity);
/* Computes the maximum flow value once (a maximum preflow: the residual capacities left behind
 * are not a flow decomposition). */
gm_status_t gm_flow_max(gm_flow_t *flow, uint32_t source, uint32_t sink, int64_t *value_out);

#endif

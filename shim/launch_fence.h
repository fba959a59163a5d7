/* Launch fences recorded by the exec itself (launch_fence.c). */
#ifndef GRAPHMEM_LAUNCH_FENCE_H
#define GRAPHMEM_LAUNCH_FENCE_H

#include "engine.h"
#include "topology.h"

/* Before the driver instantiates `graph`: adds the event record node; returns the backend fence
 * for gm_engine_instantiate (0 when the exec gets none: several devices, another current device,
 * driver memory nodes in the graph, or a failure) and the node in *node_out. */
uint64_t gm_launch_fence_add(gm_engine_t *engine, CUgraph graph, const gm_topology_buf_t *topo,
                             CUgraphNode *node_out);
/* After the driver's instantiation: removes the node from the graph, and releases the fence
 * unless the engine adopted it. */
void gm_launch_fence_remove(gm_engine_t *engine, CUgraphNode node, uint64_t fence, bool adopted);

#endif

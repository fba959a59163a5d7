/* Launch fences: an exec graphmem serves gets, at instantiation, an event record node after every
 * node of its graph that nothing depends on, so each launch records the exec's fence itself when
 * its work is done. The engine then needs no cuEventRecord of its own after a launch (a launch
 * costs the driver's call alone), and the fence is still recorded exactly where the launch is,
 * on the stream it was handed. The node is added to the application's graph for the driver's
 * instantiation only and removed right after: the graph is as it was, the exec keeps the node. */
#include "launch_fence.h"

#include <stdlib.h>

#include "backend_cuda.h"
#include "driver.h"
#include "log.h"

/* Whether the graph holds memory nodes the driver made (allocations graphmem does not serve):
 * the driver refuses to remove a node from such a graph, so no node is added to it. */
static bool has_driver_memory_nodes(const gm_topology_buf_t *topo) {
    for (uint32_t i = 0; i < topo->view.node_count; i++)
        if (topo->types[i] == CU_GRAPH_NODE_TYPE_MEM_ALLOC ||
            topo->types[i] == CU_GRAPH_NODE_TYPE_MEM_FREE)
            return true;
    return false;
}

/* The nodes of `graph` (top level) that no node depends on; NULL when none or on failure. */
static CUgraphNode *sinks_of(CUgraph graph, size_t *count_out) {
    size_t count = 0, sinks = 0;
    if (gm_real.cuGraphGetNodes(graph, NULL, &count) != CUDA_SUCCESS || count == 0)
        return NULL;
    CUgraphNode *nodes = calloc(count, sizeof *nodes);
    if (nodes == NULL || gm_real.cuGraphGetNodes(graph, nodes, &count) != CUDA_SUCCESS) {
        free(nodes);
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        size_t dependents = 0;
        if (gm_drv.cuGraphNodeGetDependentNodes_v2(nodes[i], NULL, NULL, &dependents) !=
            CUDA_SUCCESS) {
            free(nodes);
            return NULL;
        }
        if (dependents == 0)
            nodes[sinks++] = nodes[i];
    }
    *count_out = sinks;
    return nodes;
}

uint64_t gm_launch_fence_add(gm_engine_t *engine, CUgraph graph, const gm_topology_buf_t *topo,
                             CUgraphNode *node_out) {
    *node_out = NULL;
    /* One device, the current one: the event belongs to the current context. */
    CUdevice current = -1;
    int device = gm_engine_graph_device(engine, (uint64_t)(uintptr_t)graph);
    if (device < 0 || gm_drv.cuCtxGetDevice(&current) != CUDA_SUCCESS || current != device ||
        has_driver_memory_nodes(topo))
        return 0;
    const gm_backend_t *b = gm_engine_backend(engine);
    uint64_t fence = 0;
    if (b->fence_create(b->ctx, &fence) != GM_OK)
        return 0;
    size_t count = 0;
    CUgraphNode *sinks = sinks_of(graph, &count);
    CUresult r = sinks ? gm_drv.cuGraphAddEventRecordNode(node_out, graph, sinks, count,
                                                          gm_backend_cuda_event(fence))
                       : CUDA_ERROR_INVALID_VALUE;
    free(sinks);
    if (r != CUDA_SUCCESS) {
        gm_log(GM_LOG_DEBUG, "instantiate: no launch fence for graph %p (%d)", (void *)graph,
               (int)r);
        *node_out = NULL;
        b->fence_destroy(b->ctx, fence);
        return 0;
    }
    return fence;
}

void gm_launch_fence_remove(gm_engine_t *engine, CUgraphNode node, uint64_t fence, bool adopted) {
    if (node != NULL && gm_real.cuGraphDestroyNode(node) != CUDA_SUCCESS)
        gm_log(GM_LOG_WARN, "could not remove graphmem's event node %p from the graph",
               (void *)node);
    if (fence && !adopted) {
        const gm_backend_t *b = gm_engine_backend(engine);
        b->fence_destroy(b->ctx, fence);
    }
}

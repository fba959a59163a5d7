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
#include "engine_glue.h"
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

/* Adds to `graph` the event record node of `fence` after its sink nodes. */
static CUresult add_node(CUgraph graph, uint64_t fence, CUgraphNode *node_out) {
    size_t count = 0;
    CUgraphNode *sinks = sinks_of(graph, &count);
    CUresult r = sinks ? gm_drv.cuGraphAddEventRecordNode(node_out, graph, sinks, count,
                                                          gm_backend_cuda_event(fence))
                       : CUDA_ERROR_INVALID_VALUE;
    free(sinks);
    if (r != CUDA_SUCCESS)
        *node_out = NULL;
    return r;
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
    CUresult r = add_node(graph, fence, node_out);
    if (r != CUDA_SUCCESS) {
        gm_log(GM_LOG_DEBUG, "instantiate: no launch fence for graph %p (%d)", (void *)graph,
               (int)r);
        b->fence_destroy(b->ctx, fence);
        return 0;
    }
    return fence;
}

/* ---- updates --------------------------------------------------------------------------------
 * An exec with a launch fence has one node more than the graph it was made of. An update from a
 * graph gets the same node for the driver's comparison (added last, as the exec's was, so the
 * two pair up), and loses it again after: an update the driver accepts natively is accepted. */

/* Whether any node of `graph` is a memory node the driver made (its nodes cannot be removed). */
static bool graph_has_driver_memory_nodes(CUgraph graph) {
    size_t count = 0;
    if (gm_real.cuGraphGetNodes(graph, NULL, &count) != CUDA_SUCCESS || count == 0)
        return false;
    CUgraphNode *nodes = calloc(count, sizeof *nodes);
    bool found = nodes == NULL;
    if (nodes && gm_real.cuGraphGetNodes(graph, nodes, &count) == CUDA_SUCCESS)
        for (size_t i = 0; i < count && !found; i++) {
            CUgraphNodeType type;
            found = gm_drv.cuGraphNodeGetType(nodes[i], &type) == CUDA_SUCCESS &&
                    (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || type == CU_GRAPH_NODE_TYPE_MEM_FREE);
        }
    free(nodes);
    return found;
}

typedef struct update_call {
    CUgraphExec exec;
    CUgraph graph;
    CUgraphNode *error_node;           /* cuGraphExecUpdate */
    CUgraphExecUpdateResult *result;   /* cuGraphExecUpdate */
    CUgraphExecUpdateResultInfo *info; /* cuGraphExecUpdate_v2 */
} update_call_t;

static CUresult call_update(const update_call_t *c) {
    return c->info ? gm_real.cuGraphExecUpdate_v2(c->exec, c->graph, c->info)
                   : gm_real.cuGraphExecUpdate(c->exec, c->graph, c->error_node, c->result);
}

static CUresult update(const update_call_t *c) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    uint64_t fence =
        engine && c->graph ? gm_engine_exec_launch_fence(engine, (uint64_t)(uintptr_t)c->exec) : 0;
    CUgraphNode node = NULL;
    if (fence && !graph_has_driver_memory_nodes(c->graph))
        add_node(c->graph, fence, &node);
    CUresult r = call_update(c);
    if (node != NULL && gm_real.cuGraphDestroyNode(node) != CUDA_SUCCESS)
        gm_log(GM_LOG_WARN, "could not remove graphmem's event node %p from graph %p", (void *)node,
               (void *)c->graph);
    return r;
}

CUresult gm_hook_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                   CUgraphNode *hErrorNode_out,
                                   CUgraphExecUpdateResult *updateResult_out) {
    update_call_t c = {hGraphExec, hGraph, hErrorNode_out, updateResult_out, NULL};
    return update(&c);
}

CUresult gm_hook_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                      CUgraphExecUpdateResultInfo *resultInfo) {
    update_call_t c = {hGraphExec, hGraph, NULL, NULL, resultInfo};
    return update(&c);
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

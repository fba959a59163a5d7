/* Updates of instantiated graphs: cuGraphExecUpdate (both ABIs) and the child-graph setter. The
 * driver sees graphmem's markers as empty nodes and would take updates it refuses for memory
 * nodes; the engine pairs the nodes as the driver does and re-plans an exec it updates
 * (core/engine/engine_update.c). Also the exec node setters, whose node an exec made for device
 * launch knows under another handle (bridge/device_copies.h). */
#include "bridge/device_copies.h"
#include "bridge/engine_glue.h"
#include "bridge/markers.h"
#include "bridge/nested.h"
#include "bridge/topology.h"
#include "log.h"
#include "options.h"

typedef struct update_call {
    CUgraphExec exec;
    CUgraph graph;
    CUgraphExecUpdateResultInfo *info;
} update_call_t;

static CUresult call_update(void *arg) {
    update_call_t *c = arg;
    return gm_real.cuGraphExecUpdate_v2(c->exec, c->graph, c->info);
}

static CUresult update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    uint64_t key = (uint64_t)(uintptr_t)exec;
    /* Markers in a conditional body of the graph (or of its child graphs): no exec can hold
     * memory nodes there (the driver refuses to instantiate such a graph), so the driver's pairing
     * meets a memory node where the exec has another node and refuses the update
     * (NODE_TYPE_CHANGED, driver 580: tests/SEMANTICS.md §A3.18); it would take the markers, empty
     * nodes to it, and the exec would then touch memory nothing maps. The body's last marker in
     * the driver's node order is named, as the driver named the free node of an alloc-free pair.
     * Under GRAPHMEM_LIFT_RESTRICTIONS such a graph is checked and planned at instantiation only:
     * the update is not supported. */
    CUgraph body = engine != NULL && info != NULL && graph != NULL
                       ? gm_conditional_body_with_markers(engine, graph)
                       : NULL;
    if (body != NULL) {
        bool lift = gm_option_bool(GM_OPT_LIFT_RESTRICTIONS);
        *info = (CUgraphExecUpdateResultInfo){
            .result = lift ? CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED
                           : CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED,
            .errorNode = lift ? NULL : gm_first_marker(engine, body, true),
        };
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    /* Neither side holds memory nodes: the driver's answer is the whole answer, unless the graph
     * has memsets or copies on graph memory, whose targets the driver checks: the engine makes
     * the call then, with no scratch page left at them (gm_engine_exec_update). */
    if (engine == NULL || info == NULL || graph == NULL ||
        (!gm_engine_serves(engine, key) &&
         !gm_engine_graph_has_markers(engine, (uint64_t)(uintptr_t)graph) && !gm_touches(graph)))
        return gm_real.cuGraphExecUpdate_v2(exec, graph, info);
    gm_topology_buf_t topo = {0};
    CUresult r = gm_topology_read(engine, graph, &topo);
    if (r != CUDA_SUCCESS) {
        /* An invalid graph: the driver says how. A valid one that could not be read (out of host
         * memory) is refused with the read's error: the driver would take its markers for empty
         * nodes, and the exec would run on addresses no plan of it covers. */
        if (!gm_graph_listable(graph))
            return gm_real.cuGraphExecUpdate_v2(exec, graph, info);
        *info = (CUgraphExecUpdateResultInfo){.result = CU_GRAPH_EXEC_UPDATE_ERROR};
        return r;
    }
    update_call_t args = {exec, graph, info};
    gm_app_call_t call;
    uint64_t error_node = 0;
    gm_status_t status =
        gm_engine_exec_update(engine, key, (uint64_t)(uintptr_t)graph, &topo.view,
                              gm_app_call_begin(&call, call_update, &args), &error_node);
    gm_app_call_end(&call);
    gm_topology_free(&topo);
    if (status == GM_ERR_DRIVER)
        return call.result;
    if (status == GM_ERR_UPDATE_FAILURE) {
        *info = (CUgraphExecUpdateResultInfo){
            .result = error_node ? CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED
                                 : CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED,
            .errorNode = (CUgraphNode)(uintptr_t)error_node,
            .errorFromNode = NULL,
        };
    }
    if (status != GM_OK)
        gm_log(GM_LOG_DEBUG, "update of exec %p from graph %p refused: %s", (void *)exec,
               (void *)graph, gm_status_name(status));
    return gm_cuda_result(status);
}

CUresult gm_hook_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                      CUgraphExecUpdateResultInfo *resultInfo) {
    return update(hGraphExec, hGraph, resultInfo);
}

/* The CUDA 11 ABI: the same, with the result info in two out-parameters. */
CUresult gm_hook_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                   CUgraphNode *hErrorNode_out,
                                   CUgraphExecUpdateResult *updateResult_out) {
    /* A driver before CUDA 12.0 has no _v2 (and graphmem's engine does not start on it). */
    if (hErrorNode_out == NULL || updateResult_out == NULL || gm_real.cuGraphExecUpdate_v2 == NULL)
        return gm_real.cuGraphExecUpdate(hGraphExec, hGraph, hErrorNode_out, updateResult_out);
    CUgraphExecUpdateResultInfo info = {0};
    CUresult r = update(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return r;
}

CUresult gm_hook_cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                    CUgraph childGraph) {
    CUresult refused = gm_child_swap_check(gm_glue_engine_if_started(), hNode, childGraph);
    if (refused != CUDA_SUCCESS)
        return gm_child_swap_answer(refused);
    return gm_real.cuGraphExecChildGraphNodeSetParams(hGraphExec, gm_device_node(hGraphExec, hNode),
                                                      childGraph);
}

/* Exec node calls that name the application's node: an exec made from a marker-free copy for
 * device launch (bridge/device_copies.h) knows the copy's node instead. Other execs: unchanged. */
CUresult gm_hook_cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    return gm_real.cuGraphExecKernelNodeSetParams(hGraphExec, gm_device_node(hGraphExec, hNode),
                                                  nodeParams);
}

CUresult gm_hook_cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
    return gm_real.cuGraphExecKernelNodeSetParams_v2(hGraphExec, gm_device_node(hGraphExec, hNode),
                                                     nodeParams);
}

CUresult gm_hook_cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                       unsigned int isEnabled) {
    return gm_real.cuGraphNodeSetEnabled(hGraphExec, gm_device_node(hGraphExec, hNode), isEnabled);
}

CUresult gm_hook_cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                       unsigned int *isEnabled) {
    return gm_real.cuGraphNodeGetEnabled(hGraphExec, gm_device_node(hGraphExec, hNode), isEnabled);
}

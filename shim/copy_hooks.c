/* Memset and memcpy nodes: made or changed with graphmem's addresses covered by scratch pages,
 * so the driver's check that they touch mapped memory passes as it does for its own graph
 * allocations (shim/scratch.h). */
#include "engine_glue.h"
#include "scratch.h"

static gm_scratch_t *begin_memset(gm_scratch_t *s, const CUDA_MEMSET_NODE_PARAMS *p) {
    gm_scratch_begin(s, gm_glue_engine_if_started());
    gm_scratch_cover_memset(s, p);
    return s;
}

static gm_scratch_t *begin_memcpy(gm_scratch_t *s, const CUDA_MEMCPY3D *p) {
    gm_scratch_begin(s, gm_glue_engine_if_started());
    gm_scratch_cover_memcpy(s, p);
    return s;
}

static CUresult end(gm_scratch_t *s, CUresult result) {
    gm_scratch_end(s);
    return result;
}

CUresult gm_hook_cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx) {
    gm_scratch_t cover, *s = begin_memset(&cover, memsetParams);
    return end(s, gm_real.cuGraphAddMemsetNode(phGraphNode, hGraph, dependencies, numDependencies,
                                               memsetParams, ctx));
}

CUresult gm_hook_cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
    gm_scratch_t cover, *s = begin_memcpy(&cover, copyParams);
    return end(s, gm_real.cuGraphAddMemcpyNode(phGraphNode, hGraph, dependencies, numDependencies,
                                               copyParams, ctx));
}

CUresult gm_hook_cuGraphMemsetNodeSetParams(CUgraphNode hNode,
                                            const CUDA_MEMSET_NODE_PARAMS *nodeParams) {
    gm_scratch_t cover, *s = begin_memset(&cover, nodeParams);
    return end(s, gm_real.cuGraphMemsetNodeSetParams(hNode, nodeParams));
}

CUresult gm_hook_cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams) {
    gm_scratch_t cover, *s = begin_memcpy(&cover, nodeParams);
    return end(s, gm_real.cuGraphMemcpyNodeSetParams(hNode, nodeParams));
}

CUresult gm_hook_cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                                CUcontext ctx) {
    gm_scratch_t cover, *s = begin_memset(&cover, memsetParams);
    return end(s, gm_real.cuGraphExecMemsetNodeSetParams(hGraphExec, hNode, memsetParams, ctx));
}

CUresult gm_hook_cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
    gm_scratch_t cover, *s = begin_memcpy(&cover, copyParams);
    return end(s, gm_real.cuGraphExecMemcpyNodeSetParams(hGraphExec, hNode, copyParams, ctx));
}

/* Memset and memcpy nodes: made or changed with graphmem's addresses covered by scratch pages,
 * so the driver's check that they touch mapped memory passes as it does for its own graph
 * allocations (shim/scratch.h). */
#include "bridge/captures.h"
#include "bridge/device_copies.h"
#include "bridge/engine_glue.h"
#include "bridge/scratch.h"
#include "bridge/topology.h"

/* One body for every hook of this file: while `when` holds, the driver's call runs with the cover
 * `c` up, `covers` naming the ranges it touches; otherwise the call goes to the driver as it is.
 * A node add (`add`) on the address of a freed graph allocation is refused as the driver refuses
 * it (engine.h, gm_engine_cover_range). `note` (run after a call that succeeded and covered graph
 * memory) tells the nested registry which graph now holds a node touching graph memory. */
#define GM_COVERED(name, when, add, note, params, args, covers)                                    \
    CUresult gm_hook_##name params {                                                               \
        if (!(when))                                                                               \
            return gm_real.name args;                                                              \
        gm_scratch_t c;                                                                            \
        gm_scratch_begin(&c, gm_glue_engine_if_started());                                         \
        c.check_freed = (add);                                                                     \
        covers;                                                                                    \
        CUresult r = (add) && c.freed ? CUDA_ERROR_INVALID_VALUE : gm_real.name args;              \
        if (r == CUDA_SUCCESS && c.held)                                                           \
            note;                                                                                  \
        gm_scratch_end(&c);                                                                        \
        return r;                                                                                  \
    }

/* Node creation and set-params: the driver checks the targets on every such call. */
GM_COVERED(cuGraphAddMemsetNode, true, true, gm_touch_note(hGraph),
           (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
            size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx),
           (phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx),
           gm_scratch_cover_memset(&c, memsetParams))
GM_COVERED(cuGraphAddMemcpyNode, true, true, gm_touch_note(hGraph),
           (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
            size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx),
           (phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx),
           gm_scratch_cover_memcpy(&c, copyParams))
/* A node's own setters: its graph is not known (gm_touch_note_unknown). */
GM_COVERED(cuGraphMemsetNodeSetParams, true, false, gm_touch_note_unknown(),
           (CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams), (hNode, nodeParams),
           gm_scratch_cover_memset(&c, nodeParams))
GM_COVERED(cuGraphMemcpyNodeSetParams, true, false, gm_touch_note_unknown(),
           (CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams), (hNode, nodeParams),
           gm_scratch_cover_memcpy(&c, nodeParams))
/* An exec's: no graph changes. */
GM_COVERED(cuGraphExecMemsetNodeSetParams, true, false, (void)0,
           (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
            CUcontext ctx),
           (hGraphExec, gm_device_node(hGraphExec, hNode), memsetParams, ctx),
           gm_scratch_cover_memset(&c, memsetParams))
GM_COVERED(cuGraphExecMemcpyNodeSetParams, true, false, (void)0,
           (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *copyParams,
            CUcontext ctx),
           (hGraphExec, gm_device_node(hGraphExec, hNode), copyParams, ctx),
           gm_scratch_cover_memcpy(&c, copyParams))

/* ---- captured memsets and copies ------------------------------------------------------------ */

/* Only a capture needs the cover: outside one, an unmapped graph address is the caller's error
 * and graphmem covers nothing (a page an earlier cover left idle may still hold the scratch page
 * until the next launch or trim: tests/SEMANTICS.md §A4.13). */
static bool capturing(CUstream stream, bool ptsz) {
    if (gm_no_capture_anywhere() || gm_glue_engine_if_started() == NULL)
        return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = GM_REAL_PT(cuStreamIsCapturing, ptsz)(stream, &status);
    return r == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* The graph a capturing stream captures into (NULL when the driver does not say). */
static CUgraph capture_graph(CUstream stream, bool ptsz) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = NULL;
    if (GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz)(stream, &status, NULL, &graph, NULL, NULL,
                                                    NULL) != CUDA_SUCCESS)
        return NULL;
    return graph;
}

/* The captured entries, each with its `_ptsz` twin: covered only while their stream captures. */
#define GM_CAPTURED(name, params, args, stream, covers)                                            \
    GM_COVERED(name, capturing(stream, false), false, gm_touch_note(capture_graph(stream, false)), \
               params, args, covers)                                                               \
    GM_COVERED(name##_ptsz, capturing(stream, true), false,                                        \
               gm_touch_note(capture_graph(stream, true)), params, args, covers)

#define GM_MEMSET_1D(name, type, value, unit)                                                      \
    GM_CAPTURED(name, (CUdeviceptr dstDevice, type value, size_t N, CUstream hStream),             \
                (dstDevice, value, N, hStream), hStream,                                           \
                gm_scratch_cover_range(&c, dstDevice, N *(unit)))
#define GM_MEMSET_2D(name, type, value, unit)                                                      \
    GM_CAPTURED(name,                                                                              \
                (CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, size_t Height,  \
                 CUstream hStream),                                                                \
                (dstDevice, dstPitch, value, Width, Height, hStream), hStream,                     \
                gm_scratch_cover_rows(&c, dstDevice, dstPitch, Width *(unit), Height))

GM_MEMSET_1D(cuMemsetD8Async, unsigned char, uc, 1)
GM_MEMSET_1D(cuMemsetD16Async, unsigned short, us, 2)
GM_MEMSET_1D(cuMemsetD32Async, unsigned int, ui, 4)
GM_MEMSET_2D(cuMemsetD2D8Async, unsigned char, uc, 1)
GM_MEMSET_2D(cuMemsetD2D16Async, unsigned short, us, 2)
GM_MEMSET_2D(cuMemsetD2D32Async, unsigned int, ui, 4)

#define GM_COPY_DD(name, a, b)                                                                     \
    GM_CAPTURED(                                                                                   \
        name, (CUdeviceptr a, CUdeviceptr b, size_t ByteCount, CUstream hStream),                  \
        (a, b, ByteCount, hStream), hStream,                                                       \
        (gm_scratch_cover_range(&c, a, ByteCount), gm_scratch_cover_range(&c, b, ByteCount)))

GM_COPY_DD(cuMemcpyAsync, dst, src)
GM_COPY_DD(cuMemcpyDtoDAsync_v2, dstDevice, srcDevice)

GM_CAPTURED(cuMemcpyHtoDAsync_v2,
            (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
            (dstDevice, srcHost, ByteCount, hStream), hStream,
            gm_scratch_cover_range(&c, dstDevice, ByteCount))
GM_CAPTURED(cuMemcpyDtoHAsync_v2,
            (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
            (dstHost, srcDevice, ByteCount, hStream), hStream,
            gm_scratch_cover_range(&c, srcDevice, ByteCount))
GM_CAPTURED(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream),
            hStream, gm_scratch_cover_memcpy2d(&c, pCopy))
GM_CAPTURED(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream),
            hStream, gm_scratch_cover_memcpy(&c, pCopy))

/* Memset and memcpy nodes: made or changed with graphmem's addresses covered by scratch pages,
 * so the driver's check that they touch mapped memory passes as it does for its own graph
 * allocations (shim/scratch.h). */
#include "bridge/captures.h"
#include "bridge/engine_glue.h"
#include "bridge/scratch.h"

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

/* ---- captured memsets and copies ------------------------------------------------------------ */

/* Only a capture needs the cover: outside one, an unmapped graph address is the caller's error
 * and the driver must see it unmapped (a scratch page would let the work run into it). */
static bool capturing(CUstream stream, bool ptsz) {
    if (atomic_load_explicit(&gm_captures_in_flight, memory_order_relaxed) == 0 ||
        gm_glue_engine_if_started() == NULL)
        return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = GM_REAL_PT(cuStreamIsCapturing, ptsz)(stream, &status);
    return r == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* One body per ABI twin: cover the touched ranges while the call is captured. */
#define GM_CAPTURED(name, ptsz, params, args, stream, covers)                                      \
    CUresult gm_hook_##name params {                                                               \
        if (!capturing(stream, ptsz))                                                              \
            return gm_real.name args;                                                              \
        gm_scratch_t c;                                                                            \
        gm_scratch_begin(&c, gm_glue_engine_if_started());                                         \
        covers;                                                                                    \
        CUresult r = gm_real.name args;                                                            \
        gm_scratch_end(&c);                                                                        \
        return r;                                                                                  \
    }

#define GM_MEMSET_1D(name, ptsz, type, value, unit)                                                \
    GM_CAPTURED(name, ptsz, (CUdeviceptr dstDevice, type value, size_t N, CUstream hStream),       \
                (dstDevice, value, N, hStream), hStream,                                           \
                gm_scratch_cover_range(&c, dstDevice, N *(unit)))
#define GM_MEMSET_2D(name, ptsz, type, value, unit)                                                \
    GM_CAPTURED(name, ptsz,                                                                        \
                (CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, size_t Height,  \
                 CUstream hStream),                                                                \
                (dstDevice, dstPitch, value, Width, Height, hStream), hStream,                     \
                gm_scratch_cover_range(&c, dstDevice,                                              \
                                       Height ? (Height - 1) * dstPitch + Width *(unit) : 0))

GM_MEMSET_1D(cuMemsetD8Async, false, unsigned char, uc, 1)
GM_MEMSET_1D(cuMemsetD8Async_ptsz, true, unsigned char, uc, 1)
GM_MEMSET_1D(cuMemsetD16Async, false, unsigned short, us, 2)
GM_MEMSET_1D(cuMemsetD16Async_ptsz, true, unsigned short, us, 2)
GM_MEMSET_1D(cuMemsetD32Async, false, unsigned int, ui, 4)
GM_MEMSET_1D(cuMemsetD32Async_ptsz, true, unsigned int, ui, 4)
GM_MEMSET_2D(cuMemsetD2D8Async, false, unsigned char, uc, 1)
GM_MEMSET_2D(cuMemsetD2D8Async_ptsz, true, unsigned char, uc, 1)
GM_MEMSET_2D(cuMemsetD2D16Async, false, unsigned short, us, 2)
GM_MEMSET_2D(cuMemsetD2D16Async_ptsz, true, unsigned short, us, 2)
GM_MEMSET_2D(cuMemsetD2D32Async, false, unsigned int, ui, 4)
GM_MEMSET_2D(cuMemsetD2D32Async_ptsz, true, unsigned int, ui, 4)

#define GM_COPY_DD(name, ptsz, a, b)                                                               \
    GM_CAPTURED(                                                                                   \
        name, ptsz, (CUdeviceptr a, CUdeviceptr b, size_t ByteCount, CUstream hStream),            \
        (a, b, ByteCount, hStream), hStream,                                                       \
        (gm_scratch_cover_range(&c, a, ByteCount), gm_scratch_cover_range(&c, b, ByteCount)))

GM_COPY_DD(cuMemcpyAsync, false, dst, src)
GM_COPY_DD(cuMemcpyAsync_ptsz, true, dst, src)
GM_COPY_DD(cuMemcpyDtoDAsync_v2, false, dstDevice, srcDevice)
GM_COPY_DD(cuMemcpyDtoDAsync_v2_ptsz, true, dstDevice, srcDevice)

#define GM_COPY_HTOD(name, ptsz)                                                                   \
    GM_CAPTURED(name, ptsz,                                                                        \
                (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),  \
                (dstDevice, srcHost, ByteCount, hStream), hStream,                                 \
                gm_scratch_cover_range(&c, dstDevice, ByteCount))
#define GM_COPY_DTOH(name, ptsz)                                                                   \
    GM_CAPTURED(name, ptsz,                                                                        \
                (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),        \
                (dstHost, srcDevice, ByteCount, hStream), hStream,                                 \
                gm_scratch_cover_range(&c, srcDevice, ByteCount))

GM_COPY_HTOD(cuMemcpyHtoDAsync_v2, false)
GM_COPY_HTOD(cuMemcpyHtoDAsync_v2_ptsz, true)
GM_COPY_DTOH(cuMemcpyDtoHAsync_v2, false)
GM_COPY_DTOH(cuMemcpyDtoHAsync_v2_ptsz, true)

GM_CAPTURED(cuMemcpy2DAsync_v2, false, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
            (pCopy, hStream), hStream, gm_scratch_cover_memcpy2d(&c, pCopy))
GM_CAPTURED(cuMemcpy2DAsync_v2_ptsz, true, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
            (pCopy, hStream), hStream, gm_scratch_cover_memcpy2d(&c, pCopy))
GM_CAPTURED(cuMemcpy3DAsync_v2, false, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
            (pCopy, hStream), hStream, gm_scratch_cover_memcpy(&c, pCopy))
GM_CAPTURED(cuMemcpy3DAsync_v2_ptsz, true, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
            (pCopy, hStream), hStream, gm_scratch_cover_memcpy(&c, pCopy))

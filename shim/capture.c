/* Capture begin/end: keeps the process-wide count of captures in flight that gates the capture
 * path of every allocation hook (outside captures, a hook costs one relaxed load). */
#include "engine_glue.h"
#include "shim.h"
#include "stats.h"

_Atomic long gm_captures_in_flight;

/* The engine starts (device queries, default pools) before the first capture begins: the same
 * queries made on a capturing thread could invalidate the capture. */
static void start_before_capture(void) {
    if (gm_shim_mode() == GM_MODE_ACTIVE)
        gm_glue_engine();
}

static CUresult began(CUresult result) {
    if (result == CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&gm_captures_in_flight, 1, memory_order_relaxed);
        gm_stat_add(GM_STAT_captures, 1);
    }
    return result;
}

/* The comma sequences the start-up before the driver's call. */
#define GM_BEGIN(call) (start_before_capture(), began(call))

CUresult gm_hook_cuStreamBeginCapture(CUstream hStream) {
    return GM_BEGIN(gm_real.cuStreamBeginCapture(hStream));
}

CUresult gm_hook_cuStreamBeginCapture_ptsz(CUstream hStream) {
    return GM_BEGIN(gm_real.cuStreamBeginCapture_ptsz(hStream));
}

CUresult gm_hook_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
    return GM_BEGIN(gm_real.cuStreamBeginCapture_v2(hStream, mode));
}

CUresult gm_hook_cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
    return GM_BEGIN(gm_real.cuStreamBeginCapture_v2_ptsz(hStream, mode));
}

CUresult gm_hook_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             const CUgraphEdgeData *dependencyData,
                                             size_t numDependencies, CUstreamCaptureMode mode) {
    return GM_BEGIN(gm_real.cuStreamBeginCaptureToGraph(hStream, hGraph, dependencies,
                                                        dependencyData, numDependencies, mode));
}

CUresult gm_hook_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData,
                                                  size_t numDependencies,
                                                  CUstreamCaptureMode mode) {
    return GM_BEGIN(gm_real.cuStreamBeginCaptureToGraph_ptsz(
        hStream, hGraph, dependencies, dependencyData, numDependencies, mode));
}

/* A capture ends with EndCapture whatever its outcome (success, invalidated, unjoined): count it
 * out when the stream was capturing before the call. */
static CUresult end_capture(CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus *),
                            CUresult (*end)(CUstream, CUgraph *), CUstream stream, CUgraph *graph) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    bool was_capturing = is_capturing != NULL && is_capturing(stream, &status) == CUDA_SUCCESS &&
                         status != CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult result = end(stream, graph);
    if (was_capturing)
        atomic_fetch_sub_explicit(&gm_captures_in_flight, 1, memory_order_relaxed);
    return result;
}

CUresult gm_hook_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    return end_capture(gm_real.cuStreamIsCapturing, gm_real.cuStreamEndCapture, hStream, phGraph);
}

CUresult gm_hook_cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
    return end_capture(gm_real.cuStreamIsCapturing_ptsz, gm_real.cuStreamEndCapture_ptsz, hStream,
                       phGraph);
}

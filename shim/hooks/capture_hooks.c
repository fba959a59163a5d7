/* Capture begin/end: keeps the process-wide count of captures in flight (bridge/captures.h) that
 * gates the capture path of every allocation hook (outside captures, a hook costs one relaxed
 * load). */
#include "bridge/captures.h"
#include "bridge/engine_glue.h"
#include "bridge/joins.h"
#include "bridge/topology.h"
#include "stats.h"

/* The engine starts (device queries, default pools) before the first capture begins: the same
 * queries made on a capturing thread could invalidate the capture. */
static void start_before_capture(void) {
    if (gm_shim_mode() == GM_MODE_ACTIVE)
        gm_glue_engine();
}

/* The count goes up before the driver's call: from the moment a capture may exist, every other
 * thread's internal driver calls run in RELAXED mode (GM_RELAXED skips the exchange only
 * while the count is zero). Down again when the capture did not begin. The stream's deferred fence
 * is realized before it can capture (core/README.md, "Deferred fences"). */
static gm_join_t beginning(CUstream stream, bool ptsz) {
    start_before_capture();
    atomic_fetch_add_explicit(&gm_captures_in_flight, 1, memory_order_seq_cst);
    return gm_join_begin(stream, ptsz, false);
}

static CUresult began(CUresult result, gm_join_t join) {
    gm_join_end(join);
    if (result == CUDA_SUCCESS)
        gm_stat_add(GM_STAT_captures, 1);
    else
        atomic_fetch_sub_explicit(&gm_captures_in_flight, 1, memory_order_relaxed);
    return result;
}

CUresult gm_hook_cuStreamBeginCapture(CUstream hStream) {
    gm_join_t join = beginning(hStream, false);
    return began(gm_real.cuStreamBeginCapture(hStream), join);
}

CUresult gm_hook_cuStreamBeginCapture_ptsz(CUstream hStream) {
    gm_join_t join = beginning(hStream, true);
    return began(gm_real.cuStreamBeginCapture_ptsz(hStream), join);
}

CUresult gm_hook_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, false);
    return began(gm_real.cuStreamBeginCapture_v2(hStream, mode), join);
}

CUresult gm_hook_cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, true);
    return began(gm_real.cuStreamBeginCapture_v2_ptsz(hStream, mode), join);
}

CUresult gm_hook_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             const CUgraphEdgeData *dependencyData,
                                             size_t numDependencies, CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, false);
    return began(gm_real.cuStreamBeginCaptureToGraph(hStream, hGraph, dependencies, dependencyData,
                                                     numDependencies, mode),
                 join);
}

CUresult gm_hook_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData,
                                                  size_t numDependencies,
                                                  CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, true);
    return began(gm_real.cuStreamBeginCaptureToGraph_ptsz(hStream, hGraph, dependencies,
                                                          dependencyData, numDependencies, mode),
                 join);
}

/* A capture ends with EndCapture whatever its outcome (success, invalidated, unjoined): count it
 * out when the stream was capturing before the call. A capture that fails leaves no graph, so the
 * allocations made in it are forgotten (their addresses return to graphmem). */
static CUresult end_capture(bool ptsz, CUstream stream, CUgraph *graph) {
    CUresult (*end)(CUstream, CUgraph *) = GM_REAL_PT(cuStreamEndCapture, ptsz);
    CUresult (*info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                     const CUgraphNode **, const CUgraphEdgeData **, size_t *) =
        GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    bool was_capturing = info != NULL &&
                         info(stream, &status, &capture, NULL, NULL, NULL, NULL) == CUDA_SUCCESS &&
                         status != CU_STREAM_CAPTURE_STATUS_NONE;
    if (!was_capturing || graph == NULL) /* NULL: the driver's error, the capture goes on */
        return end(stream, graph);
    gm_engine_t *engine = gm_glue_engine_if_started();
    CUgraph capture_graph = NULL;
    bool unjoined = gm_joins_finish(stream, ptsz, capture, &capture_graph);
    CUgraph made = NULL;
    CUresult result = end(stream, &made);
    atomic_fetch_sub_explicit(&gm_captures_in_flight, 1, memory_order_relaxed);
    if (unjoined && result == CUDA_SUCCESS) {
        /* The driver would have refused: no graph, the unjoined error. */
        gm_real.cuGraphDestroy(made);
        made = NULL;
        result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    if (result != CUDA_SUCCESS && engine != NULL && capture_graph != NULL) {
        gm_graph_destroy_nested(engine, capture_graph, GM_NO_CALL);
    }
    if (graph != NULL)
        *graph = made;
    return result;
}

CUresult gm_hook_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    return end_capture(false, hStream, phGraph);
}

CUresult gm_hook_cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
    return end_capture(true, hStream, phGraph);
}

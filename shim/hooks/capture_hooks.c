/* Capture begin/end: keeps the process-wide count of captures in flight (bridge/captures.h) that
 * gates the capture path of every allocation hook (outside captures, a hook costs one relaxed
 * load). */
#include <pthread.h>

#include "interpose/frontier_lock.h"
#include "bridge/captures.h"
#include "bridge/engine_glue.h"
#include "bridge/joins.h"
#include "bridge/markers.h"
#include "bridge/nested.h"
#include "bridge/streams.h"
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
    atomic_fetch_add_explicit(&gm_shim_hot.captures_in_flight, 1, memory_order_seq_cst);
    gm_frontier_capture_change_begins(); /* no frontier kept from before is used after */
    return gm_join_begin(stream, ptsz, false);
}

typedef CUresult (*capture_info_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                    const CUgraphNode **, const CUgraphEdgeData **, size_t *);

/* A capture that began: the graph it captures into is noted for its end, which forgets the graph
 * when the capture fails (whether or not a marker was captured: one may have been added to the
 * graph through the graph API). A graph the driver made for the capture (`fresh`) has a handle
 * the driver may have given out before, to a graph that died without graphmem's seeing it (the
 * driver destroys a failed capture's graph, and documents that it may do so before the capture
 * ends; driver 580 did it at the end in every case probed): what graphmem still knows under that
 * handle is the dead graph's, and goes now, before anything is added to the new one. */
static void note_capture_graph(CUstream stream, bool ptsz, bool fresh) {
    capture_info_fn info = GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    CUgraph graph = NULL;
    if (gm_glue_engine_if_started() == NULL || info == NULL ||
        info(stream, &status, &capture, &graph, NULL, NULL, NULL) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph == NULL)
        return;
    if (fresh)
        gm_graph_forget_stale(graph);
    gm_joins_note_begin(capture, stream, ptsz, graph);
}

static CUresult began(CUresult result, gm_join_t join, CUstream stream, bool ptsz, bool fresh) {
    gm_frontier_capture_change_ends();
    gm_join_end(join);
    if (result == CUDA_SUCCESS) {
        gm_stat_add(GM_STAT_captures, 1);
        note_capture_graph(stream, ptsz, fresh);
    } else {
        atomic_fetch_sub_explicit(&gm_shim_hot.captures_in_flight, 1, memory_order_relaxed);
    }
    return result;
}

CUresult gm_hook_cuStreamBeginCapture(CUstream hStream) {
    gm_join_t join = beginning(hStream, false);
    return began(gm_real.cuStreamBeginCapture(hStream), join, hStream, false, true);
}

CUresult gm_hook_cuStreamBeginCapture_ptsz(CUstream hStream) {
    gm_join_t join = beginning(hStream, true);
    return began(gm_real.cuStreamBeginCapture_ptsz(hStream), join, hStream, true, true);
}

CUresult gm_hook_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, false);
    return began(gm_real.cuStreamBeginCapture_v2(hStream, mode), join, hStream, false, true);
}

CUresult gm_hook_cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, true);
    return began(gm_real.cuStreamBeginCapture_v2_ptsz(hStream, mode), join, hStream, true, true);
}

CUresult gm_hook_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             const CUgraphEdgeData *dependencyData,
                                             size_t numDependencies, CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, false);
    return began(gm_real.cuStreamBeginCaptureToGraph(hStream, hGraph, dependencies, dependencyData,
                                                     numDependencies, mode),
                 join, hStream, false, false);
}

CUresult gm_hook_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData,
                                                  size_t numDependencies,
                                                  CUstreamCaptureMode mode) {
    gm_join_t join = beginning(hStream, true);
    return began(gm_real.cuStreamBeginCaptureToGraph_ptsz(hStream, hGraph, dependencies,
                                                          dependencyData, numDependencies, mode),
                 join, hStream, true, false);
}

/* Whether `stream` still takes part in capture `capture` (0: in any capture; the id of one that
 * began since on another thread differs). */
static bool still_capturing(CUstream stream, bool ptsz, cuuint64_t capture) {
    capture_info_fn info = GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t now = 0;
    return info != NULL && info(stream, &status, &now, NULL, NULL, NULL, NULL) == CUDA_SUCCESS &&
           status != CU_STREAM_CAPTURE_STATUS_NONE && (capture == 0 || now == capture);
}

/* The driver's EndCapture, as the application's call (gm_app_call_t), and graphmem's verdict on
 * an unjoined capture the driver took: its graph is destroyed and the driver's error returned. */
typedef struct end_call {
    CUresult (*end)(CUstream, CUgraph *);
    CUstream stream;
    cuuint64_t capture;
    bool ptsz, unjoined;
    CUgraph made;
    bool ended; /* the capture is over (the stream no longer captures) */
} end_call_t;

static CUresult call_end(void *arg) {
    end_call_t *c = arg;
    CUresult result = c->end(c->stream, &c->made);
    if (c->unjoined && result == CUDA_SUCCESS) {
        /* The driver would have refused: no graph, the unjoined error. */
        gm_real.cuGraphDestroy(c->made);
        c->made = NULL;
        result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    c->ended = result == CUDA_SUCCESS || !still_capturing(c->stream, c->ptsz, c->capture);
    return result;
}

/* As gm_driver_call_t for forgetting the capture's graph: true when the call left no graph (the
 * capture failed and is over) and the handle is still that graph's, so the engine forgets it in
 * the same step. A handle the driver gave out again before this step belongs to a new graph,
 * whose records the stale forget of its making already cleared of the dead one's. */
typedef struct ending {
    gm_driver_call_t app; /* runs call_end */
    const gm_app_call_t *call;
    const end_call_t *end;
    gm_joins_ending_t *joins;
} ending_t;

static bool ended_without_graph(void *arg) {
    ending_t *e = arg;
    (void)e->app.fn(e->app.arg);
    return e->call->result != CUDA_SUCCESS && e->end->ended && gm_joins_graph_still_mine(e->joins);
}

/* Ends run one at a time, from the capture query to the notes' fate. Two threads may end one
 * capture at once (one from the wrong thread, or both in relaxed mode): alone, each judges the
 * capture as it finds it after the other's end, so an end the driver refused because the other
 * had ended the capture never takes that capture's graph for a failed one, and a capture is
 * counted out once. An end is rare next to the calls inside a capture. */
static pthread_mutex_t ends_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult end_capture_alone(bool ptsz, CUstream stream, CUgraph *graph);

/* A capture ends with EndCapture whatever its outcome (success, invalidated, unjoined): count it
 * out when the capture is over. A capture that fails leaves no graph, so the allocations made in
 * it are forgotten (their addresses return to graphmem), in the same step as the driver's call:
 * the graph's handle may be given out again at once. An end that leaves the capture going puts
 * its notes back for the end that comes. */
static CUresult end_capture(bool ptsz, CUstream stream, CUgraph *graph) {
    if (graph == NULL) /* the driver's error, the capture goes on */
        return GM_REAL_PT(cuStreamEndCapture, ptsz)(stream, graph);
    gm_frontier_capture_change_begins(); /* side streams' captures may end with it */
    pthread_mutex_lock(&ends_lock);
    CUresult result = end_capture_alone(ptsz, stream, graph);
    pthread_mutex_unlock(&ends_lock);
    gm_frontier_capture_change_ends();
    return result;
}

/* What the unjoined check judges among a side stream's last nodes: markers standing for memory
 * nodes a capture made. One added through the graph API (cuGraphAddMemAllocNode) and set as the
 * stream's dependency is not judged, as the driver does not judge such a node
 * (tests/gpu/scn_unjoined_api_nodes.cu, side_api_alloc). */
static bool is_captured_marker(CUgraphNode node) {
    gm_marker_info_t info;
    return gm_marker_of(node, &info) != GM_MARKER_NONE && info.captured;
}

static CUresult end_capture_alone(bool ptsz, CUstream stream, CUgraph *graph) {
    CUresult (*end)(CUstream, CUgraph *) = GM_REAL_PT(cuStreamEndCapture, ptsz);
    capture_info_fn info = GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture = 0;
    bool was_capturing = info != NULL &&
                         info(stream, &status, &capture, NULL, NULL, NULL, NULL) == CUDA_SUCCESS &&
                         status != CU_STREAM_CAPTURE_STATUS_NONE;
    if (!was_capturing)
        return end(stream, graph);
    gm_engine_t *engine = gm_glue_engine_if_started();
    gm_joins_ending_t joins;
    end_call_t args = {end, stream, capture, ptsz, false, NULL, false};
    args.unjoined = gm_joins_finish(stream, ptsz, capture, is_captured_marker, &joins);
    CUresult result;
    /* Nothing known of the graph (no marker went in, no child was added): a failed capture
     * leaves nothing to forget, and the end holds no lock over the driver's call. Only the
     * capture's own calls could add something meanwhile, and the application ends a capture
     * after them. */
    if (engine != NULL && gm_graph_known(engine, joins.graph)) {
        gm_app_call_t call;
        ending_t ending = {gm_app_call_begin(&call, call_end, &args), &call, &args, &joins};
        gm_graph_destroy_nested(engine, joins.graph,
                                (gm_driver_call_t){ended_without_graph, &ending});
        gm_app_call_end(&call);
        result = call.result;
    } else {
        result = call_end(&args);
    }
    if (args.ended)
        atomic_fetch_sub_explicit(&gm_shim_hot.captures_in_flight, 1, memory_order_relaxed);
    gm_joins_ended(&joins, args.ended);
    *graph = args.made;
    return result;
}

CUresult gm_hook_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    return end_capture(false, hStream, phGraph);
}

CUresult gm_hook_cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
    return end_capture(true, hStream, phGraph);
}

/* ---- capture dependencies set by the application ------------------------------------------- */

typedef struct dependencies_update {
    CUstream stream;
    bool ptsz, v2;
    CUgraphNode *deps;
    const CUgraphEdgeData *edge_data; /* _v2 only */
    size_t count;
    unsigned int flags;
} dependencies_update_t;

static CUresult call_update(void *arg) {
    const dependencies_update_t *u = arg;
    if (u->v2)
        return GM_REAL_PT(cuStreamUpdateCaptureDependencies_v2,
                          u->ptsz)(u->stream, u->deps, u->edge_data, u->count, u->flags);
    return GM_REAL_PT(cuStreamUpdateCaptureDependencies, u->ptsz)(u->stream, u->deps, u->count,
                                                                  u->flags);
}

/* Only a default stream's SET concerns graphmem: its note keeps the stream's last marker for an end
 * on another thread (bridge/joins.h); any other stream is asked for its dependencies at the end. */
static CUresult update_dependencies(dependencies_update_t u) {
    if (!gm_stream_is_default(u.stream) || u.flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return call_update(&u);
    return gm_joins_dependencies_set(u.stream, u.ptsz, u.deps, u.count, call_update, &u);
}

CUresult gm_hook_cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                                   size_t numDependencies, unsigned int flags) {
    return update_dependencies(
        (dependencies_update_t){hStream, false, false, dependencies, NULL, numDependencies, flags});
}

CUresult gm_hook_cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode *dependencies,
                                                        size_t numDependencies,
                                                        unsigned int flags) {
    return update_dependencies(
        (dependencies_update_t){hStream, true, false, dependencies, NULL, numDependencies, flags});
}

CUresult gm_hook_cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                                      const CUgraphEdgeData *dependencyData,
                                                      size_t numDependencies, unsigned int flags) {
    return update_dependencies((dependencies_update_t){hStream, false, true, dependencies,
                                                       dependencyData, numDependencies, flags});
}

CUresult gm_hook_cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream,
                                                           CUgraphNode *dependencies,
                                                           const CUgraphEdgeData *dependencyData,
                                                           size_t numDependencies,
                                                           unsigned int flags) {
    return update_dependencies((dependencies_update_t){hStream, true, true, dependencies,
                                                       dependencyData, numDependencies, flags});
}

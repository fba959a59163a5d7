/* Streams and stream capture. A capturing stream owns a graph and a frontier (the nodes the
 * next captured operation depends on), which cuStreamGetCaptureInfo reports and
 * cuStreamUpdateCaptureDependencies replaces, as graphmem's marker nodes require. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mock.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned magic;
    unsigned flags;
    CUstreamCaptureStatus status;
    CUstreamCaptureMode mode;
    cuuint64_t capture_id;
    gm_mock_graph_t *graph;
    size_t nfrontier;
    CUgraphNode frontier[64];
    /* What cuStreamGetCaptureInfo hands out: a copy of the frontier, retired (overwritten with
     * handles of no node) by the next call that operates on the stream here (cuStreamGetCtx), as
     * the driver documents the array valid only until then. */
    CUgraphNode view[64];
} gm_mock_stream_t;

static gm_mock_stream_t legacy_stream = {.magic = GM_MOCK_MAGIC_STREAM};
static _Thread_local gm_mock_stream_t per_thread_stream = {.magic = GM_MOCK_MAGIC_STREAM};
static cuuint64_t next_capture_id = 1;
static _Thread_local CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static int is_default(CUstream s) {
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

static gm_mock_stream_t *stream_get(CUstream s) {
    if (s == CU_STREAM_PER_THREAD)
        return &per_thread_stream;
    if (is_default(s))
        return &legacy_stream;
    gm_mock_stream_t *st = (gm_mock_stream_t *)s;
    return st->magic == GM_MOCK_MAGIC_STREAM ? st : NULL;
}

static CUresult stream_create(CUstream *phStream, unsigned flags) {
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!phStream)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_stream_t *st = calloc(1, sizeof(*st));
    if (!st)
        return CUDA_ERROR_OUT_OF_MEMORY;
    st->magic = GM_MOCK_MAGIC_STREAM;
    st->flags = flags;
    *phStream = (CUstream)st;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    GM_MOCK_CALL("cuStreamCreate");
    return stream_create(phStream, Flags);
}

GM_MOCK_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                int priority) {
    GM_MOCK_CALL("cuStreamCreateWithPriority");
    (void)priority;
    return stream_create(phStream, flags);
}

static CUresult stream_destroy(CUstream hStream) {
    if (is_default(hStream))
        return CUDA_ERROR_INVALID_HANDLE;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    if (st) {
        if (st->graph)
            gm_mock_graph_free(st->graph);
        st->magic = 0;
        free(st);
    }
    gm_mock_unlock();
    return st ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GM_MOCK_API CUresult cuStreamDestroy(CUstream hStream) {
    GM_MOCK_CALL("cuStreamDestroy");
    return stream_destroy(hStream);
}

GM_MOCK_API CUresult cuStreamDestroy_v2(CUstream hStream) {
    GM_MOCK_CALL("cuStreamDestroy_v2");
    return stream_destroy(hStream);
}

/* Synchronizing a capturing stream is illegal and invalidates the capture, as in the driver. */
static CUresult cuStreamSynchronize_impl(CUstream hStream) {
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    CUresult rc = st ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (st && st->status != CU_STREAM_CAPTURE_STATUS_NONE) {
        st->status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    gm_mock_unlock();
    return rc;
}
GM_MOCK_PAIR(cuStreamSynchronize, (CUstream hStream), (hStream))

static CUresult cuStreamQuery_impl(CUstream hStream) {
    return cuStreamSynchronize_impl(hStream);
}
GM_MOCK_PAIR(cuStreamQuery, (CUstream hStream), (hStream))

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode, gm_mock_graph_t *into) {
    if (is_default(hStream) && hStream != CU_STREAM_PER_THREAD)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    CUresult rc = CUDA_SUCCESS;
    if (!st)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (st->status != CU_STREAM_CAPTURE_STATUS_NONE)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else if (!into && !(into = gm_mock_graph_new()))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        st->status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        st->mode = mode;
        st->capture_id = next_capture_id++;
        st->graph = into;
        st->nfrontier = 0;
    }
    gm_mock_unlock();
    return rc;
}

static CUresult cuStreamBeginCapture_impl(CUstream hStream) {
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL);
}
GM_MOCK_PAIR(cuStreamBeginCapture, (CUstream hStream), (hStream))

static CUresult cuStreamBeginCapture_v2_impl(CUstream hStream, CUstreamCaptureMode mode) {
    return begin_capture(hStream, mode, NULL);
}
GM_MOCK_PAIR(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))

static CUresult cuStreamBeginCaptureToGraph_impl(CUstream hStream, CUgraph hGraph,
                                                 const CUgraphNode *deps,
                                                 const CUgraphEdgeData *edges, size_t ndeps,
                                                 CUstreamCaptureMode mode) {
    (void)edges;
    gm_mock_graph_t *g = gm_mock_graph_check(hGraph);
    if (!g || ndeps > 64)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = begin_capture(hStream, mode, g);
    if (rc == CUDA_SUCCESS) {
        gm_mock_stream_t *st = stream_get(hStream);
        memcpy(st->frontier, deps, ndeps * sizeof(*deps));
        st->nfrontier = ndeps;
    }
    return rc;
}
GM_MOCK_PAIR(cuStreamBeginCaptureToGraph,
             (CUstream hStream, CUgraph hGraph, const CUgraphNode *deps,
              const CUgraphEdgeData *edges, size_t ndeps, CUstreamCaptureMode mode),
             (hStream, hGraph, deps, edges, ndeps, mode))

static CUresult cuStreamEndCapture_impl(CUstream hStream, CUgraph *phGraph) {
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    CUresult rc = CUDA_SUCCESS;
    if (!st)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (st->status == CU_STREAM_CAPTURE_STATUS_NONE)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else if (st->status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (st && st->status != CU_STREAM_CAPTURE_STATUS_NONE) {
        if (rc == CUDA_SUCCESS)
            *phGraph = (CUgraph)st->graph;
        else {
            *phGraph = NULL;
            gm_mock_graph_free(st->graph);
        }
        st->graph = NULL;
        st->status = CU_STREAM_CAPTURE_STATUS_NONE;
    }
    gm_mock_unlock();
    return rc;
}
GM_MOCK_PAIR(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))

static CUresult cuStreamIsCapturing_impl(CUstream hStream, CUstreamCaptureStatus *status) {
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    if (st)
        *status = st->status;
    gm_mock_unlock();
    return st ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
GM_MOCK_PAIR(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *status),
             (hStream, status))

/* Capture queries answered, for tests that check a query was skipped (gm_mock_capture_queries). */
static atomic_long capture_queries;

GM_MOCK_API long gm_mock_capture_queries(void) {
    return atomic_load(&capture_queries);
}

/* One body for the three cuStreamGetCaptureInfo ABIs; edges are always default (NULL). */
static CUresult capture_info(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps) {
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_fetch_add(&capture_queries, 1);
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    if (st) {
        int active = st->status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
        *status = st->status;
        if (id && active)
            *id = st->capture_id;
        if (graph)
            *graph = active ? (CUgraph)st->graph : NULL;
        if (deps && active)
            memcpy(st->view, st->frontier, st->nfrontier * sizeof *st->view);
        if (deps)
            *deps = active ? st->view : NULL;
        if (edges)
            *edges = NULL;
        if (ndeps)
            *ndeps = active ? st->nfrontier : 0;
    }
    gm_mock_unlock();
    return st ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult cuStreamGetCaptureInfo_impl(CUstream s, CUstreamCaptureStatus *status,
                                            cuuint64_t *id) {
    return capture_info(s, status, id, NULL, NULL, NULL, NULL);
}
GM_MOCK_PAIR(cuStreamGetCaptureInfo, (CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id),
             (s, status, id))

static CUresult cuStreamGetCaptureInfo_v2_impl(CUstream s, CUstreamCaptureStatus *status,
                                               cuuint64_t *id, CUgraph *graph,
                                               const CUgraphNode **deps, size_t *ndeps) {
    return capture_info(s, status, id, graph, deps, NULL, ndeps);
}
GM_MOCK_PAIR(cuStreamGetCaptureInfo_v2,
             (CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
              const CUgraphNode **deps, size_t *ndeps),
             (s, status, id, graph, deps, ndeps))

static CUresult cuStreamGetCaptureInfo_v3_impl(CUstream s, CUstreamCaptureStatus *status,
                                               cuuint64_t *id, CUgraph *graph,
                                               const CUgraphNode **deps,
                                               const CUgraphEdgeData **edges, size_t *ndeps) {
    return capture_info(s, status, id, graph, deps, edges, ndeps);
}
GM_MOCK_PAIR(cuStreamGetCaptureInfo_v3,
             (CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
              const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps),
             (s, status, id, graph, deps, edges, ndeps))

static CUresult update_deps(CUstream s, CUgraphNode *deps, size_t n, unsigned flags) {
    if ((n && !deps) || flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(s);
    CUresult rc = CUDA_SUCCESS;
    if (!st)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (st->status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else {
        size_t base = flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ? 0 : st->nfrontier;
        if (base + n > sizeof(st->frontier) / sizeof(st->frontier[0]))
            rc = CUDA_ERROR_INVALID_VALUE;
        else {
            memcpy(st->frontier + base, deps, n * sizeof(*deps));
            st->nfrontier = base + n;
        }
    }
    gm_mock_unlock();
    return rc;
}

/* A test's hold on one thread's next dependency update or stream-ordered allocation
 * (gm_mock_hold_next_update, gm_mock_hold_next_allocation): the call waits, before it changes
 * anything, until another thread releases it, so a test can place other threads' calls between a
 * caller's capture query and its update, or between an allocation's entry and the driver's look at
 * its stream. */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_changed = PTHREAD_COND_INITIALIZER;
static bool holding, released;
static _Thread_local gm_mock_hold_point_t hold_next;

GM_MOCK_API void gm_mock_hold_next_update(void) {
    hold_next = GM_MOCK_HOLD_UPDATE;
}

GM_MOCK_API void gm_mock_hold_next_allocation(void) {
    hold_next = GM_MOCK_HOLD_ALLOCATION;
}

GM_MOCK_API void gm_mock_wait_held(void) {
    pthread_mutex_lock(&hold_lock);
    while (!holding)
        pthread_cond_wait(&hold_changed, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
}

GM_MOCK_API void gm_mock_release_update(void) {
    pthread_mutex_lock(&hold_lock);
    released = true;
    pthread_cond_broadcast(&hold_changed);
    pthread_mutex_unlock(&hold_lock);
}

/* The hold ends (released, or the held thread cancelled in its wait, as a test may do). */
static void hold_over(void *arg) {
    (void)arg;
    holding = released = false;
    pthread_mutex_unlock(&hold_lock);
}

void gm_mock_held_here(gm_mock_hold_point_t point) {
    if (hold_next != point)
        return;
    hold_next = GM_MOCK_HOLD_NONE;
    pthread_mutex_lock(&hold_lock);
    holding = true;
    pthread_cond_broadcast(&hold_changed);
    pthread_cleanup_push(hold_over, NULL);
    while (!released)
        pthread_cond_wait(&hold_changed, &hold_lock);
    pthread_cleanup_pop(1);
}

static CUresult cuStreamUpdateCaptureDependencies_impl(CUstream s, CUgraphNode *deps, size_t n,
                                                       unsigned flags) {
    gm_mock_held_here(GM_MOCK_HOLD_UPDATE);
    return update_deps(s, deps, n, flags);
}
GM_MOCK_PAIR(cuStreamUpdateCaptureDependencies,
             (CUstream s, CUgraphNode *deps, size_t n, unsigned flags), (s, deps, n, flags))

static CUresult cuStreamUpdateCaptureDependencies_v2_impl(CUstream s, CUgraphNode *deps,
                                                          const CUgraphEdgeData *edges, size_t n,
                                                          unsigned flags) {
    (void)edges;
    gm_mock_held_here(GM_MOCK_HOLD_UPDATE);
    return update_deps(s, deps, n, flags);
}
GM_MOCK_PAIR(cuStreamUpdateCaptureDependencies_v2,
             (CUstream s, CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
              unsigned flags),
             (s, deps, edges, n, flags))

GM_MOCK_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    GM_MOCK_CALL("cuThreadExchangeStreamCaptureMode");
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

gm_mock_node_t *gm_mock_stream_capture_node(CUstream s, CUgraphNodeType type, CUresult *err) {
    gm_mock_node_t *node = NULL;
    *err = CUDA_SUCCESS;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(s);
    if (!st)
        *err = CUDA_ERROR_INVALID_HANDLE;
    else if (st->status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        *err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (st->status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        node = gm_mock_node_add(st->graph, type, st->frontier, st->nfrontier, err);
        if (node) {
            st->frontier[0] = (CUgraphNode)node;
            st->nfrontier = 1;
        }
    }
    gm_mock_unlock();
    return node;
}

static CUresult cuStreamGetCtx_impl(CUstream hStream, CUcontext *pctx) {
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    if (st)
        memset(st->view, 0xa5, sizeof st->view); /* the capture info's array is retired */
    gm_mock_unlock();
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    *pctx = gm_mock_primary_ctx();
    return CUDA_SUCCESS;
}
GM_MOCK_PAIR(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), (hStream, pctx))

static CUresult cuStreamGetDevice_impl(CUstream hStream, CUdevice *device) {
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_stream_t *st = stream_get(hStream);
    gm_mock_unlock();
    if (!st)
        return CUDA_ERROR_INVALID_HANDLE;
    *device = 0;
    return CUDA_SUCCESS;
}
GM_MOCK_PAIR(cuStreamGetDevice, (CUstream hStream, CUdevice *device), (hStream, device))

/* A driver of plain structs for the capture queries the unjoined-fork notes make
 * (shim/bridge/joins.c): streams that tell their capture's status, id and last nodes, and nodes
 * that tell their dependencies. A stream's status and id may change while other threads ask.
 * Each thread may have a per-thread default stream (fake_per_thread), which NULL through a _ptsz
 * entry and CU_STREAM_PER_THREAD name, and a current context (fake_context), which
 * gm_stream_key (shim/bridge/streams.c) reads. */
#ifndef GRAPHMEM_TEST_FAKE_CAPTURE_H
#define GRAPHMEM_TEST_FAKE_CAPTURE_H

#include <stdatomic.h>

#include "fake_dependencies.h"
#include "interpose/driver.h"

gm_driver_table_t gm_drv;
gm_real_table_t gm_real;

typedef struct fake_node {
    unsigned dep_count;
    struct fake_node *deps[4];
    bool api_node; /* added by the program through the graph API: no marker (fake_is_marker) */
} fake_node_t;

typedef struct fake_stream {
    _Atomic int status; /* a CUstreamCaptureStatus */
    _Atomic cuuint64_t
        id; /* what the driver tells (0 once an invalidated capture no longer says) */
    unsigned tail_count;
    CUgraphNode tails[4];
    const CUgraphNode *wide; /* when set, the last nodes instead of `tails` (tail_count of them) */
    bool edge_data;          /* its dependencies carry edge data: asked without, LOSSY_QUERY */
    _Atomic unsigned asks;   /* capture queries made of it */
} fake_stream_t;

/* This thread's per-thread default stream (NULL: one that captures nothing) and context. */
static _Thread_local fake_stream_t *fake_per_thread;
static _Thread_local CUcontext fake_context = (CUcontext)0x1000;

/* What a default stream named through either ABI is on this thread (a legacy stream, or a
 * per-thread stream of none, captures nothing). */
static inline fake_stream_t *fake_stream_of(CUstream stream, bool ptsz) {
    static _Thread_local fake_stream_t idle;
    if (stream == CU_STREAM_PER_THREAD || (stream == NULL && ptsz))
        return fake_per_thread != NULL ? fake_per_thread : &idle;
    if (stream == NULL || stream == CU_STREAM_LEGACY)
        return &idle;
    return (fake_stream_t *)stream;
}

static inline CUresult fake_capture_info_of(fake_stream_t *s, CUstreamCaptureStatus *status,
                                            cuuint64_t *id, CUgraph *graph,
                                            const CUgraphNode **tails,
                                            const CUgraphEdgeData **edges, size_t *tail_count) {
    static const CUgraphEdgeData no_data[1024];
    atomic_fetch_add_explicit(&s->asks, 1, memory_order_relaxed);
    if (tails != NULL && edges == NULL && s->edge_data)
        return CUDA_ERROR_LOSSY_QUERY; /* as the driver documents it */
    if (edges != NULL)
        *edges = no_data; /* zero data is all the notes ever read of it */
    *status = (CUstreamCaptureStatus)atomic_load_explicit(&s->status, memory_order_relaxed);
    if (id != NULL)
        *id = atomic_load_explicit(&s->id, memory_order_relaxed);
    if (graph != NULL)
        *graph = NULL;
    if (tails != NULL)
        *tails = s->wide != NULL ? s->wide : s->tails;
    if (tail_count != NULL)
        *tail_count = s->tail_count;
    return CUDA_SUCCESS;
}

static inline CUresult CUDAAPI fake_capture_info(CUstream stream, CUstreamCaptureStatus *status,
                                                 cuuint64_t *id, CUgraph *graph,
                                                 const CUgraphNode **tails,
                                                 const CUgraphEdgeData **edges,
                                                 size_t *tail_count) {
    return fake_capture_info_of(fake_stream_of(stream, false), status, id, graph, tails, edges,
                                tail_count);
}

static inline CUresult CUDAAPI fake_capture_info_ptsz(CUstream stream,
                                                      CUstreamCaptureStatus *status, cuuint64_t *id,
                                                      CUgraph *graph, const CUgraphNode **tails,
                                                      const CUgraphEdgeData **edges,
                                                      size_t *tail_count) {
    return fake_capture_info_of(fake_stream_of(stream, true), status, id, graph, tails, edges,
                                tail_count);
}

static inline CUresult CUDAAPI fake_ctx_get_current(CUcontext *context) {
    *context = fake_context;
    return CUDA_SUCCESS;
}

static inline CUresult CUDAAPI fake_dependencies(CUgraphNode node, CUgraphNode *deps,
                                                 CUgraphEdgeData *edges, size_t *count) {
    const fake_node_t *n = (const fake_node_t *)node;
    return fake_dependencies_of(n->deps, n->dep_count, deps, edges, count);
}

static inline void fake_capture_install(void) {
    gm_real.cuStreamGetCaptureInfo_v3 = fake_capture_info;
    gm_real.cuStreamGetCaptureInfo_v3_ptsz = fake_capture_info_ptsz;
    gm_drv.cuGraphNodeGetDependencies_v2 = fake_dependencies;
    gm_drv.cuCtxGetCurrent = fake_ctx_get_current;
}

/* Every node is a marker but those the program added through the graph API (api_node). */
static inline bool fake_is_marker(CUgraphNode node) {
    return node != NULL && !((const fake_node_t *)node)->api_node;
}
/* A stream capturing in `id` whose last node is `tail`. */
static inline void fake_stream_capture(fake_stream_t *s, cuuint64_t id, CUgraphNode tail) {
    atomic_store(&s->status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    atomic_store(&s->id, id);
    s->tail_count = 1;
    s->tails[0] = tail;
}

#endif

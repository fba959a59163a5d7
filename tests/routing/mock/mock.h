/* Internal interface of the mock libcuda.so.1 used by the routing tests.
 *
 * The mock stands in for the real driver on machines without a GPU. It must be faithful where
 * graphmem and cudart look (cuGetProcAddress, capture state, graph and VMM bookkeeping) and
 * merely plausible elsewhere. Every exported entry logs one line so tests can see which exact
 * ABI twin was reached and from which object. */
#ifndef GM_MOCK_H
#define GM_MOCK_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#define GM_MOCK_DRIVER_VERSION 13000

/* Exported mock entries; each is also a weak default in stubs.c (see there). */
#define GM_MOCK_API __attribute__((visibility("default")))

/* The return address must be taken in the entry itself, so this is a macro. */
#define GM_MOCK_CALL(name) gm_mock_log_call(name, __builtin_return_address(0))

void gm_mock_log_call(const char *name, const void *caller);
/* A call of an entry the mock leaves unimplemented (from stubs.c, which cannot include this). */
void gm_mock_log_unimplemented(const char *name, const void *caller);
void gm_mock_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Global lock for all mock state: the mock values simplicity over concurrency. */
void gm_mock_lock(void);
void gm_mock_unlock(void);

/* Test controls (exported, not driver entries): the calling thread's next
 * cuStreamUpdateCaptureDependencies* (or stream-ordered allocation, cuMemAlloc*Async) waits,
 * before it changes anything, until another thread releases it; gm_mock_wait_held returns once a
 * thread waits there. */
void gm_mock_hold_next_update(void);
void gm_mock_hold_next_allocation(void);
void gm_mock_wait_held(void);
void gm_mock_release_update(void);
/* The next `count` cuGraphGetNodes calls that ask for the nodes (not only their count) answer
 * CUDA_ERROR_OUT_OF_MEMORY, as the driver might without host memory. */
void gm_mock_fail_node_lists(int count);
/* Capture queries answered so far (cuStreamGetCaptureInfo, every ABI). */
long gm_mock_capture_queries(void);
/* Event records and stream waits on the legacy default stream so far (CU_STREAM_LEGACY, or NULL
 * through an entry without _ptsz). */
long gm_mock_legacy_stream_uses(void);

/* Where a held call waits (the controls above). */
typedef enum gm_mock_hold_point {
    GM_MOCK_HOLD_NONE,
    GM_MOCK_HOLD_UPDATE,
    GM_MOCK_HOLD_ALLOCATION,
} gm_mock_hold_point_t;
void gm_mock_held_here(gm_mock_hold_point_t point);

/* CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded, like the driver. */
CUresult gm_mock_check_init(void);
/* The primary context's handle (every stream's context here). */
CUcontext gm_mock_primary_ctx(void);

/* Exports a legacy entry and its per-thread twin around one body, each logging its own name.
 * The mock treats a NULL stream alike in both: no test captures on a default stream. */
#define GM_MOCK_PAIR(name, params, args)                                                           \
    GM_MOCK_API CUresult name params {                                                             \
        GM_MOCK_CALL(#name);                                                                       \
        return name##_impl args;                                                                   \
    }                                                                                              \
    GM_MOCK_API CUresult name##_ptsz params {                                                      \
        GM_MOCK_CALL(#name "_ptsz");                                                               \
        return name##_impl args;                                                                   \
    }

/* Capture bookkeeping shared by stream.c (capture state) and graph.c (nodes). */
typedef struct gm_mock_node gm_mock_node_t;
typedef struct gm_mock_graph gm_mock_graph_t;

#define GM_MOCK_MAGIC_GRAPH 0x47524148u
#define GM_MOCK_MAGIC_NODE 0x4e4f4445u
#define GM_MOCK_MAGIC_EXEC 0x45584543u
#define GM_MOCK_MAGIC_STREAM 0x5354524du

struct gm_mock_node {
    unsigned magic;
    CUgraphNodeType type;
    gm_mock_graph_t *graph;
    gm_mock_node_t *next; /* in graph->nodes */
    size_t ndeps;
    gm_mock_node_t **deps;
    CUDA_MEM_ALLOC_NODE_PARAMS_v1 alloc; /* CU_GRAPH_NODE_TYPE_MEM_ALLOC */
    CUdeviceptr free_ptr;                /* CU_GRAPH_NODE_TYPE_MEM_FREE */
};

struct gm_mock_graph {
    unsigned magic;
    gm_mock_node_t *nodes;
    size_t nnodes;
};

/* Graph helpers; the caller holds the lock. */
gm_mock_graph_t *gm_mock_graph_new(void);
void gm_mock_graph_free(gm_mock_graph_t *g);
gm_mock_graph_t *gm_mock_graph_check(CUgraph g);
/* Adds a node after deps: NULL with *err set when a dependency is not a node of g. */
gm_mock_node_t *gm_mock_node_add(gm_mock_graph_t *g, CUgraphNodeType type, const CUgraphNode *deps,
                                 size_t ndeps, CUresult *err);

/* Stream-ordered work on a stream: when it is capturing, adds a node of `type` after the
 * capture frontier and makes it the frontier, returning it; NULL otherwise. *err is set when
 * the stream is invalid or its capture is invalidated. Takes the lock itself. */
gm_mock_node_t *gm_mock_stream_capture_node(CUstream s, CUgraphNodeType type, CUresult *err);

/* Fake device addresses for graph and stream-ordered allocations: unique, never dereferenced.
 * The caller holds the lock. */
CUdeviceptr gm_mock_fake_address(size_t bytes);

/* Export tables (export_table.c, handshake.c); the handshake hashes their addresses. */
const void *const *gm_mock_cudart_table(void);
const void *const *gm_mock_handshake_table(void);

#endif

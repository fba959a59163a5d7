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
void gm_mock_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Global lock for all mock state: the mock values simplicity over concurrency. */
void gm_mock_lock(void);
void gm_mock_unlock(void);

/* CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded, like the driver. */
CUresult gm_mock_check_init(void);

/* Capture bookkeeping shared by stream.c (capture state) and graph.c (nodes). */
typedef struct gm_mock_node gm_mock_node_t;
typedef struct gm_mock_graph gm_mock_graph_t;

struct gm_mock_node {
    CUgraphNodeType type;
    gm_mock_graph_t *graph;
    gm_mock_node_t *next; /* in graph->nodes */
    size_t ndeps;
    gm_mock_node_t **deps;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc; /* CU_GRAPH_NODE_TYPE_MEM_ALLOC */
    CUdeviceptr free_ptr;             /* CU_GRAPH_NODE_TYPE_MEM_FREE */
};

struct gm_mock_graph {
    gm_mock_node_t *nodes;
    size_t nnodes;
};

gm_mock_graph_t *gm_mock_graph_new(void);
/* Adds a node after deps; NULL when out of memory. Caller holds the lock. */
gm_mock_node_t *gm_mock_node_add(gm_mock_graph_t *g, CUgraphNodeType type, const CUgraphNode *deps,
                                 size_t ndeps);

/* Returns the capture graph of a stream that is actively capturing, else NULL. */
gm_mock_graph_t *gm_mock_stream_capture(CUstream s, CUresult *err);
/* Replaces the capture frontier of a capturing stream with one node. */
void gm_mock_stream_set_frontier(CUstream s, gm_mock_node_t *node);
const CUgraphNode *gm_mock_stream_frontier(CUstream s, size_t *n);

/* Fake device addresses for graph and stream-ordered allocations: unique, never dereferenced. */
CUdeviceptr gm_mock_fake_address(size_t bytes);

/* Export tables (export_table.c, handshake.c); the handshake hashes their addresses. */
const void *const *gm_mock_cudart_table(void);
const void *const *gm_mock_handshake_table(void);

#endif

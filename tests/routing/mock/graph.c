/* Graphs, nodes and executable graphs: enough structure for memory nodes and empty markers to
 * be created, inspected, instantiated and launched. Nothing executes. */
#include "mock.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned magic;
    size_t alloc_bytes; /* its graph's allocation nodes, at instantiation */
} gm_mock_exec_t;

/* Graph memory accounting, in the driver's terms: an instantiated graph's allocation nodes hold
 * their bytes until trimmed after the exec is gone. */
static size_t graph_mem_used, graph_mem_used_high, graph_mem_reserved, graph_mem_reserved_high;

gm_mock_graph_t *gm_mock_graph_new(void) {
    gm_mock_graph_t *g = calloc(1, sizeof(*g));
    if (g)
        g->magic = GM_MOCK_MAGIC_GRAPH;
    return g;
}

void gm_mock_graph_free(gm_mock_graph_t *g) {
    gm_mock_node_t *n = g->nodes;
    while (n) {
        gm_mock_node_t *next = n->next;
        n->magic = 0;
        free(n->deps);
        free(n);
        n = next;
    }
    g->magic = 0;
    free(g);
}

gm_mock_graph_t *gm_mock_graph_check(CUgraph h) {
    gm_mock_graph_t *g = (gm_mock_graph_t *)h;
    return g && g->magic == GM_MOCK_MAGIC_GRAPH ? g : NULL;
}

static gm_mock_node_t *node_check(CUgraphNode h) {
    gm_mock_node_t *n = (gm_mock_node_t *)h;
    return n && n->magic == GM_MOCK_MAGIC_NODE ? n : NULL;
}

gm_mock_node_t *gm_mock_node_add(gm_mock_graph_t *g, CUgraphNodeType type, const CUgraphNode *deps,
                                 size_t ndeps, CUresult *err) {
    for (size_t i = 0; i < ndeps; i++) {
        gm_mock_node_t *d = node_check(deps[i]);
        if (!d || d->graph != g) {
            *err = CUDA_ERROR_INVALID_VALUE;
            return NULL;
        }
    }
    gm_mock_node_t *n = calloc(1, sizeof(*n));
    if (n && ndeps)
        n->deps = malloc(ndeps * sizeof(*n->deps));
    if (!n || (ndeps && !n->deps)) {
        free(n);
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    if (ndeps)
        memcpy(n->deps, deps, ndeps * sizeof(*deps));
    n->magic = GM_MOCK_MAGIC_NODE;
    n->type = type;
    n->graph = g;
    n->ndeps = ndeps;
    n->next = g->nodes;
    g->nodes = n;
    g->nnodes++;
    *err = CUDA_SUCCESS;
    return n;
}

GM_MOCK_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
    GM_MOCK_CALL("cuGraphCreate");
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_graph_t *g = gm_mock_graph_new();
    gm_mock_unlock();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)g;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuGraphDestroy(CUgraph hGraph) {
    GM_MOCK_CALL("cuGraphDestroy");
    gm_mock_lock();
    gm_mock_graph_t *g = gm_mock_graph_check(hGraph);
    if (g)
        gm_mock_graph_free(g);
    gm_mock_unlock();
    return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The driver refuses to destroy a node of a graph holding memory nodes (tests/SEMANTICS.md
 * §A3.2); any other node goes with its edges. */
GM_MOCK_API CUresult cuGraphDestroyNode(CUgraphNode hNode) {
    GM_MOCK_CALL("cuGraphDestroyNode");
    gm_mock_lock();
    gm_mock_node_t *node = node_check(hNode);
    gm_mock_graph_t *g = node ? node->graph : NULL;
    CUresult rc = node ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (gm_mock_node_t *n = g ? g->nodes : NULL; n && rc == CUDA_SUCCESS; n = n->next)
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            rc = CUDA_ERROR_NOT_SUPPORTED;
    if (rc == CUDA_SUCCESS) {
        for (gm_mock_node_t **at = &g->nodes; *at; at = &(*at)->next)
            if (*at == node) {
                *at = node->next;
                break;
            }
        g->nnodes--;
        for (gm_mock_node_t *n = g->nodes; n; n = n->next) {
            size_t kept = 0;
            for (size_t i = 0; i < n->ndeps; i++)
                if (n->deps[i] != node)
                    n->deps[kept++] = n->deps[i];
            n->ndeps = kept;
        }
        node->magic = 0;
        free(node->deps);
        free(node);
    }
    gm_mock_unlock();
    return rc;
}

/* Adds a node of `type` to a graph for the explicit node APIs. */
static CUresult add_node(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
                         CUgraphNodeType type, gm_mock_node_t **node) {
    if (!out || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_graph_t *g = gm_mock_graph_check(hGraph);
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc;
    *node = gm_mock_node_add(g, type, deps, ndeps, &rc);
    if (*node)
        *out = (CUgraphNode)*node;
    return rc;
}

GM_MOCK_API CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                         const CUgraphNode *dependencies, size_t numDependencies) {
    GM_MOCK_CALL("cuGraphAddEmptyNode");
    gm_mock_node_t *n;
    gm_mock_lock();
    CUresult rc =
        add_node(phGraphNode, hGraph, dependencies, numDependencies, CU_GRAPH_NODE_TYPE_EMPTY, &n);
    gm_mock_unlock();
    return rc;
}

/* The v1 and v2 parameter structs share their fields but not their type: take the fields. */
static CUresult add_mem_alloc(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps,
                              size_t ndeps, const CUmemPoolProps *props, size_t bytes,
                              CUdeviceptr *dptr) {
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_node_t *n;
    CUresult rc = add_node(out, hGraph, deps, ndeps, CU_GRAPH_NODE_TYPE_MEM_ALLOC, &n);
    if (rc == CUDA_SUCCESS) {
        n->alloc.poolProps = *props;
        n->alloc.bytesize = bytes;
        n->alloc.dptr = *dptr = gm_mock_fake_address(bytes);
    }
    return rc;
}

static CUresult add_mem_free(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps,
                             size_t ndeps, CUdeviceptr dptr) {
    gm_mock_node_t *n;
    CUresult rc = add_node(out, hGraph, deps, ndeps, CU_GRAPH_NODE_TYPE_MEM_FREE, &n);
    if (rc == CUDA_SUCCESS)
        n->free_ptr = dptr;
    return rc;
}

GM_MOCK_API CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                            const CUgraphNode *dependencies, size_t numDependencies,
                                            CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
    GM_MOCK_CALL("cuGraphAddMemAllocNode");
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    CUresult rc = add_mem_alloc(phGraphNode, hGraph, dependencies, numDependencies,
                                &nodeParams->poolProps, nodeParams->bytesize, &nodeParams->dptr);
    gm_mock_unlock();
    return rc;
}

GM_MOCK_API CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           CUdeviceptr dptr) {
    GM_MOCK_CALL("cuGraphAddMemFreeNode");
    gm_mock_lock();
    CUresult rc = add_mem_free(phGraphNode, hGraph, dependencies, numDependencies, dptr);
    gm_mock_unlock();
    return rc;
}

/* cuGraphAddNode: empty and memory nodes only; other kinds need work the mock cannot fake. */
static CUresult add_generic(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps, size_t ndeps,
                            CUgraphNodeParams *params) {
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_node_t *n;
    gm_mock_lock();
    CUresult rc;
    switch (params->type) {
    case CU_GRAPH_NODE_TYPE_EMPTY:
        rc = add_node(out, hGraph, deps, ndeps, CU_GRAPH_NODE_TYPE_EMPTY, &n);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        rc = add_mem_alloc(out, hGraph, deps, ndeps, &params->alloc.poolProps,
                           params->alloc.bytesize, &params->alloc.dptr);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        rc = add_mem_free(out, hGraph, deps, ndeps, params->free.dptr);
        break;
    default:
        rc = CUDA_ERROR_NOT_SUPPORTED;
    }
    gm_mock_unlock();
    return rc;
}

GM_MOCK_API CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                    const CUgraphNode *dependencies, size_t numDependencies,
                                    CUgraphNodeParams *nodeParams) {
    GM_MOCK_CALL("cuGraphAddNode");
    return add_generic(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

GM_MOCK_API CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies,
                                       const CUgraphEdgeData *dependencyData,
                                       size_t numDependencies, CUgraphNodeParams *nodeParams) {
    GM_MOCK_CALL("cuGraphAddNode_v2");
    (void)dependencyData; /* default edges only */
    return add_generic(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

GM_MOCK_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
    GM_MOCK_CALL("cuGraphNodeGetType");
    gm_mock_node_t *n = node_check(hNode);
    if (!n || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = n->type;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                  CUDA_MEM_ALLOC_NODE_PARAMS *params_out) {
    GM_MOCK_CALL("cuGraphMemAllocNodeGetParams");
    gm_mock_node_t *n = node_check(hNode);
    if (!n || !params_out || n->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
        return CUDA_ERROR_INVALID_VALUE;
    *params_out = n->alloc;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out) {
    GM_MOCK_CALL("cuGraphMemFreeNodeGetParams");
    gm_mock_node_t *n = node_check(hNode);
    if (!n || !dptr_out || n->type != CU_GRAPH_NODE_TYPE_MEM_FREE)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr_out = n->free_ptr;
    return CUDA_SUCCESS;
}

/* Node lists to refuse, for tests of a read-back that fails (gm_mock_fail_node_lists). */
static atomic_int node_lists_to_fail;

GM_MOCK_API void gm_mock_fail_node_lists(int count) {
    atomic_store(&node_lists_to_fail, count);
}

GM_MOCK_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
    GM_MOCK_CALL("cuGraphGetNodes");
    if (nodes && atomic_load(&node_lists_to_fail) > 0 &&
        atomic_fetch_sub(&node_lists_to_fail, 1) > 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    gm_mock_lock();
    gm_mock_graph_t *g = gm_mock_graph_check(hGraph);
    CUresult rc = g && numNodes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        size_t i = 0;
        for (gm_mock_node_t *n = g->nodes; n && nodes && i < *numNodes; n = n->next)
            nodes[i++] = (CUgraphNode)n;
        *numNodes = nodes ? i : g->nnodes;
    }
    gm_mock_unlock();
    return rc;
}

GM_MOCK_API CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *deps,
                                                   CUgraphEdgeData *edges, size_t *n) {
    GM_MOCK_CALL("cuGraphNodeGetDependencies_v2");
    gm_mock_node_t *node = node_check(hNode);
    if (!node || !n)
        return CUDA_ERROR_INVALID_VALUE;
    if (deps) {
        size_t count = *n < node->ndeps ? *n : node->ndeps;
        for (size_t i = 0; i < count; i++) {
            deps[i] = (CUgraphNode)node->deps[i];
            if (edges)
                edges[i] = (CUgraphEdgeData){0};
        }
        *n = count;
    } else {
        *n = node->ndeps;
    }
    return CUDA_SUCCESS;
}

/* Edges are the nodes' dependencies, listed from each node in graph order. */
static CUresult get_edges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                          CUgraphEdgeData *edges, size_t *n) {
    if (!n || (from == NULL) != (to == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_graph_t *g = gm_mock_graph_check(hGraph);
    size_t count = 0;
    for (gm_mock_node_t *node = g ? g->nodes : NULL; node; node = node->next) {
        for (size_t i = 0; i < node->ndeps; i++, count++) {
            if (!from || count >= *n)
                continue;
            from[count] = (CUgraphNode)node->deps[i];
            to[count] = (CUgraphNode)node;
            if (edges)
                edges[count] = (CUgraphEdgeData){0};
        }
    }
    gm_mock_unlock();
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    *n = from && count > *n ? *n : count;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                     size_t *numEdges) {
    GM_MOCK_CALL("cuGraphGetEdges");
    return get_edges(hGraph, from, to, NULL, numEdges);
}

GM_MOCK_API CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                        CUgraphEdgeData *edgeData, size_t *numEdges) {
    GM_MOCK_CALL("cuGraphGetEdges_v2");
    return get_edges(hGraph, from, to, edgeData, numEdges);
}

static CUresult instantiate(CUgraphExec *out, CUgraph hGraph) {
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    gm_mock_graph_t *g = gm_mock_graph_check(hGraph);
    gm_mock_exec_t *e = g ? calloc(1, sizeof(*e)) : NULL;
    if (e) {
        e->magic = GM_MOCK_MAGIC_EXEC;
        for (gm_mock_node_t *n = g->nodes; n; n = n->next)
            if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
                e->alloc_bytes += n->alloc.bytesize;
        graph_mem_used += e->alloc_bytes;
        graph_mem_reserved += e->alloc_bytes;
        if (graph_mem_used > graph_mem_used_high)
            graph_mem_used_high = graph_mem_used;
        if (graph_mem_reserved > graph_mem_reserved_high)
            graph_mem_reserved_high = graph_mem_reserved;
    }
    gm_mock_unlock();
    if (!e)
        return g ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    *out = (CUgraphExec)e;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUgraphNode *phErrorNode, char *logBuffer,
                                        size_t bufferSize) {
    GM_MOCK_CALL("cuGraphInstantiate");
    (void)phErrorNode, (void)logBuffer, (void)bufferSize;
    return instantiate(phGraphExec, hGraph);
}

GM_MOCK_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUgraphNode *phErrorNode, char *logBuffer,
                                           size_t bufferSize) {
    GM_MOCK_CALL("cuGraphInstantiate_v2");
    (void)phErrorNode, (void)logBuffer, (void)bufferSize;
    return instantiate(phGraphExec, hGraph);
}

GM_MOCK_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                 unsigned long long flags) {
    GM_MOCK_CALL("cuGraphInstantiateWithFlags");
    (void)flags;
    return instantiate(phGraphExec, hGraph);
}

static CUresult cuGraphInstantiateWithParams_impl(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = instantiate(phGraphExec, hGraph);
    params->result_out =
        rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}
GM_MOCK_PAIR(cuGraphInstantiateWithParams,
             (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params),
             (phGraphExec, hGraph, params))

static gm_mock_exec_t *exec_check(CUgraphExec h) {
    gm_mock_exec_t *e = (gm_mock_exec_t *)h;
    return e && e->magic == GM_MOCK_MAGIC_EXEC ? e : NULL;
}

static CUresult cuGraphLaunch_impl(CUgraphExec hGraphExec, CUstream hStream) {
    (void)hStream;
    return exec_check(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
GM_MOCK_PAIR(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))

static CUresult cuGraphUpload_impl(CUgraphExec hGraphExec, CUstream hStream) {
    (void)hStream;
    return exec_check(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
GM_MOCK_PAIR(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))

/* Takes any update of a valid exec from a valid graph (the mock keeps no exec's nodes). */
GM_MOCK_API CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                          CUgraphExecUpdateResultInfo *resultInfo) {
    GM_MOCK_CALL("cuGraphExecUpdate_v2");
    gm_mock_lock();
    bool valid = exec_check(hGraphExec) && gm_mock_graph_check(hGraph) && resultInfo;
    gm_mock_unlock();
    if (!valid)
        return CUDA_ERROR_INVALID_VALUE;
    *resultInfo = (CUgraphExecUpdateResultInfo){.result = CU_GRAPH_EXEC_UPDATE_SUCCESS};
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
    GM_MOCK_CALL("cuGraphExecDestroy");
    gm_mock_lock();
    gm_mock_exec_t *e = exec_check(hGraphExec);
    if (e) {
        /* Its bytes leave "used"; "reserved" keeps them until a trim. */
        graph_mem_used -= e->alloc_bytes;
        e->magic = 0;
        free(e);
    }
    gm_mock_unlock();
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GM_MOCK_API CUresult cuDeviceGraphMemTrim(CUdevice device) {
    GM_MOCK_CALL("cuDeviceGraphMemTrim");
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    gm_mock_lock();
    graph_mem_reserved = graph_mem_used;
    gm_mock_unlock();
    return CUDA_SUCCESS;
}

static size_t *graph_mem_attr(CUgraphMem_attribute attr) {
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        return &graph_mem_used;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        return &graph_mem_used_high;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        return &graph_mem_reserved;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        return &graph_mem_reserved_high;
    }
    return NULL;
}

GM_MOCK_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                  void *value) {
    GM_MOCK_CALL("cuDeviceGetGraphMemAttribute");
    size_t *slot = graph_mem_attr(attr);
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!slot || !value)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    *(cuuint64_t *)value = *slot;
    gm_mock_unlock();
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                                  void *value) {
    GM_MOCK_CALL("cuDeviceSetGraphMemAttribute");
    if (device != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    /* Only the high watermarks can be set, and only to 0. */
    if (!value || *(cuuint64_t *)value != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    *graph_mem_attr(attr) = 0;
    gm_mock_unlock();
    return CUDA_SUCCESS;
}

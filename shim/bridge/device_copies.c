#include "device_copies.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/driver.h"
#include "log.h"
#include "util.h"
#include "topology.h"

/* ---- the copy ------------------------------------------------------------------------------ */

typedef struct node_list {
    CUgraphNode *nodes;
    size_t count;
} node_list_t;

static bool plain_edge(const CUgraphEdgeData *d) {
    static const CUgraphEdgeData none = {0};
    return memcmp(d, &none, sizeof none) == 0;
}

/* The dependencies (`in`) or dependents of `node`, whose edges must all be plain ones
 * (CUDA_ERROR_NOT_SUPPORTED otherwise): a marker's own edges are (graphmem adds them, and an empty
 * node has no ports), but a programmatic edge between two others could not take a plain one
 * beside it, which joining across a marker may need. Asked with the edge data: without it the
 * driver refuses the query as lossy when an edge carries some. */
static CUresult neighbours(CUgraphNode node, bool in, node_list_t *out) {
    size_t n = 0;
    CUresult r = in ? gm_drv.cuGraphNodeGetDependencies_v2(node, NULL, NULL, &n)
                    : gm_drv.cuGraphNodeGetDependentNodes_v2(node, NULL, NULL, &n);
    if (r != CUDA_SUCCESS || n == 0) /* no array with a count of 0: the driver refuses that */
        return r;
    out->nodes = calloc(n, sizeof *out->nodes);
    CUgraphEdgeData *data = calloc(n, sizeof *data);
    if (out->nodes == NULL || data == NULL) {
        free(data);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    out->count = n;
    r = in ? gm_drv.cuGraphNodeGetDependencies_v2(node, out->nodes, data, &out->count)
           : gm_drv.cuGraphNodeGetDependentNodes_v2(node, out->nodes, data, &out->count);
    for (size_t i = 0; r == CUDA_SUCCESS && i < out->count; i++)
        if (!plain_edge(&data[i]))
            r = CUDA_ERROR_NOT_SUPPORTED;
    free(data);
    return r;
}

static bool depends_on(CUgraphNode node, CUgraphNode on, CUresult *r) {
    node_list_t deps = {0};
    *r = neighbours(node, true, &deps);
    bool found = false;
    for (size_t i = 0; *r == CUDA_SUCCESS && i < deps.count && !found; i++)
        found = deps.nodes[i] == on;
    free(deps.nodes);
    return found;
}

/* Destroys marker `m` of `copy`, each of its dependencies joined to each of its dependents. The
 * markers' edges are plain ones (graphmem adds them, and captured edges to an empty node carry
 * no port). */
static CUresult bridge_out(CUgraph copy, CUgraphNode m) {
    node_list_t in = {0}, out = {0};
    CUresult r = neighbours(m, true, &in);
    if (r == CUDA_SUCCESS)
        r = neighbours(m, false, &out);
    for (size_t i = 0; r == CUDA_SUCCESS && i < in.count; i++)
        for (size_t k = 0; r == CUDA_SUCCESS && k < out.count; k++)
            if (!depends_on(out.nodes[k], in.nodes[i], &r) && r == CUDA_SUCCESS)
                r = gm_drv.cuGraphAddDependencies_v2(copy, &in.nodes[i], &out.nodes[k], NULL, 1);
    if (r == CUDA_SUCCESS)
        r = gm_real.cuGraphDestroyNode(m);
    free(in.nodes);
    free(out.nodes);
    return r;
}

CUresult gm_device_copy_make(gm_engine_t *engine, CUgraph graph, uint32_t marker_count,
                             CUgraph *copy) {
    *copy = NULL;
    if (!gm_drv.cuGraphNodeGetDependentNodes_v2 || !gm_drv.cuGraphAddDependencies_v2)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUgraphNode *nodes;
    size_t count;
    CUresult r = gm_graph_nodes(graph, &nodes, &count);
    /* The graph's own markers, moved to the front of `nodes`. */
    uint32_t own = 0;
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
        if (gm_engine_marker(engine, (uint64_t)(uintptr_t)nodes[i], NULL) != GM_MARKER_NONE)
            nodes[own++] = nodes[i];
    /* Markers in child graphs or conditional bodies: not copied out. */
    if (r == CUDA_SUCCESS && own != marker_count)
        r = CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS)
        r = gm_real.cuGraphClone(copy, graph);
    for (size_t i = 0; r == CUDA_SUCCESS && i < own; i++) {
        CUgraphNode m = NULL;
        r = gm_drv.cuGraphNodeFindInClone(&m, nodes[i], *copy);
        if (r == CUDA_SUCCESS)
            r = bridge_out(*copy, m);
    }
    free(nodes);
    if (r != CUDA_SUCCESS)
        gm_log(GM_LOG_DEBUG, "device launch copy of graph %p: %s failed (%d)", (void *)graph,
               *copy == NULL ? "the clone" : "taking a marker out", (int)r);
    if (r != CUDA_SUCCESS && *copy != NULL) {
        gm_real.cuGraphDestroy(*copy);
        *copy = NULL;
    }
    return r;
}

/* ---- execs made from copies ---------------------------------------------------------------- */

typedef struct device_exec {
    CUgraphExec exec;
    CUgraph copy;
} device_exec_t;

static device_exec_t *execs;
static uint32_t exec_count, exec_cap;
static pthread_mutex_t execs_lock = PTHREAD_MUTEX_INITIALIZER;
/* Entries in `execs`: every exec node call asks gm_device_node, and most programs have none. */
static atomic_uint registered;

bool gm_device_copy_register(CUgraphExec exec, CUgraph copy) {
    pthread_mutex_lock(&execs_lock);
    bool ok = gm_grow((void **)&execs, &exec_cap, exec_count + 1, sizeof *execs) == GM_OK;
    if (ok) {
        execs[exec_count++] = (device_exec_t){exec, copy};
        atomic_fetch_add_explicit(&registered, 1, memory_order_release);
    }
    pthread_mutex_unlock(&execs_lock);
    return ok;
}

CUgraphNode gm_device_node(CUgraphExec exec, CUgraphNode node) {
    if (atomic_load_explicit(&registered, memory_order_acquire) == 0)
        return node;
    pthread_mutex_lock(&execs_lock);
    CUgraph copy = NULL;
    for (uint32_t i = 0; i < exec_count && !copy; i++)
        if (execs[i].exec == exec)
            copy = execs[i].copy;
    CUgraphNode found = NULL;
    /* A node the copy lacks (none of the graph's): the driver answers for the original node. */
    if (copy == NULL || gm_drv.cuGraphNodeFindInClone(&found, node, copy) != CUDA_SUCCESS)
        found = node;
    pthread_mutex_unlock(&execs_lock);
    return found;
}

/* Drops `exec` from the table, under execs_lock; the copy it was made from, or NULL. */
static CUgraph copy_remove(CUgraphExec exec) {
    for (uint32_t i = 0; i < exec_count; i++)
        if (execs[i].exec == exec) {
            CUgraph copy = execs[i].copy;
            execs[i] = execs[--exec_count];
            atomic_fetch_sub_explicit(&registered, 1, memory_order_release);
            return copy;
        }
    return NULL;
}

CUresult gm_device_exec_destroy(CUgraphExec exec, CUresult (*destroy)(CUgraphExec)) {
    if (atomic_load_explicit(&registered, memory_order_acquire) == 0)
        return destroy(exec);
    pthread_mutex_lock(&execs_lock);
    CUresult r = destroy(exec);
    CUgraph copy = r == CUDA_SUCCESS ? copy_remove(exec) : NULL;
    pthread_mutex_unlock(&execs_lock);
    if (copy != NULL)
        gm_real.cuGraphDestroy(copy);
    return r;
}

void gm_device_copy_forget(CUgraphExec exec) {
    if (atomic_load_explicit(&registered, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&execs_lock);
    (void)copy_remove(exec);
    pthread_mutex_unlock(&execs_lock);
}

CUgraphNode gm_device_copy_original(CUgraph graph, CUgraph copy, CUgraphNode node) {
    CUgraphNode *nodes, found = NULL;
    size_t count;
    if (node == NULL || gm_graph_nodes(graph, &nodes, &count) != CUDA_SUCCESS)
        return NULL;
    for (size_t i = 0; i < count && !found; i++) {
        CUgraphNode in_copy = NULL;
        if (gm_drv.cuGraphNodeFindInClone(&in_copy, nodes[i], copy) == CUDA_SUCCESS &&
            in_copy == node)
            found = nodes[i];
    }
    free(nodes);
    return found;
}

#include "markers.h"

#include <stdlib.h>
#include <string.h>

#include "engine_glue.h"
#include "interpose/driver.h"
#include "log.h"
#include "options.h"

/* An edge an empty node can take for the frontier's `edge`: the same one, except that a
 * programmatic edge (a kernel's programmatic port or type, as a wait on an event recorded by a
 * launch with the programmatic-event attribute leaves on the frontier) becomes a full one. The
 * driver refuses those into an empty node where it takes them into its own memory node (driver
 * 580); a full edge orders the marker after the kernel's end, later than the driver's node would
 * start, never earlier. */
static CUgraphEdgeData marker_edge(CUgraphEdgeData edge) {
    if (edge.type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT ||
        edge.from_port == CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC)
        memset(&edge, 0, sizeof edge);
    return edge;
}

/* An empty node after `deps` (keeping their edge data when there is any, as marker_edge gives). */
static CUresult marker_add(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                           const CUgraphEdgeData *edge_data, size_t count) {
    static const CUgraphEdgeData default_edge;
    size_t plain = 0;
    for (size_t i = 0; edge_data != NULL && i < count; i++) {
        CUgraphEdgeData edge = marker_edge(edge_data[i]);
        plain += memcmp(&edge, &default_edge, sizeof edge) == 0;
    }
    if (edge_data == NULL || plain == count)
        return gm_drv.cuGraphAddEmptyNode(node_out, graph, deps, count);
    CUgraphEdgeData *edges = malloc(count * sizeof *edges);
    if (edges == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; i++)
        edges[i] = marker_edge(edge_data[i]);
    CUgraphNodeParams params;
    memset(&params, 0, sizeof params);
    params.type = CU_GRAPH_NODE_TYPE_EMPTY;
    CUresult r = gm_real.cuGraphAddNode_v2(node_out, graph, deps, edges, count, &params);
    free(edges);
    return r;
}

gm_marker_kind_t gm_marker_of(CUgraphNode node, gm_marker_info_t *info) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || node == NULL)
        return GM_MARKER_NONE;
    return gm_engine_marker(engine, (uint64_t)(uintptr_t)node, info);
}

/* Markers among the ancestors of `deps`, found by a bounded backward search that stops at
 * markers. Proves, online, that earlier frees come before a new allocation (engine.h). Each
 * visited node is looked up without the engine lock (gm_engine_is_marker). */
#define ANCESTOR_MAX 32
typedef struct ancestor_set {
    uint64_t markers[ANCESTOR_MAX];
    gm_ancestors_t view;
} ancestor_set_t;

/* Breadth-first from the dependencies, at most this many driver nodes visited: between two
 * markers on one stream there are usually a few kernels, so the budget finds the previous marker
 * while keeping the capture path cheap. Finding nothing is always safe (no reuse is proven). */
#define SEARCH_BUDGET 64

static void find_ancestors(gm_engine_t *engine, const gm_marker_site_t *site, ancestor_set_t *set) {
    CUgraphNode queue[SEARCH_BUDGET];
    size_t head = 0, tail = 0, found = 0;
    for (size_t i = 0; i < site->count && tail < SEARCH_BUDGET; i++)
        queue[tail++] = site->deps[i];
    while (head < tail && found < ANCESTOR_MAX) {
        CUgraphNode node = queue[head++];
        if (gm_engine_is_marker(engine, (uint64_t)(uintptr_t)node)) {
            set->markers[found++] = (uint64_t)(uintptr_t)node;
            continue;
        }
        /* Edge data is asked for, else an edge carrying some (into a kernel launched with
         * programmatic dependent launch: PyTorch's captured matmuls on the H200 had one) makes the
         * query lossy and stops the search there. A path from a free marker still proves the free
         * done before the allocation begins: edges out of markers (empty nodes) are full ones, and
         * the port of any other edge fires only once its kernel was launched, after that
         * kernel's own dependencies completed. The driver's memory nodes rely on the same, and
         * the planner reads the same edges as orderings at instantiation. */
        CUgraphNode parents[8];
        CUgraphEdgeData parent_edges[8];
        size_t parent_count = 8;
        if (gm_drv.cuGraphNodeGetDependencies_v2(node, parents, parent_edges, &parent_count) !=
            CUDA_SUCCESS)
            continue; /* the driver could not say: stop this branch, stay safe */
        for (size_t i = 0; i < parent_count && i < 8 && tail < SEARCH_BUDGET; i++) {
            bool seen = false;
            for (size_t j = 0; j < tail && !seen; j++)
                seen = queue[j] == parents[i];
            if (!seen)
                queue[tail++] = parents[i];
        }
    }
    set->view.markers = set->markers;
    set->view.count = found;
}

/* Whether an allocation of `size` bytes is byte-packed with others (engine.h, small_limit): only
 * then may it reuse the bytes of earlier frees, and only then is the proof worth a search. */
static bool packed(uint64_t size) {
    return size < gm_option_u64(GM_OPT_SMALL_LIMIT);
}

/* The marker node's driver call, made inside the engine's critical section (gm_node_call_t). */
typedef struct node_add {
    const gm_marker_site_t *site;
    CUresult result;
} node_add_t;

static bool add_marker_node(void *arg, uint64_t *node_out) {
    node_add_t *add = arg;
    const gm_marker_site_t *site = add->site;
    CUgraphNode node = NULL;
    add->result = marker_add(&node, site->graph, site->deps, site->edge_data, site->count);
    *node_out = (uint64_t)(uintptr_t)node;
    return add->result == CUDA_SUCCESS;
}

/* The driver's code when it refused the node, else the engine's verdict as the driver's code. */
static CUresult marker_result(gm_status_t status, const node_add_t *add) {
    return status == GM_ERR_DRIVER ? add->result : gm_cuda_result(status);
}

CUresult gm_marker_alloc(gm_engine_t *engine, const gm_marker_site_t *site,
                         const gm_alloc_params_t *params, CUdeviceptr *va_out,
                         CUgraphNode *node_out) {
    ancestor_set_t ancestors = {.view = {NULL, 0}};
    if (packed(params->size))
        find_ancestors(engine, site, &ancestors);
    uint64_t graph = (uint64_t)(uintptr_t)site->graph, va = 0, node = 0;
    node_add_t add = {site, CUDA_SUCCESS};
    gm_status_t status =
        gm_engine_alloc_marker(engine, graph, params, &ancestors.view,
                               (gm_node_call_t){add_marker_node, &add}, &va, &node);
    if (status != GM_OK)
        return marker_result(status, &add);
    *va_out = va;
    *node_out = (CUgraphNode)(uintptr_t)node;
    return CUDA_SUCCESS;
}

CUresult gm_marker_free(gm_engine_t *engine, const gm_marker_site_t *site, CUdeviceptr dptr,
                        CUgraphNode *node_out) {
    ancestor_set_t ancestors = {.view = {NULL, 0}};
    find_ancestors(engine, site, &ancestors);
    uint64_t graph = (uint64_t)(uintptr_t)site->graph, node = 0;
    node_add_t add = {site, CUDA_SUCCESS};
    gm_status_t status = gm_engine_free_marker(engine, graph, dptr, &ancestors.view,
                                               (gm_node_call_t){add_marker_node, &add}, &node);
    if (status != GM_OK) {
        if (status != GM_ERR_DRIVER)
            gm_log(GM_LOG_DEBUG, "free of %#llx in graph %p refused: %s", (unsigned long long)dptr,
                   (void *)site->graph, gm_status_name(status));
        return marker_result(status, &add);
    }
    *node_out = (CUgraphNode)(uintptr_t)node;
    return CUDA_SUCCESS;
}

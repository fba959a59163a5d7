#include "markers.h"

#include <stdlib.h>
#include <string.h>

#include "engine_glue.h"
#include "interpose/driver.h"
#include "log.h"
#include "topology.h"

/* An edge an empty node can take for the frontier's `edge`: the same one, except that a
 * programmatic edge (a kernel's programmatic port or type, as a wait on an event recorded by a
 * launch with the programmatic-event attribute leaves on the frontier) becomes a full one. The
 * driver refuses those into an empty node where it takes them into its own memory node (driver
 * 580); a full edge orders the marker after the kernel's end, later than the driver's node would
 * start, never earlier. Only the type and the kernel port change: what must be zero (to_port, the
 * reserved bytes) and a type or port the driver does not know stay, for the driver to refuse as it
 * refuses them into its memory node. */
static CUgraphEdgeData marker_edge(CUgraphEdgeData edge) {
    bool known_type = edge.type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT ||
                      edge.type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    if (!known_type || (edge.type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT &&
                        edge.from_port != CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC))
        return edge;
    edge.type = CU_GRAPH_DEPENDENCY_TYPE_DEFAULT;
    if (edge.from_port == CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC ||
        edge.from_port == CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER)
        edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_DEFAULT;
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

/* Markers among the ancestors of the new node's dependencies prove, online, that earlier frees
 * and allocations come before it (engine.h, gm_search_t): the engine searches for them inside the
 * marker's critical section. Searched for every marker, whatever its size: a marker's proof passes
 * on what its ancestors proved to the markers after it, so one without a search would cut the
 * chain for every free behind it. */
typedef struct ancestor_search {
    uint64_t deps[GM_SEARCH_BUDGET];
    gm_ancestors_t view;
} ancestor_search_t;

/* Edge data is asked for, else an edge carrying some (into a kernel launched with programmatic
 * dependent launch: PyTorch's captured matmuls on the H200 had one) makes the query lossy and
 * stops the search there. A path from a free marker still proves the free done before the
 * allocation begins: edges out of markers (empty nodes) are full ones, and the port of any other
 * edge fires only once its kernel was launched, after that kernel's own dependencies completed.
 * The driver's memory nodes rely on the same, and the planner reads the same edges as orderings
 * at instantiation. */
static size_t node_parents(void *arg, uint64_t node, uint64_t *parents, size_t cap) {
    (void)arg;
    CUgraphNode nodes[GM_SEARCH_PARENTS];
    CUgraphEdgeData edges[GM_SEARCH_PARENTS];
    size_t count = cap < GM_SEARCH_PARENTS ? cap : GM_SEARCH_PARENTS;
    if (gm_drv.cuGraphNodeGetDependencies_v2((CUgraphNode)(uintptr_t)node, nodes, edges, &count) !=
        CUDA_SUCCESS)
        return GM_PARENTS_UNKNOWN;     /* the driver could not say: stop this branch, stay safe */
    count = count < cap ? count : cap; /* more parents than asked for: the first ones */
    for (size_t i = 0; i < count; i++)
        parents[i] = (uint64_t)(uintptr_t)nodes[i];
    return count;
}

static void search_from(const gm_marker_site_t *site, ancestor_search_t *search) {
    size_t count = site->count < GM_SEARCH_BUDGET ? site->count : GM_SEARCH_BUDGET;
    for (size_t i = 0; i < count; i++)
        search->deps[i] = (uint64_t)(uintptr_t)site->deps[i];
    search->view = (gm_ancestors_t){NULL, 0, {search->deps, count, node_parents, NULL}};
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

/* The node call for a marker at `site`: with its dependencies, which the engine keeps for the
 * read-back at instantiation when they are few and distinct (the driver refuses repeated ones). */
static gm_node_call_t marker_call(node_add_t *add, uint64_t deps[GM_KNOWN_DEPS]) {
    const gm_marker_site_t *site = add->site;
    gm_node_call_t call = {add_marker_node, add, NULL, 0, site->captured};
    if (site->count > GM_KNOWN_DEPS)
        return call;
    for (size_t i = 0; i < site->count; i++) {
        for (size_t j = 0; j < i; j++)
            if (site->deps[j] == site->deps[i])
                return call;
        deps[i] = (uint64_t)(uintptr_t)site->deps[i];
    }
    call.deps = deps;
    call.dep_count = site->count;
    return call;
}

/* The driver's code when it refused the node, else the engine's verdict as the driver's code. */
static CUresult marker_result(gm_status_t status, const node_add_t *add) {
    return status == GM_ERR_DRIVER ? add->result : gm_cuda_result(status);
}

CUresult gm_marker_alloc(gm_engine_t *engine, const gm_marker_site_t *site,
                         const gm_alloc_params_t *params, CUdeviceptr *va_out,
                         CUgraphNode *node_out) {
    ancestor_search_t ancestors;
    search_from(site, &ancestors);
    uint64_t graph = (uint64_t)(uintptr_t)site->graph, va = 0, node = 0, deps[GM_KNOWN_DEPS];
    node_add_t add = {site, CUDA_SUCCESS};
    gm_status_t status = gm_engine_alloc_marker(engine, graph, params, &ancestors.view,
                                                marker_call(&add, deps), &va, &node);
    if (status != GM_OK)
        return marker_result(status, &add);
    *va_out = va;
    *node_out = (CUgraphNode)(uintptr_t)node;
    return CUDA_SUCCESS;
}

CUresult gm_marker_free(gm_engine_t *engine, const gm_marker_site_t *site, CUdeviceptr dptr,
                        CUgraphNode *node_out) {
    ancestor_search_t ancestors;
    search_from(site, &ancestors);
    uint64_t graph = (uint64_t)(uintptr_t)site->graph, node = 0, deps[GM_KNOWN_DEPS];
    node_add_t add = {site, CUDA_SUCCESS};
    gm_status_t status =
        gm_engine_free_marker(engine, graph, dptr, &ancestors.view, marker_call(&add, deps), &node);
    if (status != GM_OK) {
        if (status != GM_ERR_DRIVER)
            gm_log(GM_LOG_DEBUG, "free of %#llx in graph %p refused: %s", (unsigned long long)dptr,
                   (void *)site->graph, gm_status_name(status));
        return marker_result(status, &add);
    }
    *node_out = (CUgraphNode)(uintptr_t)node;
    return CUDA_SUCCESS;
}

CUgraphNode gm_first_marker(gm_engine_t *engine, CUgraph graph, bool from_end) {
    CUgraphNode *nodes, found = NULL;
    size_t count;
    if (gm_graph_nodes(graph, &nodes, &count) != CUDA_SUCCESS)
        return NULL;
    for (size_t i = 0; i < count && !found; i++) {
        CUgraphNode node = nodes[from_end ? count - 1 - i : i];
        if (gm_engine_marker(engine, (uint64_t)(uintptr_t)node, NULL) != GM_MARKER_NONE)
            found = node;
    }
    free(nodes);
    return found;
}

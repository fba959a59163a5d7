#include "markers.h"

#include <string.h>

#include "engine_glue.h"
#include "interpose/driver.h"

CUresult gm_marker_add(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                       const CUgraphEdgeData *edge_data, size_t count) {
    bool plain = true;
    static const CUgraphEdgeData default_edge;
    for (size_t i = 0; edge_data != NULL && i < count && plain; i++)
        plain = memcmp(&edge_data[i], &default_edge, sizeof default_edge) == 0;
    if (plain)
        return gm_drv.cuGraphAddEmptyNode(node_out, graph, deps, count);
    CUgraphNodeParams params;
    memset(&params, 0, sizeof params);
    params.type = CU_GRAPH_NODE_TYPE_EMPTY;
    return gm_real.cuGraphAddNode_v2(node_out, graph, deps, edge_data, count, &params);
}

gm_marker_kind_t gm_marker_of(CUgraphNode node, gm_marker_info_t *info) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || node == NULL)
        return GM_MARKER_NONE;
    return gm_engine_marker(engine, (uint64_t)(uintptr_t)node, info);
}

/* Breadth-first from the dependencies, at most this many driver nodes visited: between two
 * markers on one stream there are usually a few kernels, so the budget finds the previous marker
 * while keeping the capture path cheap. Finding nothing is always safe (no reuse is proven). */
#define SEARCH_BUDGET 64

void gm_find_ancestors(gm_engine_t *engine, const CUgraphNode *deps, size_t count,
                       gm_ancestor_set_t *set) {
    CUgraphNode queue[SEARCH_BUDGET];
    size_t head = 0, tail = 0, found = 0;
    for (size_t i = 0; i < count && tail < SEARCH_BUDGET; i++)
        queue[tail++] = deps[i];
    while (head < tail && found < GM_ANCESTOR_MAX) {
        CUgraphNode node = queue[head++];
        if (gm_engine_marker(engine, (uint64_t)(uintptr_t)node, NULL) != GM_MARKER_NONE) {
            set->markers[found++] = (uint64_t)(uintptr_t)node;
            continue;
        }
        CUgraphNode parents[8];
        size_t parent_count = 8;
        if (gm_drv.cuGraphNodeGetDependencies_v2(node, parents, NULL, &parent_count) !=
            CUDA_SUCCESS)
            continue; /* lossy edge data or too many parents: stop this branch, stay safe */
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

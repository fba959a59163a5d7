/* Markers: the empty nodes graphmem puts where the driver would have put memory nodes. */
#ifndef GRAPHMEM_MARKERS_H
#define GRAPHMEM_MARKERS_H

#include "engine.h"
#include "interpose/shim.h"

/* Adds an empty node after `deps` (keeping their edge data when there is any). */
CUresult gm_marker_add(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                       const CUgraphEdgeData *edge_data, size_t count);

/* What `node` is to the engine: GM_MARKER_NONE for any node that is not a marker, and before the
 * engine started. */
gm_marker_kind_t gm_marker_of(CUgraphNode node, gm_marker_info_t *info);

/* Markers among the ancestors of `deps`, found by a bounded backward search that stops at
 * markers. Proves, online, that earlier frees come before a new allocation (engine.h). */
#define GM_ANCESTOR_MAX 32
typedef struct gm_ancestor_set {
    uint64_t markers[GM_ANCESTOR_MAX];
    gm_ancestors_t view;
} gm_ancestor_set_t;

void gm_find_ancestors(gm_engine_t *engine, const CUgraphNode *deps, size_t count,
                       gm_ancestor_set_t *set);

#endif

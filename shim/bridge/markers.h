/* Markers: the empty nodes graphmem puts where the driver would have put memory nodes, and the
 * protocol that makes one for the engine (captured and explicit nodes alike). */
#ifndef GRAPHMEM_MARKERS_H
#define GRAPHMEM_MARKERS_H

#include "engine.h"
#include "interpose/shim.h"

/* Where a marker goes: its graph and the nodes it follows, with their edge data (NULL: plain
 * edges). For a capture, the stream's frontier (`captured`); for an explicit node, the caller's
 * dependencies. */
typedef struct gm_marker_site {
    CUgraph graph;
    const CUgraphNode *deps;
    const CUgraphEdgeData *edge_data;
    size_t count;
    bool captured; /* gm_node_call_t.captured */
} gm_marker_site_t;

/* A graph allocation: the engine creates it at a fixed address, a marker goes in at `site`, and
 * the engine ties the two; when the driver refuses the node the engine forgets the allocation
 * again. The engine's or the driver's verdict; on success *va_out and *node_out. */
CUresult gm_marker_alloc(gm_engine_t *engine, const gm_marker_site_t *site,
                         const gm_alloc_params_t *params, CUdeviceptr *va_out,
                         CUgraphNode *node_out);
/* The same for a free of `dptr` in the site's graph. */
CUresult gm_marker_free(gm_engine_t *engine, const gm_marker_site_t *site, CUdeviceptr dptr,
                        CUgraphNode *node_out);

/* What `node` is to the engine: GM_MARKER_NONE for any node that is not a marker, and before the
 * engine started. */
gm_marker_kind_t gm_marker_of(CUgraphNode node, gm_marker_info_t *info);
/* The first marker of `graph` (its own nodes) in the driver's node order, or counting from the
 * end; NULL when none: the node the driver names where it refuses a memory node (the first for
 * device launch, the last for an update: tests/SEMANTICS.md §A3.14, §A3.18). */
CUgraphNode gm_first_marker(gm_engine_t *engine, CUgraph graph, bool from_end);

#endif

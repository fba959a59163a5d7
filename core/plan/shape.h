/* The shape of an instantiated graph as cuGraphExecUpdate compares it: nodes, each with its
 * dependencies in edge order, its exit nodes, and which nodes are graphmem's memory markers. The
 * driver sees markers as empty nodes; graphmem pairs the nodes of the exec's graph and the update's
 * graph as the driver does (exit nodes in node order, then each pair's dependencies in edge order,
 * breadth first: tests/probe/exec_update.cu) to refuse what the driver refuses for memory nodes. */
#ifndef GRAPHMEM_SHAPE_H
#define GRAPHMEM_SHAPE_H

#include <stdint.h>

#include "status.h"

typedef struct gm_shape {
    uint32_t node_count, exit_count;
    uint8_t *kind;       /* per node: 0 none, else the marker's kind (alloc, free) */
    uint64_t *nodes;     /* node keys */
    uint32_t *dep_start; /* node i depends on deps[dep_start[i] .. dep_start[i + 1]) */
    uint32_t *deps;
    uint32_t *exits; /* nodes no other node depends on, in node order */
} gm_shape_t;

/* From a node list and edges (from -> to, indices into nodes); kinds filled by the caller. */
gm_status_t gm_shape_build(gm_shape_t *shape, uint32_t node_count, const uint64_t *nodes,
                           uint32_t edge_count, const uint32_t *from, const uint32_t *to);
void gm_shape_free(gm_shape_t *shape);

typedef enum gm_shape_match {
    GM_SHAPE_SAME,         /* every pair has the same kind */
    GM_SHAPE_KIND_CHANGED, /* a node of `b` pairs with a node of another kind: *node_out */
    GM_SHAPE_OTHER,        /* counts or edges differ: the driver's own checks answer */
} gm_shape_match_t;

/* Pairs `a` (the exec's graph) with `b`. GM_SHAPE_OTHER also when memory runs out. */
gm_shape_match_t gm_shape_pair(const gm_shape_t *a, const gm_shape_t *b, uint32_t *node_out);
/* The first marker of `b` met breadth first from its exits (what the driver reports updating an
 * exec without memory nodes from `b`); UINT32_MAX when `b` has none. */
uint32_t gm_shape_first_marker(const gm_shape_t *b);

#endif

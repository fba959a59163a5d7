/* Reading a graph's topology for the engine, and the graphs nested in it. */
#ifndef GRAPHMEM_TOPOLOGY_H
#define GRAPHMEM_TOPOLOGY_H

#include "engine.h"
#include "shim.h"

typedef struct gm_topology_buf {
    gm_topology_t view;
    uint64_t *nodes;
    uint32_t *from, *to;
    uint32_t node_cap, edge_cap;
} gm_topology_buf_t;

/* The graph with child graphs expanded in place: a child node becomes an entry and an exit node
 * around all of the child's nodes, so reachability through it is exact. */
CUresult gm_topology_read(CUgraph graph, gm_topology_buf_t *buf);
void gm_topology_free(gm_topology_buf_t *buf);

/* Conditional nodes' body graphs, recorded when the nodes are made (the driver refuses memory
 * nodes in bodies at instantiation; the shim must too). */
void gm_conditional_record(CUgraph parent, const CUgraph *bodies, unsigned count);
/* True when a body of `graph`, at any depth, holds a marker. */
bool gm_conditional_bodies_have_markers(gm_engine_t *engine, CUgraph graph);
void gm_conditional_forget(CUgraph graph);

#endif

/* Reading a graph's topology for the engine, child graphs and conditional bodies expanded. */
#ifndef GRAPHMEM_TOPOLOGY_H
#define GRAPHMEM_TOPOLOGY_H

#include "engine.h"
#include "interpose/shim.h"
#include "nested.h"

typedef struct gm_topology_buf {
    gm_topology_t view;
    uint64_t *nodes;
    /* per node, asked once; EMPTY for markers, the exits of child graphs, and every node of a
     * graph whose types are not needed (topology.c, types_needed) */
    CUgraphNodeType *types;
    uint32_t *from, *to;
    uint32_t node_cap, edge_cap;
} gm_topology_buf_t;

/* The graph with child graphs expanded in place: a child node becomes an entry and an exit node
 * around all of the child's nodes, so reachability through it is exact. The type of a node that
 * `engine` (NULL: none) knows as a marker is EMPTY without asking the driver (the markers are
 * empty nodes): a third of the driver calls of reading back a captured step. */
CUresult gm_topology_read(gm_engine_t *engine, CUgraph graph, gm_topology_buf_t *buf);
/* Its arrays are kept for the next read-back (one set for the process), or freed. */
void gm_topology_free(gm_topology_buf_t *buf);
/* In a fork's child: the kept arrays and remembered node counts stay unless a thread of the parent
 * was taking or giving them back, then they are dropped. */
void gm_topology_forget_after_fork(void);

/* The nodes of `graph` (its own level), listed in a fresh array into *nodes (NULL with *count 0
 * when it has none), to be freed by the caller; CUDA_ERROR_OUT_OF_MEMORY without host memory, or
 * the driver's error (nothing then). */
CUresult gm_graph_nodes(CUgraph graph, CUgraphNode **nodes, size_t *count);

/* Whether the driver takes `graph` for a graph (its node count can be asked): where a read-back
 * failed, an invalid graph is the driver's to answer for, a valid one graphmem's to refuse. */
bool gm_graph_listable(CUgraph graph);

/* Whether replacing the child graph of `node` by `child` may go to the driver (CUDA_SUCCESS), is
 * refused because either holds a memory node (CUDA_ERROR_NOT_SUPPORTED: the caller answers its
 * call's code for that), or is refused because a graph could not be read (that error, say
 * CUDA_ERROR_OUT_OF_MEMORY; an invalid graph goes to the driver). Engine NULL: not started,
 * nothing is refused. */
CUresult gm_child_swap_check(gm_engine_t *engine, CUgraphNode node, CUgraph child);
/* An exec's swap refused by gm_child_swap_check: the driver's code for memory nodes there
 * (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE), else the error that kept a graph from being read. */
static inline CUresult gm_child_swap_answer(CUresult refused) {
    return refused == CUDA_ERROR_NOT_SUPPORTED ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : refused;
}

#endif

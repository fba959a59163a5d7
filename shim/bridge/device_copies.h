/* Device launch of graphs with memory nodes (GRAPHMEM_LIFT_RESTRICTIONS): the driver refuses
 * device-launch instantiation of a graph holding any empty node
 * (tests/probe/device_launch_markers), so the exec is made from a copy of the graph without
 * graphmem's markers, and the exec's node calls are translated from the application's nodes to the
 * copy's. The engine plans the exec from the original graph (its markers) and keeps it pinned
 * (engine.h, GM_EXEC_PINNED). */
#ifndef GRAPHMEM_DEVICE_COPIES_H
#define GRAPHMEM_DEVICE_COPIES_H

#include "engine.h"
#include "interpose/shim.h"

/* A copy of `graph` (cuGraphClone) with its markers destroyed and each one's dependencies joined
 * to its dependents, so the copy orders its nodes as the graph does. CUDA_ERROR_NOT_SUPPORTED
 * when a marker lies deeper than the graph's own nodes (`marker_count`: markers in its topology
 * with child graphs expanded), a node next to a marker has an edge that carries data
 * (programmatic), the driver cannot clone the graph (device-updatable kernel nodes, conditional
 * nodes) or lacks an entry it needs; nothing is left then. */
CUresult gm_device_copy_make(gm_engine_t *engine, CUgraph graph, uint32_t marker_count,
                             CUgraph *copy);
/* The node of `graph` whose copy in `copy` is `node` (NULL: none), for the error node the driver
 * names when it refuses to instantiate the copy. */
CUgraphNode gm_device_copy_original(CUgraph graph, CUgraph copy, CUgraphNode node);
/* `exec` was made from `copy`, which now lives as long as the exec. False without host memory. */
bool gm_device_copy_register(CUgraphExec exec, CUgraph copy);
/* The copy's node for the application's `node` when `exec` was made from a copy, else `node`. */
CUgraphNode gm_device_node(CUgraphExec exec, CUgraphNode node);
/* cuGraphExecDestroy through `destroy`; the exec's copy, if any, goes with it in one step (a
 * handle given out again must not meet the old copy). */
CUresult gm_device_exec_destroy(CUgraphExec exec, CUresult (*destroy)(CUgraphExec));
/* The driver made a new exec under `exec`: the copy of an exec gone unseen under that handle is
 * no longer looked up. It is not destroyed: its context may have taken it, and its handle may be
 * a new graph's now. */
void gm_device_copy_forget(CUgraphExec exec);

#endif

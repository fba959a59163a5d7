/* The registry of graphs nested in other graphs (conditional bodies, child graphs) and of graphs
 * whose memset or memcpy nodes touch graph memory. A leaf of bridge/: it uses core/'s engine
 * interface only, taking the engine as a parameter, so tests/shim links it alone. */
#ifndef GRAPHMEM_NESTED_H
#define GRAPHMEM_NESTED_H

#include "engine.h"
#include "interpose/shim.h"

/* Child and body graphs nested deeper than this are refused (a bound on the recursion only: the
 * driver itself was seen to crash building chains of 100 on an H100, tests/gpu/scn_many_graphs). */
#define GM_NESTING_MAX 1024

/* Graphs owned by nodes of another graph: conditional bodies (memory nodes may be added, but the
 * driver refuses them at instantiation) and child graphs (memory nodes are refused outright).
 * The same registry notes graphs whose memset or memcpy nodes touch graph memory (TOUCH, the
 * graph as `parent`): even without a marker of its own such a graph needs the scratch cover while
 * it is instantiated, when the memory is another graph's that never launched yet. */
typedef enum gm_nested_kind {
    GM_NESTED_BODY,
    GM_NESTED_CHILD,
    GM_NESTED_TOUCH,
} gm_nested_kind_t;

/* `graphs` now belong to `node` of `parent` (NULL node for TOUCH). */
void gm_nested_record(CUgraph parent, CUgraphNode node, const CUgraph *graphs, unsigned count,
                      gm_nested_kind_t kind);
/* True when a conditional body of `graph`, at any depth, holds a marker. */
bool gm_conditional_bodies_have_markers(gm_engine_t *engine, CUgraph graph);
/* A conditional body of `graph`, at any depth, holding an allocation it does not free or a free
 * of an allocation it did not make (NULL: none): it may run zero or many times. */
CUgraph gm_conditional_body_not_contained(gm_engine_t *engine, CUgraph graph);
/* The first conditional body of `graph`, at any depth, holding a marker (NULL: none). */
CUgraph gm_conditional_body_with_markers(gm_engine_t *engine, CUgraph graph);
bool gm_nested_is_child(CUgraph graph);
/* Whether any conditional body is recorded (one atomic load: the lookups for bodies return at once
 * without). */
bool gm_nested_any_bodies(void);
/* The graph holding the child-graph node `node`, as recorded with its child (NULL: not known). */
CUgraph gm_nested_child_parent(CUgraphNode node);
/* The bodies of the conditional node `node` (up to `cap` into `out`); returns how many it has. */
size_t gm_node_bodies(CUgraphNode node, CUgraph *out, size_t cap);
/* The conditional bodies of `graph` itself (up to `cap` into `out`); returns how many it has. */
size_t gm_nested_bodies(CUgraph graph, CUgraph *out, size_t cap);
/* The child graphs of `graph` itself recorded here (up to `cap` into `out`); returns how many. */
size_t gm_nested_children(CUgraph graph, CUgraph *out, size_t cap);
/* A memset or memcpy node of `graph` (NULL: none) touches graph memory. */
void gm_touch_note(CUgraph graph);
/* A memset or memcpy node of a graph not known touches graph memory: its parameters were set
 * through the node alone (cuGraphMemsetNodeSetParams, cuGraphMemcpyNodeSetParams,
 * cuGraphNodeSetParams), and the driver has no query for a node's graph. From then on every graph
 * may be that one (gm_touches). */
void gm_touch_note_unknown(void);
/* Whether `graph` or a child graph or conditional body of it, at any depth, was noted by
 * gm_touch_note; any graph since gm_touch_note_unknown, or since an entry could not be recorded
 * (no host memory: the registry may miss one). */
bool gm_touches(CUgraph graph);
/* Destroys `graph` through `call` (NULL fn: it is gone already, e.g. a failed capture's graph),
 * and forgets it and the graphs it owned, here and in the engine (NULL: not started), in one step.
 * GM_ERR_DRIVER when the call failed (nothing is forgotten). */
gm_status_t gm_graph_destroy_nested(gm_engine_t *engine, CUgraph graph, gm_driver_call_t call);
/* Whether an entry here names `graph`, as a graph or as the parent of one; any graph since an
 * entry could not be recorded (no host memory: the registry may miss one). */
bool gm_nested_names(CUgraph graph);
/* The same for a node (cuGraphDestroyNode through `call`): the graphs it owns (a conditional
 * node's bodies) and those nested in them go with it. */
gm_status_t gm_node_destroy_nested(gm_engine_t *engine, CUgraphNode node, gm_driver_call_t call);

#endif

/* Explicit memory nodes (cuGraphAddMemAllocNode / FreeNode / AddNode) and the restrictions the
 * driver puts on graphs holding memory nodes. Parameters graphmem does not serve (host or managed
 * memory, IPC handle types, anything malformed) go to the driver unchanged, so the driver's own
 * validation answers with its own error codes. */
#include <stdlib.h>
#include <string.h>

#include "interpose/driver.h"
#include "bridge/captures.h"
#include "bridge/device_copies.h"
#include "bridge/engine_glue.h"
#include "bridge/markers.h"
#include "bridge/scratch.h"
#include "bridge/topology.h"
#include "log.h"
#include "options.h"
#include "stats.h"

/* Beyond any device's memory and any VA reservation: the driver reports it (out of memory). */
#define GM_SERVABLE_SIZE_MAX (1ull << 46)

static bool servable_alloc(const CUDA_MEM_ALLOC_NODE_PARAMS *p, gm_alloc_params_t *params) {
    int devices = gm_glue_device_count();
    const CUmemPoolProps *props = &p->poolProps;
    static const unsigned char zero[sizeof props->reserved];
    if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
        props->location.id >= devices || props->handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
        props->usage != 0 || memcmp(props->reserved, zero, sizeof zero) != 0 || p->bytesize == 0 ||
        p->bytesize > GM_SERVABLE_SIZE_MAX || (int)p->accessDescCount > devices ||
        (p->accessDescCount > 0 && p->accessDescs == NULL))
        return false;
    params->device = props->location.id;
    params->size = p->bytesize;
    params->access_mask = 1ull << props->location.id;
    params->listed_mask = 0;
    for (size_t i = 0; i < p->accessDescCount; i++) {
        const CUmemAccessDesc *desc = &p->accessDescs[i];
        if (desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc->location.id < 0 ||
            desc->location.id >= devices || desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return false;
        params->access_mask |= 1ull << desc->location.id;
        params->listed_mask |= 1ull << desc->location.id;
    }
    return true;
}

/* Returns true and sets *result when graphmem made the node; false to let the driver do it. */
/* A programmatic edge (the type, or a kernel's programmatic port) into a memory node added
 * through the graph API: the driver refuses it (CUDA_ERROR_INVALID_VALUE on driver 580,
 * tests/gpu/scn_memory_node_edge_data.cu), where a captured one it takes (bridge/markers.c). */
static bool programmatic_edge(const CUgraphEdgeData *edge_data, size_t count) {
    for (size_t i = 0; edge_data != NULL && i < count; i++)
        if (edge_data[i].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC ||
            edge_data[i].from_port == CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC)
            return true;
    return false;
}

static bool add_alloc_node(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                           const CUgraphEdgeData *edge_data, size_t count,
                           CUDA_MEM_ALLOC_NODE_PARAMS *p, CUresult *result) {
    if (node_out == NULL || graph == NULL || p == NULL || (count > 0 && deps == NULL))
        return false;
    if (gm_nested_is_child(graph)) { /* §A3.5-§A3.6: the driver refuses it */
        *result = CUDA_ERROR_NOT_SUPPORTED;
        return true;
    }
    if (programmatic_edge(edge_data, count)) {
        *result = CUDA_ERROR_INVALID_VALUE;
        return true;
    }
    gm_engine_t *engine = gm_glue_engine();
    gm_alloc_params_t params;
    if (engine == NULL || !servable_alloc(p, &params))
        return false;
    gm_marker_site_t site = {graph, deps, edge_data, count, false};
    CUdeviceptr va = 0;
    CUgraphNode node = NULL;
    /* graphmem's own work, as on the captured path: another thread may be in a GLOBAL capture.
     * The application's own call is never made here (the marker replaces it). */
    GM_RELAXED(*result = gm_marker_alloc(engine, &site, &params, &va, &node));
    if (*result == CUDA_SUCCESS) {
        p->dptr = va;
        *node_out = node;
        gm_stat_add(GM_STAT_graph_allocations, 1);
    }
    return true;
}

static bool add_free_node(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                          const CUgraphEdgeData *edge_data, size_t count, CUdeviceptr dptr,
                          CUresult *result) {
    if (node_out == NULL || graph == NULL || (count > 0 && deps == NULL))
        return false;
    if (gm_nested_is_child(graph)) {
        *result = CUDA_ERROR_NOT_SUPPORTED;
        return true;
    }
    if (programmatic_edge(edge_data, count)) {
        *result = CUDA_ERROR_INVALID_VALUE;
        return true;
    }
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || !gm_engine_owns(engine, dptr))
        return false;
    gm_marker_site_t site = {graph, deps, edge_data, count, false};
    CUgraphNode node = NULL;
    GM_RELAXED(*result = gm_marker_free(engine, &site, dptr, &node)); /* as for the alloc node */
    if (*result == CUDA_SUCCESS) {
        *node_out = node;
        gm_stat_add(GM_STAT_graph_frees, 1);
    }
    return true;
}

static bool lifted(void) {
    return gm_option_bool(GM_OPT_LIFT_RESTRICTIONS);
}

static bool graph_has_markers(CUgraph graph) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    return engine != NULL && gm_engine_graph_has_markers(engine, (uint64_t)(uintptr_t)graph);
}

/* A copy of `graph` needs graphmem: it holds markers, or (under GRAPHMEM_LIFT_RESTRICTIONS, where
 * they are planned) its conditional bodies do. */
static bool copy_needs_graphmem(CUgraph graph) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    return graph_has_markers(graph) ||
           (engine != NULL && lifted() && gm_conditional_bodies_have_markers(engine, graph));
}

CUresult gm_hook_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
    CUresult result;
    if (add_alloc_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams,
                       &result))
        return result;
    return gm_real.cuGraphAddMemAllocNode(phGraphNode, hGraph, dependencies, numDependencies,
                                          nodeParams);
}

CUresult gm_hook_cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUdeviceptr dptr) {
    CUresult result;
    if (add_free_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, dptr, &result))
        return result;
    return gm_real.cuGraphAddMemFreeNode(phGraphNode, hGraph, dependencies, numDependencies, dptr);
}

static void after_add_node(CUresult result, CUgraph graph, CUgraphNode node,
                           const CUgraphNodeParams *p);

/* The driver's add of a child-graph node that moves its graph in (gm_engine_graph_moved). */
typedef struct child_move {
    CUgraphNode *node_out;
    CUgraph graph;
    const CUgraphNode *deps;
    const CUgraphEdgeData *edge_data;
    size_t count;
    CUgraphNodeParams *params;
    bool v2;
    CUresult result;
} child_move_t;

static bool call_add_moving(void *arg) {
    child_move_t *m = arg;
    m->result = m->v2 ? gm_real.cuGraphAddNode_v2(m->node_out, m->graph, m->deps, m->edge_data,
                                                  m->count, m->params)
                      : gm_real.cuGraphAddNode(m->node_out, m->graph, m->deps, m->count, m->params);
    return m->result == CUDA_SUCCESS;
}

/* A child graph moved in (ownership MOVE): its markers become the parent's in one step with the
 * driver's add, with room made first, so that no host OOM after the driver's move leaves the
 * parent's plan without the child's allocations. */
static CUresult add_moving(gm_engine_t *engine, child_move_t *m) {
    gm_status_t status = gm_engine_graph_moved(engine, (uint64_t)(uintptr_t)m->params->graph.graph,
                                               (uint64_t)(uintptr_t)m->graph,
                                               (gm_driver_call_t){call_add_moving, m});
    return status == GM_ERR_DRIVER ? m->result : gm_cuda_result(status);
}

/* GRAPHMEM_LIFT_RESTRICTIONS: a child node holding a copy of a graph with markers, which the
 * driver refuses: the graph is cloned (cuGraphClone, served as for the application) and the clone
 * moved into the node, which is what a child by copy is. */
static CUresult add_child_by_clone(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                                   const CUgraphEdgeData *edge_data, size_t count, CUgraph child) {
    CUgraph clone = NULL;
    CUresult result = gm_hook_cuGraphClone(&clone, child);
    if (result != CUDA_SUCCESS)
        return result;
    CUgraphNodeParams moved;
    memset(&moved, 0, sizeof moved);
    moved.type = CU_GRAPH_NODE_TYPE_GRAPH;
    moved.graph.graph = clone;
    moved.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
    gm_engine_t *engine = gm_glue_engine_if_started();
    child_move_t move = {node_out, graph, deps, edge_data, count, &moved, true, CUDA_SUCCESS};
    result = engine != NULL
                 ? add_moving(engine, &move)
                 : gm_real.cuGraphAddNode_v2(node_out, graph, deps, edge_data, count, &moved);
    if (result != CUDA_SUCCESS) {
        gm_hook_cuGraphDestroy(clone);
        return result;
    }
    after_add_node(result, graph, *node_out, &moved);
    return CUDA_SUCCESS;
}

/* The generic door: memory node types are served like the dedicated calls; a child graph holding
 * markers may only be moved in (a clone would duplicate allocations at the same addresses). */
static bool add_node(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                     const CUgraphEdgeData *edge_data, size_t count, CUgraphNodeParams *p,
                     CUresult *result) {
    if (p == NULL)
        return false;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        return add_alloc_node(node_out, graph, deps, edge_data, count,
                              (CUDA_MEM_ALLOC_NODE_PARAMS *)&p->alloc, result);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return add_free_node(node_out, graph, deps, edge_data, count, p->free.dptr, result);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE &&
            copy_needs_graphmem(p->graph.graph)) {
            *result = lifted() ? add_child_by_clone(node_out, graph, deps, edge_data, count,
                                                    p->graph.graph)
                               : CUDA_ERROR_NOT_SUPPORTED;
            return true;
        }
        return false;
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
        if (gm_glue_engine_if_started() == NULL)
            return false;
        gm_scratch_t cover;
        gm_scratch_begin(&cover, gm_glue_engine_if_started());
        cover.check_freed = true;
        gm_scratch_cover_node(&cover, p);
        *result = cover.freed
                      ? CUDA_ERROR_INVALID_VALUE /* as cuGraphAddMemsetNode */
                      : gm_real.cuGraphAddNode_v2(node_out, graph, deps, edge_data, count, p);
        if (*result == CUDA_SUCCESS && cover.held)
            gm_touch_note(graph);
        gm_scratch_end(&cover);
        return true;
    }
    default:
        return false;
    }
}

/* The child graphs of `copy` (a clone, or a child node's copy, of a graph the nested registry
 * names), at any depth, recorded as children: the driver made them with new handles and refuses
 * memory nodes in them as in any child graph (§A3.6), where unrecorded graphmem would serve them.
 * Only graphs the registry names are walked: a graph that never had a child node added through
 * graphmem has none to copy. The conditional bodies of a copy cannot be found (the driver has no
 * query for a node's bodies). A walk cut short by a failed query or no host memory leaves those
 * children unrecorded, as before the walk. */
static void record_copied_children(CUgraph copy, int depth) {
    CUgraphNode *nodes;
    size_t count;
    if (depth > GM_NESTING_MAX || gm_graph_nodes(copy, &nodes, &count) != CUDA_SUCCESS)
        return;
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType type;
        CUgraph child = NULL;
        if (gm_drv.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS ||
            type != CU_GRAPH_NODE_TYPE_GRAPH ||
            gm_real.cuGraphChildGraphNodeGetGraph(nodes[i], &child) != CUDA_SUCCESS)
            continue;
        gm_graph_forget_stale(child); /* a copy: a new handle */
        gm_nested_record(copy, nodes[i], &child, 1, GM_NESTED_CHILD);
        record_copied_children(child, depth + 1);
    }
    free(nodes);
}

/* What a copy of `original` takes from it: its touches and the child graphs it names. Read before
 * anything of the node's old graph is forgotten (the original may be nested in it). */
typedef struct copy_facts {
    bool touches, names;
} copy_facts_t;

static copy_facts_t facts_of(CUgraph original) {
    return (copy_facts_t){gm_touches(original), gm_nested_names(original)};
}

/* The graph of the child-graph node `node` of `graph`, recorded as a child. When it is the
 * driver's copy of `original` (a new handle), it touches what its original touched (`facts`), and
 * the child graphs copied inside it are recorded too. */
static void record_child_with(CUgraph graph, CUgraphNode node, CUgraph original,
                              copy_facts_t facts) {
    CUgraph child = NULL;
    if (gm_real.cuGraphChildGraphNodeGetGraph(node, &child) != CUDA_SUCCESS)
        return;
    bool copy = child != original;
    if (copy)
        gm_graph_forget_stale(child);
    gm_nested_record(graph, node, &child, 1, GM_NESTED_CHILD);
    if (copy && facts.touches)
        gm_touch_note(child);
    if (copy && facts.names)
        record_copied_children(child, 1);
}

static void record_child(CUgraph graph, CUgraphNode node, CUgraph original) {
    record_child_with(graph, node, original, facts_of(original));
}

/* Nested graphs are recorded even before the engine starts: they may receive markers later. */
static void after_add_node(CUresult result, CUgraph graph, CUgraphNode node,
                           const CUgraphNodeParams *p) {
    if (result != CUDA_SUCCESS || p == NULL)
        return;
    if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && p->conditional.phGraph_out != NULL) {
        for (unsigned i = 0; i < p->conditional.size; i++)
            gm_graph_forget_stale(p->conditional.phGraph_out[i]); /* new graphs: new handles */
        gm_nested_record(graph, node, p->conditional.phGraph_out, p->conditional.size,
                         GM_NESTED_BODY);
    }
    if (p->type == CU_GRAPH_NODE_TYPE_GRAPH)
        record_child(graph, node, p->graph.graph);
}

/* Both ABIs: the 12.2 one (`v2` false) takes no edge data, and `edge_data` is NULL for it. */
static CUresult add_node_hook(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                              const CUgraphEdgeData *edge_data, size_t count, CUgraphNodeParams *p,
                              bool v2) {
    CUresult result;
    if (add_node(node_out, graph, deps, edge_data, count, p, &result))
        return result;
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine != NULL && p != NULL && p->type == CU_GRAPH_NODE_TYPE_GRAPH &&
        p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) {
        child_move_t move = {node_out, graph, deps, edge_data, count, p, v2, CUDA_SUCCESS};
        result = add_moving(engine, &move);
    } else {
        result = v2 ? gm_real.cuGraphAddNode_v2(node_out, graph, deps, edge_data, count, p)
                    : gm_real.cuGraphAddNode(node_out, graph, deps, count, p);
    }
    after_add_node(result, graph, node_out ? *node_out : NULL, p);
    return result;
}

CUresult gm_hook_cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUgraphNodeParams *nodeParams) {
    return add_node_hook(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams,
                         false);
}

CUresult gm_hook_cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies,
                                   const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                   CUgraphNodeParams *nodeParams) {
    return add_node_hook(phGraphNode, hGraph, dependencies, dependencyData, numDependencies,
                         nodeParams, true);
}

CUresult gm_hook_cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          CUgraph childGraph) {
    if (copy_needs_graphmem(childGraph)) /* a clone: the driver refuses it for memory nodes */
        return lifted() ? add_child_by_clone(phGraphNode, hGraph, dependencies, NULL,
                                             numDependencies, childGraph)
                        : CUDA_ERROR_NOT_SUPPORTED;
    CUresult result = gm_real.cuGraphAddChildGraphNode(phGraphNode, hGraph, dependencies,
                                                       numDependencies, childGraph);
    if (result == CUDA_SUCCESS)
        record_child(hGraph, *phGraphNode, childGraph);
    return result;
}

/* The clone's node for an original marker (gm_node_map_t). */
static bool find_in_clone(void *clone, uint64_t node, uint64_t *clone_out) {
    CUgraphNode found = NULL;
    if (gm_drv.cuGraphNodeFindInClone(&found, (CUgraphNode)(uintptr_t)node, clone) != CUDA_SUCCESS)
        return false;
    *clone_out = (uint64_t)(uintptr_t)found;
    return true;
}

/* A clone of a graph holding markers: refused as by the driver, or under
 * GRAPHMEM_LIFT_RESTRICTIONS a graph whose markers stand for the same allocations (their execs
 * take turns on the addresses); when the engine cannot take it, the clone goes again. */
CUresult gm_hook_cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph) {
    /* Markers are made by a started engine only: one not started now has none to copy. */
    gm_engine_t *engine = gm_glue_engine_if_started();
    bool markers =
        engine != NULL && gm_engine_graph_has_markers(engine, (uint64_t)(uintptr_t)originalGraph);
    if (markers && !lifted())
        return CUDA_ERROR_NOT_SUPPORTED;
    /* The driver's copies of conditional bodies are not registered as bodies: their markers
     * would stand for nothing. */
    if (lifted() && engine != NULL && gm_conditional_bodies_have_markers(engine, originalGraph))
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult result = gm_real.cuGraphClone(phGraphClone, originalGraph);
    if (result != CUDA_SUCCESS)
        return result;
    gm_graph_forget_stale(*phGraphClone);
    bool names = gm_nested_names(originalGraph);
    if (names)
        record_copied_children(*phGraphClone, 0);
    /* A clone touches what its original touches (the notes of the original's nested graphs are
     * not copied to the copies recorded above, so the clone itself is noted). A clone of a graph
     * naming nested graphs is noted too, which scn_clone_child_memset needed before the copies
     * were recorded: its read-back then asks every node's type and reads its child graphs in. */
    if (names || gm_touches(originalGraph))
        gm_touch_note(*phGraphClone);
    if (!markers)
        return result;
    gm_status_t status;
    GM_RELAXED(status = gm_engine_graph_clone(engine, (uint64_t)(uintptr_t)originalGraph,
                                              (uint64_t)(uintptr_t)*phGraphClone,
                                              (gm_node_map_t){find_in_clone, *phGraphClone}));
    if (status == GM_OK)
        return CUDA_SUCCESS;
    gm_log(GM_LOG_DEBUG, "clone of graph %p refused: %s", (void *)originalGraph,
           gm_status_name(status));
    gm_real.cuGraphDestroy(*phGraphClone);
    *phGraphClone = NULL;
    return gm_cuda_result(status);
}

/* The node cuGraphDestroyNode was given, and what reading the marked graphs found out. */
typedef struct node_search {
    CUgraphNode node;
    CUresult unreadable; /* a graph's nodes could not be read (host memory, the driver) */
} node_search_t;

/* Whether marked graph `graph` holds the node, or cannot be read, which ends the search too
 * (gm_engine_marked_graphs_any, under the engine lock: the graph cannot be destroyed while its
 * nodes are read). */
static bool graph_holds(void *arg, uint64_t graph) {
    node_search_t *search = arg;
    CUgraphNode *nodes;
    size_t n;
    search->unreadable = gm_graph_nodes((CUgraph)(uintptr_t)graph, &nodes, &n);
    if (search->unreadable != CUDA_SUCCESS)
        return true;
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
        found = nodes[i] == search->node;
    free(nodes);
    return found;
}

/* CUDA_ERROR_NOT_SUPPORTED when `node` belongs to a graph holding markers, CUDA_SUCCESS when it
 * does not. The driver offers no node-to-graph query, so the graphs holding markers are searched
 * (node destruction is rare), each under the engine lock: another thread may destroy one of them
 * meanwhile, and reading a destroyed graph is a use after free in the driver. A graph that cannot
 * be read gives its error: the node might be one of its own, whose destruction could take away
 * the path an allocation's reuse of freed bytes rests on. */
static CUresult in_graph_with_markers(CUgraphNode node) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || node == NULL)
        return CUDA_SUCCESS;
    if (gm_engine_marker(engine, (uint64_t)(uintptr_t)node, NULL) != GM_MARKER_NONE)
        return CUDA_ERROR_NOT_SUPPORTED;
    node_search_t search = {node, CUDA_SUCCESS};
    if (!gm_engine_marked_graphs_any(engine, graph_holds, &search))
        return CUDA_SUCCESS;
    return search.unreadable != CUDA_SUCCESS ? search.unreadable : CUDA_ERROR_NOT_SUPPORTED;
}

/* GRAPHMEM_LIFT_RESTRICTIONS lets graphs with memory nodes lose edges and nodes, which the driver
 * refuses (§A3.1, §A3.2): graphmem's planning reads the graph as it is at instantiation, and under
 * the option no byte reuse rests on a path that could go. */

static CUresult call_destroy_node(void *arg) {
    return gm_real.cuGraphDestroyNode((CUgraphNode)arg);
}

/* A node that is no marker: a conditional node's bodies, and what they hold, end with it in the
 * same step as the driver's call (their records, markers and registry entries). */
static CUresult destroy_plain_node(gm_engine_t *engine, CUgraphNode node) {
    gm_app_call_t call;
    gm_node_destroy_nested(engine, node, gm_app_call_begin(&call, call_destroy_node, node));
    gm_app_call_end(&call);
    return call.result;
}

CUresult gm_hook_cuGraphDestroyNode(CUgraphNode hNode) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (!lifted()) {
        /* No node of a graph with memory nodes may go. */
        CUresult refused = in_graph_with_markers(hNode);
        return refused != CUDA_SUCCESS ? refused : destroy_plain_node(engine, hNode);
    }
    if (engine == NULL || hNode == NULL)
        return destroy_plain_node(engine, hNode);
    /* A marker's end and the driver's destruction in one step: a node handle given out again at
     * once never meets the old marker. */
    gm_app_call_t call;
    gm_status_t status = gm_engine_marker_destroy(
        engine, (uint64_t)(uintptr_t)hNode, gm_app_call_begin(&call, call_destroy_node, hNode));
    gm_app_call_end(&call);
    if (status == GM_ERR_INVALID_VALUE) /* not a marker */
        return destroy_plain_node(engine, hNode);
    return call.result;
}

/* New edges may end at markers: the dependencies the engine kept for the graph's markers
 * (gm_node_call_t) are not taken for the read-back again. Marked before the driver's call, failed
 * or not; nothing instantiates the graph in between, since CUDA forbids using one graph from two
 * threads at once. */
static void edges_edited(CUgraph graph) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine != NULL && graph != NULL)
        gm_engine_graph_edges_edited(engine, (uint64_t)(uintptr_t)graph);
}

CUresult gm_hook_cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to, size_t numDependencies) {
    edges_edited(hGraph);
    return gm_real.cuGraphAddDependencies(hGraph, from, to, numDependencies);
}

CUresult gm_hook_cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                           const CUgraphNode *to, const CUgraphEdgeData *edgeData,
                                           size_t numDependencies) {
    edges_edited(hGraph);
    return gm_real.cuGraphAddDependencies_v2(hGraph, from, to, edgeData, numDependencies);
}

CUresult gm_hook_cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
                                           const CUgraphNode *to, size_t numDependencies) {
    if (!lifted() && graph_has_markers(hGraph))
        return CUDA_ERROR_NOT_SUPPORTED;
    return gm_real.cuGraphRemoveDependencies(hGraph, from, to, numDependencies);
}

CUresult gm_hook_cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                              const CUgraphNode *to,
                                              const CUgraphEdgeData *edgeData,
                                              size_t numDependencies) {
    if (!lifted() && graph_has_markers(hGraph))
        return CUDA_ERROR_NOT_SUPPORTED;
    return gm_real.cuGraphRemoveDependencies_v2(hGraph, from, to, edgeData, numDependencies);
}

/* A child-graph node's graph replaced through the node: the driver copies the graph in, and
 * refuses it when either the node's graph or the new one holds memory nodes (a moved child with
 * an allocation; CUDA_ERROR_NOT_SUPPORTED, driver 580: tests/SEMANTICS.md §A3.17), so graphmem
 * refuses alike where either holds markers (gm_child_swap_check), also under
 * GRAPHMEM_LIFT_RESTRICTIONS (the node's graph, whose markers a copy would have to join, is not
 * known here). The node's type is asked first: any other node is the driver's to refuse. The old
 * graph is forgotten in the same step as the driver's call (as cuGraphDestroy does: a handle it
 * frees may be given out again at once), and the copy is recorded as the node's child graph in
 * its place (memory nodes refused in it, its touches seen from the parent); with the parent not
 * known, a copy of a touching graph could be in any. */
typedef struct set_params_call {
    CUgraphNode node;
    CUgraphNodeParams *params;
} set_params_call_t;

static CUresult call_set_params(void *arg) {
    set_params_call_t *c = arg;
    return gm_real.cuGraphNodeSetParams(c->node, c->params);
}

static CUresult set_child_params(CUgraphNode node, CUgraphNodeParams *p) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    CUgraphNodeType type;
    if (node != NULL && p->graph.graph != NULL &&
        gm_drv.cuGraphNodeGetType(node, &type) == CUDA_SUCCESS &&
        type == CU_GRAPH_NODE_TYPE_GRAPH) {
        if (copy_needs_graphmem(p->graph.graph))
            return CUDA_ERROR_NOT_SUPPORTED;
        CUresult refused = gm_child_swap_check(engine, node, p->graph.graph);
        if (refused != CUDA_SUCCESS)
            return refused;
    }
    CUgraph old = NULL;
    if (node == NULL || gm_real.cuGraphChildGraphNodeGetGraph(node, &old) != CUDA_SUCCESS)
        return gm_real.cuGraphNodeSetParams(node, p); /* not a child node: the driver's answer */
    CUgraph parent = gm_nested_child_parent(node);
    copy_facts_t facts = facts_of(p->graph.graph);
    gm_app_call_t call;
    gm_status_t st = gm_graph_destroy_nested(
        engine, old, gm_app_call_begin(&call, call_set_params, &(set_params_call_t){node, p}));
    gm_app_call_end(&call);
    if (st != GM_OK || call.result != CUDA_SUCCESS)
        return call.result;
    if (parent == NULL && facts.touches)
        gm_touch_note_unknown();
    record_child_with(parent, node, p->graph.graph, facts);
    return CUDA_SUCCESS;
}

CUresult gm_hook_cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams) {
    if (nodeParams != NULL && nodeParams->type == CU_GRAPH_NODE_TYPE_GRAPH)
        return set_child_params(hNode, nodeParams);
    if (gm_marker_of(hNode, NULL) != GM_MARKER_NONE)
        return CUDA_ERROR_NOT_SUPPORTED; /* memory node parameters cannot be modified */
    gm_scratch_t cover; /* memset/memcpy targets are checked as by the dedicated setters */
    gm_scratch_begin(&cover, gm_glue_engine_if_started());
    gm_scratch_cover_node(&cover, nodeParams);
    CUresult r = gm_real.cuGraphNodeSetParams(hNode, nodeParams);
    if (r == CUDA_SUCCESS && cover.held)
        gm_touch_note_unknown(); /* as cuGraphMemsetNodeSetParams */
    gm_scratch_end(&cover);
    return r;
}

CUresult gm_hook_cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                          CUgraphNodeParams *nodeParams) {
    if (gm_marker_of(hNode, NULL) != GM_MARKER_NONE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (nodeParams != NULL && nodeParams->type == CU_GRAPH_NODE_TYPE_GRAPH) {
        CUresult refused =
            gm_child_swap_check(gm_glue_engine_if_started(), hNode, nodeParams->graph.graph);
        if (refused != CUDA_SUCCESS)
            return gm_child_swap_answer(refused);
    }
    gm_scratch_t cover;
    gm_scratch_begin(&cover, gm_glue_engine_if_started());
    gm_scratch_cover_node(&cover, nodeParams);
    CUresult r =
        gm_real.cuGraphExecNodeSetParams(hGraphExec, gm_device_node(hGraphExec, hNode), nodeParams);
    gm_scratch_end(&cover);
    return r;
}

/* The graph-memory engine: what the shim asks of core/. Pure C, no CUDA types: graphs, nodes,
 * execs and streams are opaque 64-bit keys chosen by the shim (the CUDA handle values, or a
 * stream identity for the per-thread default stream).
 *
 * Model (core/README.md):
 * - Every graph allocation gets, at creation, a fixed address inside a VA window of graphmem's
 *   own reservation. Allocations of at least `small_limit` bytes own their window (page aligned,
 *   padded on both sides by max_handle - page so that any arena handle overlapping them can be
 *   mapped whole); smaller ones are byte-packed online into shared chunk windows, reusing bytes of
 *   allocations whose free is proven (by `ancestors`) to come before the new allocation.
 * - At instantiation the engine receives the graph's topology, computes lifetimes from
 *   reachability (never from creation order), the exact lower bound, and a physical plan: each
 *   window ("item") gets an offset in a page arena; escaping items (not freed in the graph) go to
 *   an exec-private escape arena.
 * - At the first launch or upload an exec joins the sharing group of its stream; the group's arena
 *   is a list of physical handles shared by all member execs through persistent alias mappings.
 *   Moving to another stream follows the cross-stream policy. GPU order is known through fences.
 *
 * Thread safety: every function may be called from any thread; the engine serializes internally
 * (one lock, never held while waiting on the host; core/README.md). Re-entrancy: the engine calls
 * only the backend and the driver calls handed to it, never back into the shim's hooks. */
#ifndef GRAPHMEM_ENGINE_H
#define GRAPHMEM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "stats.h"
#include "status.h"

#define GM_MAX_DEVICES 64
#define GM_NO_STREAM UINT64_MAX

typedef struct gm_engine gm_engine_t;

/* GRAPHMEM_CROSS_STREAM: GM_CROSS_STREAM_SERIALIZE, GM_CROSS_STREAM_REMAP (cross_stream.def). */
typedef enum gm_cross_stream_policy {
#define GM_CROSS_STREAM(id, name, doc) GM_CROSS_STREAM_##id,
#include "cross_stream.def"
#undef GM_CROSS_STREAM
} gm_cross_stream_policy_t;

typedef struct gm_engine_config {
    int device_count;
    uint64_t small_limit;       /* allocations below this many bytes are byte-packed */
    uint64_t max_handle;        /* largest physical handle in bytes (multiple of granularity) */
    uint64_t max_reserved;      /* per-device cap on reserved bytes; 0 = no cap */
    uint64_t release_threshold; /* idle reserved bytes kept before an automatic trim */
    gm_cross_stream_policy_t cross_stream;
    /* Per device: the largest allocation the driver accepts in a graph (it refuses larger ones
     * with out-of-memory when the node is made, tests/probe/alloc_limits.cu); 0 = no limit. */
    uint64_t max_allocation[GM_MAX_DEVICES];
    bool no_alias;        /* every allocation gets its own physical memory, nothing shared */
    bool no_runs;         /* no runs (GRAPHMEM_RUNS=0): each large allocation its own window */
    bool uaf_check;       /* memory is mapped only while an allocation may be live (see README) */
    bool free_on_destroy; /* destroying an exec frees its live allocations after its last run */
    bool defer_fences;    /* a launch's fence is recorded when first needed (core/README.md) */
    /* GRAPHMEM_LIFT_RESTRICTIONS: edges and nodes of graphs with markers may be removed, so no
     * byte reuse rests on a path of the graph as it is built (gm_engine_marker_destroy). */
    bool lift_restrictions;
} gm_engine_config_t;

/* The driver call an engine operation makes for the shim, run inside the engine's critical
 * section so that the engine's decision and the driver's action are one step for every other
 * thread (core/README.md, "Launch protocol"). Returns true when the driver succeeded; the shim
 * keeps the driver's code to return it. */
typedef struct gm_driver_call {
    bool (*fn)(void *arg);
    void *arg;
} gm_driver_call_t;
#define GM_NO_CALL ((gm_driver_call_t){NULL, NULL}) /* the driver's part is done already */

gm_engine_t *gm_engine_create(const gm_backend_t *backend, const gm_engine_config_t *config);
/* Unmaps and releases everything; for process teardown and tests. */
void gm_engine_destroy(gm_engine_t *engine);

/* ---- Building graphs: allocation and free markers ------------------------------------------ */

typedef struct gm_alloc_params {
    int device;           /* resident device */
    uint64_t size;        /* bytes requested (0 is valid and gets a unique address) */
    uint64_t access_mask; /* bit d: device d gets read-write access; the resident bit is implied */
    uint64_t listed_mask; /* the devices the caller's access list named, as get-params reports
                           * them (the driver keeps the list it was given); not used otherwise */
} gm_alloc_params_t;

/* The search for a new marker's ancestors in `graph`: breadth-first back from `deps` (the new
 * node's dependencies), stopping at markers, at most GM_SEARCH_BUDGET nodes visited, the first
 * GM_SEARCH_PARENTS parents of each asked through `parents` (which writes up to `cap` of them and
 * returns how many it wrote; GM_PARENTS_UNKNOWN when the driver could not say: that branch stops).
 * None is made while the graph holds no packed allocation, or under GRAPHMEM_LIFT_RESTRICTIONS:
 * proofs name packed allocations only, so there would be nothing to find. Finding less is always
 * safe: less reuse is proven. Where the new node has one dependency that is no marker (the kernel
 * a capture's frontier usually is), its parents are asked whether or not a search is made, and
 * kept with the marker's node facts for the read-back (gm_engine_node_facts): the driver's node is
 * warm now, cold at instantiation. */
#define GM_ANCESTOR_MAX 32
#define GM_SEARCH_BUDGET 64
#define GM_SEARCH_PARENTS 8
/* What `parents` returns when the driver could not say (the branch stops, nothing is kept). */
#define GM_PARENTS_UNKNOWN SIZE_MAX
typedef size_t (*gm_parents_fn)(void *arg, uint64_t node, uint64_t *parents, size_t cap);
typedef struct gm_search {
    const uint64_t *deps;
    size_t count;
    gm_parents_fn parents; /* NULL: no search */
    void *arg;
} gm_search_t;

/* Markers of `graph` among the new node's ancestors. Used only to prove, online, that an earlier
 * free precedes the new allocation so its bytes can be reused; an empty list is always safe.
 * Either given (`markers`), or searched for (`search`) inside the marker's critical section, where
 * the graph and its markers are looked up once and `parents` is called under the engine lock (the
 * shim's asks the driver for a node's dependencies, a call that never waits): the shim's captured
 * path takes no lock of its own for the search and keeps no set of markers readable without the
 * lock. */
typedef struct gm_ancestors {
    const uint64_t *markers;
    size_t count;
    gm_search_t search;
} gm_ancestors_t;

/* The same search on its own (the tests' simulation of a capture), under the engine lock. */
size_t gm_engine_find_ancestors(gm_engine_t *engine, uint64_t graph, const uint64_t *deps,
                                size_t count, gm_parents_fn parents, void *arg,
                                uint64_t markers_out[GM_ANCESTOR_MAX]);

/* The driver call that adds a marker node (an empty node at the capture's frontier, or where the
 * application's explicit add put it), run inside the engine's critical section like
 * gm_driver_call_t: true and the node's handle on success; the shim keeps the driver's code.
 * `deps` (NULL: not given) are the nodes the call makes it depend on, distinct, in the driver's
 * order: the engine keeps up to GM_KNOWN_DEPS of them for the read-back (gm_engine_node_facts).
 * `captured`: the node stands for a memory node a stream capture made, not one the application
 * added through the graph API; the marker keeps it (gm_marker_info_t). */
#define GM_KNOWN_DEPS 2
typedef struct gm_node_call {
    bool (*fn)(void *arg, uint64_t *node_out);
    void *arg;
    const uint64_t *deps;
    size_t dep_count;
    bool captured;
} gm_node_call_t;

/* Creates an allocation owned by `graph`, adds its marker node through `add` and attaches it, in
 * one critical section: no other thread sees the allocation without its node. Returns its fixed
 * address and the node. GM_ERR_DRIVER when the driver refused the node (nothing changed). */
gm_status_t gm_engine_alloc_marker(gm_engine_t *engine, uint64_t graph,
                                   const gm_alloc_params_t *params, const gm_ancestors_t *ancestors,
                                   gm_node_call_t add, uint64_t *va_out, uint64_t *node_out);

/* True when `va` is the address of a graph allocation graphmem made whose node, memory or exec is
 * still alive (the shim passes everything else to the driver). */
bool gm_engine_owns(gm_engine_t *engine, uint64_t va);
/* False when `va` is certainly no such address, answered without the engine lock (most frees in a
 * process are of other memory); true means only maybe: a free the engine then refuses asks
 * gm_engine_owns whether the driver answers it instead. */
bool gm_engine_may_own(gm_engine_t *engine, uint64_t va);

/* A free of `va` inside `graph` (captured cuMemFreeAsync or a free node), its marker node added
 * through `add` and attached in the same critical section. GM_ERR_INVALID_VALUE, changing nothing
 * and calling nothing, when the driver would refuse it: not an allocation's address, already freed
 * in this graph, freed by another graph than its owner already, or (for a free in another graph)
 * freed inside its owner graph. GM_ERR_DRIVER when the driver refused the node. */
gm_status_t gm_engine_free_marker(gm_engine_t *engine, uint64_t graph, uint64_t va,
                                  const gm_ancestors_t *ancestors, gm_node_call_t add,
                                  uint64_t *node_out);

typedef enum gm_marker_kind {
    GM_MARKER_NONE = 0,
    GM_MARKER_ALLOC,
    GM_MARKER_FREE,
} gm_marker_kind_t;

typedef struct gm_marker_info {
    uint64_t va;
    gm_alloc_params_t params;
    /* Made by a stream capture (gm_node_call_t.captured): the driver's unjoined rule judges the
     * memory node it stands for, and none added through the graph API (shim/bridge/joins.c). */
    bool captured;
} gm_marker_info_t;

/* What a node is, for introspection (node type, get-params, DOT output). */
gm_marker_kind_t gm_engine_marker(gm_engine_t *engine, uint64_t node, gm_marker_info_t *info_out);
/* What the engine knows of the `count` nodes of `graph` (one level: a graph's own nodes) in the
 * order the driver lists them, for the read-back at instantiation: whether each is a marker of
 * the graph, and the dependencies its node was made with (gm_node_call_t.deps) while nothing can
 * have changed them since: the application added no edge to the graph
 * (gm_engine_graph_edges_edited), and no node or edge can have gone (the driver refuses that in a
 * graph with memory nodes; under GRAPHMEM_LIFT_RESTRICTIONS nothing is known). The graph's
 * markers are matched in the order they were made, forwards or backwards, so a node is found in
 * constant time; so is the node a marker was made after when that was its one dependency and no
 * marker (its lead: a capture's kernel), listed just before the marker (just after, backwards),
 * whose dependencies the search asked when the marker was made (gm_search_t). Any other node reads
 * as GM_MARKER_NONE with nothing known, and the caller asks the driver about it. */
typedef struct gm_node_facts {
    gm_marker_kind_t kind;
    bool deps_known;
    uint8_t dep_count;
    uint64_t deps[GM_KNOWN_DEPS];
} gm_node_facts_t;
void gm_engine_node_facts(gm_engine_t *engine, uint64_t graph, const uint64_t *nodes, size_t count,
                          gm_node_facts_t *facts_out);
/* The application adds edges to `graph` (cuGraphAddDependencies): the dependencies its markers
 * were made with are not taken as all of theirs again. */
void gm_engine_graph_edges_edited(gm_engine_t *engine, uint64_t graph);
bool gm_engine_graph_has_markers(gm_engine_t *engine, uint64_t graph);
/* Whether the engine keeps anything under `graph`: markers, or a graph whose markers are gone
 * (its execs, its family's windows), or a child moved into another graph. */
bool gm_engine_graph_known(gm_engine_t *engine, uint64_t graph);
/* Whether every allocation of `graph` is freed in it and it frees no other graph's: what a
 * conditional body holding markers must be (GRAPHMEM_LIFT_RESTRICTIONS), since it runs zero or
 * more times. */
bool gm_engine_graph_self_contained(gm_engine_t *engine, uint64_t graph);
/* Whether `match` holds for one of the graphs holding markers now. It is asked of each under the
 * engine lock, which a graph's destruction holds over the driver's call
 * (gm_engine_graphs_destroy): so it may read the graph through the driver, which no other thread
 * can destroy meanwhile. */
bool gm_engine_marked_graphs_any(gm_engine_t *engine, bool (*match)(void *arg, uint64_t graph),
                                 void *arg);

/* cuGraphDestroy of graphs[0] through `call` (as gm_engine_exec_destroy), or a capture that failed
 * (NULL call.fn); graphs[1..] (the graphs it owned) end with it. Node lifetimes end. Allocations
 * that are live (made by a launch and not freed) survive; the rest release their addresses. */
gm_status_t gm_engine_graphs_destroy(gm_engine_t *engine, const uint64_t *graphs, size_t count,
                                     gm_driver_call_t call);
/* The same with the graphs supplied one at a time, under the engine lock after the driver's call
 * succeeded: `next` gives true and the next graph, false when none is left. For a caller whose
 * list would need host memory it may not get (the shim's registry of nested graphs walks its own
 * entries): every graph ends in the one critical section with the driver's call, so no other
 * thread sees a graph the driver destroyed still listed. */
typedef struct gm_graph_source {
    bool (*next)(void *arg, uint64_t *graph_out);
    void *arg;
} gm_graph_source_t;
gm_status_t gm_engine_graphs_destroy_each(gm_engine_t *engine, gm_graph_source_t ending,
                                          gm_driver_call_t call);
/* GRAPHMEM_LIFT_RESTRICTIONS: cuGraphDestroyNode of a marker node through `call`, and the marker's
 * end, in one critical section. A free marker's allocation is no longer freed in its graph (it
 * escapes from the next instantiation on); an alloc marker's allocation leaves its graph, and a
 * free marker of it in the same graph ends too (that node stays, an empty node). Execs made
 * before keep what they planned. GM_ERR_DRIVER when the driver refused (nothing changed),
 * GM_ERR_INVALID_VALUE when `node` is no marker (nothing called). */
gm_status_t gm_engine_marker_destroy(gm_engine_t *engine, uint64_t node, gm_driver_call_t call);
/* Finds the clone of an original node: true and the clone's node, or false. */
typedef struct gm_node_map {
    bool (*fn)(void *arg, uint64_t node, uint64_t *clone_out);
    void *arg;
} gm_node_map_t;

/* GRAPHMEM_LIFT_RESTRICTIONS: `clone` was cloned from `original` by the driver. Its markers
 * (found through `find`) stand for copies of the original's allocations at the same addresses:
 * their execs take turns on those windows as execs of one graph do, and an allocation left live
 * by any of them blocks the others' launches until freed. GM_ERR_NOT_SUPPORTED, changing
 * nothing, when the original frees another graph's allocation, holds a moved child's markers or
 * a marker `find` cannot place. A graph without markers: nothing to do (GM_OK). */
gm_status_t gm_engine_graph_clone(gm_engine_t *engine, uint64_t original, uint64_t clone,
                                  gm_node_map_t find);
/* A child graph moves into `parent` (move ownership) by `call` (the driver's add of the child-graph
 * node; GM_NO_CALL when it is done): its markers become the parent's in the same step. Room is made
 * before the call: GM_ERR_OUT_OF_MEMORY without making it (nothing changed), GM_ERR_DRIVER when the
 * driver refused (nothing changed). */
gm_status_t gm_engine_graph_moved(gm_engine_t *engine, uint64_t child, uint64_t parent,
                                  gm_driver_call_t call);

/* ---- Instantiation and launch ---------------------------------------------------------------- */

/* The graph as the shim extracted it, child graphs expanded into their parent. */
typedef struct gm_topology {
    uint32_t node_count;
    const uint64_t *nodes; /* node keys */
    uint32_t edge_count;
    const uint32_t *edge_from; /* indices into nodes */
    const uint32_t *edge_to;
} gm_topology_t;

#define GM_EXEC_AUTO_FREE 1u /* CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */
/* GRAPHMEM_LIFT_RESTRICTIONS, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH: the exec's launches from
 * the device are invisible to graphmem, so once its first upload or launch mapped its memory, it
 * stays mapped while the exec exists (trim leaves it) in a group of its own (shared with no other
 * exec); after the exec's destruction it is given back only once gm_engine_device_idle says no
 * device launch can still run. Refused: allocations escaping the graph, frees of other graphs'
 * allocations (GM_ERR_INVALID_VALUE), another exec alive in its window family
 * (GM_ERR_NOT_SUPPORTED); and while it lives, any other exec of that family. */
#define GM_EXEC_PINNED 2u

/* Plans `graph` for the new `exec` (already instantiated by the driver). Maps nothing yet. */
gm_status_t gm_engine_instantiate(gm_engine_t *engine, uint64_t graph, const gm_topology_t *topo,
                                  uint64_t exec, unsigned flags);
/* gm_engine_instantiate in two steps, so that the plan can be made while the driver instantiates
 * (the shim plans large graphs on a thread of its own meanwhile): _plan makes an exec of `graph`
 * known to nothing else yet (records held, nothing mapped); _commit makes it the exec of the
 * handle the driver gave, with every check gm_engine_instantiate makes (the exec it replaces
 * forgotten first, one exec per graph, pinned families), and on an error leaves nothing;
 * _abandon drops one the driver refused. The topology must stay as it is until _plan returns. */
typedef struct gm_exec gm_planned_exec_t;
gm_status_t gm_engine_instantiate_plan(gm_engine_t *engine, uint64_t graph,
                                       const gm_topology_t *topo, unsigned flags,
                                       gm_planned_exec_t **out);
gm_status_t gm_engine_instantiate_commit(gm_engine_t *engine, gm_planned_exec_t *planned,
                                         uint64_t exec);
void gm_engine_instantiate_abandon(gm_engine_t *engine, gm_planned_exec_t *planned);
/* Whether an exec of `graph` is alive (the driver refuses a second instantiation). */
bool gm_engine_graph_instantiated(gm_engine_t *engine, uint64_t graph);
/* A GM_EXEC_PINNED exec runs in `context` (an opaque key: the shim's CUcontext); set once after
 * gm_engine_instantiate. */
void gm_engine_exec_set_context(gm_engine_t *engine, uint64_t exec, uint64_t context);
/* A context-wide synchronize: gm_engine_sync_mark before the driver's call, then, once it
 * returned, gm_engine_device_idle with that mark: every piece of work submitted to `context`
 * before the call has finished, so the memory of GM_EXEC_PINNED execs of that context destroyed
 * before the mark may go (one destroyed during the call may have been launched from the device
 * after the synchronize began). has_pinned_waiting: some is waiting for that (one load). */
uint64_t gm_engine_sync_mark(gm_engine_t *engine);
void gm_engine_device_idle(gm_engine_t *engine, uint64_t context, uint64_t mark);
bool gm_engine_has_pinned_waiting(gm_engine_t *engine);

/* Whether `exec` is an exec graphmem serves. Never waits (no lock): launches of graphs graphmem
 * does not serve pass through on this answer alone. */
bool gm_engine_serves(gm_engine_t *engine, uint64_t exec);

/* Launches (or, with `upload_only`, uploads) `exec` into `stream` through `call`, in one step:
 * refuses a relaunch while an allocation of a previous launch is unfreed and the exec lacks
 * AUTO_FREE (GM_ERR_INVALID_VALUE, as the driver), applies AutoFreeOnLaunch, maps what is not
 * mapped (GM_ERR_OUT_OF_MEMORY past the cap), orders the launch after earlier users of its memory
 * on other streams (stream waits on `stream` only), makes the call, and records a fence on
 * `stream`. GM_ERR_DRIVER when the call failed. On any failure nothing is left changed but stream
 * waits already enqueued (harmless: they order, nothing else). An exec the engine does not know
 * just gets the call. */
gm_status_t gm_engine_launch(gm_engine_t *engine, uint64_t exec, uint64_t stream, bool upload_only,
                             gm_driver_call_t call);
/* The launch's fast path alone (core/README.md, "Fast path"): when `exec` is the exec the engine
 * armed for a relaunch on `stream` and nothing changed since, makes only `call`, holding no mutex,
 * and returns true (*status GM_OK, or GM_ERR_DRIVER when the call failed, which changes nothing).
 * Returns false, without calling, whenever the whole protocol is needed: gm_engine_launch then
 * (which tries this first itself). Only an exec the engine serves is ever armed, so a caller may
 * try this before gm_engine_serves. */
bool gm_engine_relaunch(gm_engine_t *engine, uint64_t exec, uint64_t stream, gm_driver_call_t call,
                        gm_status_t *status);
/* Whether `exec` is the exec armed for the fast path (one atomic load, never waits): false means
 * gm_engine_relaunch refuses it without touching anything another thread holds. */
bool gm_engine_armed(gm_engine_t *engine, uint64_t exec);
/* cuGraphExecDestroy through `call`: the exec's live allocations survive (with `free_on_destroy`
 * they are freed once its last launch finished); its memory is reclaimed at trim. The engine
 * forgets the exec in the same step as the driver destroys it, so a handle the driver hands out
 * again cannot meet the old exec. GM_ERR_DRIVER when the call failed (nothing changes). A NULL
 * call.fn: the driver's part is done already. */
gm_status_t gm_engine_exec_destroy(gm_engine_t *engine, uint64_t exec, gm_driver_call_t call);
/* The driver made a new exec under `exec`: an exec graphmem still knows under that handle is gone
 * without a destroy graphmem saw (cuCtxDestroy and device resets end a context's execs), and is
 * forgotten as gm_engine_exec_destroy forgets one, so the new exec never meets its records (a
 * plain graph's launch taken for a served one). gm_engine_instantiate does the same itself. */
void gm_engine_exec_gone(gm_engine_t *engine, uint64_t exec);

/* cuGraphExecUpdate of `exec` from `graph` (its topology read as for instantiation) through
 * `call`, refusing what the driver refuses for the memory nodes it cannot see (shape.h):
 * GM_ERR_UPDATE_FAILURE with *error_node, the node of `graph` that pairs with a node of another
 * kind (0: `graph` has an exec of its own, whose addresses are its own, §A3.7). Otherwise the
 * call; when it succeeds, the exec is planned anew for `graph` in the same step (its previous plan
 * retires as a destroyed exec's: allocations left live stay live until freed). For an exec the
 * engine does not serve, any marker in `graph` is refused; else it just gets the call. The call is
 * made with no cover held and no idle scratch mapping left (gm_engine_cover_begin): the driver's
 * check of memset and memcpy targets finds graph memory mapped only where an exec maps it. */
gm_status_t gm_engine_exec_update(gm_engine_t *engine, uint64_t exec, uint64_t graph,
                                  const gm_topology_t *topo, gm_driver_call_t call,
                                  uint64_t *error_node);

/* ---- Outside graphs ------------------------------------------------------------------------ */

/* cuMemFree (stream = GM_NO_STREAM) or cuMemFreeAsync of a graph allocation outside capture.
 * GM_ERR_INVALID_VALUE when it is not live (never launched, or freed already); the backend's error
 * when the free's fence cannot be recorded on `stream` (the shim answers with the driver's code).
 * Refused, nothing changes. */
gm_status_t gm_engine_free_outside(gm_engine_t *engine, uint64_t va, uint64_t stream);
/* The same, asking `still_outside` first (an async free): whether the stream is still outside
 * any capture, in one step with the fence's record, so that a capture begun on it meanwhile (by
 * another thread) never receives that record. GM_ERR_DRIVER when it says no: nothing changes. */
gm_status_t gm_engine_free_outside_checked(gm_engine_t *engine, uint64_t va, uint64_t stream,
                                           gm_driver_call_t still_outside);
/* cuStreamDestroy through `call` (as gm_engine_exec_destroy): its handle may name a new stream
 * from now on, so the engine forgets it. Fences recorded on it keep the order of what it ran. */
gm_status_t gm_engine_stream_destroy(gm_engine_t *engine, uint64_t stream, gm_driver_call_t call);
/* ---- Event order ----------------------------------------------------------------------------
 * Hints for sharing memory between streams the program orders with events (core/README.md, "Event
 * order"). A mark is a place in a stream: after its `served`-th served launch or upload. Once the
 * driver recorded `event` on `stream` (GM_NO_STREAM: a default stream or a capture, which give no
 * mark) the shim calls event_record, and once `stream` waited for `event` outside any capture,
 * stream_wait: one short section of their own lock each, never the engine lock (no wait for an
 * instantiation). A mark made wrong by a race with another thread costs concurrency only. */
typedef struct gm_order_mark {
    uint64_t stream_id; /* 0: none */
    uint64_t served;
} gm_order_mark_t;
#define GM_NO_MARK ((gm_order_mark_t){0, 0})
/* False until a served launch was committed: before it no mark can matter, and the shim skips
 * everything (one load). */
bool gm_engine_order_active(gm_engine_t *engine);
void gm_engine_event_record(gm_engine_t *engine, uint64_t event, uint64_t stream);
void gm_engine_stream_wait(gm_engine_t *engine, uint64_t stream, uint64_t event);
void gm_engine_event_destroyed(gm_engine_t *engine, uint64_t event);
/* Streams and events went away with a context (their handles may come back): every mark goes. */
void gm_engine_order_reset(gm_engine_t *engine);
/* A driver call that ends objects the engine may use, a context with its events (cuCtxDestroy,
 * device resets), made under the engine lock: no launch, trim or free uses them meanwhile, and
 * `call` may tell the backend what went before anyone can. false when it failed. */
bool gm_engine_call_locked(gm_engine_t *engine, gm_driver_call_t call);

/* Around a driver call by which `stream` may enter a capture (begin capture, waiting for an event)
 * or by which streams go away with their context (stream = GM_NO_STREAM: every stream): the
 * stream's deferred fences are realized first, and no launch defers a new one until the end
 * (core/README.md, "Deferred fences"). join_fast takes no lock (two atomic operations) and is
 * enough when it returns true; otherwise join_slow realizes, holding the defer lock until end.
 * end gets join_fast's answer. join_begin is both steps in one (true: fast). No engine lock. */
bool gm_engine_join_fast(gm_engine_t *engine);
void gm_engine_join_slow(gm_engine_t *engine, uint64_t stream);
bool gm_engine_join_begin(gm_engine_t *engine, uint64_t stream);
void gm_engine_join_end(gm_engine_t *engine, bool fast);

typedef enum gm_attr {
    GM_ATTR_USED_CURRENT = 0, /* bytes mapped by at least one graph */
    GM_ATTR_USED_HIGH = 1,
    GM_ATTR_RESERVED_CURRENT = 2, /* bytes of physical memory held */
    GM_ATTR_RESERVED_HIGH = 3,
} gm_attr_t;

gm_status_t gm_engine_trim(gm_engine_t *engine, int device);
/* GM_ERR_INVALID_DEVICE for a bad device, GM_ERR_INVALID_VALUE for a bad attribute or a set that
 * is not "High = 0" (which resets the high-water mark to the current value). */
gm_status_t gm_engine_attr_get(gm_engine_t *engine, int device, int attr, uint64_t *value);
gm_status_t gm_engine_attr_set(gm_engine_t *engine, int device, int attr, uint64_t value);

/* ---- Covers: graph memory mapped for the driver's pointer checks ---------------------------- */

/* The driver checks that memset and memcpy nodes touch mapped memory when such a node is made or
 * its parameters set, when a memset or copy is captured, and when its graph is instantiated;
 * graph memory is mapped only at launch. For the duration of such a driver call the shim holds a
 * cover (engine_cover.c): every page of the reservation the node touches that no part maps gets
 * a scratch page (one physical page per device, made once, never counted as graph memory, never
 * written by any graph, though work outside graphs that runs into an idle one writes it) of the
 * device of the allocation the range starts in, with that allocation's access, so the driver
 * answers as it will for the allocation's own memory (the cover's device for a range in none); a
 * page a part maps already stays as it is. From the first covered range until the
 * cover ends, nothing in the reservation is mapped or unmapped (a launch that must map waits, trim
 * waits, the use-after-free poll skips), so the driver's check sees the pages as the cover found
 * them and no launch ever maps over a scratch page. While a launch or trim waits, no new cover
 * starts (covers back to back would hold it off for good). A cover is held by one thread around
 * driver calls only: it must not launch, trim or cover again meanwhile. A scratch mapping outlives
 * its covers, idle, until a launch or trim must map, or its addresses go back (engine_cover.c). */
typedef struct gm_cover {
    gm_engine_t *engine; /* NULL: nothing to cover (no engine, or the shim ignores the call) */
    int device;          /* whose scratch page; -1: not known (only allocations' own pages) */
    bool held;           /* counted in the engine's covers since the first covered range */
    bool check_freed;    /* set by the caller: look for ranges that start in freed memory */
    bool freed;          /* with check_freed: a range started in a freed allocation (below) */
    uint32_t count, cap;
    uint64_t *pages; /* pages this cover holds a scratch mapping of (owned) */
} gm_cover_t;

/* Starts an empty cover for `device` (engine NULL: a cover that covers nothing; a device not
 * known, < 0 or out of range: ranges in allocations take the allocation's device, others none,
 * and the freed check is made all the same). */
void gm_engine_cover_begin(gm_engine_t *engine, gm_cover_t *cover, int device);
/* Covers the pages of [va, va + bytes) that lie in the reservation. Best effort: a page the
 * scratch page cannot be mapped at (no host or device memory, or another device's scratch page
 * there already) is left, and the driver answers.
 * With `check_freed`, sets `freed` when `va` lies in graph allocations that a free node frees,
 * none of them live: the driver refuses a new memset or memcpy node that starts there with
 * INVALID_VALUE, whatever its dependencies and in any graph (tests/SEMANTICS.md §A1.15). */
void gm_engine_cover_range(gm_cover_t *cover, uint64_t va, uint64_t bytes);
/* Removes the cover's scratch mappings; when it was the last cover, waiting launches and trims go
 * on. */
void gm_engine_cover_end(gm_cover_t *cover);

/* ---- Reporting ------------------------------------------------------------------------------ */

/* gm_exec_report_t: its fields are the GM_EXEC_STAT list of core/common/stats.def. */

/* Calls `fn` for every exec alive or destroyed since the engine started (destroyed ones last). */
void gm_engine_report(gm_engine_t *engine, void (*fn)(const gm_exec_report_t *, void *), void *arg);

#endif

#include "topology.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/driver.h"
#include "keymap.h"
#include "options.h"
#include "util.h"

/* ---- arrays kept between read-backs ----------------------------------------------------------
 * A read-back's arrays (the topology's, and the top level's list, facts and keys) are kept for the
 * next one instead of freed. Freed, they left the top of glibc's heap free, which it gave back to
 * the kernel, and the next read-back took the pages again: brk calls and page faults were a third
 * of reading back a captured chain of 3,000 nodes (bench/RESULTS.md). One set for the process,
 * taken and given back under a lock: a read-back that finds it taken (another thread's, or a child
 * level's) makes its own arrays, and one given back while a set is kept is freed. */

/* Sets larger than this are freed, not kept. */
#define KEPT_BYTES_MAX (64u << 20)

typedef struct level_arrays {
    CUgraphNode *nodes;
    gm_node_facts_t *facts;
    uint64_t *keys;
    uint32_t *exit_of;
    uint32_t cap;
} level_arrays_t;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static gm_topology_buf_t kept_topology; /* its arrays and capacities; counts 0 */
static level_arrays_t kept_level;
/* The node counts of the graphs listed last (below, "node counts remembered"). */
#define COUNT_HINTS 64
static struct {
    CUgraph graph;
    size_t count;
} count_hints[COUNT_HINTS];

static void level_free(level_arrays_t *level) {
    free(level->nodes);
    free(level->facts);
    free(level->keys);
    free(level->exit_of);
    *level = (level_arrays_t){0};
}

void gm_topology_forget_after_fork(void) {
    if (pthread_mutex_trylock(&kept_lock) == 0) {
        pthread_mutex_unlock(&kept_lock); /* nobody was inside: the kept set is whole */
        return;
    }
    /* Another thread of the parent was inside: the set may be half written; it is dropped. */
    pthread_mutex_init(&kept_lock, NULL);
    kept_topology = (gm_topology_buf_t){0};
    kept_level = (level_arrays_t){0};
    memset(count_hints, 0, sizeof count_hints);
}

/* Exchanges `set` with the kept set of its kind (`kept`, `size` bytes) under the lock: with an
 * empty `set` it takes the kept one, with a full one it gives it back and gets a set given back
 * meanwhile (none, usually), which the caller frees. */
static void kept_swap(void *kept, void *set, size_t size) {
    unsigned char held[sizeof(gm_topology_buf_t)];
    _Static_assert(sizeof held >= sizeof(level_arrays_t), "the larger kind of set");
    pthread_mutex_lock(&kept_lock);
    memcpy(held, kept, size);
    memcpy(kept, set, size);
    pthread_mutex_unlock(&kept_lock);
    memcpy(set, held, size);
}

/* Room in `level` for `count` nodes: its arrays as they are when large enough, else new ones
 * (what they held is dropped). False without host memory (nothing is held then). */
static bool level_fit(level_arrays_t *level, size_t count) {
    size_t n = count ? count : 1;
    if (n <= level->cap)
        return true;
    level_free(level);
    if (n > UINT32_MAX)
        return false;
    level->nodes = malloc(n * sizeof *level->nodes);
    level->facts = malloc(n * sizeof *level->facts);
    level->keys = malloc(n * sizeof *level->keys);
    level->exit_of = malloc(n * sizeof *level->exit_of);
    if (!level->nodes || !level->facts || !level->keys || !level->exit_of) {
        level_free(level);
        return false;
    }
    level->cap = (uint32_t)n;
    return true;
}

/* A level's arrays: the kept ones when `top` and they are there, else none yet (level_fit). */
static void level_take(level_arrays_t *level, bool top) {
    *level = (level_arrays_t){0};
    if (top)
        kept_swap(&kept_level, level, sizeof *level);
}

static void level_give(level_arrays_t *level, bool top) {
    size_t bytes = (size_t)level->cap * (sizeof *level->nodes + sizeof *level->facts +
                                         sizeof *level->keys + sizeof *level->exit_of);
    if (top && bytes <= KEPT_BYTES_MAX)
        kept_swap(&kept_level, level, sizeof *level);
    level_free(level);
}

/* ---- node counts remembered ------------------------------------------------------------------
 * Listing a graph's nodes took two driver calls, its count and then the list, and the driver walks
 * its nodes for each: at 2,000 nodes 14 us when they are in cache and 59 us when not (on an H200
 * host, tests/probe/node_listing_cost.cu). A graph read back before is listed in one call, with
 * room for the count it had and some more; only when that room fills up (the graph grew) is the
 * count asked for. The counts of the graphs read last, by handle, in a small table (count_hints)
 * under kept_lock: a handle given out again or pushed out of the table costs only the count call.
 */
static size_t hint_slot(CUgraph graph) {
    uint64_t h = (uint64_t)(uintptr_t)graph * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 58); /* the top 6 bits: COUNT_HINTS slots */
}

/* The count `graph` had when last listed, or false. */
static bool count_hint(CUgraph graph, size_t *count) {
    size_t slot = hint_slot(graph);
    pthread_mutex_lock(&kept_lock);
    bool known = count_hints[slot].graph == graph;
    *count = count_hints[slot].count;
    pthread_mutex_unlock(&kept_lock);
    return known;
}

static void remember_count(CUgraph graph, size_t count) {
    size_t slot = hint_slot(graph);
    pthread_mutex_lock(&kept_lock);
    count_hints[slot].graph = graph;
    count_hints[slot].count = count;
    pthread_mutex_unlock(&kept_lock);
}

/* Lists `graph`'s nodes into `level` (taken, not yet fitted); their number in *count. */
static CUresult list_nodes(CUgraph graph, level_arrays_t *level, size_t *count) {
    size_t hint = 0;
    CUresult r;
    if (count_hint(graph, &hint)) {
        /* The driver fills what is there and says how many: fewer than the room, all of them. */
        size_t room = hint + hint / 8 + 8;
        if (!level_fit(level, room))
            return CUDA_ERROR_OUT_OF_MEMORY;
        *count = room;
        r = gm_real.cuGraphGetNodes(graph, level->nodes, count);
        if (r != CUDA_SUCCESS || *count < room) {
            if (r == CUDA_SUCCESS)
                remember_count(graph, *count);
            return r;
        }
    }
    *count = 0;
    r = gm_real.cuGraphGetNodes(graph, NULL, count);
    if (r != CUDA_SUCCESS)
        return r;
    if (!level_fit(level, *count))
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t room = *count;
    r = gm_real.cuGraphGetNodes(graph, level->nodes, count);
    *count = *count < room ? *count : room; /* nodes added meanwhile are not in the list */
    if (r == CUDA_SUCCESS)
        remember_count(graph, *count);
    return r;
}

/* Room for `more` nodes (edges) past those read: the parallel arrays grow together. */
static bool room_for_nodes(gm_topology_buf_t *buf, uint64_t more) {
    void **const arrays[] = {(void **)&buf->nodes, (void **)&buf->types};
    const size_t elems[] = {sizeof *buf->nodes, sizeof *buf->types};
    uint64_t need = buf->view.node_count + more;
    return need <= buf->node_cap ||
           (need <= UINT32_MAX &&
            gm_grow_parallel(arrays, elems, 2, &buf->node_cap, (uint32_t)need) == GM_OK);
}

static bool room_for_edges(gm_topology_buf_t *buf, uint64_t more) {
    void **const arrays[] = {(void **)&buf->from, (void **)&buf->to};
    const size_t elems[] = {sizeof *buf->from, sizeof *buf->to};
    uint64_t need = buf->view.edge_count + more;
    return need <= buf->edge_cap ||
           (need <= UINT32_MAX &&
            gm_grow_parallel(arrays, elems, 2, &buf->edge_cap, (uint32_t)need) == GM_OK);
}

static bool add_node(gm_topology_buf_t *buf, uint64_t key, CUgraphNodeType type, uint32_t *index) {
    if (!room_for_nodes(buf, 1))
        return false;
    *index = buf->view.node_count++;
    buf->nodes[*index] = key;
    buf->types[*index] = type;
    return true;
}

static bool add_edge(gm_topology_buf_t *buf, uint32_t from, uint32_t to) {
    if (!room_for_edges(buf, 1))
        return false;
    buf->from[buf->view.edge_count] = from;
    buf->to[buf->view.edge_count] = to;
    buf->view.edge_count++;
    return true;
}

/* The nodes of one graph level by handle (index + 1), so that each edge endpoint is found in
 * constant time: a linear search per endpoint made reading a graph of 40,000 nodes take a second,
 * and sorting the handles for a binary search cost 170 µs at 2,000 nodes (a hash map 55 µs). The
 * driver lists a level's nodes in the order they were made (or its reverse), so in a captured
 * chain a node's one dependency is listed next to it: both neighbours are checked first, and the
 * map is built only at the first dependency found elsewhere (never, for a chain). */
typedef struct level_index {
    const CUgraphNode *nodes; /* the level's, in the driver's order */
    uint32_t first, end;      /* their indices in the topology */
    gm_map_t map;
    bool mapped;
} level_index_t;

static uint32_t find_node(level_index_t *level, uint32_t before, CUgraphNode node, CUresult *r) {
    uint32_t at = before - level->first;
    if (at > 0 && level->nodes[at - 1] == node)
        return before - 1;
    if (at + 1 < level->end - level->first && level->nodes[at + 1] == node)
        return before + 1;
    if (!level->mapped) {
        if (gm_map_reserve(&level->map, level->end - level->first) != GM_OK) {
            *r = CUDA_ERROR_OUT_OF_MEMORY;
            return UINT32_MAX;
        }
        for (uint32_t i = level->first; i < level->end; i++) /* reserved above */
            gm_map_put(&level->map, (uint64_t)(uintptr_t)level->nodes[i - level->first],
                       (void *)(uintptr_t)(i + 1));
        level->mapped = true;
    }
    uintptr_t v = (uintptr_t)gm_map_get(&level->map, (uint64_t)(uintptr_t)node);
    return v ? (uint32_t)(v - 1) : UINT32_MAX;
}

/* The dependencies of `node` with their edge data (asking without it is refused as lossy when an
 * edge carries data), into `deps`, grown when the node has more than fit. */
typedef struct dependency_buf {
    CUgraphNode *nodes;
    CUgraphEdgeData *data;
    uint32_t cap;
} dependency_buf_t;

static CUresult make_room(dependency_buf_t *deps, size_t need) {
    void **const arrays[] = {(void **)&deps->nodes, (void **)&deps->data};
    const size_t elems[] = {sizeof *deps->nodes, sizeof *deps->data};
    if (need > UINT32_MAX || gm_grow_parallel(arrays, elems, 2, &deps->cap, need) != GM_OK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

static CUresult node_dependencies(CUgraphNode node, dependency_buf_t *deps, size_t *count) {
    CUresult r = deps->cap < 8 ? make_room(deps, 8) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    size_t n = deps->cap;
    r = gm_drv.cuGraphNodeGetDependencies_v2(node, deps->nodes, deps->data, &n);
    if (r == CUDA_SUCCESS && n < deps->cap) {
        *count = n;
        return r;
    }
    /* Possibly more than fit: ask how many, make room, ask again. */
    r = gm_drv.cuGraphNodeGetDependencies_v2(node, NULL, NULL, &n);
    if (r == CUDA_SUCCESS)
        r = make_room(deps, n + 1);
    if (r != CUDA_SUCCESS)
        return r;
    *count = deps->cap;
    return gm_drv.cuGraphNodeGetDependencies_v2(node, deps->nodes, deps->data, count);
}

/* What the engine knows of a level's nodes (gm_engine_node_facts), into `level->facts`: markers
 * need no type asked, and most need no dependencies asked either, which was most of reading back a
 * graph of captured allocations. */
static void node_facts(gm_engine_t *engine, CUgraph graph, level_arrays_t *level, size_t count) {
    if (engine == NULL) {
        memset(level->facts, 0, (count ? count : 1) * sizeof *level->facts); /* GM_MARKER_NONE */
        return;
    }
    for (size_t i = 0; i < count; i++)
        level->keys[i] = (uint64_t)(uintptr_t)level->nodes[i];
    gm_engine_node_facts(engine, (uint64_t)(uintptr_t)graph, level->keys, count, level->facts);
}

/* Conditional bodies are read into the topology under GRAPHMEM_LIFT_RESTRICTIONS only, where
 * their markers are planned: each body runs (zero or more times) after the conditional node's
 * dependencies and before its dependents, as a child graph does, and its runs follow one another,
 * so an allocation freed in its body is live from its alloc to its free of each run. Bodies of
 * one node are read side by side: their allocations never share bytes. */
static bool expanded(CUgraphNodeType type) {
    return type == CU_GRAPH_NODE_TYPE_GRAPH ||
           (type == CU_GRAPH_NODE_TYPE_CONDITIONAL && gm_option_bool(GM_OPT_LIFT_RESTRICTIONS));
}

/* Whether the types of `graph`'s nodes (at the top level) are needed. A type tells child graph
 * and conditional nodes, whose graphs are read in, and memset and memcpy nodes, whose targets the
 * scratch cover maps (bridge/scratch.h). Without GRAPHMEM_LIFT_RESTRICTIONS only a child graph
 * moved in (cuGraphAddNode, ownership MOVE) can hold markers, and every child graph added through
 * graphmem's hooks is in the nested registry; memsets and copies on graph memory are noted there
 * too (gm_touch_note). For any other graph a child node stands for its graph as one node, which
 * orders its markers as reading the child in would, and no type is asked: at 300 nodes of which
 * 100 are not markers, that was a third of the driver calls of a read-back (bench/RESULTS.md,
 * "Node types asked only where needed"). */
static bool types_needed(CUgraph graph) {
    return gm_option_bool(GM_OPT_LIFT_RESTRICTIONS) || gm_nested_names(graph) || gm_touches(graph);
}

/* Appends `graph`; `entry`/`exit` (or UINT32_MAX) are the nodes every node of it follows/precedes.
 * Edges are read node by node: cuGraphGetEdges costs time quadratic in the graph's size (76 ms at
 * 30,000 nodes, 0.7 s at 90,000 on an H200), the dependencies of every node 2 and 9 ms
 * (tests/probe/readback_cost.cu). The types of a nested level's nodes are always asked (it is read
 * only when the registry names it). */
static CUresult read_graph(gm_engine_t *engine, CUgraph graph, gm_topology_buf_t *buf,
                           uint32_t entry, uint32_t exit, int depth) {
    if (depth > GM_NESTING_MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    level_arrays_t lv;
    level_take(&lv, depth == 0);
    size_t count = 0;
    CUresult r = list_nodes(graph, &lv, &count);
    if (r != CUDA_SUCCESS) {
        level_give(&lv, depth == 0);
        return r;
    }
    CUgraphNode *nodes = lv.nodes;
    uint32_t first = buf->view.node_count;
    /* The level's nodes, and its edges for a chain (a level inside a child graph adds two a node:
     * from its entry and to its exit). */
    if (r == CUDA_SUCCESS &&
        !(room_for_nodes(buf, count) &&
          room_for_edges(buf, (uint64_t)count * (entry == UINT32_MAX ? 1 : 3))))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    const gm_node_facts_t *facts = lv.facts;
    if (r == CUDA_SUCCESS)
        node_facts(engine, graph, &lv, count);
    bool nested = false; /* a child graph or conditional node: the passes for them are needed */
    bool types = r == CUDA_SUCCESS && (depth > 0 || types_needed(graph));
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++) {
        uint32_t index;
        CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
        /* A type not known fails the read: the node may be a child graph or conditional node
         * holding markers, which a plan or a check would then miss. */
        if (types && facts[i].kind == GM_MARKER_NONE &&
            (r = gm_drv.cuGraphNodeGetType(nodes[i], &type)) != CUDA_SUCCESS)
            break;
        nested |= type == CU_GRAPH_NODE_TYPE_GRAPH || type == CU_GRAPH_NODE_TYPE_CONDITIONAL;
        if (!add_node(buf, (uint64_t)(uintptr_t)nodes[i], type, &index))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if ((entry != UINT32_MAX && !add_edge(buf, entry, index)) ||
                 (exit != UINT32_MAX && !add_edge(buf, index, exit)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint32_t end = buf->view.node_count; /* at most `count` past `first` */
    /* Child graphs: every child node runs after the child node's dependencies and before its
     * dependents, so the child node's own index serves as the entry, and an extra exit node
     * collects the child's nodes and feeds the child node's dependents. Without such nodes
     * (most graphs) each node is its own exit, and those passes are skipped. */
    uint32_t *exit_of = lv.exit_of; /* room for `count` */
    level_index_t lookup = {.nodes = nodes, .first = first, .end = end};
    dependency_buf_t deps = {NULL, NULL, 0};
    for (uint32_t i = first; r == CUDA_SUCCESS && nested && i < end; i++) {
        exit_of[i - first] = i;
        if (expanded(buf->types[i]) &&
            (!add_node(buf, 0, CU_GRAPH_NODE_TYPE_EMPTY, &exit_of[i - first]) ||
             !add_edge(buf, i, exit_of[i - first])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t b = first; r == CUDA_SUCCESS && b < end; b++) {
        const gm_node_facts_t *f = &facts[b - first];
        size_t n = f->dep_count;
        if (!f->deps_known)
            r = node_dependencies(nodes[b - first], &deps, &n);
        for (size_t k = 0; r == CUDA_SUCCESS && k < n; k++) {
            CUgraphNode dep = f->deps_known ? (CUgraphNode)(uintptr_t)f->deps[k] : deps.nodes[k];
            uint32_t a = find_node(&lookup, b, dep, &r);
            if (a != UINT32_MAX && !add_edge(buf, nested ? exit_of[a - first] : a, b))
                r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    for (uint32_t i = first; r == CUDA_SUCCESS && nested && i < end; i++) {
        if (buf->types[i] == CU_GRAPH_NODE_TYPE_CONDITIONAL && expanded(buf->types[i])) {
            size_t n = gm_node_bodies(nodes[i - first], NULL, 0), got = 0;
            CUgraph *bodies = calloc(n ? n : 1, sizeof *bodies);
            if (bodies == NULL)
                r = CUDA_ERROR_OUT_OF_MEMORY;
            else if ((got = gm_node_bodies(nodes[i - first], bodies, n)) < n)
                n = got; /* fewer by now */
            for (size_t b = 0; r == CUDA_SUCCESS && b < n; b++)
                r = read_graph(engine, bodies[b], buf, i, exit_of[i - first], depth + 1);
            free(bodies);
            continue;
        }
        if (buf->types[i] != CU_GRAPH_NODE_TYPE_GRAPH)
            continue;
        CUgraph child = NULL;
        r = gm_real.cuGraphChildGraphNodeGetGraph(nodes[i - first], &child);
        if (r == CUDA_SUCCESS)
            r = read_graph(engine, child, buf, i, exit_of[i - first], depth + 1);
    }
    level_give(&lv, depth == 0);
    gm_map_fini(&lookup.map);
    free(deps.nodes);
    free(deps.data);
    return r;
}

CUresult gm_topology_read(gm_engine_t *engine, CUgraph graph, gm_topology_buf_t *buf) {
    *buf = (gm_topology_buf_t){0};
    kept_swap(&kept_topology, buf, sizeof *buf); /* the kept arrays, or none */
    CUresult r = read_graph(engine, graph, buf, UINT32_MAX, UINT32_MAX, 0);
    buf->view.nodes = buf->nodes;
    buf->view.edge_from = buf->from;
    buf->view.edge_to = buf->to;
    if (r != CUDA_SUCCESS)
        gm_topology_free(buf);
    return r;
}

void gm_topology_free(gm_topology_buf_t *buf) {
    if (buf->nodes == NULL && buf->types == NULL && buf->from == NULL && buf->to == NULL) {
        *buf = (gm_topology_buf_t){0};
        return; /* never read (or read nothing): the kept set stays */
    }
    size_t bytes = (size_t)buf->node_cap * (sizeof *buf->nodes + sizeof *buf->types) +
                   (size_t)buf->edge_cap * (sizeof *buf->from + sizeof *buf->to);
    if (bytes <= KEPT_BYTES_MAX) {
        buf->view = (gm_topology_t){0};
        kept_swap(&kept_topology, buf, sizeof *buf);
    }
    free(buf->nodes);
    free(buf->types);
    free(buf->from);
    free(buf->to);
    *buf = (gm_topology_buf_t){0};
}

CUresult gm_graph_nodes(CUgraph graph, CUgraphNode **nodes, size_t *count) {
    *nodes = NULL;
    *count = 0;
    size_t n = 0;
    CUresult r = gm_real.cuGraphGetNodes(graph, NULL, &n);
    if (r != CUDA_SUCCESS || n == 0)
        return r;
    CUgraphNode *list = malloc(n * sizeof *list);
    if (list == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = gm_real.cuGraphGetNodes(graph, list, &n);
    if (r != CUDA_SUCCESS) {
        free(list);
        return r;
    }
    *nodes = list;
    *count = n;
    return CUDA_SUCCESS;
}

bool gm_graph_listable(CUgraph graph) {
    size_t count = 0;
    return gm_real.cuGraphGetNodes(graph, NULL, &count) == CUDA_SUCCESS;
}

/* Whether any node of `graph`, child graphs included, is a marker. */
static bool holds_markers(gm_engine_t *engine, CUgraph graph, CUresult *error) {
    gm_topology_buf_t topo = {0};
    *error = gm_topology_read(engine, graph, &topo);
    bool found = false;
    for (uint32_t i = 0; *error == CUDA_SUCCESS && i < topo.view.node_count && !found; i++)
        found = gm_engine_marker(engine, topo.view.nodes[i], NULL) != GM_MARKER_NONE;
    gm_topology_free(&topo);
    return found;
}

/* Whether `graph` holds markers: its own nodes and those of its child graphs, or its conditional
 * bodies at any depth (which the read-back looks into only under GRAPHMEM_LIFT_RESTRICTIONS); a
 * graph that cannot be read gives the error that kept it from being read. */
static CUresult markers_anywhere(gm_engine_t *engine, CUgraph graph) {
    CUresult error;
    bool found = holds_markers(engine, graph, &error);
    if (error != CUDA_SUCCESS) /* an invalid graph: the driver answers the call */
        return gm_graph_listable(graph) ? error : CUDA_SUCCESS;
    return found || gm_conditional_bodies_have_markers(engine, graph) ? CUDA_ERROR_NOT_SUPPORTED
                                                                      : CUDA_SUCCESS;
}

/* A child graph holding memory nodes is refused on either side: measured on driver 580 for a
 * moved child with a captured allocation replaced by another such graph
 * (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE), for a child whose conditional body (an IF node added to
 * the child graph afterwards) allocates (the same), and a swap between a child with and one
 * without memory nodes changes a node's type. A graph that cannot be read (host memory) refuses
 * the swap too: it might hold markers, whose addresses no plan of the exec covers, and they could
 * be another exec's bytes. */
CUresult gm_child_swap_check(gm_engine_t *engine, CUgraphNode node, CUgraph child) {
    CUgraph current = NULL;
    if (engine == NULL || child == NULL || node == NULL ||
        gm_real.cuGraphChildGraphNodeGetGraph(node, &current) != CUDA_SUCCESS)
        return CUDA_SUCCESS;
    CUresult verdict = markers_anywhere(engine, child);
    return verdict != CUDA_SUCCESS ? verdict : markers_anywhere(engine, current);
}

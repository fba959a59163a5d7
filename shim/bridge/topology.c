#include "topology.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "interpose/driver.h"
#include "options.h"
#include "util.h"

static bool add_node(gm_topology_buf_t *buf, uint64_t key, CUgraphNodeType type, uint32_t *index) {
    void **const arrays[] = {(void **)&buf->nodes, (void **)&buf->types};
    const size_t elems[] = {sizeof *buf->nodes, sizeof *buf->types};
    if (gm_grow_parallel(arrays, elems, 2, &buf->node_cap, buf->view.node_count + 1) != GM_OK)
        return false;
    *index = buf->view.node_count++;
    buf->nodes[*index] = key;
    buf->types[*index] = type;
    return true;
}

static bool add_edge(gm_topology_buf_t *buf, uint32_t from, uint32_t to) {
    void **const arrays[] = {(void **)&buf->from, (void **)&buf->to};
    const size_t elems[] = {sizeof *buf->from, sizeof *buf->to};
    if (gm_grow_parallel(arrays, elems, 2, &buf->edge_cap, buf->view.edge_count + 1) != GM_OK)
        return false;
    buf->from[buf->view.edge_count] = from;
    buf->to[buf->view.edge_count] = to;
    buf->view.edge_count++;
    return true;
}

/* The nodes of one graph level sorted by handle, so that each edge endpoint is found in
 * O(log n): a linear search per endpoint made reading a graph of 40,000 nodes take a second. */
typedef struct node_slot {
    uint64_t key;
    uint32_t index;
} node_slot_t;

static int slot_order(const void *a, const void *b) {
    uint64_t x = ((const node_slot_t *)a)->key, y = ((const node_slot_t *)b)->key;
    return (x > y) - (x < y);
}

static uint32_t find_node(const node_slot_t *slots, size_t count, uint64_t key) {
    node_slot_t probe = {key, 0};
    const node_slot_t *hit = bsearch(&probe, slots, count, sizeof *slots, slot_order);
    return hit ? hit->index : UINT32_MAX;
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
    CUresult r = make_room(deps, 8);
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

/* Conditional bodies are read into the topology under GRAPHMEM_LIFT_RESTRICTIONS only, where
 * their markers are planned: each body runs (zero or more times) after the conditional node's
 * dependencies and before its dependents, as a child graph does, and its runs follow one another,
 * so an allocation freed in its body is live from its alloc to its free of each run. Bodies of
 * one node are read side by side: their allocations never share bytes. */
static bool expanded(CUgraphNodeType type) {
    return type == CU_GRAPH_NODE_TYPE_GRAPH ||
           (type == CU_GRAPH_NODE_TYPE_CONDITIONAL && gm_option_bool(GM_OPT_LIFT_RESTRICTIONS));
}

/* Appends `graph`; `entry`/`exit` (or UINT32_MAX) are the nodes every node of it follows/precedes.
 * Edges are read node by node: cuGraphGetEdges costs time quadratic in the graph's size (76 ms at
 * 30,000 nodes, 0.7 s at 90,000 on an H200), the dependencies of every node 2 and 9 ms
 * (tests/probe/readback_cost.cu). */
static CUresult read_graph(gm_engine_t *engine, CUgraph graph, gm_topology_buf_t *buf,
                           uint32_t entry, uint32_t exit, int depth) {
    if (depth > GM_NESTING_MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    size_t count = 0;
    CUresult r = gm_real.cuGraphGetNodes(graph, NULL, &count);
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNode *nodes = calloc(count ? count : 1, sizeof *nodes);
    if (nodes == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = gm_real.cuGraphGetNodes(graph, nodes, &count);
    uint32_t first = buf->view.node_count;
    for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++) {
        uint32_t index;
        CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
        if (!(engine && gm_engine_is_marker(engine, (uint64_t)(uintptr_t)nodes[i])) &&
            gm_drv.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS)
            type = CU_GRAPH_NODE_TYPE_EMPTY; /* nothing graphmem would look into */
        if (!add_node(buf, (uint64_t)(uintptr_t)nodes[i], type, &index))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if ((entry != UINT32_MAX && !add_edge(buf, entry, index)) ||
                 (exit != UINT32_MAX && !add_edge(buf, index, exit)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint32_t end = buf->view.node_count, level = end - first;
    /* Child graphs: every child node runs after the child node's dependencies and before its
     * dependents, so the child node's own index serves as the entry, and an extra exit node
     * collects the child's nodes and feeds the child node's dependents. */
    uint32_t *exit_of = calloc(level ? level : 1, sizeof *exit_of);
    node_slot_t *slots = calloc(level ? level : 1, sizeof *slots);
    dependency_buf_t deps = {NULL, NULL, 0};
    if (r == CUDA_SUCCESS && (!exit_of || !slots))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = first; r == CUDA_SUCCESS && i < end; i++) {
        slots[i - first] = (node_slot_t){buf->nodes[i], i};
        exit_of[i - first] = i;
        if (expanded(buf->types[i]) &&
            (!add_node(buf, 0, CU_GRAPH_NODE_TYPE_EMPTY, &exit_of[i - first]) ||
             !add_edge(buf, i, exit_of[i - first])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS)
        qsort(slots, level, sizeof *slots, slot_order);
    for (uint32_t b = first; r == CUDA_SUCCESS && b < end; b++) {
        size_t n = 0;
        r = node_dependencies(nodes[b - first], &deps, &n);
        for (size_t k = 0; r == CUDA_SUCCESS && k < n; k++) {
            uint32_t a = find_node(slots, level, (uint64_t)(uintptr_t)deps.nodes[k]);
            if (a != UINT32_MAX && !add_edge(buf, exit_of[a - first], b))
                r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    for (uint32_t i = first; r == CUDA_SUCCESS && i < end; i++) {
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
    free(nodes);
    free(exit_of);
    free(slots);
    free(deps.nodes);
    free(deps.data);
    return r;
}

CUresult gm_topology_read(gm_engine_t *engine, CUgraph graph, gm_topology_buf_t *buf) {
    *buf = (gm_topology_buf_t){0};
    CUresult r = read_graph(engine, graph, buf, UINT32_MAX, UINT32_MAX, 0);
    buf->view.nodes = buf->nodes;
    buf->view.edge_from = buf->from;
    buf->view.edge_to = buf->to;
    if (r != CUDA_SUCCESS)
        gm_topology_free(buf);
    return r;
}

void gm_topology_free(gm_topology_buf_t *buf) {
    free(buf->nodes);
    free(buf->types);
    free(buf->from);
    free(buf->to);
    *buf = (gm_topology_buf_t){0};
}

/* ---- graphs owned by nodes of another graph ------------------------------------------------ */

typedef struct nested {
    CUgraph parent, graph;
    CUgraphNode node; /* the node of `parent` owning `graph` (NULL: not known, or TOUCH) */
    gm_nested_kind_t kind;
} nested_t;

static nested_t *nested;
static uint32_t nested_count, nested_cap;
static pthread_mutex_t nested_lock = PTHREAD_MUTEX_INITIALIZER;
/* Child entries in `nested`, changed under the lock: every captured allocation and free asks
 * gm_nested_is_child, and most programs have no child graph at all. A graph becomes a child
 * before anyone can capture into it (its handle comes from the child node), so a capture that
 * reads 0 here has no child graph to miss. */
static atomic_uint child_count;

static void count_children(const nested_t *entry, int delta) {
    if (entry->kind == GM_NESTED_CHILD)
        atomic_fetch_add_explicit(&child_count, (unsigned)delta, memory_order_release);
}

void gm_nested_record(CUgraph parent, CUgraphNode node, const CUgraph *graphs, unsigned count,
                      gm_nested_kind_t kind) {
    pthread_mutex_lock(&nested_lock);
    /* A node handle given out again (its node destroyed alone): its old bodies are gone. */
    for (uint32_t i = 0; node != NULL && kind == GM_NESTED_BODY && i < nested_count;) {
        if (nested[i].node == node && nested[i].kind == GM_NESTED_BODY)
            nested[i] = nested[--nested_count];
        else
            i++;
    }
    for (unsigned i = 0; i < count; i++) {
        if (gm_grow((void **)&nested, &nested_cap, nested_count + 1, sizeof *nested) != GM_OK)
            break;
        nested[nested_count++] = (nested_t){parent, graphs[i], node, kind};
        count_children(&nested[nested_count - 1], 1);
    }
    pthread_mutex_unlock(&nested_lock);
}

/* Conditional bodies are looked for in `graph`, its bodies and its child graphs, at any depth: a
 * child graph's conditional node runs as part of the parent too. */
static bool nests(const nested_t *entry, CUgraph graph) {
    return entry->parent == graph &&
           (entry->kind == GM_NESTED_BODY || entry->kind == GM_NESTED_CHILD);
}

static bool bodies_have_markers_locked(gm_engine_t *engine, CUgraph graph, int depth) {
    for (size_t i = 0; i < nested_count && depth <= GM_NESTING_MAX; i++) {
        if (!nests(&nested[i], graph))
            continue;
        if ((nested[i].kind == GM_NESTED_BODY &&
             gm_engine_graph_has_markers(engine, (uint64_t)(uintptr_t)nested[i].graph)) ||
            bodies_have_markers_locked(engine, nested[i].graph, depth + 1))
            return true;
    }
    return false;
}

void gm_touch_note(CUgraph graph) {
    if (graph != NULL && !gm_touches(graph))
        gm_nested_record(graph, NULL, &(CUgraph){NULL}, 1, GM_NESTED_TOUCH);
}

static bool touches_locked(CUgraph graph, int depth) {
    for (size_t i = 0; i < nested_count && depth <= GM_NESTING_MAX; i++)
        if (nested[i].parent == graph &&
            (nested[i].kind == GM_NESTED_TOUCH || touches_locked(nested[i].graph, depth + 1)))
            return true;
    return false;
}

size_t gm_node_bodies(CUgraphNode node, CUgraph *out, size_t cap) {
    pthread_mutex_lock(&nested_lock);
    size_t n = 0;
    for (size_t i = 0; node != NULL && i < nested_count; i++)
        if (nested[i].node == node && nested[i].kind == GM_NESTED_BODY) {
            if (n < cap)
                out[n] = nested[i].graph;
            n++;
        }
    pthread_mutex_unlock(&nested_lock);
    return n;
}

size_t gm_nested_bodies(CUgraph graph, CUgraph *out, size_t cap) {
    pthread_mutex_lock(&nested_lock);
    size_t n = 0;
    for (size_t i = 0; i < nested_count; i++)
        if (nested[i].parent == graph && nested[i].kind == GM_NESTED_BODY) {
            if (n < cap)
                out[n] = nested[i].graph;
            n++;
        }
    pthread_mutex_unlock(&nested_lock);
    return n;
}

bool gm_touches(CUgraph graph) {
    pthread_mutex_lock(&nested_lock);
    bool found = touches_locked(graph, 0);
    pthread_mutex_unlock(&nested_lock);
    return found;
}

/* The first conditional body of `graph`, at any depth, that holds markers but is not
 * self-contained (gm_engine_graph_self_contained); NULL when there is none. */
static CUgraph body_not_contained_locked(gm_engine_t *engine, CUgraph graph, int depth) {
    for (size_t i = 0; i < nested_count && depth <= GM_NESTING_MAX; i++) {
        if (!nests(&nested[i], graph))
            continue;
        uint64_t key = (uint64_t)(uintptr_t)nested[i].graph;
        if (nested[i].kind == GM_NESTED_BODY && gm_engine_graph_has_markers(engine, key) &&
            !gm_engine_graph_self_contained(engine, key))
            return nested[i].graph;
        CUgraph deeper = body_not_contained_locked(engine, nested[i].graph, depth + 1);
        if (deeper)
            return deeper;
    }
    return NULL;
}

CUgraph gm_conditional_body_not_contained(gm_engine_t *engine, CUgraph graph) {
    pthread_mutex_lock(&nested_lock);
    CUgraph found = body_not_contained_locked(engine, graph, 0);
    pthread_mutex_unlock(&nested_lock);
    return found;
}

bool gm_conditional_bodies_have_markers(gm_engine_t *engine, CUgraph graph) {
    pthread_mutex_lock(&nested_lock);
    bool found = bodies_have_markers_locked(engine, graph, 0);
    pthread_mutex_unlock(&nested_lock);
    return found;
}

bool gm_nested_is_child(CUgraph graph) {
    if (atomic_load_explicit(&child_count, memory_order_acquire) == 0)
        return false;
    pthread_mutex_lock(&nested_lock);
    bool found = false;
    for (size_t i = 0; i < nested_count && !found; i++)
        found = nested[i].graph == graph && nested[i].kind == GM_NESTED_CHILD;
    pthread_mutex_unlock(&nested_lock);
    return found;
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

/* A child graph holding memory nodes is refused on either side: measured on driver 580 for a
 * moved child with a captured allocation replaced by another such graph
 * (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE), and a swap between a child with and one without memory
 * nodes changes a node's type. */
bool gm_child_swap_refused(gm_engine_t *engine, CUgraphNode node, CUgraph child) {
    CUgraph current = NULL;
    CUresult error;
    return engine != NULL && child != NULL && node != NULL &&
           gm_real.cuGraphChildGraphNodeGetGraph(node, &current) == CUDA_SUCCESS &&
           (holds_markers(engine, child, &error) || holds_markers(engine, current, &error));
}

/* The graphs a destroyed graph owned die with it: their handles may come back for new graphs, so
 * nothing of them may stay, in this registry or in the engine. The registry's lock is held from
 * before the driver's destroy until both have forgotten them (lock order: registry, then engine),
 * so a graph the driver makes meanwhile with a recycled handle cannot be registered in between. */
/* Forgets `keys[0..count)` (room for `cap`; keys may be NULL when count is 0 and the call is
 * all there is), the graphs nested in them at any depth, here and in the engine, in one step with
 * `call`. Without host memory for the whole list the call is still made; descendants left out
 * stay known until their handles are. */
static gm_status_t destroy_nested_locked(gm_engine_t *engine, uint64_t *keys, uint32_t count,
                                         uint32_t cap, gm_driver_call_t call) {
    /* Descendants, breadth first: keys[] doubles as the queue. */
    for (uint32_t next = 0; next < count; next++)
        for (uint32_t i = 0; i < nested_count; i++) {
            if ((uint64_t)(uintptr_t)nested[i].parent != keys[next])
                continue;
            if (gm_grow((void **)&keys, &cap, count + 1, sizeof *keys) != GM_OK)
                break;
            keys[count++] = (uint64_t)(uintptr_t)nested[i].graph;
        }
    gm_status_t st = engine ? gm_engine_graphs_destroy(engine, keys, count, call)
                     : (!call.fn || call.fn(call.arg)) ? GM_OK
                                                       : GM_ERR_DRIVER;
    if (st == GM_OK) {
        for (uint32_t i = 0; i < nested_count;) {
            bool gone = false;
            for (uint32_t k = 0; k < count && !gone; k++)
                gone = (uint64_t)(uintptr_t)nested[i].parent == keys[k] ||
                       (uint64_t)(uintptr_t)nested[i].graph == keys[k];
            if (gone) {
                count_children(&nested[i], -1);
                nested[i] = nested[--nested_count];
            } else
                i++;
        }
    }
    free(keys);
    return st;
}

gm_status_t gm_graph_destroy_nested(gm_engine_t *engine, CUgraph graph, gm_driver_call_t call) {
    uint64_t *keys = NULL;
    uint32_t cap = 0, count = 0;
    if (gm_grow((void **)&keys, &cap, 8, sizeof *keys) == GM_OK)
        keys[count++] = (uint64_t)(uintptr_t)graph;
    else
        return engine ? gm_engine_graphs_destroy(engine, &(uint64_t){(uintptr_t)graph}, 1, call)
               : (!call.fn || call.fn(call.arg)) ? GM_OK
                                                 : GM_ERR_DRIVER;
    pthread_mutex_lock(&nested_lock);
    gm_status_t st = destroy_nested_locked(engine, keys, count, cap, call);
    pthread_mutex_unlock(&nested_lock);
    return st;
}

gm_status_t gm_node_destroy_nested(gm_engine_t *engine, CUgraphNode node, gm_driver_call_t call) {
    uint64_t *keys = NULL;
    uint32_t cap = 0, count = 0;
    pthread_mutex_lock(&nested_lock);
    for (uint32_t i = 0; node != NULL && i < nested_count; i++)
        if (nested[i].node == node && nested[i].kind != GM_NESTED_TOUCH &&
            gm_grow((void **)&keys, &cap, count + 1, sizeof *keys) == GM_OK)
            keys[count++] = (uint64_t)(uintptr_t)nested[i].graph;
    gm_status_t st = destroy_nested_locked(engine, keys, count, cap, call);
    pthread_mutex_unlock(&nested_lock);
    return st;
}

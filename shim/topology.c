#include "topology.h"

#include <pthread.h>
#include <stdlib.h>

#include "driver.h"

static bool grow(void **array, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap)
        return true;
    uint32_t next = *cap ? *cap : 64;
    while (next < need)
        next *= 2;
    void *grown = realloc(*array, (size_t)next * elem);
    if (grown == NULL)
        return false;
    *array = grown;
    *cap = next;
    return true;
}

static bool add_node(gm_topology_buf_t *buf, uint64_t key, uint32_t *index) {
    if (!grow((void **)&buf->nodes, &buf->node_cap, buf->view.node_count + 1, sizeof *buf->nodes))
        return false;
    *index = buf->view.node_count++;
    buf->nodes[*index] = key;
    return true;
}

static bool add_edge(gm_topology_buf_t *buf, uint32_t from, uint32_t to) {
    uint32_t need = buf->view.edge_count + 1;
    uint32_t cap = buf->edge_cap;
    if (!grow((void **)&buf->from, &cap, need, sizeof *buf->from))
        return false;
    cap = buf->edge_cap;
    if (!grow((void **)&buf->to, &cap, need, sizeof *buf->to))
        return false;
    buf->edge_cap = cap;
    buf->from[buf->view.edge_count] = from;
    buf->to[buf->view.edge_count] = to;
    buf->view.edge_count++;
    return true;
}

static uint32_t find_node(const gm_topology_buf_t *buf, uint32_t first, uint32_t end,
                          uint64_t key) {
    for (uint32_t i = first; i < end; i++)
        if (buf->nodes[i] == key)
            return i;
    return UINT32_MAX;
}

/* Appends `graph`; `entry`/`exit` (or UINT32_MAX) are the nodes every node of it follows/precedes.
 */
static CUresult read_graph(CUgraph graph, gm_topology_buf_t *buf, uint32_t entry, uint32_t exit,
                           int depth) {
    if (depth > 16)
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
        if (!add_node(buf, (uint64_t)(uintptr_t)nodes[i], &index))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if ((entry != UINT32_MAX && !add_edge(buf, entry, index)) ||
                 (exit != UINT32_MAX && !add_edge(buf, index, exit)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint32_t end = buf->view.node_count;
    size_t edge_count = 0;
    if (r == CUDA_SUCCESS)
        r = gm_real.cuGraphGetEdges_v2(graph, NULL, NULL, NULL, &edge_count);
    CUgraphNode *from = calloc(edge_count ? edge_count : 1, sizeof *from);
    CUgraphNode *to = calloc(edge_count ? edge_count : 1, sizeof *to);
    CUgraphEdgeData *data = calloc(edge_count ? edge_count : 1, sizeof *data);
    if (r == CUDA_SUCCESS && (!from || !to || !data))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && edge_count > 0)
        r = gm_real.cuGraphGetEdges_v2(graph, from, to, data, &edge_count);
    for (size_t i = 0; r == CUDA_SUCCESS && i < edge_count; i++) {
        uint32_t a = find_node(buf, first, end, (uint64_t)(uintptr_t)from[i]);
        uint32_t b = find_node(buf, first, end, (uint64_t)(uintptr_t)to[i]);
        if (a != UINT32_MAX && b != UINT32_MAX && !add_edge(buf, a, b))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* Child graphs: every child node runs after the child node's dependencies and before its
     * dependents, so the child node's own index serves as the entry; an extra exit node
     * collects the child's nodes and feeds the child node's out-edges. */
    for (uint32_t i = first; r == CUDA_SUCCESS && i < end; i++) {
        CUgraphNodeType type;
        CUgraphNode node = (CUgraphNode)(uintptr_t)buf->nodes[i];
        if (gm_drv.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS ||
            type != CU_GRAPH_NODE_TYPE_GRAPH)
            continue;
        CUgraph child = NULL;
        uint32_t child_exit;
        r = gm_real.cuGraphChildGraphNodeGetGraph(node, &child);
        if (r == CUDA_SUCCESS && !add_node(buf, 0, &child_exit))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        if (r != CUDA_SUCCESS)
            break;
        uint32_t edges_before = buf->view.edge_count;
        for (uint32_t e = 0; e < edges_before && r == CUDA_SUCCESS; e++)
            if (buf->from[e] == i)
                buf->from[e] = child_exit; /* the child's dependents follow its exit */
        if (!add_edge(buf, i, child_exit))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            r = read_graph(child, buf, i, child_exit, depth + 1);
    }
    free(nodes);
    free(from);
    free(to);
    free(data);
    return r;
}

CUresult gm_topology_read(CUgraph graph, gm_topology_buf_t *buf) {
    *buf = (gm_topology_buf_t){0};
    CUresult r = read_graph(graph, buf, UINT32_MAX, UINT32_MAX, 0);
    buf->view.nodes = buf->nodes;
    buf->view.edge_from = buf->from;
    buf->view.edge_to = buf->to;
    if (r != CUDA_SUCCESS)
        gm_topology_free(buf);
    return r;
}

void gm_topology_free(gm_topology_buf_t *buf) {
    free(buf->nodes);
    free(buf->from);
    free(buf->to);
    *buf = (gm_topology_buf_t){0};
}

/* ---- conditional bodies ------------------------------------------------------------------- */

typedef struct body {
    CUgraph parent, body;
} body_t;

static body_t *bodies;
static size_t body_count, body_cap;
static pthread_mutex_t bodies_lock = PTHREAD_MUTEX_INITIALIZER;

void gm_conditional_record(CUgraph parent, const CUgraph *graphs, unsigned count) {
    pthread_mutex_lock(&bodies_lock);
    for (unsigned i = 0; i < count; i++) {
        if (body_count == body_cap) {
            size_t cap = body_cap ? body_cap * 2 : 16;
            body_t *grown = realloc(bodies, cap * sizeof *grown);
            if (grown == NULL)
                break;
            bodies = grown;
            body_cap = cap;
        }
        bodies[body_count++] = (body_t){parent, graphs[i]};
    }
    pthread_mutex_unlock(&bodies_lock);
}

static bool bodies_have_markers_locked(gm_engine_t *engine, CUgraph graph, int depth) {
    for (size_t i = 0; i < body_count && depth < 16; i++) {
        if (bodies[i].parent != graph)
            continue;
        if (gm_engine_graph_has_markers(engine, (uint64_t)(uintptr_t)bodies[i].body) ||
            bodies_have_markers_locked(engine, bodies[i].body, depth + 1))
            return true;
    }
    return false;
}

bool gm_conditional_bodies_have_markers(gm_engine_t *engine, CUgraph graph) {
    pthread_mutex_lock(&bodies_lock);
    bool found = bodies_have_markers_locked(engine, graph, 0);
    pthread_mutex_unlock(&bodies_lock);
    return found;
}

void gm_conditional_forget(CUgraph graph) {
    pthread_mutex_lock(&bodies_lock);
    for (size_t i = 0; i < body_count;) {
        if (bodies[i].parent == graph || bodies[i].body == graph)
            bodies[i] = bodies[--body_count];
        else
            i++;
    }
    pthread_mutex_unlock(&bodies_lock);
}

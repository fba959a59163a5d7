/* The topology read-back (shim/bridge/topology.c) over a driver of plain structs: for chains and
 * random DAGs whose nodes the driver lists in the order they were made, in its reverse or shuffled,
 * with nodes of many dependencies and with child graphs, the edges read are the graph's; with
 * markers made through the engine and listed in the order they were made (or its reverse), their
 * dependencies are taken from it and not asked of the driver, until an edge is added to their
 * graph; a child graph's swap is refused where either graph holds markers or cannot be read. Only
 * the four driver entries the read-back calls are filled in. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine_sim.h"
#include "fake_dependencies.h"
#include "interpose/driver.h"
#include "topology.h"

gm_driver_table_t gm_drv;
gm_real_table_t gm_real;

/* Conditional bodies are read only under GRAPHMEM_LIFT_RESTRICTIONS, not set here. */
size_t gm_node_bodies(CUgraphNode node, CUgraph *out, size_t cap) {
    (void)node, (void)out, (void)cap;
    return 0;
}

/* The nested registry (bridge/nested.c) as far as the read-back asks it: one graph that names a
 * child graph, one whose memsets touch graph memory (none: NULL). */
static _Thread_local CUgraph registered_parent, touching; /* per thread: test_concurrent_reads */

bool gm_nested_names(CUgraph graph) {
    return graph != NULL && graph == registered_parent;
}

bool gm_touches(CUgraph graph) {
    return graph != NULL && graph == touching;
}

/* Asked by gm_child_swap_check only: no bodies here. */
bool gm_conditional_bodies_have_markers(gm_engine_t *engine, CUgraph graph) {
    (void)engine, (void)graph;
    return false;
}

#define MAX_NODES 4096
#define MAX_DEPS 40

typedef struct fake_graph fake_graph_t;

typedef struct fake_node {
    CUgraphNodeType type;
    unsigned dep_count;
    struct fake_node *deps[MAX_DEPS];
    fake_graph_t *child; /* of a CU_GRAPH_NODE_TYPE_GRAPH node */
} fake_node_t;

struct fake_graph {
    unsigned count;
    fake_node_t *nodes;         /* in the order they were made */
    unsigned listed[MAX_NODES]; /* the order the driver lists them in */
    bool unreadable;            /* its nodes cannot be listed (CUDA_ERROR_OUT_OF_MEMORY) */
    bool invalid;               /* not a graph to the driver (CUDA_ERROR_INVALID_VALUE) */
};

/* Calls that asked for a graph's count, not its nodes (atomic: test_concurrent_reads). */
static _Atomic unsigned long count_asks;

/* As the driver documents it: with room for more nodes than there are, the rest of the room is
 * set to NULL and the count returned. */
static CUresult CUDAAPI get_nodes(CUgraph graph, CUgraphNode *nodes, size_t *count) {
    const fake_graph_t *g = (const fake_graph_t *)graph;
    if (g->invalid)
        return CUDA_ERROR_INVALID_VALUE;
    if (g->unreadable && nodes != NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (nodes == NULL) {
        count_asks++;
        *count = g->count;
        return CUDA_SUCCESS;
    }
    size_t n = *count < g->count ? *count : g->count;
    for (size_t i = 0; i < *count; i++)
        nodes[i] = i < n ? (CUgraphNode)&g->nodes[g->listed[i]] : NULL;
    *count = n;
    return CUDA_SUCCESS;
}

/* Nodes whose type was asked for. */
static _Atomic unsigned long type_asks;

/* A node whose type the driver will not say (its type CU_GRAPH_NODE_TYPE_GRAPH + 1000). */
#define UNTYPED ((CUgraphNodeType)(CU_GRAPH_NODE_TYPE_GRAPH + 1000))

static CUresult CUDAAPI get_type(CUgraphNode node, CUgraphNodeType *type) {
    type_asks++;
    if (((const fake_node_t *)node)->type == UNTYPED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *type = ((const fake_node_t *)node)->type;
    return CUDA_SUCCESS;
}

/* Nodes whose dependencies were asked for (atomic: test_concurrent_reads asks on four threads). */
static _Atomic unsigned long dependency_asks;

static CUresult CUDAAPI get_dependencies(CUgraphNode node, CUgraphNode *deps,
                                         CUgraphEdgeData *edges, size_t *count) {
    const fake_node_t *n = (const fake_node_t *)node;
    dependency_asks += deps != NULL;
    return fake_dependencies_of(n->deps, n->dep_count, deps, edges, count);
}

static CUresult CUDAAPI child_graph(CUgraphNode node, CUgraph *graph) {
    *graph = (CUgraph)((const fake_node_t *)node)->child;
    return CUDA_SUCCESS;
}

static void install_driver(void) {
    gm_real.cuGraphGetNodes = get_nodes;
    gm_real.cuGraphChildGraphNodeGetGraph = child_graph;
    gm_drv.cuGraphNodeGetType = get_type;
    gm_drv.cuGraphNodeGetDependencies_v2 = get_dependencies;
}

typedef enum listing { MADE, REVERSED, SHUFFLED } listing_t;

static fake_graph_t *graph_new(unsigned count, listing_t listing) {
    fake_graph_t *g = calloc(1, sizeof *g);
    CHECK(g != NULL && count <= MAX_NODES);
    g->count = count;
    g->nodes = calloc(count ? count : 1, sizeof *g->nodes);
    CHECK(g->nodes != NULL);
    for (unsigned i = 0; i < count; i++) {
        g->nodes[i].type = CU_GRAPH_NODE_TYPE_KERNEL;
        g->listed[i] = listing == REVERSED ? count - 1 - i : i;
    }
    for (unsigned i = count; listing == SHUFFLED && i > 1; i--) {
        unsigned j = (unsigned)rand() % i, t = g->listed[i - 1];
        g->listed[i - 1] = g->listed[j];
        g->listed[j] = t;
    }
    return g;
}

static void graph_free(fake_graph_t *g) {
    for (unsigned i = 0; i < g->count; i++)
        if (g->nodes[i].child != NULL)
            graph_free(g->nodes[i].child);
    free(g->nodes);
    free(g);
}

static void depend(fake_graph_t *g, unsigned node, unsigned on) {
    fake_node_t *n = &g->nodes[node];
    CHECK(n->dep_count < MAX_DEPS);
    n->deps[n->dep_count++] = &g->nodes[on];
}

/* Node i of a chain depends on node i - 1. */
static fake_graph_t *chain(unsigned count, listing_t listing) {
    fake_graph_t *g = graph_new(count, listing);
    for (unsigned i = 1; i < count; i++)
        depend(g, i, i - 1);
    return g;
}

/* Each node depends on up to `most` distinct earlier nodes, often on the one made just before. */
static fake_graph_t *random_dag(unsigned count, unsigned most, listing_t listing) {
    fake_graph_t *g = graph_new(count, listing);
    for (unsigned i = 1; i < count; i++) {
        unsigned want = (unsigned)rand() % (most + 1);
        if (rand() % 2)
            depend(g, i, i - 1);
        for (unsigned k = 0; k < want; k++) {
            unsigned on = (unsigned)rand() % i;
            bool seen = false;
            for (unsigned d = 0; d < g->nodes[i].dep_count; d++)
                seen |= g->nodes[i].deps[d] == &g->nodes[on];
            if (!seen)
                depend(g, i, on);
        }
    }
    return g;
}

/* The topology's index of each node key (0 for the exits read back for child graphs). */
static int64_t index_of(const gm_topology_t *t, uint64_t key) {
    for (uint32_t i = 0; i < t->node_count; i++)
        if (t->nodes[i] == key)
            return i;
    return -1;
}

static uint64_t key_of(const fake_node_t *n) {
    return (uint64_t)(uintptr_t)n;
}

/* A flat graph read with `engine` (or none): every node read once, and its edges exactly the
 * dependencies; its nodes' types asked when the registry says it touches graph memory, else
 * EMPTY (test_types_asked_only_where_needed). */
static void check_flat_read(gm_engine_t *engine, fake_graph_t *g, bool touched) {
    gm_topology_buf_t buf;
    touching = touched ? (CUgraph)g : NULL;
    CHECK(gm_topology_read(engine, (CUgraph)g, &buf) == CUDA_SUCCESS);
    touching = NULL;
    const gm_topology_t *t = &buf.view;
    CHECK(t->node_count == g->count);
    unsigned expected = 0;
    for (unsigned i = 0; i < g->count; i++)
        expected += g->nodes[i].dep_count;
    CHECK(t->edge_count == expected);
    /* Each dependency appears as an edge, and (counts equal) nothing else does. */
    bool *seen = calloc(expected ? expected : 1, sizeof *seen);
    CHECK(seen != NULL);
    for (unsigned i = 0; i < g->count; i++) {
        const fake_node_t *n = &g->nodes[i];
        int64_t to = index_of(t, key_of(n));
        CHECK(to >= 0 && buf.types[to] == (touched ? n->type : CU_GRAPH_NODE_TYPE_EMPTY));
        for (unsigned d = 0; d < n->dep_count; d++) {
            int64_t from = index_of(t, key_of(n->deps[d]));
            bool found = false;
            for (uint32_t e = 0; e < t->edge_count && !found; e++)
                if (!seen[e] && t->edge_from[e] == from && t->edge_to[e] == to)
                    found = seen[e] = true;
            CHECK(found);
        }
    }
    free(seen);
    gm_topology_free(&buf);
}

static void check_flat_with(gm_engine_t *engine, fake_graph_t *g) {
    check_flat_read(engine, g, false);
}

static void check_flat(fake_graph_t *g) {
    check_flat_read(NULL, g, false);
    check_flat_read(NULL, g, true);
}

static void test_chains(void) {
    const listing_t listings[] = {MADE, REVERSED, SHUFFLED};
    const unsigned sizes[] = {0, 1, 2, 3, 257, 2000};
    for (unsigned l = 0; l < 3; l++)
        for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            fake_graph_t *g = chain(sizes[s], listings[l]);
            check_flat(g);
            graph_free(g);
        }
}

static void test_random_dags(void) {
    const listing_t listings[] = {MADE, REVERSED, SHUFFLED};
    for (unsigned round = 0; round < 60; round++) {
        unsigned count = 1 + (unsigned)rand() % 300, most = (unsigned)rand() % 12;
        fake_graph_t *g = random_dag(count, most, listings[round % 3]);
        check_flat(g);
        graph_free(g);
    }
}

/* A node of MAX_DEPS - 1 dependencies: more than the read-back's first ask holds. */
static void test_many_dependencies(void) {
    fake_graph_t *g = graph_new(MAX_DEPS, MADE);
    for (unsigned i = 0; i + 1 < g->count; i++)
        depend(g, g->count - 1, i);
    check_flat(g);
    graph_free(g);
}

/* A graph read back before is listed in one call while it has not grown past the room left for
 * its count; one that grew past it is listed whole after its count is asked again. Its first 40
 * nodes, then one more, then all 600 (a chain listed in the order made, so the first k nodes of
 * the 600 are a chain of k). */
static void test_listing_remembers_counts(void) {
    fake_graph_t *g = chain(600, MADE);
    const unsigned counts[] = {40, 40, 41, 600, 600, 599};
    const unsigned long asks[] = {1, 0, 0, 1, 0, 0};
    for (unsigned k = 0; k < sizeof counts / sizeof *counts; k++) {
        g->count = counts[k];
        count_asks = 0;
        check_flat(g);
        CHECK(count_asks == asks[k]);
    }
    g->count = 600;
    graph_free(g);
}

/* Whether topology index `to` is reachable from `from` by the read edges. */
static bool reaches(const gm_topology_t *t, uint32_t from, uint32_t to) {
    bool *seen = calloc(t->node_count, sizeof *seen);
    uint32_t *queue = calloc(t->node_count, sizeof *queue);
    CHECK(seen != NULL && queue != NULL);
    uint32_t head = 0, tail = 0;
    queue[tail++] = from;
    seen[from] = true;
    while (head < tail && !seen[to]) {
        uint32_t at = queue[head++];
        for (uint32_t e = 0; e < t->edge_count; e++)
            if (t->edge_from[e] == at && !seen[t->edge_to[e]])
                seen[t->edge_to[e]] = true, queue[tail++] = t->edge_to[e];
    }
    bool found = seen[to];
    free(seen);
    free(queue);
    return found;
}

/* A chain a -> c -> b where c is a child graph node holding a chain x -> y (listed reversed):
 * x and y run after a and before b, and the child node is their entry. */
static void test_child_graph(void) {
    fake_graph_t *g = chain(3, SHUFFLED), *child = chain(2, REVERSED);
    g->nodes[1].type = CU_GRAPH_NODE_TYPE_GRAPH;
    g->nodes[1].child = child;
    registered_parent = (CUgraph)g; /* as cuGraphAddChildGraphNode's hook records it */
    gm_topology_buf_t buf;
    CHECK(gm_topology_read(NULL, (CUgraph)g, &buf) == CUDA_SUCCESS);
    const gm_topology_t *t = &buf.view;
    CHECK(t->node_count == 6); /* three, the child's two, and the child's exit */
    int64_t a = index_of(t, key_of(&g->nodes[0])), c = index_of(t, key_of(&g->nodes[1])),
            b = index_of(t, key_of(&g->nodes[2])), x = index_of(t, key_of(&child->nodes[0])),
            y = index_of(t, key_of(&child->nodes[1]));
    CHECK(a >= 0 && b >= 0 && c >= 0 && x >= 0 && y >= 0);
    CHECK(reaches(t, a, c) && reaches(t, c, x) && reaches(t, x, y) && reaches(t, y, b));
    CHECK(!reaches(t, b, a) && !reaches(t, y, x) && !reaches(t, b, x) && !reaches(t, x, c));
    gm_topology_free(&buf);
    registered_parent = NULL;
    graph_free(g);
}

/* A graph the registry does not name (no child graph added through graphmem, no memset or copy on
 * graph memory) is read without asking any node's type: a child node in it (made where graphmem
 * does not see, holding no markers) stands for its graph as one node, in order. Named or touching,
 * every node's type is asked and the child graph read in. */
static void test_types_asked_only_where_needed(void) {
    fake_graph_t *g = chain(3, SHUFFLED), *child = chain(2, REVERSED);
    g->nodes[1].type = CU_GRAPH_NODE_TYPE_GRAPH;
    g->nodes[1].child = child;
    gm_topology_buf_t buf;
    type_asks = 0;
    CHECK(gm_topology_read(NULL, (CUgraph)g, &buf) == CUDA_SUCCESS);
    CHECK(type_asks == 0);
    CHECK(buf.view.node_count == 3 && buf.view.edge_count == 2);
    int64_t a = index_of(&buf.view, key_of(&g->nodes[0])),
            c = index_of(&buf.view, key_of(&g->nodes[1])),
            b = index_of(&buf.view, key_of(&g->nodes[2]));
    CHECK(a >= 0 && b >= 0 && c >= 0 && reaches(&buf.view, a, c) && reaches(&buf.view, c, b));
    gm_topology_free(&buf);
    for (int named = 0; named < 2; named++) {
        *(named ? &registered_parent : &touching) = (CUgraph)g;
        type_asks = 0;
        CHECK(gm_topology_read(NULL, (CUgraph)g, &buf) == CUDA_SUCCESS);
        CHECK(type_asks == 3 + 2); /* the graph's nodes, then the child's */
        CHECK(buf.view.node_count == 6);
        gm_topology_free(&buf);
        registered_parent = touching = NULL;
    }
    graph_free(g);
}

/* ---- markers: dependencies kept by the engine ---------------------------------------------- */

/* The driver's node add for a marker: node `index` of the fake graph, depending on what the fake
 * graph says, which is handed to the engine as gm_node_call_t.deps. */
typedef struct marker_add {
    fake_graph_t *g;
    unsigned index;
    uint64_t deps[MAX_DEPS];
} marker_add_t;

static bool add_fake_node(void *arg, uint64_t *node_out) {
    marker_add_t *a = arg;
    *node_out = key_of(&a->g->nodes[a->index]);
    return true;
}

static gm_node_call_t marker_call(marker_add_t *a, fake_graph_t *g, unsigned index) {
    const fake_node_t *n = &g->nodes[index];
    *a = (marker_add_t){.g = g, .index = index};
    for (unsigned d = 0; d < n->dep_count; d++)
        a->deps[d] = key_of(n->deps[d]);
    return (gm_node_call_t){add_fake_node, a, a->deps, n->dep_count, true};
}

/* The search's parents (engine.h, gm_search_t) as the shim's asks the driver at capture, read from
 * the fake graph without counting as the read-back's asks; GM_PARENTS_UNKNOWN where `unknown`. */
static bool parents_unknown;

static size_t capture_parents(void *arg, uint64_t node, uint64_t *parents, size_t cap) {
    (void)arg;
    if (parents_unknown)
        return GM_PARENTS_UNKNOWN;
    const fake_node_t *n = (const fake_node_t *)(uintptr_t)node;
    size_t count = n->dep_count < cap ? n->dep_count : cap;
    for (size_t i = 0; i < count; i++)
        parents[i] = key_of(n->deps[i]);
    return count;
}

/* Searched (as a capture searches) or not: the marker's ancestors, from its dependencies. */
static bool searched_markers;

static gm_ancestors_t *ancestors_of(gm_ancestors_t *a, const marker_add_t *add, fake_graph_t *g,
                                    unsigned index) {
    if (!searched_markers)
        return NULL;
    *a = (gm_ancestors_t){NULL, 0, {add->deps, g->nodes[index].dep_count, capture_parents, NULL}};
    return a;
}

/* Makes node `index` of g an alloc marker (an empty node to the driver) of `bytes`. */
static uint64_t make_alloc(sim_t *s, fake_graph_t *g, unsigned index, uint64_t bytes) {
    g->nodes[index].type = CU_GRAPH_NODE_TYPE_EMPTY;
    gm_alloc_params_t params = {.device = 0, .size = bytes};
    uint64_t va = 0, node = 0;
    marker_add_t add;
    gm_node_call_t call = marker_call(&add, g, index);
    gm_ancestors_t a;
    CHECK(gm_engine_alloc_marker(s->engine, key_of((const fake_node_t *)g), &params,
                                 ancestors_of(&a, &add, g, index), call, &va, &node) == GM_OK);
    CHECK(node == key_of(&g->nodes[index]));
    return va;
}

static void make_free(sim_t *s, fake_graph_t *g, unsigned index, uint64_t va) {
    g->nodes[index].type = CU_GRAPH_NODE_TYPE_EMPTY;
    uint64_t node = 0;
    marker_add_t add;
    gm_node_call_t call = marker_call(&add, g, index);
    gm_ancestors_t a;
    CHECK(gm_engine_free_marker(s->engine, key_of((const fake_node_t *)g), va,
                                ancestors_of(&a, &add, g, index), call, &node) == GM_OK);
}

/* A captured chain of kernels between allocations and frees (of sizes packed and not), listed as
 * `listing`: node i depends on node i - 1, and every third node is a kernel. */
static fake_graph_t *marked_chain(sim_t *s, unsigned count, listing_t listing, unsigned *markers) {
    fake_graph_t *g = chain(count, listing);
    uint64_t live[MAX_NODES];
    unsigned live_count = 0;
    *markers = 0;
    for (unsigned i = 0; i < count; i++) {
        if (i % 3 == 2)
            continue; /* a kernel */
        if (live_count > 0 && (i % 2 || live_count > 4))
            make_free(s, g, i, live[--live_count]);
        else
            live[live_count++] = make_alloc(s, g, i, i % 4 ? 4096 : sim_page() * (1 + i % 3));
        ++*markers;
    }
    return g;
}

/* gm_child_swap_check, a child-graph node's graph replaced (in a graph or an exec): by a plain
 * graph it goes to the driver; by a graph holding a marker, or from one, it is refused as the
 * driver refuses memory nodes there; and where either graph cannot be read (out of host memory),
 * it is refused with that error: the graph might hold markers whose addresses no plan of the exec
 * covers, another exec's bytes. */
static void test_child_swap_check(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    fake_graph_t *parent = graph_new(1, MADE), *plain = chain(2, MADE), *marked = chain(3, MADE),
                 *unreadable = chain(2, MADE), *marked_child = chain(3, MADE);
    make_alloc(&s, marked, 1, 4096);
    make_alloc(&s, marked_child, 1, 4096);
    unreadable->unreadable = true;
    parent->nodes[0].type = CU_GRAPH_NODE_TYPE_GRAPH;
    parent->nodes[0].child = chain(1, MADE);
    CUgraphNode node = (CUgraphNode)&parent->nodes[0];
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)plain), CUDA_SUCCESS);
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)marked), CUDA_ERROR_NOT_SUPPORTED);
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)unreadable),
                 CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ_INT(gm_child_swap_check(NULL, node, (CUgraph)unreadable), CUDA_SUCCESS);
    /* Not a graph to the driver: the driver answers the swap (with its own code for bad input). */
    fake_graph_t *invalid = chain(2, MADE);
    invalid->invalid = true;
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)invalid), CUDA_SUCCESS);
    graph_free(invalid);
    /* A graph one of whose nodes' type cannot be asked: it might be a child graph with markers. */
    fake_graph_t *untyped = chain(3, MADE), *named = chain(2, MADE);
    untyped->nodes[1].type = UNTYPED;
    named->nodes[0].type = CU_GRAPH_NODE_TYPE_GRAPH; /* types are asked in a graph naming one */
    named->nodes[0].child = untyped;
    registered_parent = (CUgraph)named;
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)named), CUDA_ERROR_OUT_OF_MEMORY);
    registered_parent = NULL;
    graph_free(named);
    /* The node's own graph: with a marker, then unreadable. */
    fake_graph_t *first_child = parent->nodes[0].child;
    parent->nodes[0].child = marked_child;
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)plain), CUDA_ERROR_NOT_SUPPORTED);
    parent->nodes[0].child = unreadable;
    CHECK_EQ_INT(gm_child_swap_check(s.engine, node, (CUgraph)plain), CUDA_ERROR_OUT_OF_MEMORY);
    /* In an exec, the driver's code for memory nodes is another; a read's error stays. */
    CHECK_EQ_INT(gm_child_swap_answer(CUDA_ERROR_NOT_SUPPORTED),
                 CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    CHECK_EQ_INT(gm_child_swap_answer(CUDA_ERROR_OUT_OF_MEMORY), CUDA_ERROR_OUT_OF_MEMORY);
    parent->nodes[0].child = first_child;
    sim_graph_destroy(s.engine, key_of((const fake_node_t *)marked));
    sim_graph_destroy(s.engine, key_of((const fake_node_t *)marked_child));
    graph_free(parent);
    graph_free(plain);
    graph_free(marked);
    graph_free(marked_child);
    graph_free(unreadable);
    CHECK(sim_fini(&s));
}

static void test_marker_dependencies_from_the_engine(void) {
    const listing_t listings[] = {MADE, REVERSED, SHUFFLED};
    for (unsigned l = 0; l < 3; l++) {
        sim_t s;
        REQUIRE(sim_init(&s, NULL));
        unsigned markers;
        fake_graph_t *g = marked_chain(&s, 600, listings[l], &markers);
        dependency_asks = 0;
        check_flat_with(s.engine, g);
        CHECK(markers == 400);
        /* In the order they were made, or its reverse (the first listed then a kernel): the
         * kernels' only. Shuffled, the markers matched by chance are not asked about; the edges
         * are right either way. */
        if (listings[l] != SHUFFLED)
            CHECK(dependency_asks == g->count - markers);
        /* An edge added to a marker afterwards: the driver is asked again, and the edge read. */
        gm_engine_graph_edges_edited(s.engine, key_of((const fake_node_t *)g));
        depend(g, 301, 7);
        dependency_asks = 0;
        check_flat_with(s.engine, g);
        CHECK(dependency_asks == g->count);
        sim_graph_destroy(s.engine, key_of((const fake_node_t *)g));
        graph_free(g);
        CHECK(sim_fini(&s));
    }
}

/* Markers made as a capture makes them, searching from their dependencies: a kernel that is a
 * marker's one dependency (its lead) has its own dependencies kept with the marker (engine.h,
 * gm_search_t), read at capture while the driver's node is warm, so the read-back asks the driver
 * only about the kernels that lead no marker (the chain's last node). The edges are exact in every
 * listing. Not kept: parents the driver could not tell (GM_PARENTS_UNKNOWN), and any after an edge
 * was added. */
static void test_lead_dependencies_from_the_engine(void) {
    const listing_t listings[] = {MADE, REVERSED, SHUFFLED};
    searched_markers = true;
    for (int unknown = 0; unknown < 2; unknown++) {
        for (unsigned l = 0; l < 3; l++) {
            sim_t s;
            REQUIRE(sim_init(&s, NULL));
            parents_unknown = unknown;
            unsigned markers;
            fake_graph_t *g = marked_chain(&s, 600, listings[l], &markers);
            parents_unknown = false;
            dependency_asks = 0;
            check_flat_with(s.engine, g);
            unsigned kernels = g->count - markers, leading = kernels - 1; /* 599 leads none */
            if (listings[l] != SHUFFLED)
                CHECK_EQ_U64(dependency_asks, unknown ? kernels : kernels - leading);
            gm_engine_graph_edges_edited(s.engine, key_of((const fake_node_t *)g));
            dependency_asks = 0;
            check_flat_with(s.engine, g);
            CHECK_EQ_U64(dependency_asks, g->count);
            sim_graph_destroy(s.engine, key_of((const fake_node_t *)g));
            graph_free(g);
            CHECK(sim_fini(&s));
        }
    }
    /* A lead of more dependencies than the engine keeps: asked. 0-2 kernels without any, 3 after
     * all three, 4 alloc after 3, 5 kernel after 4, 6 free after 5. */
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    fake_graph_t *g = graph_new(7, MADE);
    for (unsigned d = 0; d < 3; d++)
        depend(g, 3, d);
    for (unsigned i = 4; i < 7; i++)
        depend(g, i, i - 1);
    make_free(&s, g, 6, make_alloc(&s, g, 4, 4096));
    dependency_asks = 0;
    check_flat_with(s.engine, g);
    CHECK_EQ_U64(dependency_asks, 4); /* 0, 1, 2 and 3; not 5 */
    sim_graph_destroy(s.engine, key_of((const fake_node_t *)g));
    graph_free(g);
    CHECK(sim_fini(&s));
    searched_markers = false;
}

/* Random DAGs whose nodes are markers or kernels at random, made as a capture makes them (searched,
 * so kernels that lead a marker keep their dependencies), in every listing: the edges read back are
 * exactly the graph's, and still after edges were added to random nodes (the graph marked). A wrong
 * edge there is a wrong order for the planner. */
static void test_random_dags_with_leads(void) {
    const listing_t listings[] = {MADE, REVERSED, SHUFFLED};
    searched_markers = true;
    for (unsigned round = 0; round < 90; round++) {
        sim_t s;
        REQUIRE(sim_init(&s, NULL));
        unsigned count = 2 + (unsigned)rand() % 300, most = (unsigned)rand() % 4;
        fake_graph_t *g = random_dag(count, most, listings[round % 3]);
        uint64_t live[MAX_NODES];
        unsigned live_count = 0;
        parents_unknown = round % 10 == 9;
        for (unsigned i = 0; i < count; i++) {
            if (rand() % 3 == 0)
                continue; /* a kernel */
            if (live_count > 0 && rand() % 2)
                make_free(&s, g, i, live[--live_count]);
            else
                live[live_count++] = make_alloc(&s, g, i, rand() % 2 ? 4096 : sim_page());
        }
        parents_unknown = false;
        check_flat_with(s.engine, g);
        for (unsigned k = 0; k < 3 && count > 2; k++) {
            unsigned to = 1 + (unsigned)rand() % (count - 1);
            unsigned on = (unsigned)rand() % to;
            bool seen = false;
            for (unsigned d = 0; d < g->nodes[to].dep_count; d++)
                seen |= g->nodes[to].deps[d] == &g->nodes[on];
            if (!seen && g->nodes[to].dep_count < MAX_DEPS)
                depend(g, to, on);
        }
        gm_engine_graph_edges_edited(s.engine, key_of((const fake_node_t *)g));
        check_flat_with(s.engine, g);
        sim_graph_destroy(s.engine, key_of((const fake_node_t *)g));
        graph_free(g);
        CHECK(sim_fini(&s));
    }
    searched_markers = false;
}

/* Markers after more dependencies than the engine keeps, made under GRAPHMEM_LIFT_RESTRICTIONS
 * (where nodes and edges may go without their graph being marked), or moved into a parent graph
 * (whose child graph can be edited through a handle of its own): their dependencies are asked of
 * the driver. */
typedef enum asked_case { MANY_DEPS, LIFTED, MOVED, ASKED_CASES } asked_case_t;

static void test_marker_dependencies_asked(void) {
    for (asked_case_t c = 0; c < ASKED_CASES; c++) {
        sim_t s;
        REQUIRE(c == LIFTED ? sim_init_lifted(&s) : sim_init(&s, NULL));
        fake_graph_t *g = graph_new(8, SHUFFLED);
        for (unsigned i = 3; i < 8; i++)
            for (unsigned d = 0; d < (c == MANY_DEPS ? GM_KNOWN_DEPS + 1 : 1); d++)
                depend(g, i, i - 1 - d);
        uint64_t va = make_alloc(&s, g, 3, 4096);
        make_free(&s, g, 7, va);
        uint64_t parent = 0x1000;
        if (c == MOVED)
            gm_engine_graph_moved(s.engine, key_of((const fake_node_t *)g), parent, GM_NO_CALL);
        dependency_asks = 0;
        check_flat_with(s.engine, g);
        CHECK(dependency_asks == g->count);
        sim_graph_destroy(s.engine, c == MOVED ? parent : key_of((const fake_node_t *)g));
        graph_free(g);
        CHECK(sim_fini(&s));
    }
}

/* Read-backs on several threads at once: the arrays kept between read-backs (topology.c) are
 * taken and given back under a lock, one set for the process, so each read-back has arrays of
 * its own: every thread's reads of its own graph (sizes apart, so a set taken from another
 * thread's read is too small or too large) come out exact. Under ThreadSanitizer too. */
enum { READ_THREADS = 4, READS = 150 };

static void *read_repeatedly(void *arg) {
    fake_graph_t *g = arg;
    for (int i = 0; i < READS; i++)
        check_flat(g);
    return NULL;
}

static void test_concurrent_reads(void) {
    fake_graph_t *graphs[READ_THREADS];
    pthread_t threads[READ_THREADS];
    for (int t = 0; t < READ_THREADS; t++)
        graphs[t] = t % 2 ? random_dag(60 + 300 * (unsigned)t, 6, SHUFFLED)
                          : chain(40 + 500 * (unsigned)t, REVERSED);
    for (int t = 0; t < READ_THREADS; t++)
        REQUIRE(pthread_create(&threads[t], NULL, read_repeatedly, graphs[t]) == 0);
    for (int t = 0; t < READ_THREADS; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < READ_THREADS; t++)
        graph_free(graphs[t]);
}

int main(void) {
    srand(1234);
    install_driver();
    RUN_TEST(test_chains);
    RUN_TEST(test_random_dags);
    RUN_TEST(test_many_dependencies);
    RUN_TEST(test_child_graph);
    RUN_TEST(test_child_swap_check);
    RUN_TEST(test_types_asked_only_where_needed);
    RUN_TEST(test_listing_remembers_counts);
    RUN_TEST(test_marker_dependencies_from_the_engine);
    RUN_TEST(test_lead_dependencies_from_the_engine);
    RUN_TEST(test_random_dags_with_leads);
    RUN_TEST(test_marker_dependencies_asked);
    RUN_TEST(test_concurrent_reads);
    return gm_check_summary();
}

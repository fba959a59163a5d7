/* The engine's index of marker nodes: a capture appends each new marker's node to a pending list
 * and every reader of the index moves them into the map first (engine_graph.c, node index). The
 * index must answer as the map alone did: a node handle the driver gives out again after its
 * graph was destroyed names the new marker, never the old one, and stays when the old graph ends
 * only later; a graph destroyed while its nodes
 * are pending leaves none of them behind and takes none of another graph's with it; searches that
 * look past the last few pending nodes (graphs captured in turn) still find their markers; and a
 * marker destroyed while pending is gone. Under AddressSanitizer a pending entry that outlived its
 * marker is a use after free. */
#include "check.h"
#include "engine_sim.h"

typedef struct handles {
    uint64_t next; /* the handle the next node gets */
} handles_t;

static bool add_node(void *arg, uint64_t *node_out) {
    handles_t *h = arg;
    *node_out = h->next++;
    return true;
}

static size_t no_parents(void *arg, uint64_t node, uint64_t *parents, size_t cap) {
    (void)arg, (void)node, (void)parents, (void)cap;
    return 0;
}

/* A packed pair in `graph` after the marker `after` (0: none): the allocation's address, its two
 * nodes through *alloc and *freed; 0 when the engine refused. */
static uint64_t pair(gm_engine_t *e, uint64_t graph, handles_t *h, uint64_t after, uint64_t *alloc,
                     uint64_t *freed) {
    gm_alloc_params_t params = {.device = 0, .size = 4096};
    gm_node_call_t add = {.fn = add_node, .arg = h};
    uint64_t va = 0;
    gm_ancestors_t before = {.search = {&after, after ? 1 : 0, no_parents, NULL}};
    if (gm_engine_alloc_marker(e, graph, &params, &before, add, &va, alloc) != GM_OK)
        return 0;
    gm_ancestors_t after_alloc = {.search = {alloc, 1, no_parents, NULL}};
    if (gm_engine_free_marker(e, graph, va, &after_alloc, add, freed) != GM_OK)
        return 0;
    return va;
}

/* The handles of a destroyed graph's nodes are given out again to another graph's markers. */
static void test_reused_handles_name_the_new_markers(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    handles_t h = {0x1000};
    uint64_t a1, f1, a2, f2;
    uint64_t va_old = pair(s.engine, 0xA, &h, 0, &a1, &f1);
    REQUIRE(va_old);
    uint64_t graph = 0xA;
    REQUIRE(gm_engine_graphs_destroy(s.engine, &graph, 1, GM_NO_CALL) == GM_OK);
    CHECK_EQ_U64(gm_engine_marker(s.engine, a1, NULL), GM_MARKER_NONE);
    /* Graph 0xB: a plain allocation first, so its pair's bytes differ from graph 0xA's. */
    gm_alloc_params_t big = {.device = 0, .size = 8192};
    gm_node_call_t add = {.fn = add_node, .arg = &h};
    uint64_t va_big = 0, big_node = 0;
    gm_ancestors_t none = {0};
    REQUIRE(gm_engine_alloc_marker(s.engine, 0xB, &big, &none, add, &va_big, &big_node) == GM_OK);
    h.next = 0x1000; /* the driver hands out graph 0xA's handles again */
    uint64_t va_new = pair(s.engine, 0xB, &h, big_node, &a2, &f2);
    REQUIRE(va_new);
    CHECK_EQ_U64(a2, a1);
    gm_marker_info_t info;
    CHECK_EQ_U64(gm_engine_marker(s.engine, a2, &info), GM_MARKER_ALLOC);
    CHECK_EQ_U64(info.va, va_new);
    CHECK_EQ_U64(gm_engine_marker(s.engine, f2, &info), GM_MARKER_FREE);
    CHECK_EQ_U64(info.va, va_new);
    /* A pair after it finds the reused free node as its ancestor: the bytes are proven free. */
    uint64_t a3, f3;
    CHECK_EQ_U64(pair(s.engine, 0xB, &h, f2, &a3, &f3), va_new);
    uint64_t graphs[] = {0xB};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

/* A graph whose nodes' handles went to another graph's markers before it was destroyed (a context
 * reset took it without a destroy graphmem saw; it is forgotten when its own handle comes back):
 * its end leaves the newer markers in the index. */
static void test_lost_graph_leaves_the_reused_handles(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    handles_t h = {0x1000};
    uint64_t a1, f1, a2, f2;
    REQUIRE(pair(s.engine, 0xA, &h, 0, &a1, &f1));
    CHECK_EQ_U64(gm_engine_marker(s.engine, a1, NULL), GM_MARKER_ALLOC); /* settled */
    h.next = 0x1000;
    uint64_t va_new = pair(s.engine, 0xB, &h, 0, &a2, &f2);
    REQUIRE(va_new);
    CHECK_EQ_U64(a2, a1);
    gm_marker_info_t info;
    CHECK_EQ_U64(gm_engine_marker(s.engine, a2, &info), GM_MARKER_ALLOC); /* settled */
    uint64_t graph = 0xA;
    REQUIRE(gm_engine_graphs_destroy(s.engine, &graph, 1, GM_NO_CALL) == GM_OK);
    CHECK_EQ_U64(gm_engine_marker(s.engine, a2, &info), GM_MARKER_ALLOC);
    CHECK_EQ_U64(info.va, va_new);
    CHECK_EQ_U64(gm_engine_marker(s.engine, f2, &info), GM_MARKER_FREE);
    CHECK_EQ_U64(info.va, va_new);
    uint64_t graphs[] = {0xB};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

/* Five graphs captured in turn: between two markers of one graph the other four made eight, so
 * every search looks past the last few pending nodes into the map. One graph is destroyed in the
 * middle; the others go on, each pair reusing its graph's first bytes. */
static void test_graphs_in_turn(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    enum { PAIRS = 40, GRAPHS = 5 };
    handles_t h = {0x4000};
    uint64_t last[GRAPHS] = {0}, first_va[GRAPHS] = {0}, nodes_gone[2 * PAIRS];
    uint32_t gone = 0, reused = 0;
    for (int i = 0; i < PAIRS; i++) {
        for (int g = 0; g < GRAPHS; g++) {
            if (g == 0 && i >= PAIRS / 2)
                continue; /* graph 0xC0 is destroyed by then */
            uint64_t alloc, freed;
            uint64_t va = pair(s.engine, 0xC0 + (uint64_t)g, &h, last[g], &alloc, &freed);
            REQUIRE(va);
            if (i == 0)
                first_va[g] = va;
            reused += va == first_va[g];
            last[g] = freed;
            if (g == 0) {
                nodes_gone[gone++] = alloc;
                nodes_gone[gone++] = freed;
            }
        }
        if (i == PAIRS / 2 - 1) {
            uint64_t graph = 0xC0;
            REQUIRE(gm_engine_graphs_destroy(s.engine, &graph, 1, GM_NO_CALL) == GM_OK);
        }
    }
    CHECK_EQ_U64(reused, (GRAPHS - 1) * PAIRS + PAIRS / 2);
    uint32_t left = 0;
    for (uint32_t k = 0; k < gone; k++)
        left += gm_engine_marker(s.engine, nodes_gone[k], NULL) != GM_MARKER_NONE;
    CHECK_EQ_U64(left, 0);
    for (int g = 1; g < GRAPHS; g++)
        CHECK_EQ_U64(gm_engine_marker(s.engine, last[g], NULL), GM_MARKER_FREE);
    uint64_t graphs[] = {0xC1, 0xC2, 0xC3, 0xC4};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 4));
}

/* A graph destroyed while its nodes and another graph's wait in the pending list (never read
 * since they were made): with few of the other's (its pending ones leave the list) and with
 * many (the list is settled first). Either way the other graph's markers are found afterwards
 * and its chain goes on reusing its bytes, and the destroyed graph's are gone. */
static void destroy_while_pending(uint32_t other_pairs) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    handles_t h = {0x6000};
    uint64_t last = 0, first_va = 0, alloc, freed, mine[20];
    uint32_t reused = 0;
    for (uint32_t i = 0; i < other_pairs; i++) {
        uint64_t va = pair(s.engine, 0xE0, &h, last, &alloc, &freed);
        REQUIRE(va);
        first_va = i ? first_va : va;
        reused += va == first_va;
        last = freed;
    }
    uint64_t my_last = 0;
    for (int i = 0; i < 10; i++) {
        REQUIRE(pair(s.engine, 0xE1, &h, my_last, &mine[2 * i], &mine[2 * i + 1]));
        my_last = mine[2 * i + 1];
    }
    uint64_t graph = 0xE1;
    REQUIRE(gm_engine_graphs_destroy(s.engine, &graph, 1, GM_NO_CALL) == GM_OK);
    uint32_t left = 0;
    for (int k = 0; k < 20; k++)
        left += gm_engine_marker(s.engine, mine[k], NULL) != GM_MARKER_NONE;
    CHECK_EQ_U64(left, 0);
    CHECK_EQ_U64(gm_engine_marker(s.engine, last, NULL), GM_MARKER_FREE);
    for (int i = 0; i < 5; i++) {
        uint64_t va = pair(s.engine, 0xE0, &h, last, &alloc, &freed);
        REQUIRE(va);
        reused += va == first_va;
        last = freed;
    }
    CHECK_EQ_U64(reused, other_pairs + 5);
    uint64_t graphs[] = {0xE0};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

static void test_destroy_while_few_others_pending(void) {
    destroy_while_pending(3);
}

static void test_destroy_while_many_others_pending(void) {
    destroy_while_pending(200);
}

/* GRAPHMEM_LIFT_RESTRICTIONS: a marker destroyed while its node is pending is gone. */
static void test_marker_destroyed_while_pending(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    handles_t h = {0x8000};
    uint64_t alloc, freed;
    REQUIRE(pair(s.engine, 0xD, &h, 0, &alloc, &freed));
    CHECK(gm_engine_marker_destroy(s.engine, freed, GM_NO_CALL) == GM_OK);
    CHECK_EQ_U64(gm_engine_marker(s.engine, freed, NULL), GM_MARKER_NONE);
    CHECK_EQ_U64(gm_engine_marker(s.engine, alloc, NULL), GM_MARKER_ALLOC);
    CHECK(gm_engine_marker_destroy(s.engine, alloc, GM_NO_CALL) == GM_OK);
    CHECK_EQ_U64(gm_engine_marker(s.engine, alloc, NULL), GM_MARKER_NONE);
    CHECK(gm_engine_marker_destroy(s.engine, alloc, GM_NO_CALL) == GM_ERR_INVALID_VALUE);
    uint64_t graphs[] = {0xD};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

int main(void) {
    RUN_TEST(test_reused_handles_name_the_new_markers);
    RUN_TEST(test_lost_graph_leaves_the_reused_handles);
    RUN_TEST(test_graphs_in_turn);
    RUN_TEST(test_destroy_while_few_others_pending);
    RUN_TEST(test_destroy_while_many_others_pending);
    RUN_TEST(test_marker_destroyed_while_pending);
    return gm_check_summary();
}

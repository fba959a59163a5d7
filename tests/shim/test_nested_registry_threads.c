/* The registry of nested graphs (shim/bridge/nested.c) under threads: writers record child graphs
 * and grandchildren (as the hooks do for child nodes and for the copies inside clones), note the
 * grandchildren as touching graph memory and destroy the node or the graph that owns them, each
 * on graphs of its own, while readers ask about graphs recorded before the threads started. A
 * writer's own graphs read as recorded until their destroy, and as gone after it, descendants
 * included; the readers' graphs read as recorded throughout (entries of others, removed by
 * swapping the last one into their place, never hide one). Also run under ThreadSanitizer. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "nested.h"

#define WRITERS 3
#define READERS 3
#define ROUNDS 20000

static CUgraph graph_of(uint64_t key) {
    return (CUgraph)(uintptr_t)key;
}

static CUgraphNode node_of(uint64_t key) {
    return (CUgraphNode)(uintptr_t)key;
}

static atomic_int writers_left = WRITERS;

/* Stable graphs: a parent with a child, and a chain parent -> child -> grandchild noted as
 * touching (so the parent touches through it). */
enum {
    STABLE_PARENT = 0x10,
    STABLE_CHILD = 0x11,
    CHAIN = 0x20,
    CHAIN_CHILD = 0x21,
    CHAIN_GRANDCHILD = 0x22
};

static void record_child(uint64_t parent, uint64_t node, uint64_t child) {
    CUgraph g = graph_of(child);
    gm_nested_record(graph_of(parent), node_of(node), &g, 1, GM_NESTED_CHILD);
}

static void *writer(void *arg) {
    uint64_t base = (uint64_t)(uintptr_t)arg;
    for (uint32_t i = 0; i < ROUNDS; i++) {
        uint64_t p = base + (i % 16) * 0x100, c = p + 1, gc = p + 2, n = p + 3, n2 = p + 4;
        record_child(p, n, c);
        record_child(c, n2, gc);
        gm_touch_note(graph_of(gc));
        CHECK(gm_nested_is_child(graph_of(c)) && gm_nested_is_child(graph_of(gc)));
        CHECK(gm_touches(graph_of(p)) && gm_nested_names(graph_of(p)));
        if (i % 2)
            CHECK_EQ_INT(gm_node_destroy_nested(NULL, node_of(n), GM_NO_CALL), GM_OK);
        else
            CHECK_EQ_INT(gm_graph_destroy_nested(NULL, graph_of(p), GM_NO_CALL), GM_OK);
        CHECK(!gm_nested_is_child(graph_of(c)) && !gm_nested_is_child(graph_of(gc)));
        CHECK(!gm_touches(graph_of(p)) && !gm_nested_names(graph_of(p)));
    }
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    while (atomic_load(&writers_left) > 0) {
        CHECK(gm_nested_names(graph_of(STABLE_PARENT)));
        CHECK(gm_nested_is_child(graph_of(STABLE_CHILD)));
        CHECK(!gm_touches(graph_of(STABLE_PARENT)));
        CHECK(gm_touches(graph_of(CHAIN)) && gm_nested_is_child(graph_of(CHAIN_GRANDCHILD)));
    }
    return NULL;
}

static void test_churn_beside_stable_entries(void) {
    record_child(STABLE_PARENT, 0x1010, STABLE_CHILD);
    record_child(CHAIN, 0x2010, CHAIN_CHILD);
    record_child(CHAIN_CHILD, 0x2110, CHAIN_GRANDCHILD);
    gm_touch_note(graph_of(CHAIN_GRANDCHILD));
    pthread_t threads[WRITERS + READERS];
    for (long t = 0; t < WRITERS; t++)
        REQUIRE(pthread_create(&threads[t], NULL, writer,
                               (void *)(uintptr_t)(0x1000000 * (t + 1))) == 0);
    for (long t = 0; t < READERS; t++)
        REQUIRE(pthread_create(&threads[WRITERS + t], NULL, reader, NULL) == 0);
    for (int t = 0; t < WRITERS + READERS; t++)
        pthread_join(threads[t], NULL);
    CHECK_EQ_INT(gm_graph_destroy_nested(NULL, graph_of(CHAIN), GM_NO_CALL), GM_OK);
    CHECK(!gm_touches(graph_of(CHAIN)) && !gm_nested_is_child(graph_of(CHAIN_GRANDCHILD)));
    CHECK(gm_nested_is_child(graph_of(STABLE_CHILD)));
}

int main(void) {
    RUN_TEST(test_churn_beside_stable_entries);
    return gm_check_summary();
}

/* gm_engine_marked_graphs_any under threads (also under ThreadSanitizer and AddressSanitizer): the
 * shim's cuGraphDestroyNode asks it which graph holding markers holds a node, reading each graph
 * through the driver, while other threads destroy their graphs. Here each graph is a heap object
 * that the destroy's driver call wipes and frees; a question asked of a graph the engine let go
 * meanwhile would read freed memory (a wrong word here, a use after free under AddressSanitizer,
 * a race under ThreadSanitizer). Destroyers keep eight graphs of a marker pair each, destroying
 * the oldest as they make a new one; readers ask of every graph, reading its object. With the
 * graphs listed under the lock and asked of after it (the entry this replaced), words read wrong
 * in two runs of three (13 and 16 of them). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "engine_sim.h"
#include "fake_graphs.h"

#define DESTROYERS 2
#define READERS 2
#define ROUNDS 20000
#define RING 8

static gm_engine_t *E;
static atomic_int destroyers_left, readers_asking;
static fake_graph_reads_t reads;

static bool driver_destroy(void *arg) {
    fake_graph_wipe(arg);
    return true;
}

static fake_graph_t *make_graph(gm_node_call_t add) {
    gm_alloc_params_t params = {.device = 0, .size = 4096};
    fake_graph_t *g = fake_graph_new();
    if (g == NULL)
        return NULL;
    uint64_t key = fake_graph_key(g), va = 0, node = 0;
    if (gm_engine_alloc_marker(E, key, &params, NULL, add, &va, &node) == GM_OK)
        (void)gm_engine_free_marker(E, key, va, NULL, add, &node);
    return g;
}

static void destroy_graph(fake_graph_t *g) {
    uint64_t key = fake_graph_key(g);
    if (gm_engine_graphs_destroy(E, &key, 1, (gm_driver_call_t){driver_destroy, g}) != GM_OK)
        driver_destroy(g);
}

/* Keeps RING graphs alive, destroying the oldest as it makes a new one. */
static void *destroyer(void *arg) {
    atomic_ullong *next_node = arg;
    gm_node_call_t add = {.fn = fake_node_add, .arg = next_node};
    fake_graph_t *ring[RING] = {NULL};
    while (atomic_load(&readers_asking) < READERS)
        sched_yield();
    for (int round = 0; round < ROUNDS; round++) {
        if (ring[round % RING] != NULL)
            destroy_graph(ring[round % RING]);
        ring[round % RING] = make_graph(add);
    }
    for (int i = 0; i < RING; i++)
        if (ring[i] != NULL)
            destroy_graph(ring[i]);
    atomic_fetch_sub(&destroyers_left, 1);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_fetch_add(&readers_asking, 1);
    while (atomic_load(&destroyers_left) > 0)
        (void)gm_engine_marked_graphs_any(E, fake_graph_read, &reads);
    return NULL;
}

static void test_questions_beside_destroys(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    E = s.engine;
    atomic_store(&destroyers_left, DESTROYERS);
    static atomic_ullong next_node[DESTROYERS];
    pthread_t d[DESTROYERS], r[READERS];
    for (int i = 0; i < DESTROYERS; i++) {
        atomic_store(&next_node[i], 0x1000000ull * (uint64_t)(i + 1));
        REQUIRE(pthread_create(&d[i], NULL, destroyer, &next_node[i]) == 0);
    }
    for (int i = 0; i < READERS; i++)
        REQUIRE(pthread_create(&r[i], NULL, reader, NULL) == 0);
    for (int i = 0; i < DESTROYERS; i++)
        pthread_join(d[i], NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    CHECK_EQ_INT(atomic_load(&reads.wrong_words), 0);
    CHECK(atomic_load(&reads.questions) > 0);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_questions_beside_destroys);
    return gm_check_summary();
}

/* Markers destroyed one by one (GRAPHMEM_LIFT_RESTRICTIONS) on several threads at once, while
 * another thread trims and reads attributes. The "driver" gives a destroyed node's handle back
 * inside the destroy call, as the real one may, and the other threads take recycled handles first
 * for their new markers: gm_engine_marker_destroy ends the marker in the same critical section as
 * that call, so a new marker attached under a recycled handle is always the one found, and a
 * destroyed one is never found again. Also run under ThreadSanitizer (scripts/test). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "check.h"
#include "engine_sim.h"

#define THREADS 4
#define ROUNDS 400
#define KiB (1ull << 10)
#define MiB (1ull << 20)

typedef struct handles {
    pthread_mutex_t lock;
    uint64_t free[4 * THREADS];
    uint32_t count;
    atomic_uint_fast64_t next;
} handles_t;

static sim_t sim;
static handles_t handles;
static atomic_uint_fast64_t next_graph, wrong, destroyed;
static atomic_bool stop;

/* A node handle: a recycled one when there is one, as a driver reuses freed handles. */
static uint64_t take_handle(void) {
    pthread_mutex_lock(&handles.lock);
    uint64_t h = handles.count ? handles.free[--handles.count] : 0;
    pthread_mutex_unlock(&handles.lock);
    return h ? h : atomic_fetch_add(&handles.next, 1);
}

static void give_handle(uint64_t h) {
    pthread_mutex_lock(&handles.lock);
    if (handles.count < sizeof handles.free / sizeof handles.free[0])
        handles.free[handles.count++] = h;
    pthread_mutex_unlock(&handles.lock);
}

/* The driver's cuGraphDestroyNode: the handle is free for reuse before the call returns. */
static bool destroy_node(void *arg) {
    give_handle(*(uint64_t *)arg);
    atomic_fetch_add(&destroyed, 1);
    return true;
}

/* The driver's node add inside the engine's step: takes a handle, recycled ones first. */
static bool add_node(void *arg, uint64_t *node_out) {
    (void)arg;
    *node_out = take_handle();
    return true;
}

static void expect_marker(uint64_t node, gm_marker_kind_t kind, uint64_t va) {
    gm_marker_info_t info = {0};
    gm_marker_kind_t got = gm_engine_marker(sim.engine, node, &info);
    if (got != kind || (kind != GM_MARKER_NONE && info.va != va))
        atomic_fetch_add(&wrong, 1);
}

static void *builder(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg * 7919 + 1;
    gm_engine_t *e = sim.engine;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t graph = atomic_fetch_add(&next_graph, 1), va = 0;
        gm_alloc_params_t params = {.device = 0, .size = gm_rand(&rng) % 2 ? 8 * KiB : 1 * MiB};
        uint64_t a = 0, f = 0;
        gm_node_call_t add = {.fn = add_node, .arg = NULL};
        if (gm_engine_alloc_marker(e, graph, &params, NULL, add, &va, &a) != GM_OK) {
            atomic_fetch_add(&wrong, 1);
            continue;
        }
        expect_marker(a, GM_MARKER_ALLOC, va);
        if (gm_rand(&rng) % 4 && gm_engine_free_marker(e, graph, va, NULL, add, &f) == GM_OK)
            expect_marker(f, GM_MARKER_FREE, va);
        /* The free node first, or the alloc node, which takes its free with it. */
        uint64_t victim = f && gm_rand(&rng) % 2 ? f : a;
        uint64_t keep = victim == f ? a : 0;
        if (gm_engine_marker_destroy(e, victim, (gm_driver_call_t){destroy_node, &victim}) != GM_OK)
            atomic_fetch_add(&wrong, 1);
        if (keep)
            expect_marker(keep, GM_MARKER_ALLOC, va);
        if (victim == a && f) {
            /* Its free ended with it; that node stays the driver's, an empty node: recycle it
             * as the program's own destruction of it would. */
            expect_marker(f, GM_MARKER_NONE, 0);
            give_handle(f);
        }
        if (keep) {
            uint64_t again = keep;
            if (gm_engine_marker_destroy(e, keep, (gm_driver_call_t){destroy_node, &again}) !=
                GM_OK)
                atomic_fetch_add(&wrong, 1);
        }
        uint64_t g = graph;
        gm_engine_graphs_destroy(e, &g, 1, GM_NO_CALL);
    }
    return NULL;
}

static void *trimmer(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        gm_engine_trim(sim.engine, 0);
        uint64_t v;
        gm_engine_attr_get(sim.engine, 0, GM_ATTR_RESERVED_CURRENT, &v);
    }
    return NULL;
}

static void test_destroy_markers_on_threads(void) {
    gm_engine_config_t c = sim_default_config();
    c.lift_restrictions = true;
    REQUIRE(sim_init(&sim, &c));
    pthread_mutex_init(&handles.lock, NULL);
    atomic_store(&handles.next, 0x10000);
    atomic_store(&next_graph, 0x100);
    pthread_t ids[THREADS], trim_id;
    pthread_create(&trim_id, NULL, trimmer, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&ids[i], NULL, builder, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(ids[i], NULL);
    atomic_store(&stop, true);
    pthread_join(trim_id, NULL);
    printf("%llu marker nodes destroyed, %llu handles made\n",
           (unsigned long long)atomic_load(&destroyed),
           (unsigned long long)(atomic_load(&handles.next) - 0x10000));
    CHECK_EQ_U64(atomic_load(&wrong), 0);
    CHECK(atomic_load(&destroyed) >= THREADS * ROUNDS);
    CHECK(!gm_engine_graph_has_markers(sim.engine, 0x100));
    CHECK(sim_fini(&sim));
    pthread_mutex_destroy(&handles.lock);
}

int main(void) {
    RUN_TEST(test_destroy_markers_on_threads);
    return gm_check_summary();
}

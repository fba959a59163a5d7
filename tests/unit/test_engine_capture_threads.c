/* Captures on several threads at once through the marker API as the shim makes them: each
 * marker's ancestor search handed to the engine (gm_search_t) and run inside the marker's critical
 * section, through a plain node (a kernel) whose parent the search asks for. Each thread captures
 * chains of packed pairs into graphs whose handles it gives out again after destroying them (the
 * driver reuses a destroyed graph's handle), while the others capture and destroy theirs: the
 * engine's memo of the graph it found last, its spare records and markers, and the search all run
 * between other threads' destroys. Every pair of a chain must reuse the first pair's bytes (the
 * search proved each free before the next allocation), and no two threads' graphs alive at once
 * may hold the same address. Also run under ThreadSanitizer; under AddressSanitizer a graph found
 * through a stale memo would be a use after free. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "engine_sim.h"

#define THREADS 4
#define ROUNDS 150
#define PAIRS 24
#define KEYS_PER_THREAD 3

static gm_engine_t *E;
/* The address of each thread's graph while it is alive (0 between a destroy and the next). */
static _Atomic uint64_t alive_va[THREADS];

typedef struct worker {
    int id;
    uint64_t next_node;
    /* The plain node of the chain and its one parent, for the search. */
    uint64_t kernel, kernel_parent;
    bool failed;
} worker_t;

static bool add_node(void *arg, uint64_t *node_out) {
    worker_t *w = arg;
    *node_out = w->next_node++;
    return true;
}

static size_t parents(void *arg, uint64_t node, uint64_t *out, size_t cap) {
    const worker_t *w = arg;
    if (node != w->kernel || cap == 0)
        return 0;
    out[0] = w->kernel_parent;
    return 1;
}

/* One chain in `graph`; false when the engine refused a marker or a pair did not reuse bytes. */
static bool capture_chain(worker_t *w, uint64_t graph) {
    gm_alloc_params_t params = {.device = 0, .size = 4096};
    gm_node_call_t add = {.fn = add_node, .arg = w};
    uint64_t last = 0, first_va = 0;
    for (int i = 0; i < PAIRS; i++) {
        uint64_t va = 0, alloc = 0, freed = 0;
        gm_ancestors_t before = {.search = {&last, last ? 1 : 0, parents, w}};
        if (gm_engine_alloc_marker(E, graph, &params, &before, add, &va, &alloc) != GM_OK)
            return false;
        if (i == 0) {
            first_va = va;
            for (int t = 0; t < THREADS; t++)
                if (t != w->id && atomic_load(&alive_va[t]) == va)
                    return false; /* another thread's live graph holds these bytes */
            atomic_store(&alive_va[w->id], va);
        } else if (va != first_va) {
            return false; /* the free before it was not proven */
        }
        /* A kernel after the allocation: the free's search passes through it. */
        w->kernel = w->next_node++;
        w->kernel_parent = alloc;
        gm_ancestors_t after = {.search = {&w->kernel, 1, parents, w}};
        if (gm_engine_free_marker(E, graph, va, &after, add, &freed) != GM_OK)
            return false;
        last = freed;
    }
    return true;
}

static void *work(void *arg) {
    worker_t *w = arg;
    uint64_t base = 0x10000 * (uint64_t)(w->id + 1);
    for (int round = 0; round < ROUNDS && !w->failed; round++) {
        uint64_t graph = base + (uint64_t)(round % KEYS_PER_THREAD);
        if (!capture_chain(w, graph))
            w->failed = true;
        atomic_store(&alive_va[w->id], 0);
        gm_engine_graphs_destroy(E, &graph, 1, GM_NO_CALL);
    }
    return NULL;
}

static void test_captures_on_threads(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    E = s.engine;
    worker_t workers[THREADS];
    pthread_t ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (worker_t){.id = i, .next_node = 0x1000000ull * (uint64_t)(i + 1)};
        REQUIRE(pthread_create(&ids[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        CHECK(!workers[i].failed);
    }
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_captures_on_threads);
    return gm_check_summary();
}

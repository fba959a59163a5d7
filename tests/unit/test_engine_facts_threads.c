/* Threads capture into graphs of their own through the engine's marker API, handing each marker
 * node's dependencies over (gm_node_call_t.deps), and read their graph's node facts back as the
 * read-back does (gm_engine_node_facts), in the order the nodes were made and in its reverse,
 * while the other threads grow the engine's maps: every marker is found with its kind and its
 * dependencies, a node that is no marker of the graph with nothing, and after an edge is added to
 * the graph (gm_engine_graph_edges_edited) no dependency is taken as known. Also run under
 * ThreadSanitizer. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "engine_sim.h"

#define THREADS 4
#define MARKERS 1500

static gm_engine_t *E;

typedef struct made {
    uint64_t node;
    gm_marker_kind_t kind; /* GM_MARKER_NONE: a kernel node between markers */
    uint8_t dep_count;
    uint64_t deps[GM_KNOWN_DEPS];
} made_t;

typedef struct worker {
    int id;
    uint64_t rng;
    made_t made[2 * MARKERS];
    uint32_t count;
    bool ok;
} worker_t;

typedef struct add {
    uint64_t node;
} add_t;

static bool add_node(void *arg, uint64_t *node_out) { /* under the engine lock */
    *node_out = ((add_t *)arg)->node;
    return true;
}

static uint64_t graph_of(const worker_t *w) {
    return 0x5000 + (uint64_t)w->id;
}

/* The next node: depends on the last one and, at times, on one made earlier. */
static made_t *next_node(worker_t *w, gm_marker_kind_t kind) {
    made_t *m = &w->made[w->count];
    *m = (made_t){.node = ((uint64_t)(w->id + 1) << 32) | (w->count + 1), .kind = kind};
    if (w->count > 0)
        m->deps[m->dep_count++] = w->made[w->count - 1].node;
    if (w->count > 4 && gm_rand(&w->rng) % 3 == 0)
        m->deps[m->dep_count++] = w->made[gm_rand(&w->rng) % (w->count - 1)].node;
    w->count++;
    return m;
}

/* Reads the facts of the nodes made so far, forwards or backwards, and checks them. */
static bool facts_match(worker_t *w, bool reversed, bool edited) {
    uint64_t *nodes = malloc(w->count * sizeof *nodes);
    gm_node_facts_t *facts = calloc(w->count, sizeof *facts);
    bool ok = nodes && facts;
    for (uint32_t i = 0; ok && i < w->count; i++)
        nodes[i] = w->made[reversed ? w->count - 1 - i : i].node;
    if (ok)
        gm_engine_node_facts(E, graph_of(w), nodes, w->count, facts);
    for (uint32_t i = 0; ok && i < w->count; i++) {
        const made_t *m = &w->made[reversed ? w->count - 1 - i : i];
        const gm_node_facts_t *f = &facts[i];
        ok = f->kind == m->kind;
        if (m->kind == GM_MARKER_NONE || edited)
            ok = ok && !f->deps_known;
        else
            ok = ok && f->deps_known && f->dep_count == m->dep_count &&
                 (m->dep_count < 1 || f->deps[0] == m->deps[0]) &&
                 (m->dep_count < 2 || f->deps[1] == m->deps[1]);
    }
    free(nodes);
    free(facts);
    return ok;
}

static void *work(void *arg) {
    worker_t *w = arg;
    uint64_t live[64];
    uint32_t live_count = 0;
    w->ok = true;
    for (uint32_t step = 0; step < MARKERS && w->ok; step++) {
        if (gm_rand(&w->rng) % 4 == 0)
            next_node(w, GM_MARKER_NONE); /* a kernel: the engine never hears of it */
        bool alloc = live_count == 0 || (live_count < 64 && gm_rand(&w->rng) % 2);
        made_t *m = next_node(w, alloc ? GM_MARKER_ALLOC : GM_MARKER_FREE);
        add_t add = {m->node};
        gm_node_call_t call = {add_node, &add, m->deps, m->dep_count, true};
        uint64_t node = 0, va = 0;
        if (alloc) {
            gm_alloc_params_t params = {.device = 0, .size = 4096 << (gm_rand(&w->rng) % 8)};
            w->ok =
                gm_engine_alloc_marker(E, graph_of(w), &params, NULL, call, &va, &node) == GM_OK;
            live[live_count++] = va;
        } else {
            uint32_t pick = (uint32_t)(gm_rand(&w->rng) % live_count);
            va = live[pick];
            live[pick] = live[--live_count];
            w->ok = gm_engine_free_marker(E, graph_of(w), va, NULL, call, &node) == GM_OK;
        }
        w->ok = w->ok && node == m->node;
        if (step % 100 == 99)
            w->ok = w->ok && facts_match(w, false, false) && facts_match(w, true, false);
    }
    gm_engine_graph_edges_edited(E, graph_of(w));
    w->ok = w->ok && facts_match(w, false, true) && facts_match(w, true, true);
    return NULL;
}

static void test_facts_beside_other_threads(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    E = s.engine;
    static worker_t workers[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker_t){.id = t, .rng = 1234 + (uint64_t)t};
        REQUIRE(pthread_create(&threads[t], NULL, work, &workers[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK(workers[t].ok);
        CHECK(workers[t].count >= MARKERS);
        sim_graph_destroy(E, graph_of(&workers[t]));
    }
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_facts_beside_other_threads);
    return gm_check_summary();
}

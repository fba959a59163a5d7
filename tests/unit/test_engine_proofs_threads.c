/* Two threads capture into one graph (two streams, joins from one to the other), markers made
 * through the engine's API with the markers among their dependencies as ancestors, so the proofs
 * (engine_record.c) are built and placed on chains concurrently. At the end every two packed
 * allocations sharing bytes must have ordered lifetimes. Also run under ThreadSanitizer. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine_sim.h"

#define N 4000
#define GRAPH 0x77ull

static gm_engine_t *E;
static uint64_t node_key[N]; /* by index */
static uint32_t dep_from[4 * N], dep_to[4 * N], edges;
static int kind[N]; /* 1 alloc, 2 free */
static uint64_t va_of[N], size_of[N];
static uint32_t free_of[N], count; /* written under the engine lock (inside add) */
static _Atomic uint32_t last_of[2];

typedef struct add {
    const uint32_t *deps;
    uint32_t n;
    int kind;
    uint32_t index;
} add_t;

static bool add_node(void *arg, uint64_t *node_out) { /* under the engine lock */
    add_t *a = arg;
    if (count >= N)
        return false;
    uint32_t i = count++;
    node_key[i] = 0x100000 + i;
    kind[i] = a->kind;
    free_of[i] = UINT32_MAX;
    for (uint32_t k = 0; k < a->n; k++) {
        dep_from[edges] = a->deps[k];
        dep_to[edges++] = i;
    }
    a->index = i;
    *node_out = node_key[i];
    return true;
}

typedef struct worker {
    int id;
    uint64_t rng;
} worker_t;

static void *work(void *arg) {
    worker_t *w = arg;
    uint32_t last = UINT32_MAX, unfreed[64], nu = 0;
    for (int step = 0; step < N / 2 - 8; step++) {
        uint32_t deps[2], n = 0;
        if (last != UINT32_MAX)
            deps[n++] = last;
        uint32_t other = atomic_load(&last_of[!w->id]);
        if (other != UINT32_MAX && gm_rand(&w->rng) % 4 == 0)
            deps[n++] = other; /* a join: the other stream's marker exists already */
        uint64_t anc[2];
        for (uint32_t k = 0; k < n; k++)
            anc[k] = 0x100000 + deps[k];
        gm_ancestors_t a = {.markers = anc, .count = n};
        add_t ad = {deps, n, 0, UINT32_MAX};
        if (nu && (gm_rand(&w->rng) % 2 || nu == 64)) {
            uint32_t r = unfreed[0];
            memmove(unfreed, unfreed + 1, --nu * sizeof *unfreed);
            ad.kind = 2;
            uint64_t node;
            if (gm_engine_free_marker(E, GRAPH, va_of[r], &a,
                                      (gm_node_call_t){.fn = add_node, .arg = &ad}, &node) != GM_OK)
                break;
            free_of[r] = ad.index; /* only this thread frees r */
        } else {
            gm_alloc_params_t p = {.device = 0, .size = 256u << (gm_rand(&w->rng) % 6)};
            ad.kind = 1;
            uint64_t va, node;
            if (gm_engine_alloc_marker(E, GRAPH, &p, &a,
                                       (gm_node_call_t){.fn = add_node, .arg = &ad}, &va,
                                       &node) != GM_OK)
                break;
            va_of[ad.index] = va;
            size_of[ad.index] = p.size;
            unfreed[nu++] = ad.index;
        }
        last = ad.index;
        atomic_store(&last_of[w->id], last);
    }
    return NULL;
}

/* Ancestors as bitsets: edges go from lower to higher indices. */
static uint64_t anc[N][N / 64 + 1];

static void closure(void) {
    memset(anc, 0, sizeof anc);
    for (uint32_t v = 0; v < count; v++)
        for (uint32_t e = 0; e < edges; e++)
            if (dep_to[e] == v) {
                uint32_t u = dep_from[e];
                anc[v][u / 64] |= 1ull << (u % 64);
                for (uint32_t w = 0; w <= N / 64; w++)
                    anc[v][w] |= anc[u][w];
            }
}

static bool reaches(uint32_t from, uint32_t to) {
    return from == to || (anc[to][from / 64] >> (from % 64) & 1);
}

static void test_two_threads_one_graph(void) {
    for (uint64_t seed = 1; seed <= 5; seed++) {
        sim_t s;
        REQUIRE(sim_init(&s, NULL));
        E = s.engine;
        count = edges = 0;
        atomic_store(&last_of[0], UINT32_MAX);
        atomic_store(&last_of[1], UINT32_MAX);
        worker_t w[2] = {{0, seed * 77}, {1, seed * 91}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, work, &w[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        closure();
        uint32_t overlaps = 0, bad = 0;
        for (uint32_t i = 0; i < count; i++)
            for (uint32_t j = i + 1; j < count; j++) {
                if (kind[i] != 1 || kind[j] != 1 ||
                    !(va_of[i] < va_of[j] + size_of[j] && va_of[j] < va_of[i] + size_of[i]))
                    continue;
                overlaps++;
                bool ok = (free_of[i] != UINT32_MAX && reaches(free_of[i], j)) ||
                          (free_of[j] != UINT32_MAX && reaches(free_of[j], i));
                bad += !ok;
            }
        printf("  seed %llu: %u nodes, %u overlapping pairs, %u unordered\n",
               (unsigned long long)seed, count, overlaps, bad);
        CHECK_EQ_U64(bad, 0);
        uint64_t graphs[] = {GRAPH};
        CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
    }
}

int main(void) {
    RUN_TEST(test_two_threads_one_graph);
    return gm_check_summary();
}

/* Property test: random DAGs of allocations (small and large, some escaping), several graphs
 * launched in random order over a few streams, with outside frees and trims in between. Every
 * run of a graph is played on the host through the real mappings, in the order that keeps the
 * most allocations live and in random orders: no allocation may ever see another's bytes. */
#include <stdio.h>

#include "check.h"
#include "engine_sim.h"

#define KiB (1ull << 10)
#define GRAPHS 5

static uint64_t random_size(uint64_t *rng) {
    switch (gm_rand(rng) % 4) {
    case 0:
        return gm_rand_range(rng, 0, 2 * KiB);
    case 1:
        return gm_rand_range(rng, 1, 15 * KiB);
    case 2:
        return gm_rand_range(rng, 16 * KiB, 300 * KiB);
    default:
        return gm_rand_range(rng, 300 * KiB, 1200 * KiB);
    }
}

/* A random DAG: each new node depends on up to three earlier ones (and on the last one too with
 * `chain`, so that frees are proven before later allocations and packed bytes are reused); frees
 * depend on their alloc (through a user) so the graph is well formed; about one allocation in six
 * escapes. */
static void random_graph(sim_t *s, sim_graph_t *g, uint64_t *rng, bool chain) {
    sim_graph_init(s, g);
    uint32_t open[64], open_count = 0;
    uint32_t n = (uint32_t)gm_rand_range(rng, 6, 40);
    for (uint32_t step = 0; step < n; step++) {
        uint32_t deps[3], nd = 0;
        for (uint32_t k = 0; k < 3 && g->node_count; k++)
            if (gm_rand(rng) % 2)
                deps[nd++] = (uint32_t)(gm_rand(rng) % g->node_count);
        if (chain && g->node_count && nd < 3)
            deps[nd++] = g->node_count - 1;
        /* No duplicate edges. */
        for (uint32_t i = 0; i < nd; i++)
            for (uint32_t j = i + 1; j < nd; j++)
                if (deps[j] == deps[i])
                    deps[j--] = deps[--nd];
        uint64_t roll = gm_rand(rng) % 10;
        if (roll < 4 || !open_count) {
            uint32_t a = sim_alloc(s, g, random_size(rng), deps, nd);
            if (a != UINT32_MAX && open_count < 64)
                open[open_count++] = a;
        } else if (roll < 8) {
            uint32_t i = (uint32_t)(gm_rand(rng) % open_count);
            uint32_t a = open[i];
            open[i] = open[--open_count];
            uint32_t user_deps[4] = {a};
            uint32_t nu = 1;
            for (uint32_t k = 0; k < nd; k++)
                if (deps[k] != a)
                    user_deps[nu++] = deps[k];
            uint32_t user = sim_plain(s, g, user_deps, nu);
            if (gm_rand(rng) % 6)
                sim_free(s, g, g->va[a], &user, 1, NULL);
        } else {
            sim_plain(s, g, deps, nd);
        }
    }
    for (uint32_t i = 0; i < open_count; i++) {
        uint32_t user = sim_plain(s, g, &open[i], 1);
        if (gm_rand(rng) % 4)
            sim_free(s, g, g->va[open[i]], &user, 1, NULL);
    }
}

/* Frees outside every escaped allocation of graph i (reading it first). */
static bool free_escaped(sim_t *s, const sim_graph_t *g, uint64_t stream) {
    bool ok = true;
    for (uint32_t a = 0; a < g->node_count; a++) {
        if (g->kind[a] != SIM_ALLOC || g->freed[a] || !gm_engine_owns(s->engine, g->va[a]))
            continue;
        ok = sim_forget_live(s, g->va[a]) && ok;
        gm_status_t st = gm_engine_free_outside(s->engine, g->va[a], stream);
        ok = (st == GM_OK || st == GM_ERR_INVALID_VALUE) && ok;
    }
    return ok;
}

/* `packed`: a small limit of four pages, so allocations below it share chunks of many pages,
 * chunks that escape as a whole and that the planner may lay over each other (plan/arenas.c). */
static void run_seed(uint64_t seed, gm_cross_stream_policy_t policy, bool packed) {
    uint64_t rng = seed;
    gm_engine_config_t c = sim_default_config();
    c.cross_stream = policy;
    if (packed)
        c.small_limit = 4 * sim_page();
    c.release_threshold = gm_rand(&rng) % 2 ? 0 : UINT64_MAX;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    static sim_graph_t g[GRAPHS];
    bool auto_free[GRAPHS], ok = true;
    for (int i = 0; i < GRAPHS; i++) {
        random_graph(&s, &g[i], &rng, packed);
        auto_free[i] = gm_rand(&rng) % 2;
        REQUIRE(sim_instantiate(&s, &g[i], 0xE0 + (uint64_t)i,
                                auto_free[i] ? GM_EXEC_AUTO_FREE : 0) == GM_OK);
    }
    for (int step = 0; step < 60 && ok; step++) {
        int i = (int)(gm_rand(&rng) % GRAPHS);
        uint64_t stream = 0x50 + gm_rand(&rng) % 3;
        uint64_t roll = gm_rand(&rng) % 10;
        if (roll == 0) {
            host_backend_complete_all(s.hb);
            CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
            continue;
        }
        if (roll == 1) {
            ok = free_escaped(&s, &g[i], gm_rand(&rng) % 2 ? stream : GM_NO_STREAM) && ok;
            continue;
        }
        if (gm_rand(&rng) % 3 == 0)
            host_backend_complete_all(s.hb);
        gm_status_t st = sim_launch(&s, 0xE0 + (uint64_t)i, stream);
        if (st == GM_ERR_INVALID_VALUE && !auto_free[i]) {
            ok = free_escaped(&s, &g[i], stream) && ok;
            st = sim_launch(&s, 0xE0 + (uint64_t)i, stream);
        }
        CHECK_EQ_INT(st, GM_OK);
        if (st == GM_OK)
            ok = sim_run_data(&s, &g[i], gm_rand(&rng) % 2 ? &rng : NULL) && ok;
    }
    if (!ok)
        fprintf(stderr, "seed %llu policy %d packed %d: data clobbered\n", (unsigned long long)seed,
                (int)policy, (int)packed);
    CHECK(ok);
    CHECK(sim_fini(&s));
}

static void test_random_graphs(void) {
    uint64_t base = gm_test_seed(1);
    for (uint64_t k = 0; k < 40; k++) {
        run_seed(base + k, GM_CROSS_STREAM_SERIALIZE, false);
        run_seed(base + k, GM_CROSS_STREAM_REMAP, false);
    }
}

static void test_random_packed_graphs(void) {
    uint64_t base = gm_test_seed(1);
    for (uint64_t k = 0; k < 40; k++) {
        run_seed(base + k, GM_CROSS_STREAM_SERIALIZE, true);
        run_seed(base + k, GM_CROSS_STREAM_REMAP, true);
    }
}

int main(void) {
    RUN_TEST(test_random_graphs);
    RUN_TEST(test_random_packed_graphs);
    return gm_check_summary();
}

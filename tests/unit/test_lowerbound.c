/* The min-cut lower bound against brute force: every down-closed node set of small random DAGs. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "dag.h"
#include "lowerbound.h"
#include "maxflow.h"
#include "plan.h"

static uint64_t rng;

static void test_maxflow_small(void) {
    /* The classic CLRS network: max flow 23. */
    gm_flow_t *f = gm_flow_create(6, 4);
    REQUIRE(f);
    uint32_t a[] = {0, 0, 1, 2, 1, 3, 2, 4, 3, 4};
    uint32_t b[] = {1, 2, 3, 1, 2, 2, 4, 3, 5, 5};
    int64_t c[] = {16, 13, 12, 4, 10, 9, 14, 7, 20, 4};
    for (int e = 0; e < 10; e++)
        CHECK_EQ_INT(gm_flow_add_edge(f, a[e], b[e], c[e]), GM_OK);
    CHECK_EQ_INT(gm_flow_add_edge(f, 0, 9, 1), GM_ERR_INVALID_VALUE);
    int64_t v = 0;
    CHECK_EQ_INT(gm_flow_max(f, 0, 5, &v), GM_OK);
    CHECK_EQ_INT(v, 23);
    gm_flow_destroy(f);
}

/* Brute force over node subsets: closed under predecessors, weight = live allocations. */
static uint64_t brute(uint32_t nodes, uint32_t edges, const uint32_t *from, const uint32_t *to,
                      uint32_t n, const uint64_t *size, const uint32_t *an, const uint32_t *fn,
                      const bool *proper) {
    uint64_t best = 0;
    for (uint32_t set = 0; set < (1u << nodes); set++) {
        bool closed = true;
        for (uint32_t e = 0; e < edges && closed; e++)
            if ((set >> to[e] & 1) && !(set >> from[e] & 1))
                closed = false;
        if (!closed)
            continue;
        uint64_t live = 0;
        for (uint32_t i = 0; i < n; i++)
            if ((set >> an[i] & 1) && !(proper[i] && (set >> fn[i] & 1)))
                live += size[i];
        if (live > best)
            best = live;
    }
    return best;
}

static void test_against_brute_force(void) {
    int cases = 4000;
    const char *scale = getenv("GRAPHMEM_TEST_SCALE");
    if (scale && atoi(scale) > 1)
        cases *= atoi(scale);
    for (int round = 0; round < cases; round++) {
        uint32_t nodes = (uint32_t)gm_rand_range(&rng, 2, 13);
        uint32_t edges = (uint32_t)gm_rand_range(&rng, 0, 2 * nodes);
        uint32_t from[32], to[32];
        for (uint32_t e = 0; e < edges; e++) {
            uint32_t x = (uint32_t)gm_rand_range(&rng, 0, nodes - 2);
            from[e] = x;
            to[e] = (uint32_t)gm_rand_range(&rng, x + 1, nodes - 1);
        }
        uint32_t n = (uint32_t)gm_rand_range(&rng, 1, 8), an[8], fn[8];
        uint64_t size[8];
        for (uint32_t i = 0; i < n; i++) {
            an[i] = (uint32_t)gm_rand_range(&rng, 0, nodes - 1);
            /* Mostly frees downstream of the alloc, sometimes escaping or unordered ones. */
            uint32_t r = (uint32_t)gm_rand_range(&rng, 0, 9);
            fn[i] = r == 0   ? GM_NO_NODE
                    : r == 1 ? (uint32_t)gm_rand_range(&rng, 0, nodes - 1)
                             : (uint32_t)gm_rand_range(&rng, an[i], nodes - 1);
            size[i] = gm_rand_range(&rng, 1, 1000);
        }
        gm_dag_t dag;
        REQUIRE(gm_dag_build(&dag, nodes, edges, from, to) == GM_OK);
        bool proper[8];
        uint64_t before[8];
        REQUIRE(gm_dag_free_before_alloc(&dag, n, an, fn, proper, before) == GM_OK);
        uint64_t lb = 0;
        REQUIRE(gm_lower_bound(&dag, n, size, an, fn, proper, &lb) == GM_OK);
        uint64_t want = brute(nodes, edges, from, to, n, size, an, fn, proper);
        if (lb != want)
            fprintf(stderr, "round %d: nodes %u edges %u allocs %u\n", round, nodes, edges, n);
        CHECK_EQ_U64(lb, want);
        gm_dag_free(&dag);
        if (gm_check_failures > 5)
            return;
    }
}

/* A long chain: one allocation live at a time except where two overlap. */
static void test_chain(void) {
    enum { N = 3000 };
    static uint32_t from[2 * N], to[2 * N], an[N], fn[N];
    static uint64_t size[N];
    /* Nodes: a0 a1 f0 a2 f1 a3 f2 ... so that a_{i+1} precedes f_i: pairs overlap. */
    uint32_t nodes = 2 * N, edges = nodes - 1;
    for (uint32_t e = 0; e < edges; e++) {
        from[e] = e;
        to[e] = e + 1;
    }
    uint64_t want = 0;
    for (uint32_t i = 0; i < N; i++) {
        an[i] = i == 0 ? 0 : 2 * i - 1;
        fn[i] = 2 * i + 2 < nodes ? 2 * i + 2 : GM_NO_NODE;
        size[i] = 1 + (i * 7919) % 1000;
    }
    for (uint32_t i = 0; i + 1 < N; i++)
        if (size[i] + size[i + 1] > want)
            want = size[i] + size[i + 1];
    gm_dag_t dag;
    REQUIRE(gm_dag_build(&dag, nodes, edges, from, to) == GM_OK);
    bool *proper = malloc(N);
    uint64_t *before = malloc((size_t)N * gm_bits_words(N) * 8);
    REQUIRE(gm_dag_free_before_alloc(&dag, N, an, fn, proper, before) == GM_OK);
    uint64_t lb = 0;
    REQUIRE(gm_lower_bound(&dag, N, size, an, fn, proper, &lb) == GM_OK);
    /* The last allocation escapes: it stays live with the one before it. */
    CHECK_EQ_U64(lb, want);
    gm_dag_free(&dag);
    free(proper);
    free(before);
}

int main(void) {
    rng = gm_test_seed(0x10B);
    RUN_TEST(test_maxflow_small);
    RUN_TEST(test_against_brute_force);
    RUN_TEST(test_chain);
    return gm_check_summary();
}

/* The lower bound against brute force (every down-closed node set of small random DAGs) and, on
 * graphs too large for that, against the node-level min cut solved by the reference push-relabel
 * (tests/unit/support/maxflow.c), the formulation core/ used before its bipartite solver. */
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
        REQUIRE(gm_lower_bound(&dag, n, size, an, proper, before, &lb) == GM_OK);
        uint64_t want = brute(nodes, edges, from, to, n, size, an, fn, proper);
        if (lb != want)
            fprintf(stderr, "round %d: nodes %u edges %u allocs %u\n", round, nodes, edges, n);
        CHECK_EQ_U64(lb, want);
        gm_dag_free(&dag);
        if (gm_check_failures > 5)
            return;
    }
}

/* The bound as the old node-level min cut: +size at alloc nodes, -size at proper free nodes, an
 * uncuttable arc from every node to each predecessor (maximum-weight closure). */
static uint64_t min_cut_bound(const gm_dag_t *dag, uint32_t n, const uint64_t *size,
                              const uint32_t *an, const uint32_t *fn, const bool *proper) {
    uint32_t nodes = dag->node_count, source = nodes, sink = nodes + 1;
    int64_t *weight = calloc(nodes, sizeof *weight), positive = 0, cut = 0;
    for (uint32_t i = 0; i < n; i++) {
        weight[an[i]] += (int64_t)size[i];
        if (proper[i])
            weight[fn[i]] -= (int64_t)size[i];
    }
    gm_flow_t *flow = gm_flow_create(nodes + 2, dag->edge_count + nodes);
    for (uint32_t v = 0; v < nodes; v++) {
        if (weight[v] > 0) {
            positive += weight[v];
            CHECK_EQ_INT(gm_flow_add_edge(flow, source, v, weight[v]), GM_OK);
        } else if (weight[v] < 0) {
            CHECK_EQ_INT(gm_flow_add_edge(flow, v, sink, -weight[v]), GM_OK);
        }
        for (uint32_t k = dag->pred_start[v]; k < dag->pred_start[v + 1]; k++)
            CHECK_EQ_INT(gm_flow_add_edge(flow, v, dag->pred[k], GM_FLOW_INF), GM_OK);
    }
    CHECK_EQ_INT(gm_flow_max(flow, source, sink, &cut), GM_OK);
    gm_flow_destroy(flow);
    free(weight);
    return (uint64_t)(positive - cut);
}

/* Streams with event joins (as captured graphs are) or plain random DAGs, up to a few hundred
 * allocations; sizes either spread widely or nearly equal (many ties: the greedy pass leaves more
 * to the augmenting paths). Node order is topological. */
static void random_graph(uint32_t *nodes, uint32_t *edges, uint32_t *from, uint32_t *to,
                         uint32_t *n, uint64_t *size, uint32_t *an, uint32_t *fn,
                         uint32_t max_nodes) {
    bool streams = gm_rand(&rng) % 3 != 0, ties = gm_rand(&rng) % 2 == 0;
    uint32_t stream_count = (uint32_t)gm_rand_range(&rng, 1, 6), last[6] = {0};
    uint32_t target = (uint32_t)gm_rand_range(&rng, 8, max_nodes);
    uint32_t live[512], live_count = 0, stream_of[512];
    *nodes = 1;
    *edges = 0;
    *n = 0;
    while (*nodes < target) {
        uint32_t v = (*nodes)++, s = (uint32_t)gm_rand_range(&rng, 0, stream_count - 1);
        if (streams) {
            from[*edges] = last[s];
            to[(*edges)++] = v;
            if (gm_rand(&rng) % 5 == 0) {
                from[*edges] = last[gm_rand_range(&rng, 0, stream_count - 1)];
                to[(*edges)++] = v;
            }
        } else {
            for (uint32_t k = (uint32_t)gm_rand_range(&rng, 0, 2); k > 0; k--) {
                from[*edges] = (uint32_t)gm_rand_range(&rng, 0, v - 1);
                to[(*edges)++] = v;
            }
        }
        /* A node may free and allocate at once (a free reaches an alloc at the same node). */
        if (live_count > 0 && gm_rand(&rng) % 100 < 45) {
            uint32_t pick = (uint32_t)gm_rand_range(&rng, 0, live_count - 1), i = live[pick];
            live[pick] = live[--live_count];
            fn[i] = v;
            if (streams && gm_rand(&rng) % 8 != 0) { /* usually an event join on its stream */
                from[*edges] = last[stream_of[i]];
                to[(*edges)++] = v;
            }
        }
        if (gm_rand(&rng) % 100 < 50 && *n < 256) {
            uint32_t i = (*n)++;
            an[i] = v;
            fn[i] = GM_NO_NODE;
            size[i] = ties ? gm_rand_range(&rng, 1000, 1003) : gm_rand_range(&rng, 1, 1u << 20);
            stream_of[i] = s;
            live[live_count++] = i;
        }
        last[s] = v;
    }
}

static void test_against_min_cut(void) {
    enum { MAX_NODES = 600 };
    static uint32_t from[3 * MAX_NODES], to[3 * MAX_NODES], an[256], fn[256];
    static uint64_t size[256], before[256 * 4];
    int cases = 1500;
    const char *scale = getenv("GRAPHMEM_TEST_SCALE");
    if (scale && atoi(scale) > 1)
        cases *= atoi(scale);
    for (int round = 0; round < cases; round++) {
        uint32_t nodes, edges, n;
        random_graph(&nodes, &edges, from, to, &n, size, an, fn, MAX_NODES);
        gm_dag_t dag;
        REQUIRE(gm_dag_build(&dag, nodes, edges, from, to) == GM_OK);
        bool proper[256];
        REQUIRE(gm_dag_free_before_alloc(&dag, n, an, fn, proper, before) == GM_OK);
        uint64_t lb = 0;
        REQUIRE(gm_lower_bound(&dag, n, size, an, proper, before, &lb) == GM_OK);
        uint64_t want = min_cut_bound(&dag, n, size, an, fn, proper);
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
    REQUIRE(gm_lower_bound(&dag, N, size, an, proper, before, &lb) == GM_OK);
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
    RUN_TEST(test_against_min_cut);
    RUN_TEST(test_chain);
    return gm_check_summary();
}

/* DAG construction, topological order, and reachability between allocations against a plain DFS. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "dag.h"
#include "plan.h"

static uint64_t rng;

static void test_any_range(void) {
    uint64_t row[3] = {0, 1ull << 63, 0};
    CHECK(!gm_bits_any_range(row, 0, 127));
    CHECK(gm_bits_any_range(row, 0, 128));
    CHECK(gm_bits_any_range(row, 127, 128));
    CHECK(!gm_bits_any_range(row, 128, 192));
    CHECK(!gm_bits_any_range(row, 5, 5));
}

static void test_rejects_bad_graphs(void) {
    gm_dag_t dag;
    uint32_t from[] = {0, 1, 2}, to[] = {1, 2, 0};
    CHECK_EQ_INT(gm_dag_build(&dag, 3, 3, from, to), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(gm_dag_build(&dag, 3, 2, from, to), GM_OK);
    gm_dag_free(&dag);
    uint32_t self_from[] = {1}, self_to[] = {1};
    CHECK_EQ_INT(gm_dag_build(&dag, 2, 1, self_from, self_to), GM_ERR_INVALID_VALUE);
    uint32_t far_to[] = {7};
    CHECK_EQ_INT(gm_dag_build(&dag, 3, 1, from, far_to), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(gm_dag_build(&dag, 0, 0, NULL, NULL), GM_OK);
    gm_dag_free(&dag);
}

/* Random DAG: edges only from lower to higher index, then nodes relabelled at random so the
 * topological order is not the identity. */
typedef struct graph {
    uint32_t nodes, edges;
    uint32_t *from, *to;
} graph_t;

static graph_t random_graph(uint32_t nodes, uint32_t edges) {
    graph_t g = {nodes, edges, malloc(edges * sizeof(uint32_t)), malloc(edges * sizeof(uint32_t))};
    uint32_t *perm = malloc(nodes * sizeof *perm);
    for (uint32_t v = 0; v < nodes; v++)
        perm[v] = v;
    for (uint32_t v = nodes; v > 1; v--) {
        uint32_t k = (uint32_t)gm_rand_range(&rng, 0, v - 1), t = perm[v - 1];
        perm[v - 1] = perm[k];
        perm[k] = t;
    }
    for (uint32_t e = 0; e < edges; e++) {
        uint32_t a = (uint32_t)gm_rand_range(&rng, 0, nodes - 2);
        uint32_t b = (uint32_t)gm_rand_range(&rng, a + 1, nodes - 1);
        g.from[e] = perm[a];
        g.to[e] = perm[b];
    }
    free(perm);
    return g;
}

static bool reaches(const graph_t *g, uint32_t src, uint32_t dst, bool *seen, uint32_t *stack) {
    memset(seen, 0, g->nodes);
    uint32_t top = 0;
    stack[top++] = src;
    seen[src] = true;
    while (top) {
        uint32_t v = stack[--top];
        if (v == dst)
            return true;
        for (uint32_t e = 0; e < g->edges; e++)
            if (g->from[e] == v && !seen[g->to[e]]) {
                seen[g->to[e]] = true;
                stack[top++] = g->to[e];
            }
    }
    return false;
}

static void test_topological_order(void) {
    for (int round = 0; round < 200; round++) {
        graph_t g = random_graph((uint32_t)gm_rand_range(&rng, 2, 60),
                                 (uint32_t)gm_rand_range(&rng, 0, 150));
        gm_dag_t dag;
        REQUIRE(gm_dag_build(&dag, g.nodes, g.edges, g.from, g.to) == GM_OK);
        for (uint32_t e = 0; e < g.edges; e++)
            CHECK(dag.rank[g.from[e]] < dag.rank[g.to[e]]);
        for (uint32_t r = 0; r < g.nodes; r++)
            CHECK_EQ_U64(dag.rank[dag.order[r]], r);
        gm_dag_free(&dag);
        free(g.from);
        free(g.to);
    }
}

typedef struct after_rows {
    uint32_t n;
    size_t words;
    uint64_t *after;
    uint32_t *visits;
} after_rows_t;

static gm_status_t store_row(void *ctx, uint32_t i, const uint64_t *row) {
    after_rows_t *rows = ctx;
    CHECK(i < rows->n);
    if (i < rows->n) {
        memcpy(rows->after + i * rows->words, row, rows->words * 8);
        rows->visits[i]++;
    }
    return GM_OK;
}

static gm_status_t refuse_row(void *ctx, uint32_t i, const uint64_t *row) {
    (void)row;
    (*(uint32_t *)ctx)++;
    return i == 0 ? GM_ERR_OUT_OF_MEMORY : GM_OK;
}

/* Reachability both ways: the forward pass (`before`, `proper`) against a DFS, the backward pass
 * against the transpose of the forward one. */
static void test_free_before_alloc(void) {
    for (int round = 0; round < 300; round++) {
        graph_t g = random_graph((uint32_t)gm_rand_range(&rng, 2, 50),
                                 (uint32_t)gm_rand_range(&rng, 0, 120));
        uint32_t n = (uint32_t)gm_rand_range(&rng, 1, 140);
        uint32_t *an = malloc(n * 4), *fn = malloc(n * 4);
        for (uint32_t i = 0; i < n; i++) {
            an[i] = (uint32_t)gm_rand_range(&rng, 0, g.nodes - 1);
            fn[i] =
                gm_rand(&rng) % 5 == 0 ? GM_NO_NODE : (uint32_t)gm_rand_range(&rng, 0, g.nodes - 1);
        }
        size_t words = gm_bits_words(n);
        uint64_t *before = malloc(n * words * 8);
        memset(before, 0xA5, n * words * 8); /* "any content": must be overwritten */
        bool *proper = malloc(n);
        gm_dag_t dag;
        REQUIRE(gm_dag_build(&dag, g.nodes, g.edges, g.from, g.to) == GM_OK);
        REQUIRE(gm_dag_free_before_alloc(&dag, n, an, fn, proper, before) == GM_OK);
        bool *seen = malloc(g.nodes);
        uint32_t *stack = malloc(g.nodes * sizeof *stack);
        for (uint32_t i = 0; i < n; i++) {
            bool want =
                fn[i] != GM_NO_NODE && fn[i] != an[i] && reaches(&g, an[i], fn[i], seen, stack);
            CHECK(proper[i] == want);
        }
        for (uint32_t j = 0; j < n; j++)
            for (uint32_t i = 0; i < n; i++) {
                bool want = proper[i] && reaches(&g, fn[i], an[j], seen, stack);
                CHECK(gm_bits_test(before + j * words, i) == want);
            }
        for (uint32_t j = 0; j < n; j++)
            for (uint32_t b = n; b < words * 64; b++)
                CHECK(!gm_bits_test(before + j * words, b));
        /* The backward pass hands out the transpose, each row once, bits past n clear. */
        after_rows_t rows = {n, words, malloc(n * words * 8), calloc(n, sizeof(uint32_t))};
        REQUIRE(gm_dag_alloc_after_free(&dag, n, an, fn, proper, store_row, &rows) == GM_OK);
        for (uint32_t i = 0; i < n; i++) {
            CHECK_EQ_U64(rows.visits[i], 1);
            for (uint32_t j = 0; j < words * 64; j++)
                CHECK(gm_bits_test(rows.after + i * words, j) ==
                      (j < n && gm_bits_test(before + j * words, i)));
        }
        free(rows.after);
        free(rows.visits);
        gm_dag_free(&dag);
        free(seen);
        free(stack);
        free(before);
        free(proper);
        free(an);
        free(fn);
        free(g.from);
        free(g.to);
    }
}

static void test_rejects_bad_alloc_nodes(void) {
    gm_dag_t dag;
    REQUIRE(gm_dag_build(&dag, 2, 0, NULL, NULL) == GM_OK);
    uint32_t an[] = {0, 5}, fn[] = {1, GM_NO_NODE};
    bool proper[2];
    uint64_t before[2];
    CHECK_EQ_INT(gm_dag_free_before_alloc(&dag, 2, an, fn, proper, before), GM_ERR_INVALID_VALUE);
    uint32_t visits = 0;
    CHECK_EQ_INT(gm_dag_alloc_after_free(&dag, 2, an, fn, proper, refuse_row, &visits),
                 GM_ERR_INVALID_VALUE);
    CHECK_EQ_U64(visits, 0);
    gm_dag_free(&dag);
}

/* A visit that fails stops the pass, and its status comes back. */
static void test_after_visit_failure(void) {
    uint32_t from[] = {0, 1}, to[] = {1, 2}, an[] = {0, 1}, fn[] = {1, 2}, visits = 0;
    bool proper[2];
    uint64_t before[2];
    gm_dag_t dag;
    REQUIRE(gm_dag_build(&dag, 3, 2, from, to) == GM_OK);
    REQUIRE(gm_dag_free_before_alloc(&dag, 2, an, fn, proper, before) == GM_OK);
    CHECK_EQ_INT(gm_dag_alloc_after_free(&dag, 2, an, fn, proper, refuse_row, &visits),
                 GM_ERR_OUT_OF_MEMORY);
    CHECK(visits >= 1 && visits <= 2);
    gm_dag_free(&dag);
}

int main(void) {
    rng = gm_test_seed(0xDA6);
    RUN_TEST(test_any_range);
    RUN_TEST(test_rejects_bad_graphs);
    RUN_TEST(test_topological_order);
    RUN_TEST(test_free_before_alloc);
    RUN_TEST(test_rejects_bad_alloc_nodes);
    RUN_TEST(test_after_visit_failure);
    return gm_check_summary();
}

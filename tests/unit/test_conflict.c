/* Group conflicts against their definition, from reachability computed by brute force on random
 * DAGs: groups g != h conflict when some allocation of g and some other allocation of h are
 * unordered (neither one's free reaches the other's alloc after its own alloc). */
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "conflict.h"
#include "plan.h"

static uint64_t rng;

/* reach[u * nodes + v]: u reaches v (itself included); edges go from lower to higher index. */
static bool *reachability(uint32_t nodes, uint32_t edges, const uint32_t *from,
                          const uint32_t *to) {
    bool *reach = calloc((size_t)nodes * nodes, sizeof *reach);
    for (uint32_t v = 0; v < nodes; v++)
        reach[v * nodes + v] = true;
    for (uint32_t v = nodes; v-- > 0;)
        for (uint32_t e = 0; e < edges; e++)
            if (from[e] == v)
                for (uint32_t w = 0; w < nodes; w++)
                    reach[v * nodes + w] |= reach[to[e] * nodes + w];
    return reach;
}

static void test_groups(void) {
    for (int round = 0; round < 300; round++) {
        uint32_t nodes = (uint32_t)gm_rand_range(&rng, 1, 40), edges = 0;
        uint32_t from[120], to[120];
        for (uint32_t k = (uint32_t)gm_rand_range(&rng, 0, 120); k > 0 && nodes > 1; k--) {
            from[edges] = (uint32_t)gm_rand_range(&rng, 0, nodes - 2);
            to[edges] = (uint32_t)gm_rand_range(&rng, from[edges] + 1, nodes - 1);
            edges++;
        }
        uint32_t m = (uint32_t)gm_rand_range(&rng, 0, 100), first[101];
        /* A prefix of single-allocation groups, then groups of 0 to 5. */
        uint32_t singles = (uint32_t)gm_rand_range(&rng, 0, m);
        first[0] = 0;
        for (uint32_t g = 0; g < m; g++)
            first[g + 1] = first[g] + (g < singles ? 1 : (uint32_t)gm_rand_range(&rng, 0, 5));
        uint32_t n = first[m];
        /* Half the rounds, groups past the singles also name up to 3 allocations of other
         * groups (a chunk's pages that an allocation runs on into). */
        uint32_t extra_first[101], extra[300];
        bool extras = gm_rand(&rng) % 2 && n > 0;
        extra_first[0] = 0;
        for (uint32_t g = 0; g < m; g++) {
            extra_first[g + 1] = extra_first[g];
            for (uint32_t k = extras && g >= singles ? (uint32_t)gm_rand_range(&rng, 0, 3) : 0;
                 k > 0; k--)
                extra[extra_first[g + 1]++] = (uint32_t)gm_rand_range(&rng, 0, n - 1);
        }
        uint32_t *an = malloc((n + 1) * 4), *fn = malloc((n + 1) * 4);
        for (uint32_t i = 0; i < n; i++) {
            an[i] = (uint32_t)gm_rand_range(&rng, 0, nodes - 1);
            uint32_t r = (uint32_t)gm_rand_range(&rng, 0, 9);
            fn[i] = r == 0   ? GM_NO_NODE
                    : r == 1 ? (uint32_t)gm_rand_range(&rng, 0, nodes - 1)
                             : (uint32_t)gm_rand_range(&rng, an[i], nodes - 1);
        }
        gm_dag_t dag;
        REQUIRE(gm_dag_build(&dag, nodes, edges, from, to) == GM_OK);
        size_t words = gm_bits_words(n), gw = gm_bits_words(m);
        uint64_t *before = malloc(n * words * 8 + 8), *out = malloc(m * gw * 8 + 8);
        bool *proper = malloc(n + 1);
        memset(out, 0xA5, m * gw * 8); /* every word must be written */
        REQUIRE(gm_dag_free_before_alloc(&dag, n, an, fn, proper, before) == GM_OK);
        REQUIRE(gm_conflict_groups(&dag, n, an, fn, proper, before, m, first,
                                   extras ? extra_first : NULL, extra, out) == GM_OK);
        bool *reach = reachability(nodes, edges, from, to);
        for (uint32_t g = 0; g < m; g++) {
            for (uint32_t h = 0; h < m; h++) {
                bool want = false;
                uint32_t gn = first[g + 1] - first[g], hn = first[h + 1] - first[h];
                uint32_t gx = extra_first[g + 1] - extra_first[g];
                uint32_t hx = extra_first[h + 1] - extra_first[h];
                for (uint32_t x = 0; x < gn + gx && g != h; x++)
                    for (uint32_t y = 0; y < hn + hx; y++) {
                        uint32_t a = x < gn ? first[g] + x : extra[extra_first[g] + x - gn];
                        uint32_t b = y < hn ? first[h] + y : extra[extra_first[h] + y - hn];
                        bool a_proper =
                            fn[a] != GM_NO_NODE && fn[a] != an[a] && reach[an[a] * nodes + fn[a]];
                        bool b_proper =
                            fn[b] != GM_NO_NODE && fn[b] != an[b] && reach[an[b] * nodes + fn[b]];
                        bool a_first = a_proper && reach[fn[a] * nodes + an[b]];
                        bool b_first = b_proper && reach[fn[b] * nodes + an[a]];
                        want = want || (!a_first && !b_first); /* a == b: both name it */
                    }
                CHECK(gm_bits_test(out + g * gw, h) == want);
            }
            for (uint32_t b = m; b < gw * 64; b++)
                CHECK(!gm_bits_test(out + g * gw, b));
        }
        gm_dag_free(&dag);
        free(reach);
        free(an);
        free(fn);
        free(before);
        free(out);
        free(proper);
        if (gm_check_failures > 5)
            return;
    }
}

static void test_rejects_bad_groups(void) {
    uint32_t an[] = {0, 0}, fn[] = {GM_NO_NODE, GM_NO_NODE}, first[] = {0, 1, 3};
    bool proper[2] = {false, false};
    uint64_t before[2] = {0, 0}, out[2];
    gm_dag_t dag;
    REQUIRE(gm_dag_build(&dag, 1, 0, NULL, NULL) == GM_OK);
    /* Groups must cover exactly the allocations, in order. */
    CHECK_EQ_INT(gm_conflict_groups(&dag, 2, an, fn, proper, before, 2, first, NULL, NULL, out),
                 GM_ERR_INVALID_VALUE);
    first[2] = 2;
    CHECK_EQ_INT(gm_conflict_groups(&dag, 2, an, fn, proper, before, 2, first, NULL, NULL, out),
                 GM_OK);
    CHECK_EQ_U64(out[0], 2);
    CHECK_EQ_U64(out[1], 1);
    first[1] = 3;
    CHECK_EQ_INT(gm_conflict_groups(&dag, 2, an, fn, proper, before, 2, first, NULL, NULL, out),
                 GM_ERR_INVALID_VALUE);
    gm_dag_free(&dag);
}

int main(void) {
    rng = gm_test_seed(0xC0F);
    RUN_TEST(test_groups);
    RUN_TEST(test_rejects_bad_groups);
    return gm_check_summary();
}

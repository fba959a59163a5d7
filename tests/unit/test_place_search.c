/* gm_place's later tries on random inputs: items of units with gaps, fixed items, no barrier or one
 * at the fixed items' end, orders near the topological one (`shuffles`), the bounded search over
 * offsets (`search`, place_search.c), `beat` and `no_greedy`. Every answer is no larger than the
 * greedy orders' alone (or than `beat`); one below `beat` is a placement whose arena is its highest
 * end, fixed items stay where they were put, conflicting units never overlap, and no item straddles
 * the barrier. */
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "place.h"

static uint64_t rng;

static void one_case(uint64_t *stats) {
    uint32_t n = (uint32_t)gm_rand_range(&rng, 1, 12);
    uint32_t *unit_first = malloc((n + 1) * 4);
    uint64_t *pages = calloc(n + 1, 8), *start = malloc(n * 8 + 8), *fixed = malloc(n * 8 + 8);
    uint64_t unit_at[64], unit_pages[64];
    uint32_t units = 0, owner[64];
    uint64_t fixed_top = 0;
    bool with_fixed = gm_rand(&rng) % 2;
    for (uint32_t i = 0; i < n; i++) {
        unit_first[i] = units;
        uint32_t k = (uint32_t)gm_rand_range(&rng, 0, 3);
        uint64_t at = 0;
        for (uint32_t u = 0; u < k; u++) {
            at += gm_rand(&rng) % 3 == 0 ? 1 : 0; /* a gap now and then */
            unit_at[units] = at;
            unit_pages[units] = gm_rand_range(&rng, 1, 4);
            at += unit_pages[units];
            owner[units++] = i;
        }
        pages[i] = at;
        start[i] = gm_rand_range(&rng, 0, n);
        fixed[i] = GM_PLACE_FREE;
        if (with_fixed && pages[i] && gm_rand(&rng) % 3 == 0) {
            fixed[i] = fixed_top;
            fixed_top += pages[i];
        }
    }
    unit_first[n] = units;
    size_t words = gm_bits_words(units ? units : 1);
    uint64_t *conflict = calloc((units + 1) * words, 8);
    uint64_t density = gm_rand_range(&rng, 1, 9);
    for (uint32_t u = 0; u < units; u++)
        for (uint32_t v = 0; v < u; v++)
            if (owner[u] != owner[v] && gm_rand(&rng) % 10 < density &&
                !(fixed[owner[u]] != GM_PLACE_FREE && fixed[owner[v]] != GM_PLACE_FREE)) {
                gm_bits_set(conflict + u * words, v);
                gm_bits_set(conflict + v * words, u);
            }
    gm_place_input_t in = {.count = n,
                           .pages = pages,
                           .unit_first = unit_first,
                           .unit_at = unit_at,
                           .unit_pages = unit_pages,
                           .conflict = conflict,
                           .words = words,
                           .start = start,
                           .fixed = with_fixed ? fixed : NULL,
                           .barrier = gm_rand(&rng) % 2 ? fixed_top : 0};
    uint64_t *plain = malloc(n * 8 + 8), *got = malloc(n * 8 + 8), arena_plain, arena;
    REQUIRE(gm_place(&in, plain, &arena_plain) == GM_OK);
    in.shuffles = (uint32_t)gm_rand_range(&rng, 0, 16);
    in.search = (uint32_t)gm_rand_range(&rng, 0, 200);
    in.beat = gm_rand(&rng) % 2 ? arena_plain : 0;
    in.no_greedy = in.beat && gm_rand(&rng) % 2; /* as arenas.c asks, against the greedy answer */
    REQUIRE(gm_place(&in, got, &arena) == GM_OK);
    if (in.beat)
        CHECK(arena <= in.beat);
    else
        CHECK(arena <= arena_plain);
    if (in.beat && arena == in.beat) {
        stats[0]++;
        goto out; /* nothing beat it: the caller keeps its own */
    }
    stats[1] += arena < arena_plain;
    uint64_t top = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!pages[i])
            continue;
        if (got[i] + pages[i] > top)
            top = got[i] + pages[i];
        if (with_fixed && fixed[i] != GM_PLACE_FREE)
            CHECK_EQ_U64(got[i], fixed[i]);
        if (in.barrier)
            CHECK(!(in.barrier > got[i] && in.barrier < got[i] + pages[i]));
    }
    CHECK_EQ_U64(arena, top);
    for (uint32_t u = 0; u < units; u++)
        for (uint32_t v = 0; v < u; v++)
            if (gm_bits_test(conflict + u * words, v)) {
                uint64_t a = got[owner[u]] + unit_at[u], b = got[owner[v]] + unit_at[v];
                CHECK(a + unit_pages[u] <= b || b + unit_pages[v] <= a);
            }
out:
    free(unit_first);
    free(pages);
    free(start);
    free(fixed);
    free(conflict);
    free(plain);
    free(got);
}

static void test_random(void) {
    uint64_t stats[2] = {0};
    for (int r = 0; r < 40000 && gm_check_failures < 5; r++)
        one_case(stats);
    printf("not beaten %llu, improved %llu\n", (unsigned long long)stats[0],
           (unsigned long long)stats[1]);
}

/* Nothing to place but fixed items, above `beat`: *arena_out is `beat` then (place.h). The search
 * took the fixed items' extent for a placement found. */
static void test_search_with_only_fixed_items(void) {
    uint64_t pages[1] = {5}, start[1] = {0}, fixed[1] = {0}, conflict[1] = {0}, off[1], arena;
    gm_place_input_t in = {.count = 1,
                           .pages = pages,
                           .conflict = conflict,
                           .words = 1,
                           .start = start,
                           .fixed = fixed,
                           .search = 8,
                           .beat = 3};
    REQUIRE(gm_place(&in, off, &arena) == GM_OK);
    CHECK_EQ_U64(arena, 3);
}

int main(void) {
    rng = gm_test_seed(0x5EA5C4);
    RUN_TEST(test_search_with_only_fixed_items);
    RUN_TEST(test_random);
    return gm_check_summary();
}

/* gm_place on random conflict graphs: conflicting items never overlap, fixed items stay put, no
 * item straddles the barrier, and the result equals a plain reference of the same four greedy
 * strategies that sorts with qsort (the sort inside gm_place is its own: any bug in it that
 * changes a placement shows up here, even one that stays valid). */
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "place.h"

static uint64_t rng;

typedef struct span {
    uint64_t lo, hi;
} span_t;

static int by_lo(const void *a, const void *b) {
    const span_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static uint64_t gap_position(uint64_t lo, uint64_t hi, uint64_t need, uint64_t barrier) {
    if (barrier > lo && barrier < hi && lo + need > barrier)
        lo = barrier;
    if (hi != UINT64_MAX && (hi < lo || hi - lo < need))
        return UINT64_MAX;
    return lo;
}

static const uint64_t *key_pages, *key_start;

/* strategy 0: size, best fit; 1: start, first fit; 2: size, first fit; 3: start, best fit. */
static int strategy;

static int by_strategy(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint64_t kx[2] = {~key_pages[x], key_start[x]}, ky[2] = {~key_pages[y], key_start[y]};
    int major = strategy == 1 || strategy == 3;
    for (int k = 0; k < 2; k++) {
        int f = k == 0 ? major : 1 - major;
        if (kx[f] != ky[f])
            return kx[f] < ky[f] ? -1 : 1;
    }
    return x < y ? -1 : x > y;
}

static uint64_t reference(const gm_place_input_t *in, uint64_t *best_offset) {
    uint32_t n = in->count;
    uint64_t best = UINT64_MAX, *offset = malloc(n * 8 + 8);
    uint32_t *order = malloc(n * 4 + 4);
    bool *placed = malloc(n + 1);
    span_t *spans = malloc(n * sizeof *spans + 1);
    key_pages = in->pages;
    key_start = in->start;
    for (strategy = 0; strategy < 4; strategy++) {
        bool best_fit = strategy == 0 || strategy == 3;
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        qsort(order, n, sizeof *order, by_strategy);
        memset(offset, 0, n * 8);
        memset(placed, 0, n);
        uint64_t arena = 0;
        for (uint32_t k = 0; k < 2 * n; k++) {
            uint32_t i = k < n ? k : order[k - n];
            bool fixed = in->fixed && in->fixed[i] != GM_PLACE_FREE;
            if (in->pages[i] == 0 || (k < n) != fixed)
                continue; /* fixed items first, in index order, then the others in order */
            uint64_t at = fixed ? in->fixed[i] : UINT64_MAX;
            if (!fixed) {
                uint32_t count = 0;
                for (uint32_t j = 0; j < n; j++)
                    if (placed[j] && gm_bits_test(in->conflict + i * in->words, j))
                        spans[count++] = (span_t){offset[j], offset[j] + in->pages[j]};
                qsort(spans, count, sizeof *spans, by_lo);
                uint64_t cursor = 0, best_gap = UINT64_MAX;
                for (uint32_t c = 0; c < count && (best_fit || at == UINT64_MAX); c++) {
                    if (spans[c].lo > cursor) {
                        uint64_t pos = gap_position(cursor, spans[c].lo, in->pages[i], in->barrier);
                        if (pos != UINT64_MAX && spans[c].lo - cursor < best_gap) {
                            best_gap = best_fit ? spans[c].lo - cursor : 0;
                            at = pos;
                        }
                    }
                    if (spans[c].hi > cursor)
                        cursor = spans[c].hi;
                }
                if (at == UINT64_MAX)
                    at = gap_position(cursor, UINT64_MAX, in->pages[i], in->barrier);
            }
            offset[i] = at;
            placed[i] = true;
            if (at + in->pages[i] > arena)
                arena = at + in->pages[i];
        }
        if (arena < best) {
            best = arena;
            memcpy(best_offset, offset, n * 8);
        }
    }
    free(offset);
    free(order);
    free(placed);
    free(spans);
    return best;
}

static void test_against_reference(void) {
    for (int round = 0; round < 400; round++) {
        uint32_t n = (uint32_t)gm_rand_range(&rng, 1, 300);
        /* Starts rising with the index make offsets rise with it too, as in the planner (items
         * numbered in creation order): the sort then sees ordered runs. */
        bool rising = gm_rand(&rng) % 2;
        size_t words = gm_bits_words(n);
        uint64_t *conflict = calloc(n * words, 8), *pages = malloc(n * 8), *start = malloc(n * 8);
        uint64_t *fixed = malloc(n * 8), *got = malloc(n * 8), *want = malloc(n * 8);
        /* Few distinct sizes and starts: many ties in sort keys and in span offsets. */
        uint64_t max_pages = gm_rand_range(&rng, 1, 12), density = gm_rand_range(&rng, 1, 9);
        bool with_fixed = gm_rand(&rng) % 3 == 0;
        uint64_t fixed_top = 0;
        for (uint32_t i = 0; i < n; i++) {
            pages[i] = gm_rand(&rng) % 10 == 0 ? 0 : gm_rand_range(&rng, 1, max_pages);
            start[i] = rising ? i : gm_rand_range(&rng, 0, n / 4);
            fixed[i] = GM_PLACE_FREE;
            if (with_fixed && gm_rand(&rng) % 6 == 0) { /* back to back, as escaping items */
                fixed[i] = fixed_top;
                fixed_top += pages[i];
            }
            for (uint32_t j = 0; j < i; j++)
                if (gm_rand(&rng) % 10 < density) {
                    gm_bits_set(conflict + i * words, j);
                    gm_bits_set(conflict + j * words, i);
                }
        }
        /* Fixed items are pairwise disjoint, so they may conflict; nothing else is. */
        gm_place_input_t in = {.count = n,
                               .pages = pages,
                               .conflict = conflict,
                               .words = words,
                               .start = start,
                               .fixed = with_fixed ? fixed : NULL,
                               .barrier = fixed_top};
        uint64_t arena = 0;
        REQUIRE(gm_place(&in, got, &arena) == GM_OK);
        CHECK_EQ_U64(arena, reference(&in, want));
        /* Told that the arena it finds cannot be beaten, it stops there with the same answer. */
        uint64_t *again = malloc(n * sizeof *again), arena_again = 0;
        REQUIRE(again != NULL);
        in.enough = arena;
        REQUIRE(gm_place(&in, again, &arena_again) == GM_OK);
        CHECK_EQ_U64(arena_again, arena);
        for (uint32_t i = 0; i < n; i++)
            CHECK_EQ_U64(again[i], got[i]);
        free(again);
        in.enough = 0;
        for (uint32_t i = 0; i < n; i++) {
            CHECK_EQ_U64(got[i], want[i]);
            if (pages[i] == 0)
                continue;
            CHECK(got[i] + pages[i] <= arena);
            if (fixed[i] != GM_PLACE_FREE && with_fixed)
                CHECK_EQ_U64(got[i], fixed[i]);
            else
                CHECK(got[i] >= fixed_top || got[i] + pages[i] <= fixed_top);
            for (uint32_t j = 0; j < i; j++)
                if (pages[j] && gm_bits_test(conflict + i * words, j))
                    CHECK(got[i] + pages[i] <= got[j] || got[j] + pages[j] <= got[i]);
        }
        free(conflict);
        free(pages);
        free(start);
        free(fixed);
        free(got);
        free(want);
        if (gm_check_failures > 5)
            return;
    }
}

int main(void) {
    rng = gm_test_seed(0x91ACE);
    RUN_TEST(test_against_reference);
    return gm_check_summary();
}

/* Conflict matrices against their bit-by-bit definitions. */
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "conflict.h"

static uint64_t rng;

static void test_build(void) {
    for (int round = 0; round < 60; round++) {
        uint32_t n = (uint32_t)gm_rand_range(&rng, 1, 300);
        size_t words = gm_bits_words(n);
        uint64_t *before = calloc(n * words, 8), *after = calloc(n * words, 8);
        uint64_t *c = malloc(n * words * 8);
        for (uint32_t j = 0; j < n; j++)
            for (uint32_t i = 0; i < n; i++)
                if (gm_rand(&rng) % 3 == 0) {
                    gm_bits_set(before + j * words, i);
                    gm_bits_set(after + i * words, j);
                }
        /* Half the rounds in place, as the planner calls it. */
        bool in_place = round % 2;
        if (in_place)
            memcpy(c, after, n * words * 8);
        REQUIRE(gm_conflict_build(n, before, in_place ? c : after, c) == GM_OK);
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = 0; j < n; j++) {
                bool want = i != j && !gm_bits_test(before + j * words, i) &&
                            !gm_bits_test(before + i * words, j);
                CHECK(gm_bits_test(c + i * words, j) == want);
            }
            for (uint32_t b = n; b < words * 64; b++)
                CHECK(!gm_bits_test(c + i * words, b));
        }
        free(before);
        free(after);
        free(c);
    }
}

static void test_groups(void) {
    for (int round = 0; round < 60; round++) {
        uint32_t m = (uint32_t)gm_rand_range(&rng, 1, 150), first[151];
        /* A prefix of single-allocation groups, then groups of 0 to 5. */
        uint32_t singles = (uint32_t)gm_rand_range(&rng, 0, m);
        first[0] = 0;
        for (uint32_t g = 0; g < m; g++)
            first[g + 1] = first[g] + (g < singles ? 1 : (uint32_t)gm_rand_range(&rng, 0, 5));
        uint32_t n = first[m];
        size_t words = gm_bits_words(n), gw = gm_bits_words(m);
        uint64_t *c = calloc((size_t)n * words + 1, 8), *out = malloc((size_t)m * gw * 8);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = i + 1; j < n; j++)
                if (gm_rand(&rng) % 7 == 0) {
                    gm_bits_set(c + i * words, j);
                    gm_bits_set(c + j * words, i);
                }
        REQUIRE(gm_conflict_groups(n, c, m, first, out) == GM_OK);
        for (uint32_t g = 0; g < m; g++)
            for (uint32_t h = 0; h < m; h++) {
                bool want = false;
                for (uint32_t a = first[g]; a < first[g + 1] && g != h; a++)
                    for (uint32_t b = first[h]; b < first[h + 1]; b++)
                        want = want || gm_bits_test(c + a * words, b);
                CHECK(gm_bits_test(out + g * gw, h) == want);
            }
        free(c);
        free(out);
    }
}

int main(void) {
    rng = gm_test_seed(0xC0F);
    RUN_TEST(test_build);
    RUN_TEST(test_groups);
    return gm_check_summary();
}

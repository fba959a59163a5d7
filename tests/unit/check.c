#include "check.h"

int gm_check_failures;

void gm_check_fail(const char *file, int line, const char *expr, const char *detail) {
    gm_check_failures++;
    fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, expr, detail ? " -- " : "",
            detail ? detail : "");
}

int gm_check_summary(void) {
    printf("%d failed check(s)\n", gm_check_failures);
    return gm_check_failures == 0 ? 0 : 1;
}

uint64_t gm_test_seed(uint64_t fallback) {
    const char *s = getenv("GRAPHMEM_TEST_SEED");
    return s && *s ? strtoull(s, NULL, 0) : fallback;
}

uint64_t gm_rand(uint64_t *state) {
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

uint64_t gm_rand_range(uint64_t *state, uint64_t lo, uint64_t hi) {
    return lo + gm_rand(state) % (hi - lo + 1);
}

/* A small test harness: typed checks that print both operands, one process per test binary,
 * exit 0 = pass, 1 = fail, 77 = skip (CTest SKIP_RETURN_CODE). */
#ifndef GRAPHMEM_TEST_CHECK_H
#define GRAPHMEM_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern int gm_check_failures;

void gm_check_fail(const char *file, int line, const char *expr, const char *detail);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            gm_check_fail(__FILE__, __LINE__, #cond, NULL);                                        \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                               \
        if (check_a_ != check_b_) {                                                                \
            char check_buf_[96];                                                                   \
            snprintf(check_buf_, sizeof check_buf_, "%llu != %llu", (unsigned long long)check_a_,  \
                     (unsigned long long)check_b_);                                                \
            gm_check_fail(__FILE__, __LINE__, #a " == " #b, check_buf_);                           \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (check_a_ != check_b_) {                                                                \
            char check_buf_[96];                                                                   \
            snprintf(check_buf_, sizeof check_buf_, "%lld != %lld", check_a_, check_b_);           \
            gm_check_fail(__FILE__, __LINE__, #a " == " #b, check_buf_);                           \
        }                                                                                          \
    } while (0)

/* Stop the current test function on failure (for checks later code depends on). */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            gm_check_fail(__FILE__, __LINE__, #cond, "required; stopping");                        \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define RUN_TEST(fn)                                                                               \
    do {                                                                                           \
        int check_before_ = gm_check_failures;                                                     \
        fn();                                                                                      \
        printf("%s %s\n", gm_check_failures == check_before_ ? "ok  " : "FAIL", #fn);              \
    } while (0)

/* Returns the process exit code: prints the closing line CTest logs keep. */
int gm_check_summary(void);

/* Deterministic PRNG for property tests (xorshift64*); seed from GRAPHMEM_TEST_SEED if set. */
uint64_t gm_test_seed(uint64_t fallback);
uint64_t gm_rand(uint64_t *state);
uint64_t gm_rand_range(uint64_t *state, uint64_t lo, uint64_t hi); /* inclusive */

#endif

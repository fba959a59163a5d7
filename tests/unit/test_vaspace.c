#include "check.h"
#include "host_backend.h"
#include "vaspace.h"

#define PAGE (64u << 10)
#define SLAB (64 * PAGE)

static void test_reuse_and_coalesce(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    gm_vaspace_t *vs = gm_vaspace_create(host_backend_ops(hb), SLAB);
    REQUIRE(vs);
    uint64_t a, b, c;
    REQUIRE(gm_vaspace_alloc(vs, 16 * PAGE, &a) == GM_OK);
    REQUIRE(gm_vaspace_alloc(vs, 16 * PAGE, &b) == GM_OK);
    REQUIRE(gm_vaspace_alloc(vs, 16 * PAGE, &c) == GM_OK);
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 1);
    CHECK_EQ_U64(b, a + 16 * PAGE); /* address-ordered first fit */
    gm_vaspace_free(vs, a, 16 * PAGE);
    gm_vaspace_free(vs, b, 16 * PAGE);
    /* a and b coalesced: a 32-page window fits where they were. */
    uint64_t d;
    REQUIRE(gm_vaspace_alloc(vs, 32 * PAGE, &d) == GM_OK);
    CHECK_EQ_U64(d, a);
    gm_vaspace_free(vs, c, 16 * PAGE);
    gm_vaspace_free(vs, d, 32 * PAGE);
    CHECK_EQ_U64(gm_vaspace_live_bytes(vs), 0);
    /* Everything free again: the whole slab is one range. */
    uint64_t e;
    REQUIRE(gm_vaspace_alloc(vs, SLAB, &e) == GM_OK);
    CHECK_EQ_U64(e, a);
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 1);
    gm_vaspace_destroy(vs);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

static void test_oversized_window_has_own_reservation(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    gm_vaspace_t *vs = gm_vaspace_create(host_backend_ops(hb), SLAB);
    uint64_t big, small;
    REQUIRE(gm_vaspace_alloc(vs, PAGE, &small) == GM_OK);
    REQUIRE(gm_vaspace_alloc(vs, 3 * SLAB, &big) == GM_OK);
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 2);
    CHECK_EQ_U64(gm_vaspace_reserved_bytes(vs), 4 * SLAB);
    gm_vaspace_free(vs, big, 3 * SLAB);
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 1);
    CHECK_EQ_U64(gm_vaspace_reserved_bytes(vs), SLAB);
    gm_vaspace_free(vs, small, PAGE);
    gm_vaspace_destroy(vs);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

static void test_reserve_failure(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    gm_vaspace_t *vs = gm_vaspace_create(host_backend_ops(hb), SLAB);
    uint64_t va = 0;
    CHECK(gm_vaspace_alloc(vs, 0, &va) == GM_ERR_INVALID_VALUE);
    CHECK(gm_vaspace_alloc(vs, PAGE + 1, &va) == GM_ERR_INVALID_VALUE);
    host_backend_fail_nth(hb, HOST_OP_VA_RESERVE, 1, GM_ERR_OUT_OF_MEMORY);
    CHECK(gm_vaspace_alloc(vs, PAGE, &va) == GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_U64(gm_vaspace_reserved_bytes(vs), 0);
    CHECK_EQ_U64(gm_vaspace_live_bytes(vs), 0);
    CHECK(gm_vaspace_alloc(vs, PAGE, &va) == GM_OK);
    gm_vaspace_destroy(vs);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

/* A window grows in place into the free addresses right after it, and only there. */
static void test_extend_in_place(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    gm_vaspace_t *vs = gm_vaspace_create(host_backend_ops(hb), SLAB);
    uint64_t a, b, c;
    REQUIRE(gm_vaspace_alloc(vs, 4 * PAGE, &a) == GM_OK);
    CHECK(gm_vaspace_extend(vs, a, 4 * PAGE, 0) == GM_ERR_INVALID_VALUE);
    CHECK(gm_vaspace_extend(vs, a, 4 * PAGE, PAGE + 1) == GM_ERR_INVALID_VALUE);
    REQUIRE(gm_vaspace_extend(vs, a, 4 * PAGE, 2 * PAGE) == GM_OK);
    CHECK_EQ_U64(gm_vaspace_live_bytes(vs), 6 * PAGE);
    REQUIRE(gm_vaspace_alloc(vs, PAGE, &b) == GM_OK);
    CHECK_EQ_U64(b, a + 6 * PAGE); /* the grown window's addresses are taken */
    /* b sits right after a: a cannot grow, and nothing changed. */
    CHECK(gm_vaspace_extend(vs, a, 6 * PAGE, PAGE) == GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_U64(gm_vaspace_live_bytes(vs), 7 * PAGE);
    /* b grows up to the slab's end, not past it. */
    CHECK(gm_vaspace_extend(vs, b, PAGE, SLAB) == GM_ERR_OUT_OF_MEMORY);
    REQUIRE(gm_vaspace_extend(vs, b, PAGE, SLAB - 7 * PAGE) == GM_OK);
    CHECK(gm_vaspace_extend(vs, b, SLAB - 6 * PAGE, PAGE) == GM_ERR_OUT_OF_MEMORY);
    /* A new slab comes, maybe right after the first: b never grows into it. */
    REQUIRE(gm_vaspace_alloc(vs, PAGE, &c) == GM_OK);
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 2);
    CHECK(gm_vaspace_extend(vs, b, SLAB - 6 * PAGE, PAGE) == GM_ERR_OUT_OF_MEMORY);
    /* Grown windows are freed whole, and the addresses coalesce again. */
    gm_vaspace_free(vs, a, 6 * PAGE);
    gm_vaspace_free(vs, b, SLAB - 6 * PAGE);
    gm_vaspace_free(vs, c, PAGE);
    CHECK_EQ_U64(gm_vaspace_live_bytes(vs), 0);
    uint64_t d;
    REQUIRE(gm_vaspace_alloc(vs, SLAB, &d) == GM_OK); /* a whole slab: no new reservation */
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 2);
    gm_vaspace_destroy(vs);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

/* Random allocs and frees: live windows never overlap, stay inside reservations, and the live
 * byte count matches. */
static void test_random_never_overlaps(void) {
    enum { N = 64 };
    host_backend_t *hb = host_backend_create(PAGE, 1);
    gm_vaspace_t *vs = gm_vaspace_create(host_backend_ops(hb), SLAB);
    uint64_t va[N] = {0}, size[N] = {0}, live = 0;
    uint64_t rng = gm_test_seed(7);
    for (int step = 0; step < 4000; step++) {
        int i = (int)gm_rand_range(&rng, 0, N - 1);
        if (size[i]) {
            gm_vaspace_free(vs, va[i], size[i]);
            live -= size[i];
            size[i] = 0;
            continue;
        }
        uint64_t s = gm_rand_range(&rng, 1, gm_rand(&rng) % 8 ? 8 : 100) * PAGE;
        REQUIRE(gm_vaspace_alloc(vs, s, &va[i]) == GM_OK);
        size[i] = s;
        live += s;
        CHECK_EQ_U64(va[i] % PAGE, 0);
        for (int j = 0; j < N; j++) {
            if (j != i && size[j] && va[i] < va[j] + size[j] && va[j] < va[i] + size[i]) {
                CHECK(!"two live windows overlap");
                REQUIRE(false);
            }
        }
        CHECK(host_backend_handle_at(hb, va[i], NULL) == 0);
    }
    CHECK_EQ_U64(gm_vaspace_live_bytes(vs), live);
    CHECK(gm_vaspace_reserved_bytes(vs) <= live + 8 * SLAB + 100 * PAGE * N);
    gm_vaspace_destroy(vs);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

int main(void) {
    RUN_TEST(test_reuse_and_coalesce);
    RUN_TEST(test_oversized_window_has_own_reservation);
    RUN_TEST(test_reserve_failure);
    RUN_TEST(test_extend_in_place);
    RUN_TEST(test_random_never_overlaps);
    return gm_check_summary();
}

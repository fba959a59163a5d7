#include "check.h"
#include "host_backend.h"
#include "pool.h"

#define PAGE (64u << 10)

typedef struct fixture {
    host_backend_t *hb;
    const gm_backend_t *b;
    gm_pool_t *pool;
    uint64_t va;
} fixture_t;

static fixture_t setup(uint64_t cap, uint64_t threshold) {
    fixture_t f = {0};
    f.hb = host_backend_create(PAGE, 2);
    f.b = host_backend_ops(f.hb);
    f.pool = gm_pool_create(f.b, 1, cap, threshold);
    f.b->va_reserve(f.b->ctx, 64 * PAGE, &f.va);
    return f;
}

static void teardown(fixture_t *f) {
    gm_pool_destroy(f->pool);
    f->b->va_release(f->b->ctx, f->va, 64 * PAGE);
    CHECK(host_backend_check_clean(f->hb));
    host_backend_destroy(f->hb);
}

static void test_attributes_follow_mappings(void) {
    fixture_t f = setup(0, UINT64_MAX);
    gm_arena_t arena = {0};
    REQUIRE(gm_arena_append(&arena, 2) == GM_OK);
    REQUIRE(gm_arena_append(&arena, 3) == GM_OK);
    CHECK_EQ_U64(arena.total_pages, 5);
    CHECK_EQ_U64(gm_arena_slot_at(&arena, 1), 0);
    CHECK_EQ_U64(gm_arena_slot_at(&arena, 2), 1);
    CHECK_EQ_U64(gm_arena_slot_at(&arena, 5), 2);
    REQUIRE(gm_pool_fill(f.pool, &arena, 0) == GM_OK);
    REQUIRE(gm_pool_fill(f.pool, &arena, 1) == GM_OK);
    CHECK_EQ_U64(host_backend_device_bytes(f.hb, 1), 5 * PAGE);
    gm_pool_stats_t s = gm_pool_stats(f.pool);
    CHECK_EQ_U64(s.reserved, 5 * PAGE);
    CHECK_EQ_U64(s.used, 0);
    CHECK_EQ_U64(gm_pool_idle_bytes(f.pool), 5 * PAGE);

    int devs[2] = {1, 0};
    gm_handle_t *h0 = arena.handles[0], *h1 = arena.handles[1];
    REQUIRE(gm_pool_map(f.pool, h0, f.va, devs, 2) == GM_OK);
    REQUIRE(gm_pool_map(f.pool, h0, f.va + 8 * PAGE, devs, 1) == GM_OK); /* alias */
    CHECK_EQ_U64(host_backend_access(f.hb, f.va), 3);
    CHECK_EQ_U64(host_backend_access(f.hb, f.va + 8 * PAGE), 2);
    s = gm_pool_stats(f.pool);
    CHECK_EQ_U64(s.used, 2 * PAGE); /* mapped twice, counted once */
    REQUIRE(gm_pool_map(f.pool, h1, f.va + 16 * PAGE, devs, 1) == GM_OK);
    s = gm_pool_stats(f.pool);
    CHECK_EQ_U64(s.used, 5 * PAGE);
    CHECK_EQ_U64(s.used_high, 5 * PAGE);
    CHECK(gm_pool_empty(f.pool, &arena, 1) == GM_ERR_INVALID_VALUE); /* mapped */

    CHECK(gm_pool_unmap(f.pool, h1, f.va + 16 * PAGE) == GM_OK);
    CHECK(gm_pool_unmap(f.pool, h0, f.va) == GM_OK);
    s = gm_pool_stats(f.pool);
    CHECK_EQ_U64(s.used, 2 * PAGE);
    CHECK_EQ_U64(s.used_high, 5 * PAGE);
    gm_pool_reset_used_high(f.pool);
    CHECK_EQ_U64(gm_pool_stats(f.pool).used_high, 2 * PAGE);

    /* Release of idle memory empties the slot; a mapped handle stays. */
    CHECK_EQ_U64(gm_pool_release_idle(f.pool, 0), 3 * PAGE);
    CHECK(arena.handles[1] == NULL);
    CHECK(arena.handles[0] == h0);
    s = gm_pool_stats(f.pool);
    CHECK_EQ_U64(s.reserved, 2 * PAGE);
    CHECK_EQ_U64(s.reserved_high, 5 * PAGE);
    gm_pool_reset_reserved_high(f.pool);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved_high, 2 * PAGE);
    CHECK(gm_pool_unmap(f.pool, h0, f.va + 8 * PAGE) == GM_OK);
    CHECK(gm_pool_empty(f.pool, &arena, 0) == GM_OK);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved, 0);
    gm_arena_fini(&arena);
    teardown(&f);
}

static void test_cap_and_device_oom(void) {
    fixture_t f = setup(4 * PAGE, 0);
    gm_arena_t arena = {0};
    gm_arena_append(&arena, 3);
    gm_arena_append(&arena, 2);
    gm_arena_append(&arena, 1);
    REQUIRE(gm_pool_fill(f.pool, &arena, 0) == GM_OK);
    CHECK(gm_pool_fits(f.pool, PAGE));
    CHECK(!gm_pool_fits(f.pool, 2 * PAGE));
    CHECK(gm_pool_fill(f.pool, &arena, 1) == GM_ERR_OUT_OF_MEMORY);
    CHECK(arena.handles[1] == NULL);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved, 3 * PAGE);
    /* The device itself running out is the same error. */
    host_backend_set_capacity(f.hb, 1, 3 * PAGE);
    CHECK(gm_pool_fill(f.pool, &arena, 2) == GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved, 3 * PAGE);
    /* Threshold 0: settle gives back every idle byte. */
    gm_pool_settle(f.pool);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved, 0);
    gm_arena_fini(&arena);
    teardown(&f);
}

static void test_threshold_keeps_idle(void) {
    fixture_t f = setup(0, 2 * PAGE);
    gm_arena_t arena = {0};
    for (int i = 0; i < 4; i++) {
        gm_arena_append(&arena, 1);
        REQUIRE(gm_pool_fill(f.pool, &arena, (uint32_t)i) == GM_OK);
    }
    gm_pool_settle(f.pool);
    CHECK_EQ_U64(gm_pool_idle_bytes(f.pool), 2 * PAGE);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved, 2 * PAGE);
    CHECK_EQ_U64(host_backend_counts(f.hb).handles, 2);
    CHECK_EQ_U64(gm_pool_release_idle(f.pool, 0), 2 * PAGE);
    CHECK(arena.handles[0] == NULL && arena.handles[3] == NULL);
    gm_arena_fini(&arena);
    teardown(&f);
}

static void test_backend_failures_change_nothing(void) {
    fixture_t f = setup(0, 0);
    gm_arena_t arena = {0};
    gm_arena_append(&arena, 1);
    int dev = 1;
    host_backend_fail_nth(f.hb, HOST_OP_HANDLE_CREATE, 1, GM_ERR_BACKEND);
    CHECK(gm_pool_fill(f.pool, &arena, 0) == GM_ERR_BACKEND);
    CHECK(arena.handles[0] == NULL);
    REQUIRE(gm_pool_fill(f.pool, &arena, 0) == GM_OK);
    host_backend_fail_nth(f.hb, HOST_OP_MAP, 1, GM_ERR_BACKEND);
    CHECK(gm_pool_map(f.pool, arena.handles[0], f.va, &dev, 1) == GM_ERR_BACKEND);
    host_backend_fail_nth(f.hb, HOST_OP_SET_ACCESS, 1, GM_ERR_BACKEND);
    CHECK(gm_pool_map(f.pool, arena.handles[0], f.va, &dev, 1) == GM_ERR_BACKEND);
    CHECK_EQ_U64(host_backend_counts(f.hb).mappings, 0);
    CHECK_EQ_U64(gm_pool_stats(f.pool).used, 0);
    REQUIRE(gm_pool_map(f.pool, arena.handles[0], f.va, &dev, 1) == GM_OK);
    host_backend_fail_nth(f.hb, HOST_OP_UNMAP, 1, GM_ERR_BACKEND);
    CHECK(gm_pool_unmap(f.pool, arena.handles[0], f.va) == GM_ERR_BACKEND);
    CHECK_EQ_U64(gm_pool_stats(f.pool).used, PAGE);
    CHECK(gm_pool_unmap(f.pool, arena.handles[0], f.va) == GM_OK);
    host_backend_fail_nth(f.hb, HOST_OP_HANDLE_RELEASE, 1, GM_ERR_BACKEND);
    CHECK(gm_pool_empty(f.pool, &arena, 0) == GM_ERR_BACKEND);
    CHECK(arena.handles[0] != NULL);
    CHECK_EQ_U64(gm_pool_stats(f.pool).reserved, PAGE);
    CHECK(gm_pool_empty(f.pool, &arena, 0) == GM_OK);
    gm_arena_fini(&arena);
    teardown(&f);
}

int main(void) {
    RUN_TEST(test_attributes_follow_mappings);
    RUN_TEST(test_cap_and_device_oom);
    RUN_TEST(test_threshold_keeps_idle);
    RUN_TEST(test_backend_failures_change_nothing);
    return gm_check_summary();
}

/* The host backend is the ground truth for every engine test, so its own behaviour is pinned
 * here: real aliasing, access tracking, simulated stream order, fault injection, leak counts. */
#include <string.h>

#include "check.h"
#include "host_backend.h"

#define PAGE (64u << 10)

static void test_alias_is_real(void) {
    host_backend_t *hb = host_backend_create(PAGE, 2);
    REQUIRE(hb);
    const gm_backend_t *b = host_backend_ops(hb);
    uint64_t va = 0, h = 0;
    REQUIRE(b->va_reserve(b->ctx, 8 * PAGE, &va) == GM_OK);
    CHECK_EQ_U64(va % PAGE, 0);
    REQUIRE(b->handle_create(b->ctx, 1, 2 * PAGE, &h) == GM_OK);
    CHECK_EQ_U64(host_backend_device_bytes(hb, 1), 2 * PAGE);
    REQUIRE(b->map(b->ctx, va, 2 * PAGE, h) == GM_OK);
    REQUIRE(b->map(b->ctx, va + 4 * PAGE, 2 * PAGE, h) == GM_OK);
    CHECK_EQ_U64(host_backend_access(hb, va), 0);
    int devs[2] = {1, 0};
    REQUIRE(b->set_access(b->ctx, va, 2 * PAGE, devs, 2) == GM_OK);
    REQUIRE(b->set_access(b->ctx, va + 4 * PAGE, 2 * PAGE, devs, 1) == GM_OK);
    CHECK_EQ_U64(host_backend_access(hb, va + PAGE), 3);
    CHECK_EQ_U64(host_backend_access(hb, va + 5 * PAGE), 2);
    /* The two addresses differ, so an optimizing compiler may move the read above the write;
     * only the mapping makes them the same byte. volatile keeps the order. */
    ((volatile unsigned char *)(uintptr_t)(va + 100))[0] = 0x5a;
    CHECK(((volatile unsigned char *)(uintptr_t)(va + 4 * PAGE))[100] == 0x5a);
    uint64_t size = 0;
    CHECK_EQ_U64(host_backend_handle_at(hb, va + 5 * PAGE, &size), h);
    CHECK_EQ_U64(size, 2 * PAGE);

    host_backend_counts_t c = host_backend_counts(hb);
    CHECK_EQ_U64(c.mappings, 2);
    CHECK_EQ_U64(c.handles, 1);
    CHECK_EQ_U64(c.reservations, 1);
    CHECK(!host_backend_check_clean(hb));

    CHECK(b->unmap(b->ctx, va, 2 * PAGE) == GM_OK);
    CHECK(b->unmap(b->ctx, va + 4 * PAGE, 2 * PAGE) == GM_OK);
    CHECK(b->handle_release(b->ctx, h) == GM_OK);
    CHECK(b->va_release(b->ctx, va, 8 * PAGE) == GM_OK);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

static void test_misuse_is_refused(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    REQUIRE(hb);
    const gm_backend_t *b = host_backend_ops(hb);
    uint64_t va = 0, h = 0;
    REQUIRE(b->va_reserve(b->ctx, 4 * PAGE, &va) == GM_OK);
    REQUIRE(b->handle_create(b->ctx, 0, 2 * PAGE, &h) == GM_OK);
    CHECK(b->map(b->ctx, va, PAGE, h) == GM_ERR_INVALID_VALUE);                /* not whole */
    CHECK(b->map(b->ctx, va + 3 * PAGE, 2 * PAGE, h) == GM_ERR_INVALID_VALUE); /* past end */
    REQUIRE(b->map(b->ctx, va, 2 * PAGE, h) == GM_OK);
    CHECK(b->map(b->ctx, va + PAGE, 2 * PAGE, h) == GM_ERR_INVALID_VALUE); /* overlaps */
    CHECK(b->handle_release(b->ctx, h) == GM_ERR_INVALID_VALUE);           /* still mapped */
    CHECK(b->va_release(b->ctx, va, 4 * PAGE) == GM_ERR_INVALID_VALUE);    /* has mappings */
    int dev = 0;
    CHECK(b->set_access(b->ctx, va, 3 * PAGE, &dev, 1) == GM_ERR_INVALID_VALUE); /* hole */
    CHECK(b->unmap(b->ctx, va, PAGE) == GM_ERR_INVALID_VALUE);
    CHECK_EQ_U64(host_backend_counts(hb).misuses, 7);
    CHECK(b->unmap(b->ctx, va, 2 * PAGE) == GM_OK);
    CHECK(b->handle_release(b->ctx, h) == GM_OK);
    CHECK(b->va_release(b->ctx, va, 4 * PAGE) == GM_OK);
    CHECK(!host_backend_check_clean(hb)); /* the misuses stay on record */
    host_backend_destroy(hb);
}

static void test_capacity(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    REQUIRE(hb);
    const gm_backend_t *b = host_backend_ops(hb);
    host_backend_set_capacity(hb, 0, 3 * PAGE);
    uint64_t h1 = 0, h2 = 0;
    CHECK(b->handle_create(b->ctx, 0, 2 * PAGE, &h1) == GM_OK);
    CHECK(b->handle_create(b->ctx, 0, 2 * PAGE, &h2) == GM_ERR_OUT_OF_MEMORY);
    CHECK(b->handle_create(b->ctx, 0, PAGE, &h2) == GM_OK);
    CHECK(b->handle_release(b->ctx, h1) == GM_OK);
    CHECK(b->handle_release(b->ctx, h2) == GM_OK);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

static void test_fault_injection(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    REQUIRE(hb);
    const gm_backend_t *b = host_backend_ops(hb);
    uint64_t h[3] = {0};
    host_backend_fail_nth(hb, HOST_OP_HANDLE_CREATE, 2, GM_ERR_OUT_OF_MEMORY);
    CHECK(b->handle_create(b->ctx, 0, PAGE, &h[0]) == GM_OK);
    CHECK(b->handle_create(b->ctx, 0, PAGE, &h[1]) == GM_ERR_OUT_OF_MEMORY);
    CHECK(b->handle_create(b->ctx, 0, PAGE, &h[2]) == GM_OK);
    CHECK_EQ_U64(host_backend_calls(hb, HOST_OP_HANDLE_CREATE), 3);
    CHECK_EQ_U64(host_backend_counts(hb).handles, 2);
    uint64_t va = 0;
    host_backend_fail_nth(hb, HOST_OP_VA_RESERVE, 1, GM_ERR_BACKEND);
    CHECK(b->va_reserve(b->ctx, PAGE, &va) == GM_ERR_BACKEND);
    CHECK_EQ_U64(host_backend_counts(hb).reservations, 0);
    CHECK(b->handle_release(b->ctx, h[0]) == GM_OK);
    CHECK(b->handle_release(b->ctx, h[2]) == GM_OK);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

static void test_stream_order(void) {
    host_backend_t *hb = host_backend_create(PAGE, 1);
    REQUIRE(hb);
    const gm_backend_t *b = host_backend_ops(hb);
    uint64_t f1 = 0, f2 = 0, f3 = 0;
    host_backend_submit(hb, 1);
    host_backend_submit(hb, 1);
    REQUIRE(b->fence_record(b->ctx, 1, &f1) == GM_OK); /* covers both items of stream 1 */
    CHECK(b->fence_query(b->ctx, f1) == GM_ERR_NOT_READY);
    CHECK_EQ_U64(host_backend_complete(hb, 1, 1), 1);
    CHECK(b->fence_query(b->ctx, f1) == GM_ERR_NOT_READY);

    /* Stream 2 waits for f1: its later items cannot complete before stream 1 does. */
    REQUIRE(b->fence_wait_stream(b->ctx, 2, f1) == GM_OK);
    host_backend_submit(hb, 2);
    REQUIRE(b->fence_record(b->ctx, 2, &f2) == GM_OK);
    CHECK_EQ_U64(host_backend_complete(hb, 2, 10), 0);
    CHECK(b->fence_query(b->ctx, f2) == GM_ERR_NOT_READY);

    /* A host wait on f2 forces stream 1 too. */
    REQUIRE(b->fence_wait_host(b->ctx, f2) == GM_OK);
    CHECK(b->fence_query(b->ctx, f1) == GM_OK);
    CHECK(b->fence_query(b->ctx, f2) == GM_OK);
    CHECK_EQ_U64(host_backend_host_waits(hb), 1);
    CHECK_EQ_U64(host_backend_stream_waits(hb), 1);

    /* A fence on an idle stream is complete at once. */
    REQUIRE(b->fence_record(b->ctx, 3, &f3) == GM_OK);
    CHECK(b->fence_query(b->ctx, f3) == GM_OK);
    CHECK_EQ_U64(host_backend_counts(hb).fences, 3);
    b->fence_destroy(b->ctx, f1);
    b->fence_destroy(b->ctx, f2);
    b->fence_destroy(b->ctx, f3);
    host_backend_submit(hb, 4);
    host_backend_complete_all(hb);
    CHECK_EQ_U64(host_backend_completed(hb, 4), 1);
    CHECK(host_backend_check_clean(hb));
    host_backend_destroy(hb);
}

int main(void) {
    RUN_TEST(test_alias_is_real);
    RUN_TEST(test_misuse_is_refused);
    RUN_TEST(test_capacity);
    RUN_TEST(test_fault_injection);
    RUN_TEST(test_stream_order);
    return gm_check_summary();
}

/* Spare lists (core/common/util.c, gm_spare_t): an object taken is zeroed whatever was left in it,
 * a kept object is handed out again before any new one, the list keeps no more than its limit
 * (and none under AddressSanitizer, whose use-after-free check needs every free to be one), and
 * its end frees what it kept (the sanitizer and valgrind runs check for leaks). */
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "util.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEEPS false
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEEPS false
#endif
#endif
#ifndef KEEPS
#define KEEPS true
#endif

typedef struct object {
    unsigned char bytes[232];
} object_t;

static bool all_zero(const object_t *o) {
    for (size_t i = 0; i < sizeof o->bytes; i++)
        if (o->bytes[i])
            return false;
    return true;
}

static void test_taken_objects_are_zeroed_and_reused(void) {
    gm_spare_t spare = {.max = 4};
    object_t *a = gm_spare_take(&spare, sizeof *a);
    REQUIRE(a != NULL);
    CHECK(all_zero(a));
    memset(a, 0xA5, sizeof *a);
    gm_spare_give(&spare, a);
    CHECK_EQ_U64(spare.count, KEEPS ? 1 : 0);
    object_t *b = gm_spare_take(&spare, sizeof *b);
    REQUIRE(b != NULL);
    CHECK(all_zero(b));
    if (KEEPS)
        CHECK(b == a);
    CHECK_EQ_U64(spare.count, 0);
    gm_spare_give(&spare, b);
    gm_spare_give(&spare, NULL); /* nothing */
    CHECK_EQ_U64(spare.count, KEEPS ? 1 : 0);
    gm_spare_fini(&spare);
    CHECK(spare.head == NULL && spare.count == 0);
}

static void test_keeps_at_most_its_limit(void) {
    gm_spare_t spare = {.max = 3};
    object_t *objects[8];
    for (int i = 0; i < 8; i++)
        REQUIRE((objects[i] = gm_spare_take(&spare, sizeof *objects[i])) != NULL);
    for (int i = 0; i < 8; i++)
        gm_spare_give(&spare, objects[i]);
    CHECK_EQ_U64(spare.count, KEEPS ? 3 : 0);
    /* Handed out last kept first; then new ones. */
    for (int i = 0; i < 5; i++) {
        object_t *o = gm_spare_take(&spare, sizeof *o);
        REQUIRE(o != NULL);
        CHECK(all_zero(o));
        objects[i] = o;
    }
    if (KEEPS)
        CHECK_EQ_U64(spare.count, 0);
    for (int i = 0; i < 5; i++)
        gm_spare_give(&spare, objects[i]);
    gm_spare_fini(&spare);
    CHECK(spare.head == NULL && spare.count == 0);
}

int main(void) {
    RUN_TEST(test_taken_objects_are_zeroed_and_reused);
    RUN_TEST(test_keeps_at_most_its_limit);
    return gm_check_summary();
}

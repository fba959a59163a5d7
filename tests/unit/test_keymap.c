/* The hash map (core/common/keymap.c) against a plain array of keys: random puts, replaces,
 * removes (also only while the key maps to a given value) and lookups, iteration that removes as it
 * goes, and a map whose keys come and go (a graph's nodes) that does not fill with tombstones. */
#include <stdlib.h>

#include "check.h"
#include "keymap.h"

#define KEYS 4096

static uint64_t rand64(void) {
    return ((uint64_t)rand() << 40) ^ ((uint64_t)rand() << 20) ^ (uint64_t)rand();
}

/* The reference: key i is in the map with value values[i] while present[i]. */
typedef struct reference {
    uint64_t keys[KEYS];
    void *values[KEYS];
    bool present[KEYS];
} reference_t;

static void check_against(const gm_map_t *map, const reference_t *ref) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < KEYS; i++) {
        CHECK(gm_map_get(map, ref->keys[i]) == (ref->present[i] ? ref->values[i] : NULL));
        count += ref->present[i];
    }
    CHECK(map->count == count);
    uint32_t pos = 0, seen = 0;
    uint64_t key;
    void *value;
    while (gm_map_next(map, &pos, &key, &value))
        seen++;
    CHECK(seen == count);
}

static void test_random_operations(void) {
    static reference_t ref;
    for (uint32_t i = 0; i < KEYS; i++) /* keys that share low bits, as pointers do */
        ref.keys[i] = rand() % 2 ? rand64() : 0x7f0000000000ull + 64ull * i;
    gm_map_t map = {0};
    for (uint32_t step = 0; step < 200000; step++) {
        uint32_t i = (uint32_t)rand() % (step < 100000 ? KEYS : KEYS / 8);
        if (rand() % 3) {
            void *value = (void *)(uintptr_t)(step + 1);
            CHECK(gm_map_put(&map, ref.keys[i], value) == GM_OK);
            ref.values[i] = value;
            ref.present[i] = true;
        } else if (rand() % 2) {
            CHECK(gm_map_remove(&map, ref.keys[i]) == (ref.present[i] ? ref.values[i] : NULL));
            ref.present[i] = false;
        } else {
            /* Removed only while it maps to the value named: half the time an older one. */
            void *named = rand() % 2 ? ref.values[i] : (void *)(uintptr_t)(step + 1);
            bool removes = ref.present[i] && named == ref.values[i];
            CHECK(gm_map_remove_if(&map, ref.keys[i], named) == removes);
            ref.present[i] = ref.present[i] && !removes;
        }
        if (step % 20000 == 0)
            check_against(&map, &ref);
    }
    check_against(&map, &ref);
    gm_map_fini(&map);
}

/* Removing the entry iteration stands on, and every other one, visits every key once. */
static void test_remove_while_iterating(void) {
    gm_map_t map = {0};
    for (uint64_t k = 2; k < 2 + 3000; k++)
        CHECK(gm_map_put(&map, k * 4096, (void *)(uintptr_t)k) == GM_OK);
    uint32_t pos = 0, visited = 0;
    uint64_t key;
    void *value;
    while (gm_map_next(&map, &pos, &key, &value)) {
        CHECK(value == (void *)(uintptr_t)(key / 4096));
        CHECK(gm_map_remove(&map, key) == value);
        visited++;
    }
    CHECK(visited == 3000 && map.count == 0);
    gm_map_fini(&map);
}

/* Every key gone, in any order: no slot is left a tombstone, so a probe for a key not in the map
 * stops at once instead of walking the whole table (before, `used` stayed at the keys ever put
 * since the last rebuild). */
static void test_keys_that_come_and_go(void) {
    gm_map_t map = {0};
    uint64_t keys[1000];
    for (int round = 0; round < 20; round++) {
        for (uint32_t i = 0; i < 1000; i++) {
            keys[i] = rand64() | 2;
            CHECK(gm_map_put(&map, keys[i], &keys[i]) == GM_OK);
        }
        for (uint32_t i = 1000; i > 1; i--) { /* shuffled */
            uint32_t j = (uint32_t)rand() % i;
            uint64_t t = keys[i - 1];
            keys[i - 1] = keys[j];
            keys[j] = t;
        }
        for (uint32_t i = 0; i < 1000; i++)
            CHECK(gm_map_remove(&map, keys[i]) != NULL);
        CHECK(map.count == 0);
        CHECK(map.used == 0);
    }
    gm_map_fini(&map);
}

int main(void) {
    srand(77);
    RUN_TEST(test_random_operations);
    RUN_TEST(test_remove_while_iterating);
    RUN_TEST(test_keys_that_come_and_go);
    return gm_check_summary();
}

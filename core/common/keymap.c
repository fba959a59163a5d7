#include "keymap.h"

#include <stdlib.h>

/* Fibonacci hashing: the product's top bits, which every bit of the key reaches. Keys are
 * handles and addresses, aligned and often evenly spaced (a capture's nodes); the low bits of a
 * product mixed with one shift (the murmur step this replaces) clustered such keys, and probes
 * averaged 17 slots in bench_cpu_engine's capture, against 2 now. */
static uint32_t slot_of(uint64_t key, uint32_t cap) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctz(cap)));
}

void gm_map_fini(gm_map_t *map) {
    free(map->slots);
    *map = (gm_map_t){0};
}

static int64_t find(const gm_map_t *map, uint64_t key) {
    if (!map->cap)
        return -1;
    for (uint32_t i = slot_of(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
        const gm_map_slot_t *s = &map->slots[i];
        if (s->state == 0)
            return -1;
        if (s->state == 1 && s->key == key)
            return i;
    }
}

void *gm_map_get(const gm_map_t *map, uint64_t key) {
    int64_t i = find(map, key);
    return i < 0 ? NULL : map->slots[i].value;
}

static gm_status_t rehash(gm_map_t *map, uint32_t cap) {
    gm_map_t n = {0};
    n.slots = calloc(cap, sizeof *n.slots);
    if (!n.slots)
        return GM_ERR_OUT_OF_MEMORY;
    n.cap = cap;
    for (uint32_t i = 0; i < map->cap; i++) {
        if (map->slots[i].state != 1)
            continue;
        uint32_t j = slot_of(map->slots[i].key, cap);
        while (n.slots[j].state)
            j = (j + 1) & (cap - 1);
        n.slots[j] = map->slots[i];
        n.count++;
    }
    n.used = n.count;
    gm_map_fini(map);
    *map = n;
    return GM_OK;
}

/* gm_map_reserve's way when the room is not there. */
gm_status_t gm_map_rebuild_for(gm_map_t *map, uint32_t n) {
    /* A rebuilt table is at most half full, so a quarter of it is inserted before the next
     * rebuild: a map whose keys come and go (a graph's nodes, made at capture and gone with the
     * graph) would otherwise rebuild every few inserts once its keys filled 3/4 of a table. */
    uint64_t cap = 16;
    while (cap < ((uint64_t)map->count + n) * 2 + 2)
        cap *= 2;
    if (cap > UINT32_MAX / 2)
        return GM_ERR_OUT_OF_MEMORY;
    return rehash(map, (uint32_t)cap);
}

gm_status_t gm_map_put(gm_map_t *map, uint64_t key, void *value) {
    int64_t i = find(map, key);
    if (i >= 0) {
        map->slots[i].value = value;
        return GM_OK;
    }
    gm_status_t st = gm_map_reserve(map, 1);
    if (st != GM_OK)
        return st;
    uint32_t j = slot_of(key, map->cap);
    while (map->slots[j].state == 1)
        j = (j + 1) & (map->cap - 1);
    if (map->slots[j].state == 0)
        map->used++;
    map->slots[j] = (gm_map_slot_t){key, value, 1};
    map->count++;
    return GM_OK;
}

static void *remove_at(gm_map_t *map, int64_t i) {
    void *value = map->slots[i].value;
    map->count--;
    /* A slot before an empty one ends every probe that reaches it, so it need not be a tombstone,
     * nor need the tombstones before it: clearing them keeps a map whose keys come and go (a
     * graph's nodes, gone with the graph) from filling with tombstones that every probe for a
     * key not in it walks over. Nothing moves, so iteration stays safe. */
    uint32_t mask = map->cap - 1;
    map->slots[i].state = 2;
    if (map->slots[(i + 1) & mask].state != 0)
        return value;
    for (uint32_t j = (uint32_t)i; map->slots[j].state == 2; j = (j - 1) & mask) {
        map->slots[j].state = 0;
        map->used--;
    }
    return value;
}

void *gm_map_remove(gm_map_t *map, uint64_t key) {
    int64_t i = find(map, key);
    return i < 0 ? NULL : remove_at(map, i);
}

bool gm_map_remove_if(gm_map_t *map, uint64_t key, const void *value) {
    int64_t i = find(map, key);
    if (i < 0 || map->slots[i].value != value)
        return false;
    remove_at(map, i);
    return true;
}

bool gm_map_next(const gm_map_t *map, uint32_t *pos, uint64_t *key_out, void **value_out) {
    while (*pos < map->cap) {
        const gm_map_slot_t *s = &map->slots[(*pos)++];
        if (s->state == 1) {
            if (key_out)
                *key_out = s->key;
            if (value_out)
                *value_out = s->value;
            return true;
        }
    }
    return false;
}

#include "keymap.h"

#include <stdlib.h>

static uint32_t slot_of(uint64_t key, uint32_t cap) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)key & (cap - 1);
}

void gm_map_fini(gm_map_t *map) {
    free(map->keys);
    free(map->values);
    free(map->state);
    *map = (gm_map_t){0};
}

static int64_t find(const gm_map_t *map, uint64_t key) {
    if (!map->cap)
        return -1;
    for (uint32_t i = slot_of(key, map->cap);; i = (i + 1) & (map->cap - 1)) {
        if (map->state[i] == 0)
            return -1;
        if (map->state[i] == 1 && map->keys[i] == key)
            return i;
    }
}

void *gm_map_get(const gm_map_t *map, uint64_t key) {
    int64_t i = find(map, key);
    return i < 0 ? NULL : map->values[i];
}

static gm_status_t rehash(gm_map_t *map, uint32_t cap) {
    gm_map_t n = {0};
    n.keys = malloc((size_t)cap * sizeof *n.keys);
    n.values = malloc((size_t)cap * sizeof *n.values);
    n.state = calloc(cap, 1);
    if (!n.keys || !n.values || !n.state) {
        gm_map_fini(&n);
        return GM_ERR_OUT_OF_MEMORY;
    }
    n.cap = cap;
    for (uint32_t i = 0; i < map->cap; i++) {
        if (map->state[i] != 1)
            continue;
        uint32_t j = slot_of(map->keys[i], cap);
        while (n.state[j])
            j = (j + 1) & (cap - 1);
        n.state[j] = 1;
        n.keys[j] = map->keys[i];
        n.values[j] = map->values[i];
        n.count++;
    }
    n.used = n.count;
    gm_map_fini(map);
    *map = n;
    return GM_OK;
}

gm_status_t gm_map_reserve(gm_map_t *map, uint32_t n) {
    /* Keep the load (deleted slots included) under 3/4 so probes stay short and terminate. */
    uint64_t need = (uint64_t)map->used + n;
    if (need * 4 < (uint64_t)map->cap * 3)
        return GM_OK;
    uint64_t cap = 16;
    while (cap * 3 <= ((uint64_t)map->count + n) * 4 + 4)
        cap *= 2;
    if (cap > UINT32_MAX / 2)
        return GM_ERR_OUT_OF_MEMORY;
    return rehash(map, (uint32_t)cap);
}

gm_status_t gm_map_put(gm_map_t *map, uint64_t key, void *value) {
    int64_t i = find(map, key);
    if (i >= 0) {
        map->values[i] = value;
        return GM_OK;
    }
    gm_status_t st = gm_map_reserve(map, 1);
    if (st != GM_OK)
        return st;
    uint32_t j = slot_of(key, map->cap);
    while (map->state[j] == 1)
        j = (j + 1) & (map->cap - 1);
    if (map->state[j] == 0)
        map->used++;
    map->state[j] = 1;
    map->keys[j] = key;
    map->values[j] = value;
    map->count++;
    return GM_OK;
}

void *gm_map_remove(gm_map_t *map, uint64_t key) {
    int64_t i = find(map, key);
    if (i < 0)
        return NULL;
    map->state[i] = 2;
    map->count--;
    return map->values[i];
}

bool gm_map_next(const gm_map_t *map, uint32_t *pos, uint64_t *key_out, void **value_out) {
    while (*pos < map->cap) {
        uint32_t i = (*pos)++;
        if (map->state[i] == 1) {
            if (key_out)
                *key_out = map->keys[i];
            if (value_out)
                *value_out = map->values[i];
            return true;
        }
    }
    return false;
}

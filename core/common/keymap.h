/* A hash map from 64-bit keys (graph, node, exec, stream handles, addresses) to pointers: open
 * addressing with linear probing, so a lookup on the launch path is a few loads and no call. A
 * slot holds its key, value and state together: a lookup touches one cache line where three
 * parallel arrays took three, which is what a lookup costs between driver calls that have
 * evicted the table (the capture path makes several). */
#ifndef GRAPHMEM_KEYMAP_H
#define GRAPHMEM_KEYMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct gm_map_slot {
    uint64_t key;
    void *value;
    uint8_t state; /* 0 empty, 1 full, 2 deleted */
} gm_map_slot_t;

typedef struct gm_map {
    gm_map_slot_t *slots;
    uint32_t cap, count, used; /* used = full + deleted */
} gm_map_t;

void gm_map_fini(gm_map_t *map);
void *gm_map_get(const gm_map_t *map, uint64_t key);
/* Inserts or replaces. GM_ERR_OUT_OF_MEMORY when the table cannot grow (nothing changes). */
gm_status_t gm_map_put(gm_map_t *map, uint64_t key, void *value);
gm_status_t gm_map_rebuild_for(gm_map_t *map, uint32_t n);

/* Makes sure the next `n` insertions of new keys cannot fail. The load (deleted slots included)
 * stays under 3/4 so probes stay short and terminate; inline, since a capture asks a few times a
 * marker and the room is almost always there. */
static inline gm_status_t gm_map_reserve(gm_map_t *map, uint32_t n) {
    uint64_t need = (uint64_t)map->used + n;
    return need * 4 < (uint64_t)map->cap * 3 ? GM_OK : gm_map_rebuild_for(map, n);
}
void *gm_map_remove(gm_map_t *map, uint64_t key);
/* Removes `key` only while it maps to `value` (a key given to a new owner since stays); whether
 * it did. */
bool gm_map_remove_if(gm_map_t *map, uint64_t key, const void *value);

/* Iteration: `*pos` starts at 0; returns false at the end. Removing the current entry is safe. */
bool gm_map_next(const gm_map_t *map, uint32_t *pos, uint64_t *key_out, void **value_out);

#endif

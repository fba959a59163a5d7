/* Physical memory of one device: handles, their mappings, and the four graph-memory attributes.
 *
 * Handles live in arenas: an arena is a sequence of slots (a shared group arena, an exec's escape
 * arena), each slot a handle size and, while memory is held, the handle. A handle may be mapped
 * at many addresses at once. The pool can release idle handles (held but mapped nowhere) by
 * itself, emptying their slot, because an unmapped handle is in nobody's use: whoever unmapped it
 * proved with a fence that its last user had finished.
 *
 * Attributes (§A10): Used = bytes of handles mapped at least once now; Reserved =
 * bytes of handles held; each High is a high-water mark that can only be reset to the current
 * value. Not thread safe: the engine's lock covers it. */
#ifndef GRAPHMEM_POOL_H
#define GRAPHMEM_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "status.h"

typedef struct gm_pool gm_pool_t;
typedef struct gm_handle gm_handle_t;

typedef struct gm_arena {
    uint32_t count, cap;
    uint64_t *pages;       /* slot sizes in pages */
    uint64_t *start;       /* page offset of each slot in the arena */
    gm_handle_t **handles; /* NULL while the slot holds no memory */
    uint64_t total_pages;
} gm_arena_t;

/* Appends a slot of `pages` pages holding no memory. GM_ERR_OUT_OF_MEMORY on host OOM. */
gm_status_t gm_arena_append(gm_arena_t *arena, uint64_t pages);
/* Frees the slot tables; every slot must be empty (released first). */
void gm_arena_fini(gm_arena_t *arena);
/* First slot whose pages reach past `page` (count when none). */
uint32_t gm_arena_slot_at(const gm_arena_t *arena, uint64_t page);
/* Whether the two arenas are cut into the same slots. */
bool gm_arena_same_slots(const gm_arena_t *a, const gm_arena_t *b);
/* Exchanges the two arenas' slots with the memory they hold (each handle follows its slot). */
void gm_arena_swap(gm_arena_t *a, gm_arena_t *b);

typedef struct gm_pool_stats {
    uint64_t used, used_high, reserved, reserved_high;
} gm_pool_stats_t;

/* max_reserved: cap on Reserved (0 = none). release_threshold: idle bytes kept by
 * gm_pool_settle. */
gm_pool_t *gm_pool_create(const gm_backend_t *backend, int device, uint64_t max_reserved,
                          uint64_t release_threshold);
/* Releases handles still held (they must be unmapped) and frees the pool. */
void gm_pool_destroy(gm_pool_t *pool);

/* Fills slot `index` of `arena` with a new handle. GM_ERR_OUT_OF_MEMORY when it would pass the
 * cap or the device has no memory left; other backend errors as returned. Changes nothing on
 * error. */
gm_status_t gm_pool_fill(gm_pool_t *pool, gm_arena_t *arena, uint32_t index);
/* Releases the handle of a filled, unmapped slot; on backend failure the slot stays filled. */
gm_status_t gm_pool_empty(gm_pool_t *pool, gm_arena_t *arena, uint32_t index);

/* Maps the whole handle at `va` and gives the devices access. On failure nothing stays mapped,
 * except when the access failed and so did taking the mapping back: then the mapping is counted
 * (gm_handle_map_count) for the caller to keep and unmap later. */
gm_status_t gm_pool_map(gm_pool_t *pool, gm_handle_t *handle, uint64_t va, const int *devices,
                        int device_count);
gm_status_t gm_pool_unmap(gm_pool_t *pool, gm_handle_t *handle, uint64_t va);

uint64_t gm_handle_bytes(const gm_handle_t *handle);
uint32_t gm_handle_map_count(const gm_handle_t *handle);

/* Releases idle handles until at most `keep_bytes` of idle memory remain; returns bytes released.
 * Released slots become empty. */
uint64_t gm_pool_release_idle(gm_pool_t *pool, uint64_t keep_bytes);
uint64_t gm_pool_idle_bytes(const gm_pool_t *pool);
/* The automatic release: idle memory above the release threshold goes back. The engine calls it
 * once an operation is complete (never in the middle of mapping, when a handle may be idle for
 * an instant between its creation and its mapping). */
void gm_pool_settle(gm_pool_t *pool);

gm_pool_stats_t gm_pool_stats(const gm_pool_t *pool);
void gm_pool_reset_used_high(gm_pool_t *pool);
void gm_pool_reset_reserved_high(gm_pool_t *pool);
/* Whether `bytes` more could be reserved under the cap. */
bool gm_pool_fits(const gm_pool_t *pool, uint64_t bytes);

#endif

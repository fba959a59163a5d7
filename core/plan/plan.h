/* Offline planning of one graph: lifetimes from reachability, the exact lower bound, and the
 * physical plan. Input is the graph as a DAG of nodes plus allocations (alloc point, free point)
 * grouped into items (VA windows: one per large allocation, one per small-allocation chunk).
 * Output: each item's page offset in a physical arena, the arena cut into handles, and which
 * handles each item maps. Pure computation: no backend, no global state. */
#ifndef GRAPHMEM_PLAN_H
#define GRAPHMEM_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#define GM_NO_NODE UINT32_MAX

typedef struct gm_plan_alloc {
    uint64_t size;        /* bytes */
    uint32_t alloc_node;  /* node index in the DAG */
    uint32_t free_node;   /* GM_NO_NODE when not freed in this graph (escaping) */
    uint32_t item;        /* index of the item (VA window) holding it */
    uint64_t item_offset; /* byte offset of the allocation inside its item */
} gm_plan_alloc_t;

typedef struct gm_plan_input {
    uint32_t node_count;
    uint32_t edge_count;
    const uint32_t *edge_from, *edge_to;
    uint32_t alloc_count;
    const gm_plan_alloc_t *allocs;
    uint32_t item_count;
    uint64_t page;       /* physical page size (granularity), bytes */
    uint64_t max_handle; /* largest handle, bytes, multiple of page */
    bool no_alias;       /* every item gets memory of its own */
} gm_plan_input_t;

typedef struct gm_plan_item {
    uint64_t pages;      /* used extent of the window, in pages */
    bool escaping;       /* in the exec-private escape arena: it holds an allocation that
                          * outlives the graph, or shares pages such an allocation takes only
                          * after this item's allocations end */
    uint64_t arena_page; /* offset in its arena (shared or escape), in pages */
    /* An escaping item whose last pages go past the escape arena's end: those continue at page 0
     * of the shared arena (an item whose allocations all end inside the graph, placed across
     * the two arenas). 0 for every other item. */
    uint64_t spill_pages;
    uint32_t first_handle; /* handles [first_handle, first_handle + handle_count) of its arena */
    uint32_t handle_count; /* (the spill's handles of the shared arena are counted in mappings) */
} gm_plan_item_t;

typedef struct gm_plan_arena {
    uint64_t pages; /* total size in pages = sum of handle sizes */
    uint32_t handle_count;
    uint64_t *handle_pages; /* arena = concatenation of handles, each <= max_handle */
} gm_plan_arena_t;

typedef struct gm_plan {
    uint32_t item_count;
    gm_plan_item_t *items;
    gm_plan_arena_t shared; /* items that end inside the graph; shareable with other graphs */
    gm_plan_arena_t escape; /* escaping items; private to the exec */
    uint64_t lower_bound;   /* bytes: largest set of allocations live together (min cut) */
    uint64_t mappings;      /* sum over items of handle_count */
} gm_plan_t;

/* GM_ERR_INVALID_VALUE for a cycle or out-of-range indices, GM_ERR_OUT_OF_MEMORY when host memory
 * runs out. On success the caller owns `plan_out` and frees it with gm_plan_free. Guarantees: two
 * allocations that may be live at the same time never share a physical byte, and the footprint
 * (shared + escape arena) is never below the lower bound. */
gm_status_t gm_plan_build(const gm_plan_input_t *input, gm_plan_t *plan_out);
void gm_plan_free(gm_plan_t *plan);

#endif

/* The planner's working state, shared by plan.c and units.c (private to core/plan). It names the
 * input by its struct tag only: plan.h comes into units.c, never into this header, so the two
 * files' modules include no circle (tests/house/check_layers.py). */
#ifndef GRAPHMEM_PLAN_WORK_H
#define GRAPHMEM_PLAN_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include "dag.h"
#include "status.h"

struct gm_plan_input;
struct gm_plan;

/* Working state. Allocations of size 0 occupy no byte, so they conflict with nothing and are
 * left out; the others are renumbered group by group ("groups" = items holding at least one of
 * them), single-allocation groups first so that group conflicts copy allocation conflicts word by
 * word. */
typedef struct work {
    const struct gm_plan_input *in;
    gm_dag_t dag;
    uint32_t n;         /* allocations of non-zero size */
    uint32_t *alloc_of; /* internal index -> input allocation */
    uint32_t *alloc_node, *free_node;
    uint64_t *size;
    bool *proper;
    uint32_t m;           /* groups */
    uint32_t *group_item; /* group -> item */
    uint32_t *first;      /* group g holds internal allocations [first[g], first[g + 1]) */
    /* Units (place.h): group g holds units [unit_first[g], unit_first[g + 1]); unit u covers
     * pages [unit_at[u], unit_at[u] + unit_pages[u]) of its item, and the allocations on them are
     * [range_first[u], range_first[u + 1]) (those whose first page it is) and
     * extra[extra_first[u] .. extra_first[u + 1]) (those running on into it). */
    uint32_t units, extra_count, extra_cap;
    uint32_t unit_budget; /* units groups may still add beyond one each */
    uint32_t *unit_first, *range_first, *extra_first, *extra;
    uint64_t *unit_at, *unit_pages;
    uint64_t *before, *unit_conflict;
} work_t;

static inline uint64_t pages_of(uint64_t bytes, uint64_t page) {
    return bytes / page + (bytes % page != 0);
}

/* units.c: sorts each group's allocations by first page and cuts the groups into units (work_t),
 * each with the allocations on it; fills unit_first, range_first, extra_first, extra, unit_at,
 * unit_pages and units. GM_ERR_OUT_OF_MEMORY when host memory runs out. */
gm_status_t gm_plan_split_units(work_t *w);

/* arenas.c: each item's arena (shared or escape) and offset in it, both arenas' sizes, and per
 * item its pages in each arena (`shared_len`, `escape_len`; 0 where not there; an item with
 * spill pages has both, its shared ones from page 0). Needs the units,
 * their conflicts and the lower bound. GM_ERR_OUT_OF_MEMORY when host memory runs out. */
gm_status_t gm_plan_place_items(work_t *w, struct gm_plan *plan, uint64_t *shared_len,
                                uint64_t *escape_len);

#endif

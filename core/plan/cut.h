/* Cutting an arena into physical handles. A handle is mapped whole wherever any of it is needed,
 * so an item maps every handle its pages touch: the cuts decide the mapping count, not the
 * footprint. */
#ifndef GRAPHMEM_CUT_H
#define GRAPHMEM_CUT_H

#include <stdint.h>

#include "status.h"

/* Cuts [0, pages) into handles of at most max_pages for the items [start[i], start[i] + len[i])
 * (len 0: ignored). Every item maps each handle it touches whole, and a mapping costs a fixed
 * part and a part that grows with its size (bench/RESULTS.md, "First launch and upload": about
 * 55 us a mapping and 0.05 us a MiB mapped on an H100). So the cut minimises the sum over
 * (item, handle) intersections of map_cost_pages + the handle's pages, then the number of
 * handles: large handles where few items map them, handles that follow item boundaries where
 * many small items would each map a large one.
 *
 * Exact (dynamic programming over cut positions, pages x max_pages steps) while that is at most
 * GM_CUT_EXACT_WORK; beyond, the number of intersections alone is minimised (pages steps) up to
 * GM_CUT_EXACT_PAGES pages, and whole max_pages pieces are cut beyond that. On success
 * *handle_pages_out is malloc'ed (NULL when pages == 0). */
#define GM_CUT_EXACT_PAGES (1u << 21)
#define GM_CUT_EXACT_WORK (1u << 24)
/* A mapping's fixed cost in bytes mapped: 55 us against 0.05 us a MiB is about 1 GiB. */
#define GM_CUT_MAP_COST_BYTES (1ull << 30)

gm_status_t gm_cut_arena(uint64_t pages, uint64_t max_pages, uint64_t map_cost_pages,
                         uint32_t count, const uint64_t *start, const uint64_t *len,
                         uint64_t **handle_pages_out, uint32_t *handle_count_out);

#endif

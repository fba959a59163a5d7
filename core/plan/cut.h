/* Cutting an arena into physical handles. A handle is mapped whole wherever any of it is needed,
 * so an item maps every handle its pages touch: the cuts decide the mapping count, not the
 * footprint. */
#ifndef GRAPHMEM_CUT_H
#define GRAPHMEM_CUT_H

#include <stdint.h>

#include "status.h"

/* Cuts [0, pages) into handles of at most max_pages for the items [start[i], start[i] + len[i])
 * (len 0: ignored). Every item maps each handle it touches whole; a mapping costs a fixed part
 * and a part that grows with its size, and each handle its making (cuMemCreate) once its memory
 * is first needed (bench/RESULTS.md, "First launch and upload"). So the cut minimises the sum
 * over (item, handle) intersections of cost.map_pages + the handle's pages, plus
 * cost.handle_pages a handle, then the number of handles: large handles where few items map
 * them, handles that follow item boundaries where many small items would each map a large one.
 *
 * Exact (dynamic programming over cut positions, pages x max_pages steps) while that is at most
 * GM_CUT_EXACT_WORK; beyond, the number of intersections alone is minimised (pages steps) up to
 * GM_CUT_EXACT_PAGES pages, and whole max_pages pieces are cut beyond that. On success
 * *handle_pages_out is malloc'ed (NULL when pages == 0). */
#define GM_CUT_EXACT_PAGES (1u << 21)
#define GM_CUT_EXACT_WORK (1u << 24)
/* The fixed costs in bytes mapped, at 0.05 us a MiB: a mapping (map and access, about 38 us) and
 * a handle (about 25 us), measured on an H100 (bench/RESULTS.md). */
#define GM_CUT_MAP_COST_BYTES (768ull << 20)
#define GM_CUT_HANDLE_COST_BYTES (512ull << 20)

typedef struct gm_cut_cost {
    uint64_t map_pages, handle_pages;
} gm_cut_cost_t;

gm_status_t gm_cut_arena(uint64_t pages, uint64_t max_pages, gm_cut_cost_t cost, uint32_t count,
                         const uint64_t *start, const uint64_t *len, uint64_t **handle_pages_out,
                         uint32_t *handle_count_out);

#endif

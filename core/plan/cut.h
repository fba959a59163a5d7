/* Cutting an arena into physical handles. A handle is mapped whole wherever any of it is needed,
 * so an item maps every handle its pages touch: the cuts decide the mapping count, not the
 * footprint. */
#ifndef GRAPHMEM_CUT_H
#define GRAPHMEM_CUT_H

#include <stdint.h>

#include "status.h"

/* Cuts [0, pages) into handles of at most max_pages, minimising first the number of (item, handle)
 * intersections over the items [start[i], start[i] + len[i]) (len 0: ignored), then the number of
 * handles. Exact (dynamic programming over cut positions) up to GM_CUT_EXACT_PAGES pages, whole
 * max_pages pieces beyond. On success *handle_pages_out is malloc'ed (NULL when pages == 0). */
#define GM_CUT_EXACT_PAGES (1u << 21)

gm_status_t gm_cut_arena(uint64_t pages, uint64_t max_pages, uint32_t count, const uint64_t *start,
                         const uint64_t *len, uint64_t **handle_pages_out,
                         uint32_t *handle_count_out);

#endif

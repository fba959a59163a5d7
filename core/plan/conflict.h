/* Which groups of allocations may be live at the same time, as a symmetric bit matrix. */
#ifndef GRAPHMEM_CONFLICT_H
#define GRAPHMEM_CONFLICT_H

#include <stdbool.h>
#include <stdint.h>

#include "dag.h"
#include "status.h"

/* Allocations i and j conflict when i != j and neither ends before the other starts; `proper`
 * and `before` come from gm_dag_free_before_alloc for the same allocations. Group g holds
 * allocations [first[g], first[g + 1]): allocations are numbered group by group, first[0] = 0 and
 * first[m] = n (GM_ERR_INVALID_VALUE otherwise), and, when `extra_first` is not NULL, also
 * extra[extra_first[g] .. extra_first[g + 1]) (allocations of other groups' ranges: the pages of a
 * packed chunk that an allocation numbered with an earlier page runs on into). Writes `out`: m
 * rows of gm_bits_words(m) words, bit h of row g set when g != h and some allocation of g
 * conflicts with some allocation of h or both name the same one; bits past m stay clear. */
gm_status_t gm_conflict_groups(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                               const uint32_t *free_node, const bool *proper,
                               const uint64_t *before, uint32_t m, const uint32_t *first,
                               const uint32_t *extra_first, const uint32_t *extra, uint64_t *out);

#endif

/* Which allocations may be live at the same time, as a symmetric bit matrix. */
#ifndef GRAPHMEM_CONFLICT_H
#define GRAPHMEM_CONFLICT_H

#include <stdint.h>

#include "status.h"

/* `before`: n rows of gm_bits_words(n) words, row j bit i = allocation i ends before j starts
 * (gm_dag_free_before_alloc); `after`: its transpose (gm_dag_alloc_after_free). Writes `conflict`
 * (same shape, may be `after` itself): bit j of row i set when i != j and neither ends before the
 * other starts. Bits past n stay clear. */
gm_status_t gm_conflict_build(uint32_t n, const uint64_t *before, const uint64_t *after,
                              uint64_t *conflict);

/* Lifts allocation conflicts to groups: group g holds allocations [first[g], first[g + 1]) (so
 * allocations must be numbered group by group). Writes `out`: m rows of gm_bits_words(m) words,
 * bit h of row g set when g != h and some allocation of g conflicts with some allocation of h. */
gm_status_t gm_conflict_groups(uint32_t n, const uint64_t *conflict, uint32_t m,
                               const uint32_t *first, uint64_t *out);

#endif

/* Small pieces core/ and shim/ share: growable arrays and a monotonic clock. */
#ifndef GRAPHMEM_UTIL_H
#define GRAPHMEM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Makes room for `need` elements of `elem` bytes in `*array` (capacity `*cap`, doubling, so n
 * appends cost O(n) in all). On failure nothing the caller can see changes. */
gm_status_t gm_grow(void **array, uint32_t *cap, uint32_t need, size_t elem);

/* The same for `count` arrays indexed alike that share one capacity: each grows to the same new
 * capacity, and `*cap` moves only when all did (an array that grew before a failure is merely
 * larger than `*cap` says). */
gm_status_t gm_grow_parallel(void **const arrays[], const size_t elems[], unsigned count,
                             uint32_t *cap, uint32_t need);

uint64_t gm_now_ns(void);

#endif

/* Growable arrays: the one helper every part of graphmem uses to make room. */
#ifndef GRAPHMEM_ARRAY_H
#define GRAPHMEM_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Makes *array hold at least `need` elements of `elem` bytes (capacity doubles); on failure the
 * array is unchanged and GM_ERR_OUT_OF_MEMORY is returned. */
gm_status_t gm_grow(void **array, uint32_t *cap, uint32_t need, size_t elem);

#endif

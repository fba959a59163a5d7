#include "array.h"

#include <stdlib.h>

gm_status_t gm_grow(void **array, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap)
        return GM_OK;
    uint64_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    if (ncap > UINT32_MAX)
        return GM_ERR_OUT_OF_MEMORY;
    void *p = realloc(*array, ncap * elem);
    if (!p)
        return GM_ERR_OUT_OF_MEMORY;
    *array = p;
    *cap = (uint32_t)ncap;
    return GM_OK;
}

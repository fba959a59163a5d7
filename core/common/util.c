#include "util.h"

#include <stdlib.h>
#include <time.h>

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

gm_status_t gm_grow_parallel(void **const arrays[], const size_t elems[], unsigned count,
                             uint32_t *cap, uint32_t need) {
    uint32_t grown = *cap;
    for (unsigned i = 0; i < count; i++) {
        grown = *cap;
        if (gm_grow(arrays[i], &grown, need, elems[i]) != GM_OK)
            return GM_ERR_OUT_OF_MEMORY;
    }
    *cap = grown;
    return GM_OK;
}

uint64_t gm_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void gm_free_each(void *const pointers[], size_t count) {
    for (size_t i = 0; i < count; i++)
        free(pointers[i]);
}

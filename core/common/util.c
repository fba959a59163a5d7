#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* gm_grow's way when the room is not there (`need` > `*cap`, which gm_grow tested). */
gm_status_t gm_grow_to(void **array, uint32_t *cap, uint32_t need, size_t elem) {
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

void gm_nap(long ns) {
    struct timespec nap = {ns / 1000000000L, ns % 1000000000L};
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    nanosleep(&nap, NULL);
    pthread_setcancelstate(cancel, NULL);
}

#if defined(__SANITIZE_ADDRESS__)
#define SPARE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARE_UNDER_ASAN 1
#endif
#endif
#ifndef SPARE_UNDER_ASAN
#define SPARE_UNDER_ASAN 0
#endif

/* How many objects `spare` keeps: none under AddressSanitizer. */
static uint32_t spare_kept(const gm_spare_t *spare) {
    return SPARE_UNDER_ASAN ? 0 : spare->max;
}

void *gm_spare_take(gm_spare_t *spare, size_t size) {
    void *object = spare->head;
    if (!object)
        return calloc(1, size);
    memcpy(&spare->head, object, sizeof spare->head);
    spare->count--;
    memset(object, 0, size);
    return object;
}

void gm_spare_give(gm_spare_t *spare, void *object) {
    if (!object)
        return;
    if (spare->count >= spare_kept(spare)) {
        free(object);
        return;
    }
    memcpy(object, &spare->head, sizeof spare->head);
    spare->head = object;
    spare->count++;
}

void gm_spare_fini(gm_spare_t *spare) {
    while (spare->head) {
        void *object = spare->head;
        memcpy(&spare->head, object, sizeof spare->head);
        free(object);
    }
    spare->count = 0;
}

void gm_free_each(void *const pointers[], size_t count) {
    for (size_t i = 0; i < count; i++)
        free(pointers[i]);
}

#include "driver.h"

#include <stddef.h>

gm_driver_table_t gm_drv;

static const struct driver_entry {
    const char *name;
    bool optional;
} driver_entries[] = {
#define GM_DRIVER(name, params) {#name, false},
#define GM_DRIVER_OPTIONAL(name, params) {#name, true},
#include "driver.def"
#undef GM_DRIVER_OPTIONAL
#undef GM_DRIVER
};

const char *gm_driver_resolve(void *driver) {
    void **slots = (void **)&gm_drv;
    const char *missing = NULL;
    for (size_t i = 0; i < sizeof driver_entries / sizeof driver_entries[0]; i++) {
        slots[i] = driver ? gm_real_dlsym(driver, driver_entries[i].name) : NULL;
        if (slots[i] == NULL && !driver_entries[i].optional && missing == NULL)
            missing = driver_entries[i].name;
    }
    return missing;
}

gm_relaxed_t gm_relaxed_begin(void) {
    gm_relaxed_t relaxed = {CU_STREAM_CAPTURE_MODE_RELAXED, false};
    /* Outside any capture the exchange is pure overhead: skip it. */
    if (atomic_load_explicit(&gm_captures_in_flight, memory_order_relaxed) == 0 ||
        gm_drv.cuThreadExchangeStreamCaptureMode == NULL)
        return relaxed;
    relaxed.active = gm_drv.cuThreadExchangeStreamCaptureMode(&relaxed.saved) == CUDA_SUCCESS;
    return relaxed;
}

void gm_relaxed_end(gm_relaxed_t relaxed) {
    if (relaxed.active)
        gm_drv.cuThreadExchangeStreamCaptureMode(&relaxed.saved);
}

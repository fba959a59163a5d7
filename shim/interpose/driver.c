/* The driver entries graphmem calls for its own work, resolved once from driver.def. Needs only the
 * real dlsym. */
#include "driver.h"

#include <stddef.h>

#include "doors.h"

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

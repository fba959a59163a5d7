/* Trim outside a launch: the entry (cuDeviceGraphMemTrim) and the use-after-free check's poll.
 * What may be unmapped and given back is decided part by part in engine_part.c, with fences
 * already recorded only (semantics §A11.1). */
#include "engine_trim.h"

#include "engine_cover.h"
#include "engine_part.h"

void gm_uaf_poll(gm_engine_t *e) {
    for (gm_part_t *p = e->parts, *next; p; p = next) {
        next = p->all_next;
        if (p->shared_maps.count || p->escape_maps.count)
            gm_part_trim(e, p, false);
        gm_part_try_reclaim(e, p);
    }
    for (int d = 0; d < e->config.device_count; d++)
        gm_pool_settle(e->pools[d]);
}

gm_status_t gm_engine_trim(gm_engine_t *e, int device) {
    if (device < 0 || device >= e->config.device_count)
        return GM_ERR_INVALID_DEVICE;
    gm_engine_lock(e);
    gm_cover_wait(e); /* a covered page must stay as the driver's check found it */
    gm_trim_device(e, device);
    gm_engine_unlock(e);
    return GM_OK;
}

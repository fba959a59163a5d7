/* What may be unmapped and given back, decided with fences already recorded: memory is kept while
 * it is mapped for a scheduled or running launch or holds an unfreed allocation (semantics
 * §A11.1). Nothing here records a fence or waits: a part whose fence has not completed is simply
 * kept, so trim, release and trim-for-room can never unmap memory a launch still uses. */
#include "engine_internal.h"

bool gm_part_idle(gm_engine_t *e, gm_part_t *p) {
    if (!gm_fence_done(e, p->run_fence))
        return false;
    gm_fence_set(e, &p->run_fence, NULL);
    return true;
}

bool gm_part_points_done(gm_engine_t *e, gm_part_t *p) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->point_count; i++) {
        if (gm_fence_done(e, p->points[i].fence))
            gm_fence_unref(e, p->points[i].fence);
        else
            p->points[kept++] = p->points[i];
    }
    p->point_count = kept;
    return kept == 0;
}

/* Unmaps what of `p` no launch or allocation needs; with `release`, gives its escape arena
 * back too. */
static void part_trim(gm_engine_t *e, gm_part_t *p, bool release) {
    if (p->busy || !gm_part_idle(e, p))
        return;
    gm_part_unmap_shared(e, p);
    if (p->unfreed || !gm_part_points_done(e, p))
        return;
    gm_part_unmap_escape(e, p);
    for (uint32_t i = 0; release && !p->escape_maps.count && i < p->escape.count; i++)
        if (p->escape.handles[i])
            gm_pool_empty(e->pools[p->device], &p->escape, i);
}

void gm_trim_device(gm_engine_t *e, int device) {
    for (gm_part_t *p = e->parts, *next; p; p = next) {
        next = p->all_next;
        if (p->device != device)
            continue;
        part_trim(e, p, true);
        gm_part_try_reclaim(e, p);
    }
    gm_pool_release_idle(e->pools[device], 0);
}

void gm_uaf_poll(gm_engine_t *e) {
    for (gm_part_t *p = e->parts, *next; p; p = next) {
        next = p->all_next;
        if (p->shared_maps.count || p->escape_maps.count)
            part_trim(e, p, false);
        gm_part_try_reclaim(e, p);
    }
    for (int d = 0; d < e->config.device_count; d++)
        gm_pool_settle(e->pools[d]);
}

gm_status_t gm_engine_trim(gm_engine_t *e, int device) {
    if (device < 0 || device >= e->config.device_count)
        return GM_ERR_INVALID_DEVICE;
    pthread_mutex_lock(&e->lock);
    gm_trim_device(e, device);
    pthread_mutex_unlock(&e->lock);
    return GM_OK;
}

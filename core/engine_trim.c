/* What may be unmapped and given back, decided with fences: memory is kept while it is mapped
 * for a scheduled or running launch or holds an unfreed allocation (semantics §A11.1). */
#include "engine_internal.h"

bool gm_part_idle(gm_engine_t *e, gm_part_t *p, bool wait) {
    if (!p->running)
        return true;
    const gm_backend_t *b = &e->backend;
    if (!p->run_fence) {
        if (p->run_stream == GM_NO_STREAM) { /* its stream is gone and could not be fenced */
            p->running = false;
            return true;
        }
        if (b->fence_record(b->ctx, p->run_stream, &p->run_fence) != GM_OK) {
            p->run_fence = 0;
            return false;
        }
    }
    gm_status_t st = b->fence_query(b->ctx, p->run_fence);
    if (st == GM_ERR_NOT_READY && wait)
        st = b->fence_wait_host(b->ctx, p->run_fence);
    if (st != GM_OK)
        return false;
    b->fence_destroy(b->ctx, p->run_fence);
    p->run_fence = 0;
    p->running = false;
    return true;
}

bool gm_part_points_done(gm_engine_t *e, gm_part_t *p) {
    const gm_backend_t *b = &e->backend;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->point_count; i++) {
        gm_free_point_t pt = p->points[i];
        bool done = pt.stream == GM_NO_STREAM && !pt.fence;
        if (!done && !pt.fence && b->fence_record(b->ctx, pt.stream, &pt.fence) != GM_OK)
            pt.fence = 0;
        if (!done && pt.fence && b->fence_query(b->ctx, pt.fence) == GM_OK) {
            b->fence_destroy(b->ctx, pt.fence);
            done = true;
        }
        if (!done)
            p->points[kept++] = pt;
    }
    p->point_count = kept;
    return kept == 0;
}

/* Unmaps what of `p` no launch or allocation needs; with `release`, gives its escape arena
 * back too. */
static void part_trim(gm_engine_t *e, gm_part_t *p, bool release) {
    if (p->busy || !gm_part_idle(e, p, false))
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

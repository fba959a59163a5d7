/* Launch, upload, and the frees that happen outside graphs. */
#include <stdlib.h>

#include "engine_internal.h"

static bool part_ready(const gm_part_t *p, uint64_t stream, bool upload) {
    const gm_group_t *g = p->group;
    return g && g->last_stream == stream && !g->last_fence && p->shared_maps.mapped &&
           p->escape_maps.mapped && (upload || !p->point_count);
}

/* Orders the launch after every free of the part's allocations enqueued on other streams: the
 * launch reuses their bytes. */
static gm_status_t wait_points(gm_engine_t *e, gm_part_t *p, uint64_t stream) {
    const gm_backend_t *b = &e->backend;
    while (p->point_count) {
        gm_free_point_t *pt = &p->points[p->point_count - 1];
        bool unknown = pt->stream == GM_NO_STREAM && !pt->fence; /* see stream_destroyed */
        if (!unknown && (pt->stream != stream || pt->fence)) {
            if (!pt->fence) {
                gm_status_t st = b->fence_record(b->ctx, pt->stream, &pt->fence);
                if (st != GM_OK)
                    return st;
            }
            gm_status_t st = b->fence_wait_stream(b->ctx, stream, pt->fence);
            if (st != GM_OK)
                return st;
            b->fence_destroy(b->ctx, pt->fence);
            p->exec->report.waits++;
        }
        p->point_count--;
    }
    return GM_OK;
}

static gm_status_t part_prepare(gm_engine_t *e, gm_part_t *p, uint64_t stream, bool upload) {
    gm_status_t st = gm_part_enter(e, p, stream);
    if (st == GM_OK && !upload)
        st = wait_points(e, p, stream);
    if (st == GM_OK && !(p->shared_maps.mapped && p->escape_maps.mapped)) {
        bool again = p->mapped_once;
        st = gm_part_map(e, p);
        if (st == GM_OK) {
            p->exec->report.remaps += again;
            p->mapped_once = true;
        }
    }
    return st;
}

/* GM_OK when `x` may launch on `stream` as it is, GM_ERR_NOT_READY when its parts need preparing,
 * GM_ERR_INVALID_VALUE when the driver would refuse the launch. */
static gm_status_t launch_check(gm_engine_t *e, gm_exec_t *x, uint64_t stream, bool upload_only) {
    /* A free of another graph's allocation that is not live now (never made by a launch, or
     * freed already): the driver refuses the launch (measured on driver 580). */
    for (uint32_t i = 0; !upload_only && i < x->foreign_count; i++)
        if (!x->foreign[i]->live)
            return GM_ERR_INVALID_VALUE;
    bool ready = !e->config.uaf_check;
    for (uint32_t i = 0; i < x->part_count; i++) {
        gm_part_t *p = x->parts[i];
        /* Relaunch while an allocation of the previous launch is unfreed (semantics §A6.1). */
        if (p->unfreed && !upload_only && !(x->flags & GM_EXEC_AUTO_FREE))
            return GM_ERR_INVALID_VALUE;
        ready = ready && part_ready(p, stream, upload_only);
    }
    return ready ? GM_OK : GM_ERR_NOT_READY;
}

gm_status_t gm_engine_launch_try(gm_engine_t *e, uint64_t exec, uint64_t stream, bool upload_only) {
    pthread_mutex_lock(&e->lock);
    gm_exec_t *x = gm_map_get(&e->execs, exec);
    gm_status_t st = !x ? GM_ERR_INVALID_VALUE : launch_check(e, x, stream, upload_only);
    pthread_mutex_unlock(&e->lock);
    return st == GM_ERR_INVALID_VALUE && x ? GM_ERR_NOT_READY : st;
}

gm_status_t gm_engine_launch_begin(gm_engine_t *e, uint64_t exec, uint64_t stream,
                                   bool upload_only) {
    pthread_mutex_lock(&e->lock);
    gm_status_t st = GM_ERR_INVALID_VALUE;
    gm_exec_t *x = gm_map_get(&e->execs, exec);
    if (x)
        st = launch_check(e, x, stream, upload_only);
    if (st != GM_ERR_NOT_READY)
        goto out;
    st = GM_OK;
    if (e->config.uaf_check)
        gm_uaf_poll(e);
    for (uint32_t i = 0; i < x->part_count && st == GM_OK; i++) {
        st = part_prepare(e, x->parts[i], stream, upload_only);
        gm_pool_settle(e->pools[x->parts[i]->device]);
    }
out:
    pthread_mutex_unlock(&e->lock);
    return st;
}

static gm_status_t add_point(gm_part_t *p, uint64_t stream, uint64_t fence) {
    gm_status_t st =
        gm_grow((void **)&p->points, &p->point_cap, p->point_count + 1, sizeof *p->points);
    if (st == GM_OK)
        p->points[p->point_count++] = (gm_free_point_t){stream, fence};
    return st;
}

/* The allocation is freed: its part may reuse or give back its memory once the free is done. */
static void mark_freed(gm_record_t *r) {
    gm_part_t *p = r->live_part;
    r->live = false;
    r->live_part = NULL;
    if (p)
        p->unfreed--;
}

/* A launch of `x` on `stream` freed allocations of other graphs. */
static void free_foreign(gm_engine_t *e, gm_exec_t *x, uint64_t stream) {
    const gm_backend_t *b = &e->backend;
    for (uint32_t i = 0; i < x->foreign_count; i++) {
        gm_record_t *r = x->foreign[i];
        if (!r->live)
            continue;
        gm_part_t *p = r->live_part;
        if (p && add_point(p, stream, 0) != GM_OK) {
            /* No room to remember the stream: wait for the free on the host instead. */
            uint64_t f;
            if (b->fence_record(b->ctx, stream, &f) == GM_OK) {
                b->fence_wait_host(b->ctx, f);
                b->fence_destroy(b->ctx, f);
            }
        }
        mark_freed(r);
    }
}

void gm_engine_launch_end(gm_engine_t *e, uint64_t exec, uint64_t stream, bool upload_only,
                          bool succeeded) {
    pthread_mutex_lock(&e->lock);
    gm_exec_t *x = gm_map_get(&e->execs, exec);
    if (!x || !succeeded)
        goto out;
    const gm_backend_t *b = &e->backend;
    if (upload_only)
        x->report.uploads++;
    else
        x->report.launches++;
    for (uint32_t i = 0; i < x->part_count; i++) {
        gm_part_t *p = x->parts[i];
        if (p->run_fence) { /* proof about an earlier run: stale now */
            b->fence_destroy(b->ctx, p->run_fence);
            p->run_fence = 0;
        }
        p->running = true;
        p->run_stream = stream;
        if (e->config.uaf_check && b->fence_record(b->ctx, stream, &p->run_fence) != GM_OK)
            p->run_fence = 0;
        if (upload_only)
            continue;
        if (p->group) /* who ran last decides whether the next mover must wait */
            p->group->last_part = p;
        /* AutoFreeOnLaunch: the previous allocations are freed and made again, same bytes. */
        for (uint32_t k = 0; k < p->escaping_count; k++) {
            gm_record_t *r = p->escaping[k];
            if (!r->live) {
                r->live = true;
                r->live_part = p;
                p->unfreed++;
            }
        }
    }
    if (!upload_only && x->foreign_count)
        free_foreign(e, x, stream);
out:
    pthread_mutex_unlock(&e->lock);
}

gm_status_t gm_engine_free_outside(gm_engine_t *e, uint64_t va, uint64_t stream) {
    pthread_mutex_lock(&e->lock);
    gm_status_t st = GM_ERR_INVALID_VALUE;
    gm_record_t *r = gm_map_get(&e->addresses, va);
    while (r && !r->live)
        r = r->va_next;
    if (!r)
        goto out;
    gm_part_t *p = r->live_part;
    if (stream != GM_NO_STREAM && p) {
        const gm_backend_t *b = &e->backend;
        uint64_t f;
        if ((st = gm_grow((void **)&p->points, &p->point_cap, p->point_count + 1,
                          sizeof *p->points)) != GM_OK ||
            (st = b->fence_record(b->ctx, stream, &f)) != GM_OK)
            goto out;
        add_point(p, stream, f); /* room reserved above */
    }
    mark_freed(r);
    if (e->config.uaf_check)
        gm_uaf_poll(e);
    st = GM_OK;
out:
    pthread_mutex_unlock(&e->lock);
    return st;
}

void gm_engine_stream_destroyed(gm_engine_t *e, uint64_t stream) {
    pthread_mutex_lock(&e->lock);
    const gm_backend_t *b = &e->backend;
    /* A destroyed stream cannot be fenced later, and its handle may come back for a new stream:
     * fence what it ran now and forget the stream. Without a fence (backend refused) its work
     * is taken as finished, the best that is left. */
    for (gm_part_t *p = e->parts; p; p = p->all_next) {
        if (p->running && p->run_stream == stream) {
            if (!p->run_fence && b->fence_record(b->ctx, stream, &p->run_fence) != GM_OK)
                p->run_fence = 0;
            p->run_stream = GM_NO_STREAM;
        }
        for (uint32_t i = 0; i < p->point_count; i++) {
            gm_free_point_t *pt = &p->points[i];
            if (pt->stream == stream && !pt->fence &&
                b->fence_record(b->ctx, stream, &pt->fence) != GM_OK)
                pt->fence = 0;
            if (pt->stream == stream)
                pt->stream = GM_NO_STREAM;
        }
        gm_group_t *g = p->group;
        if (g && g->last_stream == stream && !g->last_fence) {
            if (b->fence_record(b->ctx, stream, &g->last_fence) != GM_OK)
                g->last_fence = 0;
            g->last_stream = GM_NO_STREAM;
        }
    }
    pthread_mutex_unlock(&e->lock);
}

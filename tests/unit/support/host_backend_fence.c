/* Simulated GPU order: one queue of work items per stream, fences as queue positions. */
#include "host_backend_internal.h"

#include <stdlib.h>
#include <time.h>

static hb_stream_t *stream_get(host_backend_t *hb, uint64_t key, uint32_t *index_out) {
    for (size_t i = 0; i < hb->stream_count; i++) {
        if (hb->streams[i].key == key) {
            if (index_out)
                *index_out = (uint32_t)i;
            return &hb->streams[i];
        }
    }
    hb->streams = hb_grow(hb->streams, &hb->stream_cap, hb->stream_count, sizeof *hb->streams);
    hb->streams[hb->stream_count] = (hb_stream_t){.key = key};
    if (index_out)
        *index_out = (uint32_t)hb->stream_count;
    return &hb->streams[hb->stream_count++];
}

static const hb_wait_t *wait_at(const hb_stream_t *s, uint64_t pos) {
    for (size_t i = 0; i < s->wait_count; i++)
        if (s->waits[i].pos == pos)
            return &s->waits[i];
    return NULL;
}

/* Completes stream `si` through `pos`, forcing what it waits on (a host wait). Terminates:
 * a wait only ever refers to a fence recorded before it. In worker mode the workers complete
 * items: wait for them. */
static void complete_through(host_backend_t *hb, uint32_t si, uint64_t pos) {
    if (hb->workers) {
        while (hb->streams[si].completed < pos)
            pthread_cond_wait(&hb->progress, &hb->lock);
        return;
    }
    while (hb->streams[si].completed < pos) {
        const hb_wait_t *w = wait_at(&hb->streams[si], hb->streams[si].completed + 1);
        if (w)
            complete_through(hb, w->on_stream, w->on_pos);
        hb->streams[si].completed++;
    }
}

gm_status_t hb_fence_record(void *ctx, uint64_t stream, uint64_t *fence_out) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_FENCE_RECORD, &st))
        goto out;
    uint32_t si;
    hb_stream_t *s = stream_get(hb, stream, &si);
    if (s->capturing) {
        st = hb_misuse(hb, "fence_record on a capturing stream");
        goto out;
    }
    hb->fences = hb_grow(hb->fences, &hb->fence_cap, hb->fence_count, sizeof *hb->fences);
    hb->fences[hb->fence_count++] = (hb_fence_t){true, si, s->submitted};
    *fence_out = hb->fence_count;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

/* A new item at the end of the stream's queue; returns its position. */
static uint64_t push_item(host_backend_t *hb, hb_stream_t *s, host_work_fn fn, void *arg) {
    uint64_t pos = ++s->submitted;
    if (hb->workers) {
        s->items = hb_grow(s->items, &s->item_cap, pos - 1, sizeof *s->items);
        s->items[pos - 1] = (hb_item_t){fn, arg};
        pthread_cond_broadcast(&hb->progress);
    }
    return pos;
}

static hb_fence_t *fence_get(host_backend_t *hb, uint64_t fence) {
    if (fence == 0 || fence > hb->fence_count || !hb->fences[fence - 1].alive)
        return NULL;
    return &hb->fences[fence - 1];
}

gm_status_t hb_fence_query(void *ctx, uint64_t fence) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_FENCE_QUERY, &st))
        goto out;
    hb_fence_t *f = fence_get(hb, fence);
    if (!f)
        st = hb_misuse(hb, "fence_query of an unknown fence");
    else if (hb->streams[f->stream].completed < f->pos)
        st = GM_ERR_NOT_READY;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

gm_status_t hb_fence_wait_stream(void *ctx, uint64_t stream, uint64_t fence) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_FENCE_WAIT_STREAM, &st))
        goto out;
    hb_fence_t *f = fence_get(hb, fence);
    if (!f) {
        st = hb_misuse(hb, "fence_wait_stream on an unknown fence");
        goto out;
    }
    hb_fence_t awaited = *f;
    hb_stream_t *s = stream_get(hb, stream, NULL);

    s->waits = hb_grow(s->waits, &s->wait_cap, s->wait_count, sizeof *s->waits);
    s->waits[s->wait_count++] =
        (hb_wait_t){push_item(hb, s, NULL, NULL), awaited.stream, awaited.pos};
    hb->stream_waits++;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

gm_status_t hb_fence_wait_host(void *ctx, uint64_t fence) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_FENCE_WAIT_HOST, &st))
        goto out;
    hb_fence_t *f = fence_get(hb, fence);
    if (!f) {
        st = hb_misuse(hb, "fence_wait_host on an unknown fence");
        goto out;
    }
    complete_through(hb, f->stream, f->pos);
    hb->host_waits++;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

void hb_fence_destroy(void *ctx, uint64_t fence) {
    host_backend_t *hb = ctx;
    pthread_mutex_lock(&hb->lock);
    hb_fence_t *f = fence_get(hb, fence);
    if (f)
        f->alive = false;
    else
        hb_misuse(hb, "fence_destroy of an unknown fence");
    pthread_mutex_unlock(&hb->lock);
}

gm_status_t hb_stream_sync(void *ctx, uint64_t stream) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (!hb_inject(hb, HOST_OP_STREAM_SYNC, &st)) {
        uint32_t si;
        if (stream_get(hb, stream, &si)->capturing) {
            st = hb_misuse(hb, "stream_sync on a capturing stream");
            goto out;
        }
        complete_through(hb, si, hb->streams[si].submitted);
        hb->host_waits++;
    }
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

bool hb_fence_may_defer(void *ctx, uint64_t stream) {
    (void)stream;
    return ((host_backend_t *)ctx)->defer;
}

gm_status_t hb_stream_idle(void *ctx, uint64_t stream) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (!hb_inject(hb, HOST_OP_STREAM_IDLE, &st)) {
        hb_stream_t *s = stream_get(hb, stream, NULL);
        if (s->capturing)
            st = hb_misuse(hb, "stream_idle on a capturing stream");
        else if (s->completed < s->submitted)
            st = GM_ERR_NOT_READY;
    }
    pthread_mutex_unlock(&hb->lock);
    return st;
}

void host_backend_set_deferral(host_backend_t *hb, bool on) {
    hb->defer = on;
}

void host_backend_set_capturing(host_backend_t *hb, uint64_t stream, bool capturing) {
    pthread_mutex_lock(&hb->lock);
    stream_get(hb, stream, NULL)->capturing = capturing;
    pthread_mutex_unlock(&hb->lock);
}

bool host_backend_capturing(host_backend_t *hb, uint64_t stream) {
    pthread_mutex_lock(&hb->lock);
    bool capturing = stream_get(hb, stream, NULL)->capturing;
    pthread_mutex_unlock(&hb->lock);
    return capturing;
}

uint64_t host_backend_submit(host_backend_t *hb, uint64_t stream) {
    return host_backend_submit_work(hb, stream, NULL, NULL, 0, 0);
}

void host_backend_use_workers(host_backend_t *hb) {
    hb->workers = true;
}

uint64_t host_backend_submit_work(host_backend_t *hb, uint64_t stream, host_work_fn fn, void *arg,
                                  uint64_t after_stream, uint64_t after_pos) {
    pthread_mutex_lock(&hb->lock);
    uint32_t si, ai = 0;
    if (after_pos)
        stream_get(hb, after_stream, &ai);
    hb_stream_t *s = stream_get(hb, stream, &si);
    uint64_t pos = push_item(hb, s, fn, arg);
    if (after_pos) {
        s->waits = hb_grow(s->waits, &s->wait_cap, s->wait_count, sizeof *s->waits);
        s->waits[s->wait_count++] = (hb_wait_t){pos, ai, after_pos};
    }
    pthread_mutex_unlock(&hb->lock);
    return pos;
}

static bool may_start(const host_backend_t *hb, const hb_stream_t *s) {
    if (s->running || s->completed == s->submitted)
        return false;
    const hb_wait_t *w = wait_at(s, s->completed + 1);
    return !w || hb->streams[w->on_stream].completed >= w->on_pos;
}

bool host_backend_run_next(host_backend_t *hb, uint64_t stream, int wait_ms) {
    pthread_mutex_lock(&hb->lock);
    uint32_t si;
    stream_get(hb, stream, &si);
    if (!may_start(hb, &hb->streams[si])) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)wait_ms * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&hb->progress, &hb->lock, &until);
        pthread_mutex_unlock(&hb->lock);
        return false;
    }
    hb_stream_t *s = &hb->streams[si];
    hb_item_t item = s->items ? s->items[s->completed] : (hb_item_t){NULL, NULL};
    s->running = true;
    pthread_mutex_unlock(&hb->lock);
    if (item.fn)
        item.fn(item.arg);
    pthread_mutex_lock(&hb->lock);
    s = &hb->streams[si]; /* the table may have grown meanwhile */
    s->running = false;
    s->completed++;
    pthread_cond_broadcast(&hb->progress);
    pthread_mutex_unlock(&hb->lock);
    return true;
}

void host_backend_drain(host_backend_t *hb) {
    pthread_mutex_lock(&hb->lock);
    for (size_t i = 0; i < hb->stream_count; i++)
        complete_through(hb, (uint32_t)i, hb->streams[i].submitted);
    pthread_mutex_unlock(&hb->lock);
}

uint64_t host_backend_complete(host_backend_t *hb, uint64_t stream, uint64_t up_to) {
    pthread_mutex_lock(&hb->lock);
    hb_stream_t *s = stream_get(hb, stream, NULL);
    if (up_to > s->submitted)
        up_to = s->submitted;
    while (s->completed < up_to) {
        const hb_wait_t *w = wait_at(s, s->completed + 1);
        if (w && hb->streams[w->on_stream].completed < w->on_pos)
            break;
        s->completed++;
    }
    uint64_t done = s->completed;
    pthread_mutex_unlock(&hb->lock);
    return done;
}

void host_backend_complete_all(host_backend_t *hb) {
    pthread_mutex_lock(&hb->lock);
    for (size_t i = 0; i < hb->stream_count; i++)
        complete_through(hb, (uint32_t)i, hb->streams[i].submitted);
    pthread_mutex_unlock(&hb->lock);
}

uint64_t host_backend_completed(const host_backend_t *hb, uint64_t stream) {
    for (size_t i = 0; i < hb->stream_count; i++)
        if (hb->streams[i].key == stream)
            return hb->streams[i].completed;
    return 0;
}

uint64_t host_backend_stream_waits(const host_backend_t *hb) {
    return hb->stream_waits;
}

uint64_t host_backend_host_waits(const host_backend_t *hb) {
    return hb->host_waits;
}

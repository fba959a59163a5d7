/* Simulated GPU order: one queue of work items per stream, fences as queue positions. */
#include "host_backend_internal.h"

#include <stdlib.h>

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
 * a wait only ever refers to a fence recorded before it. */
static void complete_through(host_backend_t *hb, uint32_t si, uint64_t pos) {
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
    hb->fences = hb_grow(hb->fences, &hb->fence_cap, hb->fence_count, sizeof *hb->fences);
    hb->fences[hb->fence_count++] = (hb_fence_t){true, si, s->submitted};
    *fence_out = hb->fence_count;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
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
    s->waits[s->wait_count++] = (hb_wait_t){++s->submitted, awaited.stream, awaited.pos};
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

uint64_t host_backend_submit(host_backend_t *hb, uint64_t stream) {
    pthread_mutex_lock(&hb->lock);
    uint64_t pos = ++stream_get(hb, stream, NULL)->submitted;
    pthread_mutex_unlock(&hb->lock);
    return pos;
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

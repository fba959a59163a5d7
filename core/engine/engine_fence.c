/* Fences shared by their holders. A fence is recorded by the call that enqueued the work it
 * follows, on the stream that call was handed, or it is deferred: it stands for everything
 * enqueued on its stream until it is realized, which happens only when something needs the proof
 * (core/README.md, "Deferred fences"). Queries never block; the engine never waits on the host
 * under its lock. */
#include "engine_fence.h"

#include <sched.h>
#include <stdlib.h>

#include "log.h"

gm_status_t gm_fence_record(gm_engine_t *e, uint64_t stream, gm_fence_t **out) {
    gm_fence_t *f = calloc(1, sizeof *f);
    if (!f)
        return GM_ERR_OUT_OF_MEMORY;
    gm_status_t st = e->backend.fence_record(e->backend.ctx, stream, &f->handle);
    if (st != GM_OK) {
        free(f);
        return st;
    }
    f->refs = 1;
    f->stream = stream;
    *out = f;
    return GM_OK;
}

/* ---- deferred fences ------------------------------------------------------------------------ */

static void unlist(gm_engine_t *e, gm_fence_t *f) {
    for (gm_fence_t **at = &e->deferred; *at; at = &(*at)->deferred_next)
        if (*at == f) {
            *at = f->deferred_next;
            atomic_fetch_sub(&e->defer_active, 1);
            return;
        }
}

/* Under defer_lock. The proof is taken now: the stream is not capturing, since every way into a
 * capture realizes the stream's deferred fence first under the same lock. An idle stream proves
 * everything done without an event; otherwise an event recorded now follows the deferred work
 * (and whatever came after it on that stream: later, never earlier). A stream the backend cannot
 * reach any more went away with its context, whose destruction waited for its work. `idle` is
 * what the stream answered just now (stream_idle); f is still deferred.
 *
 * A busy stream that gets no event (no memory for one) proves nothing. A join (`join`: the call
 * that hands this stream over, about to make it capture or end it) waits for the stream on the
 * host, since a fence left deferred on a capturing stream could never be realized. Anything else
 * leaves f deferred and listed, to be realized later: a trim keeps the memory, a launch that
 * must wait for it is refused (gm_fence_wait_stream), and nothing waits on the host under the
 * engine lock. */
static void realize_locked(gm_engine_t *e, gm_fence_t *f, gm_status_t idle, bool join) {
    const gm_backend_t *b = &e->backend;
    gm_status_t st = idle;
    if (st == GM_ERR_NOT_READY) {
        st = b->fence_record(b->ctx, f->stream, &f->handle);
        if (st != GM_OK) {
            f->handle = 0;
            if (!join) {
                gm_log(GM_LOG_DEBUG,
                       "deferred fence on stream %#llx: no event (%s), stays deferred",
                       (unsigned long long)f->stream, gm_status_name(st));
                return;
            }
            /* A wait the stream refuses: a broken stream or context, nothing of it runs again. */
            gm_status_t synced = b->stream_sync(b->ctx, f->stream);
            gm_log(GM_LOG_DEBUG, "deferred fence on stream %#llx: no event (%s), %s",
                   (unsigned long long)f->stream, gm_status_name(st),
                   synced == GM_OK ? "waited for the stream" : "the stream answers no wait");
        }
        st = GM_OK;
    }
    if (st != GM_OK)
        gm_log(GM_LOG_DEBUG, "deferred fence on stream %#llx: the stream is gone (%s)",
               (unsigned long long)f->stream, gm_status_name(st));
    f->done = f->handle == 0;
    /* Off the list first: once `deferred` reads false, gm_fence_unref may free f without the
     * lock, so nothing here may touch f after the store. */
    unlist(e, f);
    atomic_store_explicit(&f->deferred, false, memory_order_release);
}

/* The stream's idleness now (GM_OK, GM_ERR_NOT_READY, or the error of a stream gone). */
static gm_status_t stream_idle(gm_engine_t *e, const gm_fence_t *f) {
    return e->backend.stream_idle(e->backend.ctx, f->stream);
}

void gm_fence_realize(gm_engine_t *e, gm_fence_t *f) {
    if (!f || !atomic_load_explicit(&f->deferred, memory_order_acquire))
        return;
    gm_defer_lock(e);
    if (atomic_load_explicit(&f->deferred, memory_order_relaxed))
        realize_locked(e, f, stream_idle(e, f), false);
    gm_defer_unlock(e);
}

bool gm_fence_may_defer(const gm_engine_t *e, uint64_t stream) {
    return e->config.defer_fences && e->backend.stream_idle && e->backend.fence_may_defer &&
           e->backend.fence_may_defer(e->backend.ctx, stream);
}

void gm_fence_launch_begin(gm_engine_t *e) {
    gm_defer_lock(e);
    /* Dekker with gm_engine_join_fast: either a joiner sees defer_active and waits for the lock,
     * or this sees it running unlocked and lets its driver call finish first (it cannot block on
     * us). */
    atomic_fetch_add(&e->defer_active, 1);
    while (atomic_load(&e->joins_unlocked))
        sched_yield();
}

/* The stream's deferred fence, a new reference (NULL: no host memory). */
static gm_fence_t *deferred_on(gm_engine_t *e, uint64_t stream) {
    for (gm_fence_t *d = e->deferred; d; d = d->deferred_next)
        if (d->stream == stream) {
            d->refs++;
            return d;
        }
    gm_fence_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    *f = (gm_fence_t){.refs = 1, .stream = stream, .deferred_next = e->deferred};
    atomic_init(&f->deferred, true);
    e->deferred = f;
    atomic_fetch_add(&e->defer_active, 1); /* held while it is listed */
    return f;
}

gm_fence_t *gm_fence_launch_end(gm_engine_t *e, uint64_t stream, bool launched, bool defer) {
    gm_fence_t *f = NULL;
    if (launched && defer)
        f = deferred_on(e, stream);
    /* Recording can fail only when the stream or the context is broken; then waiting for the
     * stream on the host is the proof left (NULL: done). */
    if (launched && !f && gm_fence_record(e, stream, &f) != GM_OK) {
        f = NULL;
        e->backend.stream_sync(e->backend.ctx, stream);
    }
    atomic_fetch_sub(&e->defer_active, 1);
    gm_defer_unlock(e);
    return f;
}

bool gm_engine_join_fast(gm_engine_t *e) {
    atomic_fetch_add(&e->joins_unlocked, 1);
    if (!atomic_load(&e->defer_active))
        return true;
    atomic_fetch_sub(&e->joins_unlocked, 1);
    return false;
}

void gm_engine_join_slow(gm_engine_t *e, uint64_t stream) {
    gm_defer_lock(e);
    for (gm_fence_t *f = e->deferred, *next; f; f = next) {
        next = f->deferred_next;
        if (stream == GM_NO_STREAM || f->stream == stream)
            realize_locked(e, f, stream_idle(e, f), true); /* listed: still deferred */
    }
}

bool gm_engine_join_begin(gm_engine_t *e, uint64_t stream) {
    bool fast = gm_engine_join_fast(e);
    if (!fast)
        gm_engine_join_slow(e, stream);
    return fast;
}

void gm_engine_join_end(gm_engine_t *e, bool fast) {
    if (fast)
        atomic_fetch_sub(&e->joins_unlocked, 1);
    else
        gm_defer_unlock(e);
}

/* ---- references and queries ----------------------------------------------------------------- */

void gm_fence_unref(gm_engine_t *e, gm_fence_t *f) {
    if (!f || --f->refs)
        return;
    if (atomic_load_explicit(&f->deferred, memory_order_acquire)) {
        gm_defer_lock(e); /* a join may be realizing it now */
        if (atomic_load_explicit(&f->deferred, memory_order_relaxed))
            unlist(e, f);
        gm_defer_unlock(e);
    }
    if (f->handle)
        e->backend.fence_destroy(e->backend.ctx, f->handle);
    free(f);
}

void gm_fence_set(gm_engine_t *e, gm_fence_t **slot, gm_fence_t *f) {
    if (f)
        f->refs++;
    gm_fence_unref(e, *slot);
    *slot = f;
}

bool gm_fence_done(gm_engine_t *e, gm_fence_t *f) {
    if (!f)
        return true;
    gm_fence_realize(e, f); /* first: a join may be writing done and handle until then */
    if (gm_fence_still_deferred(f))
        return false; /* its busy stream got no event (realize_locked) */
    if (!f->done)
        f->done = e->backend.fence_query(e->backend.ctx, f->handle) == GM_OK;
    return f->done;
}

bool gm_fence_finished(gm_engine_t *e, gm_fence_t *f) {
    if (f && atomic_load_explicit(&f->deferred, memory_order_acquire)) {
        gm_defer_lock(e);
        bool busy = false;
        if (atomic_load_explicit(&f->deferred, memory_order_relaxed)) {
            gm_status_t idle = stream_idle(e, f);
            busy = idle == GM_ERR_NOT_READY;
            if (!busy)
                realize_locked(e, f, idle, false); /* idle (or gone): done, no event */
        }
        gm_defer_unlock(e);
        if (busy)
            return false;
    }
    return gm_fence_done(e, f);
}

gm_status_t gm_fence_wait_stream(gm_engine_t *e, uint64_t stream, gm_fence_t *f, bool *waited) {
    *waited = false;
    if (gm_fence_done(e, f))
        return GM_OK;
    if (gm_fence_still_deferred(f))
        return GM_ERR_OUT_OF_MEMORY; /* no event to wait for: the launch is refused */
    if (f->done || !f->handle)
        return GM_OK; /* a join realized it since gm_fence_done: idle, or waited for */
    gm_status_t st = e->backend.fence_wait_stream(e->backend.ctx, stream, f->handle);
    *waited = st == GM_OK;
    return st;
}

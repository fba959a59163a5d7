/* The launch protocol (core/README.md, "Launch protocol"): a launch or upload of an exec graphmem
 * serves is decided, handed to the driver and recorded in one critical section of the engine
 * lock, so no other launch, upload, trim, release or free can come between the decision and the
 * driver's action; a step that fails takes back what the steps before it did. Also the frees that
 * happen outside graphs, and streams going away. */
#include <stdlib.h>

#include "engine_cover.h"
#include "engine_fence.h"
#include "engine_order.h"
#include "engine_part.h"
#include "engine_trim.h"

/* Every launch asks, mostly of the same few execs. */
static _Thread_local gm_keyset_memo_t served_memo;

bool gm_engine_serves(gm_engine_t *e, uint64_t exec) {
    return gm_keyset_contains_memo(&e->served, exec, &served_memo);
}

/* The live record at r's address: r itself, or a clone's copy of it (gm_engine_graph_clone) made
 * live by an exec of the clone. What a free of another graph's allocation frees at a launch. */
static gm_record_t *live_at(const gm_engine_t *e, const gm_record_t *r) {
    for (gm_record_t *q = gm_map_get(&e->addresses, r->va); q; q = q->va_next)
        if (q->live)
            return q;
    return NULL;
}

/* The next escaping item at or after `i` (count when none). */
static uint32_t next_escaping(const gm_part_t *p, uint32_t i) {
    while (i < p->item_count && !p->items[i].escaping)
        i++;
    return i;
}

static int compare_va(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Whether every allocation q holds live is at an address p's launch makes again. */
static bool makes_again(const gm_part_t *p, const gm_part_t *q) {
    uint64_t *vas = malloc((p->escaping_count + 1) * sizeof *vas);
    if (!vas)
        return false; /* refused, as without the takeover */
    for (uint32_t k = 0; k < p->escaping_count; k++)
        vas[k] = p->escaping[k]->va;
    qsort(vas, p->escaping_count, sizeof *vas, compare_va);
    bool all = true;
    for (uint32_t k = 0; all && k < q->escaping_count; k++) {
        const gm_record_t *r = q->escaping[k];
        all = !(r->live && r->live_part == q) ||
              bsearch(&r->va, vas, p->escaping_count, sizeof *vas, compare_va);
    }
    free(vas);
    return all;
}

/* Whether a launch of p may free the allocations q holds at its addresses and take q's escape
 * memory as it is mapped (gm_part_take_escape): p's exec has AutoFreeOnLaunch, which frees what
 * lives at the addresses its launch makes again (§A6.2 across the execs of one window family,
 * GRAPHMEM_LIFT_RESTRICTIONS); q is a live exec's part of that family and device, maps every
 * escape window, holds nothing p does not make again, and plans its escape memory exactly as p
 * does, while p maps none of its own. Nothing is mapped or unmapped for it, so a launch that
 * fails leaves q as it was. An exec destroyed with an allocation live keeps refusing (§A9.1). */
static bool escape_takeover(const gm_engine_t *e, const gm_part_t *p, const gm_part_t *q) {
    if (!e->config.lift_restrictions || !(p->exec->flags & GM_EXEC_AUTO_FREE) || !q || q == p ||
        q->graph_serial != p->graph_serial || q->device != p->device || q->pinned ||
        q->exec->destroyed || !q->unfreed || !q->escape_maps.mapped || p->escape_maps.count ||
        !gm_arena_same_slots(&p->escape, &q->escape))
        return false;
    uint32_t i = next_escaping(p, 0), k = next_escaping(q, 0);
    for (; i < p->item_count && k < q->item_count;
         i = next_escaping(p, i + 1), k = next_escaping(q, k + 1)) {
        const gm_item_t *a = &p->items[i], *b = &q->items[k];
        if (a->va != b->va || a->pages != b->pages || a->arena_page != b->arena_page ||
            a->spill_pages != b->spill_pages || a->access_mask != b->access_mask)
            return false;
    }
    return i == p->item_count && k == q->item_count && makes_again(p, q);
}

/* The driver would refuse this launch: GM_ERR_INVALID_VALUE. */
static gm_status_t launch_check(const gm_engine_t *e, const gm_exec_t *x, bool upload) {
    /* A free of another graph's allocation that is not live now (never made by a launch, or
     * freed already): the driver refuses the launch (measured on driver 580). */
    for (uint32_t i = 0; !upload && i < x->foreign_count; i++)
        if (!live_at(e, x->foreign[i]))
            return GM_ERR_INVALID_VALUE;
    for (uint32_t i = 0; i < x->part_count; i++) {
        const gm_part_t *p = x->parts[i];
        /* Relaunch while an allocation of the previous launch is unfreed (§A6.1). */
        if (p->unfreed && !upload && !(x->flags & GM_EXEC_AUTO_FREE))
            return GM_ERR_INVALID_VALUE;
        /* An allocation of its graph still live from an exec destroyed since (§A9.1): its
         * address is taken until it is freed. Its window is mapped then, so p is not. */
        if (p->shared_maps.mapped && p->escape_maps.mapped)
            continue;
        const gm_part_t *holder = NULL; /* whose allocations the launch frees (escape_takeover) */
        for (uint32_t k = 0; k < p->record_count; k++) {
            /* Live from another part: made by another exec of its graph, or a clone's copy. An
             * address has at most one live record. */
            const gm_record_t *live = live_at(e, p->records[k]);
            if (!live || live->live_part == p || (holder && live->live_part == holder))
                continue;
            if (holder || !escape_takeover(e, p, live->live_part))
                return GM_ERR_INVALID_VALUE;
            holder = live->live_part;
        }
    }
    return GM_OK;
}

/* Whether p plans a window at an address where q plans one (with `escaping_only`, one q maps from
 * its escape arena): execs of one graph or of clones, whose allocation sets may differ, or of
 * graphs whose families merged. */
static bool window_shared(const gm_part_t *p, const gm_part_t *q, bool escaping_only) {
    for (uint32_t i = 0; i < q->item_count; i++)
        for (uint32_t k = 0; (q->items[i].escaping || !escaping_only) && k < p->item_count; k++)
            if (p->items[k].va == q->items[i].va)
                return true;
    return false;
}

/* Other parts of the same graph may map its windows: those of destroyed execs (memory is reclaimed
 * lazily), and under GRAPHMEM_LIFT_RESTRICTIONS those of its other execs. They give them up before
 * `p` maps them, once their last run and pending frees are over: execs sharing windows never run
 * at once, and the one given up maps them again at its next launch (and takes them back). */
static gm_status_t release_stale(gm_engine_t *e, gm_part_t *p, gm_part_t **taken,
                                 gm_fence_t **wait) {
    for (gm_part_t *q = e->parts, *next; q; q = next) {
        next = q->all_next;
        if (q == p || q->graph_serial != p->graph_serial || q->device != p->device ||
            (!q->shared_maps.count && !q->escape_maps.count))
            continue;
        /* A pinned part's windows stay until no device launch of its exec can run: after its
         * exec is destroyed, until gm_engine_device_idle (GM_EXEC_PINNED). A family merged after
         * its instantiation may hold execs that share none of them. */
        if (q->pinned && window_shared(p, q, false))
            return GM_ERR_NOT_SUPPORTED;
        if (q->pinned)
            continue;
        /* q keeps all its escape windows while it holds an unfreed allocation (its live one is
         * refused by launch_check); p needing another of them must wait for that free, unless
         * p's launch frees them all and takes q's escape memory as it is. */
        if (q->unfreed && q->escape_maps.count && window_shared(p, q, true)) {
            if (*taken || !escape_takeover(e, p, q))
                return GM_ERR_INVALID_VALUE;
            *taken = q;
        }
        gm_fence_t *f = gm_part_trim(e, q, false);
        if (f) {
            *wait = f;
            return GM_ERR_NOT_READY;
        }
        if (q->shared_maps.count || (!q->unfreed && q->escape_maps.count))
            return GM_ERR_BACKEND; /* the backend refused an unmap: mapping would fail */
        gm_part_try_reclaim(e, q);
    }
    return GM_OK;
}

/* Orders the launch after frees enqueued on other streams of allocations whose bytes it reuses. */
static gm_status_t after_points(gm_engine_t *e, gm_part_t *p, const gm_part_t *owner,
                                uint64_t stream) {
    gm_status_t st = GM_OK;
    for (uint32_t i = 0; st == GM_OK && i < owner->point_count; i++) {
        const gm_free_point_t *pt = &owner->points[i];
        bool waited = false;
        if (pt->stream != stream)
            st = gm_fence_wait_stream(e, stream, pt->fence, &waited);
        p->exec->report.waits += waited;
    }
    return st;
}

/* Orders the launch after the group's latest user when that ran on another stream (unless it was
 * this exec's own launch: the driver orders an exec's launches), and after frees of the part's
 * allocations, or of those of the part whose escape memory it takes, enqueued on other streams
 * (the launch reuses their bytes). */
static gm_status_t order(gm_engine_t *e, gm_part_t *p, const gm_part_t *taken, uint64_t stream,
                         bool upload) {
    const gm_group_t *g = p->group;
    bool ordered = g->last_stream == stream || (g->last_part == p && g->last_launch);
    bool waited = false;
    gm_status_t st = ordered ? GM_OK : gm_fence_wait_stream(e, stream, g->last_fence, &waited);
    p->exec->report.waits += waited;
    if (st == GM_OK && !upload)
        st = after_points(e, p, p, stream);
    if (st == GM_OK && !upload && taken)
        st = after_points(e, p, taken, stream);
    return st;
}

/* Room for the free points a launch of `x` adds, so that recording it cannot fail. */
static gm_status_t reserve_points(const gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->foreign_count; i++) {
        gm_record_t *r = live_at(e, x->foreign[i]);
        gm_part_t *q = r ? r->live_part : NULL;
        if (q && gm_grow((void **)&q->points, &q->point_cap, q->point_count + x->foreign_count,
                         sizeof *q->points) != GM_OK)
            return GM_ERR_OUT_OF_MEMORY;
    }
    return GM_OK;
}

/* The launch happened, followed by fence f (a reference this takes over; NULL: proven done):
 * what it does to the engine's state. */
static void commit(gm_engine_t *e, gm_exec_t *x, uint64_t stream, bool upload, gm_fence_t *f,
                   gm_part_t *const *taken) {
    if (upload)
        x->report.uploads++;
    else
        x->report.launches++;
    gm_order_mark_t mark = gm_order_served(e, stream);
    for (uint32_t i = 0; i < x->part_count; i++) {
        gm_part_t *p = x->parts[i];
        gm_fence_set(e, &p->run_fence, f);
        p->run_stream = stream;
        p->run_mark = mark;
        gm_group_t *g = p->group;
        gm_fence_set(e, &g->last_fence, f);
        g->last_stream = stream;
        g->last_mark = mark;
        g->last_part = p;
        g->last_launch = !upload;
        if (upload)
            continue;
        /* Every pending free of its allocations is now behind this launch. */
        for (uint32_t k = 0; k < p->point_count; k++)
            gm_fence_unref(e, p->points[k].fence);
        p->point_count = 0;
        /* AutoFreeOnLaunch: the previous allocations are freed and made again, same bytes; those
         * of another exec of the family too, in its escape memory, which this part takes. */
        if (taken[i])
            gm_part_take_escape(e, p, taken[i]);
        for (uint32_t k = 0; k < p->escaping_count; k++) {
            gm_record_t *r = p->escaping[k];
            if (!r->live) {
                r->live = true;
                r->live_part = p;
                p->unfreed++;
            }
        }
    }
    for (uint32_t i = 0; !upload && i < x->part_count; i++)
        if (taken[i]) { /* one launch, however many of its parts took memory */
            x->report.freed_others++;
            break;
        }
    for (uint32_t i = 0; !upload && i < x->foreign_count; i++) {
        gm_record_t *r = live_at(e, x->foreign[i]);
        if (!r)
            continue;
        gm_part_t *q = r->live_part;
        if (q && f) { /* room reserved by reserve_points */
            f->refs++;
            q->points[q->point_count++] = (gm_free_point_t){stream, f};
        }
        gm_record_freed(r);
    }
    gm_fence_unref(e, f);
}

/* Whether the launch may map or unmap: a part not mapped yet (stale parts give windows up first),
 * one leaving its group under `remap`, or an adopted part that may leave its group (engine_part.c,
 * gm_part_enter). While a cover is held such a launch waits. */
static bool changes_mappings(const gm_engine_t *e, const gm_exec_t *x, uint64_t stream) {
    for (uint32_t i = 0; i < x->part_count; i++) {
        const gm_part_t *p = x->parts[i];
        if (!p->shared_maps.mapped || !p->escape_maps.mapped || !p->group ||
            (p->group->stream != stream && e->config.cross_stream == GM_CROSS_STREAM_REMAP) ||
            (p->adopted_stream == stream && p->group->last_stream != stream))
            return true;
    }
    return false;
}

bool gm_engine_armed(gm_engine_t *e, uint64_t exec) {
    return exec != 0 && atomic_load_explicit(&e->fast.exec, memory_order_relaxed) == exec;
}

/* The fast path: a relaunch of the armed exec on the stream of its last launch, when nothing in
 * the engine changed since (no other launch, free, trim, destruction or cover: each raises the
 * epoch) and the stream's deferred fence that followed that launch is still deferred. Then steps
 * 1-5 and 7 of the protocol would change nothing: the same checks pass, everything is mapped, the
 * group's latest user is this exec on this stream, and the fence of this launch is that same
 * deferred fence. What is left is step 6, holding only the fast gate, which excludes it as the
 * defer lock would (gm_defer_lock): while fast_open no section of the engine lock is in progress,
 * and none begins before this lets the gate go (each closes the fast path first, gm_engine_lock,
 * under the defer lock), so what is read here stays as it was read until the driver's call has
 * returned; no join realizes the fence meanwhile either. No handshake with the joins
 * (gm_fence_launch_begin): the fence is listed, so defer_active has counted it since before the
 * launch that made it, which waited for the joins running unlocked then; every later join takes
 * the defer lock. The exec behind e->fast.x is alive whenever the path is open: its end is a
 * section, which closes the path and disarms the exec, and only an arming section, which rewrites
 * the whole slot, reopens it after a change. */
bool gm_engine_relaunch(gm_engine_t *e, uint64_t exec, uint64_t stream, gm_driver_call_t call,
                        gm_status_t *st) {
    if (!gm_engine_armed(e, exec))
        return false; /* not the armed exec: the gate is not for it */
    /* Another relaunch in flight: wait for it (a driver call), unless a holder of the defer lock
     * waits too, which goes first; then this goes through the whole protocol. */
    for (unsigned round = 0; atomic_exchange(&e->fast_gate, true);) {
        if (atomic_load_explicit(&e->fast_blocked, memory_order_relaxed))
            return false;
        gm_fast_backoff(&round);
    }
    if (atomic_load(&e->fast_blocked) || !e->fast_open || !gm_engine_armed(e, exec) ||
        e->fast.stream != stream || e->fast.epoch != e->epoch ||
        !gm_fence_still_deferred(e->fast.fence)) {
        atomic_store_explicit(&e->fast_gate, false, memory_order_release);
        return false;
    }
    bool launched = call.fn(call.arg);
    e->fast.x->report.launches += launched; /* sections read it with the fast path closed */
    atomic_store_explicit(&e->fast_gate, false, memory_order_release);
    *st = launched ? GM_OK : GM_ERR_DRIVER;
    return true;
}

/* After a launch: whether the next one on the same stream may take the fast path. Not after an
 * upload (the driver orders launches after launches only), nor with an immediate fence, nor when a
 * relaunch has checks to make or frees to record (unfreed allocations without AutoFree, frees of
 * other graphs' allocations), nor while idle scratch mappings wait to be unmapped. And only from
 * the second launch in a row of the exec on the stream: an exec that alternates with another, or
 * between streams, would open the path only for the next launch to close it again, two more
 * trips through the defer lock each. */
static void arm_fast(gm_engine_t *e, gm_exec_t *x, uint64_t stream, bool upload,
                     gm_fence_t *fence) {
    gm_engine_disarm(e, 0); /* whichever was armed: this section raises the epoch anyway */
    bool again = !upload && e->last_launch_exec == x->key && e->last_launch_stream == stream;
    e->last_launch_exec = upload ? 0 : x->key;
    e->last_launch_stream = stream;
    if (!again || !fence || !gm_fence_still_deferred(fence) || x->foreign_count || e->scratch_idle)
        return;
    for (uint32_t i = 0; i < x->part_count; i++)
        if (x->parts[i]->escaping_count && !(x->flags & GM_EXEC_AUTO_FREE))
            return;
    atomic_store_explicit(&e->fast.exec, x->key, memory_order_relaxed);
    e->fast.stream = stream;
    e->fast.fence = fence;
    e->fast.x = x;
    e->fast.epoch = e->epoch + 1; /* what releasing the lock makes it */
    e->fast_armed = true;         /* which opens the fast path then */
}

/* One attempt under the lock. GM_ERR_NOT_READY with *wait (a fence to wait for on the host, the
 * lock released) when a mapping must first be given up by a run that has not finished; without
 * *wait when a cover holds the mappings still. */
static gm_status_t launch_locked(gm_engine_t *e, uint64_t exec, uint64_t stream, bool upload,
                                 gm_driver_call_t call, gm_fence_t **wait) {
    gm_exec_t *x = gm_map_get(&e->execs, exec);
    if (!x) /* destroyed since the caller looked: the driver answers */
        return call.fn(call.arg) ? GM_OK : GM_ERR_DRIVER;
    gm_status_t st = launch_check(e, x, upload);
    if (st != GM_OK)
        return st;
    if (e->covers && changes_mappings(e, x, stream))
        return GM_ERR_NOT_READY;
    if (e->scratch_idle)
        gm_cover_drop_idle(e);
    if (e->config.uaf_check)
        gm_uaf_poll(e);
    /* Groups, and windows taken back from stale parts, before anything is mapped. */
    gm_part_t *taken[GM_MAX_DEVICES] = {0}; /* whose escape memory each part takes at commit */
    for (uint32_t i = 0; i < x->part_count && st == GM_OK; i++) {
        gm_part_t *p = x->parts[i];
        if (!p->shared_maps.mapped || !p->escape_maps.mapped)
            st = release_stale(e, p, &taken[i], wait);
        if (st == GM_OK)
            st = gm_part_enter(e, p, stream, wait);
    }
    gm_map_undo_t undo[GM_MAX_DEVICES];
    uint32_t mapped = 0;
    for (; st == GM_OK && mapped < x->part_count; mapped++) {
        gm_part_t *p = x->parts[mapped];
        bool again = p->mapped_once && !(p->shared_maps.mapped && p->escape_maps.mapped);
        st = gm_part_map(e, p, taken[mapped] != NULL, &undo[mapped]);
        if (st != GM_OK)
            break;
        p->exec->report.remaps += again;
        p->mapped_once = true;
    }
    if (st == GM_OK)
        st = reserve_points(e, x);
    for (uint32_t i = 0; i < x->part_count && st == GM_OK; i++)
        st = order(e, x->parts[i], taken[i], stream, upload);
    /* The fence is deferred where a later proof is possible: not for uploads (rare), nor when the
     * launch frees other graphs' allocations (their free points keep a fence of their own), nor
     * under uaf_check, which polls every fence. */
    bool defer =
        !upload && !x->foreign_count && !e->config.uaf_check && gm_fence_may_defer(e, stream);
    gm_fence_t *fence = NULL;
    if (st == GM_OK) {
        gm_fence_launch_begin(e);
        bool launched = call.fn(call.arg);
        fence = gm_fence_launch_end(e, stream, launched, defer);
        if (!launched)
            st = GM_ERR_DRIVER;
    }
    for (uint32_t i = 0; i < mapped; i++) {
        if (st == GM_OK)
            gm_map_undo_fini(&undo[i]);
        else
            gm_part_map_undo(e, x->parts[i], &undo[i]);
    }
    if (st == GM_OK) {
        commit(e, x, stream, upload, fence, taken);
        arm_fast(e, x, stream, upload, fence);
    }
    for (uint32_t i = 0; i < x->part_count; i++)
        gm_pool_settle(e->pools[x->parts[i]->device]);
    return st;
}

gm_status_t gm_engine_launch(gm_engine_t *e, uint64_t exec, uint64_t stream, bool upload,
                             gm_driver_call_t call) {
    gm_status_t st;
    if (!upload && gm_engine_relaunch(e, exec, stream, call, &st))
        return st;
    gm_engine_lock(e);
    for (;;) {
        gm_fence_t *wait = NULL;
        st = launch_locked(e, exec, stream, upload, call, &wait);
        if (st == GM_ERR_NOT_READY && !wait && e->covers) {
            gm_cover_wait(e); /* the lock released meanwhile; then decide again */
            continue;
        }
        if (st != GM_ERR_NOT_READY || !wait)
            break;
        if (gm_fence_still_deferred(wait)) {
            st = GM_ERR_OUT_OF_MEMORY; /* its busy stream got no event: nothing to wait on */
            break;
        }
        if (wait->done || !wait->handle)
            continue; /* a join realized it since the decision (idle, or waited for): again */
        /* A host wait, never under the lock: hold the fence, let others go on meanwhile, then
         * decide again from scratch. */
        wait->refs++;
        gm_engine_unlock(e);
        gm_status_t waited = e->backend.fence_wait_host(e->backend.ctx, wait->handle);
        gm_engine_lock(e);
        if (waited == GM_OK)
            wait->done = true;
        gm_fence_unref(e, wait);
        if (waited != GM_OK) {
            st = waited;
            break;
        }
    }
    gm_engine_unlock(e);
    return st;
}

gm_status_t gm_engine_free_outside(gm_engine_t *e, uint64_t va, uint64_t stream) {
    return gm_engine_free_outside_checked(e, va, stream, GM_NO_CALL);
}

gm_status_t gm_engine_free_outside_checked(gm_engine_t *e, uint64_t va, uint64_t stream,
                                           gm_driver_call_t still_outside) {
    gm_engine_lock(e);
    gm_status_t st = GM_ERR_INVALID_VALUE;
    gm_record_t *r = gm_map_get(&e->addresses, va);
    while (r && !r->live)
        r = r->va_next;
    if (!r)
        goto out;
    gm_part_t *p = r->live_part;
    /* Under the defer lock, as a launch's driver call and fence: no capture can begin on the
     * stream between the check and the fence's record (every way into a capture joins under
     * that lock), so the record never lands in a capture and the free is outside graphs at the
     * check's moment. */
    bool checked = stream != GM_NO_STREAM && still_outside.fn;
    if (checked)
        gm_fence_launch_begin(e);
    st = GM_ERR_DRIVER;
    if (checked && !still_outside.fn(still_outside.arg))
        goto out_checked;
    st = GM_OK;
    if (stream != GM_NO_STREAM && p) {
        gm_fence_t *f;
        if ((st = gm_grow((void **)&p->points, &p->point_cap, p->point_count + 1,
                          sizeof *p->points)) != GM_OK ||
            (st = gm_fence_record(e, stream, &f)) != GM_OK)
            goto out_checked;
        p->points[p->point_count++] = (gm_free_point_t){stream, f};
    }
out_checked:
    if (checked)
        gm_fence_launch_end(e, stream, false, false);
    if (st != GM_OK)
        goto out;
    gm_record_freed(r);
    if (e->config.uaf_check)
        gm_uaf_poll(e);
out:
    gm_engine_unlock(e);
    return st;
}

gm_status_t gm_engine_stream_destroy(gm_engine_t *e, uint64_t stream, gm_driver_call_t call) {
    /* Realized first without the engine lock: a busy stream that gets no event is waited for
     * there (realize_locked), never under the engine lock. */
    gm_engine_join_end(e, gm_engine_join_begin(e, stream));
    gm_engine_lock(e);
    /* Its deferred fence is realized while the handle still names it (a launch may have deferred
     * one since). */
    bool fast = gm_engine_join_begin(e, stream);
    bool destroyed = !call.fn || call.fn(call.arg);
    gm_engine_join_end(e, fast);
    if (!destroyed) {
        gm_engine_unlock(e);
        return GM_ERR_DRIVER;
    }
    /* Its handle may come back for a new stream, which is not ordered after the old one: forget
     * the identity. The fences recorded on it stay valid and keep the order. */
    for (gm_part_t *p = e->parts; p; p = p->all_next) {
        if (p->run_stream == stream)
            p->run_stream = GM_NO_STREAM;
        if (p->adopted_stream == stream)
            p->adopted_stream = GM_NO_STREAM;
        for (uint32_t i = 0; i < p->point_count; i++)
            if (p->points[i].stream == stream)
                p->points[i].stream = GM_NO_STREAM;
        if (p->group && p->group->last_stream == stream)
            p->group->last_stream = GM_NO_STREAM;
    }
    gm_order_stream_gone(e, stream);
    gm_engine_unlock(e);
    return GM_OK;
}

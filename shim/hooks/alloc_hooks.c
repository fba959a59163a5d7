/* Stream-ordered allocation and free. Outside captures these pass straight through after one
 * relaxed load; on a capturing stream a graph allocation becomes a marker at the stream's frontier
 * and the address comes from graphmem's reservation. */
#include "interpose/driver.h"
#include "interpose/frontier_lock.h"
#include "bridge/backend_cuda.h"
#include "bridge/captures.h"
#include "bridge/engine_glue.h"
#include "bridge/joins.h"
#include "bridge/markers.h"
#include "bridge/mempools.h"
#include "bridge/streams.h"
#include "bridge/topology.h"
#include "log.h"
#include "options.h"
#include "stats.h"

typedef struct capture_point {
    cuuint64_t id;
    gm_marker_site_t site; /* the capture's graph and the stream's frontier */
    uint64_t changes;      /* gm_frontier_capture_changes once the stream's lock was held */
    CUgraphNode made;      /* the marker made here, now the stream's frontier (NULL: none) */
    bool known;            /* the frontier was taken as known, not asked (frontier_known) */
} capture_point_t;

/* The capture status of `stream` now, and while ACTIVE where the next captured node goes; the
 * driver's error when it refuses to tell (a stream it does not know, the legacy stream while
 * another one captures). NONE without asking while no capture is in flight. */
static CUresult capture_status(CUstream stream, bool ptsz, capture_point_t *point,
                               CUstreamCaptureStatus *status) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (gm_no_capture_anywhere())
        return CUDA_SUCCESS;
    CUresult (*info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                     const CUgraphNode **, const CUgraphEdgeData **, size_t *) =
        GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz);
    gm_marker_site_t *site = &point->site;
    if (info == NULL)
        return CUDA_SUCCESS;
    site->captured = true;
    return info(stream, status, &point->id, &site->graph, &site->deps, &site->edge_data,
                &site->count);
}

/* This thread's last marker, the frontier of its stream unless a call on that stream reached
 * graphmem since (its mark gone) or captures changed (shim/README.md, "A frontier already known").
 */
static _Thread_local struct {
    CUstream stream;
    cuuint64_t id;
    CUgraph graph;
    CUgraphNode node;
    uint64_t changes; /* gm_frontier_capture_changes when the marker's lock was held */
} last_marker;

/* GRAPHMEM_KNOWN_FRONTIER, with a driver no newer than the cuda.h whose stream entries hooks.def
 * lists: a newer one may have stream entries graphmem does not export, whose calls would take no
 * mark away. Decided at the first marker. */
static bool known_frontier_allowed(void) {
    static atomic_int decided; /* 0: not yet, 1: allowed, 2: not */
    int state = atomic_load_explicit(&decided, memory_order_relaxed);
    if (state != 0)
        return state == 1;
    int version = 0;
    bool wanted = gm_option_bool(GM_OPT_KNOWN_FRONTIER);
    bool known_driver = gm_drv.cuDriverGetVersion != NULL &&
                        gm_drv.cuDriverGetVersion(&version) == CUDA_SUCCESS &&
                        version <= GM_HOOKS_CUDA_VERSION;
    if (wanted && !known_driver)
        gm_log(GM_LOG_INFO,
               "driver %d is newer than the CUDA API graphmem's hooks list (%d): every captured "
               "allocation and free asks for its stream's frontier",
               version, GM_HOOKS_CUDA_VERSION);
    atomic_store_explicit(&decided, wanted && known_driver ? 1 : 2, memory_order_relaxed);
    return wanted && known_driver;
}

/* With the stream's lock held: where the next captured node goes when this thread's last marker
 * is still the stream's frontier, without asking the driver (false: ask). */
static bool frontier_known(CUstream stream, const gm_frontier_hold_t *hold, capture_point_t *point,
                           bool may_know) {
    point->changes = gm_frontier_capture_changes();
    if (!may_know || !hold->marked_mine || last_marker.stream != stream ||
        last_marker.changes != point->changes || !known_frontier_allowed())
        return false;
    point->id = last_marker.id;
    point->site = (gm_marker_site_t){.graph = last_marker.graph,
                                     .deps = &last_marker.node,
                                     .count = 1,
                                     .edge_data = NULL,
                                     .captured = true};
    point->known = true;
    gm_stat_add(GM_STAT_known_frontiers, 1);
    return true;
}

/* A marker's three driver calls (the capture query, the node, the SET) hold its stream's frontier
 * lock EXCLUSIVE, from the query on (shim/README.md, "Capture safety"), and only on a stream that
 * captures: taken at once when no other call holds the stream (the query then made under it);
 * otherwise the query is made first and, when the stream captures, made again once the lock is
 * held. So a stream that does not capture is never waited for: a call blocked there in the driver
 * (a copy from pageable memory) holds up no allocation. */
typedef struct marker_lock {
    gm_frontier_hold_t hold;
    bool held;
} marker_lock_t;

/* `may_know`: the frontier may be taken as known (frontier_known). */
static CUresult locked_status(CUstream stream, bool ptsz, capture_point_t *point,
                              CUstreamCaptureStatus *status, marker_lock_t *lock, bool may_know) {
    lock->held = false;
    if (!gm_frontier_lock_needed(stream, GM_FRONTIER_EXCLUSIVE))
        return capture_status(stream, ptsz, point, status);
    lock->held = gm_frontier_try_lock(&lock->hold, stream, GM_FRONTIER_EXCLUSIVE);
    if (lock->held && frontier_known(stream, &lock->hold, point, may_know)) {
        *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        return CUDA_SUCCESS;
    }
    CUresult result = capture_status(stream, ptsz, point, status);
    if (lock->held || result != CUDA_SUCCESS || *status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return result;
    gm_frontier_lock(&lock->hold, stream, GM_FRONTIER_EXCLUSIVE);
    lock->held = true;
    if (frontier_known(stream, &lock->hold, point, may_know))
        return CUDA_SUCCESS; /* the status read before the lock: ACTIVE */
    return capture_status(stream, ptsz, point, status);
}

/* The stream's status and, while it captures, where the next node goes, under its lock. The
 * stream is marked as this thread's from here, before its SET: a call that reaches the stream
 * without the lock from then on takes the mark away (gm_frontier_after_unlocked) after it landed,
 * which it could not do were the mark made after the SET. remember_frontier settles it. */
static CUresult locked_capture_status(CUstream stream, bool ptsz, capture_point_t *point,
                                      CUstreamCaptureStatus *status, marker_lock_t *lock,
                                      bool may_know) {
    point->made = NULL;
    point->known = false;
    CUresult result = locked_status(stream, ptsz, point, status, lock, may_know);
    if (lock->held && result == CUDA_SUCCESS && *status == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        gm_frontier_mark(&lock->hold);
    return result;
}

/* With the lock still held, after the marker: one made at `point` is the stream's frontier now,
 * which this thread knows until another call on the stream takes the mark away; without one (the
 * driver served the call, or it failed) the mark goes. */
static void remember_frontier(CUstream stream, const capture_point_t *point, marker_lock_t *lock) {
    if (!lock->held)
        return;
    if (point->made == NULL) {
        gm_frontier_unmark(stream);
        return;
    }
    last_marker.stream = stream;
    last_marker.id = point->id;
    last_marker.graph = point->site.graph;
    last_marker.node = point->made;
    last_marker.changes = point->changes;
}

/* Lets the lock go if held: when the marker is done, and as the scope of a marker_lock_t declared
 * MARKER_LOCK ends, a thread cancelled in a driver call included (shim/CMakeLists.txt,
 * -fexceptions). */
static void marker_unlock(marker_lock_t *lock) {
    if (lock->held)
        gm_frontier_unlock(&lock->hold);
    lock->held = false;
}
#define MARKER_LOCK __attribute__((cleanup(marker_unlock)))

/* The driver's result of a call made without the lock, once it took `stream`'s mark away if a
 * capture began meanwhile (gm_frontier_after_unlocked). */
static CUresult after_unlocked(CUresult result, CUstream stream) {
    gm_frontier_after_unlocked(stream);
    return result;
}

/* The driver's own free, on a stream another thread may be marking: SHARED, as at every exported
 * entry that enqueues. */
static CUresult forward_free(CUdeviceptr dptr, CUstream stream, bool ptsz) {
    marker_lock_t lock MARKER_LOCK = {.held = false};
    if (!gm_frontier_lock_needed(stream, GM_FRONTIER_SHARED))
        return after_unlocked(GM_REAL_PT(cuMemFreeAsync, ptsz)(dptr, stream), stream);
    gm_frontier_lock(&lock.hold, stream, GM_FRONTIER_SHARED);
    lock.held = true;
    return GM_REAL_PT(cuMemFreeAsync, ptsz)(dptr, stream);
}

/* Whether `stream` is capturing now, and where the next captured node goes. */
static bool capturing(CUstream stream, bool ptsz, capture_point_t *point) {
    CUstreamCaptureStatus status;
    /* On an error the driver will report whatever is wrong with the stream. */
    return capture_status(stream, ptsz, point, &status) == CUDA_SUCCESS &&
           status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* Makes `node` the stream's only capture dependency, as a driver memory node would be. */
static CUresult set_frontier(CUstream stream, bool ptsz, CUgraphNode node) {
    CUresult (*update)(CUstream, CUgraphNode *, const CUgraphEdgeData *, size_t, unsigned int) =
        GM_REAL_PT(cuStreamUpdateCaptureDependencies_v2, ptsz);
    return update(stream, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
}

/* The device of a capturing stream. A default stream belongs to the current context; any other
 * stream names its own. cuStreamGetDevice would be one call, but it invalidates a GLOBAL capture
 * even from a RELAXED thread; cuStreamGetCtx and cuCtxGetDevice_v2 do not
 * (tests/probe/capture_safety.cu). Drivers older than 13.0 lack cuCtxGetDevice_v2: the current
 * device then (README, known limitations). */
static bool stream_device_now(CUstream stream, CUdevice *device) {
    CUcontext context = NULL;
    if (gm_drv.cuCtxGetDevice_v2 == NULL)
        return gm_drv.cuCtxGetDevice(device) == CUDA_SUCCESS;
    if (!gm_stream_is_default(stream) && gm_drv.cuStreamGetCtx(stream, &context) != CUDA_SUCCESS)
        return false;
    return gm_drv.cuCtxGetDevice_v2(device, context) == CUDA_SUCCESS;
}

/* The device of the capturing stream at `point`, asked once per capture sequence and stream: a
 * stream's device cannot change, and a default stream of another context is another capture.
 * *asked says whether the driver was asked (a call on the stream: see alloc_in_capture). */
static bool stream_device(CUstream stream, const capture_point_t *point, CUdevice *device,
                          bool *asked) {
    static _Thread_local struct {
        CUstream stream;
        cuuint64_t capture;
        CUdevice device;
        bool known;
    } last;
    if (last.known && last.stream == stream && last.capture == point->id) {
        *device = last.device;
        return true;
    }
    bool known;
    *asked = true;
    GM_RELAXED(known = stream_device_now(stream, device));
    if (known)
        last.stream = stream, last.capture = point->id, last.device = *device, last.known = true;
    return known;
}

/* The pool a captured allocation takes its properties from (cuMemAllocAsync: the current pool of
 * the capturing stream's device, which need not be the current one; FromPool: the one given);
 * false when graphmem cannot serve it (IPC, host or managed pools, pools it does not know): the
 * driver makes the node then. Nothing here asks the driver about pools: such queries can
 * invalidate a GLOBAL capture. */
static bool capture_pool(CUmemoryPool pool, CUstream stream, const capture_point_t *point,
                         gm_alloc_params_t *params, bool *asked) {
    CUdevice device = 0;
    if (pool == NULL && !stream_device(stream, point, &device, asked))
        return false;
    if (!gm_mempool_servable(pool, device, &params->device, &params->access_mask))
        return false;
    /* A captured node lists the pool's peers (its resident device is implicit). */
    params->listed_mask = params->access_mask & ~(1ull << params->device);
    return true;
}

static CUresult captured_alloc(gm_engine_t *engine, capture_point_t *point, CUstream stream,
                               bool ptsz, const gm_alloc_params_t *params, CUdeviceptr *dptr) {
    CUdeviceptr va = 0;
    CUgraphNode node = NULL;
    CUresult result = gm_marker_alloc(engine, &point->site, params, &va, &node);
    if (result == CUDA_SUCCESS)
        result = set_frontier(stream, ptsz, node);
    if (result == CUDA_SUCCESS) {
        gm_joins_note(point->id, stream, ptsz, point->site.graph, node);
        point->made = node;
        *dptr = va;
        gm_stat_add(GM_STAT_graph_allocations, 1);
    }
    return result;
}

/* One captured-allocation call as the application made it: the hook's arguments. */
typedef struct alloc_call {
    CUdeviceptr *dptr;
    size_t size;
    CUmemoryPool pool; /* NULL: cuMemAllocAsync, the current pool of the stream's device */
    CUstream stream;
    bool ptsz;
    CUresult (*forward)(const struct alloc_call *call); /* the driver's own entry */
} alloc_call_t;

/* On a capturing stream: a marker for a pool graphmem serves; the driver's own node for any
 * other pool. The frontier `point` holds is the driver's array, valid until the next call on the
 * stream (cuStreamGetCaptureInfo_v3); a device lookup makes one (cuStreamGetCtx), so it is read
 * again after one (once per capture and stream). */
static CUresult alloc_in_capture(gm_engine_t *engine, capture_point_t *point,
                                 const alloc_call_t *call) {
    gm_alloc_params_t params = {
        .device = 0, .size = call->size, .access_mask = 0, .listed_mask = 0};
    bool asked = false;
    if (!capture_pool(call->pool, call->stream, point, &params, &asked)) {
        gm_stat_add(GM_STAT_passthrough_allocations, 1);
        return call->forward(call);
    }
    if (asked && !capturing(call->stream, call->ptsz, point))
        return call->forward(call); /* not capturing now: the driver answers the call */
    return captured_alloc(engine, point, call->stream, call->ptsz, &params, call->dptr);
}

/* On a capturing stream, under its frontier lock (EXCLUSIVE). */
static CUresult alloc_captured(capture_point_t *point, const alloc_call_t *call) {
    /* A capture into the graph of a child-graph node (cuStreamBeginCaptureToGraph): memory nodes
     * are refused there (§A3.6), and the driver answers the captured call exactly. */
    if (gm_nested_is_child(point->site.graph))
        return call->forward(call);
    gm_engine_t *engine = gm_glue_engine();
    if (engine == NULL)
        return call->forward(call);
    /* In the application's capture mode: every driver call on this path is one a capture allows
     * (graph and capture-dependency calls), except the device lookup, made RELAXED above, and an
     * address reservation, which the backend makes RELAXED (shim/README.md, "Capture modes"). */
    return alloc_in_capture(engine, point, call);
}

/* The driver's own allocation, made without the stream's lock. */
static CUresult forward_unlocked(const alloc_call_t *call) {
    return after_unlocked(call->forward(call), call->stream);
}

/* A marker that took its frontier as known and failed is made again after asking the driver: an
 * invalidated capture then gets the driver's own answer, as without the known frontier. */
static CUresult alloc_async(const alloc_call_t *call) {
    /* Zero bytes: the driver returns NULL and adds no node; leave it to the driver. */
    if (call->dptr == NULL || call->size == 0 || gm_shim_mode() != GM_MODE_ACTIVE)
        return forward_unlocked(call);
    for (bool may_know = true;; may_know = false) {
        capture_point_t point;
        CUstreamCaptureStatus status;
        marker_lock_t lock MARKER_LOCK;
        CUresult result =
            locked_capture_status(call->stream, call->ptsz, &point, &status, &lock, may_know);
        if (result != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
            bool held = lock.held;
            marker_unlock(&lock); /* not capturing now: the driver answers the call */
            return held ? call->forward(call) : forward_unlocked(call);
        }
        result = alloc_captured(&point, call);
        remember_frontier(call->stream, &point, &lock);
        marker_unlock(&lock);
        if (result == CUDA_SUCCESS || !point.known)
            return result;
    }
}

static CUresult forward_alloc(const alloc_call_t *c) {
    return GM_REAL_PT(cuMemAllocAsync, c->ptsz)(c->dptr, c->size, c->stream);
}

static CUresult forward_alloc_from_pool(const alloc_call_t *c) {
    return GM_REAL_PT(cuMemAllocFromPoolAsync, c->ptsz)(c->dptr, c->size, c->pool, c->stream);
}

/* No capture anywhere in the process: nothing to serve, straight to the driver (what alloc_async
 * would decide, after building its call). Most allocations take this path, through the exported
 * entry without the hook (hooks.def). */
CUresult gm_hook_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    if (gm_no_capture_anywhere())
        return after_unlocked(gm_real.cuMemAllocAsync(dptr, bytesize, hStream), hStream);
    return alloc_async(&(alloc_call_t){dptr, bytesize, NULL, hStream, false, forward_alloc});
}

CUresult gm_hook_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    if (gm_no_capture_anywhere())
        return after_unlocked(gm_real.cuMemAllocAsync_ptsz(dptr, bytesize, hStream), hStream);
    return alloc_async(&(alloc_call_t){dptr, bytesize, NULL, hStream, true, forward_alloc});
}

CUresult gm_hook_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream) {
    if (pool == NULL || gm_no_capture_anywhere()) /* the driver's error for a NULL pool */
        return after_unlocked(gm_real.cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream),
                              hStream);
    return alloc_async(
        &(alloc_call_t){dptr, bytesize, pool, hStream, false, forward_alloc_from_pool});
}

CUresult gm_hook_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream) {
    if (pool == NULL || gm_no_capture_anywhere())
        return after_unlocked(gm_real.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream),
                              hStream);
    return alloc_async(
        &(alloc_call_t){dptr, bytesize, pool, hStream, true, forward_alloc_from_pool});
}

/* ---- frees ---------------------------------------------------------------------------------- */

static CUresult captured_free(gm_engine_t *engine, capture_point_t *point, CUstream stream,
                              bool ptsz, CUdeviceptr dptr) {
    CUgraphNode node = NULL;
    CUresult result = gm_marker_free(engine, &point->site, dptr, &node);
    if (result != CUDA_SUCCESS)
        return result;
    gm_stat_add(GM_STAT_graph_frees, 1);
    gm_joins_note(point->id, stream, ptsz, point->site.graph, node);
    result = set_frontier(stream, ptsz, node);
    if (result == CUDA_SUCCESS)
        point->made = node;
    return result;
}

/* The stream of an async free outside graphs, asked again under the engine's defer lock just
 * before the free's fence is recorded (gm_engine_free_outside_checked): a capture another thread
 * began on it since free_served asked gets the free as a marker instead. */
typedef struct outside_check {
    CUstream stream;
    bool ptsz;
    CUstreamCaptureStatus status;
    CUresult result;
} outside_check_t;

/* Whether the free goes ahead as one outside graphs: the stream captures nothing, or it is the
 * legacy stream and a blocking stream began capturing since free_served asked (IMPLICIT). The
 * fence's record then answers as the driver's free would (legacy_stream_refusal): refused with
 * IMPLICIT, the capture invalidated, nothing freed. */
static bool goes_outside(const outside_check_t *c) {
    return (c->result == CUDA_SUCCESS && c->status == CU_STREAM_CAPTURE_STATUS_NONE) ||
           c->result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

static bool still_outside(void *arg) {
    outside_check_t *c = arg;
    capture_point_t point;
    c->result = capture_status(c->stream, c->ptsz, &point, &c->status);
    return goes_outside(c);
}

/* A free outside any graph: the allocation's lifetime ends now, after the stream's work for an
 * async free (`check`, NULL for cuMemFree), at once for cuMemFree. */
static CUresult free_outside(gm_engine_t *engine, CUdeviceptr dptr, outside_check_t *check) {
    uint64_t key = check ? gm_stream_key(check->stream, check->ptsz) : GM_NO_STREAM;
    gm_status_t status = gm_engine_free_outside_checked(
        engine, dptr, key, check ? (gm_driver_call_t){still_outside, check} : GM_NO_CALL);
    if (status == GM_ERR_DRIVER) /* the stream is not outside captures any more: check says */
        return CUDA_SUCCESS;
    if (status != GM_OK) {
        gm_log(GM_LOG_DEBUG, "free of %#llx outside graphs refused: %s", (unsigned long long)dptr,
               gm_status_name(status));
        /* A backend error is the fence's record on the stream, refused by the driver (a stream
         * destroyed, or in a capture invalidated since free_served asked, or never asked while
         * no capture was in flight): nothing was freed, and the record's code is what the
         * driver's own free on that stream answers. */
        return status == GM_ERR_BACKEND ? gm_backend_cuda_record_failure() : gm_cuda_result(status);
    }
    gm_stat_add(GM_STAT_outside_frees, 1);
    /* An async free on the legacy default stream (NULL, or CU_STREAM_LEGACY named), like
     * cuMemFree, is not waited for. */
    CUstream stream = check ? check->stream : NULL;
    bool ptsz = check && check->ptsz;
    bool legacy = stream == CU_STREAM_LEGACY || (stream == NULL && !ptsz);
    gm_uaf_unmap_freed(engine, check && !legacy, stream, ptsz);
    return CUDA_SUCCESS;
}

/* The legacy stream while a blocking stream captures (its capture query answered IMPLICIT): the
 * driver's own free there is refused with IMPLICIT and invalidates the capture before it looks at
 * the pointer (a double free too: H200, tests/gpu/scn_legacy_free_implicit.cu). An event record
 * there is refused the same way (tests/probe/free_mode_mirror.cu), so one is made and its code
 * answered: nothing is freed. CUDA_SUCCESS when the record went through (the capture ended
 * meanwhile): the free then goes on as any other. */
static CUresult legacy_stream_refusal(CUstream stream, bool ptsz) {
    CUstream named = ptsz && stream == NULL ? CU_STREAM_PER_THREAD : stream;
    CUevent event = NULL;
    if (gm_drv.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; /* the query's answer, the capture left going */
    CUresult result = gm_drv.cuEventRecord(event, named);
    gm_drv.cuEventDestroy_v2(event);
    return result;
}

/* A free of a graphmem address: a marker on a capturing stream (in the application's mode, as a
 * captured allocation), else the end of its lifetime (RELAXED: it records a fence). The driver
 * never sees these frees, so graphmem answers for the stream as it would: a stream it refuses, or
 * whose capture was invalidated (§A4.11), frees nothing and gets its error. The stream is asked
 * again in one step with the fence's record (free_outside): one that began capturing meanwhile
 * takes the captured path (a few rounds at most: each needs another thread to begin a capture on
 * it just then), one destroyed meanwhile fails the record. */
static CUresult free_served(gm_engine_t *engine, CUdeviceptr dptr, CUstream stream, bool ptsz) {
    for (bool may_know = true;;) {
        capture_point_t point;
        CUstreamCaptureStatus status;
        marker_lock_t lock MARKER_LOCK;
        CUresult result = locked_capture_status(stream, ptsz, &point, &status, &lock, may_know);
        if (result == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
            /* Into a child node's graph: no free node may go there (§A3.6), as for the explicit
             * one. */
            result = gm_nested_is_child(point.site.graph)
                         ? CUDA_ERROR_NOT_SUPPORTED
                         : captured_free(engine, &point, stream, ptsz, dptr);
            remember_frontier(stream, &point, &lock);
            marker_unlock(&lock);
            if (result == CUDA_SUCCESS || !point.known)
                return result;
            may_know = false; /* asked again, as for an allocation (alloc_async) */
            continue;
        }
        marker_unlock(&lock);
        if (result == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
            if ((result = legacy_stream_refusal(stream, ptsz)) != CUDA_SUCCESS)
                return result;
            continue;
        }
        if (result != CUDA_SUCCESS)
            return result;
        if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
            return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        outside_check_t check = {stream, ptsz, CU_STREAM_CAPTURE_STATUS_NONE, CUDA_SUCCESS};
        GM_RELAXED(result = free_outside(engine, dptr, &check));
        if (goes_outside(&check))
            return result;
        if (check.result != CUDA_SUCCESS)
            return check.result;
    }
}

/* Frees of addresses graphmem may own are served without the engine lock for the ownership
 * question: a free it refuses (which changed nothing) of an address it does not own after all goes
 * to the driver, as one never served would have. */
static CUresult free_async(CUdeviceptr dptr, CUstream stream, bool ptsz) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || !gm_engine_may_own(engine, dptr))
        return forward_free(dptr, stream, ptsz);
    CUresult result = free_served(engine, dptr, stream, ptsz);
    if (result != CUDA_SUCCESS && !gm_engine_owns(engine, dptr))
        return forward_free(dptr, stream, ptsz);
    /* Not live (never launched, freed already): the driver would first answer a sticky error. */
    return result == CUDA_ERROR_INVALID_VALUE ? gm_backend_cuda_sticky_or(result) : result;
}

CUresult gm_hook_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    return free_async(dptr, hStream, false);
}

CUresult gm_hook_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    return free_async(dptr, hStream, true);
}

CUresult gm_hook_cuMemFree_v2(CUdeviceptr dptr) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || !gm_engine_owns(engine, dptr))
        return gm_real.cuMemFree_v2(dptr);
    /* cuMemFree is a call a capture's mode may forbid (§A4.7): the driver then refuses it with
     * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidates the capture that forbade it and frees
     * nothing. The driver says so itself: cuMemFree(0), in the caller's own mode, is refused by the
     * same rule and otherwise does nothing (tests/probe/free_mode_mirror.cu). It also answers the
     * context's sticky error (a kernel's fault), which the driver's free answers first
     * (tests/gpu/scn_free_after_fault.cu): nothing is freed then either. */
    CUresult mode = gm_real.cuMemFree_v2(0);
    if (mode != CUDA_SUCCESS)
        return mode;
    /* cuMemFree ends the lifetime at once and does not synchronize (the caller must have). */
    CUresult result;
    GM_RELAXED(result = free_outside(engine, dptr, NULL));
    return result;
}

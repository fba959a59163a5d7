/* Event records and destruction (event order, below). Stream destruction, and the other calls by
 * which a stream may join a capture or go away: waiting for an event (a stream that waits for an
 * event recorded in a capture joins it) and a context's destruction or reset (its streams go, their
 * handles may come back). Each realizes the engine's deferred fences on the stream first
 * (core/README.md, "Deferred fences").
 *
 * Stream destruction. The engine forgets a stream in the same step as the driver destroys it: the
 * driver may hand the handle out again at once, to another thread, and a new stream with that
 * handle must not meet the fences recorded on the old one. A stream that received markers in a
 * capture still open leaves its last captured nodes to the unjoined check first
 * (bridge/joins.h). */
#include "interpose/driver.h"
#include "interpose/frontier_lock.h"

#include "bridge/backend_cuda.h"
#include "bridge/captures.h"
#include "bridge/engine_glue.h"
#include "bridge/joins.h"
#include "bridge/streams.h"

typedef struct stream_destroy_args {
    CUresult (*real)(CUstream);
    CUstream stream;
} stream_destroy_args_t;

static CUresult call_stream_destroy(void *arg) {
    stream_destroy_args_t *a = arg;
    return a->real(a->stream);
}

static CUresult stream_destroy_alone(CUresult (*real)(CUstream), CUstream stream) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || gm_stream_is_default(stream))
        return real(stream);
    if (!gm_no_capture_anywhere())
        gm_joins_stream_destroyed(stream);
    stream_destroy_args_t args = {real, stream};
    gm_app_call_t call;
    gm_engine_stream_destroy(engine, gm_stream_key(stream, false),
                             gm_app_call_begin(&call, call_stream_destroy, &args));
    gm_app_call_end(&call);
    return call.result;
}

/* A capture's origin going invalidates its side streams' capture (frontier_lock.h). */
static CUresult stream_destroy(CUresult (*real)(CUstream), CUstream stream) {
    gm_frontier_capture_change_begins();
    CUresult result = stream_destroy_alone(real, stream);
    gm_frontier_capture_change_ends();
    return result;
}

CUresult gm_hook_cuStreamDestroy(CUstream hStream) {
    return stream_destroy(gm_real.cuStreamDestroy, hStream);
}

CUresult gm_hook_cuStreamDestroy_v2(CUstream hStream) {
    return stream_destroy(gm_real.cuStreamDestroy_v2, hStream);
}

/* Event order (core/README.md, "Event order"): hints for which streams' graphs may share memory.
 * Once the driver recorded an event, it takes the recording stream's place; once a stream waited
 * for it, that stream is after that place. One short section of the engine's order lock each,
 * after the driver's call (a launch or record racing it from another thread makes the hint wrong:
 * it costs concurrency, never bytes). Default streams and captures give no marks and take none. */
static uint64_t event_key(CUevent event) {
    return (uint64_t)(uintptr_t)event;
}

static bool orders(CUstream stream, bool ptsz) {
    return !gm_stream_is_default(stream) && !gm_stream_capturing(stream, ptsz);
}

static CUresult recorded(CUevent event, CUstream stream, bool ptsz, CUresult result) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine != NULL && result == CUDA_SUCCESS && gm_engine_order_active(engine))
        gm_engine_event_record(engine, event_key(event),
                               orders(stream, ptsz) ? gm_stream_key(stream, ptsz) : GM_NO_STREAM);
    return result;
}

CUresult gm_hook_cuEventRecord(CUevent hEvent, CUstream hStream) {
    return recorded(hEvent, hStream, false, gm_real.cuEventRecord(hEvent, hStream));
}

CUresult gm_hook_cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
    return recorded(hEvent, hStream, true, gm_real.cuEventRecord_ptsz(hEvent, hStream));
}

CUresult gm_hook_cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return recorded(hEvent, hStream, false, gm_real.cuEventRecordWithFlags(hEvent, hStream, flags));
}

CUresult gm_hook_cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return recorded(hEvent, hStream, true,
                    gm_real.cuEventRecordWithFlags_ptsz(hEvent, hStream, flags));
}

/* Forgotten after the driver's call: a handle given out again meanwhile may lose its new mark (a
 * hint lost), but a destroyed event's mark never reaches a new one. */
static CUresult event_destroyed(CUevent event, CUresult result) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine != NULL && result == CUDA_SUCCESS)
        gm_engine_event_destroyed(engine, event_key(event));
    return result;
}

CUresult gm_hook_cuEventDestroy(CUevent hEvent) {
    return event_destroyed(hEvent, gm_real.cuEventDestroy(hEvent));
}

CUresult gm_hook_cuEventDestroy_v2(CUevent hEvent) {
    return event_destroyed(hEvent, gm_real.cuEventDestroy_v2(hEvent));
}

static CUresult wait_event(CUresult (*real)(CUstream, CUevent, unsigned int), CUstream stream,
                           CUevent event, unsigned int flags, bool ptsz) {
    gm_join_t join = gm_join_begin(stream, ptsz, false);
    CUresult result = real(stream, event, flags);
    gm_join_end(join);
    /* A wait inside a capture (or one that joined the stream to a capture) orders nothing now. */
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine != NULL && result == CUDA_SUCCESS && gm_engine_order_active(engine) &&
        orders(stream, ptsz))
        gm_engine_stream_wait(engine, gm_stream_key(stream, ptsz), event_key(event));
    return result;
}

CUresult gm_hook_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return wait_event(gm_real.cuStreamWaitEvent, hStream, hEvent, Flags, false);
}

CUresult gm_hook_cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return wait_event(gm_real.cuStreamWaitEvent_ptsz, hStream, hEvent, Flags, true);
}

/* A context's end (cuCtxDestroy, a device's primary context reset, or the release of its last
 * reference): the driver's call and its handle (a context, or for `primary` a device), then, found
 * under the engine lock, `context` (NULL when none is known, a primary context not active) and
 * the primary context's id before the call (`released_id`, 0 if unknown). */
typedef struct context_end {
    CUresult (*call)(void *handle);
    void *handle;
    bool primary, release;
    CUcontext context;
    unsigned long long released_id;
    CUresult result;
    bool gone;
} context_end_t;

/* The device's primary context, when it is active (retaining an inactive one would make it), and
 * its id (0 when the driver cannot tell), read while it is retained. */
static CUcontext primary_of(CUdevice device, unsigned long long *id) {
    unsigned flags = 0;
    int active = 0;
    CUcontext context = NULL;
    *id = 0;
    if (gm_drv.cuDevicePrimaryCtxGetState == NULL || gm_drv.cuDevicePrimaryCtxRetain == NULL ||
        gm_drv.cuDevicePrimaryCtxRelease_v2 == NULL ||
        gm_drv.cuDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || !active ||
        gm_drv.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS)
        return NULL;
    if (gm_drv.cuCtxGetId == NULL || gm_drv.cuCtxGetId(context, id) != CUDA_SUCCESS)
        *id = 0;
    gm_drv.cuDevicePrimaryCtxRelease_v2(device);
    return context;
}

/* Whether the primary context a release left is still the one released: active, and the same
 * context rather than a new one that another thread's retain made in between (cuDevicePrimaryCtx-
 * Retain is not hooked, and a new primary context has the same handle but a new id). Unknown
 * counts as still there: marking a live context's events gone would let the memory they order be
 * reused; the other way, graphmem keeps events the driver may refuse (CUDA error 709). */
static bool primary_still_there(CUdevice device, unsigned long long released_id) {
    unsigned flags = 0;
    int active = 0;
    if (gm_drv.cuDevicePrimaryCtxGetState == NULL ||
        gm_drv.cuDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS)
        return true;
    if (!active)
        return false;
    CUcontext now = NULL;
    unsigned long long id = 0;
    if (released_id == 0 || gm_drv.cuCtxGetId == NULL || gm_drv.cuDevicePrimaryCtxRetain == NULL ||
        gm_drv.cuDevicePrimaryCtxRelease_v2 == NULL ||
        gm_drv.cuDevicePrimaryCtxRetain(&now, device) != CUDA_SUCCESS)
        return true;
    /* Retained: the context cannot go while its id is read. */
    bool same = gm_drv.cuCtxGetId(now, &id) != CUDA_SUCCESS || id == released_id;
    gm_drv.cuDevicePrimaryCtxRelease_v2(device);
    return same;
}

/* Under the engine lock: graphmem's own retain and release of a primary context (primary_of,
 * primary_still_there) never come between another thread's hooked reset or release and its look
 * at the state. */
static bool end_context(void *arg) {
    context_end_t *end = arg;
    CUdevice device = (CUdevice)(uintptr_t)end->handle;
    /* graphmem's own calls in RELAXED mode (a global capture on another thread must not see
     * them); the application's call in its own mode. */
    if (end->primary)
        GM_RELAXED(end->context = primary_of(device, &end->released_id));
    if (end->context)
        gm_backend_cuda_context_ending();
    end->result = end->call(end->handle);
    bool still_there = false;
    if (end->result == CUDA_SUCCESS && end->context != NULL && end->release)
        GM_RELAXED(still_there = primary_still_there(device, end->released_id));
    end->gone = end->result == CUDA_SUCCESS && end->context != NULL && !still_there;
    if (end->context)
        gm_backend_cuda_context_ended(end->context, end->gone);
    return end->result == CUDA_SUCCESS;
}

/* Every deferred fence is realized while its stream still exists. The driver's call, which waits
 * for the context's work, runs under the engine lock, and graphmem's fences of the context are
 * marked gone in the same step: their events go with it (a query of one afterwards could crash
 * the driver), and no launch or trim may use one in between. The order's marks are forgotten
 * after a context went: its streams' and events' handles may come back (a mark seen on one
 * meanwhile costs sharing, never bytes: core/README.md, "Event order"). */
static CUresult context_going_alone(context_end_t *end) {
    gm_join_end(gm_join_begin(NULL, false, true));
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL) /* no fences of any context */
        return end->call(end->handle);
    gm_engine_call_locked(engine, (gm_driver_call_t){end_context, end});
    if (end->gone)
        gm_engine_order_reset(engine);
    return end->result;
}

/* The context's streams and graphs may go with it (frontier_lock.h). */
static CUresult context_going(context_end_t *end) {
    gm_frontier_capture_change_begins();
    CUresult result = context_going_alone(end);
    gm_frontier_capture_change_ends();
    return result;
}

/* The driver's call for each hook below, through the one signature context_end_t holds. */
#define CONTEXT_CALL(entry, type)                                                                  \
    static CUresult call_##entry(void *handle) {                                                   \
        return gm_real.entry((type)(uintptr_t)handle);                                             \
    }
CONTEXT_CALL(cuCtxDestroy, CUcontext)
CONTEXT_CALL(cuCtxDestroy_v2, CUcontext)
CONTEXT_CALL(cuDevicePrimaryCtxReset, CUdevice)
CONTEXT_CALL(cuDevicePrimaryCtxReset_v2, CUdevice)
CONTEXT_CALL(cuDevicePrimaryCtxRelease, CUdevice)
CONTEXT_CALL(cuDevicePrimaryCtxRelease_v2, CUdevice)
#undef CONTEXT_CALL

CUresult gm_hook_cuCtxDestroy(CUcontext ctx) {
    return context_going(
        &(context_end_t){.call = call_cuCtxDestroy, .handle = ctx, .context = ctx});
}

CUresult gm_hook_cuCtxDestroy_v2(CUcontext ctx) {
    return context_going(
        &(context_end_t){.call = call_cuCtxDestroy_v2, .handle = ctx, .context = ctx});
}

/* A primary context's reset, or a release that may drop its last reference (then the driver
 * resets it: cuda.h, cuDevicePrimaryCtxRelease). */
static CUresult primary_going(CUdevice device, CUresult (*call)(void *), bool release) {
    return context_going(&(context_end_t){
        .call = call, .handle = (void *)(uintptr_t)device, .primary = true, .release = release});
}

CUresult gm_hook_cuDevicePrimaryCtxReset(CUdevice device) {
    return primary_going(device, call_cuDevicePrimaryCtxReset, false);
}

CUresult gm_hook_cuDevicePrimaryCtxReset_v2(CUdevice device) {
    return primary_going(device, call_cuDevicePrimaryCtxReset_v2, false);
}

CUresult gm_hook_cuDevicePrimaryCtxRelease(CUdevice device) {
    return primary_going(device, call_cuDevicePrimaryCtxRelease, true);
}

CUresult gm_hook_cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    return primary_going(device, call_cuDevicePrimaryCtxRelease_v2, true);
}

/* A context-wide synchronize: every launch made in the context before it finished, device
 * launches of pinned execs included (engine.h, GM_EXEC_PINNED), so the memory of those destroyed
 * in it before the call began may go (the mark is taken first). `ctx` NULL: the current one. */
static CUresult synchronize(CUresult (*real)(CUcontext), CUresult (*real_current)(void),
                            CUcontext ctx) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    bool waiting = engine != NULL && gm_engine_has_pinned_waiting(engine);
    uint64_t mark = waiting ? gm_engine_sync_mark(engine) : 0;
    CUresult result = real ? real(ctx) : real_current();
    if (waiting && result == CUDA_SUCCESS &&
        (ctx != NULL || gm_drv.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS))
        gm_engine_device_idle(engine, (uint64_t)(uintptr_t)ctx, mark);
    return result;
}

CUresult gm_hook_cuCtxSynchronize(void) {
    return synchronize(NULL, gm_real.cuCtxSynchronize, NULL);
}

CUresult gm_hook_cuCtxSynchronize_v2(CUcontext ctx) {
    return synchronize(gm_real.cuCtxSynchronize_v2, NULL, ctx);
}

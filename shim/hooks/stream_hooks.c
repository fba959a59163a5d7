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

static CUresult stream_destroy(CUresult (*real)(CUstream), CUstream stream) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || gm_stream_is_default(stream))
        return real(stream);
    if (atomic_load_explicit(&gm_captures_in_flight, memory_order_relaxed))
        gm_joins_stream_destroyed(stream);
    stream_destroy_args_t args = {real, stream};
    gm_app_call_t call;
    gm_engine_stream_destroy(engine, gm_stream_key(stream, false),
                             gm_app_call_begin(&call, call_stream_destroy, &args));
    gm_app_call_end(&call);
    return call.result;
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

/* A context's destruction (cuCtxDestroy, or a device's primary context reset): `context` (NULL
 * when none is known, a primary context not active) and the driver's call. */
typedef struct context_end {
    CUcontext context;
    CUresult (*destroy)(void *handle);
    void *handle;
    CUresult result;
} context_end_t;

static bool end_context(void *arg) {
    context_end_t *end = arg;
    end->result = end->destroy(end->handle);
    if (end->result == CUDA_SUCCESS && end->context != NULL)
        gm_backend_cuda_context_gone(end->context);
    return end->result == CUDA_SUCCESS;
}

/* Every deferred fence is realized while its stream still exists. The driver's call, which waits
 * for the context's work, runs under the engine lock, and graphmem's fences of the context are
 * marked gone in the same step: their events go with it (a query of one afterwards could crash
 * the driver), and no launch or trim may use one in between. */
static CUresult context_going(context_end_t *end) {
    gm_join_end(gm_join_begin(NULL, false, true));
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL)
        return end->destroy(end->handle);
    gm_engine_order_reset(engine); /* its streams' and events' handles may come back */
    gm_engine_call_locked(engine, (gm_driver_call_t){end_context, end});
    return end->result;
}

static CUresult destroy_ctx(void *handle) {
    return gm_real.cuCtxDestroy((CUcontext)handle);
}

static CUresult destroy_ctx_v2(void *handle) {
    return gm_real.cuCtxDestroy_v2((CUcontext)handle);
}

CUresult gm_hook_cuCtxDestroy(CUcontext ctx) {
    return context_going(&(context_end_t){ctx, destroy_ctx, ctx, CUDA_SUCCESS});
}

CUresult gm_hook_cuCtxDestroy_v2(CUcontext ctx) {
    return context_going(&(context_end_t){ctx, destroy_ctx_v2, ctx, CUDA_SUCCESS});
}

/* The device's primary context, when it is active (retaining an inactive one would make it). */
static CUcontext primary_of(CUdevice device) {
    unsigned flags = 0;
    int active = 0;
    CUcontext context = NULL;
    if (gm_drv.cuDevicePrimaryCtxGetState == NULL || gm_drv.cuDevicePrimaryCtxRetain == NULL ||
        gm_drv.cuDevicePrimaryCtxRelease_v2 == NULL ||
        gm_drv.cuDevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || !active ||
        gm_drv.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS)
        return NULL;
    gm_drv.cuDevicePrimaryCtxRelease_v2(device);
    return context;
}

static CUresult reset_primary(void *handle) {
    return gm_real.cuDevicePrimaryCtxReset((CUdevice)(uintptr_t)handle);
}

static CUresult reset_primary_v2(void *handle) {
    return gm_real.cuDevicePrimaryCtxReset_v2((CUdevice)(uintptr_t)handle);
}

CUresult gm_hook_cuDevicePrimaryCtxReset(CUdevice device) {
    return context_going(&(context_end_t){primary_of(device), reset_primary,
                                          (void *)(uintptr_t)device, CUDA_SUCCESS});
}

CUresult gm_hook_cuDevicePrimaryCtxReset_v2(CUdevice device) {
    return context_going(&(context_end_t){primary_of(device), reset_primary_v2,
                                          (void *)(uintptr_t)device, CUDA_SUCCESS});
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

/* Stream destruction, and the other calls by which a stream may join a capture or go away:
 * waiting for an event (a stream that waits for an event recorded in a capture joins it) and a
 * context's destruction or reset (its streams go, their handles may come back). Each realizes the
 * engine's deferred fences on the stream first (core/README.md, "Deferred fences").
 *
 * Stream destruction. The engine forgets a stream in the same step as the driver destroys it: the
 * driver may hand the handle out again at once, to another thread, and a new stream with that
 * handle must not meet the fences recorded on the old one. A stream that received markers in a
 * capture still open leaves its last captured nodes to the unjoined check first
 * (bridge/joins.h). */
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

static CUresult wait_event(CUresult (*real)(CUstream, CUevent, unsigned int), CUstream stream,
                           CUevent event, unsigned int flags, bool ptsz) {
    gm_join_t join = gm_join_begin(stream, ptsz, false);
    CUresult result = real(stream, event, flags);
    gm_join_end(join);
    return result;
}

CUresult gm_hook_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return wait_event(gm_real.cuStreamWaitEvent, hStream, hEvent, Flags, false);
}

CUresult gm_hook_cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return wait_event(gm_real.cuStreamWaitEvent_ptsz, hStream, hEvent, Flags, true);
}

/* Every deferred fence is realized while its stream still exists; the driver's call, which
 * waits for the context's work, runs without the engine's locks. */
static void context_going(void) {
    gm_join_end(gm_join_begin(NULL, false, true));
}

/* The context destruction and reset hooks: context_going, then the driver. */
#define GM_CONTEXT_GOING(name, param_type)                                                         \
    CUresult gm_hook_##name(param_type arg) {                                                      \
        context_going();                                                                           \
        return gm_real.name(arg);                                                                  \
    }
GM_CONTEXT_GOING(cuCtxDestroy, CUcontext)
GM_CONTEXT_GOING(cuCtxDestroy_v2, CUcontext)
GM_CONTEXT_GOING(cuDevicePrimaryCtxReset, CUdevice)
GM_CONTEXT_GOING(cuDevicePrimaryCtxReset_v2, CUdevice)

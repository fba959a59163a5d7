// Native probe: which driver queries invalidate a GLOBAL stream capture when the calling thread
// switched itself to RELAXED (what graphmem's capture path may call), and which of the calls
// graphmem makes around a primary context's release or reset (shim/hooks/stream_hooks.c,
// primary_of and primary_still_there) invalidate one when made from another thread in its default
// GLOBAL mode (what graphmem did before ac728da ran them in RELAXED mode).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include <thread>

static CUstream stream;

static void begin(void) {
    cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static void end_and_report(const char *what, CUresult call_result) {
    CUstreamCaptureStatus status;
    cuStreamIsCapturing(stream, &status);
    CUgraph graph = NULL;
    CUresult end = cuStreamEndCapture(stream, &graph);
    printf("%-28s call=%d capture_after=%s end=%d\n", what, (int)call_result,
           status == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active" : "invalidated", (int)end);
    if (graph)
        cuGraphDestroy(graph);
}

int main() {
    cudaFree(0);
    cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    CUmemoryPool pool;
    CUdevice dev;
    for (int relaxed = 0; relaxed < 2; relaxed++) {
        printf("--- thread mode %s\n", relaxed ? "RELAXED (exchanged)" : "unchanged");
#define PROBE(name, call)                                                                          \
    do {                                                                                           \
        begin();                                                                                   \
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;                                 \
        if (relaxed)                                                                               \
            cuThreadExchangeStreamCaptureMode(&mode);                                              \
        CUresult r = call;                                                                         \
        if (relaxed)                                                                               \
            cuThreadExchangeStreamCaptureMode(&mode);                                              \
        end_and_report(name, r);                                                                   \
    } while (0)
        PROBE("cuStreamGetDevice", cuStreamGetDevice(stream, &dev));
        PROBE("cuCtxGetDevice", cuCtxGetDevice(&dev));
        CUcontext ctx;
        PROBE("cuStreamGetCtx", cuStreamGetCtx(stream, &ctx));
        PROBE("cuCtxGetCurrent", cuCtxGetCurrent(&ctx));
        cuStreamGetCtx(stream, &ctx);
        PROBE("cuCtxGetDevice_v2(stream ctx)", cuCtxGetDevice_v2(&dev, ctx));
        PROBE("cuCtxGetDevice_v2(NULL)", cuCtxGetDevice_v2(&dev, NULL));
        PROBE("cuStreamGetCtx(per-thread)", cuStreamGetCtx(CU_STREAM_PER_THREAD, &ctx));
        PROBE("cuDeviceGetMemPool", cuDeviceGetMemPool(&pool, 0));
        PROBE("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool(&pool, 0));
        CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
        CUmemAccess_flags flags;
        cuDeviceGetDefaultMemPool(&pool, 0);
        PROBE("cuMemPoolGetAccess", cuMemPoolGetAccess(&flags, pool, &loc));
        CUdeviceptr va = 0;
        PROBE("cuMemAddressReserve", cuMemAddressReserve(&va, 2 << 20, 0, 0, 0));
        CUevent ev;
        cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
        PROBE("cuEventQuery", cuEventQuery(ev));
        CUcontext primary = NULL;
        cuDevicePrimaryCtxRetain(&primary, 0); /* held over these probes: no release ends it */
        unsigned flags_out = 0;
        int active = 0;
        unsigned long long id = 0;
        PROBE("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState(0, &flags_out, &active));
        PROBE("cuCtxGetId(primary)", cuCtxGetId(primary, &id));
        CUcontext again = NULL;
        PROBE("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&again, 0));
        cuDevicePrimaryCtxRelease(0);
        cuDevicePrimaryCtxRetain(&again, 0);
        PROBE("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(0));
        cuDevicePrimaryCtxRelease(0);
    }

    /* The same primary-context calls from another thread whose mode is unchanged (GLOBAL) while
     * this thread's GLOBAL capture is open. */
    printf("--- another thread, mode unchanged\n");
    CUcontext primary = NULL;
    cuDevicePrimaryCtxRetain(&primary, 0);
#define OTHER(name, call)                                                                          \
    do {                                                                                           \
        begin();                                                                                   \
        CUresult r = CUDA_ERROR_UNKNOWN;                                                           \
        std::thread other([&] { r = call; });                                                      \
        other.join();                                                                              \
        end_and_report(name, r);                                                                   \
    } while (0)
    unsigned flags_out = 0;
    int active = 0;
    unsigned long long id = 0;
    OTHER("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState(0, &flags_out, &active));
    OTHER("cuCtxGetId(primary)", cuCtxGetId(primary, &id));
    CUcontext again = NULL;
    OTHER("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&again, 0));
    cuDevicePrimaryCtxRelease(0);
    cuDevicePrimaryCtxRetain(&again, 0);
    OTHER("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(0));
    cuDevicePrimaryCtxRelease(0);
    return 0;
}

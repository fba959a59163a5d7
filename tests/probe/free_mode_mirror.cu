// Native probe: which side-effect-free driver calls are refused by the same capture-mode rule as
// cuMemFree, and what an event record on the legacy stream does while a blocking stream captures
// (what shim/hooks/alloc_hooks.c relies on to answer as the driver for frees it serves).
// Measured on an H200 (driver 580, CUDA 13.0), one line per case (call result, capture status
// after the call, end of capture):
//   cuMemFree(0), cuEventQuery, cuEventSynchronize: refused with STREAM_CAPTURE_UNSUPPORTED and the
//     capture invalidated in a GLOBAL or THREAD_LOCAL capture of this thread and in another
//     thread's GLOBAL capture; success, capture going, in RELAXED mode, in another thread's
//     THREAD_LOCAL or RELAXED capture and without a capture: as cuMemFree of a cudaMalloc pointer
//     (refused in this thread's GLOBAL capture). cuMemFree(0) does nothing else.
//   cuEventRecord on CU_STREAM_LEGACY or NULL while a blocking stream captures (GLOBAL or RELAXED,
//     the thread's mode RELAXED or not): STREAM_CAPTURE_IMPLICIT and the capture invalidated;
//     cuStreamIsCapturing(CU_STREAM_LEGACY): IMPLICIT, the capture going.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <thread>
#include <string>

static CUstream s, blocking;
static CUevent ev;
static const char *name(CUresult r) {
    const char *n = "?";
    cuGetErrorName(r, &n);
    return n;
}
static const char *st(CUstream x) {
    CUstreamCaptureStatus c;
    if (cuStreamIsCapturing(x, &c) != CUDA_SUCCESS)
        return "query-failed";
    return c == CU_STREAM_CAPTURE_STATUS_ACTIVE        ? "active"
           : c == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "invalidated"
                                                       : "none";
}
static void end(CUstream x, const char *what, CUresult r) {
    const char *before = st(x);
    CUgraph g = NULL;
    CUresult e = cuStreamEndCapture(x, &g);
    printf("%-48s call=%-40s status=%-12s end=%s\n", what, name(r), before, name(e));
    if (g)
        cuGraphDestroy(g);
}
typedef CUresult (*call_t)(void);
static CUresult memfree0(void) {
    return cuMemFree(0);
}
static CUresult evquery(void) {
    return cuEventQuery(ev);
}
static CUresult evsync(void) {
    return cuEventSynchronize(ev);
}
static void variants(const char *label, call_t f) {
    char w[128];
    // same thread, each mode
    CUstreamCaptureMode modes[3] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                    CU_STREAM_CAPTURE_MODE_RELAXED};
    const char *mn[3] = {"global", "thread_local", "relaxed"};
    for (int m = 0; m < 3; m++) {
        cuStreamBeginCapture(s, modes[m]);
        CUresult r = f();
        snprintf(w, sizeof w, "%s same_thread %s", label, mn[m]);
        end(s, w, r);
    }
    for (int m = 0; m < 3; m++) {
        cuStreamBeginCapture(s, modes[m]);
        CUresult r = CUDA_ERROR_UNKNOWN;
        CUcontext c;
        cuCtxGetCurrent(&c);
        std::thread t([&] {
            cuCtxSetCurrent(c);
            r = f();
        });
        t.join();
        snprintf(w, sizeof w, "%s other_thread %s", label, mn[m]);
        end(s, w, r);
    }
    printf("%-48s call=%s\n", (std::string(label) + " no_capture").c_str(), name(f()));
}
int main() {
    cudaFree(0);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&blocking, CU_STREAM_DEFAULT);
    cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
    CUdeviceptr plain;
    cuMemAlloc(&plain, 1 << 20);
    variants("cuMemFree(0)", memfree0);
    variants("cuEventQuery", evquery);
    variants("cuEventSynchronize", evsync);
    // the real thing for comparison
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUresult r = cuMemFree(plain);
    end(s, "cuMemFree(plain) same_thread global", r);
    // legacy stream ops while a blocking stream captures
    for (int m = 0; m < 2; m++) {
        CUstreamCaptureMode mode =
            m ? CU_STREAM_CAPTURE_MODE_RELAXED : CU_STREAM_CAPTURE_MODE_GLOBAL;
        const char *mname = m ? "relaxed" : "global";
        char w[128];
        cuStreamBeginCapture(blocking, mode);
        r = cuEventRecord(ev, CU_STREAM_LEGACY);
        snprintf(w, sizeof w, "cuEventRecord(legacy) blocking %s", mname);
        end(blocking, w, r);
        cuStreamBeginCapture(blocking, mode);
        r = cuEventRecord(ev, NULL);
        snprintf(w, sizeof w, "cuEventRecord(NULL) blocking %s", mname);
        end(blocking, w, r);
        cuStreamBeginCapture(blocking, mode);
        CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
        cuThreadExchangeStreamCaptureMode(&relaxed);
        r = cuEventRecord(ev, CU_STREAM_LEGACY);
        cuThreadExchangeStreamCaptureMode(&relaxed);
        snprintf(w, sizeof w, "cuEventRecord(legacy) thread-relaxed blocking %s", mname);
        end(blocking, w, r);
        cuStreamBeginCapture(blocking, mode);
        CUstreamCaptureStatus cs;
        r = cuStreamIsCapturing(CU_STREAM_LEGACY, &cs);
        snprintf(w, sizeof w, "cuStreamIsCapturing(legacy) blocking %s", mname);
        end(blocking, w, r);
    }
    printf("done\n");
    return 0;
}

// A primary context retained and released while a GLOBAL capture is open (§A4.7). The runtime
// holds the primary context too, so the release leaves it active. graphmem hooks the release:
// before and after the driver's call it asks whether the primary context is active and which one
// it is (cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxRetain, cuCtxGetId,
// cuDevicePrimaryCtxRelease), to learn whether the release ended it. Those are graphmem's own
// calls: since ac728da they run in RELAXED mode, so a GLOBAL capture (of another thread, or of the
// releasing thread itself) never sees them; before, they ran in the application's mode, where any
// of them the driver counts as unsafe during a GLOBAL capture would have invalidated it.
//
// Two phases, each a GLOBAL capture on a non-blocking stream (allocate, fill, copy out, free):
// `other`, where another thread (in the default GLOBAL mode) retains and releases the primary
// context while the capture is open; `same`, where the capturing thread does it itself. Observed:
// the application's retain and release, the capture's status after them, the end, and the
// graph's launch and data. Natively the capture's fate depends only on whether the driver counts
// the application's own retain and release as unsafe; under graphmem it must be the same.
// Whether graphmem's extra queries are unsafe is measured by tests/probe/capture_safety.cu (the
// `another thread` section): if none is, this scenario observes the same before ac728da too.
#include "driver_graphs.cuh"

#include <thread>

static const size_t kWords = 1 << 16, kBytes = kWords * sizeof(uint32_t);

static cudaStream_t s;
static uint32_t *out = nullptr;

// Warm-up outside any capture: one captured allocation launched, so graphmem's engine has
// started (a release goes through graphmem's context bookkeeping only then).
static void warm_up(void) {
    cudaGraph_t g = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *p = nullptr;
    cudaError_t rc = cudaMallocAsync(&p, kBytes, s);
    if (rc == cudaSuccess) {
        fill_words(s, p, kWords, 1);
        rc = cudaFreeAsync(p, s);
    }
    cudaError_t end = cudaStreamEndCapture(s, &g);
    obs_rc("warm_capture", rc);
    obs_rc("warm_end", end);
    cudaGraphExec_t x = nullptr;
    if (g && cudaGraphInstantiate(&x, g, 0) == cudaSuccess) {
        obs_rc("warm_launch", cudaGraphLaunch(x, s));
        obs_rc("warm_sync", cudaStreamSynchronize(s));
        cudaGraphExecDestroy(x);
    }
    if (g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError();
}

// The application's retain and release of device 0's primary context, observed as
// <phase>_retain and <phase>_release.
static void retain_and_release(const char *phase) {
    char key[64];
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    CUcontext ctx = nullptr;
    snprintf(key, sizeof key, "%s_retain", phase);
    CUresult retained = cuDevicePrimaryCtxRetain(&ctx, dev);
    obs(key, cu_name(retained));
    snprintf(key, sizeof key, "%s_release", phase);
    obs(key, retained == CUDA_SUCCESS ? cu_name(cuDevicePrimaryCtxRelease(dev)) : "not_retained");
}

static void phase(const char *name, bool other_thread, uint32_t v) {
    char key[96];
    snprintf(key, sizeof key, "%s_begin", name);
    obs_rc(key, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    void *p = nullptr;
    cudaError_t rc = cudaMallocAsync(&p, kBytes, s);
    if (rc == cudaSuccess)
        rc = fill_words(s, p, kWords, v);
    if (rc == cudaSuccess)
        rc = cudaMemcpyAsync(out, p, kBytes, cudaMemcpyDeviceToDevice, s);
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(p, s);
    snprintf(key, sizeof key, "%s_captured", name);
    obs_rc(key, rc);
    if (other_thread) {
        std::thread other([name] { retain_and_release(name); });
        other.join();
    } else {
        retain_and_release(name);
    }
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t asked = cudaStreamIsCapturing(s, &status);
    snprintf(key, sizeof key, "%s_status_after", name);
    obs(key, asked != cudaSuccess                           ? cudaGetErrorName(asked)
             : status == cudaStreamCaptureStatusActive      ? "active"
             : status == cudaStreamCaptureStatusInvalidated ? "invalidated"
                                                            : "none");
    (void)cudaGetLastError();
    cudaGraph_t g = nullptr;
    snprintf(key, sizeof key, "%s_end", name);
    obs_rc(key, cudaStreamEndCapture(s, &g));
    snprintf(key, sizeof key, "%s_graph_null", name);
    obs_yes(key, g == nullptr);
    if (!g)
        return;
    cudaGraphExec_t x;
    cudaError_t run = instantiate_and_run(g, s, &x);
    snprintf(key, sizeof key, "%s_run", name);
    obs_rc(key, run);
    snprintf(key, sizeof key, "%s_data", name);
    obs_ok(key, run == cudaSuccess && check_words(s, out, kWords, v));
    if (x)
        cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
}

int main() {
    require_graph_memory();
    cuInit(0);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc(&out, kBytes);
    g_bad = new_counter();
    warm_up();
    phase("other", true, 11);
    phase("same", false, 22);
    obs_rc("final_sync", cudaDeviceSynchronize());
    cudaFree(out);
    cudaFree(g_bad);
    cudaStreamDestroy(s);
    return 0;
}

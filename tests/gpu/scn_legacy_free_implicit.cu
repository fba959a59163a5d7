// An async free on the legacy default stream while a BLOCKING stream captures. A query of the
// legacy stream then returns CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and leaves the capture going
// (cuda.h, cuStreamIsCapturing); the driver's free there answers IMPLICIT too, and invalidates the
// blocking stream's capture (Global and Relaxed mode alike), before it looks at the pointer: a
// double free gets IMPLICIT as well. graphmem serves the free of a graph allocation without the
// driver: it answered the query's IMPLICIT and left the capture going, and a double free got
// INVALID_VALUE (H200, before alloc_hooks.c made an event record there, which the driver refuses
// the same way). Control: the same free of a stream-ordered pool pointer (the driver answers in
// both runs). Each variant also tells whether the graph allocation is still live (a relaunch
// without AutoFree is refused while it is).
#include "entries.cuh"

#include <cuda.h>

static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);

enum Which { GRAPH_RUNTIME, GRAPH_DRIVER_LEGACY_HANDLE, GRAPH_DOUBLE_FREE, POOL_CONTROL };
static Which g_which;
static cudaStreamCaptureMode g_mode;

static void variant(void) {
    cudaStream_t s = nullptr, c = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreate(&c); // blocking: synchronizes with the legacy stream
    uint32_t *pool = nullptr, *ordinary = nullptr;
    cudaMalloc(&ordinary, kBytes);
    EscapedAllocation x = escaped_allocation(s, kBytes, 5);
    uint32_t *a = x.ptr;
    obs_rc("pool_malloc", cudaMallocAsync((void **)&pool, kBytes, s));
    obs_rc("setup_sync", cudaStreamSynchronize(s));
    if (g_which == GRAPH_DOUBLE_FREE) { // freed once already: the legacy free is a double free
        obs_rc("first_free", cudaFreeAsync(a, s));
        obs_rc("first_sync", cudaStreamSynchronize(s));
    }

    obs_rc("begin_blocking", cudaStreamBeginCapture(c, g_mode));
    obs_rc("captured_fill", fill_words(c, ordinary, kWords, 1));
    if (g_which == GRAPH_RUNTIME || g_which == GRAPH_DOUBLE_FREE)
        obs_rc("legacy_free", cudaFreeAsync(a, 0));
    else if (g_which == GRAPH_DRIVER_LEGACY_HANDLE)
        obs_cu("legacy_free", cuMemFreeAsync((CUdeviceptr)a, CU_STREAM_LEGACY));
    else
        obs_rc("legacy_free", cudaFreeAsync(pool, 0));
    cudaGraph_t made = end_observed("blocking", c);
    if (made)
        cudaGraphDestroy(made);

    obs_rc("relaunch", cudaGraphLaunch(x.exec, s)); // refused while `a` is unfreed (§A6.1)
    obs_rc("relaunch_sync", cudaStreamSynchronize(s));
    if (g_which == GRAPH_DOUBLE_FREE) // relaunched: `a` is live again
        obs_rc("relaunch_free", cudaFreeAsync(a, s));
    obs_rc("free_a", cudaFreeAsync(a, s));
    if (g_which != POOL_CONTROL)
        obs_rc("free_pool", cudaFreeAsync(pool, s));
    obs_rc("final_sync", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(x.exec);
    cudaGraphDestroy(x.graph);
    cudaFree(ordinary);
    cudaStreamDestroy(c);
    cudaStreamDestroy(s);
}

static void run(const char *name, Which which, cudaStreamCaptureMode mode) {
    g_which = which;
    g_mode = mode;
    run_isolated(name, variant);
}

int main() {
    run("global_graph_runtime", GRAPH_RUNTIME, cudaStreamCaptureModeGlobal);
    run("global_graph_cu_legacy", GRAPH_DRIVER_LEGACY_HANDLE, cudaStreamCaptureModeGlobal);
    run("global_pool_control", POOL_CONTROL, cudaStreamCaptureModeGlobal);
    run("relaxed_graph_runtime", GRAPH_RUNTIME, cudaStreamCaptureModeRelaxed);
    run("global_double_free", GRAPH_DOUBLE_FREE, cudaStreamCaptureModeGlobal);
    run("relaxed_double_free", GRAPH_DOUBLE_FREE, cudaStreamCaptureModeRelaxed);
    run("relaxed_pool_control", POOL_CONTROL, cudaStreamCaptureModeRelaxed);
    return 0;
}

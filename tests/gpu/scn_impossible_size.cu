// Graph allocations no device can hold (issue: graphmem accepted a captured 2^40-byte
// cudaMallocAsync that the driver fails with out-of-memory, which PyTorch's
// test_graph_capture_oom expects). Captured cudaMallocAsync and explicit cudaGraphAddMemAllocNode
// of 2^40 bytes, SIZE_MAX / 2 and the device's total memory + 1 MiB (explicit also SIZE_MAX):
// every code, and, where the capture goes on, EndCapture, instantiation and launch. Each size runs
// in a process of its own (entries.cuh).
#include "entries.cuh"

enum Size { k2p40, kHalfMax, kTotalPlus1MiB, kMax };

static Size g_size;

static size_t bytes_of(Size size) {
    size_t avail = 0, total = 0;
    cudaMemGetInfo(&avail, &total);
    size_t b = size == k2p40            ? (size_t)1 << 40
               : size == kHalfMax       ? SIZE_MAX / 2
               : size == kTotalPlus1MiB ? total + ((size_t)1 << 20)
                                        : SIZE_MAX;
    info("bytes", "%zu (device total %zu)", b, total);
    return b;
}

// Instantiates, launches and synchronizes g, observing each step; whether the launch failed.
static bool run_graph(cudaGraph_t g, cudaStream_t s) {
    cudaGraphExec_t e = nullptr;
    cudaError_t rc = cudaGraphInstantiate(&e, g, 0);
    obs_rc("instantiate", rc);
    if (rc == cudaSuccess) {
        rc = cudaGraphLaunch(e, s);
        obs_rc("launch", rc);
        obs_rc("sync", cudaStreamSynchronize(s));
        obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    }
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    return rc != cudaSuccess;
}

static cudaError_t small_alloc(cudaStream_t s, bool *ok) {
    const size_t n = (1 << 20) / sizeof(uint32_t);
    void *p = nullptr;
    cudaError_t rc = cudaMallocAsync(&p, n * sizeof(uint32_t), s);
    if (rc == cudaSuccess)
        rc = fill_words(s, p, n, 5);
    *ok = rc == cudaSuccess && check_words(s, p, n, 5);
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(p, s);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s);
    (void)cudaGetLastError();
    return rc;
}

// Then, once graph memory is trimmed, the stream still serves an ordinary small allocation.
// Natively that fails (out of memory, trim or not) after a launch that failed for lack of memory:
// what such a launch leaves behind is the driver's, so it is logged only.
static void after(cudaStream_t s, bool launch_failed) {
    bool ok = false;
    cudaError_t rc = small_alloc(s, &ok);
    info("untrimmed_small_alloc", "%s data %s", cudaGetErrorName(rc), ok ? "ok" : "bad");
    obs_rc("trim", cudaDeviceGraphMemTrim(0));
    rc = small_alloc(s, &ok);
    if (launch_failed) {
        info("after_small_alloc", "%s data %s", cudaGetErrorName(rc), ok ? "ok" : "bad");
    } else {
        obs_rc("after_small_alloc", rc);
        obs_ok("after_data", ok);
    }
    obs_rc("final_sync", cudaDeviceSynchronize());
}

static void captured(void) {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    size_t bytes = bytes_of(g_size);
    obs_rc("begin_capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    void *p = nullptr;
    cudaError_t rc = cudaMallocAsync(&p, bytes, s);
    obs_rc("malloc", rc);
    obs_yes("pointer_null", p == nullptr);
    obs("capture_status_after_malloc", capture_status_name(s));
    if (rc == cudaSuccess)
        obs_rc("free", cudaFreeAsync(p, s));
    cudaGraph_t g = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s, &g));
    obs_yes("graph", g != nullptr);
    after(s, g && run_graph(g, s));
}

static void explicit_node(void) {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    size_t bytes = bytes_of(g_size);
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr;
    void *p = nullptr;
    cudaError_t rc = add_alloc(&na, g, nullptr, 0, bytes, &p);
    obs_rc("add_alloc", rc);
    obs_yes("pointer_null", p == nullptr);
    if (rc == cudaSuccess)
        obs_rc("add_free", cudaGraphAddMemFreeNode(&nf, g, &na, 1, p));
    size_t count = 0;
    cudaGraphGetNodes(g, nullptr, &count);
    obs_int("nodes", (long long)count);
    after(s, run_graph(g, s));
}

static void run(const char *name, void (*fn)(void), Size size) {
    g_size = size;
    run_isolated(name, fn);
}

int main() {
    run("captured_2p40", captured, k2p40);
    run("captured_half_max", captured, kHalfMax);
    run("captured_total_plus_1MiB", captured, kTotalPlus1MiB);
    run("explicit_2p40", explicit_node, k2p40);
    run("explicit_half_max", explicit_node, kHalfMax);
    run("explicit_total_plus_1MiB", explicit_node, kTotalPlus1MiB);
    run("explicit_max", explicit_node, kMax);
    return 0;
}

// A host wait graphmem makes inside a launch, while another thread begins a GLOBAL capture.
// graphmem's calls that a GLOBAL capture forbids (event queries, host waits) run in RELAXED mode
// (shim/bridge/captures.c). The bracket was once decided when the hooked call began: a launch that
// began while no capture existed kept the thread's GLOBAL mode for its host wait, whose
// cuEventQuery then invalidated the other thread's capture and failed (H200, before f1783d6:
// e2_launch cudaErrorUnknown, b_status_mid invalidated, b_end cudaErrorStreamCaptureInvalidated).
//
// G: alloc a, spin 1.5 s, fill a, free a. E1 = G's exec, launched on s, destroyed while it runs;
// E2 = G's exec again, launched on s at once (natively enqueued at once; under graphmem its part
// waits on the host for E1's, a stale part of the same graph). Thread B sleeps 300 ms, begins a
// GLOBAL capture on its own stream, captures a kernel, waits 400 ms, ends. Main makes no CUDA call
// while B captures (it joins B before synchronizing). Natively: b_end cudaSuccess, b_status_mid
// active, e2_launch cudaSuccess.
#include "entries.cuh"

#include <thread>
#include <unistd.h>

static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);

static __global__ void k_spin_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

static cudaError_t g_b_begin = cudaErrorUnknown, g_b_kernel = cudaErrorUnknown,
                   g_b_end = cudaErrorUnknown;
static const char *g_b_status = "unset";
static bool g_b_graph = false;

static void capturer(uint32_t *ordinary) {
    cudaStream_t sb = nullptr;
    cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking);
    usleep(300000);
    g_b_begin = cudaStreamBeginCapture(sb, cudaStreamCaptureModeGlobal);
    k_fill<<<kGrid, kBlock, 0, sb>>>(ordinary, kWords, 9);
    g_b_kernel = cudaGetLastError();
    usleep(400000);
    g_b_status = capture_status_name(sb);
    cudaGraph_t g = nullptr;
    g_b_end = cudaStreamEndCapture(sb, &g);
    g_b_graph = g != nullptr;
    if (g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError();
    cudaStreamDestroy(sb);
}

static void variant(void) {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *ordinary = nullptr;
    obs_rc("ordinary", cudaMalloc(&ordinary, kBytes));

    void *a = nullptr;
    obs_rc("begin", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    obs_rc("malloc_async", cudaMallocAsync(&a, kBytes, s));
    k_spin_ns<<<1, 1, 0, s>>>(1500ull * 1000 * 1000);
    obs_rc("spin", cudaGetLastError());
    obs_rc("fill", fill_words(s, a, kWords, 5));
    obs_rc("free_async", cudaFreeAsync(a, s));
    cudaGraph_t g = nullptr;
    obs_rc("end", cudaStreamEndCapture(s, &g));

    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    obs_rc("e1_instantiate", cudaGraphInstantiate(&e1, g, 0));
    obs_rc("e1_launch", cudaGraphLaunch(e1, s)); // the GPU spins 1.5 s from here
    obs_rc("e1_destroy", cudaGraphExecDestroy(e1));
    obs_rc("e2_instantiate", cudaGraphInstantiate(&e2, g, 0));

    std::thread b(capturer, ordinary);
    cudaError_t launched = cudaGraphLaunch(e2, s); // no capture exists yet
    b.join();                                      // no CUDA call while B captures
    obs_rc("e2_launch", launched);
    obs_rc("b_begin", g_b_begin);
    obs_rc("b_kernel", g_b_kernel);
    obs("b_status_mid", g_b_status);
    obs_rc("b_end", g_b_end);
    obs_yes("b_graph_made", g_b_graph);
    obs_rc("sync", cudaStreamSynchronize(s));
    if (e2)
        cudaGraphExecDestroy(e2);
    cudaGraphDestroy(g);
    cudaFree(ordinary);
    cudaStreamDestroy(s);
}

int main() {
    run_isolated("launch_wait_vs_global_capture", variant, true, 60);
    return 0;
}

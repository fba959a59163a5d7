// cuMemFree / cudaFree of a live graph allocation (escaped from its graph) while a capture is in
// progress. The driver treats cuMemFree as a call a capture's mode may forbid (§A4.7): in a GLOBAL
// capture on this thread, or another thread's GLOBAL capture, it refuses the free
// (STREAM_CAPTURE_UNSUPPORTED), invalidates the capture and frees nothing; a THREAD_LOCAL capture
// on another thread allows it. graphmem never calls the driver's cuMemFree for its own addresses:
// it freed and answered success in every case (H200, before graphmem asked the driver's rule with
// cuMemFree(0), tests/probe/free_mode_mirror.cu). Controls: the same free of a cudaMalloc pointer.
// After each free: whether `a` is still live (the exec, made without AutoFree, is refused a
// relaunch while it is: §A6.1), then a final free.
#include "entries.cuh"

#include <cuda.h>

#include <atomic>
#include <thread>

static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);

// An escaped graph allocation (escaped_allocation) on a stream of its own, its data checked.
struct Escaped : EscapedAllocation {
    cudaStream_t s = nullptr;
};

static Escaped make_escaped(void) {
    Escaped x;
    cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking);
    static_cast<EscapedAllocation &>(x) = escaped_allocation(x.s, kBytes, 5);
    obs_ok("setup_data", check_words(x.s, x.ptr, kWords, 5));
    return x;
}

static void after(Escaped &x) {
    obs_rc("relaunch", cudaGraphLaunch(x.exec, x.s)); // refused while `ptr` is unfreed
    obs_rc("relaunch_sync", cudaStreamSynchronize(x.s));
    obs_rc("final_free", cudaFree(x.ptr));
    cudaGraphExecDestroy(x.exec);
    cudaGraphDestroy(x.graph);
    cudaStreamDestroy(x.s);
}

static void same_thread(bool runtime, bool graph_pointer) {
    Escaped x = make_escaped();
    void *plain = nullptr;
    cudaMalloc(&plain, 64);
    cudaStream_t c = nullptr;
    cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);
    obs_rc("begin_c", cudaStreamBeginCapture(c, cudaStreamCaptureModeGlobal));
    void *victim = graph_pointer ? (void *)x.ptr : plain;
    if (runtime)
        obs_rc("free_during_capture", cudaFree(victim));
    else
        obs_cu("free_during_capture", cuMemFree((CUdeviceptr)victim));
    cudaGraph_t made = end_observed("c", c);
    if (made)
        cudaGraphDestroy(made);
    if (!graph_pointer)
        cudaFree(plain); // may be freed already: observed only through the code above
    after(x);
    cudaStreamDestroy(c);
}

static void same_cu_graph(void) {
    same_thread(false, true);
}
static void same_runtime_graph(void) {
    same_thread(true, true);
}
static void same_cu_plain(void) {
    same_thread(false, false);
}

static std::atomic<int> g_step{0};

static void other_thread(cudaStreamCaptureMode mode) {
    Escaped x = make_escaped();
    cudaError_t begin = cudaErrorUnknown, end = cudaErrorUnknown;
    const char *status = "unset";
    bool made_graph = false;
    std::thread b([&] {
        cudaStream_t c = nullptr;
        cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);
        begin = cudaStreamBeginCapture(c, mode);
        g_step = 1;
        while (g_step.load() != 2)
            ;
        status = capture_status_name(c);
        cudaGraph_t made = nullptr;
        end = cudaStreamEndCapture(c, &made);
        made_graph = made != nullptr;
        if (made)
            cudaGraphDestroy(made);
        (void)cudaGetLastError();
        cudaStreamDestroy(c);
    });
    while (g_step.load() != 1)
        ;
    CUresult freed = cuMemFree((CUdeviceptr)x.ptr); // this thread: GLOBAL mode (the default)
    g_step = 2;
    b.join();
    obs_cu("free_during_other_capture", freed);
    obs_rc("b_begin", begin);
    obs("b_status", status);
    obs_rc("b_end", end);
    obs_yes("b_graph_made", made_graph);
    after(x);
}

static void other_global(void) {
    other_thread(cudaStreamCaptureModeGlobal);
}
static void other_thread_local(void) {
    other_thread(cudaStreamCaptureModeThreadLocal);
}

int main() {
    run_isolated("same_thread_cu_graph_pointer", same_cu_graph);
    run_isolated("same_thread_runtime_graph_pointer", same_runtime_graph);
    run_isolated("same_thread_cu_plain_pointer", same_cu_plain); // control: the driver's answer
    run_isolated("other_thread_global", other_global);
    run_isolated("other_thread_thread_local", other_thread_local); // control
    return 0;
}

// An async free of a graph allocation, outside its graph, on a stream whose capture was
// invalidated (§A4.11, §A8.2): the driver refuses it (the code is the native run's) and frees
// nothing, whether the exec that made the allocation was destroyed or still lives. graphmem serves
// the free itself, so it must answer for the stream as the driver does. Then the allocation is
// still live: its data is intact, the live exec's relaunch is refused (§A6.1), and a free on a
// good stream succeeds once, a second one not (§A8.6). A free of the invalidated capture's own
// allocation on that stream is observed too. Both entries: cudaFreeAsync and cuMemFreeAsync.
//
// Not exercised: the same free on a destroyed stream. A destroyed stream's handle names a freed
// object of the driver, which may crash, answer anything, or have given the handle to a new
// stream meanwhile: there is no native answer to compare with. graphmem hands such a handle only
// to the driver (its capture query, or the free's event record) and answers with its error.
//
// Each variant runs in a process of its own (entries.cuh): an invalidated capture, or a crash,
// stays in it.
#include "entries.cuh"

#include <cuda.h>

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);

static bool g_exec_alive;

static void variant(void) {
    cudaStream_t s = nullptr, c = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);

    // A graph that leaves its allocation live (captured on s), launched once.
    uint32_t *a = nullptr;
    obs_rc("begin_capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    obs_rc("malloc_async", cudaMallocAsync((void **)&a, bytes, s));
    obs_rc("fill", fill_words(s, a, n, 5));
    cudaGraph_t g = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("launch", cudaGraphLaunch(e, s));
    obs_rc("launch_sync", cudaStreamSynchronize(s));
    obs_ok("data_before", check_words(s, a, n, 5)); // also makes check_words' counter now
    if (!g_exec_alive)
        obs_rc("exec_destroy", cudaGraphExecDestroy(e));

    // A GLOBAL capture on c, invalidated by a call it forbids (cudaMalloc).
    obs_rc("begin_capture_c", cudaStreamBeginCapture(c, cudaStreamCaptureModeGlobal));
    void *own = nullptr, *forbidden = nullptr;
    obs_rc("malloc_async_c", cudaMallocAsync(&own, bytes, c));
    obs_rc("forbidden_malloc", cudaMalloc(&forbidden, 64));
    obs("capture_status_c", capture_status_name(c));
    obs_rc("free_async_invalidated", cudaFreeAsync(a, c));
    obs_cu("cu_free_async_invalidated", cuMemFreeAsync((CUdeviceptr)a, (CUstream)c));
    obs_rc("free_async_own_invalidated", cudaFreeAsync(own, c));
    obs("capture_status_c_after_frees", capture_status_name(c));
    cudaGraph_t made = nullptr;
    obs_rc("end_capture_c", cudaStreamEndCapture(c, &made));
    obs_yes("end_capture_c_graph_null", made == nullptr);
    if (made)
        cudaGraphDestroy(made);
    if (forbidden)
        cudaFree(forbidden);
    (void)cudaGetLastError();

    // Nothing was freed.
    obs_ok("data_after", check_words(s, a, n, 5));
    if (g_exec_alive)
        obs_rc("relaunch_unfreed", cudaGraphLaunch(e, s));
    obs_rc("relaunch_unfreed_sync", cudaStreamSynchronize(s));
    obs_rc("free_async", cudaFreeAsync(a, s));
    obs_rc("free_async_sync", cudaStreamSynchronize(s));
    obs_rc("free_async_again", cudaFreeAsync(a, s));
    obs_rc("free_async_again_sync", cudaStreamSynchronize(s));
    if (g_exec_alive) {
        obs_rc("relaunch", cudaGraphLaunch(e, s));
        obs_ok("relaunch_data", check_words(s, a, n, 5));
        obs_rc("final_free", cudaFreeAsync(a, s));
        obs_rc("final_free_sync", cudaStreamSynchronize(s));
        obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    }
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    obs_rc("final_sync", cudaDeviceSynchronize());
    cudaStreamDestroy(c);
    cudaStreamDestroy(s);
}

static void run(const char *name, bool exec_alive) {
    g_exec_alive = exec_alive;
    info("variant", "%s", name);
    run_isolated(name, variant);
}

int main() {
    run("invalidated_exec_destroyed", false);
    run("invalidated_exec_alive", true);
    return 0;
}

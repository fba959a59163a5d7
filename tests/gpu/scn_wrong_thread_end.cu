// A capture's end refused from the wrong thread leaves the capture going; the end its own thread
// makes then must judge the whole capture. A thread-local capture forks a side stream that
// allocates (a memory node natively, a marker under graphmem, which the driver does not count as
// the side's work, so graphmem checks the join itself); another thread's end is refused
// (cudaErrorStreamCaptureWrongThread), and the right end is refused too when the side never
// rejoined (cudaErrorStreamCaptureUnjoined), and succeeds when it did, with the graph's data
// checked. graphmem once put back only the origin's note after the refused end, so the unjoined
// side was forgotten and the right end returned a graph.
#include "common.cuh"

#include <thread>

static const size_t kWords = 1 << 16, kBytes = kWords * sizeof(uint32_t);

// Ends the capture on `s` from another thread: observed as `key`, the graph must stay NULL.
static void end_from_another_thread(cudaStream_t s, const char *key) {
    cudaError_t rc = cudaSuccess;
    cudaGraph_t g = nullptr;
    std::thread other([&] { rc = cudaStreamEndCapture(s, &g); });
    other.join();
    obs_rc(key, rc);
    obs_yes("wrong_thread_graph_null", g == nullptr);
}

static void capture_status(const char *key, cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t rc = cudaStreamIsCapturing(s, &st);
    char name[64];
    snprintf(name, sizeof name, "%s_rc", key);
    obs_rc(name, rc);
    obs_int(key, (long long)st);
}

// One round: `joined` rejoins the side stream to the origin before the ends.
static void round_trip(const char *name, bool joined) {
    cudaStream_t s, side;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    uint32_t *result = nullptr;
    cudaMalloc(&result, kBytes);
    cudaMemset(result, 0, kBytes);
    cudaDeviceSynchronize();

    char key[96];
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    if (rc == cudaSuccess)
        rc = cudaEventRecord(fork, s);
    if (rc == cudaSuccess)
        rc = cudaStreamWaitEvent(side, fork, 0);
    void *p = nullptr;
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&p, kBytes, side);
    if (rc == cudaSuccess)
        rc = fill_words(side, p, kWords, 7);
    if (rc == cudaSuccess && joined) {
        k_add<<<kGrid, kBlock, 0, side>>>(result, (const uint32_t *)p, kWords, 0);
        rc = cudaFreeAsync(p, side);
        if (rc == cudaSuccess)
            rc = cudaEventRecord(join, side);
        if (rc == cudaSuccess)
            rc = cudaStreamWaitEvent(s, join, 0);
    }
    snprintf(key, sizeof key, "%s_captured", name);
    obs_rc(key, rc);

    snprintf(key, sizeof key, "%s_wrong_thread_end", name);
    end_from_another_thread(s, key);
    snprintf(key, sizeof key, "%s_status_after_wrong_thread", name);
    capture_status(key, s);

    cudaGraph_t g = nullptr;
    snprintf(key, sizeof key, "%s_end", name);
    obs_rc(key, cudaStreamEndCapture(s, &g));
    snprintf(key, sizeof key, "%s_graph", name);
    obs_yes(key, g != nullptr);
    snprintf(key, sizeof key, "%s_status_after_end", name);
    capture_status(key, s);
    snprintf(key, sizeof key, "%s_side_status_after_end", name);
    capture_status(key, side);
    if (g != nullptr) {
        cudaGraphExec_t x = nullptr;
        snprintf(key, sizeof key, "%s_instantiate", name);
        obs_rc(key, cudaGraphInstantiate(&x, g, 0));
        snprintf(key, sizeof key, "%s_launch", name);
        obs_rc(key, cudaGraphLaunch(x, s));
        snprintf(key, sizeof key, "%s_result", name);
        obs_ok(key, check_words(s, result, kWords, 7));
        cudaGraphExecDestroy(x);
        cudaGraphDestroy(g);
    }
    (void)cudaGetLastError();
    cudaDeviceSynchronize();
    cudaFree(result);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(side);
    cudaStreamDestroy(s);
}

int main() {
    require_graph_memory();
    g_bad = new_counter();
    round_trip("unjoined", false);
    round_trip("joined", true);
    cudaFree(g_bad);
    return 0;
}

// Two threads end one capture at once: the thread that began a thread-local capture, and another
// thread whose end the driver refuses (the wrong thread while the capture goes on, a stream no
// longer capturing once the first end is done). The capture holds an allocation that is filled,
// copied out and freed; the first thread's end must give a graph that instantiates, launches and
// copies the right data, round after round. graphmem once let the refused end, when it ran last,
// take the capture's graph for a failed one and forget its allocation while the application held
// the graph (the next launch then wrote to unmapped memory).
#include "common.cuh"

#include <atomic>
#include <thread>

static const int kRounds = 300;
static const size_t kWords = 1 << 14, kBytes = kWords * sizeof(uint32_t);

int main() {
    require_graph_memory();
    g_bad = new_counter();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *result = nullptr;
    cudaMalloc(&result, kBytes);
    int good = 0, other_refused = 0, other_ended = 0;
    for (int round = 0; round < kRounds; round++) {
        cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        void *p = nullptr;
        if (rc == cudaSuccess)
            rc = cudaMallocAsync(&p, kBytes, s);
        if (rc == cudaSuccess)
            rc = fill_words(s, p, kWords, (uint32_t)round);
        if (rc == cudaSuccess) {
            k_add<<<kGrid, kBlock, 0, s>>>(result, (const uint32_t *)p, kWords, 0);
            rc = cudaFreeAsync(p, s);
        }
        if (rc != cudaSuccess) {
            obs_rc("capture", rc);
            break;
        }
        std::atomic<bool> go{false};
        cudaError_t other_rc = cudaSuccess;
        cudaGraph_t other_graph = nullptr;
        std::thread other([&] {
            while (!go.load(std::memory_order_acquire))
                ;
            other_rc = cudaStreamEndCapture(s, &other_graph);
        });
        go.store(true, std::memory_order_release);
        cudaGraph_t g = nullptr;
        cudaError_t end = cudaStreamEndCapture(s, &g);
        other.join();
        (void)cudaGetLastError();
        other_refused += other_rc != cudaSuccess && other_graph == nullptr;
        other_ended += other_rc == cudaSuccess;
        if (end != cudaSuccess || g == nullptr) {
            obs_rc("end_capture", end);
            break;
        }
        cudaGraphExec_t x = nullptr;
        cudaError_t run = cudaGraphInstantiate(&x, g, 0);
        if (run == cudaSuccess)
            run = cudaGraphLaunch(x, s);
        if (run == cudaSuccess)
            run = cudaStreamSynchronize(s);
        bool data = run == cudaSuccess && check_words(s, result, kWords, (uint32_t)round);
        cudaGraphExecDestroy(x);
        cudaGraphDestroy(g);
        if (!data) {
            obs_rc("run", run);
            obs_ok("data", data);
            break;
        }
        good++;
    }
    obs_int("good_rounds", good);
    obs_int("other_end_refused", other_refused);
    obs_int("other_end_succeeded", other_ended);
    cudaFree(result);
    cudaFree(g_bad);
    cudaStreamDestroy(s);
    return 0;
}

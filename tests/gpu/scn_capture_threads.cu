// Several host threads capture at once, each on its own stream, round after round: a graph that
// allocates (64 KiB to 2 MiB, and a temporary), writes a signature over both, sleeps, checks every
// word and frees, captured in thread-local or relaxed mode; then the thread instantiates it,
// launches it one to three times, and launches the graph of its previous round once more before
// destroying that one. Every few rounds a thread trims. Under graphmem the captures take the engine
// and the shim's capture bookkeeping at once from every thread, and graphs of different threads
// may share physical memory: a launch not ordered after the last user of its memory shows up as
// words overwritten under a sleeping kernel (the wrong-word count), a capture or launch refused
// as an error. Natively every graph has memory of its own and every call succeeds.
#include "threads.cuh"

#include <vector>

static const int kThreads = 4, kRounds = 1000;
static const uint32_t kSpinNs = 50000;

struct ThreadResult {
    FirstError error;
    int rounds = 0;
};

// `count`: the launch counter of every graph of this thread (made before any capture begins, as
// a cudaMalloc during another thread's capture is no capture's business).
static void capturer(int index, cudaStream_t s, uint32_t *count, unsigned *bad,
                     ThreadResult *result) {
    Work previous, current;
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(index + 1);
    for (int round = 0; round < kRounds && result->error.get() == cudaSuccess; round++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t draw = (uint32_t)(rng >> 33);
        cudaStreamCaptureMode mode =
            round % 2 ? cudaStreamCaptureModeThreadLocal : cudaStreamCaptureModeRelaxed;
        size_t bytes = (size_t)(64u << 10) << (draw % 6), temp = (size_t)(16u << 10) << (draw % 4);
        uint32_t id = (uint32_t)(index * kRounds + round + 1);
        current.count = count;
        cudaError_t rc = capture_work(&current, s, mode, bytes, id, kSpinNs, 1, bad, false, temp);
        if (rc == cudaSuccess)
            rc = cudaGraphInstantiate(&current.exec, current.graph, 0);
        for (uint32_t launch = 0; rc == cudaSuccess && launch <= draw % 3; launch++)
            rc = cudaGraphLaunch(current.exec, s);
        if (rc == cudaSuccess && previous.exec)
            rc = cudaGraphLaunch(previous.exec, s);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(s);
        if (rc == cudaSuccess && round % 8 == index % 8)
            rc = cudaDeviceGraphMemTrim(0);
        result->error.note(rc);
        if (rc != cudaSuccess)
            break;
        previous.count = nullptr; // shared: freed at the end
        destroy_work(&previous);
        previous = current;
        current = Work();
        result->rounds++;
    }
    previous.count = current.count = nullptr;
    destroy_work(&previous);
    destroy_work(&current);
}

int main() {
    require_graph_memory();
    unsigned *bad = new_counter();
    std::vector<ThreadResult> results(kThreads);
    std::vector<cudaStream_t> streams(kThreads);
    std::vector<uint32_t *> counts(kThreads);
    for (int i = 0; i < kThreads; i++) {
        results[i].error.note(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
        results[i].error.note(cudaMalloc(&counts[i], sizeof(uint32_t)));
        results[i].error.note(cudaMemset(counts[i], 0, sizeof(uint32_t)));
    }
    obs_rc("setup", cudaDeviceSynchronize());
    std::vector<std::thread> threads;
    double t0 = host_seconds();
    for (int i = 0; i < kThreads; i++)
        threads.emplace_back(capturer, i, streams[i], counts[i], bad, &results[i]);
    for (std::thread &t : threads)
        t.join();
    info("seconds", "%.3f", host_seconds() - t0);
    FirstError first;
    int rounds = 0;
    for (const ThreadResult &r : results) {
        first.note(r.error.get());
        rounds += r.rounds;
    }
    obs_rc("first_error", first.get());
    obs_int("rounds", rounds);
    obs_rc("device_sync", cudaDeviceSynchronize());
    obs_wrong("wrong_words", bad);
    for (int i = 0; i < kThreads; i++) {
        cudaStreamDestroy(streams[i]);
        cudaFree(counts[i]);
    }
    return 0;
}

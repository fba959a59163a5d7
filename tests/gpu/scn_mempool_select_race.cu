// Threads select the device's current pool at once (cudaDeviceSetMemPool), §A4.2. A captured
// cudaMallocAsync takes the current pool of the stream's device; graphmem does not ask the driver
// which pool that is (a pool query can invalidate a GLOBAL capture) but keeps a mirror of the
// selections. Before 144b854 a selection and its mirror were two steps, so two threads selecting
// at once could leave the mirror on the pool the driver did not keep, and the captured allocation
// was served as if from the wrong pool.
//
// On one GPU the observable difference between two pools is whether graphmem serves them: a plain
// pool is served, an IPC-capable one (POSIX fd handles) is left to the driver, which refuses a
// captured allocation from it (§A13.2). First each pool is selected alone and a captured
// cudaMallocAsync observed: `plain_capture`, `ipc_capture` (the allocation's code and end; for a
// node, its pool's handle types). Then, round after round, threads released at once each select
// one of the two pools; after they are done the driver's current pool (cudaDeviceGetMemPool,
// outside any capture) must give the answer its pool gave alone: `mismatched_rounds 0`.
// Whether a round hits the window is up to timing; tests/shim/test_mempools_threads.c forces it.
#include "common.cuh"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

static const int kThreads = 12, kRounds = 400;
static const size_t kBytes = 1 << 20;

static cudaStream_t s;

static cudaMemPool_t make_pool(cudaMemAllocationHandleType handles, const char *key) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = handles;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool = nullptr;
    cudaError_t rc = cudaMemPoolCreate(&pool, &props);
    obs_rc(key, rc);
    return rc == cudaSuccess ? pool : nullptr;
}

// What a captured cudaMallocAsync on `s` gives with the current pool now: the allocation's code,
// the end's code and, where the graph holds an allocation node, its pool's handle types.
static std::string captured_answer(void) {
    char out[160];
    cudaError_t begin = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *p = nullptr;
    cudaError_t rc = begin == cudaSuccess ? cudaMallocAsync(&p, kBytes, s) : begin;
    (void)cudaGetLastError();
    if (rc == cudaSuccess)
        cudaFreeAsync(p, s);
    cudaGraph_t g = nullptr;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    (void)cudaGetLastError();
    int handles = -1;
    cudaGraphNode_t nodes[8] = {};
    size_t count = graph_nodes(g, nodes, 8);
    for (size_t i = 0; i < count; i++) {
        cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
        cudaGraphNodeGetType(nodes[i], &t);
        cudaMemAllocNodeParams params = {};
        if (t == cudaGraphNodeTypeMemAlloc &&
            cudaGraphMemAllocNodeGetParams(nodes[i], &params) == cudaSuccess)
            handles = (int)params.poolProps.handleTypes;
    }
    (void)cudaGetLastError();
    if (g)
        cudaGraphDestroy(g);
    snprintf(out, sizeof out, "alloc=%s end=%s nodes=%zu handles=%d", cudaGetErrorName(rc),
             cudaGetErrorName(end), count, handles);
    return out;
}

// A barrier the main thread and the selectors pass together, round after round: spinning, so the
// selectors leave it as close together as the machine allows.
struct SpinBarrier {
    std::atomic<int> waiting{0}, generation{0};
    int parties;
    explicit SpinBarrier(int n) : parties(n) {}
    void pass() {
        int gen = generation.load(std::memory_order_acquire);
        if (waiting.fetch_add(1, std::memory_order_acq_rel) == parties - 1) {
            waiting.store(0, std::memory_order_relaxed);
            generation.fetch_add(1, std::memory_order_acq_rel);
            return;
        }
        while (generation.load(std::memory_order_acquire) == gen)
            std::this_thread::yield();
    }
};

int main() {
    require_graph_memory();
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMemPool_t original = nullptr;
    cudaDeviceGetMemPool(&original, 0);
    cudaMemPool_t plain = make_pool(cudaMemHandleTypeNone, "plain_pool_create");
    cudaMemPool_t ipc = make_pool(cudaMemHandleTypePosixFileDescriptor, "ipc_pool_create");
    if (!plain || !ipc) {
        printf("SKIP a plain and an IPC-capable memory pool are needed\n");
        return 77;
    }

    // Each pool selected alone: what a captured allocation gives with it current.
    obs_rc("select_plain", cudaDeviceSetMemPool(0, plain));
    std::string plain_answer = captured_answer();
    obs("plain_capture", plain_answer.c_str());
    obs_rc("select_ipc", cudaDeviceSetMemPool(0, ipc));
    std::string ipc_answer = captured_answer();
    obs("ipc_capture", ipc_answer.c_str());
    obs_yes("answers_differ", plain_answer != ipc_answer);

    SpinBarrier start(kThreads + 1), done(kThreads + 1);
    std::atomic<int> select_failures{0};
    std::atomic<bool> stop{false};
    // The pool thread t selects in round r: half of the threads each, a different half each round.
    auto pool_of = [&](int t, int r) { return ((t + r) & 1) ? ipc : plain; };
    std::vector<std::thread> selectors;
    for (int t = 0; t < kThreads; t++)
        selectors.emplace_back([&, t] {
            cudaSetDevice(0);
            for (int r = 0;; r++) {
                start.pass();
                if (stop.load())
                    return;
                if (cudaDeviceSetMemPool(0, pool_of(t, r)) != cudaSuccess)
                    select_failures++;
                done.pass();
            }
        });
    int mismatched = 0, kept_ipc = 0, query_failures = 0;
    for (int r = 0; r < kRounds; r++) {
        start.pass();
        done.pass();
        cudaMemPool_t kept = nullptr;
        if (cudaDeviceGetMemPool(&kept, 0) != cudaSuccess || (kept != plain && kept != ipc)) {
            query_failures++;
            continue;
        }
        kept_ipc += kept == ipc;
        if (captured_answer() != (kept == ipc ? ipc_answer : plain_answer)) {
            if (mismatched == 0)
                info("first_mismatch_round", "%d (the driver kept the %s pool)", r,
                     kept == ipc ? "IPC" : "plain");
            mismatched++;
        }
    }
    stop.store(true);
    start.pass();
    for (auto &t : selectors)
        t.join();
    (void)cudaGetLastError();
    obs_int("select_failures", select_failures.load());
    obs_int("query_failures", query_failures);
    obs_int("mismatched_rounds", mismatched);
    info("rounds_kept_ipc", "%d of %d", kept_ipc, kRounds);

    obs_rc("select_original", cudaDeviceSetMemPool(0, original));
    obs_rc("plain_pool_destroy", cudaMemPoolDestroy(plain));
    obs_rc("ipc_pool_destroy", cudaMemPoolDestroy(ipc));
    obs_rc("final_sync", cudaDeviceSynchronize());
    cudaStreamDestroy(s);
    return 0;
}

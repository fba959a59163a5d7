// Concurrency stress: several host threads, each with its own stream (thread 0 its per-thread
// default stream), launch graphs from one pool of eight whose kernels write a signature over
// their allocations, sleep and check every word. Every graph was launched once on one stream
// first, so under graphmem they share physical memory and each launch must wait for whichever
// graph used it last on another stream. An exec is held by one thread at a time (a mutex), but
// it moves between threads and streams freely. Threads also upload, trim, free escaped
// allocations outside graphs (checking their signature first), and destroy and re-instantiate
// execs; one more thread captures small graphs with graph allocations on a blocking stream in the
// three capture modes (every capture must succeed). Workers run in relaxed capture mode, so
// natively nothing they do concerns that capture. A worker launches an exec one to four times in
// a row, so that graphmem's launch fast path races all of that too.
//
// Frees outside graphs, trims, re-instantiations and captures hold one mutex (`pool_ops`);
// launches and uploads do not. Natively, driver 580 crashed inside cuMemFreeAsync of an escaped
// graph allocation once in eight runs while these ran concurrently on other threads (measured on
// an H100); graphmem's protocol is still exercised by every launch racing every one of them.
//
// usage: stress_threads [seconds=30] [launches=100000] [threads=4] [seed=1]
// prints: OBS corruption <wrong words>, OBS first_error <name>, INFO counts
#include "threads.cuh"

#include <vector>

struct Spec {
    size_t bytes, temp;
    bool escape;
    unsigned long long flags;
};

static const unsigned long long kAutoFree = cudaGraphInstantiateFlagAutoFreeOnLaunch;
static const Spec kSpecs[] = {
    {256u << 10, 0, false, 0},       {1u << 20, 0, true, kAutoFree},  {4u << 20, 0, false, 0},
    {16u << 20, 2u << 20, true, 0},  {32u << 20, 0, true, kAutoFree}, {64u << 20, 0, false, 0},
    {512u << 10, 8u << 20, true, 0}, {8u << 20, 1u << 20, false, 0},
};
static const int kExecs = sizeof kSpecs / sizeof kSpecs[0];

struct Exec {
    Work w;
    std::mutex m;
    cudaEvent_t done = nullptr; // after its latest launch
    bool live = false;          // its escaped allocation is unfreed
};

static Exec execs[kExecs];
static unsigned *bad;
static FirstError first;
static std::atomic<bool> stop{false};
static std::mutex pool_ops;
static std::atomic<long long> launches{0}, uploads{0}, trims{0}, frees{0}, remakes{0}, captures{0};

static uint32_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

static void note(cudaError_t rc) {
    first.note(rc);
    if (rc != cudaSuccess)
        stop = true;
}

// Checks the escaped allocation of the exec's latest launch and frees it on `s`.
static void check_and_free(Exec *e, cudaStream_t s) {
    std::lock_guard<std::mutex> serialized(pool_ops);
    note(cudaStreamWaitEvent(s, e->done, 0));
    k_verify_sig<<<kWorkGrid, kWorkBlock, 0, s>>>(e->w.escaped, e->w.words, e->w.count, e->w.id,
                                                  bad);
    note(cudaGetLastError());
    note(cudaFreeAsync(e->w.escaped, s));
    e->live = false;
    frees++;
}

static void worker(int index, uint64_t seed) {
    cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&relaxed);
    cudaStream_t s = cudaStreamPerThread;
    if (index > 0)
        note(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint64_t rng = seed * 7919 + index;
    while (!stop) {
        int start = next_random(&rng) % kExecs, i = 0;
        Exec *e = nullptr;
        for (; i < kExecs && !e; i++)
            if (execs[(start + i) % kExecs].m.try_lock())
                e = &execs[(start + i) % kExecs];
        if (!e) {
            std::this_thread::yield();
            continue;
        }
        uint32_t op = next_random(&rng) % 100;
        if (op < 2) { // destroy and re-instantiate
            if (e->live)
                check_and_free(e, s);
            std::lock_guard<std::mutex> serialized(pool_ops);
            note(cudaStreamWaitEvent(s, e->done, 0));
            note(cudaStreamSynchronize(s));
            note(cudaGraphExecDestroy(e->w.exec));
            e->w.exec = nullptr;
            note(cudaGraphInstantiateWithFlags(&e->w.exec, e->w.graph, e->w.flags));
            remakes++;
        } else if (op < 4) {
            std::lock_guard<std::mutex> serialized(pool_ops);
            note(cudaDeviceGraphMemTrim(0));
            trims++;
        }
        if (e->live && (!(e->w.flags & kAutoFree) || op % 4 == 0)) {
            check_and_free(e, s);
        } else if (e->live) { // AutoFreeOnLaunch frees it: check it first
            note(cudaStreamWaitEvent(s, e->done, 0));
            k_verify_sig<<<kWorkGrid, kWorkBlock, 0, s>>>(e->w.escaped, e->w.words, e->w.count,
                                                          e->w.id, bad);
            note(cudaGetLastError());
        } else if (op % 3 == 0) {
            note(cudaStreamWaitEvent(s, e->done, 0));
        }
        if (op % 10 == 1) {
            note(cudaGraphUpload(e->w.exec, s));
            uploads++;
        }
        // One to four launches in a row on this stream (one while the launch leaves an
        // allocation live that only a free outside the graph ends): from the third in a row
        // graphmem launches on its fast path (core/README.md, "Launch protocol"), racing the
        // other threads' launches of graphs sharing the memory, their trims, frees and captures.
        bool relaunchable = e->w.escaped == nullptr || (e->w.flags & kAutoFree);
        int burst = relaunchable ? 1 + (int)(next_random(&rng) % 4) : 1;
        for (int b = 0; b < burst; b++)
            note(cudaGraphLaunch(e->w.exec, s));
        note(cudaEventRecord(e->done, s));
        e->live = e->w.escaped != nullptr;
        e->m.unlock();
        launches += burst;
    }
    note(cudaStreamSynchronize(s));
    if (index > 0)
        cudaStreamDestroy(s);
}

// Captures, instantiates, launches and destroys small graphs until told to stop.
static void capturer(FirstError *capture_error, uint32_t *count) {
    cudaStream_t s;
    note(cudaStreamCreate(&s)); // blocking: legacy-stream work would join its captures
    const cudaStreamCaptureMode modes[3] = {cudaStreamCaptureModeGlobal,
                                            cudaStreamCaptureModeThreadLocal,
                                            cudaStreamCaptureModeRelaxed};
    Work w;
    w.count = count; // allocated beforehand: cudaMalloc and cudaMemset are no capture's business
    for (long long n = 0; !stop; n++) {
        std::unique_lock<std::mutex> serialized(pool_ops);
        cudaError_t rc =
            capture_work(&w, s, modes[n % 3], (64u << 10) << (n % 5), 1000, 5000, 1, bad, false);
        serialized.unlock();
        capture_error->note(rc);
        cudaGraphExec_t e = nullptr;
        if (rc == cudaSuccess)
            rc = cudaGraphInstantiate(&e, w.graph, 0);
        if (rc == cudaSuccess)
            rc = cudaGraphLaunch(e, s);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(s);
        note(rc);
        if (e)
            cudaGraphExecDestroy(e);
        if (w.graph)
            cudaGraphDestroy(w.graph);
        w.graph = nullptr;
        captures++;
    }
    cudaStreamDestroy(s);
}

int main(int argc, char **argv) {
    require_graph_memory();
    double seconds = argc > 1 ? atof(argv[1]) : 30;
    long long target = argc > 2 ? atoll(argv[2]) : 100000;
    int threads = argc > 3 ? atoi(argv[3]) : 4;
    uint64_t seed = argc > 4 ? strtoull(argv[4], nullptr, 10) : 1;
    if (threads < 1)
        threads = 1;

    bad = new_counter();
    cudaStream_t s0;
    note(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    for (int i = 0; i < kExecs; i++) {
        const Spec &sp = kSpecs[i];
        note(make_work(&execs[i].w, s0, sp.bytes, 1 + i, 10000, 1, bad, sp.escape, sp.flags,
                       sp.temp));
        note(cudaEventCreateWithFlags(&execs[i].done, cudaEventDisableTiming));
    }
    // One stream first: every exec joins the same sharing group.
    for (int i = 0; i < kExecs; i++) {
        note(cudaGraphLaunch(execs[i].w.exec, s0));
        note(cudaEventRecord(execs[i].done, s0));
        execs[i].live = execs[i].w.escaped != nullptr;
    }
    // Every kernel loaded before the threads start (lazy loading stays out of the captures).
    k_verify_sig<<<1, 1, 0, s0>>>(nullptr, 0, execs[0].w.count, 0, bad);
    note(cudaGetLastError());
    uint32_t *capture_count = nullptr;
    note(cudaMalloc(&capture_count, sizeof(uint32_t)));
    note(cudaMemset(capture_count, 0, sizeof(uint32_t)));
    note(cudaStreamSynchronize(s0));

    FirstError capture_error;
    double t0 = host_seconds();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++)
        pool.emplace_back(worker, t, seed);
    pool.emplace_back(capturer, &capture_error, capture_count);
    while (!stop && launches < target && host_seconds() - t0 < seconds)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
    for (auto &t : pool)
        t.join();
    double elapsed = host_seconds() - t0;

    // The escaped allocations still live hold their last signature.
    for (int i = 0; i < kExecs; i++)
        if (execs[i].live)
            check_and_free(&execs[i], s0);
    note(cudaDeviceSynchronize());
    unsigned h = 0;
    note(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
    obs_int("corruption", h);
    obs("first_error", cudaGetErrorName(first.get()));
    info("launches", "%lld", launches.load());
    info("seconds", "%.2f", elapsed);
    info("counts", "uploads=%lld trims=%lld frees=%lld remakes=%lld captures=%lld", uploads.load(),
         trims.load(), frees.load(), remakes.load(), captures.load());
    info("capture_first_error", "%s", cudaGetErrorName(capture_error.get()));
    info_attrs("end", read_attrs());
    for (int i = 0; i < kExecs; i++) {
        cudaEventDestroy(execs[i].done);
        destroy_work(&execs[i].w);
    }
    cudaStreamDestroy(s0);
    cudaFree(capture_count);
    cudaFree(bad);
    return 0;
}

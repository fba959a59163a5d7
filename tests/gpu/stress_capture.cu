// Concurrency stress of captures: several host threads capture at once (thread-local or relaxed
// mode, never global: other threads make calls no global capture would allow) and launch what they
// captured, while one more thread trims graph memory every few milliseconds and reads the graph
// memory attributes. Each worker owns two non-blocking streams; per round it captures on the first
// a small random graph: 1-6 cudaMallocAsync (4 KiB .. 32 MiB, not page multiples), a kernel per
// allocation signing every word with (thread, round, allocation, word), kernels that sleep a
// little and check every word into the thread's counter of wrong words, and cudaFreeAsync of all
// but at most one allocation (the escaping one). A third of the graphs fork onto the second stream
// (event record + wait) for some of their allocations, signs, checks and frees, joining back
// before the end of the capture. The worker instantiates the graph (an escaping one sometimes
// with AutoFreeOnLaunch), sometimes uploads it, launches it 1-4 times alternating between its two
// streams (each launch waits on an event recorded after the previous one), checks the escaping
// allocation after every launch from outside the graph, frees it outside the graph (cudaFreeAsync
// + sync, or cudaFree) -- between launches too without AutoFreeOnLaunch, as the driver refuses to
// relaunch before -- then syncs, reads its counter and destroys exec and graph.
//
// Orderings relied on (all CUDA semantics, so natively: corruption 0, no error): an allocation is
// touched in the graph only downstream of its alloc node and upstream of its free node (an
// allocation forked onto the second stream is freed there, or on the first after the join); the
// escaping allocation is read outside only in stream order after the launch that made it and
// before the next launch (which, with AutoFreeOnLaunch, frees it); a relaunch without
// AutoFreeOnLaunch happens only after the free outside completed (a free still pending when the
// relaunch is asked for is implementation-defined, scn_relaunch); the events recorded inside
// captures are never used outside them and the launch-ordering event never inside one; kernels
// are loaded and every stream, event and counter is made before the threads start, so a capture
// makes capturable calls only.
//
// With `escapes` 0 no allocation escapes its graph, so nothing of graph memory is freed outside a
// graph. Natively driver 580 died of SIGSEGV (inside cuStreamSynchronize) in most runs on H200
// hosts, within a second: every run tried with escapes, and some without; graphmem serves those
// allocations itself (tests/python/test_gpu_conformance.py takes the native run as the reference
// only when it survives).
//
// usage: stress_capture [seconds=20] [rounds=400] [threads=4] [seed=1] [escapes=1] [trim=1]
//        (rounds per worker)
// prints: OBS corruption <wrong words>, OBS first_error <error name>, OBS captures_ok <1|0>,
//         INFO first_error_call <call name or none>, INFO rounds <n> launches <n>, other INFO
#include "threads.cuh"

#include <vector>

static const int kMaxAllocs = 6;
static const size_t kMinBytes = 4u << 10, kMaxBytes = 32u << 20;

static std::atomic<bool> stop{false}, stop_trimmer{false}, captures_ok{true};
static bool escapes = true; // argument 5: whether a graph may leave an allocation unfreed
static bool trim = true;    // argument 6: whether the trimming thread runs
static std::atomic<long long> total_rounds{0}, total_launches{0}, trims{0};
static std::atomic<int> workers_done{0};
static std::mutex first_mutex;
static const char *first_name = nullptr; // the first failing call
static cudaError_t first_code = cudaSuccess;

static bool ck(cudaError_t rc, const char *name) {
    if (rc == cudaSuccess)
        return true;
    {
        std::lock_guard<std::mutex> l(first_mutex);
        if (!first_name) {
            first_name = name;
            first_code = rc;
        }
    }
    stop = true;
    return false;
}
#define CK(fn, ...) ck(fn(__VA_ARGS__), #fn)

static uint32_t next_random(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

static unsigned blocks_for(size_t words) {
    size_t b = (words + kWorkBlock - 1) / kWorkBlock;
    return b == 0 ? 1 : b > kWorkGrid ? kWorkGrid : (unsigned)b;
}

// Signature id of allocation `a` of thread `tid` (the round is sig_word's launch argument).
static __host__ __device__ uint32_t alloc_id(uint32_t tid, uint32_t a) {
    return tid * 8u + a + 1u;
}

static __global__ void k_sign(uint32_t *p, size_t n, uint32_t id, uint32_t round) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        p[j] = sig_word(id, round, j);
}

// Sleeps `spin_ns` (so that anything else writing the memory meanwhile shows), then counts the
// words of p[0, n) that do not hold the signature into *bad.
static __global__ void k_verify(const uint32_t *p, size_t n, uint32_t id, uint32_t round,
                                uint32_t spin_ns, unsigned *bad) {
    uint64_t t0 = gpu_ns();
    while (gpu_ns() - t0 < spin_ns)
        __nanosleep(500);
    unsigned wrong = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        wrong += p[j] != sig_word(id, round, j);
    if (wrong)
        atomicAdd(bad, wrong);
}

struct Worker {
    int tid = 0;
    cudaStream_t s[2] = {nullptr, nullptr};
    cudaEvent_t fork = nullptr, join = nullptr; // recorded only inside captures
    cudaEvent_t order = nullptr;                // recorded only outside captures
    unsigned *bad = nullptr;                    // wrong words, cudaMalloc'd before the threads
    uint64_t rng = 0;
    unsigned last_wrong = 0;
};

static bool sign(cudaStream_t st, uint32_t *p, size_t n, uint32_t id, uint32_t round) {
    k_sign<<<blocks_for(n), kWorkBlock, 0, st>>>(p, n, id, round);
    return ck(cudaGetLastError(), "k_sign<<<>>>");
}

static bool verify(Worker &w, cudaStream_t st, const uint32_t *p, size_t n, uint32_t id,
                   uint32_t round, uint32_t spin_ns) {
    k_verify<<<blocks_for(n), kWorkBlock, 0, st>>>(p, n, id, round, spin_ns, w.bad);
    return ck(cudaGetLastError(), "k_verify<<<>>>");
}

// Work on `to` after the work already in `from` (outside captures only).
static bool order(Worker &w, cudaStream_t from, cudaStream_t to) {
    return from == to ||
           (CK(cudaEventRecord, w.order, from) && CK(cudaStreamWaitEvent, to, w.order, 0));
}

// One round: capture, instantiate, (upload,) launch 1-4 times, check, free, destroy. False after
// a failed call (recorded; the worker stops).
static bool run_round(Worker &w, uint32_t round) {
    uint64_t *r = &w.rng;
    cudaStream_t s0 = w.s[0], s1 = w.s[1];
    int n = 1 + (int)(next_random(r) % kMaxAllocs);
    size_t words[kMaxAllocs];
    bool early[kMaxAllocs], freed[kMaxAllocs] = {};
    uint32_t *p[kMaxAllocs] = {};
    for (int i = 0; i < n; i++) {
        size_t bytes = kMinBytes << (next_random(r) % 14); // 4 KiB .. 32 MiB
        bytes += (next_random(r) % bytes) & ~(size_t)3;
        words[i] = (bytes < kMaxBytes ? bytes : kMaxBytes) / sizeof(uint32_t);
        early[i] = next_random(r) % 2; // freed on its own stream before the join
    }
    bool fork = next_random(r) % 3 == 0;
    int split = fork ? (int)(next_random(r) % (n + 1)) : n; // [split, n) on the second stream
    int esc = next_random(r) % 3 == 0 ? (int)(next_random(r) % n) : -1;
    if (!escapes)
        esc = -1;
    uint32_t spin_ns = next_random(r) % 20000;
    cudaStreamCaptureMode mode =
        next_random(r) % 2 ? cudaStreamCaptureModeThreadLocal : cudaStreamCaptureModeRelaxed;

    // ---- capture ----
    cudaGraph_t g = nullptr;
    if (!CK(cudaStreamBeginCapture, s0, mode)) {
        captures_ok = false;
        return false;
    }
    bool ok = true;
    if (fork)
        ok = CK(cudaEventRecord, w.fork, s0) && CK(cudaStreamWaitEvent, s1, w.fork, 0);
    for (int i = 0; ok && i < n; i++) {
        cudaStream_t st = i >= split ? s1 : s0;
        ok = CK(cudaMallocAsync, (void **)&p[i], words[i] * sizeof(uint32_t), st) &&
             sign(st, p[i], words[i], alloc_id(w.tid, i), round);
    }
    for (int i = 0; ok && i < n; i++) { // check on its own stream, maybe free there
        cudaStream_t st = i >= split ? s1 : s0;
        ok = verify(w, st, p[i], words[i], alloc_id(w.tid, i), round, spin_ns);
        if (ok && i != esc && early[i])
            ok = freed[i] = CK(cudaFreeAsync, p[i], st);
    }
    if (ok && fork)
        ok = CK(cudaEventRecord, w.join, s1) && CK(cudaStreamWaitEvent, s0, w.join, 0);
    for (int i = 0; ok && i < n; i++) { // after the join: check again the rest, free it
        if (freed[i])
            continue;
        ok = verify(w, s0, p[i], words[i], alloc_id(w.tid, i), round, spin_ns / 2);
        if (ok && i != esc)
            ok = freed[i] = CK(cudaFreeAsync, p[i], s0);
    }
    bool ended = CK(cudaStreamEndCapture, s0, &g);
    if (!ok || !ended) {
        captures_ok = false;
        if (g)
            cudaGraphDestroy(g);
        return false;
    }

    // ---- instantiate, launch ----
    bool autofree = esc >= 0 && next_random(r) % 2;
    int launches = 1 + (int)(next_random(r) % 4), parity = (int)(next_random(r) % 2);
    bool upload = next_random(r) % 3 == 0, use_cuda_free = next_random(r) % 4 == 0;
    cudaStream_t up = w.s[next_random(r) % 2];
    cudaGraphExec_t e = nullptr;
    ok = CK(cudaGraphInstantiateWithFlags, &e, g,
            autofree ? (unsigned long long)cudaGraphInstantiateFlagAutoFreeOnLaunch : 0ull);
    uint32_t *escaped = esc >= 0 ? p[esc] : nullptr;
    size_t esc_words = esc >= 0 ? words[esc] : 0;
    uint32_t esc_id = alloc_id(w.tid, esc >= 0 ? esc : 0);
    bool live = false; // the escaping allocation of a completed-or-queued launch is unfreed
    cudaStream_t prev = nullptr;
    for (int l = 0; ok && l < launches; l++) {
        cudaStream_t st = w.s[(parity + l) % 2];
        if (l == 0 && upload)
            ok = CK(cudaGraphUpload, e, up) && order(w, up, st);
        if (ok && prev)
            ok = order(w, prev, st); // launches of one exec never overlap
        ok = ok && CK(cudaGraphLaunch, e, st);
        if (!ok)
            break;
        total_launches++;
        prev = st;
        live = escaped != nullptr;
        if (!live)
            continue;
        // The escaping allocation, read after the launch that made it, before the next one.
        ok = verify(w, st, escaped, esc_words, esc_id, round, 0);
        if (ok && !autofree && l + 1 < launches) { // no relaunch before the free completed
            ok = CK(cudaFreeAsync, escaped, st);
            live = !ok;
            ok = ok && CK(cudaStreamSynchronize, st);
        }
    }
    if (live && prev) { // freed outside the graph, after its check (queued on prev)
        if (use_cuda_free)
            ok = CK(cudaStreamSynchronize, prev) && CK(cudaFree, escaped) && ok;
        else
            ok = CK(cudaFreeAsync, escaped, prev) && CK(cudaStreamSynchronize, prev) && ok;
    }
    ok = CK(cudaStreamSynchronize, s0) && ok;
    ok = CK(cudaStreamSynchronize, s1) && ok;
    unsigned h = 0;
    if (ok && CK(cudaMemcpyAsync, &h, w.bad, sizeof h, cudaMemcpyDeviceToHost, s0) &&
        CK(cudaStreamSynchronize, s0))
        w.last_wrong = h; // cumulative over the thread's rounds
    if (e)
        ok = CK(cudaGraphExecDestroy, e) && ok;
    ok = CK(cudaGraphDestroy, g) && ok;
    return ok;
}

static void worker(Worker *w, long long rounds) {
    if (CK(cudaSetDevice, 0))
        for (long long n = 0; n < rounds && !stop; n++) {
            bool ok = run_round(*w, (uint32_t)n);
            total_rounds++;
            if (!ok)
                break;
        }
    workers_done++;
}

static void trimmer(uint64_t seed, uint64_t *max_used, uint64_t *max_reserved) {
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1000;
    if (!CK(cudaSetDevice, 0))
        return;
    while (!stop_trimmer && !stop) {
        uint64_t used = 0, reserved = 0;
        if (!CK(cudaDeviceGraphMemTrim, 0) ||
            !CK(cudaDeviceGetGraphMemAttribute, 0, cudaGraphMemAttrUsedMemCurrent, &used) ||
            !CK(cudaDeviceGetGraphMemAttribute, 0, cudaGraphMemAttrReservedMemCurrent, &reserved))
            return;
        *max_used = used > *max_used ? used : *max_used;
        *max_reserved = reserved > *max_reserved ? reserved : *max_reserved;
        trims++;
        std::this_thread::sleep_for(std::chrono::microseconds(1000 + next_random(&rng) % 4000));
    }
}

int main(int argc, char **argv) {
    require_graph_memory();
    double seconds = argc > 1 ? atof(argv[1]) : 20;
    long long rounds = argc > 2 ? atoll(argv[2]) : 400;
    int threads = argc > 3 ? atoi(argv[3]) : 4;
    uint64_t seed = argc > 4 ? strtoull(argv[4], nullptr, 10) : 1;
    escapes = argc > 5 ? atoi(argv[5]) != 0 : true;
    trim = argc > 6 ? atoi(argv[6]) != 0 : true;
    if (threads < 1)
        threads = 1;

    // Everything a worker uses, made before any capture begins; kernels loaded too.
    std::vector<Worker> workers(threads);
    for (int t = 0; t < threads; t++) {
        Worker &w = workers[t];
        w.tid = t;
        w.rng = (seed + (uint64_t)t) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
        for (cudaStream_t &s : w.s)
            CK(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking);
        CK(cudaEventCreateWithFlags, &w.fork, cudaEventDisableTiming);
        CK(cudaEventCreateWithFlags, &w.join, cudaEventDisableTiming);
        CK(cudaEventCreateWithFlags, &w.order, cudaEventDisableTiming);
        CK(cudaMalloc, (void **)&w.bad, sizeof(unsigned));
        CK(cudaMemset, w.bad, 0, sizeof(unsigned));
    }
    k_sign<<<1, kWorkBlock>>>(nullptr, 0, 0, 0);
    ck(cudaGetLastError(), "k_sign<<<>>>");
    k_verify<<<1, kWorkBlock>>>(nullptr, 0, 0, 0, 0, workers[0].bad);
    ck(cudaGetLastError(), "k_verify<<<>>>");
    CK(cudaDeviceSynchronize);

    uint64_t max_used = 0, max_reserved = 0;
    double t0 = host_seconds();
    std::vector<std::thread> pool;
    if (!stop) {
        for (int t = 0; t < threads; t++)
            pool.emplace_back(worker, &workers[t], rounds);
        if (trim)
            pool.emplace_back(trimmer, seed, &max_used, &max_reserved);
    }
    while (!stop && workers_done < threads && host_seconds() - t0 < seconds)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true; // workers finish their current round
    for (int t = 0; t < threads && t < (int)pool.size(); t++)
        pool[t].join();
    stop_trimmer = true;
    if ((int)pool.size() > threads)
        pool[threads].join();
    double elapsed = host_seconds() - t0;

    // No capture runs any more: the device and the counters.
    CK(cudaDeviceSynchronize);
    unsigned long long corruption = 0;
    for (Worker &w : workers) {
        unsigned h = 0;
        if (w.bad && CK(cudaMemcpy, &h, w.bad, sizeof h, cudaMemcpyDeviceToHost))
            corruption += h;
        info("thread_wrong", "%d %u (last read in a round %u)", w.tid, h, w.last_wrong);
    }
    const char *name = nullptr;
    cudaError_t code;
    {
        std::lock_guard<std::mutex> l(first_mutex);
        name = first_name;
        code = first_code;
    }
    obs_int("corruption", (long long)corruption);
    obs("first_error", cudaGetErrorName(code));
    obs_int("captures_ok", captures_ok ? 1 : 0);
    info("rounds", "%lld launches %lld", total_rounds.load(), total_launches.load());
    info("first_error_call", "%s", name ? name : "none");
    info("trims", "%lld max_used=%llu max_reserved=%llu", trims.load(),
         (unsigned long long)max_used, (unsigned long long)max_reserved);
    info("seconds", "%.2f", elapsed);
    info_attrs("end", read_attrs());
    for (Worker &w : workers) {
        for (cudaStream_t s : w.s)
            cudaStreamDestroy(s);
        cudaEventDestroy(w.fork);
        cudaEventDestroy(w.join);
        cudaEventDestroy(w.order);
        cudaFree(w.bad);
    }
    return corruption == 0 && name == nullptr && captures_ok ? 0 : 1;
}

// Helpers shared by the multi-threaded GPU scenarios (scn_threads_*, scn_failed_launch,
// scn_trim_*, scn_capture_isolation, stress_threads): a graph whose kernel writes a per-launch
// signature over its whole allocation, sleeps so that a conflicting launch would overlap it, and
// counts the words that changed under it; a first-error latch and a gate between host threads.
#pragma once

#include "common.cuh"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

// Grid of the signature kernels: enough threads to sweep 64 MiB in tens of microseconds.
static const unsigned kWorkGrid = 528, kWorkBlock = 256;

static __device__ __forceinline__ uint64_t gpu_ns(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ uint32_t sig_word(uint32_t id, uint32_t launch, size_t j) {
    uint32_t x = id * 0x9E3779B1u ^ launch * 0x85EBCA77u ^ (uint32_t)j * 0xC2B2AE3Du ^
                 (uint32_t)(j >> 32) * 0x27D4EB2Fu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    return x ^ (x >> 12);
}

// One per launch, before k_sign_check: the signature's launch number.
static __global__ void k_bump_count(uint32_t *count) {
    *count += 1;
}

// Writes the signature of (id, *count) over p[0, n), then `rounds` times sleeps `spin_ns` and
// checks every word this thread wrote; wrong words (summed over rounds) go to *bad.
static __global__ void k_sign_check(uint32_t *p, size_t n, const uint32_t *count, uint32_t id,
                                    uint32_t spin_ns, int rounds, unsigned *bad) {
    uint32_t c = *count;
    size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x,
           step = (size_t)gridDim.x * blockDim.x;
    for (size_t j = first; j < n; j += step)
        p[j] = sig_word(id, c, j);
    unsigned wrong = 0;
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = gpu_ns();
        while (gpu_ns() - t0 < spin_ns)
            __nanosleep(500);
        for (size_t j = first; j < n; j += step)
            wrong += p[j] != sig_word(id, c, j);
    }
    if (wrong)
        atomicAdd(bad, wrong);
}

// Checks from outside the graph that p[0, n) still holds the signature of its last launch.
static __global__ void k_verify_sig(const uint32_t *p, size_t n, const uint32_t *count, uint32_t id,
                                    unsigned *bad) {
    uint32_t c = *count;
    unsigned wrong = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        wrong += p[j] != sig_word(id, c, j);
    if (wrong)
        atomicAdd(bad, wrong);
}

static __global__ void k_spin_ns(uint64_t ns) {
    uint64_t t0 = gpu_ns();
    while (gpu_ns() - t0 < ns)
        __nanosleep(1000);
}

// A captured graph: cudaMallocAsync(bytes), bump, sign/sleep/check, cudaFreeAsync unless
// `escape` (the allocation is then left to AutoFreeOnLaunch or a free outside the graph); with
// `temp_bytes`, a second allocation signed, checked and freed inside the graph.
struct Work {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    uint32_t *count = nullptr; // launch counter, bumped by the graph (device memory)
    uint32_t *escaped = nullptr;
    size_t words = 0;
    uint32_t id = 0;
    unsigned long long flags = 0; // of the instantiation
};

static inline cudaError_t capture_work(Work *w, cudaStream_t s, cudaStreamCaptureMode mode,
                                       size_t bytes, uint32_t id, uint32_t spin_ns, int rounds,
                                       unsigned *bad, bool escape, size_t temp_bytes = 0) {
    w->words = bytes / sizeof(uint32_t);
    w->id = id;
    cudaError_t rc = cudaSuccess;
    if (!w->count && (rc = cudaMalloc(&w->count, sizeof(uint32_t))) == cudaSuccess)
        rc = cudaMemset(w->count, 0, sizeof(uint32_t));
    if (rc != cudaSuccess)
        return rc;
    if ((rc = cudaStreamBeginCapture(s, mode)) != cudaSuccess)
        return rc;
    uint32_t *p = nullptr, *t = nullptr;
    cudaError_t first = cudaMallocAsync(&p, bytes, s);
    if (first == cudaSuccess && temp_bytes)
        first = cudaMallocAsync(&t, temp_bytes, s);
    k_bump_count<<<1, 1, 0, s>>>(w->count);
    k_sign_check<<<kWorkGrid, kWorkBlock, 0, s>>>(p, w->words, w->count, id, spin_ns, rounds, bad);
    if (temp_bytes)
        k_sign_check<<<kWorkGrid, kWorkBlock, 0, s>>>(t, temp_bytes / sizeof(uint32_t), w->count,
                                                      id ^ 0x80000000u, spin_ns, rounds, bad);
    if (first == cudaSuccess)
        first = cudaGetLastError();
    if (first == cudaSuccess && temp_bytes)
        first = cudaFreeAsync(t, s);
    if (escape)
        w->escaped = p;
    else if (first == cudaSuccess)
        first = cudaFreeAsync(p, s);
    rc = cudaStreamEndCapture(s, &w->graph);
    return first != cudaSuccess ? first : rc;
}

static inline cudaError_t make_work(Work *w, cudaStream_t s, size_t bytes, uint32_t id,
                                    uint32_t spin_ns, int rounds, unsigned *bad, bool escape,
                                    unsigned long long flags, size_t temp_bytes = 0) {
    cudaError_t rc = capture_work(w, s, cudaStreamCaptureModeGlobal, bytes, id, spin_ns, rounds,
                                  bad, escape, temp_bytes);
    w->flags = flags;
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiateWithFlags(&w->exec, w->graph, flags);
    return rc;
}

static inline void destroy_work(Work *w) {
    if (w->exec)
        cudaGraphExecDestroy(w->exec);
    if (w->graph)
        cudaGraphDestroy(w->graph);
    if (w->count)
        cudaFree(w->count);
    *w = Work();
    (void)cudaGetLastError();
}

// The first failure noted by any thread (cudaSuccess while there is none).
struct FirstError {
    std::atomic<int> code{cudaSuccess};
    void note(cudaError_t rc) {
        int expected = cudaSuccess;
        if (rc != cudaSuccess)
            code.compare_exchange_strong(expected, (int)rc);
    }
    cudaError_t get() const {
        return (cudaError_t)code.load();
    }
};

// Host threads wait for each other's numbered steps.
struct Gate {
    std::mutex m;
    std::condition_variable cv;
    int step = 0;
    void open(int s) {
        {
            std::lock_guard<std::mutex> l(m);
            step = s;
        }
        cv.notify_all();
    }
    void wait(int s) {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return step >= s; });
    }
};

// OBS the device counter of wrong words ("unreadable" after a sticky error), then zero it.
static inline void obs_wrong(const char *key, unsigned *d) {
    unsigned h = 0;
    cudaError_t rc =
        d ? cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) : cudaErrorInvalidValue;
    if (rc != cudaSuccess) {
        info(key, "counter unreadable: %s", cudaGetErrorName(rc));
        obs(key, "unreadable");
    } else {
        obs_int(key, h);
        cudaMemset(d, 0, sizeof(unsigned));
    }
    (void)cudaGetLastError();
}

static inline const char *capture_status_name(cudaStreamCaptureStatus st) {
    switch (st) {
    case cudaStreamCaptureStatusNone:
        return "none";
    case cudaStreamCaptureStatusActive:
        return "active";
    case cudaStreamCaptureStatusInvalidated:
        return "invalidated";
    }
    return "unknown";
}

// OBS whether `s` is capturing, as none/active/invalidated (or the query's error).
static inline void obs_capturing(const char *key, cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t rc = cudaStreamIsCapturing(s, &st);
    obs(key, rc == cudaSuccess ? capture_status_name(st) : cudaGetErrorName(rc));
    (void)cudaGetLastError();
}

static inline double host_seconds(void) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Launches a then b on s (no synchronize).
static inline cudaError_t launch_both(const Work *a, const Work *b, cudaStream_t s) {
    cudaError_t rc = cudaGraphLaunch(a->exec, s);
    return rc == cudaSuccess ? cudaGraphLaunch(b->exec, s) : rc;
}

// Observation keys of one case: "<tag>_<what>" (KEY needs `char key[96]` and `tag` in scope).
static inline void key_of(char *key, size_t size, const char *tag, const char *what) {
    snprintf(key, size, "%s_%s", tag, what);
}
#define KEY(what) (key_of(key, sizeof key, tag, what), key)

// The buffer a capture fills, with the fill/add/check kernels loaded and check_words' counter
// allocated before any capture begins (doing so inside a capture would break it): out = 0, then
// out += 1, checked.
static inline uint32_t *capture_buffer(cudaStream_t s, size_t words) {
    uint32_t *out = nullptr;
    cudaMalloc(&out, words * sizeof(uint32_t));
    obs_rc("warm_fill", fill_words(s, out, words, 0));
    k_add<<<kGrid, kBlock, 0, s>>>(out, out, words, 1);
    obs_ok("warm_check", check_words(s, out, words, 1));
    return out;
}

// A capture that filled out with v and added 1: instantiates it, launches it on s, checks out
// holds v + 1 everywhere, waits for the device and reports the wrong words the signature kernels
// counted meanwhile. Destroys the graph.
static inline void finish_capture(const char *tag, cudaGraph_t g, cudaStream_t s, uint32_t *out,
                                  size_t words, uint32_t v, unsigned *bad) {
    char key[96];
    cudaGraphExec_t e = nullptr;
    obs_rc(KEY("instantiate"), g ? cudaGraphInstantiate(&e, g, 0) : cudaErrorInvalidValue);
    if (e)
        obs_rc(KEY("captured_launch"), cudaGraphLaunch(e, s));
    obs_ok(KEY("captured_data"), e && check_words(s, out, words, v + 1));
    obs_rc(KEY("sync"), cudaDeviceSynchronize());
    obs_wrong(KEY("wrong_words"), bad);
    if (e)
        cudaGraphExecDestroy(e);
    if (g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError();
}

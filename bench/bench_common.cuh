// Shared by the bench/gpu_*.cu programs. A benchmark prints only `<metric> <value>` lines on stdout
// (and `exec_<workload> <handle>` lines, see gpu_footprint.cu); anything else goes to stderr.
// Failures print one line on stderr and exit 1, a machine without a GPU exits 77, so that
// bench/run-gpu never mistakes a broken run for a measurement.
#pragma once

#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>

static const size_t MiB = 1ull << 20;
static const size_t GiB = 1ull << 30;

static const char *bench_name = "bench_gpu";

static inline void bench_fail(const char *file, int line, const char *what, const char *detail) {
    fflush(stdout);
    fprintf(stderr, "%s: %s:%d: %s: %s\n", bench_name, file, line, what, detail);
    exit(1);
}

static inline void bench_check(cudaError_t rc, const char *call, const char *file, int line) {
    if (rc == cudaSuccess)
        return;
    char detail[256];
    snprintf(detail, sizeof detail, "%s (%s)", cudaGetErrorName(rc), cudaGetErrorString(rc));
    char what[512];
    snprintf(what, sizeof what, "%s failed", call);
    bench_fail(file, line, what, detail);
}

// Every CUDA call whose failure would make a figure meaningless goes through CK.
#define CK(call) bench_check((call), #call, __FILE__, __LINE__)
// After a <<<>>> launch: a bad configuration is reported here, not at the next sync.
#define CK_LAUNCH() CK(cudaGetLastError())
#define BENCH_REQUIRE(cond, detail)                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            bench_fail(__FILE__, __LINE__, #cond, detail);                                         \
    } while (0)

static inline double now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline double median(std::vector<double> v) {
    BENCH_REQUIRE(!v.empty(), "median of no samples");
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void bench_sync();

// Prints one figure; with a partner process, once the partner has printed as many (bench_sync()).
static inline void metric(const char *name, double value) {
    printf("%s %.4f\n", name, value);
    bench_sync();
}

// Writes 1 to the first n bytes of p (p may be null: graphs without memory nodes launch the same
// kernel with the same shape, so the two graphs differ only in their memory nodes).
__global__ void touch(char *p, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p && i < n)
        p[i] = 1;
}

static inline void touch_on(cudaStream_t s, void *p) {
    touch<<<1, 32, 0, s>>>((char *)p, 32);
    CK_LAUNCH();
}

// Exit status of a program whose partner (below) ended without saying so (killed): bench/run-gpu
// then reports the partner's own failure, not this one.
static const int BENCH_PARTNER_GONE = 78;

// bench/run-gpu runs some programs natively and under graphmem at once, the two processes' main
// threads pinned to one CPU and taking turns at it: the host's timings switch between a fast and
// a slow phase per CPU (bench/RESULTS.md), so two processes that alternate every millisecond or so
// on one CPU measure in the same phases, and neither runs while the other times something.
// BENCH_PARTNER="<read fd>,<write fd>" are pipes to the other process, through which a turn token
// goes back and forth; a process runs only while it holds the token (from bench_init() on).
// - bench_turn(), between timed batches (never inside one), passes the token on once it has been
//   held for BENCH_TURN_US. When it returns true the partner ran since, leaving the caches its own,
//   and the caller runs its next batch once untimed first: the figures stay those of a process
//   running alone, warm, as they were taken before the two sides took turns.
// - bench_sync(), at every metric printed (metric()), waits until the partner has printed as many:
//   the two measure each metric at the same moments, and the one with less work does not finish
//   early and leave the other to measure its last metrics alone, beside its own exit.
// - At exit the process says it ended and waits (its exit work on the shared CPU too) until the
//   partner has ended as well; a process whose partner ended runs alone.
// Without the variable these do nothing.
static const double BENCH_TURN_US = 1000;

struct BenchTurns {
    int read_fd = -2, write_fd = -1;
    bool alone = false;    // no partner, or it has ended
    double since_us = 0;   // when this process got the token
    uint32_t synced = 0;   // bench_sync() calls made
    uint32_t partners = 0; // the partner's, as its last token said
};

// What goes through the pipes: the token, and what its sender has reached. One write of 8 bytes,
// which a pipe keeps whole.
struct BenchToken {
    uint32_t ended; // the sender has ended: it will not take the token again
    uint32_t synced;
};

static inline BenchTurns &bench_turns() {
    static BenchTurns turns;
    return turns;
}

static inline void bench_partner_gone() {
    bench_turns().alone = true; // nothing to tell at exit
    fflush(stdout);
    fprintf(stderr, "%s: the partner process ended\n", bench_name);
    exit(BENCH_PARTNER_GONE);
}

// Reads the partner's next token; false when it ended without saying so (the pipe closed).
static inline bool bench_read_token(BenchToken *token) {
    ssize_t got;
    do
        got = read(bench_turns().read_fd, token, sizeof *token);
    while (got < 0 && errno == EINTR);
    return got == (ssize_t)sizeof *token;
}

// Blocks until the partner passes the token; false when it ended without saying so.
static inline bool bench_wait_turn() {
    BenchTurns &t = bench_turns();
    BenchToken token;
    if (!bench_read_token(&token))
        return false;
    t.partners = token.synced;
    t.alone = t.alone || token.ended;
    t.since_us = now_us();
    return true;
}

static inline bool bench_pass_turn(bool ended) {
    BenchTurns &t = bench_turns();
    BenchToken token = {ended, t.synced};
    ssize_t wrote;
    do
        wrote = write(t.write_fd, &token, sizeof token);
    while (wrote < 0 && errno == EINTR);
    return wrote == (ssize_t)sizeof token;
}

// Passes the token and waits for it back (the partner's turn).
static inline void bench_partner_turn() {
    if (!bench_pass_turn(false) || !bench_wait_turn())
        bench_partner_gone();
}

// At exit (atexit): says so, then waits until the partner has ended too (it runs alone from then
// on), unless it had already.
static inline void bench_end_turns() {
    BenchTurns &t = bench_turns();
    bool partner_ended = t.alone;
    if (!bench_pass_turn(true) || partner_ended)
        return;
    BenchToken token; // only the partner's end comes now: it runs alone, never passing it again
    bench_read_token(&token);
}

static inline bool bench_turn() {
    BenchTurns &t = bench_turns();
    if (t.read_fd == -2) { // first call (bench_init): wait for the first token
        const char *partner = getenv("BENCH_PARTNER");
        if (!partner || sscanf(partner, "%d,%d", &t.read_fd, &t.write_fd) != 2) {
            t.read_fd = t.write_fd = -1; // no partner: every later call returns at once
            t.alone = true;
            return false;
        }
        fcntl(t.read_fd, F_SETFD, FD_CLOEXEC); // a child of this program must not hold them
        fcntl(t.write_fd, F_SETFD, FD_CLOEXEC);
        signal(SIGPIPE, SIG_IGN); // a partner gone: the write fails, reported, instead of a kill
        atexit(bench_end_turns);
        if (!bench_wait_turn())
            bench_partner_gone();
        return true;
    }
    if (t.alone || now_us() - t.since_us < BENCH_TURN_US)
        return false;
    bench_partner_turn();
    return true;
}

static inline void bench_sync() {
    BenchTurns &t = bench_turns();
    if (t.read_fd < 0)
        return;
    t.synced++;
    while (!t.alone && t.partners < t.synced)
        bench_partner_turn();
}

// Exit 77 where there is no GPU (or no stream-ordered pools, which graph memory needs); any other
// start-up failure is an error. Also makes the context and loads `touch` (lazy module loading
// would otherwise charge the first measured capture or launch).
static inline void bench_init(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    bench_name = slash ? slash + 1 : argv0;
    bench_turn();
    int devices = 0;
    cudaError_t rc = cudaGetDeviceCount(&devices);
    if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver ||
        (rc == cudaSuccess && devices == 0)) {
        fprintf(stderr, "%s: SKIP no CUDA GPU (%s)\n", bench_name, cudaGetErrorName(rc));
        exit(77);
    }
    CK(rc);
    CK(cudaSetDevice(0));
    int pools = 0;
    CK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
    if (!pools) {
        fprintf(stderr, "%s: SKIP device 0 has no memory pool support\n", bench_name);
        exit(77);
    }
    CK(cudaFree(0));
    touch<<<1, 32>>>(nullptr, 0);
    CK_LAUNCH();
    CK(cudaDeviceSynchronize());
    // Taking turns (bench_turn()), the process may use two CPUs and its main thread is pinned to
    // the one its partner's runs on, BENCH_MAIN_CPU: their timings share that CPU's phases, and a
    // thread of graphmem's own (its plan beside the driver's instantiation) has the other. Pinned
    // only now, once graphmem started: its threads run on the CPUs it started with.
    if (const char *main_cpu = getenv("BENCH_MAIN_CPU")) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(atoi(main_cpu), &one);
        BENCH_REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0, "BENCH_MAIN_CPU");
    }
}

static inline cudaStream_t new_stream() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
}

static inline cudaEvent_t new_event() {
    cudaEvent_t e;
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
}

static inline void begin_capture(cudaStream_t s) {
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
}

static inline cudaGraph_t end_capture(cudaStream_t s) {
    cudaGraph_t g = nullptr;
    CK(cudaStreamEndCapture(s, &g));
    BENCH_REQUIRE(g != nullptr, "capture ended without a graph");
    return g;
}

static inline void *alloc_on(cudaStream_t s, size_t bytes) {
    void *p = nullptr;
    CK(cudaMallocAsync(&p, bytes, s));
    return p;
}

static inline void free_on(cudaStream_t s, void *p) {
    CK(cudaFreeAsync(p, s));
}

// Instantiates and destroys the graph: the exec is all a benchmark keeps.
static inline cudaGraphExec_t instantiate(cudaGraph_t g) {
    cudaGraphExec_t e = nullptr;
    CK(cudaGraphInstantiate(&e, g, 0));
    CK(cudaGraphDestroy(g));
    return e;
}

// Median µs of cudaGraphInstantiate over `reps` instantiations after one warm-up; each exec is
// destroyed before the next (a graph with memory nodes may have one exec at a time).
static inline double instantiate_us(cudaGraph_t g, int reps) {
    std::vector<double> samples;
    for (int rep = 0; rep <= reps; rep++) {
        cudaGraphExec_t e = nullptr;
        if (bench_turn()) { // warm again (bench_turn())
            CK(cudaGraphInstantiate(&e, g, 0));
            CK(cudaGraphExecDestroy(e));
        }
        double t0 = now_us();
        CK(cudaGraphInstantiate(&e, g, 0));
        double us = now_us() - t0;
        if (rep) // rep 0 warms up
            samples.push_back(us);
        CK(cudaGraphExecDestroy(e));
    }
    return median(samples);
}

static inline void launch(cudaGraphExec_t e, cudaStream_t s) {
    CK(cudaGraphLaunch(e, s));
}

static inline uint64_t graph_mem_attr(cudaGraphMemAttributeType attr) {
    uint64_t v = 0;
    CK(cudaDeviceGetGraphMemAttribute(0, attr, &v));
    return v;
}

// Between workloads: nothing runs, idle graph memory goes back (trim), and the high-water marks
// restart from the current values (the only value they can be set to is 0, which resets them).
static inline void reset_graph_memory() {
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceGraphMemTrim(0));
    uint64_t zero = 0;
    CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero));
    CK(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
}

// Deterministic sizes and shapes (xorshift64*), the same natively and under graphmem.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint64_t next() {
        uint64_t x = state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state = x;
        return x * 0x2545F4914F6CDD1Dull;
    }
    // Uniform in [0, n).
    uint32_t below(uint32_t n) {
        return (uint32_t)(next() % n);
    }
    double unit() {
        return (double)(next() >> 11) / 9007199254740992.0;
    }
    // Log-uniform in [lo, hi], rounded up to `align` bytes.
    size_t log_uniform(size_t lo, size_t hi, size_t align) {
        double v =
            std::exp(std::log((double)lo) + unit() * (std::log((double)hi) - std::log((double)lo)));
        size_t bytes = (size_t)v;
        bytes = (bytes + align - 1) / align * align;
        return std::max(bytes, align);
    }
};

// A chain with parallel branches, the shape of a real captured step: a main chain on st[0] (two
// allocations live at a time, the older freed after the newer is made), and every few steps a fork
// into parallel branches on st[1..] (two live at a time each, all freed before the join), which
// sometimes start after the previous branch ended (an event from branch b-1 to the middle of b).
// Every allocation gets a kernel. Needs 1 + max_branches streams and max_branches + 2 events.
struct DagShape {
    int pairs;                      // allocation+free pairs
    size_t min_bytes, max_bytes;    // log-uniform sizes
    int min_branches, max_branches; // parallel branches per fork
    uint64_t seed;
};

static inline cudaGraph_t capture_dag(const DagShape &d, const cudaStream_t *st,
                                      const cudaEvent_t *ev) {
    BENCH_REQUIRE(d.min_branches >= 1 && d.min_branches <= d.max_branches, "bad branch range");
    Rng rng(d.seed);
    cudaEvent_t fork = ev[0], cross = ev[d.max_branches + 1];
    int made = 0;
    auto step = [&](cudaStream_t s, std::vector<void *> &live) {
        void *p = alloc_on(s, rng.log_uniform(d.min_bytes, d.max_bytes, 512));
        touch_on(s, p);
        live.push_back(p);
        if (live.size() > 2) {
            free_on(s, live.front());
            live.erase(live.begin());
        }
        made++;
    };
    std::vector<void *> main_live;
    begin_capture(st[0]);
    while (made < d.pairs) {
        for (int i = 3 + (int)rng.below(6); i > 0 && made < d.pairs; i--)
            step(st[0], main_live);
        if (made >= d.pairs)
            break;
        int branches = d.min_branches + (int)rng.below(d.max_branches - d.min_branches + 1);
        CK(cudaEventRecord(fork, st[0]));
        for (int b = 1; b <= branches; b++) {
            CK(cudaStreamWaitEvent(st[b], fork, 0));
            int len = 2 + (int)rng.below(5);
            int after_previous = b > 1 && rng.below(4) == 0 ? (int)rng.below(len) : -1;
            std::vector<void *> live;
            for (int i = 0; i < len && made < d.pairs; i++) {
                if (i == after_previous) {
                    CK(cudaEventRecord(cross, st[b - 1]));
                    CK(cudaStreamWaitEvent(st[b], cross, 0));
                }
                step(st[b], live);
            }
            for (void *p : live)
                free_on(st[b], p);
            CK(cudaEventRecord(ev[b], st[b]));
        }
        for (int b = 1; b <= branches; b++)
            CK(cudaStreamWaitEvent(st[0], ev[b], 0));
    }
    for (void *p : main_live)
        free_on(st[0], p);
    return end_capture(st[0]);
}

// Footprint: graph memory reserved for one launch of each workload, against the graph's
// page-rounded lower bound. Per workload <w> it prints
//   footprint_<w>_mib  ReservedMemHigh over the launch (MiB), less what was still reserved before
//   memdrop_<w>_mib    drop in free device memory (cudaMemGetInfo) over the launch (MiB)
//   exec_<w> <handle>  one line per exec of the workload (unsigned decimal)
// Under graphmem, bench/run-gpu finds each exec in GRAPHMEM_STATS_FILE and takes the workload's
// bound as the largest lower_bound of its execs, rounded up to 2 MiB (the execs of a workload never
// run at the same time, so the largest is what any allocator needs at least). Natively the exec
// lines are ignored. Execs are kept until the end so that no handle is reused and printed twice;
// each workload runs on streams of its own, because graphmem shares memory between the execs of a
// stream: an idle exec kept from an earlier workload must not shape a later one's memory.
//
// Workloads: chain_2live_8x128MiB, chain_2live_mixed (two live allocations at a time), forkjoin,
// dag_{1,2,3,4}br (random chains with that many parallel branches per fork), pytorch_1000
// (1,000 allocations of 4 KiB..1 MiB, forward activations kept for the backward pass),
// single_1MiB, 100x1MiB_sequential, 100x1MiB_concurrent, escape (allocations freed by cudaFree
// after the launch), 4graphs_1stream (four graphs one after another on one stream),
// 4graphs_events (the same four alternating between two streams, ordered by events),
// 4graphs_events_long (the same with graphs of 50 ms, so that none has finished when the next is
// launched), 4graphs_unordered_long (those without events: they may run at once),
// 8graphs_8streams (eight 64 MiB graphs on eight streams; the first is short and has finished
// before the eighth is launched, the others run 50 ms: seven are live at once, 448 MiB). The
// last has no exec lines: its execs run at the same time, so the largest bound is not its bound.
// The chains sign every word of each allocation with a value of its own and check it before the
// free: `wrong_words` at the end counts the words that changed meanwhile (another allocation
// sharing the bytes while live), over every chain workload; it must be 0 (exit 1 otherwise).
#include "bench_common.cuh"

static cudaStream_t st[5];
static cudaEvent_t ev[6];
static std::vector<cudaGraphExec_t> kept;
static std::vector<cudaStream_t> used_streams;

// Before each workload's capture: streams of its own (destroyed at the end, so never reused).
static void new_streams() {
    for (cudaStream_t &s : st) {
        s = new_stream();
        used_streams.push_back(s);
    }
}

template <typename F>
static void footprint(const char *name, const std::vector<cudaGraphExec_t> &execs, F launch_all,
                      const std::vector<void *> &escaping) {
    reset_graph_memory();
    uint64_t base = graph_mem_attr(cudaGraphMemAttrReservedMemCurrent);
    if (base)
        fprintf(stderr,
                "%s: %s: %llu bytes of graph memory still reserved after a trim (left out)\n",
                bench_name, name, (unsigned long long)base);
    size_t free_before = 0, free_after = 0, total = 0;
    CK(cudaMemGetInfo(&free_before, &total));
    launch_all();
    CK(cudaDeviceSynchronize());
    // A high-water mark reset to 0 may stay below what was reserved before, if nothing new was
    // reserved since: the current value bounds it from below.
    uint64_t high = std::max(graph_mem_attr(cudaGraphMemAttrReservedMemHigh),
                             graph_mem_attr(cudaGraphMemAttrReservedMemCurrent));
    CK(cudaMemGetInfo(&free_after, &total));
    char key[128];
    snprintf(key, sizeof key, "footprint_%s_mib", name);
    metric(key, ((double)high - (double)base) / MiB);
    snprintf(key, sizeof key, "memdrop_%s_mib", name);
    metric(key, ((double)free_before - (double)free_after) / MiB);
    for (cudaGraphExec_t e : execs) {
        printf("exec_%s %llu\n", name, (unsigned long long)(uintptr_t)e);
        kept.push_back(e);
    }
    // Allocations the graph leaves live go back before the next workload's trim.
    for (void *p : escaping)
        CK(cudaFree(p));
}

// One exec launched once on st[0].
static void single(const char *name, cudaGraphExec_t e, const std::vector<void *> &escaping = {}) {
    footprint(
        name, {e}, [&] { launch(e, st[0]); }, escaping);
}

__global__ void hold(unsigned long long ns);

// A, B live; free A; C; free B; D; ...: two allocations live at a time. With `spin_ns`, the first
// allocation is held that long by a kernel (the graph runs at least that long).
static unsigned *wrong_words; // device counter of the signature checks
static uint32_t next_signature = 1;

__global__ void sign(uint32_t *p, size_t words, uint32_t v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

__global__ void check_signature(const uint32_t *p, size_t words, uint32_t v, unsigned *wrong) {
    unsigned bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        bad += p[i] != v;
    if (bad)
        atomicAdd(wrong, bad);
}

// Each allocation signed with a value of its own when made, checked before its free; the first
// followed by a kernel running `spin_ns`.
static cudaGraphExec_t chain_two_live(const std::vector<size_t> &sizes,
                                      unsigned long long spin_ns = 0) {
    begin_capture(st[0]);
    void *prev = nullptr;
    size_t prev_words = 0;
    uint32_t prev_sig = 0;
    for (size_t bytes : sizes) {
        void *p = alloc_on(st[0], bytes);
        uint32_t sig = next_signature++;
        sign<<<1024, 256, 0, st[0]>>>((uint32_t *)p, bytes / 4, sig);
        CK_LAUNCH();
        if (spin_ns && !prev)
            hold<<<1, 1, 0, st[0]>>>(spin_ns);
        if (prev) {
            check_signature<<<1024, 256, 0, st[0]>>>((uint32_t *)prev, prev_words, prev_sig,
                                                     wrong_words);
            CK_LAUNCH();
            free_on(st[0], prev);
        }
        prev = p, prev_words = bytes / 4, prev_sig = sig;
    }
    if (prev) {
        check_signature<<<1024, 256, 0, st[0]>>>((uint32_t *)prev, prev_words, prev_sig,
                                                 wrong_words);
        CK_LAUNCH();
        free_on(st[0], prev);
    }
    return instantiate(end_capture(st[0]));
}

// `count` allocations, each freed before the next (sequential) or all live together (concurrent).
static cudaGraphExec_t many(int count, size_t bytes, bool concurrent) {
    std::vector<void *> live;
    begin_capture(st[0]);
    for (int i = 0; i < count; i++) {
        void *p = alloc_on(st[0], bytes);
        touch_on(st[0], p);
        if (concurrent)
            live.push_back(p);
        else
            free_on(st[0], p);
    }
    for (void *p : live)
        free_on(st[0], p);
    return instantiate(end_capture(st[0]));
}

// X (64 MiB) lives throughout; two unordered branches each make and free two allocations; after
// the join one allocation as large as both branches' largest pair.
static cudaGraphExec_t forkjoin() {
    begin_capture(st[0]);
    void *x = alloc_on(st[0], 64 * MiB);
    touch_on(st[0], x);
    CK(cudaEventRecord(ev[0], st[0]));
    const size_t branch_sizes[2][2] = {{128 * MiB, 256 * MiB}, {256 * MiB, 128 * MiB}};
    for (int b = 1; b <= 2; b++) {
        CK(cudaStreamWaitEvent(st[b], ev[0], 0));
        for (size_t bytes : branch_sizes[b - 1]) {
            void *p = alloc_on(st[b], bytes);
            touch_on(st[b], p);
            free_on(st[b], p);
        }
        CK(cudaEventRecord(ev[b], st[b]));
    }
    for (int b = 1; b <= 2; b++)
        CK(cudaStreamWaitEvent(st[0], ev[b], 0));
    void *e = alloc_on(st[0], 512 * MiB);
    touch_on(st[0], e);
    free_on(st[0], e);
    free_on(st[0], x);
    return instantiate(end_capture(st[0]));
}

// A training step's allocation pattern as PyTorch's allocator makes it: 200 layers forward, each
// an activation kept for the backward pass and two temporaries; backward in reverse, each a
// gradient (freed by the next layer's) and a temporary, freeing the layer's activation. 1,000
// allocations of 4 KiB..1 MiB, rounded to 512 B.
static cudaGraphExec_t pytorch_like() {
    const int layers = 200;
    Rng rng(7);
    auto size = [&] { return rng.log_uniform(4 << 10, MiB, 512); };
    std::vector<void *> acts;
    begin_capture(st[0]);
    for (int l = 0; l < layers; l++) {
        void *a = alloc_on(st[0], size());
        void *t1 = alloc_on(st[0], size());
        void *t2 = alloc_on(st[0], size());
        touch_on(st[0], a);
        free_on(st[0], t1);
        free_on(st[0], t2);
        acts.push_back(a);
    }
    void *grad = nullptr;
    for (int l = layers - 1; l >= 0; l--) {
        void *g = alloc_on(st[0], size());
        void *t = alloc_on(st[0], size());
        touch_on(st[0], g);
        free_on(st[0], t);
        free_on(st[0], acts[l]);
        if (grad)
            free_on(st[0], grad);
        grad = g;
    }
    free_on(st[0], grad);
    return instantiate(end_capture(st[0]));
}

// A chain of six 128 MiB allocations (two live) that also makes three 64 MiB allocations it never
// frees: the caller frees them with cudaFree after the launch.
static cudaGraphExec_t escape(std::vector<void *> *escaping) {
    begin_capture(st[0]);
    void *prev = nullptr;
    for (int i = 0; i < 6; i++) {
        void *p = alloc_on(st[0], 128 * MiB);
        touch_on(st[0], p);
        if (prev)
            free_on(st[0], prev);
        prev = p;
        if (i % 2) {
            void *e = alloc_on(st[0], 64 * MiB);
            touch_on(st[0], e);
            escaping->push_back(e);
        }
    }
    free_on(st[0], prev);
    return instantiate(end_capture(st[0]));
}

// Spins for `ns` nanoseconds of the GPU's global timer.
static __device__ void spin_for(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < ns);
}

__global__ void hold(unsigned long long ns) {
    spin_for(ns);
}

// Spins, then writes p[0].
__global__ void spin(char *p, unsigned long long ns) {
    spin_for(ns);
    p[0] = 1;
}

// One 64 MiB allocation, written, then a kernel running `ns`, then freed.
static cudaGraphExec_t long_graph(cudaStream_t s, unsigned long long ns) {
    begin_capture(s);
    void *p = alloc_on(s, 64 * MiB);
    touch_on(s, p);
    spin<<<1, 1, 0, s>>>((char *)p, ns);
    free_on(s, p);
    return instantiate(end_capture(s));
}

// Four two-live chains of different sizes (bounds 128, 256, 512 and 384 MiB), each running at
// least `spin_ns`.
static std::vector<cudaGraphExec_t> four_graphs(unsigned long long spin_ns = 0) {
    std::vector<cudaGraphExec_t> execs;
    for (size_t bytes : {64 * MiB, 128 * MiB, 256 * MiB, 192 * MiB})
        execs.push_back(chain_two_live(std::vector<size_t>(4, bytes), spin_ns));
    return execs;
}

// The four on streams st[0] and st[1] in turn, each launch after an event recorded behind the one
// before when `ordered`.
static void four_on_two_streams(const std::vector<cudaGraphExec_t> &execs, bool ordered) {
    for (size_t i = 0; i < execs.size(); i++) {
        cudaStream_t s = st[i % 2];
        if (i && ordered)
            CK(cudaStreamWaitEvent(s, ev[0], 0));
        launch(execs[i], s);
        if (ordered)
            CK(cudaEventRecord(ev[0], s));
    }
}

static cudaGraphExec_t dag(int branches) {
    DagShape d = {60, MiB, 128 * MiB, branches, branches, (uint64_t)branches};
    return instantiate(capture_dag(d, st, ev));
}

int main(int, char **argv) {
    bench_init(argv[0]);
    for (cudaEvent_t &e : ev)
        e = new_event();
    CK(cudaMalloc(&wrong_words, sizeof *wrong_words));
    CK(cudaMemset(wrong_words, 0, sizeof *wrong_words));

    new_streams();
    single("chain_2live_8x128MiB", chain_two_live(std::vector<size_t>(8, 128 * MiB)));
    // Neighbours of different sizes: the driver reuses an address range only for an allocation
    // that fits in it.
    new_streams();
    single("chain_2live_mixed", chain_two_live({96 * MiB, 160 * MiB, 64 * MiB, 224 * MiB, 128 * MiB,
                                                32 * MiB, 192 * MiB, 256 * MiB}));
    new_streams();
    single("forkjoin", forkjoin());
    char name[32];
    for (int b = 1; b <= 4; b++) {
        snprintf(name, sizeof name, "dag_%dbr", b);
        new_streams();
        single(name, dag(b));
    }
    new_streams();
    single("pytorch_1000", pytorch_like());
    new_streams();
    single("single_1MiB", many(1, MiB, false));
    new_streams();
    single("100x1MiB_sequential", many(100, MiB, false));
    new_streams();
    single("100x1MiB_concurrent", many(100, MiB, true));
    {
        std::vector<void *> escaping;
        new_streams();
        cudaGraphExec_t e = escape(&escaping);
        single("escape", e, escaping);
    }
    {
        new_streams();
        std::vector<cudaGraphExec_t> execs = four_graphs();
        footprint("4graphs_1stream", execs,
                  [&] {
                      for (cudaGraphExec_t e : execs)
                          launch(e, st[0]);
                  },
                  {});
    }
    {
        new_streams();
        std::vector<cudaGraphExec_t> execs = four_graphs();
        footprint("4graphs_events", execs, [&] { four_on_two_streams(execs, true); }, {});
    }
    {
        // The same with graphs of 50 ms: none has finished when the next is launched, so only the
        // events say they never run at once.
        new_streams();
        std::vector<cudaGraphExec_t> execs = four_graphs(50000000ull);
        footprint("4graphs_events_long", execs, [&] { four_on_two_streams(execs, true); }, {});
    }
    {
        // Unordered: they may run at once, two at a time. No exec lines: the largest bound is
        // not its bound (graphmem: 512 + 384 MiB, one group per stream).
        new_streams();
        std::vector<cudaGraphExec_t> execs = four_graphs(50000000ull);
        footprint("4graphs_unordered_long", {}, [&] { four_on_two_streams(execs, false); }, {});
        kept.insert(kept.end(), execs.begin(), execs.end());
    }
    {
        cudaStream_t s8[8];
        std::vector<cudaGraphExec_t> execs;
        for (int i = 0; i < 8; i++) {
            s8[i] = new_stream();
            used_streams.push_back(s8[i]);
            execs.push_back(long_graph(s8[i], i ? 50000000ull : 0));
        }
        footprint("8graphs_8streams", {},
                  [&] {
                      for (int i = 0; i < 7; i++)
                          launch(execs[i], s8[i]);
                      CK(cudaStreamSynchronize(s8[0]));
                      launch(execs[7], s8[7]);
                  },
                  {});
        kept.insert(kept.end(), execs.begin(), execs.end());
    }

    CK(cudaDeviceSynchronize());
    unsigned wrong = 0;
    CK(cudaMemcpy(&wrong, wrong_words, sizeof wrong, cudaMemcpyDeviceToHost));
    CK(cudaFree(wrong_words));
    metric("wrong_words", wrong);
    for (cudaGraphExec_t e : kept)
        CK(cudaGraphExecDestroy(e));
    for (cudaStream_t s : used_streams)
        CK(cudaStreamDestroy(s));
    for (cudaEvent_t e : ev)
        CK(cudaEventDestroy(e));
    CK(cudaDeviceGraphMemTrim(0));
    if (wrong)
        fprintf(stderr, "%s: %u words changed under a live allocation\n", bench_name, wrong);
    return wrong ? 1 : 0;
}

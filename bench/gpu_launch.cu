// Steady-state launch: host µs per cudaGraphLaunch of graphs with 1, 10, 100 and 800 allocations
// (1 MiB to 1 GiB), each against its twin, the same chain of kernels without memory nodes, launched
// in alternating batches in the same process at the same moments: bench/run-gpu pairs
// launch_mem_<label>_us with launch_twin_<label>_us, and the goal is graphmem's launch of the graph
// with memory within 1.05x of the driver's launch of the twin. Two processes taking turns at one
// CPU (bench_turn()) measure in the same phases of the host, and the twin at the same step; a
// twin measured at another step of the program (as launch_nomem_<N>_us is) can be in another
// phase of the host, up to 1.6x slower or faster.
//
// Metrics: launch_nomem_{1,10,100,800}_us (a graph without memory nodes, alone: graphmem passes
// its launch to the driver), and for each label 1MiB, 64MiB, 1GiB (one allocation), 10xmixed,
// 100x4MiB, 100xmixed and 800xmixed (allocations of 1 MiB to 1 GiB): launch_mem_<label>_us,
// launch_twin_<label>_us and launch_extra_<label>_us, what a launch of the graph with memory costs
// more than one of its twin (median of the rounds' differences).
#include "bench_common.cuh"

static cudaStream_t s;

// A chain of one kernel per entry of `sizes`; with memory, each kernel touches its own allocation,
// freed before the next is made (one live at a time: this measures launch, not footprint).
static cudaGraphExec_t chain(const std::vector<size_t> &sizes, bool memory) {
    begin_capture(s);
    for (size_t bytes : sizes) {
        void *p = memory ? alloc_on(s, bytes) : nullptr;
        touch_on(s, p);
        if (memory)
            free_on(s, p);
    }
    return instantiate(end_capture(s));
}

static std::vector<size_t> same(int count, size_t bytes) {
    return std::vector<size_t>(count, bytes);
}

// Log-uniform 1 MiB .. 1 GiB, a fixed sequence per count.
static std::vector<size_t> mixed(int count) {
    Rng rng(1000 + count);
    std::vector<size_t> sizes;
    for (int i = 0; i < count; i++)
        sizes.push_back(rng.log_uniform(MiB, GiB, 512));
    return sizes;
}

// Median over 30 batches of 20 launches of host time per launch, after 50 warm-up launches (the
// first maps memory; the driver also settles its launch path). Batches are synchronised so the
// queue never fills up and blocks the host.
static double launch_us(cudaGraphExec_t e) {
    for (int i = 0; i < 50; i++)
        launch(e, s);
    CK(cudaStreamSynchronize(s));
    std::vector<double> samples;
    for (int rep = 0; rep < 30; rep++) {
        if (bench_turn()) { // warm again (bench_common.cuh)
            for (int i = 0; i < 2; i++)
                launch(e, s);
            CK(cudaStreamSynchronize(s));
        }
        double t0 = now_us();
        for (int i = 0; i < 20; i++)
            launch(e, s);
        samples.push_back((now_us() - t0) / 20);
        CK(cudaStreamSynchronize(s));
    }
    return median(samples);
}

// The next graph starts from no graph memory held (up to 1 GiB per graph here).
static void release_memory() {
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceGraphMemTrim(0));
}

static void measure_alone(const char *name, const std::vector<size_t> &sizes) {
    cudaGraphExec_t e = chain(sizes, false);
    metric(name, launch_us(e));
    CK(cudaGraphExecDestroy(e));
    release_memory();
}

// Host µs per launch of the graph with memory (`with`) and of its twin (`without`), each the median
// over 30 rounds of a batch of 20 launches of each, and the median of the rounds' differences;
// after the same warm-up as launch_us.
struct Alternated {
    double with_us, without_us, extra_us;
};

static Alternated alternate(cudaGraphExec_t with, cudaGraphExec_t without) {
    for (int i = 0; i < 50; i++) {
        launch(with, s);
        launch(without, s);
    }
    CK(cudaStreamSynchronize(s));
    std::vector<double> withs, withouts, extras;
    for (int rep = 0; rep < 30; rep++) {
        double per[2];
        cudaGraphExec_t order[2] = {with, without};
        for (int k = 0; k < 2; k++) {
            if (bench_turn()) { // warm again (bench_common.cuh)
                for (int i = 0; i < 2; i++) {
                    launch(with, s);
                    launch(without, s);
                }
                CK(cudaStreamSynchronize(s));
            }
            double t0 = now_us();
            for (int i = 0; i < 20; i++)
                launch(order[k], s);
            per[k] = (now_us() - t0) / 20;
            CK(cudaStreamSynchronize(s));
        }
        withs.push_back(per[0]);
        withouts.push_back(per[1]);
        extras.push_back(per[0] - per[1]);
    }
    return {median(withs), median(withouts), median(extras)};
}

static void measure_with_twin(const char *label, const std::vector<size_t> &sizes) {
    cudaGraphExec_t with = chain(sizes, true), without = chain(same((int)sizes.size(), 0), false);
    Alternated a = alternate(with, without);
    char name[64];
    snprintf(name, sizeof name, "launch_mem_%s_us", label);
    metric(name, a.with_us);
    snprintf(name, sizeof name, "launch_twin_%s_us", label);
    metric(name, a.without_us);
    snprintf(name, sizeof name, "launch_extra_%s_us", label);
    metric(name, a.extra_us);
    CK(cudaGraphExecDestroy(with));
    CK(cudaGraphExecDestroy(without));
    release_memory();
}

int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    measure_alone("launch_nomem_1_us", same(1, 0));
    measure_with_twin("1MiB", same(1, MiB));
    measure_with_twin("64MiB", same(1, 64 * MiB));
    measure_with_twin("1GiB", same(1, GiB));
    measure_alone("launch_nomem_10_us", same(10, 0));
    measure_with_twin("10xmixed", mixed(10));
    measure_alone("launch_nomem_100_us", same(100, 0));
    measure_with_twin("100x4MiB", same(100, 4 * MiB));
    measure_with_twin("100xmixed", mixed(100));
    measure_alone("launch_nomem_800_us", same(800, 0));
    measure_with_twin("800xmixed", mixed(800));
    CK(cudaStreamDestroy(s));
    return 0;
}

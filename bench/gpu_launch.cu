// Steady-state launch: host µs per cudaGraphLaunch of graphs with 1, 10, 100 and 800 allocations
// (1 MiB to 1 GiB), each against the same chain of kernels without memory nodes. bench/run-gpu
// pairs launch_mem_<N>x..._us with launch_nomem_<N>_us (launch_mem_<size>_us with N = 1): the goal
// is graphmem's launch of the graph with memory within 1.05x of the driver's launch without.
//
// Metrics: launch_nomem_{1,10,100,800}_us, launch_mem_{1MiB,64MiB,1GiB}_us, launch_mem_10xmixed_us,
// launch_mem_100x4MiB_us, launch_mem_100xmixed_us, launch_mem_800xmixed_us, and
// launch_extra_{1MiB,100x4MiB,800xmixed}_us: what a launch of the graph with memory costs more
// than one of the same chain of kernels without memory nodes, in the same process with batches of
// the two alternating (the rows above compare two processes, whose launch costs differ by up to
// 0.6 us between runs, and two moments of one process, which differ too).
//
// bench/run-gpu runs this program natively and under graphmem taking turns at one CPU
// (bench_turn(): a batch after the partner's turn follows an untimed warm-up).
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

static void measure(const char *name, const std::vector<size_t> &sizes, bool memory) {
    cudaGraphExec_t e = chain(sizes, memory);
    metric(name, launch_us(e));
    CK(cudaGraphExecDestroy(e));
    // The next graph starts from no graph memory held (up to 1 GiB per graph here).
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceGraphMemTrim(0));
}

// Median over 30 rounds of (host us per launch of `with` - of `without`), the two measured in
// alternating batches of 20 launches after the same warm-up as launch_us.
static double extra_us(cudaGraphExec_t with, cudaGraphExec_t without) {
    for (int i = 0; i < 50; i++) {
        launch(with, s);
        launch(without, s);
    }
    CK(cudaStreamSynchronize(s));
    std::vector<double> samples;
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
        samples.push_back(per[0] - per[1]);
    }
    return median(samples);
}

static void measure_extra(const char *name, const std::vector<size_t> &sizes) {
    cudaGraphExec_t with = chain(sizes, true), without = chain(same((int)sizes.size(), 0), false);
    metric(name, extra_us(with, without));
    CK(cudaGraphExecDestroy(with));
    CK(cudaGraphExecDestroy(without));
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceGraphMemTrim(0));
}

int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    measure("launch_nomem_1_us", same(1, 0), false);
    measure("launch_mem_1MiB_us", same(1, MiB), true);
    measure("launch_mem_64MiB_us", same(1, 64 * MiB), true);
    measure("launch_mem_1GiB_us", same(1, GiB), true);
    measure_extra("launch_extra_1MiB_us", same(1, MiB));
    measure("launch_nomem_10_us", same(10, 0), false);
    measure("launch_mem_10xmixed_us", mixed(10), true);
    measure("launch_nomem_100_us", same(100, 0), false);
    measure("launch_mem_100x4MiB_us", same(100, 4 * MiB), true);
    measure("launch_mem_100xmixed_us", mixed(100), true);
    measure_extra("launch_extra_100x4MiB_us", same(100, 4 * MiB));
    measure("launch_nomem_800_us", same(800, 0), false);
    measure("launch_mem_800xmixed_us", mixed(800), true);
    measure_extra("launch_extra_800xmixed_us", mixed(800));
    CK(cudaStreamDestroy(s));
    return 0;
}

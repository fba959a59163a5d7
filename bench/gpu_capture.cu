// Capture and instantiation of graphs with memory nodes (graphmem plans at instantiation: lower
// bound, placement, mappings to make).
//
// Metrics:
//   capture_pair_us           µs per captured cudaMallocAsync+cudaFreeAsync pair (1 MiB), 1,000
//                             pairs per capture, begin and end included; median of 7 captures
//   capture_pair_64MiB_us     the same with 64 MiB (graphmem packs allocations below 2 MiB, so
//                             small and large ones take different paths)
//   capture_dag_pair_us       capture of the 10,000-pair graph below, per pair (one capture)
//   instantiate_1000_us       cudaGraphInstantiate of the 1,000-pair graph of capture_pair_us
//   instantiate_dag_{100,1000,10000}_us
//                             cudaGraphInstantiate of a chain with parallel branches
//                             (capture_dag: 4 KiB..64 MiB, 1-3 branches per fork, a kernel per
//                             allocation), captured once, instantiated several times
// Instantiations: one warm-up, then the median of the rest; each exec is destroyed before the next
// (a graph with memory nodes may have one exec at a time).
#include "bench_common.cuh"

static cudaStream_t st[4];
static cudaEvent_t ev[5];

static cudaGraph_t capture_pairs(int pairs, size_t bytes, double *us)
{
    double t0 = now_us();
    begin_capture(st[0]);
    for (int i = 0; i < pairs; i++)
        free_on(st[0], alloc_on(st[0], bytes));
    cudaGraph_t g = end_capture(st[0]);
    *us = now_us() - t0;
    return g;
}

static double capture_pair_us(size_t bytes, cudaGraph_t *keep)
{
    const int pairs = 1000, reps = 7;
    double us = 0;
    CK(cudaGraphDestroy(capture_pairs(pairs, bytes, &us))); // warm-up
    std::vector<double> samples;
    for (int rep = 0; rep < reps; rep++) {
        cudaGraph_t g = capture_pairs(pairs, bytes, &us);
        samples.push_back(us / pairs);
        if (keep && rep == reps - 1)
            *keep = g;
        else
            CK(cudaGraphDestroy(g));
    }
    return median(samples);
}

static double instantiate_us(cudaGraph_t g, int reps)
{
    std::vector<double> samples;
    for (int rep = 0; rep <= reps; rep++) {
        cudaGraphExec_t e = nullptr;
        double t0 = now_us();
        CK(cudaGraphInstantiate(&e, g, 0));
        double us = now_us() - t0;
        if (rep) // rep 0 warms up
            samples.push_back(us);
        CK(cudaGraphExecDestroy(e));
    }
    return median(samples);
}

static void dag(int pairs, int reps, bool report_capture)
{
    DagShape d = {pairs, 4 << 10, 64 * MiB, 1, 3, (uint64_t)pairs};
    double t0 = now_us();
    cudaGraph_t g = capture_dag(d, st, ev);
    double capture = now_us() - t0;
    if (report_capture)
        metric("capture_dag_pair_us", capture / pairs);
    char key[64];
    snprintf(key, sizeof key, "instantiate_dag_%d_us", pairs);
    metric(key, instantiate_us(g, reps));
    CK(cudaGraphDestroy(g));
}

int main(int, char **argv)
{
    bench_init(argv[0]);
    for (cudaStream_t &s : st)
        s = new_stream();
    for (cudaEvent_t &e : ev)
        e = new_event();

    cudaGraph_t pairs1000 = nullptr;
    metric("capture_pair_us", capture_pair_us(MiB, &pairs1000));
    metric("capture_pair_64MiB_us", capture_pair_us(64 * MiB, nullptr));
    metric("instantiate_1000_us", instantiate_us(pairs1000, 7));
    CK(cudaGraphDestroy(pairs1000));

    dag(100, 15, false);
    dag(1000, 7, false);
    dag(10000, 3, true);

    for (cudaStream_t s : st)
        CK(cudaStreamDestroy(s));
    for (cudaEvent_t e : ev)
        CK(cudaEventDestroy(e));
    return 0;
}

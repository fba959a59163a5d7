// Capture cost of graph allocations, and instantiation of the captured graph.
//
// Metrics:
//   capture_pair_us        µs per captured cudaMallocAsync+cudaFreeAsync pair (1 MiB), 1,000 pairs
//                          per capture, begin and end included; median of 7 captures after one
//                          warm-up capture
//   capture_pair_64MiB_us  the same with 64 MiB (graphmem packs allocations below 2 MiB, so small
//                          and large ones take different paths)
//   instantiate_1000_us    cudaGraphInstantiate of the 1,000-pair (1 MiB) graph: one warm-up, then
//                          the median of 7, each exec destroyed before the next (a graph with
//                          memory nodes may have one exec at a time)
// bench_gpu_instantiate instantiates graphs of a more realistic shape.
#include "bench_common.cuh"

static cudaStream_t s;

static cudaGraph_t capture_pairs(int pairs, size_t bytes, double *us) {
    double t0 = now_us();
    begin_capture(s);
    for (int i = 0; i < pairs; i++)
        free_on(s, alloc_on(s, bytes));
    cudaGraph_t g = end_capture(s);
    *us = now_us() - t0;
    return g;
}

// Median µs per pair; the last graph is handed to `keep` when it is not null.
static double capture_pair_us(size_t bytes, cudaGraph_t *keep) {
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

int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    cudaGraph_t pairs1000 = nullptr;
    metric("capture_pair_us", capture_pair_us(MiB, &pairs1000));
    metric("capture_pair_64MiB_us", capture_pair_us(64 * MiB, nullptr));
    metric("instantiate_1000_us", instantiate_us(pairs1000, 7));
    CK(cudaGraphDestroy(pairs1000));
    CK(cudaStreamDestroy(s));
    return 0;
}

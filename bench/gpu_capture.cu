// Capture cost of graph allocations.
//
// Metrics:
//   capture_pair_us        µs per captured cudaMallocAsync+cudaFreeAsync pair (1 MiB), 1,000 pairs
//                          per capture, begin and end included; median of 15 captures after one
//                          warm-up capture
//   capture_pair_64MiB_us  the same with 64 MiB (graphmem packs allocations below 2 MiB, so small
//                          and large ones take different paths)
//   destroy_1000_us        cudaGraphDestroy of a captured 1,000-pair (1 MiB) graph, median of 15
//                          (the pairs reuse one another's bytes: under graphmem one address)
//   capture_pair_fastest_us, capture_pair_64MiB_fastest_us
//                          the fastest of 100 captures of 1,000 pairs (1 MiB; 64 MiB), each
//                          destroyed before the next: on a host whose timings switch between a fast
//                          and a slow phase within a process, natively too (bench/RESULTS.md), the
//                          fastest capture of each side is the reading the two sides share
// bench/run-gpu runs this program natively and under graphmem taking turns at one CPU
// (bench_turn()); bench_gpu_instantiate instantiates the 1,000-pair graph.
#include "bench_common.cuh"

static cudaStream_t s;

static cudaGraph_t captured_pairs(int pairs, size_t bytes) {
    begin_capture(s);
    for (int i = 0; i < pairs; i++)
        free_on(s, alloc_on(s, bytes));
    return end_capture(s);
}

static cudaGraph_t capture_pairs(int pairs, size_t bytes, double *us) {
    if (bench_turn()) // warm again (bench_common.cuh): a capture of 100 pairs, untimed
        CK(cudaGraphDestroy(captured_pairs(100, bytes)));
    double t0 = now_us();
    cudaGraph_t g = captured_pairs(pairs, bytes);
    *us = now_us() - t0;
    return g;
}

// Median µs per pair; the median µs of destroying the graphs to `destroy_us` when that is not null.
static double capture_pair_us(size_t bytes, double *destroy_us) {
    const int pairs = 1000, reps = 15;
    double us = 0;
    CK(cudaGraphDestroy(capture_pairs(pairs, bytes, &us))); // warm-up
    std::vector<double> samples, destroys;
    for (int rep = 0; rep < reps; rep++) {
        cudaGraph_t g = capture_pairs(pairs, bytes, &us);
        samples.push_back(us / pairs);
        double t0 = now_us();
        CK(cudaGraphDestroy(g));
        destroys.push_back(now_us() - t0);
    }
    if (destroy_us)
        *destroy_us = median(destroys);
    return median(samples);
}

// The fastest µs per pair of 100 captures of 1,000 pairs.
static double capture_pair_fastest_us(size_t bytes) {
    const int pairs = 1000, captures = 100;
    double fastest = 0, us = 0;
    for (int i = 0; i < captures; i++) {
        CK(cudaGraphDestroy(capture_pairs(pairs, bytes, &us)));
        fastest = i == 0 || us < fastest ? us : fastest;
    }
    return fastest / pairs;
}

int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    double destroy_us = 0;
    metric("capture_pair_us", capture_pair_us(MiB, &destroy_us));
    metric("destroy_1000_us", destroy_us);
    metric("capture_pair_64MiB_us", capture_pair_us(64 * MiB, nullptr));
    metric("capture_pair_fastest_us", capture_pair_fastest_us(MiB));
    metric("capture_pair_64MiB_fastest_us", capture_pair_fastest_us(64 * MiB));
    CK(cudaStreamDestroy(s));
    return 0;
}

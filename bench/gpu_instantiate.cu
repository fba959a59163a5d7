// Instantiation, planning included under graphmem, of graphs shaped like a captured step: a chain
// with parallel branches (capture_dag in bench_common.cuh: allocations of 4 KiB..64 MiB, 1-3
// branches per fork, a kernel per allocation), captured once, instantiated several times (one
// warm-up, then the median; each exec destroyed before the next, as a graph with memory nodes may
// have one exec at a time).
//
// Metrics: instantiate_dag_{100,1000,10000}_us, capture_dag_pair_us (the capture of the
// 10,000-pair graph per pair, kernels and events included; one capture), and instantiate_1000_us
// (1,000 captured cudaMallocAsync+cudaFreeAsync pairs of 1 MiB and nothing else). Medians of 31,
// 15, 5 (DAG of 100, 1,000, 10,000) and 15 (pairs) instantiations: a repetition's two runs are
// compared with each other (bench/run-gpu), so each run's own median must hold still.
//
// bench/run-gpu runs this program natively and under graphmem taking turns (bench_turn()), the main
// threads on one CPU, and a second CPU for the processes' other threads: graphmem plans a graph on
// a thread of its own while the driver instantiates it.
#include "bench_common.cuh"

static cudaStream_t st[4];
static cudaEvent_t ev[5];

static void dag(int pairs, int reps, bool report_capture) {
    DagShape d = {pairs, 4 << 10, 64 * MiB, 1, 3, (uint64_t)pairs};
    bench_turn();
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

static void pairs_1000() {
    begin_capture(st[0]);
    for (int i = 0; i < 1000; i++)
        free_on(st[0], alloc_on(st[0], MiB));
    cudaGraph_t g = end_capture(st[0]);
    metric("instantiate_1000_us", instantiate_us(g, 15));
    CK(cudaGraphDestroy(g));
}

int main(int, char **argv) {
    bench_init(argv[0]);
    for (cudaStream_t &s : st)
        s = new_stream();
    for (cudaEvent_t &e : ev)
        e = new_event();
    dag(100, 31, false);
    dag(1000, 15, false);
    dag(10000, 5, true);
    pairs_1000();
    for (cudaStream_t s : st)
        CK(cudaStreamDestroy(s));
    for (cudaEvent_t e : ev)
        CK(cudaEventDestroy(e));
    return 0;
}

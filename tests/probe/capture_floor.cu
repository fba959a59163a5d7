// Can a captured allocation made of graphmem's driver calls ever cost what the driver's own costs?
// graphmem turns a captured cudaMallocAsync / cudaFreeAsync into a marker: one capture-info query
// (the stream's graph and frontier), one empty node after the frontier, one capture-dependency
// update (shim/hooks/alloc_hooks.c). This probe times, without graphmem, in one process and
// alternating batches, per alloc+free pair of a 1,000-pair capture (begin and end included, as
// bench/gpu_capture.cu does):
//   native        cudaMallocAsync + cudaFreeAsync (1 MiB)
//   markers       the three driver calls, twice (what graphmem must do at least)
//   markers_known the same without the query (the floor if graphmem knew the frontier itself)
// Median µs per pair over 9 batches of each. Measured on an H100 (driver 580, 2026-11-25), three
// runs pinned to one core: native 2.18 / 2.67 / 2.07, markers 1.46 / 1.65 / 1.27, markers_known
// 1.35 / 1.55 / 1.12: the driver calls a marker needs cost less than the driver's own captured
// allocation, so graphmem's capture overhead is its own work, not a floor. Build and run on the
// GPU machine:
//   nvcc -O2 -o /tmp/capture_floor tests/probe/capture_floor.cu -lcuda && /tmp/capture_floor
#include <cuda.h>

#include "../../bench/bench_common.cuh"

static const int PAIRS = 1000;

static double native_pairs(cudaStream_t s) {
    double t0 = now_us();
    begin_capture(s);
    for (int i = 0; i < PAIRS; i++)
        free_on(s, alloc_on(s, MiB));
    CK(cudaGraphDestroy(end_capture(s)));
    return (now_us() - t0) / PAIRS;
}

static void marker(CUstream s, bool query, CUgraph *graph, CUgraphNode *last) {
    CUstreamCaptureStatus status;
    cuuint64_t id;
    const CUgraphNode *deps = last;
    size_t count = *last ? 1 : 0;
    if (query || !*graph) {
        const CUgraphEdgeData *edges;
        if (cuStreamGetCaptureInfo_v3(s, &status, &id, graph, &deps, &edges, &count) !=
            CUDA_SUCCESS)
            bench_fail(__FILE__, __LINE__, "cuStreamGetCaptureInfo_v3", "failed");
    }
    CUgraphNode node;
    if (cuGraphAddEmptyNode(&node, *graph, deps, count) != CUDA_SUCCESS ||
        cuStreamUpdateCaptureDependencies_v2(s, &node, nullptr, 1,
                                             CU_STREAM_SET_CAPTURE_DEPENDENCIES) != CUDA_SUCCESS)
        bench_fail(__FILE__, __LINE__, "marker", "failed");
    *last = node;
}

static double marker_pairs(cudaStream_t s, bool query) {
    double t0 = now_us();
    begin_capture(s);
    CUgraph graph = nullptr;
    CUgraphNode last = nullptr;
    for (int i = 0; i < PAIRS; i++) {
        marker((CUstream)s, query, &graph, &last);
        marker((CUstream)s, query, &graph, &last);
    }
    CK(cudaGraphDestroy(end_capture(s)));
    return (now_us() - t0) / PAIRS;
}

int main(int, char **argv) {
    bench_init(argv[0]);
    cudaStream_t s = new_stream();
    std::vector<double> native, markers, known;
    for (int rep = 0; rep < 10; rep++) {
        double a = native_pairs(s), b = marker_pairs(s, true), c = marker_pairs(s, false);
        if (rep == 0)
            continue; // warm-up
        native.push_back(a);
        markers.push_back(b);
        known.push_back(c);
    }
    metric("native_pair_us", median(native));
    metric("markers_pair_us", median(markers));
    metric("markers_known_pair_us", median(known));
    return 0;
}

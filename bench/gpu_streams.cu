// Launch after a stream change: host µs per cudaGraphLaunch when one exec is launched alternately
// on two streams. The driver may remap a graph's memory when its stream changes; graphmem follows
// GRAPHMEM_CROSS_STREAM (serialize: wait for the previous run; remap: wait on the host, then map
// on the new stream), so bench/run-gpu runs this program under graphmem once per policy.
//
// Metrics: launch_altstream_nomem_1_us (the same alternation without memory nodes: what stream
// switching costs by itself), launch_altstream_64MiB_us, launch_altstream_1GiB_us.
#include "bench_common.cuh"

static cudaStream_t streams[2];

static cudaGraphExec_t one_kernel(size_t bytes) {
    begin_capture(streams[0]);
    void *p = bytes ? alloc_on(streams[0], bytes) : nullptr;
    touch_on(streams[0], p);
    if (bytes)
        free_on(streams[0], p);
    return instantiate(end_capture(streams[0]));
}

// Median over 15 batches of 20 launches alternating between the streams, after 20 warm-up
// launches. Each batch ends synchronised.
static double alternating_us(cudaGraphExec_t e) {
    for (int i = 0; i < 20; i++)
        launch(e, streams[i % 2]);
    CK(cudaDeviceSynchronize());
    std::vector<double> samples;
    for (int rep = 0; rep < 15; rep++) {
        double t0 = now_us();
        for (int i = 0; i < 20; i++)
            launch(e, streams[i % 2]);
        samples.push_back((now_us() - t0) / 20);
        CK(cudaDeviceSynchronize());
    }
    return median(samples);
}

static void measure(const char *name, size_t bytes) {
    cudaGraphExec_t e = one_kernel(bytes);
    metric(name, alternating_us(e));
    CK(cudaGraphExecDestroy(e));
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceGraphMemTrim(0));
}

int main(int, char **argv) {
    bench_init(argv[0]);
    streams[0] = new_stream();
    streams[1] = new_stream();
    measure("launch_altstream_nomem_1_us", 0);
    measure("launch_altstream_64MiB_us", 64 * MiB);
    measure("launch_altstream_1GiB_us", GiB);
    CK(cudaStreamDestroy(streams[0]));
    CK(cudaStreamDestroy(streams[1]));
    return 0;
}

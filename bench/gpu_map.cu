// Mapping cost: the first launch (launch + sync) and cudaGraphUpload (+ sync) after
// cudaDeviceGraphMemTrim gave the graph's memory back, in ms per GiB of the graph's memory (the
// bytes live together, the same figure natively and under graphmem, so the ratio is a time ratio).
// The driver maps about 0.88 ms/GiB; graphmem's cost grows with the number of handles it maps,
// hence one large allocation and many 4 MiB ones.
//
// Metrics: map_launch_<g>_ms_per_gib and map_upload_<g>_ms_per_gib for g in 1x64MiB, 1x1GiB,
// 256x4MiB (all 256 live together).
#include "bench_common.cuh"

static cudaStream_t s;

// `count` allocations of `bytes`, all live together, each touched.
static cudaGraphExec_t concurrent(int count, size_t bytes) {
    std::vector<void *> live;
    begin_capture(s);
    for (int i = 0; i < count; i++) {
        live.push_back(alloc_on(s, bytes));
        touch_on(s, live.back());
    }
    for (void *p : live)
        free_on(s, p);
    return instantiate(end_capture(s));
}

static void trim() {
    CK(cudaDeviceSynchronize());
    CK(cudaDeviceGraphMemTrim(0));
}

static void measure(const char *name, int count, size_t bytes) {
    const int reps = 10;
    double gib = (double)count * bytes / GiB;
    cudaGraphExec_t e = concurrent(count, bytes);
    launch(e, s); // first mapping, and the launch path warmed up
    CK(cudaStreamSynchronize(s));
    std::vector<double> first_launch, upload;
    for (int rep = 0; rep < reps; rep++) {
        trim();
        double t0 = now_us();
        launch(e, s);
        CK(cudaStreamSynchronize(s));
        first_launch.push_back((now_us() - t0) / 1e3 / gib);
        trim();
        t0 = now_us();
        CK(cudaGraphUpload(e, s));
        CK(cudaStreamSynchronize(s));
        upload.push_back((now_us() - t0) / 1e3 / gib);
    }
    char key[96];
    snprintf(key, sizeof key, "map_launch_%s_ms_per_gib", name);
    metric(key, median(first_launch));
    snprintf(key, sizeof key, "map_upload_%s_ms_per_gib", name);
    metric(key, median(upload));
    CK(cudaGraphExecDestroy(e));
    trim();
}

int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    measure("1x64MiB", 1, 64 * MiB);
    measure("1x1GiB", 1, GiB);
    measure("256x4MiB", 256, 4 * MiB);
    CK(cudaStreamDestroy(s));
    return 0;
}

// Forwarded-call cost outside capture: host ns per uncaptured cuMemAllocAsync+cuMemFreeAsync pair,
// per cuStreamIsCapturing, and per cuEventRecord on one stream plus cuStreamWaitEvent on another
// (which graphmem hooks for event order, core/README.md "Event order"): before any graph with
// memory was launched, and after one was launched on the recording stream (then graphmem keeps
// marks). Entry points come from cudaGetDriverEntryPointByVersion, the way libraries reach the
// driver, so under graphmem they are graphmem's hooks.
//
// Metrics: alloc_free_pair_ns, is_capturing_ns, record_wait_ns, record_wait_served_ns
// (bench/run-gpu reports graphmem - native).
#include <cuda.h>

#include "bench_common.cuh"

// Median ns a call over `batches` batches of `calls` calls each (about 100 µs a batch:
// bench/run-gpu runs this program and its partner in turns of about 1 ms, bench_turn(), and a batch
// is not cut).
template <typename F> static double median_ns_per_call(F body, int calls, int batches) {
    std::vector<double> samples;
    for (int r = 0; r < batches; r++) {
        if (bench_turn()) // warm again (bench_common.cuh)
            for (int i = 0; i < calls; i++)
                body();
        double t0 = now_us();
        for (int i = 0; i < calls; i++)
            body();
        samples.push_back((now_us() - t0) * 1e3 / calls);
    }
    return median(samples);
}

static void *entry_point(const char *symbol, unsigned version) {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CK(cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &q));
    BENCH_REQUIRE(q == cudaDriverEntryPointSuccess && fn != nullptr, symbol);
    return fn;
}

static void check_driver(CUresult rc, const char *what) {
    BENCH_REQUIRE(rc == CUDA_SUCCESS, what);
}

int main(int, char **argv) {
    bench_init(argv[0]);
    typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t, CUstream);
    typedef CUresult (*free_fn)(CUdeviceptr, CUstream);
    typedef CUresult (*capturing_fn)(CUstream, CUstreamCaptureStatus *);
    alloc_fn alloc = (alloc_fn)entry_point("cuMemAllocAsync", 11020);
    free_fn release = (free_fn)entry_point("cuMemFreeAsync", 11020);
    capturing_fn capturing = (capturing_fn)entry_point("cuStreamIsCapturing", 10000);
    typedef CUresult (*record_fn)(CUevent, CUstream);
    typedef CUresult (*wait_fn)(CUstream, CUevent, unsigned);
    record_fn record = (record_fn)entry_point("cuEventRecord", 2000);
    wait_fn wait = (wait_fn)entry_point("cuStreamWaitEvent", 3020);
    cudaStream_t stream = new_stream();
    // Keep the pool's memory between pairs: the figure is the call, not the driver's refill.
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    unsigned long long threshold = ~0ull;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    CUstream s = (CUstream)stream;
    // One checked round first; the timed loops only accumulate failures (a branch, no I/O).
    CUdeviceptr probe;
    check_driver(alloc(&probe, 1 << 20, s), "cuMemAllocAsync");
    check_driver(release(probe, s), "cuMemFreeAsync");
    CUstreamCaptureStatus status;
    check_driver(capturing(s, &status), "cuStreamIsCapturing");
    BENCH_REQUIRE(status == CU_STREAM_CAPTURE_STATUS_NONE, "stream unexpectedly capturing");
    int failures = 0;
    auto pair = [&] {
        CUdeviceptr p = 0;
        failures += alloc(&p, 1 << 20, s) != CUDA_SUCCESS;
        failures += release(p, s) != CUDA_SUCCESS;
    };
    auto query = [&] {
        CUstreamCaptureStatus st;
        failures += capturing(s, &st) != CUDA_SUCCESS;
    };
    for (int i = 0; i < 20000; i++) // warm the pool and the caches
        pair();
    CK(cudaStreamSynchronize(stream));
    double pair_ns = median_ns_per_call(pair, 100, 300);
    CK(cudaStreamSynchronize(stream));
    double query_ns = median_ns_per_call(query, 2000, 300);
    cudaStream_t other = new_stream();
    cudaEvent_t event = new_event();
    auto record_wait = [&] {
        failures += record((CUevent)event, s) != CUDA_SUCCESS;
        failures += wait((CUstream)other, (CUevent)event, 0) != CUDA_SUCCESS;
    };
    double record_wait_ns = median_ns_per_call(record_wait, 100, 300);
    // A graph with memory launched on the recording stream: from now on graphmem marks events.
    begin_capture(other);
    void *p = alloc_on(other, 1 << 20);
    touch_on(other, p);
    free_on(other, p);
    cudaGraphExec_t exec = instantiate(end_capture(other));
    CK(cudaGraphLaunch(exec, stream));
    CK(cudaDeviceSynchronize());
    double record_wait_served_ns = median_ns_per_call(record_wait, 100, 300);
    CK(cudaDeviceSynchronize());
    BENCH_REQUIRE(failures == 0, "a timed driver call failed");
    metric("alloc_free_pair_ns", pair_ns);
    metric("is_capturing_ns", query_ns);
    metric("record_wait_ns", record_wait_ns);
    metric("record_wait_served_ns", record_wait_served_ns);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaEventDestroy(event));
    CK(cudaStreamDestroy(other));
    CK(cudaStreamDestroy(stream));
    return 0;
}

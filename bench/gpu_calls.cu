// Forwarded-call cost outside capture: host ns per uncaptured cuMemAllocAsync+cuMemFreeAsync pair
// and per cuStreamIsCapturing. Entry points come from cudaGetDriverEntryPointByVersion, the way
// libraries reach the driver, so under graphmem they are graphmem's hooks.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

#include <algorithm>
#include <vector>

static double now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

template <typename F> static double median_ns_per_call(F body, int calls, int reps)
{
    std::vector<double> samples;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < calls; i++)
            body();
        samples.push_back((now_ns() - t0) / calls);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

int main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIP no CUDA GPU\n");
        return 77;
    }
    typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t, CUstream);
    typedef CUresult (*free_fn)(CUdeviceptr, CUstream);
    typedef CUresult (*capturing_fn)(CUstream, CUstreamCaptureStatus *);
    alloc_fn alloc = nullptr;
    free_fn release = nullptr;
    capturing_fn capturing = nullptr;
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuMemAllocAsync", (void **)&alloc, 11020, cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuMemFreeAsync", (void **)&release, 11020, cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuStreamIsCapturing", (void **)&capturing, 10000, cudaEnableDefault, &q);
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMemPool_t pool;
    cudaDeviceGetDefaultMemPool(&pool, 0);
    unsigned long long threshold = ~0ull;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    CUstream s = (CUstream)stream;
    auto pair = [&] {
        CUdeviceptr p;
        alloc(&p, 1 << 20, s);
        release(p, s);
    };
    auto query = [&] {
        CUstreamCaptureStatus status;
        capturing(s, &status);
    };
    for (int i = 0; i < 20000; i++) // warm the pool and the caches
        pair();
    cudaStreamSynchronize(stream);
    double pair_ns = median_ns_per_call(pair, 20000, 15);
    cudaStreamSynchronize(stream);
    double query_ns = median_ns_per_call(query, 200000, 15);
    printf("alloc_free_pair_ns %.1f\n", pair_ns);
    printf("is_capturing_ns %.2f\n", query_ns);
    return 0;
}

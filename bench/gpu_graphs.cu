// Graph-memory costs the driver and graphmem are compared on (bench/run-gpu runs this natively and
// under graphmem, alternating): host time per launch of graphs with and without memory nodes,
// capture cost per allocation+free pair, instantiation, and footprint (ReservedMemHigh after a
// launch, reset between workloads by freeing, trimming and resetting the high-water mark).
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

#include <algorithm>
#include <vector>

static double now_us()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

__global__ void touch(char *p, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p && i < n)
        p[i] = 1;
}

static cudaStream_t s;

// A chain of `count` allocations of `bytes`, each touched and freed before the next.
static cudaGraphExec_t chain(int count, size_t bytes, bool memory)
{
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < count; i++) {
        char *p = nullptr;
        if (memory)
            cudaMallocAsync(&p, bytes, s);
        touch<<<1, 32, 0, s>>>(p, 32);
        if (memory)
            cudaFreeAsync(p, s);
    }
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphDestroy(g);
    return e;
}

static double launch_us(cudaGraphExec_t e)
{
    for (int i = 0; i < 50; i++)
        cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    std::vector<double> samples;
    for (int rep = 0; rep < 30; rep++) {
        double t0 = now_us();
        for (int i = 0; i < 20; i++)
            cudaGraphLaunch(e, s);
        samples.push_back((now_us() - t0) / 20);
        cudaStreamSynchronize(s);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

static void reset_graph_memory()
{
    unsigned long long zero = 0;
    cudaDeviceSynchronize();
    cudaDeviceGraphMemTrim(0);
    cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero);
    cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero);
}

static unsigned long long reserved_high_mib(cudaGraphExec_t e)
{
    reset_graph_memory();
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    unsigned long long v = 0;
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &v);
    cudaGraphExecDestroy(e);
    return v >> 20;
}

int main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
        return 77;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);

    cudaGraphExec_t plain = chain(1, 0, false);
    printf("launch_nomem_1_us %.3f\n", launch_us(plain));
    cudaGraphExecDestroy(plain);
    cudaGraphExec_t m64 = chain(1, 64u << 20, true);
    printf("launch_mem_64MiB_us %.3f\n", launch_us(m64));
    cudaGraphExecDestroy(m64);
    cudaGraphExec_t m1g = chain(1, 1u << 30, true);
    printf("launch_mem_1GiB_us %.3f\n", launch_us(m1g));
    cudaGraphExecDestroy(m1g);
    cudaGraphExec_t plain100 = chain(100, 0, false);
    printf("launch_nomem_100_us %.3f\n", launch_us(plain100));
    cudaGraphExecDestroy(plain100);
    cudaGraphExec_t m100 = chain(100, 4u << 20, true);
    printf("launch_mem_100x4MiB_us %.3f\n", launch_us(m100));
    cudaGraphExecDestroy(m100);
    cudaDeviceGraphMemTrim(0);

    // Capture cost per captured allocation+free pair (1000 pairs, no kernels).
    {
        cudaGraph_t g;
        double t0 = now_us();
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        for (int i = 0; i < 1000; i++) {
            void *p;
            cudaMallocAsync(&p, 1 << 20, s);
            cudaFreeAsync(p, s);
        }
        cudaStreamEndCapture(s, &g);
        printf("capture_pair_us %.3f\n", (now_us() - t0) / 1000);
        cudaGraphExec_t e;
        double t1 = now_us();
        cudaGraphInstantiate(&e, g, 0);
        printf("instantiate_1000_us %.1f\n", now_us() - t1);
        cudaGraphExecDestroy(e);
        cudaGraphDestroy(g);
    }

    // Footprint: a chain with two live allocations at a time (A, B live; free A; C; ...).
    printf("footprint_chain_2x128MiB_mib %llu\n", reserved_high_mib(chain(4, 128u << 20, true)));
    printf("footprint_single_1MiB_mib %llu\n", reserved_high_mib(chain(1, 1u << 20, true)));
    printf("footprint_100x1MiB_sequential_mib %llu\n", reserved_high_mib(chain(100, 1u << 20, true)));
    return 0;
}

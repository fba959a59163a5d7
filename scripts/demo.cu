// The bundled demo of `scripts/graphmem-run` with no program: a few captured graphs with graph
// allocations (a chain that can reuse memory, a fork/join over two streams, many small
// PyTorch-like temporaries), each launched repeatedly on one stream. graphmem's report (per graph:
// lower bound, planned and mapped footprint, launches, remaps) is printed at exit.
#include <cuda_runtime.h>
#include <stdio.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "demo: %s failed: %s\n", #call, cudaGetErrorName(e_));                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void fill(float *p, size_t n, float v) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = v;
}

static int capture_chain(cudaStream_t s, cudaGraphExec_t *exec) {
    cudaGraph_t g;
    const size_t n = (256u << 20) / sizeof(float);
    float *a, *b;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMallocAsync(&a, n * sizeof(float), s));
    fill<<<256, 256, 0, s>>>(a, n, 1.f);
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaMallocAsync(&b, n * sizeof(float), s));
    fill<<<256, 256, 0, s>>>(b, n, 2.f);
    CHECK(cudaFreeAsync(b, s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(exec, g, 0));
    return cudaGraphDestroy(g) != cudaSuccess;
}

static int capture_fork_join(cudaStream_t s, cudaStream_t side, cudaGraphExec_t *exec) {
    cudaGraph_t g;
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    const size_t n = (128u << 20) / sizeof(float);
    float *x, *y;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    CHECK(cudaMallocAsync(&x, n * sizeof(float), s));
    CHECK(cudaMallocAsync(&y, n * sizeof(float), side));
    fill<<<256, 256, 0, s>>>(x, n, 3.f);
    fill<<<256, 256, 0, side>>>(y, n, 4.f);
    CHECK(cudaFreeAsync(y, side));
    CHECK(cudaEventRecord(join, side));
    CHECK(cudaStreamWaitEvent(s, join, 0));
    CHECK(cudaFreeAsync(x, s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(exec, g, 0));
    return cudaGraphDestroy(g) != cudaSuccess;
}

static int capture_small(cudaStream_t s, cudaGraphExec_t *exec) {
    cudaGraph_t g;
    float *live[8] = {0};
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 200; i++) {
        size_t n = (size_t)(4096 + (i * 7919) % (1 << 20)) / sizeof(float);
        float *t;
        CHECK(cudaMallocAsync(&t, n * sizeof(float), s));
        fill<<<64, 256, 0, s>>>(t, n, (float)i);
        if (live[i % 8])
            CHECK(cudaFreeAsync(live[i % 8], s));
        live[i % 8] = t;
    }
    for (int i = 0; i < 8; i++)
        CHECK(cudaFreeAsync(live[i], s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(exec, g, 0));
    return cudaGraphDestroy(g) != cudaSuccess;
}

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("demo: no CUDA GPU here\n");
        return 0;
    }
    cudaStream_t s, side;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cudaGraphExec_t execs[3];
    if (capture_chain(s, &execs[0]) || capture_fork_join(s, side, &execs[1]) ||
        capture_small(s, &execs[2]))
        return 1;
    for (int round = 0; round < 100; round++)
        for (int k = 0; k < 3; k++)
            CHECK(cudaGraphLaunch(execs[k], s));
    CHECK(cudaStreamSynchronize(s));
    unsigned long long reserved = 0, used = 0;
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &reserved);
    cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used);
    printf("demo: 3 graphs x 100 launches on one stream: graph memory reserved high %llu MiB, used "
           "high %llu MiB\n",
           reserved >> 20, used >> 20);
    for (int k = 0; k < 3; k++)
        cudaGraphExecDestroy(execs[k]);
    return 0;
}

// What a launch fence costs the host, per cudaGraphLaunch of a one-kernel graph (median of 30
// batches of 20 launches, as bench/gpu_launch.cu measures): nothing after the launch, an event
// record (one event, or a ring of 64), a stream memory write of a counter to pinned host memory, a
// second kernel node in the graph, and a stream memory write into device memory; and the same
// graph between two empty nodes (the shape graphmem's markers give a served graph). The launch
// protocol records one fence per served launch; this says which kind is cheapest.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int r_ = (int)(x);                                                                         \
        if (r_) {                                                                                  \
            printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_);                                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void touch(int *p) {
    if (p)
        p[threadIdx.x] += 1;
}

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static cudaStream_t s;
static cudaEvent_t ring[64];
static unsigned long long *host_counter, *dev_counter;
static unsigned long long seq;

enum kind { NONE, EVENT_ONE, EVENT_RING, WRITE_HOST, WRITE_HOST_NOBARRIER, WRITE_DEVICE };
static const char *names[] = {
    "none",          "event_one", "event_ring64", "write64_host", "write64_host_nobarrier",
    "write64_device"};

static int after(kind k, int i) {
    switch (k) {
    case NONE:
        return 0;
    case EVENT_ONE:
        return cudaEventRecord(ring[0], s);
    case EVENT_RING:
        return cudaEventRecord(ring[i % 64], s);
    case WRITE_HOST:
        return cuStreamWriteValue64((CUstream)s, (CUdeviceptr)host_counter, ++seq, 0);
    case WRITE_HOST_NOBARRIER:
        return cuStreamWriteValue64((CUstream)s, (CUdeviceptr)host_counter, ++seq,
                                    CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
    case WRITE_DEVICE:
        return cuStreamWriteValue64((CUstream)s, (CUdeviceptr)dev_counter, ++seq, 0);
    }
    return 0;
}

static double measure(cudaGraphExec_t e, kind k) {
    for (int i = 0; i < 50; i++)
        if (cudaGraphLaunch(e, s) || after(k, i))
            return -1;
    cudaStreamSynchronize(s);
    std::vector<double> samples;
    for (int rep = 0; rep < 30; rep++) {
        double t0 = now_us();
        for (int i = 0; i < 20; i++)
            if (cudaGraphLaunch(e, s) || after(k, i))
                return -1;
        samples.push_back((now_us() - t0) / 20);
        cudaStreamSynchronize(s);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

static cudaGraphExec_t chain(int kernels, int *buf) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < kernels; i++)
        touch<<<1, 32, 0, s>>>(buf);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphDestroy(g);
    return e;
}

// empty -> kernel -> empty: the shape of a served graph of one allocation (graphmem's markers
// are empty nodes).
static cudaGraphExec_t marked(int *buf) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t a, k, f;
    cudaGraphAddEmptyNode(&a, g, nullptr, 0);
    cudaKernelNodeParams p = {};
    void *args[] = {&buf};
    p.func = (void *)touch;
    p.gridDim = dim3(1);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    cudaGraphAddKernelNode(&k, g, &a, 1, &p);
    cudaGraphAddEmptyNode(&f, g, &k, 1);
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphDestroy(g);
    return e;
}

int main() {
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto &ev : ring)
        CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaHostAlloc(&host_counter, 64, cudaHostAllocMapped));
    CK(cudaMalloc(&dev_counter, 64));
    int *buf;
    CK(cudaMalloc(&buf, 4096));
    cudaGraphExec_t one = chain(1, buf), two = chain(2, buf), mark = marked(buf);
    for (int round = 0; round < 3; round++) {
        for (int k = NONE; k <= WRITE_DEVICE; k++)
            printf("fence_cost round %d %-24s %.3f us\n", round, names[k], measure(one, (kind)k));
        printf("fence_cost round %d %-24s %.3f us\n", round, "second_kernel_node",
               measure(two, NONE));
        printf("fence_cost round %d %-24s %.3f us\n", round, "marked_none", measure(mark, NONE));
        printf("fence_cost round %d %-24s %.3f us\n", round, "marked_event_one",
               measure(mark, EVENT_ONE));
        printf("fence_cost round %d %-24s %.3f us\n", round, "marked_event_ring64",
               measure(mark, EVENT_RING));
    }
    CK(cudaStreamSynchronize(s));
    printf("fence_cost host counter %llu of %llu\n", *(volatile unsigned long long *)host_counter,
           seq);
    return 0;
}

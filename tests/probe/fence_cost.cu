// What a launch fence costs the host, per cudaGraphLaunch of a one-kernel graph (median of 30
// batches of 20 launches, as bench/gpu_launch.cu measures): nothing after the launch, an event
// record (one event, or a ring of 64), a stream memory write of a counter to pinned host memory, a
// second kernel node in the graph, and a stream memory write into device memory; and the same
// graph between two empty nodes (the shape graphmem's markers give a served graph). The launch
// protocol records one fence per served launch; this says which kind is cheapest. The "counter"
// rows add to the marked graph a last node, a one-thread kernel loaded from PTX (as a library
// without nvcc-compiled code would) that adds one to a counter in mapped host memory: a fence the
// launch itself writes. "throughput" rows time 2000 launches and one synchronize, per launch: the
// GPU time a counter node adds where launches outrun the GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>

#include "launch_timing.cuh"

static cudaStream_t s;
static CUkernel count_kernel;
static unsigned *host_count;

static CUkernel count_relaxed_kernel;

static const char count_ptx[] = ".version 7.0\n"
                                ".target sm_70\n"
                                ".address_size 64\n"
                                ".visible .entry gm_count(.param .u64 p)\n"
                                "{\n"
                                "  .reg .b64 %rd<2>;\n"
                                "  ld.param.u64 %rd1, [p];\n"
                                "  red.release.sys.global.add.u32 [%rd1], 1;\n"
                                "  ret;\n"
                                "}\n"
                                ".visible .entry gm_count_relaxed(.param .u64 p)\n"
                                "{\n"
                                "  .reg .b64 %rd<2>;\n"
                                "  ld.param.u64 %rd1, [p];\n"
                                "  red.relaxed.sys.global.add.u32 [%rd1], 1;\n"
                                "  ret;\n"
                                "}\n";
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
    return launch_us(e, s, [&](int i) { return after(k, i); });
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
// are empty nodes); with a counter kernel (not NULL), one more node after the last that runs it.
static cudaGraphExec_t marked(int *buf, CUkernel counter = nullptr) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t a, k, f, c;
    cudaGraphAddEmptyNode(&a, g, nullptr, 0);
    cudaKernelNodeParams p = {};
    void *args[] = {&buf};
    p.func = (void *)touch;
    p.gridDim = dim3(1);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    cudaGraphAddKernelNode(&k, g, &a, 1, &p);
    cudaGraphAddEmptyNode(&f, g, &k, 1);
    if (counter) {
        CUDA_KERNEL_NODE_PARAMS cp = {};
        void *cargs[] = {&host_count};
        cp.kern = counter;
        cp.gridDimX = cp.gridDimY = cp.gridDimZ = 1;
        cp.blockDimX = cp.blockDimY = cp.blockDimZ = 1;
        cp.kernelParams = cargs;
        int r = cuGraphAddKernelNode(&c, (CUgraph)g, &f, 1, &cp);
        if (r)
            printf("fence_cost counter node: %d\n", r);
    }
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphDestroy(g);
    return e;
}

static double throughput(cudaGraphExec_t e, kind k) {
    return throughput_us(e, s, [&](int i) { return after(k, i); });
}

int main() {
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (auto &ev : ring)
        CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaHostAlloc(&host_counter, 64, cudaHostAllocMapped));
    CK(cudaMalloc(&dev_counter, 64));
    int *buf;
    CK(cudaMalloc(&buf, 4096));
    CUlibrary lib;
    CK(cuLibraryLoadData(&lib, count_ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CK(cuLibraryGetKernel(&count_kernel, lib, "gm_count"));
    CK(cuLibraryGetKernel(&count_relaxed_kernel, lib, "gm_count_relaxed"));
    CK(cudaHostAlloc(&host_count, 64, cudaHostAllocMapped));
    cudaGraphExec_t one = chain(1, buf), two = chain(2, buf), mark = marked(buf);
    cudaGraphExec_t counted = marked(buf, count_kernel);
    cudaGraphExec_t relaxed = marked(buf, count_relaxed_kernel);
    // The rows after the fence kinds: a name, the graph, what follows each launch, and whether
    // launches outrun the GPU (throughput) or are timed in short batches (measure).
    struct Row {
        const char *name;
        cudaGraphExec_t e;
        kind k;
        bool throughput;
    } rows[] = {{"second_kernel_node", two, NONE, false},
                {"marked_none", mark, NONE, false},
                {"marked_event_one", mark, EVENT_ONE, false},
                {"marked_event_ring64", mark, EVENT_RING, false},
                {"marked_counter", counted, NONE, false},
                {"throughput_marked_none", mark, NONE, true},
                {"throughput_marked_event_one", mark, EVENT_ONE, true},
                {"throughput_marked_counter", counted, NONE, true},
                {"throughput_marked_counter_relaxed", relaxed, NONE, true},
                {"throughput_one", one, NONE, true},
                {"throughput_second_kernel_node", two, NONE, true}};
    for (int round = 0; round < 3; round++) {
        for (int k = NONE; k <= WRITE_DEVICE; k++)
            printf("fence_cost round %d %-24s %.3f us\n", round, names[k], measure(one, (kind)k));
        for (const Row &r : rows)
            printf("fence_cost round %d %-24s %.3f us\n", round, r.name,
                   r.throughput ? throughput(r.e, r.k) : measure(r.e, r.k));
    }
    CK(cudaStreamSynchronize(s));
    printf("fence_cost host counter %llu of %llu\n", *(volatile unsigned long long *)host_counter,
           seq);
    printf("fence_cost counter kernel ran %u times\n", *(volatile unsigned *)host_count);
    return 0;
}

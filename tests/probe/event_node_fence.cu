// An event record node as a launch's fence: instead of a cuEventRecord after every served launch
// (host +0.13-0.36 us, fence_cost.cu), the exec itself records its event as its last node. This
// says (a) what such a node costs per launch, on the host and on the GPU, against no fence and an
// event record after the launch, and (b) whether it is a fence: cuEventQuery right after the launch
// reports the launch's work as not finished, cuStreamWaitEvent on another stream waits for it,
// after two launches the event stands for the second, an upload leaves it as it was, and an exec
// update from a graph with the same node (another event) keeps the exec's own.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>
#include <vector>

#include "launch_timing.cuh"

// Spins for `ns` nanoseconds of GPU time, then writes `value` to mapped host memory.
__global__ void spin_then_mark(volatile unsigned *flag, unsigned value, unsigned long long ns) {
    unsigned long long t0 = clock64(), limit = ns * 2; // clocks above 1 GHz: at least ns
    while (clock64() - t0 < limit) {
    }
    __threadfence_system();
    *flag = value;
}

__global__ void copy_flag(volatile unsigned *from, volatile unsigned *to) {
    *to = *from;
}

static cudaStream_t s, t;
static cudaEvent_t after_event;

static double measure(cudaGraphExec_t e, bool record_after) {
    return launch_us(e, s, [&](int) { return record_after && cudaEventRecord(after_event, s); });
}

static double throughput(cudaGraphExec_t e, bool record_after) {
    return throughput_us(e, s,
                         [&](int) { return record_after && cudaEventRecord(after_event, s); });
}

// empty -> kernel -> empty (the shape of a served graph of one allocation), and with `event` an
// event record node after the last.
static cudaGraph_t marked_graph(int *buf, cudaEvent_t event, void *kernel = (void *)touch,
                                void **args = nullptr) {
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t a, k, f, r;
    cudaGraphAddEmptyNode(&a, g, nullptr, 0);
    cudaKernelNodeParams p = {};
    void *touch_args[] = {&buf};
    p.func = kernel;
    p.gridDim = dim3(1);
    p.blockDim = dim3(args ? 1 : 32);
    p.kernelParams = args ? args : touch_args;
    cudaGraphAddKernelNode(&k, g, &a, 1, &p);
    cudaGraphAddEmptyNode(&f, g, &k, 1);
    if (event) {
        int rr = cudaGraphAddEventRecordNode(&r, g, &f, 1, event);
        if (rr)
            printf("event_node_fence: add record node -> %d\n", rr);
    }
    return g;
}

static cudaGraphExec_t instantiate(cudaGraph_t g) {
    cudaGraphExec_t e = nullptr;
    int r = cudaGraphInstantiate(&e, g, 0);
    if (r)
        printf("event_node_fence: instantiate -> %d\n", r);
    return e;
}

static int semantics() {
    unsigned *flag, *copy;
    CK(cudaHostAlloc(&flag, 2 * sizeof *flag, cudaHostAllocMapped));
    copy = flag + 1;
    cudaEvent_t fence, other;
    CK(cudaEventCreateWithFlags(&fence, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&other, cudaEventDisableTiming));
    unsigned value = 1;
    unsigned long long ns = 3000000; // 3 ms
    void *args[] = {&flag, &value, &ns};
    cudaGraph_t g = marked_graph(nullptr, fence, (void *)spin_then_mark, args);
    cudaGraphExec_t e = instantiate(g);

    // Never launched: an event never recorded reads as done.
    printf("event_node_fence semantics fresh query %d\n", (int)cudaEventQuery(fence));
    CK(cudaGraphUpload(e, s));
    CK(cudaStreamSynchronize(s));
    printf("event_node_fence semantics after upload query %d\n", (int)cudaEventQuery(fence));

    // (1) right after the launch: not ready while the kernel spins; ready with the flag set after.
    *flag = 0;
    CK(cudaGraphLaunch(e, s));
    int q = cudaEventQuery(fence);
    CK(cudaEventSynchronize(fence));
    printf("event_node_fence semantics launch query %d, flag after event sync %u (want 600, 1)\n",
           q, *flag);

    // (2) another stream waits for the event: its kernel copies the flag set at the graph's end.
    *flag = 0;
    *copy = 7;
    CK(cudaGraphLaunch(e, s));
    CK(cudaStreamWaitEvent(t, fence, 0));
    copy_flag<<<1, 1, 0, t>>>(flag, copy);
    CK(cudaStreamSynchronize(t));
    printf("event_node_fence semantics stream wait copied %u (want 1)\n", *copy);
    CK(cudaStreamSynchronize(s));

    // (3) two launches: after the first has finished the event stands for the second.
    *flag = 0;
    CK(cudaGraphLaunch(e, s));
    CK(cudaGraphLaunch(e, s));
    usleep(4500); // the first is done (3 ms), the second is not (6 ms)
    q = cudaEventQuery(fence);
    CK(cudaStreamSynchronize(s));
    printf("event_node_fence semantics two launches query after the first %d (want 600)\n", q);

    // (4) the same exec on another stream: the event follows it there.
    CK(cudaGraphLaunch(e, t));
    q = cudaEventQuery(fence);
    CK(cudaStreamSynchronize(t));
    printf("event_node_fence semantics launch on another stream query %d (want 600)\n", q);

    // (5) an upload after a launch leaves the event standing for the launch.
    CK(cudaGraphLaunch(e, s));
    CK(cudaGraphUpload(e, t));
    CK(cudaStreamSynchronize(t));
    q = cudaEventQuery(fence);
    CK(cudaStreamSynchronize(s));
    printf("event_node_fence semantics upload on another stream after a launch query %d (want "
           "600)\n",
           q);

    // (6) update from a graph of the same shape whose node records another event.
    cudaGraph_t g2 = marked_graph(nullptr, other, (void *)spin_then_mark, args);
    cudaGraphExecUpdateResultInfo info = {};
    int u = cudaGraphExecUpdate(e, g2, &info);
    CK(cudaGraphLaunch(e, s));
    int qf = cudaEventQuery(fence), qo = cudaEventQuery(other);
    CK(cudaStreamSynchronize(s));
    printf("event_node_fence semantics update %d (result %d): query own %d, other %d\n", u,
           (int)info.result, qf, qo);
    // (7) update from a graph without the node: refused as a topology change?
    cudaGraph_t g3 = marked_graph(nullptr, nullptr, (void *)spin_then_mark, args);
    u = cudaGraphExecUpdate(e, g3, &info);
    printf("event_node_fence semantics update without the node %d (result %d)\n", u,
           (int)info.result);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaGraphDestroy(g2);
    cudaGraphDestroy(g3);
    cudaEventDestroy(fence);
    cudaEventDestroy(other);
    cudaFreeHost(flag);
    return 0;
}

int main() {
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&after_event, cudaEventDisableTiming));
    if (semantics())
        return 1;
    int *buf;
    CK(cudaMalloc(&buf, 32 * sizeof(int)));
    cudaEvent_t node_event;
    CK(cudaEventCreateWithFlags(&node_event, cudaEventDisableTiming));
    cudaGraph_t plain = marked_graph(buf, nullptr), with_node = marked_graph(buf, node_event);
    cudaGraphExec_t e_plain = instantiate(plain), e_node = instantiate(with_node);
    for (int round = 0; round < 3; round++) {
        printf("event_node_fence round %d host none        %.3f us\n", round,
               measure(e_plain, false));
        printf("event_node_fence round %d host event_after %.3f us\n", round,
               measure(e_plain, true));
        printf("event_node_fence round %d host record_node %.3f us\n", round,
               measure(e_node, false));
        printf("event_node_fence round %d gpu  none        %.3f us\n", round,
               throughput(e_plain, false));
        printf("event_node_fence round %d gpu  event_after %.3f us\n", round,
               throughput(e_plain, true));
        printf("event_node_fence round %d gpu  record_node %.3f us\n", round,
               throughput(e_node, false));
    }
    return 0;
}

// What does the driver charge a launch for empty nodes? graphmem's exec of a graph with memory
// nodes is the graph with each memory node replaced by an empty node (its markers), so its launch
// of "alloc, kernel, free" is the driver's launch of "empty, kernel, empty". Natively, host us per
// cudaGraphLaunch (launch_timing.cuh: median of 30 batches of 20) of a one-kernel graph, the same
// kernel between two empty nodes, and between two chains of two empty nodes, in five alternating
// rounds in one process. Measured on an H200 (driver 580, 2026-11-27), the three side by side:
// 1.401 / 1.408 / 1.379, 1.343 / 1.338 / 1.378, 1.363 / 1.376 / 1.514, 1.377 / 1.858 / 1.843,
// 1.784 / 1.877 / 1.353 us (the last two rounds in the machine's slow phases): the driver charges
// nothing measurable for the markers, so what a served launch costs beyond the graph without
// memory is graphmem's own path.
#include "launch_timing.cuh"

static int make(int empties_each_side, cudaGraphExec_t *exec) {
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t last = nullptr, node;
    for (int i = 0; i < empties_each_side; i++) {
        CK(cudaGraphAddEmptyNode(&node, g, last ? &last : nullptr, last ? 1 : 0));
        last = node;
    }
    cudaKernelNodeParams p = {};
    int *arg = nullptr;
    void *args[] = {&arg};
    p.func = (void *)touch;
    p.gridDim = dim3(1);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    CK(cudaGraphAddKernelNode(&node, g, last ? &last : nullptr, last ? 1 : 0, &p));
    last = node;
    for (int i = 0; i < empties_each_side; i++) {
        CK(cudaGraphAddEmptyNode(&node, g, &last, 1));
        last = node;
    }
    CK(cudaGraphInstantiate(exec, g, 0));
    return 0;
}

int main() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraphExec_t e[3];
    for (int k = 0; k < 3; k++)
        if (make(k, &e[k]))
            return 1;
    auto none = [](int) { return 0; };
    for (int round = 0; round < 5; round++) {
        printf("round %d:", round);
        for (int k = 0; k < 3; k++)
            printf(" %d+kernel+%d %.3f us", k, k, launch_us(e[k], s, none));
        printf("\n");
    }
    return 0;
}

// Does the driver instantiate for device launch a graph holding an empty node (graphmem's marker)?
// A kernel node alone, then the same with an empty node after it, each instantiated with
// cudaGraphInstantiateFlagDeviceLaunch. Measured on an H100 (driver 580, 2026-11-25), built with
// and without -rdc: the kernel alone instantiates and uploads; with the empty node the driver
// refuses, cudaErrorInvalidValue with result 3 (NODE_OPERATION_NOT_SUPPORTED) naming the empty
// node. So lifting the device-launch restriction needs the exec made from a copy of the graph
// without markers (and a map from the copy's nodes back for the exec-node calls).
// Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/dlp tests/probe/device_launch_markers.cu && /tmp/dlp
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k_set(int *p, int v) {
    *p = v;
}
__global__ void k_launcher(cudaGraphExec_t e, int *done) {
    cudaError_t rc = cudaGraphLaunch(e, cudaStreamGraphFireAndForget);
    *done = rc == cudaSuccess ? 1 : -1;
}
int main() {
    int *p;
    cudaMalloc(&p, 16);
    cudaMemset(p, 0, 16);
    for (int with_empty = 0; with_empty < 2; with_empty++) {
        cudaGraph_t g;
        cudaGraphCreate(&g, 0);
        cudaGraphNode_t k, em;
        cudaKernelNodeParams kp = {};
        int v = 7 + with_empty;
        void *args[] = {&p, &v};
        kp.func = (void *)k_set;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(1);
        kp.kernelParams = args;
        cudaGraphAddKernelNode(&k, g, nullptr, 0, &kp);
        if (with_empty)
            cudaGraphAddEmptyNode(&em, g, &k, 1);
        cudaGraphExec_t e = nullptr;
        cudaGraphInstantiateParams ip = {};
        ip.flags = cudaGraphInstantiateFlagDeviceLaunch;
        cudaError_t rc = cudaGraphInstantiateWithParams(&e, g, &ip);
        printf("with_empty=%d instantiate %s result %d errnode %s\n", with_empty,
               cudaGetErrorName(rc), (int)ip.result_out,
               ip.errNode_out == em && with_empty ? "empty" : (ip.errNode_out ? "other" : "none"));
        if (rc == cudaSuccess) {
            cudaStream_t s;
            cudaStreamCreate(&s);
            printf("  upload %s\n", cudaGetErrorName(cudaGraphUpload(e, s)));
            k_launcher<<<1, 1, 0, s>>>(e, p + 1);
            printf("  sync %s\n", cudaGetErrorName(cudaStreamSynchronize(s)));
            int h[2];
            cudaMemcpy(h, p, 8, cudaMemcpyDeviceToHost);
            printf("  value %d launched %d\n", h[0], h[1]);
            cudaGraphExecDestroy(e);
        }
        cudaGraphDestroy(g);
        cudaGetLastError();
    }
    return 0;
}

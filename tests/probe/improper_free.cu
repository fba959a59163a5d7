// §A2.5: a free node not reachable from its alloc node, made with the explicit node API (free
// after an empty root the alloc also follows) and by stream capture (the free on a stream forked
// before the allocation). Prints whether the driver takes the free, whether an allocation ordered
// after that free gets the freed allocation's address, and whether the graph instantiates.
// Measured on driver 580 (H200, 2026-11-27): every call succeeds and the later allocation gets the
// same address in both forms. graphmem takes the calls too but gives the later allocation another
// address: a free that does not follow its alloc frees no bytes for reuse (SEMANTICS §A2.5).
#include <cstdio>
#include <cuda_runtime.h>
int main() {
    cudaFree(0);
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaMemAllocNodeParams p = {};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = 1 << 20;
    cudaGraphNode_t a = nullptr, root = nullptr, f = nullptr, b = nullptr;
    cudaGraphAddEmptyNode(&root, g, nullptr, 0);
    cudaError_t r = cudaGraphAddMemAllocNode(&a, g, &root, 1, &p);
    printf("explicit alloc %s\n", cudaGetErrorName(r));
    r = cudaGraphAddMemFreeNode(&f, g, &root, 1, p.dptr);
    printf("explicit free not after alloc: %s\n", cudaGetErrorName(r));
    cudaMemAllocNodeParams q = p;
    q.dptr = nullptr;
    if (f) {
        r = cudaGraphAddMemAllocNode(&b, g, &f, 1, &q);
        printf("alloc after it: %s, same address %d\n", cudaGetErrorName(r), q.dptr == p.dptr);
    }
    cudaGraphExec_t e = nullptr;
    r = cudaGraphInstantiate(&e, g, 0);
    printf("instantiate %s\n", cudaGetErrorName(r));
    (void)cudaGetLastError();
    // stream capture: alloc on s1, free on s2 forked before the alloc
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t fork, join;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    cudaEventRecord(fork, s1);
    cudaStreamWaitEvent(s2, fork, 0);
    void *x = nullptr;
    r = cudaMallocAsync(&x, 1 << 20, s1);
    printf("capture alloc %s\n", cudaGetErrorName(r));
    r = cudaFreeAsync(x, s2);
    printf("capture free on the forked stream: %s\n", cudaGetErrorName(r));
    void *y = nullptr;
    r = cudaMallocAsync(&y, 1 << 20, s2);
    printf("capture alloc after it: %s same %d\n", cudaGetErrorName(r), x == y);
    cudaFreeAsync(y, s2);
    cudaEventRecord(join, s2);
    cudaStreamWaitEvent(s1, join, 0);
    cudaGraph_t g2 = nullptr;
    r = cudaStreamEndCapture(s1, &g2);
    printf("end capture %s\n", cudaGetErrorName(r));
    if (g2) {
        r = cudaGraphInstantiate(&e, g2, 0);
        printf("instantiate %s\n", cudaGetErrorName(r));
    }
    return 0;
}

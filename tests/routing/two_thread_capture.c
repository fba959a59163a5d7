/* Reproducer over the mock driver of a known defect (README, Known limitations: two threads
 * enqueueing into one capturing stream), not registered with CTest while it fails. The mock holds
 * one thread's next dependency update (gm_mock_hold_next_update). Thread B's cuMemAllocAsync is
 * held after its capture query and node, before graphmem's frontier SET; thread A meanwhile
 * allocates w, runs a host function on it (k_w), frees it and allocates z (z takes w's bytes), then
 * B's SET goes through; A's next host function (k_z, on z) must still come after k_w. Exit 1 when z
 * shares w's bytes and k_w is not an ancestor of k_z (bytes shared between live allocations).
 * Build: gcc -O1 -I/usr/local/cuda/include -o /tmp/ttm tests/routing/two_thread_capture.c \
 *          -Lbuild/tests/routing/mock -l:libcuda.so.1 -lpthread
 * Run:   LD_LIBRARY_PATH=build/tests/routing/mock LD_PRELOAD=build/shim/libgraphmem.so /tmp/ttm */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void gm_mock_hold_next_update(void);
void gm_mock_wait_held(void);
void gm_mock_release_update(void);

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)r_);                 \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static CUstream s;
static CUcontext ctx;
static CUdeviceptr b;

static void kernel(void *arg) {
    (void)arg;
}

static void *thread_b(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    gm_mock_hold_next_update();
    CK(cuMemAllocAsync(&b, 4096, s));
    return NULL;
}

/* The node a captured operation just made: the stream's one dependency now. */
static CUgraphNode last_node(void) {
    CUstreamCaptureStatus status;
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    CK(cuStreamGetCaptureInfo(s, &status, NULL, NULL, &deps, NULL, &n));
    return n == 1 ? deps[0] : NULL;
}

static int reaches(CUgraphNode from, CUgraphNode to, int depth) {
    if (from == to)
        return 1;
    if (depth > 64)
        return 0;
    CUgraphNode deps[16];
    size_t n = 16;
    CK(cuGraphNodeGetDependencies(to, deps, NULL, &n));
    for (size_t i = 0; i < n; i++)
        if (reaches(from, deps[i], depth + 1))
            return 1;
    return 0;
}

int main(void) {
    CK(cuInit(0));
    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, d));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    pthread_t t;
    pthread_create(&t, NULL, thread_b, NULL);
    gm_mock_wait_held();
    CUdeviceptr w = 0, z = 0;
    CK(cuMemAllocAsync(&w, 4096, s));
    CK(cuLaunchHostFunc(s, kernel, NULL));
    CUgraphNode k_w = last_node();
    CK(cuMemFreeAsync(w, s));
    CK(cuMemAllocAsync(&z, 4096, s));
    gm_mock_release_update();
    pthread_join(t, NULL);
    CK(cuLaunchHostFunc(s, kernel, NULL));
    CUgraphNode k_z = last_node();
    CK(cuMemFreeAsync(z, s));
    CK(cuMemFreeAsync(b, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    int shared = z == w, ordered = reaches(k_w, k_z, 0);
    printf("z %s w's bytes; the kernel on w %s the kernel on z\n",
           shared ? "takes" : "does not take", ordered ? "precedes" : "does NOT precede");
    CK(cuGraphDestroy(g));
    return shared && !ordered ? 1 : 0;
}

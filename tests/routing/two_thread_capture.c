/* Two threads enqueueing into one capturing stream (shim/README.md, "One capturing stream, several
 * threads"), over the mock driver, which holds one thread's next dependency update
 * (gm_mock_hold_next_update). Thread B's cuMemAllocAsync is held after its capture query and
 * marker node, before graphmem's frontier SET. Thread A meanwhile runs a host function (k0),
 * allocates w, runs one on it (k_w), frees it and allocates z (z may take w's bytes); B is let go
 * once A is done, or after a second if A waits for it. A's next host function (k_z, on z) must
 * come after k_w, and k_w after k0: neither may drop out of the stream's order behind B's marker.
 * Exit 1 when one does (with z in w's bytes, that is two live allocations sharing bytes). */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
static CUdeviceptr b_ptr;

static void kernel(void *arg) {
    (void)arg;
}

static void *thread_b(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    gm_mock_hold_next_update();
    CK(cuMemAllocAsync(&b_ptr, 4096, s));
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

static CUdeviceptr w, z;
static CUgraphNode k0, k_w;
static atomic_bool a_done;

static void *thread_a(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CK(cuLaunchHostFunc(s, kernel, NULL));
    k0 = last_node();
    CK(cuMemAllocAsync(&w, 4096, s));
    CK(cuLaunchHostFunc(s, kernel, NULL));
    k_w = last_node();
    CK(cuMemFreeAsync(w, s));
    CK(cuMemAllocAsync(&z, 4096, s));
    atomic_store(&a_done, true);
    return NULL;
}

int main(void) {
    CK(cuInit(0));
    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, d));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    pthread_t a, b;
    pthread_create(&b, NULL, thread_b, NULL);
    gm_mock_wait_held();
    pthread_create(&a, NULL, thread_a, NULL);
    for (int ms = 0; ms < 1000 && !atomic_load(&a_done); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    bool a_waited = !atomic_load(&a_done);
    gm_mock_release_update();
    pthread_join(b, NULL);
    pthread_join(a, NULL);
    CK(cuLaunchHostFunc(s, kernel, NULL));
    CUgraphNode k_z = last_node();
    CK(cuMemFreeAsync(z, s));
    CK(cuMemFreeAsync(b_ptr, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    int shared = z == w, ordered = reaches(k_w, k_z, 0), first = reaches(k0, k_w, 0);
    printf("A %s for B's marker; z %s w's bytes; the host function on w %s the one on z; A's "
           "first host function %s the one on w\n",
           a_waited ? "waited" : "did not wait", shared ? "takes" : "does not take",
           ordered ? "precedes" : "does NOT precede", first ? "precedes" : "does NOT precede");
    CK(cuGraphDestroy(g));
    return ordered && first ? 0 : 1;
}

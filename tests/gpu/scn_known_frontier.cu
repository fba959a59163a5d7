// A frontier already known (shim/README.md): a captured allocation or free right after this
// thread's previous one on the same stream takes that marker as the stream's frontier without the
// capture query, unless a call on the stream reached graphmem since. So every kind of call that
// can come between two markers must reach graphmem. For each kind here (runtime and driver entries,
// another thread's launch, a fork and join through a side stream): allocate p, the call (on p where
// it writes memory), free p, allocate q (under graphmem in p's bytes), a kernel on q. The driver's
// graph is a chain with one node without dependents; a call graphmem missed would be a second one,
// its work free to run beside the kernel on q, in the same bytes. Each graph also runs, and the
// kernel on q checks it sees its own words.
//
// Then a side stream left unjoined: an allocation there after the origin's end failed is an
// ordinary allocation (its capture is gone with its graph), not a marker in that graph.
#include "common.cuh"

#include <pthread.h>

static const int kWords = 1024;

__global__ void fill(uint32_t *p, uint32_t value) {
    for (int i = threadIdx.x; i < kWords; i += blockDim.x)
        p[i] = value;
}

__global__ void fill_then_check(uint32_t *q, uint32_t value, unsigned *bad) {
    for (int i = threadIdx.x; i < kWords; i += blockDim.x)
        q[i] = value;
    for (int spin = 0; spin < 100; spin++)
        __nanosleep(100);
    for (int i = threadIdx.x; i < kWords; i += blockDim.x)
        if (q[i] != value)
            atomicAdd(bad, 1u);
}

static void host_function(void *) {}

static cudaStream_t s, side;
static unsigned *bad;
static uint32_t *source; // device words, copied from
static uint32_t *pinned; // host words, copied from
static int failures = 0;

static void note(cudaError_t rc, const char *what) {
    if (rc != cudaSuccess && failures++ == 0)
        fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorName(rc));
}
#define NOTE(x) note((x), #x)

static void *launch_on_s(void *arg) {
    fill<<<1, 128, 0, s>>>((uint32_t *)arg, 7u);
    return nullptr;
}

// The call between the two markers, writing p where it writes memory.
static void call_between(const char *kind, uint32_t *p) {
    const size_t bytes = kWords * sizeof(uint32_t);
    if (!strcmp(kind, "kernel")) {
        fill<<<1, 128, 0, s>>>(p, 1u);
    } else if (!strcmp(kind, "launch_kernel_api")) {
        uint32_t value = 2u;
        void *args[] = {&p, &value};
        NOTE(cudaLaunchKernel((const void *)fill, dim3(1), dim3(128), args, 0, s));
    } else if (!strcmp(kind, "driver_launch")) {
        cudaFunction_t f = nullptr;
        NOTE(cudaGetFuncBySymbol(&f, (const void *)fill));
        uint32_t value = 3u;
        void *args[] = {&p, &value};
        note((cudaError_t)cuLaunchKernel((CUfunction)f, 1, 1, 1, 128, 1, 1, 0, (CUstream)s, args,
                                         nullptr),
             "cuLaunchKernel");
    } else if (!strcmp(kind, "memset")) {
        NOTE(cudaMemsetAsync(p, 1, bytes, s));
    } else if (!strcmp(kind, "memset_2d")) {
        NOTE(cudaMemset2DAsync(p, 64, 2, 64, kWords * 4 / 64, s));
    } else if (!strcmp(kind, "driver_memset")) {
        note((cudaError_t)cuMemsetD32Async((CUdeviceptr)p, 5u, kWords, (CUstream)s),
             "cuMemsetD32Async");
    } else if (!strcmp(kind, "copy_device")) {
        NOTE(cudaMemcpyAsync(p, source, bytes, cudaMemcpyDeviceToDevice, s));
    } else if (!strcmp(kind, "copy_host")) {
        NOTE(cudaMemcpyAsync(p, pinned, bytes, cudaMemcpyHostToDevice, s));
    } else if (!strcmp(kind, "copy_2d")) {
        NOTE(
            cudaMemcpy2DAsync(p, 64, source, 64, 64, kWords * 4 / 64, cudaMemcpyDeviceToDevice, s));
    } else if (!strcmp(kind, "host_function")) {
        NOTE(cudaLaunchHostFunc(s, host_function, nullptr));
    } else if (!strcmp(kind, "other_thread_kernel")) {
        pthread_t thread;
        pthread_create(&thread, nullptr, launch_on_s, p);
        pthread_join(thread, nullptr);
    } else if (!strcmp(kind, "fork_join")) {
        cudaEvent_t fork = nullptr, join = nullptr;
        NOTE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
        NOTE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
        NOTE(cudaEventRecord(fork, s));
        NOTE(cudaStreamWaitEvent(side, fork, 0));
        fill<<<1, 128, 0, side>>>(p, 4u);
        NOTE(cudaEventRecord(join, side));
        NOTE(cudaStreamWaitEvent(s, join, 0));
        NOTE(cudaEventDestroy(fork));
        NOTE(cudaEventDestroy(join));
    } else if (!strcmp(kind, "added_dependency")) {
        cudaStreamCaptureStatus status;
        cudaGraph_t graph = nullptr;
        NOTE(cudaStreamGetCaptureInfo(s, &status, nullptr, &graph, nullptr, nullptr, nullptr));
        cudaGraphNode_t node = nullptr;
        NOTE(cudaGraphAddEmptyNode(&node, graph, nullptr, 0));
        NOTE(cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1,
                                                 cudaStreamAddCaptureDependencies));
    }
}

static void between_two_markers(const char *kind) {
    NOTE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    uint32_t *p = nullptr, *q = nullptr;
    NOTE(cudaMallocAsync((void **)&p, kWords * sizeof(uint32_t), s));
    call_between(kind, p);
    NOTE(cudaFreeAsync(p, s));
    NOTE(cudaMallocAsync((void **)&q, kWords * sizeof(uint32_t), s));
    fill_then_check<<<1, 128, 0, s>>>(q, 0xC0FFEEu, bad);
    NOTE(cudaFreeAsync(q, s));
    cudaGraph_t graph = nullptr;
    NOTE(cudaStreamEndCapture(s, &graph));
    if (graph == nullptr)
        return;
    char key[64];
    snprintf(key, sizeof key, "leaves_%s", kind);
    obs_int(key, (long long)graph_leaves(graph));
    cudaGraphExec_t exec = nullptr;
    NOTE(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; i++)
        NOTE(cudaGraphLaunch(exec, s));
    NOTE(cudaStreamSynchronize(s));
    NOTE(cudaGraphExecDestroy(exec));
    NOTE(cudaGraphDestroy(graph));
}

// A side stream forked from a capture, allocating twice (the second after the first's marker), is
// left unjoined; the origin's end fails. The side stream captures nothing after that.
static void unjoined_side_stream() {
    cudaEvent_t fork = nullptr;
    NOTE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    NOTE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    NOTE(cudaEventRecord(fork, s));
    NOTE(cudaStreamWaitEvent(side, fork, 0));
    void *a = nullptr, *b = nullptr, *after = nullptr;
    NOTE(cudaMallocAsync(&a, 4096, side));
    NOTE(cudaMallocAsync(&b, 4096, side));
    cudaGraph_t graph = nullptr;
    obs_rc("unjoined_end", cudaStreamEndCapture(s, &graph));
    obs_yes("unjoined_graph", graph != nullptr);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    obs_rc("side_query_after", cudaStreamIsCapturing(side, &status));
    obs_int("side_status_after", (int)status);
    obs_rc("side_alloc_after", cudaMallocAsync(&after, 4096, side));
    if (after != nullptr) {
        fill<<<1, 128, 0, side>>>((uint32_t *)after, 9u);
        obs_rc("side_free_after", cudaFreeAsync(after, side));
    }
    obs_rc("side_sync_after", cudaStreamSynchronize(side));
    NOTE(cudaEventDestroy(fork));
}

int main() {
    NOTE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    NOTE(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    NOTE(cudaMallocManaged(&bad, sizeof *bad));
    *bad = 0;
    NOTE(cudaMalloc(&source, kWords * sizeof(uint32_t)));
    NOTE(cudaMallocHost(&pinned, kWords * sizeof(uint32_t)));
    const char *kinds[] = {"kernel",          "launch_kernel_api",   "driver_launch",
                           "memset",          "memset_2d",           "driver_memset",
                           "copy_device",     "copy_host",           "copy_2d",
                           "host_function",   "other_thread_kernel", "fork_join",
                           "added_dependency"};
    for (const char *kind : kinds)
        between_two_markers(kind);
    NOTE(cudaDeviceSynchronize());
    obs_int("wrong_words", *bad);
    unjoined_side_stream();
    obs_int("errors", failures);
    return 0;
}

// Peer access (§A12, §A4.3; Programming Guide "Graph memory nodes: Peer access"), on two
// devices:
// - the explicit example: an alloc node resident on device 1 with an access descriptor for
//   device 0; kernels on both devices write and read it inside the graph;
// - the capture example: two captures around cudaMemPoolSetAccess on a device-0 pool; only the
//   second allocation is accessible from device 1, where a kernel writes and reads it;
// - cudaMallocFromPoolAsync from a device-1 pool while capturing a device-0 stream;
// - the access the driver refuses: access descriptors other than read-write device access at
//   node creation, and, in a child process, a device-1 kernel touching the first allocation.
#include "common.cuh"

#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

static const size_t kWords = (3u << 20) / sizeof(uint32_t); // 3 MiB: more than one 2 MiB page

static __global__ void k_read_one(const uint32_t *p, uint32_t *out) {
    *out = p[threadIdx.x];
}

static cudaMemPool_t make_pool(int device) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    obs_rc("pool_create", cudaMemPoolCreate(&pool, &props));
    return pool;
}

static cudaGraphExec_t capture_alloc_fill(cudaStream_t s, cudaMemPool_t pool, void **dptr,
                                          uint32_t v, const char *key) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    char k[64];
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    snprintf(k, sizeof k, "%s_malloc", key);
    obs_rc(k, cudaMallocFromPoolAsync(dptr, kWords * sizeof(uint32_t), pool, s));
    fill_words(s, *dptr, kWords, v);
    snprintf(k, sizeof k, "%s_end_capture", key);
    obs_rc(k, cudaStreamEndCapture(s, &g));
    snprintf(k, sizeof k, "%s_instantiate", key);
    obs_rc(k, cudaGraphInstantiate(&e, g, 0));
    cudaGraphDestroy(g);
    return e;
}

// CUmemAccess_flags of `p` for device `device`, as a name; INFO only: the driver may map more
// than was asked (§A12.2).
static void info_access(const char *key, const void *p, int device) {
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, device};
    unsigned long long flags = 0;
    CUresult r = cuMemGetAccess(&flags, &loc, (CUdeviceptr)p);
    info(key, "result=%d flags=%llu", (int)r, flags);
}

static void explicit_example(cudaStream_t s0) {
    cudaSetDevice(0);
    uint32_t *out0 = nullptr;
    cudaMalloc(&out0, kWords * sizeof(uint32_t));
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaMemAllocNodeParams p = alloc_params(kWords * sizeof(uint32_t));
    p.poolProps.location.id = 1;
    cudaMemAccessDesc desc = {{cudaMemLocationTypeDevice, 0}, cudaMemAccessFlagsProtReadWrite};
    p.accessDescs = &desc;
    p.accessDescCount = 1;
    cudaGraphNode_t alloc = nullptr, fill0 = nullptr, add1 = nullptr, read0 = nullptr, fr = nullptr;
    obs_rc("explicit_alloc_on_1", cudaGraphAddMemAllocNode(&alloc, g, nullptr, 0, &p));
    void *d = p.dptr;
    obs_rc("explicit_fill_on_0", add_fill(&fill0, g, &alloc, 1, d, kWords, 100));
    cudaSetDevice(1);
    obs_rc("explicit_add_on_1", add_add(&add1, g, &fill0, 1, d, d, kWords, 5));
    cudaSetDevice(0);
    obs_rc("explicit_read_on_0", add_add(&read0, g, &add1, 1, out0, d, kWords, 1));
    obs_rc("explicit_free", cudaGraphAddMemFreeNode(&fr, g, &read0, 1, d));

    cudaMemAllocNodeParams got = {};
    cudaGraphMemAllocNodeGetParams(alloc, &got);
    obs_int("explicit_params_location", got.poolProps.location.id);
    obs_int("explicit_params_access_count", (long long)got.accessDescCount);

    cudaGraphExec_t e = nullptr;
    obs_rc("explicit_instantiate", cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 3; i++) {
        cudaMemsetAsync(out0, 0, kWords * sizeof(uint32_t), s0);
        obs_rc("explicit_launch", cudaGraphLaunch(e, s0));
        obs_rc("explicit_sync", cudaStreamSynchronize(s0));
        obs_ok("explicit_data", host_check(out0, kWords, 106));
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(out0);
}

// Access the driver refuses when the node is made (§A1.5, §A12.1).
static void refused_descriptors(void) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaMemAllocNodeParams p = alloc_params(1 << 20);
    p.poolProps.location.id = 1;
    cudaMemAccessDesc desc = {{cudaMemLocationTypeDevice, 0}, cudaMemAccessFlagsProtRead};
    p.accessDescs = &desc;
    p.accessDescCount = 1;
    cudaGraphNode_t node = nullptr;
    obs_rc("peer_read_only_desc", cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
    desc.flags = cudaMemAccessFlagsProtNone;
    obs_rc("peer_none_desc", cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    desc.location.type = cudaMemLocationTypeHost;
    obs_rc("peer_host_desc", cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
    desc.location.type = cudaMemLocationTypeDevice;
    cudaMemAccessDesc two[2] = {desc, desc};
    p.accessDescs = two;
    p.accessDescCount = 2;
    obs_rc("peer_duplicate_desc", cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p));
    size_t n = 0;
    cudaGraphGetNodes(g, nullptr, &n);
    obs_int("refused_leave_graph_nodes", (long long)(n > 1 ? 1 : n));
    cudaGraphDestroy(g);
}

// The capture example of the guide. Returns nothing; every finding is an observation.
static void capture_example(cudaStream_t s0, cudaStream_t s1) {
    cudaSetDevice(0);
    cudaMemPool_t pool = make_pool(0);
    void *d1 = nullptr, *d2 = nullptr;
    cudaGraphExec_t e1 = capture_alloc_fill(s0, pool, &d1, 1000, "first");
    cudaMemAccessDesc desc = {{cudaMemLocationTypeDevice, 1}, cudaMemAccessFlagsProtReadWrite};
    obs_rc("pool_set_access", cudaMemPoolSetAccess(pool, &desc, 1));
    cudaGraphExec_t e2 = capture_alloc_fill(s0, pool, &d2, 2000, "second");
    obs_rc("first_launch", cudaGraphLaunch(e1, s0));
    obs_rc("second_launch", cudaGraphLaunch(e2, s0));
    obs_rc("launches_sync", cudaStreamSynchronize(s0));
    obs_ok("first_data", host_check(d1, kWords, 1000));
    obs_ok("second_data", host_check(d2, kWords, 2000));
    info_access("first_access_from_1", d1, 1);
    info_access("second_access_from_1", d2, 1);

    // Device 1 reads the second allocation, then writes it; device 0 reads the result.
    cudaSetDevice(1);
    uint32_t *out1 = nullptr;
    cudaMalloc(&out1, kWords * sizeof(uint32_t));
    k_add<<<kGrid, kBlock, 0, s1>>>(out1, (const uint32_t *)d2, kWords, 7);
    obs_rc("peer_read_launch", cudaGetLastError());
    obs_rc("peer_read_sync", cudaStreamSynchronize(s1));
    obs_ok("peer_read_data", host_check(out1, kWords, 2007));
    k_fill<<<kGrid, kBlock, 0, s1>>>((uint32_t *)d2, kWords, 3000);
    obs_rc("peer_write_sync", cudaStreamSynchronize(s1));
    cudaFree(out1);
    cudaSetDevice(0);
    obs_ok("peer_write_seen_on_0", check_words(s0, d2, kWords, 3000));

    obs_rc("first_free", cudaFree(d1));
    obs_rc("second_free", cudaFree(d2));
    cudaGraphExecDestroy(e1);
    cudaGraphExecDestroy(e2);
    cudaDeviceSynchronize();
    cudaMemPoolDestroy(pool);
}

// A capture on a device-0 stream allocating from a device-1 pool; a device-1 kernel fills it.
static void pool_of_other_device(cudaStream_t s0, cudaStream_t s1) {
    cudaSetDevice(1);
    cudaMemPool_t pool1 = make_pool(1);
    cudaEvent_t fork1 = nullptr, join0 = nullptr;
    cudaEventCreateWithFlags(&join0, cudaEventDisableTiming);
    cudaSetDevice(0);
    cudaEventCreateWithFlags(&fork1, cudaEventDisableTiming);
    cudaGraph_t g = nullptr;
    void *d = nullptr;
    cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal);
    obs_rc("other_pool_malloc", cudaMallocFromPoolAsync(&d, kWords * sizeof(uint32_t), pool1, s0));
    cudaEventRecord(fork1, s0);
    cudaStreamWaitEvent(s1, fork1, 0);
    cudaSetDevice(1);
    obs_rc("other_pool_fill_on_1", fill_words(s1, d, kWords, 4000));
    cudaEventRecord(join0, s1);
    cudaSetDevice(0);
    cudaStreamWaitEvent(s0, join0, 0);
    obs_rc("other_pool_end_capture", cudaStreamEndCapture(s0, &g));
    cudaGraphExec_t e = nullptr;
    obs_rc("other_pool_instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("other_pool_launch", cudaGraphLaunch(e, s0));
    obs_rc("other_pool_sync", cudaStreamSynchronize(s0));
    cudaPointerAttributes attrs = {};
    obs_rc("other_pool_attributes", cudaPointerGetAttributes(&attrs, d));
    obs_int("other_pool_device", attrs.device);
    obs_ok("other_pool_data", host_check(d, kWords, 4000));
    obs_rc("other_pool_free", cudaFree(d));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaEventDestroy(fork1);
    cudaEventDestroy(join0);
    cudaDeviceSynchronize();
    cudaMemPoolDestroy(pool1);
}

// In a child process (the fault ends its contexts): a device-1 kernel reads the allocation
// captured before the pool gave device 1 access. The driver refuses it with a fault.
static void refused_peer_read_child(void) {
    cudaStream_t s0 = nullptr;
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
    cudaMemPool_t pool = make_pool(0);
    void *d1 = nullptr;
    cudaGraphExec_t e1 = capture_alloc_fill(s0, pool, &d1, 1000, "child_first");
    cudaMemAccessDesc desc = {{cudaMemLocationTypeDevice, 1}, cudaMemAccessFlagsProtReadWrite};
    cudaMemPoolSetAccess(pool, &desc, 1);
    obs_rc("child_launch", cudaGraphLaunch(e1, s0));
    obs_rc("child_sync", cudaStreamSynchronize(s0));
    cudaSetDevice(1);
    uint32_t *out1 = nullptr;
    cudaMalloc(&out1, 64 * sizeof(uint32_t));
    k_read_one<<<1, 64>>>((const uint32_t *)d1, out1);
    cudaError_t rc = cudaDeviceSynchronize();
    obs("child_peer_read_without_access", cudaGetErrorName(rc));
}

int main() {
    fflush(stdout);
    pid_t child = fork(); // before this process touches CUDA, so that the child may use it
    if (child == 0) {
        require_two_peer_devices();
        refused_peer_read_child();
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    require_two_peer_devices();
    obs_yes("child_exited", WIFEXITED(status) && WEXITSTATUS(status) == 0);

    cudaStream_t s0 = nullptr, s1 = nullptr;
    cudaSetDevice(1);
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
    explicit_example(s0);
    refused_descriptors();
    capture_example(s0, s1);
    pool_of_other_device(s0, s1);
    return 0;
}

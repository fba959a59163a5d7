// Memsets of a graph allocation of device 1 made while device 0 is current (two devices). The
// driver checks a memset's destination when the memset is captured, when a memset node is added
// and when the graph is instantiated; graph memory is not mapped yet then, so graphmem covers the
// pages with a scratch page for the check (core/engine/engine.h, "Covers"). This scenario asks
// whether the page it covers with, and the access it gives, lead the driver to the same answers
// as the allocation's own memory would: device 1's allocation, device 0 current.
//
//   captured: a capture on a stream of device 1 allocates and memsets there
//   node_ctx1: memset node added through the driver API with device 1's context named
//   node_current: the same through the runtime (the current device's context)
// Each graph is then instantiated and launched on device 1's stream; the data is read back.
#include <cuda.h>

#include "common.cuh"

static const size_t kBytes = 4u << 20;

static cudaMemAllocNodeParams alloc_on_1(size_t bytes) {
    cudaMemAllocNodeParams p = alloc_params(bytes);
    p.poolProps.location.id = 1;
    return p;
}

// Instantiates `g` (device 0 current), launches it on s1, checks the memset's words through a
// copy node the graph ends with (into host memory `out`).
static void run(const char *name, cudaGraph_t g, cudaStream_t s1, const uint32_t *out,
                uint32_t value) {
    char key[96];
    cudaGraphExec_t e = nullptr;
    cudaError_t rc = cudaGraphInstantiate(&e, g, 0);
    snprintf(key, sizeof key, "%s_instantiate", name);
    obs_rc(key, rc);
    if (rc != cudaSuccess)
        return;
    rc = cudaGraphLaunch(e, s1);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s1);
    snprintf(key, sizeof key, "%s_launch", name);
    obs_rc(key, rc);
    bool ok = rc == cudaSuccess;
    for (size_t i = 0; ok && i < 1024; i++)
        ok = out[i] == value;
    snprintf(key, sizeof key, "%s_data", name);
    obs_ok(key, ok);
    cudaGraphExecDestroy(e);
}

// alloc (device 1) -> memset -> copy 4 KiB to `out` -> free, the memset added by `add_memset`.
typedef cudaError_t (*add_memset_fn)(cudaGraphNode_t *node, cudaGraph_t g, cudaGraphNode_t dep,
                                     void *p, uint32_t value);

static cudaError_t memset_runtime(cudaGraphNode_t *node, cudaGraph_t g, cudaGraphNode_t dep,
                                  void *p, uint32_t value) {
    cudaMemsetParams m = memset_words(p, kBytes, value);
    return cudaGraphAddMemsetNode(node, g, &dep, 1, &m);
}

static CUcontext ctx1;

static cudaError_t memset_ctx1(cudaGraphNode_t *node, cudaGraph_t g, cudaGraphNode_t dep, void *p,
                               uint32_t value) {
    CUDA_MEMSET_NODE_PARAMS m = {};
    m.dst = (CUdeviceptr)p;
    m.elementSize = 4;
    m.width = kBytes / 4;
    m.height = 1;
    m.value = value;
    CUresult r = cuGraphAddMemsetNode((CUgraphNode *)node, (CUgraph)g, (const CUgraphNode *)&dep, 1,
                                      &m, ctx1);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

static void explicit_nodes(const char *name, add_memset_fn add_memset, cudaStream_t s1,
                           uint32_t *out, uint32_t value) {
    char key[96];
    cudaSetDevice(0);
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t a = nullptr, m = nullptr, c = nullptr, f = nullptr;
    cudaMemAllocNodeParams p = alloc_on_1(kBytes);
    cudaError_t rc = cudaGraphAddMemAllocNode(&a, g, nullptr, 0, &p);
    snprintf(key, sizeof key, "%s_alloc_node", name);
    obs_rc(key, rc);
    if (rc == cudaSuccess) {
        rc = add_memset(&m, g, a, p.dptr, value);
        snprintf(key, sizeof key, "%s_memset_node", name);
        obs_rc(key, rc);
    }
    if (rc == cudaSuccess) {
        rc = cudaGraphAddMemcpyNode1D(&c, g, &m, 1, out, p.dptr, 4096, cudaMemcpyDefault);
        snprintf(key, sizeof key, "%s_copy_node", name);
        obs_rc(key, rc);
    }
    if (rc == cudaSuccess) {
        rc = cudaGraphAddMemFreeNode(&f, g, &c, 1, p.dptr);
        snprintf(key, sizeof key, "%s_free_node", name);
        obs_rc(key, rc);
    }
    if (rc == cudaSuccess)
        run(name, g, s1, out, value);
    cudaGraphDestroy(g);
}

static void captured(cudaStream_t s1, uint32_t *out, uint32_t value) {
    cudaSetDevice(0);
    cudaGraph_t g = nullptr;
    void *p = nullptr;
    obs_rc("captured_begin", cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    obs_rc("captured_malloc", cudaMallocAsync(&p, kBytes, s1));
    obs_rc("captured_memset", cudaMemsetAsync(p, (int)(value & 0xff), kBytes, s1));
    obs_rc("captured_copy", cudaMemcpyAsync(out, p, 4096, cudaMemcpyDefault, s1));
    obs_rc("captured_free", cudaFreeAsync(p, s1));
    cudaError_t rc = cudaStreamEndCapture(s1, &g);
    obs_rc("captured_end", rc);
    if (rc == cudaSuccess) {
        uint32_t byte = value & 0xff;
        run("captured", g, s1, out, byte | byte << 8 | byte << 16 | byte << 24);
        cudaGraphDestroy(g);
    }
}

int main() {
    require_two_peer_devices();
    cuInit(0);
    cudaStream_t s1 = nullptr;
    cudaSetDevice(1);
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaFree(nullptr); // device 1's primary context, current on this thread for now
    CUdevice dev1 = 0;
    cuDeviceGet(&dev1, 1);
    cuDevicePrimaryCtxRetain(&ctx1, dev1);
    uint32_t *out = nullptr;
    cudaMallocHost(&out, 4096);
    captured(s1, out, 0x5a);
    explicit_nodes("node_ctx1", memset_ctx1, s1, out, 0x01020304u);
    explicit_nodes("node_current", memset_runtime, s1, out, 0x0a0b0c0du);
    cudaSetDevice(1);
    obs_rc("final_sync", cudaDeviceSynchronize());
    cudaFreeHost(out);
    cuDevicePrimaryCtxRelease(dev1);
    return 0;
}

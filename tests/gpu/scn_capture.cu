// Stream capture of graph allocations (§A4): the three capture modes with memset,
// memcpy and kernels on the captured address; cudaMallocFromPoolAsync from created pools; a fork
// that never rejoins; zero-byte allocations; capture into an existing graph; the capture frontier
// after an allocation; invalidated captures; a non-graph free during capture; the legacy stream.
#include "common.cuh"

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);

static cudaStream_t s, s2;
static uint32_t *hin, *hout;

// Enqueues memset, host-to-device copy, kernel and device-to-host copy on the captured address,
// then frees it; data check after launch: hout[i] == hin[i] + 1.
static void use_and_free(uint32_t *a, uint32_t *b) {
    cudaMemsetAsync(a, 0xff, bytes, s);
    cudaMemcpyAsync(a, hin, bytes, cudaMemcpyHostToDevice, s);
    k_add<<<kGrid, kBlock, 0, s>>>(b, a, n, 1);
    cudaMemcpyAsync(hout, b, bytes, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(a, s);
    cudaFreeAsync(b, s);
}

static void launch_and_check(const char *tag, cudaGraph_t g) {
    char key[96];
    cudaGraphExec_t e = nullptr;
    snprintf(key, sizeof key, "%s_instantiate", tag);
    obs_rc(key, cudaGraphInstantiate(&e, g, 0));
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        memset(hout, 0, bytes);
        ok &= cudaGraphLaunch(e, s) == cudaSuccess;
        ok &= cudaStreamSynchronize(s) == cudaSuccess;
        for (size_t j = 0; j < n && ok; j++)
            ok = hout[j] == hin[j] + 1;
    }
    snprintf(key, sizeof key, "%s_launches_data", tag);
    obs_ok(key, ok);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

static void modes(void) {
    const cudaStreamCaptureMode mode[3] = {cudaStreamCaptureModeGlobal,
                                           cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed};
    const char *name[3] = {"global", "thread_local", "relaxed"};
    for (int m = 0; m < 3; m++) {
        char key[64];
        cudaStreamBeginCapture(s, mode[m]);
        uint32_t *a = nullptr, *b = nullptr;
        snprintf(key, sizeof key, "%s_malloc_async", name[m]);
        obs_rc(key, cudaMallocAsync(&a, bytes, s));
        cudaMallocAsync(&b, bytes, s);
        use_and_free(a, b);
        cudaGraph_t g = nullptr;
        snprintf(key, sizeof key, "%s_end_capture", name[m]);
        obs_rc(key, cudaStreamEndCapture(s, &g));
        launch_and_check(name[m], g);
    }
}

static void from_pool(cudaMemAllocationHandleType handles, const char *tag) {
    char key[96];
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = handles;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    snprintf(key, sizeof key, "%s_pool_create", tag);
    obs_rc(key, cudaMemPoolCreate(&pool, &props));
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    uint32_t *a = nullptr, *b = nullptr;
    snprintf(key, sizeof key, "%s_malloc_from_pool", tag);
    cudaError_t rc = cudaMallocFromPoolAsync(&a, bytes, pool, s);
    obs_rc(key, rc);
    // A refused allocation (IPC pools natively) leaves nothing to use: end the capture only.
    if (rc == cudaSuccess && cudaMallocFromPoolAsync(&b, bytes, pool, s) == cudaSuccess)
        use_and_free(a, b);
    cudaGraph_t g = nullptr;
    snprintf(key, sizeof key, "%s_end_capture", tag);
    obs_rc(key, cudaStreamEndCapture(s, &g));
    if (g && rc != cudaSuccess) {
        size_t count = 0;
        cudaGraphGetNodes(g, nullptr, &count);
        snprintf(key, sizeof key, "%s_refused_graph_nodes", tag);
        obs_int(key, (long long)count);
        cudaGraphDestroy(g);
    } else if (g) {
        cudaGraphNode_t nodes[16] = {};
        size_t count = graph_nodes(g, nodes, 16);
        for (size_t i = 0; i < count; i++) {
            cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
            cudaGraphNodeGetType(nodes[i], &t);
            if (t != cudaGraphNodeTypeMemAlloc)
                continue;
            cudaMemAllocNodeParams p;
            cudaGraphMemAllocNodeGetParams(nodes[i], &p);
            snprintf(key, sizeof key, "%s_node_location", tag);
            obs_int(key, p.poolProps.location.type * 100 + p.poolProps.location.id);
            snprintf(key, sizeof key, "%s_node_handle_types", tag);
            obs_int(key, p.poolProps.handleTypes);
            snprintf(key, sizeof key, "%s_node_access_descs", tag);
            obs_int(key, (long long)p.accessDescCount);
            break;
        }
        launch_and_check(tag, g);
    }
    cudaMemPoolDestroy(pool);
}

static void unjoined_fork(void) {
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaEventRecord(ev, s);
    cudaStreamWaitEvent(s2, ev, 0);
    void *a = nullptr;
    obs_rc("unjoined_malloc_on_fork", cudaMallocAsync(&a, bytes, s2));
    obs_rc("unjoined_free_on_fork", cudaFreeAsync(a, s2));
    cudaGraph_t g = nullptr;
    obs_rc("unjoined_end_capture", cudaStreamEndCapture(s, &g));
    obs_yes("unjoined_graph_null", g == nullptr);
    if (g)
        cudaGraphDestroy(g);
    cudaEventDestroy(ev);
}

static void zero_bytes(void) {
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *a = (void *)1;
    obs_rc("zero_malloc_async", cudaMallocAsync(&a, 0, s));
    info("zero_pointer", "%p", a);
    obs_rc("zero_free_async", cudaFreeAsync(a, s));
    cudaGraph_t g = nullptr;
    obs_rc("zero_end_capture", cudaStreamEndCapture(s, &g));
    cudaGraphExec_t e = nullptr;
    obs_rc("zero_instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("zero_launch", cudaGraphLaunch(e, s));
    obs_rc("zero_sync", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

static void to_graph_and_frontier(void) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t empty = nullptr;
    cudaGraphAddEmptyNode(&empty, g, nullptr, 0);
    obs_rc("to_graph_begin",
           cudaStreamBeginCaptureToGraph(s, g, &empty, nullptr, 1, cudaStreamCaptureModeGlobal));
    uint32_t *a = nullptr, *b = nullptr;
    obs_rc("to_graph_malloc", cudaMallocAsync(&a, bytes, s));
    // A4.9: right after the allocation the frontier is exactly its alloc node.
    cudaStreamCaptureStatus st;
    const cudaGraphNode_t *deps = nullptr;
    size_t ndeps = 0;
    cudaGraph_t cg = nullptr;
    obs_rc("to_graph_capture_info",
           cudaStreamGetCaptureInfo(s, &st, nullptr, &cg, &deps, nullptr, &ndeps));
    obs_int("frontier_count", (long long)ndeps);
    cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
    if (ndeps == 1)
        cudaGraphNodeGetType(deps[0], &t);
    obs_yes("frontier_is_alloc_node", ndeps == 1 && t == cudaGraphNodeTypeMemAlloc);
    obs_yes("capture_graph_is_target", cg == g);
    cudaMallocAsync(&b, bytes, s);
    use_and_free(a, b);
    cudaGraph_t out = nullptr;
    obs_rc("to_graph_end", cudaStreamEndCapture(s, &out));
    obs_yes("to_graph_returns_target", out == g);
    size_t count = 0;
    cudaGraphGetNodes(g, nullptr, &count);
    obs_int("to_graph_nodes", (long long)count);
    launch_and_check("to_graph", g);
}

static void invalidated(void) {
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *a = nullptr, *b = nullptr, *plain = nullptr;
    obs_rc("invalidated_malloc_async", cudaMallocAsync(&a, bytes, s));
    obs_rc("invalidated_unsafe_cuda_malloc", cudaMalloc(&plain, bytes));
    obs_rc("invalidated_malloc_async_after", cudaMallocAsync(&b, bytes, s));
    cudaGraph_t g = (cudaGraph_t)1;
    obs_rc("invalidated_end_capture", cudaStreamEndCapture(s, &g));
    obs_yes("invalidated_graph_null", g == nullptr);
    if (plain)
        cudaFree(plain);
    // The stream captures normally again afterwards.
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaMallocAsync(&a, bytes, s);
    cudaMallocAsync(&b, bytes, s);
    use_and_free((uint32_t *)a, (uint32_t *)b);
    g = nullptr;
    obs_rc("after_invalidated_end_capture", cudaStreamEndCapture(s, &g));
    launch_and_check("after_invalidated", g);
}

static void foreign_free_in_capture(void) {
    void *plain = nullptr;
    cudaMallocAsync(&plain, bytes, s);
    cudaStreamSynchronize(s);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    obs_rc("foreign_free_async_in_capture", cudaFreeAsync(plain, s));
    cudaGraph_t g = nullptr;
    obs_rc("foreign_free_end_capture", cudaStreamEndCapture(s, &g));
    if (g)
        cudaGraphDestroy(g);
}

int main() {
    require_graph_memory();
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaMallocHost(&hin, bytes);
    cudaMallocHost(&hout, bytes);
    for (size_t i = 0; i < n; i++)
        hin[i] = 3 * (uint32_t)i + 17;
    modes();
    from_pool(cudaMemHandleTypeNone, "pool");
    from_pool(cudaMemHandleTypePosixFileDescriptor, "ipc_pool");
    unjoined_fork();
    zero_bytes();
    to_graph_and_frontier();
    invalidated();
    foreign_free_in_capture();
    obs_rc("legacy_stream_begin_capture",
           cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal));
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}

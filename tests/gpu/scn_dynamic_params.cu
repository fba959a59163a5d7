// The dynamic-parameters pattern (§A4.9; PyTorch, Warp): during a capture with graph
// allocations, read the frontier with cudaStreamGetCaptureInfo, add a kernel node by hand to the
// capture graph, make it the frontier with cudaStreamUpdateCaptureDependencies, keep capturing
// allocations; later change the hand-made node with cudaGraphExecKernelNodeSetParams.
#include "common.cuh"

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);

static cudaKernelNodeParams add_params(void **args) {
    cudaKernelNodeParams k = {};
    k.func = (void *)k_add;
    k.gridDim = dim3(kGrid);
    k.blockDim = dim3(kBlock);
    k.kernelParams = args;
    return k;
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *hout = nullptr;
    cudaMallocHost(&hout, bytes);

    obs_rc("begin_capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    uint32_t *a = nullptr, *b = nullptr;
    obs_rc("malloc_a", cudaMallocAsync(&a, bytes, s));
    k_fill<<<kGrid, kBlock, 0, s>>>(a, n, 1);
    cudaStreamCaptureStatus st;
    unsigned long long id = 0;
    cudaGraph_t cg = nullptr;
    const cudaGraphNode_t *deps = nullptr;
    size_t ndeps = 0;
    obs_rc("capture_info", cudaStreamGetCaptureInfo(s, &st, &id, &cg, &deps, nullptr, &ndeps));
    obs_yes("capture_active", st == cudaStreamCaptureStatusActive);
    obs_yes("capture_id_nonzero", id != 0);
    obs_int("frontier_count", (long long)ndeps);

    // Hand-made node: a += 10 in place.
    uint32_t add = 10;
    size_t count = n;
    void *args[] = {&a, &a, &count, &add};
    cudaKernelNodeParams kp = add_params(args);
    cudaGraphNode_t mine = nullptr;
    obs_rc("add_kernel_node", cudaGraphAddKernelNode(&mine, cg, deps, ndeps, &kp));
    obs_rc("update_dependencies", cudaStreamUpdateCaptureDependencies(
                                      s, &mine, nullptr, 1, cudaStreamSetCaptureDependencies));
    cudaStreamGetCaptureInfo(s, &st, nullptr, nullptr, &deps, nullptr, &ndeps);
    obs_yes("frontier_is_own_node", ndeps == 1 && deps[0] == mine);

    obs_rc("malloc_b", cudaMallocAsync(&b, bytes, s));
    k_add<<<kGrid, kBlock, 0, s>>>(b, a, n, 1);
    obs_rc("free_a", cudaFreeAsync(a, s));
    cudaMemcpyAsync(hout, b, bytes, cudaMemcpyDeviceToHost, s);
    obs_rc("free_b", cudaFreeAsync(b, s));
    cudaGraph_t g = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s, &g));
    obs_yes("capture_graph_is_result", g == cg);

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    const uint32_t adds[3] = {10, 500, 77777};
    for (int round = 0; round < 3; round++) {
        char key[64];
        if (round > 0) {
            add = adds[round];
            kp = add_params(args);
            snprintf(key, sizeof key, "exec_set_params%d", round);
            obs_rc(key, cudaGraphExecKernelNodeSetParams(e, mine, &kp));
        }
        memset(hout, 0, bytes);
        snprintf(key, sizeof key, "launch%d", round);
        obs_rc(key, cudaGraphLaunch(e, s));
        cudaStreamSynchronize(s);
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++)
            ok = hout[i] == 1 + adds[round] + 1 + (uint32_t)i;
        snprintf(key, sizeof key, "launch%d_data", round);
        obs_ok(key, ok);
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    return 0;
}

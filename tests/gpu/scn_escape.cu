// An allocation that escapes its graph survives destruction of the graph and of the exec (also an
// AutoFreeOnLaunch exec) and a trim; ordinary stream work, cudaMemset and cudaFree still work on
// it (§A9.1, §A11.1, ROCm/rocm-systems#7092).
#include "common.cuh"

static const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);

static void run(cudaStream_t s, bool captured, unsigned flags, const char *tag) {
    char key[96];
    uint32_t *a = nullptr;
    cudaGraph_t g = nullptr;
    if (captured) {
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        cudaMallocAsync(&a, bytes, s);
        k_fill<<<kGrid, kBlock, 0, s>>>(a, n, 9);
        cudaStreamEndCapture(s, &g);
    } else {
        cudaGraphCreate(&g, 0);
        cudaGraphNode_t na = nullptr, nf = nullptr;
        void *p = nullptr;
        add_alloc(&na, g, nullptr, 0, bytes, &p);
        add_fill(&nf, g, &na, 1, p, n, 9);
        a = (uint32_t *)p;
    }
    cudaGraphExec_t e = nullptr;
    snprintf(key, sizeof key, "%s_instantiate", tag);
    obs_rc(key, cudaGraphInstantiateWithFlags(&e, g, flags));
    snprintf(key, sizeof key, "%s_launch", tag);
    obs_rc(key, cudaGraphLaunch(e, s));
    snprintf(key, sizeof key, "%s_sync", tag);
    obs_rc(key, cudaStreamSynchronize(s));
    snprintf(key, sizeof key, "%s_exec_destroy", tag);
    obs_rc(key, cudaGraphExecDestroy(e));
    snprintf(key, sizeof key, "%s_graph_destroy", tag);
    obs_rc(key, cudaGraphDestroy(g));
    snprintf(key, sizeof key, "%s_trim", tag);
    obs_rc(key, cudaDeviceGraphMemTrim(0));
    snprintf(key, sizeof key, "%s_data_after_destroy", tag);
    obs_ok(key, check_words(s, a, n, 9));
    snprintf(key, sizeof key, "%s_memset", tag);
    obs_rc(key, cudaMemsetAsync(a, 0, bytes, s));
    fill_words(s, a, n, 77);
    snprintf(key, sizeof key, "%s_data_rewritten", tag);
    obs_ok(key, check_words(s, a, n, 77));
    snprintf(key, sizeof key, "%s_cuda_free", tag);
    obs_rc(key, cudaFree(a));
    snprintf(key, sizeof key, "%s_final_sync", tag);
    obs_rc(key, cudaStreamSynchronize(s));
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    run(s, false, 0, "explicit");
    run(s, true, 0, "captured");
    run(s, true, cudaGraphInstantiateFlagAutoFreeOnLaunch, "autofree");
    cudaDeviceGraphMemTrim(0);
    GraphMemAttrs a = read_attrs();
    obs_yes("all_freed_trim_used_zero", a.used == 0);
    return 0;
}

// Producer/consumer loop with cudaGraphInstantiateFlagAutoFreeOnLaunch, the PyTorch pattern
// (§A6.2, §A5.1, §A5.5): a captured graph with a temporary and an output it leaves
// unfreed; every relaunch implicitly frees the previous output, which comes back at the same
// address; a consumer in the same stream reads it between launches.
#include "common.cuh"

static __global__ void k_fill_from(uint32_t *p, size_t n, const uint32_t *base) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = *base + (uint32_t)i;
}

int main() {
    require_graph_memory();
    const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *base = nullptr, *hbase = nullptr;
    cudaMalloc(&base, sizeof(uint32_t));
    cudaMallocHost(&hbase, sizeof(uint32_t));

    obs_rc("begin_capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    uint32_t *tmp = nullptr, *out = nullptr;
    obs_rc("malloc_tmp", cudaMallocAsync(&tmp, bytes, s));
    k_fill_from<<<kGrid, kBlock, 0, s>>>(tmp, n, base);
    obs_rc("malloc_out", cudaMallocAsync(&out, bytes, s));
    k_add<<<kGrid, kBlock, 0, s>>>(out, tmp, n, 1000);
    obs_rc("free_tmp", cudaFreeAsync(tmp, s));
    cudaGraph_t g = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s, &g));

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate_autofree",
           cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    unsigned long long flags = 0;
    obs_rc("get_flags", cudaGraphExecGetFlags(e, &flags));
    obs_int("flags", (long long)flags);

    bool launches = true, data = true;
    for (uint32_t it = 0; it < 20; it++) {
        *hbase = it * 7919;
        cudaMemcpyAsync(base, hbase, sizeof(uint32_t), cudaMemcpyHostToDevice, s);
        launches &= cudaGraphLaunch(e, s) == cudaSuccess;
        data &= check_words(s, out, n, it * 7919 + 1000);
    }
    obs_ok("relaunches_with_unfreed_output", launches);
    obs_ok("consumer_data", data);

    // Every launch reuses `out`: a free then a relaunch gives the same address again.
    obs_rc("cuda_free_output", cudaFree(out));
    *hbase = 5;
    cudaMemcpyAsync(base, hbase, sizeof(uint32_t), cudaMemcpyHostToDevice, s);
    obs_rc("launch_after_free", cudaGraphLaunch(e, s));
    obs_ok("data_after_free", check_words(s, out, n, 1005));
    obs_rc("free_async_output", cudaFreeAsync(out, s));
    obs_rc("sync", cudaStreamSynchronize(s));
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    return 0;
}

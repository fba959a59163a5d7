// Graph allocation addresses are assigned at node creation and stay fixed across launches and
// across re-instantiation after the exec is destroyed (§A1.1, §A3.7, §A6.2): the kernel
// inside the graph records the address it was given, and the data is read back at that address.
#include "common.cuh"

static __global__ void k_record(uint32_t *p, size_t n, unsigned long long *where, uint32_t v) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *where = (unsigned long long)p;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v + (uint32_t)i;
}

int main() {
    require_graph_memory();
    const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned long long *where = nullptr;
    cudaMallocHost(&where, sizeof *where);

    obs_rc("begin_capture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    uint32_t *tmp = nullptr, *out = nullptr;
    cudaMallocAsync(&tmp, bytes, s);
    k_record<<<kGrid, kBlock, 0, s>>>(tmp, n, where, 50);
    cudaMallocAsync(&out, bytes, s);
    k_add<<<kGrid, kBlock, 0, s>>>(out, tmp, n, 1);
    cudaFreeAsync(tmp, s);
    cudaGraph_t g = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s, &g));

    bool fixed = true, data = true;
    for (int round = 0; round < 3; round++) {
        cudaGraphExec_t e = nullptr;
        char key[64];
        snprintf(key, sizeof key, "instantiate%d", round);
        obs_rc(key, cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
        for (int launch = 0; launch < 3; launch++) {
            *where = 0;
            fixed &= cudaGraphLaunch(e, s) == cudaSuccess;
            data &= check_words(s, out, n, 51);
            fixed &= *where == (unsigned long long)tmp;
        }
        obs_rc("free_out", cudaFreeAsync(out, s));
        cudaStreamSynchronize(s);
        snprintf(key, sizeof key, "exec_destroy%d", round);
        obs_rc(key, cudaGraphExecDestroy(e));
    }
    obs_yes("address_fixed_across_launches_and_instantiations", fixed);
    obs_ok("data", data);

    cudaGraphNode_t nodes[16] = {};
    size_t count = graph_nodes(g, nodes, 16);
    bool params_match = true;
    int allocs = 0;
    for (size_t i = 0; i < count; i++) {
        cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
        cudaGraphNodeGetType(nodes[i], &t);
        if (t != cudaGraphNodeTypeMemAlloc)
            continue;
        cudaMemAllocNodeParams p;
        cudaGraphMemAllocNodeGetParams(nodes[i], &p);
        params_match &= p.dptr == tmp || p.dptr == out;
        allocs++;
    }
    obs_int("alloc_nodes", allocs);
    obs_yes("node_params_report_captured_addresses", params_match);
    cudaGraphDestroy(g);
    return 0;
}

// The graphMemoryNodes sample, explicit form (§A1.1, §A1.11, §A1.13, §A9.2): alloc nodes,
// a host-to-device copy into a graph allocation before it was ever mapped, kernels, free nodes,
// and a copy back; launched several times with the graph destroyed after instantiation.
#include "common.cuh"

int main() {
    require_graph_memory();
    const size_t n = 1 << 20, bytes = n * sizeof(uint32_t);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *in = nullptr, *out = nullptr;
    cudaMallocHost(&in, bytes);
    cudaMallocHost(&out, bytes);
    for (size_t i = 0; i < n; i++)
        in[i] = 100 + (uint32_t)i;

    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nb = nullptr, nc = nullptr, copy_in = nullptr, add1 = nullptr,
                    add2 = nullptr, fa = nullptr, fb = nullptr, fc = nullptr, copy_out = nullptr;
    void *a = nullptr, *b = nullptr, *c = nullptr;
    obs_rc("alloc_a", add_alloc(&na, g, nullptr, 0, bytes, &a));
    obs_yes("alloc_a_nonnull", a != nullptr);
    obs_rc("memcpy_in_node",
           cudaGraphAddMemcpyNode1D(&copy_in, g, &na, 1, a, in, bytes, cudaMemcpyHostToDevice));
    obs_rc("alloc_b", add_alloc(&nb, g, &copy_in, 1, bytes, &b));
    obs_rc("kernel_b", add_add(&add1, g, &nb, 1, b, a, n, 1));
    obs_rc("free_a", cudaGraphAddMemFreeNode(&fa, g, &add1, 1, a));
    // c is ordered after a's free, so the driver may give it a's address (§A1.11): logged only.
    obs_rc("alloc_c", add_alloc(&nc, g, &fa, 1, bytes, &c));
    info("c_reuses_a_va", "%s", c == a ? "yes" : "no");
    obs_yes("a_b_distinct", a != b);
    obs_rc("kernel_c", add_add(&add2, g, &nc, 1, c, b, n, 1));
    obs_rc("free_b", cudaGraphAddMemFreeNode(&fb, g, &add2, 1, b));
    obs_rc("memcpy_out_node",
           cudaGraphAddMemcpyNode1D(&copy_out, g, &add2, 1, out, c, bytes, cudaMemcpyDeviceToHost));
    obs_rc("free_c", cudaGraphAddMemFreeNode(&fc, g, &copy_out, 1, c));
    (void)fb;
    (void)fc;

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    cudaMemAllocNodeParams before;
    cudaGraphMemAllocNodeGetParams(nc, &before);
    for (int launch = 0; launch < 3; launch++) {
        memset(out, 0, bytes);
        char key[64];
        snprintf(key, sizeof key, "launch%d", launch);
        obs_rc(key, cudaGraphLaunch(e, s));
        snprintf(key, sizeof key, "launch%d_sync", launch);
        obs_rc(key, cudaStreamSynchronize(s));
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++)
            ok = out[i] == 102 + (uint32_t)i;
        snprintf(key, sizeof key, "launch%d_data", launch);
        obs_ok(key, ok);
        if (launch == 0)
            obs_rc("graph_destroy_after_launch", cudaGraphDestroy(g));
    }
    obs_same("alloc_c_dptr_fixed_before_destroy", before.dptr, c);
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}

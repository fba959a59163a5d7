// GRAPHMEM_LIFT_RESTRICTIONS: edges and nodes removed from graphs with memory nodes, which the
// driver refuses (§A3.1, §A3.2). Graph 1 (alloc X, fill, check, free) gets a redundant edge from
// the alloc to the check and a spare kernel node; both go. Graph 2 (alloc Y, fill, free) loses
// its free node: Y then escapes the launch, holds its data, and cudaFree takes it. Graph 3 (alloc
// Z and its free, alloc W, fill, check, free) loses Z's alloc node, which takes Z's free with it:
// a launch holds W alone. tests/python/test_gpu_conformance.py runs it natively, under graphmem as
// it is (the same observations: every removal refused) and with the option (the observations it
// expects: every removal done, the data right, Y freed by cudaFree, 4 MiB reserved for graph 3).
#include "common.cuh"

static const size_t kBytes = 4u << 20, kWords = kBytes / 4;

static __global__ void k_nothing(void) {}

static cudaError_t add_nothing(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                               size_t ndeps) {
    cudaKernelNodeParams k = {};
    k.func = (void *)k_nothing;
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    return cudaGraphAddKernelNode(node, g, deps, ndeps, &k);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    bool built = true;

    // Graph 1: a redundant edge and a spare kernel node removed.
    cudaGraph_t g1 = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t a1, f1, c1, fr1, spare;
    void *x = nullptr;
    built &= add_alloc(&a1, g1, nullptr, 0, kBytes, &x) == cudaSuccess;
    built &= add_fill(&f1, g1, &a1, 1, x, kWords, 11) == cudaSuccess;
    cudaGraphNode_t deps[2] = {f1, a1};
    built &= add_check(&c1, g1, deps, 2, x, kWords, 11, bad) == cudaSuccess;
    built &= add_nothing(&spare, g1, &c1, 1) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&fr1, g1, &spare, 1, x) == cudaSuccess;
    obs_rc("remove_edge", cudaGraphRemoveDependencies(g1, &a1, &c1, nullptr, 1));
    cudaError_t rc = cudaGraphDestroyNode(spare);
    obs_rc("destroy_kernel_node", rc);
    if (rc == cudaSuccess) // the free must still follow the check
        built &= cudaGraphAddDependencies(g1, &c1, &fr1, nullptr, 1) == cudaSuccess;
    cudaGraphExec_t e1 = nullptr;
    obs_rc("graph1_launch", instantiate_and_run(g1, s, &e1));

    // Graph 2: its free node destroyed; the allocation escapes.
    cudaGraph_t g2 = nullptr;
    cudaGraphCreate(&g2, 0);
    cudaGraphNode_t a2, f2, fr2;
    void *y = nullptr;
    built &= add_alloc(&a2, g2, nullptr, 0, kBytes, &y) == cudaSuccess;
    built &= add_fill(&f2, g2, &a2, 1, y, kWords, 22) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&fr2, g2, &f2, 1, y) == cudaSuccess;
    cudaError_t escaped = cudaGraphDestroyNode(fr2);
    obs_rc("destroy_free_node", escaped);
    cudaGraphExec_t e2 = nullptr;
    obs_rc("graph2_launch", instantiate_and_run(g2, s, &e2));
    obs_rc("graph2_relaunch", cudaGraphLaunch(e2, s)); // refused while Y is unfreed
    obs_rc("graph2_relaunch_sync", cudaStreamSynchronize(s));
    if (escaped == cudaSuccess) // else Y was freed in the graph: reading it is not defined
        obs_ok("graph2_escaped_data", check_words(s, y, kWords, 22));
    obs_rc("graph2_cuda_free", cudaFree(y));

    // Graph 3: Z's alloc node destroyed (and with it the meaning of Z's free).
    cudaGraph_t g3 = nullptr;
    cudaGraphCreate(&g3, 0);
    cudaGraphNode_t az, frz, aw, fw, cw, frw;
    void *z = nullptr, *w = nullptr;
    built &= add_alloc(&az, g3, nullptr, 0, 64u << 20, &z) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&frz, g3, &az, 1, z) == cudaSuccess;
    built &= add_alloc(&aw, g3, &frz, 1, kBytes, &w) == cudaSuccess;
    built &= add_fill(&fw, g3, &aw, 1, w, kWords, 33) == cudaSuccess;
    built &= add_check(&cw, g3, &fw, 1, w, kWords, 33, bad) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&frw, g3, &cw, 1, w) == cudaSuccess;
    obs_ok("built", built);
    obs_rc("destroy_alloc_node", cudaGraphDestroyNode(az));
    obs_rc("trim_before_graph3", cudaDeviceGraphMemTrim(0));
    reset_highs();
    cudaGraphExec_t e3 = nullptr;
    obs_rc("graph3_launch", instantiate_and_run(g3, s, &e3));
    GraphMemAttrs a = read_attrs();
    info_attrs("graph3", a);
    obs_yes("graph3_reserved_4MiB", a.reserved_high == kBytes);

    unsigned h = 0;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", h);
    for (cudaGraphExec_t e : {e1, e2, e3})
        if (e)
            cudaGraphExecDestroy(e);
    for (cudaGraph_t g : {g1, g2, g3})
        cudaGraphDestroy(g);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}

// Memset parameters set through the generic node API on a graph allocation: the driver checks
// the target as it does for cudaGraphMemsetNodeSetParams, so graphmem covers it the same way.
// Graph: alloc A -> memset A -> check every word -> free A. cudaGraphNodeSetParams on the memset
// node (a new value), instantiate, cudaGraphExecNodeSetParams (another value), launch and check;
// and the same after a trim, when A's memory is unmapped again.
#include "common.cuh"

static const size_t kBytes = 4u << 20;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t alloc, memset_node, check, free_node;
    void *a = nullptr;
    obs_rc("alloc_node", add_alloc(&alloc, g, nullptr, 0, kBytes, &a));
    cudaMemsetParams mp = memset_words(a, kBytes, 1);
    obs_rc("memset_node", cudaGraphAddMemsetNode(&memset_node, g, &alloc, 1, &mp));
    const uint32_t *words = (const uint32_t *)a;
    size_t n = kBytes / 4;
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeKernel;
    uint32_t value_now = 2;
    void *args[] = {&words, &n, &value_now, &bad};
    cp.kernel.func = (void *)k_check_value;
    cp.kernel.gridDim = dim3(kGrid);
    cp.kernel.blockDim = dim3(kBlock);
    cp.kernel.kernelParams = args;
    obs_rc("check_node", cudaGraphAddNode(&check, g, &memset_node, nullptr, 1, &cp));
    obs_rc("free_node", cudaGraphAddMemFreeNode(&free_node, g, &check, 1, a));

    cudaGraphNodeParams p2 = memset_node_params(a, kBytes, 2);
    obs_rc("node_set_params", cudaGraphNodeSetParams(memset_node, &p2));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("launch_1", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc("sync_1", cudaStreamSynchronize(s));
    for (uint32_t round = 3; round <= 4 && e; round++) {
        char key[48];
        cudaGraphNodeParams p = memset_node_params(a, kBytes, round);
        snprintf(key, sizeof key, "exec_node_set_params_%u", round);
        obs_rc(key, cudaGraphExecNodeSetParams(e, memset_node, &p));
        value_now = round;
        cudaGraphNodeParams c = cp;
        c.kernel.kernelParams = args;
        snprintf(key, sizeof key, "exec_check_set_params_%u", round);
        obs_rc(key, cudaGraphExecNodeSetParams(e, check, &c));
        snprintf(key, sizeof key, "launch_%u", round);
        obs_rc(key, cudaGraphLaunch(e, s));
        snprintf(key, sizeof key, "sync_%u", round);
        obs_rc(key, cudaStreamSynchronize(s));
        snprintf(key, sizeof key, "trim_%u", round);
        obs_rc(key, cudaDeviceGraphMemTrim(0)); // A unmapped again before the next set-params
    }
    unsigned h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", h);
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}

// A memset inside a conditional body on the graph's own allocation: alloc A -> a kernel setting
// the IF condition -> IF node whose body memsets A -> a kernel checking every word -> free A. The
// driver checks the body's memset target when it instantiates (measured on an H100, driver 580:
// native success, graphmem cudaErrorInvalidValue before its instantiation covered the bodies).
#include "common.cuh"

static const size_t kBytes = 4u << 20;
static const uint32_t kValue = 5;

static __global__ void k_set_condition(cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, 1);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t al, set, cond, body_memset, check, fr;
    void *a = nullptr;
    obs_rc("alloc_node", add_alloc(&al, g, nullptr, 0, kBytes, &a));
    cudaGraphConditionalHandle h;
    obs_rc("handle", cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    void *set_args[] = {&h};
    cudaKernelNodeParams sp = {};
    sp.func = (void *)k_set_condition;
    sp.gridDim = dim3(1);
    sp.blockDim = dim3(1);
    sp.kernelParams = set_args;
    obs_rc("set_node", cudaGraphAddKernelNode(&set, g, &al, 1, &sp));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h;
    cp.conditional.type = cudaGraphCondTypeIf;
    cp.conditional.size = 1;
    obs_rc("if_node", cudaGraphAddNode(&cond, g, &set, nullptr, 1, &cp));
    cudaMemsetParams m = memset_words(a, kBytes, kValue);
    obs_rc("body_memset",
           cudaGraphAddMemsetNode(&body_memset, cp.conditional.phGraph_out[0], nullptr, 0, &m));
    obs_rc("check_node",
           add_check(&check, g, &cond, 1, a, kBytes / 4, kValue, bad, (const void *)k_check_value));
    obs_rc("free_node", cudaGraphAddMemFreeNode(&fr, g, &check, 1, a));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("launch", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc("sync", cudaStreamSynchronize(s));
    unsigned wrong = 1;
    cudaMemcpy(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", e ? (long long)wrong : -1LL);
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}

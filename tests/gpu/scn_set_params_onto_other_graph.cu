// A graph without memory nodes whose memset node is set, through the node alone
// (cudaGraphMemsetNodeSetParams), onto the allocation of another graph that has not launched yet:
// the driver checks the target when the graph is instantiated, and under graphmem that memory is
// not mapped before the other graph's launch unless graphmem covers it. G: alloc A (escapes);
// H: memset (made on a plain buffer, then set onto A) -> check A. After the set, an unrelated
// graph's launch (under graphmem it unmaps the scratch pages the setter's cover left idle); then
// instantiate both, launch G then H, check; free A.
#include "common.cuh"

static const size_t kBytes = 4u << 20;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    void *ordinary = nullptr;
    obs_rc("ordinary", cudaMalloc(&ordinary, kBytes));

    cudaGraph_t g, h;
    cudaGraphCreate(&g, 0);
    cudaGraphCreate(&h, 0);
    cudaGraphNode_t alloc, memset_node, check;
    void *a = nullptr;
    obs_rc("alloc_node", add_alloc(&alloc, g, nullptr, 0, kBytes, &a));
    cudaMemsetParams mp = memset_words(ordinary, kBytes, 1);
    obs_rc("memset_node", cudaGraphAddMemsetNode(&memset_node, h, nullptr, 0, &mp));
    obs_rc("check_node", add_check(&check, h, &memset_node, 1, a, kBytes / 4, 6, bad,
                                   (const void *)k_check_value));
    cudaMemsetParams onto_a = memset_words(a, kBytes, 6);
    obs_rc("set_params", cudaGraphMemsetNodeSetParams(memset_node, &onto_a));
    launch_unrelated_graph(s, kBytes, "other_launch");

    cudaGraphExec_t ge = nullptr, he = nullptr;
    obs_rc("instantiate_g", cudaGraphInstantiate(&ge, g, 0));
    obs_rc("instantiate_h", cudaGraphInstantiate(&he, h, 0));
    obs_rc("launch_g", ge ? cudaGraphLaunch(ge, s) : cudaErrorInvalidValue);
    obs_rc("launch_h", ge && he ? cudaGraphLaunch(he, s) : cudaErrorInvalidValue);
    obs_rc("sync", cudaStreamSynchronize(s));
    unsigned words_wrong = 1;
    cudaMemcpy(&words_wrong, bad, sizeof words_wrong, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", words_wrong);
    if (ge)
        obs_rc("free_a", cudaFreeAsync(a, s));
    obs_rc("sync_free", cudaStreamSynchronize(s));
    if (he)
        cudaGraphExecDestroy(he);
    if (ge)
        cudaGraphExecDestroy(ge);
    cudaGraphDestroy(h);
    cudaGraphDestroy(g);
    cudaFree(ordinary);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}

// A clone of a graph holding a child graph node, given an allocation A and, inside the clone's copy
// of the child graph, a memset onto A (ordered after A's node by an added edge), then a check and
// A's free. The clone's child graph is a copy graphmem never registered; the driver checks the
// memset's target when the clone is instantiated. After the memset is added, an unrelated graph's
// launch (under graphmem it unmaps the scratch pages the add's cover left idle); then
// instantiate, launch, check.
#include "common.cuh"

static const size_t kBytes = 4u << 20;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();

    cudaGraph_t original, inner;
    cudaGraphCreate(&original, 0);
    cudaGraphCreate(&inner, 0);
    cudaGraphNode_t inner_empty, child;
    obs_rc("inner_empty", cudaGraphAddEmptyNode(&inner_empty, inner, nullptr, 0));
    obs_rc("child_node", cudaGraphAddChildGraphNode(&child, original, nullptr, 0, inner));

    cudaGraph_t clone = nullptr;
    obs_rc("clone", cudaGraphClone(&clone, original));
    cudaGraphNode_t child_in_clone = nullptr;
    obs_rc("find_in_clone", cudaGraphNodeFindInClone(&child_in_clone, child, clone));
    cudaGraph_t clone_child = nullptr;
    obs_rc("clone_child_graph", cudaGraphChildGraphNodeGetGraph(child_in_clone, &clone_child));

    cudaGraphNode_t alloc, memset_node, check, free_node;
    void *a = nullptr;
    obs_rc("alloc_node", add_alloc(&alloc, clone, nullptr, 0, kBytes, &a));
    obs_rc("edge_alloc_child",
           cudaGraphAddDependencies(clone, &alloc, &child_in_clone, nullptr, 1));
    cudaMemsetParams mp = memset_words(a, kBytes, 3);
    obs_rc("memset_in_child", cudaGraphAddMemsetNode(&memset_node, clone_child, nullptr, 0, &mp));
    obs_rc("check_node", add_check(&check, clone, &child_in_clone, 1, a, kBytes / 4, 3, bad,
                                   (const void *)k_check_value));
    obs_rc("free_node", cudaGraphAddMemFreeNode(&free_node, clone, &check, 1, a));
    launch_unrelated_graph(s, kBytes, "other_launch");

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, clone, 0));
    obs_rc("launch", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc("sync", cudaStreamSynchronize(s));
    unsigned h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", h);
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(clone);
    cudaGraphDestroy(original);
    cudaGraphDestroy(inner);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}

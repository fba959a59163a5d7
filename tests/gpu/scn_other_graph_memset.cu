// A graph without memory nodes whose memset targets another graph's allocation that was never
// launched (so never mapped): graph G1 allocates A (it escapes); graph G2 holds only a memset of
// A. The driver instantiates G2 before G1 ever launched (measured on an H100, driver 580), and so
// must graphmem, whose addresses are mapped only at launch: it notes G2 when the memset node is
// added and covers A while G2 is instantiated. Also a clone of G2, and a graph holding G2 as a
// child graph; then G1 launches, G2 runs, and the data is checked. Before G2 is instantiated,
// another graph touching A is destroyed, and a child node whose graph touches A: neither may take
// G2's note with it (a destroy once dropped every graph's); nor may a child node destroyed in a
// graph with a memset of its own take that graph's note. An unrelated graph launches before each
// instantiation: under graphmem it unmaps the scratch pages an earlier cover left idle, so each
// instantiation is covered by its own note.
#include "common.cuh"

static const size_t kBytes = 4u << 20;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g1, g2, clone = nullptr, parent;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al, n, child;
    void *a = nullptr;
    obs_rc("g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    cudaGraphCreate(&g2, 0);
    cudaMemsetParams m = memset_words(a, kBytes, 0x77u);
    obs_rc("g2_memset_node", cudaGraphAddMemsetNode(&n, g2, nullptr, 0, &m));
    cudaGraph_t other, holder;
    cudaGraphNode_t other_memset, holder_child;
    cudaGraphCreate(&other, 0);
    obs_rc("other_memset_node", cudaGraphAddMemsetNode(&other_memset, other, nullptr, 0, &m));
    cudaGraphCreate(&holder, 0);
    obs_rc("holder_child_node",
           cudaGraphAddChildGraphNode(&holder_child, holder, nullptr, 0, other));
    obs_rc("holder_destroy_child_node", cudaGraphDestroyNode(holder_child));
    obs_rc("other_destroy", cudaGraphDestroy(other));
    cudaGraphDestroy(holder);
    // A graph holding G2 as a child and a memset of its own: destroying the child node leaves
    // its own memset to cover.
    cudaGraph_t own;
    cudaGraphNode_t own_child, own_memset;
    cudaGraphExec_t eo = nullptr;
    cudaGraphCreate(&own, 0);
    obs_rc("own_child_node", cudaGraphAddChildGraphNode(&own_child, own, nullptr, 0, g2));
    obs_rc("own_memset_node", cudaGraphAddMemsetNode(&own_memset, own, nullptr, 0, &m));
    obs_rc("own_destroy_child_node", cudaGraphDestroyNode(own_child));
    launch_unrelated_graph(s, kBytes, "unrelated_before_own");
    obs_rc("own_instantiate_before_g1_launch", cudaGraphInstantiate(&eo, own, 0));
    if (eo)
        cudaGraphExecDestroy(eo);
    cudaGraphDestroy(own);
    cudaGraphExec_t e2 = nullptr, ec = nullptr, ep = nullptr, e1 = nullptr;
    launch_unrelated_graph(s, kBytes, "unrelated_before_g2");
    obs_rc("g2_instantiate_before_g1_launch", cudaGraphInstantiate(&e2, g2, 0));
    obs_rc("clone", cudaGraphClone(&clone, g2));
    launch_unrelated_graph(s, kBytes, "unrelated_before_clone");
    obs_rc("clone_instantiate",
           clone ? cudaGraphInstantiate(&ec, clone, 0) : cudaErrorInvalidValue);
    cudaGraphCreate(&parent, 0);
    obs_rc("child_node", cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, g2));
    launch_unrelated_graph(s, kBytes, "unrelated_before_parent");
    obs_rc("parent_instantiate", cudaGraphInstantiate(&ep, parent, 0));
    obs_rc("g1_instantiate", cudaGraphInstantiate(&e1, g1, 0));
    obs_rc("g1_launch", e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_rc("g2_launch", e2 ? cudaGraphLaunch(e2, s) : cudaErrorInvalidValue);
    obs_rc("sync", cudaStreamSynchronize(s));
    obs_int("wrong_words", wrong_words(s, a, kBytes, 0x77u));
    obs_rc("free_a", cudaFree(a));
    for (cudaGraphExec_t e : {e1, e2, ec, ep})
        if (e)
            cudaGraphExecDestroy(e);
    for (cudaGraph_t g : {g1, g2, clone, parent})
        if (g)
            cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    return 0;
}

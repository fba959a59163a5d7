// A memset inside a conditional body of a child graph onto another graph's allocation that has
// not launched (§A1.16 and §A1.17 together): G1 allocates A (it escapes); P holds a child node
// made from an empty graph, and the IF node (condition 1 by default) whose body memsets A is added
// to the child graph afterwards: through cudaGraphChildGraphNodeGetGraph for a child by copy, or
// to the graph itself when it was moved in (the driver refuses a graph holding a conditional node
// as a child either way). The driver checks the body's memset target when P is instantiated,
// before G1 ever launched; under graphmem A is mapped only at launch, so the instantiation must
// cover the bodies of P's child graphs too (it once covered the bodies of P itself only). An
// unrelated graph launches before each instantiation (under graphmem it unmaps the scratch pages
// an earlier cover left idle); then G1 launches, P runs, and A is checked.
#include "common.cuh"

static const size_t kBytes = 4u << 20;
static const uint32_t kValue = 0x5au;

// An IF node (condition 1 by default) in `x` whose body memsets `a`.
static void add_body_memset(const char *round, cudaGraph_t x, void *a) {
    cudaGraphConditionalHandle h;
    obs_key(round, "handle",
            cudaGraphConditionalHandleCreate(&h, x, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeConditional;
    np.conditional.handle = h;
    np.conditional.type = cudaGraphCondTypeIf;
    np.conditional.size = 1;
    cudaGraphNode_t cond = nullptr, set = nullptr;
    obs_key(round, "if_node", cudaGraphAddNode(&cond, x, nullptr, nullptr, 0, &np));
    cudaMemsetParams m = memset_words(a, kBytes, kValue);
    obs_key(round, "body_memset",
            np.conditional.phGraph_out
                ? cudaGraphAddMemsetNode(&set, np.conditional.phGraph_out[0], nullptr, 0, &m)
                : cudaErrorInvalidValue);
}

static void run_round(const char *round, cudaGraphChildGraphNodeOwnership own, cudaStream_t s) {
    cudaGraph_t g1 = nullptr, p = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al, child;
    void *a = nullptr;
    obs_key(round, "g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    cudaGraph_t x = nullptr, inside = nullptr;
    cudaGraphCreate(&x, 0);
    cudaGraphCreate(&p, 0);
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeGraph;
    cp.graph.graph = x;
    cp.graph.ownership = own;
    obs_key(round, "child_node", cudaGraphAddNode(&child, p, nullptr, nullptr, 0, &cp));
    obs_key(round, "child_graph", cudaGraphChildGraphNodeGetGraph(child, &inside));
    if (inside)
        add_body_memset(round, inside, a);
    run_before_allocating_graph(round, p, g1, a, kBytes, kValue, s);
    cudaGraphDestroy(p); // a moved X goes with it
    if (own != cudaGraphChildGraphOwnershipMove)
        cudaGraphDestroy(x);
    cudaGraphDestroy(g1);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    run_round("moved", cudaGraphChildGraphOwnershipMove, s);
    run_round("copied", cudaGraphChildGraphOwnershipClone, s);
    cudaStreamDestroy(s);
    return 0;
}

// Return codes of cudaGraphNodeSetParams with a child-graph parameter where graphmem could answer
// before the driver looks: a new graph holding memory nodes with a parameter malformed otherwise
// (ownership out of range, a reserved word set), the parent itself as the new graph, a NULL graph,
// and memory nodes (alloc, free; markers under graphmem) or an empty node given a child-graph
// parameter. On an H200 (driver 580) graphmem answered each as the driver did.
#include "entries.cuh"

static const size_t kBytes = 1u << 20;

static cudaGraphNodeParams child_params(cudaGraph_t g, int ownership) {
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeGraph;
    np.graph.graph = g;
    np.graph.ownership = (cudaGraphChildGraphNodeOwnership)ownership;
    return np;
}

static void codes_case(void) {
    cudaGraph_t x = nullptr, p = nullptr, m = nullptr, plain = nullptr;
    cudaGraphCreate(&x, 0);
    cudaGraphNode_t e;
    cudaGraphAddEmptyNode(&e, x, nullptr, 0);
    cudaGraphCreate(&p, 0);
    cudaGraphNode_t child = nullptr;
    obs_rc("p_child", cudaGraphAddChildGraphNode(&child, p, nullptr, 0, x));
    cudaGraphCreate(&m, 0);
    cudaGraphNode_t al = nullptr, fr = nullptr;
    void *a = nullptr;
    obs_rc("m_alloc", add_alloc(&al, m, nullptr, 0, kBytes, &a));
    obs_rc("m_free", cudaGraphAddMemFreeNode(&fr, m, &al, 1, a));
    cudaGraphCreate(&plain, 0);
    cudaGraphAddEmptyNode(&e, plain, nullptr, 0);

    cudaGraphNodeParams np = child_params(m, 0);
    obs_rc("memory_graph_clone", cudaGraphNodeSetParams(child, &np));
    np = child_params(m, 2);
    obs_rc("memory_graph_ownership_2", cudaGraphNodeSetParams(child, &np));
    np = child_params(m, 0);
    np.reserved0[0] = 1;
    obs_rc("memory_graph_reserved0", cudaGraphNodeSetParams(child, &np));
    np = child_params(m, 0);
    np.reserved2 = 1;
    obs_rc("memory_graph_reserved2", cudaGraphNodeSetParams(child, &np));
    np = child_params(p, 0);
    obs_rc("own_parent", cudaGraphNodeSetParams(child, &np));
    np = child_params(nullptr, 0);
    obs_rc("null_graph", cudaGraphNodeSetParams(child, &np));
    // Memory nodes given a child-graph parameter (a plain graph, and the memory graph itself).
    np = child_params(plain, 0);
    obs_rc("alloc_node_plain_graph", cudaGraphNodeSetParams(al, &np));
    obs_rc("free_node_plain_graph", cudaGraphNodeSetParams(fr, &np));
    np = child_params(m, 0);
    obs_rc("alloc_node_memory_graph", cudaGraphNodeSetParams(al, &np));
    // An empty node given the memory graph (graphmem: NOT_SUPPORTED only for child nodes).
    np = child_params(m, 0);
    obs_rc("empty_node_memory_graph", cudaGraphNodeSetParams(e, &np));
    for (cudaGraph_t g : {p, x, m, plain})
        cudaGraphDestroy(g);
}

int main() {
    run_isolated("codes", codes_case);
    return 0;
}

// Memory nodes in child graphs the driver copied (§A3.6 for copies): a graph MID holds a child
// node by copy of INNER. Its clone's child graph, and the grandchild inside a copy of MID added
// as another graph's child node, are child graphs with handles of their own, and the driver
// refuses memory nodes in them, added explicitly or captured (cudaStreamBeginCaptureToGraph).
// graphmem once recorded only the child graphs of nodes added through it, so it served them.
#include "common.cuh"

static const size_t kBytes = 1u << 20;

// The graph of the only child-graph node of `g` (nullptr: none).
static cudaGraph_t only_child_of(cudaGraph_t g) {
    cudaGraphNode_t nodes[4];
    size_t count = 4;
    if (cudaGraphGetNodes(g, nodes, &count) != cudaSuccess)
        return nullptr;
    for (size_t i = 0; i < count && i < 4; i++) {
        cudaGraphNodeType type;
        cudaGraph_t child = nullptr;
        if (cudaGraphNodeGetType(nodes[i], &type) == cudaSuccess &&
            type == cudaGraphNodeTypeGraph &&
            cudaGraphChildGraphNodeGetGraph(nodes[i], &child) == cudaSuccess)
            return child;
    }
    return nullptr;
}

// Both ways of putting a memory node into `g`, observed under `tag`.
static void try_memory_nodes(const char *tag, cudaStream_t s, cudaGraph_t g) {
    char key[64];
    snprintf(key, sizeof key, "%s_found", tag);
    obs_yes(key, g != nullptr);
    if (!g)
        return;
    void *p = nullptr;
    cudaGraphNode_t node = nullptr;
    snprintf(key, sizeof key, "%s_add_alloc", tag);
    obs_rc(key, add_alloc(&node, g, nullptr, 0, kBytes, &p));
    snprintf(key, sizeof key, "%s_capture_begin", tag);
    obs_rc(key,
           cudaStreamBeginCaptureToGraph(s, g, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
    void *captured = nullptr;
    snprintf(key, sizeof key, "%s_capture_malloc", tag);
    obs_rc(key, cudaMallocAsync(&captured, kBytes, s));
    cudaGraph_t ended = nullptr;
    snprintf(key, sizeof key, "%s_capture_end", tag);
    obs_rc(key, cudaStreamEndCapture(s, &ended));
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t inner, mid, top;
    cudaGraphCreate(&inner, 0);
    cudaGraphCreate(&mid, 0);
    cudaGraphCreate(&top, 0);
    cudaGraphNode_t empty, mid_child, top_child;
    obs_rc("inner_empty", cudaGraphAddEmptyNode(&empty, inner, nullptr, 0));
    obs_rc("mid_child", cudaGraphAddChildGraphNode(&mid_child, mid, nullptr, 0, inner));
    // The child graph of MID itself, as scn_restrictions checks it (recorded before as well).
    try_memory_nodes("mid_child", s, only_child_of(mid));

    cudaGraph_t clone = nullptr;
    obs_rc("clone", cudaGraphClone(&clone, mid));
    try_memory_nodes("clone_child", s, clone ? only_child_of(clone) : nullptr);

    obs_rc("top_child", cudaGraphAddChildGraphNode(&top_child, top, nullptr, 0, mid));
    cudaGraph_t mid_copy = only_child_of(top);
    try_memory_nodes("grandchild", s, mid_copy ? only_child_of(mid_copy) : nullptr);

    // Each graph still instantiates and runs (no memory node went in anywhere).
    run_graph_observed("top", top, s);
    if (clone)
        cudaGraphDestroy(clone);
    for (cudaGraph_t g : {top, mid, inner})
        cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    return 0;
}

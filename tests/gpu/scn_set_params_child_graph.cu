// A child-graph node's graph replaced through the node alone (cudaGraphNodeSetParams with a
// cudaGraphNodeTypeGraph parameter), each case in a process of its own (entries.cuh). P holds a
// child node made from a plain graph X (a fill of an ordinary buffer); its graph is then set to:
//   memory    a graph with an allocation node and its free node (memory nodes: a child graph may
//             not hold them); memory_moved the same with the parameter's ownership MOVE;
//   captured  a graph holding a captured cudaMallocAsync/cudaFreeAsync pair;
//   plain     a graph with a memset of an ordinary buffer, after which an allocation node is added
//             to the node's graph (cudaGraphChildGraphNodeGetGraph: a child graph refuses them);
//   touching  a graph whose memset targets another graph's allocation A that has not launched:
//             P is instantiated before A's graph launches (an unrelated graph launches first, so
//             under graphmem no scratch page an earlier cover left stands in), then A's graph
//             launches, P runs, and A is checked.
// Each case then instantiates P, launches it and reports the result.
#include "entries.cuh"

static const size_t kBytes = 4u << 20;
static const uint32_t kValue = 0x3cu;

// P: a child node made from X, which fills `ordinary`. The node in *child.
static cudaGraph_t parent_with_child(void *ordinary, cudaGraphNode_t *child) {
    cudaGraph_t x = nullptr, p = nullptr;
    cudaGraphCreate(&x, 0);
    cudaGraphNode_t fill;
    obs_rc("x_fill", add_fill(&fill, x, nullptr, 0, ordinary, kBytes / 4, 1));
    cudaGraphCreate(&p, 0);
    obs_rc("p_child", cudaGraphAddChildGraphNode(child, p, nullptr, 0, x));
    cudaGraphDestroy(x); // P holds a copy
    return p;
}

static void with_parent(void (*body)(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s)) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *ordinary = nullptr;
    obs_rc("ordinary", cudaMalloc(&ordinary, kBytes));
    cudaGraphNode_t child = nullptr;
    cudaGraph_t p = parent_with_child(ordinary, &child);
    body(p, child, s);
    cudaGraphDestroy(p);
    cudaFree(ordinary);
    cudaStreamDestroy(s);
}

static void memory_set(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s,
                       cudaGraphChildGraphNodeOwnership own) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t al, fr;
    void *a = nullptr;
    obs_rc("g_alloc", add_alloc(&al, g, nullptr, 0, kBytes, &a));
    obs_rc("g_free", cudaGraphAddMemFreeNode(&fr, g, &al, 1, a));
    cudaError_t rc = set_child_graph(child, g, own);
    obs_rc("set_child", rc);
    run_graph_observed("p", p, s);
    if (rc != cudaSuccess || own != cudaGraphChildGraphOwnershipMove)
        cudaGraphDestroy(g); // a moved graph goes with P
}

static void memory_body(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s) {
    memory_set(p, child, s, cudaGraphChildGraphOwnershipClone);
}

static void memory_moved_body(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s) {
    memory_set(p, child, s, cudaGraphChildGraphOwnershipMove);
}

static void captured_body(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s) {
    cudaGraph_t g = nullptr;
    void *a = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess) {
        rc = cudaMallocAsync(&a, kBytes, s);
        if (rc == cudaSuccess)
            rc = fill_words(s, a, kBytes / 4, 2);
        if (rc == cudaSuccess)
            rc = cudaFreeAsync(a, s);
    }
    if (!end_capture_observed(s, rc, &g))
        return;
    obs_rc("set_child", set_child_graph(child, g));
    run_graph_observed("p", p, s);
    cudaGraphDestroy(g);
}

static void plain_body(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s) {
    void *other = nullptr;
    obs_rc("other", cudaMalloc(&other, kBytes));
    cudaGraph_t y = nullptr;
    cudaGraphCreate(&y, 0);
    cudaMemsetParams m = memset_words(other, kBytes, kValue);
    cudaGraphNode_t set;
    obs_rc("y_memset", cudaGraphAddMemsetNode(&set, y, nullptr, 0, &m));
    obs_rc("set_child", set_child_graph(child, y));
    cudaGraph_t inside = nullptr;
    obs_rc("child_graph", cudaGraphChildGraphNodeGetGraph(child, &inside));
    obs_same("child_graph_is_y", inside, y);
    cudaGraphNode_t al = nullptr;
    void *a = nullptr;
    obs_rc("alloc_in_child",
           inside ? add_alloc(&al, inside, nullptr, 0, kBytes, &a) : cudaErrorInvalidValue);
    run_graph_observed("p", p, s);
    obs_int("other_wrong_words", wrong_words(s, other, kBytes, kValue));
    cudaGraphDestroy(y);
    cudaFree(other);
}

static void touching_body(cudaGraph_t p, cudaGraphNode_t child, cudaStream_t s) {
    cudaGraph_t g1 = nullptr, y = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al, set;
    void *a = nullptr;
    obs_rc("g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    cudaGraphCreate(&y, 0);
    cudaMemsetParams m = memset_words(a, kBytes, kValue);
    obs_rc("y_memset", cudaGraphAddMemsetNode(&set, y, nullptr, 0, &m));
    obs_rc("set_child", set_child_graph(child, y));
    cudaGraphDestroy(y); // P's node holds a copy, if the set took
    run_before_allocating_graph("", p, g1, a, kBytes, kValue, s);
    cudaGraphDestroy(g1);
}

static void memory_case(void) {
    with_parent(memory_body);
}

static void memory_moved_case(void) {
    with_parent(memory_moved_body);
}

static void captured_case(void) {
    with_parent(captured_body);
}

static void plain_case(void) {
    with_parent(plain_body);
}

static void touching_case(void) {
    with_parent(touching_body);
}

int main() {
    run_isolated("memory", memory_case);
    run_isolated("memory_moved", memory_moved_case);
    run_isolated("captured", captured_case);
    run_isolated("plain", plain_case);
    run_isolated("touching", touching_case);
    return 0;
}

// cudaGraphNodeSetParams on P's child node N with a graph from inside N's current graph C: C
// itself (round `self`) or the grandchild D of C's own child node (round `grandchild`), D holding
// a memset onto another graph's allocation A that has not launched. The driver refuses both
// (cudaErrorNotSupported, H200, driver 580) and P keeps its graph: P instantiates (§A1.16), runs
// after A's graph launched, and A holds the memset's value. graphmem reads the new graph's notes
// before it forgets anything of C, and answers the same.
#include "entries.cuh"

static const size_t kBytes = 4u << 20;
static const uint32_t kValue = 0x6bu;

static cudaGraph_t only_child_of(cudaGraph_t g, cudaGraphNode_t *node_out = nullptr) {
    cudaGraphNode_t nodes[8];
    size_t n = graph_nodes(g, nodes, 8);
    for (size_t i = 0; i < n; i++) {
        cudaGraphNodeType t;
        cudaGraph_t c = nullptr;
        if (cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess && t == cudaGraphNodeTypeGraph &&
            cudaGraphChildGraphNodeGetGraph(nodes[i], &c) == cudaSuccess) {
            if (node_out)
                *node_out = nodes[i];
            return c;
        }
    }
    return nullptr;
}

// G1 allocates A (escapes). P: N <- copy of X; X: child node <- copy of D0; D0: memset A.
static void round_(bool self) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g1 = nullptr, d0 = nullptr, x = nullptr, p = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al, set, dn, n = nullptr;
    void *a = nullptr;
    obs_rc("g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    cudaGraphCreate(&d0, 0);
    cudaMemsetParams m = memset_words(a, kBytes, kValue);
    obs_rc("d0_memset", cudaGraphAddMemsetNode(&set, d0, nullptr, 0, &m));
    cudaGraphCreate(&x, 0);
    obs_rc("x_child", cudaGraphAddChildGraphNode(&dn, x, nullptr, 0, d0));
    cudaGraphCreate(&p, 0);
    obs_rc("p_child", cudaGraphAddChildGraphNode(&n, p, nullptr, 0, x));
    cudaGraph_t c = nullptr;
    obs_rc("c", cudaGraphChildGraphNodeGetGraph(n, &c));
    cudaGraph_t d = only_child_of(c);
    obs_yes("d_found", d != nullptr);
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeGraph;
    np.graph.graph = self ? c : d;
    np.graph.ownership = cudaGraphChildGraphOwnershipClone;
    cudaError_t rc = cudaGraphNodeSetParams(n, &np);
    obs_rc("set_child_from_inside", rc);
    cudaGraph_t now = nullptr;
    cudaGraphChildGraphNodeGetGraph(n, &now);
    (void)cudaGetLastError();
    obs_yes("node_graph_changed", now != c);
    // "self": the copy holds a copy of D; a memory node in that grandchild is refused natively.
    if (self && rc == cudaSuccess) {
        cudaGraph_t grand = only_child_of(now);
        cudaGraphNode_t al2 = nullptr;
        void *b = nullptr;
        obs_rc("alloc_in_copied_grandchild",
               grand ? add_alloc(&al2, grand, nullptr, 0, kBytes, &b) : cudaErrorInvalidValue);
    }
    run_before_allocating_graph("", p, g1, a, kBytes, kValue, s);
    for (cudaGraph_t g : {p, x, d0, g1})
        cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

static void self_case(void) {
    round_(true);
}

static void grandchild_case(void) {
    round_(false);
}

int main() {
    run_isolated("self", self_case);
    run_isolated("grandchild", grandchild_case);
    return 0;
}

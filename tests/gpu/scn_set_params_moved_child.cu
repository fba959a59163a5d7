// cudaGraphNodeSetParams on a child node whose current graph holds memory nodes: M (alloc A,
// fill A, free A) moved into P, then the node's graph set to a plain X (a copy). The driver
// refuses (cudaErrorNotSupported, H200, driver 580: §A3.17); graphmem once checked only the new
// graph, so the driver, seeing M's markers as empty nodes, replaced M while the engine kept M's
// markers under P: the set succeeded, and a node the driver later gave a dead marker's handle was
// reported as a memory node (and refused by cudaGraphDestroyNode). Each case in a process of its
// own: `replace` observes the set, P run, a second instantiation and a clone of P (both refused
// for a graph with memory nodes, §A3.7, §A3.3); `reuse` then makes 512 kernel and empty nodes in a
// new graph and counts those reported as memory nodes (natively none).
#include "entries.cuh"

static const size_t kBytes = 1u << 20;

// P holding M moved in; the child node in *node. `ordinary` is filled by X later.
static cudaGraph_t parent_with_moved(cudaGraphNode_t *node) {
    cudaGraph_t m = nullptr, p = nullptr;
    cudaGraphCreate(&m, 0);
    cudaGraphNode_t al = nullptr, fill = nullptr, fr = nullptr;
    void *a = nullptr;
    obs_rc("m_alloc", add_alloc(&al, m, nullptr, 0, kBytes, &a));
    obs_rc("m_fill", add_fill(&fill, m, &al, 1, a, kBytes / 4, 7));
    obs_rc("m_free", cudaGraphAddMemFreeNode(&fr, m, &fill, 1, a));
    cudaGraphCreate(&p, 0);
    obs_rc("p_moved_child", add_moved_child(p, m, node));
    return p;
}

static cudaGraph_t plain_graph(void *ordinary) {
    cudaGraph_t x = nullptr;
    cudaGraphCreate(&x, 0);
    cudaGraphNode_t fill;
    obs_rc("x_fill", add_fill(&fill, x, nullptr, 0, ordinary, kBytes / 4, 3));
    return x;
}

static void replace_and_probe(bool reuse) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *ordinary = nullptr;
    obs_rc("ordinary", cudaMalloc(&ordinary, kBytes));
    cudaGraphNode_t node = nullptr;
    cudaGraph_t p = parent_with_moved(&node);
    cudaGraph_t x = plain_graph(ordinary);
    cudaError_t rc = set_child_graph(node, x);
    obs_rc("set_child_over_moved", rc);
    cudaGraph_t inside = nullptr;
    obs_rc("child_graph", cudaGraphChildGraphNodeGetGraph(node, &inside));
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    obs_rc("p_instantiate", cudaGraphInstantiate(&e1, p, 0));
    obs_rc("p_launch", e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_rc("p_sync", cudaStreamSynchronize(s));
    if (rc == cudaSuccess)
        obs_int("ordinary_wrong_words", wrong_words(s, ordinary, kBytes, 3));
    // A graph with memory nodes: refused (§A3.7, §A3.3). Without: both succeed.
    obs_rc("p_instantiate_second", cudaGraphInstantiate(&e2, p, 0));
    cudaGraph_t clone = nullptr;
    obs_rc("p_clone", cudaGraphClone(&clone, p));
    if (reuse) {
        cudaGraph_t q = nullptr;
        cudaGraphCreate(&q, 0);
        int memory_types = 0, destroy_refused = 0;
        for (int i = 0; i < 512; i++) {
            cudaGraphNode_t n = nullptr;
            cudaError_t add = (i & 1) ? add_fill(&n, q, nullptr, 0, ordinary, 16, 1)
                                      : cudaGraphAddEmptyNode(&n, q, nullptr, 0);
            if (add != cudaSuccess)
                continue;
            cudaGraphNodeType t;
            if (cudaGraphNodeGetType(n, &t) == cudaSuccess &&
                (t == cudaGraphNodeTypeMemAlloc || t == cudaGraphNodeTypeMemFree)) {
                memory_types++;
                if (cudaGraphDestroyNode(n) == cudaErrorNotSupported)
                    destroy_refused++;
            }
        }
        (void)cudaGetLastError();
        obs_int("q_nodes_reported_as_memory_nodes", memory_types);
        obs_int("q_nodes_destroy_refused", destroy_refused);
        cudaGraphDestroy(q);
    }
    for (cudaGraphExec_t e : {e1, e2})
        if (e)
            cudaGraphExecDestroy(e);
    if (clone)
        cudaGraphDestroy(clone);
    cudaGraphDestroy(x);
    cudaGraphDestroy(p);
    cudaFree(ordinary);
    cudaStreamDestroy(s);
}

static void replace_case(void) {
    replace_and_probe(false);
}

static void reuse_case(void) {
    replace_and_probe(true);
}

int main() {
    run_isolated("replace", replace_case);
    run_isolated("reuse", reuse_case);
    return 0;
}

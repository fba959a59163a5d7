// Conditional bodies holding memory nodes that reach an exec, without GRAPHMEM_LIFT_RESTRICTIONS.
// Each case in a process of its own.
//   update       E0 from G0 (IF, condition 1; body: empty -> fill(ordinary, 1) -> empty) updated
//                (cudaGraphExecUpdate) from H (IF; body: alloc A -> fill(A, 2) -> free A).
//   child_swap   E of P (child node N; an IF node added to N's graph afterwards, body as G0's)
//                given C1 (an IF node whose body allocates, fills, frees) through
//                cudaGraphExecChildGraphNodeSetParams.
//   clone_touch  P's child graph gets an IF node afterwards whose body memsets another graph's
//                allocation that has not launched; P cloned, and added to Q as a child by copy.
//   clone_memory the same with a body that allocates, fills, frees.
// The driver (H200, driver 580) refuses the update (cudaErrorGraphExecUpdateFailure, result
// NodeTypeChanged) and the child swap (cudaErrorGraphExecUpdateFailure), and the exec runs as
// before; it refuses the clones and child copies (cudaErrorNotSupported). graphmem once forwarded
// the update and the swap (the driver saw the markers as empty nodes and took them), and the
// updated exec's launch ended in cudaErrorIllegalAddress.
#include "entries.cuh"

static const size_t kBytes = 1u << 20;
static const size_t kWords = kBytes / 4;

static void plain_body(cudaGraph_t b, void *ordinary, uint32_t v) {
    cudaGraphNode_t e1, k, e2;
    cudaGraphAddEmptyNode(&e1, b, nullptr, 0);
    add_fill(&k, b, &e1, 1, ordinary, kWords, v);
    cudaGraphAddEmptyNode(&e2, b, &k, 1);
}

static cudaGraphNode_t g_body_alloc, g_body_free; // the last memory_body's

static void memory_body(cudaGraph_t b, const char *key) {
    cudaGraphNode_t al = nullptr, k, fr = nullptr;
    void *a = nullptr;
    cudaError_t rc = add_alloc(&al, b, nullptr, 0, kBytes, &a);
    if (rc == cudaSuccess)
        rc = add_fill(&k, b, &al, 1, a, kWords, 2);
    if (rc == cudaSuccess)
        rc = cudaGraphAddMemFreeNode(&fr, b, &k, 1, a);
    obs_rc(key, rc);
    g_body_alloc = al;
    g_body_free = fr;
}

static void update_case(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *ordinary = nullptr;
    cudaMalloc(&ordinary, kBytes);
    cudaGraph_t g0 = nullptr, h = nullptr;
    cudaGraphCreate(&g0, 0);
    cudaGraph_t b0 = add_if_node(g0, "g0_if");
    if (b0)
        plain_body(b0, ordinary, 1);
    cudaGraphExec_t e0 = nullptr;
    obs_rc("g0_instantiate", cudaGraphInstantiate(&e0, g0, 0));
    launch_observed("e0_first", e0, s);
    cudaGraphCreate(&h, 0);
    cudaGraph_t bh = add_if_node(h, "h_if");
    if (bh)
        memory_body(bh, "h_body");
    cudaGraphExecUpdateResultInfo info = {};
    obs_rc("update", e0 ? cudaGraphExecUpdate(e0, h, &info) : cudaErrorInvalidValue);
    obs("update_result", update_result_name(info.result));
    obs("update_error_node", info.errorNode == nullptr        ? "none"
                             : info.errorNode == g_body_alloc ? "body_alloc"
                             : info.errorNode == g_body_free  ? "body_free"
                                                              : "other");
    launch_observed("e0_after_update", e0, s);
    obs_int("ordinary_wrong_words", wrong_words(s, ordinary, kBytes, 1));
}

static void child_swap_case(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *ordinary = nullptr;
    cudaMalloc(&ordinary, kBytes);
    cudaGraph_t empty = nullptr, p = nullptr, c = nullptr, c1 = nullptr;
    cudaGraphCreate(&empty, 0);
    cudaGraphCreate(&p, 0);
    cudaGraphNode_t n = nullptr;
    obs_rc("p_child", cudaGraphAddChildGraphNode(&n, p, nullptr, 0, empty));
    obs_rc("c", cudaGraphChildGraphNodeGetGraph(n, &c));
    cudaGraph_t bc = c ? add_if_node(c, "c_if") : nullptr;
    if (bc)
        plain_body(bc, ordinary, 1);
    cudaGraphExec_t e = nullptr;
    obs_rc("p_instantiate", cudaGraphInstantiate(&e, p, 0));
    launch_observed("e_first", e, s);
    cudaGraphCreate(&c1, 0);
    cudaGraph_t b1 = add_if_node(c1, "c1_if");
    if (b1)
        memory_body(b1, "c1_body");
    obs_rc("exec_child_set",
           e ? cudaGraphExecChildGraphNodeSetParams(e, n, c1) : cudaErrorInvalidValue);
    launch_observed("e_after_set", e, s);
    obs_int("ordinary_wrong_words", wrong_words(s, ordinary, kBytes, 1));
}

// P (child node, IF added to the child's graph afterwards) with `fill` making the body.
static cudaGraph_t parent_with_child_if(void (*fill)(cudaGraph_t body, void *arg), void *arg) {
    cudaGraph_t empty = nullptr, p = nullptr, c = nullptr;
    cudaGraphCreate(&empty, 0);
    cudaGraphCreate(&p, 0);
    cudaGraphNode_t n = nullptr;
    obs_rc("p_child", cudaGraphAddChildGraphNode(&n, p, nullptr, 0, empty));
    cudaGraphDestroy(empty);
    obs_rc("c", cudaGraphChildGraphNodeGetGraph(n, &c));
    cudaGraph_t b = c ? add_if_node(c, "c_if") : nullptr;
    if (b)
        fill(b, arg);
    return p;
}

static void memset_body(cudaGraph_t b, void *a) {
    cudaMemsetParams m = memset_words(a, kBytes, 0x77u);
    cudaGraphNode_t set;
    obs_rc("body_memset", cudaGraphAddMemsetNode(&set, b, nullptr, 0, &m));
}

static void clone_touch_case(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g1 = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al;
    void *a = nullptr;
    obs_rc("g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    cudaGraph_t p = parent_with_child_if(memset_body, a);
    cudaGraph_t clone = nullptr, q = nullptr;
    cudaError_t rc = cudaGraphClone(&clone, p);
    obs_rc("p_clone", rc);
    cudaGraphCreate(&q, 0);
    cudaGraphNode_t qn;
    cudaError_t qrc = cudaGraphAddChildGraphNode(&qn, q, nullptr, 0, p);
    obs_rc("q_child_copy_of_p", qrc);
    launch_unrelated_graph(s, kBytes, "unrelated");
    cudaGraphExec_t ec = nullptr, eq = nullptr, ep = nullptr;
    obs_rc("p_instantiate", cudaGraphInstantiate(&ep, p, 0));
    obs_rc("clone_instantiate",
           rc == cudaSuccess ? cudaGraphInstantiate(&ec, clone, 0) : cudaErrorInvalidValue);
    obs_rc("q_instantiate",
           qrc == cudaSuccess ? cudaGraphInstantiate(&eq, q, 0) : cudaErrorInvalidValue);
    for (cudaGraphExec_t e : {ep, ec, eq})
        if (e)
            cudaGraphExecDestroy(e);
}

static void memory_body_arg(cudaGraph_t b, void *) {
    memory_body(b, "body_memory");
}

static void clone_memory_case(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t p = parent_with_child_if(memory_body_arg, nullptr);
    cudaGraphExec_t ep = nullptr, ec = nullptr;
    obs_rc("p_instantiate", cudaGraphInstantiate(&ep, p, 0));
    cudaGraph_t clone = nullptr;
    cudaError_t rc = cudaGraphClone(&clone, p);
    obs_rc("p_clone", rc);
    obs_rc("clone_instantiate",
           rc == cudaSuccess ? cudaGraphInstantiate(&ec, clone, 0) : cudaErrorInvalidValue);
    launch_observed("clone", ec, s);
}

int main() {
    run_isolated("update", update_case);
    run_isolated("child_swap", child_swap_case);
    run_isolated("clone_touch", clone_touch_case);
    run_isolated("clone_memory", clone_memory_case);
    return 0;
}

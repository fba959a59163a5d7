// cudaGraphExecUpdate on execs of graphs with memory nodes (§A3.10; issue: graphmem
// passed the update to the driver and a later launch faulted with 700), cudaGraphExecKernelNode-
// SetParams pointing a kernel at another graph's allocation, and cudaGraphExecChildGraphNodeSet-
// Params on an exec whose moved child holds memory nodes. Graph A: alloc -> fill -> copy into an
// ordinary buffer -> free; graph B: A's shape with a change. Natively (driver 580) an update with
// the same node types and edges is taken whatever the sizes, and the exec then allocates at B's
// node address with B's size (tests/probe/exec_update.cu). Each case runs in a process of its
// own (entries.cuh); the native run is the reference for every code and data check.
#include "entries.cuh"

static const size_t kWords = 1 << 16; // 256 KiB
static const size_t kBig = 3u << 18;  // 3 MiB: past graphmem's small-allocation limit
static const size_t kOut = 1u << 20;  // words of the output and scratch buffers
static uint32_t *g_out = nullptr;     // the ordinary buffer every graph copies into
static uint32_t *g_scratch = nullptr; // the buffer of graphs without memory nodes
static cudaStream_t g_s = nullptr;

struct Shape {
    cudaGraph_t g = nullptr;
    cudaGraphNode_t nodes[6] = {}; // alloc (or empty), fill, copy, free (or empty), extra pair
    void *own = nullptr;           // the graph's own allocation
    void *use = nullptr;           // what the kernels use
    size_t n;
    uint32_t v;
    Shape(size_t n_, uint32_t v_) : n(n_), v(v_) {}
};

static void setup(void) {
    cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking);
    obs_rc("setup_out", cudaMalloc(&g_out, kOut * sizeof(uint32_t)));
    obs_rc("setup_scratch", cudaMalloc(&g_scratch, kOut * sizeof(uint32_t)));
}

enum { kPlain = 1, kExtra = 2, kNoFree = 4 };

// alloc -> fill(use) -> copy(out <- use) -> free. kPlain: empty nodes stand for the memory nodes;
// `use` null: the kernels use the graph's own allocation; kExtra: one more alloc -> free pair;
// kNoFree: no free node (the allocation escapes).
static Shape build(size_t n, uint32_t v, unsigned flags, void *use = nullptr) {
    Shape s(n, v);
    RcCount rc;
    bool mem = !(flags & kPlain);
    rc.add(cudaGraphCreate(&s.g, 0));
    cudaGraphNode_t *nd = s.nodes;
    rc.add(mem ? add_alloc(&nd[0], s.g, nullptr, 0, n * sizeof(uint32_t), &s.own)
               : cudaGraphAddEmptyNode(&nd[0], s.g, nullptr, 0));
    s.use = use ? use : mem ? s.own : g_scratch;
    rc.add(add_fill(&nd[1], s.g, &nd[0], 1, s.use, n, v));
    rc.add(add_add(&nd[2], s.g, &nd[1], 1, g_out, s.use, n, 0));
    if (!(flags & kNoFree))
        rc.add(mem ? cudaGraphAddMemFreeNode(&nd[3], s.g, &nd[2], 1, s.own)
                   : cudaGraphAddEmptyNode(&nd[3], s.g, &nd[2], 1));
    if (flags & kExtra) {
        void *x = nullptr;
        rc.add(add_alloc(&nd[4], s.g, &nd[0], 1, n * sizeof(uint32_t), &x));
        rc.add(cudaGraphAddMemFreeNode(&nd[5], s.g, &nd[4], 1, x));
    }
    rc.report("build");
    return s;
}

// The same shape by stream capture.
static Shape capture(size_t n, uint32_t v) {
    Shape s(n, v);
    RcCount rc;
    rc.add(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
    rc.add(cudaMallocAsync(&s.own, n * sizeof(uint32_t), g_s));
    rc.add(fill_words(g_s, s.own, n, v));
    k_add<<<kGrid, kBlock, 0, g_s>>>(g_out, (const uint32_t *)s.own, n, 0);
    rc.add(cudaGetLastError());
    rc.add(cudaFreeAsync(s.own, g_s));
    rc.add(cudaStreamEndCapture(g_s, &s.g));
    rc.report("capture");
    s.use = s.own;
    graph_nodes(s.g, s.nodes, 4);
    return s;
}

// Launches e `times` times, each into a cleared output that must then hold v + i for n words.
static void launches(cudaGraphExec_t e, const Shape &want, const char *tag, int times) {
    char key[96];
    for (int i = 0; i < times; i++) {
        cudaMemsetAsync(g_out, 0, kOut * sizeof(uint32_t), g_s);
        cudaError_t rc = cudaGraphLaunch(e, g_s);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(g_s);
        snprintf(key, sizeof key, "%s_launch", tag);
        obs_rc(key, rc);
        snprintf(key, sizeof key, "%s_data", tag);
        obs_ok(key, check_words(g_s, g_out, want.n, want.v));
    }
}

// "none", or the node's type and the graph it belongs to.
static const char *role(cudaGraphNode_t node, const Shape &a, const Shape &b) {
    if (!node)
        return "none";
    cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
    cudaGraphNodeGetType(node, &t);
    (void)cudaGetLastError();
    static const char *types[] = {"kernel", "memcpy", "memset", "host",     "graph", "empty",
                                  "wait",   "record", "signal", "wait_sem", "alloc", "free"};
    static char out[64];
    const char *owner = "other";
    for (int i = 0; i < 6; i++)
        owner = node == a.nodes[i] ? "a" : node == b.nodes[i] ? "b" : owner;
    snprintf(out, sizeof out, "%s_of_%s", (unsigned)t < 12 ? types[t] : "other", owner);
    return out;
}

// Instantiates A, launches it, updates the exec from B, launches the result (B's data if the
// update was taken, A's if not), then B on its own where its kernels use its own allocation.
static void update(Shape a, Shape b) {
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate_a", cudaGraphInstantiate(&e, a.g, 0));
    launches(e, a, "a", 1);
    cudaGraphExecUpdateResultInfo ri = {};
    cudaError_t rc = cudaGraphExecUpdate(e, b.g, &ri);
    obs_rc("update", rc);
    obs("update_result", update_result_name(ri.result));
    obs("update_error_node", role(ri.errorNode, a, b));
    obs("update_error_from_node", role(ri.errorFromNode, a, b));
    info("allocations", "a=%p b=%p b_kernels_use=%p", a.own, b.own, b.use);
    // Kernels left on A's address after a taken update use memory the exec no longer allocates
    // (natively the outcome depends on whether the driver still maps it): not launched.
    bool b_kernels_on_own = !b.own || b.use == b.own;
    if (rc != cudaSuccess)
        launches(e, a, "kept", 2);
    else if (b_kernels_on_own)
        launches(e, b, "updated", 3);
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    if (b.own && b_kernels_on_own) {
        cudaGraphExec_t eb = nullptr;
        obs_rc("instantiate_b", cudaGraphInstantiate(&eb, b.g, 0));
        launches(eb, b, "b", 1);
        cudaGraphExecDestroy(eb);
    }
    obs_rc("graph_destroy_a", cudaGraphDestroy(a.g));
    obs_rc("graph_destroy_b", cudaGraphDestroy(b.g));
    obs_rc("final_sync", cudaDeviceSynchronize());
}

// Cases (a) to (e): sizes and build flags of A and B; whether B's kernels use A's allocation.
struct Pair {
    const char *name;
    size_t na;
    unsigned fa;
    size_t nb;
    unsigned fb;
    bool on_a;
};
static const Pair kPairs[] = {
    {"same_size", kWords, 0, kWords, 0, false},                      // (a)
    {"grow", kWords, 0, kBig, 0, false},                             // (b)
    {"shrink", kBig, 0, kWords, 0, false},                           // (b)
    {"extra_memory_node", kWords, 0, kWords, kExtra, false},         // (c)
    {"kernels_keep_a_pointer", kWords, 0, kWords, 0, true},          // (d)
    {"to_graph_without_memory_nodes", kWords, 0, kWords, kPlain, 0}, // (e)
    {"from_graph_without_memory_nodes", kWords, kPlain, kWords, 0, 0},
};
static Pair g_pair;

static void pair(void) {
    setup();
    Shape a = build(g_pair.na, 10, g_pair.fa);
    update(a, build(g_pair.nb, 20, g_pair.fb, g_pair.on_a ? a.own : nullptr));
}

static void captured_same_size(void) { // (a) by capture
    setup();
    Shape a = capture(kWords, 11);
    update(a, capture(kWords, 21));
}

// A's allocation escapes and is live when the exec is updated from B (also escaping): the
// updated exec allocates B's address while A's allocation stays live until freed.
static void live_unfreed(void) {
    setup();
    Shape a = build(kWords, 19, kNoFree), b = build(kWords, 29, kNoFree);
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate_a", cudaGraphInstantiate(&e, a.g, 0));
    launches(e, a, "a", 1);
    cudaGraphExecUpdateResultInfo ri = {};
    cudaError_t rc = cudaGraphExecUpdate(e, b.g, &ri);
    obs_rc("update", rc);
    obs("update_result", update_result_name(ri.result));
    launches(e, rc == cudaSuccess ? b : a, "updated", 1);
    obs_ok("a_still_holds_data", check_words(g_s, a.own, kWords, 19));
    obs_rc("free_a", cudaFree(a.own));
    launches(e, rc == cudaSuccess ? b : a, "after_free_a", 1);
    obs_rc("free_b", cudaFree(b.own));
    launches(e, rc == cudaSuccess ? b : a, "after_free_b", 1);
    obs_rc("free_b_again", cudaFree(b.own));
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    cudaGraphDestroy(a.g);
    cudaGraphDestroy(b.g);
    obs_rc("final_sync", cudaDeviceSynchronize());
}

// (d) on the exec: A's kernels pointed at an allocation of another graph, live (it escaped).
static void exec_kernel_set_params(void) {
    setup();
    Shape a = build(kWords, 18, 0);
    cudaGraph_t c = nullptr;
    cudaGraphExec_t ec = nullptr, e = nullptr;
    cudaGraphNode_t nc = nullptr;
    void *other = nullptr;
    cudaGraphCreate(&c, 0);
    obs_rc("other_alloc", add_alloc(&nc, c, nullptr, 0, kWords * sizeof(uint32_t), &other));
    obs_rc("other_instantiate", cudaGraphInstantiate(&ec, c, 0));
    obs_rc("other_launch", cudaGraphLaunch(ec, g_s));
    obs_rc("instantiate_a", cudaGraphInstantiate(&e, a.g, 0));
    launches(e, a, "a", 1);
    // Parameters as B's nodes would have them, taken from a graph built around `other`.
    Shape b = build(kWords, 28, 0, other);
    cudaKernelNodeParams k = {};
    cudaGraphKernelNodeGetParams(b.nodes[1], &k);
    obs_rc("exec_set_fill", cudaGraphExecKernelNodeSetParams(e, a.nodes[1], &k));
    cudaGraphKernelNodeGetParams(b.nodes[2], &k);
    obs_rc("exec_set_copy", cudaGraphExecKernelNodeSetParams(e, a.nodes[2], &k));
    launches(e, b, "set", 3);
    obs_ok("other_holds_data", check_words(g_s, other, kWords, 28));
    obs_rc("other_free", cudaFree(other));
    cudaGraphExecDestroy(e);
    cudaGraphExecDestroy(ec);
    cudaGraphDestroy(a.g);
    cudaGraphDestroy(b.g);
    cudaGraphDestroy(c);
    obs_rc("final_sync", cudaDeviceSynchronize());
}

// A parent whose moved child holds memory nodes: the child replaced on the exec by a graph of the
// same shape; then the exec updated from a second parent of the same shape.
static void child_graph(void) {
    setup();
    Shape c1 = build(kWords, 30, 0);
    cudaGraph_t parent = nullptr, parent2 = nullptr;
    cudaGraphNode_t child = nullptr, child2 = nullptr;
    cudaGraphCreate(&parent, 0);
    obs_rc("child_add_move", add_moved_child(parent, c1.g, &child));
    cudaGraphExec_t e = nullptr;
    obs_rc("parent_instantiate", cudaGraphInstantiate(&e, parent, 0));
    launches(e, c1, "parent", 1);
    Shape c2 = build(kWords, 31, 0);
    cudaError_t rc = cudaGraphExecChildGraphNodeSetParams(e, child, c2.g);
    obs_rc("child_set_params_memory", rc);
    launches(e, rc == cudaSuccess ? c2 : c1, "child_memory", 3);

    Shape c4 = build(kWords, 33, 0);
    cudaGraphCreate(&parent2, 0);
    obs_rc("child2_add_move", add_moved_child(parent2, c4.g, &child2));
    cudaGraphExecUpdateResultInfo ri = {};
    rc = cudaGraphExecUpdate(e, parent2, &ri);
    obs_rc("parent_update", rc);
    obs("parent_update_result", update_result_name(ri.result));
    obs_yes("parent_update_error_node", ri.errorNode != nullptr);
    if (rc == cudaSuccess)
        launches(e, c4, "parent_updated", 3);
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    cudaGraphDestroy(parent);
    cudaGraphDestroy(parent2);
    cudaGraphDestroy(c2.g);
    obs_rc("final_sync", cudaDeviceSynchronize());
}

int main() {
    for (const Pair &p : kPairs) {
        g_pair = p;
        run_isolated(p.name, pair);
    }
    run_isolated("captured_same_size", captured_same_size);
    run_isolated("live_unfreed", live_unfreed);
    run_isolated("exec_kernel_set_params", exec_kernel_set_params);
    run_isolated("child_graph", child_graph);
    return 0;
}

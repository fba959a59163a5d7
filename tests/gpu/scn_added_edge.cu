// Two allocations of 64 MiB made with explicit memory nodes on branches of their own (alloc,
// fill, copy out, free), ordered only by an edge added afterwards (cudaGraphAddDependencies from
// the first one's free to the second one's alloc), and the same graph without the edge. Both run
// with their data checked, natively and under graphmem. The driver keeps both allocations'
// memory either way (measured on driver 580: 128 MiB at the high); graphmem, which takes a
// marker's dependencies from what its node was made with unless an edge was added to its graph
// since, must see the edge and let the second take the first's memory (tests/python,
// test_added_edge_lets_memory_be_shared).
#include "common.cuh"

static const size_t bytes = 64ull << 20, n = bytes / sizeof(uint32_t);

// The two branches into g; their free node and alloc node through `free_a` and `alloc_b`.
static void build(cudaGraph_t g, uint32_t *out1, uint32_t *out2, cudaGraphNode_t *free_a,
                  cudaGraphNode_t *alloc_b) {
    cudaGraphNode_t alloc_a = nullptr, fill_a = nullptr, copy_a = nullptr;
    cudaGraphNode_t fill_b = nullptr, copy_b = nullptr, free_b = nullptr;
    void *a = nullptr, *b = nullptr;
    obs_rc("alloc_a", add_alloc(&alloc_a, g, nullptr, 0, bytes, &a));
    obs_rc("fill_a", add_fill(&fill_a, g, &alloc_a, 1, a, n, 7));
    obs_rc("copy_a", add_add(&copy_a, g, &fill_a, 1, out1, a, n, 1));
    obs_rc("free_a", cudaGraphAddMemFreeNode(free_a, g, &copy_a, 1, a));
    obs_rc("alloc_b", add_alloc(alloc_b, g, nullptr, 0, bytes, &b));
    obs_rc("fill_b", add_fill(&fill_b, g, alloc_b, 1, b, n, 20));
    obs_rc("copy_b", add_add(&copy_b, g, &fill_b, 1, out2, b, n, 2));
    obs_rc("free_b", cudaGraphAddMemFreeNode(&free_b, g, &copy_b, 1, b));
}

// Instantiates and launches g once with the highs reset, checks the copies, and returns the
// graph memory in use at its high.
static uint64_t run(cudaStream_t s, cudaGraph_t g, uint32_t *out1, uint32_t *out2) {
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("trim", cudaDeviceGraphMemTrim(0));
    reset_highs();
    obs_rc("launch", cudaGraphLaunch(e, s));
    obs_rc("sync", cudaStreamSynchronize(s));
    GraphMemAttrs attrs = read_attrs();
    info_attrs("after_launch", attrs);
    obs_ok("data_a", check_words(s, out1, n, 8));
    obs_ok("data_b", check_words(s, out2, n, 22));
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    return attrs.used_high;
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *out1 = nullptr, *out2 = nullptr;
    obs_rc("out_malloc", cudaMalloc(&out1, bytes));
    obs_rc("out_malloc", cudaMalloc(&out2, bytes));

    cudaGraph_t ordered = nullptr, control = nullptr;
    cudaGraphNode_t free_a = nullptr, alloc_b = nullptr;
    obs_rc("create", cudaGraphCreate(&ordered, 0));
    build(ordered, out1, out2, &free_a, &alloc_b);
    obs_rc("add_edge", cudaGraphAddDependencies(ordered, &free_a, &alloc_b, nullptr, 1));
    uint64_t high = run(s, ordered, out1, out2);
    obs_yes("ordered_used_high_at_most_both", high <= 2 * bytes);
    info("ordered_used_high", "%llu", (unsigned long long)high);

    obs_rc("create", cudaGraphCreate(&control, 0));
    build(control, out1, out2, &free_a, &alloc_b);
    high = run(s, control, out1, out2);
    obs_yes("unordered_used_high_both", high >= 2 * bytes);
    info("unordered_used_high", "%llu", (unsigned long long)high);

    obs_rc("destroy", cudaGraphDestroy(ordered));
    obs_rc("destroy", cudaGraphDestroy(control));
    cudaFree(out1);
    cudaFree(out2);
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}

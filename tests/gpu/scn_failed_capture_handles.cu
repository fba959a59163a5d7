// A capture that fails takes its graph with it, memory nodes added to that graph explicitly
// (cudaGraphAddMemAllocNode on the graph cudaStreamGetCaptureInfo names, §A4.10) as well as
// captured ones. The driver then hands the dead graph's handle out again for later graphs: a
// graph created then, and a graph captured then, must be new graphs to graphmem too. A record of
// the dead graph kept under the handle would make the new one a graph with memory nodes (its
// node destroyed or cloned: cudaErrorNotSupported where the driver succeeds) and mix the dead
// graph's allocations into its plan.
#include "common.cuh"

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);

// One capture that fails after a memory node went into its graph: explicitly, or captured.
// Returns the graph the capture was made in.
static cudaGraph_t failed_capture(cudaStream_t s, bool explicit_node) {
    obs_rc("begin", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    cudaGraph_t graph = nullptr;
    const cudaGraphNode_t *deps = nullptr;
    size_t dep_count = 0;
    obs_rc("capture_info",
           cudaStreamGetCaptureInfo(s, &status, nullptr, &graph, &deps, nullptr, &dep_count));
    void *p = nullptr;
    if (explicit_node) {
        cudaGraphNode_t node = nullptr;
        obs_rc("explicit_alloc_node", add_alloc(&node, graph, nullptr, 0, bytes, &p));
    } else {
        obs_rc("captured_alloc", cudaMallocAsync(&p, bytes, s));
    }
    fail_global_capture(s);
    return graph;
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *out = nullptr;
    obs_rc("out_malloc", cudaMalloc(&out, bytes));
    int reused_created = 0, reused_captured = 0;
    for (int round = 0; round < 16; round++) {
        cudaGraph_t dead = failed_capture(s, round % 2 == 0);

        // A plain graph made now: a node of it may go, and it may be cloned.
        cudaGraph_t h = nullptr;
        obs_rc("create", cudaGraphCreate(&h, 0));
        reused_created += h == dead;
        cudaGraphNode_t empty = nullptr;
        obs_rc("empty_node", cudaGraphAddEmptyNode(&empty, h, nullptr, 0));
        obs_rc("destroy_node", cudaGraphDestroyNode(empty));
        cudaGraph_t copy = nullptr;
        obs_rc("clone", cudaGraphClone(&copy, h));
        if (copy)
            cudaGraphDestroy(copy);
        obs_rc("destroy_created", cudaGraphDestroy(h));

        // Another failure, then a graph captured now: its own allocation only, data intact.
        dead = failed_capture(s, round / 2 % 2 == 0);
        obs_rc("begin_good", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        cudaStreamCaptureStatus status;
        cudaGraph_t capturing = nullptr;
        obs_rc("capture_info_good", cudaStreamGetCaptureInfo(s, &status, nullptr, &capturing,
                                                             nullptr, nullptr, nullptr));
        reused_captured += capturing == dead;
        uint32_t *q = nullptr;
        obs_rc("alloc_good", cudaMallocAsync(&q, bytes, s));
        k_fill<<<kGrid, kBlock, 0, s>>>(q, n, 40 + round);
        k_add<<<kGrid, kBlock, 0, s>>>(out, q, n, 2);
        obs_rc("free_good", cudaFreeAsync(q, s));
        cudaGraph_t g = nullptr;
        obs_rc("end_good", cudaStreamEndCapture(s, &g));
        cudaGraphExec_t e = nullptr;
        obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
        obs_rc("launch", cudaGraphLaunch(e, s));
        obs_rc("sync", cudaStreamSynchronize(s));
        obs_ok("data", check_words(s, out, n, 42 + round));
        obs_rc("exec_destroy", cudaGraphExecDestroy(e));
        obs_rc("graph_destroy", cudaGraphDestroy(g));
    }
    info("handles_reused", "created %d of 16, captured %d of 16", reused_created, reused_captured);
    cudaFree(out);
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}

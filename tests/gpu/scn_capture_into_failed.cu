// A capture into an existing graph (cudaStreamBeginCaptureToGraph) that fails, invalidated by a
// call the capture forbids (§A4.10). Measured natively on driver 580: the failed capture takes the
// graph with it, nodes made before the capture included; every later call on the graph returns
// cudaErrorInvalidValue. graphmem must agree (it forgets the graph and its allocations), and must
// not keep the graph alive in its own records.
#include "common.cuh"

static const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *out = nullptr;
    obs_rc("out_malloc", cudaMalloc(&out, bytes));
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr, nc = nullptr, nfree = nullptr;
    void *p = nullptr;
    obs_rc("alloc_node", add_alloc(&na, g, nullptr, 0, bytes, &p));
    obs_rc("fill_node", add_fill(&nf, g, &na, 1, p, n, 5));

    obs_rc("begin_into",
           cudaStreamBeginCaptureToGraph(s, g, &nf, nullptr, 1, cudaStreamCaptureModeGlobal));
    void *q = nullptr;
    obs_rc("captured_malloc_async", cudaMallocAsync(&q, bytes, s));
    fail_global_capture(s);

    // Whatever is left of the graph: copy the allocation out, free it, run.
    obs_rc("copy_node", add_add(&nc, g, &nf, 1, out, p, n, 1));
    obs_rc("free_node", cudaGraphAddMemFreeNode(&nfree, g, &nc, 1, p));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 3; i++) {
        cudaMemsetAsync(out, 0, bytes, s);
        obs_rc("launch", cudaGraphLaunch(e, s));
        obs_rc("sync", cudaStreamSynchronize(s));
        obs_ok("data", check_words(s, out, n, 6));
    }
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    cudaFree(out);
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}

// The three documented ways to use a graph allocation outside its graph (§A8.1, §A8.2,
// §A2.3, §A17): later work in the same stream, work in another stream ordered by events, and a
// consumer graph ordered by an event record node in the allocating graph and an event wait node
// in the consumer, which also frees the allocation with its own free node.
#include "common.cuh"

static const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);
static const int kIters = 5;

// Graph: alloc -> fill(v); the allocation is left unfreed. With `record` an event record node
// follows the fill.
static cudaGraph_t producer(void **a, uint32_t v, cudaEvent_t record) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr, nr = nullptr;
    add_alloc(&na, g, nullptr, 0, bytes, a);
    add_fill(&nf, g, &na, 1, *a, n, v);
    if (record)
        cudaGraphAddEventRecordNode(&nr, g, &nf, 1, record);
    return g;
}

static void same_stream(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *a = nullptr;
    cudaGraph_t g = producer(&a, 11, nullptr);
    cudaGraphExec_t e = nullptr;
    obs_rc("stream_instantiate", cudaGraphInstantiate(&e, g, 0));
    bool launches = true, data = true, frees = true;
    for (int i = 0; i < kIters; i++) {
        launches &= cudaGraphLaunch(e, s) == cudaSuccess;
        data &= check_words(s, a, n, 11);
        frees &= cudaFreeAsync(a, s) == cudaSuccess;
    }
    obs_ok("stream_launches", launches);
    obs_ok("stream_data", data);
    obs_ok("stream_frees", frees);
    obs_rc("stream_sync", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

// No host synchronization inside the loop: only events order the producer's stream, the
// consumer's stream and the next launch.
static void events_between_streams(unsigned *bad) {
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t produced, consumed;
    cudaEventCreateWithFlags(&produced, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming);
    void *a = nullptr;
    cudaGraph_t g = producer(&a, 22, nullptr);
    cudaGraphExec_t e = nullptr;
    obs_rc("events_instantiate", cudaGraphInstantiate(&e, g, 0));
    cudaMemset(bad, 0, sizeof(unsigned));
    bool ok = true;
    for (int i = 0; i < kIters; i++) {
        ok &= cudaGraphLaunch(e, s1) == cudaSuccess;
        cudaEventRecord(produced, s1);
        cudaStreamWaitEvent(s2, produced, 0);
        k_check<<<kGrid, kBlock, 0, s2>>>((const uint32_t *)a, n, 22, bad);
        ok &= cudaFreeAsync(a, s2) == cudaSuccess;
        cudaEventRecord(consumed, s2);
        cudaStreamWaitEvent(s1, consumed, 0);
    }
    obs_ok("events_calls", ok);
    obs_rc("events_sync", cudaDeviceSynchronize());
    unsigned h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    obs_ok("events_data", h == 0);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

static void event_nodes(unsigned *bad) {
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t produced, consumed;
    cudaEventCreateWithFlags(&produced, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming);
    void *a = nullptr;
    cudaGraph_t gp = producer(&a, 33, produced);
    cudaGraph_t gc = nullptr;
    cudaGraphCreate(&gc, 0);
    cudaGraphNode_t nw = nullptr, nk = nullptr, nf = nullptr;
    obs_rc("nodes_wait_node", cudaGraphAddEventWaitNode(&nw, gc, nullptr, 0, produced));
    obs_rc("nodes_check_node", add_check(&nk, gc, &nw, 1, a, n, 33, bad));
    obs_rc("nodes_free_node_other_graph", cudaGraphAddMemFreeNode(&nf, gc, &nk, 1, a));
    cudaGraphExec_t ep = nullptr, ec = nullptr;
    obs_rc("nodes_instantiate_producer", cudaGraphInstantiate(&ep, gp, 0));
    obs_rc("nodes_instantiate_consumer", cudaGraphInstantiate(&ec, gc, 0));
    cudaMemset(bad, 0, sizeof(unsigned));
    bool ok = true;
    for (int i = 0; i < kIters; i++) {
        ok &= cudaGraphLaunch(ep, s1) == cudaSuccess;
        ok &= cudaGraphLaunch(ec, s2) == cudaSuccess;
        cudaEventRecord(consumed, s2);
        cudaStreamWaitEvent(s1, consumed, 0);
    }
    obs_ok("nodes_launches", ok);
    obs_rc("nodes_sync", cudaDeviceSynchronize());
    unsigned h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    obs_ok("nodes_data", h == 0);
    cudaGraphExecDestroy(ep);
    cudaGraphExecDestroy(ec);
    cudaGraphDestroy(gp);
    cudaGraphDestroy(gc);
}

int main() {
    require_graph_memory();
    unsigned *bad = nullptr;
    cudaMalloc(&bad, sizeof(unsigned));
    same_stream();
    events_between_streams(bad);
    event_nodes(bad);
    return 0;
}

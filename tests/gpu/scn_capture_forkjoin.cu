// The graphMemoryNodes sample, captured fork/join form (§A4.1, §A4.6, §A4.13, §A15.4):
// allocations on two streams of one capture, a free on the forked stream ordered after every
// user of the allocation, and copies back to the host; launched several times.
#include "common.cuh"

static void count_types(cudaGraph_t g, int *allocs, int *frees) {
    cudaGraphNode_t nodes[64] = {};
    size_t n = graph_nodes(g, nodes, 64);
    *allocs = *frees = 0;
    for (size_t i = 0; i < n; i++) {
        cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
        cudaGraphNodeGetType(nodes[i], &t);
        *allocs += t == cudaGraphNodeTypeMemAlloc;
        *frees += t == cudaGraphNodeTypeMemFree;
    }
}

int main() {
    require_graph_memory();
    const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);
    const uint32_t v = 7;
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t e1, e2, e3;
    cudaEventCreateWithFlags(&e1, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&e2, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&e3, cudaEventDisableTiming);
    uint32_t *hb = nullptr, *hc = nullptr;
    cudaMallocHost(&hb, bytes);
    cudaMallocHost(&hc, bytes);

    obs_rc("begin_capture", cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    uint32_t *a = nullptr, *b = nullptr, *c = nullptr;
    obs_rc("malloc_a", cudaMallocAsync(&a, bytes, s1));
    k_fill<<<kGrid, kBlock, 0, s1>>>(a, n, v);
    cudaEventRecord(e1, s1);
    cudaStreamWaitEvent(s2, e1, 0);
    obs_rc("malloc_b_forked", cudaMallocAsync(&b, bytes, s2));
    k_add<<<kGrid, kBlock, 0, s2>>>(b, a, n, 1);
    obs_rc("malloc_c", cudaMallocAsync(&c, bytes, s1));
    k_add<<<kGrid, kBlock, 0, s1>>>(c, a, n, 2);
    cudaEventRecord(e2, s1);
    cudaStreamWaitEvent(s2, e2, 0);
    obs_rc("free_a_forked", cudaFreeAsync(a, s2));
    cudaMemcpyAsync(hb, b, bytes, cudaMemcpyDeviceToHost, s2);
    obs_rc("free_b_forked", cudaFreeAsync(b, s2));
    cudaEventRecord(e3, s2);
    cudaStreamWaitEvent(s1, e3, 0);
    cudaMemcpyAsync(hc, c, bytes, cudaMemcpyDeviceToHost, s1);
    obs_rc("free_c", cudaFreeAsync(c, s1));
    cudaGraph_t g = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s1, &g));
    obs_yes("pointers_distinct", a != b && b != c && a != c);

    int allocs = 0, frees = 0;
    count_types(g, &allocs, &frees);
    obs_int("alloc_nodes", allocs);
    obs_int("free_nodes", frees);

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    for (int launch = 0; launch < 3; launch++) {
        memset(hb, 0, bytes);
        memset(hc, 0, bytes);
        char key[64];
        snprintf(key, sizeof key, "launch%d", launch);
        obs_rc(key, cudaGraphLaunch(e, s1));
        snprintf(key, sizeof key, "launch%d_sync", launch);
        obs_rc(key, cudaStreamSynchronize(s1));
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++)
            ok = hb[i] == v + 1 + (uint32_t)i && hc[i] == v + 2 + (uint32_t)i;
        snprintf(key, sizeof key, "launch%d_data", launch);
        obs_ok(key, ok);
    }
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    return 0;
}

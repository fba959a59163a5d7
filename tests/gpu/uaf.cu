// Planted use after free: a graph allocates, writes and frees an allocation; a kernel launched
// after the graph in the same stream reads the freed address. Natively the read silently sees
// whatever is mapped there; under graphmem with GRAPHMEM_UAF_CHECK=1 it must fault, which shows
// as a sticky error (cudaErrorIllegalAddress or similar) at the synchronize.
//
// prints: OBS launch <rc>, OBS read_after_free_sync <rc>
#include "common.cuh"

int main() {
    require_graph_memory();
    const size_t n = 1 << 20, bytes = n * sizeof(uint32_t);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = nullptr;
    cudaMalloc(&bad, sizeof(unsigned));

    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr, nfree = nullptr;
    void *a = nullptr;
    add_alloc(&na, g, nullptr, 0, bytes, &a);
    add_fill(&nf, g, &na, 1, a, n, 1);
    cudaGraphAddMemFreeNode(&nfree, g, &nf, 1, a);
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("launch", cudaGraphLaunch(e, s));
    obs_rc("sync_before_read", cudaStreamSynchronize(s));
    k_check<<<kGrid, kBlock, 0, s>>>((const uint32_t *)a, n, 1, bad);
    obs_rc("read_after_free_sync", cudaStreamSynchronize(s));
    return 0;
}

// A captured chain whose links each hold a small allocation (byte-packed by graphmem) and a large
// one allocated after it: alloc small, alloc large, use both, free small, free large. Each link's
// result is copied out of the graph and checked (0 wrong words) natively and under graphmem.
//
// tests/python/test_gpu_conformance.py also reads where the small allocations went: each small
// free is ordered after its own allocation only through the large allocation's marker, so
// graphmem reuses the small bytes (every link at one address) only when that marker passes on
// what its ancestors proved. graphmem once searched ancestors for small allocations only, which
// left the large one's marker with nothing proven, and gave every link new bytes.
#include "common.cuh"

static const int kLinks = 8;
static const size_t kSmall = 256u << 10, kLarge = 4u << 20;
static const size_t kWords = kSmall / sizeof(uint32_t);

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *result = nullptr;
    cudaMalloc(&result, kLinks * kSmall);
    cudaMemset(result, 0, kLinks * kSmall);

    void *small[kLinks] = {};
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < kLinks && rc == cudaSuccess; i++) {
        void *large = nullptr;
        rc = cudaMallocAsync(&small[i], kSmall, s);
        if (rc == cudaSuccess)
            rc = cudaMallocAsync(&large, kLarge, s);
        if (rc != cudaSuccess)
            break;
        fill_words(s, small[i], kWords, 1000u * (uint32_t)i);
        k_add<<<kGrid, kBlock, 0, s>>>((uint32_t *)large, (const uint32_t *)small[i], kWords, 7);
        k_add<<<kGrid, kBlock, 0, s>>>(result + i * kWords, (const uint32_t *)large, kWords, 0);
        rc = cudaFreeAsync(small[i], s);
        if (rc == cudaSuccess)
            rc = cudaFreeAsync(large, s);
    }
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(s, rc, &g))
        return 0;
    int distinct = 0;
    for (int i = 0; i < kLinks; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = small[j] == small[i];
        distinct += !seen;
    }
    info("small_addresses", "%d", distinct);
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    for (int launch = 0; launch < 2; launch++) {
        cudaMemsetAsync(result, 0, kLinks * kSmall, s);
        obs_rc("launch", cudaGraphLaunch(e, s));
        obs_rc("sync", cudaStreamSynchronize(s));
        bool ok = true;
        for (int i = 0; i < kLinks; i++) /* link i: its fill (1000 i + word) + 7 */
            ok = check_words(s, result + i * kWords, kWords, 1000u * (uint32_t)i + 7) && ok;
        obs_ok("results", ok);
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(result);
    cudaStreamDestroy(s);
    return 0;
}

// The footprint bench's escape workload with its data checked: a chain of six 32 MiB allocations
// (two live at a time) that makes three 16 MiB allocations it never frees, after the second,
// fourth and sixth. Its bound, 96 MiB, is what the driver holds; graphmem reaches it only by
// placing chain allocations across its private escape arena's end (they take the pages of the last
// escaping allocation, which begins after they end, and go on into the shared arena).
//
// Each allocation gets its own pattern; each chain allocation is copied out before its free and
// each escaping one is checked after the launch, so bytes shared between two live allocations
// show as wrong words. Between launches a graph of temporaries on the same stream writes over the
// shared arena while the escaping allocations are live; they must keep their bytes. Then they are
// freed outside and the graph launched again.
//
// tests/python/test_gpu_conformance.py also compares the graph's footprint with the driver's (the
// exec statistics against INFO used_high).
#include "common.cuh"

static const size_t kChain = 32u << 20, kEscape = 16u << 20, kTemp = 96u << 20;

static uint32_t pattern(int i) {
    return 7000000u * (uint32_t)(i + 1);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *result = nullptr;
    cudaMalloc(&result, 6 * kChain);

    void *chain[6] = {}, *escaping[3] = {};
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < 6 && rc == cudaSuccess; i++) {
        rc = cudaMallocAsync(&chain[i], kChain, s);
        if (rc == cudaSuccess)
            rc = fill_words(s, chain[i], kChain / 4, pattern(i));
        if (rc == cudaSuccess && i > 0) {
            k_add<<<kGrid, kBlock, 0, s>>>(result + (i - 1) * kChain / 4,
                                           (const uint32_t *)chain[i - 1], kChain / 4, 0);
            rc = cudaFreeAsync(chain[i - 1], s);
        }
        if (rc == cudaSuccess && i % 2) {
            rc = cudaMallocAsync(&escaping[i / 2], kEscape, s);
            if (rc == cudaSuccess)
                rc = fill_words(s, escaping[i / 2], kEscape / 4, pattern(10 + i / 2));
        }
    }
    if (rc == cudaSuccess) {
        k_add<<<kGrid, kBlock, 0, s>>>(result + 5 * kChain / 4, (const uint32_t *)chain[5],
                                       kChain / 4, 0);
        rc = cudaFreeAsync(chain[5], s);
    }
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(s, rc, &g))
        return 0;

    // The temporaries: one allocation over the whole shared arena and more, written and freed.
    void *temp = nullptr;
    rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&temp, kTemp, s);
    if (rc == cudaSuccess)
        rc = fill_words(s, temp, kTemp / 4, pattern(20));
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(temp, s);
    cudaGraph_t t = nullptr;
    if (!end_capture_observed(s, rc, &t))
        return 0;

    cudaGraphExec_t e = nullptr, te = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("instantiate_temp", cudaGraphInstantiate(&te, t, 0));
    for (int launch = 0; launch < 2; launch++) {
        cudaMemsetAsync(result, 0, 6 * kChain, s);
        obs_rc("launch", cudaGraphLaunch(e, s));
        obs_rc("sync", cudaStreamSynchronize(s));
        if (launch == 0) {
            unsigned long long used_high = 0;
            cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &used_high);
            info("used_high", "%llu", used_high);
        }
        bool ok = true;
        for (int i = 0; i < 6; i++)
            ok = check_words(s, result + i * kChain / 4, kChain / 4, pattern(i)) && ok;
        obs_ok("chain_results", ok);
        obs_rc("launch_temp", cudaGraphLaunch(te, s));
        obs_rc("sync_temp", cudaStreamSynchronize(s));
        ok = true;
        for (int i = 0; i < 3; i++)
            ok = check_words(s, escaping[i], kEscape / 4, pattern(10 + i)) && ok;
        obs_ok("escaping_results", ok);
        for (int i = 0; i < 3; i++)
            obs_rc("free_escaping", cudaFree(escaping[i]));
    }
    cudaGraphExecDestroy(e);
    cudaGraphExecDestroy(te);
    cudaGraphDestroy(g);
    cudaGraphDestroy(t);
    cudaFree(result);
    cudaStreamDestroy(s);
    return 0;
}

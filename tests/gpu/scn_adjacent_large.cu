// Large allocations of one size captured while all the earlier ones are still live: graphmem
// gives them adjacent addresses (a run) so that a first launch maps them a handle at a time. Each
// allocation is filled with its own pattern and copied out of the graph at the end, so bytes shared
// between two of them show as wrong words; natively and under graphmem the results must be whole.
//
// Graph `runs`: 12 allocations of 4 MiB or a page less (not a page multiple), all live; then the
// even ones are freed (closing the run), 6 more are made (a second run, which may take the freed
// bytes), and every live allocation is copied out. Launched, launched again, and launched after a
// trim (mapped anew). Graph `escaping`: an allocation that outlives the graph, then two temporaries
// of its size made while it is live (one run); the output is checked after each launch and freed
// outside.
//
// tests/python/test_gpu_conformance.py also reads the exec statistics: the mappings of `runs`.
#include "common.cuh"

static const int kFirst = 12, kSecond = 6;

static size_t first_size(int i) {
    return (4u << 20) - (i % 2) * 4096;
}

static size_t second_size(int i) {
    return (size_t)(3 + i % 2) * (1u << 20);
}

static uint32_t pattern(int i) {
    return 100000u * (uint32_t)(i + 1);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    size_t result_bytes = 0;
    for (int i = 0; i < kFirst; i++)
        result_bytes += first_size(i);
    for (int i = 0; i < kSecond; i++)
        result_bytes += second_size(i);
    uint32_t *result = nullptr;
    cudaMalloc(&result, result_bytes);

    // ---- runs ----
    void *first[kFirst] = {}, *second[kSecond] = {};
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < kFirst && rc == cudaSuccess; i++) {
        rc = cudaMallocAsync(&first[i], first_size(i), s);
        if (rc == cudaSuccess)
            rc = fill_words(s, first[i], first_size(i) / 4, pattern(i));
    }
    for (int i = 0; i < kFirst && rc == cudaSuccess; i += 2)
        rc = cudaFreeAsync(first[i], s);
    for (int i = 0; i < kSecond && rc == cudaSuccess; i++) {
        rc = cudaMallocAsync(&second[i], second_size(i), s);
        if (rc == cudaSuccess)
            rc = fill_words(s, second[i], second_size(i) / 4, pattern(kFirst + i));
    }
    size_t at = 0; // words into result
    for (int i = 1; i < kFirst && rc == cudaSuccess; i += 2) {
        k_add<<<kGrid, kBlock, 0, s>>>(result + at, (const uint32_t *)first[i], first_size(i) / 4,
                                       0);
        at += first_size(i) / 4;
        rc = cudaFreeAsync(first[i], s);
    }
    for (int i = 0; i < kSecond && rc == cudaSuccess; i++) {
        k_add<<<kGrid, kBlock, 0, s>>>(result + at, (const uint32_t *)second[i], second_size(i) / 4,
                                       0);
        at += second_size(i) / 4;
        rc = cudaFreeAsync(second[i], s);
    }
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(s, rc, &g))
        return 0;
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    for (int launch = 0; launch < 3; launch++) {
        if (launch == 2) {
            obs_rc("device_sync", cudaDeviceSynchronize());
            obs_rc("trim", cudaDeviceGraphMemTrim(0));
        }
        cudaMemsetAsync(result, 0, result_bytes, s);
        obs_rc("launch", cudaGraphLaunch(e, s));
        obs_rc("sync", cudaStreamSynchronize(s));
        bool ok = true;
        size_t word = 0;
        for (int i = 1; i < kFirst; i += 2) {
            ok = check_words(s, result + word, first_size(i) / 4, pattern(i)) && ok;
            word += first_size(i) / 4;
        }
        for (int i = 0; i < kSecond; i++) {
            ok = check_words(s, result + word, second_size(i) / 4, pattern(kFirst + i)) && ok;
            word += second_size(i) / 4;
        }
        obs_ok("runs_results", ok);
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    // ---- escaping ----
    void *out = nullptr, *tmp[2] = {};
    const size_t kOut = 4u << 20, kTmp = 4u << 20;
    rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&out, kOut, s);
    for (int i = 0; i < 2 && rc == cudaSuccess; i++) {
        rc = cudaMallocAsync(&tmp[i], kTmp, s);
        if (rc == cudaSuccess)
            rc = fill_words(s, tmp[i], kTmp / 4, pattern(i));
    }
    if (rc == cudaSuccess) {
        k_add<<<kGrid, kBlock, 0, s>>>((uint32_t *)out, (const uint32_t *)tmp[1], kOut / 4, 5);
        rc = cudaFreeAsync(tmp[0], s);
    }
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(tmp[1], s);
    if (!end_capture_observed(s, rc, &g))
        return 0;
    obs_rc("instantiate_escaping", cudaGraphInstantiate(&e, g, 0));
    for (int launch = 0; launch < 2; launch++) {
        obs_rc("launch_escaping", cudaGraphLaunch(e, s));
        obs_rc("sync_escaping", cudaStreamSynchronize(s));
        obs_ok("escaping_result", check_words(s, out, kOut / 4, pattern(1) + 5));
        obs_rc("free_escaping", cudaFree(out));
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(result);
    cudaStreamDestroy(s);
    return 0;
}

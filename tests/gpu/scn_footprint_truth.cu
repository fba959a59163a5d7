// Footprint truthfulness (§A10, §A6.5): the drop in free device memory reported by
// cudaMemGetInfo while graph allocations are mapped is at least what UsedMemCurrent reports, and
// comes back after the frees and a trim. Byte counts are INFO.
#include "common.cuh"

int main() {
    require_graph_memory();
    const size_t bytes = 256u << 20;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    // Initialise the context and the check counter before the baseline.
    check_words(s, nullptr, 0, 0);
    size_t free0 = 0, total = 0;
    cudaMemGetInfo(&free0, &total);

    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nb = nullptr, nf = nullptr;
    void *a = nullptr, *b = nullptr;
    add_alloc(&na, g, nullptr, 0, bytes, &a);
    add_fill(&nf, g, &na, 1, a, bytes / 4, 8);
    add_alloc(&nb, g, &nf, 1, 2 * bytes, &b);
    cudaGraphExec_t e = nullptr;
    cudaGraphInstantiate(&e, g, 0);
    obs_rc("launch", cudaGraphLaunch(e, s));
    obs_rc("sync", cudaStreamSynchronize(s));
    size_t free1 = 0;
    cudaMemGetInfo(&free1, &total);
    GraphMemAttrs at = read_attrs();
    uint64_t drop = free0 > free1 ? free0 - free1 : 0;
    obs_yes("drop_ge_used", drop >= at.used);
    obs_yes("used_ge_live_bytes", at.used >= 3 * bytes);
    info("free_drop_bytes", "%llu", (unsigned long long)drop);
    info("used_bytes", "%llu", (unsigned long long)at.used);
    info("reserved_bytes", "%llu", (unsigned long long)at.reserved);

    cudaFree(a);
    cudaFree(b);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    obs_rc("trim", cudaDeviceGraphMemTrim(0));
    size_t free2 = 0;
    cudaMemGetInfo(&free2, &total);
    // Within 64 MiB of the baseline: other allocations of the runtime may come and go.
    obs_yes("free_memory_restored", free2 + (64u << 20) >= free0);
    info("free_after_trim_minus_baseline", "%lld", (long long)free2 - (long long)free0);
    return 0;
}

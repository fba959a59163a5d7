// Batch copies (cudaMemcpyBatchAsync, CUDA 12.8) captured onto and from graph allocations, which
// graphmem forwards without a cover or a note (not in hooks.def). Natively and under graphmem:
// a capture of alloc A -> batch copy source -> A -> check A -> batch copy A -> out -> free A; an
// unrelated graph launches before the instantiation (under graphmem it unmaps the scratch pages a
// cover left idle); instantiate, launch, check A and out. Then the copies in a graph of their own
// onto and from another graph's allocation that has not launched. Whatever the driver answers
// (a refusal to capture them included), graphmem must answer the same.
#include "common.cuh"

static const size_t kBytes = 4u << 20;
static const uint32_t kWord = 0x21212121u;

static cudaError_t batch_copy(void *dst, const void *src, cudaStream_t s) {
    void *dsts[1] = {dst};
    const void *srcs[1] = {src};
    size_t sizes[1] = {kBytes};
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx[1] = {0};
    return cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, idx, 1, s);
}

static void own_round(cudaStream_t s, const void *source, void *out) {
    obs_rc("own_out_clear", cudaMemset(out, 0, kBytes));
    obs_rc("own_clear_sync", cudaDeviceSynchronize());
    cudaGraph_t g = nullptr;
    void *a = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&a, kBytes, s);
    if (rc == cudaSuccess)
        rc = batch_copy(a, source, s);
    if (rc == cudaSuccess)
        rc = batch_copy(out, a, s);
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(a, s);
    if (!end_capture_observed(s, rc, &g))
        return;
    launch_unrelated_graph(s, kBytes, "own_unrelated");
    cudaGraphExec_t e = nullptr;
    obs_rc("own_instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("own_launch", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc("own_sync", cudaStreamSynchronize(s));
    obs_int("own_wrong_words_out", e ? wrong_words(s, out, kBytes, kWord) : -1LL);
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

static void other_graph_round(cudaStream_t s, const void *source, void *out) {
    obs_rc("og_out_clear", cudaMemset(out, 0, kBytes));
    obs_rc("og_clear_sync", cudaDeviceSynchronize());
    cudaGraph_t g1 = nullptr, g2 = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al;
    void *a = nullptr;
    obs_rc("og_g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess)
        rc = batch_copy(a, source, s);
    if (rc == cudaSuccess)
        rc = batch_copy(out, a, s);
    cudaError_t end = cudaStreamEndCapture(s, &g2);
    obs_rc("og_capture", rc);
    obs_rc("og_end_capture", end);
    launch_unrelated_graph(s, kBytes, "og_unrelated");
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    obs_rc("og_g2_instantiate_before_g1_launch",
           g2 ? cudaGraphInstantiate(&e2, g2, 0) : cudaErrorInvalidValue);
    obs_rc("og_g1_instantiate", cudaGraphInstantiate(&e1, g1, 0));
    obs_rc("og_g1_launch", e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_rc("og_g2_launch", e2 ? cudaGraphLaunch(e2, s) : cudaErrorInvalidValue);
    obs_rc("og_sync", cudaStreamSynchronize(s));
    obs_int("og_wrong_words_a", e1 && e2 ? wrong_words(s, a, kBytes, kWord) : -1LL);
    obs_int("og_wrong_words_out", e1 && e2 ? wrong_words(s, out, kBytes, kWord) : -1LL);
    if (e1)
        obs_rc("og_free_a", cudaFree(a));
    for (cudaGraphExec_t e : {e1, e2})
        if (e)
            cudaGraphExecDestroy(e);
    for (cudaGraph_t g : {g1, g2})
        if (g)
            cudaGraphDestroy(g);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *source = nullptr, *out = nullptr;
    obs_rc("source", cudaMalloc(&source, kBytes));
    obs_rc("out", cudaMalloc(&out, kBytes));
    obs_rc("source_fill", cudaMemset(source, 0x21, kBytes));
    obs_rc("source_sync", cudaDeviceSynchronize());
    own_round(s, source, out);
    other_graph_round(s, source, out);
    cudaFree(source);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}

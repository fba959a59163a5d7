// Batch copies (cudaMemcpyBatchAsync, CUDA 12.8) captured onto and from graph allocations, which
// graphmem forwards without a cover or a note (not in hooks.def). Natively and under graphmem:
// a capture of alloc A -> batch copy source -> A -> check A -> batch copy A -> out -> free A; an
// unrelated graph launches before the instantiation (under graphmem it unmaps the scratch pages a
// cover left idle); instantiate, launch, check A and out. Then the copies in a graph of their own
// onto and from another graph's allocation that has not launched. Whatever the driver answers
// (a refusal to capture them included), graphmem must answer the same.
#include "copy_rounds.cuh"

static const size_t kBytes = kCopyBytes;
static const uint32_t kWord = kCopyWord;

// One batch of one copy (`variant` unused: one form).
static cudaError_t batch_copy(bool, void *dst, const void *src, cudaStream_t s) {
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
        rc = batch_copy(false, a, source, s);
    if (rc == cudaSuccess)
        rc = batch_copy(false, out, a, s);
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

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *source = nullptr, *out = nullptr;
    copy_buffers(&source, &out);
    own_round(s, source, out);
    other_graph_copy_round("batch", batch_copy, batch_copy, false, s, source, out);
    cudaFree(source);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}

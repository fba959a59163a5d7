// Relaunch of an exec without AutoFreeOnLaunch whose previous allocation is still unfreed
// (§A6.1, §A6.3, §A8.2): refused with cudaErrorInvalidValue; allowed again after
// cudaFree, after cudaFreeAsync, and after a free-only graph was launched. Also whether a free
// that was submitted but has not executed yet already unblocks the relaunch ([I], §A6.3).
#include "common.cuh"

static const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);

static __global__ void k_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr;
    void *a = nullptr;
    add_alloc(&na, g, nullptr, 0, bytes, &a);
    add_fill(&nf, g, &na, 1, a, n, 3);
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));

    obs_rc("launch1", cudaGraphLaunch(e, s));
    obs_rc("sync1", cudaStreamSynchronize(s));
    obs_rc("relaunch_unfreed", cudaGraphLaunch(e, s));
    obs_rc("relaunch_unfreed_sync", cudaStreamSynchronize(s));
    obs_ok("data_after_refusal", check_words(s, a, n, 3));

    obs_rc("cuda_free", cudaFree(a));
    obs_rc("relaunch_after_cuda_free", cudaGraphLaunch(e, s));
    obs_ok("data2", check_words(s, a, n, 3));

    obs_rc("free_async", cudaFreeAsync(a, s));
    obs_rc("relaunch_after_free_async", cudaGraphLaunch(e, s));
    obs_ok("data3", check_words(s, a, n, 3));

    cudaGraph_t gf = nullptr;
    cudaGraphCreate(&gf, 0);
    cudaGraphNode_t nfree = nullptr;
    obs_rc("free_only_graph_node", cudaGraphAddMemFreeNode(&nfree, gf, nullptr, 0, a));
    cudaGraphExec_t ef = nullptr;
    obs_rc("free_only_instantiate", cudaGraphInstantiate(&ef, gf, 0));
    obs_rc("free_only_launch", cudaGraphLaunch(ef, s));
    obs_rc("relaunch_after_free_graph", cudaGraphLaunch(e, s));
    obs_ok("data4", check_words(s, a, n, 3));

    // The free is queued behind a long kernel and has not run when the relaunch is asked for.
    k_spin<<<1, 1, 0, s>>>(200000000LL);
    obs_rc("pending_free_async", cudaFreeAsync(a, s));
    cudaError_t pending = cudaGraphLaunch(e, s);
    obs_rc("relaunch_while_free_pending", pending);
    obs_rc("pending_sync", cudaStreamSynchronize(s));
    if (pending == cudaSuccess)
        obs_ok("data5", check_words(s, a, n, 3));

    // Leave it freed: the free-only graph can free it once more.
    obs_rc("free_only_launch2", cudaGraphLaunch(ef, s));
    obs_rc("final_sync", cudaStreamSynchronize(s));
    obs_rc("free_only_relaunch_not_live", cudaGraphLaunch(ef, s));
    obs_rc("final_sync2", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(ef);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(gf);
    cudaGraphDestroy(g);
    return 0;
}

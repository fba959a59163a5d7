// cudaGraphUpload (§A7): upload then launch; upload before every launch, with a graph
// that frees its allocations and with an AutoFreeOnLaunch graph that leaves one unfreed; upload
// to one stream and launch into another; upload and launch of an exec whose previous allocation
// is still unfreed without AutoFree (§A6.1, §A7.4: the reference is the native run).
#include "common.cuh"

static const size_t n = 1 << 18, bytes = n * sizeof(uint32_t);

// alloc a -> fill(a, v) -> alloc b -> b = a + 1 -> free a; b is freed too unless `keep_b`.
static cudaGraph_t build(bool keep_b, void **b) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr, nb = nullptr, nk = nullptr, nfa = nullptr,
                    nfb = nullptr;
    void *a = nullptr;
    add_alloc(&na, g, nullptr, 0, bytes, &a);
    add_fill(&nf, g, &na, 1, a, n, 40);
    add_alloc(&nb, g, &nf, 1, bytes, b);
    add_add(&nk, g, &nb, 1, *b, a, n, 1);
    cudaGraphAddMemFreeNode(&nfa, g, &nk, 1, a);
    if (!keep_b)
        cudaGraphAddMemFreeNode(&nfb, g, &nk, 1, *b);
    return g;
}

int main() {
    require_graph_memory();
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    void *b = nullptr;

    cudaGraph_t g = build(false, &b);
    cudaGraphExec_t e = nullptr;
    obs_rc("freeing_instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("freeing_upload", cudaGraphUpload(e, s1));
    obs_rc("freeing_launch", cudaGraphLaunch(e, s1));
    bool ok = true;
    for (int i = 0; i < 5; i++) {
        ok &= cudaGraphUpload(e, s1) == cudaSuccess;
        ok &= cudaGraphLaunch(e, s1) == cudaSuccess;
    }
    obs_ok("freeing_upload_every_launch", ok);
    obs_rc("freeing_upload_other_stream", cudaGraphUpload(e, s2));
    obs_rc("freeing_launch_after_other_upload", cudaGraphLaunch(e, s1));
    obs_rc("freeing_sync", cudaDeviceSynchronize());
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    g = build(true, &b);
    obs_rc("autofree_instantiate",
           cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    bool calls = true, data = true;
    for (int i = 0; i < 5; i++) {
        calls &= cudaGraphUpload(e, s1) == cudaSuccess;
        calls &= cudaGraphLaunch(e, s1) == cudaSuccess;
        data &= check_words(s1, b, n, 41);
    }
    obs_ok("autofree_upload_every_launch", calls);
    obs_ok("autofree_data", data);
    obs_rc("autofree_free", cudaFreeAsync(b, s1));
    obs_rc("autofree_sync", cudaStreamSynchronize(s1));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    // Instantiate with the Upload flag: the upload happens inside instantiation.
    g = build(false, &b);
    cudaGraphInstantiateParams ip = {};
    ip.flags = cudaGraphInstantiateFlagUpload;
    ip.uploadStream = s2;
    obs_rc("instantiate_with_upload_flag", cudaGraphInstantiateWithParams(&e, g, &ip));
    obs_int("instantiate_with_upload_result", ip.result_out);
    obs_rc("launch_after_instantiate_upload", cudaGraphLaunch(e, s2));
    obs_rc("instantiate_upload_sync", cudaStreamSynchronize(s2));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    g = build(true, &b);
    obs_rc("unfreed_instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("unfreed_upload1", cudaGraphUpload(e, s1));
    obs_rc("unfreed_launch1", cudaGraphLaunch(e, s1));
    obs_rc("unfreed_sync1", cudaStreamSynchronize(s1));
    obs_rc("unfreed_upload2", cudaGraphUpload(e, s1));
    obs_rc("unfreed_launch2", cudaGraphLaunch(e, s1));
    obs_rc("unfreed_sync2", cudaStreamSynchronize(s1));
    obs_ok("unfreed_data", check_words(s1, b, n, 41));
    obs_rc("unfreed_free", cudaFree(b));
    obs_rc("unfreed_upload3", cudaGraphUpload(e, s1));
    obs_rc("unfreed_launch3", cudaGraphLaunch(e, s1));
    obs_ok("unfreed_data3", check_words(s1, b, n, 41));
    obs_rc("unfreed_free3", cudaFreeAsync(b, s1));
    obs_rc("unfreed_sync3", cudaStreamSynchronize(s1));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    return 0;
}

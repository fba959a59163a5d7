// cudaGraphExecUpdate to a graph whose memset and memcpy nodes touch graph memory that is not
// mapped while the update runs (tests/SEMANTICS.md §A3.16). The driver refuses all the cases below
// (driver 580, H200); graphmem, whose graph memory is mapped only at launch or under a scratch
// cover, must refuse them alike: covering the targets for the update, as an instantiation is
// covered, made the second one succeed, and so did a scratch page an earlier cover left idle at
// the target (the memset node's creation, the captured memset), until updates dropped idle scratch
// mappings first. Each explicit case runs twice: after an unrelated graph's launch (under graphmem
// it unmaps the scratch pages an earlier cover left idle), and right after the graphs were made
// (`direct_` keys):
//  - other: E0 runs U0 (memset X -> copy X to out); U1 has the same shape on another graph's
//    allocation A (G1 allocates A, which escapes, and has not launched). E0 is updated to U1,
//    G1 launches, E0 runs, A and out are checked.
//  - own: E runs GA (alloc -> memset -> copy to out -> free); GB has the same shape with another
//    value. E is updated to GB (whose allocation's address no exec has mapped) and runs; out is
//    checked.
//  - captured_<bytes>: jacobiCudaGraphs' update loop with a graph allocation (helper-63's
//    r63_jacobiCudaGraphs probe, which differed on the H200: 2,953 updates refused natively, none
//    under graphmem): each round captures alloc -> memset -> kernel -> copy to host -> free and
//    updates the exec to it at once, instantiating again where the update is refused; the host
//    value is checked each round.
#include "common.cuh"

static const size_t kBytes = 1u << 20;

// memset `target` to `value` -> copy `target` to `out`, after `deps`; the copy node to *last.
static cudaError_t add_set_and_copy(cudaGraph_t g, const cudaGraphNode_t *deps, size_t ndeps,
                                    void *target, void *out, uint32_t value,
                                    cudaGraphNode_t *last) {
    cudaMemsetParams m = memset_words(target, kBytes, value);
    cudaGraphNode_t set = nullptr;
    cudaError_t rc = cudaGraphAddMemsetNode(&set, g, deps, ndeps, &m);
    if (rc == cudaSuccess)
        rc = cudaGraphAddMemcpyNode1D(last, g, &set, 1, out, target, kBytes,
                                      cudaMemcpyDeviceToDevice);
    return rc;
}

// `prefix`_`what`, in a buffer that holds until the next call.
static const char *key_of(const char *prefix, const char *what) {
    static char key[96];
    snprintf(key, sizeof key, "%s_%s", prefix, what);
    return key;
}

static cudaGraphExecUpdateResult update_observed(const char *key, cudaGraphExec_t e,
                                                 cudaGraph_t g) {
    cudaGraphExecUpdateResultInfo info = {};
    char k[64];
    snprintf(k, sizeof k, "%s_update", key);
    obs_rc(k, e ? cudaGraphExecUpdate(e, g, &info) : cudaErrorInvalidValue);
    snprintf(k, sizeof k, "%s_update_result", key);
    obs_int(k, (long long)info.result);
    snprintf(k, sizeof k, "%s_update_error_node", key);
    obs_yes(k, info.errorNode != nullptr);
    return info.result;
}

static void other_graph_case(const char *p, bool unrelated, cudaStream_t s, void *out) {
    void *x = nullptr, *a = nullptr;
    obs_rc(key_of(p, "x"), cudaMalloc(&x, kBytes));
    cudaGraph_t g1, u0, u1;
    cudaGraphCreate(&g1, 0);
    cudaGraphCreate(&u0, 0);
    cudaGraphCreate(&u1, 0);
    cudaGraphNode_t al, last;
    obs_rc(key_of(p, "g1_alloc"), add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    obs_rc(key_of(p, "u0_nodes"), add_set_and_copy(u0, nullptr, 0, x, out, 0x11u, &last));
    obs_rc(key_of(p, "u1_nodes"), add_set_and_copy(u1, nullptr, 0, a, out, 0x77u, &last));
    cudaGraphExec_t e0 = nullptr, e1 = nullptr;
    obs_rc(key_of(p, "u0_instantiate"), cudaGraphInstantiate(&e0, u0, 0));
    if (unrelated)
        launch_unrelated_graph(s, kBytes, key_of(p, "unrelated"));
    update_observed(p, e0, u1);
    obs_rc(key_of(p, "g1_instantiate"), cudaGraphInstantiate(&e1, g1, 0));
    obs_rc(key_of(p, "g1_launch"), e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_rc(key_of(p, "e0_launch"), e0 ? cudaGraphLaunch(e0, s) : cudaErrorInvalidValue);
    obs_rc(key_of(p, "sync"), cudaStreamSynchronize(s));
    obs_int(key_of(p, "wrong_words_a"), e1 ? wrong_words(s, a, kBytes, 0x77u) : -1LL);
    obs_int(key_of(p, "wrong_words_out"), wrong_words(s, out, kBytes, 0x77u));
    if (e1)
        obs_rc(key_of(p, "free_a"), cudaFree(a));
    for (cudaGraphExec_t e : {e0, e1})
        if (e)
            cudaGraphExecDestroy(e);
    for (cudaGraph_t g : {g1, u0, u1})
        cudaGraphDestroy(g);
    cudaFree(x);
}

// alloc -> memset own -> copy to out -> free.
static cudaError_t own_shape(cudaGraph_t g, void *out, uint32_t value) {
    cudaGraphNode_t al, last, fr;
    void *p = nullptr;
    cudaError_t rc = add_alloc(&al, g, nullptr, 0, kBytes, &p);
    if (rc == cudaSuccess)
        rc = add_set_and_copy(g, &al, 1, p, out, value, &last);
    if (rc == cudaSuccess)
        rc = cudaGraphAddMemFreeNode(&fr, g, &last, 1, p);
    return rc;
}

static void own_case(const char *p, bool unrelated, cudaStream_t s, void *out) {
    cudaGraph_t ga, gb;
    cudaGraphCreate(&ga, 0);
    cudaGraphCreate(&gb, 0);
    obs_rc(key_of(p, "ga_nodes"), own_shape(ga, out, 0x21u));
    cudaGraphExec_t e = nullptr;
    obs_rc(key_of(p, "instantiate"), cudaGraphInstantiate(&e, ga, 0));
    obs_rc(key_of(p, "launch_a"), e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc(key_of(p, "sync_a"), cudaStreamSynchronize(s));
    obs_int(key_of(p, "wrong_words_a"), wrong_words(s, out, kBytes, 0x21u));
    /* Made after the launch, which drops idle scratch mappings: the memset node's cover of GB's
     * allocation is what the update finds, unless an unrelated launch comes between. */
    obs_rc(key_of(p, "gb_nodes"), own_shape(gb, out, 0x43u));
    if (unrelated)
        launch_unrelated_graph(s, kBytes, key_of(p, "unrelated"));
    update_observed(p, e, gb);
    obs_rc(key_of(p, "launch_b"), e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc(key_of(p, "sync_b"), cudaStreamSynchronize(s));
    obs_int(key_of(p, "wrong_words_b"), wrong_words(s, out, kBytes, 0x43u));
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(ga);
    cudaGraphDestroy(gb);
}

// jacobiCudaGraphs' loop: capture, update the exec at once (instantiate again where refused), run.
static void captured_case(cudaStream_t s, size_t bytes, uint32_t *host) {
    char p[64];
    cudaGraphExec_t e = nullptr;
    for (uint32_t round = 0; round < 4; round++) {
        snprintf(p, sizeof p, "captured_%zu_r%u", bytes, round);
        void *d = nullptr;
        cudaGraph_t g = nullptr;
        obs_rc(key_of(p, "begin"), cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        obs_rc(key_of(p, "malloc"), cudaMallocAsync(&d, bytes, s));
        obs_rc(key_of(p, "memset"), cudaMemsetAsync(d, 0, bytes, s));
        k_fill<<<1, 32, 0, s>>>(static_cast<uint32_t *>(d), 1, 0x500u + round);
        obs_rc(key_of(p, "fill"), cudaGetLastError());
        obs_rc(key_of(p, "copy"),
               cudaMemcpyAsync(host, d, sizeof *host, cudaMemcpyDeviceToHost, s));
        obs_rc(key_of(p, "free"), cudaFreeAsync(d, s));
        obs_rc(key_of(p, "end"), cudaStreamEndCapture(s, &g));
        if (e == nullptr) {
            obs_rc(key_of(p, "instantiate"), cudaGraphInstantiate(&e, g, 0));
        } else if (update_observed(p, e, g) != cudaGraphExecUpdateSuccess) {
            obs_rc(key_of(p, "exec_destroy"), cudaGraphExecDestroy(e));
            e = nullptr;
            obs_rc(key_of(p, "instantiate_again"), cudaGraphInstantiate(&e, g, 0));
        }
        *host = 0;
        obs_rc(key_of(p, "launch"), e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
        obs_rc(key_of(p, "sync"), cudaStreamSynchronize(s));
        obs_yes(key_of(p, "value"), *host == 0x500u + round);
        if (g)
            obs_rc(key_of(p, "graph_destroy"), cudaGraphDestroy(g));
    }
    if (e)
        cudaGraphExecDestroy(e);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *out = nullptr;
    obs_rc("out", cudaMalloc(&out, kBytes));
    other_graph_case("other", true, s, out);
    own_case("own", true, s, out);
    other_graph_case("direct_other", false, s, out);
    own_case("direct_own", false, s, out);
    uint32_t *host = nullptr;
    obs_rc("host", cudaMallocHost(&host, sizeof *host));
    for (size_t bytes : {size_t(8), size_t(4) << 20})
        captured_case(s, bytes, host);
    cudaFreeHost(host);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}

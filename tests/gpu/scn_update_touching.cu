// cudaGraphExecUpdate to a graph whose memset and memcpy nodes touch graph memory that is not
// mapped while the update runs (tests/SEMANTICS.md §A3.16). The driver refuses both cases below
// (driver 580, H200); graphmem, whose graph memory is mapped only at launch or under a scratch
// cover, must refuse them alike: covering the targets for the update, as an instantiation is
// covered, made the second one succeed. Each case runs after an unrelated graph's launch (under
// graphmem it unmaps the scratch pages an earlier cover left idle):
//  - other: E0 runs U0 (memset X -> copy X to out); U1 has the same shape on another graph's
//    allocation A (G1 allocates A, which escapes, and has not launched). E0 is updated to U1,
//    G1 launches, E0 runs, A and out are checked.
//  - own: E runs GA (alloc -> memset -> copy to out -> free); GB has the same shape with another
//    value. E is updated to GB (whose allocation's address no exec has mapped) and runs; out is
//    checked.
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

static void update_observed(const char *key, cudaGraphExec_t e, cudaGraph_t g) {
    cudaGraphExecUpdateResultInfo info = {};
    char k[64];
    snprintf(k, sizeof k, "%s_update", key);
    obs_rc(k, e ? cudaGraphExecUpdate(e, g, &info) : cudaErrorInvalidValue);
    snprintf(k, sizeof k, "%s_update_result", key);
    obs_int(k, (long long)info.result);
}

static void other_graph_case(cudaStream_t s, void *out) {
    void *x = nullptr, *a = nullptr;
    obs_rc("other_x", cudaMalloc(&x, kBytes));
    cudaGraph_t g1, u0, u1;
    cudaGraphCreate(&g1, 0);
    cudaGraphCreate(&u0, 0);
    cudaGraphCreate(&u1, 0);
    cudaGraphNode_t al, last;
    obs_rc("other_g1_alloc", add_alloc(&al, g1, nullptr, 0, kBytes, &a));
    obs_rc("other_u0_nodes", add_set_and_copy(u0, nullptr, 0, x, out, 0x11u, &last));
    obs_rc("other_u1_nodes", add_set_and_copy(u1, nullptr, 0, a, out, 0x77u, &last));
    cudaGraphExec_t e0 = nullptr, e1 = nullptr;
    obs_rc("other_u0_instantiate", cudaGraphInstantiate(&e0, u0, 0));
    launch_unrelated_graph(s, kBytes, "other_unrelated");
    update_observed("other", e0, u1);
    obs_rc("other_g1_instantiate", cudaGraphInstantiate(&e1, g1, 0));
    obs_rc("other_g1_launch", e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_rc("other_e0_launch", e0 ? cudaGraphLaunch(e0, s) : cudaErrorInvalidValue);
    obs_rc("other_sync", cudaStreamSynchronize(s));
    obs_int("other_wrong_words_a", e1 ? wrong_words(s, a, kBytes, 0x77u) : -1LL);
    obs_int("other_wrong_words_out", wrong_words(s, out, kBytes, 0x77u));
    if (e1)
        obs_rc("other_free_a", cudaFree(a));
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

static void own_case(cudaStream_t s, void *out) {
    cudaGraph_t ga, gb;
    cudaGraphCreate(&ga, 0);
    cudaGraphCreate(&gb, 0);
    obs_rc("own_ga_nodes", own_shape(ga, out, 0x21u));
    obs_rc("own_gb_nodes", own_shape(gb, out, 0x43u));
    cudaGraphExec_t e = nullptr;
    obs_rc("own_instantiate", cudaGraphInstantiate(&e, ga, 0));
    obs_rc("own_launch_a", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc("own_sync_a", cudaStreamSynchronize(s));
    obs_int("own_wrong_words_a", wrong_words(s, out, kBytes, 0x21u));
    launch_unrelated_graph(s, kBytes, "own_unrelated");
    update_observed("own", e, gb);
    obs_rc("own_launch_b", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_rc("own_sync_b", cudaStreamSynchronize(s));
    obs_int("own_wrong_words_b", wrong_words(s, out, kBytes, 0x43u));
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(ga);
    cudaGraphDestroy(gb);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *out = nullptr;
    obs_rc("out", cudaMalloc(&out, kBytes));
    other_graph_case(s, out);
    own_case(s, out);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}

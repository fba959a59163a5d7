// The rounds the scenarios on captured copies share (scn_captured_peer_copy,
// scn_captured_batch_copy): a source buffer of one word value and an output buffer, and the copies
// in a graph of their own onto and from another graph's allocation that has not launched.
#pragma once

#include "common.cuh"

static const size_t kCopyBytes = 4u << 20;
static const uint32_t kCopyWord = 0x21212121u;

// A copy of kCopyBytes from `src` to `dst` on `s`, in one of the scenario's two forms (`variant`).
typedef cudaError_t (*copy_fn)(bool variant, void *dst, const void *src, cudaStream_t s);

// *source (every word kCopyWord) and *out, kCopyBytes each.
static inline void copy_buffers(void **source, void **out) {
    obs_rc("source", cudaMalloc(source, kCopyBytes));
    obs_rc("out", cudaMalloc(out, kCopyBytes));
    obs_rc("source_fill", cudaMemset(*source, 0x21, kCopyBytes));
    obs_rc("source_sync", cudaDeviceSynchronize());
}

// G1 allocates A (it escapes); G2, captured, copies source -> A (`in`) and A -> out (`out_copy`).
// An unrelated graph launches (under graphmem it unmaps the scratch pages a cover left idle); G2
// is instantiated before G1 ever launched, then G1 launches, G2 runs, and A and out are checked.
static inline void other_graph_copy_round(const char *round, copy_fn in, copy_fn out_copy,
                                          bool variant, cudaStream_t s, const void *source,
                                          void *out) {
    obs_key(round, "og_out_clear", cudaMemset(out, 0, kCopyBytes));
    obs_key(round, "og_clear_sync", cudaDeviceSynchronize());
    cudaGraph_t g1 = nullptr, g2 = nullptr;
    cudaGraphCreate(&g1, 0);
    cudaGraphNode_t al;
    void *a = nullptr;
    obs_key(round, "og_g1_alloc", add_alloc(&al, g1, nullptr, 0, kCopyBytes, &a));
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess)
        rc = in(variant, a, source, s);
    if (rc == cudaSuccess)
        rc = out_copy(variant, out, a, s);
    cudaError_t end = cudaStreamEndCapture(s, &g2);
    obs_key(round, "og_capture", rc);
    obs_key(round, "og_end_capture", end);
    char key[96];
    launch_unrelated_graph(s, kCopyBytes, round_key(key, sizeof key, round, "og_other_launch"));
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    obs_key(round, "og_g2_instantiate_before_g1_launch",
            g2 ? cudaGraphInstantiate(&e2, g2, 0) : cudaErrorInvalidValue);
    obs_key(round, "og_g1_instantiate", cudaGraphInstantiate(&e1, g1, 0));
    obs_key(round, "og_g1_launch", e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_key(round, "og_g2_launch", e2 ? cudaGraphLaunch(e2, s) : cudaErrorInvalidValue);
    obs_key(round, "og_sync", cudaStreamSynchronize(s));
    obs_key_int(round, "og_wrong_words_a",
                e1 && e2 ? wrong_words(s, a, kCopyBytes, kCopyWord) : -1LL);
    obs_key_int(round, "og_wrong_words_out",
                e1 && e2 ? wrong_words(s, out, kCopyBytes, kCopyWord) : -1LL);
    if (e1)
        obs_key(round, "og_free_a", cudaFree(a));
    for (cudaGraphExec_t e : {e1, e2})
        if (e)
            cudaGraphExecDestroy(e);
    for (cudaGraph_t g : {g1, g2})
        if (g)
            cudaGraphDestroy(g);
}

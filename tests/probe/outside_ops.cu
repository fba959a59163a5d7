// Probe (natively and under graphmem; helper-62, run on the H200 in the eighteenth session): the
// in-range operations agree (data checked); the overruns differ: a cuMemsetD8 of 2048 bytes on a
// 1000-byte allocation and a memset or copies past the end of an 8 MiB one are refused natively
// (INVALID_VALUE) and accepted under graphmem, writing into the neighbouring allocation that
// shares the mapping. tests/SEMANTICS.md §A14.3.
//
// Memory operations OUTSIDE any graph on live graph allocations: synchronous cuMemsetD8 /
// cuMemsetD32, cudaMemcpy D2D / D2H / H2D, cudaMemcpyAsync D2D, cuMemcpyPeerAsync (same context),
// cuMemcpyDtoD, cudaMemcpy2D. None is hooked outside a capture (shim/interpose/hooks.def lists
// only the *Async memsets/copies, whose hooks cover nothing outside captures:
// shim/hooks/copy_hooks.c), so the driver checks them against graphmem's VMM mappings.
// Each case runs in its own process (run_isolated): one graph allocates A, B (1000 bytes) and
// L1, L2 (8 MiB, L2 made while L1 is unfreed), fills them (k_fill 10/20/30/40) and frees none.
//
// in_range: every operation within its allocation; data checked after each. Expected same
//   natively and under graphmem (not covered yet: scenarios only write graph memory from kernels
//   and captured ops, and read it back with cudaMemcpy).
// Overruns (program errors, but what a program observes; the driver's range check is the point):
// memset_into_neighbour: cudaMemset(A, 0x11, 2048). graphmem packs A and B 256-aligned into one
//   chunk (core/plan/pack.c), B at A + 1024: the driver sees one mapping, takes the memset and B
//   is overwritten. Natively A has a range of its own: either the driver refuses the size or the
//   bytes land in A's padding; B intact either way -> expected DIFFERENT (b_intact).
// memset_past_run: cuMemsetD8(L1, 0x22, 8 MiB + 2 MiB). Under graphmem L2 follows L1 in the same
//   run/escape arena (core/README.md "Runs"), so the driver may take it and clobber L2; natively
//   expected INVALID_VALUE or L2 intact -> likely DIFFERENT.
// copy_past_end: cudaMemcpy D2H, then D2D into a cudaMalloc buffer, of L1 with 8 MiB + 4 KiB:
//   natively expected cudaErrorInvalidValue, under graphmem maybe success (L2's pages follow L1
//   in one mapping) -> likely DIFFERENT.
#include "entries.cuh"

#include <cuda.h>

static const size_t kSmall = 1000, kLarge = 8u << 20;
static void *A, *B, *L1, *L2;
static cudaStream_t S;

static CUdeviceptr dp(const void *p) {
    return (CUdeviceptr)(uintptr_t)p;
}

// The graph, launched and finished: A, B, L1, L2 live and filled.
static bool setup(void) {
    cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
    struct {
        void **p;
        size_t bytes;
        uint32_t v;
    } allocs[] = {{&A, kSmall, 10}, {&B, kSmall, 20}, {&L1, kLarge, 30}, {&L2, kLarge, 40}};
    cudaError_t rc = cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal);
    for (auto &x : allocs)
        if (rc == cudaSuccess && (rc = cudaMallocAsync(x.p, x.bytes, S)) == cudaSuccess)
            rc = fill_words(S, *x.p, x.bytes / 4, x.v);
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(S, rc, &g))
        return false;
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    launch_observed("setup", e, S);
    return e != nullptr;
}

static void in_range(void) {
    if (!setup())
        return;
    CUcontext ctx = nullptr;
    cuCtxGetCurrent(&ctx);
    obs_rc("memcpy_async_d2d", cudaMemcpyAsync(L1, L2, kLarge, cudaMemcpyDeviceToDevice, S));
    obs_ok("memcpy_async_d2d_data", check_words(S, L1, kLarge / 4, 40));
    obs_cu("memset_d32_sync", cuMemsetD32(dp(L1), 9u, kLarge / 4));
    obs_int("memset_d32_sync_wrong", wrong_words(S, L1, kLarge, 9u));
    obs_cu("memcpy_peer_async", cuMemcpyPeerAsync(dp(L1), ctx, dp(L2), ctx, kLarge, S));
    obs_ok("memcpy_peer_async_data", check_words(S, L1, kLarge / 4, 40));
    obs_cu("memset_d8_sync", cuMemsetD8(dp(L2), 0x5a, kLarge));
    obs_int("memset_d8_sync_wrong", wrong_words(S, L2, kLarge, 0x5a5a5a5au));
    obs_cu("memcpy_dtod_sync", cuMemcpyDtoD(dp(L2), dp(L1), kLarge));
    obs_ok("memcpy_dtod_sync_data", check_words(S, L2, kLarge / 4, 40));
    obs_rc("memcpy_2d", cudaMemcpy2D(L1, 8192, L2, 8192, 4096, 64, cudaMemcpyDeviceToDevice));
    obs_rc("memset_2d", cudaMemset2D(L2, 8192, 0, 4096, 64));
    obs_rc("memcpy_d2d_small", cudaMemcpy(A, B, kSmall, cudaMemcpyDeviceToDevice));
    obs_ok("memcpy_d2d_small_data", check_words(S, A, kSmall / 4, 20));
    obs_cu("memset_d32_small", cuMemsetD32(dp(B), 7u, kSmall / 4));
    obs_int("memset_d32_small_wrong", wrong_words(S, B, kSmall, 7u));
    obs_ok("a_untouched_by_b_memset", check_words(S, A, kSmall / 4, 20));
    uint32_t h[kSmall / 4];
    for (size_t i = 0; i < kSmall / 4; i++)
        h[i] = 500u + (uint32_t)i;
    obs_rc("memcpy_h2d_small", cudaMemcpy(B, h, kSmall, cudaMemcpyHostToDevice));
    obs_ok("memcpy_d2h_small_data", host_check(B, kSmall / 4, 500));
    obs_rc("sync_end", cudaDeviceSynchronize());
}

static void memset_into_neighbour(void) {
    if (!setup())
        return;
    obs_rc("memset_a_2048", cudaMemset(A, 0x11, 2048));
    obs_rc("memset_a_2048_sync", cudaDeviceSynchronize());
    obs_yes("b_intact", check_words(S, B, kSmall / 4, 20));
    obs_int("a_wrong_words_vs_0x11", wrong_words(S, A, kSmall & ~3u, 0x11111111u));
}

static void memset_past_run(void) {
    if (!setup())
        return;
    obs_cu("memset_l1_plus_2m", cuMemsetD8(dp(L1), 0x22, kLarge + (2u << 20)));
    obs_rc("memset_l1_plus_2m_sync", cudaDeviceSynchronize());
    obs_yes("l2_intact", check_words(S, L2, kLarge / 4, 40));
}

static void copy_past_end(void) {
    if (!setup())
        return;
    size_t bytes = kLarge + 4096;
    uint32_t *h = (uint32_t *)malloc(bytes);
    obs_rc("memcpy_d2h_l1_plus_4k",
           h ? cudaMemcpy(h, L1, bytes, cudaMemcpyDeviceToHost) : cudaErrorMemoryAllocation);
    obs_rc("memcpy_d2h_l1_plus_4k_sync", cudaDeviceSynchronize());
    free(h);
    void *dst = nullptr;
    cudaMalloc(&dst, bytes);
    obs_rc("memcpy_d2d_from_l1_plus_4k", cudaMemcpy(dst, L1, bytes, cudaMemcpyDeviceToDevice));
    obs_rc("memcpy_d2d_sync", cudaDeviceSynchronize());
    cudaFree(dst);
}

int main() {
    run_isolated("in_range", in_range);
    run_isolated("memset_into_neighbour", memset_into_neighbour);
    run_isolated("memset_past_run", memset_past_run);
    run_isolated("copy_past_end", copy_past_end);
    return 0;
}

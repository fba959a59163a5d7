// Escaping allocations made after others were freed (the bench's escape workload, smaller): a
// chain of six 32 MiB allocations, two live at a time, that also makes a 16 MiB allocation after
// the second, fourth and sixth and never frees it. An escaping allocation may take the bytes of
// chain links freed before it was made (graphmem's planner may put such links into the exec's
// private arena beside it; the driver reuses such bytes too), never those of a link still live,
// and no later launch may touch it before it is freed. Every link is signed when
// made and checked just before its free, every escaping allocation signed when made and checked
// after the launch from outside the graph; four launches with AutoFreeOnLaunch, then the escaping
// allocations are freed with cudaFree and the graph launched once more. Natively and under
// graphmem: 0 wrong words. Footprints are INFO.
#include "threads.cuh"

static const size_t kLink = 32u << 20, kEscape = 16u << 20;

static __global__ void k_sign_sig(uint32_t *p, size_t n, uint32_t id) {
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        p[j] = sig_word(id, 0, j);
}

static __global__ void k_check_sig(const uint32_t *p, size_t n, uint32_t id, unsigned *bad) {
    unsigned wrong = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        wrong += p[j] != sig_word(id, 0, j);
    if (wrong)
        atomicAdd(bad, wrong);
}

static void sign(cudaStream_t s, void *p, size_t bytes, uint32_t id) {
    k_sign_sig<<<kWorkGrid, kWorkBlock, 0, s>>>((uint32_t *)p, bytes / 4, id);
}

static void check(cudaStream_t s, const void *p, size_t bytes, uint32_t id, unsigned *bad) {
    k_check_sig<<<kWorkGrid, kWorkBlock, 0, s>>>((const uint32_t *)p, bytes / 4, id, bad);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();

    void *escaped[3] = {};
    cudaError_t first = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *prev = nullptr;
    for (int i = 0; i < 6 && first == cudaSuccess; i++) {
        void *p = nullptr;
        first = cudaMallocAsync(&p, kLink, s);
        sign(s, p, kLink, 100 + i);
        if (prev) {
            check(s, prev, kLink, 100 + i - 1, bad);
            if (first == cudaSuccess)
                first = cudaFreeAsync(prev, s);
        }
        prev = p;
        if (i % 2 && first == cudaSuccess) {
            first = cudaMallocAsync(&escaped[i / 2], kEscape, s);
            sign(s, escaped[i / 2], kEscape, 200 + i / 2);
        }
    }
    check(s, prev, kLink, 105, bad);
    if (first == cudaSuccess)
        first = cudaFreeAsync(prev, s);
    cudaGraph_t graph = nullptr;
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    obs_rc("capture", first != cudaSuccess ? first : end);
    cudaGraphExec_t exec = nullptr;
    obs_rc("instantiate",
           cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));

    char key[64];
    for (int launch = 0; launch < 4; launch++) {
        snprintf(key, sizeof key, "launch_%d", launch);
        obs_rc(key, cudaGraphLaunch(exec, s));
        for (int e = 0; e < 3; e++)
            check(s, escaped[e], kEscape, 200 + e, bad);
        snprintf(key, sizeof key, "sync_%d", launch);
        obs_rc(key, cudaStreamSynchronize(s));
        snprintf(key, sizeof key, "wrong_words_%d", launch);
        obs_wrong(key, bad);
    }
    info_attrs("after_launches", read_attrs());
    bool freed = true;
    for (void *p : escaped)
        freed &= cudaFree(p) == cudaSuccess;
    obs_ok("cuda_free_escaped", freed);
    obs_rc("launch_after_free", cudaGraphLaunch(exec, s));
    for (int e = 0; e < 3; e++)
        check(s, escaped[e], kEscape, 200 + e, bad);
    obs_rc("sync_after_free", cudaStreamSynchronize(s));
    obs_wrong("wrong_words_after_free", bad);
    for (void *p : escaped)
        freed &= cudaFree(p) == cudaSuccess;
    obs_ok("cuda_free_again", freed);

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}

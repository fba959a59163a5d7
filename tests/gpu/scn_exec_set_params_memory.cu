// Exec-level memset and memcpy set-params (cudaGraphExecMemsetNodeSetParams,
// cudaGraphExecMemcpyNodeSetParams1D, cudaGraphExecNodeSetParams) onto graph memory: the exec's own
// allocation before and after its first launch, another graph's allocation before that graph
// launched and while it is live. The driver takes every set (driver 580, H200); a set onto another
// graph's allocation that never launched faults at the launch, and the frees after the fault
// answer the sticky error (scn_free_after_fault.cu). Each case in a process of its own
// (entries.cuh run_isolated); scratch pages graphmem's covers left idle stay where the program's
// own calls leave them (no unrelated launch between). From the r65 probe of the nineteenth
// session, which matched but for the free after the fault.
#include "entries.cuh"

static const size_t kBytes = 1u << 20, kWords = kBytes / 4;

enum Kind { MEMSET, MEMCPY, GENERIC };

// The counter's value (-1 when it cannot be read), zeroed again.
static long long read_counter(unsigned *bad) {
    unsigned h = 0;
    if (cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    cudaMemset(bad, 0, sizeof h);
    return h;
}
static Kind g_kind;
static bool g_after_launch, g_other, g_other_launched;
static char g_case[64];

// `<case>_<what>`, in a buffer that holds until the next call.
static const char *K(const char *what) {
    static char key[128];
    snprintf(key, sizeof key, "%s_%s", g_case, what);
    return key;
}

static cudaError_t set_exec(cudaGraphExec_t e, cudaGraphNode_t n, void *dst, void *src,
                            uint32_t value) {
    if (g_kind == MEMSET) {
        cudaMemsetParams m = memset_words(dst, kBytes, value);
        return cudaGraphExecMemsetNodeSetParams(e, n, &m);
    }
    if (g_kind == MEMCPY)
        return cudaGraphExecMemcpyNodeSetParams1D(e, n, dst, src, kBytes, cudaMemcpyDeviceToDevice);
    cudaGraphNodeParams p = memset_node_params(dst, kBytes, value);
    return cudaGraphExecNodeSetParams(e, n, &p);
}

static void one_case(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    void *src = nullptr;
    cudaMalloc(&src, kBytes);
    fill_words(s, src, kWords, 0x99u);
    cudaStreamSynchronize(s);
    // G: alloc A -> memset/copy (onto A) -> check A (value) -> free A.
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t al, op, ck, fr;
    void *a = nullptr;
    obs_rc(K("g_alloc"), add_alloc(&al, g, nullptr, 0, kBytes, &a));
    uint32_t v0 = g_kind == MEMCPY ? 0x99u : 0x11u;
    if (g_kind == MEMCPY)
        obs_rc(K("g_op"),
               cudaGraphAddMemcpyNode1D(&op, g, &al, 1, a, src, kBytes, cudaMemcpyDeviceToDevice));
    else {
        cudaMemsetParams m = memset_words(a, kBytes, v0);
        obs_rc(K("g_op"), cudaGraphAddMemsetNode(&op, g, &al, 1, &m));
    }
    obs_rc(K("g_check"),
           add_check(&ck, g, &op, 1, a, kWords, v0, bad, (const void *)k_check_value));
    obs_rc(K("g_free"), cudaGraphAddMemFreeNode(&fr, g, &ck, 1, a));
    // H: alloc B (escapes), fill B.
    cudaGraph_t h;
    cudaGraphCreate(&h, 0);
    cudaGraphNode_t hb, hf;
    void *b = nullptr;
    obs_rc(K("h_alloc"), add_alloc(&hb, h, nullptr, 0, kBytes, &b));
    obs_rc(K("h_fill"), add_fill(&hf, h, &hb, 1, b, kWords, 3));
    cudaGraphExec_t e = nullptr, eh = nullptr;
    obs_rc(K("g_instantiate"), cudaGraphInstantiate(&e, g, 0));
    obs_rc(K("h_instantiate"), cudaGraphInstantiate(&eh, h, 0));
    if (g_other_launched) {
        obs_rc(K("h_launch"), cudaGraphLaunch(eh, s));
        obs_rc(K("h_sync"), cudaStreamSynchronize(s));
    }
    if (g_after_launch) {
        obs_rc(K("g_launch0"), cudaGraphLaunch(e, s));
        obs_rc(K("g_sync0"), cudaStreamSynchronize(s));
        obs_int(K("g_bad0"), read_counter(bad));
    }
    void *target = g_other ? b : a;
    uint32_t v1 = g_kind == MEMCPY ? 0x99u : 0x22u;
    obs_rc(K("exec_set"), set_exec(e, op, target, src, v1));
    obs_rc(K("g_launch1"), cudaGraphLaunch(e, s));
    obs_rc(K("g_sync1"), cudaStreamSynchronize(s));
    obs_int(K("g_bad1"), read_counter(bad));
    if (!g_other_launched) {
        obs_rc(K("h_launch_late"), cudaGraphLaunch(eh, s));
        obs_rc(K("h_sync_late"), cudaStreamSynchronize(s));
    }
    obs_rc(K("free_b"), cudaFree(b));
    cudaGraphExecDestroy(e);
    cudaGraphExecDestroy(eh);
    cudaGraphDestroy(g);
    cudaGraphDestroy(h);
    cudaFree(src);
    cudaStreamDestroy(s);
}

int main() {
    static const char *kinds[] = {"memset", "memcpy", "generic"};
    for (int k = 0; k < 3; k++)
        for (int after = 0; after < 2; after++)
            for (int other = 0; other < 3; other++) {
                g_kind = (Kind)k;
                g_after_launch = after;
                g_other = other > 0;
                g_other_launched = other == 2;
                snprintf(g_case, sizeof g_case, "%s_%s_%s", kinds[k], after ? "after" : "before",
                         other == 0   ? "own"
                         : other == 1 ? "other_unlaunched"
                                      : "other_live");
                run_isolated(g_case, one_case);
            }
    return 0;
}

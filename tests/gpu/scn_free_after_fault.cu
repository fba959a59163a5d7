// Frees of graph allocations after a kernel fault left the context with a sticky error: the
// driver answers every call with that error before it looks at the pointer (r65 probe on the H200:
// cudaFree of an allocation whose graph never launched read cudaErrorIllegalAddress natively,
// cudaErrorInvalidValue under graphmem, which answered from its own records). Each case in a
// process of its own: an allocation escaping its graph (launched or not), a fault, then a free
// (synchronous or on a stream), a second free, and a graph launch.
#include "entries.cuh"

static const size_t kBytes = 1u << 20, kWords = kBytes / 4;

static __global__ void k_fault(uint32_t *p) {
    *p = 1; // an address nothing maps
}

static bool g_launched, g_async;

static void one_case(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t h;
    cudaGraphCreate(&h, 0);
    cudaGraphNode_t al, fill;
    void *b = nullptr;
    obs_rc("alloc_node", add_alloc(&al, h, nullptr, 0, kBytes, &b));
    obs_rc("fill_node", add_fill(&fill, h, &al, 1, b, kWords, 5));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, h, 0));
    if (g_launched) {
        obs_rc("launch", cudaGraphLaunch(e, s));
        obs_rc("sync", cudaStreamSynchronize(s));
    }
    k_fault<<<1, 1, 0, s>>>(reinterpret_cast<uint32_t *>(uintptr_t(0x10)));
    obs_rc("fault_launch", cudaGetLastError());
    obs_rc("fault_sync", cudaStreamSynchronize(s));
    for (int i = 0; i < 2; i++) {
        char key[32];
        snprintf(key, sizeof key, "free_%d", i);
        obs_rc(key, g_async ? cudaFreeAsync(b, s) : cudaFree(b));
    }
    obs_rc("relaunch", cudaGraphLaunch(e, s));
    obs_rc("sync_after", cudaStreamSynchronize(s));
}

int main() {
    for (int launched = 0; launched < 2; launched++)
        for (int async = 0; async < 2; async++) {
            g_launched = launched;
            g_async = async;
            char name[48];
            snprintf(name, sizeof name, "%s_%s", launched ? "live" : "unlaunched",
                     async ? "free_async" : "free");
            run_isolated(name, one_case);
        }
    return 0;
}

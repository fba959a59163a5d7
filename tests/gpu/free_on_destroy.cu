// GRAPHMEM_FREE_ON_DESTROY: eight cycles, each capturing a graph whose 4 MiB allocation escapes
// (cudaMallocAsync, a kernel filling it, no free), instantiated with AutoFreeOnLaunch, launched,
// synchronized, and destroyed with its exec. The driver keeps every such allocation live until the
// program frees it, so the cycles leave 32 MiB held after a trim; with the option graphmem frees
// each once its launch finished, holds nothing after the trim, and refuses the later cudaFree of
// the first one (it is freed already). tests/python/test_gpu_conformance.py runs it natively,
// under graphmem as it is (same observations) and with the option (the observations it expects).
#include "common.cuh"

static const size_t kBytes = 4u << 20;
static const int kCycles = 8;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *first = nullptr;
    cudaError_t worst = cudaSuccess;
    for (int cycle = 0; cycle < kCycles; cycle++) {
        cudaGraph_t g = nullptr;
        cudaGraphExec_t e = nullptr;
        void *p = nullptr;
        cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        if (rc == cudaSuccess)
            rc = cudaMallocAsync(&p, kBytes, s);
        if (rc == cudaSuccess)
            rc = fill_words(s, p, kBytes / 4, (uint32_t)cycle);
        cudaError_t end = cudaStreamEndCapture(s, &g);
        if (rc == cudaSuccess)
            rc = end;
        if (rc == cudaSuccess)
            rc = cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagAutoFreeOnLaunch);
        if (rc == cudaSuccess)
            rc = cudaGraphLaunch(e, s);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(s);
        if (rc == cudaSuccess && cycle == 0)
            first = p;
        if (e)
            cudaGraphExecDestroy(e);
        if (g)
            cudaGraphDestroy(g);
        if (worst == cudaSuccess)
            worst = rc;
    }
    obs_rc("cycles", worst);
    obs_rc("trim", cudaDeviceGraphMemTrim(0));
    GraphMemAttrs a = read_attrs();
    info("reserved_after_trim", "%llu MiB", (unsigned long long)(a.reserved >> 20));
    obs_yes("held_after_trim", a.reserved > 0);
    obs_rc("free_first_after_destroy", first ? cudaFree(first) : cudaErrorInvalidValue);
    cudaDeviceSynchronize();
    return 0;
}

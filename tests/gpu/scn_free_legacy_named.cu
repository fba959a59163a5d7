// An async free on the legacy default stream does not wait for that stream's work, whether the
// stream is named by NULL or by its handle (cudaStreamLegacy, CU_STREAM_LEGACY), through any ABI
// (§A8.2). The freed pointer is a graph allocation that escaped its graph (alloc and fill, no free
// node), so under graphmem the free is graphmem's (free_outside). With GRAPHMEM_UAF_CHECK=1,
// graphmem unmaps freed memory at once and, for an async free, first waits for the free's stream;
// before ac728da it waited for the named legacy stream (only NULL was exempt), so the free
// returned only once the legacy stream's work was done.
//
// In each case a kernel on the legacy stream spins until the host sets a flag in mapped memory,
// which the host does only after the free returned; the kernel gives up after kSpinNs so nothing
// hangs. Observed: whether the free returned while the kernel still waited
// (`<case>_returned_while_kernel_waits`), and whether the kernel saw the flag or gave up
// (`<case>_kernel`). Cases: `null` (cudaFreeAsync(p, 0) in this legacy-stream build), `runtime`
// (cudaFreeAsync(p, cudaStreamLegacy)), `driver` (cuMemFreeAsync(p, CU_STREAM_LEGACY)), `ptsz`
// (the per-thread default stream ABI's cuMemFreeAsync_ptsz, from cudaGetDriverEntryPointByVersion,
// with CU_STREAM_LEGACY). test_free_legacy_named_under_uaf_check
// (tests/python/test_gpu_conformance.py) runs it with the option and compares with the native run.
#include "common.cuh"

#include <cuda.h>

#include <chrono>
#include <thread>

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);
static const unsigned long long kSpinNs = 3ull * 1000 * 1000 * 1000; // the kernel gives up

// Words of the mapped host block: the host's go flag, the kernel's start mark and its outcome.
enum { kGo, kStarted, kOutcome, kWords };
enum { kWaiting = 0, kSawGo = 1, kGaveUp = 2 };

static __device__ __forceinline__ unsigned long long gpu_ns(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __global__ void k_wait_for_go(volatile unsigned *flags, unsigned long long spin_ns) {
    flags[kStarted] = 1;
    __threadfence_system();
    unsigned long long t0 = gpu_ns();
    unsigned outcome = kGaveUp;
    while (gpu_ns() - t0 < spin_ns) {
        if (flags[kGo]) {
            outcome = kSawGo;
            break;
        }
        __nanosleep(1000);
    }
    flags[kOutcome] = outcome;
    __threadfence_system();
}

typedef CUresult(CUDAAPI *free_async_fn)(CUdeviceptr, CUstream);
static free_async_fn ptsz_free = nullptr;

// Each free returns its code's name: the runtime's for the runtime call, the driver's for the
// driver's.
static const char *runtime_name(cudaError_t rc) {
    const char *name = cudaGetErrorName(rc);
    (void)cudaGetLastError();
    return name;
}

static const char *driver_name(CUresult rc) {
    const char *name = nullptr;
    return cuGetErrorName(rc, &name) == CUDA_SUCCESS && name ? name : "unknown CUresult";
}

static const char *free_null(void *p) {
    return runtime_name(cudaFreeAsync(p, 0));
}

static const char *free_runtime(void *p) {
    return runtime_name(cudaFreeAsync(p, cudaStreamLegacy));
}

static const char *free_driver(void *p) {
    return driver_name(cuMemFreeAsync((CUdeviceptr)p, CU_STREAM_LEGACY));
}

static const char *free_ptsz(void *p) {
    return driver_name(ptsz_free((CUdeviceptr)p, CU_STREAM_LEGACY));
}

static volatile unsigned *flags = nullptr; // host view
static unsigned *dflags = nullptr;         // device view

// Waits (bounded) for the kernel's start mark.
static bool kernel_started(void) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!flags[kStarted] && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    return flags[kStarted] != 0;
}

static void one_case(const char *name, const char *(*free_fn)(void *), cudaGraphExec_t e, void *a,
                     cudaStream_t s) {
    char key[96];
    // The allocation is live again: launch the graph, which allocates and fills it.
    snprintf(key, sizeof key, "%s_launch", name);
    obs_rc(key, cudaGraphLaunch(e, s));
    snprintf(key, sizeof key, "%s_data", name);
    obs_ok(key, check_words(s, a, n, 7));
    flags[kGo] = flags[kStarted] = flags[kOutcome] = 0;
    __sync_synchronize();
    k_wait_for_go<<<1, 1, 0, cudaStreamLegacy>>>(dflags, kSpinNs);
    snprintf(key, sizeof key, "%s_wait_kernel", name);
    obs_rc(key, cudaGetLastError());
    snprintf(key, sizeof key, "%s_kernel_started", name);
    obs_yes(key, kernel_started());
    const char *freed = free_fn(a);
    unsigned outcome_at_return = flags[kOutcome];
    flags[kGo] = 1;
    __sync_synchronize();
    snprintf(key, sizeof key, "%s_free", name);
    obs(key, freed);
    snprintf(key, sizeof key, "%s_returned_while_kernel_waits", name);
    obs_yes(key, outcome_at_return == kWaiting);
    snprintf(key, sizeof key, "%s_sync", name);
    obs_rc(key, cudaStreamSynchronize(cudaStreamLegacy));
    snprintf(key, sizeof key, "%s_kernel", name);
    unsigned outcome = flags[kOutcome];
    obs(key, outcome == kSawGo ? "saw_go" : outcome == kGaveUp ? "gave_up" : "not_done");
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    obs_rc("host_alloc",
           cudaHostAlloc((void **)&flags, kWords * sizeof(unsigned), cudaHostAllocMapped));
    obs_rc("device_pointer", cudaHostGetDevicePointer((void **)&dflags, (void *)flags, 0));
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    obs_rc("ptsz_entry",
           cudaGetDriverEntryPointByVersion("cuMemFreeAsync", (void **)&ptsz_free, 11020,
                                            cudaEnablePerThreadDefaultStream, &found));
    obs_yes("ptsz_entry_found", found == cudaDriverEntryPointSuccess && ptsz_free != nullptr);
    if (!flags || !dflags) {
        printf("SKIP no mapped host memory\n");
        return 77;
    }

    // alloc -> fill(7), no free node: the allocation escapes the graph at each launch.
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr;
    void *a = nullptr;
    obs_rc("add_alloc", add_alloc(&na, g, nullptr, 0, bytes, &a));
    obs_rc("add_fill", add_fill(&nf, g, &na, 1, a, n, 7));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));

    one_case("null", free_null, e, a, s);
    one_case("runtime", free_runtime, e, a, s);
    one_case("driver", free_driver, e, a, s);
    if (ptsz_free)
        one_case("ptsz", free_ptsz, e, a, s);

    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    obs_rc("final_sync", cudaDeviceSynchronize());
    cudaFreeHost((void *)flags);
    cudaStreamDestroy(s);
    return 0;
}

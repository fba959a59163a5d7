// Peer access given to device 0's default pool by the program's FIRST CUDA call (issue: graphmem,
// which starts lazily, missed it and the device-1 access faulted with 700). Then, on two devices:
// a capture on a device-0 stream allocates from that pool, a device-1 stream joined into the
// capture fills the allocation, device 0 copies it out and frees it; and a graph whose
// allocation escapes, read and written afterwards by device-1 kernels outside any graph. Each
// first call (runtime, driver) runs in a process of its own (entries.cuh) that touched nothing
// before it.
#include "entries.cuh"

#include <cuda.h>

static const size_t kWords = (3u << 20) / sizeof(uint32_t); // 3 MiB: more than one 2 MiB page
static const size_t kBytes = kWords * sizeof(uint32_t);

static void obs_first(cudaError_t get, cudaError_t set) {
    obs_rc("first_get_default_pool", get);
    obs_rc("first_set_access", set);
}

// The device-1 kernel runs inside the graph, on a device-1 stream forked from and joined into
// the capture of a device-0 stream.
static void inside_graph(cudaStream_t s0, cudaStream_t s1, uint32_t *out0) {
    cudaSetDevice(0);
    cudaEvent_t fork0 = nullptr, join1 = nullptr;
    cudaEventCreateWithFlags(&fork0, cudaEventDisableTiming);
    cudaSetDevice(1);
    cudaEventCreateWithFlags(&join1, cudaEventDisableTiming);
    cudaSetDevice(0);
    void *d = nullptr;
    cudaGraph_t g = nullptr;
    obs_rc("in_begin", cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    obs_rc("in_malloc", cudaMallocAsync(&d, kBytes, s0));
    obs_rc("in_fork", cudaEventRecord(fork0, s0));
    obs_rc("in_wait_on_1", cudaStreamWaitEvent(s1, fork0, 0));
    cudaSetDevice(1);
    obs_rc("in_fill_on_1", fill_words(s1, d, kWords, 500));
    obs_rc("in_join", cudaEventRecord(join1, s1));
    cudaSetDevice(0);
    obs_rc("in_wait_on_0", cudaStreamWaitEvent(s0, join1, 0));
    k_add<<<kGrid, kBlock, 0, s0>>>(out0, (const uint32_t *)d, kWords, 1);
    obs_rc("in_copy_on_0", cudaGetLastError());
    obs_rc("in_free", cudaFreeAsync(d, s0));
    obs_rc("in_end", cudaStreamEndCapture(s0, &g));
    cudaGraphExec_t e = nullptr;
    cudaError_t rc = cudaGraphInstantiate(&e, g, 0);
    obs_rc("in_instantiate", rc);
    for (int i = 0; rc == cudaSuccess && i < 3; i++) {
        cudaMemsetAsync(out0, 0, kBytes, s0);
        cudaError_t lrc = cudaGraphLaunch(e, s0);
        if (lrc == cudaSuccess)
            lrc = cudaStreamSynchronize(s0);
        obs_rc("in_launch", lrc);
        obs_ok("in_data", check_words(s0, out0, kWords, 501));
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaEventDestroy(fork0);
    cudaEventDestroy(join1);
}

// The allocation escapes its device-0 graph; device-1 kernels read and write it afterwards.
static void after_graph(cudaStream_t s0, cudaStream_t s1) {
    cudaSetDevice(0);
    void *d = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    obs_rc("out_begin", cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    obs_rc("out_malloc", cudaMallocAsync(&d, kBytes, s0));
    obs_rc("out_fill_on_0", fill_words(s0, d, kWords, 600));
    obs_rc("out_end", cudaStreamEndCapture(s0, &g));
    obs_rc("out_instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("out_launch", cudaGraphLaunch(e, s0));
    obs_rc("out_sync", cudaStreamSynchronize(s0));
    cudaSetDevice(1);
    uint32_t *out1 = nullptr;
    cudaMalloc(&out1, kBytes);
    k_add<<<kGrid, kBlock, 0, s1>>>(out1, (const uint32_t *)d, kWords, 7);
    obs_rc("out_read_on_1", cudaGetLastError());
    obs_rc("out_read_on_1_sync", cudaStreamSynchronize(s1));
    obs_ok("out_read_on_1_data", host_check(out1, kWords, 607));
    obs_rc("out_write_on_1", fill_words(s1, d, kWords, 700));
    obs_rc("out_write_on_1_sync", cudaStreamSynchronize(s1));
    cudaFree(out1);
    cudaSetDevice(0);
    obs_ok("out_write_seen_on_0", check_words(s0, d, kWords, 700));
    obs_rc("out_free", cudaFree(d));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

static void scenario(void) {
    cudaStream_t s0 = nullptr, s1 = nullptr;
    cudaSetDevice(1);
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
    uint32_t *out0 = nullptr;
    cudaMalloc(&out0, kBytes);
    inside_graph(s0, s1, out0);
    after_graph(s0, s1);
    cudaMemPool_t pool0 = nullptr;
    cudaDeviceGetDefaultMemPool(&pool0, 0);
    cudaMemLocation loc = {cudaMemLocationTypeDevice, 1};
    cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
    obs_rc("pool_get_access", cudaMemPoolGetAccess(&flags, pool0, &loc));
    obs_int("pool_access_of_1", flags);
    cudaFree(out0);
    cudaSetDevice(1);
    obs_rc("final_sync_1", cudaDeviceSynchronize());
    cudaSetDevice(0);
    obs_rc("final_sync_0", cudaDeviceSynchronize());
}

static void runtime_first(void) {
    cudaMemPool_t pool0 = nullptr;
    cudaError_t get = cudaDeviceGetDefaultMemPool(&pool0, 0);
    cudaMemAccessDesc desc = {{cudaMemLocationTypeDevice, 1}, cudaMemAccessFlagsProtReadWrite};
    cudaError_t set = cudaMemPoolSetAccess(pool0, &desc, 1);
    require_two_peer_devices();
    obs_first(get, set);
    scenario();
}

static void driver_first(void) {
    CUresult init = cuInit(0);
    CUmemoryPool pool0 = nullptr;
    CUresult get = cuDeviceGetDefaultMemPool(&pool0, 0);
    CUmemAccessDesc desc = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUresult set = cuMemPoolSetAccess(pool0, &desc, 1);
    require_two_peer_devices();
    const char *name = nullptr;
    obs("driver_init", cuGetErrorName(init, &name) == CUDA_SUCCESS ? name : "unknown");
    obs("driver_first_get_default_pool", cuGetErrorName(get, &name) == CUDA_SUCCESS ? name : "?");
    obs("driver_first_set_access", cuGetErrorName(set, &name) == CUDA_SUCCESS ? name : "?");
    scenario();
}

int main() {
    run_isolated("runtime_first", runtime_first, false);
    run_isolated("driver_first", driver_first, false);
    return 0;
}

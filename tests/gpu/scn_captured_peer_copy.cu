// Peer copies captured onto and from a graph allocation, both devices the same one, natively and
// under graphmem, which forwards them (graph memory is mapped only at launch or while graphmem
// covers it). Two rounds: the runtime's cudaMemcpyPeerAsync / cudaMemcpy3DPeerAsync (which,
// within one device, may reach the driver as ordinary copies) and the driver's own
// cuMemcpyPeerAsync / cuMemcpy3DPeerAsync. Each round captures alloc A -> peer copy source -> A
// -> check A -> 3D peer copy A -> out -> free A; an unrelated graph launches before the
// instantiation (under graphmem it unmaps the scratch pages a cover left idle); then instantiate,
// launch, check A and out. Then, per round, the copies in a graph of their own (G2, no memory
// nodes) onto and from another graph's allocation (G1 allocates A, which escapes, and has not
// launched); G2 is instantiated before G1 ever launched, then G1 launches, G2 runs, and A and out
// are checked. On an H200 (driver 580) the driver checked the peer copies' addresses neither at
// capture nor at instantiation: graphmem matched it with these calls forwarded, uncovered, and
// G2 not noted as touching graph memory. Across two devices (two H200s, peer access on) the
// driver refuses to capture cuMemcpyPeerAsync at all (cudaErrorStreamCaptureUnsupported, the
// capture invalidated), and graphmem answers the same.
#include <cuda.h>

#include "copy_rounds.cuh"

static const size_t kBytes = kCopyBytes;
static const uint32_t kWord = kCopyWord;

// A CUresult as the runtime error of the same number (the scenario compares names).
static cudaError_t as_runtime(CUresult r) {
    return (cudaError_t)r;
}

static cudaError_t peer_copy(bool driver, void *dst, const void *src, cudaStream_t s) {
    if (!driver) {
        int device = 0;
        cudaGetDevice(&device);
        return cudaMemcpyPeerAsync(dst, device, src, device, kBytes, s);
    }
    CUcontext ctx = nullptr;
    cuCtxGetCurrent(&ctx);
    return as_runtime(
        cuMemcpyPeerAsync((CUdeviceptr)dst, ctx, (CUdeviceptr)src, ctx, kBytes, (CUstream)s));
}

static cudaError_t peer_copy_3d(bool driver, void *dst, const void *src, cudaStream_t s) {
    if (!driver) {
        int device = 0;
        cudaGetDevice(&device);
        cudaMemcpy3DPeerParms p = {};
        p.srcPtr = make_cudaPitchedPtr((void *)src, kBytes, kBytes, 1);
        p.srcDevice = device;
        p.dstPtr = make_cudaPitchedPtr(dst, kBytes, kBytes, 1);
        p.dstDevice = device;
        p.extent = make_cudaExtent(kBytes, 1, 1);
        return cudaMemcpy3DPeerAsync(&p, s);
    }
    CUcontext ctx = nullptr;
    cuCtxGetCurrent(&ctx);
    CUDA_MEMCPY3D_PEER p = {};
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = (CUdeviceptr)src;
    p.srcPitch = kBytes;
    p.srcHeight = 1;
    p.srcContext = ctx;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = (CUdeviceptr)dst;
    p.dstPitch = kBytes;
    p.dstHeight = 1;
    p.dstContext = ctx;
    p.WidthInBytes = kBytes;
    p.Height = 1;
    p.Depth = 1;
    return as_runtime(cuMemcpy3DPeerAsync(&p, (CUstream)s));
}

static void round_trip(const char *round, bool driver, cudaStream_t s, const void *source,
                       void *out) {
    unsigned *bad = new_counter();
    obs_key(round, "out_clear", cudaMemset(out, 0, kBytes));
    cudaGraph_t g = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *a = nullptr;
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&a, kBytes, s);
    if (rc == cudaSuccess)
        rc = peer_copy(driver, a, source, s);
    if (rc == cudaSuccess) {
        k_check_value<<<kGrid, kBlock, 0, s>>>((const uint32_t *)a, kBytes / 4, kWord, bad);
        rc = cudaGetLastError();
    }
    if (rc == cudaSuccess)
        rc = peer_copy_3d(driver, out, a, s);
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(a, s);
    cudaError_t end = cudaStreamEndCapture(s, &g);
    obs_key(round, "capture", rc);
    obs_key(round, "end_capture", end);
    if (rc == cudaSuccess && end == cudaSuccess) {
        char key[64];
        snprintf(key, sizeof key, "%s_other_launch", round);
        launch_unrelated_graph(s, kBytes, key);
        cudaGraphExec_t e = nullptr;
        obs_key(round, "instantiate", cudaGraphInstantiate(&e, g, 0));
        obs_key(round, "launch", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
        obs_key(round, "sync", cudaStreamSynchronize(s));
        unsigned h = 1;
        cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
        obs_key_int(round, "wrong_words_a", h);
        obs_key_int(round, "wrong_words_out", wrong_words(s, out, kBytes, kWord));
        if (e)
            cudaGraphExecDestroy(e);
    }
    if (g)
        cudaGraphDestroy(g);
    cudaFree(bad);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *source = nullptr, *out = nullptr;
    copy_buffers(&source, &out);
    round_trip("runtime", false, s, source, out);
    round_trip("driver", true, s, source, out);
    other_graph_copy_round("runtime", peer_copy, peer_copy_3d, false, s, source, out);
    other_graph_copy_round("driver", peer_copy, peer_copy_3d, true, s, source, out);
    cudaFree(source);
    cudaFree(out);
    cudaStreamDestroy(s);
    return 0;
}

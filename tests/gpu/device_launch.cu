// GRAPHMEM_LIFT_RESTRICTIONS: device launch of a graph with memory nodes, which the driver
// refuses (cudaGraphInstantiateFlagDeviceLaunch, §A3.9). Graph D: alloc X (4 MiB), fill X with v,
// out = X + 1, free X. A host graph L holds one kernel that launches D from the device
// (fire and forget). D is uploaded, run through L, after a trim, with its fill value changed by
// cudaGraphExecKernelNodeSetParams (the node of D the application knows), from the host, and
// through L while graph E, on another stream, writes and checks its own 4 MiB for 20 ms: D's
// memory is its own (no wrong word in E or in out). A graph whose allocation escapes stays
// refused. tests/python/test_gpu_conformance.py (test_device_launch) runs it natively, under
// graphmem as it is (the driver's refusals) and with the option (what it expects).
#include "threads.cuh"

static const size_t kBytes = 4u << 20, kWords = kBytes / 4;

static __global__ void k_launcher(cudaGraphExec_t e, int *rc) {
    *rc = (int)cudaGraphLaunch(e, cudaStreamGraphFireAndForget);
}

// L: k_launcher(d, rc) captured on s.
static cudaGraphExec_t launcher(cudaStream_t s, cudaGraphExec_t d, int *rc) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess)
        return nullptr;
    k_launcher<<<1, 1, 0, s>>>(d, rc);
    if (cudaStreamEndCapture(s, &g) == cudaSuccess)
        cudaGraphInstantiate(&e, g, 0);
    if (g)
        cudaGraphDestroy(g);
    return e;
}

// out = 0, run L (or D from the host), then check out == v + 1.
static void run_and_check(const char *key, cudaGraphExec_t run, cudaStream_t s, uint32_t *out,
                          uint32_t v, int *rc, unsigned *bad) {
    char name[96];
    cudaMemsetAsync(out, 0, kBytes, s);
    cudaMemsetAsync(rc, 0xff, sizeof *rc, s);
    snprintf(name, sizeof name, "%s_launch", key);
    obs_rc(name, run ? cudaGraphLaunch(run, s) : cudaErrorInvalidValue);
    snprintf(name, sizeof name, "%s_sync", key);
    obs_rc(name, cudaStreamSynchronize(s));
    k_check<<<kGrid, kBlock, 0, s>>>(out, kWords, v + 1, bad);
    cudaStreamSynchronize(s);
}

int main() {
    require_graph_memory();
    cudaStream_t s, s2;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    unsigned *bad = new_counter(), *bad_out = new_counter();
    uint32_t *out = nullptr;
    int *rc = nullptr;
    cudaMalloc(&out, kBytes);
    cudaMallocManaged(&rc, sizeof *rc);

    // D: alloc X, fill X with 21, out = X + 1, free X.
    cudaGraph_t d = nullptr;
    cudaGraphCreate(&d, 0);
    cudaGraphNode_t alloc, fill, add, fr;
    void *x = nullptr;
    bool built = add_alloc(&alloc, d, nullptr, 0, kBytes, &x) == cudaSuccess;
    built &= add_fill(&fill, d, &alloc, 1, x, kWords, 21) == cudaSuccess;
    built &= add_add(&add, d, &fill, 1, out, x, kWords, 1) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&fr, d, &add, 1, x) == cudaSuccess;
    obs_ok("built", built);
    cudaGraphExec_t de = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&de, d, cudaGraphInstantiateFlagDeviceLaunch));
    obs_rc("upload", de ? cudaGraphUpload(de, s) : cudaErrorInvalidValue);
    cudaStreamSynchronize(s);
    cudaGraphExec_t l = de ? launcher(s, de, rc) : nullptr;
    obs_yes("launcher_made", l != nullptr);

    run_and_check("device", l, s, out, 21, rc, bad_out);
    obs_int("device_launch_rc", l ? *rc : -1);
    cudaDeviceGraphMemTrim(0);
    run_and_check("after_trim", l, s, out, 21, rc, bad_out);
    obs_int("after_trim_launch_rc", l ? *rc : -1);

    // The fill node's value changed through the node of D the application holds.
    uint32_t *xw = (uint32_t *)x;
    size_t n = kWords;
    uint32_t v = 31;
    void *args[] = {&xw, &n, &v};
    cudaKernelNodeParams k = {};
    k.func = (void *)k_fill;
    k.gridDim = dim3(kGrid);
    k.blockDim = dim3(kBlock);
    k.kernelParams = args;
    obs_rc("set_fill", de ? cudaGraphExecKernelNodeSetParams(de, fill, &k) : cudaErrorInvalidValue);
    obs_rc("reupload", de ? cudaGraphUpload(de, s) : cudaErrorInvalidValue);
    run_and_check("after_set", l, s, out, 31, rc, bad_out);
    run_and_check("host", de, s, out, 31, rc, bad_out);

    // Meanwhile E writes and checks its own memory on s2 for 20 ms, three times.
    Work w;
    obs_ok("make_e", make_work(&w, s2, kBytes, 7, 4000000, 5, bad, false, 0) == cudaSuccess);
    bool ok = true;
    for (int i = 0; i < 3; i++) {
        ok &= cudaGraphLaunch(w.exec, s2) == cudaSuccess;
        cudaMemsetAsync(out, 0, kBytes, s);
        ok &= !l || cudaGraphLaunch(l, s) == cudaSuccess;
        k_check<<<kGrid, kBlock, 0, s>>>(out, kWords, 32, bad_out);
    }
    obs_ok("beside_launches", ok);
    obs_rc("beside_sync", cudaDeviceSynchronize());
    obs_wrong("beside_wrong_words", bad);
    info_attrs("beside", read_attrs());
    destroy_work(&w);

    // An allocation escaping the graph: refused for device launch either way.
    cudaGraph_t esc = nullptr;
    cudaGraphCreate(&esc, 0);
    cudaGraphNode_t ea, ef;
    void *y = nullptr;
    built = add_alloc(&ea, esc, nullptr, 0, kBytes, &y) == cudaSuccess;
    built &= add_fill(&ef, esc, &ea, 1, y, kWords, 5) == cudaSuccess;
    obs_ok("escape_built", built);
    cudaGraphExec_t ee = nullptr;
    obs_rc("escape_instantiate",
           cudaGraphInstantiate(&ee, esc, cudaGraphInstantiateFlagDeviceLaunch));

    if (l)
        cudaGraphExecDestroy(l);
    if (de)
        obs_rc("destroy", cudaGraphExecDestroy(de));
    obs_rc("end_sync", cudaDeviceSynchronize());
    cudaDeviceGraphMemTrim(0);
    info_attrs("end", read_attrs());
    obs_wrong("out_wrong_words", bad_out);
    if (ee)
        cudaGraphExecDestroy(ee);
    cudaGraphDestroy(esc);
    cudaGraphDestroy(d);
    cudaFree(out);
    cudaFree(rc);
    cudaFree(bad);
    cudaFree(bad_out);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
    return 0;
}

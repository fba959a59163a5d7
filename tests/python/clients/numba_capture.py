"""numba-cuda kernels on a numba stream around a captured cuMemAllocAsync (§C4).

numba-cuda has no capture API and no stream-ordered allocator, so memory nodes only appear when
the driver is driven on a numba stream's raw handle; the kernels are numba's own launches.
"""

from clientlib import check, digest, driver, need, node_types, obs, report_footprint, skip

N = 1 << 16  # float32 elements
THREADS = 256
BLOCKS = (N + THREADS - 1) // THREADS


def main():
    np = need("numpy")
    if not hasattr(np, "row_stack"):
        # numba-cuda 0.30 registers an overload for np.row_stack, which numpy 2.5 removed
        # (it was an alias of vstack); without the alias the first kernel compile fails
        np.row_stack = np.vstack
    cuda = need("numba.cuda")
    if not cuda.is_available():
        skip("numba.cuda sees no GPU")
    cu = driver()

    @cuda.jit
    def inc(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1 + i % 7

    @cuda.jit
    def accumulate(out, a):
        i = cuda.grid(1)
        if i < out.size:
            out[i] += a[i]

    s = cuda.stream()
    hs = int(s)
    out = cuda.to_device(np.zeros(N, np.float32), stream=s)
    warm = cuda.device_array(N, np.float32, stream=s)
    inc[BLOCKS, THREADS, s](warm)  # JIT both kernels outside the capture
    accumulate[BLOCKS, THREADS, s](out, warm)
    out.copy_to_device(np.zeros(N, np.float32), stream=s)
    s.synchronize()

    check(cu.cuStreamBeginCapture(hs, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    p = check(cu.cuMemAllocAsync(4 * N, hs))  # MEM_ALLOC
    scratch = cuda.from_cuda_array_interface(
        {"shape": (N,), "typestr": "<f4", "data": (int(p), False), "version": 3},
        owner=None, sync=False)
    check(cu.cuMemsetD32Async(p, 0, N, hs))
    inc[BLOCKS, THREADS, s](scratch)
    accumulate[BLOCKS, THREADS, s](out, scratch)
    check(cu.cuMemFreeAsync(p, hs))  # MEM_FREE
    graph = check(cu.cuStreamEndCapture(hs))
    obs("nodes", node_types(graph))

    exe = check(cu.cuGraphInstantiate(graph, 0))
    launches = 3
    for _ in range(launches):  # relaunch is fine: the graph frees what it allocates
        check(cu.cuGraphLaunch(exe, hs))
    s.synchronize()
    result = out.copy_to_host(stream=s)
    s.synchronize()
    expected = launches * (1 + np.arange(N, dtype=np.float32) % 7)
    obs("result_ok", bool(np.array_equal(result, expected)))
    obs("result", digest(result.tobytes()))
    report_footprint()
    check(cu.cuGraphExecDestroy(exe))
    check(cu.cuGraphDestroy(graph))
    obs("done", True)


if __name__ == "__main__":
    main()

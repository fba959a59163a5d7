"""CuPy MemoryAsyncPool under stream capture (§C2): CuPy instantiates with flags 0,
so a relaunch while the graph's output is unfreed must fail with the very CuPy error it raises
natively, and work again once the output is freed."""

from clientlib import digest, need, node_types, obs, report_footprint, skip

N = 1 << 20  # elements


def relaunch(cp, graph, stream):
    try:
        graph.launch(stream)
    except cp.cuda.runtime.CUDARuntimeError as e:
        return f"{type(e).__name__}:{e.status}:{str(e).split(':')[0]}"
    return "ok"


def main():
    cp = need("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            skip("no CUDA device")
    except cp.cuda.runtime.CUDARuntimeError as e:
        skip(f"no CUDA device: {e}")
    cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)

    x = cp.arange(N, dtype=cp.float32)
    (x * 2) + 1  # compiles both kernels outside capture
    cp.cuda.Device().synchronize()

    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        t = x * 2  # MEM_ALLOC
        y = t + 1  # MEM_ALLOC, the unfreed output
        del t  # MEM_FREE: cudaFreeAsync on the capturing stream
        graph = s.end_capture()
    obs("nodes", node_types(graph.graph))

    y_ptr, y_bytes = y.data.ptr, y.nbytes
    graph.upload(s)
    graph.launch(s)
    s.synchronize()
    expected = cp.arange(N, dtype=cp.float32) * 2 + 1
    obs("first_launch_ok", bool(cp.array_equal(y, expected)))
    obs("first_launch", digest(cp.asnumpy(y).tobytes()))
    report_footprint()

    obs("relaunch_unfreed", relaunch(cp, graph, s))
    s.synchronize()

    del y  # cudaFreeAsync outside the graph
    s.synchronize()
    obs("relaunch_after_free", relaunch(cp, graph, s))
    s.synchronize()
    # the alloc node's address is fixed, so the relaunch's output is back at y_ptr
    mem = cp.cuda.UnownedMemory(y_ptr, y_bytes, owner=None)
    again = cp.ndarray((N,), cp.float32, cp.cuda.MemoryPointer(mem, 0))
    obs("second_launch_ok", bool(cp.array_equal(again, expected)))
    del again, mem
    cp.cuda.runtime.freeAsync(y_ptr, s.ptr)
    s.synchronize()
    obs("relaunch_after_second_free", relaunch(cp, graph, s))
    s.synchronize()
    cp.cuda.runtime.freeAsync(y_ptr, s.ptr)
    s.synchronize()
    obs("done", True)


if __name__ == "__main__":
    main()

"""cuda.bindings driver-level stream capture of graph memory (§C3, §A6, §A8, §A10, §A11).

With CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1 cuda.bindings resolves every driver entry with
the per-thread flag, so the driver hands it the _ptsz entries; stream handle 0 then names the
per-thread stream, which can be captured (the legacy stream cannot).
"""

from clientlib import (check, digest, driver, error_name, graph_mem, node_types, obs,
                       primary_context, read_device, report_footprint, require_gpu)

N = 1 << 20  # bytes


def read(cu, ptr):
    return read_device(ptr, N)


def capture(cu, stream, body):
    mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
    check(cu.cuStreamBeginCapture(stream, mode))
    result = body()
    graph = check(cu.cuStreamEndCapture(stream))
    return graph, result


def unfreed_output(cu, dev, s):
    """One graph whose output stays unfreed: relaunch is refused until it is freed (A6.1, A8.2)."""

    def body():
        p = check(cu.cuMemAllocAsync(N, s))
        check(cu.cuMemsetD8Async(p, 0x5A, N, s))
        q = check(cu.cuMemAllocAsync(N, s))
        check(cu.cuMemcpyDtoDAsync(q, p, N, s))
        check(cu.cuMemFreeAsync(p, s))
        return q

    graph, q = capture(cu, s, body)
    obs("unfreed_nodes", node_types(graph))
    exe = check(cu.cuGraphInstantiate(graph, 0))

    check(cu.cuGraphLaunch(exe, s))
    check(cu.cuStreamSynchronize(s))
    data = read(cu, q)
    obs("unfreed_first_launch", digest(data))
    obs("first_launch_ok", data == bytes([0x5A]) * N)
    # read before any free, while the graph's memory is certainly mapped
    attrs = graph_mem()
    obs("attr_used_positive", attrs["used_mem_current"] > 0)
    obs("attr_reserved_ge_used", attrs["reserved_mem_current"] >= attrs["used_mem_current"])
    obs("attr_highs_ge_current", attrs["used_mem_high"] >= attrs["used_mem_current"]
        and attrs["reserved_mem_high"] >= attrs["reserved_mem_current"])
    report_footprint("unfreed")

    obs("relaunch_while_unfreed", error_name(cu.cuGraphLaunch(exe, s)))
    check(cu.cuStreamSynchronize(s))

    obs("free_async_outside", error_name(cu.cuMemFreeAsync(q, s)))
    obs("relaunch_after_free_async", error_name(cu.cuGraphLaunch(exe, s)))
    check(cu.cuStreamSynchronize(s))
    # the node's address is fixed for the node's life, so q names the new allocation too
    obs("second_launch_ok", read(cu, q) == bytes([0x5A]) * N)

    obs("free_sync_outside", error_name(cu.cuMemFree(q)))
    obs("relaunch_after_free_sync", error_name(cu.cuGraphLaunch(exe, s)))
    check(cu.cuMemFreeAsync(q, s))
    check(cu.cuStreamSynchronize(s))

    # nothing is unfreed, running or scheduled: a trim returns everything (§A11.1)
    check(cu.cuDeviceGraphMemTrim(dev))
    attrs = graph_mem()
    obs("trim_used_zero", attrs["used_mem_current"] == 0)
    obs("trim_reserved_zero", attrs["reserved_mem_current"] == 0)
    attribute_setters(cu, dev)
    # the exec survives the trim and maps again at its next launch (§A11.2)
    obs("relaunch_after_trim", error_name(cu.cuGraphLaunch(exe, s)))
    check(cu.cuStreamSynchronize(s))
    obs("third_launch_ok", read(cu, q) == bytes([0x5A]) * N)
    check(cu.cuMemFreeAsync(q, s))
    check(cu.cuStreamSynchronize(s))
    check(cu.cuGraphExecDestroy(exe))
    check(cu.cuGraphDestroy(graph))


def attribute_setters(cu, dev):
    """Only the Highs can be set, and only to 0 (A10.3)."""
    A = cu.CUgraphMem_attribute
    zero, one = cu.cuuint64_t(0), cu.cuuint64_t(1)
    obs("set_used_current", error_name(
        cu.cuDeviceSetGraphMemAttribute(dev, A.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, zero)))
    obs("set_used_high_nonzero", error_name(
        cu.cuDeviceSetGraphMemAttribute(dev, A.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, one)))
    obs("set_used_high_zero", error_name(
        cu.cuDeviceSetGraphMemAttribute(dev, A.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, zero)))
    obs("set_reserved_high_zero", error_name(
        cu.cuDeviceSetGraphMemAttribute(dev, A.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, zero)))
    # called right after a trim to nothing: a reset sets each High to its current value, 0
    attrs = graph_mem()
    obs("reset_highs_zero", attrs["used_mem_high"] == 0 and attrs["reserved_mem_high"] == 0)


def auto_free(cu, s):
    """AutoFreeOnLaunch relaunches with the output unfreed (A6.2); a zero-byte alloc (A4.12)."""

    def body():
        empty = check(cu.cuMemAllocAsync(0, s))
        out = check(cu.cuMemAllocAsync(N, s))
        check(cu.cuMemsetD32Async(out, 0x01020304, N // 4, s))
        check(cu.cuMemFreeAsync(empty, s))
        return out

    graph, out = capture(cu, s, body)
    obs("autofree_nodes", node_types(graph))
    flags = cu.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
    exe = check(cu.cuGraphInstantiate(graph, int(flags)))
    results = [error_name(cu.cuGraphLaunch(exe, s)) for _ in range(3)]
    check(cu.cuStreamSynchronize(s))
    obs("autofree_launches", ",".join(results))
    obs("autofree_output", digest(read(cu, out)))
    check(cu.cuMemFreeAsync(out, s))
    check(cu.cuStreamSynchronize(s))
    check(cu.cuGraphExecDestroy(exe))
    check(cu.cuGraphDestroy(graph))


def default_stream_capture(cu):
    """Capture on handle 0: refused for the legacy stream, allowed for the per-thread one."""
    s0 = cu.CUstream(0)
    mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL
    begin = error_name(cu.cuStreamBeginCapture(s0, mode))
    obs("default_stream_begin_capture", begin)
    if begin != "CUDA_SUCCESS":
        return
    p = check(cu.cuMemAllocAsync(N, s0))
    check(cu.cuMemsetD8Async(p, 0x33, N, s0))
    check(cu.cuMemFreeAsync(p, s0))
    graph = check(cu.cuStreamEndCapture(s0))
    obs("default_stream_nodes", node_types(graph))
    exe = check(cu.cuGraphInstantiate(graph, 0))
    obs("default_stream_launches", ",".join(error_name(cu.cuGraphLaunch(exe, s0)) for _ in range(2)))
    check(cu.cuStreamSynchronize(s0))
    check(cu.cuGraphExecDestroy(exe))
    check(cu.cuGraphDestroy(graph))


def main():
    require_gpu()
    cu = driver()
    dev = primary_context()

    # tells the test which entries cuda.bindings resolved: under PTDS handle 0 is the
    # per-thread stream, otherwise the legacy one
    default_id = check(cu.cuStreamGetId(cu.CUstream(0)))
    per_thread_id = check(cu.cuStreamGetId(cu.CUstream(2)))  # CU_STREAM_PER_THREAD
    obs("default_stream_is_per_thread", default_id == per_thread_id)

    s = check(cu.cuStreamCreate(int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)))
    unfreed_output(cu, dev, s)
    auto_free(cu, s)
    default_stream_capture(cu)
    check(cu.cuStreamDestroy(s))
    obs("done", True)


if __name__ == "__main__":
    main()

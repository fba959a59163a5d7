"""cuda.core GraphMemoryResource (§C3): allocations in a graph builder in every capture
mode, AutoFreeOnLaunch, upload before every launch (as cuda.core's own tests do), attributes,
trim and high-water reset, and the refused relaunch without AutoFree."""

import importlib

from clientlib import check, cuda_error_name, digest, driver, need, obs, report_footprint, require_gpu, skip

N = 1 << 20  # bytes


def load_core():
    """cuda.core >= 0.5 exports at top level; older releases under cuda.core.experimental."""
    for name in ("cuda.core", "cuda.core.experimental"):
        try:
            core = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(core, "GraphMemoryResource"):
            break
    else:
        skip("cuda.core with GraphMemoryResource not importable")
    options = getattr(core, "GraphCompleteOptions", None)
    if options is None:
        options = need(f"{core.__name__}.graph").GraphCompleteOptions
    return core, options


def outcome(call):
    """'ok' or the CUDA error name a cuda.core call raised."""
    try:
        call()
    except Exception as e:  # cuda.core raises CUDAError; its class moved between releases
        return cuda_error_name(e)
    return "ok"


def read(ptr):
    """Read through the raw address: a closed Buffer forgets it, the graph node does not."""
    host = bytearray(N)
    check(driver().cuMemcpyDtoH(host, ptr, N))
    return host


def build(dev, gmr, options, mode, auto_free):
    """src (freed inside the graph) -> copy -> out (left unfreed, the graph's output)."""
    gb = dev.create_graph_builder().begin_building(mode)
    src = gmr.allocate(N, stream=gb)
    src.fill(0x5A, stream=gb)
    out = gmr.allocate(N, stream=gb)
    out.copy_from(src, stream=gb)
    src.close(gb)
    gb.end_building()
    return gb, gb.complete(options(auto_free_on_launch=auto_free)), out, int(out.handle)


def main():
    core, options = load_core()
    require_gpu()
    dev = core.Device(0)
    dev.set_current()
    s = dev.create_stream()
    gmr = core.GraphMemoryResource(dev)
    expected = bytes([0x5A]) * N

    built = []
    for mode in ("global", "thread_local", "relaxed"):
        gb, graph, out, ptr = build(dev, gmr, options, mode, auto_free=True)
        launches = []
        for _ in range(2):
            launches.append(outcome(lambda: graph.upload(s)))
            launches.append(outcome(lambda: graph.launch(s)))
        s.sync()
        obs(f"{mode}_launches", ",".join(launches))
        obs(f"{mode}_output_ok", read(ptr) == expected)
        built.append((gb, graph, out, ptr))

    a = gmr.attributes
    obs("used_positive", a.used_mem_current > 0)
    obs("reserved_ge_used", a.reserved_mem_current >= a.used_mem_current)
    report_footprint("autofree")

    for _, _, out, _ in built:
        out.close(s)
    s.sync()
    gmr.trim()
    obs("trim_used_zero", a.used_mem_current == 0)
    obs("trim_reserved_zero", a.reserved_mem_current == 0)
    a.used_mem_high = 0
    a.reserved_mem_high = 0
    obs("reset_highs_zero", a.used_mem_high == 0 and a.reserved_mem_high == 0)

    # the execs outlive the trim and map again on their next launch
    _, graph, _, ptr = built[0]
    obs("after_trim_upload", outcome(lambda: graph.upload(s)))
    obs("after_trim_launch", outcome(lambda: graph.launch(s)))
    s.sync()
    obs("after_trim_used_positive", a.used_mem_current > 0)
    # its output is unfreed again; free it through the raw address the node keeps
    check(driver().cuMemFreeAsync(ptr, s.handle))
    s.sync()

    gb2, plain, out, ptr = build(dev, gmr, options, "relaxed", auto_free=False)
    obs("plain_first", outcome(lambda: plain.upload(s)) + "," + outcome(lambda: plain.launch(s)))
    s.sync()
    obs("plain_output_ok", read(ptr) == expected)
    obs("plain_relaunch_unfreed", outcome(lambda: plain.launch(s)))
    s.sync()
    out.close(s)
    s.sync()
    obs("plain_relaunch_after_free", outcome(lambda: plain.launch(s)))
    s.sync()
    obs("plain_output_digest", digest(read(ptr)))
    check(driver().cuMemFreeAsync(ptr, s.handle))
    s.sync()

    for builder, graph, *_ in built + [(gb2, plain)]:
        graph.close()
        builder.close()
    s.close()
    obs("done", True)


if __name__ == "__main__":
    main()

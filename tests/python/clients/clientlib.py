"""Helpers shared by the client programs (each client stays a standalone script).

Protocol with tests/python/conftest.py:
  OBS <key> <value>   an observable result; must be identical natively and under graphmem
  INFO <key> <value>  a measurement that may differ (footprint, time)
  exit 77             skipped: no GPU or a package is missing (the reason is on stdout)
"""

import hashlib
import importlib
import re
import sys

SKIP = 77


def _line(text):
    # One write per whole line, flushed at once: clients fork (a buffered line would be printed
    # twice), and the ranks of torch_ddp.py share one pipe, where print() under PYTHONUNBUFFERED
    # writes the text and its newline separately and another rank's line can land in between.
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def obs(key, value):
    _line(f"OBS {key} {value}")


def info(key, value):
    _line(f"INFO {key} {value}")


def skip(reason):
    print(f"SKIP {reason}", flush=True)
    sys.exit(SKIP)


def need(module):
    """Import a module or skip the client: a missing package is not a failure."""
    try:
        return importlib.import_module(module)
    except Exception as e:  # not only ImportError: a package broken by its dependencies too
        skip(f"{module} not importable: {type(e).__name__}: {e}")


def digest(data):
    return hashlib.sha256(bytes(data)).hexdigest()[:32]


def cuda_error_name(text):
    """The CUDA error name inside an exception message, whatever the wrapper."""
    m = re.search(r"\b(CUDA_ERROR_[A-Z_]+|cudaError[A-Za-z]+)\b", str(text))
    return m.group(1) if m else f"unrecognised:{type(text).__name__}"


# --- cuda.bindings driver helpers -------------------------------------------------

def driver():
    return need("cuda.bindings.driver")


def check(result):
    """Unpack a cuda.bindings result tuple; raise on any error but success."""
    cu = driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA call failed: {err.name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


def error_name(result):
    """Name of the CUresult of a call, for OBS lines about expected errors."""
    err = result[0] if isinstance(result, tuple) else result
    return err.name


def require_gpu():
    """Initialise the driver through cuda.bindings; skip when there is no usable GPU."""
    cu = driver()
    try:
        (err,) = cu.cuInit(0)
    except Exception as e:  # libcuda.so.1 missing: cuda.bindings loads it lazily
        skip(f"no CUDA driver: {e}")
    if err != cu.CUresult.CUDA_SUCCESS:
        skip(f"cuInit failed: {err.name}")
    count = check(cu.cuDeviceGetCount())
    if count < 1:
        skip("no CUDA device")


def node_types(graph):
    """Histogram of a graph's node types, e.g. 'KERNEL=2,MEM_ALLOC=1,MEM_FREE=1'.

    graphmem stands other nodes in for memory nodes, so this checks that
    introspection still presents MEM_ALLOC / MEM_FREE exactly as the driver does.
    """
    cu = driver()
    graph = cu.CUgraph(int(graph))
    _, total = check(cu.cuGraphGetNodes(graph, 0))
    nodes, _ = check(cu.cuGraphGetNodes(graph, total))
    counts = {}
    for node in nodes:
        name = check(cu.cuGraphNodeGetType(node)).name.removeprefix("CU_GRAPH_NODE_TYPE_")
        counts[name] = counts.get(name, 0) + 1
    return ",".join(f"{k}={counts[k]}" for k in sorted(counts))


def read_device(ptr, size):
    host = bytearray(size)
    check(driver().cuMemcpyDtoH(host, ptr, size))
    return host


def primary_context():
    """Make device 0's primary context current (what the runtime would do); return the device."""
    cu = driver()
    dev = check(cu.cuDeviceGet(0))
    check(cu.cuCtxSetCurrent(check(cu.cuDevicePrimaryCtxRetain(dev))))
    return dev


def small_graph(stream, value, size=1 << 20):
    """Capture scratch alloc -> memset -> out alloc -> copy -> scratch free; instantiate with
    AutoFreeOnLaunch so the unfreed output does not block relaunches. Returns (graph, exec, out)."""
    cu = driver()
    check(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    scratch = check(cu.cuMemAllocAsync(size, stream))
    check(cu.cuMemsetD8Async(scratch, value, size, stream))
    out = check(cu.cuMemAllocAsync(size, stream))
    check(cu.cuMemcpyDtoDAsync(out, scratch, size, stream))
    check(cu.cuMemFreeAsync(scratch, stream))
    graph = check(cu.cuStreamEndCapture(stream))
    flags = cu.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
    return graph, check(cu.cuGraphInstantiate(graph, int(flags))), out


def small_graph_workload(tag, value, launches=2, size=1 << 20):
    """A whole small client: stream, capture, launches, check, free, teardown; prints OBS."""
    cu = driver()
    stream = check(cu.cuStreamCreate(int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)))
    graph, exe, out = small_graph(stream, value, size)
    obs(f"{tag}_nodes", node_types(graph))
    obs(f"{tag}_launches", ",".join(error_name(cu.cuGraphLaunch(exe, stream)) for _ in range(launches)))
    check(cu.cuStreamSynchronize(stream))
    obs(f"{tag}_output_ok", read_device(out, size) == bytes([value]) * size)
    check(cu.cuMemFreeAsync(out, stream))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuGraphExecDestroy(exe))
    check(cu.cuGraphDestroy(graph))
    check(cu.cuStreamDestroy(stream))


ATTRS = ("USED_MEM_CURRENT", "USED_MEM_HIGH", "RESERVED_MEM_CURRENT", "RESERVED_MEM_HIGH")


def graph_mem(ordinal=0):
    """The four graph-memory attributes of a device, in bytes, by short name."""
    cu = driver()
    dev = check(cu.cuDeviceGet(ordinal))
    out = {}
    for name in ATTRS:
        attr = getattr(cu.CUgraphMem_attribute, f"CU_GRAPH_MEM_ATTR_{name}")
        out[name.lower()] = int(check(cu.cuDeviceGetGraphMemAttribute(dev, attr)))
    return out


def report_footprint(prefix="graph_mem", ordinal=0):
    """Footprint as INFO: graphmem is meant to differ (less memory) from the driver."""
    for key, value in graph_mem(ordinal).items():
        info(f"{prefix}_{key}", value)


# --- PyTorch helpers ----------------------------------------------------------------

def load_torch(deterministic=False):
    """Import torch on its cudaMallocAsync backend, the one whose captures make memory nodes."""
    import os

    # both are read when CUDA is first used, so they must be set before that
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch = need("torch")
    if not torch.cuda.is_available():
        skip("torch sees no GPU")
    backend = torch.cuda.get_allocator_backend()
    if backend != "cudaMallocAsync":
        raise SystemExit(f"allocator backend is {backend}, PYTORCH_CUDA_ALLOC_CONF ignored")
    if deterministic:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    return torch


def tensor_digest(*tensors):
    """Bit-exact digest of tensors of any dtype (bf16 has no numpy view, so go through bytes)."""
    import torch

    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
    return h.hexdigest()[:32]


def time_replays(torch, graph, count):
    """Mean microseconds per replay, GPU time between two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        graph.replay()
    end.record()
    end.synchronize()
    return round(start.elapsed_time(end) * 1000 / count, 2)

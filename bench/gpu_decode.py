#!/usr/bin/env python3
"""A vLLM-like decode loop: a 6-layer fp16 transformer decoder step (one new token per sequence,
attention over a fixed KV cache) captured with torch.cuda.graph for 20 batch sizes from 1 to 256,
in ascending and in descending order, each order in a process of its own. Every graph's output is
checked against the eager step (the run fails otherwise).

Two allocators, each order: PyTorch's cudaMallocAsync backend (graph allocations become CUDA graph
memory, which graphmem serves) and PyTorch's own caching allocator with one graph pool shared by
all graphs (what vLLM does; graphmem passes everything through there).

Metrics (<allocator>_<order>_...; allocator async or caching, order asc or desc):
  capture_ms        host time to capture the 20 graphs (warm-up excluded)
  graph_mem_MiB     CUDA graph memory reserved after the captures and one replay of each
                    (cudaDeviceGetGraphMemAttribute ReservedMemCurrent; 0 for caching)
  device_used_MiB   device memory in use (torch.cuda.mem_get_info: total - free) after that
  pool_MiB          bytes PyTorch's allocator holds for eager work (torch.cuda.memory_reserved)
  replay_us         mean host+device time of one replay, over all graphs, synchronised per batch
Exit 77 without PyTorch, CUDA or cuda-bindings.
"""
import json
import os
import subprocess
import sys
import time

LAYERS, D, HEADS, FFN, CACHE = 6, 1024, 16, 4096, 128
BATCHES = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256]
MIB = 1 << 20


def child(allocator, order):
    # PyTorch's async backend warns at each free outside a capture of memory a capture made (the
    # graphs' outputs, when the process ends): expected here.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    if allocator == "async":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    try:
        import torch
        from cuda.bindings import runtime as rt
    except ImportError as exc:
        print(f"SKIP {exc}", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("SKIP no CUDA GPU", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    h = torch.float16
    layers = []
    for _ in range(LAYERS):
        layers.append({name: (torch.randn(shape, device=dev, dtype=h) * 0.02)
                       for name, shape in (("wq", (D, D)), ("wo", (D, D)),
                                           ("w1", (D, FFN)), ("w2", (FFN, D)))})
    # The KV cache of the longest batch, sliced per batch: outside every graph.
    cache_k = [torch.randn(256, HEADS, CACHE, D // HEADS, device=dev, dtype=h) for _ in layers]
    cache_v = [torch.randn(256, HEADS, CACHE, D // HEADS, device=dev, dtype=h) for _ in layers]

    def step(x):
        b = x.shape[0]
        for i, w in enumerate(layers):
            q = (x @ w["wq"]).view(b, HEADS, 1, D // HEADS)
            att = torch.softmax(q @ cache_k[i][:b].transpose(-1, -2) / 8.0, dim=-1)
            y = (att @ cache_v[i][:b]).reshape(b, D) @ w["wo"]
            x = torch.nn.functional.layer_norm(x + y, (D,))
            y = torch.nn.functional.gelu(x @ w["w1"]) @ w["w2"]
            x = torch.nn.functional.layer_norm(x + y, (D,))
        return x

    sizes = BATCHES if order == "asc" else list(reversed(BATCHES))
    inputs = {b: torch.randn(b, D, device=dev, dtype=h) for b in sizes}
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up, as torch.cuda.graph users do
        for b in sizes:
            step(inputs[b])
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graphs, outputs = {}, {}
    pool = torch.cuda.graph_pool_handle() if allocator == "caching" else None
    t0 = time.perf_counter()
    for b in sizes:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            outputs[b] = step(inputs[b])
        graphs[b] = g
    torch.cuda.synchronize()
    capture_ms = (time.perf_counter() - t0) * 1e3
    bad = []
    for b in sizes:
        graphs[b].replay()
        torch.cuda.synchronize()
        want = step(inputs[b])
        if not torch.allclose(outputs[b].float(), want.float(), atol=2e-2, rtol=2e-2):
            bad.append(b)
    if bad:
        print(f"graph outputs differ from eager for batch sizes {bad}", file=sys.stderr)
        return 1
    err, reserved = rt.cudaDeviceGetGraphMemAttribute(
        0, rt.cudaGraphMemAttributeType.cudaGraphMemAttrReservedMemCurrent)
    graph_mem = int(reserved) if err == rt.cudaError_t.cudaSuccess else -MIB
    free, total = torch.cuda.mem_get_info()
    reps = 20
    t0 = time.perf_counter()
    for b in sizes:
        for _ in range(reps):
            graphs[b].replay()
        torch.cuda.synchronize()
    replay_us = (time.perf_counter() - t0) * 1e6 / (reps * len(sizes))
    tag = f"{allocator}_{order}"
    print(f"decode_{tag}_capture_ms {capture_ms:.3f}")
    print(f"decode_{tag}_graph_mem_MiB {graph_mem / MIB:.1f}")
    print(f"decode_{tag}_device_used_MiB {(total - free) / MIB:.1f}")
    try:
        pool_bytes = torch.cuda.memory_reserved()
    except RuntimeError:  # not every backend keeps the figure
        pool_bytes = -MIB
    print(f"decode_{tag}_pool_MiB {pool_bytes / MIB:.1f}")
    print(f"decode_{tag}_replay_us {replay_us:.2f}")
    return 0


def main():
    if len(sys.argv) == 3:
        return child(sys.argv[1], sys.argv[2])
    skipped = 0
    stats = os.environ.get("GRAPHMEM_STATS_FILE")  # set by bench/run-gpu under graphmem
    merged = {}
    for allocator in ("async", "caching"):
        for order in ("asc", "desc"):
            env = dict(os.environ)
            if stats:  # each child writes its own: the runner reads only this process's file
                env["GRAPHMEM_STATS_FILE"] = f"{stats}.{allocator}.{order}"
            proc = subprocess.run([sys.executable, __file__, allocator, order], env=env,
                                  capture_output=True, encoding="utf-8", errors="replace")
            sys.stdout.write(proc.stdout)
            sys.stderr.write(proc.stderr)
            if proc.returncode == 77:
                skipped += 1
                continue
            if proc.returncode != 0:
                return proc.returncode
            if stats and not served(env["GRAPHMEM_STATS_FILE"], allocator, merged):
                return 1
    if stats and merged:  # what the runner checks, for all four children
        with open(stats, "w") as f:
            json.dump({"process": merged, "execs": []}, f)
    return 77 if skipped == 4 else 0


def served(path, allocator, merged):
    """Under graphmem: the child's statistics show no fallback, and graph allocations served
    with the cudaMallocAsync backend (otherwise the figures would be the driver's). Adds its
    process counters to `merged`."""
    try:
        with open(path) as f:
            process = json.load(f).get("process", {})
        os.unlink(path)
        for key, value in process.items():
            if isinstance(value, (int, float)):
                merged[key] = merged.get(key, 0) + value
    except (OSError, ValueError) as exc:
        print(f"graphmem statistics of the {allocator} run unreadable: {exc}", file=sys.stderr)
        return False
    if process.get("fallbacks", 0) or (allocator == "async" and
                                       not process.get("graph_allocations", 0)):
        print(f"graphmem did not serve the {allocator} run: {process}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())

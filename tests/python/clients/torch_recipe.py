"""PyTorch on the cudaMallocAsync backend, the recipe of §C1: a captured temporary
(alloc + free node) and an output left unfreed, replayed thanks to AutoFreeOnLaunch, then freed
outside the graph (an uncaptured free of a captured allocation)."""

import os
import tempfile

from clientlib import info, load_torch, node_types, obs, report_footprint, tensor_digest, time_replays


def main():
    torch = load_torch()
    x = torch.randn(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm-up outside capture, as torch.cuda.graph requires
            y = (x * 2).sin()
    torch.cuda.current_stream().wait_stream(s)

    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g):
        y = (x * 2).sin()  # x*2: MEM_ALLOC + MEM_FREE; y: MEM_ALLOC left unfreed
    g.instantiate()
    obs("nodes", node_types(g.raw_cuda_graph()))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "g.dot")
        g.debug_dump(path)
        with open(path) as f:
            dot = f.read()
    # the DOT must still show memory nodes, whatever graphmem put in their place
    obs("dot_mem_alloc", dot.count("MEM_ALLOC"))
    obs("dot_mem_free", dot.count("MEM_FREE"))

    g.replay()
    g.replay()  # the second replay works only thanks to AutoFreeOnLaunch
    torch.cuda.synchronize()
    obs("output", tensor_digest(y))
    obs("equals_eager_ok", torch.equal(y, (x * 2).sin()))
    report_footprint()
    info("replay_us", time_replays(torch, g, 200))

    del y  # cudaFreeAsync outside the graph
    torch.cuda.synchronize()
    g.replay()  # output freed: the next replay allocates it again, at the node's fixed address
    torch.cuda.synchronize()
    obs("replay_after_free", "ok")
    del g
    torch.cuda.synchronize()
    obs("done", True)


if __name__ == "__main__":
    main()

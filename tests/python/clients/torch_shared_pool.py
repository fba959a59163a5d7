"""Several graphs sharing one pool (pool=g1.pool()), replayed in order on one stream: each
consumes the previous one's unfreed output, so graphmem may share their memory but must never
let a later graph's temporaries alias an earlier graph's live output."""

from clientlib import info, load_torch, obs, report_footprint, tensor_digest

N = 1 << 22  # elements: 16 MiB per float tensor


def main():
    torch = load_torch()

    def f1(x):
        return (x * 3).cos() + 1

    def f2(x, y1):
        return (y1 * y1).sqrt() - x

    def f3(y1, y2):
        return (y2 * 2).tanh() + y1

    gen = torch.Generator(device="cuda").manual_seed(4)
    inputs = [torch.randn(N, device="cuda", generator=gen) for _ in range(5)]
    x = inputs[0].clone()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y1 = f1(x)
            f3(y1, f2(x, y1))
    torch.cuda.current_stream().wait_stream(s)

    g1, g2, g3 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        y1 = f1(x)
    with torch.cuda.graph(g2, pool=g1.pool()):
        y2 = f2(x, y1)
    with torch.cuda.graph(g3, pool=g1.pool()):
        y3 = f3(y1, y2)

    digests, eager_equal = [], []
    for inp in inputs:
        x.copy_(inp)
        g1.replay()
        g2.replay()
        g3.replay()
        digests.append(tensor_digest(y3))  # synchronises
        e1 = f1(inp)
        eager_equal.append(torch.equal(y3, f3(e1, f2(inp, e1))))
    obs("outputs", ",".join(digests))
    obs("equals_eager_ok", all(eager_equal))
    report_footprint()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        g1.replay()
        g2.replay()
        g3.replay()
    end.record()
    end.synchronize()
    info("replay_us", round(start.elapsed_time(end) * 1000 / 50, 2))
    obs("done", True)


if __name__ == "__main__":
    main()

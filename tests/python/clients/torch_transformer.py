"""Inference of a transformer block at a realistic size (d_model 1024, 16 heads, sequence 512,
batch 8, bf16), captured with torch.cuda.graph and replayed on fresh inputs. Every activation
is a graph allocation, so this is where graphmem's planning shows in the footprint."""

from clientlib import info, load_torch, obs, report_footprint, tensor_digest, time_replays

D, HEADS, SEQ, BATCH = 1024, 16, 512, 8


def main():
    torch = load_torch()
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).view(BATCH, SEQ, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(BATCH, SEQ, D))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    model = Block().to(device="cuda", dtype=torch.bfloat16).eval()
    gen = torch.Generator(device="cuda").manual_seed(1)
    inputs = [torch.randn(BATCH, SEQ, D, device="cuda", dtype=torch.bfloat16, generator=gen)
              for _ in range(4)]
    static_in = inputs[0].clone()

    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static_in)
        torch.cuda.current_stream().wait_stream(s)

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = model(static_in)

        digests, eager_equal = [], []
        for x in inputs:
            static_in.copy_(x)
            g.replay()
            torch.cuda.synchronize()
            digests.append(tensor_digest(static_out))
            eager_equal.append(torch.equal(static_out, model(x)))
    obs("outputs", ",".join(digests))
    obs("equals_eager_ok", all(eager_equal))
    obs("finite_ok", bool(torch.isfinite(static_out).all()))
    report_footprint()
    info("replay_us", time_replays(torch, g, 20))
    obs("done", True)


if __name__ == "__main__":
    main()

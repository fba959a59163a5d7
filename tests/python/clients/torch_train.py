"""A whole training step (forward, backward, AdamW step) of a small transformer captured once
and replayed for 60 iterations. Deterministic (fixed seeds, deterministic algorithms), so the
final parameters must match natively bit for bit. Gradients are graph outputs left unfreed
between replays (AutoFreeOnLaunch); activations and their grads are freed inside the graph."""

import math

from clientlib import info, load_torch, obs, report_footprint, tensor_digest, time_replays

D, HEADS, SEQ, BATCH, LAYERS, STEPS = 256, 4, 64, 16, 2, 60


def main():
    torch = load_torch(deterministic=True)
    import torch.nn.functional as F
    from torch import nn

    class Block(nn.Module):
        """Attention written out (no fused SDPA kernels): every op has a deterministic backward."""

        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).view(BATCH, SEQ, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) * (D // HEADS) ** -0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(BATCH, SEQ, D))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    model = nn.Sequential(*[Block() for _ in range(LAYERS)], nn.Linear(D, 1)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
    gen = torch.Generator(device="cuda").manual_seed(2)
    data = torch.randn(STEPS, BATCH, SEQ, D, device="cuda", generator=gen)
    target = torch.randn(STEPS, BATCH, SEQ, 1, device="cuda", generator=gen)
    static_x, static_t = data[0].clone(), target[0].clone()

    def step():
        loss = F.mse_loss(model(static_x), static_t)
        loss.backward()
        opt.step()
        return loss

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm-up, also creates the optimizer state outside the graph
            opt.zero_grad(set_to_none=True)
            step()
    torch.cuda.current_stream().wait_stream(s)

    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # so the grads are allocated inside the graph
    with torch.cuda.graph(g):
        static_loss = step()

    losses = []
    for i in range(STEPS):
        static_x.copy_(data[i])
        static_t.copy_(target[i])
        g.replay()
        if i % 10 == 9:
            losses.append(static_loss.item().hex())
    torch.cuda.synchronize()
    obs("losses", ",".join(losses))
    # a diverged (NaN) run would compare equal and prove nothing
    obs("losses_finite_ok", all(math.isfinite(float.fromhex(v)) for v in losses))
    obs("params", tensor_digest(*model.parameters()))
    obs("grads", tensor_digest(*(p.grad for p in model.parameters())))
    report_footprint()
    info("replay_us", time_replays(torch, g, 20))
    obs("done", True)


if __name__ == "__main__":
    main()

"""Two processes, one GPU each, torch.distributed with NCCL: each rank captures a whole training
step (forward, backward, an NCCL all-reduce of every gradient, AdamW step) into a CUDA graph on
the cudaMallocAsync backend and replays it. With two ranks each reduced element is one sum a + b,
which is the same bit pattern whichever rank adds, so the final parameters are equal on both ranks
and equal natively and under graphmem bit for bit.

Each rank prints its own OBS/INFO lines, prefixed rank0_/rank1_. NVLink multicast stays off
(NCCL_NVLS_ENABLE=0 and friends): it can take a shared host's GPUs out of service."""

import math
import os
import socket
import sys

from clientlib import info, load_torch, need, obs, report_footprint, skip, tensor_digest

WORLD, D, BATCH, STEPS = 2, 512, 64, 40

# never let NCCL, PyTorch or NVSHMEM use NVLink multicast
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank):
    torch = load_torch(deterministic=True)
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn

    def out(key, value):
        obs(f"rank{rank}_{key}", value)

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=WORLD,
                            device_id=torch.device("cuda", rank))
    torch.manual_seed(0)  # the same initial parameters on both ranks
    model = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D), nn.GELU(),
                          nn.Linear(D, 1)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)
    gen = torch.Generator(device="cuda").manual_seed(100 + rank)  # each rank its own data
    data = torch.randn(STEPS, BATCH, D, device="cuda", generator=gen)
    target = torch.randn(STEPS, BATCH, 1, device="cuda", generator=gen)
    static_x, static_t = data[0].clone(), target[0].clone()

    def step():
        loss = F.mse_loss(model(static_x), static_t)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad.div_(WORLD)
        opt.step()
        return loss

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm-up: NCCL communicator, optimizer state, cuBLAS handles
            opt.zero_grad(set_to_none=True)
            step()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # so the gradients are allocated inside the graph
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
    out("losses", ",".join(losses))
    out("losses_finite_ok", all(math.isfinite(float.fromhex(v)) for v in losses))
    digest = tensor_digest(*model.parameters())
    out("params", digest)
    # both ranks must hold the same parameters: gather the digests through NCCL-free objects
    digests = [None] * WORLD
    dist.all_gather_object(digests, digest)
    out("ranks_agree_ok", len(set(digests)) == 1)
    report_footprint(prefix=f"rank{rank}_graph_mem", ordinal=rank)
    info(f"rank{rank}_pid", os.getpid())
    del g
    dist.destroy_process_group()


def main():
    if len(sys.argv) == 2:  # a rank, started by main below
        worker(int(sys.argv[1]))
        return
    torch = need("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < WORLD:
        skip(f"needs {WORLD} GPUs, torch sees {torch.cuda.device_count()}")
    if not (need("torch.distributed").is_available() and torch.distributed.is_nccl_available()):
        skip("torch.distributed with NCCL is not available")
    import subprocess

    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(WORLD), **SAFE_ENV)
    # plain processes (not torch.multiprocessing) so each is a fresh interpreter that inherits
    # the environment, LD_PRELOAD included, and prints straight to our stdout
    ranks = [subprocess.Popen([sys.executable, __file__, str(r)], env=env) for r in range(WORLD)]
    codes = [p.wait(timeout=200) for p in ranks]
    obs("rank_exit_codes", ",".join(map(str, codes)))


if __name__ == "__main__":
    main()

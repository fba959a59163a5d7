"""PyTorch on the cudaMallocAsync allocator backend (clients/torch_*.py): every captured tensor
allocation is a graph allocation, so graphmem serves all of them."""

from conftest import assert_at_least, mem_nodes


def test_recipe(run_native_and_graphmem):
    r = run_native_and_graphmem("torch_recipe.py")
    obs = r.native.obs
    assert mem_nodes(obs["nodes"]) == (2, 1)
    assert (obs["dot_mem_alloc"], obs["dot_mem_free"]) == ("2", "1")
    # replays: 2, 200 timed, 1 after the output's free outside the graph
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                              "ALLOC": 2, "FREE": 2, "LAUNCH": 203})


def test_transformer_block_inference(run_native_and_graphmem):
    r = run_native_and_graphmem("torch_transformer.py")
    assert len(r.native.obs["outputs"].split(",")) == 4
    # replays: 4 checked, 20 timed; every activation is allocated inside the graph
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                              "ALLOC": 5, "FREE": 4, "LAUNCH": 24})


def test_training_step(run_native_and_graphmem):
    r = run_native_and_graphmem("torch_train.py")
    # 60 training replays and 20 timed ones; final parameters compared bit for bit via OBS
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                              "ALLOC": 10, "FREE": 10, "LAUNCH": 80})


def test_make_graphed_callables(run_native_and_graphmem):
    r = run_native_and_graphmem("torch_graphed_callables.py")
    # two callables, a forward and a backward graph each, all replayed in 30 steps
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 4, "END_CAPTURE": 4, "INSTANTIATE": 4,
                              "ALLOC": 4, "LAUNCH": 120})


def test_graphs_sharing_a_pool(run_native_and_graphmem):
    r = run_native_and_graphmem("torch_shared_pool.py")
    # three graphs; 5 checked rounds and 50 timed ones
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 3, "END_CAPTURE": 3, "INSTANTIATE": 3,
                              "ALLOC": 3, "LAUNCH": 165})


def test_two_process_nccl_training(run_native_and_graphmem):
    """torch.distributed, NCCL, one process per GPU (skips with fewer than two GPUs)."""
    r = run_native_and_graphmem("torch_ddp.py")
    obs = r.native.obs
    assert obs["rank_exit_codes"] == "0,0"
    assert obs["rank0_params"] == obs["rank1_params"]
    # each rank's own statistics: one capture of the step, 40 replays
    pids = {int(r.graphmem.info[f"rank{rank}_pid"]) for rank in (0, 1)}
    ranks = [s for s in r.all_stats if s["pid"] in pids]
    assert len(ranks) == 2, f"stats of the ranks {pids} missing: {[s['pid'] for s in r.all_stats]}"
    for stats in ranks:
        assert_at_least(stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                                "ALLOC": 5, "LAUNCH": 40})
        assert stats["process"]["graph_allocations"] >= 5, stats["process"]

"""fork with graphmem preloaded (clients/fork_*.py): LD_PRELOAD follows the child, and
graphmem's state must neither break the child nor the parent. The stats file is the one the
parent writes at exit, last, since it waits for its child first."""

from conftest import assert_at_least


def test_fork_before_cuda_init(run_native_and_graphmem):
    r = run_native_and_graphmem("fork_child_cuda.py")
    assert r.native.obs["child_exit"] == "0"
    assert r.stats["pid"] == int(r.graphmem.info["pid"]), "stats are not the parent's own"
    # the parent's own work after the fork: one small graph launched twice
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                              "ALLOC": 2, "FREE": 2, "LAUNCH": 2})


def test_fork_after_cuda_init(run_native_and_graphmem):
    r = run_native_and_graphmem("fork_after_init.py")
    obs = r.native.obs
    assert obs["child_exit"] == "0"
    assert obs["child_init"] == "CUDA_ERROR_NOT_INITIALIZED"
    assert r.stats["pid"] == int(r.graphmem.info["pid"]), "stats are not the parent's own"
    # two graphs: one launched before and after the fork, one captured after it
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 2, "END_CAPTURE": 2, "INSTANTIATE": 2,
                              "ALLOC": 4, "FREE": 4, "LAUNCH": 4})

"""cuda.core GraphMemoryResource (clients/core_graph_memory.py)."""

from conftest import assert_at_least


def test_graph_memory_resource(run_native_and_graphmem):
    r = run_native_and_graphmem("core_graph_memory.py")
    obs = r.native.obs
    assert obs["plain_relaunch_unfreed"] == "CUDA_ERROR_INVALID_VALUE"
    assert obs["relaxed_launches"] == "ok,ok,ok,ok"
    assert obs["trim_used_zero"] == obs["reset_highs_zero"] == "True"
    # 4 graphs, each: 2 allocations and 1 free captured; 6 frees outside; 10 launches, 8 uploads
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 4, "END_CAPTURE": 4, "INSTANTIATE": 4,
                              "ALLOC": 8, "FREE": 10, "LAUNCH": 10, "UPLOAD": 8,
                              "cuDeviceGraphMemTrim": 1})

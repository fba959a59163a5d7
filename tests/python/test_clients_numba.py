"""numba-cuda kernels around a captured cuMemAllocAsync (clients/numba_capture.py)."""

from conftest import assert_at_least, mem_nodes


def test_numba_capture(run_native_and_graphmem):
    r = run_native_and_graphmem("numba_capture.py")
    assert mem_nodes(r.native.obs["nodes"]) == (1, 1)
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                              "ALLOC": 1, "FREE": 1, "LAUNCH": 3})

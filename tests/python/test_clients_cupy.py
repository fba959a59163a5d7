"""CuPy MemoryAsyncPool with stream capture (clients/cupy_capture.py)."""

from conftest import assert_at_least, mem_nodes


def test_cupy_capture(run_native_and_graphmem):
    r = run_native_and_graphmem("cupy_capture.py")
    obs = r.native.obs
    assert obs["relaunch_unfreed"].endswith(":cudaErrorInvalidValue")
    assert obs["relaunch_after_free"] == obs["relaunch_after_second_free"] == "ok"
    assert mem_nodes(obs["nodes"]) == (2, 1)
    # CuPy's runtime calls arrive as driver calls; launches: first, refused, two after frees
    assert_at_least(r.stats, {"BEGIN_CAPTURE": 1, "END_CAPTURE": 1, "INSTANTIATE": 1,
                              "ALLOC": 2, "FREE": 4, "LAUNCH": 4, "UPLOAD": 1})

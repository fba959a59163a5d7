"""cuda.bindings driver-level capture (clients/bindings_capture.py), with the legacy default
stream and with CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1, where the _ptsz entries must be
the ones that carry the program's calls."""

import pytest

from conftest import FAMILIES, assert_at_least, calls, mem_nodes

PTDS = "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"
# stream-ordered entries the program calls; each has a _ptsz twin
STREAM_NAMES = ("cuMemAllocAsync", "cuMemFreeAsync", "cuStreamEndCapture", "cuGraphLaunch")


def begin_capture_split(stats):
    """(legacy, per-thread) begin-capture counts, whatever the ABI version of the entry."""
    names = [n for n in stats["calls"] if FAMILIES["BEGIN_CAPTURE"].match(n)]
    return (sum(stats["calls"][n] for n in names if not n.endswith("_ptsz")),
            sum(stats["calls"][n] for n in names if n.endswith("_ptsz")))


@pytest.mark.parametrize("per_thread", [False, True], ids=["legacy", "per_thread"])
def test_driver_capture(run_native_and_graphmem, per_thread):
    r = run_native_and_graphmem("bindings_capture.py", env={PTDS: "1"} if per_thread else {})
    obs = r.native.obs
    # the premises: which default stream cuda.bindings uses, and what the driver refuses
    assert obs["default_stream_is_per_thread"] == str(per_thread)
    assert obs["relaunch_while_unfreed"] == "CUDA_ERROR_INVALID_VALUE"
    assert obs["default_stream_begin_capture"] == (
        "CUDA_SUCCESS" if per_thread else "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED")
    assert mem_nodes(obs["unfreed_nodes"]) == (2, 1)

    # what the program did: graphs captured, allocations, frees, launches (see the client);
    # the default-stream graph exists only with per-thread streams
    graphs = 3 if per_thread else 2
    allocs = 5 if per_thread else 4
    frees = 7 if per_thread else 6
    launches = 10 if per_thread else 8
    begin_calls = 3  # the legacy stream's refused begin is a call too
    stats = r.stats
    twin = "_ptsz" if per_thread else ""
    other = "" if per_thread else "_ptsz"
    expected = {"cuMemAllocAsync": allocs, "cuMemFreeAsync": frees,
                "cuStreamEndCapture": graphs, "cuGraphLaunch": launches}
    got = {name: calls(stats, name + twin) for name in STREAM_NAMES}
    assert all(got[n] >= expected[n] for n in STREAM_NAMES), (got, expected)
    assert {name: calls(stats, name + other) for name in STREAM_NAMES} == dict.fromkeys(STREAM_NAMES, 0), \
        f"calls arrived through the {'legacy' if per_thread else '_ptsz'} entries"
    legacy_begin, ptsz_begin = begin_capture_split(stats)
    assert (ptsz_begin if per_thread else legacy_begin) >= begin_calls
    assert (legacy_begin if per_thread else ptsz_begin) == 0
    assert_at_least(stats, {"INSTANTIATE": graphs, "cuMemFree_v2": 1, "cuDeviceGraphMemTrim": 1,
                            "cuDeviceGetGraphMemAttribute": 16, "cuDeviceSetGraphMemAttribute": 4})

"""The routing programs of tests/routing (static cudart, shared cudart, per-thread default stream)
on the real driver: natively and under graphmem with GRAPHMEM_SHOW_STATS=1, their output must be
equal (the runtime's entry points for hooked names must lie in libgraphmem.so, every other one
where the driver put it), and graphmem's statistics must count what each program did.

Without a GPU every test skips with the reason (the mock-driver twin of this check runs in CI as
routing.app.*)."""

import json
import re

import pytest

import gpuharness as gh

HOOKS_DEF = gh.REPO / "shim" / "interpose" / "hooks.def"
ENTRY = re.compile(r"^entry (\S+) flags=(\d+) -> (\S+) status=(\S+) object=(\S+) symbol=(\S+)$")


def hooked_names():
    return set(re.findall(r"^GM_(?:FORWARD|HOOK|HOOK_ON|ENQUEUE)\((\w+),", HOOKS_DEF.read_text(), re.M))


def split(stdout):
    lines = stdout.splitlines()
    return ([line for line in lines if not line.startswith("entry ")],
            [line for line in lines if line.startswith("entry ")])


def family(calls, base):
    """Calls of an exact name and of its per-thread twin, as (legacy, per_thread)."""
    return calls.get(base, 0), calls.get(base + "_ptsz", 0)


@pytest.mark.parametrize("variant", ["static", "shared", "ptds"])
def test_routing_program_on_the_driver(variant, tmp_path):
    gh.require_gpu()
    prog = gh.build_dir() / "tests" / "routing" / f"routing_app_{variant}"
    if not prog.is_file():
        pytest.fail(f"{prog} is not built (needs nvcc at configure time)")
    native = gh.run_native([prog])
    stats_file = tmp_path / "stats.json"
    under = gh.run_graphmem([prog], {"GRAPHMEM_SHOW_STATS": "1",
                                     "GRAPHMEM_STATS_FILE": str(stats_file)})

    plain, entries = split(native.stdout)
    gplain, gentries = split(under.stdout)
    assert plain == gplain, f"output differs\n{native.describe()}\n{under.describe()}"
    assert "failures=0" in plain
    assert len(entries) == len(gentries) and entries, (native.stdout, under.stdout)
    hooked = hooked_names()
    for mine, theirs in zip(entries, gentries):
        n, g = ENTRY.match(mine), ENTRY.match(theirs)
        assert n and g, (mine, theirs)
        # same query, result, status and exact ABI symbol; only the object may change
        assert n.group(1, 2, 3, 4, 6) == g.group(1, 2, 3, 4, 6), (mine, theirs)
        want = "libgraphmem.so" if n.group(6) in hooked else n.group(5)
        assert g.group(5) == want, f"{theirs}: expected object={want}"

    assert [l for l in under.stderr.splitlines() if l.startswith("graphmem:")], under.describe()
    stats = json.loads(stats_file.read_text())
    assert stats["graphmem_stats_version"] == 1
    calls, process = stats["calls"], stats["process"]
    # what app.cu does: 3 stream-ordered allocations and frees (two captured), two captures (one
    # into a graph after a node), three instantiations (one WithFlags), one upload, three launches,
    # one trim, the attribute query;
    # an entry may come through its per-thread twin (which ones cudart picks is its business)
    expected = {"cuMemAllocAsync": 3, "cuMemFreeAsync": 3, "cuStreamBeginCapture_v2": 1,
                "cuStreamBeginCaptureToGraph": 1, "cuStreamEndCapture": 2, "cuGraphUpload": 1,
                "cuGraphLaunch": 3}
    for base, n in expected.items():
        assert sum(family(calls, base)) >= n, f"{base}: fewer than {n} calls; {calls}"
    # the allocations reach graphmem through the twin of the program's default-stream kind
    legacy, ptsz = family(calls, "cuMemAllocAsync")
    mine, other = (ptsz, legacy) if variant == "ptds" else (legacy, ptsz)
    assert mine >= 3 and other == 0, calls
    instantiations = sum(v for k, v in calls.items() if k.startswith("cuGraphInstantiate"))
    assert instantiations >= 3, calls
    assert calls.get("cuDeviceGraphMemTrim", 0) >= 1, calls
    assert calls.get("cuDeviceGetGraphMemAttribute", 0) >= 1, calls
    assert calls.get("cuGraphAddMemAllocNode", 0) >= 1 and calls.get("cuGraphAddMemFreeNode", 0) >= 1
    # the engine served the two captured allocations and the explicit one
    assert process["captures"] == 2, process
    assert process["graph_allocations"] == 3 and process["graph_frees"] == 3, process
    assert process["launches"] == 3 and process["uploads"] == 1, process
    assert process["fallbacks"] == 0, process

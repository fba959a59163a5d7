"""Fixtures for the Python client tests: run one client program natively and under graphmem in
the same test, compare what it observed, and hand back graphmem's statistics.

Protocol (see clients/clientlib.py): clients print `OBS <key> <value>` lines that must be equal
in both runs, `INFO <key> <value>` lines that may differ (footprint, time), and exit 77 when
there is no GPU or their package is missing; that becomes a pytest skip with the reason.

Under graphmem: `scripts/graphmem-run` (builds if needed), or, when GRAPHMEM_LIB is set, that
library preloaded directly with LD_PRELOAD.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).resolve().parent / "clients"
SKIP_CODE = 77
# each client takes seconds; the limit only catches hangs (a first run may compile kernels)
TIMEOUT_S = 240
# graphmem-run may build the library on its first use
BUILD_TIMEOUT_S = 900


@dataclasses.dataclass
class Run:
    argv: list
    returncode: int
    stdout: str
    stderr: str
    obs: dict
    info: dict

    def describe(self):
        return (f"$ {' '.join(map(str, self.argv))}\nexit {self.returncode}\n"
                f"--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-6000:]}")


@dataclasses.dataclass
class Pair:
    native: Run
    graphmem: Run
    stats: dict  # of the process that wrote its statistics last: the top one, which waits
    all_stats: list  # of every process under graphmem (children the client started included)


def parse_lines(stdout, tag):
    """`<tag> key value` lines into a dict; a key printed twice is a client bug."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith(tag + " "):
            _, key, value = (line.split(" ", 2) + [""])[:3]
            assert key not in out, f"{tag} {key} printed twice"
            out[key] = value
    return out


def native_env(extra):
    """The caller's environment without any graphmem in it, plus the test's variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    preload = [p for p in env.get("LD_PRELOAD", "").split(":") if p and "graphmem" not in p]
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def graphmem_prefix_and_env(env):
    """Command prefix and environment that run a program under graphmem."""
    lib = os.environ.get("GRAPHMEM_LIB")
    if lib:
        assert Path(lib).is_file(), f"GRAPHMEM_LIB={lib} is not a file"
        env["LD_PRELOAD"] = ":".join(filter(None, [str(Path(lib).resolve()), env.get("LD_PRELOAD")]))
        return [], env
    runner = REPO / "scripts" / "graphmem-run"
    assert os.access(runner, os.X_OK), f"{runner} missing or not executable, and GRAPHMEM_LIB unset"
    return [str(runner)], env


def run(argv, env, timeout=TIMEOUT_S):
    try:
        p = subprocess.run(argv, env=env, cwd=CLIENTS, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"timed out after {timeout} s: {' '.join(map(str, argv))}\n{out[-3000:]}\n{err[-3000:]}")
    return Run(argv, p.returncode, p.stdout, p.stderr, parse_lines(p.stdout, "OBS"), parse_lines(p.stdout, "INFO"))


def skip_reason(r):
    lines = [line[5:] for line in r.stdout.splitlines() if line.startswith("SKIP ")]
    return lines[-1] if lines else "client exited 77 without a reason"


@pytest.fixture(scope="session")
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def graphmem_runner():
    """The command prefix that runs a program under graphmem (empty with GRAPHMEM_LIB, whose
    preload goes into the environment instead); the first use builds the library if needed."""
    prefix, _ = graphmem_prefix_and_env({})
    if prefix:
        warm = subprocess.run(prefix + ["true"], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        assert warm.returncode == 0, f"graphmem-run true failed:\n{warm.stdout[-3000:]}\n{warm.stderr[-3000:]}"
    return prefix


@pytest.fixture
def run_native_and_graphmem(tmp_path, request):
    """run(script, env=None, args=()) -> Pair.

    Runs clients/<script> natively, then under graphmem with a stats file and the stats table
    on; skips if the native run exits 77; fails unless both exit 0, print the same OBS lines
    (and at least one), the stats JSON is well formed and the table was printed."""

    def go(script, env=None, args=()):
        argv = [sys.executable, str(CLIENTS / script), *map(str, args)]
        native = run(argv, native_env(env or {}))
        if native.returncode == SKIP_CODE:
            pytest.skip(f"{script}: {skip_reason(native)}")
        assert native.returncode == 0, f"native run failed\n{native.describe()}"
        assert native.obs, f"native run observed nothing\n{native.describe()}"
        # keys ending in _ok are the client's own checks of its results
        failed = {k: v for k, v in native.obs.items() if k.endswith("_ok") and v != "True"}
        assert not failed, f"native run failed its own checks {failed}\n{native.describe()}"

        request.getfixturevalue("graphmem_runner")  # builds the library once per session
        stats_pattern = tmp_path / "stats.%p.json"  # one file per process
        genv = native_env(env or {})
        # the caller's options; LIB and BUILD_DIR only pick the library (graphmem_prefix_and_env)
        genv.update({k: v for k, v in os.environ.items()
                     if k.startswith("GRAPHMEM_") and k not in ("GRAPHMEM_LIB", "GRAPHMEM_BUILD_DIR")})
        genv.update(GRAPHMEM_STATS_FILE=str(stats_pattern), GRAPHMEM_SHOW_STATS="1")
        prefix, genv = graphmem_prefix_and_env(genv)
        under = run(prefix + argv, genv)
        assert under.returncode == 0, f"run under graphmem failed\n{under.describe()}"

        report = [f"{script}: {key} native={native.info[key]} graphmem={under.info.get(key)}"
                  for key in native.info]
        print("\n".join(report))  # footprint and time side by side, shown with -s or -rA
        assert under.obs == native.obs, (
            "observations differ (native vs graphmem):\n"
            + "\n".join(f"  {k}: {native.obs.get(k)!r} vs {under.obs.get(k)!r}"
                        for k in sorted(set(native.obs) | set(under.obs))
                        if native.obs.get(k) != under.obs.get(k))
            + f"\n{under.describe()}")

        files = sorted(tmp_path.glob("stats.*.json"), key=lambda f: f.stat().st_mtime_ns)
        assert files, f"graphmem wrote no {stats_pattern}\n{under.describe()}"
        all_stats = [json.loads(f.read_text()) for f in files]
        for stats in all_stats:
            assert stats.get("graphmem_stats_version") == 1, stats
            assert isinstance(stats.get("pid"), int), stats
            assert isinstance(stats.get("calls"), dict) and stats["calls"], stats
        table = [line for line in under.stderr.splitlines() if line.startswith("graphmem:")]
        assert table, f"GRAPHMEM_SHOW_STATS=1 printed no 'graphmem:' lines\n{under.describe()}"
        assert not [line for line in native.stderr.splitlines() if line.startswith("graphmem:")], \
            "the native run printed graphmem lines: graphmem leaked into it"
        return Pair(native, under, all_stats[-1], all_stats)

    return go


def calls(stats, *names):
    """Sum of the call counts of exact driver ABI names; every name must be in the stats."""
    table = stats["calls"]
    missing = [n for n in names if n not in table]
    assert not missing, f"stats lack {missing}; they have {sorted(table)}"
    return sum(table[n] for n in names)


# every entry through which a client's action can arrive, per-thread-stream twins included
FAMILIES = {
    "ALLOC": re.compile(r"cuMemAlloc(FromPool)?Async(_ptsz)?$"),
    "FREE": re.compile(r"cuMemFreeAsync(_ptsz)?$"),
    "BEGIN_CAPTURE": re.compile(r"cuStreamBeginCapture(_v2|ToGraph)?(_ptsz)?$"),
    "END_CAPTURE": re.compile(r"cuStreamEndCapture(_ptsz)?$"),
    "INSTANTIATE": re.compile(r"cuGraphInstantiate(WithFlags|WithParams|_v2)?(_ptsz)?$"),
    "LAUNCH": re.compile(r"cuGraphLaunch(_ptsz)?$"),
    "UPLOAD": re.compile(r"cuGraphUpload(_ptsz)?$"),
}


def count(stats, spec):
    """Calls counted by a spec: an exact ABI name; 'name*' for a name plus its per-thread-stream
    twin (callers whose stream kind is not fixed); or a family of FAMILIES, summed."""
    if spec in FAMILIES:
        matched = {n: c for n, c in stats["calls"].items() if FAMILIES[spec].match(n)}
        assert matched, f"stats have no {spec} name: {sorted(stats['calls'])}"
        return sum(matched.values())
    if spec.endswith("*"):
        return calls(stats, spec[:-1], spec[:-1] + "_ptsz")
    return calls(stats, spec)


def assert_at_least(stats, expected):
    """Lower bounds {spec: n} on the counts: graphmem may add calls of its own."""
    got = {spec: count(stats, spec) for spec in expected}
    low = {spec: (got[spec], n) for spec, n in expected.items() if got[spec] < n}
    assert not low, f"counts below what the program did (got, expected at least): {low}; all: {got}"


def mem_nodes(histogram):
    """(MEM_ALLOC, MEM_FREE) counts from a client's node-type histogram OBS value."""
    counts = dict(item.split("=") for item in histogram.split(","))
    return int(counts.get("MEM_ALLOC", 0)), int(counts.get("MEM_FREE", 0))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long GPU runs (stress, compute-sanitizer)")

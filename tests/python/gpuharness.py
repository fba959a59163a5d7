"""Shared helpers for pytest files that run CUDA programs natively and under graphmem.

Programs print `OBS <key> <value>` lines (compared between the two runs, in order: a key may
repeat), `INFO <key> <value>` lines (logged only) and exit 77 with a `SKIP <reason>` line when the
machine cannot run them. Under graphmem means `scripts/graphmem-run PROGRAM`, or, when
GRAPHMEM_LIB is set, that library preloaded directly with LD_PRELOAD.
"""

import ctypes
import dataclasses
import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GPU_SOURCES = REPO / "tests" / "gpu"
SKIP_CODE = 77
# each program takes about a second; the limit only catches hangs
TIMEOUT_S = 120


def build_dir():
    return Path(os.environ.get("GRAPHMEM_BUILD_DIR", REPO / "build"))


@functools.lru_cache(maxsize=None)
def gpu_absent_reason():
    """None when the driver initialises and sees a device, else why not (no library loaded into
    this process beyond libcuda itself, so nothing graphmem-related is touched)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return f"libcuda.so.1 cannot be loaded ({e})"
    rc = cuda.cuInit(0)
    if rc != 0:
        return f"cuInit failed with CUresult {rc}"
    count = ctypes.c_int(0)
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        return f"cuDeviceGetCount gave CUresult {rc}, {count.value} devices"
    return None


def require_gpu():
    reason = gpu_absent_reason()
    if reason:
        pytest.skip(f"no CUDA GPU: {reason}")


def program(name):
    """Path of a program built from tests/gpu/<name>.cu; fails (not skips) when it was not built,
    since a GPU machine without the programs must not look green."""
    path = build_dir() / "tests" / "gpu" / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is not built: cmake --build {build_dir()} --target graphmem_gpu_programs")
    return path


@dataclasses.dataclass
class Run:
    argv: list
    returncode: int
    stdout: str
    stderr: str

    def lines(self, tag):
        """[(key, value)] of the `<tag> key value` lines, in order."""
        out = []
        for line in self.stdout.splitlines():
            if line.startswith(tag + " "):
                _, key, value = (line.split(" ", 2) + [""])[:3]
                out.append((key, value))
        return out

    @property
    def obs(self):
        return self.lines("OBS")

    @property
    def info(self):
        return self.lines("INFO")

    def skip_reason(self):
        reasons = [line[5:] for line in self.stdout.splitlines() if line.startswith("SKIP ")]
        return reasons[-1] if reasons else "exited 77 without a reason"

    def describe(self):
        return (f"$ {' '.join(map(str, self.argv))}\nexit {self.returncode}\n"
                f"--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-6000:]}")


def native_env(extra=None):
    """The caller's environment with every trace of graphmem removed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    preload = [p for p in env.pop("LD_PRELOAD", "").split(":") if p and "graphmem" not in p]
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    env.update(extra or {})
    return env


def graphmem_command(argv, extra=None):
    """(argv, env) that run argv under graphmem with the caller's GRAPHMEM_* options."""
    env = native_env(extra)
    env.update({k: v for k, v in os.environ.items()
                if k.startswith("GRAPHMEM_") and k != "GRAPHMEM_LIB"})
    env.update(extra or {})
    lib = os.environ.get("GRAPHMEM_LIB")
    if lib:
        assert Path(lib).is_file(), f"GRAPHMEM_LIB={lib} is not a file"
        env["LD_PRELOAD"] = ":".join(filter(None, [str(Path(lib).resolve()), env.get("LD_PRELOAD")]))
        return list(argv), env
    runner = REPO / "scripts" / "graphmem-run"
    assert os.access(runner, os.X_OK), f"{runner} missing and GRAPHMEM_LIB unset"
    env.setdefault("GRAPHMEM_BUILD_DIR", str(build_dir()))
    return [str(runner), *argv], env


def graphmem_under_tool(tool, argv, extra=None):
    """(argv, env) that run `tool ... argv` with graphmem preloaded into argv only, never into
    the tool: a tool such as compute-sanitizer injects itself through the environment, so the
    preload is prepended inside the target's own process."""
    cmd, env = graphmem_command(argv, extra)
    lib = env.pop("LD_PRELOAD", None) if os.environ.get("GRAPHMEM_LIB") else None
    if lib:
        prepend = 'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" exec "$@"'
        return [*tool, "sh", "-c", prepend, lib, *argv], env
    return [*tool, *cmd], env


def run(argv, env, timeout=TIMEOUT_S):
    try:
        p = subprocess.run(list(map(str, argv)), env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"timed out after {timeout} s: {' '.join(map(str, argv))}\n{out[-3000:]}")
    return Run(list(argv), p.returncode, p.stdout, p.stderr)


# Native runs killed by a signal that are tried again: the driver itself crashes now and then in
# races some scenarios provoke (scn_concurrent_ends, two threads ending one capture: 2 of 13 native
# runs died of SIGSEGV on a two-H200 host in 2026-11, none of 12 under graphmem). The reference is
# the driver's behaviour when it survives; a run under graphmem is never tried again.
NATIVE_SIGNAL_RETRIES = 2


def run_native_tries(argv, extra=None, timeout=TIMEOUT_S):
    """Runs natively, and NATIVE_SIGNAL_RETRIES more times while the driver's run dies of a signal;
    the last run, whatever its end."""
    r = run(argv, native_env(extra), timeout)
    for _ in range(NATIVE_SIGNAL_RETRIES):
        if r.returncode >= 0:
            break
        print(f"native run died of signal {-r.returncode}, run again: {' '.join(map(str, argv))}")
        r = run(argv, native_env(extra), timeout)
    return r


def run_native(argv, extra=None, timeout=TIMEOUT_S):
    """Runs natively; skips the test on exit 77, fails on any other non-zero exit (after
    NATIVE_SIGNAL_RETRIES more tries when the driver's run died of a signal)."""
    r = run_native_tries(argv, extra, timeout)
    if r.returncode == SKIP_CODE:
        pytest.skip(f"{Path(argv[-1]).name}: {r.skip_reason()}")
    assert r.returncode == 0, f"native run failed\n{r.describe()}"
    return r


def run_graphmem(argv, extra=None, timeout=TIMEOUT_S):
    cmd, env = graphmem_command(argv, extra)
    r = run(cmd, env, timeout)
    assert r.returncode == 0, f"run under graphmem failed\n{r.describe()}"
    return r


def obs_differences(native, under, allow=None):
    """Human-readable differences between two OBS sequences. `allow` maps a key to the set of
    values graphmem may show instead of the native one (a documented improvement)."""
    allow = allow or {}
    a, b = native.obs, under.obs
    diffs = []
    for i in range(max(len(a), len(b))):
        na = a[i] if i < len(a) else ("<missing>", "")
        nb = b[i] if i < len(b) else ("<missing>", "")
        if na == nb:
            continue
        if na[0] == nb[0] and nb[1] in allow.get(na[0], ()):
            continue
        diffs.append(f"  #{i}: native {na[0]}={na[1]!r}  graphmem {nb[0]}={nb[1]!r}")
        if na[0] != nb[0]:
            diffs.append("  (sequences diverge here; later lines not compared)")
            break
    return diffs


def info_report(name, native, under):
    """INFO values side by side, native vs graphmem, for the test log."""
    theirs = {}
    for key, value in under.info:
        theirs.setdefault(key, value)
    return "\n".join(f"{name}: {key} native={value} graphmem={theirs.get(key)}"
                     for key, value in native.info)


def compute_sanitizer():
    """Path of compute-sanitizer, or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.access(Path(root) / "bin" / "compute-sanitizer", os.X_OK):
            return str(Path(root) / "bin" / "compute-sanitizer")
    return None

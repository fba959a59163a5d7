"""Options end to end: the README lists every option, and libgraphmem.so reports bad values by
name, keeps the default, warns about unknown names, and exits under GRAPHMEM_STRICT=1. No GPU
needed: the library parses options at its first door, whether or not a driver is present."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def library() -> str:
    lib = os.environ.get("GRAPHMEM_LIB")
    if not lib or not Path(lib).exists():
        pytest.skip("GRAPHMEM_LIB is not set to a built libgraphmem.so (run through CTest)")
    return lib


def run_preloaded(env_extra: dict) -> subprocess.CompletedProcess:
    # Looking up a driver name through dlsym opens the first door: graphmem starts and parses.
    code = ("import ctypes\n"
            "try:\n    ctypes.CDLL(None).cuDriverGetVersion\n"
            "except AttributeError:\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(env_extra)
    env["LD_PRELOAD"] = library()
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)


def test_readme_lists_every_option():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "options-table"), "--check",
                             str(ROOT / "README.md")])
    assert result.returncode == 0, ("README's options table differs from core/common/options.def "
                                    "and tool_options.def")


def test_malformed_value_is_reported_by_name_and_default_kept():
    proc = run_preloaded({"GRAPHMEM_MAX_RESERVED": "12 bananas", "GRAPHMEM_PRINT_CONFIG": "1"})
    assert proc.returncode == 0
    assert 'GRAPHMEM_MAX_RESERVED="12 bananas" is not valid' in proc.stderr
    config = [l for l in proc.stderr.splitlines() if "GRAPHMEM_MAX_RESERVED" in l and "=" in l
              and "default" in l and "not valid" not in l]
    assert config and config[0].split("=")[1].split()[0] == "0", proc.stderr


def test_strict_makes_a_bad_value_fatal():
    proc = run_preloaded({"GRAPHMEM_CROSS_STREAM": "sometimes", "GRAPHMEM_STRICT": "1"})
    assert proc.returncode == 1
    assert "GRAPHMEM_CROSS_STREAM" in proc.stderr and "GRAPHMEM_STRICT=1" in proc.stderr


def test_unknown_option_is_warned_about():
    proc = run_preloaded({"GRAPHMEM_NO_SUCH_THING": "1"})
    assert proc.returncode == 0
    assert "unknown option GRAPHMEM_NO_SUCH_THING" in proc.stderr


def test_tool_option_is_not_unknown():
    """Knobs of scripts and tests (core/common/tool_options.def) are known names to the library."""
    proc = run_preloaded({"GRAPHMEM_TEST_SEED": "7", "GRAPHMEM_PRINT_CONFIG": "1"})
    assert proc.returncode == 0
    assert "unknown option" not in proc.stderr and "GRAPHMEM_TEST_SEED" not in proc.stderr


def test_print_config_lists_every_library_option():
    proc = run_preloaded({"GRAPHMEM_PRINT_CONFIG": "1"})
    names = [l.split()[1] for l in proc.stderr.splitlines() if l.startswith("graphmem:   GRAPHMEM_")]
    table = subprocess.run([sys.executable, str(ROOT / "scripts" / "options-table")],
                           capture_output=True, text=True).stdout
    expected = [l.split("`")[1] for l in table.splitlines()[2:] if "| tool |" not in l]
    assert names == expected


def test_stats_file_without_pid_is_the_parents(tmp_path):
    """A forked child must not overwrite the parent's statistics file when the path has no %p:
    the parent exits first here, the child later, and the file still holds the parent's pid."""
    stats, child_done = tmp_path / "stats.json", tmp_path / "child_done"
    code = ("import ctypes, os, sys, time\n"
            "try:\n    ctypes.CDLL(None).cuDriverGetVersion\n"
            "except AttributeError:\n    pass\n"
            "if os.fork() == 0:\n"
            "    time.sleep(0.5)\n"
            f"    open({str(child_done)!r}, 'w').close()\n"
            "    sys.exit(0)\n"
            "print(os.getpid())\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update({"LD_PRELOAD": library(), "GRAPHMEM_STATS_FILE": str(stats)})
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    import json
    import time
    for _ in range(100):
        if child_done.exists():
            break
        time.sleep(0.05)
    time.sleep(0.3)  # the child's exit handlers run after it made its mark
    assert child_done.exists()
    assert json.loads(stats.read_text())["pid"] == int(proc.stdout.split()[0])

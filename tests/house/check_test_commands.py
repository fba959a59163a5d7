"""Fails when a CTest command runs Python with another interpreter than GRAPHMEM_PYTHON: a bare
`python3` (or any other python) may lack pytest on a fresh machine. Reads the registered tests
from `ctest --show-only=json-v1`; an argument counts as a Python interpreter when its file name is
python, python3 or python3.N (also as the value of a -DNAME=... argument)."""
import argparse
import json
import os
import re
import subprocess
import sys

PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")


def interpreters(argv):
    for arg in argv:
        value = arg.split("=", 1)[1] if arg.startswith("-D") and "=" in arg else arg
        if PYTHON.match(os.path.basename(value)):
            yield value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", required=True, help="GRAPHMEM_PYTHON")
    ap.add_argument("--ctest", default="ctest")
    args = ap.parse_args()
    shown = subprocess.run([args.ctest, "--show-only=json-v1"], cwd=args.build,
                           capture_output=True, text=True, check=True)
    tests = json.loads(shown.stdout)["tests"]
    bad = []
    for test in tests:
        for interpreter in interpreters(test.get("command", [])):
            if interpreter != args.python:
                bad.append(f"{test['name']}: runs {interpreter!r}, not GRAPHMEM_PYTHON")
    if not os.path.isabs(args.python):
        bad.append(f"GRAPHMEM_PYTHON={args.python!r} is not an absolute path")
    print(f"{len(tests)} tests read, {len(bad)} with another interpreter than {args.python}")
    for line in bad:
        print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

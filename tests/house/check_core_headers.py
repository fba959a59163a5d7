"""Fails when any file of core/ includes a CUDA header, directly or through other headers. Each
core source and header is preprocessed with `-H` (the compiler prints every header it opens) while
the toolkit's include folder is on the search path, so an include of cuda.h would resolve and be
seen; a header from the toolkit folder, or named like one of its headers, is a violation."""
import argparse
import os
import re
import subprocess
import sys

CUDA_NAME = re.compile(r"^(cuda|cudart|cuComplex|driver_types|vector_types|host_defines)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--core", required=True)
    ap.add_argument("--cuda-include", required=True)
    args = ap.parse_args()
    cuda_root = os.path.realpath(args.cuda_include)
    # core/ keeps its files in one folder per layer, each on the include path (core/CMakeLists.txt).
    sources, folders = [], []
    for folder, _dirs, files in sorted(os.walk(args.core)):
        names = sorted(f for f in files if f.endswith((".c", ".h")))
        if names:
            folders.append(folder)
        sources += [os.path.relpath(os.path.join(folder, f), args.core) for f in names]
    includes = [arg for folder in folders for arg in ("-I", folder)]
    bad = []
    for name in sources:
        path = os.path.join(args.core, name)
        lang = ["-x", "c"]
        p = subprocess.run([args.cc, *lang, "-std=c11", "-D_GNU_SOURCE", "-E", "-H", "-o",
                            os.devnull, *includes, "-I", args.cuda_include, path],
                           capture_output=True, text=True)
        if p.returncode != 0:
            bad.append(f"{name}: does not preprocess:\n{p.stderr}")
            continue
        for line in p.stderr.splitlines():
            m = re.match(r"^\.+ (.*)$", line)
            if not m:
                continue
            header = os.path.realpath(m.group(1))
            if header.startswith(cuda_root + os.sep) or CUDA_NAME.match(os.path.basename(header)):
                bad.append(f"{name}: includes {m.group(1)}")
    print(f"{len(sources)} files of core/ preprocessed, {len(bad)} CUDA includes")
    for line in bad:
        print("  " + line)
    return 1 if bad or not sources else 0


if __name__ == "__main__":
    sys.exit(main())

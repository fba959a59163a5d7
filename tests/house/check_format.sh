#!/usr/bin/env bash
# clang-format --dry-run -Werror over every tracked C, header and CUDA file of the repository
# (every such file under the repository when it is not a git checkout). Exit 77 (skip) without
# clang-format.
set -uo pipefail
repo="$1"
cd "$repo" || exit 1
if ! command -v clang-format >/dev/null; then
    echo "SKIP clang-format is not installed"
    exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cu' '*.cuh')
else
    mapfile -t files < <(find . -path ./build -prune -o -type f \( -name '*.c' -o -name '*.h' \
        -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
echo "$(clang-format --version): ${#files[@]} files"
clang-format --dry-run -Werror "${files[@]}"

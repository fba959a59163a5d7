#!/bin/sh
# dlsym answers as glibc gives them to the caller: the scope program's lines must be the same
# natively, with libgraphmem.so preloaded and disabled, and preloaded and active (the routing mock
# as the driver).
set -u
program=$1 lib=$2 graphmem=$3 mock_dir=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {
    name=$1; shift
    env LD_LIBRARY_PATH="$mock_dir" "$@" "$program" "$lib" >"$out/$name" 2>"$out/$name.err" ||
        { echo "FAIL: $name run exited $?"; cat "$out/$name.err"; exit 1; }
}
run native
run disabled GRAPHMEM_DISABLE=1 LD_PRELOAD="$graphmem"
run active LD_PRELOAD="$graphmem"
fail=0
for mode in disabled active; do
    if ! diff -u "$out/native" "$out/$mode"; then
        echo "FAIL: dlsym answers differ from native with graphmem $mode"; fail=1
    fi
done
# The program must have seen the cases that need the caller's scope, or the test proves nothing.
grep -qx 'lib RTLD_DEFAULT gm_scope_lib_probe -> libgm_scope_lib.so' "$out/native" &&
    grep -qx 'lib RTLD_DEFAULT cuDriverGetVersion -> libcuda.so.1' "$out/native" &&
    grep -qx 'main RTLD_NEXT gm_scope_lib_probe -> NULL' "$out/native" ||
    { echo "FAIL: native answers are not the scoped ones this test relies on:"; cat "$out/native"; fail=1; }
[ $fail -eq 0 ] && echo "dlsym scope OK ($(wc -l <"$out/native") lookups equal native, disabled, active)"
exit $fail

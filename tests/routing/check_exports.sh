#!/bin/sh
# Static checks on libgraphmem.so: it exports only cu[A-Z]* and dlsym, has no DT_NEEDED on
# libcuda, and no constructors beyond what the toolchain puts in an empty library built the same
# way (given as the second argument).
set -u
lib=$1
empty=$2
fail=0

bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -E '^(cu[A-Z][A-Za-z0-9_]*|dlsym)$')
if [ -n "$bad" ]; then
    echo "FAIL: exports other than cu[A-Z]* and dlsym:"; echo "$bad"; fail=1
fi
nm -D --defined-only "$lib" | awk '{print $3}' | grep -qx dlsym || { echo "FAIL: dlsym not exported"; fail=1; }

if readelf -d "$lib" | grep NEEDED | grep -q 'libcuda'; then
    echo "FAIL: DT_NEEDED on libcuda:"; readelf -d "$lib" | grep NEEDED; fail=1
fi

# Constructors: DT_INIT is the toolchain's _init in both; the .init_array must be no longer than
# the empty library's (frame_dummy only).
init_array_size() {
    readelf -d "$1" | awk '/INIT_ARRAYSZ/ {print $3}'
}
has_preinit() {
    readelf -d "$1" | grep -c PREINIT_ARRAY
}
ours=$(init_array_size "$lib"); theirs=$(init_array_size "$empty")
if [ "${ours:-0}" != "${theirs:-0}" ]; then
    echo "FAIL: .init_array is ${ours:-0} bytes, an empty library's is ${theirs:-0}: a constructor"; fail=1
fi
if [ "$(has_preinit "$lib")" != "0" ]; then
    echo "FAIL: PREINIT_ARRAY present"; fail=1
fi
if readelf -d "$lib" | grep -q '(INIT)' && ! readelf -d "$empty" | grep -q '(INIT)'; then
    echo "FAIL: DT_INIT present, an empty library has none"; fail=1
fi
[ $fail -eq 0 ] && echo "exports, DT_NEEDED and constructors OK ($(nm -D --defined-only "$lib" | wc -l) exports)"
exit $fail

#!/usr/bin/env bash
set -u
cmake -S .old/prof -B /tmp/profb -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHMEM_BUILD_TESTS=OFF -DGRAPHMEM_BUILD_BENCH=OFF >/tmp/p.log 2>&1 && cmake --build /tmp/profb -j16 --target graphmem >>/tmp/p.log 2>&1 || tail /tmp/p.log
nvcc -O2 -o /tmp/ex .old/extra.cu || exit 1
for i in 1 2 3; do
  echo "native: $(taskset -c 6 /tmp/ex)"
  LD_PRELOAD=/tmp/profb/shim/libgraphmem.so taskset -c 6 /tmp/ex 2>&1
done | tee $OUT/prof.txt

#!/usr/bin/env bash
# temporary: one device call
set -u
start=$(date +%s)
(cmake -S .old -B /tmp/old -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHMEM_BUILD_TESTS=OFF -DGRAPHMEM_BUILD_BENCH=OFF >/tmp/old.log 2>&1 && cmake --build /tmp/old -j16 --target graphmem >>/tmp/old.log 2>&1) &
oldpid=$!
GRAPHMEM_GPU_STEPS="test conformance" GRAPHMEM_CONFORMANCE_MARKS="slow or not slow" scripts/gpu-check /tmp/check > /tmp/check.out 2>&1
wait $oldpid
grep -E "tests passed|Failed|FAILED|Total Test" /tmp/check/test.log | tail -12 > $OUT/summary.txt
grep -E "passed|failed|FAILED|ERROR" /tmp/check/conformance.log | tail -15 >> $OUT/summary.txt
grep -E "deferred_fence|capture_isolation|threads_launch|trim_race" /tmp/check/conformance.log | head >> $OUT/summary.txt
echo "elapsed $(( $(date +%s) - start ))" >> $OUT/summary.txt
cp /tmp/check/conformance.log $OUT/conformance.log
for i in 1; do
  python3 bench/run-gpu --reps 5 --only 'launch|calls' --build build-gpu > $OUT/bench_new.txt 2>&1
  python3 bench/run-gpu --reps 5 --only 'launch|calls' --build build-gpu --lib /tmp/old/shim/libgraphmem.so > $OUT/bench_old.txt 2>&1
  GRAPHMEM_EAGER_FENCES=1 python3 bench/run-gpu --reps 5 --only 'launch' --build build-gpu > $OUT/bench_eager.txt 2>&1
done
echo "elapsed $(( $(date +%s) - start ))" >> $OUT/summary.txt
cat $OUT/summary.txt
grep -E "launch_|alloc_free|is_capt" $OUT/bench_new.txt $OUT/bench_old.txt $OUT/bench_eager.txt

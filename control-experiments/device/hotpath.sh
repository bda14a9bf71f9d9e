#!/usr/bin/env bash
# Hot-path cost on the H200 machine, one call: the shim's added ns per intercepted call (levels 4 and 2)
# (0) the floor: ns per rdtsc, per clock_gettime and per atomic fetch-add on this CPU (bench/clocks.c);
# (1) on the driver double (ci/build/hotpath, cuStreamQuery with no GPU behind it: the CPU cost alone),
#     with the default ring (1 GiB here, drop), a 16 MiB ring (overwrite: stays in the last-level
#     cache) and with CAUSEWAY_CLOCK=monotonic;
# (2) on the real cudaStreamQuery of an idle stream (query_bench, static cudart, so the hook is the
#     driver's cuStreamQuery). All arms interleave bare / level 4 / level 2 rounds (bench/hotpath.sh).
# Needs .carry/libcauseway.so (built off the machine). Writes $OUT/hotpath.txt.
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
export SHIM=$PWD/.carry/libcauseway.so
{
  echo "date: $(date -u +%FT%TZ)"; nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'
  grep -o -w -E 'constant_tsc|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  echo "== (0) clocks: gcc -O2 bench/clocks.c"
  gcc -O2 -o /tmp/clocks bench/clocks.c && /tmp/clocks
  make -s -C ci build/hotpath NVTX_INC=/usr/local/cuda/include
  echo "== (1a) driver double, cuStreamQuery, CPU only: bench/hotpath.sh 9 1000000"
  bench/hotpath.sh 9 1000000
  echo "== (1b) the same with a 16 MiB ring, policy overwrite"
  BENCH_RING_MB=16 BENCH_POLICY=overwrite bench/hotpath.sh 9 1000000
  echo "== (1c) the same with CAUSEWAY_CLOCK=monotonic"
  CAUSEWAY_CLOCK=monotonic bench/hotpath.sh 5 1000000
  echo "== (2) real cudaStreamQuery on the H200: BENCH_CMD=query_bench bench/hotpath.sh 11 200000"
  nvcc -O2 -arch=sm_90 -o /tmp/query_bench control-experiments/workloads/query_bench.cu &&
    BENCH_CMD=/tmp/query_bench bench/hotpath.sh 11 200000
} 2>&1 | tee "$OUT/hotpath.txt"

#!/usr/bin/env bash
# Hot-path cost on the H200 machine, one call: the shim's added ns per intercepted call (levels 4 and 2)
# (1) on the driver double (ci/build/hotpath, cuStreamQuery with no GPU behind it: the CPU cost alone),
# (2) on the real cudaStreamQuery of an idle stream (query_bench, static cudart, so the hook is the
#     driver's cuStreamQuery). Both interleave bare / level 4 / level 2 rounds (bench/hotpath.sh).
# Needs .carry/libcauseway.so (built off the machine). Writes $OUT/hotpath.txt.
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
export SHIM=$PWD/.carry/libcauseway.so
{
  echo "date: $(date -u +%FT%TZ)"; nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-160
  grep -o -w -E 'constant_tsc|nonstop_tsc' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  echo "== (1) driver double, cuStreamQuery, CPU only: bench/hotpath.sh 11 1000000"
  make -s -C ci build/hotpath NVTX_INC=/usr/local/cuda/include && bench/hotpath.sh 11 1000000
  echo "== (2) real cudaStreamQuery on the H200: BENCH_CMD=query_bench bench/hotpath.sh 15 200000"
  nvcc -O2 -arch=sm_90 -o /tmp/query_bench control-experiments/workloads/query_bench.cu &&
    BENCH_CMD=/tmp/query_bench bench/hotpath.sh 15 200000
} 2>&1 | tee "$OUT/hotpath.txt"

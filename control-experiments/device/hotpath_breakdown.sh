#!/usr/bin/env bash
# Where a recorded call's time goes (issue 26, item 1), on the H200 machine's CPU:
# (0) the floor: ns per rdtsc, clock_gettime and uncontended atomic add (bench/clocks.c);
# (1) added ns per cuStreamQuery on the driver double, bare / level 4 (recorded) / level 2 (hooked,
#     not recorded) / level 4 with a full ring (every entry counted as dropped), interleaved
#     (bench/hotpath.sh; the full-ring arm: a 1 MiB drop ring the first 16 384 calls fill);
# (2) if perf is present: cycles and instructions per call of each arm (perf stat), and the level-4
#     arm's profile by symbol (perf record; .carry/libcauseway-sym.so keeps its symbol table).
# Needs .carry/libcauseway-sym.so (release build, `strip --strip-debug`). Writes $OUT/breakdown.txt.
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
export SHIM=$PWD/.carry/libcauseway-sym.so
export LD_LIBRARY_PATH=$PWD/ci/build
N=2000000
{
  echo "date: $(date -u +%FT%TZ)"; lscpu | grep -E 'Model name|^CPU\(s\)|Hypervisor'
  echo "perf: $(command -v perf || echo none)"
  echo "== (0) clocks"
  gcc -O2 -o /tmp/clocks bench/clocks.c && /tmp/clocks
  make -s -C ci build/hotpath NVTX_INC=/usr/local/cuda/include
  echo "== (1) bench/hotpath.sh 9 $N (default 1 GiB drop ring)"
  bench/hotpath.sh 9 "$N"
  echo "== (1b) ring full: 1 MiB drop ring (every entry after the first 16 384 dropped and counted)"
  BENCH_RING_MB=1 bench/hotpath.sh 9 "$N"
  if command -v perf > /dev/null; then
    cap=$(mktemp -d)
    arm() { # name level ring_mb
      if [ "$2" = 0 ]; then
        perf stat -x, -e cycles,instructions ci/build/hotpath "$N" 3 2>&1 > /dev/null
      else
        LD_PRELOAD=$SHIM CAUSEWAY_OUT=$cap CAUSEWAY_LEVEL=$2 CAUSEWAY_RING_MB=$3 \
          perf stat -x, -e cycles,instructions ci/build/hotpath "$N" 3 2>&1 > /dev/null
      fi | awk -F, -v arm="$1" -v n="$((N * 3))" '$3 ~ /cycles|instructions/ {printf "%s %s per call: %.1f\n", arm, $3, $1 / n}'
      rm -f "$cap"/*.cwring
    }
    echo "== (2) perf stat, per call (whole process ÷ calls; bare includes the double's own work)"
    for r in 1 2 3; do arm bare 0 0; arm level4 4 1024; arm level2 2 1024; arm level4-full 4 1; done
    echo "== (2b) perf record, level 4: top symbols (self)"
    LD_PRELOAD=$SHIM CAUSEWAY_OUT=$cap CAUSEWAY_LEVEL=4 CAUSEWAY_RING_MB=1024 \
      perf record -q -o /tmp/l4.data ci/build/hotpath "$N" 3 > /dev/null 2>&1
    perf report -i /tmp/l4.data --no-children --sort dso,sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -30
    echo "== (2c) perf annotate of the hottest shim symbol"
    sym=$(perf report -i /tmp/l4.data --no-children --sort sym --stdio --dsos libcauseway-sym.so 2>/dev/null | grep -v "^#" | grep -v "^$" | head -1 | sed 's/.*\] //')
    echo "symbol: $sym"
    perf annotate -i /tmp/l4.data --stdio -s "$sym" 2>/dev/null | grep -v "^\s*0.00 :" | sort -t: -k1 -rn | head -40
  fi
} 2>&1 | tee "$OUT/breakdown.txt"

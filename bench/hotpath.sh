#!/usr/bin/env bash
# Hot-path benchmark on the CPU: nanoseconds the shim adds to one intercepted call.
# Runs ci/build/hotpath (1e6 cuStreamQuery calls on the driver double, 7 timed reps per run) bare and
# under the release shim at level 4 (recorded) and level 2 (hooked but not recorded), interleaved
# bare, L4, L2, bare, L4, L2, … so drift hits every arm alike. Prints min/median/max per arm and the
# added ns per call (arm − bare of the same round). Usage: bench/hotpath.sh [ROUNDS] [CALLS]
# Environment: SHIM=path uses a prebuilt shim (no cargo, e.g. on the GPU machine); BENCH_CMD=program
# times another program that takes CALLS REPEATS and prints "ns_per_call=X" or "repeat i: X ns/call"
# lines (control-experiments/workloads/query_bench.cu: cudaStreamQuery on a real GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
calls=${2:-1000000}
if [ -z "${SHIM:-}" ]; then
  cargo build --release -q -p causeway-shim
  SHIM=$(pwd)/target/release/libcauseway.so
fi
shim=$(realpath "$SHIM")
if [ -z "${BENCH_CMD:-}" ]; then
  make -s -C ci build/hotpath
  BENCH_CMD=ci/build/hotpath
  export LD_LIBRARY_PATH=ci/build # the driver double; a real program must find the real driver
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # arm level
  if [ "$1" = bare ]; then
    "$BENCH_CMD" "$calls" 7
  else
    LD_PRELOAD="$shim" CAUSEWAY_OUT="$out" CAUSEWAY_LEVEL="$2" CAUSEWAY_RING_MB="${BENCH_RING_MB:-1024}" CAUSEWAY_POLICY="${BENCH_POLICY:-drop}" \
      "$BENCH_CMD" "$calls" 7
  fi | sed -nE 's/^ns_per_call=([0-9.]+)$/\1/p; s/^repeat [0-9]+: ([0-9.]+) ns\/call.*/\1/p' |
    sort -n | sed -n 4p # median of the 7 reps
}
for r in $(seq "$rounds"); do
  echo "bare $(run bare)"
  echo "level4 $(run shim 4)"
  echo "level2 $(run shim 2)"
  rm -f "$out"/*.cwring
done | python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin]
arms = {}
for arm, v in rows: arms.setdefault(arm, []).append(float(v))
bare = arms["bare"]
print(f"rounds={len(bare)} (each value: median of 7 reps of {sys.argv[1]} calls)")
print("arm           min   median      max   ns per call")
for arm, vs in arms.items():
    print(f"{arm:8} {min(vs):8.2f} {st.median(vs):8.2f} {max(vs):8.2f}")
for arm in ("level4", "level2"):
    added = [a - b for a, b in zip(arms[arm], bare)]
    print(f"added by {arm}: min {min(added):.2f}  median {st.median(added):.2f}  max {max(added):.2f} ns/call;"
          f"  ratio to bare (median) {st.median(arms[arm]) / st.median(bare):.2f}")
print("raw:", {k: [round(x, 2) for x in v] for k, v in arms.items()})
' "$calls"

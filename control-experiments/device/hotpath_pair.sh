#!/usr/bin/env bash
# hotpath_pair.sh: two builds of the shim on the hot path, in the same rounds (issue 26): each round
# runs bare, then A and B at level 2 (hooked, not recorded) and at level 4 (recorded), the order of A
# and B alternating by round; each value is the median of 7 repetitions of CALLS `cuStreamQuery`
# calls on the driver double (ci/build/hotpath, as bench/hotpath.sh runs it). Prints min / median /
# max per arm, added ns (arm − bare of the same round) and B − A of the same round.
#     SHIM_A=.carry/libcauseway-base.so SHIM_B=.carry/libcauseway.so OUT=$OUT \
#       bash control-experiments/device/hotpath_pair.sh [ROUNDS=11] [CALLS=1000000]
# PIN=CPU runs every arm on that one CPU (taskset). Needs gcc (builds the double); no GPU, no cargo. Raw values go to $OUT/hotpath_pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${SHIM_A:?set SHIM_A}" "${SHIM_B:?set SHIM_B}" "${OUT:?set OUT}"
rounds=${1:-11}
calls=${2:-1000000}
A=$(realpath "$SHIM_A") B=$(realpath "$SHIM_B")
make -s -C ci build/hotpath NVTX_INC="${NVTX_INC:-/usr/local/cuda/include}"
export LD_LIBRARY_PATH=$PWD/ci/build
cap=$(mktemp -d)
trap 'rm -rf "$cap"' EXIT
pin=()
[ -n "${PIN:-}" ] && pin=(taskset -c "$PIN")
one() { # shim level  -> median ns per call of 7 repetitions
  if [ "$1" = none ]; then
    "${pin[@]}" ci/build/hotpath "$calls" 7
  else
    LD_PRELOAD=$1 CAUSEWAY_OUT=$cap CAUSEWAY_LEVEL=$2 CAUSEWAY_RING_MB=1024 CAUSEWAY_POLICY=drop \
      "${pin[@]}" ci/build/hotpath "$calls" 7
  fi | sed -nE 's/^ns_per_call=([0-9.]+)$/\1/p' | sort -n | sed -n 4p
  rm -f "$cap"/*.cwring
}
{
  echo "date: $(date -u +%FT%TZ); $(lscpu | grep 'Model name' | sed 's/  */ /g')"
  echo "pin: ${PIN:-none}; calls: $calls"; echo "A: $SHIM_A ($(sha256sum "$A" | cut -c1-12)); B: $SHIM_B ($(sha256sum "$B" | cut -c1-12))"
  for r in $(seq "$rounds"); do
    echo "$r bare $(one none 0)"
    if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
    for lv in 2 4; do
      for s in $order; do
        if [ "$s" = A ]; then so=$A; else so=$B; fi
        echo "$r $s$lv $(one "$so" "$lv")"
      done
    done
  done
} | tee "$OUT/hotpath_pair.txt" | python3 -c '
import sys, statistics as st
rounds = {}
for line in sys.stdin:
    print(line, end="", file=sys.stderr)
    p = line.split()
    if len(p) == 3 and p[0].isdigit():
        rounds.setdefault(p[0], {})[p[1]] = float(p[2])
rs = list(rounds.values())
def mmm(v): return f"{min(v):7.2f} {st.median(v):7.2f} {max(v):7.2f}"
print(f"rounds: {len(rs)}; ns per call: min median max")
for arm in ("bare", "A2", "B2", "A4", "B4"):
    print(f"{arm:5} {mmm([r[arm] for r in rs])}" + ("" if arm == "bare" else f"   added: {mmm([r[arm] - r['"'"'bare'"'"'] for r in rs])}"))
for lv in "24":
    print(f"B{lv} - A{lv} (same round): {mmm([r['"'"'B'"'"' + lv] - r['"'"'A'"'"' + lv] for r in rs])}")
'

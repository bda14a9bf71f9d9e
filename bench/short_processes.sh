#!/usr/bin/env bash
# short_processes.sh: what recording costs a program that starts many short processes (a shell
# script, a pyenv shim, a build): `sh -c 'for i in 1..N; do /bin/true; done'` bare and under
# `causeway record --level 2`, paired by round, ROUNDS rounds (arms alternating). Prints per arm
# min / median / max wall seconds and the added milliseconds per process (recorded − bare, per round).
#     bash bench/short_processes.sh [CAUSEWAY]      # default target/release/causeway
# Knobs: N (200 processes), ROUNDS (7), OUT (a scratch directory for the captures), RING_MB (4; empty
# for record's default), CMD (a command line to run instead of the loop, e.g. CMD='python3 -c pass' for a
# pyenv shim; the processes per run are then counted from the rings of the first recorded run).
set -euo pipefail
cw=${1:-target/release/causeway}
N=${N:-200}
ROUNDS=${ROUNDS:-7}
RING_MB=${RING_MB-4}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/cw-short.XXXXXX")}
script=${CMD:-"for i in \$(seq $N); do /bin/true; done"}
ring=()
[ -n "$RING_MB" ] && ring=(--ring-mb "$RING_MB")
now() { date +%s.%N; }
bare=() rec=()
for r in $(seq "$ROUNDS"); do
  t0=$(now); sh -c "$script"; t1=$(now)
  "$cw" record --level 2 "${ring[@]}" --out "$out" -- sh -c "$script" 2> /dev/null; t2=$(now)
  bare+=("$(echo "$t1 - $t0" | bc -l)")
  rec+=("$(echo "$t2 - $t1" | bc -l)")
  [ -n "${CMD:-}" ] && [ "$r" = 1 ] && N=$(find "$out" -name '*.cwring' | wc -l)
  rm -rf "${out:?}"/cw-*
done
python3 - "$N" "${bare[*]}" "${rec[*]}" << 'PY'
import statistics, sys
n = int(sys.argv[1])
bare = [float(x) for x in sys.argv[2].split()]
rec = [float(x) for x in sys.argv[3].split()]
def s(v): return f"{min(v):.3f} / {statistics.median(v):.3f} / {max(v):.3f}"
print(f"{n} processes per run, {len(bare)} rounds (min / median / max, seconds)")
print(f"  bare      {s(bare)}")
print(f"  recorded  {s(rec)}")
added = [1000 * (r - b) / n for b, r in zip(bare, rec)]
print(f"  added per process (ms): {min(added):.2f} / {statistics.median(added):.2f} / {max(added):.2f}")
print(f"  ratio recorded / bare: {s([r / b for b, r in zip(bare, rec)])}")
PY

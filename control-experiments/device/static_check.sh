#!/usr/bin/env bash
# Level 3 with a statically linked cudart (nvcc's default): spine_prog built -cudart=static (and
# --default-stream per-thread) under `causeway record --level 3 --backend cupti`; prints the device
# association summary. Needs .carry/causeway and .carry/libcauseway.so. Writes $OUT/static-check.txt.
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
w=$(mktemp -d)
{
  nvcc -O2 -arch=sm_90 -cudart=static -o "$w/static" control-experiments/workloads/spine_prog.cu &&
    nvcc -O2 -arch=sm_90 -cudart=static --default-stream per-thread -o "$w/perthread" control-experiments/workloads/spine_prog.cu
  for p in static perthread; do
    timeout 120 .carry/causeway record --level 3 --backend cupti --out "$w/cap-$p" -- "$w/$p" > "$w/$p.out" 2> "$w/$p.err"
    echo "== $p: exit $? $(grep -c . "$w/$p.out") lines of output"
    cap=$(sed -n 's/^causeway: capture written to //p' "$w/$p.err" | tail -n 1)
    .carry/causeway report "$cap" 2>&1 | grep -E "^capture|intervals:|causality|clock:|launches  direct" -A0
    .carry/causeway report --json "$cap" | python3 -c '
import json, sys
r = json.load(sys.stdin); d = r["device"]
print("device intervals", d["intervals"], "associated", d["associated"], "unassociated", d["unassociated"], "dropped", d["dropped"])
print("kernels (launches, device_count):", [(k["name"][:28], k["launches"], k.get("device_count")) for k in r["kernels"]])'
  done
} 2>&1 | tee "$OUT/static-check.txt"

#!/usr/bin/env bash
# CUPTI's latency timestamps on the H200 (issue 23): (1) whether kernels carry queued and submitted
# times (why_cases.cu recorded at level 3, exported as the causal graph), and `why`'s phases;
# (2) what collecting them costs: the tiny-op loop (control-experiments/workloads/tiny_loop.py) bare,
# under the shim before the change (.carry/before/libcauseway.so, no latency timestamps) and after
# (.carry/libcauseway.so), level 3 CUPTI, ROUNDS interleaved rounds. Writes $OUT/latency.txt.
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
CW=$PWD/.carry/causeway
W=$(mktemp -d)
{
  echo "date: $(date -u +%FT%TZ) $(nvidia-smi -L | head -n 1)"
  /usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -cudart=shared -o "$W/why_cases" control-experiments/workloads/why_cases.cu
  "$CW" record --level 3 --out "$W/caps" -- "$W/why_cases" > /dev/null 2>&1
  cap=$(ls -d "$W"/caps/cw-* | head -n 1)
  "$CW" export --format graph --force -o "$W/g.json" "$cap" 2> /dev/null
  python3 - "$W/g.json" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ks = [s for p in d["processes"] for s in p["device"] if s["kind"] == "kernel"]
with_lat = [k for k in ks if "queued_ns" in k]
ordered = [k for k in with_lat if k["queued_ns"] <= k["submitted_ns"] <= k["begin_ns"]]
print(f"(1) kernels: {len(ks)}, with queued/submitted: {len(with_lat)}, in order: {len(ordered)}")
for k in with_lat[:3]:
    print(f"    {k['name'][:30]:30} queued->submitted {k['submitted_ns'] - k['queued_ns']} ns, "
          f"submitted->start {k['begin_ns'] - k['submitted_ns']} ns")
PY
  "$CW" why --kernel d_consumer "$cap" 2>&1 | grep phases
  echo "(2) tiny loop, level 3 CUPTI: us/op (median of 3 reps), rounds interleaved"
  for r in $(seq "$ROUNDS"); do
    for arm in bare before after; do
      case $arm in
        bare) env=() ;;
        before) env=(LD_PRELOAD=$PWD/.carry/before/libcauseway.so CAUSEWAY_OUT=$W CAUSEWAY_LEVEL=3) ;;
        after) env=(LD_PRELOAD=$PWD/.carry/libcauseway.so CAUSEWAY_OUT=$W CAUSEWAY_LEVEL=3) ;;
      esac
      v=$(env "${env[@]}" python3 control-experiments/workloads/tiny_loop.py --n 20000 --reps 3 2>/dev/null |
        sed -n 's/^result: tiny_us_per_op=//p')
      echo "$arm $v"
      rm -f "$W"/*.cwring
    done
  done | python3 -c '
import sys, statistics as st
arms = {}
for l in sys.stdin:
    a, v = l.split(); arms.setdefault(a, []).append(float(v))
for a, vs in arms.items():
    print(f"    {a:7} min {min(vs):.3f} median {st.median(vs):.3f} max {max(vs):.3f} us/op  {vs}")
for a in ("before", "after"):
    d = [x - b for x, b in zip(arms[a], arms["bare"])]
    print(f"    added by {a}: min {min(d):.3f} median {st.median(d):.3f} max {max(d):.3f} us/op")
d = [x - b for x, b in zip(arms["after"], arms["before"])]
print(f"    after - before: min {min(d):.3f} median {st.median(d):.3f} max {max(d):.3f} us/op")
'
} 2>&1 | tee "$OUT/latency.txt"

#!/usr/bin/env bash
# cupti_sample.sh: level 3 CUPTI with --sample N on the H200 (issue 26, item 3's cheaper mode) — is
# what a sampled capture holds exact, and what does it cost on the tiny-op loop?
#  1. workloads/launch_loop.cu (20 000 empty kernels, no NVTX ranges) under `--sample 16`: device
#     intervals against launches, nothing unassociated, and the timed launches in runs of 64 (CUPTI's
#     call windows), read back from the timeline (`causeway export --format chrome`).
#  2. the same loop at level 3 without --sample: every launch's kernel interval, none unassociated.
#  3. l3cost.sh with ARMS="bare profiler l3cupti l3cupti16", ROUNDS (default 9) rounds.
#     OUT=/some/dir bash control-experiments/device/cupti_sample.sh
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-sample.XXXXXX")
"$CUDA_HOME/bin/nvcc" -O2 -arch=sm_90 -cudart=shared -o "$WORK/launch_loop" "$WL/launch_loop.cu" || exit 2
"$CW" record --level 3 --sample 16 --out "$WORK/cap" -- "$WORK/launch_loop" 20000 1 > "$OUT/sample-run.txt" 2>&1
"$CW" report --json "$WORK/cap" > "$WORK/r.json"
"$CW" report "$WORK/cap" | grep -E '^(intervals|sampled)' | tee "$OUT/sample-report.txt"
"$CW" export --format chrome --force -o "$WORK/t.json" "$WORK/cap" > /dev/null
python3 - "$WORK/r.json" "$WORK/t.json" << 'PY' | tee "$OUT/sample-check.txt"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["device"]
launches = sum(a["calls"] for a in r["apis"] if a["name"] == "cudaLaunchKernel")
print(f"launches {launches}, device intervals {d['intervals']}, unassociated {d['unassociated']['total']}, "
      f"sample_every {r['processes'][0]['sample_every']}")
ev = json.load(open(sys.argv[2]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
calls = sorted((e["args"]["seq"], e["name"]) for e in ev
               if e.get("ph") == "X" and e.get("name") == "cudaLaunchKernel" and "seq" in e.get("args", {}))
timed = {e["args"].get("call_seq") for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"}
runs, run = [], 0
for seq, _ in calls + [(None, None)]:
    if seq is not None and seq in timed:
        run += 1
    elif run:
        runs.append(run)
        run = 0
print(f"timed launches {sum(runs)} in {len(runs)} runs; run lengths min {min(runs) if runs else 0} "
      f"max {max(runs) if runs else 0}; runs of 64: {sum(1 for x in runs if x == 64)}")
print("sample_check:", "PASS" if d["unassociated"]["total"] == 0 and runs and max(runs) <= 64 else "FAIL")
PY
# The default (every kernel) after the change: every launch has its interval, none unassociated.
"$CW" record --level 3 --out "$WORK/full" -- "$WORK/launch_loop" 20000 1 > "$OUT/full-run.txt" 2>&1
"$CW" report --json "$WORK/full" > "$WORK/full.json"
python3 - "$WORK/full.json" << 'PY' | tee -a "$OUT/sample-check.txt"
import json, sys
r = json.load(open(sys.argv[1]))
d = r["device"]
n = sum(a["calls"] for a in r["apis"] if a["name"] == "cudaLaunchKernel")
k = sum(x["count"] for x in d["kernels"])
u = d["unassociated"]["total"]
print(f"full: launches {n}, kernel intervals {k}, unassociated {u}:", "PASS" if n == k and u == 0 else "FAIL")
PY
SPINE=0 ROUNDS=${ROUNDS:-9} ARMS="bare profiler l3cupti l3cupti16" L3COST_BUDGET_S=${L3COST_BUDGET_S:-400} \
  bash "$REPO/control-experiments/device/l3cost.sh" > "$OUT/l3cost.stdout" 2>&1
cat "$OUT/l3cost-summary.txt"

#!/usr/bin/env bash
# coverage.sh: the generated hook tables (issue 22) on an H200 machine, in one call.
#
#     OUT=/some/dir bash control-experiments/device/coverage.sh
#
# Needs the prebuilt .carry/causeway and .carry/libcauseway.so (release, built on the CPU machine).
#   1. builds control-experiments/workloads/newer_apis.cu (batch copy, stream memory operations, a
#      context event, a prefetch, a 3D memset, a graph upload, a host function) with shared and with
#      static cudart and runs each bare, then under `causeway record`: shared at level 3 (CUPTI), level
#      3 with timing events on every call, and level 4; static at level 3 (CUPTI) and level 4;
#      coverage_check.py checks each report (names, classes, untraced lookups, association, kernel
#      executions) against the bare run;
#   2. runs spine.sh (kernel counts against a CUPTI reference for static cudart, per-thread streams and
#      PyTorch) with the rest of the time budget, and lists the PyTorch capture's untraced lookups;
#   3. when .carry/before/libcauseway.so is there (the shim before a change), bench/hotpath.sh for it
#      and for .carry/libcauseway.so, alternating, 3 times each: the hot path before and after.
# Files in $OUT: coverage.log, coverage-summary.txt, newer-apis.tar.gz (reports and outputs), spine/.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW="$REPO/.carry/causeway"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/coverage.log"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-coverage.XXXXXX")
say() { echo "$*" | tee -a "$LOG"; }
status=0
say "== $(date -u +%FT%TZ) $(nvidia-smi -L 2> /dev/null | head -n 1)"
say "== nvcc: $("$CUDA_HOME/bin/nvcc" --version | tail -n 1)"
for link in shared static; do
  "$CUDA_HOME/bin/nvcc" -O2 -arch=sm_90 -cudart=$link -o "$WORK/newer_apis-$link" "$WL/newer_apis.cu" -lcuda \
    >> "$LOG" 2>&1 || { say "FAIL: nvcc -cudart=$link newer_apis.cu"; exit 1; }
  "$WORK/newer_apis-$link" > "$WORK/bare-$link.out" 2> "$WORK/bare-$link.err"
  echo $? > "$WORK/bare-$link.rc"
  say "bare ($link cudart): exit $(cat "$WORK/bare-$link.rc"), $(grep checksum= "$WORK/bare-$link.out")"
done
arms=()
# run_arm NAME LEVEL LINK BACKEND [record options]
run_arm() {
  local name=$1 level=$2 link=$3 backend=$4
  shift 4
  rm -rf "$WORK/caps-$name"
  timeout 120 "$CW" record --level "$level" "$@" --out "$WORK/caps-$name" -- "$WORK/newer_apis-$link" \
    > "$WORK/$name.out" 2> "$WORK/$name.err"
  echo $? > "$WORK/$name.rc"
  local cap
  cap=$(ls -d "$WORK/caps-$name"/cw-* | head -n 1)
  timeout 60 "$CW" report --json "$cap" > "$WORK/$name.json" 2>> "$WORK/$name.err"
  timeout 60 "$CW" report "$cap" > "$WORK/$name.report.txt" 2>> "$WORK/$name.err"
  arms+=("$name:$level:$link:$backend")
}
run_arm l3-cupti 3 shared cupti
run_arm l3-events 3 shared events --backend events --sample 1
run_arm l4 4 shared none
run_arm static-l3 3 static cupti
run_arm static-l4 4 static none
python3 "$DEV/coverage_check.py" "$WORK" "${arms[@]}" 2>&1 | tee "$OUT/coverage-summary.txt" | tee -a "$LOG"
[[ ${PIPESTATUS[0]} == 0 ]] || status=1
tar -czf "$OUT/newer-apis.tar.gz" -C "$WORK" $(cd "$WORK" && ls *.out *.err *.rc *.json *.txt) 2>> "$LOG"
say "== spine.sh (kernel counts against CUPTI under the generated tables)"
OUT="$OUT/spine" SPINE_BUDGET_S=${SPINE_BUDGET_S:-420} bash "$DEV/spine.sh" >> "$LOG" 2>&1 || status=1
cat "$OUT/spine/summary.md" 2> /dev/null | head -n 40 | tee -a "$OUT/coverage-summary.txt"
if tar -xzf "$OUT/spine/artifacts.tar.gz" -C "$WORK" ./torch.causeway.json 2> /dev/null; then
  python3 - "$WORK/torch.causeway.json" << 'PY' | tee -a "$OUT/coverage-summary.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print("torch untraced lookups:", r.get("unmatched_lookups", []))
layers = {}
for a in r["apis"]:
    layers[a["layer"]] = layers.get(a["layer"], 0) + 1
print("torch distinct APIs recorded per layer:", layers)
PY
fi
if [[ -f $REPO/.carry/before/libcauseway.so ]]; then
  say "== hot path before/after (bench/hotpath.sh, 5 rounds each, alternating)"
  for p in 1 2 3; do
    for arm in before after; do
      shim="$REPO/.carry/libcauseway.so"
      [[ $arm == before ]] && shim="$REPO/.carry/before/libcauseway.so"
      SHIM=$shim bash "$REPO/bench/hotpath.sh" 5 1000000 2>&1 | grep -E '^(added by|bare )' |
        sed "s/^/pair $p $arm: /" | tee -a "$OUT/coverage-summary.txt" | tee -a "$LOG"
    done
  done
fi
say "== coverage.sh done in ${SECONDS}s: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
exit $status

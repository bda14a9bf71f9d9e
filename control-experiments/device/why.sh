#!/usr/bin/env bash
# why.sh: `causeway why` on the H200 against causes injected at known places (issue 23).
#
#     OUT=/some/dir bash control-experiments/device/why.sh
#
# Needs the prebuilt .carry/causeway and .carry/libcauseway.so. Builds
# control-experiments/workloads/why_cases.cu (shared cudart), runs it bare and under `causeway record
# --level 3` with CUPTI and with timing events (--sample 1), and once more in its lossy mode with a
# 1 MiB overwrite ring; asks `causeway why --kernel NAME --json` for each injected case; why_check.py
# checks the causes (host sleep, cross-stream event wait, a device hog, a reused event handle, a lost
# record). Files in $OUT: why.log, why-summary.txt, why-answers.tar.gz.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW="$REPO/.carry/causeway"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/why.log"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-why.XXXXXX")
say() { echo "$*" | tee -a "$LOG"; }
say "== $(date -u +%FT%TZ) $(nvidia-smi -L 2> /dev/null | head -n 1)"
"$CUDA_HOME/bin/nvcc" -O2 -arch=sm_90 -cudart=shared -o "$WORK/why_cases" "$WL/why_cases.cu" >> "$LOG" 2>&1 ||
  { say "FAIL: nvcc why_cases.cu"; exit 1; }
"$WORK/why_cases" > "$WORK/bare.out" 2>&1
say "bare: exit $? $(tr '\n' ' ' < "$WORK/bare.out")"
arms=()
run() { # NAME MODE [record options]
  local name=$1 mode=$2
  shift 2
  timeout 120 "$CW" record --level 3 "$@" --out "$WORK/caps-$name" -- "$WORK/why_cases" $mode > "$WORK/$name.out" 2> "$WORK/$name.err"
  say "$name: exit $? $(tr '\n' ' ' < "$WORK/$name.out")"
  local cap targets
  cap=$(ls -d "$WORK/caps-$name"/cw-* | head -n 1)
  targets="h_late d_consumer v_victim r_consumer"
  [[ $mode == lossy ]] && targets="m_consumer"
  for t in $targets; do
    timeout 120 "$CW" why --kernel "$t" --json "$cap" > "$WORK/$name-$t.json" 2>> "$WORK/$name.err"
    timeout 120 "$CW" why --kernel "$t" "$cap" > "$WORK/$name-$t.txt" 2>> "$WORK/$name.err"
  done
  arms+=("$name")
}
run cupti ""
run events "" --backend events --sample 1
run lossy lossy --ring-mb 1 --policy overwrite
python3 "$DEV/why_check.py" "$WORK" "${arms[@]}" 2>&1 | tee "$OUT/why-summary.txt" | tee -a "$LOG"
status=${PIPESTATUS[0]}
for f in "$WORK"/cupti-*.txt; do { echo "--- $f"; cat "$f"; } >> "$OUT/why-summary.txt"; done
tar -czf "$OUT/why-answers.tar.gz" -C "$WORK" $(cd "$WORK" && ls *.json *.txt *.out *.err) 2>> "$LOG"
say "== why.sh done in ${SECONDS}s: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
exit "$status"

#!/usr/bin/env bash
# distortion.sh: issue 19's distortion table on an H200 — for ops of about 10, 25, 80 µs and 1 ms, how
# much each device-timing configuration lengthens a two-stream copy+kernel step and moves its measured
# overlap, against the truth, and whether `causeway control` marks exactly the rows it should.
#
#     OUT=/some/dir bash control-experiments/device/distortion.sh
#
# Needs .carry/causeway and .carry/libcauseway.so (built off the machine). Steps, each with a timeout:
#   0. builds workloads/overlap.cu (nvcc -O2 -arch=sm_90 -cudart=static), or takes OVERLAP_BIN;
#   1. truth from bare runs: per case, TRUTH_RUNS rounds of the isolated variants (--part both, x, y,
#      none), the workload's own median step per run -> truth.tsv ("CASE PART ROUND US");
#   2. per case and configuration: causeway control --json --runs RUNS --steps step on the workload ->
#      json/CASE-CONFIG.json. Configurations: cupti (level 3 CUPTI), events (level 3 events, --sample 1:
#      every call timed), events16 (the default: one step in 16 timed), and contended: events at
#      --sample 1 with CAUSEWAY_EVENTS_DIAG=grow-during-run, the event pool grown while the program
#      runs as before issue 19 — an instrument known to remove overlap, which the harness must flag;
#   3. distortion_check.py: one row per case x configuration (step time against the control, overlap
#      against the truth from CUPTI and from the isolated variants, the mark, the mark the truth calls
#      for, and whether they agree).
# Cases (CASES): MODE:KERNEL_US:COPY_KIB; a = copy and kernel on two streams (overlapped), b = one stream
# (serialised), p = a pageable cudaMemcpy after a kernel on a blocking stream (see overlap.cu).
# CONTROL_CUPTI names a libcupti for the cupti configuration and the events ones' durations arm (default:
# the shim finds it); OVERLAP_BIN a prebuilt workload (the CPU test); RUNS, TRUTH_RUNS, STEPS, WARMUP,
# CASES, CONFIGS, DISTORTION_BUDGET_S (540), CAUSEWAY_CLI (.carry/causeway), CUDA_HOME.
# Exit 0 when every step ran (a wrong mark is a finding, in the table), 1 on a script error.
# Files in $OUT: distortion.log, distortion-summary.md, distortion-results.json,
# distortion-artifacts.tar.gz (truth.tsv, the JSONs, each step's output).
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
BUDGET=${DISTORTION_BUDGET_S:-540}
RUNS=${RUNS:-5}
TRUTH_RUNS=${TRUTH_RUNS:-3}
STEPS=${STEPS:-300}
WARMUP=${WARMUP:-20}
read -r -a CASES <<< "${CASES:-a:10:512 a:25:1280 a:80:4096 a:1000:51200 b:80:4096 p:80:4096}"
read -r -a CONFIGS <<< "${CONFIGS:-cupti events events16 contended}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/distortion.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-distortion.XXXXXX")
mkdir -p "$WORK/json" "$WORK/caps"
FAILED=()
RC=0
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
  (cd "$WORK" && tar -czf "$OUT/distortion-artifacts.tar.gz" --exclude=caps --exclude=overlap . 2> /dev/null) ||
    say "could not pack the artifacts"
}
trap on_exit EXIT

say "== distortion: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1)"
say "cases ${CASES[*]}; configurations ${CONFIGS[*]}; $RUNS runs per arm, $STEPS steps after $WARMUP warm-up"
if [[ ! -x $CW ]]; then
  fail "causeway CLI not found at $CW"
  exit 1
fi
say "causeway: $("$CW" --version 2>&1 | head -n 1)"
BIN=$WORK/overlap
if [[ -n ${OVERLAP_BIN:-} ]]; then
  cp "$OVERLAP_BIN" "$BIN"
else
  NVCC=$CUDA_HOME/bin/nvcc
  [[ -x $NVCC ]] || NVCC=$(command -v nvcc || true)
  build_nvcc build-overlap "$BIN" "$WL/overlap.cu" -I"$CUDA_HOME/include"
fi
if [[ ! -x $BIN ]]; then
  fail "no workload binary"
  exit 1
fi
args_of() { # CASE -> workload arguments
  local mode kus kib
  IFS=: read -r mode kus kib <<< "$1"
  echo "$mode --steps $STEPS --warmup $WARMUP --kernel-us $kus --copy-kib $kib"
}

# ---- 1. truth ----
TRUTH=$WORK/truth.tsv
: > "$TRUTH"
for ((round = 1; round <= TRUTH_RUNS; round++)); do
  for c in "${CASES[@]}"; do
    for part in both x y none; do
      if ((BUDGET - SECONDS < 60)); then
        fail "truth: out of time"
        break 3
      fi
      # shellcheck disable=SC2046  # the workload's arguments split on purpose
      line=$(timeout -k 5 60 env -u LD_PRELOAD "$BIN" $(args_of "$c") --part "$part" 2>> "$LOG" < /dev/null | grep -m1 '^overlap ')
      med=$(field step_us_median "$line")
      note "truth $c $part r$round: $line"
      if [[ $med == - ]]; then
        fail "truth $c $part r$round: no step times"
        continue
      fi
      echo "$c $part $round $med" >> "$TRUTH"
    done
  done
  say "[ok     ] truth round $round (${SECONDS}s)"
done

# ---- 2. causeway control ----
CUPTI_ARGS=()
[[ -n ${CONTROL_CUPTI:-} ]] && CUPTI_ARGS=(--cupti "$CONTROL_CUPTI")
for c in "${CASES[@]}"; do
  for cfg in "${CONFIGS[@]}"; do
    case $cfg in
      cupti) LV=(--level 3 --backend cupti "${CUPTI_ARGS[@]}") ;;
      events) LV=(--level 3 --backend events --sample 1 "${CUPTI_ARGS[@]}") ;;
      events16) LV=(--level 3 --backend events --sample 16 "${CUPTI_ARGS[@]}") ;;
      contended) LV=(--level 3 --backend events --sample 1 "${CUPTI_ARGS[@]}") ;;
      *)
        fail "unknown configuration $cfg"
        continue
        ;;
    esac
    name="control-${c//:/-}-$cfg"
    # shellcheck disable=SC2046
    diag=()
    [[ $cfg == contended ]] && diag=(CAUSEWAY_EVENTS_DIAG=grow-during-run)
    step "$name" 120 env "${diag[@]}" "$CW" control --json --runs "$RUNS" --steps step --ring-mb 8 --out "$WORK/caps" \
      "${LV[@]}" -- "$BIN" $(args_of "$c")
    check_rc "$name"
    if ((RC == 0)); then cp "$WORK/$name.out" "$WORK/json/${c//:/-}--$cfg.json"; fi
    rm -rf "$WORK/caps"/*
  done
done

# ---- 3. the table ----
step check 60 "$PY" "$DEV/distortion_check.py" "$TRUTH" "$WORK/json" --md "$OUT/distortion-summary.md" \
  --json "$OUT/distortion-results.json"
check_rc "distortion_check.py"
cat "$WORK/check.out"
if ((${#FAILED[@]})); then
  say "SCRIPT ERRORS (${#FAILED[@]}):"
  for f in "${FAILED[@]}"; do say "  - $f"; done
  exit 1
fi
say "distortion.sh: done in ${SECONDS}s"

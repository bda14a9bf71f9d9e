#!/usr/bin/env bash
# control.sh: issue 5's experiment on an H200 — does device timing change the copy/compute overlap and
# stream-serialisation answers, and does `causeway control` say so when it does (and only then)?
#
# Run from the repository root with OUT set to the folder whose files come back, and the prebuilt
# .carry/causeway (CLI) and .carry/libcauseway.so (shim):
#     OUT=/some/dir bash control-experiments/device/control.sh
#
# What it does (every step has a timeout; a failed step is reported and the script goes on):
#   0. prints the GPU, nvcc and causeway versions; builds workloads/overlap.cu (nvcc -O2 -arch=sm_90
#      -cudart=static; NVTX v3 from the CUDA include dir).
#   1. Ground truth, no shim at all: TRUTH_RUNS rounds; per round, for every mode (a b p c i; see
#      overlap.cu) the variants --part both, x, y, none (and for mode a also both with the workload's
#      own timing events around each operation), each a separate bare process of STEPS steps; the
#      median step time of each run goes into truth.tsv. control_check.py turns it into the true
#      overlap per mode: (T_x + T_y - T_none - T_both) / (min(T_x, T_y) - T_none).
#   2. For each configuration — l2 (`--level 2`: no device timing; the claims left are step time and
#      process time), cupti (`--level 3 --backend cupti`), events (`--level 3 --backend events`) — and
#      each mode: `causeway control --json --runs RUNS --bare --steps step` on the workload; the JSON
#      goes to json/CONFIG-MODE.json.
#   3. control_check.py: the ground-truth table and one row per mode x configuration: instrumented
#      overlap (copy/compute for a, b, p; stream concurrency for c, i), the control's lower bound, the
#      truth, the mark, the mark the truth calls for, and whether it was right.
# Exit status: 0 when every step ran, whatever the marks (a wrong mark is a FINDING, in the table);
# 1 on a SCRIPT ERROR: the build failed, a tool is missing, a bare run failed, `causeway control`
# failed, the checker did not run, or a step was skipped for lack of time.
# Files in $OUT: control.log (everything), control-summary.md (the tables), control-results.json
# (every number), control-artifacts.tar.gz (truth.tsv, the JSONs, each step's stdout/stderr), and
# control-captures.tar.gz (every run's capture) when it fits in 20 MiB.
# Knobs: CONTROL_RUNS (5 runs per arm), TRUTH_RUNS (3), STEPS (30 per run), KERNEL_US (2000),
# COPY_MIB (100: ~2 ms at the H200's ~50 GB/s pinned H2D), MODES ("a b p c i"), CONFIGS
# ("l2 cupti events"), RING_MB (8), CONTROL_BUDGET_S (450), CAUSEWAY_CLI (.carry/causeway),
# CUDA_HOME (/usr/local/cuda), PYTHON (python3), CONTROL_CUPTI (a libcupti for --cupti; default: the
# shim finds it), OVERLAP_BIN (a prebuilt workload instead of building overlap.cu: the CPU test).
# Time on an H200 (estimate: one CUDA process ~0.3-1 s): build ~30 s; truth 3 x 16 runs ~40 s;
# control 15 x (5 rounds x 3 arms) runs ~150-250 s; about 4-5 min in all.
set -uo pipefail

: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
BUDGET=${CONTROL_BUDGET_S:-450}
RUNS=${CONTROL_RUNS:-5}
TRUTH_RUNS=${TRUTH_RUNS:-3}
STEPS=${STEPS:-30}
WARMUP=3
KERNEL_US=${KERNEL_US:-2000}
COPY_MIB=${COPY_MIB:-100}
RING_MB=${RING_MB:-8}
read -r -a MODES <<< "${MODES:-a b p c i}"
read -r -a CONFIGS <<< "${CONFIGS:-l2 cupti events}"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/control.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-control.XXXXXX")
mkdir -p "$WORK/json" "$WORK/caps"
FAILED=() # script errors
RC=0
PACKED=0

# say, note, fail, step, check_rc, field, build_nvcc
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

# shellcheck disable=SC2317  # called from on_exit
pack_artifacts() {
  if ((PACKED)); then return 0; fi
  PACKED=1
  (cd "$WORK" && tar -czf "$OUT/control-artifacts.tar.gz" --exclude=caps --exclude=overlap . 2> /dev/null) ||
    say "could not pack control-artifacts.tar.gz"
  if [[ -n $(ls -A "$WORK/caps" 2> /dev/null) ]]; then
    tar -czf "$WORK/caps.tar.gz" -C "$WORK" caps 2> /dev/null
    local size
    size=$(stat -c %s "$WORK/caps.tar.gz" 2> /dev/null || echo 0)
    if ((size > 0 && size <= 20 * 1024 * 1024)); then
      mv "$WORK/caps.tar.gz" "$OUT/control-captures.tar.gz"
    else
      say "the captures are $size bytes packed: left on the machine in $WORK/caps"
    fi
  fi
}
# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
  local rc=$?
  pack_artifacts
  if ((rc != 0)) && [[ ! -f $OUT/control-summary.md ]]; then
    echo "control.sh stopped early (exit $rc); see control.log" | tee -a "$LOG" > "$OUT/control-summary.md"
  fi
}
trap on_exit EXIT
trap 'say "control.sh: terminated"; exit 143' TERM INT

say "== causeway control experiment: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), work dir $WORK"
say "runs per arm $RUNS, truth rounds $TRUTH_RUNS, $STEPS steps of a ${KERNEL_US} us kernel and a ${COPY_MIB} MiB copy; modes ${MODES[*]}; configurations ${CONFIGS[*]}"
if command -v nvidia-smi > /dev/null; then
  say "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1)"
else
  say "GPU: nvidia-smi not found"
fi
if [[ ! -x $CW ]]; then
  fail "causeway CLI not found at $CW (build it with cargo build --release and put it in .carry/)"
  exit 1
fi
say "causeway: $("$CW" --version 2>&1 | head -n 1)"

# ---- 0. the workload -----------------------------------------------------------------------------------
BIN=$WORK/overlap
if [[ -n ${OVERLAP_BIN:-} ]]; then
  cp "$OVERLAP_BIN" "$BIN"
  say "workload: $OVERLAP_BIN (prebuilt)"
else
  NVCC=""
  if [[ -x $CUDA_HOME/bin/nvcc ]]; then
    NVCC=$CUDA_HOME/bin/nvcc
  elif command -v nvcc > /dev/null; then NVCC=$(command -v nvcc); fi
  say "nvcc: ${NVCC:-NOT FOUND} $([[ -n $NVCC ]] && "$NVCC" --version 2>&1 | tail -n 1)"
  build_nvcc build-overlap "$BIN" "$WL/overlap.cu" -I"$CUDA_HOME/include"
fi
if [[ ! -x $BIN ]]; then
  fail "no workload binary: nothing to measure"
  exit 1
fi
WL_ARGS=(--steps "$STEPS" --warmup "$WARMUP" --kernel-us "$KERNEL_US" --copy-mib "$COPY_MIB")

# ---- 1. ground truth, bare -------------------------------------------------------------------------------
TRUTH=$WORK/truth.tsv
: > "$TRUTH"
say ""
say "== ground truth: bare runs (no shim), $TRUTH_RUNS rounds"
for ((round = 1; round <= TRUTH_RUNS; round++)); do
  if ((BUDGET - SECONDS < 60)); then
    fail "truth round $round: skipped, out of time"
    break
  fi
  t0=$SECONDS
  for mode in "${MODES[@]}"; do
    parts=(both x y none)
    [[ $mode == a ]] && parts+=(both+ev)
    for part in "${parts[@]}"; do
      extra=(--part "${part%+ev}")
      [[ $part == both+ev ]] && extra+=(--timing-events)
      name="truth-$mode-$part-r$round"
      RC=0
      timeout -k 5 60 env -u LD_PRELOAD "$BIN" "$mode" "${WL_ARGS[@]}" "${extra[@]}" \
        > "$WORK/$name.out" 2> "$WORK/$name.err" < /dev/null || RC=$?
      line=$(grep -m1 '^overlap ' "$WORK/$name.out" || true)
      note "$name: rc=$RC $line"
      med=$(field step_us_median "$line")
      if ((RC != 0)) || [[ $med == - ]]; then
        fail "$name: exit code $RC, no step times ($(tail -n 1 "$WORK/$name.err"))"
        continue
      fi
      echo "$mode $part $round $med" >> "$TRUTH"
    done
  done
  say "[ok     ] truth round $round ($((SECONDS - t0))s)"
done

# ---- 2. causeway control ---------------------------------------------------------------------------------
say ""
say "== causeway control: ${#CONFIGS[@]} configurations x ${#MODES[@]} modes, $RUNS runs per arm (instrumented, control, bare)"
CUPTI_ARGS=()
[[ -n ${CONTROL_CUPTI:-} ]] && CUPTI_ARGS=(--cupti "$CONTROL_CUPTI")
for cfg in "${CONFIGS[@]}"; do
  case $cfg in
    l2) LV=(--level 2) ;;
    cupti) LV=(--level 3 --backend cupti "${CUPTI_ARGS[@]}") ;;
    # Every call timed (the default times one step in 16); the durations arm takes --cupti too.
    events) LV=(--level 3 --backend events --sample 1 "${CUPTI_ARGS[@]}") ;;
    *)
      fail "unknown configuration $cfg"
      continue
      ;;
  esac
  for mode in "${MODES[@]}"; do
    name="control-$cfg-$mode"
    step "$name" 150 "$CW" control --json --runs "$RUNS" --bare --steps step --ring-mb "$RING_MB" \
      --out "$WORK/caps" "${LV[@]}" -- "$BIN" "$mode" "${WL_ARGS[@]}"
    check_rc "$name"
    if ((RC == 0)); then
      cp "$WORK/$name.out" "$WORK/json/$cfg-$mode.json"
    fi
  done
done

# ---- 3. the table ----------------------------------------------------------------------------------------
say ""
step check 60 "$PY" "$DEV/control_check.py" "$TRUTH" "$WORK/json" --md "$OUT/control-summary.md" \
  --json "$OUT/control-results.json"
check_rc "control_check.py"
cat "$WORK/check.out"

say ""
if ((${#FAILED[@]})); then
  say "SCRIPT ERRORS (${#FAILED[@]}):"
  for f in "${FAILED[@]}"; do say "  - $f"; done
  say "control.sh: done in ${SECONDS}s with script errors"
  exit 1
fi
say "control.sh: done in ${SECONDS}s"
exit 0

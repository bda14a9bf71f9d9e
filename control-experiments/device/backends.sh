#!/usr/bin/env bash
# backends.sh: causeway's level-3 device-timing backends (cupti, cupti-cb, events) side by side, one run on
# an H200.
#
# Run from the repository root with OUT set to the folder whose files come back, and the prebuilt
# .carry/causeway (CLI) and .carry/libcauseway.so (shim):
#     OUT=/some/dir bash control-experiments/device/backends.sh
#
# What it does (every step has a timeout; a failed step is reported and the script goes on):
#   0. prints the GPU, nvcc and torch versions; builds the CUPTI reference (cupti_count.so, steps.sh)
#      and workloads/multistream.cu (nvcc -O2 -arch=sm_90 -cudart=static -lineinfo; retried with
#      -DNO_NVTX if the NVTX build fails).
#   For each workload (multistream: two non-blocking streams, 8 MiB pinned H2D copies, spin kernels of
#   known duration (50, 80, 10 us), an event wait across streams, memsets and tiny kernels; and
#   torch_spine.py): a bare run; a CUPTI reference run in its own process (cupti_count.so with
#   CUPTI_COUNT_COPIES=1: kernel records and p50 device time per kernel name, memcpy and memset
#   records); for torch also torch.profiler (--profile-durations); then for each backend in BACKENDS
#   `causeway record --level 3 --backend B` and `causeway report --json`; then backends_check.py
#   workload, which prints one table per workload. Backend "cupti-cb" is `--backend cupti` with
#   CAUSEWAY_CUPTI_CORRELATION=callback in that run's environment (CUPTI records tied to calls through
#   CUPTI callbacks instead of external-correlation activity records); every other run, causeway's or
#   not, runs with that variable removed (the shim's default, external correlation).
#     (a) association: device intervals per kernel name vs CUPTI's records, interval total vs CUPTI's
#         kernel+memcpy+memset records, associated, unassociated, dropped, untimed;
#     (b) durations: p50 per kernel name per backend vs CUPTI's p50 (and torch.profiler's). cupti and
#         cupti-cb: |dp50| <= max(10 %, 2 us), a verdict per kernel (ok, ok-abs = only within the 2 us
#         floor, FAIL, missing). events: its interval runs from a timing event recorded right before
#         the launch call to one right after, so it includes the stream's wait before the work starts
#         (the launch call on an idle stream, the wait for SMs on a busy device): an UPPER BOUND on the
#         device time; verdict upper-ok when p50 >= ref p50 - max(10 %, 2 us), else FAIL-below, and the
#         excess (p50 - ref p50, absolute and %) per kernel and its median over the kernels;
#     (c) clock: the report's clock section as it is (before_call, min launch->start latency, the
#         events backend's bound_ns if present);
#     (d) the checksum line and exit code of every run vs bare.
#   4. cost (the issue's figure): tiny_loop.py (a.add_(1.0) on 256 floats, PERF_N ops x PERF_REPS reps
#      per process) bare / torch.profiler / causeway level 2 / level 3 per backend, PERF_ROUNDS
#      interleaved rounds (the arm order rotates by one each round). The machine drifts between rounds
#      (bare 6.8-10.4 us/op on the H200 VM), so the added cost is paired: per round, arm - bare of the
#      SAME round; per arm min/median/max of that, and (median paired profiler added)/(median paired
#      level 3 added) per level-3 backend, target >= 5; the raw per-arm min/median/max us/op and the
#      unpaired figures are printed too. The round-1 level-2 and level-3 captures are reported to
#      check those runs recorded every op.
#   5. backends_check.py summary: all tables again, one verdict line per workload x backend and per
#      ratio, and the FINDINGS.
# Exit status: 0 when every step ran, whatever the verdicts (a missed tolerance, association, clock
# check or cost target is a FINDING, in the tables and in backends-summary.json); 1 on a SCRIPT ERROR:
# a build failed, a tool is missing (nvcc, CUPTI, the causeway CLI), a bare / reference / profiler run
# failed, a checker did not run, or a step was skipped for lack of time. causeway's own failures
# (record or report exiting non-zero, no capture) are findings, listed under "causeway problems".
# Files in $OUT: backends.log (everything), backends-summary.md (the tables), backends-summary.json
# (every verdict and number), backends-artifacts.tar.gz (all JSONs, stdout/stderr of every step,
# text reports, the workload captures when they fit in 15 MiB).
# Knobs: BACKENDS ("cupti cupti-cb events"), BACKENDS_BUDGET_S (540, all steps), MS_ITERS (200
# multistream iterations), PERF_ROUNDS (7), PERF_N (20000), PERF_REPS (5), CAUSEWAY_CLI
# (.carry/causeway), CUDA_HOME (/usr/local/cuda), PYTHON (python3).
# Time on the H200 (2026-11-29, 2 backends, 5 rounds: 239 s): setup and builds ~10 s, multistream
# ~1 s per run, torch ~7 s per run (profiler 12 s), workloads ~55 s in all; tiny_loop ~6 s per run
# (profiler ~13 s): one cost round ~36 s with 5 arms. Defaults (3 backends, 7 rounds): workloads
# ~65 s, cost 6 s + 7 x ~42 s = ~300 s, total ~370 s (~6.2 min; ~380 s at the slowest rounds seen).
# Before each round the script checks the budget (a round's time + 45 s must be left) and stops the
# rounds there (a script error) rather than run past BACKENDS_BUDGET_S.
set -uo pipefail

: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway} # the shim is found beside it (or $CAUSEWAY_SHIM)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
BUDGET=${BACKENDS_BUDGET_S:-540}
read -r -a BK <<< "${BACKENDS:-cupti cupti-cb events}"
MS_ITERS=${MS_ITERS:-200}
PERF_ROUNDS=${PERF_ROUNDS:-7}
PERF_N=${PERF_N:-20000}
PERF_REPS=${PERF_REPS:-5}
PERF_WARMUP=2000    # tiny_loop.py --warmup (once per process)
PERF_REP_WARMUP=200 # tiny_loop.py --rep-warmup (before each rep)
TARGET=5

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/backends.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-backends.XXXXXX")
export PYTHONUNBUFFERED=1

FAILED=() # script errors
CWPROB=() # causeway's own problems (findings): record/report failures
PARTS=()  # the checker's JSONs, in order
RC=0
PACKED=0

# say, note, fail, step, check_rc, checksum_line, field, capture_dir_from, build_cupti_count
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

# The callback-correlation switch is set only for the cupti-cb runs (l3_record); none other inherits it.
INHERITED_CORRELATION=${CAUSEWAY_CUPTI_CORRELATION-}
unset CAUSEWAY_CUPTI_CORRELATION

# l3_record B: sets L3 to the command prefix of a level-3 recording for backend arm B (the traced
# command follows after --out DIR --): cupti-cb is the cupti backend with
# CAUSEWAY_CUPTI_CORRELATION=callback; every other backend runs with the variable removed.
l3_record() {
  case $1 in
    cupti-cb) L3=(env CAUSEWAY_CUPTI_CORRELATION=callback "$CW" record --level 3 --backend cupti) ;;
    # Every call timed: the comparison is per kernel (the default times one step in 16).
    events) L3=(env -u CAUSEWAY_CUPTI_CORRELATION "$CW" record --level 3 --backend events --sample 1) ;;
    *) L3=(env -u CAUSEWAY_CUPTI_CORRELATION "$CW" record --level 3 --backend "$1") ;;
  esac
}

pack_artifacts() {
  if ((PACKED)); then return 0; fi
  PACKED=1
  local list="$WORK/artifact-list" tgz="$OUT/backends-artifacts.tar.gz"
  (cd "$WORK" && find . -maxdepth 1 -type f \( -name '*.json' -o -name '*.out' -o -name '*.err' \
    -o -name '*.txt' -o -name '*.capture.tar.gz' \) -print0 > "$list")
  tar -czf "$tgz" -C "$WORK" --null -T "$list" 2> /dev/null || say "could not pack $tgz"
  local size
  size=$(stat -c %s "$tgz" 2> /dev/null || echo 0)
  if ((size > 15 * 1024 * 1024)); then
    say "backends-artifacts.tar.gz is $size bytes: packing it again without the captures"
    (cd "$WORK" && find . -maxdepth 1 -type f \( -name '*.json' -o -name '*.out' -o -name '*.err' \
      -o -name '*.txt' \) -print0 > "$list")
    tar -czf "$tgz" -C "$WORK" --null -T "$list" 2> /dev/null || say "could not pack $tgz"
  fi
}
# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
  local rc=$?
  pack_artifacts
  if ((rc != 0)) && [[ ! -f $OUT/backends-summary.md ]]; then
    echo "backends.sh stopped early (exit $rc); see backends.log" | tee -a "$LOG" > "$OUT/backends-summary.md"
  fi
}
trap on_exit EXIT
trap 'say "backends.sh: terminated"; exit 143' TERM INT

# ---------------------------------------------------------------------------
say "== causeway level-3 backends (${BK[*]}): $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), work dir $WORK"
say "settings: MS_ITERS=$MS_ITERS PERF_ROUNDS=$PERF_ROUNDS PERF_N=$PERF_N PERF_REPS=$PERF_REPS budget ${BUDGET}s"
if [[ -n $INHERITED_CORRELATION ]]; then
  say "note: CAUSEWAY_CUPTI_CORRELATION=$INHERITED_CORRELATION was set by the caller; removed (only the cupti-cb runs set it)"
fi
{
  timeout 30 nvidia-smi -L 2>&1 || echo "nvidia-smi -L failed"
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
    --format=csv,noheader 2>&1 || true
} | tee -a "$LOG"

NVCC=$(command -v nvcc || true)
if [[ -z $NVCC && -x $CUDA_HOME/bin/nvcc ]]; then NVCC="$CUDA_HOME/bin/nvcc"; fi
if [[ -n $NVCC ]]; then
  timeout 30 "$NVCC" --version 2>&1 | tail -n 2 | tee -a "$LOG" || true
else
  fail "nvcc not found (PATH or $CUDA_HOME/bin)"
fi
timeout 120 "$PY" -c '
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NONE")
' 2>&1 | tee -a "$LOG" || fail "python3 -c 'import torch' failed"

HAVE_CW=1
if [[ ! -x $CW ]]; then
  HAVE_CW=0
  fail "causeway CLI missing or not executable: $CW"
else
  say "causeway: $CW ($(stat -c %s "$CW") bytes)"
fi

# ---------------------------------------------------------------------------
say ""
say "== build"
build_cupti_count
if [[ -n $NVCC ]]; then
  step build-multistream 240 "$NVCC" "${NVFLAGS[@]}" -lineinfo -o "$WORK/multistream" "$WL/multistream.cu"
  if ((RC != 0 && RC != 125)); then
    say "multistream.cu: retrying without NVTX (-DNO_NVTX)"
    step build-multistream-nonvtx 240 "$NVCC" "${NVFLAGS[@]}" -lineinfo -DNO_NVTX \
      -o "$WORK/multistream" "$WL/multistream.cu"
  fi
  check_rc "build multistream.cu"
else
  fail "build multistream.cu: no nvcc"
fi

# ---------------------------------------------------------------------------
# run_workload NAME TIMEOUT [--profile] -- CMD...
#   --profile: CMD accepts --profile-durations DUR.json (torch_spine.py)
run_workload() {
  local w=$1 t=$2
  shift 2
  local want_profile=0
  while [[ $1 != -- ]]; do
    case $1 in
      --profile) want_profile=1 ;;
    esac
    shift
  done
  shift
  local cmd=("$@")
  say ""
  say "== workload $w: ${cmd[*]}"
  if [[ ! -e ${cmd[0]} ]] && ! command -v "${cmd[0]}" > /dev/null; then
    fail "$w: ${cmd[0]} was not built; workload not run"
    return 0
  fi
  local runs=() bargs=() prof_args=()

  # (a) bare
  step "$w-bare" "$t" "${cmd[@]}"
  runs+=(--run bare "$RC" "$WORK/$w-bare.out")
  check_rc "$w: bare run"
  if [[ $RC != 125 && -z $(checksum_line "$WORK/$w-bare.out") ]]; then
    fail "$w: bare run printed no checksum line"
  fi
  say "bare: $(checksum_line "$WORK/$w-bare.out")"

  # (b) CUPTI reference, in its own process (one CUPTI client per process)
  local cupti_json="$WORK/$w.cupti-ref.json"
  if [[ -n $CUPTI_SO ]]; then
    step "$w-cupti-ref" "$t" env CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$cupti_json" \
      CUPTI_COUNT_COPIES=1 "${cmd[@]}"
    runs+=(--run cupti-ref "$RC" "$WORK/$w-cupti-ref.out")
    check_rc "$w: CUPTI reference run"
    [[ -s $cupti_json ]] || fail "$w: the CUPTI reference wrote no $cupti_json"
  else
    fail "$w: no CUPTI reference (cupti_count.so not built)"
  fi

  # (c) torch.profiler reference (durations)
  if ((want_profile)); then
    local prof_dur="$WORK/$w.profiler-durations.json"
    step "$w-profiler" "$t" "${cmd[@]}" --profile-durations "$prof_dur"
    runs+=(--run profiler "$RC" "$WORK/$w-profiler.out")
    check_rc "$w: torch.profiler run (--profile-durations)"
    if [[ -s $prof_dur ]]; then
      prof_args=(--profiler-durations "$prof_dur")
    else
      fail "$w: --profile-durations wrote no $prof_dur"
    fi
  fi

  # (d) causeway level 3, one run per backend
  local b cap rrc
  for b in "${BK[@]}"; do
    if ((!HAVE_CW)); then break; fi
    bargs+=(--backend "$b" "$WORK/$w.cw-$b.json")
    l3_record "$b"
    step "$w-cw-$b" "$t" "${L3[@]}" --out "$WORK/cap-$w-$b" -- "${cmd[@]}"
    rrc=$RC
    if ((rrc == 125)); then continue; fi # skipped (counted already)
    runs+=(--run "$b" "$rrc" "$WORK/$w-cw-$b.out")
    grep -E '^causeway: (note|warning)' "$WORK/$w-cw-$b.err" | sed "s|^|$w/$b: causeway record says: |" |
      tee -a "$LOG" || true
    if ((rrc == 124 || rrc == 137)); then CWPROB+=("$w/$b: causeway record timed out"); fi
    cap=$(capture_dir_from "$WORK/$w-cw-$b.err")
    if [[ -z $cap || ! -d $cap ]]; then
      CWPROB+=("$w/$b: causeway record (exit $rrc) printed no capture directory")
      continue
    fi
    du -sh "$cap" 2> /dev/null | sed "s/^/$w\/$b capture size: /" | tee -a "$LOG" || true
    tar -czSf "$WORK/$w.cw-$b.capture.tar.gz" -C "$(dirname "$cap")" "$(basename "$cap")" 2> /dev/null || true
    step "$w-report-$b" 120 "$CW" report --json "$cap"
    if ((RC == 0)); then
      cp "$WORK/$w-report-$b.out" "$WORK/$w.cw-$b.json"
    elif ((RC != 125)); then
      CWPROB+=("$w/$b: causeway report --json exited $RC: $(tail -n 1 "$WORK/$w-report-$b.err")")
    fi
    step "$w-report-text-$b" 120 "$CW" report "$cap"
    cp "$WORK/$w-report-text-$b.out" "$WORK/$w.cw-$b.report.txt"
    rm -rf "$WORK/cap-$w-$b"
  done

  # (e) the checks
  if [[ ! -s $cupti_json ]]; then
    fail "$w: not checked (no CUPTI reference)"
    return 0
  fi
  step "$w-check" 90 "$PY" "$DEV/backends_check.py" workload --title "$w" --cupti "$cupti_json" \
    "${prof_args[@]}" "${bargs[@]}" "${runs[@]}" --json "$WORK/$w.backends.json"
  if ((RC != 0 && RC != 1)) || [[ ! -s $WORK/$w.backends.json ]]; then
    fail "$w: backends_check.py workload did not run (exit $RC)"
  fi
  if [[ -s $WORK/$w.backends.json ]]; then PARTS+=("$WORK/$w.backends.json"); fi
  grep -v '^SUMMARY ' "$WORK/$w-check.out" | tee -a "$LOG" || true
  return 0
}

run_workload multistream 90 -- "$WORK/multistream" --iters "$MS_ITERS"
run_workload torch 150 --profile -- "$PY" "$WL/torch_spine.py"

# ---------------------------------------------------------------------------
say ""
say "== cost: tiny_loop.py, N=$PERF_N x $PERF_REPS reps per process, $PERF_ROUNDS interleaved rounds"
TL=("$PY" "$WL/tiny_loop.py" --n "$PERF_N" --reps "$PERF_REPS" --warmup "$PERF_WARMUP" --rep-warmup "$PERF_REP_WARMUP")
EXPECT_OPS=$((PERF_WARMUP + PERF_REPS * (PERF_REP_WARMUP + PERF_N)))
ARMS=(bare profiler level2)
for b in "${BK[@]}"; do ARMS+=("l3$b"); done
declare -A ARM_OFF=()
if ((!HAVE_CW)); then
  for a in "${ARMS[@]}"; do [[ $a == bare || $a == profiler ]] || ARM_OFF[$a]=1; done
fi
# One short run first, not counted: the first torch process after a pause can be slow.
step perf-warmup 100 "${TL[@]}" --n 2000 --reps 1
ROUND_S=0
ROUNDS_DONE=0
NARMS=${#ARMS[@]}
for r in $(seq 1 "$PERF_ROUNDS"); do
  left=$((BUDGET - SECONDS))
  # Keep ~45 s for the reports, the summary and the tarball.
  if ((r > 1 && left < ROUND_S + 45)); then
    fail "cost: only $((r - 1)) of $PERF_ROUNDS rounds fit in the budget"
    break
  fi
  t0=$SECONDS
  for i in $(seq 0 $((NARMS - 1))); do
    arm=${ARMS[$(((i + r - 1) % NARMS))]} # rotate the order by one each round
    if [[ -n ${ARM_OFF[$arm]:-} ]]; then continue; fi
    case $arm in
      bare) step "perf-bare-$r" 100 "${TL[@]}" ;;
      profiler) step "perf-profiler-$r" 100 "${TL[@]}" --profile ;;
      level2) step "perf-level2-$r" 100 "$CW" record --level 2 --out "$WORK/cap-perf-level2-$r" -- "${TL[@]}" ;;
      l3*)
        l3_record "${arm#l3}"
        step "perf-$arm-$r" 100 "${L3[@]}" --out "$WORK/cap-perf-$arm-$r" -- "${TL[@]}"
        ;;
    esac
    if ((RC == 124 || RC == 137)); then
      if [[ $arm == bare || $arm == profiler ]]; then
        fail "cost: $arm round $r timed out; arm left out of the later rounds"
      else
        CWPROB+=("cost: $arm round $r timed out; arm left out of the later rounds")
      fi
      ARM_OFF[$arm]=1
    elif ((RC != 0 && RC != 125)); then
      if [[ $arm == bare || $arm == profiler ]]; then
        fail "cost: $arm round $r: exit code $RC"
      else
        CWPROB+=("cost: $arm round $r: exit code $RC")
      fi
    fi
    # Keep only round 1's captures (reported below); the others are only timings.
    if ((r > 1)); then rm -rf "$WORK/cap-perf-$arm-$r"; fi
  done
  ROUND_S=$((SECONDS - t0))
  ROUNDS_DONE=$r
done
PERF_ARGS=()
for arm in "${ARMS[@]}"; do
  [[ $arm == bare || $arm == profiler ]] && continue
  ((HAVE_CW)) || continue
  cap=$(capture_dir_from "$WORK/perf-$arm-1.err")
  if [[ -n $cap && -d $cap ]]; then
    step "perf-$arm-report" 120 "$CW" report --json "$cap"
    if ((RC == 0)); then
      cp "$WORK/perf-$arm-report.out" "$WORK/perf-$arm.causeway.json"
    else
      CWPROB+=("cost: causeway report --json of the $arm round-1 capture exited $RC")
    fi
    rm -rf "$WORK/cap-perf-$arm-1"
  elif [[ -s $WORK/perf-$arm-1.err ]]; then
    CWPROB+=("cost: the $arm round-1 run printed no capture directory")
  fi
  PERF_ARGS+=(--report "$arm" "$WORK/perf-$arm.causeway.json")
done
if ((ROUNDS_DONE > 0)); then
  step perf-check 60 "$PY" "$DEV/backends_check.py" perf --dir "$WORK" --rounds "$ROUNDS_DONE" --arms "$(
    IFS=,
    echo "${ARMS[*]}"
  )" --target "$TARGET" --expect-ops "$EXPECT_OPS" "${PERF_ARGS[@]}" --json "$WORK/perf.backends.json"
  if ((RC != 0 && RC != 1)) || [[ ! -s $WORK/perf.backends.json ]]; then
    fail "cost: backends_check.py perf did not run (exit $RC)"
  fi
  if [[ -s $WORK/perf.backends.json ]]; then PARTS+=("$WORK/perf.backends.json"); fi
  grep -v '^SUMMARY ' "$WORK/perf-check.out" | tee -a "$LOG" || true
else
  fail "cost: no round ran"
fi

# ---------------------------------------------------------------------------
say ""
say "== summary ($((SECONDS))s; details in backends.log, backends-summary.md, backends-summary.json, backends-artifacts.tar.gz)"
if ((${#PARTS[@]})); then
  "$PY" "$DEV/backends_check.py" summary --in "${PARTS[@]}" --json "$OUT/backends-summary.json" \
    --markdown "$OUT/backends-summary.md" > "$WORK/summary.txt" 2> "$WORK/summary.err" ||
    fail "backends_check.py summary failed: $(tail -n 1 "$WORK/summary.err")"
else
  echo "no part of the check ran" > "$WORK/summary.txt"
  echo "# causeway level-3 backends: nothing was checked" > "$OUT/backends-summary.md"
fi
TAIL="$WORK/summary-tail.txt"
{
  if ((${#CWPROB[@]})); then
    printf 'causeway problems (%d, findings):\n' "${#CWPROB[@]}"
    for x in "${CWPROB[@]}"; do printf '  - %s\n' "$x"; done
  fi
  if ((${#FAILED[@]})); then
    printf 'SCRIPT ERRORS (%d):\n' "${#FAILED[@]}"
    for x in "${FAILED[@]}"; do printf '  - %s\n' "$x"; done
  else
    printf 'script: every step ran (no script errors)\n'
  fi
} > "$TAIL"
{
  printf '\n```\n'
  cat "$TAIL"
  printf '```\n'
} >> "$OUT/backends-summary.md"
pack_artifacts
{
  cat "$WORK/summary.txt"
  cat "$TAIL"
} | tee -a "$LOG"
if ((${#FAILED[@]})); then exit 1; fi
exit 0

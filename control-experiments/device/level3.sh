#!/usr/bin/env bash
# level3.sh: causeway's GPU-side proof of device intervals (capture level 3), run once on an H200.
#
# Run from the repository root with OUT set to the folder whose files come
# back, and the prebuilt .carry/causeway (CLI) and .carry/libcauseway.so (shim):
#     OUT=/some/dir bash control-experiments/device/level3.sh
#
# What it does (every step has a timeout; a failed step is reported and the
# script goes on; it exits 1 at the end if any check failed):
#   0. prints the GPU, nvcc, torch/Triton versions; builds the CUPTI reference
#      (cupti_count.so) and spine_prog twice (static cudart; --default-stream
#      per-thread).
#   For each workload (spine_prog static, spine_prog per-thread, torch_spine.py):
#      a bare run; a CUPTI reference run in its own process (two CUPTI clients
#      cannot share one: CUDA_INJECTION64_PATH=cupti_count.so,
#      CUPTI_COUNT_COPIES=1 so it counts copies and memsets too); for torch
#      also a torch.profiler run (--profile-durations); then
#      `causeway record --level 3 --backend cupti` and `causeway report --json`,
#      and level3_check.py (which reads causeway's JSON only through cw_json.py):
#   1. association: causeway's device intervals per kernel name == CUPTI's
#      kernel records per name; unassociated == 0; device_dropped == 0;
#      interval total == CUPTI's kernel + memcpy + memset records; checksum
#      line and exit code under causeway == bare (and exit code 3 of
#      spine_prog --exit-code 3 passes through level 3);
#   2. durations: p50 device time per kernel, causeway vs cupti_count (and vs
#      torch.profiler for torch), tolerance |dp50| <= max(10 %, 2 us), a
#      verdict per kernel (kernels passing only through the 2 us floor are
#      listed as ok-abs);
#   3. clock: intervals starting before their issuing call (must be 0) and the
#      minimum launch->start latency;
#   4. performance (the issue's figure): tiny_loop.py (a.add_(1.0) on 256
#      floats, N=20000 per rep, 5 reps per process) bare / torch.profiler /
#      causeway level 2 / causeway level 3, interleaved A B C D x 5 rounds;
#      added us/op over bare and the ratio (profiler added) / (level 3 added).
#      Target: >= 5. One uncounted warm-up run comes first. The round-1
#      level-2 and level-3 captures are reported to prove those runs recorded
#      every op.
#   (Not counted as a check, a note: causeway's host launch counts at level 3
#   vs CUPTI, compare_counts.py.)
# Files in $OUT: level3.log (everything), level3-summary.md (tables),
# level3-artifacts.tar.gz (all JSONs, stdout/stderr of every step, the
# workload captures).
# LEVEL3_BUDGET_S (default 540) is the time budget for all steps; a step that
# would start with less than 20 s left is skipped (and counted as failed).
# PERF_ROUNDS (5), PERF_N (20000), PERF_REPS (5) size the performance part;
# CAUSEWAY_CLI overrides the CLI's path (default .carry/causeway).
set -uo pipefail

: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway} # the shim is found beside it (or $CAUSEWAY_SHIM)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
BUDGET=${LEVEL3_BUDGET_S:-540}
PERF_ROUNDS=${PERF_ROUNDS:-5}
PERF_N=${PERF_N:-20000}
PERF_REPS=${PERF_REPS:-5}
PERF_WARMUP=2000    # tiny_loop.py --warmup (once per process)
PERF_REP_WARMUP=200 # tiny_loop.py --rep-warmup (before each rep)
TARGET=5
L3=(record --level 3 --backend cupti)

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/level3.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-level3.XXXXXX")
export PYTHONUNBUFFERED=1

FAILED=() # what failed, one entry per check
ROWS=()   # association/clock table rows
DROWS=()  # durations table rows
EXTRA=()  # lines printed under the tables
PERF_TXT="$WORK/perf.txt"
RC=0
PACKED=0

# say, note, fail, step, check_rc, field, capture_dir_from
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

pack_artifacts() {
  if ((PACKED)); then return 0; fi
  PACKED=1
  local list="$WORK/artifact-list"
  (cd "$WORK" && find . -maxdepth 1 -type f \( -name '*.json' -o -name '*.out' -o -name '*.err' \
    -o -name '*.md' -o -name '*.txt' -o -name '*.capture.tar.gz' \) -print0 > "$list")
  tar -czf "$OUT/level3-artifacts.tar.gz" -C "$WORK" --null -T "$list" 2> /dev/null ||
    say "could not pack $OUT/level3-artifacts.tar.gz"
  local size
  size=$(stat -c %s "$OUT/level3-artifacts.tar.gz" 2> /dev/null || echo 0)
  if ((size > 15 * 1024 * 1024)); then
    say "level3-artifacts.tar.gz is $size bytes: packing it again without the captures"
    (cd "$WORK" && find . -maxdepth 1 -type f \( -name '*.json' -o -name '*.out' -o -name '*.err' \
      -o -name '*.md' -o -name '*.txt' \) -print0 > "$list")
    tar -czf "$OUT/level3-artifacts.tar.gz" -C "$WORK" --null -T "$list" 2> /dev/null ||
      say "could not pack $OUT/level3-artifacts.tar.gz"
  fi
}
# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
  local rc=$?
  pack_artifacts
  if ((rc != 0)) && [[ ! -f $OUT/level3-summary.md ]]; then
    echo "level3.sh stopped early (exit $rc); see level3.log" | tee -a "$LOG" > "$OUT/level3-summary.md"
  fi
}
trap on_exit EXIT
trap 'say "level3.sh: terminated"; exit 143' TERM INT

# ---------------------------------------------------------------------------
say "== causeway level 3 (device intervals): $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), work dir $WORK"
{
  timeout 30 nvidia-smi -L 2>&1 || echo "nvidia-smi -L failed"
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
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
try:
    import triton
    print("triton", triton.__version__)
except Exception as e:
    print("triton import failed:", repr(e))
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

build_nvcc build-spine-static "$WORK/spine_static" "$WL/spine_prog.cu"
build_nvcc build-spine-perthread "$WORK/spine_perthread" "$WL/spine_prog.cu" --default-stream per-thread

# ---------------------------------------------------------------------------
# run_workload NAME TIMEOUT [--profile] -- CMD...
#   --profile: CMD accepts --profile-durations DUR.json --profile COUNTS.json (torch_spine.py)
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
    fail "$w: ${cmd[0]} was not built"
    ROWS+=("$w|-|-|-|-|-|-|-|-|NOT RUN")
    return 0
  fi

  # (a) bare
  step "$w-bare" "$t" "${cmd[@]}"
  local rc_bare=$RC ck_bare
  ck_bare=$(checksum_line "$WORK/$w-bare.out")
  check_rc "$w: bare run"
  if [[ -z $ck_bare && $RC != 125 ]]; then fail "$w: bare run printed no checksum line"; fi
  say "bare: ${ck_bare:-<no checksum>}"

  # (b) CUPTI reference (its own process: one CUPTI client per process)
  local cupti_json="$WORK/$w.cupti.json" have_cupti=0
  if [[ -n $CUPTI_SO ]]; then
    step "$w-cupti" "$t" env CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$cupti_json" \
      CUPTI_COUNT_COPIES=1 "${cmd[@]}"
    check_rc "$w: CUPTI reference run"
    if [[ -s $cupti_json ]]; then
      have_cupti=1
      local ck_cupti
      ck_cupti=$(checksum_line "$WORK/$w-cupti.out")
      if [[ $ck_cupti != "$ck_bare" ]]; then
        EXTRA+=("note: $w: checksum under CUPTI differs from bare")
      fi
    else
      fail "$w: CUPTI reference wrote no $cupti_json"
    fi
  else
    fail "$w: no CUPTI reference (cupti_count.so not built)"
  fi

  # (c) torch.profiler reference (durations; counts too, for the log)
  local prof_args=()
  if ((want_profile)); then
    local prof_dur="$WORK/$w.profiler-durations.json" prof_cnt="$WORK/$w.profiler.json"
    step "$w-profile" "$t" "${cmd[@]}" --profile-durations "$prof_dur" --profile "$prof_cnt"
    check_rc "$w: --profile-durations run"
    if [[ -s $prof_dur ]]; then
      prof_args=(--profiler-durations "$prof_dur")
    else
      fail "$w: --profile-durations wrote no $prof_dur"
    fi
  fi

  # (d) causeway level 3
  if ((!HAVE_CW)); then
    ROWS+=("$w|-|-|-|-|-|-|-|-|NO CAUSEWAY")
    return 0
  fi
  step "$w-causeway" "$t" "$CW" "${L3[@]}" --out "$WORK/cap-$w" -- "${cmd[@]}"
  local rc_cw=$RC cap ck_cw
  if ((RC == 124 || RC == 137 || RC == 125)); then
    check_rc "$w: causeway record --level 3"
    ROWS+=("$w|-|-|-|-|-|-|-|-|FAIL (causeway record did not finish)")
    return 0
  fi
  local same="same"
  ck_cw=$(checksum_line "$WORK/$w-causeway.out")
  if [[ -z $ck_bare ]]; then
    same="-"
  elif [[ -z $ck_cw || $ck_cw != "$ck_bare" ]]; then
    same="DIFF"
    fail "$w: checksum under causeway level 3 '${ck_cw:-<none>}' != bare '$ck_bare'"
  fi
  if ((rc_cw != rc_bare)); then
    same="DIFF"
    fail "$w: exit code under causeway level 3 $rc_cw != bare $rc_bare"
  fi
  cap=$(capture_dir_from "$WORK/$w-causeway.err")
  if [[ -z $cap ]]; then
    fail "$w: causeway record printed no 'causeway: capture written to' line"
    cap="$WORK/cap-$w"
  fi
  du -sh "$cap" 2> /dev/null | sed 's/^/capture size: /' | tee -a "$LOG" || true
  tar -czSf "$WORK/$w.capture.tar.gz" -C "$(dirname "$cap")" "$(basename "$cap")" 2> /dev/null || true
  local cw_json="$WORK/$w.causeway.json"
  step "$w-report" 120 "$CW" report --json "$cap"
  cp "$WORK/$w-report.out" "$cw_json"
  check_rc "$w: causeway report --json"
  local rep_rc=$RC
  step "$w-report-text" 120 "$CW" report "$cap"
  cp "$WORK/$w-report-text.out" "$WORK/$w.causeway-report.txt"
  if ((rep_rc != 0 || have_cupti == 0)); then
    ROWS+=("$w|-|-|-|-|-|-|-|$same|FAIL (no report or no CUPTI reference)")
    return 0
  fi

  # (e) the checks
  step "$w-check" 60 "$PY" "$DEV/level3_check.py" workload --title "$w" --causeway "$cw_json" \
    --cupti "$cupti_json" "${prof_args[@]}" --markdown "$WORK/$w.md"
  local s
  s=$(grep '^SUMMARY ' "$WORK/$w-check.out" | tail -n 1 || true)
  if [[ -z $s ]]; then
    fail "$w: level3_check gave no summary (exit $RC)"
    ROWS+=("$w|-|-|-|-|-|-|-|$same|FAIL (check did not run)")
    return 0
  fi
  local a d c
  a=$(field assoc "$s")
  d=$(field durations "$s")
  c=$(field clock "$s")
  [[ $a == PASS ]] || fail "$w: association (device intervals vs CUPTI) $a"
  [[ $d == PASS ]] || fail "$w: durations (p50 vs references) $d"
  [[ $c == PASS ]] || fail "$w: clock (causality) $c"
  local result=PASS
  if [[ $a != PASS || $d != PASS || $c != PASS || $same == DIFF ]]; then result=FAIL; fi
  ROWS+=("$w|$(field cupti_total "$s")|$(field causeway_total "$s")|$(field matched "$s")/$(field names "$s")|$(field unassociated "$s")|$(field device_dropped "$s")|$(field intervals "$s")/$(field cupti_records "$s")|$(field negative "$s")|$same|assoc=$a durations=$d clock=$c => $result")
  local dl
  dl="$w|$(field dur_ok "$s")|$(field dur_abs "$s")|$(field dur_fail "$s")|$(field dur_missing "$s")"
  if ((${#prof_args[@]})); then
    dl+="|$(field prof_ok "$s")|$(field prof_abs "$s")|$(field prof_fail "$s")|$(field prof_unmatched "$s")"
  else
    dl+="|-|-|-|-"
  fi
  DROWS+=("$dl|$(field min_latency_ns "$s")")
  # The per-kernel tables on stdout (durations rows: the brief wants each kernel seen).
  sed -n '/^== .*(2) durations/,/^durations: /p' "$WORK/$w-check.out"
  sed -n '/^== .*(1) association/,/^association: /p' "$WORK/$w-check.out" | grep -E '^(problem|  mismatch|causeway:|cupti:)' || true
  grep -E '^(intervals starting|problem: .*(call|latency))' "$WORK/$w-check.out" || true

  # (f) a note, not a check: host launch counts at level 3 vs CUPTI.
  step "$w-hostcounts" 60 "$PY" "$DEV/compare_counts.py" --title "$w-level3-host" \
    --causeway "$cw_json" --cupti "$cupti_json"
  local hs
  hs=$(grep '^SUMMARY ' "$WORK/$w-hostcounts.out" | tail -n 1 || true)
  EXTRA+=("note: $w: host launch counts at level 3 vs CUPTI: $(field result "$hs") ($(field causeway_total "$hs")/$(field cupti_total "$hs"))")
  return 0
}

run_workload spine-static 90 -- "$WORK/spine_static"
run_workload spine-perthread 90 -- "$WORK/spine_perthread"

if [[ -x $WORK/spine_static ]] && ((HAVE_CW)); then
  say ""
  say "== exit code pass-through at level 3"
  step exit-causeway 60 "$CW" "${L3[@]}" --out "$WORK/cap-exit" -- "$WORK/spine_static" --exit-code 3
  if ((RC == 3)); then
    EXTRA+=("exit code 3 passes through causeway record --level 3: yes")
  else
    fail "exit code pass-through at level 3: got $RC (want 3)"
    EXTRA+=("exit code 3 passes through causeway record --level 3: NO ($RC)")
  fi
fi

run_workload torch 150 --profile -- "$PY" "$WL/torch_spine.py"

# ---------------------------------------------------------------------------
say ""
say "== performance: tiny_loop.py, N=$PERF_N x $PERF_REPS reps per process, $PERF_ROUNDS interleaved rounds"
TL=("$PY" "$WL/tiny_loop.py" --n "$PERF_N" --reps "$PERF_REPS" --warmup "$PERF_WARMUP" --rep-warmup "$PERF_REP_WARMUP")
EXPECT_OPS=$((PERF_WARMUP + PERF_REPS * (PERF_REP_WARMUP + PERF_N)))
ARMS=(bare profiler level2 level3)
declare -A ARM_OFF=()
if ((!HAVE_CW)); then
  ARM_OFF[level2]=1
  ARM_OFF[level3]=1
fi
# One short run first, not counted: the first torch process after a pause can be slow.
step perf-warmup 100 "${TL[@]}" --n 2000 --reps 1
ROUND_S=0
ROUNDS_DONE=0
for r in $(seq 1 "$PERF_ROUNDS"); do
  left=$((BUDGET - SECONDS))
  # Keep ~40 s for the reports, the summary and the tarball.
  if ((r > 1 && left < ROUND_S + 40)); then
    fail "performance: only $((r - 1)) of $PERF_ROUNDS rounds fit in the budget"
    break
  fi
  t0=$SECONDS
  for arm in "${ARMS[@]}"; do
    if [[ -n ${ARM_OFF[$arm]:-} ]]; then continue; fi
    case $arm in
      bare) step "perf-bare-$r" 100 "${TL[@]}" ;;
      profiler) step "perf-profiler-$r" 100 "${TL[@]}" --profile ;;
      level2) step "perf-level2-$r" 100 "$CW" record --level 2 --out "$WORK/cap-perf-level2-$r" -- "${TL[@]}" ;;
      level3) step "perf-level3-$r" 100 "$CW" "${L3[@]}" --out "$WORK/cap-perf-level3-$r" -- "${TL[@]}" ;;
    esac
    if ((RC == 124 || RC == 137)); then
      fail "performance: $arm round $r timed out; arm left out of the later rounds"
      ARM_OFF[$arm]=1
    elif ((RC != 0 && RC != 125)); then
      fail "performance: $arm round $r: exit code $RC"
    fi
    # Keep only round 1's captures (reported below); the others are only timings.
    if ((r > 1)); then rm -rf "$WORK/cap-perf-$arm-$r"; fi
  done
  ROUND_S=$((SECONDS - t0))
  ROUNDS_DONE=$r
done
PERF_ARGS=()
for arm in level2 level3; do
  if [[ -z ${ARM_OFF[$arm]:-} || -s $WORK/perf-$arm-1.err ]] && ((HAVE_CW)); then
    cap=$(capture_dir_from "$WORK/perf-$arm-1.err")
    if [[ -n $cap && -d $cap ]]; then
      step "perf-$arm-report" 120 "$CW" report --json "$cap"
      cp "$WORK/perf-$arm-report.out" "$WORK/perf-$arm.causeway.json"
      if [[ $arm == level3 ]]; then
        "$PY" "$DEV/cw_json.py" "$WORK/perf-$arm.causeway.json" > "$WORK/perf-level3.cw_json.txt" 2>&1 || true
      fi
      rm -rf "$WORK/cap-perf-$arm-1"
    fi
    PERF_ARGS+=("--${arm/level/l}-report" "$WORK/perf-$arm.causeway.json")
  fi
done
"$PY" "$DEV/level3_check.py" perf --dir "$WORK" --rounds "$ROUNDS_DONE" --arms "$(
  IFS=,
  echo "${ARMS[*]}"
)" --target "$TARGET" --expect-ops "$EXPECT_OPS" "${PERF_ARGS[@]}" --markdown "$WORK/perf.md" \
  > "$PERF_TXT" 2>&1
perf_rc=$?
tee -a "$LOG" < "$PERF_TXT"
psum=$(grep '^SUMMARY perf' "$PERF_TXT" | tail -n 1 || true)
case $(field result "$psum") in
  MET) ;;
  MISSED) fail "performance target missed: (profiler added)/(level 3 added) = $(field ratio "$psum"), want >= $TARGET" ;;
  *) fail "performance: incomplete (level3_check perf exit $perf_rc; see the table)" ;;
esac

# ---------------------------------------------------------------------------
print_table() {
  local r
  echo "(1) association and (3) clock, per workload (causeway record --level 3 --backend cupti)"
  printf '%-16s %7s %8s %9s %7s %7s %13s %8s %8s  %s\n' workload cupti causeway 'names ok' unassoc dropped \
    'intervals/ref' 'neg.' checksum result
  for r in "${ROWS[@]}"; do
    IFS='|' read -r a b c d e f g h i j <<< "$r"
    printf '%-16s %7s %8s %9s %7s %7s %13s %8s %8s  %s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i" "$j"
  done
  echo
  echo "(2) durations: kernels per verdict, p50 vs CUPTI and vs torch.profiler; tolerance max(10 %, 2 us)"
  echo "    ok = within 10 %; ok-abs = within 2 us only (too short for 10 %); (3) min launch->start latency"
  printf '%-16s %5s %6s %5s %7s   %5s %6s %5s %9s   %s\n' workload ok ok-abs FAIL missing 'p:ok' 'p:abs' 'p:FAIL' \
    'p:unmatch' 'min lat ns'
  for r in "${DROWS[@]}"; do
    IFS='|' read -r a b c d e f g h i j <<< "$r"
    printf '%-16s %5s %6s %5s %7s   %5s %6s %5s %9s   %s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i" "$j"
  done
  echo
  echo "(4) performance"
  if [[ -s $PERF_TXT ]]; then grep -v '^SUMMARY' "$PERF_TXT"; else echo "not run"; fi
  echo
  for r in "${EXTRA[@]}"; do printf '%s\n' "$r"; done
  if ((${#FAILED[@]})); then
    printf 'FAILED (%d):\n' "${#FAILED[@]}"
    for r in "${FAILED[@]}"; do printf '  - %s\n' "$r"; done
  else
    printf 'ALL PASSED\n'
  fi
}

{
  echo "# causeway level 3 (device intervals): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  timeout 10 nvidia-smi -L 2> /dev/null | sed 's/^/    /' || true
  echo
  echo '```'
  print_table
  echo '```'
  echo
  for w in spine-static spine-perthread torch; do
    if [[ -f $WORK/$w.md ]]; then
      cat "$WORK/$w.md"
      echo
    fi
  done
  if [[ -f $WORK/perf.md ]]; then cat "$WORK/perf.md"; fi
} > "$OUT/level3-summary.md"
pack_artifacts

say ""
say "== summary ($((SECONDS))s; details in level3.log, level3-summary.md, level3-artifacts.tar.gz)"
print_table | tee -a "$LOG"
if ((${#FAILED[@]})); then exit 1; fi
exit 0

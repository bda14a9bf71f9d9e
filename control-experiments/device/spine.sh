#!/usr/bin/env bash
# spine.sh: causeway's GPU-side proof, run once on an H200 machine.
#
# Run from the repository root with OUT set to the folder whose files come
# back, and the prebuilt .carry/causeway (CLI) and .carry/libcauseway.so (shim):
#     OUT=/some/dir bash control-experiments/device/spine.sh
#
# What it does (every step has a timeout, a failed step is reported and the
# script goes on; it exits 1 at the end if anything failed):
#   1. prints the GPU (nvidia-smi -L), nvcc and torch/Triton versions;
#   2. builds the CUPTI reference (cupti_count.so), spine_prog (static cudart,
#      and again with --default-stream per-thread) and query_bench;
#   3. for each workload (spine_prog static, spine_prog per-thread,
#      torch_spine.py): a bare run, a CUPTI reference run
#      (CUDA_INJECTION64_PATH=cupti_count.so), for torch also a torch.profiler
#      reference (--profile), a `causeway record --level 4` run and
#      `causeway report --json`; then compare_counts.py compares the kernel
#      launch counts per name, and the checksum line and exit code of the
#      causeway run are checked against the bare run (transparency);
#   4. query_bench bare and under LD_PRELOAD=libcauseway.so CAUSEWAY_LEVEL=4
#      (CAUSEWAY_POLICY=overwrite, see BENCH_POLICY below), interleaved 5 times
#      each: added ns per cudaStreamQuery call (this runs before the torch
#      workload, the slowest step);
#   5. a small torch run recorded with --ring-mb 1, packed as
#      $OUT/demo-capture.tar.gz.
# Files in $OUT: spine.log (everything), summary.md (tables), artifacts.tar.gz
# (all JSONs, stdout/stderr of every step), demo-capture.tar.gz.
# SPINE_BUDGET_S (default 555) is the time budget for all steps; a step that
# would start with less than 20 s left is skipped (and counted as failed).
set -euo pipefail

: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
DEV="$REPO/control-experiments/device"
CW="$REPO/.carry/causeway"
SHIM="$REPO/.carry/libcauseway.so"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
BUDGET=${SPINE_BUDGET_S:-555}
# 7e6 calls overflow the default 64 MiB ring (1M entries): with the default
# "drop" policy most calls would take the cheaper ring-full path. "overwrite"
# records every call, which is the cost to measure.
BENCH_POLICY=${BENCH_POLICY:-overwrite}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/spine.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-spine.XXXXXX")
export PYTHONUNBUFFERED=1

FAILED=()   # what failed, one entry per check
ROWS=()     # final table rows
EXTRA=()    # lines printed under the final table
RC=0
PACKED=0

# say, note, fail, step, check_rc, field, capture_dir_from
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

pack_artifacts() {
  if ((PACKED)); then return 0; fi
  PACKED=1
  (
    cd "$WORK" &&
      find . -maxdepth 1 -type f \( -name '*.json' -o -name '*.out' -o -name '*.err' \
        -o -name '*.md' -o -name '*.txt' -o -name '*.capture.tar.gz' \) -print0 |
      tar -czf "$OUT/artifacts.tar.gz" --null -T -
  ) || say "could not pack $OUT/artifacts.tar.gz"
}
# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
  local rc=$?
  pack_artifacts
  if ((rc != 0)) && [[ ! -f $OUT/summary.md ]]; then
    echo "spine.sh stopped early (exit $rc); see spine.log" | tee -a "$LOG" > "$OUT/summary.md"
  fi
}
trap on_exit EXIT
trap 'say "spine.sh: terminated"; exit 143' TERM INT

# ---------------------------------------------------------------------------
say "== causeway GPU spine: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), work dir $WORK"
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
HAVE_SHIM=1
if [[ ! -x $CW ]]; then
  HAVE_CW=0
  fail "causeway CLI missing or not executable: $CW"
else
  say "causeway: $CW ($(stat -c %s "$CW") bytes), shim: $SHIM"
fi
if [[ ! -f $SHIM ]]; then
  HAVE_SHIM=0
  fail "shim missing: $SHIM"
fi

# ---------------------------------------------------------------------------
say ""
say "== build"
build_cupti_count

build_nvcc build-spine-static "$WORK/spine_static" "$WL/spine_prog.cu"
build_nvcc build-spine-perthread "$WORK/spine_perthread" "$WL/spine_prog.cu" --default-stream per-thread
build_nvcc build-query-bench "$WORK/query_bench" "$WL/query_bench.cu"

# ---------------------------------------------------------------------------
# run_workload NAME TIMEOUT [--expected] [--profile] -- CMD...
#   --expected: CMD prints "expected_counts_json: {...}" (spine_prog)
#   --profile:  CMD accepts --profile OUT.json (torch_spine.py)
run_workload() {
  local w=$1 t=$2
  shift 2
  local want_expected=0 want_profile=0
  while [[ $1 != -- ]]; do
    case $1 in
      --expected) want_expected=1 ;;
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
    ROWS+=("$w|-|-|-|-|-|NOT RUN")
    return 0
  fi

  # (a) bare
  step "$w-bare" "$t" "${cmd[@]}"
  local rc_bare=$RC ck_bare
  ck_bare=$(checksum_line "$WORK/$w-bare.out")
  check_rc "$w: bare run"
  if [[ -z $ck_bare && $RC != 125 ]]; then fail "$w: bare run printed no checksum line"; fi
  say "bare: ${ck_bare:-<no checksum>}"
  if [[ $ck_bare == *"triton=off"* ]]; then fail "$w: Triton kernel did not run (triton=off)"; fi
  if [[ $ck_bare == *"nvtx=off"* ]]; then fail "$w: NVTX ranges did not run (nvtx=off)"; fi

  # (b) CUPTI reference
  local cupti_json="$WORK/$w.cupti.json" refs=()
  if [[ -n $CUPTI_SO ]]; then
    step "$w-cupti" "$t" env CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$cupti_json" "${cmd[@]}"
    check_rc "$w: CUPTI reference run"
    if [[ -s $cupti_json ]]; then
      refs+=(--cupti "$cupti_json")
      local ck_cupti
      ck_cupti=$(checksum_line "$WORK/$w-cupti.out")
      if [[ $ck_cupti != "$ck_bare" ]]; then
        note "note: $w checksum under CUPTI differs: '$ck_cupti' vs bare '$ck_bare'"
        EXTRA+=("note: $w: checksum under CUPTI differs from bare")
      fi
    else
      fail "$w: CUPTI reference wrote no $cupti_json"
    fi
  fi
  if ((want_expected)); then
    local src="$WORK/$w-bare.out"
    grep -q '^expected_counts_json: ' "$src" || src="$WORK/$w-cupti.out"
    sed -n 's/^expected_counts_json: //p' "$src" 2> /dev/null | head -n 1 > "$WORK/$w.expected.json" || true
    if [[ -s $WORK/$w.expected.json ]]; then
      refs+=(--expected "$WORK/$w.expected.json")
    else
      fail "$w: no expected_counts_json line"
    fi
    grep '^funcname: ' "$src" 2> /dev/null | tee -a "$LOG" || true
  fi
  # (b') torch.profiler reference
  if ((want_profile)); then
    local prof_json="$WORK/$w.profiler.json"
    step "$w-profile" "$t" "${cmd[@]}" --profile "$prof_json"
    check_rc "$w: --profile run"
    if [[ -s $prof_json ]]; then
      refs+=(--profiler "$prof_json")
    else
      fail "$w: --profile wrote no $prof_json"
    fi
    local ck_prof
    ck_prof=$(checksum_line "$WORK/$w-profile.out")
    if [[ -n $ck_prof && $ck_prof != "$ck_bare" ]]; then
      EXTRA+=("note: $w: checksum under torch.profiler differs from bare")
    fi
  fi

  # (c) causeway
  if ((!HAVE_CW)); then
    ROWS+=("$w|-|-|-|-|-|NO CAUSEWAY")
    return 0
  fi
  step "$w-causeway" "$t" "$CW" record --level 4 --out "$WORK/cap-$w" -- "${cmd[@]}"
  local rc_cw=$RC cap ck_cw
  if ((RC == 124 || RC == 137 || RC == 125)); then
    check_rc "$w: causeway record"
    ROWS+=("$w|-|-|-|-|-|FAIL (causeway record did not finish)")
    return 0
  fi

  # transparency: same checksum line and exit code with and without the shim
  local same_ck="same" same_rc="same"
  ck_cw=$(checksum_line "$WORK/$w-causeway.out")
  if [[ -z $ck_bare ]]; then
    same_ck="-" # the bare run failed, which has been counted
  elif [[ -z $ck_cw || $ck_cw != "$ck_bare" ]]; then
    same_ck="DIFF"
    fail "$w: checksum under causeway '${ck_cw:-<none>}' != bare '$ck_bare'"
  fi
  if ((rc_cw != rc_bare)); then
    same_rc="DIFF"
    fail "$w: exit code under causeway $rc_cw != bare $rc_bare"
  fi

  cap=$(capture_dir_from "$WORK/$w-causeway.err")
  if [[ -z $cap ]]; then
    fail "$w: causeway record printed no 'causeway: capture written to' line"
    cap="$WORK/cap-$w"
  fi
  du -sh "$cap" 2> /dev/null | sed 's/^/capture size: /' | tee -a "$LOG" || true
  # Keep the capture itself (rings compress to almost nothing) so it can be re-read off the machine.
  tar -czSf "$WORK/$w.capture.tar.gz" -C "$(dirname "$cap")" "$(basename "$cap")" 2> /dev/null || true
  local cw_json="$WORK/$w.causeway.json"
  step "$w-report" 180 "$CW" report --json "$cap"
  cp "$WORK/$w-report.out" "$cw_json"
  check_rc "$w: causeway report"

  # compare
  local summary="" result="FAIL"
  if ((RC != 0)); then
    : # no report, nothing to compare
  elif ((${#refs[@]})); then
    step "$w-compare" 60 "$PY" "$DEV/compare_counts.py" --title "$w" --causeway "$cw_json" \
      "${refs[@]}" --markdown "$WORK/$w.md"
    cat "$WORK/$w-compare.out" "$WORK/$w-compare.err"
    summary=$(grep '^SUMMARY ' "$WORK/$w-compare.out" | tail -n 1 || true)
    if ((RC == 1)); then
      fail "$w: kernel counts differ"
    elif ((RC == 2)); then
      fail "$w: compare_counts could not read its inputs"
    else
      check_rc "$w: compare_counts"
    fi
    result=$(field result "$summary")
  else
    fail "$w: no reference to compare with"
  fi
  if [[ $same_ck == DIFF || $same_rc == DIFF ]]; then result="FAIL"; fi
  local names cupti_t
  names="$(field matched "$summary")/$(field names "$summary")"
  cupti_t=$(field cupti_total "$summary")
  if [[ $cupti_t == - ]]; then cupti_t=$(field expected_total "$summary"); fi
  local extra=""
  if [[ $(field profiler_total "$summary") != - ]]; then
    extra=" (torch.profiler total $(field profiler_total "$summary"))"
  fi
  ROWS+=("$w|$cupti_t|$(field causeway_total "$summary")|$names|$same_ck|$same_rc|$result$extra")
  return 0
}

run_workload spine-static 120 --expected -- "$WORK/spine_static"
run_workload spine-perthread 120 --expected -- "$WORK/spine_perthread"

# Exit codes pass through causeway record (static build, exit code 3).
if [[ -x $WORK/spine_static ]] && ((HAVE_CW)); then
  say ""
  say "== exit code pass-through"
  step exit-bare 60 "$WORK/spine_static" --exit-code 3
  rc_a=$RC
  step exit-causeway 60 "$CW" record --level 4 --out "$WORK/cap-exit" -- "$WORK/spine_static" --exit-code 3
  rc_b=$RC
  if ((rc_a == 3 && rc_b == 3)); then
    EXTRA+=("exit code 3 passes through causeway record: yes")
  else
    fail "exit code pass-through: bare $rc_a, under causeway $rc_b (want 3 and 3)"
    EXTRA+=("exit code 3 passes through causeway record: NO (bare $rc_a, causeway $rc_b)")
  fi
fi

# ---------------------------------------------------------------------------
say ""
say "== hot path: cudaStreamQuery on an idle stream, bare vs shim at level 4"
if [[ -x $WORK/query_bench ]] && ((HAVE_SHIM)); then
  for i in 1 2 3 4 5; do
    step "bench-bare-$i" 90 "$WORK/query_bench" 1000000 7
    check_rc "bench-bare-$i"
    mkdir -p "$WORK/bench-cap-$i"
    step "bench-shim-$i" 90 env LD_PRELOAD="$SHIM" CAUSEWAY_OUT="$WORK/bench-cap-$i" \
      CAUSEWAY_LEVEL=4 CAUSEWAY_POLICY="$BENCH_POLICY" "$WORK/query_bench" 1000000 7
    check_rc "bench-shim-$i"
  done
  if ((HAVE_CW)); then
    step bench-report 60 "$CW" report --json "$WORK/bench-cap-1"
    cp "$WORK/bench-report.out" "$WORK/bench-cap-1.causeway.json"
  fi
  "$PY" - "$WORK" > "$WORK/bench.txt" 2>&1 << 'EOF' || fail "bench statistics"
import re, statistics, sys
work = sys.argv[1]

def per_run(kind):
    """Median ns/call of each run's repeats (None for a run that gave none)."""
    runs = []
    for i in range(1, 6):
        try:
            text = open(f"{work}/bench-{kind}-{i}.out").read()
        except OSError:
            text = ""
        xs = [float(x) for x in re.findall(r"^repeat \d+: ([0-9.]+) ns/call", text, re.M)]
        runs.append(statistics.median(xs) if xs else None)
    return runs

bare, shim = per_run("bare"), per_run("shim")
fmt = lambda v: "-" if v is None else f"{v:.1f}"
print("run   bare ns/call   shim ns/call   added")
added = []
for i, (b, s) in enumerate(zip(bare, shim), 1):
    d = None if b is None or s is None else s - b
    if d is not None:
        added.append(d)
    print(f"{i:<5} {fmt(b):>12} {fmt(s):>14} {fmt(d):>7}")
if not added:
    print("bench: no complete bare/shim pair")
    sys.exit(1)
b_ok = [b for b in bare if b is not None]
try:
    import json
    rep = json.load(open(f"{work}/bench-cap-1.causeway.json"))
    t = rep.get("totals", {})
    q = sum(a.get("calls", 0) for a in rep.get("apis", []) if a.get("name") == "cudaStreamQuery")
    print(f"shim run 1 capture: entries={t.get('entries')} dropped={t.get('dropped')} "
          f"overwritten={t.get('overwritten')} cudaStreamQuery calls in the ring={q}")
except (OSError, ValueError, AttributeError) as exc:
    print(f"shim run 1 capture: no report ({exc})")
print(f"bench: added ns per cudaStreamQuery at level 4: min={min(added):.1f} "
      f"median={statistics.median(added):.1f} max={max(added):.1f} "
      f"(bare median {statistics.median(b_ok):.1f} ns/call, {len(added)} pairs, "
      f"each run = median of 7 repeats of 1e6 calls)")
EOF
  tee -a "$LOG" < "$WORK/bench.txt"
  bline=$(grep '^bench: ' "$WORK/bench.txt" | tail -n 1 || true)
  EXTRA+=("${bline:-bench: no result}")
else
  fail "bench not run (query_bench not built or shim missing)"
fi

# ---------------------------------------------------------------------------
# torch last but one: the slowest, and the likeliest to hang if something is wrong.
run_workload torch 240 --profile -- "$PY" "$WL/torch_spine.py"

# NVTX: torch_spine.py pushes one "step" range per step (2 warm-up + 20 steps).
if [[ -s $WORK/torch.causeway.json ]]; then
  nvtx_line=$("$PY" - "$WORK/torch.causeway.json" 22 << 'EOF' || true
import json, sys
try:
    rep = json.load(open(sys.argv[1]))
    ranges = [r for r in rep.get("ranges") or [] if r.get("name") == "step"]
    n = sum(r.get("count") or 0 for r in ranges)
    o = sum(r.get("open") or 0 for r in ranges)
except (OSError, ValueError, AttributeError) as exc:
    print(f"NO: cannot read the report: {exc}")
    sys.exit(0)
want = int(sys.argv[2])
print(f"{'yes' if n == want and o == 0 else 'NO'}: {n} complete, {o} open (want {want})")
EOF
  )
  say "nvtx 'step' ranges seen by causeway in the torch run: ${nvtx_line:-NO: no answer}"
  EXTRA+=("nvtx 'step' ranges in the torch capture: ${nvtx_line:-NO: no answer}")
  if [[ $nvtx_line != yes* ]]; then fail "torch: NVTX ranges: ${nvtx_line:-no answer}"; fi
fi

# ---------------------------------------------------------------------------
say ""
say "== demo capture (torch, small, --ring-mb 1)"
if ((HAVE_CW)); then
  demo_cmd=("$PY" "$WL/torch_spine.py" --steps 3 --replays 2 --warmup 1)
  step demo-record 180 "$CW" record --level 4 --ring-mb 1 --out "$WORK/demo-capture" -- "${demo_cmd[@]}"
  demo=$(capture_dir_from "$WORK/demo-record.err")
  if [[ -z $demo ]] && ((RC != 124 && RC != 125 && RC != 137)); then
    say "no capture line with --ring-mb 1; trying once without it"
    rm -rf "$WORK/demo-capture"
    step demo-record-noring 180 "$CW" record --level 4 --out "$WORK/demo-capture" -- "${demo_cmd[@]}"
    demo=$(capture_dir_from "$WORK/demo-record-noring.err")
  fi
  if [[ -n $demo && -d $demo ]]; then
    step demo-report 120 "$CW" report --json "$demo"
    cp "$WORK/demo-report.out" "$WORK/demo.causeway.json"
    ls -laR "$demo" > "$WORK/demo-capture-listing.txt" 2>&1 || true
    if tar -czSf "$OUT/demo-capture.tar.gz" -C "$(dirname "$demo")" "$(basename "$demo")" \
      -C "$WORK" demo.causeway.json; then
      size=$(stat -c %s "$OUT/demo-capture.tar.gz")
      EXTRA+=("demo capture: demo-capture.tar.gz, $((size / 1024)) KiB (capture $(du -sh "$demo" | cut -f1))")
      if ((size > 15 * 1024 * 1024)); then
        fail "demo-capture.tar.gz is $size bytes: too big to come back; kept only its listing"
        tar -czf "$OUT/demo-capture.tar.gz" -C "$WORK" demo-capture-listing.txt demo.causeway.json
      elif ((size > 2 * 1024 * 1024)); then
        EXTRA+=("note: demo capture is over 2 MiB")
      fi
    else
      fail "packing the demo capture"
    fi
  else
    fail "demo capture: no capture directory"
  fi
else
  fail "demo capture not made (no causeway CLI)"
fi

# ---------------------------------------------------------------------------
print_table() {
  local r
  printf '%-16s %9s %9s %12s %9s %6s  %s\n' workload cupti causeway 'names ok' checksum exit result
  for r in "${ROWS[@]}"; do
    IFS='|' read -r a b c d e f g <<< "$r"
    printf '%-16s %9s %9s %12s %9s %6s  %s\n' "$a" "$b" "$c" "$d" "$e" "$f" "$g"
  done
  for r in "${EXTRA[@]}"; do printf '%s\n' "$r"; done
  if ((${#FAILED[@]})); then
    printf 'FAILED (%d):\n' "${#FAILED[@]}"
    for r in "${FAILED[@]}"; do printf '  - %s\n' "$r"; done
  else
    printf 'ALL PASSED\n'
  fi
}

{
  echo "# causeway GPU spine: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
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
  if [[ -f $WORK/bench.txt ]]; then
    echo "### hot path (cudaStreamQuery, level 4)"
    echo
    echo '```'
    cat "$WORK/bench.txt"
    echo '```'
  fi
} > "$OUT/summary.md"
pack_artifacts

say ""
say "== summary ($((SECONDS))s; details in spine.log, summary.md, artifacts.tar.gz)"
print_table | tee -a "$LOG"
if ((${#FAILED[@]})); then exit 1; fi
exit 0

#!/usr/bin/env bash
# costs.sh: what each capture level costs, measured on the GPU machine in one run, one table (issue 7).
#
#     OUT=/some/dir bash control-experiments/device/costs.sh
#
# Sections (each arm runs ROUNDS times, arms interleaved, the order rotating by one each round, so
# drift hits every arm alike; every figure is paired with bare of the same round):
#   tiny     tiny_loop.py (256-float add_, launch-bound): bare, torch.profiler, levels 1, 2, 4, level 3
#            with each backend (cupti, cupti with callback correlation, events, events --sample 16), CUPTI
#            alone (cupti_count.so, no causeway), and (DIAG=1) the callback correlation's cost split
#   decode   decode_loop.py (8-layer bf16 transformer, random weights, NVTX per token), batch 1 and 32
#   copy     copy_loop.py (pinned 64 MiB H2D on one stream, matmuls on another)
#   pressure ci/build/pressure on the driver double (CPU only): 16 threads of cuStreamQuery at level 4
#            into 64 MiB and 256 MiB rings (0.9 of capacity: calls/s, drops), and 2x capacity (drops
#            counted exactly)
#   benches  (only when asked: SECTIONS=benches) the carried cargo bench binaries .carry/bench-*,
#            output in $OUT/benches.txt
# Every Python run prints "result: key=value" lines (step times, peak RSS); costs_summary.py turns
# $OUT/costs.tsv into $OUT/costs-summary.txt (min/median/max, ratio to bare, added).
# SECTIONS, ROUNDS, ARMS_TINY, ARMS_DECODE, ARMS_COPY, BENCHES override the defaults; BUDGET caps the
# seconds; PIN=cpu-list runs every arm under taskset.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
SHIM=${CAUSEWAY_SHIM:-$REPO/.carry/libcauseway.so}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
ROUNDS=${ROUNDS:-4}
BUDGET=${BUDGET:-560}
SECTIONS=${SECTIONS:-tiny decode copy pressure}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/costs.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-costs.XXXXXX")
unset CAUSEWAY_CUPTI_CORRELATION CAUSEWAY_EVENTS_SAMPLE CAUSEWAY_CUPTI_DIAG
FAILED=()
RC=0
# say, note, fail, step, check_rc, build_cupti_count (steps.sh)
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
TSV="$OUT/costs.tsv"
printf 'section\tround\tarm\tkey\tvalue\n' > "$TSV"

say "== costs: $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null); $(nproc) CPUs"

# arm_cmd ARM CAPDIR CMD...: the command line of one arm into the array CMD_ARM.
arm_cmd() {
  local arm=$1 cap=$2
  shift 2
  local rec=("$CW" record --out "$cap")
  case $arm in
    bare) CMD_ARM=("$@") ;;
    profiler) CMD_ARM=("$@" --profile) ;;
    cuptifloor) CMD_ARM=(env CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$cap.floor.json" "$@") ;;
    level1 | level2 | level4) CMD_ARM=("${rec[@]}" --level "${arm#level}" -- "$@") ;;
    l3cupti) CMD_ARM=("${rec[@]}" --level 3 --backend cupti -- "$@") ;;
    l3cupticb) CMD_ARM=(env CAUSEWAY_CUPTI_CORRELATION=callback "${rec[@]}" --level 3 --backend cupti -- "$@") ;;
    l3events) CMD_ARM=("${rec[@]}" --level 3 --backend events --sample 1 -- "$@") ;;
    l3events16) CMD_ARM=("${rec[@]}" --level 3 --backend events --sample 16 -- "$@") ;;
    # Diagnostics (CAUSEWAY_CUPTI_DIAG): callback correlation with one part changed.
    cbdomain | cbnots | cbnort)
      local d
      case $arm in cbdomain) d=driver-domain ;; cbnots) d=no-timestamp ;; cbnort) d=no-runtime-cb ;; esac
      CMD_ARM=(env CAUSEWAY_CUPTI_CORRELATION=callback CAUSEWAY_CUPTI_DIAG=$d "${rec[@]}" --level 3 --backend cupti -- "$@")
      ;;
    *) CMD_ARM=(false) ;;
  esac
  # PIN=cpu-list runs every arm on those CPUs (less drift between runs on a shared VM).
  if [[ -n ${PIN:-} ]]; then CMD_ARM=(taskset -c "$PIN" "${CMD_ARM[@]}"); fi
}

# capture_counts DIR KEY...: "KEY<tab>value" lines from `causeway report --json DIR`, summed over its
# processes; keys: entries, dropped, overwritten, torn, steps (NVTX ranges named *_step).
capture_counts() {
  local dir=$1
  shift
  "$CW" report --json "$dir" 2>> "$LOG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
p = d["processes"]
have = {k: sum(x[k] for x in p) for k in ("entries", "dropped", "overwritten", "torn")}
have["steps"] = sum(r["count"] for r in d.get("ranges", []) if r["name"].endswith("_step"))
for k in sys.argv[1:]:
    print(f"{k}\t{have[k]}")' "$@" 2>> "$LOG"
}

# run_section NAME TIMEOUT "ARMS" CMD...: ROUNDS interleaved rounds of every arm; result lines into
# the TSV, plus the capture's entries and the count of its NVTX steps (key entries, steps).
run_section() {
  local sec=$1 limit=$2
  local -a arms
  read -r -a arms <<< "$3"
  shift 3
  say "== $sec: arms ${arms[*]}; $ROUNDS rounds; $*"
  for r in $(seq 1 "$ROUNDS"); do
    for i in $(seq 0 $((${#arms[@]} - 1))); do
      local arm=${arms[$(((i + r - 1) % ${#arms[@]}))]}
      local cap="$WORK/cap-$sec-$arm-$r"
      arm_cmd "$arm" "$cap" "$@"
      step "$sec-$arm-$r" "$limit" "${CMD_ARM[@]}"
      sed -n 's/^result: //p' "$WORK/$sec-$arm-$r.out" | tr ' ' '\n' | grep '=' |
        awk -F= -v s="$sec" -v r="$r" -v a="$arm" '{printf "%s\t%s\t%s\t%s\t%s\n", s, r, a, $1, $2}' >> "$TSV"
      local ck
      ck=$(checksum_line "$WORK/$sec-$arm-$r.out")
      printf '%s\t%s\t%s\tchecksum\t%s\n' "$sec" "$r" "$arm" "${ck// /_}" >> "$TSV"
      local capdir
      capdir=$(capture_dir_from "$WORK/$sec-$arm-$r.err")
      if [[ -n $capdir ]]; then
        capture_counts "$capdir" entries dropped steps |
          awk -v s="$sec" -v r="$r" -v a="$arm" '{printf "%s\t%s\t%s\t%s\t%s\n", s, r, a, $1, $2}' >> "$TSV"
      fi
      rm -rf "$cap" "$cap".floor.json
    done
  done
}

for sec in $SECTIONS; do
  case $sec in
    tiny)
      ARMS=${ARMS_TINY:-"bare profiler cuptifloor level1 level2 level4 l3cupti l3cupticb l3events l3events16"}
      [[ ${DIAG:-1} == 1 ]] && ARMS="$ARMS cbdomain cbnots cbnort"
      CUPTI_SO=""
      [[ " $ARMS " == *" cuptifloor "* ]] && build_cupti_count
      [[ -z $CUPTI_SO ]] && ARMS=${ARMS//cuptifloor/}
      run_section tiny 90 "$ARMS" "$PY" "$WL/tiny_loop.py" --n 20000 --reps 3 --warmup 2000 --rep-warmup 200
      ;;
    decode)
      run_section decode 150 "${ARMS_DECODE:-bare level1 level2 l3cupti l3events}" \
        "$PY" "$WL/decode_loop.py" --batches 1,32 --steps 64 --reps 3
      ;;
    copy)
      run_section copy 120 "${ARMS_COPY:-bare level2 l3cupti l3events}" \
        "$PY" "$WL/copy_loop.py" --mb 64 --steps 30 --reps 2
      ;;
    pressure)
      say "== pressure: ci/build/pressure, 16 threads, level 4, driver double"
      step build-pressure 120 make -s -C "$REPO/ci" build/pressure
      check_rc "build pressure"
      for r in $(seq 1 "$ROUNDS"); do
        for cfg in "64 drop 0.9" "256 drop 0.9" "64 overwrite 0.9" "64 drop 2"; do
          read -r mb pol frac <<< "$cfg"
          per=$("$PY" -c "print(int($mb * 16384 * $frac / 16))")
          for arm in bare shim; do
            name="pressure-$mb-$pol-$frac-$arm-$r"
            d="$WORK/$name.cap"
            mkdir -p "$d"
            if [[ $arm == bare ]]; then
              step "$name" 60 env LD_LIBRARY_PATH="$REPO/ci/build" "$REPO/ci/build/pressure" 16 "$per"
            else
              step "$name" 60 env LD_LIBRARY_PATH="$REPO/ci/build" LD_PRELOAD="$SHIM" CAUSEWAY_OUT="$d" \
                CAUSEWAY_LEVEL=4 CAUSEWAY_RING_MB="$mb" CAUSEWAY_POLICY="$pol" "$REPO/ci/build/pressure" 16 "$per"
            fi
            cps=$(grep -o 'calls_per_s=[0-9]*' "$WORK/$name.out" | cut -d= -f2)
            key="ring${mb}_${pol}_x$frac"
            [[ -n $cps ]] && printf 'pressure\t%s\t%s\t%s_calls_per_s\t%s\n' "$r" "$arm" "$key" "$cps" >> "$TSV"
            if [[ $arm == shim ]]; then
              capture_counts "$d" entries dropped overwritten torn |
                awk -v r="$r" -v k="$key" '{printf "pressure\t%s\tshim\t%s_%s\t%s\n", r, k, $1, $2}' >> "$TSV"
            fi
            rm -rf "$d"
          done
        done
      done
      ;;
    benches)
      # The cargo benches, built off the machine (`cargo bench --no-run`) and carried as
      # .carry/bench-{writer,scan,hotpath}: the ring writer on 1 and 16 threads, the scanner's
      # throughput, the end-to-end hot path per level, policy and thread count.
      say "== benches (carried cargo bench binaries)"
      step build-pressure-b 120 make -s -C "$REPO/ci" build/pressure
      for b in ${BENCHES:-writer scan hotpath}; do
        bin="$REPO/.carry/bench-$b"
        if [[ ! -x $bin ]]; then
          fail "bench $b: $bin missing"
          continue
        fi
        step "bench-$b" 240 env CAUSEWAY_ROOT="$REPO" CAUSEWAY_SHIM="$SHIM" CAUSEWAY_CLI="$CW" "$bin" --bench
        check_rc "bench $b"
        { echo "== bench $b"; cat "$WORK/bench-$b.out"; } >> "$OUT/benches.txt"
      done
      # bench/scan.sh's measurement with carried binaries: `causeway report --json` on a 10 M-entry
      # synthetic capture, 3 runs (seconds, M entries/s).
      if [[ -x $REPO/.carry/synth_capture ]]; then
        step synth10m 120 "$REPO/.carry/synth_capture" "$WORK/scan10m" 10000000 4
        # All CPUs, then (as issue 4's figure asks) two: taskset -c 0,1.
        for cpus in all 0,1; do
          for i in 1 2 3; do
            pin=()
            [[ $cpus != all ]] && pin=(taskset -c "$cpus")
            t0=$(date +%s.%N)
            step "scan10m-$cpus-$i" 120 "${pin[@]}" "$CW" report --json "$WORK/scan10m"
            t1=$(date +%s.%N)
            echo "scan10m cpus=$cpus run $i: $("$PY" -c "print(round($t1 - $t0, 3))") s (rc $RC)" | tee -a "$OUT/benches.txt" >> "$LOG"
          done
        done
        rm -rf "$WORK/scan10m"
      else
        fail "scan10m: .carry/synth_capture missing"
      fi
      ;;
    *) fail "unknown section $sec" ;;
  esac
done
"$PY" "$(dirname "${BASH_SOURCE[0]}")/costs_summary.py" "$TSV" > "$OUT/costs-summary.txt" 2>> "$LOG" ||
  fail "costs_summary.py"
tee -a "$LOG" < "$OUT/costs-summary.txt"
((${#FAILED[@]})) && say "script errors: ${FAILED[*]}"
rm -rf "$WORK"
exit 0

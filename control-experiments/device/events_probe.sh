#!/usr/bin/env bash
# events_probe.sh: issue 19's diagnosis on an H200 — where a timing event's cost goes, and how much the
# events backend lengthens a two-stream copy+kernel step at 10, 25, 80 µs and 1 ms ops.
#
#     OUT=/some/dir bash control-experiments/device/events_probe.sh
#
# Needs .carry/causeway and .carry/libcauseway.so (built off the machine). Steps:
#   1. builds workloads/events_probe.cu and workloads/overlap.cu (nvcc -O2 -arch=sm_90);
#   2. the host cost of each driver call the backend makes (events_probe --micro); then per op size and
#      ROUNDS rounds (variants interleaved): events_probe with no events, the workload's own fixed
#      events, timing off, a pool of 8192 pairs, the backend's checks, its reaper thread, a pool grown
#      while the steps run, only the start or only the end event; and the isolated parts (copy alone,
#      kernel alone) — VARIANTS picks;
#   3. per op size and round: overlap a (300 steps) bare and under causeway record at level 2, level 3
#      events, level 3 events --sample 16, level 3 cupti (ARMS picks; events-old runs the shim
#      .carry/old-libcauseway.so) — the workload's own step median per run.
# Files in $OUT: events_probe.log, probe.tsv, shim.tsv, events_probe-summary.txt.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-300}
BUDGET=${PROBE_BUDGET_S:-500}
# kernel µs : copy KiB (pinned H2D at ~52 GB/s: about the same time)
read -r -a SIZES <<< "${SIZES:-10:512 25:1280 80:4096 1000:51200}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/events_probe.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-probe.XXXXXX")
FAILED=()
RC=0
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

say "== events_probe: $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -n 1); $(nproc) CPUs"
NVCC=$CUDA_HOME/bin/nvcc
[[ -x $NVCC ]] || NVCC=$(command -v nvcc || true)
build_nvcc build-probe "$WORK/events_probe" "$WL/events_probe.cu" -lcuda
build_nvcc build-overlap "$WORK/overlap" "$WL/overlap.cu" -I"$CUDA_HOME/include"
say "causeway: $("$CW" --version 2>&1 | head -n 1)"

PTSV="$OUT/probe.tsv"
printf 'round\tkernel_us\tcopy_kib\tvariant\tstep_us_median\tstep_us_min\trec_ns_median\trec_ns_p90\tlaunch_ns\tcopy_ns\tev_x_us\tev_y_us\n' > "$PTSV"
read -r -a VARIANTS <<< "${VARIANTS:-none fixed fixed-notiming fixed-start fixed-end pool pool-checks pool-reaper pool-checks-reaper pool-grow backend-end x-alone y-alone}"
line=$(timeout -k 5 60 "$WORK/events_probe" --events fixed --steps 10 --micro 2>> "$LOG")
say "host ns per driver call (median of 2000): $(tr ' ' '\n' <<< "$line" | grep '^micro_' | tr '\n' ' ')"
for r in $(seq 1 "$ROUNDS"); do
  for sz in "${SIZES[@]}"; do
    kus=${sz%%:*}
    kib=${sz##*:}
    for v in "${VARIANTS[@]}"; do
      if ((BUDGET - SECONDS < 120)); then
        fail "probe round $r: out of time"
        break 3
      fi
      case $v in
        none) a=(--events none) ;;
        fixed) a=(--events fixed) ;;
        fixed-notiming) a=(--events fixed --notiming) ;;
        fixed-start) a=(--events fixed --only start) ;;
        fixed-end) a=(--events fixed --only end) ;;
        pool) a=(--events pool) ;;
        pool-checks) a=(--events pool --checks) ;;
        pool-reaper) a=(--events pool --reaper) ;;
        pool-checks-reaper) a=(--events pool --checks --reaper) ;;
        pool-grow) a=(--events pool --checks --grow) ;;
        backend-end) a=(--events pool --checks --reaper --pool 1024 --only end) ;;
        x-alone) a=(--events none --part x) ;;
        y-alone) a=(--events none --part y) ;;
      esac
      line=$(timeout -k 5 60 "$WORK/events_probe" --kernel-us "$kus" --copy-kib "$kib" --steps "$STEPS" "${a[@]}" 2>> "$LOG")
      note "probe r$r $kus/$kib $v: $line"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$kus" "$kib" "$v" \
        "$(field step_us_median "$line")" "$(field step_us_min "$line")" "$(field rec_ns_median "$line")" \
        "$(field rec_ns_p90 "$line")" "$(field launch_ns_median "$line")" "$(field copy_ns_median "$line")" \
        "$(field ev_x_us_median "$line")" "$(field ev_y_us_median "$line")" >> "$PTSV"
    done
  done
  say "[ok     ] probe round $r (${SECONDS}s)"
done

STSV="$OUT/shim.tsv"
printf 'round\tkernel_us\tcopy_kib\tarm\tstep_us_median\tstep_us_min\tstep_us_max\n' > "$STSV"
read -r -a ARMS <<< "${ARMS:-bare level2 events events16 cupti bare-ev}"
for r in $(seq 1 "$ROUNDS"); do
  for sz in "${SIZES[@]}"; do
    kus=${sz%%:*}
    kib=${sz##*:}
    for arm in "${ARMS[@]}"; do
      if ((BUDGET - SECONDS < 30)); then
        fail "shim round $r: out of time"
        break 3
      fi
      wl=("$WORK/overlap" a --steps "$STEPS" --warmup 20 --kernel-us "$kus" --copy-kib "$kib")
      cap="$WORK/cap-$arm-$kus-$r"
      case $arm in
        bare) cmd=("${wl[@]}") ;;
        bare-ev) cmd=("${wl[@]}" --timing-events) ;;
        level2) cmd=("$CW" record --level 2 --ring-mb 8 --out "$cap" -- "${wl[@]}") ;;
        events) cmd=("$CW" record --level 3 --backend events --sample 1 --ring-mb 8 --out "$cap" -- "${wl[@]}") ;;
        # The shim of another build beside the CLI (.carry/old-libcauseway.so): A/B in one run.
        events-old) cmd=("$CW" record --shim "$(dirname "$CW")/old-libcauseway.so" --level 3 --backend events --ring-mb 8 --out "$cap" -- "${wl[@]}") ;;
        events16) cmd=("$CW" record --level 3 --backend events --sample 16 --ring-mb 8 --out "$cap" -- "${wl[@]}") ;;
        cupti) cmd=("$CW" record --level 3 --backend cupti --ring-mb 8 --out "$cap" -- "${wl[@]}") ;;
      esac
      line=$(timeout -k 5 60 "${cmd[@]}" 2>> "$LOG" | grep -m1 '^overlap ')
      note "shim r$r $kus/$kib $arm: $line"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$kus" "$kib" "$arm" "$(field step_us_median "$line")" \
        "$(field step_us_min "$line")" "$(field step_us_max "$line")" >> "$STSV"
      rm -rf "$cap"
    done
  done
  say "[ok     ] shim round $r (${SECONDS}s)"
done

python3 - "$PTSV" "$STSV" << 'EOF' | tee "$OUT/events_probe-summary.txt" | tee -a "$LOG"
import csv, statistics, sys
def load(p):
    return list(csv.DictReader(open(p), delimiter="\t"))
def med(xs):
    xs = [float(x) for x in xs if x not in ("-", "", None)]
    return statistics.median(xs) if xs else float("nan")
probe, shim = load(sys.argv[1]), load(sys.argv[2])
sizes = sorted({(int(r["kernel_us"]), int(r["copy_kib"])) for r in probe + shim})
print("probe: median over rounds of each run's median step (us); rec = host ns per cuEventRecord (median / p90)")
for k, c in sizes:
    rows = [r for r in probe if int(r["kernel_us"]) == k]
    print(f"  ops {k} us / {c} KiB")
    for v in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == v]
        print(f"    {v:20s} step {med(r['step_us_median'] for r in rs):8.1f}  min {med(r['step_us_min'] for r in rs):8.1f}"
              f"  rec {med(r['rec_ns_median'] for r in rs):8.0f} / {med(r['rec_ns_p90'] for r in rs):8.0f}"
              f"  launch {med(r['launch_ns'] for r in rs):7.0f}  copy {med(r['copy_ns'] for r in rs):7.0f}"
              f"  ev x {med(r['ev_x_us'] for r in rs):7.1f} y {med(r['ev_y_us'] for r in rs):7.1f}")
print("overlap a under the shim: median over rounds of the workload's median step (us)")
for k, c in sizes:
    rows = [r for r in shim if int(r["kernel_us"]) == k]
    cells = []
    for a in dict.fromkeys(r["arm"] for r in rows):
        cells.append(f"{a} {med(r['step_us_median'] for r in rows if r['arm'] == a):.1f}")
    print(f"  ops {k} us: " + ", ".join(cells))
EOF
if ((${#FAILED[@]})); then
  say "SCRIPT ERRORS: ${FAILED[*]}"
  exit 1
fi
say "events_probe.sh: done in ${SECONDS}s"

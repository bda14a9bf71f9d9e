#!/usr/bin/env bash
# scan.sh: scanner throughput — `causeway report --json` on a synthetic level-3 capture of N entries
# (scanner/examples/synth_capture.rs: per op a runtime launch holding a driver launch, a device
# interval; every 64 ops an NVTX step and a sync; durations jittered, as measured ones vary), RUNS
# times; prints seconds and entries/s per run and min/median/max.
#     bash bench/scan.sh [ENTRIES=10000000] [RUNS=3]
# Environment:
#   CW=path        the causeway binary to time (default: built here, target/release/causeway)
#   SYNTH=path     the synth_capture binary (default: built here)
#   BASELINE=path  another causeway binary, timed in the same run on the same capture, runs
#                  alternating; prints both and the ratio of medians, and whether their JSON agrees
#   ARMS="name=path ..."  more binaries timed the same way beside BASELINE (each run starts with a
#                  different arm, in turn); each is compared with the baseline like the new one
#   CPUS=list      run every report under `taskset -c list` (e.g. CPUS=0,1 for two cores)
#   CLOCK=tsc|monotonic  the capture's tick clock (default tsc, what the shim writes on an x86 host
#                  with an invariant TSC; every time read then goes through the tick conversion)
# Without CW and SYNTH it needs cargo; with both (carried binaries) it runs where cargo is not.
set -euo pipefail
N=${1:-10000000}
RUNS=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# CW, SYNTH
# shellcheck source=bench/tools.sh
source bench/tools.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/causeway-scan.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$SYNTH" "$dir/cap" "$N" 4 "${CLOCK:-tsc}"
pin=()
[[ -n ${CPUS:-} ]] && pin=(taskset -c "$CPUS")
echo "cpus: $(nproc) online${CPUS:+, reports pinned to $CPUS}; $(uname -r); clock ${CLOCK:-tsc}"
arms=(new)
declare -A bin=([new]=$CW)
if [[ -n ${BASELINE:-} ]]; then
  arms=(baseline new)
  bin[baseline]=$BASELINE
  for arm in ${ARMS:-}; do
    arms+=("${arm%%=*}")
    bin[${arm%%=*}]=${arm#*=}
  done
fi
declare -A times=()
for i in $(seq 1 "$RUNS"); do
  # Rotate which binary goes first, so none always gets the warmer cache.
  k=$(( (i - 1) % ${#arms[@]} ))
  order=("${arms[@]:k}" "${arms[@]:0:k}")
  for a in "${order[@]}"; do
    t0=$(date +%s.%N)
    "${pin[@]}" "${bin[$a]}" report --json "$dir/cap" > "$dir/$a.json"
    t1=$(date +%s.%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}')
    times[$a]+="$s "
    awk -v i="$i" -v a="$a" -v s="$s" -v n="$N" 'BEGIN {printf "run %d %s: %.3f s, %.2f M entries/s\n", i, a, s, n / s / 1e6}'
  done
done
declare -A med=()
for a in "${arms[@]}"; do
  # shellcheck disable=SC2086
  line=$(printf '%s\n' ${times[$a]} | sort -n | awk -v n="$N" -v a="$a" '{v[NR]=$1} END {m=v[int((NR+1)/2)]; printf "%s %s: seconds min/median/max: %.3f / %.3f / %.3f; M entries/s at the median: %.2f\n", m, a, v[1], m, v[NR], n/m/1e6}')
  med[$a]=${line%% *}
  echo "${line#* }"
done
if [[ -n ${BASELINE:-} ]]; then
  mb=${med[baseline]}
  for a in "${arms[@]:1}"; do
    awk -v n="${med[$a]}" -v b="$mb" -v a="$a" 'BEGIN {printf "median %s / baseline: %.3f\n", a, n / b}'
    if cmp -s "$dir/baseline.json" "$dir/$a.json"; then
      echo "report JSON of $a: identical"
    else
      echo "report JSON of $a: DIFFERS"
    fi
  done
fi

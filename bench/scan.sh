#!/usr/bin/env bash
# scan.sh: scanner throughput — `causeway report --json` on a synthetic level-3 capture of N entries
# (scanner/examples/synth_capture.rs: per op a runtime launch holding a driver launch, a device
# interval; every 64 ops an NVTX step and a sync), RUNS times; prints seconds and entries/s per run and
# min/median/max.
#     bash bench/scan.sh [ENTRIES=10000000] [RUNS=3]
set -euo pipefail
N=${1:-10000000}
RUNS=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -q -p causeway-scanner --bin causeway --example synth_capture
dir=$(mktemp -d "${TMPDIR:-/tmp}/causeway-scan.XXXXXX")
trap 'rm -rf "$dir"' EXIT
target/release/examples/synth_capture "$dir/cap" "$N" 4
echo "cpus: $(nproc); $(uname -r)"
times=()
for i in $(seq 1 "$RUNS"); do
  t0=$(date +%s.%N)
  target/release/causeway report --json "$dir/cap" > /dev/null
  t1=$(date +%s.%N)
  s=$(echo "$t1 - $t0" | bc -l)
  times+=("$s")
  printf 'run %d: %.3f s, %.2f M entries/s\n' "$i" "$s" "$(echo "$N / $s / 1000000" | bc -l)"
done
printf '%s\n' "${times[@]}" | sort -n | awk -v n="$N" '{a[NR]=$1} END {m=a[int((NR+1)/2)]; printf "seconds min/median/max: %.3f / %.3f / %.3f; M entries/s at the median: %.2f\n", a[1], m, a[NR], n/m/1e6}'

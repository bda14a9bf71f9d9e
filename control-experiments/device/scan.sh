#!/usr/bin/env bash
# scan.sh (device machine): scanner throughput on the device machine's CPU — `causeway report --json`
# on a 10 M-entry synthetic capture (bench/scan.sh), this commit's binary paired with a baseline
# binary in the same run, on one CPU (the per-core figure), two (taskset -c 0,1, issue 4's figure),
# four and all of them; then the scanner's cargo bench on two CPUs. Nothing here needs a GPU or
# cargo: the binaries are carried.
#     OUT=$OUT bash control-experiments/device/scan.sh
# Carried (.carry/, built off the machine): causeway (this commit), causeway-base (the baseline:
# say which commit in the results), synth_capture, and optionally bench-scan
# (`cargo bench -p causeway-scanner --bench scan --no-run`). RUNS (default 7) runs per binary;
# CPUSETS (default "0 0,1 0-3 all") the CPU lists to pin reports to; CLOCKS (default
# "tsc monotonic") the synthetic capture's tick clocks, each a run of its own (TSC is what the shim
# writes on this machine; monotonic is what the figures before 2026-11-29's fourth session measured).
# ARMS ("name=$PWD/.carry/other …") times more carried binaries beside the two (bench/scan.sh).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
RUNS=${RUNS:-7}
for f in causeway causeway-base synth_capture; do
  [[ -x $C/$f ]] || { echo "scan.sh: $C/$f missing (build it here and carry .carry)" >&2; exit 2; }
done
{
  echo "date: $(date -u +%FT%TZ)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|NUMA node\(s\))'
  echo "kernel: $(uname -r); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
  for clock in ${CLOCKS:-tsc monotonic}; do
    for cpus in ${CPUSETS:-0 0,1 0-3 all}; do
      echo "== reports on cpus: $cpus, clock $clock"
      pin=$cpus
      [[ $cpus == all ]] && pin=
      CW=$C/causeway SYNTH=$C/synth_capture BASELINE=$C/causeway-base CPUS=$pin CLOCK=$clock \
        bash "$REPO/bench/scan.sh" 10000000 "$RUNS"
    done
  done
  if [[ -x $C/bench-scan ]]; then
    echo "== cargo bench scan (1 M entries), cpus 0,1"
    taskset -c 0,1 "$C/bench-scan" --bench
  fi
} 2>&1 | tee "$OUT/scan.txt"

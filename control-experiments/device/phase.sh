#!/usr/bin/env bash
# phase.sh (device machine): what state the machine's CPU and memory are in while the scanner is
# timed, to read the two speeds its starts show (docs/results/2026-11-29-scanner-throughput.md):
# a probe (bench/phase_probe.c: ns per step of one dependent integer chain and of eight; ms per MiB to fault in fresh
# memory in 4 KiB and in huge pages; GB/s reading memory), then `causeway report --json` on a 10 M-entry synthetic TSC
# capture, pinned to CPU 0, RUNS times with transparent huge pages and RUNS times without
# (alternating; timed.py: wall, user, sys, faults, /proc/vmstat's THP and compaction counters),
# then the probe again. Needs no GPU and no cargo; carried: .carry/causeway, .carry/synth_capture.
#     OUT=$OUT RUNS=7 bash control-experiments/device/phase.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
RUNS=${RUNS:-7}
for f in causeway synth_capture; do
  [[ -x $C/$f ]] || { echo "phase.sh: $C/$f missing (build it here and carry .carry)" >&2; exit 2; }
done
T=$(mktemp -d /tmp/causeway-phase.XXXXXX)
trap 'rm -rf "$T"' EXIT
gcc -O2 -o "$T/probe" "$REPO/bench/phase_probe.c" || exit 2
{
  echo "date: $(date -u +%FT%TZ)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|NUMA node\(s\))'
  echo "kernel: $(uname -r); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled); defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
  grep -E '^(MemTotal|MemFree|MemAvailable)' /proc/meminfo
  echo "buddyinfo (free blocks per order, 0..10):"; cat /proc/buddyinfo
  echo "== probe before"; taskset -c 0 "$T/probe" 128
  "$C/synth_capture" "$T/cap" 10000000 4 tsc
  echo "== reports (cpu 0), one JSON line each"
  for r in $(seq "$RUNS"); do
    for arm in thp no-thp; do
      flag=; [[ $arm == no-thp ]] && flag=--no-thp
      python3 "$REPO/control-experiments/device/timed.py" $flag --label "run $r" -- \
        env RAYON_NUM_THREADS=1 taskset -c 0 "$C/causeway" report --json "$T/cap"
    done
    taskset -c 0 "$T/probe" 0 read | grep -E '^(wide|read pass 3)' | sed "s/^/run $r: /"
  done
  echo "== probe after"; taskset -c 0 "$T/probe" 128
  echo "buddyinfo after:"; cat /proc/buddyinfo
} 2>&1 | tee "$OUT/phase.txt"
python3 - "$OUT/phase.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for thp in (True, False):
    rs = [r for r in rows if r["thp"] == thp and r["rc"] == 0]
    if not rs:
        continue
    print(f"THP {'on ' if thp else 'off'}: {len(rs)} runs")
    for k in ("wall_s", "user_s", "sys_s", "steal_s", "minflt", "thp_fault_alloc", "thp_fault_fallback", "compact_stall"):
        v = sorted(r[k] for r in rs)
        print(f"  {k:18} min {v[0]:>9} median {statistics.median(v):>9} max {v[-1]:>9}")
PY

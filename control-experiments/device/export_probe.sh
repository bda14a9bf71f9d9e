#!/usr/bin/env bash
# export_probe.sh (device machine): where the Parquet and Chrome exports' time goes on a 16-CPU machine
# (issue 21), as wall, user and system seconds, peak RSS and minor faults per arm, arms interleaved
# round by round on one synthetic level-3 capture of N entries.
#   report     causeway report --json (the baseline)
#   parquet    causeway export --format parquet            (.carry/causeway)
#   parquet-X  the same with .carry/causeway-X, for each carried variant X (see the results file)
#   chrome     causeway export --format chrome, to the disk
#   chrome-shm the same, written under /dev/shm (no disk)
#   chrome-X   the same with .carry/causeway-X
#   perfetto   causeway export --format perfetto
#   why        causeway why --json --step slowest (the causal graph's walk)
#   dd         the disk alone: as many bytes as the Chrome file, written and synced (dd conv=fsync)
# Any arm but dd and chrome-shm takes a variant's suffix (`report-big`: .carry/causeway-big).
#     OUT=$OUT bash control-experiments/device/export_probe.sh [N=10000000] [RUNS=5]
# Carried (.carry/): causeway, synth_capture, and causeway-* variants (VARIANTS, default "big nosync").
# ARMS (default: report parquet chrome chrome-shm dd, then parquet-X chrome-X per variant) picks the
# arms; a Chrome arm measured before dd gives it its size. FRESH=1 removes each export's output after
# it is measured (untimed), so that no run also pays for unlinking the last run's output.
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
N=${1:-10000000}
RUNS=${2:-5}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
VARIANTS=${VARIANTS:-big nosync}
for f in causeway synth_capture $(printf 'causeway-%s ' $VARIANTS); do
  [[ -x $C/$f ]] || { echo "export_probe.sh: $C/$f missing (build it here and carry .carry)" >&2; exit 2; }
done
# timed (carried binaries: nothing is built)
export CW=$C/causeway SYNTH=$C/synth_capture
# shellcheck source=bench/tools.sh
source "$REPO/bench/tools.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/export-probe.XXXXXX")
shm=$(mktemp -d /dev/shm/export-probe.XXXXXX)
trap 'rm -rf "$dir" "$shm"' EXIT
{
  echo "date: $(date -u +%FT%TZ); entries: $N; runs: $RUNS; variants: $VARIANTS"
  lscpu | grep -E '^(Model name|CPU\(s\))'
  echo "kernel: $(uname -r); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled); disk: $(df -h "$dir" | tail -1)"
  "$SYNTH" "$dir/cap" "$N" 4 tsc > /dev/null
  if [[ -n ${ARMS:-} ]]; then
    read -r -a arms <<< "$ARMS"
  else
    arms=(report parquet chrome chrome-shm dd)
    for v in $VARIANTS; do arms+=("parquet-$v" "chrome-$v"); done
  fi
  declare -A res
  chrome_bytes=0
  for r in $(seq "$RUNS"); do
    for a in "${arms[@]}"; do
      bin=$C/causeway
      case $a in
        *-shm) ;;
        *-*) bin=$C/causeway-${a#*-} ;;
      esac
      case $a in
        report*) cmd=("$bin" report --json "$dir/cap") ;;
        why*) cmd=("$bin" why --json --step slowest "$dir/cap") ;;
        perfetto*) cmd=("$bin" export --format perfetto --force -o "$dir/out.$a" "$dir/cap") ;;
        parquet*) cmd=("$bin" export --format parquet --force -o "$dir/out.$a" "$dir/cap") ;;
        chrome-shm) cmd=("$bin" export --format chrome --force -o "$shm/out.json" "$dir/cap") ;;
        chrome*) cmd=("$bin" export --format chrome --force -o "$dir/out.$a" "$dir/cap") ;;
        dd) cmd=(dd if=/dev/zero of="$dir/out.dd" bs=16M count=$(((chrome_bytes >> 24) + 1)) conv=fsync status=none) ;;
      esac
      timed "$dir/time" "${cmd[@]}" || exit 1
      read -r e m u s f < "$dir/time"
      res[$a]+="$e $u $s $m $f;"
      [[ $a == chrome* && $a != chrome-shm ]] && chrome_bytes=$(stat -c %s "$dir/out.$a")
      rm -rf "$dir/out.dd" "$shm/out.json"
      # FRESH=1: each export writes a new path (the last round's output removed, untimed), so its time
      # is not also the removal of the output it replaces (--force unlinks the old file or directory
      # inside the timed run: 2.5 GB of page cache for Chrome at 10 M).
      [[ ${FRESH:-0} == 1 && $a != dd* && $a != report* && $a != why* ]] && rm -rf "$dir/out.$a"
    done
  done
  echo "chrome file: $chrome_bytes bytes"
  for a in "${arms[@]}"; do echo "$a|${res[$a]}"; done | python3 -c '
import sys, statistics as st
rows = [l.rstrip("\n").split("|") for l in sys.stdin]
data = {a: [list(map(float, r.split())) for r in v.split(";") if r] for a, v in rows}
base = st.median(x[0] for x in data["report"])
print("arm              wall s: min median max   /report   user s  sys s (medians)   RSS MB   minflt")
for a, xs in data.items():
    w = [x[0] for x in xs]
    med = lambda i: st.median(x[i] for x in xs)
    print(f"{a:15} {min(w):7.3f} {st.median(w):7.3f} {max(w):7.3f}   {st.median(w) / base:5.1f}x   "
          f"{med(1):7.2f} {med(2):6.2f}   {med(3) / 1024:7.0f}   {med(4):8.0f}")
print("raw (wall user sys rss_kb minflt per run):")
for a, xs in data.items():
    print(a, xs)
'
} 2>&1 | tee "$OUT/export_probe-$N.txt"

#!/usr/bin/env bash
# exports.sh (device machine): what the exports and the causal graph cost against the report on the
# device machine's CPU (16 vCPUs; issues 21 and 23) — bench/exports.sh at 1 M and 10 M entries and
# bench/why.sh at 10 M, with the carried binaries; plus how fast this machine hands out fresh memory
# (first touch against re-touch), which the dev VM's figures are dominated by. No GPU, no cargo.
#     OUT=$OUT bash control-experiments/device/exports.sh
# Carried (.carry/): causeway, synth_capture; optionally causeway-base (a before/after pair: its `why`
# and Perfetto export run as arms of their own; say which commit in the results) and bench-scan
# (`cargo bench -p causeway-scanner --bench scan --no-run`: the report, the graph from the capture,
# the timeline and the graph alone at 10 M entries in one process, on one CPU and on all; with
# bench-scan-base, an older build of it, the two alternate, ROUNDS times). RUNS1 (default 7), RUNS10
# (default 3) rounds; PARTS (default "exports why scan"; also "write": bench/write_paths.c, how fast
# this machine takes a large file written by one thread and by all) picks what runs. BASE_ARMS: which
# exports causeway-base runs (bench/exports.sh).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
for f in causeway synth_capture; do
  [[ -x $C/$f ]] || { echo "exports.sh: $C/$f missing (build it here and carry .carry)" >&2; exit 2; }
done
export CW=$C/causeway SYNTH=$C/synth_capture
[[ -x $C/causeway-base ]] && export BASE=$C/causeway-base
{
  echo "date: $(date -u +%FT%TZ)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core)'
  echo "kernel: $(uname -r); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
  echo "== fresh memory: one 1 GiB buffer touched once (first touch), then four times (mostly re-touch)"
  dd if=/dev/zero of=/dev/null bs=1G count=1 2>&1 | tail -n 1
  dd if=/dev/zero of=/dev/null bs=1G count=4 2>&1 | tail -n 1
  PARTS=${PARTS:-exports why scan}
  if [[ $PARTS == *write* ]]; then
    wdir=$(mktemp -d "${TMPDIR:-/tmp}/causeway-write.XXXXXX")
    echo "== bench/write_paths.c in $wdir ($(df -T "$wdir" | awk 'NR == 2 {print $2}')): a Perfetto-sized (370 MiB) and a Chrome-sized (2500 MiB) output"
    gcc -O2 -pthread "$REPO/bench/write_paths.c" -o "$wdir/write_paths"
    for mib in 370 2500; do "$wdir/write_paths" "$wdir" "$mib" "$(nproc)"; done
    rm -rf "$wdir"
  fi
  if [[ $PARTS == *exports* ]]; then
    echo "== bash bench/exports.sh 1000000 ${RUNS1:-7}"
    bash "$REPO/bench/exports.sh" 1000000 "${RUNS1:-7}"
  fi
  if [[ $PARTS == *why* ]]; then
    echo "== bash bench/why.sh 10000000 ${RUNS10:-3}"
    bash "$REPO/bench/why.sh" 10000000 "${RUNS10:-3}"
  fi
  if [[ $PARTS == *exports* ]]; then
    echo "== bash bench/exports.sh 10000000 ${RUNS10:-3}"
    bash "$REPO/bench/exports.sh" 10000000 "${RUNS10:-3}"
  fi
  benches=()
  [[ $PARTS == *scan* && -x $C/bench-scan ]] && benches=(bench-scan)
  [[ ${#benches[@]} -gt 0 && -x $C/bench-scan-base ]] && benches=(bench-scan-base bench-scan)
  for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
    for threads in 1 all; do
      for b in "${benches[@]}"; do
        echo "== $b (round $round) --bench full_report graph_from_capture timeline causal_graph, 10 M entries, RAYON_NUM_THREADS=$threads"
        ( [[ $threads != all ]] && export RAYON_NUM_THREADS=$threads
          CAUSEWAY_BENCH_ENTRIES=10000000 "$C/$b" --bench full_report graph_from_capture timeline causal_graph )
      done
    done
  done
} 2>&1 | tee "$OUT/exports.txt"

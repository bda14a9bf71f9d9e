#!/usr/bin/env bash
# release_probe.sh (device machine): two before/after pairs in one call, on the device machine's CPU.
#  1. Parquet (issue 21): `bench/exports.sh` at 1 M and 10 M entries with `.carry/causeway-base` (an
#     older build) as the `parquet-base` arm.
#  2. Giving the rings' pages back (`Capture::release_pages`): `bench/why.sh` and the Perfetto export
#     at 10 M entries with `.carry/causeway-keep` (the same commit as `.carry/causeway`, built with the
#     release call made a no-op: the results file says how) as the base arms. It answers whether the
#     release is what made `why` and Perfetto ~10 % slower on this machine (2026-12-03 results).
#     OUT=$OUT bash control-experiments/device/release_probe.sh
# Carried (.carry/): causeway, causeway-base, causeway-keep, synth_capture. RUNS1 (default 7), RUNS10
# (default 5) rounds.
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
C=$REPO/.carry
for f in causeway causeway-base causeway-keep synth_capture; do
  [[ -x $C/$f ]] || { echo "release_probe.sh: $C/$f missing (build it here and carry .carry)" >&2; exit 2; }
done
export CW=$C/causeway SYNTH=$C/synth_capture
{
  echo "date: $(date -u +%FT%TZ)"
  lscpu | grep -E '^(Model name|CPU\(s\))'
  echo "kernel: $(uname -r); THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
  echo "== parquet against causeway-base: bash bench/exports.sh 1000000 ${RUNS1:-7}"
  BASE=$C/causeway-base BASE_ARMS=parquet bash "$REPO/bench/exports.sh" 1000000 "${RUNS1:-7}"
  echo "== parquet against causeway-base: bash bench/exports.sh 10000000 ${RUNS10:-5}"
  BASE=$C/causeway-base BASE_ARMS=parquet bash "$REPO/bench/exports.sh" 10000000 "${RUNS10:-5}"
  echo "== pages kept (why-base) against given back (why): bash bench/why.sh 10000000 ${RUNS10:-5}"
  BASE=$C/causeway-keep bash "$REPO/bench/why.sh" 10000000 "${RUNS10:-5}"
  echo "== pages kept (perfetto-base) against given back (perfetto): bash bench/exports.sh 10000000 ${RUNS10:-5}"
  BASE=$C/causeway-keep BASE_ARMS=perfetto bash "$REPO/bench/exports.sh" 10000000 "${RUNS10:-5}"
} 2>&1 | tee "$OUT/release_probe.txt"

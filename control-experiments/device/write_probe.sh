#!/usr/bin/env bash
# write_probe.sh (device machine): how fast this machine puts a large file on its disk and in memory,
# by one thread's write(2) against several threads' pwrite(2) or copies into a shared mapping
# (bench/write_probe.c), each synced; decides whether the Chrome export can be written faster than
# one stream (issue 21). Rounds interleave the modes.
#     OUT=$OUT bash control-experiments/device/write_probe.sh [BYTES=2500000000] [ROUNDS=3]
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the logs}
BYTES=${1:-2500000000}
ROUNDS=${2:-3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
gcc -O2 -pthread "$REPO/bench/write_probe.c" -o "$OUT/write_probe" || exit 1
dir=$(mktemp -d "${TMPDIR:-/tmp}/write-probe.XXXXXX")
trap 'rm -rf "$dir" /dev/shm/write-probe.bin' EXIT
{
  echo "date: $(date -u +%FT%TZ); bytes: $BYTES; rounds: $ROUNDS"
  echo "kernel: $(uname -r); disk: $(df -T "$dir" | tail -1)"
  echo "where mode threads bytes write_s sync_s total_s GB/s"
  for r in $(seq "$ROUNDS"); do
    for m in "write 1" "pwrite 1" "pwrite 16" "mmap 4" "mmap 16" "fmmap 4" "fmmap 16"; do
      echo "disk $("$OUT/write_probe" "$dir/probe.bin" "$BYTES" $m)"
      echo "shm  $("$OUT/write_probe" /dev/shm/write-probe.bin "$BYTES" $m)"
    done
  done
} 2>&1 | tee "$OUT/write_probe.txt"

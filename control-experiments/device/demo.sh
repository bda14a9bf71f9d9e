#!/usr/bin/env bash
# Records the small demo capture shipped in demo/ (the README's main job reports on it when no GPU is
# present): the PyTorch spine workload, 3 steps, at level 3 with the CUPTI backend, 1 MiB rings.
# Writes $OUT/demo-capture.tar.gz. Needs .carry/causeway and .carry/libcauseway.so.
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
timeout 180 .carry/causeway record --level 3 --backend cupti --ring-mb 1 --out "$work" -- \
  python3 control-experiments/workloads/torch_spine.py --steps 3 --replays 2 --warmup 1 2> "$work/record.err"
echo "demo record exit: $?"; tail -n 3 "$work/record.err"
cap=$(sed -n 's/^causeway: capture written to //p' "$work/record.err" | tail -n 1)
[ -n "$cap" ] && tar -czSf "$OUT/demo-capture.tar.gz" -C "$(dirname "$cap")" "$(basename "$cap")" &&
  ls -la "$OUT/demo-capture.tar.gz" && .carry/causeway report "$cap" | head -30

#!/usr/bin/env bash
# demo_capture.sh: records the capture shipped as demo/h200-torch-level3.tar.gz (the README's embedded
# default): torch_spine.py at level 3 with CUPTI, 40 steps after 3 warm-up steps marked as such
# ("warmup" ranges), a CUDA graph replayed, small rings. Writes $OUT/h200-torch-level3.tar.gz and the
# report of it ($OUT/demo-report.txt).
#     OUT=/some/dir bash control-experiments/device/demo_capture.sh
set -euo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-demo.XXXXXX")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1
"$CW" record --level 3 --ring-mb 1 --out "$WORK" -- python3 \
  "$REPO/control-experiments/workloads/torch_spine.py" --steps 40 --warmup 3 --mark-warmup 2> "$WORK/record.err" |
  tee "$WORK/program.out"
cat "$WORK/record.err"
cap=$(sed -n 's/^causeway: capture written to //p' "$WORK/record.err" | tail -n 1)
"$CW" report "$cap" > "$OUT/demo-report.txt" 2>&1 || true
"$CW" report --steps "$cap" >> "$OUT/demo-report.txt" 2>&1 || true
tar -czf "$OUT/h200-torch-level3.tar.gz" -C "$(dirname "$cap")" "$(basename "$cap")"
ls -la "$OUT"
head -c 6000 "$OUT/demo-report.txt"

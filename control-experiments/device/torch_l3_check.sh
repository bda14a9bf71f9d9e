#!/usr/bin/env bash
# Quick re-check of level 3 on PyTorch (shared cudart) after a change: association summary of the torch
# spine workload, and the tiny-kernel loop bare / torch.profiler / level 3 (3 interleaved rounds).
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
w=$(mktemp -d)
{
  timeout 120 .carry/causeway record --level 3 --backend cupti --out "$w/cap" -- python3 control-experiments/workloads/torch_spine.py > "$w/t.out" 2> "$w/t.err"
  echo "torch exit $?: $(tail -n 1 "$w/t.out")"
  cap=$(sed -n 's/^causeway: capture written to //p' "$w/t.err" | tail -n 1)
  .carry/causeway report "$cap" 2>&1 | grep -E "^capture|intervals:|causality"
  for r in 1 2 3; do
    echo "round $r bare $(timeout 60 python3 control-experiments/workloads/tiny_loop.py 2>&1 | tail -n 1)"
    echo "round $r profiler $(timeout 60 python3 control-experiments/workloads/tiny_loop.py --profile 2>&1 | tail -n 1)"
    echo "round $r level3 $(timeout 60 .carry/causeway record --level 3 --backend cupti --out "$w/l3" -- python3 control-experiments/workloads/tiny_loop.py 2> /dev/null | tail -n 1)"
  done
} 2>&1 | tee "$OUT/torch-l3-check.txt"

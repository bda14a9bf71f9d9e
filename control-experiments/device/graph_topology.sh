#!/usr/bin/env bash
# CUDA graph topology on the H200 (issue 23): control-experiments/workloads/graph_topo.cu (a hand-built
# diamond with a child graph, child graphs two deep, a graph captured across two streams) recorded at
# level 3 (CUPTI), exported as the causal graph; graph_topology_check.py compares each graph launch's
# `graph_edge` edges with the dependencies the program defined, and asks `why` about the node that
# waits for the long one. Writes $OUT/graph_topology.txt (and the graph export).
#     OUT=… bash control-experiments/device/graph_topology.sh
set -uo pipefail
: "${OUT:?set OUT}"
cd "$(dirname "$0")/../.."
CW=$PWD/.carry/causeway
W=$(mktemp -d)
LAUNCHES=${LAUNCHES:-4}
{
  echo "date: $(date -u +%FT%TZ) $(nvidia-smi -L | head -n 1)"
  echo "command: OUT=… LAUNCHES=$LAUNCHES bash control-experiments/device/graph_topology.sh"
  /usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -cudart=shared -o "$W/graph_topo" \
    control-experiments/workloads/graph_topo.cu || exit 1
  "$W/graph_topo" "$LAUNCHES" > "$W/bare.txt" || { echo "bare run failed"; exit 1; }
  "$CW" record --level 3 --out "$W/caps" -- "$W/graph_topo" "$LAUNCHES" > "$W/traced.txt" 2> "$W/record.err"
  echo "record rc=$? ($(grep -c . "$W/record.err") stderr lines)"
  cmp -s "$W/bare.txt" "$W/traced.txt" && echo "output: same bare and traced" || echo "output: DIFFERS"
  cap=$(ls -d "$W"/caps/cw-* | head -n 1)
  "$CW" report "$cap" 2>&1 | sed -n '1,12p'
  "$CW" export --format graph --force -o "$OUT/graph_topo.graph.json" "$cap" 2>&1
  python3 control-experiments/device/graph_topology_check.py "$W/bare.txt" "$OUT/graph_topo.graph.json"
  echo "rc(check)=$?"
  "$CW" why --kernel 'tD(int*)#1' "$cap" 2>&1 | head -n 12
  "$CW" why --json --kernel 'tS(int*)#2' "$cap" > "$OUT/why_tS.json" 2>&1
  python3 - "$OUT/why_tS.json" << 'PY'
import json, sys
w = json.load(open(sys.argv[1]))
print("why tS#2:", w["cause"], "complete" if w["complete"] else "INCOMPLETE",
      [(l["edge"], l["what"][:40]) for l in w["chain"][:3]])
PY
} 2>&1 | tee "$OUT/graph_topology.txt"

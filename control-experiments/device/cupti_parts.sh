#!/usr/bin/env bash
# cupti_parts.sh: what each part of level 3's CUPTI backend costs per launch, on a C launch loop
# (workloads/launch_loop.cu: an empty kernel, a sync every 64 launches) — steadier than Python's.
#
#     OUT=/some/dir bash control-experiments/device/cupti_parts.sh
#
# Arms (interleaved, order rotating by one each round; ROUNDS rounds, CPUs PIN pinned):
#   bare; cuptifloor (CUPTI alone, no causeway: cupti_count.so, CONCURRENT_KERNEL only);
#   level2; l3cupti (level 3 cupti as set up by default: callback correlation since issue 26);
#   l3ext (external correlation); l3cupticb (callback correlation, named); and external correlation
#   with one part changed (CAUSEWAY_CUPTI_DIAG): d_kernel (CONCURRENT_KERNEL alone, nothing tied),
#   d_noapi (no RUNTIME/DRIVER kinds), d_rtkind (RUNTIME only), d_nocopies (no MEMCPY/MEMSET),
#   d_nortcb (no runtime callbacks), d_discard (buffers returned unread).
# Per arm: the run's median µs/launch; added = arm − bare of the same round; min/median/max.
# Files in $OUT: cupti_parts.log, cupti_parts.tsv (round, arm, µs/op), cupti_parts-summary.txt.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
ROUNDS=${ROUNDS:-9}
BUDGET=${PARTS_BUDGET_S:-540}
N=${PERF_N:-20000}
REPS=${PERF_REPS:-7}
PIN=${PIN:-2-5}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/cupti_parts.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-parts.XXXXXX")
unset CAUSEWAY_CUPTI_CORRELATION CAUSEWAY_CUPTI_DIAG
FAILED=()
RC=0
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

say "== cupti_parts: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); pinned to CPUs $PIN"
build_cupti_count
step build-loop 120 "$NVCC" -O2 -arch=sm_90 -cudart=shared -o "$WORK/launch_loop" "$WL/launch_loop.cu"
check_rc build-loop
LL=(taskset -c "$PIN" "$WORK/launch_loop" "$N" "$REPS")
read -r -a ARMS <<< "${ARMS:-bare cuptifloor level2 l3cupti l3ext l3cupticb d_kernel d_noapi d_rtkind d_nocopies d_nortcb d_discard}"
TSV="$OUT/cupti_parts.tsv"
printf 'round\tarm\tus_per_op\n' > "$TSV"
l3() { cmd=(env "$@" "$CW" record --level 3 --backend cupti --out "$cap" -- "${LL[@]}"); }
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((${#ARMS[@]} - 1))); do
    arm=${ARMS[$(((i + r - 1) % ${#ARMS[@]}))]}
    cap="$WORK/cap-$arm-$r"
    case $arm in
      bare) cmd=("${LL[@]}") ;;
      cuptifloor) cmd=(env CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$WORK/floor-$r.json" "${LL[@]}") ;;
      level2) cmd=("$CW" record --level 2 --out "$cap" -- "${LL[@]}") ;;
      l3cupti) l3 X=1 ;;
      l3ext) l3 CAUSEWAY_CUPTI_CORRELATION=external ;;
      l3cupticb) l3 CAUSEWAY_CUPTI_CORRELATION=callback ;;
      d_kernel) l3 CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=kernel-only ;;
      d_noapi) l3 CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=no-api-kinds ;;
      d_rtkind) l3 CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=runtime-kind-only ;;
      d_nocopies) l3 CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=no-copies ;;
      d_nortcb) l3 CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=no-runtime-cb ;;
      d_discard) l3 CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=discard ;;
      *) say "unknown arm $arm"; continue ;;
    esac
    step "$arm-$r" 60 "${cmd[@]}"
    check_rc "$arm-$r"
    v=$(grep -o 'median=[0-9.]*' "$WORK/$arm-$r.out" 2>/dev/null | head -1 | cut -d= -f2)
    [[ -n $v ]] && printf '%s\t%s\t%s\n' "$r" "$arm" "$v" >> "$TSV"
    rm -rf "$cap"
  done
done
python3 - "$TSV" > "$OUT/cupti_parts-summary.txt" <<'PYEOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["arm"], {})[int(r["round"])] = float(r["us_per_op"])
bare = by.get("bare", {})
mmm = lambda v: (min(v), statistics.median(v), max(v))
print("launch_loop (empty kernel, sync every 64), us/launch; added = arm - bare of the same round")
print(f"{'arm':<11} {'runs':>4} {'min':>7} {'median':>7} {'max':>7} | {'added min':>9} {'median':>7} {'max':>7}")
for arm in by:
    v = list(by[arm].values())
    line = f"{arm:<11} {len(v):>4} {min(v):>7.3f} {statistics.median(v):>7.3f} {max(v):>7.3f}"
    a = [by[arm][r] - bare[r] for r in by[arm] if r in bare]
    if arm != "bare" and a:
        line += " | {:>9.3f} {:>7.3f} {:>7.3f}".format(*mmm(a))
    print(line)
PYEOF
tee -a "$LOG" < "$OUT/cupti_parts-summary.txt"
((${#FAILED[@]})) && say "script errors: ${FAILED[*]}"
exit 0

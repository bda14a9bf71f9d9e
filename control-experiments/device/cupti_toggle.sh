#!/usr/bin/env bash
# cupti_toggle.sh: can CUPTI be on for one window of launches in K and off between them, and what
# does each part cost per launch (issue 26, item 3)? workloads/cupti_toggle.cu in each mode,
# interleaved, order rotating each round, CPUs PIN pinned; records checked against the launches
# made while CUPTI was on.
#
#     OUT=/some/dir bash control-experiments/device/cupti_toggle.sh
#
# Files in $OUT: cupti_toggle.log, cupti_toggle.tsv (round, mode, µs/op, toggle µs, record check),
# cupti_toggle-summary.txt (per mode min/median/max µs/launch and added over bare, same round).
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
ROUNDS=${ROUNDS:-7}
BUDGET=${PARTS_BUDGET_S:-400}
N=${PERF_N:-20000}
REPS=${PERF_REPS:-7}
PIN=${PIN:-2-5}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/cupti_toggle.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-toggle.XXXXXX")
FAILED=()
RC=0
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
say "== cupti_toggle: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); pinned to CPUs $PIN"
build_cupti_count
INC=(-I"$CUPTI_INC")
step build-toggle 180 "$NVCC" -O2 -arch=sm_90 -cudart=shared "${INC[@]}" -o "$WORK/cupti_toggle" \
  "$WL/cupti_toggle.cu" "$CUPTI_LIB" -Xlinker -rpath -Xlinker "$(dirname "$CUPTI_LIB")"
check_rc build-toggle
read -r -a MODES <<< "${MODES:-bare sub cb act full tog_act tog_full tog_cbon tog_live}"
TSV="$OUT/cupti_toggle.tsv"
printf 'round\tmode\tus_per_op\ttoggle_us\trecords\n' > "$TSV"
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((${#MODES[@]} - 1))); do
    m=${MODES[$(((i + r - 1) % ${#MODES[@]}))]}
    step "$m-$r" 60 taskset -c "$PIN" "$WORK/cupti_toggle" "$m" "$N" "$REPS" 16 64
    ok=ok
    ((RC == 0)) || ok="rc$RC"
    line=$(grep '^cupti_toggle:' "$WORK/$m-$r.out" 2>/dev/null | head -1)
    v=$(grep -o 'median=[0-9.]*' <<< "$line" | cut -d= -f2)
    tg=$(grep -o 'toggle_us=[0-9.]*' <<< "$line" | cut -d= -f2)
    [[ -n $v ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$m" "$v" "$tg" "$ok" >> "$TSV"
    ((r == 1)) && grep '^records:' "$WORK/$m-$r.out" | sed "s/^/$m: /" | tee -a "$LOG"
  done
done
python3 - "$TSV" > "$OUT/cupti_toggle-summary.txt" <<'PYEOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by, tg, bad = {}, {}, {}
for r in rows:
    by.setdefault(r["mode"], {})[int(r["round"])] = float(r["us_per_op"])
    tg.setdefault(r["mode"], []).append(float(r["toggle_us"] or 0))
    bad[r["mode"]] = bad.get(r["mode"], 0) + (r["records"] != "ok")
bare = by.get("bare", {})
print("cupti_toggle (empty kernel, sync every 64; windows of 64 launches, one in 16), us/launch;")
print("added = mode - bare of the same round; records: runs whose kernel records != launches made while on")
print(f"{'mode':<9} {'runs':>4} {'min':>7} {'median':>7} {'max':>7} | {'added min':>9} {'median':>7} {'max':>7} | toggle us | bad records")
for m in by:
    v = list(by[m].values())
    line = f"{m:<9} {len(v):>4} {min(v):>7.3f} {statistics.median(v):>7.3f} {max(v):>7.3f}"
    a = [by[m][r] - bare[r] for r in by[m] if r in bare]
    if m != "bare" and a:
        line += " | {:>9.3f} {:>7.3f} {:>7.3f}".format(min(a), statistics.median(a), max(a))
    else:
        line += " | " + " " * 25
    line += f" | {statistics.median(tg[m]):9.2f} | {bad[m]}"
    print(line)
PYEOF
tee -a "$LOG" < "$OUT/cupti_toggle-summary.txt"
((${#FAILED[@]})) && say "script errors: ${FAILED[*]}"
cp "$TSV" "$OUT/" 2>/dev/null
exit 0

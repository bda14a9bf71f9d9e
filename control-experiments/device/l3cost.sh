#!/usr/bin/env bash
# l3cost.sh: where level 3's cost per op goes, on the tiny-kernel loop, in one H200 run.
#
#     OUT=/some/dir bash control-experiments/device/l3cost.sh
#
# Arms (interleaved, order rotating by one each round; ROUNDS rounds): bare; torch.profiler;
# cupti-floor (CUPTI alone: the reference tool cupti_count.so injected with CUDA_INJECTION64_PATH,
# CONCURRENT_KERNEL only — no causeway); causeway level 2; level 3 cupti (as set up by default:
# callback correlation since issue 26); l3ext (external correlation);
# level 3 cupti with callback correlation; level 3 events; level 3 events sampling one in 16.
# Per arm: the run's value is tiny_loop.py's median µs/op over its reps; added = arm − bare of the
# same round; min/median/max of the paired added cost and the ratio (profiler added)/(arm added).
# ARMS overrides the list; diagnostic arms cbdomain, cbnots, cbnort run callback correlation with the
# whole driver domain, without the timestamp callback, without runtime callbacks (CAUSEWAY_CUPTI_DIAG);
# d_kernel, d_noapi, d_rtkind, d_nocopies, d_nortcb, d_discard run external correlation
# with CONCURRENT_KERNEL alone, without the API kinds, with RUNTIME only, without the copy kinds,
# without the runtime callbacks, with buffers returned unread (what each part of level 3 costs).
# Then (unless SPINE=0) torch_spine.py once under the events backend: its clock section (anchors, bound, causality).
# Files in $OUT: l3cost.log, l3cost.tsv (round, arm, µs/op), l3cost-summary.txt, spine-events.json.
set -uo pipefail
: "${OUT:?set OUT to the output folder}"
REPO=$(pwd)
WL="$REPO/control-experiments/workloads"
CW=${CAUSEWAY_CLI:-$REPO/.carry/causeway}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
ROUNDS=${ROUNDS:-5}
BUDGET=${L3COST_BUDGET_S:-540}
N=${PERF_N:-20000}
REPS=${PERF_REPS:-5}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/l3cost.log"
: > "$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/causeway-l3cost.XXXXXX")
unset CAUSEWAY_CUPTI_CORRELATION CAUSEWAY_EVENTS_SAMPLE
FAILED=()
RC=0
# say, note, fail, step, check_rc, build_cupti_count (steps.sh)
# shellcheck source=control-experiments/device/steps.sh
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

say "== l3cost: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
build_cupti_count
TL=("$PY" "$WL/tiny_loop.py" --n "$N" --reps "$REPS" --warmup 2000 --rep-warmup 200)
read -r -a ARMS <<< "${ARMS:-bare profiler cuptifloor level2 l3cupti l3cupticb l3events l3events16}"
TSV="$OUT/l3cost.tsv"
printf 'round\tarm\tus_per_op\n' > "$TSV"
step warmup 100 "${TL[@]}" --n 2000 --reps 1
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((${#ARMS[@]} - 1))); do
    arm=${ARMS[$(((i + r - 1) % ${#ARMS[@]}))]}
    cap="$WORK/cap-$arm-$r"
    case $arm in
      bare) cmd=("${TL[@]}") ;;
      profiler) cmd=("${TL[@]}" --profile) ;;
      cuptifloor) cmd=(env CUDA_INJECTION64_PATH="$CUPTI_SO" CUPTI_COUNT_OUT="$WORK/floor-$r.json" "${TL[@]}") ;;
      level2) cmd=("$CW" record --level 2 --out "$cap" -- "${TL[@]}") ;;
      l3cupti) cmd=("$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      l3ext) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      l3cupticb) cmd=(env CAUSEWAY_CUPTI_CORRELATION=callback "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      l3events) cmd=("$CW" record --level 3 --backend events --sample 1 --out "$cap" -- "${TL[@]}") ;;
      # Diagnostics (CAUSEWAY_CUPTI_DIAG): callback correlation with one part changed.
      cbdomain) cmd=(env CAUSEWAY_CUPTI_CORRELATION=callback CAUSEWAY_CUPTI_DIAG=driver-domain "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      cbnots) cmd=(env CAUSEWAY_CUPTI_CORRELATION=callback CAUSEWAY_CUPTI_DIAG=no-timestamp "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      cbnort) cmd=(env CAUSEWAY_CUPTI_CORRELATION=callback CAUSEWAY_CUPTI_DIAG=no-runtime-cb "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      l3events16) cmd=("$CW" record --level 3 --backend events --sample 16 --out "$cap" -- "${TL[@]}") ;;
      # Diagnostics (CAUSEWAY_CUPTI_DIAG): external correlation (the default) with one part changed.
      d_kernel) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=kernel-only "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      d_noapi) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=no-api-kinds "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      d_rtkind) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=runtime-kind-only "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      d_nocopies) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=no-copies "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      d_nortcb) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=no-runtime-cb "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
      d_discard) cmd=(env CAUSEWAY_CUPTI_CORRELATION=external CAUSEWAY_CUPTI_DIAG=discard "$CW" record --level 3 --backend cupti --out "$cap" -- "${TL[@]}") ;;
    esac
    step "$arm-$r" 100 "${cmd[@]}"
    v=$(grep -o 'median=[0-9.]*' "$WORK/$arm-$r.out" 2>/dev/null | head -1 | cut -d= -f2)
    [[ -n $v ]] && printf '%s\t%s\t%s\n' "$r" "$arm" "$v" >> "$TSV"
    rm -rf "$cap"
  done
done
"$PY" - "$TSV" > "$OUT/l3cost-summary.txt" <<'PYEOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["arm"], {})[int(r["round"])] = float(r["us_per_op"])
bare = by.get("bare", {})
def mmm(v):
    return (min(v), statistics.median(v), max(v)) if v else (float("nan"),) * 3
print("tiny_loop.py (a.add_(1.0) on 256 floats), us/op; added = arm - bare of the same round")
print(f"{'arm':<12} {'runs':>4} {'min':>8} {'median':>8} {'max':>8} | {'added min':>9} {'median':>8} {'max':>8} | ratio")
added_med = {}
for arm in ["bare", "profiler", "cuptifloor", "level2", "l3cupti", "l3ext", "l3cupticb", "cbdomain", "cbnots", "cbnort",
            "d_kernel", "d_noapi", "d_rtkind", "d_nocopies", "d_nortcb", "d_discard", "l3events", "l3events16"]:
    if arm not in by:
        continue
    v = list(by[arm].values())
    a = [by[arm][r] - bare[r] for r in by[arm] if r in bare] if arm != "bare" else []
    added_med[arm] = statistics.median(a) if a else None
    lo, md, hi = mmm(v)
    line = f"{arm:<12} {len(v):>4} {lo:>8.3f} {md:>8.3f} {hi:>8.3f}"
    if a:
        alo, amd, ahi = mmm(a)
        line += f" | {alo:>9.3f} {amd:>8.3f} {ahi:>8.3f}"
        p = added_med.get("profiler")
        if p is not None and arm != "profiler" and amd > 0:
            line += f" | {p / amd:.2f}"
    print(line)
print("ratio = (median paired profiler added) / (median paired arm added); the issue's target for level 3: >= 5")
PYEOF
tee -a "$LOG" < "$OUT/l3cost-summary.txt"
if [[ ${SPINE:-1} == 1 ]]; then
say "== torch_spine.py under level 3 events: clock"
step spine-events 120 "$CW" record --level 3 --backend events --sample 1 --out "$WORK/cap-spine" -- "$PY" "$WL/torch_spine.py"
capdir=$(ls -d "$WORK"/cap-spine/cw-* 2>/dev/null | head -1)
if [[ -n $capdir ]]; then
  "$CW" report --json "$capdir" > "$OUT/spine-events.json" 2>> "$LOG"
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))["device"]; print(json.dumps(d["clock"], indent=1)); print("intervals", d["intervals"], "associated", d["associated"], "not_timed", d["not_timed"])' "$OUT/spine-events.json" | tee -a "$LOG"
  "$CW" report "$capdir" | sed -n '/^DEVICE (/,/^DEVICE KERNELS/p' | tee -a "$LOG"
fi
fi
((${#FAILED[@]})) && say "script errors: ${FAILED[*]}"
exit 0

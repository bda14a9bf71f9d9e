#!/usr/bin/env bash
# why.sh: what `causeway why` costs (the causal graph: issue 23) against the report — `causeway report
# --json` and `causeway why --json --step slowest` on one synthetic level-3 capture of N entries
# (scanner/examples/synth_capture, TSC ticks), arms interleaved round by round, RUNS rounds. With BASE
# set to another causeway binary, its `why` runs as a third arm (a before/after pair in one run).
# Prints per arm min / median / max wall seconds, user and system CPU seconds (medians: on a VM the
# kernel's clearing of fresh pages, in system time, moves by seconds from run to run) and peak RSS
# (MB), and each wall median over the report's.
#     bash bench/why.sh [ENTRIES=1000000] [RUNS=5]
# Environment: CW (causeway binary; default built here), SYNTH (synth_capture), BASE, OUT (scratch).
set -euo pipefail
N=${1:-1000000}
RUNS=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# CW, SYNTH
# shellcheck source=bench/tools.sh
source bench/tools.sh
dir=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/causeway-why.XXXXXX")}
mkdir -p "$dir"
trap 'rm -rf "$dir"/cap "$dir"/time*' EXIT
"$SYNTH" "$dir/cap" "$N" 4 tsc > /dev/null
echo "entries: $N; cpus: $(nproc); $(uname -r); runs: $RUNS${BASE:+; base: $BASE}"
arms=(report why)
[[ -n ${BASE:-} ]] && arms+=(why-base)
declare -A t rss usr sys
for r in $(seq "$RUNS"); do
  for a in "${arms[@]}"; do
    case $a in
      report) cmd=("$CW" report --json "$dir/cap") ;;
      why) cmd=("$CW" why --json "$dir/cap" --step slowest) ;;
      why-base) cmd=("$BASE" why --json "$dir/cap" --step slowest) ;;
    esac
    timed "$dir/time" "${cmd[@]}" || exit 1
    read -r e m u s _ < "$dir/time"
    t[$a]+="$e "
    rss[$a]+="$m "
    usr[$a]+="$u "
    sys[$a]+="$s "
  done
done
args=()
for a in "${arms[@]}"; do args+=("$a" "${t[$a]}" "${rss[$a]}" "${usr[$a]}" "${sys[$a]}"); done
python3 - "${args[@]}" << 'PY'
import statistics as st, sys
a = sys.argv[1:]
f = lambda s: [float(x) for x in s.split()]
arms = [(a[i], f(a[i + 1]), f(a[i + 2]), f(a[i + 3]), f(a[i + 4])) for i in range(0, len(a), 5)]
base = st.median(arms[0][1])
print("arm       wall s: min median    max   /report   user s  sys s (medians)   RSS MB: min  median     max")
for name, ts, ms, us, ss in arms:
    print(f"{name:9} {min(ts):6.3f} {st.median(ts):6.3f} {max(ts):6.3f}   {st.median(ts) / base:5.1f}x"
          f"   {st.median(us):6.2f} {st.median(ss):6.2f}"
          f"          {min(ms) / 1024:7.0f} {st.median(ms) / 1024:7.0f} {max(ms) / 1024:7.0f}")
PY
